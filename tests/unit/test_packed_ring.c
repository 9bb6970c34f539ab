/* SPDX-License-Identifier: MIT */
/* Packed virtqueue (spec 2.8) through the virtio-net datapath: a simulated driver
 * (sim/vring_packed.h) posts chains, or writes raw descriptors a lying guest could write, and
 * each case pins the exact outcome: return values, drop counters, the used descriptors the
 * guest sees (id, len, flags, position), whether the queue is broken, and that a well-formed
 * chain still moves after. Also VIRTIO_F_IN_ORDER on both layouts and queue creation limits.
 *
 * Scenario bodies are named by what they check; the table at the end lists their runs per
 * side (TX: vl_net_dequeue, RX: vl_net_enqueue), guest RAM granularity, queue size and start
 * position (rf_run_cases). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ring_fixture.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* One burst of whatever kind the side does; returns what the datapath call returned.
 * TX asks for up to 32 packets (freed), RX offers `npkts` 64-byte packets. */
static uint16_t burst_n(struct rf *f, struct rf_q *s, uint16_t npkts)
{
	if (!s->rx) {
		struct vl_pkt *pkts[32];
		uint16_t n = vl_net_dequeue(s->q, f->pool, pkts, 32);

		vl_pkt_free_bulk(pkts, n);
		return n;
	}
	struct vl_pkt *pkts[8];

	assert_true(npkts <= 8);
	for (uint16_t i = 0; i < npkts; i++)
		pkts[i] = rf_make_pkt(f, 64, (uint8_t)(0x77 + i));
	uint16_t n = vl_net_enqueue(s->q, pkts, npkts, NULL);

	vl_pkt_free_bulk(pkts, npkts);
	return n;
}

static uint16_t burst_any(struct rf *f, struct rf_q *s)
{
	return burst_n(f, s, 1);
}

/* Position and wrap counter `steps` descriptors after (pos, wrap). */
static void step_pos(uint32_t size, uint16_t *pos, bool *wrap, uint32_t steps)
{
	uint32_t p = *pos + steps;

	while (p >= size) {
		p -= size;
		*wrap = !*wrap;
	}
	*pos = (uint16_t)p;
}

/* Where the driver will put the descriptor `steps` after its next available one. */
static void drv_pos(const struct rf_q *s, uint32_t steps, uint16_t *pos, bool *wrap)
{
	*pos = s->pr.next_avail;
	*wrap = s->pr.avail_wrap;
	step_pos(s->pr.size, pos, wrap, steps);
}

static uint16_t enc(uint16_t pos, bool wrap)
{
	return (uint16_t)(pos | (wrap ? VL_PACKED_WRAP_BIT : 0));
}

/* Flags of a used descriptor written with device wrap counter `wrap` (spec 2.8.1, 2.8.4). */
static uint16_t used_flags(bool wrap, uint32_t len)
{
	return (uint16_t)((wrap ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0) |
			  (len ? VL_DESC_F_WRITE : 0));
}

/* Rewrite one field set of an already written ring descriptor, keeping the others. */
static void raw_set_id(struct rf_q *s, uint16_t pos, uint16_t id)
{
	const struct vl_packed_desc d = *rf_pdesc(s, pos);

	lab_pring_write_raw(&s->pr, pos, d.addr, d.len, id, d.flags);
}

static void raw_set_flags(struct rf_q *s, uint16_t pos, uint16_t flags)
{
	const struct vl_packed_desc d = *rf_pdesc(s, pos);

	lab_pring_write_raw(&s->pr, pos, d.addr, d.len, d.id, flags);
}

/* The queue must be broken for `why` (counted once, nothing else dropped), with nothing
 * consumed since `chains` / `last_avail`, nothing returned, and it stays stopped: even a
 * well-formed chain the guest writes afterwards (over the lie) is never looked at. */
static void expect_broken(struct rf *f, struct rf_q *s, enum vl_drop why, uint64_t chains,
			  uint16_t last_avail)
{
	assert_true(vl_vq_broken(s->q));
	assert_int_equal(vl_vq_broken_reason(s->q), why);
	assert_int_equal(rf_drops(s, why), 1);
	assert_int_equal(rf_drops_other(s, why), 0);
	assert_int_equal(vl_vq_stats(s->q)->rx_no_room, 0); /* broken is not "no room" */
	assert_int_equal(vl_vq_stats(s->q)->chains, chains);
	assert_int_equal(vl_vq_last_avail(s->q), last_avail);
	rf_expect_no_used(s);
	assert_false(vl_vq_needs_call(s->q));

	(void)rf_post_good_n(f, s, 100, 1, 1);
	assert_int_equal(burst_any(f, s), 0);
	assert_int_equal(burst_any(f, s), 0);
	rf_expect_no_used(s);
	assert_int_equal(rf_drops(s, why), 1); /* latched, counted once */
	assert_int_equal(vl_vq_broken_reason(s->q), why);
	assert_int_equal(vl_vq_stats(s->q)->chains, chains);
}

/* ---- basic traffic ---------------------------------------------------------------------- */

/* Rounds of well-formed chains of 1, 2 and 3 descriptors (as many per burst as the ring
 * holds, at most 32), byte-exact both ways, until the device's position has gone round the
 * ring at least twice. The device's positions follow the driver's after every burst. RX
 * packets fit one buffer each (num_buffers 1, mergeable or not). */
static void scn_basic(struct rf *f, struct rf_q *s)
{
	const uint32_t size = f->cfg.qsize;
	uint32_t counter = 0, consumed = 0, flips = 0;
	bool wrap = f->cfg.start_wrap;

	while (consumed < 2 * size + 3) {
		struct rf_good g[32];
		uint32_t n = 0, descs = 0;

		while (n < 32) {
			uint32_t nd = 1 + counter % 3;

			if (nd > size - descs)
				nd = size - descs;
			if (nd == 0)
				break;
			g[n++] = rf_post_good_n(f, s, 1 + (counter * 37) % 300, (uint8_t)counter,
						nd);
			descs += nd;
			counter++;
		}
		rf_burst_expect_returned(f, s, g, n);
		consumed += descs;
		assert_int_equal(vl_vq_last_avail(s->q), rf_pavail_enc(s));
		assert_int_equal(vl_vq_last_used(s->q), rf_pavail_enc(s));
		if (((vl_vq_last_avail(s->q) & VL_PACKED_WRAP_BIT) != 0) != wrap) {
			wrap = !wrap;
			flips++;
		}
	}
	assert_true(flips >= 2);
	assert_int_equal(vl_vq_stats(s->q)->packets, counter);
	assert_int_equal(vl_vq_stats(s->q)->chains, counter);
	assert_int_equal(vl_vq_stats(s->q)->used_entries, counter);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	assert_false(vl_vq_broken(s->q));
}


/* Mergeable RX: packets spread over 1, 2 or 3 buffers of 64 bytes (one descriptor each). The
 * guest reassembles each packet from consecutive used buffers: num_buffers in the first
 * header, used lengths 64 ... 64 and the remainder, the payload byte-exact. Rounds until the
 * ring has gone round twice. */
static void scn_mergeable_rx(struct rf *f, struct rf_q *s)
{
	static const uint8_t plans3[][3] = { { 3, 0, 0 }, { 1, 2, 0 }, { 2, 1, 0 }, { 1, 1, 1 } };
	static const uint8_t plans6[][4] = { { 3, 1, 2, 0 }, { 1, 1, 3, 1 }, { 2, 2, 2, 0 } };
	const uint32_t size = f->cfg.qsize, cap = 64, h = f->hdr_len;
	uint32_t consumed = 0, round = 0, npk_total = 0;

	assert_true(size >= 3);
	while (consumed < 2 * size + 3) {
		const uint8_t *plan = size < 6 ? plans3[round % 4] : plans6[round % 3];
		const uint32_t nplan = size < 6 ? 3 : 4;
		uint32_t nbufs = 0, npk = 0;
		uint64_t buf[6];
		uint16_t id[6];
		struct vl_pkt *pkts[4];
		uint32_t lens[4];
		uint8_t st[4];

		for (uint32_t k = 0; k < nplan && plan[k]; k++) {
			/* Needs exactly plan[k] buffers: 64 (nb - 1) < h + len <= 64 nb. */
			lens[npk] = cap * plan[k] - h - (round * 7 + k) % 40;
			nbufs += plan[k];
			npk++;
		}
		for (uint32_t b = 0; b < nbufs; b++) {
			struct rf_desc d;

			buf[b] = rf_alloc(f, cap);
			rf_fill(f, buf[b], 0xA5, cap);
			d = (struct rf_desc){ buf[b], cap, VL_DESC_F_WRITE };
			id[b] = rf_post_chain(s, &d, 1);
		}
		for (uint32_t k = 0; k < npk; k++)
			pkts[k] = rf_make_pkt(f, lens[k], (uint8_t)(round + k));
		assert_int_equal(vl_net_enqueue(s->q, pkts, (uint16_t)npk, st), npk);
		vl_pkt_free_bulk(pkts, npk);

		uint32_t b = 0;

		for (uint32_t k = 0; k < npk; k++) {
			uint32_t left = h + lens[k], nb = plan[k], off = 0;
			uint8_t hdr[12];

			assert_int_equal(st[k], VL_RX_DELIVERED);
			rf_read(f, buf[b], hdr, h);
			for (uint32_t i = 0; i < 10; i++)
				assert_int_equal(hdr[i], 0);
			assert_int_equal(hdr[10] | hdr[11] << 8, nb);
			for (uint32_t i = 0; i < nb; i++, b++) {
				uint32_t used = left < cap ? left : cap;
				uint32_t skip = i == 0 ? h : 0;

				rf_expect_used(s, id[b], used);
				rf_assert_pattern_at(f, buf[b] + skip, used - skip,
						     (uint8_t)(round + k), off);
				off += used - skip;
				left -= used;
			}
			assert_int_equal(left, 0);
			assert_int_equal(off, lens[k]);
		}
		rf_expect_no_used(s);
		for (uint32_t i = 0; i < nbufs; i++)
			lab_gmem_free(f->g, buf[i], cap);
		consumed += nbufs;
		npk_total += npk;
		round++;
		assert_int_equal(vl_vq_last_avail(s->q), rf_pavail_enc(s));
		assert_int_equal(vl_vq_last_used(s->q), rf_pavail_enc(s));
	}
	assert_int_equal(vl_vq_stats(s->q)->packets, npk_total);
	assert_int_equal(vl_vq_stats(s->q)->used_entries, consumed);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}


/* ---- buffer id, wrap counter, used write-back ------------------------------------------- */

/* The buffer id is read from the chain's LAST descriptor (spec 2.8.6): earlier descriptors
 * carry another valid id, or one out of range, and the used descriptor names the last one's.
 * Reading any other would return the wrong buffer or break the queue. */
static void scn_id_from_last(struct rf *f, struct rf_q *s)
{
	const uint16_t size = (uint16_t)f->cfg.qsize;
	uint16_t p0, p1;
	bool w;

	drv_pos(s, 0, &p0, &w);
	struct rf_good g3 = rf_post_good_n(f, s, 200, 0x31, 3);

	raw_set_id(s, p0, (uint16_t)((g3.head + 7) % size));
	drv_pos(s, 0, &p1, &w); /* next chain's head; g3's middle is p0 + 1 */
	raw_set_id(s, (uint16_t)((p0 + 1) % size), 0xFFFF);

	struct rf_good g2 = rf_post_good_n(f, s, 150, 0x32, 2);

	raw_set_id(s, p1, size); /* head: out of range; last: g2.head */
	assert_int_equal(rf_pdesc(s, (uint16_t)((p1 + 1) % size))->id, g2.head);

	const struct rf_good g[2] = { g3, g2 };

	rf_burst_expect_goods(f, s, g, 2);
	rf_expect_used(s, g3.head, rf_good_used_len(f, s, &g3));
	rf_expect_used(s, g2.head, rf_good_used_len(f, s, &g2));
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	rf_expect_still_works(f, s);
}

/* A chain of four descriptors starting two before the end of the ring: the driver's wrap
 * counter flips after its second descriptor (the last two carry the flipped AVAIL/USED
 * bits). It moves intact; its used descriptor is written at its first position with the
 * device's wrap counter of that position (1), and the next chain's, after the flip, with 0. */
static void scn_wrap_mid_chain(struct rf *f, struct rf_q *s)
{
	const uint16_t size = (uint16_t)f->cfg.qsize;

	assert_int_equal(vl_vq_last_avail(s->q), enc((uint16_t)(size - 2), true));
	struct rf_good g = rf_post_good_n(f, s, 250, 0x41, 4);

	assert_int_equal(rf_pdesc(s, (uint16_t)(size - 1))->flags & VL_PDESC_F_AVAIL,
			 VL_PDESC_F_AVAIL);
	assert_int_equal(rf_pdesc(s, 0)->flags & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED),
			 VL_PDESC_F_USED); /* available for wrap 0 */
	rf_burst_expect_good(f, s, &g);
	const uint32_t ulen = rf_good_used_len(f, s, &g);
	const struct vl_packed_desc *u = rf_pdesc(s, (uint16_t)(size - 2));

	assert_int_equal(u->id, g.head);
	assert_int_equal(u->len, ulen);
	assert_int_equal(u->flags, used_flags(true, ulen));
	assert_int_equal(vl_vq_last_avail(s->q), enc(2, false));
	assert_int_equal(vl_vq_last_used(s->q), enc(2, false));
	rf_expect_used(s, g.head, ulen);

	struct rf_good g2 = rf_post_good_n(f, s, 90, 0x42, 1);

	rf_burst_expect_good(f, s, &g2);
	u = rf_pdesc(s, 2);
	assert_int_equal(u->id, g2.head);
	assert_int_equal(u->flags, used_flags(false, rf_good_used_len(f, s, &g2)));
	rf_expect_used(s, g2.head, rf_good_used_len(f, s, &g2));
	rf_expect_no_used(s);
	assert_int_equal(vl_vq_last_avail(s->q), enc(3, false));
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);

	/* vl_vq_get_config: created as it was, batching as last set, positions as now (past
	 * the wrap), so a queue created from it resumes here. */
	struct vl_vq_config made, now;

	rf_vq_config(f, s, &made);
	vl_vq_set_batch_threshold(s->q, 77);
	vl_vq_get_config(s->q, &now);
	assert_int_equal(now.layout, VL_LAYOUT_PACKED);
	assert_int_equal(vl_vq_config_size(&now), size);
	assert_true(now.features == made.features && now.desc_gpa == made.desc_gpa &&
		    now.driver_gpa == made.driver_gpa && now.device_gpa == made.device_gpa);
	assert_int_equal(now.batch_threshold, 77);
	assert_int_equal(now.last_avail_idx, enc(3, false));
	assert_int_equal(now.last_used_idx, enc(3, false));
	assert_int_not_equal(made.last_avail_idx, now.last_avail_idx);
}

/* Five laps of a 7-entry ring with chains of 1, 2 and 3 descriptors (so chains cross the end
 * at every offset): every packet moves byte-exact, both positions follow the driver's, and
 * the wrap counter flips once per lap. */
static void scn_many_laps(struct rf *f, struct rf_q *s)
{
	const uint32_t size = f->cfg.qsize;
	uint32_t counter = 0, consumed = 0, flips = 0;
	bool wrap = true;

	assert_int_equal(size, 7);
	while (consumed < 5 * size + 2) {
		struct rf_good g[3];
		uint32_t n = 0, descs = 0;

		/* 1, 2 or 3 chains per burst, never more than the ring holds. */
		for (uint32_t want = 1 + counter % 3; n < want; n++) {
			uint32_t nd = 1 + (counter + n) % 3;

			if (descs + nd > size)
				break;
			g[n] = rf_post_good_n(f, s, 20 + (counter + n) * 11 % 150,
					   (uint8_t)(counter + n), nd);
			descs += nd;
		}
		rf_burst_expect_returned(f, s, g, n);
		counter += n;
		consumed += descs;
		assert_int_equal(vl_vq_last_avail(s->q), rf_pavail_enc(s));
		assert_int_equal(vl_vq_last_used(s->q), rf_pavail_enc(s));
		if (((vl_vq_last_avail(s->q) & VL_PACKED_WRAP_BIT) != 0) != wrap) {
			wrap = !wrap;
			flips++;
		}
	}
	assert_int_equal(flips, consumed / size);
	assert_true(flips >= 5);
	assert_int_equal(vl_vq_stats(s->q)->packets, counter);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* Used write-back: chains of 1 (bad: dropped, length 0), 3, 1 and 2 descriptors starting 3
 * before the end of the ring. After the burst each chain's FIRST position holds its used
 * descriptor: id, length, AVAIL and USED both equal to the device's wrap counter there, WRITE
 * set iff the length is > 0 (never for TX); every other descriptor of the ring, including the
 * chains' other descriptors, is byte-for-byte what the driver wrote. A second round (wrap 0
 * throughout) writes at the positions after, leaving the first round's descriptors alone. */
static void scn_used_writeback(struct rf *f, struct rf_q *s)
{
	const uint32_t size = f->cfg.qsize;
	const size_t ring_bytes = (size_t)size * sizeof(struct vl_packed_desc);
	struct vl_packed_desc *snap = malloc(ring_bytes);

	assert_non_null(snap);
	for (int round = 0; round < 2; round++) {
		static const uint32_t shape[2][4] = { { 1, 3, 1, 2 }, { 2, 1, 3, 0 } };
		uint16_t pos[4], id[4];
		bool wr[4];
		uint32_t ulen[4], n = 0, descs = 0;
		struct rf_good g[4];
		uint32_t ngood = 0;
		uint64_t badbuf = rf_alloc(f, 64);

		rf_fill(f, badbuf, 0, 64);
		for (uint32_t k = 0; k < 4 && shape[round][k]; k++, n++) {
			drv_pos(s, 0, &pos[k], &wr[k]);
			if (round == 0 && k == 0) {
				/* Too small for a header: TX short chain / RX buffer too small. */
				struct rf_desc d = { badbuf, f->hdr_len - 2, rf_dirf(s) };

				id[k] = rf_post_chain(s, &d, 1);
				ulen[k] = 0;
			} else {
				const uint8_t seed = (uint8_t)(k + 4 * round);

				g[ngood] = rf_post_good_n(f, s, 60 + 10 * k, seed, shape[round][k]);
				id[k] = g[ngood].head;
				ulen[k] = rf_good_used_len(f, s, &g[ngood]);
				ngood++;
			}
			descs += shape[round][k];
		}
		if (round == 0) {
			assert_int_equal(pos[0], size - 3);
			assert_true(wr[0] && wr[1] && !wr[2] && !wr[3]);
		} else {
			assert_true(!wr[0] && !wr[1] && !wr[2]);
		}
		memcpy(snap, rf_pdesc(s, 0), ring_bytes);
		rf_burst_expect_goods(f, s, g, ngood);

		const struct vl_packed_desc *ring = rf_pdesc(s, 0);

		for (uint32_t p = 0; p < size; p++) {
			uint32_t k = 0;

			while (k < n && pos[k] != p)
				k++;
			if (k == n) {
				if (memcmp(&ring[p], &snap[p], sizeof(ring[p])) != 0)
					fail_msg("round %d: descriptor %u was written (flags 0x%x)",
						 round, p, ring[p].flags);
				continue;
			}
			assert_int_equal(ring[p].id, id[k]);
			assert_int_equal(ring[p].len, ulen[k]);
			assert_int_equal(ring[p].flags, used_flags(wr[k], ulen[k]));
			assert_int_equal(ring[p].addr, snap[p].addr); /* unused, not written */
			if (!s->rx)
				assert_int_equal(ring[p].flags & VL_DESC_F_WRITE, 0);
		}
		assert_int_equal(vl_vq_last_used(s->q), rf_pavail_enc(s));
		for (uint32_t k = 0; k < n; k++)
			rf_expect_used(s, id[k], ulen[k]);
		rf_expect_no_used(s);
		(void)descs;
	}
	assert_int_equal(vl_vq_stats(s->q)->used_entries, 7);
	assert_int_equal(rf_drops(s, s->rx ? VL_DROP_RX_BUF_TOO_SMALL : VL_DROP_SHORT_CHAIN), 1);
	assert_int_equal(rf_drops_other(s, s->rx ? VL_DROP_RX_BUF_TOO_SMALL
						 : VL_DROP_SHORT_CHAIN), 0);
	free(snap);
}

/* ---- the packed ring lies ---------------------------------------------------------------- */

/* Flags of a descriptor with AVAIL = a and USED = u. */
static uint16_t au(bool a, bool u)
{
	return (uint16_t)((a ? VL_PDESC_F_AVAIL : 0) | (u ? VL_PDESC_F_USED : 0));
}

/* Availability is exactly AVAIL == driver wrap and USED != it (spec 2.8.1). A posted chain's
 * head is rewritten with each of the four AVAIL/USED combinations: the three others (zeroed,
 * looks used, available for the other wrap counter) make it simply not available -- nothing
 * happens, the queue is not broken -- and putting the right flags back makes it move. Run at
 * wrap counter 1 (fresh ring) and 0 (after a lap). */
static void scn_head_flags(struct rf *f, struct rf_q *s)
{
	const bool w = s->pr.avail_wrap;

	for (int c = 0; c < 4; c++) {
		const bool a = c & 1, u = (c >> 1) & 1;
		const bool is_avail = a == w && u != w;
		struct vl_vq_stats before = *vl_vq_stats(s->q);
		uint16_t pos;
		bool pw;

		drv_pos(s, 0, &pos, &pw);
		struct rf_good g = rf_post_good_n(f, s, 77, (uint8_t)c, 1);
		const uint16_t good_flags = rf_pdesc(s, pos)->flags;

		raw_set_flags(s, pos, (uint16_t)(good_flags & ~au(true, true)) | au(a, u));
		if (is_avail) {
			assert_int_equal(rf_pdesc(s, pos)->flags, good_flags);
		} else {
			const struct vl_packed_desc lie = *rf_pdesc(s, pos);

			assert_int_equal(burst_any(f, s), 0);
			/* Not written by the device (the driver's own used check would misread
			 * a looks-used lie, so compare bytes instead). */
			assert_memory_equal(rf_pdesc(s, pos), &lie, sizeof(lie));
			assert_false(vl_vq_broken(s->q));
			assert_int_equal(vl_vq_stats(s->q)->chains, before.chains);
			assert_int_equal(vl_vq_stats(s->q)->empty_bursts, before.empty_bursts + 1);
			assert_int_equal(vl_vq_last_avail(s->q), enc(pos, pw));
			assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
			assert_false(vl_vq_needs_call(s->q));
			raw_set_flags(s, pos, good_flags);
		}
		rf_burst_expect_good(f, s, &g);
		rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
		rf_expect_no_used(s);
		assert_false(vl_vq_broken(s->q));
	}
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* A head available with NEXT whose following descriptor is not available: zeroed, looks used,
 * available for the other wrap counter, or -- a chain crossing the end of the ring -- still
 * carrying the head's wrap counter instead of the flipped one. The driver makes a head
 * available last (spec 2.8.6), so this is a lie: the queue breaks (chain_incomplete). */
static void lie_tail(struct rf *f, struct rf_q *s, int kind)
{
	const uint64_t chains = vl_vq_stats(s->q)->chains;
	const uint16_t at = rf_pavail_enc(s);
	uint16_t p1;
	bool w1;

	drv_pos(s, 1, &p1, &w1);
	(void)rf_post_good_n(f, s, 100, 9, 2);
	if (kind < 3) {
		/* 0: zeroed, 1: looks used (both = w1), 2: available for !w1. */
		const uint16_t fl[3] = { 0, au(w1, w1), au(!w1, w1) };

		raw_set_flags(s, p1, (uint16_t)((rf_pdesc(s, p1)->flags & ~au(true, true)) |
						 fl[kind]));
	} else {
		/* The tail sits after the end of the ring: it should say !head wrap. */
		assert_int_equal(p1, 0);
		raw_set_flags(s, p1, (uint16_t)((rf_pdesc(s, p1)->flags & ~au(true, true)) |
						 au(!w1, w1)));
	}
	assert_int_equal(burst_any(f, s), 0);
	expect_broken(f, s, VL_DROP_CHAIN_INCOMPLETE, chains, at);
}

static void run_lie_tail(int kind, bool rx)
{
	struct rf f;
	struct rf_cfg cfg;

	rf_cfg_init_packed(&cfg, RF_COARSE, 256);
	cfg.start_idx = kind == 3 ? 255 : 20;
	rf_setup(&f, &cfg);
	lie_tail(&f, rf_side(&f, rx), kind);
	rf_teardown(&f);
}

static void test_lie_tail_not_avail_tx(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++)
		run_lie_tail(k, false);
}

static void test_lie_tail_not_avail_rx(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++)
		run_lie_tail(k, true);
}

/* Every descriptor of the ring available with NEXT (from the middle of the ring, wrap
 * counters correct on both sides of the end): the chain would run into itself. */
static void scn_lie_next_everywhere(struct rf *f, struct rf_q *s)
{
	const uint16_t at = rf_pavail_enc(s);
	uint64_t buf = rf_alloc(f, 64);

	rf_fill(f, buf, 0, 64);
	for (uint32_t i = 0; i < f->cfg.qsize; i++) {
		uint16_t p;
		bool w;

		drv_pos(s, i, &p, &w);
		const uint16_t fl = lab_pring_avail_flags(w);

		lab_pring_write_raw(&s->pr, p, buf, 16, 0,
				    (uint16_t)(rf_dirf(s) | VL_DESC_F_NEXT | fl));
	}
	assert_int_equal(burst_any(f, s), 0);
	expect_broken(f, s, VL_DROP_CHAIN_INCOMPLETE, 0, at);
}

/* The longest legal chain: exactly queue-size descriptors (the bound is not one short), from
 * the middle of the ring so it crosses the end. */
static void scn_longest_chain(struct rf *f, struct rf_q *s)
{
	struct rf_good g = rf_post_longest_chain(f, s, 0x22);

	rf_burst_expect_good(f, s, &g);
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	assert_int_equal(vl_vq_last_avail(s->q), enc(100, false));
	rf_expect_still_works(f, s);
}

/* Buffer ids >= queue size: on a one-descriptor chain (id == size), and on the last
 * descriptor of a two-descriptor chain whose head carries a valid one (0xFFFF). No id could
 * be returned: the queue breaks (id_out_of_range), nothing is returned. */
static void scn_id_out_of_range(struct rf *f, struct rf_q *s)
{
	const uint16_t size = (uint16_t)f->cfg.qsize;
	const uint16_t at = rf_pavail_enc(s);
	uint16_t p;
	bool w;

	drv_pos(s, 0, &p, &w);
	struct rf_good g = rf_post_good_n(f, s, 100, 3, 1);

	raw_set_id(s, p, size);
	(void)g;
	assert_int_equal(burst_any(f, s), 0);
	expect_broken(f, s, VL_DROP_ID_OUT_OF_RANGE, 0, at);
}

static void scn_id_out_of_range_last(struct rf *f, struct rf_q *s)
{
	const uint16_t at = rf_pavail_enc(s);
	uint16_t p;
	bool w;

	drv_pos(s, 1, &p, &w);
	struct rf_good g = rf_post_good_n(f, s, 100, 4, 2);

	assert_true(g.head < f->cfg.qsize);
	raw_set_id(s, p, 0xFFFF);
	assert_int_equal(burst_any(f, s), 0);
	expect_broken(f, s, VL_DROP_ID_OUT_OF_RANGE, 0, at);
}

/* A good chain ahead of a lie still moves and is returned; then the queue is broken and does
 * nothing more. The lie: a bad buffer id (met when the chain is fetched) or an incomplete
 * chain (met when the window is scanned). TX asks for 32 packets, so one burst meets both
 * chains; RX offers two packets. */
static void lie_after_good(struct rf *f, struct rf_q *s, enum vl_drop why)
{
	uint16_t gnext, p;
	bool gw, w;

	drv_pos(s, 2, &gnext, &gw); /* the position after the good chain */
	struct rf_good g = rf_post_good_n(f, s, 100, 2, 2);

	drv_pos(s, 1, &p, &w); /* the lying chain's last descriptor */
	(void)rf_post_good_n(f, s, 100, 5, 2);
	if (why == VL_DROP_ID_OUT_OF_RANGE)
		raw_set_id(s, p, 0xFFFF);
	else
		raw_set_flags(s, p, 0);

	if (!s->rx) {
		struct vl_pkt *pkts[32];

		assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 32), 1);
		rf_assert_pkt_pattern(pkts[0], g.len, g.seed);
		vl_pkt_free(pkts[0]);
	} else {
		struct vl_pkt *pkts[2] = { rf_make_pkt(f, g.len, g.seed), rf_make_pkt(f, 64, 1) };
		uint8_t st[2] = { 0xFF, 0xFF };

		assert_int_equal(vl_net_enqueue(s->q, pkts, 2, st), 1);
		assert_int_equal(st[0], VL_RX_DELIVERED);
		rf_assert_pattern_at(f, g.gpa + f->hdr_len, g.len, g.seed, 0);
		vl_pkt_free_bulk(pkts, 2);
	}
	assert_true(vl_vq_broken(s->q));
	assert_int_equal(vl_vq_broken_reason(s->q), why);
	assert_int_equal(rf_drops(s, why), 1);
	assert_int_equal(rf_drops_other(s, why), 0);
	assert_int_equal(vl_vq_stats(s->q)->chains, 1);
	assert_int_equal(vl_vq_stats(s->q)->packets, 1);
	assert_int_equal(vl_vq_last_avail(s->q), enc(gnext, gw));
	assert_int_equal(vl_vq_last_used(s->q), enc(gnext, gw));
	assert_true(vl_vq_needs_call(s->q));
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
	assert_int_equal(burst_any(f, s), 0);
	rf_expect_no_used(s);
	assert_int_equal(rf_drops(s, why), 1);
}

static void scn_bad_id_after_good(struct rf *f, struct rf_q *s)
{
	lie_after_good(f, s, VL_DROP_ID_OUT_OF_RANGE);
}

static void scn_incomplete_after_good(struct rf *f, struct rf_q *s)
{
	lie_after_good(f, s, VL_DROP_CHAIN_INCOMPLETE);
}

/* ---- indirect descriptors ---------------------------------------------------------------- */

/* A packed indirect table's entries are consecutive (spec 2.8.8): NEXT on an entry (even the
 * last) is ignored, entry ids (0xFFFF) are ignored, and the table ends where its length says
 * (a poisonous entry right after it is never read). The used id is the indirect
 * descriptor's. The WRITE flag on the indirect descriptor itself is ignored too. */
static void scn_indirect_consecutive(struct rf *f, struct rf_q *s)
{
	for (int wflag = 0; wflag < 2; wflag++) {
		const uint32_t h = f->hdr_len;
		uint64_t t = rf_alloc(f, 5 * 16);
		struct rf_good g = rf_good_buf(f, s, 300, (uint8_t)(0x70 + wflag));
		const uint16_t fl = rf_dirf(s);
		struct rf_desc e[5] = {
			{ g.gpa, h, (uint16_t)(fl | VL_DESC_F_NEXT) },
			{ g.gpa + h, 100, (uint16_t)(fl | VL_DESC_F_NEXT) },
			{ g.gpa + h + 100, 0, fl },
			{ g.gpa + h + 100, 200, (uint16_t)(fl | VL_DESC_F_NEXT) },
			/* Beyond the table: unmapped, would drop the chain if read. */
			{ lab_gmem_hole_gpa(f->g), 64, fl },
		};

		rf_write_ptable(f, t, e, 5);
		const uint16_t ifl = (uint16_t)(VL_DESC_F_INDIRECT | (wflag ? VL_DESC_F_WRITE : 0));
		struct rf_desc d = { t, 4 * 16, ifl };

		g.head = rf_post_chain(s, &d, 1);
		rf_burst_expect_good(f, s, &g);
		rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
		rf_expect_no_used(s);
	}
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	rf_expect_still_works(f, s);
}

/* INDIRECT inside a direct list (spec 2.8.8: never with NEXT): as the head (which carries
 * NEXT) and as the last descriptor (which does not, but follows one that does). */
static void scn_indirect_with_next(struct rf *f, struct rf_q *s)
{
	uint64_t t = rf_valid_table(f, s);
	uint64_t buf = rf_alloc(f, 64);

	rf_fill(f, buf, 0, 64);
	struct rf_desc d1[2] = { { t, 32, VL_DESC_F_INDIRECT }, { buf, 64, rf_dirf(s) } };
	struct rf_desc d2[2] = { { buf, 64, rf_dirf(s) }, { t, 32, VL_DESC_F_INDIRECT } };
	const uint16_t bad[2] = { rf_post_chain(s, d1, 2), rf_post_chain(s, d2, 2) };

	rf_expect_bad_then_good(f, s, bad, 2, VL_DROP_INDIRECT_WITH_NEXT);
}

/* A table entry of the wrong direction (as the header entry and as a data entry).
 * Read-only in an RX table: dropped, the device must not write it. WRITE in a TX table:
 * read anyway and counted (tx_write_ignored) -- DPDK 22.11's virtio-user leaves WRITE on the
 * header entry of every multi-segment packed transmit; the packet is delivered whole. */
static void scn_indirect_direction(struct rf *f, struct rf_q *s)
{
	const uint32_t h = f->hdr_len;
	const uint16_t good = rf_dirf(s), wrong = (uint16_t)(rf_dirf(s) ^ VL_DESC_F_WRITE);
	uint64_t buf = rf_alloc(f, h + 64);
	uint64_t t1 = rf_alloc(f, 32), t2 = rf_alloc(f, 32);

	rf_fill(f, buf, 0, h + 64);
	if (!s->rx)
		rf_pattern(rf_ptr(f, buf + h, 64), 64, 0x5A);
	struct rf_desc e1[2] = { { buf, h, good }, { buf + h, 64, wrong } };
	struct rf_desc e2[2] = { { buf, h, wrong }, { buf + h, 64, good } };

	rf_write_ptable(f, t1, e1, 2);
	rf_write_ptable(f, t2, e2, 2);
	const uint16_t heads[2] = { rf_post_indirect(s, t1, 32), rf_post_indirect(s, t2, 32) };

	if (s->rx) {
		rf_expect_bad_then_good(f, s, heads, 2, VL_DROP_DIRECTION);
		return;
	}
	struct vl_pkt *pkts[4];

	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 4), 2);
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(pkts[i]->pkt_len, 64);
		rf_assert_pkt_pattern(pkts[i], 64, 0x5A);
		vl_pkt_free(pkts[i]);
	}
	assert_int_equal(vl_vq_stats(s->q)->tx_write_ignored, 2);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	rf_expect_used(s, heads[0], 0);
	rf_expect_used(s, heads[1], 0);
	rf_expect_no_used(s);
	rf_expect_still_works(f, s);
}

/* ---- queue creation and resume ----------------------------------------------------------- */

/* A flat guest memory for creation tests: one region of 4 MiB at 1 MiB (enough for every
 * ring area of a 65536-entry split queue, so a size is never refused for want of memory). */
struct flat {
	void *host;
	struct vl_mem *mem;
};

#define FLAT_GPA 0x100000ull
#define FLAT_SIZE (4ull << 20)

static void flat_init(struct flat *m)
{
	struct vl_mem_region r = { .gpa = FLAT_GPA, .size = FLAT_SIZE };
	int err = -1;

	m->host = aligned_alloc(4096, FLAT_SIZE);
	assert_non_null(m->host);
	memset(m->host, 0, FLAT_SIZE);
	r.host = m->host;
	r.uaddr = (uint64_t)(uintptr_t)m->host;
	m->mem = vl_mem_create(&r, 1, &err);
	assert_non_null(m->mem);
}

static void flat_fini(struct flat *m)
{
	vl_mem_destroy(m->mem);
	free(m->host);
}

/* A configuration of `size` entries with the areas laid out back to back in the flat memory. */
static void flat_cfg(struct vl_vq_config *qc, enum vl_layout layout, uint32_t size)
{
	const uint64_t drv_bytes = layout == VL_LAYOUT_SPLIT ? vl_split_avail_bytes(size) : 4;

	vl_vq_config_init(qc, layout, size);
	qc->desc_gpa = FLAT_GPA;
	qc->driver_gpa = FLAT_GPA + vl_split_desc_bytes(size); /* 16 per entry, both layouts */
	qc->device_gpa = (qc->driver_gpa + drv_bytes + 4095) & ~4095ull;
}

/* Create a queue from qc: expect `want` (VL_OK: a queue, else NULL and that code). */
static void expect_create(const struct flat *m, const struct vl_vq_config *qc, int want)
{
	int err = -1;
	struct vl_vq *q = vl_vq_create(m->mem, qc, &err);

	if (err != want)
		fail_msg("layout %d size %u avail 0x%x used 0x%x: vl_vq_create gave %d (%s), "
			 "expected %d (%s)", qc->layout, vl_vq_config_size(qc), qc->last_avail_idx,
			 qc->last_used_idx, err, vl_strerror(err), want, vl_strerror(want));
	if (want == VL_OK) {
		assert_non_null(q);
		assert_int_equal(vl_vq_size(q), vl_vq_config_size(qc));
		assert_int_equal(vl_vq_last_avail(q), qc->last_avail_idx);
		if (qc->layout == VL_LAYOUT_PACKED)
			assert_int_equal(vl_vq_last_used(q), qc->last_used_idx);
		else
			assert_int_equal(vl_vq_last_used(q), qc->last_avail_idx);
		assert_false(vl_vq_broken(q));
	} else {
		assert_null(q);
	}
	vl_vq_destroy(q);
}

/* Any size 1..32768 for packed (spec 2.8: up to 2^15, no power of two needed); powers of two
 * up to 32768 for split; anything larger is refused for both (VL_ERR_QUEUE_SIZE). */
static void test_create_sizes(void **state)
{
	static const uint32_t packed_ok[] = { 1, 2, 3, 7, 255, 1000, 32767, 32768 };
	static const uint32_t split_ok[] = { 1, 2, 256, 1024, 32768 };
	static const uint32_t split_bad[] = { 3, 7, 255, 1000, 32767 };
	static const uint32_t too_big[] = { 32769, 40000, 65535, 65536 };
	struct flat m;
	struct vl_vq_config qc;

	(void)state;
	flat_init(&m);
	for (size_t i = 0; i < sizeof(packed_ok) / sizeof(packed_ok[0]); i++) {
		flat_cfg(&qc, VL_LAYOUT_PACKED, packed_ok[i]);
		expect_create(&m, &qc, VL_OK);
	}
	for (size_t i = 0; i < sizeof(split_ok) / sizeof(split_ok[0]); i++) {
		flat_cfg(&qc, VL_LAYOUT_SPLIT, split_ok[i]);
		expect_create(&m, &qc, VL_OK);
	}
	for (size_t i = 0; i < sizeof(split_bad) / sizeof(split_bad[0]); i++) {
		flat_cfg(&qc, VL_LAYOUT_SPLIT, split_bad[i]);
		expect_create(&m, &qc, VL_ERR_QUEUE_SIZE);
	}
	for (size_t i = 0; i < sizeof(too_big) / sizeof(too_big[0]); i++) {
		flat_cfg(&qc, VL_LAYOUT_PACKED, too_big[i]);
		expect_create(&m, &qc, VL_ERR_QUEUE_SIZE);
		if ((too_big[i] & (too_big[i] - 1)) == 0) {
			flat_cfg(&qc, VL_LAYOUT_SPLIT, too_big[i]);
			expect_create(&m, &qc, VL_ERR_QUEUE_SIZE);
		}
	}
	flat_fini(&m);
}

/* What the embedder passes wrong is refused with a code, never a crash: no memory table or
 * configuration (VL_ERR_INVALID_ARG), a layout that does not exist (VL_ERR_LAYOUT), a
 * descriptor area off its 16-byte alignment (VL_ERR_RING_MISALIGNED); a NULL err is allowed.
 * vl_vq_set_mem refuses NULL the same way and leaves the queue working. */
static void test_create_bad_args(void **state)
{
	static const enum vl_layout layouts[] = { VL_LAYOUT_SPLIT, VL_LAYOUT_PACKED };
	struct flat m;
	struct vl_vq_config qc;

	(void)state;
	flat_init(&m);
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		int err = -1;

		flat_cfg(&qc, layouts[i], 256);
		assert_null(vl_vq_create(NULL, &qc, &err));
		assert_int_equal(err, VL_ERR_INVALID_ARG);
		err = -1;
		assert_null(vl_vq_create(m.mem, NULL, &err));
		assert_int_equal(err, VL_ERR_INVALID_ARG);
		assert_null(vl_vq_create(NULL, &qc, NULL));
		qc.desc_gpa += 8;
		expect_create(&m, &qc, VL_ERR_RING_MISALIGNED);
		qc.desc_gpa -= 8;

		struct vl_vq *q = vl_vq_create(m.mem, &qc, NULL);

		assert_non_null(q);
		assert_int_equal(vl_vq_set_mem(q, NULL), VL_ERR_INVALID_ARG);
		assert_int_equal(vl_vq_set_mem(NULL, m.mem), VL_ERR_INVALID_ARG);
		assert_int_equal(vl_vq_set_mem(q, m.mem), VL_OK);
		assert_false(vl_vq_broken(q));
		vl_vq_destroy(q);
	}
	flat_cfg(&qc, VL_LAYOUT_SPLIT, 256);
	qc.layout = (enum vl_layout)7;
	expect_create(&m, &qc, VL_ERR_LAYOUT);
	flat_fini(&m);
}

/* Every drop reason has a name of its own (the statistics and --json print them), and a value
 * outside the enum is "unknown". */
static void test_drop_names(void **state)
{
	(void)state;
	for (int i = 0; i < VL_DROP__COUNT; i++) {
		const char *name = vl_drop_name((enum vl_drop)i);

		assert_non_null(name);
		assert_string_not_equal(name, "unknown");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(name, vl_drop_name((enum vl_drop)j));
	}
	assert_string_equal(vl_drop_name(VL_DROP__COUNT), "unknown");
	assert_string_equal(vl_drop_name((enum vl_drop)-1), "unknown");
}

/* Packed resume positions (vhost-user SET_VRING_BASE encoding: position | wrap << 15) must
 * lie inside the ring, for the avail and the used side alike; both wrap values are fine.
 * Split takes any 16-bit index. */
static void test_create_ring_base(void **state)
{
	static const struct {
		uint16_t avail, used;
		int want;
	} cases[] = {
		{ 0x8000u, 0x8000u, VL_OK },          /* the spec's start: 0, wrap 1 */
		{ 0, 0, VL_OK },                      /* 0, wrap 0 */
		{ 999 | 0x8000u, 999, VL_OK },        /* last position, either wrap */
		{ 500, 400 | 0x8000u, VL_OK },        /* avail and used apart */
		{ 1000 | 0x8000u, 0x8000u, VL_ERR_RING_BASE },
		{ 1000, 0x8000u, VL_ERR_RING_BASE },
		{ 0x8000u, 1000 | 0x8000u, VL_ERR_RING_BASE },
		{ 0x8000u, 1000, VL_ERR_RING_BASE },
		{ 0x7FFF, 0, VL_ERR_RING_BASE },
		{ 0, 0xFFFF, VL_ERR_RING_BASE },
	};
	struct flat m;
	struct vl_vq_config qc;

	(void)state;
	flat_init(&m);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		flat_cfg(&qc, VL_LAYOUT_PACKED, 1000);
		qc.last_avail_idx = cases[i].avail;
		qc.last_used_idx = cases[i].used;
		expect_create(&m, &qc, cases[i].want);
	}
	flat_cfg(&qc, VL_LAYOUT_SPLIT, 256);
	qc.last_avail_idx = 0xFFFF;
	qc.last_used_idx = 0xFFFF; /* ignored */
	expect_create(&m, &qc, VL_OK);
	flat_fini(&m);
}

/* Resume at the configured position and wrap counter (both sides start there): the first
 * chain is found there, chains cross the end of the ring, and the positions the device
 * reports keep the encoding. */
static void scn_resume(struct rf *f, struct rf_q *s)
{
	const uint32_t size = f->cfg.qsize;
	const uint16_t start = enc(f->cfg.start_idx, f->cfg.start_wrap);

	assert_int_equal(vl_vq_last_avail(s->q), start);
	assert_int_equal(vl_vq_last_used(s->q), start);
	for (uint32_t round = 0; round < 3; round++) {
		struct rf_good g[2];
		uint32_t n = size >= 4 ? 2 : 1;

		for (uint32_t i = 0; i < n; i++)
			g[i] = rf_post_good_n(f, s, 40 + round, (uint8_t)(round * 2 + i),
					   size >= 4 ? 2 : size);
		rf_burst_expect_goods(f, s, g, n);
		for (uint32_t i = 0; i < n; i++)
			rf_expect_used(s, g[i].head, rf_good_used_len(f, s, &g[i]));
		rf_expect_no_used(s);
		assert_int_equal(vl_vq_last_avail(s->q), rf_pavail_enc(s));
		assert_int_equal(vl_vq_last_used(s->q), rf_pavail_enc(s));
	}
	/* The wrap counter moved past the end at least once. */
	assert_int_not_equal(vl_vq_last_avail(s->q) & VL_PACKED_WRAP_BIT,
			     start & VL_PACKED_WRAP_BIT);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}
#define scn_resume_250_wrap0 scn_resume
#define scn_resume_999_wrap1 scn_resume
#define scn_resume_1_wrap0_size3 scn_resume

/* A device resumed with the wrong wrap counter for the driver's position sees nothing there
 * (the driver's descriptor is available for the other counter): no packet, not broken. */
static void scn_resume_wrong_wrap(struct rf *f, struct rf_q *s)
{
	struct vl_vq_config qc;
	int err = -1;

	rf_vq_config(f, s, &qc);
	qc.last_avail_idx ^= VL_PACKED_WRAP_BIT;
	qc.last_used_idx ^= VL_PACKED_WRAP_BIT;
	struct vl_vq *q = vl_vq_create(f->mem, &qc, &err);

	assert_non_null(q);
	struct rf_good g = rf_post_good_n(f, s, 64, 1, 1);
	struct vl_vq *keep = s->q;

	s->q = q;
	assert_int_equal(burst_any(f, s), 0);
	assert_false(vl_vq_broken(q));
	assert_int_equal(vl_vq_stats(q)->chains, 0);
	rf_expect_no_used(s);
	s->q = keep;
	vl_vq_destroy(q);
	rf_burst_expect_good(f, s, &g);
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
}

/* ---- VIRTIO_F_IN_ORDER -------------------------------------------------------------------- */

#define IN_ORDER VL_FEATURE(VL_F_IN_ORDER)

/* Packed TX under IN_ORDER: a burst of five chains (1, 2, 3, 1, 2 descriptors, the 4th a
 * short chain, starting 4 before the end of the ring, so the burst wraps) comes back as five
 * used descriptors, each at its chain's first position (wrap counter as it was there) with
 * that chain's id and length 0; no other descriptor is touched. A device may fold them into
 * one carrying the last id (spec 2.8.11); this one does not (vl_packed_flush_used says why).
 * A second burst of two (wrap 0 now) and a burst of one do the same. */
static void scn_in_order_tx_per_chain(struct rf *f, struct rf_q *s)
{
	const uint32_t size = f->cfg.qsize;
	const size_t ring_bytes = (size_t)size * sizeof(struct vl_packed_desc);
	struct vl_packed_desc *snap = malloc(ring_bytes);
	static const uint32_t shape[3][5] = { { 1, 2, 3, 1, 2 }, { 3, 2 }, { 2 } };
	static const uint32_t count[3] = { 5, 2, 1 };
	uint64_t used_entries = 0, dropped = 0, packets = 0;

	assert_non_null(snap);
	assert_true(s->pr.in_order);
	for (int round = 0; round < 3; round++) {
		uint16_t ids[5], first;
		bool first_wrap;
		struct rf_good g[5];
		uint32_t ngood = 0;

		drv_pos(s, 0, &first, &first_wrap);
		for (uint32_t k = 0; k < count[round]; k++) {
			if (round == 0 && k == 3) {
				uint64_t buf = rf_alloc(f, 64);
				struct rf_desc d = { buf, f->hdr_len, 0 };

				rf_fill(f, buf, 0, 64);
				ids[k] = rf_post_chain(s, &d, 1);
				dropped++;
				continue;
			}
			g[ngood] = rf_post_good_n(f, s, 30 + 7 * k, (uint8_t)(round * 8 + k),
					       shape[round][k]);
			ids[k] = g[ngood++].head;
		}
		memcpy(snap, rf_pdesc(s, 0), ring_bytes);
		rf_burst_expect_goods(f, s, g, ngood);
		packets += ngood;
		used_entries += count[round];

		const struct vl_packed_desc *ring = rf_pdesc(s, 0);
		bool head[4096] = { false };
		uint32_t pos = first;
		bool wrap = first_wrap;

		assert_true(size <= 4096);
		for (uint32_t k = 0; k < count[round]; k++) {
			head[pos] = true;
			assert_int_equal(ring[pos].id, ids[k]);
			assert_int_equal(ring[pos].len, 0);
			assert_int_equal(ring[pos].flags, used_flags(wrap, 0));
			pos += shape[round][k];
			if (pos >= size) {
				pos -= size;
				wrap = !wrap;
			}
		}
		for (uint32_t p = 0; p < size; p++) {
			if (!head[p] && memcmp(&ring[p], &snap[p], sizeof(ring[p])) != 0)
				fail_msg("round %d: descriptor %u was written", round, p);
		}
		assert_int_equal(vl_vq_stats(s->q)->used_entries, used_entries);
		assert_int_equal(vl_vq_last_used(s->q), rf_pavail_enc(s));
		for (uint32_t k = 0; k < count[round]; k++)
			rf_expect_used(s, ids[k], 0);
		rf_expect_no_used(s);
		if (round == 0)
			assert_int_equal(first, size - 4);
		else
			assert_false(first_wrap);
	}
	assert_int_equal(vl_vq_stats(s->q)->packets, packets);
	assert_int_equal(rf_drops(s, VL_DROP_SHORT_CHAIN), dropped);
	assert_int_equal(rf_drops_other(s, VL_DROP_SHORT_CHAIN), 0);
	free(snap);
}

/* Packed RX under IN_ORDER: one used descriptor per buffer, at each chain's position, in
 * order, each with its own id and length (and WRITE). */
static void scn_in_order_rx(struct rf *f, struct rf_q *s)
{
	static const uint32_t shape[4] = { 1, 2, 1, 3 };
	struct rf_good g[4];
	uint16_t pos[4];
	bool wr[4];

	for (uint32_t k = 0; k < 4; k++) {
		drv_pos(s, 0, &pos[k], &wr[k]);
		g[k] = rf_post_good_n(f, s, 50 + 20 * k, (uint8_t)k, shape[k]);
	}
	rf_burst_expect_goods(f, s, g, 4);
	for (uint32_t k = 0; k < 4; k++) {
		const struct vl_packed_desc *u = rf_pdesc(s, pos[k]);
		uint32_t len = rf_good_used_len(f, s, &g[k]);

		assert_int_equal(u->id, g[k].head);
		assert_int_equal(u->len, len);
		assert_int_equal(u->flags, used_flags(wr[k], len));
	}
	assert_int_equal(vl_vq_stats(s->q)->used_entries, 4);
	for (uint32_t k = 0; k < 4; k++)
		rf_expect_used(s, g[k].head, rf_good_used_len(f, s, &g[k]));
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* Split TX under IN_ORDER: every chain gets its own used entry, in order (the spec allows the
 * device to skip entries; the core writes them all, which every in-order driver reads). */
static void scn_in_order_split_tx(struct rf *f, struct rf_q *s)
{
	struct rf_good g[5];
	const uint16_t start = s->vr.used->idx;

	for (uint32_t k = 0; k < 5; k++)
		g[k] = rf_post_good(f, s, 40 + k, (uint8_t)k);
	rf_burst_expect_goods(f, s, g, 5);
	assert_int_equal(s->vr.used->idx, (uint16_t)(start + 5));
	assert_int_equal(vl_vq_stats(s->q)->used_entries, 5);
	for (uint32_t k = 0; k < 5; k++) {
		const struct vl_split_used_elem *e =
			&s->vr.used->ring[(uint16_t)(start + k) & (f->cfg.qsize - 1)];

		assert_int_equal(e->id, g[k].head);
		assert_int_equal(e->len, 0);
	}
	for (uint32_t k = 0; k < 5; k++)
		rf_expect_used(s, g[k].head, 0);
	rf_expect_no_used(s);
}

/* In-order RX, mergeable: a bad chain met after good ones inside one packet's reservation.
 * Chains must come back in ring order, so the good ones reserved before it are returned
 * empty (length 0, rx_bufs_wasted), then the bad one, and the packet starts over in the
 * buffers after it. Case 1: A (64), B too small, C, D (64): a 100-byte packet (112 with the
 * header) comes back as A 0, B 0, C 64, D 48. Case 2: A1, A2 (64), B read-only, C1..C3 (64):
 * a 160-byte packet (172) as A1 0, A2 0, B 0, C1 64, C2 64, C3 44. The wasted buffers are
 * left as they were (nothing written into them). */
static void scn_in_order_rx_bad_after_good(struct rf *f, struct rf_q *s)
{
	const uint32_t h = f->hdr_len, cap = 64;
	uint64_t wasted = 0, packets = 0;

	for (int c = 0; c < 2; c++) {
		const uint32_t ngood_before = c == 0 ? 1 : 2, nafter = c == 0 ? 2 : 3;
		const uint32_t plen = c == 0 ? 100 : 160;
		uint64_t before_gpa[2], after_gpa[3];
		uint16_t before_id[2], after_id[3], bad_id;
		uint64_t badbuf = rf_alloc(f, 64);
		struct rf_desc d;

		for (uint32_t i = 0; i < ngood_before; i++) {
			before_gpa[i] = rf_alloc(f, cap);
			rf_fill(f, before_gpa[i], 0xA5, cap);
			d = (struct rf_desc){ before_gpa[i], cap, VL_DESC_F_WRITE };
			before_id[i] = rf_post_chain(s, &d, 1);
		}
		rf_fill(f, badbuf, 0xA5, 64);
		d = c == 0 ? (struct rf_desc){ badbuf, h - 1, VL_DESC_F_WRITE }
			   : (struct rf_desc){ badbuf, 64, 0 };
		bad_id = rf_post_chain(s, &d, 1);
		for (uint32_t i = 0; i < nafter; i++) {
			after_gpa[i] = rf_alloc(f, cap);
			rf_fill(f, after_gpa[i], 0xA5, cap);
			d = (struct rf_desc){ after_gpa[i], cap, VL_DESC_F_WRITE };
			after_id[i] = rf_post_chain(s, &d, 1);
		}
		struct vl_pkt *pkt = rf_make_pkt(f, plen, (uint8_t)(0xE0 + c));
		uint8_t st = 0xFF;

		assert_int_equal(vl_net_enqueue(s->q, &pkt, 1, &st), 1);
		vl_pkt_free(pkt);
		assert_int_equal(st, VL_RX_DELIVERED);
		wasted += ngood_before;
		packets++;
		assert_int_equal(vl_vq_stats(s->q)->rx_bufs_wasted, wasted);
		assert_int_equal(vl_vq_stats(s->q)->packets, packets);

		for (uint32_t i = 0; i < ngood_before; i++) {
			rf_expect_used(s, before_id[i], 0);
			const uint8_t *p = rf_ptr(f, before_gpa[i], cap);

			for (uint32_t k = 0; k < cap; k++)
				assert_int_equal(p[k], 0xA5);
		}
		rf_expect_used(s, bad_id, 0);
		uint32_t left = h + plen, off = 0;
		uint8_t hdr[12];

		rf_read(f, after_gpa[0], hdr, h);
		assert_int_equal(hdr[10] | hdr[11] << 8, nafter);
		for (uint32_t i = 0; i < nafter; i++) {
			uint32_t used = left < cap ? left : cap, skip = i == 0 ? h : 0;

			rf_expect_used(s, after_id[i], used);
			rf_assert_pattern_at(f, after_gpa[i] + skip, used - skip,
					     (uint8_t)(0xE0 + c), off);
			off += used - skip;
			left -= used;
		}
		assert_int_equal(left, 0);
		rf_expect_no_used(s);
	}
	assert_int_equal(rf_drops(s, VL_DROP_RX_BUF_TOO_SMALL), 1);
	assert_int_equal(rf_drops(s, VL_DROP_DIRECTION), 1);
	assert_int_equal(rf_drops_other(s, VL_DROP_RX_BUF_TOO_SMALL), 1);
	assert_false(vl_vq_broken(s->q));
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* A packed run of scn_SCN on one side: RAM granularity, queue size, the position and wrap
 * counter both sides start at, features added. */
#define PK(scn, sfx, gran, qs, start, wrap, feat, RX)                                        \
	{ .name = #scn sfx, .side_fn = scn_##scn, .layout = VL_LAYOUT_PACKED,                \
	  .granularity = gran, .qsize = qs, .start_idx = start, .wrap0 = !(wrap),            \
	  .features = feat, .rx = RX }
/* Both sides with one configuration. */
#define PK_SIDES(scn, gran, qs, start, wrap, feat)                                           \
	PK(scn, "_tx", gran, qs, start, wrap, feat, false),                                  \
		PK(scn, "_rx", gran, qs, start, wrap, feat, true)
/* Both sides over coarse and 4 KiB RAM, 256 entries from position 0. */
#define PK_SIDES_GRANS(scn)                                                                  \
	PK(scn, "_tx_coarse", RF_COARSE, 256, 0, true, 0, false),                            \
		PK(scn, "_tx_4k", RF_4K, 256, 0, true, 0, false),                            \
		PK(scn, "_rx_coarse", RF_COARSE, 256, 0, true, 0, true),                     \
		PK(scn, "_rx_4k", RF_4K, 256, 0, true, 0, true)
/* scn_basic with qs entries: TX, RX, RX with mergeable buffers, each over both RAMs. */
#define BASIC(qs)                                                                            \
	PK(basic, "_tx_" #qs "_coarse", RF_COARSE, qs, 0, true, 0, false),                   \
		PK(basic, "_tx_" #qs "_4k", RF_4K, qs, 0, true, 0, false),                   \
		PK(basic, "_rx_" #qs "_coarse", RF_COARSE, qs, 0, true, 0, true),            \
		PK(basic, "_rx_" #qs "_4k", RF_4K, qs, 0, true, 0, true),                    \
		PK(basic, "_rx_mrg_" #qs "_coarse", RF_COARSE, qs, 0, true, MRG, true),      \
		PK(basic, "_rx_mrg_" #qs "_4k", RF_4K, qs, 0, true, MRG, true)
#define MERGEABLE(qs)                                                                        \
	PK(mergeable_rx, "_" #qs "_coarse", RF_COARSE, qs, 0, true, MRG, true),              \
		PK(mergeable_rx, "_" #qs "_4k", RF_4K, qs, 0, true, MRG, true)
#define MRG VL_FEATURE(VL_F_NET_MRG_RXBUF)

static const struct rf_case cases[] = {
	BASIC(256),
	BASIC(1000),
	BASIC(3),
	MERGEABLE(256),
	MERGEABLE(1000),
	MERGEABLE(3),
	PK_SIDES_GRANS(id_from_last),
	PK_SIDES(wrap_mid_chain, RF_4K, 256, 254, true, 0),
	PK_SIDES(many_laps, RF_COARSE, 7, 0, true, 0),
	PK_SIDES(used_writeback, RF_COARSE, 64, 61, true, 0),
	PK(head_flags, "_tx_wrap1", RF_COARSE, 256, 10, true, 0, false),
	PK(head_flags, "_tx_wrap0", RF_COARSE, 256, 10, false, 0, false),
	PK(head_flags, "_rx_wrap1", RF_4K, 256, 10, true, 0, true),
	PK(head_flags, "_rx_wrap0", RF_4K, 256, 10, false, 0, true),
	PK_SIDES(lie_next_everywhere, RF_COARSE, 256, 100, true, 0),
	PK_SIDES(longest_chain, RF_COARSE, 256, 100, true, 0),
	PK_SIDES_GRANS(id_out_of_range),
	PK_SIDES_GRANS(id_out_of_range_last),
	PK_SIDES(bad_id_after_good, RF_COARSE, 256, 0, true, 0),
	PK_SIDES(incomplete_after_good, RF_COARSE, 256, 0, true, 0),
	PK_SIDES_GRANS(indirect_consecutive),
	PK_SIDES_GRANS(indirect_with_next),
	PK_SIDES_GRANS(indirect_direction),
	PK_SIDES(resume_250_wrap0, RF_COARSE, 256, 250, false, 0),
	PK_SIDES(resume_999_wrap1, RF_4K, 1000, 999, true, 0),
	PK_SIDES(resume_1_wrap0_size3, RF_COARSE, 3, 1, false, 0),
	PK_SIDES(resume_wrong_wrap, RF_COARSE, 256, 5, true, 0),
	PK(in_order_tx_per_chain, "_coarse", RF_COARSE, 64, 60, true, IN_ORDER, false),
	PK(in_order_tx_per_chain, "_4k", RF_4K, 1000, 996, true, IN_ORDER, false),
	PK(in_order_rx, "", RF_COARSE, 256, 253, true, IN_ORDER, true),
	PK(in_order_rx, "_mrg", RF_COARSE, 256, 0, true, IN_ORDER | MRG, true),
	/* Split: the used-ring copy crosses the 16-bit wrap. */
	{ .name = "in_order_split_tx", .side_fn = scn_in_order_split_tx,
	  .layout = VL_LAYOUT_SPLIT, .granularity = RF_COARSE, .features = IN_ORDER,
	  .start_idx = 65533 },
	PK(in_order_rx_bad_after_good, "_packed_coarse", RF_COARSE, 256, 250, true,
	   IN_ORDER | MRG, true),
	PK(in_order_rx_bad_after_good, "_packed_4k", RF_4K, 7, 3, true, IN_ORDER | MRG, true),
	{ .name = "in_order_rx_bad_after_good_split", .side_fn = scn_in_order_rx_bad_after_good,
	  .layout = VL_LAYOUT_SPLIT, .granularity = RF_COARSE, .features = IN_ORDER | MRG,
	  .rx = true },
};

int main(void)
{
	/* Tests that set up their own fixtures (or none). */
	const struct CMUnitTest more[] = {
		cmocka_unit_test(test_lie_tail_not_avail_tx),
		cmocka_unit_test(test_lie_tail_not_avail_rx),
		cmocka_unit_test(test_create_sizes),
		cmocka_unit_test(test_create_bad_args),
		cmocka_unit_test(test_drop_names),
		cmocka_unit_test(test_create_ring_base),
	};

	return rf_run_cases("packed_ring", RF_LIST(cases), RF_LIST(more));
}

/* SPDX-License-Identifier: MIT */
/* Split-ring hostile inputs (docs: /work/shared/design/hostile-inputs.md), driven through the
 * virtio-net datapath: a simulated driver writes whatever descriptors a malicious guest could
 * and each case pins the exact outcome: return value, drop counter, the used entries the
 * guest sees, whether the queue is broken, and that a well-formed chain still moves after.
 *
 * Chain-level cases are one body run on the TX queue (vl_net_dequeue) and on the RX queue
 * (vl_net_enqueue: a bad chain met before any good one is returned at once with length 0 and
 * the packet lands in the next buffer), over coarse and 4 KiB guest RAM regions. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ring_fixture.h"
#include "frame_build.h"
#include "vl_lab_control.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static uint16_t post1(struct rf_q *s, uint64_t gpa, uint32_t len, uint16_t flags)
{
	struct rf_desc d = { gpa, len, flags };

	return rf_post_chain(s, &d, 1);
}

/* One burst of whatever kind the side does; returns what the datapath call returned.
 * TX asks for up to 32 packets (freed), RX offers one 64-byte packet. */
static uint16_t burst_any(struct rf *f, struct rf_q *s)
{
	if (!s->rx) {
		struct vl_pkt *pkts[32];
		uint16_t n = vl_net_dequeue(s->q, f->pool, pkts, 32);

		vl_pkt_free_bulk(pkts, n);
		return n;
	}
	struct vl_pkt *pkt = rf_make_pkt(f, 64, 0x77);
	uint16_t n = vl_net_enqueue(s->q, &pkt, 1, NULL);

	vl_pkt_free(pkt);
	return n;
}

/* Write raw descriptor-table entries (any next fields) at gpa. */
static void put_table(struct rf *f, uint64_t gpa, const struct vl_split_desc *e, uint32_t n)
{
	rf_write(f, gpa, e, (uint64_t)n * sizeof(*e));
}

/* ---- loops ------------------------------------------------------------------------------- */

/* a -> b -> a and c -> c in the descriptor table: each is stopped when it comes back to a
 * descriptor it visited, before reading it again. */
static void scn_loop_direct(struct rf *f, struct rf_q *s)
{
	uint64_t buf = rf_alloc(f, 64);
	uint16_t a = rf_desc(s), b = rf_desc(s), c = rf_desc(s);
	const uint16_t ab[2] = { a, b };

	rf_set_desc(s, a, buf, 16, rf_dirf(s) | VL_DESC_F_NEXT, b);
	rf_set_desc(s, b, buf + 16, 16, rf_dirf(s) | VL_DESC_F_NEXT, a);
	rf_post_head(s, a, ab, 2);
	rf_set_desc(s, c, buf + 32, 16, rf_dirf(s) | VL_DESC_F_NEXT, c);
	rf_post_head(s, c, &c, 1);

	const uint16_t bad[2] = { a, c };

	rf_expect_bad_then_good(f, s, bad, 2, VL_DROP_CHAIN_LOOP);
}

/* The loop check marks each descriptor a walk visits with the walk's stamp; the stamps are
 * 16 bits, so every 65535 walks they start over at 1 and every old mark is cleared. A chain
 * walked once and left alone for exactly that many walks gets its old stamp back: only the
 * clearing tells the new walk from the old one. Chain a -> b is walked, then 65534 chains of
 * one indirect descriptor (a walk of its one-entry table each, which marks entry 0 and no
 * ring descriptor), then a -> b again: a packet both times, not a loop. A loop met right
 * after is still caught. */
static void scn_stamp_wrap(struct rf *f, struct rf_q *s)
{
	enum { FILLER = 65534, PER_BURST = 128 };
	/* Descriptor 0 is also the tables' entry 0: a and b must not be 0. */
	uint16_t got[3] = { rf_desc(s), rf_desc(s), rf_desc(s) };
	uint16_t ab[2];
	uint32_t nab = 0;

	for (int i = 0; i < 3; i++) {
		if (got[i] != 0 && nab < 2)
			ab[nab++] = got[i];
		else
			lab_vring_desc_put(&s->vr, got[i]);
	}
	assert_int_equal(nab, 2);

	for (int round = 0; round < 2; round++) {
		struct rf_good g = rf_good_buf(f, s, 100, (uint8_t)(0x60 + round));
		const uint32_t first = f->hdr_len + 30;

		rf_set_desc(s, ab[0], g.gpa, first, VL_DESC_F_NEXT, ab[1]);
		rf_set_desc(s, ab[1], g.gpa + first, f->hdr_len + g.len - first, 0, 0);
		/* a and b stay the test's until the last round: nothing else writes them. */
		rf_post_head(s, ab[0], ab, round == 1 ? 2 : 0);
		g.head = ab[0];
		rf_burst_expect_good(f, s, &g);
		rf_expect_used(s, ab[0], 0);
		rf_expect_no_used(s);
		rf_free_good(f, &g);
		if (round == 1)
			break;

		struct rf_good t = rf_good_buf(f, s, 40, 0x5A);
		const struct rf_desc entry = { t.gpa, f->hdr_len + t.len, 0 };
		const uint64_t table = rf_alloc(f, sizeof(struct vl_split_desc));

		rf_write_table(f, table, &entry, 1);
		for (uint32_t left = FILLER; left > 0;) {
			const uint32_t n = left < PER_BURST ? left : PER_BURST;
			struct vl_pkt *pkts[PER_BURST];
			uint32_t id, len;

			for (uint32_t i = 0; i < n; i++)
				rf_post_indirect(s, table, sizeof(struct vl_split_desc));
			assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, PER_BURST), n);
			for (uint32_t i = 0; i < n; i++)
				rf_assert_pkt_pattern(pkts[i], t.len, t.seed);
			vl_pkt_free_bulk(pkts, n);
			for (uint32_t i = 0; i < n; i++)
				assert_true(rf_pop_used(s, &id, &len));
			left -= n;
		}
		rf_free_good(f, &t);
	}
	assert_int_equal(vl_vq_stats(s->q)->packets, FILLER + 2);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);

	uint16_t c = rf_desc(s);
	uint64_t buf = rf_alloc(f, 64);

	rf_set_desc(s, c, buf, 16, VL_DESC_F_NEXT, c);
	rf_post_head(s, c, &c, 1);
	rf_expect_bad_then_good(f, s, &c, 1, VL_DROP_CHAIN_LOOP);
}

/* Loops inside an indirect table: e0 -> e1 -> e2 -> e1, and a one-entry table e0 -> e0, each
 * stopped at the entry visited twice (table entries are an index space of their own). */
static void scn_loop_indirect(struct rf *f, struct rf_q *s)
{
	uint64_t buf = rf_alloc(f, 64);
	uint64_t t1 = rf_alloc(f, 48), t2 = rf_alloc(f, 16);
	const uint16_t fl = (uint16_t)(rf_dirf(s) | VL_DESC_F_NEXT);
	const struct vl_split_desc e1[3] = {
		{ buf, 16, fl, 1 }, { buf + 16, 16, fl, 2 }, { buf + 32, 16, fl, 1 },
	};
	const struct vl_split_desc e2[1] = { { buf, 16, fl, 0 } };

	put_table(f, t1, e1, 3);
	put_table(f, t2, e2, 1);

	const uint16_t bad[2] = { rf_post_indirect(s, t1, 48), rf_post_indirect(s, t2, 16) };

	rf_expect_bad_then_good(f, s, bad, 2, VL_DROP_CHAIN_LOOP);
}

/* The longest legal direct chain: exactly queue-size descriptors (the walk is not one step
 * short). TX: header then 255 slices of 4 bytes; RX: 256 slices of 8 bytes. */
static void scn_longest_direct_chain(struct rf *f, struct rf_q *s)
{
	struct rf_good g = rf_post_longest_chain(f, s, 0x22);

	rf_expect_only_good(f, s, &g);
}

/* ---- out-of-range indices ------------------------------------------------------------------ */

/* next == queue size, next == 0xffff (second hop), and next == table entries inside an
 * indirect table (2 < queue size, but only 2 entries exist). */
static void scn_next_out_of_range(struct rf *f, struct rf_q *s)
{
	uint64_t buf = rf_alloc(f, 64);
	const uint16_t fl = (uint16_t)(rf_dirf(s) | VL_DESC_F_NEXT);
	uint16_t a = rf_desc(s), b = rf_desc(s), c = rf_desc(s);
	const uint16_t bc[2] = { b, c };

	rf_set_desc(s, a, buf, 16, fl, (uint16_t)f->cfg.qsize);
	rf_post_head(s, a, &a, 1);
	rf_set_desc(s, b, buf, 16, fl, c);
	rf_set_desc(s, c, buf + 16, 16, fl, 0xFFFF);
	rf_post_head(s, b, bc, 2);

	uint64_t t = rf_alloc(f, 32);
	const struct vl_split_desc e[2] = { { buf, 16, fl, 1 }, { buf + 16, 16, fl, 2 } };

	put_table(f, t, e, 2);

	const uint16_t bad[3] = { a, b, rf_post_indirect(s, t, 32) };

	rf_expect_bad_then_good(f, s, bad, 3, VL_DROP_NEXT_OUT_OF_RANGE);
}

/* The avail ring names head == queue size: no id could be returned for it, so the queue
 * breaks; nothing is returned and no later burst does anything. */
static void scn_head_out_of_range(struct rf *f, struct rf_q *s)
{
	lab_vring_add_avail(&s->vr, (uint16_t)f->cfg.qsize);
	lab_vring_kick(&s->vr);

	assert_int_equal(burst_any(f, s), 0);
	assert_true(vl_vq_broken(s->q));
	assert_int_equal(vl_vq_broken_reason(s->q), VL_DROP_HEAD_OUT_OF_RANGE);
	assert_int_equal(rf_drops(s, VL_DROP_HEAD_OUT_OF_RANGE), 1);
	assert_int_equal(rf_drops_other(s, VL_DROP_HEAD_OUT_OF_RANGE), 0);
	assert_int_equal(vl_vq_stats(s->q)->rx_no_room, 0); /* broken is not "no room" */
	assert_int_equal(vl_vq_stats(s->q)->chains, 0);
	assert_int_equal(vl_vq_last_avail(s->q), f->cfg.start_idx);
	rf_expect_no_used(s);
	assert_false(vl_vq_needs_call(s->q));

	/* A well-formed chain behind it is never looked at: the queue stays stopped. */
	(void)rf_post_good(f, s, 100, 1);
	assert_int_equal(burst_any(f, s), 0);
	assert_int_equal(burst_any(f, s), 0);
	rf_expect_no_used(s);
	assert_int_equal(rf_drops(s, VL_DROP_HEAD_OUT_OF_RANGE), 1); /* latched, counted once */
	assert_int_equal(vl_vq_broken_reason(s->q), VL_DROP_HEAD_OUT_OF_RANGE);
}

/* A good chain ahead of the bad head still moves and is returned; then the queue is broken.
 * (TX meets the bad head in the same burst, RX when the next packet needs a buffer.) */
static void scn_head_out_of_range_after_good(struct rf *f, struct rf_q *s)
{
	struct rf_good g = rf_post_good(f, s, 100, 2);

	lab_vring_add_avail(&s->vr, 0xFFFF);
	lab_vring_kick(&s->vr);
	rf_burst_expect_good(f, s, &g);
	assert_int_equal(burst_any(f, s), 0);
	assert_true(vl_vq_broken(s->q));
	assert_int_equal(vl_vq_broken_reason(s->q), VL_DROP_HEAD_OUT_OF_RANGE);
	assert_int_equal(rf_drops(s, VL_DROP_HEAD_OUT_OF_RANGE), 1);
	assert_int_equal(vl_vq_last_avail(s->q), (uint16_t)(f->cfg.start_idx + 1));
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
	assert_int_equal(burst_any(f, s), 0);
	rf_expect_no_used(s);
}

/* avail->idx claims queue size + 1 new entries: the queue breaks before reading any. */
static void scn_avail_idx_jump(struct rf *f, struct rf_q *s)
{
	(void)rf_post_good(f, s, 100, 3);
	lab_vring_force_avail_idx(&s->vr, (uint16_t)(f->cfg.start_idx + f->cfg.qsize + 1));

	assert_int_equal(burst_any(f, s), 0);
	assert_true(vl_vq_broken(s->q));
	assert_int_equal(vl_vq_broken_reason(s->q), VL_DROP_AVAIL_IDX_JUMP);
	assert_int_equal(rf_drops(s, VL_DROP_AVAIL_IDX_JUMP), 1);
	assert_int_equal(rf_drops_other(s, VL_DROP_AVAIL_IDX_JUMP), 0);
	assert_int_equal(vl_vq_stats(s->q)->chains, 0);
	assert_int_equal(vl_vq_last_avail(s->q), f->cfg.start_idx);
	rf_expect_no_used(s);

	/* Putting the index back does not revive it: nothing from this guest is trusted. */
	lab_vring_force_avail_idx(&s->vr, (uint16_t)(f->cfg.start_idx + 1));
	assert_int_equal(burst_any(f, s), 0);
	rf_expect_no_used(s);
	assert_int_equal(rf_drops(s, VL_DROP_AVAIL_IDX_JUMP), 1);
}

/* A jump of exactly queue size is a full ring: legal, every chain moves in one burst. */
static void scn_avail_full_ring(struct rf *f, struct rf_q *s)
{
	const uint32_t n = f->cfg.qsize;
	struct rf_good *g = calloc(n, sizeof(*g));

	assert_non_null(g);
	for (uint32_t i = 0; i < n; i++)
		g[i] = rf_post_good(f, s, 60 + i % 7, (uint8_t)i);
	assert_int_equal(s->vr.nfree, 0); /* every descriptor is in the ring */
	assert_int_equal((uint16_t)(s->vr.avail->idx - f->cfg.start_idx), n);

	rf_burst_expect_goods(f, s, g, n);
	assert_false(vl_vq_broken(s->q));
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	assert_int_equal(lab_vring_used_pending(&s->vr), n);
	for (uint32_t i = 0; i < n; i++)
		rf_expect_used(s, g[i].head, rf_good_used_len(f, s, &g[i]));
	rf_expect_no_used(s);
	free(g);
	rf_expect_still_works(f, s);
}

/* ---- indirect tables ------------------------------------------------------------------- */

/* INDIRECT and NEXT on the same descriptor (spec 2.7.5.3.1 forbids it). */
static void scn_indirect_with_next(struct rf *f, struct rf_q *s)
{
	uint64_t t = rf_valid_table(f, s);
	uint64_t buf = rf_alloc(f, 64);
	struct rf_desc d[2] = {
		{ t, 32, VL_DESC_F_INDIRECT }, /* rf_post_chain adds NEXT: the offence */
		{ buf, 64, rf_dirf(s) },
	};
	const uint16_t bad[1] = { rf_post_chain(s, d, 2) };

	rf_expect_bad_then_good(f, s, bad, 1, VL_DROP_INDIRECT_WITH_NEXT);
}

/* A direct descriptor whose NEXT is an indirect one: the spec forbids only INDIRECT with NEXT
 * on the same descriptor, so the chain is the direct buffer then the table's entries, and it
 * holds its two ring descriptors until it comes back. */
static void scn_direct_then_indirect(struct rf *f, struct rf_q *s)
{
	struct rf_good g = rf_good_buf(f, s, 100, 0x51);
	uint64_t t = rf_alloc(f, 32);
	const uint32_t total = f->hdr_len + g.len;
	struct rf_desc e[2] = {
		{ g.gpa + 40, 30, rf_dirf(s) },
		{ g.gpa + 70, total - 70, rf_dirf(s) },
	};

	rf_write_table(f, t, e, 2);
	struct rf_desc d[2] = {
		{ g.gpa, 40, rf_dirf(s) },         /* rf_post_chain links it to the next with NEXT */
		{ t, 32, VL_DESC_F_INDIRECT },
	};

	g.head = rf_post_chain(s, d, 2);
	rf_expect_only_good(f, s, &g);
}

/* The device ignores WRITE on the descriptor naming a table (spec 2.7.5.3.2): with and
 * without it the same table is accepted, on either side. */
static void scn_indirect_ignores_write_flag(struct rf *f, struct rf_q *s)
{
	for (int w = 0; w < 2; w++) {
		struct rf_good g = rf_good_buf(f, s, 90, (uint8_t)(0x40 + w));
		uint64_t t = rf_alloc(f, 32);

		struct rf_desc e[2] = {
			{ g.gpa, 30, rf_dirf(s) },
			{ g.gpa + 30, f->hdr_len + g.len - 30, rf_dirf(s) },
		};

		rf_write_table(f, t, e, 2);
		g.head = post1(s, t, 32, (uint16_t)(VL_DESC_F_INDIRECT | (w ? VL_DESC_F_WRITE : 0)));
		rf_burst_expect_good(f, s, &g);
		rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	}
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* ---- guest memory ------------------------------------------------------------------------ */

/* Ranges the memory table does not (fully) map: in the hole, at the end of guest memory,
 * starting in RAM and running past its end, starting in the ring area and running into the
 * hole, near 2^64 (the end wraps), a good piece then a hole piece, and indirect tables in the
 * hole or running past the end of RAM. Nothing is read or written for them. */
static void scn_unmapped(struct rf *f, struct rf_q *s)
{
	const uint64_t hole = lab_gmem_hole_gpa(f->g);
	const uint64_t end = lab_gmem_end_gpa(f->g);
	const uint64_t ring_end = lab_gmem_ring_gpa(f->g) + lab_gmem_ring_size(f->g);
	const uint16_t fl = rf_dirf(s);
	uint64_t buf = rf_alloc(f, 64);
	uint16_t bad[9];

	/* The last RAM bytes and the tail of the ring area: poisoned, must stay as they are. */
	rf_fill(f, end - 32, 0x5A, 32);
	uint8_t ring_tail[32];

	rf_read(f, ring_end - 32, ring_tail, 32);

	bad[0] = post1(s, hole, 64, fl);
	bad[1] = post1(s, end, 64, fl);
	bad[2] = post1(s, end - 32, 64, fl);
	bad[3] = post1(s, ring_end - 32, 64, fl);
	bad[4] = post1(s, UINT64_MAX - 15, 64, fl);
	struct rf_desc two[2] = { { buf, 64, fl }, { hole, 64, fl } };

	bad[5] = rf_post_chain(s, two, 2);
	bad[6] = rf_post_indirect(s, hole, 32);
	bad[7] = rf_post_indirect(s, end - 16, 32);
	/* The same range as an entry of a valid table. */
	uint64_t t = rf_alloc(f, 32);
	struct rf_desc e[2] = { { buf, 32, fl }, { end - 8, 16, fl } };

	rf_write_table(f, t, e, 2);
	bad[8] = rf_post_indirect(s, t, 32);

	rf_expect_bad_then_good(f, s, bad, 9, VL_DROP_UNMAPPED);

	const uint8_t *tail = rf_ptr(f, end - 32, 32);

	for (int i = 0; i < 32; i++)
		assert_int_equal(tail[i], 0x5A);
	assert_memory_equal(rf_ptr(f, ring_end - 32, 32), ring_tail, 32);
}

/* A buffer that straddles two regions is split per region and copied intact: once with the
 * header itself cut (5 + rest), once with the payload cut far from the header. */
static void scn_buffer_straddle(struct rf *f, struct rf_q *s)
{
	static const uint32_t before[2] = { 5, 1500 };
	static const uint32_t len[2] = { 100, 3000 };

	for (int k = 0; k < 2; k++) {
		struct rf_good g = { .len = len[k], .seed = (uint8_t)(0x60 + k) };
		uint32_t total = f->hdr_len + g.len;

		g.gpa = rf_straddle(f, before[k]);
		rf_good_fill(f, s, &g);
		g.head = post1(s, g.gpa, total, rf_dirf(s));
		rf_burst_expect_good(f, s, &g);
		rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	}
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* A chain of more translated pieces than VL_CHAIN_MAX_PIECES: one descriptor over 1025
 * pages of 4 KiB regions (one piece per region). 1024 pages is still fine (RX delivers). */
static void scn_too_many_pieces(struct rf *f, struct rf_q *s)
{
	const uint64_t page = 4096;
	uint64_t big = lab_gmem_alloc(f->g, (VL_CHAIN_MAX_PIECES + 1) * page, page);

	assert_true(big != 0);
	const uint16_t bad[1] = {
		post1(s, big, (VL_CHAIN_MAX_PIECES + 1) * (uint32_t)page, rf_dirf(s)),
	};

	rf_expect_bad_then_good(f, s, bad, 1, VL_DROP_TOO_MANY_PIECES);
	if (s->rx) {
		struct rf_good g = { .gpa = big, .len = 5000, .seed = 0x71 };

		rf_fill(f, big, 0xA5, f->hdr_len + g.len);
		g.head = post1(s, big, VL_CHAIN_MAX_PIECES * (uint32_t)page, VL_DESC_F_WRITE);
		rf_burst_expect_good(f, s, &g);
		rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
		assert_int_equal(rf_drops(s, VL_DROP_TOO_MANY_PIECES), 1);
	}
}

/* ---- lengths ----------------------------------------------------------------------------- */

/* Lengths that sum past 2^32 - 1. The sum is checked before a descriptor is translated, so a
 * small mapped piece then a 0xFFFFFFF0 one is a length overflow (direct, and inside a table).
 * Two 0xF0000000 descriptors never get that far: the first one alone runs past guest RAM,
 * and its translation fails first (unmapped). */
static void scn_len_overflow(struct rf *f, struct rf_q *s)
{
	const uint16_t fl = rf_dirf(s);
	uint64_t buf = rf_alloc(f, 64);
	uint64_t ram = lab_gmem_ram_gpa(f->g);
	struct rf_desc d[2] = { { buf, 64, fl }, { ram, 0xFFFFFFF0u, fl } };
	uint64_t t = rf_alloc(f, 32);

	rf_write_table(f, t, d, 2);

	const uint16_t bad[2] = { rf_post_chain(s, d, 2), rf_post_indirect(s, t, 32) };

	rf_expect_bad_then_good(f, s, bad, 2, VL_DROP_LEN_OVERFLOW);

	struct rf_desc huge[2] = { { ram, 0xF0000000u, fl }, { ram, 0xF0000000u, fl } };
	const uint16_t bad2[1] = { rf_post_chain(s, huge, 2) };
	struct rf_good g = rf_post_good(f, s, 80, 0x11);

	rf_burst_expect_good(f, s, &g);
	assert_int_equal(rf_drops(s, VL_DROP_UNMAPPED), 1);
	assert_int_equal(rf_drops(s, VL_DROP_LEN_OVERFLOW), 2);
	rf_expect_used(s, bad2[0], 0);
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
}

/* Zero-length descriptors between data descriptors contribute nothing and break nothing. */
static void scn_zero_len_middle(struct rf *f, struct rf_q *s)
{
	const uint32_t h = f->hdr_len;
	const uint16_t fl = rf_dirf(s);
	struct rf_good g = rf_good_buf(f, s, 150, 0x0D);
	struct rf_desc d[6] = {
		{ g.gpa, h, fl },
		{ g.gpa + h, 0, fl },
		{ g.gpa + h, 100, fl },
		{ g.gpa + h + 100, 0, fl },
		{ g.gpa, 0, fl },
		{ g.gpa + h + 100, 50, fl },
	};

	g.head = rf_post_chain(s, d, 6);
	rf_burst_expect_good(f, s, &g);
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* A chain of only zero-length descriptors holds no packet: a short TX chain, an RX buffer
 * too small for the header. */
static void scn_zero_len_only(struct rf *f, struct rf_q *s)
{
	uint64_t buf = rf_alloc(f, 64);
	struct rf_desc d[3] = {
		{ buf, 0, rf_dirf(s) }, { buf, 0, rf_dirf(s) }, { buf + 8, 0, rf_dirf(s) },
	};
	const uint16_t bad[2] = { rf_post_chain(s, d, 3), rf_post_chain(s, d, 1) };

	rf_expect_bad_then_good(f, s, bad, 2,
			     s->rx ? VL_DROP_RX_BUF_TOO_SMALL : VL_DROP_SHORT_CHAIN);
}

/* ---- TX chain contents ----------------------------------------------------------------- */

/* The virtio-net header spread over 3+ descriptors (4+4+4 with the 12-byte header, 4+4+2
 * with the 10-byte one; then one byte per descriptor) is gathered, validated and converted. */
static void scn_header_spread(struct rf *f, struct rf_q *s)
{
	const uint32_t h = f->hdr_len;
	const uint32_t plen = 200;
	/* NEEDS_CSUM at 14 + 16 (+2 <= 200), gso none, hdr_len field arbitrary (unchecked
	 * without GSO), num_buffers (12-byte header) ignored on TX. */
	const uint8_t hdr[12] = { VL_NET_HDR_F_NEEDS_CSUM, VL_NET_HDR_GSO_NONE, 0x34, 0x12,
				  0, 0, 14, 0, 16, 0, 0x99, 0x99 };

	for (int step = 4; step >= 1; step -= 3) {
		struct rf_desc d[16];
		uint32_t n = 0;
		uint8_t seed = (uint8_t)(0x90 + step);

		for (uint32_t off = 0; off < h; off += (uint32_t)step) {
			uint32_t l = h - off < (uint32_t)step ? h - off : (uint32_t)step;

			/* Separate allocations: the header pieces are not adjacent in RAM. */
			d[n++] = (struct rf_desc){ rf_put_bytes(f, hdr + off, l), l, 0 };
		}
		uint64_t data = rf_alloc(f, plen);

		rf_pattern(rf_ptr(f, data, plen), plen, seed);
		d[n++] = (struct rf_desc){ data, plen, 0 };
		assert_true(n >= 4);

		uint16_t head = rf_post_chain(s, d, n);
		struct vl_pkt *pkt = NULL;

		assert_int_equal(vl_net_dequeue(s->q, f->pool, &pkt, 1), 1);
		rf_assert_pkt_pattern(pkt, plen, seed);
		assert_int_equal(pkt->ol.flags, VL_NET_HDR_F_NEEDS_CSUM);
		assert_int_equal(pkt->ol.gso_type, VL_NET_HDR_GSO_NONE);
		assert_int_equal(pkt->ol.hdr_len, 0x1234);
		assert_int_equal(pkt->ol.gso_size, 0);
		assert_int_equal(pkt->ol.csum_start, 14);
		assert_int_equal(pkt->ol.csum_offset, 16);
		vl_pkt_free(pkt);
		rf_expect_used(s, head, 0);
	}
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* Chains no longer than the header (CVE-2022-2132): exactly the header in three pieces,
 * exactly the header in one, one byte short. All returned with length 0. One byte more than
 * the header is a 1-byte packet. */
static void scn_short_chain(struct rf *f, struct rf_q *s)
{
	const uint32_t h = f->hdr_len;
	uint64_t buf = rf_alloc(f, 64);

	rf_fill(f, buf, 0, 64);
	struct rf_desc three[3] = { { buf, 4, 0 }, { buf + 4, 4, 0 }, { buf + 8, h - 8, 0 } };
	const uint16_t bad[3] = {
		rf_post_chain(s, three, 3),
		post1(s, buf, h, 0),
		post1(s, buf, h - 1, 0),
	};

	rf_expect_bad_then_good(f, s, bad, 3, VL_DROP_SHORT_CHAIN);

	/* Header + 1 byte, the byte in its own descriptor. */
	uint64_t one = rf_alloc(f, 1);
	struct rf_good g = { .gpa = one, .len = 1, .seed = 0x44 };

	rf_pattern(rf_ptr(f, one, 1), 1, g.seed);
	struct rf_desc d[2] = { { buf, h, 0 }, { one, 1, 0 } };

	g.head = rf_post_chain(s, d, 2);
	rf_burst_expect_good(f, s, &g);
	rf_expect_used(s, g.head, 0);
	assert_int_equal(rf_drops(s, VL_DROP_SHORT_CHAIN), 3);
}

/* A device-writable descriptor in a TX chain: as data, as the header, inside a table. */
static void scn_tx_write_desc(struct rf *f, struct rf_q *s)
{
	const uint32_t h = f->hdr_len;
	uint64_t buf = rf_alloc(f, h + 64);

	rf_fill(f, buf, 0, h + 64);
	struct rf_desc d1[2] = { { buf, h, 0 }, { buf + h, 64, VL_DESC_F_WRITE } };
	struct rf_desc d2[2] = { { buf, h, VL_DESC_F_WRITE }, { buf + h, 64, 0 } };
	uint64_t t = rf_alloc(f, 32);

	rf_write_table(f, t, d1, 2);

	const uint16_t bad[3] = {
		rf_post_chain(s, d1, 2),
		rf_post_chain(s, d2, 2),
		rf_post_indirect(s, t, 32),
	};

	rf_expect_bad_then_good(f, s, bad, 3, VL_DROP_DIRECTION);
}

/* Post a TX chain of header hdr and the frame bytes fr[0..len) (one descriptor). */
static uint16_t post_tx_frame(struct rf *f, struct rf_q *s, const struct vl_net_hdr *hdr,
			      const uint8_t *fr, uint32_t len)
{
	uint64_t buf = rf_alloc(f, f->hdr_len + len);
	uint8_t *p = rf_ptr(f, buf, f->hdr_len + len);

	memcpy(p, hdr, f->hdr_len);
	memcpy(p + f->hdr_len, fr, len);
	return post1(s, buf, f->hdr_len + len, 0);
}

static struct vl_net_hdr hdr_of(const struct vl_offload *ol)
{
	return (struct vl_net_hdr){ .flags = ol->flags, .gso_type = ol->gso_type,
				    .hdr_len = ol->hdr_len, .gso_size = ol->gso_size,
				    .csum_start = ol->csum_start, .csum_offset = ol->csum_offset };
}

/* A frame of spec sp with payload bytes after its headers, as a driver sends it for GSO:
 * partial checksum, header from lab_frame_offload (gso_type then overridden by the caller
 * when it wants another). */
static uint32_t gso_frame(struct lab_frame_spec sp, uint32_t payload, uint8_t *fr,
			  struct vl_offload *ol)
{
	struct lab_frame_layout lay;

	sp.payload = payload;
	const uint32_t len = lab_frame_build(&sp, true, fr, 2048, &lay);

	assert_int_not_equal(len, 0);
	lab_frame_offload(&sp, &lay, 1000, false, ol);
	return len;
}

/* Each GSO type is taken only when its HOST_* feature was negotiated, and the ECN bit only
 * with HOST_ECN (spec 5.1.6.2): else the chain is dropped, gso_not_negotiated or
 * ecn_not_negotiated, and returned. The expected outcome of every header is worked out
 * from the row's features, so one body covers none, some and all of them. Each packet is a
 * frame of its type's protocols, so the accepted ones also pass the frame rules. */
static void scn_gso_negotiation(struct rf *f, struct rf_q *s)
{
	static const struct {
		uint8_t type;
		int bit;
		struct lab_frame_spec sp;
	} types[] = {
		{VL_NET_HDR_GSO_TCPV4, VL_F_NET_HOST_TSO4, {.seed = 1, .tcp_flags = 0x18}},
		{VL_NET_HDR_GSO_TCPV6, VL_F_NET_HOST_TSO6, {.ipv6 = true, .seed = 2}},
		{VL_NET_HDR_GSO_UDP, VL_F_NET_HOST_UFO, {.udp = true, .seed = 3}},
		{VL_NET_HDR_GSO_UDP_L4, VL_F_NET_HOST_USO, {.udp = true, .ipv6 = true, .seed = 4}},
	};
	const uint64_t feat = f->cfg.features;
	const bool ecn_ok = (feat & VL_FEATURE(VL_F_NET_HOST_ECN)) != 0;
	uint16_t heads[8];
	enum vl_drop why[8];
	uint8_t frames[8][2048];
	uint32_t lens[8];
	uint32_t n = 0, good = 0, not_neg = 0, ecn_not = 0;

	for (uint32_t t = 0; t < 4; t++) {
		for (uint32_t ecn = 0; ecn < 2; ecn++) {
			struct vl_offload ol;

			lens[n] = gso_frame(types[t].sp, 300, frames[n], &ol);
			ol.gso_type = (uint8_t)(types[t].type | (ecn ? VL_NET_HDR_GSO_ECN : 0));
			const struct vl_net_hdr h = hdr_of(&ol);
			const bool type_ok = (feat & VL_FEATURE(types[t].bit)) != 0;

			why[n] = !type_ok ? VL_DROP_GSO_NOT_NEGOTIATED
				 : ecn && !ecn_ok ? VL_DROP_ECN_NOT_NEGOTIATED
						  : VL_DROP_NONE;
			good += why[n] == VL_DROP_NONE;
			not_neg += why[n] == VL_DROP_GSO_NOT_NEGOTIATED;
			ecn_not += why[n] == VL_DROP_ECN_NOT_NEGOTIATED;
			heads[n] = post_tx_frame(f, s, &h, frames[n], lens[n]);
			n++;
		}
	}
	struct vl_pkt *pkts[16];
	uint8_t got[2048];

	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 16), good);
	for (uint32_t i = 0, k = 0; i < n; i++) {
		if (why[i] != VL_DROP_NONE)
			continue;
		assert_int_equal(pkts[k]->pkt_len, lens[i]);
		assert_int_equal(vl_pkt_read(pkts[k], 0, got, lens[i]), lens[i]);
		assert_memory_equal(got, frames[i], lens[i]);
		assert_int_equal(pkts[k]->ol.gso_type, types[i / 2].type |
						       (i % 2 ? VL_NET_HDR_GSO_ECN : 0));
		vl_pkt_free(pkts[k++]);
	}
	assert_int_equal(rf_drops(s, VL_DROP_GSO_NOT_NEGOTIATED), not_neg);
	assert_int_equal(rf_drops(s, VL_DROP_ECN_NOT_NEGOTIATED), ecn_not);
	for (uint32_t k = 1; k < VL_DROP__COUNT; k++)
		if (k != VL_DROP_GSO_NOT_NEGOTIATED && k != VL_DROP_ECN_NOT_NEGOTIATED)
			assert_int_equal(vl_vq_stats(s->q)->drops[k], 0);
	for (uint32_t i = 0; i < n; i++)
		rf_expect_used(s, heads[i], 0);
	rf_expect_no_used(s);
}

/* One TX header of the bad_offload table: offload fields, and either a frame spec (the
 * packet is that frame, built with a partial checksum) or the byte pattern of plen bytes. */
struct ol_row {
	struct vl_net_hdr h;
	bool frame;
	struct lab_frame_spec sp;
};

/* Offload fields beyond the packet (CVE-2024-11614), and GSO headers the frame itself
 * contradicts, are dropped, each under the reason that names its rule; legal ones,
 * including the exact boundaries, pass and reach pkt->ol unchanged. Without
 * VIRTIO_NET_F_CSUM the header means nothing and is ignored: every chain, bad header or
 * good, is a packet without offloads. */
static void scn_bad_offload(struct rf *f, struct rf_q *s)
{
	const bool csum = (f->cfg.features & VL_FEATURE(VL_F_NET_CSUM)) != 0;
	const uint32_t plen = 200;
	const uint8_t NC = VL_NET_HDR_F_NEEDS_CSUM;
	/* A TCPv4 frame with 146 payload bytes is 200 bytes (14 + 20 + 20 + 146): its L4
	 * header at 34, checksum field at 34 + 16. */
	const struct lab_frame_spec v4tcp = {.seed = 7, .payload = 146, .tcp_flags = 0x10};
	const struct lab_frame_spec v6tcp = {.ipv6 = true, .seed = 8, .payload = 126};
	const struct lab_frame_spec v6udp = {.ipv6 = true, .udp = true, .seed = 9, .payload = 138};
	const struct lab_frame_spec v4udp_vlan = {.udp = true, .vlan = true, .seed = 10,
						  .payload = 154};
	const struct ol_row bad[] = {
		/* checksum field ends one byte past the packet: 100 + 99 + 2 = 201 */
		{ .h = { .flags = NC, .csum_start = 100, .csum_offset = 99 } },
		/* both at their maximum: no wrap in the check */
		{ .h = { .flags = NC, .csum_start = 0xFFFF, .csum_offset = 0xFFFF } },
		{ .h = { .gso_type = 2 } },                                /* not a GSO type */
		{ .h = { .gso_type = 6, .gso_size = 100, .hdr_len = 54 } }, /* not a GSO type */
		{ .h = { .gso_type = VL_NET_HDR_GSO_ECN } },               /* ECN without GSO */
		{ .h = { .gso_type = VL_NET_HDR_GSO_TCPV4, .gso_size = 0, .hdr_len = 54 } },
		{ .h = { .gso_type = VL_NET_HDR_GSO_TCPV4, .gso_size = 1448, .hdr_len = 201 } },
		/* two offences: the first rule checked names the drop (checksum, then GSO) */
		{ .h = { .flags = NC, .csum_start = 200, .gso_type = 9 } },
		/* sound header fields, but the frame says otherwise: */
		/* GSO without NEEDS_CSUM, on a real frame */
		{ .h = { .gso_type = VL_NET_HDR_GSO_UDP_L4, .hdr_len = 62, .gso_size = 1200 },
		  .frame = true, .sp = v6udp },
		/* a byte pattern is no IP frame */
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_TCPV4, .hdr_len = 54,
			 .gso_size = 1448, .csum_start = 34, .csum_offset = 16 } },
		/* TCPV4 on an IPv6 frame; UDP_L4 on a TCP frame */
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_TCPV4, .hdr_len = 74,
			 .gso_size = 1440, .csum_start = 54, .csum_offset = 16 },
		  .frame = true, .sp = v6tcp },
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_UDP_L4, .hdr_len = 54,
			 .gso_size = 1440, .csum_start = 34, .csum_offset = 16 },
		  .frame = true, .sp = v4tcp },
		/* the checksum asked for is not TCP's: offset 6, then start one byte off */
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_TCPV4, .hdr_len = 54,
			 .gso_size = 1448, .csum_start = 34, .csum_offset = 6 },
		  .frame = true, .sp = v4tcp },
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_TCPV4, .hdr_len = 54,
			 .gso_size = 1448, .csum_start = 35, .csum_offset = 16 },
		  .frame = true, .sp = v4tcp },
	};
	const enum vl_drop bad_why[] = {
		VL_DROP_CSUM_PAST_FRAME, VL_DROP_CSUM_PAST_FRAME, VL_DROP_GSO_UNKNOWN_TYPE,
		VL_DROP_GSO_UNKNOWN_TYPE, VL_DROP_ECN_WITHOUT_GSO, VL_DROP_GSO_NO_SEGMENT_SIZE,
		VL_DROP_GSO_HDR_PAST_FRAME, VL_DROP_CSUM_PAST_FRAME, VL_DROP_GSO_WITHOUT_CSUM,
		VL_DROP_GSO_BAD_FRAME, VL_DROP_GSO_PROTO_MISMATCH, VL_DROP_GSO_PROTO_MISMATCH,
		VL_DROP_GSO_CSUM_MISMATCH, VL_DROP_GSO_CSUM_MISMATCH,
	};
	static const enum vl_drop offload_drops[] = {
		VL_DROP_CSUM_PAST_FRAME, VL_DROP_ECN_WITHOUT_GSO, VL_DROP_GSO_UNKNOWN_TYPE,
		VL_DROP_GSO_NO_SEGMENT_SIZE, VL_DROP_GSO_HDR_PAST_FRAME, VL_DROP_GSO_WITHOUT_CSUM,
		VL_DROP_GSO_BAD_FRAME, VL_DROP_GSO_PROTO_MISMATCH, VL_DROP_GSO_CSUM_MISMATCH,
	};
	const struct ol_row good[] = {
		/* checksum field ends exactly at the packet's end: 100 + 98 + 2 = 200 */
		{ .h = { .flags = NC, .csum_start = 100, .csum_offset = 98 } },
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_TCPV4 | VL_NET_HDR_GSO_ECN,
			 .hdr_len = 54, .gso_size = 1448, .csum_start = 34, .csum_offset = 16 },
		  .frame = true, .sp = v4tcp },
		/* hdr_len is a hint (Linux sends its linear length): any value inside passes */
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_UDP_L4, .hdr_len = 200,
			 .gso_size = 1200, .csum_start = 54, .csum_offset = 6 },
		  .frame = true, .sp = v6udp },
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_TCPV6, .hdr_len = 74,
			 .gso_size = 1440, .csum_start = 54, .csum_offset = 16 },
		  .frame = true, .sp = v6tcp },
		/* UFO over one VLAN tag: L4 at 14 + 4 + 20 */
		{ .h = { .flags = NC, .gso_type = VL_NET_HDR_GSO_UDP, .hdr_len = 46,
			 .gso_size = 1, .csum_start = 38, .csum_offset = 6 },
		  .frame = true, .sp = v4udp_vlan },
		/* receive flags and unknown bits beside NEEDS_CSUM: ignored, the checksum kept */
		{ .h = { .flags = VL_NET_HDR_F_DATA_VALID } },
		{ .h = { .flags = 0x81 | VL_NET_HDR_F_NEEDS_CSUM | VL_NET_HDR_F_DATA_VALID,
			 .csum_start = 10, .csum_offset = 4 } },
	};
	const uint32_t nbad = sizeof(bad) / sizeof(bad[0]);
	const uint32_t ngood = sizeof(good) / sizeof(good[0]);
	uint16_t heads[32];
	uint8_t frames[32][256];
	uint32_t n = 0, gi = 0;
	uint32_t good_at[16];

	assert_int_equal(sizeof(bad_why) / sizeof(bad_why[0]), nbad);
	/* Interleaved: bad, good, bad, good, ... then the rest. */
	for (uint32_t i = 0; i < nbad || i < ngood; i++) {
		for (uint32_t g = 0; g < 2; g++) {
			const struct ol_row *row = g ? (i < ngood ? &good[i] : NULL)
						     : (i < nbad ? &bad[i] : NULL);
			struct lab_frame_layout lay;

			if (!row)
				continue;
			if (row->frame)
				assert_int_equal(lab_frame_build(&row->sp, true, frames[n], 256,
								 &lay), plen);
			else
				rf_pattern(frames[n], plen, (uint8_t)(0xB0 + n));
			if (g)
				good_at[gi++] = n;
			heads[n] = post_tx_frame(f, s, &row->h, frames[n], plen);
			n++;
		}
	}
	struct vl_pkt *pkts[32];
	uint8_t got[256];

	if (!csum) {
		const struct vl_offload none = {0};

		assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 32), n);
		for (uint32_t i = 0; i < n; i++) {
			assert_int_equal(vl_pkt_read(pkts[i], 0, got, plen), plen);
			assert_memory_equal(got, frames[i], plen);
			assert_memory_equal(&pkts[i]->ol, &none, sizeof(none));
			vl_pkt_free(pkts[i]);
			rf_expect_used(s, heads[i], 0);
		}
		for (uint32_t k = 0; k < VL_DROP__COUNT; k++)
			assert_int_equal(vl_vq_stats(s->q)->drops[k], 0);
		rf_expect_no_used(s);
		return;
	}

	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 32), ngood);
	for (uint32_t i = 0; i < ngood; i++) {
		const struct vl_offload *ol = &pkts[i]->ol;

		assert_int_equal(vl_pkt_read(pkts[i], 0, got, plen), plen);
		assert_memory_equal(got, frames[good_at[i]], plen);
		/* Transmit flags other than NEEDS_CSUM are ignored (5.1.6.2.2). */
		assert_int_equal(ol->flags, good[i].h.flags & VL_NET_HDR_F_NEEDS_CSUM);
		assert_int_equal(ol->gso_type, good[i].h.gso_type);
		assert_int_equal(ol->hdr_len, good[i].h.hdr_len);
		assert_int_equal(ol->gso_size, good[i].h.gso_size);
		assert_int_equal(ol->csum_start, good[i].h.csum_start);
		assert_int_equal(ol->csum_offset, good[i].h.csum_offset);
		vl_pkt_free(pkts[i]);
	}
	/* Each reason counted as often as a bad header names it, nothing else dropped. */
	uint64_t dropped = 0;

	for (uint32_t k = 0; k < sizeof(offload_drops) / sizeof(offload_drops[0]); k++) {
		uint64_t want = 0;

		for (uint32_t i = 0; i < nbad; i++)
			want += bad_why[i] == offload_drops[k];
		assert_int_equal(rf_drops(s, offload_drops[k]), want);
		dropped += want;
	}
	assert_int_equal(dropped, nbad);
	for (uint32_t k = 1; k < VL_DROP__COUNT; k++) {
		bool offload = false;

		for (uint32_t j = 0; j < sizeof(offload_drops) / sizeof(offload_drops[0]); j++)
			offload |= offload_drops[j] == k;
		if (!offload)
			assert_int_equal(vl_vq_stats(s->q)->drops[k], 0);
	}
	for (uint32_t i = 0; i < n; i++)
		rf_expect_used(s, heads[i], 0);
	rf_expect_no_used(s);
}

/* TX packets longer than VL_PKT_MAX_LEN are dropped; exactly VL_PKT_MAX_LEN is fine. */
static void scn_tx_too_big(struct rf *f, struct rf_q *s)
{
	const uint32_t h = f->hdr_len;
	uint64_t buf = rf_alloc(f, h + VL_PKT_MAX_LEN + 1);

	rf_write_tx_pkt(f, buf, VL_PKT_MAX_LEN + 1, 0x12);
	const uint16_t bad[1] = { post1(s, buf, h + VL_PKT_MAX_LEN + 1, 0) };

	rf_expect_bad_then_good(f, s, bad, 1, VL_DROP_TX_TOO_BIG);

	struct rf_good g = { .gpa = buf, .len = VL_PKT_MAX_LEN, .seed = 0x12 };

	g.head = post1(s, buf, h + VL_PKT_MAX_LEN, 0);
	rf_burst_expect_good(f, s, &g);
	rf_expect_used(s, g.head, 0);
	assert_int_equal(vl_vq_stats(s->q)->bytes, 100 + 300 + VL_PKT_MAX_LEN);
}

/* ---- pool exhaustion ------------------------------------------------------------------- */

/* The pool refuses: the burst stops before the chain, which stays available (no used entry,
 * last_avail unchanged) and moves on the next burst once the pool supplies again. A bad chain
 * ahead of it is still returned; a good chain ahead of it still moves. */
static void scn_pool_exhaustion(struct rf *f, struct rf_q *s)
{
	struct vl_pkt *pkts[32];
	struct rf_good g1 = rf_post_good(f, s, 100, 1);

	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = f->pool, .count = 0});
	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 32), 0);
	assert_int_equal(vl_vq_stats(s->q)->alloc_failures, 1);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 1);
	assert_int_equal(vl_vq_stats(s->q)->chains, 0);
	assert_int_equal(vl_vq_last_avail(s->q), f->cfg.start_idx);
	rf_expect_no_used(s);
	assert_false(vl_vq_needs_call(s->q));
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);

	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = f->pool, .count = VL_LAB_NEVER});
	rf_burst_expect_good(f, s, &g1);
	rf_expect_used(s, g1.head, 0);
	rf_expect_no_used(s);
	assert_int_equal(vl_vq_stats(s->q)->alloc_failures, 1);

	/* short chain, g2, g3 with room for exactly one packet. */
	uint64_t buf = rf_alloc(f, 64);

	rf_fill(f, buf, 0, 64);
	uint16_t bad = post1(s, buf, f->hdr_len, 0);
	struct rf_good g2 = rf_post_good(f, s, 200, 2);
	struct rf_good g3 = rf_post_good(f, s, 300, 3);

	/* Leave the pool exactly one buffer: dequeue counts three chains, takes the one
	 * buffer there is (technique 4: never more than is available), serves g2 with it and
	 * stops at g3. */
	uint32_t hold_n = vl_pool_free_count(f->pool) - 1;
	struct vl_pkt **hold = calloc(hold_n, sizeof(*hold));

	assert_non_null(hold);
	assert_int_equal(vl_pool_alloc_bulk(f->pool, hold, hold_n), 0);
	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 32), 1);
	rf_assert_pkt_pattern(pkts[0], 200, 2);
	vl_pkt_free(pkts[0]);
	vl_pkt_free_bulk(hold, hold_n);
	free(hold);
	assert_int_equal(vl_vq_stats(s->q)->alloc_failures, 2);
	assert_int_equal(rf_drops(s, VL_DROP_SHORT_CHAIN), 1);
	rf_expect_used(s, bad, 0);
	rf_expect_used(s, g2.head, 0);
	rf_expect_no_used(s);
	assert_int_equal(vl_vq_last_avail(s->q), (uint16_t)(f->cfg.start_idx + 3));

	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = f->pool, .count = VL_LAB_NEVER});
	rf_burst_expect_good(f, s, &g3);
	rf_expect_used(s, g3.head, 0);
	rf_expect_no_used(s);
	assert_int_equal(vl_vq_stats(s->q)->alloc_failures, 2);
	assert_int_equal(vl_vq_stats(s->q)->packets, 3);
}

/* ---- indices, used ring, notifications -------------------------------------------------- */

/* Indices start at 65530: 20 packets, one per burst for 3, then 10 in one burst (the 16-bit
 * index wraps and the used-ring copy wraps at slot 256), then 7 singly. */
static void scn_index_wrap(struct rf *f, struct rf_q *s)
{
	uint32_t moved = 0;
	const uint32_t plan[3] = { 3, 1, 7 }; /* singles, one batch of 10, singles */

	for (int phase = 0; phase < 3; phase++) {
		uint32_t reps = plan[phase], per = phase == 1 ? 10 : 1;

		for (uint32_t r = 0; r < reps; r++) {
			struct rf_good g[10];

			for (uint32_t i = 0; i < per; i++)
				g[i] = rf_post_good(f, s, 64 + moved + i, (uint8_t)(moved + i));
			rf_burst_expect_goods(f, s, g, per);
			assert_int_equal(lab_vring_used_pending(&s->vr), per);
			for (uint32_t i = 0; i < per; i++)
				rf_expect_used(s, g[i].head, rf_good_used_len(f, s, &g[i]));
			moved += per;
			assert_int_equal(vl_vq_last_avail(s->q),
					 (uint16_t)(f->cfg.start_idx + moved));
			assert_int_equal(s->vr.used->idx, (uint16_t)(f->cfg.start_idx + moved));
		}
	}
	assert_int_equal(moved, 20);
	assert_int_equal(vl_vq_last_avail(s->q), (uint16_t)(65530u + 20u));
	assert_int_equal(vl_vq_stats(s->q)->packets, 20);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* A chain that must be dropped on this side for a content reason. */
static uint16_t post_small_bad(struct rf *f, struct rf_q *s, enum vl_drop *why)
{
	uint64_t buf = rf_alloc(f, 64);

	rf_fill(f, buf, 0, 64);
	*why = s->rx ? VL_DROP_RX_BUF_TOO_SMALL : VL_DROP_SHORT_CHAIN;
	return post1(s, buf, s->rx ? f->hdr_len - 1 : f->hdr_len, rf_dirf(s));
}

/* used->idx moves by the number of chains consumed (bad ones included), once per burst;
 * the device asks to notify unless the guest set NO_INTERRUPT, and never for a burst that
 * published nothing. A burst smaller than what is available leaves the rest. */
static void scn_used_idx_and_call(struct rf *f, struct rf_q *s)
{
	enum vl_drop why;
	struct rf_good g[4];
	uint16_t bad = post_small_bad(f, s, &why);

	assert_false(vl_vq_needs_call(s->q));
	for (int i = 0; i < 4; i++)
		g[i] = rf_post_good(f, s, 100u + (uint32_t)i, (uint8_t)i);
	rf_burst_expect_goods(f, s, g, 4);
	assert_int_equal(lab_vring_used_pending(&s->vr), 5);
	assert_int_equal(s->vr.used->idx, (uint16_t)(f->cfg.start_idx + 5));
	assert_true(vl_vq_needs_call(s->q));
	assert_int_equal(vl_vq_stats(s->q)->calls_needed, 1);
	assert_int_equal(vl_vq_stats(s->q)->used_entries, 5);
	assert_int_equal(vl_vq_stats(s->q)->chains, 5);
	assert_int_equal(rf_drops(s, why), 1);
	rf_expect_used(s, bad, 0);
	for (int i = 0; i < 4; i++)
		rf_expect_used(s, g[i].head, rf_good_used_len(f, s, &g[i]));

	/* Nothing to do: nothing published, no call wanted. */
	assert_int_equal(burst_any(f, s), 0);
	assert_false(vl_vq_needs_call(s->q));
	assert_int_equal(vl_vq_stats(s->q)->calls_needed, 1);

	/* The guest suppresses interrupts: entries are published, no call. */
	lab_vring_set_avail_flags(&s->vr, VL_AVAIL_F_NO_INTERRUPT);
	for (int i = 0; i < 3; i++)
		g[i] = rf_post_good(f, s, 50, (uint8_t)(10 + i));
	rf_burst_expect_goods(f, s, g, 3);
	assert_int_equal(lab_vring_used_pending(&s->vr), 3);
	assert_false(vl_vq_needs_call(s->q));
	assert_int_equal(vl_vq_stats(s->q)->calls_needed, 1);
	for (int i = 0; i < 3; i++)
		rf_expect_used(s, g[i].head, rf_good_used_len(f, s, &g[i]));

	/* Back on; a burst of 2 out of 4 available publishes exactly 2 and asks to notify. */
	lab_vring_set_avail_flags(&s->vr, 0);
	for (int i = 0; i < 4; i++)
		g[i] = rf_post_good(f, s, 70, (uint8_t)(20 + i));
	rf_burst_expect_goods_ask(f, s, g, 2, 2);
	assert_int_equal(lab_vring_used_pending(&s->vr), 2);
	assert_true(vl_vq_needs_call(s->q));
	assert_int_equal(vl_vq_stats(s->q)->calls_needed, 2);
	rf_burst_expect_goods(f, s, g + 2, 2);
	assert_int_equal(lab_vring_used_pending(&s->vr), 4);
	for (int i = 0; i < 4; i++)
		rf_expect_used(s, g[i].head, rf_good_used_len(f, s, &g[i]));
	rf_expect_no_used(s);
	assert_int_equal(vl_vq_stats(s->q)->used_entries, 12);
	assert_int_equal(vl_vq_stats(s->q)->calls_needed, 3);
	assert_int_equal(vl_vq_stats(s->q)->calls_suppressed, 1);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* A split run of scn_SCN on one side over gran RAM, with the defaults changed by the
 * designated initialisers that follow (start_idx, features_off, ram_size). */
#define SP(scn, sfx, gran, RX, ...)                                                          \
	{ .name = #scn sfx, .side_fn = scn_##scn, .layout = VL_LAYOUT_SPLIT,                 \
	  .granularity = gran, .rx = RX, __VA_ARGS__ }
/* TX and RX over coarse and 4 KiB RAM. */
#define SIDES_GRANS(scn)                                                                     \
	SP(scn, "_tx_coarse", RF_COARSE, false), SP(scn, "_tx_4k", RF_4K, false),            \
		SP(scn, "_rx_coarse", RF_COARSE, true), SP(scn, "_rx_4k", RF_4K, true)
/* TX only (the case has no RX meaning), over both RAMs. */
#define TX_GRANS(scn) SP(scn, "_coarse", RF_COARSE, false), SP(scn, "_4k", RF_4K, false)

static const struct rf_case cases[] = {
	SIDES_GRANS(loop_direct),
	TX_GRANS(stamp_wrap),
	SIDES_GRANS(loop_indirect),
	SIDES_GRANS(longest_direct_chain),
	SIDES_GRANS(next_out_of_range),
	SIDES_GRANS(head_out_of_range),
	SIDES_GRANS(head_out_of_range_after_good),
	SIDES_GRANS(avail_idx_jump),
	SIDES_GRANS(avail_full_ring),
	SIDES_GRANS(indirect_with_next),
	SIDES_GRANS(direct_then_indirect),
	SIDES_GRANS(indirect_ignores_write_flag),
	SIDES_GRANS(unmapped),
	SIDES_GRANS(buffer_straddle),
	/* 6 MiB of 4 KiB regions: 1536 of them. */
	SP(too_many_pieces, "_tx_4k", RF_4K, false, .ram_size = 6ull << 20),
	SP(too_many_pieces, "_rx_4k", RF_4K, true, .ram_size = 6ull << 20),
	SIDES_GRANS(len_overflow),
	SIDES_GRANS(zero_len_middle),
	SIDES_GRANS(zero_len_only),
	TX_GRANS(header_spread),
	/* Without VIRTIO_F_VERSION_1: the 10-byte header. */
	SP(header_spread, "_legacy_hdr", RF_4K, false, .features_off = VL_FEATURE(VL_F_VERSION_1)),
	TX_GRANS(short_chain),
	TX_GRANS(tx_write_desc),
	SP(bad_offload, "_coarse", RF_COARSE, false, .features = RF_HOST_GSO),
	SP(bad_offload, "_4k", RF_4K, false, .features = RF_HOST_GSO),
	SP(gso_negotiation, "_none", RF_COARSE, false),
	SP(gso_negotiation, "_tso4", RF_COARSE, false,
	   .features = VL_FEATURE(VL_F_NET_HOST_TSO4)),
	SP(gso_negotiation, "_tso6_ecn", RF_COARSE, false,
	   .features = VL_FEATURE(VL_F_NET_HOST_TSO6) | VL_FEATURE(VL_F_NET_HOST_ECN)),
	SP(gso_negotiation, "_all", RF_COARSE, false, .features = RF_HOST_GSO),
	SP(bad_offload, "_ignored_without_csum", RF_4K, false,
	   .features_off = VL_FEATURE(VL_F_NET_CSUM)),
	TX_GRANS(tx_too_big),
	TX_GRANS(pool_exhaustion),
	SP(index_wrap, "_tx_coarse", RF_COARSE, false, .start_idx = 65530),
	SP(index_wrap, "_tx_4k", RF_4K, false, .start_idx = 65530),
	SP(index_wrap, "_rx_coarse", RF_COARSE, true, .start_idx = 65530),
	SP(index_wrap, "_rx_4k", RF_4K, true, .start_idx = 65530),
	SIDES_GRANS(used_idx_and_call),
};

int main(void)
{
	return rf_run_cases("split_ring", RF_LIST(cases), NULL, 0);
}

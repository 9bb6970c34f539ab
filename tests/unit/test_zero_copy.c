/* SPDX-License-Identifier: MIT */
/* Zero-copy dequeue (technique 3): a TX packet whose payload is one host-contiguous run of
 * guest memory points into the guest's buffer instead of being copied, and its chain is held
 * (no used entry) until the packet's last reference is dropped; it goes back at the next
 * burst on the queue or at vl_vq_complete, with used length 0.
 *
 * A payload over several host-contiguous pieces is zero-copied too, one segment per piece.
 *
 * Each case pins what the guest sees (which used entries, in which order, when), where the
 * packet's bytes live (guest buffer or pool buffer), and the counters (zc_packets,
 * zc_fallbacks by reason, zc_returned, zc_stalls, vl_vq_zero_copy_held). Run on the split and
 * the packed ring, without and with VIRTIO_F_IN_ORDER where the outcome differs. */
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

#define IN_ORDER VL_FEATURE(VL_F_IN_ORDER)

/* ---- helpers ---------------------------------------------------------------------------- */

static bool in_order(const struct rf *f)
{
	return (f->cfg.features & IN_ORDER) != 0;
}

static const struct vl_vq_stats *st(const struct rf *f)
{
	return vl_vq_stats(f->tx.q);
}

static uint16_t deq(struct rf *f, struct vl_pkt **pkts, uint16_t count)
{
	return vl_net_dequeue(f->tx.q, f->pool, pkts, count);
}

/* An empty burst: returns what was freed, consumes nothing. */
static void burst_none(struct rf *f)
{
	struct vl_pkt *pkts[4];

	assert_int_equal(deq(f, pkts, 4), 0);
}

/* The core's host address of guest range [gpa, gpa + len), which must be one mapping. */
static const uint8_t *host_of(struct rf *f, uint64_t gpa, uint64_t len)
{
	uint64_t got = len;
	const uint8_t *p = vl_mem_translate(f->mem, gpa, &got, VL_ACCESS_READ);

	assert_non_null(p);
	assert_int_equal(got, len);
	return p;
}

/* A one-descriptor TX chain (zero header + len pattern bytes) whose buffer lies in one host
 * mapping, so its payload qualifies for zero-copy. */
static struct rf_good post_zc(struct rf *f, uint32_t len, uint8_t seed)
{
	struct rf_good g = rf_post_good(f, &f->tx, len, seed);

	(void)host_of(f, g.gpa, f->hdr_len + len);
	return g;
}

/* A TX chain written by hand at gpa: zero header then len pattern bytes in one descriptor. */
static uint16_t post_at(struct rf *f, uint64_t gpa, uint32_t len, uint8_t seed)
{
	struct rf_desc d = { gpa, f->hdr_len + len, 0 };

	rf_write_tx_pkt(f, gpa, len, seed);
	return rf_post_chain(&f->tx, &d, 1);
}

/* pkt is a zero-copy packet of the payload at payload_gpa: its data is the guest's buffer
 * itself (the core's mapping of it; a byte the guest changes shows through), nothing was
 * copied into its pool buffer. */
static void assert_zc_at(struct rf *f, const struct vl_pkt *pkt, uint64_t payload_gpa,
			 uint32_t len, uint8_t seed)
{
	assert_non_null(pkt);
	assert_ptr_equal(pkt->data, host_of(f, payload_gpa, len));
	assert_true(pkt->data < pkt->buf || pkt->data >= pkt->buf + pkt->buf_len);
	assert_int_equal(pkt->pkt_len, len);
	assert_int_equal(pkt->data_len, len);
	assert_int_equal(pkt->nb_segs, 1);
	assert_null(pkt->next);
	assert_non_null(pkt->release);
	rf_assert_pkt_pattern(pkt, len, seed);

	/* Same memory, not a copy: the guest flips a byte, the packet sees it. */
	uint8_t *guest = rf_ptr(f, payload_gpa, len);
	uint8_t old = guest[len / 2];

	guest[len / 2] = (uint8_t)~old;
	assert_int_equal(pkt->data[len / 2], (uint8_t)~old);
	guest[len / 2] = old;
}

static void assert_zc(struct rf *f, const struct vl_pkt *pkt, const struct rf_good *g)
{
	assert_zc_at(f, pkt, g->gpa + f->hdr_len, g->len, g->seed);
}

/* pkt was copied: every segment's data lies in its own pool buffer, no release callback. */
static void assert_copied(const struct vl_pkt *pkt, uint32_t len, uint8_t seed)
{
	rf_assert_pkt_pattern(pkt, len, seed);
	assert_null(pkt->release);
	for (const struct vl_pkt *s = pkt; s; s = s->next) {
		assert_true(s->data >= s->buf);
		assert_true(s->data + s->data_len <= s->buf + s->buf_len);
	}
}

static uint64_t fallbacks(const struct rf *f, enum vl_zc_fallback why)
{
	return st(f)->zc_fallbacks[why];
}

static uint64_t fallbacks_total(const struct rf *f)
{
	uint64_t sum = 0;

	for (int i = 0; i < VL_ZC_FALLBACK__COUNT; i++)
		sum += st(f)->zc_fallbacks[i];
	return sum;
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

/* ---- the basic lease ------------------------------------------------------------------- */

/* One zero-copy packet: data in the guest buffer, chain held while the packet lives (across
 * bursts), not published by the free itself, returned with length 0 by the next burst; then
 * the same through vl_vq_complete. */
static void scn_basic(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 64, 16);
	struct rf_good g = post_zc(f, 1000, 0x11);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc(f, pkts[0], &g);
	assert_int_equal(pkts[0]->ol.flags, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 1);
	assert_int_equal(st(f)->zc_packets, 1);
	assert_int_equal(st(f)->zc_returned, 0);
	assert_int_equal(fallbacks_total(f), 0);
	assert_int_equal(st(f)->packets, 1);
	assert_int_equal(st(f)->bytes, 1000);
	assert_int_equal(st(f)->chains, 1);
	assert_int_equal(st(f)->used_entries, 0);
	assert_int_equal(st(f)->size_bins[5], 1); /* 512-1023 bytes */
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS - 1);

	/* Bursts and completions while the packet lives give nothing back. */
	burst_none(f);
	vl_vq_complete(q);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 1);
	rf_assert_pkt_pattern(pkts[0], 1000, 0x11);

	/* The free recycles the head at once but publishes nothing: the chain goes back at
	 * the next burst. */
	vl_pkt_free(pkts[0]);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 1);
	burst_none(f);
	rf_expect_used(&f->tx, g.head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_returned, 1);
	assert_int_equal(st(f)->used_entries, 1);

	/* The same through vl_vq_complete. */
	struct rf_good g2 = post_zc(f, 1500, 0x22);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc(f, pkts[0], &g2);
	vl_pkt_free(pkts[0]);
	rf_expect_no_used(&f->tx);
	vl_vq_complete(q);
	rf_expect_used(&f->tx, g2.head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	vl_vq_complete(q); /* nothing left: publishes nothing */
	rf_expect_no_used(&f->tx);
	assert_int_equal(st(f)->zc_packets, 2);
	assert_int_equal(st(f)->zc_returned, 2);
	assert_int_equal(st(f)->used_entries, 2);
	assert_int_equal(st(f)->size_bins[6], 1); /* 1024-1518 bytes */
	assert_int_equal(fallbacks_total(f), 0);
	assert_int_equal(rf_drops_other(&f->tx, VL_DROP_NONE), 0);
}

/* ---- return order ---------------------------------------------------------------------- */

/* Without IN_ORDER chains come back in the order their packets are freed: a batch of frees
 * returned by one burst, frees completed one by one, a seeded random order and the reverse of
 * the posting order. */
static void scn_free_order(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct rf_good g[24];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 0, 64);
	for (uint32_t i = 0; i < 8; i++)
		g[i] = post_zc(f, 200 + 10 * i, (uint8_t)i);
	assert_int_equal(deq(f, pkts, 32), 8);
	for (uint32_t i = 0; i < 8; i++)
		assert_zc(f, pkts[i], &g[i]);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 8);

	/* Four frees, then one burst: in free order. */
	const uint32_t order1[4] = { 3, 1, 0, 2 };

	for (uint32_t i = 0; i < 4; i++)
		vl_pkt_free(pkts[order1[i]]);
	burst_none(f);
	for (uint32_t i = 0; i < 4; i++)
		rf_expect_used(&f->tx, g[order1[i]].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 4);

	/* One free, one completion at a time. */
	const uint32_t order2[4] = { 6, 4, 7, 5 };

	for (uint32_t i = 0; i < 4; i++) {
		vl_pkt_free(pkts[order2[i]]);
		vl_vq_complete(q);
		rf_expect_used(&f->tx, g[order2[i]].head, 0);
		rf_expect_no_used(&f->tx);
		assert_int_equal(vl_vq_zero_copy_held(q), 3 - i);
	}

	/* Sixteen more, freed in a seeded random order, returned by one burst. */
	for (uint32_t i = 8; i < 24; i++)
		g[i] = post_zc(f, 100 + i, (uint8_t)(0x40 + i));
	assert_int_equal(deq(f, pkts, 32), 16);
	uint32_t perm[16], seed = 12345;

	for (uint32_t i = 0; i < 16; i++)
		perm[i] = i;
	for (uint32_t i = 15; i > 0; i--) {
		uint32_t j = lcg(&seed) % (i + 1), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint32_t i = 0; i < 16; i++) {
		assert_zc(f, pkts[perm[i]], &g[8 + perm[i]]);
		vl_pkt_free(pkts[perm[i]]);
	}
	rf_expect_no_used(&f->tx);
	burst_none(f);
	for (uint32_t i = 0; i < 16; i++)
		rf_expect_used(&f->tx, g[8 + perm[i]].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);

	/* Eight freed in reverse posting order, returned by one completion. */
	struct rf_good r[8];

	for (uint32_t i = 0; i < 8; i++)
		r[i] = post_zc(f, 400 + i, (uint8_t)(0x60 + i));
	assert_int_equal(deq(f, pkts, 32), 8);
	for (uint32_t i = 8; i-- > 0;)
		vl_pkt_free(pkts[i]);
	vl_vq_complete(q);
	for (uint32_t i = 8; i-- > 0;)
		rf_expect_used(&f->tx, r[i].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_packets, 32);
	assert_int_equal(st(f)->zc_returned, 32);
	assert_int_equal(st(f)->used_entries, 32);
}

/* With IN_ORDER chains come back only in posting order: a freed later packet waits for an
 * earlier held one. */
static void scn_in_order_return(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct rf_good g[4];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 0, 64);
	for (uint32_t i = 0; i < 4; i++)
		g[i] = post_zc(f, 300 + i, (uint8_t)(0x30 + i));
	assert_int_equal(deq(f, pkts, 32), 4);
	for (uint32_t i = 0; i < 4; i++)
		assert_zc(f, pkts[i], &g[i]);

	vl_pkt_free(pkts[3]);
	burst_none(f);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[1]);
	vl_vq_complete(q);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 4);

	/* The first goes back and takes the freed second with it; the third still holds the
	 * fourth. */
	vl_pkt_free(pkts[0]);
	burst_none(f);
	rf_expect_used(&f->tx, g[0].head, 0);
	rf_expect_used(&f->tx, g[1].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 2);

	vl_pkt_free(pkts[2]);
	vl_vq_complete(q);
	rf_expect_used(&f->tx, g[2].head, 0);
	rf_expect_used(&f->tx, g[3].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_packets, 4);
	assert_int_equal(st(f)->zc_returned, 4);
}

/* With IN_ORDER, chains that were copied (below the threshold) or dropped behind a held one
 * are done at once but wait their turn: held counts them, nothing is published until the
 * held chain ahead goes back, then all go back in posting order. zc_returned counts the
 * zero-copy chains only. */
static void scn_in_order_copies_wait(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 500, 64);
	struct rf_good a = post_zc(f, 1000, 0xA1);
	struct rf_good b = post_zc(f, 100, 0xB2);
	struct rf_good c = post_zc(f, 1000, 0xC3);
	struct rf_good d = post_zc(f, 100, 0xD4);
	uint64_t sbuf = rf_alloc(f, 64);

	rf_fill(f, sbuf, 0, 64);
	struct rf_desc sd = { sbuf, f->hdr_len, 0 }; /* no longer than the header: dropped */
	uint16_t bad = rf_post_chain(&f->tx, &sd, 1);

	assert_int_equal(deq(f, pkts, 32), 4);
	assert_zc(f, pkts[0], &a);
	assert_copied(pkts[1], 100, 0xB2);
	assert_zc(f, pkts[2], &c);
	assert_copied(pkts[3], 100, 0xD4);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_SMALL), 2);
	assert_int_equal(fallbacks_total(f), 2);
	assert_int_equal(rf_drops(&f->tx, VL_DROP_SHORT_CHAIN), 1);
	assert_int_equal(st(f)->chains, 5);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 5);

	/* The copies are the host's own: freeing them changes nothing for the guest. */
	vl_pkt_free(pkts[1]);
	vl_pkt_free(pkts[3]);
	burst_none(f);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[2]);
	burst_none(f);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 5);

	vl_pkt_free(pkts[0]);
	burst_none(f);
	rf_expect_used(&f->tx, a.head, 0);
	rf_expect_used(&f->tx, b.head, 0);
	rf_expect_used(&f->tx, c.head, 0);
	rf_expect_used(&f->tx, d.head, 0);
	rf_expect_used(&f->tx, bad, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_packets, 2);
	assert_int_equal(st(f)->zc_returned, 2);

	/* Nothing held: a copied chain goes back in its own burst again. */
	struct rf_good e = post_zc(f, 100, 0xE5);

	rf_burst_expect_good(f, &f->tx, &e);
	rf_expect_used(&f->tx, e.head, 0);
	rf_expect_no_used(&f->tx);
}

/* ---- fallbacks ------------------------------------------------------------------------- */

/* SMALL: a payload shorter than min_len is copied and returned in its own burst; exactly
 * min_len bytes is zero-copied. Same in either order mode (nothing is held ahead). */
static void scn_fallback_small(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 500, 64);
	struct rf_good s = post_zc(f, 499, 0x01);
	struct rf_good z = post_zc(f, 500, 0x02);

	assert_int_equal(deq(f, pkts, 32), 2);
	assert_copied(pkts[0], 499, 0x01);
	assert_zc(f, pkts[1], &z);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_SMALL), 1);
	assert_int_equal(fallbacks_total(f), 1);
	assert_int_equal(st(f)->zc_packets, 1);
	rf_expect_used(&f->tx, s.head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 1);
	vl_pkt_free(pkts[0]);
	vl_pkt_free(pkts[1]);
	burst_none(f);
	rf_expect_used(&f->tx, z.head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(st(f)->zc_returned, 1);
}

/* Guest pages that [gpa, gpa + len) touches: the pieces it makes under RF_4K, where every
 * page is a mapping of its own (under RF_COARSE one, away from the straddle boundary). */
static uint32_t pieces_of(const struct rf *f, uint64_t gpa, uint32_t len)
{
	if (f->cfg.granularity != RF_4K)
		return 1;
	return (uint32_t)(((gpa + len - 1) >> 12) - (gpa >> 12) + 1);
}

/* pkt is a zero-copy packet of the len payload bytes at guest range [gpa, gpa + len) made of
 * nsegs segments: in order, each segment is the core's mapping of the next stretch of that
 * range (no byte copied into a pool buffer), and they add up to the payload. */
static void assert_zc_segs(struct rf *f, const struct vl_pkt *pkt, uint64_t gpa, uint32_t len,
			   uint8_t seed, uint32_t nsegs)
{
	uint64_t at = gpa;
	uint32_t n = 0;

	assert_non_null(pkt);
	assert_non_null(pkt->release);
	assert_int_equal(pkt->pkt_len, len);
	assert_int_equal(pkt->nb_segs, nsegs);
	for (const struct vl_pkt *s = pkt; s; s = s->next, n++) {
		assert_true(s->data_len > 0);
		assert_ptr_equal(s->data, host_of(f, at, s->data_len));
		assert_true(s->data < s->buf || s->data >= s->buf + s->buf_len);
		at += s->data_len;
	}
	assert_int_equal(n, nsegs);
	assert_int_equal(at, gpa + len);
	rf_assert_pkt_pattern(pkt, len, seed);
}

/* The end of a case: `copied` fallbacks in all, `zc` zero-copy packets, every one of their
 * chains returned, nothing held. */
static void expect_all_back(struct rf *f, uint64_t copied, uint64_t zc)
{
	assert_int_equal(fallbacks_total(f), copied);
	assert_int_equal(st(f)->zc_packets, zc);
	assert_int_equal(st(f)->zc_returned, zc);
	assert_int_equal(vl_vq_zero_copy_held(f->tx.q), 0);
}

/* A payload over several host-contiguous pieces is zero-copied as several segments, one per
 * piece, each pointing into the guest: payload over two descriptors cut mid-payload, and a
 * buffer straddling two memory regions (the fixture's straddle window). The chain is held
 * like any zero-copy chain. The header alone in the first descriptor and the payload in one
 * more, or a buffer whose header alone lies before the region boundary, is one segment. */
static void scn_scattered(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct vl_vq *q = f->tx.q;
	const uint32_t h = f->hdr_len;
	const uint32_t total = h + 1000, cut = total / 2;

	vl_vq_set_zero_copy(q, true, 64, 64);

	/* Header and payload over two descriptors cut mid-payload. */
	struct rf_good two = rf_post_good_n(f, &f->tx, 1000, 0x21, 2);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc_segs(f, pkts[0], two.gpa + h, 1000, 0x21,
		       pieces_of(f, two.gpa + h, cut - h) + pieces_of(f, two.gpa + cut, total - cut));
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);
	burst_none(f);
	rf_expect_used(&f->tx, two.head, 0);
	rf_expect_no_used(&f->tx);

	/* Header alone, then the payload in one descriptor (inside one page): one segment. */
	uint64_t page = lab_gmem_alloc(f->g, 4096, 4096);

	assert_true(page != 0);
	rf_write_tx_pkt(f, page, 1000, 0x22);
	const struct rf_desc hd[2] = { { page, h, 0 }, { page + h, 1000, 0 } };
	uint16_t split_hdr = rf_post_chain(&f->tx, hd, 2);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc_at(f, pkts[0], page + h, 1000, 0x22);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);
	burst_none(f);
	rf_expect_used(&f->tx, split_hdr, 0);
	rf_expect_no_used(&f->tx);

	/* One buffer across the region boundary, 100 payload bytes before it: two segments,
	 * the second starting exactly at the second region. */
	uint64_t at = rf_straddle(f, h + 100);
	uint16_t cross = post_at(f, at, 1000, 0x23);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc_segs(f, pkts[0], at + h, 1000, 0x23, 2);
	assert_ptr_equal(pkts[0]->next->data, host_of(f, f->straddle_gpa, 900));
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);
	burst_none(f);
	rf_expect_used(&f->tx, cross, 0);
	rf_expect_no_used(&f->tx);

	/* The header alone before the boundary, the payload wholly after it: one segment, and
	 * the packet starts exactly at the second region. */
	at = rf_straddle(f, h);
	uint16_t after = post_at(f, at, 1000, 0x24);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc_at(f, pkts[0], f->straddle_gpa, 1000, 0x24);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);
	burst_none(f);
	rf_expect_used(&f->tx, after, 0);
	rf_expect_no_used(&f->tx);

	expect_all_back(f, 0, 4);
	lab_gmem_free(f->g, page, 4096);
}

/* Post the header, then the payload as `pieces` descriptors of 8 bytes, all in one page (so
 * every descriptor is one piece under any granularity). */
static uint16_t post_in_pieces(struct rf *f, uint64_t page, uint32_t pieces, uint8_t seed)
{
	struct rf_desc d[VL_ZC_MAX_SEGS + 2];
	const uint32_t h = f->hdr_len;

	assert_true(pieces + 1 <= VL_ZC_MAX_SEGS + 2);
	rf_write_tx_pkt(f, page, 8 * pieces, seed);
	d[0] = (struct rf_desc){ page, h, 0 };
	for (uint32_t i = 0; i < pieces; i++)
		d[i + 1] = (struct rf_desc){ page + h + 8 * i, 8, 0 };
	return rf_post_chain(&f->tx, d, pieces + 1);
}

/* SCATTERED: a payload over more than VL_ZC_MAX_SEGS pieces is copied and its chain returned
 * at once; VL_ZC_MAX_SEGS pieces are still zero-copied. So is one whose segments the pool
 * cannot supply (the second allocation of the burst refused): copied into its head. */
static void scn_fallback_scattered(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct vl_vq *q = f->tx.q;
	const uint32_t h = f->hdr_len;
	uint64_t page = lab_gmem_alloc(f->g, 4096, 4096);

	assert_true(page != 0);
	vl_vq_set_zero_copy(q, true, 64, 64);

	uint16_t at_max = post_in_pieces(f, page, VL_ZC_MAX_SEGS, 0x31);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc_segs(f, pkts[0], page + h, 8 * VL_ZC_MAX_SEGS, 0x31, VL_ZC_MAX_SEGS);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);
	burst_none(f);
	rf_expect_used(&f->tx, at_max, 0);
	rf_expect_no_used(&f->tx);

	uint16_t over = post_in_pieces(f, page, VL_ZC_MAX_SEGS + 1, 0x32);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_copied(pkts[0], 8 * (VL_ZC_MAX_SEGS + 1), 0x32);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_SCATTERED), 1);
	rf_expect_used(&f->tx, over, 0);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);

	/* The burst's heads are one allocation; the segments would be the second. */
	struct rf_good two = rf_post_good_n(f, &f->tx, 1000, 0x33, 2);
	const uint32_t free_before = vl_pool_free_count(f->pool);

	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = f->pool, .count = 1});
	assert_int_equal(deq(f, pkts, 32), 1);
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = f->pool, .count = VL_LAB_NEVER});
	assert_copied(pkts[0], 1000, 0x33);
	assert_int_equal(pkts[0]->nb_segs, 1);
	assert_int_equal(vl_pool_free_count(f->pool), free_before - 1);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_SCATTERED), 2);
	rf_expect_used(&f->tx, two.head, 0);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);
	assert_int_equal(vl_pool_free_count(f->pool), free_before);

	expect_all_back(f, 2, 1);
	lab_gmem_free(f->g, page, 4096);
}

/* LIMIT without IN_ORDER: at max_inflight held chains, packets are copied and their chains
 * returned at once; a freed lease makes room again. */
static void scn_fallback_limit(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct rf_good g[5];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 0, 2);
	for (uint32_t i = 0; i < 4; i++)
		g[i] = post_zc(f, 700 + i, (uint8_t)(0x50 + i));
	assert_int_equal(deq(f, pkts, 32), 4);
	assert_zc(f, pkts[0], &g[0]);
	assert_zc(f, pkts[1], &g[1]);
	assert_copied(pkts[2], 702, 0x52);
	assert_copied(pkts[3], 703, 0x53);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_LIMIT), 2);
	assert_int_equal(fallbacks_total(f), 2);
	assert_int_equal(st(f)->zc_stalls, 0);
	rf_expect_used(&f->tx, g[2].head, 0);
	rf_expect_used(&f->tx, g[3].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 2);
	vl_pkt_free(pkts[2]);
	vl_pkt_free(pkts[3]);

	/* One freed: room for one more lease. */
	struct vl_pkt *keep = pkts[1];

	vl_pkt_free(pkts[0]);
	g[4] = post_zc(f, 800, 0x54);
	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc(f, pkts[0], &g[4]);
	rf_expect_used(&f->tx, g[0].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 2);

	vl_pkt_free(pkts[0]);
	vl_pkt_free(keep);
	vl_vq_complete(q);
	rf_expect_used(&f->tx, g[4].head, 0);
	rf_expect_used(&f->tx, g[1].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(st(f)->zc_packets, 3);
	assert_int_equal(st(f)->zc_returned, 3);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_LIMIT), 2);
}

/* The bound as given is clamped to what can be held: 0 means one descriptor (a guest must
 * keep some), anything from the queue size up means the queue size - 1: held packets never
 * take the whole ring. */
static void scn_bound_clamped(struct rf *f)
{
	struct vl_pkt *pkts[4];
	struct rf_good g[3] = {{0}};
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 0, 0);
	for (uint32_t i = 0; i < 2; i++)
		g[i] = post_zc(f, 600 + i, (uint8_t)(0x30 + i));
	assert_int_equal(deq(f, pkts, 4), 2);
	assert_zc(f, pkts[0], &g[0]);
	assert_copied(pkts[1], 601, 0x31);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_LIMIT), 1);
	assert_int_equal(vl_vq_zero_copy_held(q), 1);
	assert_int_equal(vl_vq_zero_copy_held_descs(q), 1);
	rf_expect_used(&f->tx, g[1].head, 0);
	vl_pkt_free(pkts[0]);
	vl_pkt_free(pkts[1]);
	vl_vq_complete(q);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(vl_vq_zero_copy_held_descs(q), 0);
	rf_expect_used(&f->tx, g[0].head, 0);
	rf_expect_no_used(&f->tx);

	/* Far past the queue size: every descriptor of the ring but one may be leased; the
	 * chain that would take the last is copied and returned in its burst. */
	vl_vq_set_zero_copy(q, true, 0, UINT32_MAX);
	const uint32_t size = vl_vq_size(q);
	struct vl_pkt **all = calloc(size, sizeof(*all));

	assert_non_null(all);
	for (uint32_t got = 0; got < size; got++) {
		g[2] = post_zc(f, 200, 0x40);
		assert_int_equal(deq(f, all + got, 1), 1);
	}
	assert_int_equal(vl_vq_zero_copy_held(q), size - 1);
	assert_int_equal(vl_vq_zero_copy_held_descs(q), size - 1);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_LIMIT), 2);
	assert_copied(all[size - 1], 200, 0x40);
	rf_expect_used(&f->tx, g[2].head, 0);
	rf_expect_no_used(&f->tx);
	for (uint32_t i = 0; i < size; i++)
		vl_pkt_free(all[i]);
	free(all);
	vl_vq_complete(q);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	uint32_t id, len, back = 0;

	while (rf_pop_used(&f->tx, &id, &len)) {
		assert_int_equal(len, 0);
		back++;
	}
	assert_int_equal(back, size - 1);
}

/* Chain shapes of the descriptor-counted bound's test, each posted by post_shape. */
enum zc_shape {
	ZS_FRAGS,     /* as Linux sends a TX frame: header, linear part, two page fragments */
	ZS_INDIRECT,  /* the same four buffers through an indirect table: one ring descriptor */
	ZS_GSO64K,    /* a 64 KiB TCP GSO frame: header, then two 32 KiB fragments */
};
#define ZS_BOUND 8u    /* ring descriptors the host may hold (queue of 16) */

/* Post one chain of shape sh carrying pattern(seed); returns the ring descriptors it
 * occupies and its head (id) in *head. Asserts the guest could post it. */
static uint32_t post_shape(struct rf *f, enum zc_shape sh, uint8_t seed, uint16_t *head,
			   uint32_t *len)
{
	const uint32_t h = f->hdr_len;
	struct rf_desc d[4];

	if (sh == ZS_GSO64K) {
		*len = 65000;
		uint64_t gpa = rf_alloc(f, h + *len);

		/* A TCPv4 frame with the checksum and GSO fields as Linux fills them. */
		const struct lab_frame_spec sp = {.seed = seed, .payload = *len - 54,
						  .tcp_flags = 0x18};
		struct lab_frame_layout lay;
		struct vl_offload ol;
		uint8_t *p = rf_ptr(f, gpa, h + *len);

		assert_int_equal(lab_frame_build(&sp, true, p + h, *len, &lay), *len);
		lab_frame_offload(&sp, &lay, 1448, false, &ol);
		const uint8_t hdr[10] = {ol.flags, ol.gso_type, (uint8_t)ol.hdr_len, 0,
					 (uint8_t)ol.gso_size, (uint8_t)(ol.gso_size >> 8),
					 (uint8_t)ol.csum_start, 0, (uint8_t)ol.csum_offset, 0};

		memset(p, 0, h);
		rf_write(f, gpa, hdr, sizeof(hdr));
		d[0] = (struct rf_desc){gpa, h, 0};
		d[1] = (struct rf_desc){gpa + h, 32768, 0};
		d[2] = (struct rf_desc){gpa + h + 32768, *len - 32768, 0};
		*head = rf_post_chain(&f->tx, d, 3);
		return 3;
	}
	*len = 1200;
	uint64_t gpa = rf_alloc(f, h + *len);

	rf_write_tx_pkt(f, gpa, *len, seed);
	d[0] = (struct rf_desc){gpa, h, 0};
	d[1] = (struct rf_desc){gpa + h, 200, 0};
	d[2] = (struct rf_desc){gpa + h + 200, 500, 0};
	d[3] = (struct rf_desc){gpa + h + 700, 500, 0};
	if (sh == ZS_FRAGS) {
		*head = rf_post_chain(&f->tx, d, 4);
		return 4;
	}
	uint64_t table = rf_alloc(f, 4 * 16);

	rf_write_qtable(f, &f->tx, table, d, 4);
	*head = rf_post_indirect(&f->tx, table, 4 * 16);
	return 1;
}

/* The zero-copy bound counts ring descriptors (vl_vq.h): a host that holds every zero-copy
 * packet forever never takes the whole ring, whatever shape the guest gives its chains. The
 * guest keeps posting; without IN_ORDER a chain past the bound is copied and returned in
 * its burst, and posting goes on indefinitely; with IN_ORDER the burst stops before it
 * (zc_stalls) and the guest still has descriptors to post. */
static void bound_in_descs(struct rf *f, enum zc_shape sh)
{
	struct vl_vq *q = f->tx.q;
	const uint32_t size = vl_vq_size(q);
	struct vl_pkt *held[64];
	uint32_t nheld = 0, copied = 0, zc_descs = 0;

	assert_int_equal(size, 16);
	vl_vq_set_zero_copy(q, true, 0, ZS_BOUND);
	for (uint32_t i = 0; i < 40; i++) {
		uint16_t head;
		uint32_t len, nd = post_shape(f, sh, (uint8_t)i, &head, &len);
		const uint32_t before = vl_vq_zero_copy_held_descs(q);
		struct vl_pkt *p = NULL;
		uint16_t got = deq(f, &p, 1);

		if (in_order(f) && got == 0) {
			/* Stopped at the bound: the chain waits, the guest keeps the rest. */
			assert_true(before + nd > ZS_BOUND);
			assert_int_equal(st(f)->zc_stalls, 1);
			assert_true(size - before - nd > 0);
			break;
		}
		assert_int_equal(got, 1);
		if (p->release) {
			assert_true(before + nd <= ZS_BOUND);
			assert_true(nheld < 64);
			held[nheld++] = p;
			zc_descs += nd;
		} else {
			/* Past the bound: copied, its chain back in the same burst. */
			assert_true(before + nd > ZS_BOUND);
			assert_int_equal(p->pkt_len, len);
			rf_expect_used(&f->tx, head, 0);
			vl_pkt_free(p);
			copied++;
		}
		assert_int_equal(vl_vq_zero_copy_held_descs(q), zc_descs);
		assert_true(zc_descs <= ZS_BOUND);
		rf_expect_no_used(&f->tx);
	}
	/* Without IN_ORDER the loop ran to the end: the guest never ran out. */
	if (!in_order(f))
		assert_int_equal(nheld + copied, 40);
	assert_int_equal(nheld, ZS_BOUND / (sh == ZS_FRAGS ? 4 : sh == ZS_GSO64K ? 3 : 1));
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_LIMIT), copied);
	for (uint32_t i = 0; i < nheld; i++)
		vl_pkt_free(held[i]);
	vl_vq_complete(q);
	assert_int_equal(vl_vq_zero_copy_held_descs(q), 0);
	uint32_t id, len, back = 0;

	while (rf_pop_used(&f->tx, &id, &len))
		back++;
	assert_int_equal(back, nheld);
}

static void scn_bound_frags(struct rf *f)
{
	bound_in_descs(f, ZS_FRAGS);
}

static void scn_bound_indirect(struct rf *f)
{
	bound_in_descs(f, ZS_INDIRECT);
}

static void scn_bound_gso64k(struct rf *f)
{
	bound_in_descs(f, ZS_GSO64K);
}

/* IN_ORDER at the bound: the burst stops before the next chain (zc_stalls), which stays with
 * the guest (not consumed) until frees let the held chains go back; a freed later packet
 * does not make room while an earlier one holds. */
static void scn_in_order_bound(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 500, 2);
	struct rf_good c0 = post_zc(f, 1000, 0x60);
	struct rf_good c1 = post_zc(f, 1001, 0x61);
	struct rf_good c2 = post_zc(f, 100, 0x62);
	struct rf_good c3 = post_zc(f, 101, 0x63);
	const uint16_t start = vl_vq_last_avail(q);

	assert_int_equal(deq(f, pkts, 32), 2);
	assert_zc(f, pkts[0], &c0);
	assert_zc(f, pkts[1], &c1);
	assert_int_equal(st(f)->zc_stalls, 1);
	assert_int_equal(st(f)->chains, 2);
	assert_int_equal(fallbacks_total(f), 0);
	assert_int_equal(vl_vq_zero_copy_held(q), 2);
	rf_expect_no_used(&f->tx);
	assert_int_equal(st(f)->alloc_failures, 0);

	/* Still at the bound. */
	burst_none(f);
	assert_int_equal(st(f)->zc_stalls, 2);
	assert_int_equal(vl_vq_last_avail(q), (uint16_t)(start + 2));
	vl_pkt_free(pkts[1]);
	burst_none(f);
	assert_int_equal(st(f)->zc_stalls, 3);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 2);
	assert_int_equal(st(f)->chains, 2);

	/* The first goes back, the second with it, and the burst resumes: the two small ones
	 * are copied and, nothing being held ahead of them any more, go back at once. */
	vl_pkt_free(pkts[0]);
	assert_int_equal(deq(f, pkts, 32), 2);
	assert_copied(pkts[0], 100, 0x62);
	assert_copied(pkts[1], 101, 0x63);
	rf_expect_used(&f->tx, c0.head, 0);
	rf_expect_used(&f->tx, c1.head, 0);
	rf_expect_used(&f->tx, c2.head, 0);
	rf_expect_used(&f->tx, c3.head, 0);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(pkts[0]);
	vl_pkt_free(pkts[1]);
	assert_int_equal(st(f)->zc_stalls, 3);
	assert_int_equal(st(f)->chains, 4);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_returned, 2);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_SMALL), 2);
	assert_int_equal(fallbacks(f, VL_ZC_FALLBACK_LIMIT), 0);
}

/* A packet held across many bursts while other traffic flows: its chain stays with the host
 * and its bytes stay what the guest wrote. Without IN_ORDER the other chains go back as they
 * are freed; with IN_ORDER they queue behind the held one and go back with it. */
static void scn_held_many_bursts(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct rf_good b[20];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 0, 64);
	struct rf_good a = post_zc(f, 1400, 0x70);

	assert_int_equal(deq(f, pkts, 32), 1);
	struct vl_pkt *held = pkts[0];

	assert_zc(f, held, &a);
	for (uint32_t i = 0; i < 20; i++) {
		b[i] = post_zc(f, 200 + i, (uint8_t)(0x80 + i));
		assert_int_equal(deq(f, pkts, 32), 1);
		assert_zc(f, pkts[0], &b[i]);
		vl_pkt_free(pkts[0]);
		vl_vq_complete(q);
		if (!in_order(f))
			rf_expect_used(&f->tx, b[i].head, 0);
		rf_expect_no_used(&f->tx);
		assert_int_equal(vl_vq_zero_copy_held(q), in_order(f) ? 2 + i : 1);
	}
	assert_zc(f, held, &a);
	vl_pkt_free(held);
	burst_none(f);
	rf_expect_used(&f->tx, a.head, 0);
	if (in_order(f))
		for (uint32_t i = 0; i < 20; i++)
			rf_expect_used(&f->tx, b[i].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_packets, 21);
	assert_int_equal(st(f)->zc_returned, 21);
	assert_int_equal(st(f)->packets, 21);
}

/* An extra reference keeps the chain held until the last one is dropped. */
static void scn_extra_ref(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 0, 64);
	struct rf_good a = post_zc(f, 600, 0x90);

	assert_int_equal(deq(f, pkts, 32), 1);
	vl_pkt_ref(pkts[0]);
	vl_pkt_free(pkts[0]);
	burst_none(f);
	vl_vq_complete(q);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 1);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS - 1);
	assert_zc(f, pkts[0], &a);

	vl_pkt_free(pkts[0]);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	burst_none(f);
	rf_expect_used(&f->tx, a.head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_returned, 1);
}

/* ---- zero-copy off --------------------------------------------------------------------- */

/* Off by default: everything is copied and returned in its burst, no zero-copy counter moves;
 * the guest changing its buffer afterwards does not change the packet. Turning it off again
 * after use copies again, and a lease taken before goes back normally. */
static void scn_off(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct rf_good g[3];
	struct vl_vq *q = f->tx.q;

	for (uint32_t i = 0; i < 3; i++)
		g[i] = post_zc(f, 1000 + i, (uint8_t)(0xA0 + i));
	assert_int_equal(deq(f, pkts, 32), 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_copied(pkts[i], 1000 + i, (uint8_t)(0xA0 + i));
		rf_expect_used(&f->tx, g[i].head, 0);
	}
	rf_expect_no_used(&f->tx);
	rf_fill(f, g[0].gpa + f->hdr_len, 0xEE, g[0].len);
	assert_copied(pkts[0], 1000, 0xA0);
	vl_pkt_free_bulk(pkts, 3);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_packets, 0);
	assert_int_equal(fallbacks_total(f), 0);

	/* On, one lease; off: the next packet is copied, the lease goes back when freed. */
	vl_vq_set_zero_copy(q, true, 0, 8);
	struct rf_good z = post_zc(f, 900, 0xB0);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_zc(f, pkts[0], &z);
	struct vl_pkt *held = pkts[0];

	vl_vq_set_zero_copy(q, false, 0, 8);
	struct rf_good c = post_zc(f, 900, 0xB1);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_copied(pkts[0], 900, 0xB1);
	vl_pkt_free(pkts[0]);
	if (!in_order(f))
		rf_expect_used(&f->tx, c.head, 0);
	rf_expect_no_used(&f->tx);
	vl_pkt_free(held);
	burst_none(f);
	rf_expect_used(&f->tx, z.head, 0);
	if (in_order(f))
		rf_expect_used(&f->tx, c.head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_int_equal(st(f)->zc_packets, 1);
	assert_int_equal(st(f)->zc_returned, 1);
	assert_int_equal(fallbacks_total(f), 0);
}

/* ---- a guest that re-posts chains the host still holds ----------------------------------- */

/* A hostile guest makes heads available again that zero-copy still holds (it has not got
 * them back). The chains returned at the start of the burst and the chains consumed in it
 * share the shadow used ring of queue-size entries: the burst must stop at queue size (the
 * rest waits for the next burst) instead of running past it. Queue of 8, 4 held and freed,
 * 8 entries re-posted (all copied). */
static void scn_repost_held(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct rf_good g[4];
	struct vl_vq *q = f->tx.q;

	vl_vq_set_zero_copy(q, true, 0, 4);
	for (uint32_t i = 0; i < 4; i++)
		g[i] = post_zc(f, 200, (uint8_t)(0xC0 + i));
	assert_int_equal(deq(f, pkts, 32), 4);
	for (uint32_t i = 0; i < 4; i++)
		vl_pkt_free(pkts[i]);
	assert_int_equal(vl_vq_zero_copy_held(q), 4);

	vl_vq_set_zero_copy(q, true, 60000, 4); /* everything from now on is copied */
	for (uint32_t k = 0; k < 2; k++)
		for (uint32_t i = 0; i < 4; i++)
			lab_vring_add_avail(&f->tx.vr, g[i].head);
	lab_vring_kick(&f->tx.vr);

	/* Four go back, four are consumed: eight entries, a full used ring. */
	assert_int_equal(deq(f, pkts, 32), 4);
	assert_int_equal(st(f)->used_entries, 8);
	assert_int_equal(lab_vring_used_pending(&f->tx.vr), 8);
	for (uint32_t i = 0; i < 4; i++)
		rf_expect_used(&f->tx, g[i].head, 0);
	for (uint32_t i = 0; i < 4; i++) {
		assert_copied(pkts[i], 200, (uint8_t)(0xC0 + i));
		rf_expect_used(&f->tx, g[i].head, 0);
	}
	rf_expect_no_used(&f->tx);
	vl_pkt_free_bulk(pkts, 4);

	assert_int_equal(deq(f, pkts, 32), 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_copied(pkts[i], 200, (uint8_t)(0xC0 + i));
		rf_expect_used(&f->tx, g[i].head, 0);
	}
	rf_expect_no_used(&f->tx);
	vl_pkt_free_bulk(pkts, 4);
	assert_int_equal(st(f)->used_entries, 12);
	assert_int_equal(vl_vq_zero_copy_held(q), 0);
	assert_false(vl_vq_broken(q));
}

static void run_repost(uint64_t extra)
{
	struct rf_cfg cfg;
	struct rf f;

	rf_cfg_init(&cfg, RF_COARSE);
	cfg.qsize = 8;
	cfg.features |= extra;
	rf_setup(&f, &cfg);
	scn_repost_held(&f);
	rf_teardown(&f);
}

static void test_repost_held_split(void **state)
{
	(void)state;
	run_repost(0);
}

static void test_repost_held_split_in_order(void **state)
{
	(void)state;
	run_repost(IN_ORDER);
}

/* ---- names ------------------------------------------------------------------------------ */

static void test_fallback_names(void **state)
{
	(void)state;
	assert_string_equal(vl_zc_fallback_name(VL_ZC_FALLBACK_SMALL), "small");
	assert_string_equal(vl_zc_fallback_name(VL_ZC_FALLBACK_SCATTERED), "scattered");
	assert_string_equal(vl_zc_fallback_name(VL_ZC_FALLBACK_LIMIT), "limit");
	assert_string_equal(vl_zc_fallback_name(VL_ZC_FALLBACK__COUNT), "unknown");
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* split / packed x coarse / 4 KiB regions, both orders (the scattered cases). */
#define CASES_GRANS(name)                                                                    \
	RF_CASE(name, "_split_coarse", VL_LAYOUT_SPLIT, RF_COARSE, 0),                       \
		RF_CASE(name, "_split_4k", VL_LAYOUT_SPLIT, RF_4K, 0),                       \
		RF_CASE(name, "_packed_coarse", VL_LAYOUT_PACKED, RF_COARSE, 0),             \
		RF_CASE(name, "_packed_4k_in_order", VL_LAYOUT_PACKED, RF_4K, RF_IN_ORDER)

/* The descriptor-counted bound's rows: a queue of 16, both layouts, with and without
 * IN_ORDER, RAM for 40 frames of 64 KiB. */
#define BOUND_ROW(shp, suffix, lay, feat)                                                    \
	{ .name = "bound_" #shp suffix, .fn = scn_bound_##shp, .layout = lay,                \
	  .granularity = RF_COARSE, .features = (feat) | RF_HOST_GSO, .qsize = 16,            \
	  .ram_size = 4u << 20 }
#define BOUND_CASES(shp)                                                                     \
	BOUND_ROW(shp, "_split", VL_LAYOUT_SPLIT, 0),                                        \
		BOUND_ROW(shp, "_packed", VL_LAYOUT_PACKED, 0),                              \
		BOUND_ROW(shp, "_split_in_order", VL_LAYOUT_SPLIT, RF_IN_ORDER),             \
		BOUND_ROW(shp, "_packed_in_order", VL_LAYOUT_PACKED, RF_IN_ORDER)

/* Split / packed, without and with IN_ORDER (RF_CASES4), or with a fixed feature set where
 * the outcome depends on IN_ORDER (RF_CASES2). */
static const struct rf_case cases[] = {
	RF_CASES4(basic),
	RF_CASES2(free_order, 0),
	RF_CASES2(in_order_return, RF_IN_ORDER),
	RF_CASES2(in_order_copies_wait, RF_IN_ORDER),
	RF_CASES4(fallback_small),
	CASES_GRANS(scattered),
	CASES_GRANS(fallback_scattered),
	RF_CASES2(fallback_limit, 0),
	RF_CASES2(bound_clamped, 0),
	BOUND_CASES(frags),
	BOUND_CASES(indirect),
	BOUND_CASES(gso64k),
	RF_CASES2(in_order_bound, RF_IN_ORDER),
	RF_CASES4(held_many_bursts),
	RF_CASES4(extra_ref),
	RF_CASES4(off),
};

int main(void)
{
	const struct CMUnitTest more[] = {
		cmocka_unit_test(test_repost_held_split),
		cmocka_unit_test(test_repost_held_split_in_order),
		cmocka_unit_test(test_fallback_names),
	};

	return rf_run_cases("zero_copy", RF_LIST(cases), RF_LIST(more));
}

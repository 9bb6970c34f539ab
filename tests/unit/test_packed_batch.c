/* SPDX-License-Identifier: MIT */
/* Packed guest-to-host in batches of four (net/dequeue_packed_batch.h, ring/packed_batch.h):
 * a plain dequeue burst takes whole lines of four one-descriptor chains at once, and on
 * anything unusual in a line leaves it, and everything after it, to the usual chain loop.
 * Each scenario pins what the burst returns (packets byte for byte, in order), the used
 * descriptors the guest sees, the drops, and the tx_batched counter -- the one place that
 * says which path took a chain. The fixture's packed ring is 256 descriptors (unless a row
 * says otherwise), 64-byte aligned, the driver starting at position 0; packed without and
 * with VIRTIO_F_IN_ORDER. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ring_fixture.h"
#include "vl_lab_control.h"

#define LEN 64

static uint64_t batched(const struct rf *f)
{
	return vl_vq_stats(f->tx.q)->tx_batched;
}

static void post(struct rf *f, struct rf_good *g, uint32_t n, uint8_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		g[i] = rf_post_good_n(f, &f->tx, LEN, (uint8_t)(seed + i), 1);
}

/* One burst moves exactly g[0..n) and returns their descriptors. */
static void take(struct rf *f, const struct rf_good *g, uint32_t n)
{
	rf_burst_expect_returned(f, &f->tx, g, n);
}

/* A queue's first buffer is looked up in the memory table by the usual path (a batch only
 * takes buffers inside the range the queue found last): one line of four taken that way
 * leaves the queue at position 4 (from 0), knowing the buffers' range. */
static void warm(struct rf *f)
{
	struct rf_good g[4];

	post(f, g, 4, 200);
	take(f, g, 4);
	assert_int_equal(batched(f), 0);
}

/* Two lines (eight chains) go as two batches; six then go as one batch and two chains
 * the usual way, all in one burst, in ring order. A batched packet is a fresh one-segment
 * packet whatever its pool buffer held before. */
static void scn_takes_whole_lines(struct rf *f)
{
	struct rf_good g[8];
	struct vl_pkt *pkts[32];

	warm(f);
	post(f, g, 8, 1);
	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 32), 8);
	for (uint32_t i = 0; i < 8; i++) {
		rf_assert_pkt_pattern(pkts[i], LEN, g[i].seed);
		assert_int_equal(pkts[i]->nb_segs, 1);
		assert_null(pkts[i]->next);
		assert_null(pkts[i]->release);
		assert_int_equal(pkts[i]->refcnt, 1);
		assert_ptr_equal(pkts[i]->data, pkts[i]->buf);
		assert_int_equal(pkts[i]->data_len, LEN);
		/* Dirty the segment as an application may, for the next time it is taken. */
		pkts[i]->ol.gso_type = 7;
		pkts[i]->data += 3;
		vl_pkt_free(pkts[i]);
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
	assert_int_equal(batched(f), 8);
	post(f, g, 6, 20);
	take(f, g, 6);
	assert_int_equal(batched(f), 12);
	const struct vl_vq_stats *st = vl_vq_stats(f->tx.q);

	assert_int_equal(st->chains, 18);
	assert_int_equal(st->packets, 18);
	assert_int_equal(st->bytes, 18 * LEN);
	assert_int_equal(st->size_bins[1], 18);
	assert_int_equal(st->copies_batched, 18);
	assert_int_equal(st->alloc_bufs, 18);
	assert_int_equal(st->empty_bursts, 0);
}

/* A burst that asks for fewer than a line holds takes those (the part of a line), and one
 * that starts inside a line takes the line's rest first, then whole lines: from position 4
 * (after the warm-up), 3 (4-6), then 1 (7), 4 (8-11) and 1 (12), then 3 (13-15) and, at 16,
 * nothing more is available. Every chain went in a batch. */
static void scn_count_and_lines_bound_the_batches(struct rf *f)
{
	struct rf_good g[12];

	warm(f);
	post(f, g, 12, 1);
	rf_burst_expect_goods_ask(f, &f->tx, g, 3, 3);
	assert_int_equal(batched(f), 3);
	rf_burst_expect_goods_ask(f, &f->tx, g + 3, 6, 6);
	assert_int_equal(batched(f), 9);
	rf_burst_expect_goods_ask(f, &f->tx, g + 9, 3, 32);
	assert_int_equal(batched(f), 12);
	for (uint32_t i = 0; i < 12; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
	/* Position 16: a whole line and the part of the next. */
	post(f, g, 6, 40);
	rf_burst_expect_goods_ask(f, &f->tx, g, 6, 6);
	assert_int_equal(batched(f), 18);
	for (uint32_t i = 0; i < 6; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
}

/* Fewer than four available: the usual path takes them. */
static void scn_fewer_than_four(struct rf *f)
{
	struct rf_good g[3];

	warm(f);
	post(f, g, 3, 1);
	take(f, g, 3);
	assert_int_equal(batched(f), 0);
	rf_expect_still_works(f, &f->tx);
}

/* Four chains, the third one `odd` (posted by the caller between the others): the line is
 * not a batch; a following line of four good ones is not batched either (the batches stop
 * at the first line that is not one). */
typedef void (*odd_fn)(struct rf *f, struct rf_good *g);

static void with_odd_third(struct rf *f, odd_fn odd, struct rf_good *g)
{
	post(f, g, 2, 1);
	odd(f, &g[2]);
	post(f, g + 3, 5, 4);
}

static void odd_chained(struct rf *f, struct rf_good *g)
{
	*g = rf_post_good_n(f, &f->tx, LEN, 3, 2);
}

static void odd_indirect(struct rf *f, struct rf_good *g)
{
	*g = rf_good_buf(f, &f->tx, LEN, 3);
	const struct rf_desc e = {g->gpa, f->hdr_len + LEN, 0};
	const uint64_t table = rf_alloc(f, 16);

	rf_write_ptable(f, table, &e, 1);
	g->head = rf_post_indirect(&f->tx, table, 16);
}

static void odd_long(struct rf *f, struct rf_good *g)
{
	*g = rf_post_good_n(f, &f->tx, 300, 3, 1); /* past the threshold (256) */
}

/* The good chains of g (eight posted by with_odd_third) come out of one burst in order. */
static void take_all(struct rf *f, struct rf_good *g, uint32_t n)
{
	take(f, g, n);
	assert_int_equal(batched(f), 0);
	assert_int_equal(rf_drops_other(&f->tx, VL_DROP_NONE), 0);
}

static void scn_chained_falls_back(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	with_odd_third(f, odd_chained, g);
	take_all(f, g, 8);
	rf_expect_still_works(f, &f->tx);
}

static void scn_indirect_falls_back(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	with_odd_third(f, odd_indirect, g);
	take_all(f, g, 8);
	rf_expect_still_works(f, &f->tx);
}

/* A packet past the threshold sends the line the usual way, and the batches then stay off
 * for VL_TX_BATCH_RETRY (16) bursts: the 16 after it take their lines the usual way, the
 * 17th batches again. */
static void scn_long_falls_back_and_waits(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	with_odd_third(f, odd_long, g);
	take_all(f, g, 8);
	for (uint32_t b = 0; b < 16; b++) {
		post(f, g, 4, (uint8_t)b);
		take(f, g, 4);
	}
	assert_int_equal(batched(f), 0);
	post(f, g, 4, 99);
	take(f, g, 4);
	assert_int_equal(batched(f), 4);
}

/* A long packet in the second line: the first line was a batch, so the batches stay on
 * (only a burst whose first line holds one turns them off): the next burst batches. A burst
 * asking for nothing takes nothing. */
static void scn_long_after_a_batch_does_not_wait(struct rf *f)
{
	struct rf_good g[8];
	struct vl_pkt *pkts[1];

	warm(f);
	post(f, g, 4, 1);
	g[4] = rf_post_good_n(f, &f->tx, 300, 5, 1);
	post(f, g + 5, 3, 6);
	take(f, g, 8);
	assert_int_equal(batched(f), 4);
	post(f, g, 4, 20);
	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 0), 0);
	take(f, g, 4);
	assert_int_equal(batched(f), 8);
}

/* Offences inside the line: the usual path meets them, drops the chain (returning it under
 * its id) and serves the rest; none was batched. */
static void expect_drop_in_line(struct rf *f, const struct rf_good *g, enum vl_drop why)
{
	struct vl_pkt *pkts[32];

	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 32), 7);
	for (uint32_t i = 0, k = 0; i < 8; i++) {
		if (i == 2)
			continue;
		rf_assert_pkt_pattern(pkts[k], LEN, g[i].seed);
		vl_pkt_free(pkts[k++]);
	}
	for (uint32_t i = 0; i < 8; i++)
		rf_expect_used(&f->tx, g[i].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(rf_drops(&f->tx, why), 1);
	assert_int_equal(rf_drops_other(&f->tx, why), 0);
	assert_int_equal(batched(f), 0);
	for (uint32_t i = 0; i < 8; i++)
		if (i != 2)
			rf_free_good(f, &g[i]);
}

static void scn_unmapped_falls_back(struct rf *f)
{
	struct rf_good g[8];
	const struct rf_desc d = {f->cfg.ram_size + (1ull << 30), f->hdr_len + LEN, 0};

	warm(f);
	post(f, g, 2, 1);
	g[2].head = rf_post_chain(&f->tx, &d, 1);
	post(f, g + 3, 5, 4);
	expect_drop_in_line(f, g, VL_DROP_UNMAPPED);
	rf_expect_still_works(f, &f->tx);
}

static void scn_short_falls_back(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	post(f, g, 2, 1);
	g[2] = rf_good_buf(f, &f->tx, LEN, 3);
	const struct rf_desc d = {g[2].gpa, f->hdr_len, 0}; /* a header, no packet */

	g[2].head = rf_post_chain(&f->tx, &d, 1);
	post(f, g + 3, 5, 4);
	expect_drop_in_line(f, g, VL_DROP_SHORT_CHAIN);
	rf_free_good(f, &g[2]);
	rf_expect_still_works(f, &f->tx);
}

static void scn_writable_falls_back(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	post(f, g, 2, 1);
	g[2] = rf_good_buf(f, &f->tx, LEN, 3);
	const struct rf_desc d = {g[2].gpa, f->hdr_len + LEN, VL_DESC_F_WRITE};

	g[2].head = rf_post_chain(&f->tx, &d, 1);
	post(f, g + 3, 5, 4);
	expect_drop_in_line(f, g, VL_DROP_DIRECTION);
	rf_free_good(f, &g[2]);
	rf_expect_still_works(f, &f->tx);
}

/* An id out of range in the line: the usual path serves the two before it and breaks the
 * queue there, as it does without batches. */
static void scn_bad_id_falls_back(struct rf *f)
{
	struct rf_good g[4];
	struct vl_pkt *pkts[32];

	warm(f);
	post(f, g, 4, 1);
	rf_pdesc(&f->tx, 6)->id = (uint16_t)f->cfg.qsize;
	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 32), 2);
	for (uint32_t i = 0; i < 2; i++) {
		rf_assert_pkt_pattern(pkts[i], LEN, g[i].seed);
		vl_pkt_free(pkts[i]);
		rf_expect_used(&f->tx, g[i].head, 0);
	}
	rf_expect_no_used(&f->tx);
	assert_true(vl_vq_broken(f->tx.q));
	assert_int_equal(vl_vq_broken_reason(f->tx.q), VL_DROP_ID_OUT_OF_RANGE);
	assert_int_equal(batched(f), 0);
}

/* A buffer in another memory region than the queue's last one: the batch does not search
 * the table, the usual path does (and serves it). */
static void scn_other_region_falls_back(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	post(f, g, 8, 1); /* the cursor learns their region */
	take(f, g, 8);
	assert_int_equal(batched(f), 8);
	post(f, g, 2, 1);
	/* A whole buffer just past the boundary between the first two regions. */
	g[2] = (struct rf_good){.gpa = f->straddle_gpa, .len = LEN, .seed = 3};
	rf_write_tx_pkt(f, g[2].gpa, LEN, 3);
	const struct rf_desc d = {g[2].gpa, f->hdr_len + LEN, 0};
	const uint64_t before = f->straddle_gpa - 64;

	g[2].head = rf_post_chain(&f->tx, &d, 1);
	g[3] = (struct rf_good){.gpa = before, .len = 64 - f->hdr_len, .seed = 4};
	rf_write_tx_pkt(f, before, g[3].len, 4);
	const struct rf_desc e = {before, 64, 0};

	g[3].head = rf_post_chain(&f->tx, &e, 1);
	struct vl_pkt *pkts[32];

	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 32), 4);
	for (uint32_t i = 0; i < 4; i++) {
		rf_assert_pkt_pattern(pkts[i], g[i].len, g[i].seed);
		vl_pkt_free(pkts[i]);
		rf_expect_used(&f->tx, g[i].head, 0);
	}
	rf_expect_no_used(&f->tx);
	assert_int_equal(batched(f), 8);
	rf_free_good(f, &g[0]);
	rf_free_good(f, &g[1]);
}

/* The driver's wrap counter flips between two batches: positions 252-255, then 0-3 under
 * the other counter, both batches of one burst (the warm-up took 248-251). */
static void scn_wrap_between_batches(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	post(f, g, 8, 1);
	assert_int_equal(f->tx.pr.next_avail, 4);
	take(f, g, 8);
	assert_int_equal(batched(f), 8);
	rf_expect_still_works(f, &f->tx);
}

/* A ring of 6, position 4 after the warm-up: the line there would run past the ring's end
 * (4, 5, then 0, 1 under the other wrap counter), so the usual path takes it. From position
 * 2 the line's rest (2, 3) is a batch, and the next line (4, 5, 0, 1) again the usual
 * path's; position 0, wrap counter 1 again, is a whole batch. */
static void scn_wrap_inside_a_batch_falls_back(struct rf *f)
{
	struct rf_good g[4];

	warm(f);
	post(f, g, 4, 1);
	take(f, g, 4);
	assert_int_equal(batched(f), 0);
	post(f, g, 4, 5);
	take(f, g, 4);
	assert_int_equal(batched(f), 2);
	post(f, g, 4, 9);
	take(f, g, 4);
	assert_int_equal(batched(f), 6);
}

/* The pool has fewer heads than the batches took: nothing batched is kept, and the usual
 * path gives what the pool has, leaving the rest for the next burst. */
static void scn_short_pool_falls_back(struct rf *f)
{
	struct rf_good g[8];
	struct vl_pkt *hold[RF_POOL_BUFS];
	const uint32_t keep = vl_pool_free_count(f->pool) - 6;

	warm(f);
	assert_int_equal(vl_pool_alloc_bulk(f->pool, hold, keep), 0);
	post(f, g, 8, 1);
	rf_burst_expect_goods(f, &f->tx, g, 6);
	assert_int_equal(batched(f), 0);
	for (uint32_t i = 0; i < 6; i++)
		rf_expect_used(&f->tx, g[i].head, 0);
	rf_expect_no_used(&f->tx);
	for (uint32_t i = 0; i < keep; i++)
		vl_pkt_free(hold[i]);
	/* Position 10: the last two the usual way. */
	rf_burst_expect_goods(f, &f->tx, g + 6, 2);
	for (uint32_t i = 0; i < 8; i++)
		rf_free_good(f, &g[i]);
}

/* The pool refuses every call (an injected failure): the batches take nothing and neither
 * does the usual path; nothing is consumed. Once it gives again, the same lines go as
 * batches. */
static void scn_refused_pool_takes_nothing(struct rf *f)
{
	struct rf_good g[8];
	struct vl_pkt *pkts[32];

	warm(f);
	post(f, g, 8, 1);
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = f->pool, .count = 0});
	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 32), 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_stats(f->tx.q)->chains, 4);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	assert_int_equal(batched(f), 0);
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = f->pool, .count = VL_LAB_NEVER});
	take(f, g, 8);
	assert_int_equal(batched(f), 8);
}

/* Payload prefetch off: the batches ask for no source line (copy_prefetches stays), and
 * batch as ever. */
static void scn_prefetch_off(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	vl_vq_set_tx_prefetch(f->tx.q, false);
	const uint64_t before = vl_vq_stats(f->tx.q)->copy_prefetches;

	post(f, g, 8, 1);
	take(f, g, 8);
	assert_int_equal(batched(f), 8);
	assert_int_equal(vl_vq_stats(f->tx.q)->copy_prefetches, before);
	vl_vq_set_tx_prefetch(f->tx.q, true);
	post(f, g, 8, 1);
	take(f, g, 8);
	assert_int_equal(batched(f), 16);
	assert_int_equal(vl_vq_stats(f->tx.q)->copy_prefetches, before + 8);
}

/* Line wait on: whole lines go as batches; the open line after them (its first two chains
 * available, the rest not yet) waits for the next burst as it would without batches, which
 * takes it (all it finds), the usual way. */
static void scn_line_wait_holds_after_batches(struct rf *f)
{
	struct rf_good g[6];
	const uint64_t waits = vl_vq_stats(f->tx.q)->tx_line_waits;

	warm(f);
	vl_vq_set_tx_line_wait(f->tx.q, true);
	post(f, g, 6, 1);
	rf_burst_expect_goods(f, &f->tx, g, 4);
	assert_int_equal(batched(f), 4);
	assert_int_equal(vl_vq_stats(f->tx.q)->tx_line_waits, waits + 1);
	rf_burst_expect_goods(f, &f->tx, g + 4, 2);
	assert_int_equal(batched(f), 4);
	for (uint32_t i = 0; i < 6; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_stats(f->tx.q)->tx_line_waits, waits + 1);
}

/* A threshold past the pool's segments, or past the largest packet: the batches take what
 * one segment (and VL_PKT_MAX_LEN) holds. Small packets batch under both bounds. */
static void scn_threshold_bounded_by_segment(struct rf *f)
{
	struct rf_good g[4];
	struct vl_pkt *pkts[32];

	warm(f);
	vl_vq_set_batch_threshold(f->tx.q, 4096); /* over the fixture's 2048-byte segments */
	post(f, g, 4, 1);
	take(f, g, 4);
	assert_int_equal(batched(f), 4);
	struct vl_pool *big = vl_pool_create(8, 1u << 17);

	assert_non_null(big);
	vl_vq_set_batch_threshold(f->tx.q, 1u << 20); /* over VL_PKT_MAX_LEN too */
	post(f, g, 4, 5);
	assert_int_equal(vl_net_dequeue(f->tx.q, big, pkts, 32), 4);
	for (uint32_t i = 0; i < 4; i++) {
		rf_assert_pkt_pattern(pkts[i], LEN, g[i].seed);
		vl_pkt_free(pkts[i]);
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
	assert_int_equal(batched(f), 8);
	assert_int_equal(vl_pool_destroy(big), 0);
}

/* Batching off (threshold 0): no batches, every packet as before. */
static void scn_threshold_zero(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	post(f, g, 8, 1);
	take(f, g, 8);
	assert_int_equal(batched(f), 0);
}

/* Offloads negotiated: the burst is not plain (headers are read), no batches. */
static void scn_offloads_no_batches(struct rf *f)
{
	struct rf_good g[8];

	warm(f);
	post(f, g, 8, 1);
	take(f, g, 8);
	assert_int_equal(batched(f), 0);
}

/* The fixture negotiates VIRTIO_NET_F_CSUM; the batches are for plain queues (no offloads:
 * the header is not read), so the rows take it off but one. */
#define PLAIN VL_FEATURE(VL_F_NET_CSUM)
#define ROW(scn, suffix, feat)                                                               \
	{ .name = #scn suffix, .fn = scn_##scn, .layout = VL_LAYOUT_PACKED,                  \
	  .granularity = RF_COARSE, .features = feat, .features_off = PLAIN }
#define CASES2(name) ROW(name, "", 0), ROW(name, "_in_order", RF_IN_ORDER)

static const struct rf_case cases[] = {
	CASES2(takes_whole_lines),
	CASES2(count_and_lines_bound_the_batches),
	CASES2(fewer_than_four),
	CASES2(chained_falls_back),
	CASES2(indirect_falls_back),
	CASES2(long_falls_back_and_waits),
	CASES2(long_after_a_batch_does_not_wait),
	CASES2(unmapped_falls_back),
	CASES2(short_falls_back),
	CASES2(writable_falls_back),
	CASES2(bad_id_falls_back),
	CASES2(other_region_falls_back),
	CASES2(short_pool_falls_back),
	CASES2(refused_pool_takes_nothing),
	CASES2(prefetch_off),
	CASES2(line_wait_holds_after_batches),
	CASES2(threshold_bounded_by_segment),
	{.name = "wrap_between_batches", .fn = scn_wrap_between_batches,
	 .layout = VL_LAYOUT_PACKED, .features_off = PLAIN, .start_idx = 248},
	{.name = "wrap_between_batches_wrap0", .fn = scn_wrap_between_batches,
	 .layout = VL_LAYOUT_PACKED, .features_off = PLAIN, .start_idx = 248, .wrap0 = true},
	{.name = "wrap_inside_a_batch_falls_back", .fn = scn_wrap_inside_a_batch_falls_back,
	 .layout = VL_LAYOUT_PACKED, .features_off = PLAIN, .qsize = 6},
	{.name = "threshold_zero", .fn = scn_threshold_zero, .layout = VL_LAYOUT_PACKED,
	 .features_off = PLAIN, .no_batch = true},
	/* The fixture's CSUM kept: not plain. */
	{.name = "offloads_no_batches", .fn = scn_offloads_no_batches,
	 .layout = VL_LAYOUT_PACKED},
};

int main(void)
{
	return rf_run_cases("packed_batch", RF_LIST(cases), NULL, 0);
}

/* SPDX-License-Identifier: MIT */
/* vl_net_discard: TX chains go back to the guest with used length 0, unread and without a
 * packet (the null back end's burst); vl_net_discard_touch, the same reading one byte of each
 * packet (the touch back end's). Each case pins what the guest sees (used ids, lengths,
 * order), what is counted (return value, bytes, drops, chains, bursts) and that the pool is
 * never touched. Split and packed, without and with VIRTIO_F_IN_ORDER. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ring_fixture.h"


static const struct vl_vq_stats *st(const struct rf *f)
{
	return vl_vq_stats(f->tx.q);
}

/* Three good chains (one, two and three descriptors): all back, in order, length 0; the
 * bytes are the packet lengths; no packet was made and the pool was not asked. An empty
 * ring afterwards returns nothing and counts an empty burst. */
static void scn_returns_unread(struct rf *f)
{
	struct rf_good g[3] = {
		rf_post_good(f, &f->tx, 60, 1),
		rf_post_good_n(f, &f->tx, 1500, 2, 2),
		rf_post_good_n(f, &f->tx, 300, 3, 3),
	};
	uint64_t bytes = 7;

	assert_int_equal(vl_net_discard(f->tx.q, 32, &bytes), 3);
	assert_int_equal(bytes, 7 + 60 + 1500 + 300);
	for (int i = 0; i < 3; i++)
		rf_expect_used(&f->tx, g[i].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(st(f)->chains, 3);
	assert_int_equal(st(f)->packets, 0);
	assert_int_equal(st(f)->alloc_calls, 0);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	assert_int_equal(rf_drops_other(&f->tx, VL_DROP_NONE), 0);
	for (int i = 0; i < 3; i++)
		rf_free_good(f, &g[i]);

	assert_int_equal(vl_net_discard(f->tx.q, 32, NULL), 0);
	assert_int_equal(st(f)->bursts, 2);
	assert_int_equal(st(f)->empty_bursts, 1);
}

/* count bounds a burst; what is left stays available for the next one. Many bursts of
 * two-descriptor chains go round the ring several times (wrap counters, used positions). */
static void scn_count_and_wrap(struct rf *f)
{
	struct rf_good g[5];

	for (int i = 0; i < 5; i++)
		g[i] = rf_post_good(f, &f->tx, 64, (uint8_t)i);
	assert_int_equal(vl_net_discard(f->tx.q, 2, NULL), 2);
	assert_int_equal(st(f)->chains, 2);
	assert_int_equal(vl_net_discard(f->tx.q, 32, NULL), 3);
	for (int i = 0; i < 5; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}

	uint64_t bytes = 0, total = 0;

	for (int round = 0; round < 40; round++) {
		struct rf_good r[20];

		for (int i = 0; i < 20; i++)
			r[i] = rf_post_good_n(f, &f->tx, 100, (uint8_t)i, 2);
		total += vl_net_discard(f->tx.q, 32, &bytes);
		for (int i = 0; i < 20; i++) {
			rf_expect_used(&f->tx, r[i].head, 0);
			rf_free_good(f, &r[i]);
		}
		rf_expect_no_used(&f->tx);
	}
	assert_int_equal(total, 800);
	assert_int_equal(bytes, 800 * 100);
}

/* Malformed chains (a device-writable buffer, a chain no longer than the header) go back
 * with length 0 too, counted as the dequeue counts them and not in the return value. */
static void scn_bad_chains(struct rf *f)
{
	uint64_t buf = rf_alloc(f, 256);
	struct rf_desc wr = {buf, 100, VL_DESC_F_WRITE};
	struct rf_desc hdr_only = {buf + 128, f->hdr_len, 0};
	uint16_t bad0 = rf_post_chain(&f->tx, &wr, 1);
	struct rf_good g = rf_post_good(f, &f->tx, 64, 9);
	uint16_t bad1 = rf_post_chain(&f->tx, &hdr_only, 1);
	uint64_t bytes = 0;

	assert_int_equal(vl_net_discard(f->tx.q, 32, &bytes), 1);
	assert_int_equal(bytes, 64);
	assert_int_equal(rf_drops(&f->tx, VL_DROP_DIRECTION), 1);
	assert_int_equal(rf_drops(&f->tx, VL_DROP_SHORT_CHAIN), 1);
	assert_int_equal(st(f)->chains, 3);
	rf_expect_used(&f->tx, bad0, 0);
	rf_expect_used(&f->tx, g.head, 0);
	rf_expect_used(&f->tx, bad1, 0);
	rf_free_good(f, &g);
}

/* The largest packet dequeue takes, VL_PKT_MAX_LEN bytes, is good; one byte more is dropped
 * as too big, as dequeue drops it (two descriptors over one buffer make the length). Both
 * go back with length 0; only the good one's bytes count. */
static void scn_too_big(struct rf *f)
{
	const uint32_t first = 40000;
	uint64_t buf = rf_alloc(f, f->hdr_len + first);
	struct rf_desc max[2] = {{buf, f->hdr_len + first, 0},
				 {buf, VL_PKT_MAX_LEN - first, 0}};
	struct rf_desc over[2] = {{buf, f->hdr_len + first, 0},
				  {buf, VL_PKT_MAX_LEN + 1 - first, 0}};
	uint16_t good = rf_post_chain(&f->tx, max, 2);
	uint16_t bad = rf_post_chain(&f->tx, over, 2);
	uint64_t bytes = 0;

	assert_int_equal(vl_net_discard(f->tx.q, 32, &bytes), 1);
	assert_int_equal(bytes, VL_PKT_MAX_LEN);
	assert_int_equal(rf_drops(&f->tx, VL_DROP_TX_TOO_BIG), 1);
	assert_int_equal(rf_drops_other(&f->tx, VL_DROP_TX_TOO_BIG), 0);
	rf_expect_used(&f->tx, good, 0);
	rf_expect_used(&f->tx, bad, 0);
	rf_expect_no_used(&f->tx);
}

/* Touch: each good packet's first byte (the one after the header) is read, wherever the chain
 * puts it -- with the header in one descriptor, apart from the payload, or split over two
 * descriptors with the payload in a third -- and nothing more is done than discard does:
 * every chain goes back with length 0, no packet is made. A chain no longer than the header
 * has no first byte: it is dropped unread (its buffer holds a byte no pattern has). One
 * chain per call, so each call's sum is that chain's byte alone. */
static void scn_touch_reads_first_byte(struct rf *f)
{
	const uint32_t h = f->hdr_len;
	struct rf_good one = rf_post_good(f, &f->tx, 60, 1);
	struct rf_good apart = rf_good_buf(f, &f->tx, 1500, 2);
	struct rf_desc d2[2] = {{apart.gpa, h, 0}, {apart.gpa + h, 1500, 0}};

	apart.head = rf_post_chain(&f->tx, d2, 2);

	struct rf_good split = rf_good_buf(f, &f->tx, 300, 3);
	struct rf_desc d3[3] = {{split.gpa, 5, 0}, {split.gpa + 5, h - 5, 0},
				{split.gpa + h, 300, 0}};

	split.head = rf_post_chain(&f->tx, d3, 3);

	uint64_t buf = rf_alloc(f, 64);

	rf_fill(f, buf, 0xEE, 64);
	struct rf_desc hdr_only = {buf, h, 0};
	uint16_t bad = rf_post_chain(&f->tx, &hdr_only, 1);
	const struct rf_good *g[3] = {&one, &apart, &split};
	uint64_t bytes = 0, firsts = 1000;

	for (int i = 0; i < 3; i++) {
		uint64_t before = firsts;

		assert_int_equal(vl_net_discard_touch(f->tx.q, 1, &bytes, &firsts), 1);
		assert_int_equal(firsts - before, rf_pattern_byte(g[i]->seed, 0));
	}
	assert_int_equal(vl_net_discard_touch(f->tx.q, 1, &bytes, &firsts), 0);
	assert_int_equal(firsts, 1000 + rf_pattern_byte(1, 0) + rf_pattern_byte(2, 0) +
					 rf_pattern_byte(3, 0));
	assert_int_equal(bytes, 60 + 1500 + 300);
	assert_int_equal(rf_drops(&f->tx, VL_DROP_SHORT_CHAIN), 1);
	for (int i = 0; i < 3; i++)
		rf_expect_used(&f->tx, g[i]->head, 0);
	rf_expect_used(&f->tx, bad, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(st(f)->chains, 4);
	assert_int_equal(st(f)->packets, 0);
	assert_int_equal(st(f)->alloc_calls, 0);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	for (int i = 0; i < 3; i++)
		rf_free_good(f, g[i]);

	/* Without a place for the sum the bytes are still read (nothing to see here but that
	 * it works) and the chains go back. */
	struct rf_good last = rf_post_good(f, &f->tx, 64, 4);

	assert_int_equal(vl_net_discard_touch(f->tx.q, 32, NULL, NULL), 1);
	rf_expect_used(&f->tx, last.head, 0);
	rf_free_good(f, &last);
}

/* A head the queue does not have: the queue breaks, nothing goes back, and later bursts do
 * nothing. */
static void scn_broken(struct rf *f)
{
	lab_vring_add_avail(&f->tx.vr, (uint16_t)f->cfg.qsize);
	lab_vring_kick(&f->tx.vr);
	assert_int_equal(vl_net_discard(f->tx.q, 32, NULL), 0);
	assert_true(vl_vq_broken(f->tx.q));
	assert_int_equal(vl_vq_broken_reason(f->tx.q), VL_DROP_HEAD_OUT_OF_RANGE);
	assert_int_equal(vl_net_discard(f->tx.q, 32, NULL), 0);
	assert_int_equal(st(f)->chains, 0);
	rf_expect_no_used(&f->tx);
}

/* Under IN_ORDER behind a chain a zero-copy packet holds, discarded chains wait their turn
 * (up to the lease bound, then the burst stops); they all go back once the packet is freed. */
static void scn_behind_zero_copy(struct rf *f)
{
	struct vl_pkt *pkt;

	vl_vq_set_zero_copy(f->tx.q, true, 64, 3);
	struct rf_good held = rf_post_good(f, &f->tx, 1000, 1);

	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, &pkt, 1), 1);
	assert_int_equal(vl_vq_zero_copy_held(f->tx.q), 1);

	struct rf_good g[3];

	for (int i = 0; i < 3; i++)
		g[i] = rf_post_good(f, &f->tx, 64, (uint8_t)(2 + i));
	/* Two leases left under the bound of three: two chains queue, the third stays. */
	assert_int_equal(vl_net_discard(f->tx.q, 32, NULL), 2);
	assert_int_equal(st(f)->zc_stalls, 1);
	assert_int_equal(vl_vq_zero_copy_held(f->tx.q), 3);
	rf_expect_no_used(&f->tx);

	vl_pkt_free(pkt);
	assert_int_equal(vl_net_discard(f->tx.q, 32, NULL), 1);
	rf_expect_used(&f->tx, held.head, 0);
	for (int i = 0; i < 3; i++)
		rf_expect_used(&f->tx, g[i].head, 0);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_vq_zero_copy_held(f->tx.q), 0);
	rf_free_good(f, &held);
	for (int i = 0; i < 3; i++)
		rf_free_good(f, &g[i]);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

static const struct rf_case cases[] = {
	RF_CASES4(returns_unread),
	RF_CASES4(count_and_wrap),
	RF_CASES4(bad_chains),
	RF_CASES4(too_big),
	RF_CASES4(touch_reads_first_byte),
	RF_CASE(broken, "_split", VL_LAYOUT_SPLIT, RF_COARSE, 0),
	RF_CASES2(behind_zero_copy, RF_IN_ORDER),
};

int main(void)
{
	return rf_run_cases("discard", RF_LIST(cases), NULL, 0);
}

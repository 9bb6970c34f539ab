/* SPDX-License-Identifier: MIT */
/* Dequeue's payload prefetch (vl_ring_prefetch_ahead): a guest-to-host burst asks for each
 * packet's first line a few chains before it reads it. It is a hint, so what the guest sees
 * must not change at all; what it does is pinned by the payload_prefetches counter: one per
 * chain of the burst's window whose first descriptor is longer than the header and the
 * batching threshold (a packet copied at once, or the first piece of one) and holds the header
 * and first packet byte in one memory region, whatever follows it -- no more (chains beyond
 * the window, a first descriptor of the header alone as a Linux guest sends it, indirect ones
 * whose table is short, buffers the table does not hold or that straddle a host mapping
 * before the first packet byte, packets the batch copies, zero-copy), no fewer. touch
 * (vl_net_discard_touch) asks the same way for a first descriptor of any length longer than
 * the header, an indirect one's table included; null (vl_net_discard) reads nothing and asks
 * for nothing; vl_vq_set_tx_prefetch(vq, false) turns both off. The copies the batch defers
 * ask for their source's first line as they are queued instead: copy_prefetches, one per
 * batched dequeue copy, none for enqueue's. Split and packed, without and with
 * VIRTIO_F_IN_ORDER. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ring/ring.h" /* VL_TX_PREFETCH_RETRY */
#include "ring_fixture.h"

static const struct vl_vq_stats *st(const struct rf *f)
{
	return vl_vq_stats(f->tx.q);
}

/* A TX buffer at gpa: a zero header, then len pattern(seed) bytes, posted as one descriptor. */
static struct rf_good post_at(struct rf *f, uint64_t gpa, uint32_t len, uint8_t seed)
{
	uint8_t data[2048];

	assert_true(len <= sizeof(data));
	rf_fill(f, gpa, 0, f->hdr_len);
	rf_pattern(data, len, seed);
	rf_write(f, gpa + f->hdr_len, data, len);

	const struct rf_desc d = {gpa, f->hdr_len + len, 0};

	return (struct rf_good){.head = rf_post_chain(&f->tx, &d, 1), .gpa = gpa, .len = len,
				.seed = seed};
}

/* A TX buffer as a Linux guest sends it: the header in one descriptor, the packet in the
 * next. */
static struct rf_good post_hdr_apart(struct rf *f, uint32_t len, uint8_t seed)
{
	struct rf_good g = rf_good_buf(f, &f->tx, len, seed);
	const struct rf_desc d[2] = {{g.gpa, f->hdr_len, 0}, {g.gpa + f->hdr_len, len, 0}};

	g.head = rf_post_chain(&f->tx, d, 2);
	return g;
}

/* The same buffer behind an indirect descriptor: a one-entry table in the layout's format. */
static struct rf_good post_indirect(struct rf *f, uint32_t len, uint8_t seed)
{
	struct rf_good g = rf_good_buf(f, &f->tx, len, seed);
	const struct rf_desc e = {g.gpa, f->hdr_len + len, 0};
	const uint64_t t = rf_alloc(f, 16);

	if (f->tx.layout == VL_LAYOUT_SPLIT)
		rf_write_table(f, t, &e, 1);
	else
		rf_write_ptable(f, t, &e, 1);
	g.head = rf_post_indirect(&f->tx, t, 16);
	return g;
}

/* One burst over every kind of chain: the eligible ones are asked for, the rest not, and
 * every packet still arrives byte for byte, the unmapped chain dropped as ever. Packets one
 * byte over the batching threshold are asked for, at it not; with batching off, every one.
 * The two straddling buffers sit at the same boundary, so they go in two bursts: the first
 * packet byte the last one of the region before it (asked for), then the first of the next
 * (not). */
static void scn_eligible_chains(struct rf *f)
{
	const uint32_t hdr = f->hdr_len, big = VL_BATCH_THRESHOLD_DEFAULT + 1;
	struct rf_good g[8];
	struct vl_pkt *pkts[16];

	g[0] = rf_post_good(f, &f->tx, 1000, 1);
	g[1] = post_hdr_apart(f, 600, 2);             /* the header alone first: no */
	g[2] = post_indirect(f, 700, 3);              /* indirect: no */
	g[3] = post_at(f, rf_straddle(f, hdr + 1), big, 4); /* header and byte before: yes */
	const struct rf_desc far = {0x40000000ull, hdr + 1000, 0};
	const uint16_t unmapped = rf_post_chain(&f->tx, &far, 1); /* not in the table: no */

	g[4] = rf_post_good(f, &f->tx, VL_BATCH_THRESHOLD_DEFAULT, 5); /* batched: no */
	g[5] = rf_post_good(f, &f->tx, 64, 6);                          /* batched: no */

	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 16), 6);
	assert_int_equal(st(f)->payload_prefetches, 2);
	/* The batch deferred four copies: g[4], g[5], and both pieces of g[3] (one byte, then
	 * the rest across the boundary); each asked for its source's first line. */
	assert_int_equal(st(f)->copy_prefetches, 4);
	assert_int_equal(st(f)->copies_batched, 4);
	for (uint32_t i = 0; i < 6; i++) {
		rf_assert_pkt_pattern(pkts[i], g[i].len, g[i].seed);
		vl_pkt_free(pkts[i]);
	}
	assert_int_equal(rf_drops(&f->tx, VL_DROP_UNMAPPED), 1);
	assert_int_equal(rf_drops_other(&f->tx, VL_DROP_UNMAPPED), 0);
	for (uint32_t i = 0; i < 4; i++)
		rf_expect_used(&f->tx, g[i].head, 0);
	rf_expect_used(&f->tx, unmapped, 0);
	rf_expect_used(&f->tx, g[4].head, 0);
	rf_expect_used(&f->tx, g[5].head, 0);
	rf_expect_no_used(&f->tx);

	/* Batching off: every copy is made at once, and the smallest packet is asked for too. */
	vl_vq_set_batch_threshold(f->tx.q, 0);
	g[7] = rf_post_good(f, &f->tx, 1, 8);
	rf_burst_expect_good(f, &f->tx, &g[7]);
	assert_int_equal(st(f)->payload_prefetches, 3);
	assert_int_equal(st(f)->copy_prefetches, 4);
	rf_expect_used(&f->tx, g[7].head, 0);

	/* The header ends the region: the first packet byte is across the boundary. */
	g[6] = post_at(f, rf_straddle(f, hdr), 1000, 7);
	rf_burst_expect_good(f, &f->tx, &g[6]);
	assert_int_equal(st(f)->payload_prefetches, 3);
	rf_expect_used(&f->tx, g[6].head, 0);
	rf_expect_no_used(&f->tx);
	for (uint32_t i = 0; i < 8; i++)
		if (i != 3 && i != 6)
			rf_free_good(f, &g[i]);
}

/* Only the burst's window is asked for, each chain of it once, wherever it sits in the
 * window (before and past the prefetch distance); the chains left for the next burst are
 * asked for by that one. */
static void scn_window_only(struct rf *f)
{
	enum { N = 40, FIRST = 8 };
	struct rf_good g[N];

	for (uint32_t i = 0; i < N; i++)
		g[i] = rf_post_good(f, &f->tx, VL_BATCH_THRESHOLD_DEFAULT + 1 + i, (uint8_t)i);
	rf_burst_expect_goods_ask(f, &f->tx, g, FIRST, FIRST);
	assert_int_equal(st(f)->payload_prefetches, FIRST);
	rf_burst_expect_goods(f, &f->tx, g + FIRST, N - FIRST);
	assert_int_equal(st(f)->payload_prefetches, N);
	for (uint32_t i = 0; i < N; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
}

/* With zero-copy on, packets are not read: nothing is asked for (nor counted as a burst that
 * found nothing, below), and the packets are the guest's bytes all the same. Back to copying,
 * every burst asks again. */
static void scn_zero_copy(struct rf *f)
{
	struct vl_pkt *pkts[4];
	struct rf_good g[4];

	vl_vq_set_zero_copy(f->tx.q, true, 64, 16);
	for (uint32_t i = 0; i < 2; i++)
		g[i] = rf_post_good(f, &f->tx, 1000, (uint8_t)(i + 1));
	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 4), 2);
	assert_int_equal(st(f)->zc_packets, 2);
	assert_int_equal(st(f)->payload_prefetches, 0);
	for (uint32_t i = 0; i < 2; i++) {
		rf_assert_pkt_pattern(pkts[i], g[i].len, g[i].seed);
		vl_pkt_free(pkts[i]);
	}
	vl_vq_set_zero_copy(f->tx.q, false, 64, 16);
	g[2] = rf_post_good(f, &f->tx, 1000, 3);
	rf_burst_expect_good(f, &f->tx, &g[2]); /* returns the leases first */
	assert_int_equal(st(f)->payload_prefetches, 1);
	g[3] = rf_post_good(f, &f->tx, 1000, 4);
	rf_burst_expect_good(f, &f->tx, &g[3]);
	assert_int_equal(st(f)->payload_prefetches, 2);
	for (uint32_t i = 0; i < 4; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
}

/* A burst that finds nothing to ask for (a stream of small packets, all batched, or of chains
 * of several descriptors) makes the next VL_TX_PREFETCH_RETRY bursts with chains skip even the
 * peeks; then one tries again, and one that asks keeps asking on. Empty bursts do not count. */
/* One burst that must move exactly the posted chain g, which the guest then gets back. */
static void burst_of(struct rf *f, struct rf_good g)
{
	rf_burst_expect_good(f, &f->tx, &g);
	rf_expect_used(&f->tx, g.head, 0);
	rf_free_good(f, &g);
}

static void one_burst(struct rf *f, uint32_t len, uint32_t ndescs, uint8_t seed)
{
	burst_of(f, rf_post_good_n(f, &f->tx, len, seed, ndescs));
}

static void scn_follows_the_last_burst(struct rf *f)
{
	struct vl_pkt *pkts[4];

	one_burst(f, 64, 1, 1); /* tried: nothing to ask for */
	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 4), 0);
	for (uint32_t i = 0; i < VL_TX_PREFETCH_RETRY; i++) {
		one_burst(f, 1000, 1, (uint8_t)i);
		assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 4), 0);
	}
	assert_int_equal(st(f)->payload_prefetches, 0);
	one_burst(f, 1000, 1, 2); /* tries again */
	assert_int_equal(st(f)->payload_prefetches, 1);
	one_burst(f, 1000, 1, 3);
	assert_int_equal(st(f)->payload_prefetches, 2);
	one_burst(f, 1000, 2, 4); /* two descriptors, the first 506 bytes: asked for */
	assert_int_equal(st(f)->payload_prefetches, 3);
	burst_of(f, post_hdr_apart(f, 1000, 5)); /* the header alone first: not asked for */
	one_burst(f, 1000, 1, 6);
	assert_int_equal(st(f)->payload_prefetches, 3);
	/* The first burst's packet, deferred, was asked for as it was queued; that did not
	 * count as the window finding something (the retries above skipped). */
	assert_int_equal(st(f)->copy_prefetches, 1);
	rf_expect_no_used(&f->tx);
}

/* touch asks for what dequeue asks for, at any length past the header: an indirect chain's
 * table (16 bytes) too; null for nothing. */
static void scn_discard(struct rf *f)
{
	struct rf_good g[5];
	uint64_t bytes = 0, firsts = 0;

	g[0] = rf_post_good(f, &f->tx, 100, 1);
	g[1] = post_hdr_apart(f, 100, 2); /* the header alone first: no */
	g[2] = rf_post_good(f, &f->tx, 100, 3);
	g[3] = post_indirect(f, 100, 4);  /* its table */
	assert_int_equal(vl_net_discard(f->tx.q, 1, &bytes), 1);
	assert_int_equal(st(f)->payload_prefetches, 0);
	assert_int_equal(vl_net_discard_touch(f->tx.q, 8, &bytes, &firsts), 3);
	assert_int_equal(st(f)->payload_prefetches, 2);
	assert_int_equal(firsts, rf_pattern_byte(2, 0) + rf_pattern_byte(3, 0) +
				 rf_pattern_byte(4, 0));
	g[4] = rf_post_good(f, &f->tx, 100, 5);
	assert_int_equal(vl_net_discard(f->tx.q, 8, &bytes), 1);
	assert_int_equal(st(f)->payload_prefetches, 2);
	for (uint32_t i = 0; i < 5; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);
}

/* Turned off, neither dequeue nor touch asks for anything; the packets are the same. Turned
 * on, the next burst asks at once, even behind one that found nothing to ask for. */
static void scn_turned_off(struct rf *f)
{
	struct rf_good g[4];
	uint64_t bytes = 0, firsts = 0;

	assert_true(vl_vq_tx_prefetch(f->tx.q));
	one_burst(f, 64, 1, 9); /* nothing to ask for: the next bursts would skip */
	vl_vq_set_tx_prefetch(f->tx.q, false);
	assert_false(vl_vq_tx_prefetch(f->tx.q));
	for (uint32_t i = 0; i < 2; i++) {
		g[i] = rf_post_good(f, &f->tx, 1000, (uint8_t)(i + 1));
		rf_burst_expect_good(f, &f->tx, &g[i]);
	}
	g[2] = rf_post_good(f, &f->tx, 1000, 3);
	assert_int_equal(vl_net_discard_touch(f->tx.q, 8, &bytes, &firsts), 1);
	assert_int_equal(firsts, rf_pattern_byte(3, 0));
	assert_int_equal(st(f)->payload_prefetches, 0);

	vl_vq_set_tx_prefetch(f->tx.q, true);
	g[3] = rf_post_good(f, &f->tx, 1000, 4);
	rf_burst_expect_good(f, &f->tx, &g[3]);
	assert_int_equal(st(f)->payload_prefetches, 1);
	for (uint32_t i = 0; i < 4; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	/* A copy the batch defers asks only while on: the first 64-byte packet did. */
	assert_int_equal(st(f)->copy_prefetches, 1);
	vl_vq_set_tx_prefetch(f->tx.q, false);
	one_burst(f, 64, 1, 10);
	assert_int_equal(st(f)->copy_prefetches, 1);
	vl_vq_set_tx_prefetch(f->tx.q, true);
	one_burst(f, 64, 1, 11);
	assert_int_equal(st(f)->copy_prefetches, 2);
	assert_int_equal(st(f)->copies_batched, 3);
	rf_expect_no_used(&f->tx);
}

/* Every copy the batch defers asks for its source's first line as it is queued, whatever the
 * chain's shape: one-descriptor packets, the packet piece of a header sent apart (the header
 * piece is not copied), each piece of a two-descriptor chain; a copy made at once (longer
 * than the threshold) does not, nor does anything with batching off. Enqueue's copies go to
 * the guest: the RX queue asks for nothing. The packets are the same bytes either way. */
static void scn_deferred_copies(struct rf *f)
{
	struct rf_good g[6], r;

	for (uint32_t i = 0; i < 3; i++)
		g[i] = rf_post_good(f, &f->tx, 64, (uint8_t)(i + 1));
	g[3] = post_hdr_apart(f, 100, 4);
	g[4] = rf_post_good_n(f, &f->tx, 200, 5, 2);
	g[5] = rf_post_good(f, &f->tx, VL_BATCH_THRESHOLD_DEFAULT + 1, 6); /* at once */
	rf_burst_expect_goods(f, &f->tx, g, 6);
	assert_int_equal(st(f)->copies_batched, 6);
	assert_int_equal(st(f)->copies_direct, 1);
	assert_int_equal(st(f)->copy_prefetches, 6);
	for (uint32_t i = 0; i < 6; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(&f->tx);

	vl_vq_set_batch_threshold(f->tx.q, 0);
	burst_of(f, rf_post_good(f, &f->tx, 64, 7));
	assert_int_equal(st(f)->copies_direct, 2);
	assert_int_equal(st(f)->copy_prefetches, 6);

	r = rf_post_good(f, &f->rx, 64, 8);
	rf_burst_expect_good(f, &f->rx, &r);
	assert_true(vl_vq_stats(f->rx.q)->copies_batched > 0);
	assert_int_equal(vl_vq_stats(f->rx.q)->copy_prefetches, 0);
	rf_expect_used(&f->rx, r.head, rf_good_used_len(f, &f->rx, &r));
	rf_free_good(f, &r);
	rf_expect_no_used(&f->rx);
}

/* The fixture's table plus two regions at TINY_GPA: a first one of `first` bytes, then one
 * of a page right after it in guest space, elsewhere in host memory (so they stay two). */
#define TINY_GPA 0x40000000ull

static struct vl_mem *mem_with_tiny_region(struct rf *f, uint8_t *host, uint32_t first)
{
	const uint32_t n = vl_mem_table_size(f->mem);
	struct vl_mem_region *r = calloc(n + 2, sizeof(*r));
	int err = 0;

	assert_non_null(r);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(vl_mem_table_region(f->mem, i, &r[i]), 0);
	r[n] = (struct vl_mem_region){.gpa = TINY_GPA, .size = first, .host = host};
	r[n + 1] = (struct vl_mem_region){.gpa = TINY_GPA + first, .size = 4096,
					  .host = host + 8192};

	struct vl_mem *mem = vl_mem_create(r, n + 2, &err);

	free(r);
	assert_non_null(mem);
	assert_int_equal(vl_mem_region_count(mem), vl_mem_region_count(f->mem) + 2);
	return mem;
}

/* A buffer at the start of a region of exactly hdr_len + 1 bytes has its header and first
 * packet byte in it: asked for. One byte smaller, the first packet byte is in the next region:
 * not asked for. The packet arrives byte for byte either way. */
static void scn_region_of_one_header(struct rf *f)
{
	static uint8_t host[8192 + 4096];
	const uint32_t len = 1000;
	uint8_t data[1000];

	rf_pattern(data, len, 5);
	for (int one = 1; one >= 0; one--) {
		const uint32_t extra = (uint32_t)one, first = f->hdr_len + extra;
		struct vl_mem *mem = mem_with_tiny_region(f, host, first);
		const uint64_t before = st(f)->payload_prefetches;
		struct vl_pkt *pkt;

		assert_int_equal(vl_vq_set_mem(f->tx.q, mem), 0);
		memset(host, 0, f->hdr_len);
		memcpy(host + f->hdr_len, data, extra);
		memcpy(host + 8192, data + extra, len - extra);

		const struct rf_desc d = {TINY_GPA, f->hdr_len + len, 0};
		const uint16_t head = rf_post_chain(&f->tx, &d, 1);

		assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, &pkt, 1), 1);
		assert_int_equal(st(f)->payload_prefetches - before, extra);
		rf_assert_pkt_pattern(pkt, len, 5);
		vl_pkt_free(pkt);
		rf_expect_used(&f->tx, head, 0);
		assert_int_equal(vl_vq_set_mem(f->tx.q, f->mem), 0);
		vl_mem_destroy(mem);
	}
	rf_expect_no_used(&f->tx);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

static const struct rf_case cases[] = {
	RF_CASES4(eligible_chains),
	RF_CASES4(window_only),
	RF_CASES4(zero_copy),
	RF_CASES4(follows_the_last_burst),
	RF_CASES4(discard),
	RF_CASES4(turned_off),
	RF_CASES4(deferred_copies),
	RF_CASES4(region_of_one_header),
};

int main(void)
{
	return rf_run_cases("tx_prefetch", RF_LIST(cases), NULL, 0);
}

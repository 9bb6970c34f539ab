/* SPDX-License-Identifier: MIT */
/* Packet allocation in the datapath (technique 4) and its failures.
 *
 * Dequeue counts the chains available first and allocates exactly that many packet heads
 * (VL_ALLOC_AVAILABLE, the default; nothing at all for an empty ring), or `count` heads and
 * frees the unused ones (VL_ALLOC_BURST). The size of each request is observed from outside:
 * a pool left with exactly the heads the burst needs refuses any larger request (its own
 * failure counter moves), so "no pool failure" proves the request was not larger.
 *
 * When the pool cannot supply -- injected with VL_LAB_POOL_FAIL_AFTER or a fault hook, or
 * short of segments for a multi-segment packet -- the burst stops before that chain, which stays
 * available and is served by a later burst; chains before it are delivered. Every case
 * counts the used entries: each posted chain comes back exactly once, in order, and the pool
 * is full again at the end (rf_teardown checks). Enqueue never allocates. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ring_fixture.h"
#include "vl_lab_control.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static const struct vl_vq_stats *st(const struct rf *f)
{
	return vl_vq_stats(f->tx.q);
}

static uint16_t deq(struct rf *f, struct vl_pkt **pkts, uint16_t count)
{
	return vl_net_dequeue(f->tx.q, f->pool, pkts, count);
}

/* Packets taken out of the pool so that exactly `keep` buffers stay free. */
struct drain {
	struct vl_pkt **p;
	uint32_t n;
};

static struct drain drain_to(struct rf *f, uint32_t keep)
{
	struct drain d;
	uint32_t free_now = vl_pool_free_count(f->pool);

	assert_true(free_now >= keep);
	d.n = free_now - keep;
	d.p = calloc(d.n ? d.n : 1, sizeof(*d.p));
	assert_non_null(d.p);
	assert_int_equal(vl_pool_alloc_bulk(f->pool, d.p, d.n), 0);
	assert_int_equal(vl_pool_free_count(f->pool), keep);
	return d;
}

static void undrain(struct drain *d)
{
	vl_pkt_free_bulk(d->p, d->n);
	free(d->p);
	d->p = NULL;
	d->n = 0;
}

/* A fault hook: counts its calls and fails every `every`-th (0: never). */
struct hook {
	uint32_t calls;
	uint32_t every;
};

static bool hook_fail(void *ctx)
{
	struct hook *h = ctx;

	h->calls++;
	return h->every != 0 && h->calls % h->every == 0;
}

/* The next used entries are exactly ids[0..n), each with length 0, and nothing follows. */
static void expect_used_seq(struct rf *f, const uint16_t *ids, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		rf_expect_used(&f->tx, ids[i], 0);
	rf_expect_no_used(&f->tx);
}

static void assert_alloc(const struct rf *f, uint64_t calls, uint64_t bufs, uint64_t unused,
			 uint64_t failures)
{
	assert_int_equal(st(f)->alloc_calls, calls);
	assert_int_equal(st(f)->alloc_bufs, bufs);
	assert_int_equal(st(f)->alloc_unused, unused);
	assert_int_equal(st(f)->alloc_failures, failures);
}

/* ---- technique 4: exactly what is available ------------------------------------------ */

/* An empty ring: no allocation call at all (the pool is not even asked: its hook is not
 * called), nothing taken. */
static void scn_empty(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct hook h = { 0, 0 };

	vl_lab_control(VL_LAB_POOL_FAULT_HOOK,
		       &(struct vl_lab_arg){.pool = f->pool, .fail = hook_fail, .ctx = &h});
	assert_int_equal(deq(f, pkts, 32), 0);
	assert_int_equal(deq(f, pkts, 1), 0);
	assert_int_equal(h.calls, 0);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 0);
	assert_alloc(f, 0, 0, 0, 0);
	assert_int_equal(st(f)->empty_bursts, 2);
	assert_int_equal(st(f)->bursts, 2);
	rf_expect_no_used(&f->tx);
	vl_lab_control(VL_LAB_POOL_FAULT_HOOK, &(struct vl_lab_arg){.pool = f->pool});
}

/* One chain, count 32: one head. With exactly one buffer free, a request for more would have
 * been refused (pool failure); there is none. */
static void scn_one_of_32(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct rf_good g = rf_post_good(f, &f->tx, 100, 0x01);
	struct drain d = drain_to(f, 1);

	assert_int_equal(deq(f, pkts, 32), 1);
	rf_assert_pkt_pattern(pkts[0], 100, 0x01);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 0);
	assert_int_equal(vl_pool_free_count(f->pool), 0);
	assert_alloc(f, 1, 1, 0, 0);
	vl_pkt_free(pkts[0]);
	undrain(&d);
	expect_used_seq(f, &g.head, 1);

	/* Without the drain: the pool lends exactly the packet's one buffer. */
	struct rf_good g2 = rf_post_good(f, &f->tx, 200, 0x02);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS - 1);
	assert_alloc(f, 2, 2, 0, 0);
	vl_pkt_free(pkts[0]);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	expect_used_seq(f, &g2.head, 1);
}

/* A full ring (256 chains): count 32 takes 32 heads, then count 512 the 224 left -- each
 * time with exactly that many buffers free and no pool failure. */
static void scn_full_ring(struct rf *f)
{
	struct vl_pkt *pkts[512];
	uint16_t ids[256];

	for (uint32_t i = 0; i < 256; i++)
		ids[i] = rf_post_good(f, &f->tx, 64, (uint8_t)i).head;

	struct drain d = drain_to(f, 32);

	assert_int_equal(deq(f, pkts, 32), 32);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 0);
	for (uint32_t i = 0; i < 32; i++)
		rf_assert_pkt_pattern(pkts[i], 64, (uint8_t)i);
	vl_pkt_free_bulk(pkts, 32);
	undrain(&d);
	assert_alloc(f, 1, 32, 0, 0);

	d = drain_to(f, 224);
	assert_int_equal(deq(f, pkts, 512), 224);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 0);
	for (uint32_t i = 0; i < 224; i++)
		rf_assert_pkt_pattern(pkts[i], 64, (uint8_t)(32 + i));
	vl_pkt_free_bulk(pkts, 224);
	undrain(&d);
	assert_alloc(f, 2, 256, 0, 0);
	assert_int_equal(st(f)->chains, 256);
	expect_used_seq(f, ids, 256);
}

/* A dropped chain needs no head: the one allocated for it is returned unused. */
static void scn_drop_unused(struct rf *f)
{
	struct vl_pkt *pkts[32];
	uint64_t buf = rf_alloc(f, 64);

	rf_fill(f, buf, 0, 64);
	struct rf_desc sd = { buf, f->hdr_len, 0 };
	uint16_t ids[2];

	ids[0] = rf_post_chain(&f->tx, &sd, 1);
	ids[1] = rf_post_good(f, &f->tx, 300, 0x03).head;
	assert_int_equal(deq(f, pkts, 32), 1);
	rf_assert_pkt_pattern(pkts[0], 300, 0x03);
	vl_pkt_free(pkts[0]);
	assert_alloc(f, 1, 2, 1, 0);
	assert_int_equal(rf_drops(&f->tx, VL_DROP_SHORT_CHAIN), 1);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
	expect_used_seq(f, ids, 2);
}

/* VL_ALLOC_BURST: `count` heads every burst (at most queue size), the unused freed and
 * counted -- even on an empty ring. A pool short of `count` gives what it has. Back to
 * AVAILABLE: an empty burst allocates nothing again. */
static void scn_burst_policy(struct rf *f)
{
	struct vl_pkt *pkts[512];
	uint16_t ids[4];

	vl_vq_set_alloc_policy(f->tx.q, VL_ALLOC_BURST);
	for (uint32_t i = 0; i < 3; i++)
		ids[i] = rf_post_good(f, &f->tx, 100, (uint8_t)(0x10 + i)).head;
	assert_int_equal(deq(f, pkts, 32), 3);
	assert_alloc(f, 1, 32, 29, 0);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS - 3);
	for (uint32_t i = 0; i < 3; i++)
		rf_assert_pkt_pattern(pkts[i], 100, (uint8_t)(0x10 + i));
	vl_pkt_free_bulk(pkts, 3);
	expect_used_seq(f, ids, 3);

	/* Empty ring, count 32 and then 512 (clamped to the queue's 256). */
	assert_int_equal(deq(f, pkts, 32), 0);
	assert_alloc(f, 2, 64, 61, 0);
	assert_int_equal(deq(f, pkts, 512), 0);
	assert_alloc(f, 3, 320, 317, 0);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);

	/* Ten buffers free, count 32: the request fails, the ten are taken instead. */
	ids[3] = rf_post_good(f, &f->tx, 100, 0x13).head;
	struct drain d = drain_to(f, 10);

	assert_int_equal(deq(f, pkts, 32), 1);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 1);
	assert_alloc(f, 4, 330, 326, 0);
	assert_int_equal(vl_pool_free_count(f->pool), 9);
	vl_pkt_free(pkts[0]);
	undrain(&d);
	expect_used_seq(f, &ids[3], 1);

	vl_vq_set_alloc_policy(f->tx.q, VL_ALLOC_AVAILABLE);
	assert_int_equal(deq(f, pkts, 32), 0);
	assert_alloc(f, 4, 330, 326, 0);
}

/* Fewer buffers than chains (AVAILABLE): the request for all fails, the pool's buffers are
 * taken, the burst stops at the first chain without one, which the next burst serves. */
static void scn_pool_short(struct rf *f)
{
	struct vl_pkt *pkts[32];
	uint16_t ids[5];

	for (uint32_t i = 0; i < 5; i++)
		ids[i] = rf_post_good(f, &f->tx, 150, (uint8_t)(0x20 + i)).head;
	struct drain d = drain_to(f, 3);

	assert_int_equal(deq(f, pkts, 32), 3);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 1);
	assert_alloc(f, 1, 3, 0, 1);
	for (uint32_t i = 0; i < 3; i++)
		rf_assert_pkt_pattern(pkts[i], 150, (uint8_t)(0x20 + i));
	vl_pkt_free_bulk(pkts, 3);
	undrain(&d);
	expect_used_seq(f, ids, 3);

	assert_int_equal(deq(f, pkts, 32), 2);
	rf_assert_pkt_pattern(pkts[0], 150, 0x23);
	rf_assert_pkt_pattern(pkts[1], 150, 0x24);
	vl_pkt_free_bulk(pkts, 2);
	assert_alloc(f, 2, 5, 0, 1);
	expect_used_seq(f, &ids[3], 2);
}

/* ---- injected failures ------------------------------------------------------------------ */

/* VL_LAB_POOL_FAIL_AFTER with count 0: every call refused. Nothing is consumed or taken, the
 * chains stay (no used entry, last_avail unchanged) and move once the pool supplies again. */
static void scn_fail_after_zero(struct rf *f)
{
	struct vl_pkt *pkts[32];
	uint16_t ids[2];
	const uint16_t start = vl_vq_last_avail(f->tx.q);

	ids[0] = rf_post_good(f, &f->tx, 400, 0x30).head;
	ids[1] = rf_post_good(f, &f->tx, 500, 0x31).head;
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = f->pool, .count = 0});
	for (uint32_t k = 1; k <= 2; k++) {
		assert_int_equal(deq(f, pkts, 32), 0);
		assert_alloc(f, k, 0, 0, k);
		assert_int_equal(vl_pool_alloc_failures(f->pool), k);
		assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
		assert_int_equal(st(f)->chains, 0);
		assert_int_equal(vl_vq_last_avail(f->tx.q), start);
		rf_expect_no_used(&f->tx);
	}

	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = f->pool, .count = VL_LAB_NEVER});
	assert_int_equal(deq(f, pkts, 32), 2);
	rf_assert_pkt_pattern(pkts[0], 400, 0x30);
	rf_assert_pkt_pattern(pkts[1], 500, 0x31);
	vl_pkt_free_bulk(pkts, 2);
	assert_alloc(f, 3, 2, 0, 2);
	expect_used_seq(f, ids, 2);
	assert_int_equal(st(f)->packets, 2);
}

/* A fault hook failing every second allocation call. Each burst with single-buffer packets
 * makes one call (the heads): bursts alternate between serving every chain and serving none;
 * an empty burst makes no call. A 9000-byte packet needs a second call (its segments), which
 * always lands on a failing turn here: the burst stops before it every time, the head is
 * returned unused, and the packet moves once the hook is gone. */
static void scn_fault_hook(struct rf *f)
{
	struct vl_pkt *pkts[32];
	struct hook h = { 0, 2 };
	uint16_t ids[5];

	vl_lab_control(VL_LAB_POOL_FAULT_HOOK,
		       &(struct vl_lab_arg){.pool = f->pool, .fail = hook_fail, .ctx = &h});
	ids[0] = rf_post_good(f, &f->tx, 100, 0x40).head;
	ids[1] = rf_post_good(f, &f->tx, 110, 0x41).head;
	assert_int_equal(deq(f, pkts, 32), 2); /* call 1: ok */
	vl_pkt_free_bulk(pkts, 2);
	expect_used_seq(f, ids, 2);

	ids[2] = rf_post_good(f, &f->tx, 120, 0x42).head;
	ids[3] = rf_post_good(f, &f->tx, 130, 0x43).head;
	assert_int_equal(deq(f, pkts, 32), 0); /* call 2: refused */
	rf_expect_no_used(&f->tx);
	assert_int_equal(deq(f, pkts, 32), 2); /* call 3: ok */
	rf_assert_pkt_pattern(pkts[0], 120, 0x42);
	rf_assert_pkt_pattern(pkts[1], 130, 0x43);
	vl_pkt_free_bulk(pkts, 2);
	expect_used_seq(f, &ids[2], 2);
	assert_int_equal(deq(f, pkts, 32), 0); /* empty: no call */
	assert_int_equal(h.calls, 3);
	assert_alloc(f, 3, 4, 0, 1);

	ids[4] = rf_post_good(f, &f->tx, 9000, 0x44).head;
	assert_int_equal(deq(f, pkts, 32), 0); /* call 4: heads refused */
	assert_int_equal(h.calls, 4);
	for (uint32_t k = 0; k < 3; k++) {
		assert_int_equal(deq(f, pkts, 32), 0); /* heads ok, segments refused */
		rf_expect_no_used(&f->tx);
	}
	assert_int_equal(h.calls, 10);
	assert_alloc(f, 7, 7, 3, 5);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);

	vl_lab_control(VL_LAB_POOL_FAULT_HOOK, &(struct vl_lab_arg){.pool = f->pool});
	assert_int_equal(deq(f, pkts, 32), 1);
	rf_assert_pkt_pattern(pkts[0], 9000, 0x44);
	assert_int_equal(pkts[0]->nb_segs, 5);
	vl_pkt_free(pkts[0]);
	expect_used_seq(f, &ids[4], 1);
	assert_int_equal(h.calls, 10);
	assert_int_equal(st(f)->packets, 5);
}

/* A 9000-byte packet needs five 2048-byte buffers. With exactly one buffer per chain free,
 * the chain before it is delivered, the burst stops before it (its head and the next one's
 * go back unused) and it waits; with the pool refilled it and the chain after it move. Then
 * exactly enough buffers for heads and segments: all delivered, the pool emptied. */
static void scn_multiseg(struct rf *f)
{
	struct vl_pkt *pkts[32];
	uint16_t ids[5];

	ids[0] = rf_post_good(f, &f->tx, 100, 0x50).head;
	ids[1] = rf_post_good(f, &f->tx, 9000, 0x51).head;
	ids[2] = rf_post_good(f, &f->tx, 100, 0x52).head;
	struct drain d = drain_to(f, 3);

	assert_int_equal(deq(f, pkts, 32), 1);
	rf_assert_pkt_pattern(pkts[0], 100, 0x50);
	assert_alloc(f, 1, 3, 2, 1);
	assert_int_equal(vl_pool_free_count(f->pool), 2);
	vl_pkt_free(pkts[0]);
	expect_used_seq(f, ids, 1);
	assert_int_equal(st(f)->chains, 1);

	/* Still short (three buffers for two heads and four more segments). */
	assert_int_equal(deq(f, pkts, 32), 0);
	assert_alloc(f, 2, 5, 4, 2);
	rf_expect_no_used(&f->tx);
	assert_int_equal(vl_pool_free_count(f->pool), 3);
	undrain(&d);

	assert_int_equal(deq(f, pkts, 32), 2);
	rf_assert_pkt_pattern(pkts[0], 9000, 0x51);
	assert_int_equal(pkts[0]->nb_segs, 5);
	rf_assert_pkt_pattern(pkts[1], 100, 0x52);
	vl_pkt_free_bulk(pkts, 2);
	assert_alloc(f, 3, 7, 4, 2);
	expect_used_seq(f, &ids[1], 2);

	/* Exactly enough: 2 heads + 4 segments. */
	ids[3] = rf_post_good(f, &f->tx, 9000, 0x53).head;
	ids[4] = rf_post_good(f, &f->tx, 100, 0x54).head;
	d = drain_to(f, 6);
	assert_int_equal(deq(f, pkts, 32), 2);
	assert_int_equal(vl_pool_free_count(f->pool), 0);
	rf_assert_pkt_pattern(pkts[0], 9000, 0x53);
	rf_assert_pkt_pattern(pkts[1], 100, 0x54);
	vl_pkt_free_bulk(pkts, 2);
	undrain(&d);
	assert_alloc(f, 4, 9, 4, 2);
	expect_used_seq(f, &ids[3], 2);
	assert_int_equal(st(f)->packets, 5);
	assert_int_equal(st(f)->chains, 5);
	assert_int_equal(st(f)->used_entries, 5);
	assert_int_equal(vl_pool_free_count(f->pool), RF_POOL_BUFS);
}

/* Heads for six chains and nothing else free: the 9000-byte packet (second) cannot get its
 * four segments, so the four heads not yet used go back to the pool and become them. The
 * packet is delivered; the burst stops at the third chain (no head left for it), which the
 * next burst serves with the rest. */
static void scn_multiseg_spare_heads(struct rf *f)
{
	struct vl_pkt *pkts[32];
	uint16_t ids[6];

	for (uint32_t i = 0; i < 6; i++)
		ids[i] = rf_post_good(f, &f->tx, i == 1 ? 9000 : 100, (uint8_t)(0x68 + i)).head;
	struct drain d = drain_to(f, 6);

	assert_int_equal(deq(f, pkts, 32), 2);
	rf_assert_pkt_pattern(pkts[0], 100, 0x68);
	rf_assert_pkt_pattern(pkts[1], 9000, 0x69);
	assert_int_equal(pkts[1]->nb_segs, 5);
	assert_int_equal(vl_pool_free_count(f->pool), 0);
	assert_alloc(f, 1, 6, 4, 1);
	vl_pkt_free_bulk(pkts, 2);
	undrain(&d);
	expect_used_seq(f, ids, 2);

	assert_int_equal(deq(f, pkts, 32), 4);
	for (uint32_t i = 0; i < 4; i++)
		rf_assert_pkt_pattern(pkts[i], 100, (uint8_t)(0x6A + i));
	vl_pkt_free_bulk(pkts, 4);
	assert_alloc(f, 2, 10, 4, 1);
	expect_used_seq(f, &ids[2], 4);
}

/* The multi-segment packet first: nothing is delivered (the chain after it waits behind it),
 * both heads go back unused. */
static void scn_multiseg_first(struct rf *f)
{
	struct vl_pkt *pkts[32];
	uint16_t ids[2];

	ids[0] = rf_post_good(f, &f->tx, 9000, 0x60).head;
	ids[1] = rf_post_good(f, &f->tx, 100, 0x61).head;
	struct drain d = drain_to(f, 2);

	assert_int_equal(deq(f, pkts, 32), 0);
	assert_alloc(f, 1, 2, 2, 1);
	assert_int_equal(vl_pool_free_count(f->pool), 2);
	assert_int_equal(st(f)->chains, 0);
	rf_expect_no_used(&f->tx);
	undrain(&d);
	assert_int_equal(deq(f, pkts, 32), 2);
	rf_assert_pkt_pattern(pkts[0], 9000, 0x60);
	rf_assert_pkt_pattern(pkts[1], 100, 0x61);
	vl_pkt_free_bulk(pkts, 2);
	expect_used_seq(f, ids, 2);
}

/* ---- enqueue ------------------------------------------------------------------------ */

/* Enqueue copies into guest buffers and never asks the pool for anything: a hook that would
 * refuse every call is never called, the free count does not move. */
static void scn_enqueue_no_alloc(struct rf *f)
{
	struct rf_q *s = &f->rx;
	struct rf_good g[3];
	struct vl_pkt *pkts[3];
	uint8_t stat[3];
	struct hook h = { 0, 1 };

	for (uint32_t i = 0; i < 3; i++) {
		g[i] = rf_post_good(f, s, 3000 + 100 * i, (uint8_t)(0x70 + i));
		pkts[i] = rf_make_pkt(f, g[i].len, g[i].seed);
	}
	uint32_t free_before = vl_pool_free_count(f->pool);

	vl_lab_control(VL_LAB_POOL_FAULT_HOOK,
		       &(struct vl_lab_arg){.pool = f->pool, .fail = hook_fail, .ctx = &h});
	assert_int_equal(vl_net_enqueue(s->q, pkts, 3, stat), 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(stat[i], VL_RX_DELIVERED);
		rf_assert_pattern_at(f, g[i].gpa + f->hdr_len, g[i].len, g[i].seed, 0);
		rf_expect_used(s, g[i].head, f->hdr_len + g[i].len);
	}
	rf_expect_no_used(s);
	assert_int_equal(h.calls, 0);
	assert_int_equal(vl_pool_free_count(f->pool), free_before);
	assert_int_equal(vl_pool_alloc_failures(f->pool), 0);
	const struct vl_vq_stats *rs = vl_vq_stats(s->q);

	assert_int_equal(rs->alloc_calls, 0);
	assert_int_equal(rs->alloc_bufs, 0);
	assert_int_equal(rs->alloc_unused, 0);
	assert_int_equal(rs->alloc_failures, 0);
	vl_lab_control(VL_LAB_POOL_FAULT_HOOK, &(struct vl_lab_arg){.pool = f->pool});
	vl_pkt_free_bulk(pkts, 3);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* Split over coarse and 4 KiB RAM regions, packed over coarse ones. */
#define CASES3(name)                                                                         \
	RF_CASE(name, "_split", VL_LAYOUT_SPLIT, RF_COARSE, 0),                              \
		RF_CASE(name, "_split_4k", VL_LAYOUT_SPLIT, RF_4K, 0),                       \
		RF_CASE(name, "_packed", VL_LAYOUT_PACKED, RF_COARSE, 0)

static const struct rf_case cases[] = {
	CASES3(empty),
	CASES3(one_of_32),
	CASES3(full_ring),
	CASES3(drop_unused),
	CASES3(burst_policy),
	CASES3(pool_short),
	CASES3(fail_after_zero),
	CASES3(fault_hook),
	CASES3(multiseg),
	CASES3(multiseg_spare_heads),
	CASES3(multiseg_first),
	CASES3(enqueue_no_alloc),
};

int main(void)
{
	return rf_run_cases("alloc", RF_LIST(cases), NULL, 0);
}

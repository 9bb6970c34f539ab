/* SPDX-License-Identifier: MIT */
/* Notifications, both directions, both layouts: whether the device asks the embedder to call
 * the guest after a burst (vl_vq_needs_call: split avail->flags NO_INTERRUPT or used_event
 * with VIRTIO_RING_F_EVENT_IDX; packed driver event suppression ENABLE / DISABLE / DESC), and
 * what the device writes for the guest's kicks (split used->flags NO_NOTIFY or avail_event;
 * packed device event suppression), with the calls_needed / calls_suppressed counters.
 *
 * Every expectation of the event-index cases is derived by hand in a comment from the spec's
 * formula, not from the core's code. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ring_fixture.h"

#define EVENT_IDX VL_FEATURE(VL_F_RING_EVENT_IDX)
#define W VL_PACKED_WRAP_BIT

/* ---- helpers ---------------------------------------------------------------------------- */

static void split_cfg(struct rf_cfg *cfg, uint64_t extra, uint16_t start)
{
	rf_cfg_init(cfg, RF_COARSE);
	cfg->features |= extra;
	cfg->start_idx = start;
}

static void packed_cfg(struct rf_cfg *cfg, uint64_t extra, uint32_t qsize, uint16_t start,
		       bool wrap)
{
	rf_cfg_init_packed(cfg, RF_COARSE, qsize);
	cfg->features |= extra;
	cfg->start_idx = start;
	cfg->start_wrap = wrap;
}

/* Post n well-formed chains of ndescs descriptors each (split: always 1), run one burst that
 * moves exactly them, and let the guest take every used buffer back. */
static void publish(struct rf *f, struct rf_q *s, uint32_t n, uint32_t ndescs)
{
	struct rf_good g[16];

	assert_true(n >= 1 && n <= 16);
	for (uint32_t i = 0; i < n; i++)
		g[i] = rf_post_good_n(f, s, 40 + i, (uint8_t)i,
				      s->layout == VL_LAYOUT_PACKED ? ndescs : 1);
	rf_burst_expect_returned(f, s, g, n);
}

/* A burst with nothing to do (TX: nothing posted; RX: a packet but no buffer). */
static void empty_burst(struct rf *f, struct rf_q *s)
{
	if (!s->rx) {
		struct vl_pkt *pkts[4];

		assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 4), 0);
		return;
	}
	struct vl_pkt *pkt = rf_make_pkt(f, 64, 1);

	assert_int_equal(vl_net_enqueue(s->q, &pkt, 1, NULL), 0);
	vl_pkt_free(pkt);
}

/* The call decision of the last burst and the counters so far. */
static void expect_calls(const struct rf_q *s, bool call, uint64_t needed, uint64_t suppressed)
{
	const struct vl_vq_stats *st = vl_vq_stats(s->q);

	if (vl_vq_needs_call(s->q) != call)
		fail_msg("needs_call is %d, expected %d", vl_vq_needs_call(s->q), call);
	assert_int_equal(st->calls_needed, needed);
	assert_int_equal(st->calls_suppressed, suppressed);
}

/* split: avail->ring[size] is used_event, used->ring[size] is avail_event (spec 2.7.10). */
static uint16_t *used_event(struct rf_q *s)
{
	return &s->vr.avail->ring[s->vr.size];
}

static uint16_t *avail_event(struct rf_q *s)
{
	return (uint16_t *)(void *)&s->vr.used->ring[s->vr.size];
}

/* packed: the driver's and the device's event suppression structures (guest view). */
static void set_driver_event(struct rf_q *s, uint16_t flags, uint16_t off_wrap)
{
	s->pr.driver_event->off_wrap = off_wrap;
	s->pr.driver_event->flags = flags;
}

/* ---- split without EVENT_IDX --------------------------------------------------------------- */

/* needs_call follows avail->flags NO_INTERRUPT after every burst that published something
 * (bad chains returned count as published); a burst that published nothing asks for no call
 * and moves neither counter, whatever the flag says. */
static void scn_split_no_interrupt(struct rf *f, struct rf_q *s)
{
	expect_calls(s, false, 0, 0);
	publish(f, s, 2, 1);
	expect_calls(s, true, 1, 0);
	empty_burst(f, s);
	expect_calls(s, false, 1, 0); /* the previous decision is not left standing */

	lab_vring_set_avail_flags(&s->vr, VL_AVAIL_F_NO_INTERRUPT);
	uint16_t used_before = s->vr.used->idx;

	publish(f, s, 3, 1);
	assert_int_equal(s->vr.used->idx, (uint16_t)(used_before + 3)); /* still published */
	expect_calls(s, false, 1, 1);
	empty_burst(f, s);
	expect_calls(s, false, 1, 1);

	lab_vring_set_avail_flags(&s->vr, 0);
	/* A burst that only returns a bad chain (length 0) published an entry: call. */
	uint64_t buf = rf_alloc(f, 64);
	struct rf_desc d = { buf, 4, s->rx ? VL_DESC_F_WRITE : 0 };
	uint16_t bad = rf_post_chain(s, &d, 1);

	rf_fill(f, buf, 0, 64);
	if (!s->rx) {
		struct vl_pkt *pkts[4];

		assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 4), 0);
	} else {
		empty_burst(f, s); /* the packet finds the bad buffer, then no room */
	}
	rf_expect_used(s, bad, 0);
	expect_calls(s, true, 2, 1);
	assert_int_equal(vl_vq_stats(s->q)->used_entries, 6);
}

/* Kicks without EVENT_IDX: used->flags NO_NOTIFY is written at once by
 * vl_vq_set_kicks(false), cleared at once by true, and kept current by every burst (also
 * an empty one). A fresh queue publishes "kick me" (flags 0) at creation. */
static void scn_split_no_notify(struct rf *f, struct rf_q *s)
{
	assert_int_equal(s->vr.used->flags, 0);
	vl_vq_set_kicks(s->q, false);
	assert_int_equal(s->vr.used->flags, VL_USED_F_NO_NOTIFY);
	publish(f, s, 2, 1);
	assert_int_equal(s->vr.used->flags, VL_USED_F_NO_NOTIFY);
	empty_burst(f, s);
	assert_int_equal(s->vr.used->flags, VL_USED_F_NO_NOTIFY);
	vl_vq_set_kicks(s->q, true);
	assert_int_equal(s->vr.used->flags, 0);
	publish(f, s, 1, 1);
	assert_int_equal(s->vr.used->flags, 0);
	/* Something scribbled over the flag: the next burst puts our wish back. */
	s->vr.used->flags = VL_USED_F_NO_NOTIFY;
	empty_burst(f, s);
	assert_int_equal(s->vr.used->flags, 0);

	/* Written at creation: a queue created over a ring whose flag says NO_NOTIFY. */
	struct vl_vq_config qc;
	int err = -1;

	s->vr.used->flags = VL_USED_F_NO_NOTIFY;
	rf_vq_config(f, s, &qc);
	qc.last_avail_idx = vl_vq_last_avail(s->q);
	struct vl_vq *q2 = vl_vq_create(f->mem, &qc, &err);

	assert_non_null(q2);
	assert_int_equal(s->vr.used->flags, 0);
	vl_vq_destroy(q2);
}

/* ---- split with EVENT_IDX ------------------------------------------------------------------ */

/* One burst of n chains from used index `start` with used_event = ev. The spec's rule
 * (2.7.10): the device notifies iff (u16)(new - used_event - 1) < (u16)(new - old). */
struct ev_case {
	uint16_t start, n, ev;
	bool call;
};

static const struct ev_case split_ev_cases[] = {
	/* old = 100, new = 103, new - old = 3 */
	{ 100, 3, 100, true },    /* ev = old:     (103 - 100 - 1) = 2 < 3 */
	{ 100, 3, 101, true },    /*               (103 - 101 - 1) = 1 < 3 */
	{ 100, 3, 102, true },    /* ev = new - 1: (103 - 102 - 1) = 0 < 3 */
	{ 100, 3, 103, false },   /* ev = new:     (103 - 103 - 1) = 65535, not < 3 */
	{ 100, 3, 99, false },    /* ev = old - 1: (103 - 99 - 1) = 3, not < 3 */
	{ 100, 3, 60000, false }, /* far behind:   (103 - 60000 - 1) mod 2^16 = 5638 */
	{ 100, 3, 200, false },   /* ahead:        (103 - 200 - 1) mod 2^16 = 65438 */
	{ 100, 1, 100, true },    /* one entry, ev = old: (101 - 100 - 1) = 0 < 1 */
	/* Across the 16-bit wrap: old = 65533, new = 65538 mod 2^16 = 2, new - old = 5 */
	{ 65533, 5, 65533, true },  /* ev = old: (2 - 65533 - 1) mod 2^16 = 4 < 5 */
	{ 65533, 5, 65535, true },  /*           (2 - 65535 - 1) mod 2^16 = 2 < 5 */
	{ 65533, 5, 0, true },      /*           (2 - 0 - 1) = 1 < 5 */
	{ 65533, 5, 1, true },      /* ev = new - 1: (2 - 1 - 1) = 0 < 5 */
	{ 65533, 5, 2, false },     /* ev = new: (2 - 2 - 1) mod 2^16 = 65535 */
	{ 65533, 5, 65532, false }, /* ev = old - 1: (2 - 65532 - 1) mod 2^16 = 5, not < 5 */
	{ 65533, 5, 3, false },     /*           (2 - 3 - 1) mod 2^16 = 65534 */
	{ 65533, 5, 32768, false }, /* far:      (2 - 32768 - 1) mod 2^16 = 32769 */
};

static void run_split_ev_case(const struct ev_case *c, bool rx)
{
	struct rf_cfg cfg;
	struct rf f;

	split_cfg(&cfg, EVENT_IDX, c->start);
	rf_setup(&f, &cfg);
	struct rf_q *s = rf_side(&f, rx);

	*used_event(s) = c->ev;
	/* With EVENT_IDX the device ignores NO_INTERRUPT (spec 2.7.10): set it to show it. */
	lab_vring_set_avail_flags(&s->vr, VL_AVAIL_F_NO_INTERRUPT);
	publish(&f, s, c->n, 1);
	assert_int_equal(s->vr.used->idx, (uint16_t)(c->start + c->n));
	if (vl_vq_needs_call(s->q) != c->call)
		fail_msg("%s: old %u, new %u, used_event %u: needs_call %d, expected %d",
			 rx ? "rx" : "tx", c->start, (uint16_t)(c->start + c->n), c->ev,
			 vl_vq_needs_call(s->q), c->call);
	expect_calls(s, c->call, c->call ? 1 : 0, c->call ? 0 : 1);
	rf_teardown(&f);
}

static void test_split_used_event_tx(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(split_ev_cases) / sizeof(split_ev_cases[0]); i++)
		run_split_ev_case(&split_ev_cases[i], false);
}

static void test_split_used_event_rx(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(split_ev_cases) / sizeof(split_ev_cases[0]); i++)
		run_split_ev_case(&split_ev_cases[i], true);
}

/* used_event set once, ahead: bursts that do not reach it stay quiet, the one that passes it
 * calls, later ones are quiet again (the guest has not moved used_event). Start 65530,
 * used_event = 65535:
 *   burst 1: old 65530, new 65532: (65532 - 65535 - 1) mod 2^16 = 65532, not < 2
 *   burst 2: old 65532, new 65534: (65534 - 65535 - 1) mod 2^16 = 65534, not < 2
 *   burst 3: old 65534, new 0:     (0 - 65535 - 1) mod 2^16 = 0 < 2          -> call
 *   burst 4: old 0, new 2:         (2 - 65535 - 1) mod 2^16 = 2, not < 2 */
static void scn_split_used_event_sequence(struct rf *f, struct rf_q *s)
{
	static const bool want[4] = { false, false, true, false };
	uint64_t needed = 0, suppressed = 0;

	*used_event(s) = 65535;
	for (int b = 0; b < 4; b++) {
		publish(f, s, 2, 1);
		needed += want[b];
		suppressed += !want[b];
		expect_calls(s, want[b], needed, suppressed);
	}
	assert_int_equal(s->vr.used->idx, 2);
}

/* avail_event (spec 2.7.10: "kick me when you pass this"): written at creation and after
 * every burst (also an empty one) as the next entry the device will look at, while kicks are
 * wanted; with kicks off it is left as it is (stale), so the guest's kicks stop; turning
 * kicks back on writes it at once. */
static void scn_split_avail_event(struct rf *f, struct rf_q *s)
{
	assert_int_equal(*avail_event(s), 40000); /* at creation (the ring was zeroed) */
	publish(f, s, 3, 1);
	assert_int_equal(vl_vq_last_avail(s->q), 40003);
	assert_int_equal(*avail_event(s), 40003);
	*avail_event(s) = 0xBEEF;
	empty_burst(f, s);
	assert_int_equal(*avail_event(s), 40003);

	vl_vq_set_kicks(s->q, false);
	assert_int_equal(*avail_event(s), 40003); /* not rewritten */
	*avail_event(s) = 0x1234;
	publish(f, s, 2, 1);
	assert_int_equal(vl_vq_last_avail(s->q), 40005);
	assert_int_equal(*avail_event(s), 0x1234); /* stale */
	empty_burst(f, s);
	assert_int_equal(*avail_event(s), 0x1234);
	vl_vq_set_kicks(s->q, true);
	assert_int_equal(*avail_event(s), 40005);
	publish(f, s, 1, 1);
	assert_int_equal(*avail_event(s), 40006);
}

/* avail_event across the 16-bit wrap: 65534 + 3 = 1. */
static void scn_split_avail_event_wrap(struct rf *f, struct rf_q *s)
{
	assert_int_equal(*avail_event(s), 65534);
	publish(f, s, 3, 1);
	assert_int_equal(*avail_event(s), 1);
	assert_int_equal(vl_vq_last_avail(s->q), 1);
}

/* ---- packed: driver event suppression ------------------------------------------------------ */

/* ENABLE: a call iff the burst published something; DISABLE: never (the buffers are still
 * published); DESC without VIRTIO_RING_F_EVENT_IDX negotiated is not a valid request and
 * is treated as ENABLE (a spurious call is harmless, a missing one hangs the guest), wherever
 * its offset points. */
static void scn_packed_enable_disable(struct rf *f, struct rf_q *s)
{
	expect_calls(s, false, 0, 0);
	set_driver_event(s, VL_RING_EVENT_ENABLE, 0);
	publish(f, s, 2, 2);
	expect_calls(s, true, 1, 0);
	empty_burst(f, s);
	expect_calls(s, false, 1, 0);

	set_driver_event(s, VL_RING_EVENT_DISABLE, 0);
	publish(f, s, 3, 1);
	expect_calls(s, false, 1, 1);
	empty_burst(f, s);
	expect_calls(s, false, 1, 1);

	/* DESC naming a position this burst does not reach, and one behind it. */
	set_driver_event(s, VL_RING_EVENT_DESC, (uint16_t)(200 | W));
	publish(f, s, 1, 1);
	expect_calls(s, true, 2, 1);
	set_driver_event(s, VL_RING_EVENT_DESC, 0);
	publish(f, s, 1, 3);
	expect_calls(s, true, 3, 1);

	set_driver_event(s, VL_RING_EVENT_ENABLE, 0);
	publish(f, s, 1, 1);
	expect_calls(s, true, 4, 1);
	assert_int_equal(vl_vq_stats(s->q)->used_entries, 8);
}

/* DESC with EVENT_IDX: the guest asks to be called when the device makes the descriptor at
 * (offset, wrap) used (spec 2.8.10). A burst moves the device's used position from `old` to
 * `new` (chains' skipped descriptors included); the descriptor is passed iff it lies in
 * [old, new) in ring order with the wrap counter the device had at that position. An offset
 * >= queue size names no descriptor: treated as ENABLE. */
struct pk_case {
	uint32_t qsize;
	uint16_t start;
	bool wrap;
	uint8_t shape[4]; /* descriptors per chain, 0 ends */
	uint16_t off_wrap;
	bool call;
};

static const struct pk_case pk_cases[] = {
	/* 256 entries, from 10 (wrap 1), chains of 2, 1, 3: positions 10..15 written,
	 * used descriptors at 10, 12, 13; new = 16 (wrap 1). */
	{ 256, 10, true, { 2, 1, 3 }, 10 | W, true },   /* the first used descriptor */
	{ 256, 10, true, { 2, 1, 3 }, 11 | W, true },   /* inside the first chain (skipped) */
	{ 256, 10, true, { 2, 1, 3 }, 12 | W, true },   /* the second used descriptor */
	{ 256, 10, true, { 2, 1, 3 }, 15 | W, true },   /* the last position of the range */
	{ 256, 10, true, { 2, 1, 3 }, 16 | W, false },  /* right after: not yet */
	{ 256, 10, true, { 2, 1, 3 }, 9 | W, false },   /* right before: already passed */
	{ 256, 10, true, { 2, 1, 3 }, 10, false },      /* first position, wrong wrap */
	{ 256, 10, true, { 2, 1, 3 }, 15, false },      /* last position, wrong wrap */
	{ 256, 10, true, { 2, 1, 3 }, 256 | W, true },  /* offset == size: enable */
	{ 256, 10, true, { 2, 1, 3 }, 0x7FFF, true },   /* offset way out, wrap 0: enable */
	/* 256 entries from 253 (wrap 1), chains of 2, 2, 2: 253, 254, 255 with wrap 1, then
	 * the device's wrap counter flips: 0, 1, 2 with wrap 0; new = 3 (wrap 0). */
	{ 256, 253, true, { 2, 2, 2 }, 253 | W, true },
	{ 256, 253, true, { 2, 2, 2 }, 255 | W, true },
	{ 256, 253, true, { 2, 2, 2 }, 0, true },       /* first position after the flip */
	{ 256, 253, true, { 2, 2, 2 }, 2, true },
	{ 256, 253, true, { 2, 2, 2 }, 3, false },      /* right after */
	{ 256, 253, true, { 2, 2, 2 }, 252 | W, false },/* right before */
	{ 256, 253, true, { 2, 2, 2 }, 0 | W, false },  /* 0 with the old wrap: not this lap */
	{ 256, 253, true, { 2, 2, 2 }, 253, false },    /* 253 with the new wrap: next lap */
	/* 7 entries from 5 (wrap 0), chains of 3, 2: 5, 6 (wrap 0), 0, 1, 2 (wrap 1); new = 3
	 * (wrap 1). */
	{ 7, 5, false, { 3, 2 }, 5, true },
	{ 7, 5, false, { 3, 2 }, 0 | W, true },         /* skipped, after the flip */
	{ 7, 5, false, { 3, 2 }, 1 | W, true },
	{ 7, 5, false, { 3, 2 }, 3 | W, false },
	{ 7, 5, false, { 3, 2 }, 5 | W, false },
	{ 7, 5, false, { 3, 2 }, 4, false },
	{ 7, 5, false, { 3, 2 }, 7, true },             /* offset == size */
	/* The whole ring in one burst: 7 entries from 3 (wrap 1), chains of 3, 2, 2: 3..6
	 * (wrap 1), 0..2 (wrap 0); new = 3 (wrap 0). */
	{ 7, 3, true, { 3, 2, 2 }, 3 | W, true },
	{ 7, 3, true, { 3, 2, 2 }, 2, true },
	{ 7, 3, true, { 3, 2, 2 }, 3, false },          /* right after: the next lap */
	{ 7, 3, true, { 3, 2, 2 }, 2 | W, false },      /* the previous lap */
};

static void run_pk_case(const struct pk_case *c, bool rx)
{
	struct rf_cfg cfg;
	struct rf f;
	struct rf_good g[4];
	uint32_t n = 0;

	packed_cfg(&cfg, EVENT_IDX, c->qsize, c->start, c->wrap);
	rf_setup(&f, &cfg);
	struct rf_q *s = rf_side(&f, rx);

	set_driver_event(s, VL_RING_EVENT_DESC, c->off_wrap);
	for (; n < 4 && c->shape[n]; n++)
		g[n] = rf_post_good_n(&f, s, 30 + n, (uint8_t)n, c->shape[n]);
	rf_burst_expect_goods(&f, s, g, n);
	if (vl_vq_needs_call(s->q) != c->call)
		fail_msg("%s: size %u, from %u wrap %d, event 0x%04x: needs_call %d, expected %d",
			 rx ? "rx" : "tx", c->qsize, c->start, c->wrap, c->off_wrap,
			 vl_vq_needs_call(s->q), c->call);
	expect_calls(s, c->call, c->call ? 1 : 0, c->call ? 0 : 1);
	for (uint32_t i = 0; i < n; i++)
		rf_expect_used(s, g[i].head, rf_good_used_len(&f, s, &g[i]));
	rf_expect_no_used(s);
	rf_teardown(&f);
}

static void test_packed_desc_event_tx(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pk_cases) / sizeof(pk_cases[0]); i++)
		run_pk_case(&pk_cases[i], false);
}

static void test_packed_desc_event_rx(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pk_cases) / sizeof(pk_cases[0]); i++)
		run_pk_case(&pk_cases[i], true);
}

/* A DESC event set once: the bursts before the one that writes (offset, wrap) are quiet, that
 * one calls, the ones after are quiet. 7 entries from 0 (wrap 1), event at 2 with wrap 0
 * (the second lap); bursts of one 2-descriptor chain: [0,2) w1, [2,4) w1, [4,6) w1,
 * [6,1) crossing, [1,3) w0 -> contains 2 w0: call, [3,5) w0. */
static void scn_packed_desc_sequence(struct rf *f, struct rf_q *s)
{
	static const bool want[6] = { false, false, false, false, true, false };
	uint64_t needed = 0, suppressed = 0;

	set_driver_event(s, VL_RING_EVENT_DESC, 2);
	for (int b = 0; b < 6; b++) {
		publish(f, s, 1, 2);
		needed += want[b];
		suppressed += !want[b];
		expect_calls(s, want[b], needed, suppressed);
	}
	assert_int_equal(vl_vq_last_used(s->q), 5);
}

/* ---- packed: device event suppression (our kick wish) -------------------------------------- */

/* A queue created over this ring now: returns it (the caller destroys it). */
static struct vl_vq *recreate(struct rf *f, struct rf_q *s)
{
	struct vl_vq_config qc;
	int err = -1;

	rf_vq_config(f, s, &qc);
	struct vl_vq *q = vl_vq_create(f->mem, &qc, &err);

	assert_non_null(q);
	assert_int_equal(err, VL_OK);
	return q;
}

/* Without EVENT_IDX: ENABLE while kicks are wanted, DISABLE while not, written at once by
 * vl_vq_set_kicks and refreshed by every burst; written at queue creation. */
static void scn_packed_device_area_plain(struct rf *f, struct rf_q *s)
{
	struct vl_packed_event *dev = s->pr.device_event;

	dev->flags = VL_RING_EVENT_DISABLE;
	struct vl_vq *q = recreate(f, s);

	assert_int_equal(dev->flags, VL_RING_EVENT_ENABLE);
	vl_vq_destroy(q);

	vl_vq_set_kicks(s->q, false);
	assert_int_equal(dev->flags, VL_RING_EVENT_DISABLE);
	publish(f, s, 2, 2);
	assert_int_equal(dev->flags, VL_RING_EVENT_DISABLE);
	empty_burst(f, s);
	assert_int_equal(dev->flags, VL_RING_EVENT_DISABLE);
	vl_vq_set_kicks(s->q, true);
	assert_int_equal(dev->flags, VL_RING_EVENT_ENABLE);
	publish(f, s, 1, 1);
	assert_int_equal(dev->flags, VL_RING_EVENT_ENABLE);
	dev->flags = VL_RING_EVENT_DISABLE; /* scribbled over: the next burst restores it */
	empty_burst(f, s);
	assert_int_equal(dev->flags, VL_RING_EVENT_ENABLE);
}

/* With EVENT_IDX: DESC naming the next descriptor the device will look at (position and the
 * driver wrap counter it expects there), written at creation, after every burst, across the
 * wrap flip; DISABLE while kicks are off; DESC again at once when they come back. */
static void scn_packed_device_area_event(struct rf *f, struct rf_q *s)
{
	struct vl_packed_event *dev = s->pr.device_event;

	/* At creation (from 100, wrap 0): the fixture's queue wrote it over the zeroed area;
	 * and a queue created over a poisoned area writes it too. */
	assert_int_equal(dev->flags, VL_RING_EVENT_DESC);
	assert_int_equal(dev->off_wrap, 100);
	dev->flags = VL_RING_EVENT_DISABLE;
	dev->off_wrap = 0xFFFF;
	struct vl_vq *q = recreate(f, s);

	assert_int_equal(dev->flags, VL_RING_EVENT_DESC);
	assert_int_equal(dev->off_wrap, 100);
	vl_vq_destroy(q);

	publish(f, s, 2, 3); /* 100..105 */
	assert_int_equal(dev->flags, VL_RING_EVENT_DESC);
	assert_int_equal(dev->off_wrap, 106);
	assert_int_equal(dev->off_wrap, vl_vq_last_avail(s->q));
	dev->off_wrap = 7;
	empty_burst(f, s);
	assert_int_equal(dev->off_wrap, 106);

	vl_vq_set_kicks(s->q, false);
	assert_int_equal(dev->flags, VL_RING_EVENT_DISABLE);
	/* 106 .. 255 is 150 descriptors: cross the end of the ring in bursts of 16 x 3. */
	for (int i = 0; i < 4; i++)
		publish(f, s, 16, 3);
	assert_int_equal(dev->flags, VL_RING_EVENT_DISABLE);
	/* 106 + 192 = 298 = 256 + 42: position 42, the driver's wrap counter now 1. */
	assert_int_equal(vl_vq_last_avail(s->q), 42 | W);
	vl_vq_set_kicks(s->q, true);
	assert_int_equal(dev->flags, VL_RING_EVENT_DESC);
	assert_int_equal(dev->off_wrap, 42 | W);
	publish(f, s, 1, 2);
	assert_int_equal(dev->off_wrap, 44 | W);
}

/* ---- counters ---------------------------------------------------------------------------- */

/* calls_needed + calls_suppressed == bursts that published; empty bursts count in neither
 * and ask for no call; bursts counts every call. Split and packed, with suppression toggled
 * in between. */
static void scn_call_counters(struct rf *f, struct rf_q *s)
{
	const bool packed = s->layout == VL_LAYOUT_PACKED;
	/* 1: the guest wants calls, 0: it suppresses them, -1: an empty burst. */
	static const int plan[] = { 1, 1, -1, 0, 0, -1, -1, 1, 0, 1 };
	uint64_t needed = 0, suppressed = 0, bursts = 0, empty = 0;

	for (size_t i = 0; i < sizeof(plan) / sizeof(plan[0]); i++) {
		if (plan[i] >= 0) {
			if (packed)
				set_driver_event(s, plan[i] ? VL_RING_EVENT_ENABLE
							    : VL_RING_EVENT_DISABLE, 0);
			else
				lab_vring_set_avail_flags(&s->vr, plan[i] ? 0
									 : VL_AVAIL_F_NO_INTERRUPT);
			publish(f, s, 1 + (uint32_t)i % 3, 2);
			needed += plan[i] == 1;
			suppressed += plan[i] == 0;
		} else {
			empty_burst(f, s);
			empty++;
		}
		bursts++;
		expect_calls(s, plan[i] == 1, needed, suppressed);
		assert_int_equal(vl_vq_stats(s->q)->bursts, bursts);
		assert_int_equal(vl_vq_stats(s->q)->empty_bursts, empty);
	}
	assert_int_equal(needed, 4);
	assert_int_equal(suppressed, 3);
}


/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* Both sides of scn_SCN over coarse RAM on a split ring with features added from position
 * start, or on a packed one of qs entries from position start with wrap counter wrap. */
#define SPLIT1(scn, sfx, feat, start, RX)                                                    \
	{ .name = #scn sfx, .side_fn = scn_##scn, .layout = VL_LAYOUT_SPLIT,                 \
	  .granularity = RF_COARSE, .features = feat, .start_idx = start, .rx = RX }
#define SPLIT2(scn, feat, start)                                                             \
	SPLIT1(scn, "_tx", feat, start, false), SPLIT1(scn, "_rx", feat, start, true)
#define PACKED1(scn, sfx, feat, qs, start, wrap, RX)                                         \
	{ .name = #scn sfx, .side_fn = scn_##scn, .layout = VL_LAYOUT_PACKED,                \
	  .granularity = RF_COARSE, .features = feat, .qsize = qs, .start_idx = start,       \
	  .wrap0 = !(wrap), .rx = RX }
#define PACKED2(scn, feat, qs, start, wrap)                                                  \
	PACKED1(scn, "_tx", feat, qs, start, wrap, false),                                   \
		PACKED1(scn, "_rx", feat, qs, start, wrap, true)

static const struct rf_case cases[] = {
	SPLIT2(split_no_interrupt, 0, 0),
	SPLIT2(split_no_notify, 0, 0),
	SPLIT2(split_used_event_sequence, EVENT_IDX, 65530),
	SPLIT2(split_avail_event, EVENT_IDX, 40000),
	SPLIT2(split_avail_event_wrap, EVENT_IDX, 65534),
	PACKED2(packed_enable_disable, 0, 256, 0, true),
	PACKED2(packed_desc_sequence, EVENT_IDX, 7, 0, true),
	PACKED2(packed_device_area_plain, 0, 256, 0, true),
	PACKED2(packed_device_area_event, EVENT_IDX, 256, 100, false),
	SPLIT1(call_counters, "_split_tx", 0, 0, false),
	SPLIT1(call_counters, "_split_rx", 0, 0, true),
	PACKED1(call_counters, "_packed_tx", 0, 7, 0, true, false),
	/* ENABLE / DISABLE work with event idx too. */
	PACKED1(call_counters, "_packed_rx", EVENT_IDX, 7, 0, true, true),
};

int main(void)
{
	/* Tables of their own: one fixture per row, each on both sides. */
	const struct CMUnitTest more[] = {
		cmocka_unit_test(test_split_used_event_tx),
		cmocka_unit_test(test_split_used_event_rx),
		cmocka_unit_test(test_packed_desc_event_tx),
		cmocka_unit_test(test_packed_desc_event_rx),
	};

	return rf_run_cases("notify", RF_LIST(cases), RF_LIST(more));
}

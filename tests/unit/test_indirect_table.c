/* SPDX-License-Identifier: MIT */
/* Indirect-table cases that read the same on both layouts (spec 2.7.5.3.1 and 2.8.8: a
 * table holds whole 16-byte entries, at most queue-size of them, none of them INDIRECT, and
 * only when VIRTIO_F_INDIRECT_DESC was negotiated): one scenario body each, run on split and
 * packed rings, TX (vl_net_dequeue) and RX (vl_net_enqueue), over coarse and 4 KiB guest RAM
 * regions. The table is written in the queue's own format
 * (rf_write_qtable). Layout-specific table cases stay in test_split_ring.c and
 * test_packed_ring.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ring_fixture.h"

/* Table lengths 0, 17 (not a multiple of 16) and queue size + 1 entries (the table is there
 * and well formed: only its length is illegal). Each chain is dropped for indirect_len and
 * returned with length 0; the good chain behind them moves. */
static void scn_indirect_len(struct rf *f, struct rf_q *s)
{
	const uint32_t n = f->cfg.qsize + 1;
	uint64_t t = rf_valid_table(f, s);
	uint64_t big = rf_alloc(f, 16ull * n);
	uint64_t buf = rf_alloc(f, 8ull * n);
	struct rf_desc *e = calloc(n, sizeof(*e));

	assert_non_null(e);
	rf_fill(f, buf, 0, 8ull * n);
	for (uint32_t i = 0; i < n; i++)
		e[i] = (struct rf_desc){ buf + 8 * i, 8, rf_dirf(s) };
	rf_write_qtable(f, s, big, e, n);
	free(e);

	const uint16_t bad[3] = {
		rf_post_indirect(s, t, 0),
		rf_post_indirect(s, t, 17),
		rf_post_indirect(s, big, 16 * n),
	};

	rf_expect_bad_then_good(f, s, bad, 3, VL_DROP_INDIRECT_LEN);
}

/* The largest legal table: exactly queue-size entries (the walk takes all, not one less).
 * TX: a header entry, then 255 four-byte slices; RX: 256 eight-byte slices. */
static void scn_indirect_full_table(struct rf *f, struct rf_q *s)
{
	const uint32_t n = f->cfg.qsize;
	struct rf_desc *e = calloc(n, sizeof(*e));
	uint64_t t = rf_alloc(f, 16ull * n);

	assert_non_null(e);
	struct rf_good g = rf_good_slices(f, s, e, n, 0x33);

	rf_write_qtable(f, s, t, e, n);
	free(e);
	g.head = rf_post_indirect(s, t, 16 * n);
	rf_burst_expect_good(f, s, &g);
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* An entry of a table is itself INDIRECT (naming a valid table). */
static void scn_indirect_nested(struct rf *f, struct rf_q *s)
{
	uint64_t inner = rf_valid_table(f, s);
	uint64_t buf = rf_alloc(f, 64);
	uint64_t t = rf_alloc(f, 32);
	struct rf_desc e[2] = {
		{ buf, 64, rf_dirf(s) },
		{ inner, 32, VL_DESC_F_INDIRECT },
	};

	rf_write_qtable(f, s, t, e, 2);
	const uint16_t bad[1] = { rf_post_indirect(s, t, 32) };

	rf_expect_bad_then_good(f, s, bad, 1, VL_DROP_NESTED_INDIRECT);
}

/* A table that straddles two RAM regions (different host mappings), the boundary inside
 * entry 1: the core copies the table out and the packet moves intact. */
static void scn_indirect_straddle(struct rf *f, struct rf_q *s)
{
	uint64_t t = rf_straddle(f, 24);
	const uint32_t h = f->hdr_len;
	struct rf_good g = rf_good_buf(f, s, 350, 0x5E);
	struct rf_desc e[4] = {
		{ g.gpa, h, rf_dirf(s) },
		{ g.gpa + h, 100, rf_dirf(s) },
		{ g.gpa + h + 100, 200, rf_dirf(s) },
		{ g.gpa + h + 300, 50, rf_dirf(s) },
	};

	rf_write_qtable(f, s, t, e, 4);
	g.head = rf_post_indirect(s, t, 64);
	rf_expect_only_good(f, s, &g);
}

/* A well-formed table while VIRTIO_RING_F_INDIRECT_DESC is not negotiated (the runs take it
 * off). */
static void scn_indirect_not_negotiated(struct rf *f, struct rf_q *s)
{
	assert_false(f->cfg.features & VL_FEATURE(VL_F_RING_INDIRECT_DESC));
	const uint16_t bad[1] = { rf_post_indirect(s, rf_valid_table(f, s), 32) };

	rf_expect_bad_then_good(f, s, bad, 1, VL_DROP_INDIRECT_NOT_NEGOTIATED);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* Eight runs per scenario: {split, packed} x {TX, RX} x {coarse, 4 KiB}, with the feature
 * bits off taken from the defaults. */
#define CASE1(scn, lay, side, gran, L, RX, G, off)                                           \
	{ .name = #scn "_" #lay "_" #side "_" #gran, .side_fn = scn_##scn, .layout = L,      \
	  .granularity = G, .rx = RX, .features_off = off }
#define CASES8(scn, off)                                                                     \
	CASE1(scn, split, tx, coarse, VL_LAYOUT_SPLIT, false, RF_COARSE, off),               \
		CASE1(scn, split, tx, 4k, VL_LAYOUT_SPLIT, false, RF_4K, off),               \
		CASE1(scn, split, rx, coarse, VL_LAYOUT_SPLIT, true, RF_COARSE, off),        \
		CASE1(scn, split, rx, 4k, VL_LAYOUT_SPLIT, true, RF_4K, off),                \
		CASE1(scn, packed, tx, coarse, VL_LAYOUT_PACKED, false, RF_COARSE, off),     \
		CASE1(scn, packed, tx, 4k, VL_LAYOUT_PACKED, false, RF_4K, off),             \
		CASE1(scn, packed, rx, coarse, VL_LAYOUT_PACKED, true, RF_COARSE, off),      \
		CASE1(scn, packed, rx, 4k, VL_LAYOUT_PACKED, true, RF_4K, off)

static const struct rf_case cases[] = {
	CASES8(indirect_len, 0),
	CASES8(indirect_full_table, 0),
	CASES8(indirect_nested, 0),
	CASES8(indirect_straddle, 0),
	CASES8(indirect_not_negotiated, VL_FEATURE(VL_F_RING_INDIRECT_DESC)),
};

int main(void)
{
	return rf_run_cases("indirect_table", RF_LIST(cases), NULL, 0);
}

/* SPDX-License-Identifier: MIT */
/* Indirect-table limits that read the same on both layouts (spec 2.7.5.3.1 and 2.8.8: a
 * table holds whole 16-byte entries, at most queue-size of them): one scenario body each,
 * run on split and packed rings, TX (vl_net_dequeue) and RX (vl_net_enqueue), over coarse
 * and 4 KiB guest RAM regions. The table is written in the queue's own format
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

typedef void (*scn_fn)(struct rf *f, struct rf_q *s);

static void run(scn_fn fn, enum vl_layout layout, uint64_t gran, bool rx)
{
	struct rf_cfg cfg;
	struct rf f;

	if (layout == VL_LAYOUT_PACKED)
		rf_cfg_init_packed(&cfg, gran, 256);
	else
		rf_cfg_init(&cfg, gran);
	rf_setup(&f, &cfg);
	fn(&f, rf_side(&f, rx));
	rf_teardown(&f);
}

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

/* Eight runs per scenario: {split, packed} x {TX, RX} x {coarse, 4 KiB}. */
#define WRAP_ONE(name, lay, side, gran, L, RX, G)                                            \
	static void test_##name##_##lay##_##side##_##gran(void **state)                      \
	{                                                                                    \
		(void)state;                                                                 \
		run(scn_##name, L, G, RX);                                                   \
	}
#define WRAP_ALL(name)                                                                       \
	WRAP_ONE(name, split, tx, coarse, VL_LAYOUT_SPLIT, false, RF_COARSE)                 \
	WRAP_ONE(name, split, tx, 4k, VL_LAYOUT_SPLIT, false, RF_4K)                         \
	WRAP_ONE(name, split, rx, coarse, VL_LAYOUT_SPLIT, true, RF_COARSE)                  \
	WRAP_ONE(name, split, rx, 4k, VL_LAYOUT_SPLIT, true, RF_4K)                          \
	WRAP_ONE(name, packed, tx, coarse, VL_LAYOUT_PACKED, false, RF_COARSE)               \
	WRAP_ONE(name, packed, tx, 4k, VL_LAYOUT_PACKED, false, RF_4K)                       \
	WRAP_ONE(name, packed, rx, coarse, VL_LAYOUT_PACKED, true, RF_COARSE)                \
	WRAP_ONE(name, packed, rx, 4k, VL_LAYOUT_PACKED, true, RF_4K)
#define TESTS_ALL(name)                                                                      \
	cmocka_unit_test(test_##name##_split_tx_coarse),                                     \
		cmocka_unit_test(test_##name##_split_tx_4k),                                 \
		cmocka_unit_test(test_##name##_split_rx_coarse),                             \
		cmocka_unit_test(test_##name##_split_rx_4k),                                 \
		cmocka_unit_test(test_##name##_packed_tx_coarse),                            \
		cmocka_unit_test(test_##name##_packed_tx_4k),                                \
		cmocka_unit_test(test_##name##_packed_rx_coarse),                            \
		cmocka_unit_test(test_##name##_packed_rx_4k)

WRAP_ALL(indirect_len)
WRAP_ALL(indirect_full_table)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TESTS_ALL(indirect_len),
		TESTS_ALL(indirect_full_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Line wait (vl_vq_set_tx_line_wait): a packed guest-to-host burst whose window ends inside a
 * 64-byte line of descriptors (four of 16 bytes) leaves the chains that start in that line for
 * the next burst, unless those are all it found (so the next burst, finding only them, takes
 * them). Pinned by what each burst returns (packets byte for byte, in order), the used
 * descriptors the guest sees, and the tx_line_waits counter. The fixture's packed ring is 256
 * descriptors, 64-byte aligned, its driver starting at position 0. Packed without and with
 * VIRTIO_F_IN_ORDER; dequeue, discard and touch; a split queue ignores the setting. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ring_fixture.h"

#define LEN 64

static uint64_t waits(const struct rf *f)
{
	return vl_vq_stats(f->tx.q)->tx_line_waits;
}

/* n one-descriptor chains, seeds from seed on. */
static void post(struct rf *f, struct rf_good *g, uint32_t n, uint8_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		g[i] = rf_post_good_n(f, &f->tx, LEN, (uint8_t)(seed + i), 1);
}

/* One dequeue burst must move exactly g[0..n), and the guest then sees their used
 * descriptors and no more. */
static void take(struct rf *f, const struct rf_good *g, uint32_t n)
{
	rf_burst_expect_returned(f, &f->tx, g, n);
}

static void line_wait_on(struct rf *f)
{
	vl_vq_set_tx_line_wait(f->tx.q, true);
	assert_true(vl_vq_tx_line_wait(f->tx.q));
}

/* Six chains: positions 0-5, the window ends two into the second line. The first burst takes
 * the first line's four and leaves 4 and 5; the next, finding the end where it was, takes
 * them. */
static void scn_leaves_the_open_line(struct rf *f)
{
	struct rf_good g[6];

	line_wait_on(f);
	post(f, g, 6, 1);
	take(f, g, 4);
	assert_int_equal(waits(f), 1);
	take(f, g + 4, 2);
	assert_int_equal(waits(f), 1);
}

/* The driver moved on between the bursts: into the third line (positions 6-9), so the second
 * burst takes 4-7 and leaves 8 and 9 again; six more (10-15) end on a line boundary and are
 * taken at once. */
static void scn_waits_again_when_the_driver_moved(struct rf *f)
{
	struct rf_good g[16];

	line_wait_on(f);
	post(f, g, 6, 1);
	take(f, g, 4);
	post(f, g + 6, 4, 7);
	take(f, g + 4, 4);
	assert_int_equal(waits(f), 2);
	take(f, g + 8, 2);
	post(f, g + 10, 6, 11);
	take(f, g + 10, 6);
	assert_int_equal(waits(f), 2);
}

/* A window that lies inside one line (three chains), or one that ends on a line boundary
 * (eight), is taken whole: the first is all there is, the second has no line open. */
static void scn_takes_what_it_cannot_split(struct rf *f)
{
	struct rf_good g[11];

	line_wait_on(f);
	post(f, g, 3, 1);
	take(f, g, 3);
	post(f, g + 3, 1, 4); /* position 3: the first line is complete */
	take(f, g + 3, 1);
	post(f, g + 4, 7, 5); /* 4-10: one line and three of the next */
	take(f, g + 4, 4);
	assert_int_equal(waits(f), 1);
	take(f, g + 8, 3);
	assert_int_equal(waits(f), 1);
}

/* A chain of two descriptors at positions 3-4 starts before the open line: it goes with the
 * first burst, only the chain starting at 5 waits. */
static void scn_a_chain_into_the_line_goes(struct rf *f)
{
	struct rf_good g[5];

	line_wait_on(f);
	post(f, g, 3, 1);
	g[3] = rf_post_good_n(f, &f->tx, LEN, 4, 2);
	post(f, g + 4, 1, 5);
	take(f, g, 4);
	assert_int_equal(waits(f), 1);
	take(f, g + 4, 1);
}

/* A window holding the whole ring ends where it began, here two into the first line, with a
 * chain starting at position 0; but every descriptor is available, none is the driver's to
 * write: the burst takes all 128 two-descriptor chains (it asks for more, so the scan stops
 * for want of room, not at a full count). */
static void scn_not_on_a_full_ring(struct rf *f)
{
	enum { N = 128 };
	struct rf_good g[N];

	line_wait_on(f);
	post(f, g, 2, 1);
	take(f, g, 2); /* positions 0-1; the driver now starts at 2 */
	for (uint32_t i = 0; i < N; i++)
		g[i] = rf_post_good_n(f, &f->tx, LEN, (uint8_t)i, 2);
	assert_int_equal(f->tx.pr.next_avail, 2); /* wrapped round to where it began */
	take(f, g, N);
	assert_int_equal(waits(f), 0);
}

/* A lie behind five good chains (a chain of two at 5-6 whose second descriptor is not
 * available) breaks the queue: the five are all served, the one in the open line too. */
static void scn_a_lie_ends_the_queue(struct rf *f)
{
	struct rf_good g[5];
	struct vl_pkt *pkts[32];

	line_wait_on(f);
	post(f, g, 5, 1);
	(void)rf_post_good_n(f, &f->tx, LEN, 6, 2);
	rf_pdesc(&f->tx, 6)->flags = 0;
	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 32), 5);
	assert_true(vl_vq_broken(f->tx.q));
	assert_int_equal(vl_vq_broken_reason(f->tx.q), VL_DROP_CHAIN_INCOMPLETE);
	for (uint32_t i = 0; i < 5; i++) {
		rf_assert_pkt_pattern(pkts[i], LEN, g[i].seed);
		vl_pkt_free(pkts[i]);
		rf_expect_used(&f->tx, g[i].head, 0);
	}
	rf_expect_no_used(&f->tx);
	assert_int_equal(waits(f), 0);
}

/* Across the ring's end: positions 252-255 and 0-1 (the wrap counter flipped), the open line
 * is the ring's first; 0 and 1 wait. */
static void scn_across_the_ring_end(struct rf *f)
{
	struct rf_good g[8];

	line_wait_on(f);
	for (uint32_t i = 0; i < 252 / 4; i++) {
		post(f, g, 4, (uint8_t)i);
		take(f, g, 4);
	}
	assert_int_equal(waits(f), 0);
	post(f, g, 6, 9);
	take(f, g, 4);
	assert_int_equal(waits(f), 1);
	take(f, g + 4, 2);
}

/* Off (the default), every chain goes in the first burst (positions 0-5); then on, discard
 * and touch wait as dequeue does (touch stays the ceiling of a back end that reads its
 * packets): 6-9 end two into a line, 8 and 9 wait; 10-13 the same, 12 and 13 wait. Off
 * again, 14-19 go at once. */
static void scn_off_and_the_discards(struct rf *f)
{
	struct rf_good g[6];
	uint64_t bytes = 0, firsts = 0;

	assert_false(vl_vq_tx_line_wait(f->tx.q));
	post(f, g, 6, 1);
	take(f, g, 6);
	assert_int_equal(waits(f), 0);

	line_wait_on(f);
	for (int touch = 0; touch <= 1; touch++) {
		post(f, g, 4, 1);
		for (int burst = 0; burst < 2; burst++) {
			const uint16_t got = touch ? vl_net_discard_touch(f->tx.q, 32, &bytes,
									  &firsts)
						   : vl_net_discard(f->tx.q, 32, &bytes);

			assert_int_equal(got, 2);
		}
		for (uint32_t i = 0; i < 4; i++) {
			rf_expect_used(&f->tx, g[i].head, 0);
			rf_free_good(f, &g[i]);
		}
		rf_expect_no_used(&f->tx);
		assert_int_equal(waits(f), 1 + (uint64_t)touch);
	}
	uint64_t want_firsts = 0;

	for (uint32_t i = 0; i < 4; i++)
		want_firsts += rf_pattern_byte((uint8_t)(1 + i), 0);
	assert_int_equal(firsts, want_firsts);
	assert_int_equal(bytes, 8 * LEN);
	/* Off again. */
	vl_vq_set_tx_line_wait(f->tx.q, false);
	post(f, g, 6, 1);
	take(f, g, 6);
	assert_int_equal(waits(f), 2);
}

/* A split queue has no descriptor lines shared this way: the setting stays off. */
static void test_split_ignores_it(void **state)
{
	struct rf f;

	(void)state;
	rf_setup_gran(&f, RF_COARSE);
	vl_vq_set_tx_line_wait(f.tx.q, true);
	assert_false(vl_vq_tx_line_wait(f.tx.q));

	struct rf_good g[6];

	post(&f, g, 6, 1);
	take(&f, g, 6);
	assert_int_equal(waits(&f), 0);
	rf_teardown(&f);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* Packed only (a split ring has no line to wait for: test_split_ignores_it), without and
 * with IN_ORDER. */
#define CASES2(name)                                                                         \
	RF_CASE(name, "", VL_LAYOUT_PACKED, RF_COARSE, 0),                                   \
		RF_CASE(name, "_in_order", VL_LAYOUT_PACKED, RF_COARSE, RF_IN_ORDER)

static const struct rf_case cases[] = {
	CASES2(leaves_the_open_line),
	CASES2(waits_again_when_the_driver_moved),
	CASES2(takes_what_it_cannot_split),
	CASES2(a_chain_into_the_line_goes),
	CASES2(not_on_a_full_ring),
	CASES2(a_lie_ends_the_queue),
	CASES2(across_the_ring_end),
	CASES2(off_and_the_discards),
};

int main(void)
{
	const struct CMUnitTest more[] = {
		cmocka_unit_test(test_split_ignores_it),
	};

	return rf_run_cases("line_wait", RF_LIST(cases), RF_LIST(more));
}

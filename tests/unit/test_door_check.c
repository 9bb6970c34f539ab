/* SPDX-License-Identifier: MIT */
/* The memory door's containment check (sim/door_check.h) on the lab core: every translation
 * reaches the lab with its access kind, and one for writing of a range the watched rule does
 * not let the device write is a violation. On both layouts, coarse and 4 KiB RAM:
 *  - the door itself, through the public vl_mem_translate: reads pass wherever they are,
 *    writes pass inside what the rule allows and are caught (counted, the first one named)
 *    outside it, a range reaching one byte past the allowed one included;
 *  - the datapath: an RX chain whose descriptor the driver left read-only is refused before
 *    its buffer is translated, so the door sees no write there, while the good buffer
 *    beside it is translated for writing. A core without the direction check fails this one
 *    at the door. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "door_check.h"
#include "guest_mem.h"
#include "ring_fixture.h"
#include "vhostlab/vhostlab.h"

/* The test's rule: the device may write inside one range (gpa, len), nothing else. */
struct one_range {
	uint64_t gpa, len;
};

static bool inside(const void *ctx, uint64_t gpa, uint64_t len)
{
	const struct one_range *w = ctx;

	return gpa >= w->gpa && len <= w->len && gpa - w->gpa <= w->len - len;
}

static void watch(const struct one_range *w)
{
	lab_door_reset();
	lab_door_watch(inside, w);
}

static void scn_door_translate(struct rf *f)
{
	const uint64_t ro = rf_alloc(f, 256), rw = rf_alloc(f, 256);
	const struct one_range w = { rw, 256 };
	uint64_t len = 64;
	char msg[256], want[32];

	watch(&w);
	assert_non_null(vl_mem_translate(f->mem, ro + 8, &len, VL_ACCESS_READ));
	len = 64;
	assert_non_null(vl_mem_translate(f->mem, rw + 8, &len, VL_ACCESS_WRITE));
	assert_int_equal(lab_door_checks(), 2);
	assert_int_equal(lab_door_violations(), 0);
	assert_false(lab_door_first_violation(msg, sizeof(msg)));

	/* A write outside the rule: caught, and named by its guest address. */
	len = 64;
	assert_non_null(vl_mem_translate(f->mem, ro + 8, &len, VL_ACCESS_WRITE));
	assert_int_equal(lab_door_violations(), 1);
	assert_true(lab_door_first_violation(msg, sizeof(msg)));
	snprintf(want, sizeof(want), "0x%" PRIx64, ro + 8);
	if (!strstr(msg, want))
		fail_msg("violation '%s' does not name %s", msg, want);
	/* Read and write together (a ring area the device reads and writes) count as a write;
	 * the allowed range's last byte passes, one byte past it does not. */
	len = 16;
	(void)vl_mem_translate(f->mem, ro, &len, VL_ACCESS_READ | VL_ACCESS_WRITE);
	assert_int_equal(lab_door_violations(), 2);
	len = 1;
	(void)vl_mem_translate(f->mem, rw + 255, &len, VL_ACCESS_WRITE);
	assert_int_equal(lab_door_violations(), 2);
	len = 2;
	(void)vl_mem_translate(f->mem, rw + 255, &len, VL_ACCESS_WRITE);
	assert_int_equal(lab_door_violations(), 3);
	/* Not watched: nothing is checked or counted. */
	lab_door_watch(NULL, NULL);
	len = 64;
	(void)vl_mem_translate(f->mem, ro, &len, VL_ACCESS_WRITE);
	assert_int_equal(lab_door_checks(), 6);
	assert_int_equal(lab_door_violations(), 3);
}

static void scn_door_rx_readonly(struct rf *f)
{
	const uint64_t ro = rf_alloc(f, 300);

	/* A buffer the driver posted in an RX chain without WRITE, before a good RX buffer:
	 * the device may write only the good one (and the used ring, which the queue's setup
	 * translated before the rule was watched). */
	rf_fill(f, ro, 0x5A, 300);
	struct rf_desc d = { ro, 300, 0 };
	uint16_t bad = rf_post_chain(&f->rx, &d, 1);
	struct rf_good good = rf_post_good(f, &f->rx, 100, 7);
	const struct one_range w = { good.gpa, f->hdr_len + 100 };

	watch(&w);
	struct vl_pkt *pkt = rf_make_pkt(f, 100, 7);
	uint8_t status = 0xff;

	assert_int_equal(vl_net_enqueue(f->rx.q, &pkt, 1, &status), 1);
	vl_pkt_free(pkt);
	/* The good buffer went through the door for writing; the read-only one never did
	 * (checked first: it is what names a core that lost its direction check). */
	assert_true(lab_door_checks() >= 1);
	if (lab_door_violations() != 0) {
		char msg[256] = "";

		lab_door_first_violation(msg, sizeof(msg));
		fail_msg("door: %s", msg);
	}
	assert_int_equal(status, VL_RX_DELIVERED);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_DIRECTION), 1);
	rf_expect_used(&f->rx, bad, 0);
	rf_expect_used(&f->rx, good.head, f->hdr_len + 100);
	const uint8_t *p = rf_ptr(f, ro, 300);

	for (int i = 0; i < 300; i++)
		assert_int_equal(p[i], 0x5A);
	lab_door_watch(NULL, NULL);
}

static const struct rf_case cases[] = {
	RF_CASE(door_translate, "_split", VL_LAYOUT_SPLIT, RF_COARSE, 0),
	RF_CASE(door_translate, "_packed_4k", VL_LAYOUT_PACKED, RF_4K, 0),
	RF_CASE(door_rx_readonly, "_split", VL_LAYOUT_SPLIT, RF_COARSE, 0),
	RF_CASE(door_rx_readonly, "_split_4k", VL_LAYOUT_SPLIT, RF_4K, 0),
	RF_CASE(door_rx_readonly, "_packed", VL_LAYOUT_PACKED, RF_COARSE, 0),
	RF_CASE(door_rx_readonly, "_packed_4k", VL_LAYOUT_PACKED, RF_4K, 0),
};

int main(void)
{
	return rf_run_cases("door_check", RF_LIST(cases), NULL, 0);
}

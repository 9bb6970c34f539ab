/* SPDX-License-Identifier: MIT */
/* The memory door's containment check (sim/door_check.h, sim/grants.h) on the lab core:
 * every translation reaches the lab with its access kind, and one for writing into bytes the
 * driver granted only for reading is a violation. On both layouts, coarse and 4 KiB RAM:
 *  - the door itself, through the public vl_mem_translate: reads of a read grant pass,
 *    writes into it are caught (counted, the first one named), a write grant beside it or a
 *    range outside the granted area is not;
 *  - the datapath: an RX chain whose descriptor the driver left read-only (pointing at a
 *    buffer it granted for reading) is refused before its buffer is translated, so the door
 *    sees no write there, while the good buffer beside it is translated for writing. A core
 *    without the direction check fails this one at the door. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "door_check.h"
#include "grants.h"
#include "guest_mem.h"
#include "ring_fixture.h"
#include "vhostlab/vhostlab.h"

static struct lab_grants *watch_ram(struct rf *f)
{
	struct lab_grants *g = lab_grants_create(lab_gmem_ram_gpa(f->g), lab_gmem_ram_size(f->g));

	assert_non_null(g);
	lab_door_reset();
	lab_door_watch(g);
	return g;
}

static void unwatch(struct lab_grants *g)
{
	lab_door_watch(NULL);
	lab_grants_destroy(g);
}

static void scn_door_translate(struct rf *f)
{
	struct lab_grants *g = watch_ram(f);
	const uint64_t ro = rf_alloc(f, 256), rw = rf_alloc(f, 256);
	uint64_t len = 64;
	char msg[256], want[32];

	lab_grants_change(g, ro, 256, false, +1);
	lab_grants_change(g, rw, 256, true, +1);
	assert_non_null(vl_mem_translate(f->mem, ro + 8, &len, VL_ACCESS_READ));
	len = 64;
	assert_non_null(vl_mem_translate(f->mem, rw + 8, &len, VL_ACCESS_WRITE));
	assert_int_equal(lab_door_checks(), 2);
	assert_int_equal(lab_door_violations(), 0);
	assert_false(lab_door_first_violation(msg, sizeof(msg)));

	/* A write into the read grant: caught, and named by its guest address. */
	len = 64;
	assert_non_null(vl_mem_translate(f->mem, ro + 8, &len, VL_ACCESS_WRITE));
	assert_int_equal(lab_door_violations(), 1);
	assert_true(lab_door_first_violation(msg, sizeof(msg)));
	snprintf(want, sizeof(want), "0x%" PRIx64, ro + 8);
	if (!strstr(msg, want))
		fail_msg("violation '%s' does not name %s", msg, want);
	/* Read and write access together (a ring area the device reads and writes) too. */
	len = 16;
	(void)vl_mem_translate(f->mem, ro, &len, VL_ACCESS_READ | VL_ACCESS_WRITE);
	assert_int_equal(lab_door_violations(), 2);

	/* Granted for writing as well (a hostile driver's overlap): no longer read-only. */
	lab_grants_change(g, ro, 256, true, +1);
	len = 64;
	(void)vl_mem_translate(f->mem, ro + 8, &len, VL_ACCESS_WRITE);
	assert_int_equal(lab_door_violations(), 2);
	/* Taken back: the bytes are nobody's, which the door leaves to the snapshot diff. */
	lab_grants_change(g, ro, 256, true, -1);
	lab_grants_change(g, ro, 256, false, -1);
	assert_false(lab_grants_read_only(g, ro, 256));
	/* The ring area lies outside the grants' area: never read-only. */
	len = 16;
	(void)vl_mem_translate(f->mem, lab_gmem_ring_gpa(f->g), &len, VL_ACCESS_WRITE);
	assert_int_equal(lab_door_violations(), 2);
	unwatch(g);
}

static void scn_door_rx_readonly(struct rf *f)
{
	struct lab_grants *g = watch_ram(f);
	const uint64_t ro = rf_alloc(f, 300);

	/* A buffer the driver lent the device for reading (a TX buffer), then posted again in
	 * an RX chain without WRITE, before a good RX buffer. */
	rf_fill(f, ro, 0x5A, 300);
	lab_grants_change(g, ro, 300, false, +1);
	struct rf_desc d = { ro, 300, 0 };
	uint16_t bad = rf_post_chain(&f->rx, &d, 1);
	struct rf_good good = rf_post_good(f, &f->rx, 100, 7);

	lab_grants_change(g, good.gpa, f->hdr_len + 100, true, +1);
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
	unwatch(g);
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

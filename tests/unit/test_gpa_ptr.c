/* SPDX-License-Identifier: MIT */
/* lab_gpa_ptr (sim/gpa_ptr.h), the translator behind every lab memory's guest view, on
 * hand-made tables over one buffer: a range is served only while its regions continue one
 * another in gpa and in the view; holes, view gaps, zero lengths and the top of the address
 * space are each pinned. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gpa_ptr.h"

static uint8_t view[4096];

static struct vl_mem_region reg(uint64_t gpa, uint64_t size, size_t at)
{
	return (struct vl_mem_region){.gpa = gpa, .size = size, .host = view + at};
}

static void test_inside_one_region(void **state)
{
	(void)state;
	const struct vl_mem_region t[] = {reg(0x1000, 0x100, 0), reg(0x3000, 0x100, 0x200)};

	assert_ptr_equal(lab_gpa_ptr(t, 2, 0x1000, 0x100), view);
	assert_ptr_equal(lab_gpa_ptr(t, 2, 0x10ff, 1), view + 0xff);
	assert_ptr_equal(lab_gpa_ptr(t, 2, 0x3010, 0x10), view + 0x210);
	assert_null(lab_gpa_ptr(t, 2, 0x0fff, 1));          /* below the first */
	assert_null(lab_gpa_ptr(t, 2, 0x10ff, 2));          /* runs off the end */
	assert_null(lab_gpa_ptr(t, 2, 0x2000, 1));          /* in the hole */
	assert_null(lab_gpa_ptr(t, 2, 0x3100, 1));          /* above the last */
	assert_null(lab_gpa_ptr(t, 0, 0x1000, 1));          /* empty table */
}

/* Joined only where gpa AND view continue: a guard gap in the view or a hole in gpa ends
 * the range even though the other side is contiguous. */
static void test_straddling_needs_both_contiguous(void **state)
{
	(void)state;
	const struct vl_mem_region joined[] = {reg(0x1000, 0x100, 0), reg(0x1100, 0x100, 0x100),
					       reg(0x1200, 0x100, 0x200)};
	const struct vl_mem_region guarded[] = {reg(0x1000, 0x100, 0), reg(0x1100, 0x100, 0x180)};
	const struct vl_mem_region holed[] = {reg(0x1000, 0x100, 0), reg(0x1200, 0x100, 0x100)};

	assert_ptr_equal(lab_gpa_ptr(joined, 3, 0x10f0, 0x200), view + 0xf0);
	assert_ptr_equal(lab_gpa_ptr(joined, 3, 0x1000, 0x300), view);
	assert_null(lab_gpa_ptr(joined, 3, 0x1000, 0x301));
	assert_null(lab_gpa_ptr(guarded, 2, 0x10ff, 2));
	assert_ptr_equal(lab_gpa_ptr(guarded, 2, 0x1100, 2), view + 0x180);
	assert_null(lab_gpa_ptr(holed, 2, 0x10ff, 2));
}

/* Zero bytes: gpa itself must be mapped (vl_mem_translate's rule), so one past a region's
 * end is refused unless the next region starts there. */
static void test_zero_length_needs_a_mapped_gpa(void **state)
{
	(void)state;
	const struct vl_mem_region t[] = {reg(0x1000, 0x100, 0), reg(0x1100, 0x100, 0x100)};

	assert_ptr_equal(lab_gpa_ptr(t, 2, 0x1000, 0), view);
	assert_ptr_equal(lab_gpa_ptr(t, 2, 0x1100, 0), view + 0x100);
	assert_null(lab_gpa_ptr(t, 2, 0x1200, 0));
	assert_null(lab_gpa_ptr(t, 2, 0x0fff, 0));
}

/* A region ending at 2^64 - 1 and lengths near 2^64: no wrap. */
static void test_top_of_the_address_space(void **state)
{
	(void)state;
	const struct vl_mem_region t[] = {reg(0, 0x10, 0), reg(UINT64_MAX - 0xff, 0x100, 0x100)};

	assert_ptr_equal(lab_gpa_ptr(t, 2, UINT64_MAX, 1), view + 0x1ff);
	assert_ptr_equal(lab_gpa_ptr(t, 2, UINT64_MAX - 0xff, 0x100), view + 0x100);
	assert_null(lab_gpa_ptr(t, 2, UINT64_MAX, 2));           /* would wrap to gpa 0 */
	assert_null(lab_gpa_ptr(t, 2, 0, UINT64_MAX));
	assert_null(lab_gpa_ptr(t, 2, UINT64_MAX - 0xff, UINT64_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inside_one_region),
		cmocka_unit_test(test_straddling_needs_both_contiguous),
		cmocka_unit_test(test_zero_length_needs_a_mapped_gpa),
		cmocka_unit_test(test_top_of_the_address_space),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

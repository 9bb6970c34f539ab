/* SPDX-License-Identifier: MIT */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>

#ifdef VL_LAB_BUILD
/* The lab's countdown (VL_LAB_ALLOC_FAIL_AFTER): tests fail each control-path allocation in
 * turn and check nothing leaks. A production build has neither the state nor the check. */
static uint64_t fail_after = UINT64_MAX;
static uint64_t attempts;

void vl_alloc_lab_fail_after(uint64_t after)
{
	fail_after = after;
}

uint64_t vl_alloc_lab_count(void)
{
	return attempts;
}

/* One allocation may proceed (and uses up one unit of the countdown). */
static int may_allocate(void)
{
	attempts++;
	if (fail_after == UINT64_MAX)
		return 1;
	if (fail_after == 0)
		return 0;
	fail_after--;
	return 1;
}
#else
static inline int may_allocate(void)
{
	return 1;
}
#endif

void *vl_calloc(size_t n, size_t size)
{
	return may_allocate() ? calloc(n, size) : NULL;
}

void *vl_malloc(size_t size)
{
	return may_allocate() ? malloc(size) : NULL;
}

void *vl_malloc_lines(size_t size)
{
	/* aligned_alloc wants a multiple of the alignment. */
	if (!may_allocate() || size > SIZE_MAX - 63)
		return NULL;
	return aligned_alloc(64, (size + 63) & ~(size_t)63);
}

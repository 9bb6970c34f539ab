/* SPDX-License-Identifier: MIT */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>

#ifdef VL_LAB_BUILD
#include <stdatomic.h>

/* The lab's countdown (VL_LAB_ALLOC_FAIL_AFTER): tests fail each control-path allocation in
 * turn and check nothing leaks. A production build has neither the state nor the check.
 * Atomic because queues over threads (bench --threads, the tsan stress test) create queues
 * on several threads at once; the countdown itself is only ever set by single-threaded
 * tests, so a relaxed order is all it needs. */
static _Atomic uint64_t fail_after = UINT64_MAX;
static _Atomic uint64_t attempts;

void vl_alloc_lab_fail_after(uint64_t after)
{
	atomic_store_explicit(&fail_after, after, memory_order_relaxed);
}

uint64_t vl_alloc_lab_count(void)
{
	return atomic_load_explicit(&attempts, memory_order_relaxed);
}

/* One allocation may proceed (and uses up one unit of the countdown). */
static int may_allocate(void)
{
	atomic_fetch_add_explicit(&attempts, 1, memory_order_relaxed);
	uint64_t left = atomic_load_explicit(&fail_after, memory_order_relaxed);

	if (left == UINT64_MAX)
		return 1;
	if (left == 0)
		return 0;
	atomic_fetch_sub_explicit(&fail_after, 1, memory_order_relaxed);
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

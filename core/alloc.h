/* SPDX-License-Identifier: MIT */
/* The core's control-path allocator: malloc/calloc, plus -- in the lab build only -- the
 * fault-injection countdown the lab sets through vl_lab_control (core/lab/vl_lab_control.h).
 * Every allocation the core makes outside pools goes through here. */
#ifndef VL_CORE_ALLOC_H
#define VL_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *vl_calloc(size_t n, size_t size);
void *vl_malloc(size_t size);
/* size bytes (rounded up to a whole line) starting on a 64-byte cache line; free() frees it. */
void *vl_malloc_lines(size_t size);

#ifdef VL_LAB_BUILD
/* For core/lab/lab_control.c only (VL_LAB_ALLOC_FAIL_AFTER, VL_LAB_ALLOC_COUNT). */
void vl_alloc_lab_fail_after(uint64_t after);
uint64_t vl_alloc_lab_count(void);
#endif

#endif

/* SPDX-License-Identifier: MIT */
/* The core's control-path allocator: malloc/calloc with the fault-injection countdown of
 * vl_alloc.h. Every allocation the core makes outside pools goes through here. */
#ifndef VL_CORE_ALLOC_H
#define VL_CORE_ALLOC_H

#include <stddef.h>

void *vl_calloc(size_t n, size_t size);
void *vl_malloc(size_t size);
/* size bytes (rounded up to a whole line) starting on a 64-byte cache line; free() frees it. */
void *vl_malloc_lines(size_t size);

#endif

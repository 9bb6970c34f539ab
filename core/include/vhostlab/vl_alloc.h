/* SPDX-License-Identifier: MIT */
/* Fault injection for the core's own (control-path) allocations. The datapath never
 * allocates except from pools (see vl_pool_fail_after / vl_pool_set_fault_hook); the
 * control path -- vl_mem_create, vl_vq_create, vl_pool_create -- allocates with malloc and
 * reports VL_ERR_NOMEM (or NULL) when that fails. Tests use this to make each of those
 * allocations fail in turn and check nothing leaks. Process-wide and not thread-safe: for
 * tests only. */
#ifndef VHOSTLAB_VL_ALLOC_H
#define VHOSTLAB_VL_ALLOC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The next `after` core allocations succeed, every later one fails, until called again with
 * UINT64_MAX (the default: never fail). */
void vl_alloc_fail_after(uint64_t after);

/* Core allocations attempted since the process started (successful or not). */
uint64_t vl_alloc_count(void);

#ifdef __cplusplus
}
#endif
#endif

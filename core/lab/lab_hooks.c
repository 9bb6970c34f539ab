/* SPDX-License-Identifier: MIT */
/* LAB ONLY: default (weak, no-op) definitions of the lab hooks, compiled into the lab build
 * of the core (VL_LAB_BUILD) and never into a production one (see core/CMakeLists.txt). A
 * lab program links its own strong definitions (sim/double_fetch.c); any other program
 * linking the lab core still links and runs unchanged. */
#ifndef VL_LAB_BUILD
#error "core/lab/lab_hooks.c belongs to the lab build of the core only (VL_LAB_BUILD)"
#endif

#include "vl_lab_hooks.h"

/* Never run where the lab's detector is linked: not counted in core/ coverage. */
/* GCOVR_EXCL_START */

__attribute__((weak)) void vl_lab_guest_load(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
}

__attribute__((weak)) void vl_lab_chain_begin(void)
{
}

__attribute__((weak)) void vl_lab_chain_end(void)
{
}

__attribute__((weak)) void vl_lab_burst_begin(void)
{
}

__attribute__((weak)) void vl_lab_burst_end(void)
{
}
__attribute__((weak)) void vl_lab_guest_access(const void *host, uint64_t gpa, uint64_t len,
						unsigned access)
{
	(void)host;
	(void)gpa;
	(void)len;
	(void)access;
}
/* GCOVR_EXCL_STOP */

/* SPDX-License-Identifier: MIT */
/* The lab's one guest-physical translator: a guest-physical range to a pointer in one view of
 * guest memory, given that view's region table. Every lab memory (sim/guest_mem.h,
 * sim/trace/trace_mem.h) keeps its views as such tables and answers through this, so bounds,
 * straddling and the zero-length rule are decided in one place.
 *
 * The lab does not use the core's vl_mem_translate for its own views: that would allocate
 * through the core (vl_mem_create), where fault-injection countdowns count every allocation,
 * and it answers a different question (how much is contiguous, clamped) than the driver's
 * "is all of it there". */
#ifndef LAB_GPA_PTR_H
#define LAB_GPA_PTR_H

#include <stdint.h>

#include "vhostlab/vl_mem.h"

/* Pointer to gpa in the view described by tab[0, n): regions in guest-physical order, not
 * overlapping, each of size > 0, `host` being where the region's first byte sits in this view
 * (only gpa, size and host are read). NULL unless every byte of [gpa, gpa + len) lies in
 * regions that continue one another in guest-physical AND in view addresses, so the caller
 * may use the pointer for all len bytes: a range crosses from one region into the next only
 * where the view has them side by side (a guest view laid out as the guest sees it); a guard
 * page or a hole between them ends it. A zero-length range needs gpa itself inside a region,
 * as vl_mem_translate does. Nothing wraps, also for a region ending at 2^64 - 1. */
void *lab_gpa_ptr(const struct vl_mem_region *tab, uint32_t n, uint64_t gpa, uint64_t len);

#endif

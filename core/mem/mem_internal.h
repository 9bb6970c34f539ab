/* SPDX-License-Identifier: MIT */
/* Guest memory table internals, visible to the rest of the core for inlined translation. */
#ifndef VL_MEM_INTERNAL_H
#define VL_MEM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "vhostlab/vl_mem.h"
#ifdef VL_LAB_BUILD
#include "lab/vl_lab_hooks.h"
#endif

/* A region after validation and merging. `last` is inclusive so a region may end at 2^64-1
 * without its end address overflowing. */
struct vl_mem_range {
	uint64_t gpa;
	uint64_t last;
	uint8_t *host;
};

struct vl_mem {
	uint32_t n;
	struct vl_mem_range *ranges; /* sorted by gpa, non-overlapping */
	struct vl_mem_region *orig;  /* the regions as given (sorted), for bookkeeping */
	uint32_t norig;
};

/* Index of the range holding gpa, or -1. Binary search is legal because ranges are sorted
 * and never overlap (checked at creation). Forced inline: every descriptor (and every piece
 * of one that straddles regions) is translated, and with the usual one or two ranges the
 * search is a couple of compares the caller's loop can overlap. */
static inline int64_t vl_mem_find(const struct vl_mem *mem, uint64_t gpa)
{
	uint32_t lo = 0, hi = mem->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct vl_mem_range *r = &mem->ranges[mid];

		if (gpa < r->gpa)
			hi = mid;
		else if (gpa > r->last)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

/* Host address of gpa inside range r (gpa within it); *len clipped to the bytes the range
 * has from gpa on. last - gpa cannot overflow (gpa <= last); +1 cannot either unless the
 * range covers all 2^64 bytes, which a 64-bit size cannot express. */
static inline void *vl_mem_range_xlate(const struct vl_mem_range *r, uint64_t gpa,
				       uint64_t *len)
{
	uint64_t room = r->last - gpa + 1;

	if (*len > room)
		*len = room;
	return r->host + (gpa - r->gpa);
}

/* Every translation the datapath makes ends here with what it found: len bytes at host, for
 * guest address gpa, to be read or written (access: VL_ACCESS_READ and/or VL_ACCESS_WRITE).
 * The lab build reports it to the lab (vl_lab_guest_access: the lab's containment check
 * catches a write where the guest granted only reads); the production core does nothing with
 * it, and the call and its arguments compile away. */
static inline void vl_mem_door_check(const void *host, uint64_t gpa, uint64_t len,
				     unsigned access)
{
#ifdef VL_LAB_BUILD
	vl_lab_guest_access(host, gpa, len, access);
#else
	(void)host;
	(void)gpa;
	(void)len;
	(void)access;
#endif
}

/* Inline body of vl_mem_translate for the datapath. */
static inline void *vl_mem_xlate(const struct vl_mem *mem, uint64_t gpa, uint64_t *len,
				 unsigned access)
{
	int64_t i = vl_mem_find(mem, gpa);

	if (i < 0) {
		*len = 0;
		return NULL;
	}
	void *host = vl_mem_range_xlate(&mem->ranges[i], gpa, len);

	vl_mem_door_check(host, gpa, *len, access);
	return host;
}

/* vl_mem_xlate that tries range *hint first and leaves the range it found there. A guest's
 * buffers mostly come from one region: the hit is one compare, where the binary search took
 * three rounds over the lab's few ranges (about 23 instructions per descriptor, callgrind).
 * Any *hint is safe: it is checked against this table, which may have replaced the one the
 * hint was found in. */
static inline void *vl_mem_xlate_hint(const struct vl_mem *mem, uint64_t gpa,
				      uint64_t *len, uint32_t *hint, unsigned access)
{
	const uint32_t h = *hint;

	/* gpa in [gpa, last] as one unsigned compare: an address below the range wraps high. */
	if (h < mem->n && gpa - mem->ranges[h].gpa <= mem->ranges[h].last - mem->ranges[h].gpa) {
		void *host = vl_mem_range_xlate(&mem->ranges[h], gpa, len);

		vl_mem_door_check(host, gpa, *len, access);
		return host;
	}
	int64_t i = vl_mem_find(mem, gpa);

	if (i < 0) {
		*len = 0;
		return NULL;
	}
	*hint = (uint32_t)i;
	void *host = vl_mem_range_xlate(&mem->ranges[i], gpa, len);

	vl_mem_door_check(host, gpa, *len, access);
	return host;
}

#endif

/* SPDX-License-Identifier: MIT */
/* The lab's guest-physical translator: see gpa_ptr.h. */
#include "gpa_ptr.h"

#include <stddef.h>

/* The region holding gpa, or NULL: the last one starting at or below gpa (the table is in
 * gpa order and regions do not overlap, so no other can hold it). */
static const struct vl_mem_region *holding(const struct vl_mem_region *tab, uint32_t n,
					   uint64_t gpa)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (tab[mid].gpa <= gpa)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct vl_mem_region *r = &tab[lo - 1];

	return gpa - r->gpa < r->size ? r : NULL;
}

/* next starts where r ends, in guest-physical and in view addresses. next->gpa > r->gpa (gpa
 * order), so the subtraction cannot wrap; the view addresses are compared as integers because
 * two mappings are not one C object. */
static int continues(const struct vl_mem_region *r, const struct vl_mem_region *next)
{
	return next->gpa - r->gpa == r->size &&
	       (uintptr_t)next->host - (uintptr_t)r->host == r->size;
}

void *lab_gpa_ptr(const struct vl_mem_region *tab, uint32_t n, uint64_t gpa, uint64_t len)
{
	const struct vl_mem_region *r = holding(tab, n, gpa), *end = tab + n;

	if (!r)
		return NULL;
	void *p = (uint8_t *)r->host + (gpa - r->gpa);

	if (len == 0)
		return p;
	/* Counted as "bytes after the first" so a range or region ending at 2^64 - 1 needs no
	 * 2^64: need_m1 bytes must follow gpa, room_m1 follow it inside r. */
	uint64_t need_m1 = len - 1, room_m1 = r->size - 1 - (gpa - r->gpa);

	while (need_m1 > room_m1) {
		const struct vl_mem_region *next = r + 1;

		if (next == end || !continues(r, next))
			return NULL;
		need_m1 -= room_m1 + 1;
		r = next;
		room_m1 = r->size - 1;
	}
	return p;
}

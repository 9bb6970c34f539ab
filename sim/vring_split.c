/* SPDX-License-Identifier: MIT */
#include "vring_split.h"

#include <stdlib.h>
#include <string.h>

static uint64_t page_up(uint64_t v)
{
	return (v + LAB_PAGE_SIZE - 1) & ~(uint64_t)(LAB_PAGE_SIZE - 1);
}

uint64_t lab_vring_area_bytes(uint32_t size)
{
	return page_up(vl_split_desc_bytes(size)) + page_up(vl_split_avail_bytes(size)) +
	       page_up(vl_split_used_bytes(size));
}

int lab_vring_init(struct lab_vring *vr, struct lab_gmem *g, uint64_t ring_gpa, uint32_t size,
		   uint16_t start_idx)
{
	memset(vr, 0, sizeof(*vr));
	vr->gmem = g;
	vr->size = size;
	vr->desc_gpa = ring_gpa;
	vr->avail_gpa = vr->desc_gpa + page_up(vl_split_desc_bytes(size));
	vr->used_gpa = vr->avail_gpa + page_up(vl_split_avail_bytes(size));
	vr->desc = lab_gmem_guest_ptr(g, vr->desc_gpa, vl_split_desc_bytes(size));
	vr->avail = lab_gmem_guest_ptr(g, vr->avail_gpa, vl_split_avail_bytes(size));
	vr->used = lab_gmem_guest_ptr(g, vr->used_gpa, vl_split_used_bytes(size));
	vr->free_stack = calloc(size, sizeof(*vr->free_stack));
	if (!vr->desc || !vr->avail || !vr->used || !vr->free_stack) {
		free(vr->free_stack);
		vr->free_stack = NULL;
		return -1;
	}
	memset(vr->desc, 0, vl_split_desc_bytes(size));
	memset(vr->avail, 0, vl_split_avail_bytes(size));
	memset(vr->used, 0, vl_split_used_bytes(size));
	lab_rw_split_publish(vr->avail, start_idx);
	lab_rw_split_used_idx(vr->used, start_idx);
	vr->avail_idx = start_idx;
	vr->last_used = start_idx;
	/* Hand out descriptors from the top so chains use scattered, non-sequential indices
	 * once the free list has been churned. */
	for (uint32_t i = 0; i < size; i++)
		vr->free_stack[i] = (uint16_t)(size - 1 - i);
	vr->nfree = size;
	return 0;
}

void lab_vring_fini(struct lab_vring *vr)
{
	free(vr->free_stack);
	vr->free_stack = NULL;
}

int lab_vring_desc_get(struct lab_vring *vr)
{
	if (vr->nfree == 0)
		return -1;
	return vr->free_stack[--vr->nfree];
}

void lab_vring_desc_put(struct lab_vring *vr, uint16_t idx)
{
	if (vr->nfree >= vr->size)
		abort(); /* driver bookkeeping bug: more puts than gets */
	vr->free_stack[vr->nfree++] = idx;
}

void lab_vring_set_desc(struct lab_vring *vr, uint16_t idx, uint64_t addr, uint32_t len,
			uint16_t flags, uint16_t next)
{
	lab_rw_split_desc(vr->desc, idx, addr, len, flags, next);
}

void lab_vring_add_avail(struct lab_vring *vr, uint16_t head)
{
	lab_rw_split_avail(vr->avail, vr->size, vr->avail_idx, head);
	vr->avail_idx++;
}

void lab_vring_kick(struct lab_vring *vr)
{
	lab_rw_split_publish(vr->avail, vr->avail_idx);
}

void lab_vring_force_avail_idx(struct lab_vring *vr, uint16_t idx)
{
	lab_rw_split_publish(vr->avail, idx);
}

void lab_vring_set_avail_flags(struct lab_vring *vr, uint16_t flags)
{
	lab_rw_split_avail_flags(vr->avail, flags);
}

uint16_t lab_vring_used_pending(const struct lab_vring *vr)
{
	return (uint16_t)(__atomic_load_n(&vr->used->idx, __ATOMIC_ACQUIRE) - vr->last_used);
}

bool lab_vring_pop_used(struct lab_vring *vr, uint32_t *id, uint32_t *len)
{
	if (lab_vring_used_pending(vr) == 0)
		return false;
	const struct vl_split_used_elem *e = &vr->used->ring[vr->last_used & (vr->size - 1)];

	*id = e->id;
	*len = e->len;
	vr->last_used++;
	return true;
}

/* SPDX-License-Identifier: MIT */
#include "vring_packed.h"

#include <stdlib.h>
#include <string.h>

static uint64_t page_up(uint64_t v)
{
	return (v + LAB_PAGE_SIZE - 1) & ~(uint64_t)(LAB_PAGE_SIZE - 1);
}

uint64_t lab_pring_area_bytes(uint32_t size)
{
	return page_up(vl_packed_desc_bytes(size)) + LAB_PAGE_SIZE;
}

int lab_pring_init(struct lab_pring *pr, struct lab_gmem *g, uint64_t ring_gpa, uint32_t size,
		   uint16_t start_pos, bool start_wrap, bool in_order)
{
	memset(pr, 0, sizeof(*pr));
	pr->gmem = g;
	pr->size = size;
	pr->in_order = in_order;
	pr->desc_gpa = ring_gpa;
	pr->driver_gpa = ring_gpa + page_up(vl_packed_desc_bytes(size));
	pr->device_gpa = pr->driver_gpa + 64; /* own cache line, 4-byte aligned */
	pr->desc = lab_gmem_guest_ptr(g, pr->desc_gpa, vl_packed_desc_bytes(size));
	pr->driver_event = lab_gmem_guest_ptr(g, pr->driver_gpa, sizeof(struct vl_packed_event));
	pr->device_event = lab_gmem_guest_ptr(g, pr->device_gpa, sizeof(struct vl_packed_event));
	pr->free_ids = calloc(size, sizeof(*pr->free_ids));
	pr->id_ndescs = calloc(size, sizeof(*pr->id_ndescs));
	pr->id_busy = calloc(size, sizeof(*pr->id_busy));
	pr->order = calloc(size, sizeof(*pr->order));
	if (!pr->desc || !pr->driver_event || !pr->device_event || !pr->free_ids ||
	    !pr->id_ndescs || !pr->id_busy || !pr->order || start_pos >= size) {
		lab_pring_fini(pr);
		return -1;
	}
	/* The descriptor ring is zero-initialised (spec 2.8.13). */
	memset(pr->desc, 0, vl_packed_desc_bytes(size));
	memset(pr->driver_event, 0, sizeof(*pr->driver_event));
	memset(pr->device_event, 0, sizeof(*pr->device_event));
	pr->next_avail = pr->next_used = start_pos;
	pr->avail_wrap = pr->used_wrap = start_wrap;
	pr->free_descs = size;
	for (uint32_t i = 0; i < size; i++)
		pr->free_ids[i] = (uint16_t)(size - 1 - i);
	pr->nfree_ids = size;
	pr->batch_last = -1;
	return 0;
}

void lab_pring_fini(struct lab_pring *pr)
{
	free(pr->free_ids);
	free(pr->id_ndescs);
	free(pr->id_busy);
	free(pr->order);
	pr->free_ids = NULL;
	pr->id_ndescs = NULL;
	pr->id_busy = NULL;
	pr->order = NULL;
}

static void step(uint16_t *pos, bool *wrap, uint32_t n, uint32_t size)
{
	uint32_t p = *pos + n;

	while (p >= size) {
		p -= size;
		*wrap = !*wrap;
	}
	*pos = (uint16_t)p;
}

int lab_pring_post(struct lab_pring *pr, const struct lab_pdesc *elems, uint32_t n)
{
	if (n == 0 || n > pr->free_descs || pr->nfree_ids == 0)
		return -1;
	uint16_t id = pr->free_ids[--pr->nfree_ids];

	lab_rw_packed_chain(pr->desc, pr->size, &pr->next_avail, &pr->avail_wrap, id, elems, n);
	pr->free_descs -= n;
	pr->id_ndescs[id] = (uint16_t)n;
	pr->id_busy[id] = true;
	pr->order[(pr->order_head + pr->order_count) % pr->size] = id;
	pr->order_count++;
	return id;
}

void lab_pring_write_raw(struct lab_pring *pr, uint16_t pos, uint64_t addr, uint32_t len,
			 uint16_t id, uint16_t flags)
{
	lab_rw_packed_desc(pr->desc, pos, addr, len, id, flags);
}

/* Give back id and its descriptors; the used position moves past them. */
static void retire(struct lab_pring *pr, uint16_t id)
{
	step(&pr->next_used, &pr->used_wrap, pr->id_ndescs[id], pr->size);
	pr->free_descs += pr->id_ndescs[id];
	pr->id_busy[id] = false;
	pr->free_ids[pr->nfree_ids++] = id;
	/* Drop id from the posting order (usually the front; anywhere when buffers come back
	 * out of order). */
	for (uint32_t i = 0; i < pr->order_count; i++) {
		uint32_t at = (pr->order_head + i) % pr->size;

		if (pr->order[at] != id)
			continue;
		for (uint32_t k = i; k > 0; k--)
			pr->order[(pr->order_head + k) % pr->size] =
				pr->order[(pr->order_head + k - 1) % pr->size];
		pr->order_head = (pr->order_head + 1) % pr->size;
		pr->order_count--;
		break;
	}
}

bool lab_pring_pop_used(struct lab_pring *pr, uint32_t *id, uint32_t *len, bool *bad)
{
	*bad = false;
	if (pr->batch_last >= 0) {
		/* Inside an in-order batch: the buffers before its last one, in order. */
		uint16_t next = pr->order[pr->order_head];

		*id = next;
		*len = 0;
		if (next == pr->batch_last)
			pr->batch_last = -1;
		retire(pr, next);
		return true;
	}
	/* With nothing in flight next_used == next_avail, a descriptor we have not posted:
	 * its stale (or zero) flags can look used and mean nothing. */
	if (pr->free_descs == pr->size)
		return false;
	const struct vl_packed_desc *d = &pr->desc[pr->next_used];
	uint16_t flags = __atomic_load_n(&d->flags, __ATOMIC_ACQUIRE);
	bool avail = (flags & VL_PDESC_F_AVAIL) != 0, used = (flags & VL_PDESC_F_USED) != 0;

	if (avail != pr->used_wrap || used != pr->used_wrap)
		return false;
	uint16_t uid = d->id;
	uint32_t ulen = d->len;

	if (uid >= pr->size || !pr->id_busy[uid]) {
		*bad = true;
		*id = uid;
		return false;
	}
	if (pr->in_order && pr->order_count && pr->order[pr->order_head] != uid) {
		/* A batch: uid must be ahead of us in posting order. */
		bool found = false;

		for (uint32_t i = 0; i < pr->order_count && !found; i++)
			found = pr->order[(pr->order_head + i) % pr->size] == uid;
		if (!found) {
			*bad = true;
			*id = uid;
			return false;
		}
		pr->batch_last = uid;
		/* The used descriptor's length belongs to uid, which we reach last; batches
		 * carry length 0 (TX) so nothing is lost by reporting 0 for the others. */
		return lab_pring_pop_used(pr, id, len, bad);
	}
	/* Only the WRITE flag says the length means something (spec 2.8.4). */
	*id = uid;
	*len = (flags & VL_DESC_F_WRITE) ? ulen : 0;
	retire(pr, uid);
	return true;
}

/* SPDX-License-Identifier: MIT */
#include "vring.h"

#include <stdlib.h>
#include <string.h>

uint64_t lab_ring_area_bytes(enum vl_layout layout, uint32_t size)
{
	return layout == VL_LAYOUT_PACKED ? lab_pring_area_bytes(size) : lab_vring_area_bytes(size);
}

int lab_ring_init(struct lab_ring *r, enum vl_layout layout, struct lab_gmem *g,
		  uint64_t ring_gpa, uint32_t size, uint16_t start, bool in_order, bool event_idx)
{
	memset(r, 0, sizeof(*r));
	r->layout = layout;
	r->size = size;
	r->event_idx = event_idx;
	if (layout == VL_LAYOUT_PACKED)
		return lab_pring_init(&r->p, g, ring_gpa, size, (uint16_t)(start % size), true,
				      in_order);
	r->head_busy = calloc(size, sizeof(*r->head_busy));
	if (!r->head_busy)
		return -1;
	return lab_vring_init(&r->s, g, ring_gpa, size, start);
}

void lab_ring_fini(struct lab_ring *r)
{
	if (r->layout == VL_LAYOUT_PACKED)
		lab_pring_fini(&r->p);
	else
		lab_vring_fini(&r->s);
	free(r->head_busy);
	r->head_busy = NULL;
}

void lab_ring_device_config(const struct lab_ring *r, struct vl_vq_config *cfg)
{
	if (r->layout == VL_LAYOUT_PACKED) {
		uint16_t at = (uint16_t)(r->p.next_avail | (r->p.avail_wrap ? VL_PACKED_WRAP_BIT : 0));

		cfg->desc_gpa = r->p.desc_gpa;
		cfg->driver_gpa = r->p.driver_gpa;
		cfg->device_gpa = r->p.device_gpa;
		cfg->last_avail_idx = at;
		cfg->last_used_idx = at;
	} else {
		cfg->desc_gpa = r->s.desc_gpa;
		cfg->driver_gpa = r->s.avail_gpa;
		cfg->device_gpa = r->s.used_gpa;
		cfg->last_avail_idx = r->s.avail_idx;
	}
}

uint32_t lab_ring_free_descs(const struct lab_ring *r)
{
	if (r->layout == VL_LAYOUT_PACKED)
		return r->p.nfree_ids ? r->p.free_descs : 0;
	return r->s.nfree;
}

int lab_ring_post(struct lab_ring *r, const struct lab_pdesc *elems, uint32_t n)
{
	if (r->layout == VL_LAYOUT_PACKED)
		return lab_pring_post(&r->p, elems, n);
	if (n == 0 || r->s.nfree < n)
		return -1;
	/* Any length up to the queue size (a chain at the core's limits takes the whole ring):
	 * each descriptor is written once the next one's index is known. */
	const int head = lab_vring_desc_get(&r->s);
	uint16_t at = (uint16_t)head;

	for (uint32_t i = 0; i < n; i++) {
		bool more = i + 1 < n;
		uint16_t next = more ? (uint16_t)lab_vring_desc_get(&r->s) : 0;

		lab_vring_set_desc(&r->s, at, elems[i].addr, elems[i].len,
				   (uint16_t)(elems[i].flags | (more ? VL_DESC_F_NEXT : 0)), next);
		at = next;
	}
	r->head_busy[head] = true;
	r->outstanding++;
	lab_vring_add_avail(&r->s, (uint16_t)head);
	return head;
}

void lab_ring_publish(struct lab_ring *r)
{
	if (r->layout == VL_LAYOUT_SPLIT)
		lab_vring_kick(&r->s);
}

/* Give a split chain's descriptors back by following the next links the driver wrote.
 * They are read from guest memory, which a hostile back end can write (the probe faces
 * one; fuzz_fe_replies plays it): a link past the ring, or more descriptors than were
 * taken, ends the walk, so the free list never holds an index outside the ring. */
static void split_release(struct lab_vring *vr, uint16_t head)
{
	uint16_t i = head;

	for (uint32_t hops = 0; hops < vr->size; hops++) {
		if (i >= vr->size || vr->nfree >= vr->size)
			return;
		const struct vl_split_desc *d = &vr->desc[i];
		bool more = __atomic_load_n(&d->flags, __ATOMIC_RELAXED) & VL_DESC_F_NEXT;
		uint16_t next = __atomic_load_n(&d->next, __ATOMIC_RELAXED);

		lab_vring_desc_put(vr, i);
		if (!more)
			return;
		i = next;
	}
}

int lab_ring_pop_used(struct lab_ring *r, uint32_t *id, uint32_t *len)
{
	if (r->layout == VL_LAYOUT_PACKED) {
		bool bad;
		uint16_t before = r->p.next_used;
		bool before_wrap = r->p.used_wrap;

		if (!lab_pring_pop_used(&r->p, id, len, &bad))
			return bad ? -1 : 0;
		/* The ruler counts descriptors the used pointer passed. */
		uint32_t moved = (uint32_t)r->p.next_used + (r->p.used_wrap != before_wrap ? r->size : 0) -
				 before;

		r->used_mark += moved;
		return 1;
	}
	if (!lab_vring_pop_used(&r->s, id, len))
		return 0;
	r->used_mark++;
	if (*id >= r->size || !r->head_busy[*id])
		return -1;
	r->head_busy[*id] = false;
	r->outstanding--;
	split_release(&r->s, (uint16_t)*id);
	return 1;
}

/* Position (and wrap) reached by moving k descriptors past (pos, wrap). */
static void packed_at(uint32_t size, uint16_t pos, bool wrap, uint32_t k, uint16_t *out_pos,
		      bool *out_wrap)
{
	uint32_t p = pos + k % (2 * size);

	while (p >= size) {
		p -= size;
		wrap = !wrap;
	}
	*out_pos = (uint16_t)p;
	*out_wrap = wrap;
}

uint32_t lab_ring_in_flight(const struct lab_ring *r)
{
	return r->layout == VL_LAYOUT_PACKED ? r->p.order_count : r->outstanding;
}

void lab_ring_arm_calls(struct lab_ring *r, enum lab_call_mode mode, uint32_t later)
{
	if (!r->event_idx && mode == LAB_CALLS_LATER)
		mode = LAB_CALLS_NEXT;
	if (mode != LAB_CALLS_LATER || later >= lab_ring_in_flight(r))
		later = 0;
	/* Packed positions count descriptors: the later-th buffer in flight starts after the
	 * descriptors of the ones before it (buffers complete in posting order here). */
	uint32_t skip = later;

	if (r->layout == VL_LAYOUT_PACKED) {
		skip = 0;
		for (uint32_t i = 0; i < later; i++)
			skip += r->p.id_ndescs[r->p.order[(r->p.order_head + i) % r->size]];
	}
	r->call_mode = mode;
	r->armed_mark = r->used_mark;

	if (r->layout == VL_LAYOUT_PACKED) {
		uint16_t flags = VL_RING_EVENT_ENABLE, off_wrap = 0;

		r->armed_pos = r->p.next_used;
		r->armed_wrap = r->p.used_wrap;
		if (mode == LAB_CALLS_OFF) {
			flags = VL_RING_EVENT_DISABLE;
		} else if (r->event_idx) {
			uint16_t pos;
			bool wrap;

			packed_at(r->size, r->p.next_used, r->p.used_wrap, skip, &pos, &wrap);
			off_wrap = (uint16_t)(pos | (wrap ? VL_PACKED_WRAP_BIT : 0));
			flags = VL_RING_EVENT_DESC;
		}
		lab_rw_packed_event(r->p.driver_event, flags, off_wrap);
		return;
	}
	struct lab_vring *vr = &r->s;

	r->armed_pos = vr->last_used;
	if (r->event_idx) {
		/* used_event: "notify me once you write the used entry with this index". Off:
		 * one behind, so the device would have to go all the way around. */
		uint16_t at = mode == LAB_CALLS_OFF ? (uint16_t)(vr->last_used - 1)
						    : (uint16_t)(vr->last_used + skip);

		lab_rw_split_used_event(vr->avail, vr->size, at);
	} else {
		lab_vring_set_avail_flags(vr, mode == LAB_CALLS_OFF ? VL_AVAIL_F_NO_INTERRUPT : 0);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
}

/* Did a pointer moving `moved` steps from (pos, wrap) pass the event position the guest
 * memory names? Enumerated step by step on purpose: the core answers the same question with
 * wrap-around arithmetic, and the two must agree. */
static bool passes_split(uint16_t from, uint32_t moved, uint16_t event)
{
	for (uint32_t k = 0; k < moved; k++)
		if ((uint16_t)(from + k) == event)
			return true;
	return false;
}

static bool passes_packed(uint32_t size, uint16_t pos, bool wrap, uint32_t moved,
			  uint16_t off_wrap)
{
	for (uint32_t k = 0; k < moved; k++) {
		if (pos == (off_wrap & 0x7fffu) && wrap == ((off_wrap & VL_PACKED_WRAP_BIT) != 0))
			return true;
		if (++pos == size) {
			pos = 0;
			wrap = !wrap;
		}
	}
	return false;
}

/* Whether an event suppression structure (flags + off_wrap) asks to hear about a pointer that
 * moved `moved` steps from (pos, wrap). */
static bool packed_event_due(const struct vl_packed_event *ev, bool event_idx, uint32_t size,
			     uint16_t pos, bool wrap, uint32_t moved)
{
	uint16_t flags = __atomic_load_n(&ev->flags, __ATOMIC_ACQUIRE) & 3u;

	if (moved == 0 || flags == VL_RING_EVENT_DISABLE)
		return false;
	if (flags != VL_RING_EVENT_DESC || !event_idx)
		return true;
	return passes_packed(size, pos, wrap, moved, __atomic_load_n(&ev->off_wrap, __ATOMIC_RELAXED));
}

bool lab_ring_call_due(struct lab_ring *r)
{
	uint32_t moved = r->used_mark - r->armed_mark;

	if (r->layout == VL_LAYOUT_PACKED)
		return packed_event_due(r->p.driver_event, r->event_idx, r->size, r->armed_pos,
					r->armed_wrap, moved);
	if (moved == 0)
		return false;
	if (r->event_idx)
		return passes_split(r->armed_pos, moved,
				    __atomic_load_n(&r->s.avail->ring[r->size], __ATOMIC_RELAXED));
	return !(__atomic_load_n(&r->s.avail->flags, __ATOMIC_RELAXED) & VL_AVAIL_F_NO_INTERRUPT);
}

void lab_ring_mark_avail(struct lab_ring *r)
{
	if (r->layout == VL_LAYOUT_PACKED) {
		r->avail_pos = r->p.next_avail;
		r->avail_wrap = r->p.avail_wrap;
	} else {
		r->avail_pos = r->s.avail_idx;
	}
}

bool lab_ring_kick_due(const struct lab_ring *r)
{
	/* The guest reads the device's wish after publishing (a full barrier in a real
	 * driver); here the device is not running concurrently. */
	if (r->layout == VL_LAYOUT_PACKED) {
		uint32_t moved = (uint32_t)r->p.next_avail +
				 (r->p.avail_wrap != r->avail_wrap ? r->size : 0) - r->avail_pos;

		return packed_event_due(r->p.device_event, r->event_idx, r->size, r->avail_pos,
					r->avail_wrap, moved);
	}
	uint32_t moved = (uint16_t)(r->s.avail_idx - r->avail_pos);

	if (moved == 0)
		return false;
	if (r->event_idx) {
		const uint16_t *avail_event = (const uint16_t *)&r->s.used->ring[r->size];

		return passes_split(r->avail_pos, moved, __atomic_load_n(avail_event, __ATOMIC_RELAXED));
	}
	return !(__atomic_load_n(&r->s.used->flags, __ATOMIC_RELAXED) & VL_USED_F_NO_NOTIFY);
}

bool lab_ring_posted(const struct lab_ring *r)
{
	if (r->layout == VL_LAYOUT_PACKED)
		return r->p.next_avail != r->avail_pos || r->p.avail_wrap != r->avail_wrap;
	return r->s.avail_idx != r->avail_pos;
}

uint16_t lab_ring_marked_avail(const struct lab_ring *r)
{
	if (r->layout == VL_LAYOUT_PACKED)
		return (uint16_t)(r->avail_pos | (r->avail_wrap ? VL_PACKED_WRAP_BIT : 0));
	return r->avail_pos;
}

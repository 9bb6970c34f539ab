/* SPDX-License-Identifier: MIT */
/* Inflight tracking for split rings: ring/inflight.h says what and why. The region is the
 * front end's memory: it is read only in vl_inflight_split_attach, each field once into a
 * local, everything checked before anything is written; afterwards it is only written. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "ring/inflight.h"
#include "ring/ring.h"
#include "vhostlab/vl_error.h"

#define INFL_VERSION 1u
/* Each queue's region starts on a 64-byte boundary (as libvhost-user lays them out). */
#define INFL_ALIGN 64u
/* The spec's QueueRegionPacked: a 32-byte header, 32 bytes per descriptor. */
#define INFL_PACKED_HDR 32u
#define INFL_PACKED_DESC 32u

uint64_t vl_inflight_queue_bytes(enum vl_layout L, uint32_t size)
{
	uint64_t b = L == VL_LAYOUT_PACKED
			     ? INFL_PACKED_HDR + (uint64_t)size * INFL_PACKED_DESC
			     : sizeof(struct vl_infl_split) + (uint64_t)size * sizeof(struct vl_infl_desc);

	return (b + INFL_ALIGN - 1) & ~(uint64_t)(INFL_ALIGN - 1);
}

struct taken {
	uint64_t counter;
	uint16_t head;
};

static int by_counter(const void *a, const void *b)
{
	const struct taken *x = a, *y = b;

	if (x->counter != y->counter)
		return x->counter < y->counter ? -1 : 1;
	return x->head < y->head ? -1 : x->head > y->head;
}

/* A region seen before: undo the marks of a batch published just before the crash (the
 * region's used index then lags the guest's), then collect the heads still marked, oldest
 * first. Nothing is written until everything read is known good. */
static int recover(struct vl_ring *rq, struct vl_infl_split *r, uint16_t used, uint16_t *list,
		   uint32_t *nlist, uint64_t *next_counter)
{
	const uint32_t size = rq->size;
	const uint16_t stored = __atomic_load_n(&r->used_idx, __ATOMIC_RELAXED);
	const uint16_t lag = (uint16_t)(used - stored);
	uint16_t h = __atomic_load_n(&r->last_batch_head, __ATOMIC_RELAXED);

	if (lag > size)
		return VL_ERR_INFLIGHT;
	/* The last batch's heads, through their list: into list[] first (checked), cleared
	 * below. */
	for (uint32_t i = 0; i < lag; i++) {
		if (h >= size)
			return VL_ERR_INFLIGHT;
		list[i] = h;
		h = __atomic_load_n(&r->desc[h].next, __ATOMIC_RELAXED);
	}
	for (uint32_t i = 0; i < lag; i++)
		__atomic_store_n(&r->desc[list[i]].inflight, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->used_idx, used, __ATOMIC_RELEASE);

	struct taken *t = vl_calloc(size, sizeof(*t));
	uint32_t n = 0;
	uint64_t max = 0;

	if (!t)
		return VL_ERR_NOMEM;
	for (uint32_t i = 0; i < size; i++) {
		if (__atomic_load_n(&r->desc[i].inflight, __ATOMIC_RELAXED) != 1)
			continue;
		t[n].head = (uint16_t)i;
		t[n].counter = __atomic_load_n(&r->desc[i].counter, __ATOMIC_RELAXED);
		if (t[n].counter > max)
			max = t[n].counter;
		n++;
	}
	qsort(t, n, sizeof(*t), by_counter);
	for (uint32_t i = 0; i < n; i++)
		list[i] = t[i].head;
	free(t);
	*nlist = n;
	*next_counter = max + 1;
	return VL_OK;
}

int vl_inflight_split_attach(struct vl_ring *rq, void *region, uint64_t bytes,
			     uint32_t *resubmit)
{
	const uint32_t size = rq->size;
	struct vl_infl_split *r = region;

	if (rq->layout != VL_LAYOUT_SPLIT)
		return VL_ERR_LAYOUT;
	if (!region || bytes < sizeof(*r) + (uint64_t)size * sizeof(r->desc[0]))
		return VL_ERR_INFLIGHT;
	const uint16_t version = __atomic_load_n(&r->version, __ATOMIC_ACQUIRE);
	const uint16_t desc_num = __atomic_load_n(&r->desc_num, __ATOMIC_RELAXED);

	if (version != 0 && (version != INFL_VERSION || desc_num != size))
		return VL_ERR_INFLIGHT;

	uint16_t *heads = vl_calloc(size, sizeof(*heads));
	uint16_t *list = vl_calloc(size, sizeof(*list));
	uint32_t n = 0;
	uint64_t counter = 1;
	/* The device's own field: where the guest has had its chains back to. Read once. */
	uint16_t used = vl_guest_load16_acquire(&rq->used->idx);
	int rc = VL_OK;

	if (!heads || !list) {
		rc = VL_ERR_NOMEM;
	} else if (version == 0) {
		/* Fresh: nothing in flight; the ring resumes from its base. */
		used = rq->used_idx;
		memset(r->desc, 0, (size_t)size * sizeof(r->desc[0]));
		r->features = 0;
		r->desc_num = (uint16_t)size;
		r->last_batch_head = 0;
		r->used_idx = used;
		__atomic_store_n(&r->version, INFL_VERSION, __ATOMIC_RELEASE);
	} else {
		rc = recover(rq, r, used, list, &n, &counter);
	}
	if (rc != VL_OK) {
		free(heads);
		free(list);
		return rc;
	}
	free(rq->infl_heads);
	free(rq->resubmit);
	rq->infl = r;
	rq->infl_heads = heads;
	rq->resubmit = list;
	rq->resubmit_next = 0;
	rq->resubmit_left = n;
	rq->infl_counter = counter;
	rq->head_limit = 0;
	rq->infl_base = used;
	/* Every head up to the guest's used index came back; n more were taken after it, and
	 * are window positions 0..n-1 now: last_avail_idx trails the next avail entry to take
	 * (used + n) by n. */
	rq->used_idx = used;
	rq->last_avail_idx = used;
	vl_ring_update_kick_wish(rq, true);
	vl_log_flush(&rq->log);
	*resubmit = n;
	return VL_OK;
}

uint16_t vl_inflight_split_head(struct vl_ring *rq, uint16_t pos, uint16_t read)
{
	/* Positions below resubmit_left are the resubmitted heads; last_avail_idx trails by as
	 * many, so every other position's slot -- the one the fetch read -- is the right one. */
	uint16_t h = read;

	if (rq->infl) {
		if (pos < rq->resubmit_left)
			h = rq->resubmit[rq->resubmit_next + pos];
		/* pos < window <= size */
		rq->infl_heads[pos] = h;
	}
	if (h >= rq->size)
		vl_ring_break(rq, VL_DROP_HEAD_OUT_OF_RANGE);
	return h;
}

void vl_inflight_split_taken(struct vl_ring *rq)
{
	const uint32_t n = (uint16_t)(rq->last_avail_idx - rq->infl_base);
	const uint32_t k = n < rq->resubmit_left ? n : rq->resubmit_left;
	struct vl_infl_desc *d = rq->infl->desc;

	/* Resubmitted heads keep their marks and their place in the order. */
	for (uint32_t i = k; i < n && i < rq->size; i++) {
		uint16_t h = rq->infl_heads[i];

		if (h >= rq->size)
			continue; /* a head refused by the fetch is never consumed; be sure */
		__atomic_store_n(&d[h].counter, rq->infl_counter++, __ATOMIC_RELAXED);
		__atomic_store_n(&d[h].inflight, 1, __ATOMIC_RELEASE);
	}
	rq->resubmit_next += k;
	rq->resubmit_left -= k;
	rq->infl_base = rq->last_avail_idx;
}

void vl_inflight_split_pre_publish(struct vl_ring *rq)
{
	struct vl_infl_desc *d = rq->infl->desc;
	uint16_t prev = 0; /* the list holds this batch alone: its end points anywhere */

	for (uint32_t i = 0; i < rq->shadow_count; i++) {
		uint16_t id = rq->shadow[i].id;

		if (id >= rq->size)
			continue;
		__atomic_store_n(&d[id].next, prev, __ATOMIC_RELAXED);
		prev = id;
	}
	/* Before used->idx is published (its release store orders this one). */
	__atomic_store_n(&rq->infl->last_batch_head, prev, __ATOMIC_RELAXED);
}

void vl_inflight_split_post_publish(struct vl_ring *rq, uint32_t n)
{
	struct vl_infl_desc *d = rq->infl->desc;

	for (uint32_t i = 0; i < n; i++) {
		uint16_t id = rq->shadow[i].id;

		if (id < rq->size)
			__atomic_store_n(&d[id].inflight, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&rq->infl->used_idx, rq->used_idx, __ATOMIC_RELEASE);
}

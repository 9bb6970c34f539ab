/* SPDX-License-Identifier: MIT */
/* Split virtqueue (spec 2.7): the device-side mechanics the net datapath is built on.
 * Fetch and completion are separate: avail_count/head/walk fetch, push_used/flush complete. */
#ifndef VL_RING_SPLIT_H
#define VL_RING_SPLIT_H

#include "ring/guest_load.h"
#include "ring/vq_internal.h"

/* New entries in the avail ring since last_avail_idx, read once per burst (load-acquire, so
 * the entries and descriptors they name are read after it). A guest claiming more than the
 * queue size breaks the queue: no index it gives can be trusted after that. */
static inline uint16_t vl_split_avail_count(struct vl_vq *vq)
{
	uint16_t idx = vl_guest_load16_acquire(&vq->avail->idx);
	uint16_t n = (uint16_t)(idx - vq->last_avail_idx);

	if (n > vq->size) {
		vl_vq_break(vq, VL_DROP_AVAIL_IDX_JUMP);
		return 0;
	}
	return n;
}

/* Head index of the avail entry `pos` entries after last_avail_idx (pos < avail count).
 * Returns -1 and breaks the queue if the guest names a head outside the table: there is no
 * id we could return to it. */
static inline int vl_split_head(struct vl_vq *vq, uint16_t pos, uint16_t *head)
{
	uint16_t slot = (uint16_t)(vq->last_avail_idx + pos) & (uint16_t)(vq->size - 1);
	uint16_t h = vl_guest_load16(&vq->avail->ring[slot]);

	if (h >= vq->size) {
		vl_vq_break(vq, VL_DROP_HEAD_OUT_OF_RANGE);
		return -1;
	}
	*head = h;
	return 0;
}

/* Walk the chain at `head` (direct descriptors, then at most one indirect table), appending
 * translated pieces to vq->pieces from index *np (up to VL_CHAIN_MAX_PIECES). *total receives
 * the chain's byte length. Returns VL_DROP_NONE or why the chain must be dropped. */
enum vl_drop vl_split_walk(struct vl_vq *vq, uint16_t head, enum vl_dir dir, uint32_t *np,
			   uint32_t *total);

/* Record a used element; published by vl_split_flush_used. */
static inline void vl_split_push_used(struct vl_vq *vq, uint16_t id, uint32_t len)
{
	struct vl_split_used_elem *e = &vq->shadow_used[vq->shadow_count++];

	e->id = id;
	e->len = len;
}

/* Mark n avail entries consumed. */
static inline void vl_split_consume(struct vl_vq *vq, uint16_t n)
{
	vq->last_avail_idx = (uint16_t)(vq->last_avail_idx + n);
	vq->stats.chains += n;
}

/* Publish the burst's used elements: entries first, then used->idx with release semantics,
 * so the guest never sees an index covering entries (or data) not yet written. */
void vl_split_flush_used(struct vl_vq *vq);

#endif

/* SPDX-License-Identifier: MIT */
/* Inflight tracking for split rings (vhost-user INFLIGHT_SHMFD, QEMU
 * docs/interop/vhost-user.rst, "Inflight I/O tracking"): a region the front end keeps across
 * back-end restarts, in which the device marks every head it takes from the avail ring and
 * clears it once the used ring returns it. A device that restarts after a crash finds there
 * exactly the chains it had taken and not returned -- which, when chains are returned out of
 * order (zero-copy TX leases), the guest's used index alone cannot tell -- and takes them
 * again first ("resubmits" them), in the order it first took them.
 *
 * The region is shared with the front end: the datapath only ever writes it; it is read
 * once, when the queue attaches it (vl_inflight_split_attach), every field into a local and
 * checked. Only the split layout is tracked. Not a public header. */
#ifndef VL_RING_INFLIGHT_H
#define VL_RING_INFLIGHT_H

#include <stdint.h>

#include "compiler.h"
#include "ring/ring_queue.h"

/* One descriptor's state (the spec's DescStateSplit, 16 bytes). */
struct vl_infl_desc {
	uint8_t inflight;     /* 1: a head taken and not yet returned */
	uint8_t padding[5];
	uint16_t next;        /* the last published batch, as a list through its heads */
	uint64_t counter;     /* the order heads were taken in */
};

/* A queue's region (the spec's QueueRegionSplit): a 16-byte header, then one state per
 * descriptor of the ring. */
struct vl_infl_split {
	uint64_t features;
	uint16_t version;         /* 0: never used (the device initialises it); 1 */
	uint16_t desc_num;        /* the ring's size */
	uint16_t last_batch_head; /* first head of the last published batch's list */
	uint16_t used_idx;        /* used->idx once that batch's marks were cleared */
	struct vl_infl_desc desc[];
};

_Static_assert(sizeof(struct vl_infl_desc) == 16, "DescStateSplit");
_Static_assert(sizeof(struct vl_infl_split) == 16, "QueueRegionSplit header");

/* Attach a region of `bytes` bytes to split ring rq (already initialised, not yet run): a
 * fresh one (version 0) is set up for the ring; one in use is recovered -- the marks of a
 * batch published just before a crash cleared, the heads still marked collected in the
 * order taken -- and the ring resumes at the guest's used index, with those heads taken
 * first. *resubmit: how many. VL_ERR_INFLIGHT (too small, another ring size or version, a
 * last batch that does not fit the ring) or VL_ERR_NOMEM; the ring is then untouched. */
int vl_inflight_split_attach(struct vl_ring *rq, void *region, uint64_t bytes,
			     uint32_t *resubmit);

/* The split fetch's slow path, for a head at or above rq->head_limit: every head while a
 * region is attached, else only a head out of range. With a region: a resubmitted head while
 * any are left, else `read` (the avail entry the fetch read once), remembered for
 * vl_inflight_split_consume. A head out of range (>= size) breaks the ring, and is returned
 * as it is: the caller drops the chain. Out of line: the usual path pays one compare. */
uint16_t vl_inflight_split_head(struct vl_ring *rq, uint16_t pos, uint16_t read)
	__attribute__((noinline, cold));
/* At the start of every flush: the chains consumed since the last one (last_avail_idx moved
 * from infl_base) are marked taken -- those resubmitted are marked already, and leave the
 * list. Every burst that consumes flushes before it returns, and nothing fetches between the
 * two, so the window positions remembered by vl_inflight_split_head are this burst's. */
void vl_inflight_split_taken(struct vl_ring *rq);
/* Around publishing the burst's used elements: before, the batch list; after used->idx is
 * published, the marks cleared and the region's used index set. */
void vl_inflight_split_pre_publish(struct vl_ring *rq);
void vl_inflight_split_post_publish(struct vl_ring *rq, uint32_t n);

#endif

/* SPDX-License-Identifier: MIT */
/* Split virtqueue (spec 2.7): the device-side mechanics the net datapath is built on.
 * Fetch (begin/avail/fetch) and completion (push_used/consume/flush) are separate.
 * The inline operations are inlined into the layout-specialised net bodies (ring/ring.h calls
 * them per burst and per chain); each is a few loads and compares. The compiler does that
 * unforced, except where a `forced:` line says what forcing buys (compiler.h). */
#ifndef VL_RING_SPLIT_H
#define VL_RING_SPLIT_H

#include "compiler.h"
#include "ring/guest_load.h"
#include "ring/inflight.h"
#include "ring/ring_queue.h"

/* Start a burst: read avail->idx once (load-acquire, so the entries and descriptors it
 * covers are read after it). A guest claiming more than the queue size new entries breaks
 * the queue: no index it gives can be trusted after that. */
static inline void vl_split_begin(struct vl_ring *rq)
{
	uint16_t idx = vl_guest_load16_acquire(&rq->avail->idx);
	uint16_t n = (uint16_t)(idx - rq->last_avail_idx);

	rq->window = 0;
	if (n > rq->size) {
		vl_ring_break(rq, VL_DROP_AVAIL_IDX_JUMP);
		return;
	}
	rq->window = n;
}

/* Chains available in this burst's window, at most `want`. */
static inline uint16_t vl_split_avail(const struct vl_ring *rq, uint16_t want)
{
	return rq->window < want ? rq->window : want;
}

/* True when the window holds every descriptor chain the ring can: the guest posted all. */
static inline bool vl_split_full(const struct vl_ring *rq)
{
	return rq->window == rq->size;
}

/* Walk the chain at `head` (direct descriptors, then at most one indirect table), appending
 * translated pieces to rq->pieces from index *np (up to VL_CHAIN_MAX_PIECES). *total receives
 * the chain's byte length. Returns VL_DROP_NONE or why the chain must be dropped. `first`:
 * the head descriptor as the caller already read it (not read again), or NULL to read it. */
enum vl_drop vl_split_walk(struct vl_ring *rq, uint16_t head, const struct vl_split_desc *first,
			   enum vl_dir dir, uint32_t *np, uint32_t *total);

/* The walk of a chain that is one INDIRECT ring descriptor (addr, len as read): map its
 * table and walk it (how Linux and DPDK send several pieces with indirect descriptors). */
enum vl_drop vl_split_walk_indirect(struct vl_ring *rq, uint64_t addr, uint32_t len,
				    enum vl_dir dir, uint32_t *np, uint32_t *total);

/* Payload prefetch (ring_queue.h) for window chains [from, to): those whose head is one
 * direct descriptor. Head, flags, length and address are peeked; a head out of range is left
 * to fetch to refuse. */
void vl_split_prefetch_payloads(struct vl_ring *rq, uint16_t from, uint16_t to, uint32_t skip,
				 uint64_t min_len);

/* Fetch the chain `pos` entries after last_avail_idx (pos < window): read its head once,
 * then walk it. A head outside the table breaks the queue (there is no id we could return
 * to the guest); the caller sees rq->broken. */
/* forced: split 64 B mergeable forward 437.81 -> 499.96 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE enum vl_drop vl_split_fetch(struct vl_ring *rq, uint16_t pos, enum vl_dir dir,
						    struct vl_chain *c, uint32_t *np,
						    uint32_t *total)
{
	uint16_t slot = (uint16_t)(rq->last_avail_idx + pos) & (uint16_t)(rq->size - 1);
	uint16_t h = vl_guest_load16(&rq->avail->ring[slot]);

	/* head_limit is the ring size, or 0 while an inflight area is attached: then every
	 * head takes the inflight path (ring/inflight.h), and the usual path pays nothing for
	 * it -- this compare is the head's range check either way. */
	if (__builtin_expect(h >= rq->head_limit, 0)) {
		h = vl_inflight_split_head(rq, pos, h);
		if (h >= rq->size)
			return VL_DROP_HEAD_OUT_OF_RANGE;
	}
	c->id = h;
	/* The head read once here. The usual chain, one direct descriptor (every receive
	 * buffer of DPDK's and Linux's drivers), is handled inline: it cannot loop, point
	 * anywhere or nest. Anything else continues in the walk with this copy. */
	struct vl_split_desc d;

	vl_guest_load_split_desc(&d, &rq->desc[h]);
	if (!(d.flags & (VL_DESC_F_NEXT | VL_DESC_F_INDIRECT))) {
		c->ndescs = 1;
		*total = 0;
		return vl_chain_add_desc(rq, d.addr, d.len, d.flags, dir, np, total);
	}
	/* One indirect descriptor: no ring walk (it cannot loop), straight to its table. */
	if ((d.flags & (VL_DESC_F_NEXT | VL_DESC_F_INDIRECT)) == VL_DESC_F_INDIRECT) {
		c->ndescs = 1;
		/* Copies out of line, as in vl_chain_add_desc (it says why). */
		uint32_t n = *np, t = *total;
		const enum vl_drop why = vl_split_walk_indirect(rq, d.addr, d.len, dir, &n, &t);

		*np = n;
		*total = t;
		return why;
	}
	uint32_t n = *np, t = *total;
	enum vl_drop why = vl_split_walk(rq, h, &d, dir, &n, &t);

	*np = n;
	*total = t;

	/* Ring descriptors the chain holds (an indirect table counts as its one descriptor):
	 * what the guest cannot post again until the chain comes back. The walk counts the head
	 * before anything can stop it, so this is at least 1. */
	c->ndescs = (uint16_t)rq->walk_ring_descs;
	return why;
}

/* Mark n avail entries consumed. */
static inline void vl_split_consume(struct vl_ring *rq, uint16_t n)
{
	rq->last_avail_idx = (uint16_t)(rq->last_avail_idx + n);
	rq->stats.chains += n;
}

/* Publish the burst's used elements: entries first, then used->idx with release semantics,
 * so the guest never sees an index covering entries (or data) not yet written; then decide
 * whether the guest wants a notification and refresh our own kick wish. */
void vl_split_flush_used(struct vl_ring *rq);

/* Write the device's kick wish (avail_event or the NO_NOTIFY flag) into guest memory: always
 * when `force`, else only when it differs from what was stored last. */
void vl_split_update_kick_wish(struct vl_ring *rq, bool force);

#endif

/* SPDX-License-Identifier: MIT */
/* Zero-copy dequeue (technique 3): leases on guest TX chains held by packets.
 * A lease is taken for every chain a zero-copy packet points into; under IN_ORDER also for
 * every chain consumed behind an unreturned one (already "done", it just has to wait its
 * turn). A lease goes back to the guest (a used element) when it is done and -- under
 * IN_ORDER -- every lease before it has gone back. The inline tests below run for every TX
 * chain, zero-copy on or off; those forced say what forcing buys (compiler.h). */
#ifndef VL_NET_ZERO_COPY_H
#define VL_NET_ZERO_COPY_H

#include "compiler.h"
#include "net/net_queue.h"

/* Allocate the lease tables (control path). Returns VL_OK or VL_ERR_NOMEM. */
int vl_zc_setup(struct vl_vq *vq);
void vl_zc_teardown(struct vl_vq *vq);

/* Does a consumed chain have to wait in the lease order instead of going back at once? */
static inline bool vl_zc_must_queue(const struct vl_vq *vq)
{
	return vq->rq.in_order && vq->zc_order_count > 0;
}

/* Take a lease for chain c; done = already finished (copied or dropped, waiting its turn).
 * The caller has checked there is room (vl_zc_room). Returns the slot. */
uint16_t vl_zc_take(struct vl_vq *vq, const struct vl_chain *c, bool done);

/* Room under the bound for a lease on chain c: the bound counts ring descriptors (an
 * indirect table is the one descriptor it occupies in the ring), so held chains never take
 * the whole ring, whatever their shape -- a guest that sends every packet as a header
 * descriptor plus data keeps descriptors to post. No overflow: both terms are at most the
 * queue size. */
static inline bool vl_zc_room(const struct vl_vq *vq, const struct vl_chain *c)
{
	return vq->zc_held_descs + c->ndescs <= vq->zc_max;
}

/* The bound as an embedder asks for it, clamped: 0 reads as 1, and never the whole ring
 * (size - 1 at most: 0 on a one-descriptor queue, where nothing can be held). */
static inline uint32_t vl_zc_clamp_bound(uint32_t want, uint32_t size)
{
	if (want == 0)
		want = 1;
	return want < size ? want : size - 1;
}

/* Make head (fresh from the pool, one segment) the zero-copy packet of a walked TX chain
 * whose pkt_len payload bytes after the header span several host-contiguous pieces: head
 * points at the first, a segment from pool at each of the others. False, with nothing
 * taken, when the pieces are more than VL_ZC_MAX_SEGS or the pool cannot supply the
 * segments; the caller copies the packet then. */
bool vl_zc_gather(struct vl_vq *vq, struct vl_pool *pool, uint32_t np, uint32_t pkt_len,
		  struct vl_pkt *head);

/* The release callback of zero-copy packets: marks the lease done. */
void vl_zc_release(struct vl_pkt *pkt);

/* Move every returnable lease to the shadow used ring (published by the burst's flush). */
void vl_zc_return(struct vl_vq *vq);

/* The start of every TX burst (dequeue and discard): count it; nothing on a broken queue
 * (returns 0); chains whose zero-copy packets were freed since the last burst go back first;
 * and the burst is bounded by what is left of the shadow used ring those returns share with
 * it (queue-size entries: an honest guest cannot exceed it, as a held chain keeps its
 * descriptors, but one re-posting held heads must not make the burst write past it).
 * False on a broken queue (the burst does nothing); else *count is what the burst may take. */
/* forced: split 1518 B indirect dequeue 627.84 -> 629.81 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE bool vl_tx_burst_start(struct vl_vq *vq, uint16_t *count)
{
	vq->rq.stats.bursts++;
	if (vq->rq.broken)
		return false;
	if (vq->zc_held_descs) /* a lease holds at least one descriptor */
		vl_zc_return(vq);
	if (*count > vq->rq.size - vq->rq.shadow_count)
		*count = (uint16_t)(vq->rq.size - vq->rq.shadow_count);
	return true;
}

/* Where the payload of a walked TX chain starts, if all pkt_len bytes after the header lie
 * in one piece (one host-contiguous run); NULL otherwise. */
/* forced: split 1518 B zero-copy dequeue 272.12 -> 273.12 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE const uint8_t *vl_zc_payload(const struct vl_vq *vq, uint32_t np,
						     uint32_t pkt_len)
{
	uint32_t skip = vq->hdr_len;

	for (uint32_t i = 0; i < np; i++) {
		const struct vl_piece *p = &vq->rq.pieces[i];

		if (skip >= p->len) {
			skip -= p->len;
			continue;
		}
		return p->len - skip >= pkt_len ? p->host + skip : NULL;
	}
	return NULL;
}

#endif

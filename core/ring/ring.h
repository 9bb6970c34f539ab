/* SPDX-License-Identifier: MIT */
/* The ring interface: everything the net layer may ask of a virtqueue layout, in one place.
 * The net bodies (net/dequeue.c, net/enqueue.c, net/discard.c, net/queue.c) call these and
 * nothing else of ring/ -- besides reading rq->pieces (the walked chain), rq->stats and the
 * queue's negotiated properties (size, in_order, broken) from struct vl_ring
 * (ring/ring_queue.h), and loading the virtio-net header through ring/guest_load.h.
 *
 * What a layout provides (split: ring/split.{h,c}; packed: ring/packed.{h,c}):
 *
 *   per burst, fetching       begin       read the guest's view of what is available once
 *                             avail       how many chains the burst's window holds
 *                             avail_tx    the same for a guest-to-host burst (packed: the line
 *                                         wait may leave a few for the next burst)
 *                             full        whether the guest posted everything the ring holds
 *                             fetch       walk chain `pos` of the window into rq->pieces,
 *                                         checking every descriptor; name its used id
 *                             prefetch_ahead  ask for the payload lines of chains about to be
 *                                         read (a hint, decides nothing)
 *                             consume     the first n chains of the window are the device's
 *                             (packed, device reads: vl_packed_batch_read_tx reads four
 *                                         one-descriptor chains at the window's start at once;
 *                                         the caller then consumes them itself and pushes their
 *                                         used elements, ring/packed_batch.h)
 *   per burst, completing     push_used   queue one used element (id, ndescs, written length);
 *                                         vl_ring_shadow_push is the same where the layout is
 *                                         not a constant (zero-copy returns, net/zero_copy.c)
 *                             flush_used  publish every queued element, then decide whether
 *                                         the guest wants a call (rq->needs_call)
 *   control path              update_kick_wish  write the device's wish for kicks
 *                             (ring/ring_queue.c: vl_ring_init, vl_ring_fini, vl_ring_set_mem,
 *                             vl_ring_break and the accessors)
 *
 * A burst: begin, then avail/fetch chains by position in the burst's window (position 0 is
 * the oldest chain not yet consumed), push_used for each chain handled, consume the chains
 * handled (always a prefix of the window), flush_used.
 *
 * Each call takes the layout as a compile-time constant: a net body is a static inline
 * function instantiated once per layout, so every switch below folds away and no call through
 * a pointer happens per descriptor. The bodies are forced inline (compiler.h): that is what
 * makes L a constant in the callee; without it gcc 12 and clang 14 at -O2 keep one
 * out-of-line body with L a run-time argument (technique 5: -6 to -26 % of the packet rate
 * without forced inlining, reports/seed-claims.md). The operations here are inlined into
 * them; those forced say what forcing buys, measured (`forced:` lines).
 *
 * Adding a layout: add its enum value, implement these operations in ring/<layout>.{h,c},
 * add one case to each switch here, and one instantiation per net body. The virtio-net logic
 * itself is not touched. */
#ifndef VL_RING_H
#define VL_RING_H

#include "compiler.h"
#include "ring/packed.h"
#include "ring/packed_batch.h"
#include "ring/split.h"

static inline void vl_ring_begin(struct vl_ring *rq, const enum vl_layout L)
{
	if (L == VL_LAYOUT_SPLIT)
		vl_split_begin(rq);
	else
		vl_packed_begin(rq);
}

/* Chains available in the window, at most want. */
static inline uint16_t vl_ring_avail(struct vl_ring *rq, const enum vl_layout L,
				     uint16_t want)
{
	if (L == VL_LAYOUT_SPLIT)
		return vl_split_avail(rq, want);
	return vl_packed_avail(rq, want);
}

/* Chains a guest-to-host burst takes now: vl_ring_avail, less those a line wait leaves for
 * the next burst (packed only). */
static inline uint16_t vl_ring_avail_tx(struct vl_ring *rq, const enum vl_layout L,
					uint16_t want)
{
	const uint16_t n = vl_ring_avail(rq, L, want);

	if (L == VL_LAYOUT_PACKED && rq->tx_line_wait)
		return vl_packed_line_wait(rq, n);
	return n;
}

/* vl_ring_avail_tx for a burst that has taken chains already (have): a line wait may then
 * leave every chain of the window (vl_packed_line_wait_have). */
static inline uint16_t vl_ring_avail_tx_have(struct vl_ring *rq, const enum vl_layout L,
					     uint16_t want, bool have)
{
	const uint16_t n = vl_ring_avail(rq, L, want);

	if (L == VL_LAYOUT_PACKED && rq->tx_line_wait)
		return vl_packed_line_wait_have(rq, n, have);
	return n;
}

/* Does the window hold every chain the ring can (the guest posted all it could)? */
static inline bool vl_ring_full(struct vl_ring *rq, const enum vl_layout L)
{
	if (L == VL_LAYOUT_SPLIT)
		return vl_split_full(rq);
	return vl_packed_full(rq);
}

/* Walk window chain `pos` into rq->pieces[*np..]; c receives what the used ring must name. */
/* forced: packed 9000 B mergeable enqueue 2930.33 -> 3114.27 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE enum vl_drop vl_ring_fetch(struct vl_ring *rq, const enum vl_layout L,
						   uint16_t pos, enum vl_dir dir,
						   struct vl_chain *c, uint32_t *np,
						   uint32_t *total)
{
	if (L == VL_LAYOUT_SPLIT)
		return vl_split_fetch(rq, pos, dir, c, np, total);
	return vl_packed_fetch_inline(rq, pos, dir, c, np, total);
}

/* How many chains ahead of the one being read a guest-to-host burst prefetches a packet's
 * first line (vl_ring_prefetch_ahead), and how many it asks for at a time: each chain is asked
 * for AHEAD to AHEAD + STEP - 1 chains before it is read. Measured against a real front end
 * far apart (docs/architecture.md): 12-15 ahead did better than 4-7 or 32-35; 10-17 keeps
 * that mean with half the calls (callgrind: 7 instructions a packet fewer than 4 at a time). */
#ifndef VL_TX_PREFETCH_AHEAD
#define VL_TX_PREFETCH_AHEAD 10
#endif
#define VL_TX_PREFETCH_STEP 8
/* Bursts a dequeue queue goes without asking after one that found nothing to ask for. */
#define VL_TX_PREFETCH_RETRY 16

/* Payload prefetch (ring/ring_queue.h) in a guest-to-host burst over window chains [0, end):
 * called before reading chain i when i is the index the last call returned (the first call
 * at chain 0, or never: VL_TX_PREFETCH_NONE). At chain 0 it asks for the first
 * VL_TX_PREFETCH_AHEAD + VL_TX_PREFETCH_STEP chains, then every VL_TX_PREFETCH_STEP chains
 * for the next VL_TX_PREFETCH_STEP, so each chain is asked for once, about
 * VL_TX_PREFETCH_AHEAD chains before it is read; it returns the chain to call it at next, or
 * VL_TX_PREFETCH_NONE once the window is asked for. The byte asked for is the one skip bytes
 * into a chain's first descriptor (the payload after the virtio-net header), for chains whose
 * first descriptor is longer than min_len bytes (the caller's choice: touch asks for every
 * packet, dequeue only for those it copies at once, longer than the batching threshold). A hint:
 * decides nothing. Dequeue runs its chain loop in runs that end at the returned index (touch
 * compares each i with it); the asking is out of line: inlined, or tested every chain, its
 * peeks and arithmetic took registers the copy loop wanted (callgrind: 15-20 more
 * instructions per packet, prefetch or not). */
#define VL_TX_PREFETCH_NONE UINT32_MAX

/* forced: split 1518 B zero-copy dequeue 272.12 -> 273.16 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE uint32_t vl_ring_prefetch_ahead(struct vl_ring *rq, const enum vl_layout L,
							uint32_t i, uint32_t end, uint32_t skip,
							uint64_t min_len)
{
	const uint32_t from = i == 0 ? 0 : i + VL_TX_PREFETCH_AHEAD;
	uint32_t to = i + VL_TX_PREFETCH_AHEAD + VL_TX_PREFETCH_STEP;

	if (to >= end)
		to = end;
	if (from < to) {
		if (L == VL_LAYOUT_SPLIT)
			vl_split_prefetch_payloads(rq, (uint16_t)from, (uint16_t)to, skip, min_len);
		else
			vl_packed_prefetch_payloads(rq, (uint16_t)from, (uint16_t)to, skip, min_len);
	}
	return to < end ? i + VL_TX_PREFETCH_STEP : VL_TX_PREFETCH_NONE;
}

static inline void vl_ring_push_used(struct vl_ring *rq, const enum vl_layout L,
				     const struct vl_chain *c, uint32_t len)
{
	(void)L; /* both layouts collect the same shadow elements */
	vl_ring_shadow_push(rq, c, len);
}

/* forced: split 64 B dequeue 219.03 -> 220.03 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void vl_ring_consume(struct vl_ring *rq, const enum vl_layout L, uint16_t n)
{
	if (L == VL_LAYOUT_SPLIT)
		vl_split_consume(rq, n);
	else
		vl_packed_consume(rq, n);
}

/* Publish the burst: every used element, under IN_ORDER too (vl_packed_flush_used says why). */
static inline void vl_ring_flush_used(struct vl_ring *rq, const enum vl_layout L)
{
	if (L == VL_LAYOUT_SPLIT)
		vl_split_flush_used(rq);
	else
		vl_packed_flush_used(rq);
}

/* Write the device's wish for kicks (rq->want_kicks) where the guest reads it: always when
 * force, else only when the stored one differs. The flushes call the layout's own at the end
 * of every burst; this is for the control path (vl_ring_init, vl_ring_set_kicks). */
static inline void vl_ring_update_kick_wish(struct vl_ring *rq, bool force)
{
	if (rq->layout == VL_LAYOUT_PACKED)
		vl_packed_update_kick_wish(rq, force);
	else
		vl_split_update_kick_wish(rq, force);
}

#endif

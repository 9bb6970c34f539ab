/* SPDX-License-Identifier: MIT */
/* Packed virtqueue (spec 2.8): the device side. One ring of descriptors; the driver marks a
 * descriptor available by setting AVAIL to its wrap counter and USED to the inverse, the
 * device marks it used by setting both to its own wrap counter. Chains occupy consecutive
 * descriptors; the buffer id sits in the last one; the device writes one used descriptor per
 * chain (at the chain's first position) and skips the rest. The inline operations are inlined
 * into the net bodies as in split.h (per chain, a few compares each), forced only where a
 * `forced:` line says what it buys (compiler.h). */
#ifndef VL_RING_PACKED_H
#define VL_RING_PACKED_H

#include "compiler.h"
#include "ring/guest_load.h"
#include "ring/ring_queue.h"

/* Start a burst: the window of available chains is found lazily by vl_packed_avail. */
static inline void vl_packed_begin(struct vl_ring *rq)
{
	rq->pscanned = 0;
	rq->pscan_descs = 0;
	rq->pscan_end = false;
}

/* Scan forward until `want` chains are known or a descriptor is not available. */
void vl_packed_scan(struct vl_ring *rq, uint32_t want);

/* Complete chains available in this burst's window, at most `want`. Each descriptor's flags
 * are read once (load-acquire, so its other fields are read after) and kept for the walk. */
static inline uint16_t vl_packed_avail(struct vl_ring *rq, uint16_t want)
{
	if (rq->pscanned < want && !rq->pscan_end && !rq->broken)
		vl_packed_scan(rq, want);
	return (uint16_t)(rq->pscanned < want ? rq->pscanned : want);
}

/* Line wait (vl_vq_set_tx_line_wait): of the n chains vl_packed_avail found, how many to take
 * now. Only when the scan stopped at a descriptor that is not available (so the driver may be
 * writing it) inside a 64-byte line: then the chains that start in that line stay for the next
 * burst, and this one takes the rest -- unless that is nothing. So chains normally wait one
 * burst: the next one either finds the driver gone on (they are no longer in the open line) or
 * finds only them (and takes them); a burst cut short by something else (an allocation
 * failure) may leave them once more. And a driver that posts one packet at a time is never
 * kept waiting. A scan that broke the queue (a lie further on) serves every sound chain
 * before it, as ever. Positions are the device's own: nothing here comes from the guest. */
static inline uint16_t vl_packed_line_wait_have(struct vl_ring *rq, uint16_t n, bool have);

static inline uint16_t vl_packed_line_wait(struct vl_ring *rq, uint16_t n)
{
	return vl_packed_line_wait_have(rq, n, false);
}

/* vl_packed_line_wait for a burst that has taken chains before this window already (have:
 * the dequeue batches, ring/packed_batch.h): then the window's chains may all wait, as they
 * would had the window begun with those chains. */
static inline uint16_t vl_packed_line_wait_have(struct vl_ring *rq, uint16_t n, bool have)
{
	/* pscan_end also marks a window holding the whole ring (room ran out): every
	 * descriptor is available then, none is the driver's to write. */
	if (!rq->pscan_end || rq->broken || rq->pscan_descs == rq->size)
		return n;
	uint32_t end = rq->avail_pos + rq->pscan_descs; /* both < size <= 32768 */

	if (end >= rq->size)
		end -= rq->size;
	/* Descriptors are 16 bytes: how far into its line the first one not available sits. A
	 * line that would start before position 0 (a ring not 64-byte aligned) is left alone. */
	const uint32_t into = (uint32_t)(((uintptr_t)&rq->pdesc[end] & 63u) >> 4);

	if (into == 0 || into > end)
		return n;
	const uint32_t line = end - into;
	uint16_t k = n;

	while (k > 0 && rq->pchains[k - 1].start >= line && rq->pchains[k - 1].start < end)
		k--;
	if ((k == 0 && !have) || k == n)
		return n;
	rq->stats.tx_line_waits++;
	return k;
}

/* True when every descriptor of the ring is available to the device. */
static inline bool vl_packed_full(struct vl_ring *rq)
{
	vl_packed_avail(rq, (uint16_t)(rq->size < 0xffffu ? rq->size : 0xffffu));
	return rq->pscan_descs == rq->size;
}

/* Read the buffer id and walk chain `pos` of the window (pos < vl_packed_avail), a chain of
 * two descriptors or more (vl_packed_fetch_inline takes those of one). An id outside
 * [0, size) breaks the queue (the guest could not match it); the caller sees rq->broken. */
enum vl_drop vl_packed_fetch(struct vl_ring *rq, uint16_t pos, enum vl_dir dir,
			     struct vl_chain *c, uint32_t *np, uint32_t *total);

/* Map and walk the table of an indirect descriptor (addr, len as read); *total is the caller's
 * to reset. */
enum vl_drop vl_packed_walk_indirect(struct vl_ring *rq, uint64_t addr, uint32_t len,
				     enum vl_dir dir, uint32_t *np, uint32_t *total);

/* Payload prefetch (ring_queue.h) for window chains [from, to): those of one direct
 * descriptor (flags as the scan read them). Length and address are peeked. */
void vl_packed_prefetch_payloads(struct vl_ring *rq, uint16_t from, uint16_t to, uint32_t skip,
				 uint64_t min_len);

/* vl_packed_fetch with the usual cases inline: a chain of one descriptor, direct (every
 * receive buffer of DPDK's and Linux's drivers, most transmit ones) or indirect (how they
 * transmit several pieces). Its id, address and length are read once each, in the order
 * vl_packed_fetch reads them, and an id out of range breaks the queue here. */
/* forced: packed 9000 B mergeable enqueue 2930.33 -> 3074.33 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE enum vl_drop vl_packed_fetch_inline(struct vl_ring *rq, uint16_t pos,
							    enum vl_dir dir, struct vl_chain *c,
							    uint32_t *np, uint32_t *total)
{
	const struct vl_packed_chain *pc = &rq->pchains[pos];
	const uint16_t p = pc->start;
	const uint16_t flags = rq->pflags[p]; /* read once, by the scan */

	if (pc->ndescs != 1) {
		/* Copies out of line, as in vl_chain_add_desc (it says why). */
		struct vl_chain c2;
		uint32_t n = *np, t = *total;
		const enum vl_drop why = vl_packed_fetch(rq, pos, dir, &c2, &n, &t);

		*c = c2;
		*np = n;
		*total = t;
		return why;
	}
	const uint16_t id = vl_guest_load16(&rq->pdesc[p].id);

	if (id >= rq->size) {
		vl_ring_break(rq, VL_DROP_ID_OUT_OF_RANGE);
		return VL_DROP_ID_OUT_OF_RANGE;
	}
	c->id = id;
	c->ndescs = 1;
	*total = 0;
	const uint64_t addr = vl_guest_load64(&rq->pdesc[p].addr);
	const uint32_t len = vl_guest_load32(&rq->pdesc[p].len);

	if (flags & VL_DESC_F_INDIRECT) {
		uint32_t n = *np, t = 0;
		const enum vl_drop why = vl_packed_walk_indirect(rq, addr, len, dir, &n, &t);

		*np = n;
		*total = t;
		return why;
	}
	return vl_chain_add_desc(rq, addr, len, flags, dir, np, total);
}

/* Consume the first n chains of the window (their descriptors now belong to the device
 * until it writes them used). */
void vl_packed_consume(struct vl_ring *rq, uint16_t n);

/* Write the burst's used descriptors: id and len of each, flags of all but the first, then
 * (release) the first one's flags, so the guest never sees part of a burst (spec 2.8.21:
 * the first buffer of a multi-buffer request is marked used last). Then decide whether the
 * guest wants a call.
 * Under VIRTIO_F_IN_ORDER a device may instead return a TX burst as one used descriptor
 * carrying its last buffer id (spec 2.8.11), and this one did until it was measured: against
 * DPDK 22.11's in-order virtio-user, packed 64-byte guest->host ran at 39.39 Mpps that way and
 * 47.12 with a used descriptor per chain (median of 7 interleaved runs each, CPUs close; far
 * apart 16.87 -> 18.19). Split writes every used element too. */
void vl_packed_flush_used(struct vl_ring *rq);

/* Did the used descriptors written from (old_pos, old_wrap) up to the current used position
 * pass the one the guest asked to hear about? Reads the driver event area (one unit of the
 * caller's). */
bool vl_packed_need_call(const struct vl_ring *rq, uint16_t old_pos, bool old_wrap);

/* Write the device's kick wish into the device event suppression area: always when `force`,
 * else only when it differs from what was stored last. */
void vl_packed_update_kick_wish(struct vl_ring *rq, bool force);

#endif

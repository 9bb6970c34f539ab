/* SPDX-License-Identifier: MIT */
/* Packed ring, receive side: four descriptors taken and returned as one batch. The usual
 * receive ring of DPDK's and Linux's drivers is a run of single, direct, device-writable
 * descriptors, four to a 64-byte line; a host->guest burst of small packets then needs none
 * of the general machinery per chain (the window scan, the chain walk into pieces, the
 * shadow used ring): it reads the four descriptors, checks them together and, once the net
 * layer has filled their buffers, writes their four used descriptors at once.
 *
 * Nothing here decides a drop. Anything unusual -- a descriptor not available, chained,
 * indirect, not device-writable, an id out of range, a buffer not whole in the memory range
 * the queue last used, a batch that would wrap the ring -- makes vl_packed_rx_batch_peek
 * answer false without consuming anything, and the caller hands the rest of its burst to the
 * general path, which reads those descriptors again in its own units and names what is wrong.
 *
 * Used descriptors written this way are in the ring before the burst ends, all but one: the
 * burst's first used descriptor gets its id and length at once and its flags only in
 * vl_packed_flush_used_direct, after everything else, so the guest still sees the whole burst
 * or none of it (as vl_packed_flush_used does). Dirty logging is not done here: the caller
 * takes this path only while logging is off. */
#ifndef VL_RING_PACKED_RX_BATCH_H
#define VL_RING_PACKED_RX_BATCH_H

#include "ring/packed.h"

#define VL_PACKED_BATCH 4u

/* Four descriptors as read and checked: where each buffer is, how long, under which id. */
struct vl_packed_rx_batch {
	uint8_t *host[VL_PACKED_BATCH];
	uint32_t len[VL_PACKED_BATCH];
	uint16_t id[VL_PACKED_BATCH];
};

/* A burst's used descriptors written directly: from (head_pos, head_wrap), count of them; the
 * head's flags (head_flags) still to be stored. count == 0: none this burst. */
struct vl_packed_direct {
	uint32_t count;
	uint16_t head_pos;
	bool head_wrap;
	uint16_t head_flags;
};

/* Is a group of four there to try? A peek at the fourth descriptor's flags (not one of the
 * ring's reads: it decides nothing, vl_packed_rx_batch_peek or the general path reads it
 * again): a ring with nothing or little posted is left to the general path before a burst
 * of groups is begun (callgrind, packed 64 B enqueue into a ring with no room: 587
 * instructions a call without it). The driver makes the descriptors of a run available in
 * order, so the fourth being there usually means the first three are. */
static inline bool vl_packed_rx_batch_ready(const struct vl_ring *rq)
{
	const uint32_t last = rq->avail_pos + VL_PACKED_BATCH - 1u;
	const uint16_t bits = rq->avail_wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED;

	return last < rq->size &&
	       (vl_guest_peek16(&rq->pdesc[last].flags) & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED)) ==
		       bits;
}

/* Read the four descriptors at the next available position and check that each is one
 * available, device-writable, direct descriptor with an id in range whose buffer lies whole
 * in the memory range the queue's cursor holds (or finds). True: b holds them, nothing is
 * consumed yet. False: nothing was kept; the general path takes over.
 * Only before the burst's window scan (rq->pscanned == 0): the batch reads the ring itself. */
static inline bool vl_packed_rx_batch_peek(struct vl_ring *rq, struct vl_packed_rx_batch *b)
{
	const uint32_t pos = rq->avail_pos;

	/* Both positions move by four without wrapping inside the batch (the used one equals
	 * the available one on a receive queue, whose chains all go back in the burst). */
	if (pos + VL_PACKED_BATCH > rq->size || rq->used_pos + VL_PACKED_BATCH > rq->size)
		return false;
	const struct vl_packed_desc *d = &rq->pdesc[pos];
	/* Available for our wrap counter, device-writable, neither chained nor indirect. */
	const uint16_t want = (uint16_t)((rq->avail_wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED) |
					 VL_DESC_F_WRITE);
	const uint16_t mask = VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_WRITE |
			      VL_DESC_F_NEXT | VL_DESC_F_INDIRECT;
	bool ok;

	/* The four descriptors' reads are one unit of their own (not the burst's window): if
	 * the batch is refused, the general path's scan and walk read them again in theirs. */
	vl_lab_chain_begin();
	{
		/* Each flags word before the rest of its descriptor (load-acquire). */
		const uint16_t f0 = vl_guest_load16_acquire(&d[0].flags);
		const uint16_t f1 = vl_guest_load16_acquire(&d[1].flags);
		const uint16_t f2 = vl_guest_load16_acquire(&d[2].flags);
		const uint16_t f3 = vl_guest_load16_acquire(&d[3].flags);

		ok = (((f0 ^ want) | (f1 ^ want) | (f2 ^ want) | (f3 ^ want)) & mask) == 0;
	}
	for (uint32_t i = 0; ok && i < VL_PACKED_BATCH; i++) {
		const uint16_t id = vl_guest_load16(&d[i].id);
		const uint64_t addr = vl_guest_load64(&d[i].addr);
		const uint32_t len = vl_guest_load32(&d[i].len);
		/* The whole buffer, as the general walk translates it: a buffer it would refuse
		 * is not taken here either. */
		uint8_t *host = len ? vl_mem_cursor_whole(&rq->cur, addr, len, VL_ACCESS_WRITE)
				    : NULL;

		b->host[i] = host;
		b->len[i] = len;
		b->id[i] = id;
		ok = id < rq->size && host != NULL;
	}
	vl_lab_chain_end();
	return ok;
}

/* Return the batch peeked last: its four chains consumed, a used descriptor written for
 * each (id, written length used[i], flags), in place, after the buffers' bytes (release
 * stores). The burst's first one keeps its flags for vl_packed_flush_used_direct. */
static inline void vl_packed_rx_batch_done(struct vl_ring *rq, const struct vl_packed_rx_batch *b,
					   const uint32_t used[VL_PACKED_BATCH],
					   struct vl_packed_direct *dir)
{
	typedef uint64_t __attribute__((may_alias)) tail_alias;
	struct vl_packed_desc *ring = rq->pdesc;
	const uint32_t pos = rq->used_pos;
	const uint16_t wbits = rq->used_wrap ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0;
	/* Every length is at least the header: WRITE is always set. */
	const uint64_t flags = (uint64_t)(wbits | VL_DESC_F_WRITE) << 48;
	uint32_t i = 0;

	if (dir->count == 0) {
		dir->head_pos = (uint16_t)pos;
		dir->head_wrap = rq->used_wrap;
		dir->head_flags = (uint16_t)(wbits | VL_DESC_F_WRITE);
		__atomic_store_n(&ring[pos].id, b->id[0], __ATOMIC_RELAXED);
		__atomic_store_n(&ring[pos].len, used[0], __ATOMIC_RELAXED);
		i = 1;
	}
	/* len, id and flags are a descriptor's last 8 bytes (packed.c checks the layout): one
	 * store each, so the guest sees all three or none. */
	for (; i < VL_PACKED_BATCH; i++)
		__atomic_store_n((tail_alias *)(void *)&ring[pos + i].len,
				 used[i] | (uint64_t)b->id[i] << 32 | flags, __ATOMIC_RELEASE);
	dir->count += VL_PACKED_BATCH;
	/* pos + 4 <= size (vl_packed_rx_batch_peek): at most one wrap each. */
	if (pos + VL_PACKED_BATCH == rq->size) {
		rq->used_pos = 0;
		rq->used_wrap = !rq->used_wrap;
	} else {
		rq->used_pos = (uint16_t)(pos + VL_PACKED_BATCH);
	}
	if (rq->avail_pos + VL_PACKED_BATCH == rq->size) {
		rq->avail_pos = 0;
		rq->avail_wrap = !rq->avail_wrap;
	} else {
		rq->avail_pos = (uint16_t)(rq->avail_pos + VL_PACKED_BATCH);
	}
	rq->stats.chains += VL_PACKED_BATCH;
}

/* vl_packed_flush_used for a burst that wrote dir->count used descriptors directly (count >
 * 0) before any in the shadow ring: the shadow ones after them, then the burst's first flags,
 * then the call decision over all of them. Logging must be off. */
void vl_packed_flush_used_direct(struct vl_ring *rq, const struct vl_packed_direct *dir);

#endif

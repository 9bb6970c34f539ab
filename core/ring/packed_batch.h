/* SPDX-License-Identifier: MIT */
/* Packed ring, device reads (guest-to-host): four chains of one descriptor each, read as one
 * batch (or the rest of a line, up to four). Four 16-byte descriptors fill one 64-byte line;
 * when all four are available, direct,
 * unchained and plain, the usual path's per-chain work (the availability scan's bookkeeping,
 * a window entry per chain, a fetch that re-tests what the scan found) is work the batch
 * does once for the four. Anything unusual -- fewer available than the batch holds, a
 * descriptor chained, indirect or device-writable, the batch running past the ring's end, an id out of range, a length outside the caller's bounds, a buffer outside the
 * memory range the queue last found -- and the caller takes the usual path (vl_packed_scan
 * and vl_packed_fetch_inline), which reads the descriptors again, as a unit of its own, and
 * decides what each of them is: nothing read here is kept. */
#ifndef VL_RING_PACKED_BATCH_H
#define VL_RING_PACKED_BATCH_H

#include "compiler.h"
#include "ring/guest_load.h"
#include "ring/ring_queue.h"

#define VL_PACKED_BATCH 4u

/* What a batch's four descriptors hold, each field read once and checked. */
struct vl_packed_batch {
	uint8_t *host[VL_PACKED_BATCH]; /* the buffer, translated whole */
	uint32_t len[VL_PACKED_BATCH];
	uint16_t id[VL_PACKED_BATCH];
	uint32_t n;                     /* how many of them: 1 to VL_PACKED_BATCH */
};

/* Why a batch was not taken (the caller falls back to the usual path either way). */
enum vl_packed_batch_why {
	VL_PACKED_BATCH_OK = 0,
	VL_PACKED_BATCH_NOT_HERE,  /* would run past the ring's end */
	VL_PACKED_BATCH_FLAGS,     /* one is not available, or chained, indirect or writable */
	VL_PACKED_BATCH_LONG,      /* a length over max_len */
	VL_PACKED_BATCH_OTHER,     /* a length of min_len or less, an id out of range, a
				    * buffer outside the cursor's range */
};

/* Read n descriptors from d (1 <= n <= VL_PACKED_BATCH, all in one line, none past the
 * ring's end) for the device to read: each length must be more than min_len and at most
 * max_len. Flags are loaded first, all n, then one acquire fence orders every other field
 * after them (the driver writes a descriptor's flags last, spec 2.8.6). Forced inline with n
 * a constant 4 (every loop unrolled: the batch's results belong in registers). */
static VL_ALWAYS_INLINE enum vl_packed_batch_why
vl_packed_batch_read_n(const struct vl_ring *rq, const struct vl_packed_desc *d, const uint32_t n,
		       bool wrap, uint32_t min_len, uint32_t max_len, struct vl_packed_batch *b)
{
	const uint16_t bits = wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED;
	const uint16_t mask = VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_NEXT |
			      VL_DESC_F_INDIRECT | VL_DESC_F_WRITE;
	uint16_t odd = 0;

	/* One test for all n: each must equal bits in every masked position. */
#pragma GCC unroll 4
	for (uint32_t k = 0; k < n; k++)
		odd |= (uint16_t)(vl_guest_load16(&d[k].flags) ^ bits);
	if ((odd & mask) != 0)
		return VL_PACKED_BATCH_FLAGS;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	/* Every field is read, then judged: the tests accumulate without a branch each (a
	 * branch per test cost more than the loads they could have saved). */
	const uint64_t r_gpa = rq->cur.gpa, r_size = rq->cur.size;
	const uintptr_t r_host = (uintptr_t)rq->cur.host;
	const uint32_t size = rq->size;
	bool too_long = false, bad = false;

#pragma GCC unroll 4
	for (uint32_t k = 0; k < n; k++) {
		const uint32_t len = vl_guest_load32(&d[k].len);
		const uint16_t id = vl_guest_load16(&d[k].id);
		const uint64_t addr = vl_guest_load64(&d[k].addr);

		too_long |= len > max_len;
		bad |= len <= min_len;
		bad |= id >= size;
		/* The remembered range only (mem/cursor.h): an address below it wraps high;
		 * size - off is not used when off >= size. A miss goes the usual way, which
		 * searches the table. */
		const uint64_t off = addr - r_gpa;

		bad |= (off >= r_size) | (len > r_size - off);
		b->len[k] = len;
		b->id[k] = id;
		/* Integer arithmetic: a pointer only once the batch is known good. */
		b->host[k] = (uint8_t *)(r_host + (uintptr_t)off);
	}
	if (too_long)
		return VL_PACKED_BATCH_LONG;
	if (bad)
		return VL_PACKED_BATCH_OTHER;
#pragma GCC unroll 4
	for (uint32_t k = 0; k < n; k++) /* the lab build's access check; nothing in production */
		vl_mem_door_check(b->host[k], r_gpa + ((uintptr_t)b->host[k] - r_host), b->len[k],
				  VL_ACCESS_READ);
	return VL_PACKED_BATCH_OK;
}

/* Whether the batch at ring position pos is a whole line of four, for a burst that wants at
 * least want more chains: pos starts a line (descriptors are 16 bytes, the ring 16-byte
 * aligned), four are wanted, and the four end at or before the ring's end (the wrap counter
 * flips only between batches). The position is the device's own. Read it with
 * vl_packed_batch_read_n(rq, &rq->pdesc[pos], VL_PACKED_BATCH, ...); else the part of a line
 * vl_packed_batch_read_part reads. A batch is a line, or the part of one, so it is never split
 * by a line wait. */
static inline bool vl_packed_batch_whole(const struct vl_ring *rq, uint32_t pos, uint32_t want)
{
	return ((uintptr_t)&rq->pdesc[pos] & 63u) == 0 && want >= VL_PACKED_BATCH &&
	       pos + VL_PACKED_BATCH <= rq->size;
}

/* The part of a line: from pos to the line's end (a burst that starts inside a line, where
 * the last one ended), or fewer when fewer are wanted (want > 0); b->n says how many it
 * read. VL_PACKED_BATCH_NOT_HERE when they would run past the ring's end. Out of line: a
 * burst starts with at most one, and may end with one (ring/packed_batch.c). */
enum vl_packed_batch_why vl_packed_batch_read_part(struct vl_ring *rq, uint32_t pos,
						   uint32_t want, bool wrap, uint32_t min_len,
						   uint32_t max_len, struct vl_packed_batch *b);

#endif

/* SPDX-License-Identifier: MIT */
/* Packed ring, device reads (guest-to-host): four chains of one descriptor each, read as one
 * batch. Four 16-byte descriptors fill one 64-byte line; when all four are available, direct,
 * unchained and plain, the usual path's per-chain work (the availability scan's bookkeeping,
 * a window entry per chain, a fetch that re-tests what the scan found) is work the batch
 * does once for the four. Anything unusual -- fewer than four available, a descriptor
 * chained, indirect or device-writable, the batch not starting a line or running past the
 * ring's end, an id out of range, a length outside the caller's bounds, a buffer outside the
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
};

/* Why a batch was not taken (the caller falls back to the usual path either way). */
enum vl_packed_batch_why {
	VL_PACKED_BATCH_OK = 0,
	VL_PACKED_BATCH_NOT_HERE,  /* not line-aligned, or would run past the ring's end */
	VL_PACKED_BATCH_FLAGS,     /* one is not available, or chained, indirect or writable */
	VL_PACKED_BATCH_LONG,      /* a length over max_len */
	VL_PACKED_BATCH_OTHER,     /* a length of min_len or less, an id out of range, a
				    * buffer outside the cursor's range */
};

/* Read the batch at ring position pos (wrap: the driver wrap counter there) for the device to
 * read: each length must be more than min_len and at most max_len. Flags are loaded first,
 * all four, then one acquire fence orders every other field after them (the driver writes a
 * descriptor's flags last, spec 2.8.6). The position is the device's own; only the
 * descriptors' contents come from the guest. Forced inline into the dequeue body: its
 * results belong in registers, and min_len and max_len are the body's locals. */
static VL_ALWAYS_INLINE enum vl_packed_batch_why
vl_packed_batch_read_tx(struct vl_ring *rq, uint32_t pos, bool wrap, uint32_t min_len,
			uint32_t max_len, struct vl_packed_batch *b)
{
	const struct vl_packed_desc *d = &rq->pdesc[pos];

	/* The batch is one line of descriptors (so it is never split by a line wait) and
	 * never wraps: four positions from pos, all before the ring's end. */
	if (pos + VL_PACKED_BATCH > rq->size || ((uintptr_t)d & 63u) != 0)
		return VL_PACKED_BATCH_NOT_HERE;
	const uint16_t bits = wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED;
	const uint16_t mask = VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_NEXT |
			      VL_DESC_F_INDIRECT | VL_DESC_F_WRITE;
	const uint16_t f0 = vl_guest_load16(&d[0].flags), f1 = vl_guest_load16(&d[1].flags);
	const uint16_t f2 = vl_guest_load16(&d[2].flags), f3 = vl_guest_load16(&d[3].flags);

	/* One test for the four: each must equal bits in every masked position. */
	if ((((f0 ^ bits) | (f1 ^ bits) | (f2 ^ bits) | (f3 ^ bits)) & mask) != 0)
		return VL_PACKED_BATCH_FLAGS;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	/* Every field of the four is read, then judged: the tests accumulate without a branch
	 * each (a branch per test cost more than the loads they could have saved). */
	const uint64_t r_gpa = rq->cur.gpa, r_size = rq->cur.size;
	const uintptr_t r_host = (uintptr_t)rq->cur.host;
	const uint32_t size = rq->size;
	uint64_t off[VL_PACKED_BATCH];
	bool too_long = false, bad = false;

#pragma GCC unroll 4
	for (uint32_t k = 0; k < VL_PACKED_BATCH; k++) {
		const uint32_t len = vl_guest_load32(&d[k].len);
		const uint16_t id = vl_guest_load16(&d[k].id);
		const uint64_t addr = vl_guest_load64(&d[k].addr);

		too_long |= len > max_len;
		bad |= len <= min_len;
		bad |= id >= size;
		/* The remembered range only (mem/cursor.h): an address below it wraps high;
		 * size - off is not used when off >= size. A miss goes the usual way, which
		 * searches the table. */
		off[k] = addr - r_gpa;
		bad |= (off[k] >= r_size) | (len > r_size - off[k]);
		b->len[k] = len;
		b->id[k] = id;
	}
	if (too_long)
		return VL_PACKED_BATCH_LONG;
	if (bad)
		return VL_PACKED_BATCH_OTHER;
#pragma GCC unroll 4
	for (uint32_t k = 0; k < VL_PACKED_BATCH; k++) {
		b->host[k] = (uint8_t *)(r_host + (uintptr_t)off[k]);
		/* The lab build's access check; nothing in production. */
		vl_mem_door_check(b->host[k], r_gpa + off[k], b->len[k], VL_ACCESS_READ);
	}
	return VL_PACKED_BATCH_OK;
}

#endif

/* SPDX-License-Identifier: MIT */
/* Packed ring, receive batches: the end of a burst whose first used descriptors were written
 * in place (ring/packed_rx_batch.h). */
#include "ring/packed_rx_batch.h"

void vl_packed_flush_used_direct(struct vl_ring *rq, const struct vl_packed_direct *dir)
{
	typedef uint64_t __attribute__((may_alias)) tail_alias;
	struct vl_packed_desc *ring = rq->pdesc;
	const struct vl_used_elem *sh = rq->shadow;
	const uint32_t n = rq->shadow_count, size = rq->size;
	uint32_t pos = rq->used_pos;
	bool wrap = rq->used_wrap;
	uint16_t wbits = wrap ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0;

	vl_packed_update_kick_wish(rq, false);
	/* Chains the general path took after the batches (the burst went on where they could
	 * not): whole, each in one store, as vl_packed_flush_used writes all but its head. */
	for (uint32_t i = 0; i < n; i++) {
		const uint64_t w = *(const tail_alias *)(const void *)&sh[i];
		const uint16_t flags = (uint16_t)(wbits | ((uint32_t)w ? VL_DESC_F_WRITE : 0));

		__atomic_store_n((tail_alias *)(void *)&ring[pos].len,
				 (w & 0xffffffffffffull) | (uint64_t)flags << 48, __ATOMIC_RELEASE);
		pos += sh[i].ndescs; /* one chain: at most size descriptors */
		if (pos >= size) {
			pos -= size;
			wrap = !wrap;
			wbits ^= VL_PDESC_F_AVAIL | VL_PDESC_F_USED;
		}
	}
	rq->used_pos = (uint16_t)pos;
	rq->used_wrap = wrap;
	/* The burst's first used descriptor last: it exposes the whole burst. */
	__atomic_store_n(&ring[dir->head_pos].flags, dir->head_flags, __ATOMIC_RELEASE);
	rq->stats.used_entries += dir->count + n;
	rq->shadow_count = 0;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vl_lab_chain_begin(); /* the notification decision: a unit of its own */
	rq->needs_call = vl_packed_need_call(rq, dir->head_pos, dir->head_wrap);
	vl_lab_chain_end();
	if (rq->needs_call)
		rq->stats.calls_needed++;
	else
		rq->stats.calls_suppressed++;
}

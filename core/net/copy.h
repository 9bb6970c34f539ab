/* SPDX-License-Identifier: MIT */
/* The copy engine: batched small copies (technique 1 of docs/architecture.md).
 * A copy of at most batch_threshold bytes is queued in the per-queue array instead of being
 * done at once; the array (at most queue-size entries) is flushed once per burst, before the
 * used index is published. A tight loop of independent small copies lets the CPU overlap
 * them; interleaved with descriptor parsing they serialise. Larger copies, and copies once
 * the array is full, happen at once. The counter stays in the queue and is updated in place.
 * Everything here is forced inline (compiler.h): a copy runs once per piece of payload and
 * its threshold test must sit in the caller's loop; vl_copy_flush once per burst, where gcc
 * otherwise reports it past its inlining budget. */
#ifndef VL_NET_COPY_H
#define VL_NET_COPY_H

#include <string.h>

#include "compiler.h"
#include "net/evict.h"
#include "net/net_queue.h"

/* One body for both directions; from_guest is a constant in each wrapper below, so the
 * direction's tests fold away. log_gpa: the guest address dst stands for (its pages go to
 * the dirty log once written) when copying to the guest; VL_NO_LOG when dst is host memory
 * -- a dequeue copy, whose src is the guest's, and whose first source line evict-after-read
 * evicts once it is copied (vl_vq_set_evict_reads). */
/* forced: packed 9000 B mergeable enqueue 2930.33 -> 3095.30 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void vl_copy_body(struct vl_vq *vq, void *dst, const void *src,
					  uint32_t len, uint64_t log_gpa, const bool from_guest)
{
	if (len <= vq->batch_threshold && vq->batch_count < vq->rq.size) {
		struct vl_copy *c = &vq->batch[vq->batch_count++];

		c->dst = dst;
		c->src = src;
		c->len = len;
		c->log_gpa = log_gpa;
		vq->rq.stats.copies_batched++;
		/* A dequeue copy asks for its source's first line now: the flush copies it only
		 * after the rest of the burst's walk, which the miss then overlaps. With the
		 * driver's CPU far away the line comes from its cache, hundreds of ns off, and
		 * a flush loop of small copies overlaps only a few such misses
		 * (docs/architecture.md has the A/B). Payload prefetch's switch governs it. */
		if (from_guest && !vq->tx_prefetch_off) {
			VL_PREFETCH_R(src);
			vq->rq.stats.copy_prefetches++;
		}
		return;
	}
	memcpy(dst, src, len);
	if (!from_guest) {
#ifndef VL_MUTANT_NO_RX_PAYLOAD_LOG /* test-only mutant (CMakeLists.txt): log left out */
		vl_log_write(&vq->rq.log, log_gpa, len);
#endif
	} else if (vq->evict_reads) {
		vl_evict_line(src);
		vq->rq.stats.lines_evicted++;
	}
	vq->rq.stats.copies_direct++;
}

/* Enqueue: len bytes of host memory into the guest's, at guest address gpa (dirty-logged). */
/* forced: split 1518 B enqueue 370.66 -> 371.66 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void vl_copy_to_guest(struct vl_vq *vq, void *dst, const void *src,
					      uint32_t len, uint64_t gpa)
{
	vl_copy_body(vq, dst, src, len, gpa, false);
}

/* Dequeue: len bytes of the guest's memory into a host packet. */
/* forced: split 1518 B dequeue 398.78 -> 402.81 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void vl_copy_from_guest(struct vl_vq *vq, void *dst, const void *src,
						uint32_t len)
{
	vl_copy_body(vq, dst, src, len, VL_NO_LOG, true);
}

/* Perform every queued copy. Must run before the burst's used entries are published. */
/* forced: split 64 B mergeable forward 437.81 -> 439.87 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void vl_copy_flush(struct vl_vq *vq)
{
	const struct vl_copy *c = vq->batch;

	for (uint32_t i = 0, n = vq->batch_count; i < n; i++)
		memcpy(c[i].dst, c[i].src, c[i].len);
	/* Evictions after all the copies, so none waits on a line a later copy still reads. */
	if (vq->evict_reads)
		for (uint32_t i = 0, n = vq->batch_count; i < n; i++)
			if (c[i].log_gpa == VL_NO_LOG) {
				vl_evict_line(c[i].src);
				vq->rq.stats.lines_evicted++;
			}
	/* Logged after the copies (one predictable branch per burst when logging is off). */
	if (vq->rq.log.bitmap)
		for (uint32_t i = 0, n = vq->batch_count; i < n; i++)
			if (c[i].log_gpa != VL_NO_LOG)
				vl_log_write(&vq->rq.log, c[i].log_gpa, c[i].len);
	vq->batch_count = 0;
}

#endif

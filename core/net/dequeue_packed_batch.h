/* SPDX-License-Identifier: MIT */
/* Guest-to-host on the packed ring, four chains at a time: the start of a plain dequeue burst
 * (no zero-copy, no lease held, no offloads) takes as many whole batches of four
 * (ring/packed_batch.h) as it finds, for packets whose copy the burst defers anyway (no
 * longer than the batching threshold, and one pool segment); the usual chain loop of
 * net/dequeue.c takes whatever is left from where the batches stopped. A batch costs one
 * flags test and one set of checks for its four chains, and the burst's heads come from the
 * pool in one call, as the usual path's do (technique 4). Included by net/dequeue.c only. */
#ifndef VL_NET_DEQUEUE_PACKED_BATCH_H
#define VL_NET_DEQUEUE_PACKED_BATCH_H

#include <stddef.h>
#include <string.h>

#include "compiler.h"
#include "mem/prefetch.h"
#include "net/net_queue.h"
#include "pkt/pool_internal.h"
#include "ring/ring.h"
#include "vhostlab/vl_net.h"

/* Bursts that skip the batches after one whose first batch held a length the batches do not
 * take (packets longer than the batching threshold: those the usual path copies at once,
 * with its payload prefetch): a stream of them pays the failed read once in that many
 * bursts, not every burst. */
#define VL_TX_BATCH_RETRY 16

_Static_assert(sizeof(struct vl_used_elem) == 8 && offsetof(struct vl_used_elem, id) == 4 &&
		       offsetof(struct vl_used_elem, ndescs) == 6,
	       "a used element is len, id, ndescs in one little-endian word");

/* Queue the n chains of batch b: their used elements at sh (len 0, the id, one descriptor),
 * their copies at cp (destinations set once the heads are in), each source's first line asked
 * for as vl_copy_body asks for a deferred copy's (net/copy.h). */
/* forced: n is a constant 4 in the usual call, which unrolls the loop */
static VL_ALWAYS_INLINE void tx_queue_batch(const struct vl_vq *vq, const struct vl_packed_batch *b,
					    struct vl_used_elem *sh, struct vl_copy *cp,
					    const uint32_t n, const bool prefetch)
{
	const uint32_t min_len = vq->hdr_len;

#pragma GCC unroll 4
	for (uint32_t k = 0; k < n; k++) {
		/* One 8-byte store for the used element. */
		const uint64_t e = (uint64_t)b->id[k] << 32 | 1ull << 48;

		memcpy(&sh[k], &e, sizeof(e));
		cp[k].src = b->host[k] + min_len;
		cp[k].len = b->len[k] - min_len;
		cp[k].log_gpa = VL_NO_LOG;
		if (prefetch)
			VL_PREFETCH_R(cp[k].src);
	}
}

/* Take whole batches at the window's start into pkts (at most count packets): their heads
 * allocated in one call, their used elements queued, their copies deferred to the burst's
 * flush. Returns how many chains (= packets) were taken, adding their bytes to *bytes. Takes
 * nothing (and leaves the ring and the pool as they were) when the first batch is not one,
 * or the pool cannot give every head: the usual path then serves the burst. */
/* forced: inlined once per instantiation of the plain packed body; its locals stay there */
static VL_ALWAYS_INLINE uint16_t tx_packed_batches(struct vl_vq *vq, struct vl_pool *pool,
						   struct vl_pkt **pkts, uint16_t count,
						   uint64_t *bytes)
{
	struct vl_ring *rq = &vq->rq;

	if (vq->tx_batch_skip > 0) {
		vq->tx_batch_skip--;
		return 0;
	}
	/* Descriptor lengths the batch takes: more than the header, and a packet no longer
	 * than the threshold (so its copy is deferred) and than one pool segment. */
	const uint32_t min_len = vq->hdr_len;
	uint32_t limit = vq->batch_threshold;

	if (limit > pool->buf_size)
		limit = pool->buf_size;
	if (limit > VL_PKT_MAX_LEN)
		limit = VL_PKT_MAX_LEN;
	/* Room: count, which vl_tx_burst_start bounded by the shadow used ring's free entries;
	 * the copy batch (size entries) is empty when a dequeue burst starts (every burst
	 * flushes it, and nothing else queues copies on a guest-to-host queue). */
	const uint32_t room = count;

	if (limit == 0 || room == 0)
		return 0;
	const uint32_t max_len = min_len + limit; /* both small: no overflow */
	const uint32_t size = rq->size;
	uint32_t pos = rq->avail_pos;
	bool wrap = rq->avail_wrap;
	struct vl_used_elem *sh = rq->shadow + rq->shadow_count;
	struct vl_copy *cp = vq->batch + vq->batch_count;
	const bool prefetch = !vq->tx_prefetch_off;
	uint32_t m = 0;

	/* Nothing is committed until the heads are in: the used elements and copies are
	 * written past their arrays' counts, the positions kept in locals. */
	while (m < room) {
		enum vl_packed_batch_why why;
		uint32_t n;

		/* The batch's guest reads (up to four descriptors) form one unit: each field is
		 * read once, and what follows uses the locals. A whole line, with its constant
		 * count (every loop unrolled, the batch in registers), or the part of one. */
		vl_lab_chain_begin();
		if (vl_packed_batch_whole(rq, pos, room - m)) {
			struct vl_packed_batch b;

			n = VL_PACKED_BATCH;
			why = vl_packed_batch_read_n(rq, &rq->pdesc[pos], VL_PACKED_BATCH, wrap,
						     min_len, max_len, &b);
			if (why == VL_PACKED_BATCH_OK)
				tx_queue_batch(vq, &b, sh + m, cp + m, VL_PACKED_BATCH, prefetch);
		} else {
			struct vl_packed_batch b;

			why = vl_packed_batch_read_part(rq, pos, room - m, wrap, min_len, max_len,
							&b);
			n = b.n;
			if (why == VL_PACKED_BATCH_OK)
				tx_queue_batch(vq, &b, sh + m, cp + m, n, prefetch);
		}
		vl_lab_chain_end();
		if (why != VL_PACKED_BATCH_OK) {
			if (why == VL_PACKED_BATCH_LONG && m == 0)
				vq->tx_batch_skip = VL_TX_BATCH_RETRY;
			break;
		}
		m += n;
		pos += n; /* the batch ended at or before the ring's end */
		if (pos == size) {
			pos = 0;
			wrap = !wrap;
		}
	}
	if (m == 0)
		return 0;
	rq->stats.alloc_calls++;
	if (vl_pool_take_bulk(pool, pkts, m) != 0)
		return 0; /* the usual path allocates what the pool has */
	uint64_t b = 0;

	for (uint32_t i = 0; i < m; i++) {
		struct vl_pkt *pkt = pkts[i];
		const uint32_t len = cp[i].len;

		/* One segment: len <= buf_size (the batch's bound). */
		vl_pkt_reset_len(pkt, len);
		cp[i].dst = pkt->buf;
		rq->stats.size_bins[vl_size_bin(len)]++;
		b += len;
	}
	*bytes += b;
	rq->shadow_count += m;
	vq->batch_count += m;
	rq->avail_pos = (uint16_t)pos;
	rq->avail_wrap = wrap;
	rq->stats.alloc_bufs += m;
	rq->stats.chains += m;
	rq->stats.tx_batched += m;
	rq->stats.copies_batched += m;
	if (prefetch)
		rq->stats.copy_prefetches += m;
	return (uint16_t)m;
}

#endif

/* SPDX-License-Identifier: MIT */
/* Dequeue: guest TX chains become host packets. One body, instantiated per ring layout.
 * dequeue_body and its per-packet helpers are forced inline (compiler.h): without it gcc and
 * clang keep one out-of-line body with the layout as a run-time argument, and the per-chain
 * layout tests of ring/ring.h no longer fold away. */
#include "compiler.h"
#include "net/copy.h"
#include "net/dequeue_packed_batch.h"
#include "net/net_hdr.h"
#include "net/tx_gso_check.h"
#include "net/zero_copy.h"
#include "pkt/pool_internal.h"
#include "ring/ring.h"
#include "vhostlab/vl_net.h"

/* Validate what a walked TX chain holds and read its header: the chain must be longer than
 * the header (CVE-2022-2132: a chain no longer than the header carries no packet), the packet
 * must fit VL_PKT_MAX_LEN, and the offload fields must point inside the packet. ol is
 * filled only when offloads were negotiated (vq->tx_offloads); the caller copies it then. */
/* forced: packed 64 B csum dequeue 310.95 -> 311.97 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE enum vl_drop tx_check(const struct vl_vq *vq, uint32_t np, uint32_t total,
					      struct vl_offload *ol, uint32_t *pkt_len,
					      const bool plain)
{
	uint8_t hdr[12];

	if (total <= vq->hdr_len)
		return VL_DROP_SHORT_CHAIN;
	*pkt_len = total - vq->hdr_len;
	if (*pkt_len > VL_PKT_MAX_LEN)
		return VL_DROP_TX_TOO_BIG;
	/* Without VIRTIO_NET_F_CSUM nothing in the header means anything: the driver must send
	 * flags 0 and no GSO (every GSO feature needs CSUM, spec 5.1.3.1), and a device may
	 * ignore the header, as DPDK's vhost library does. It is not read at all: its cache
	 * line, which the driver writes for every packet, stays in the driver's cache. */
	if (plain || !vq->tx_offloads)
		return VL_DROP_NONE; /* ol untouched: the packet keeps the none it was reset to */
	/* The usual case inline: the whole header in the first piece, read as one fixed-size
	 * copy (10 or 12 bytes, the only header lengths); a header that straddles pieces
	 * takes the general walk. */
	if (vq->rq.pieces[0].len >= vq->hdr_len && vq->hdr_len == 12)
		vl_guest_load_bytes(hdr, vq->rq.pieces[0].host, 12);
	else if (vq->rq.pieces[0].len >= vq->hdr_len && vq->hdr_len == 10)
		vl_guest_load_bytes(hdr, vq->rq.pieces[0].host, 10);
	else
		vl_net_hdr_gather(vq->rq.pieces, np, vq->hdr_len, hdr);
	return vl_net_hdr_to_offload(hdr, *pkt_len, vq->tx_gso_allowed, ol);
}

/* Copy the chain's bytes after the header into the packet's segments. */
/* forced: split 64 B mergeable forward 437.81 -> 466.53 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void tx_copy_payload(struct vl_vq *vq, uint32_t np, struct vl_pkt *pkt)
{
	uint32_t skip = vq->hdr_len;
	struct vl_pkt *seg = pkt;
	uint32_t seg_off = 0;

	/* The usual case on its own: one piece holds header and payload, one segment the
	 * packet (sized to the chain, so the lengths agree). */
	if (np == 1 && !pkt->next) {
		vl_copy_from_guest(vq, pkt->data, vq->rq.pieces[0].host + skip, pkt->data_len);
		return;
	}
	/* Several pieces into one segment (a Linux guest's headers and data apart): the pieces
	 * land one after another, with no segment bookkeeping. */
	if (!pkt->next) {
		uint8_t *dst = pkt->data;

		for (uint32_t i = 0; i < np; i++) {
			uint32_t left = vq->rq.pieces[i].len;

			if (skip >= left) {
				skip -= left;
				continue;
			}
			left -= skip;
			vl_copy_from_guest(vq, dst, vq->rq.pieces[i].host + skip, left);
			dst += left;
			skip = 0;
		}
		return;
	}
	for (uint32_t i = 0; i < np; i++) {
		const uint8_t *src = vq->rq.pieces[i].host;
		uint32_t left = vq->rq.pieces[i].len;

		if (skip >= left) {
			skip -= left;
			continue;
		}
		src += skip;
		left -= skip;
		skip = 0;
		while (left > 0) {
			/* The packet was sized to the chain, so a segment is always there. */
			if (seg_off == seg->data_len) {
				seg = seg->next;
				seg_off = 0;
			}
			uint32_t n = seg->data_len - seg_off;

			if (n > left)
				n = left;
			vl_copy_from_guest(vq, seg->data + seg_off, src, n);
			seg_off += n;
			src += n;
			left -= n;
		}
	}
}

static inline void count_drop(struct vl_vq *vq, enum vl_drop why)
{
	vq->rq.stats.drops[why]++;
}

/* Return a chain the device is done with: at once, or -- under IN_ORDER, behind a chain a
 * zero-copy packet still holds -- in its turn. */
/* forced: packed 64 B csum dequeue 310.95 -> 312.92 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void tx_done(struct vl_vq *vq, const enum vl_layout L,
				     const struct vl_chain *c, const bool plain)
{
	if (!plain && vl_zc_must_queue(vq))
		vl_zc_take(vq, c, true);
	else
		vl_ring_push_used(&vq->rq, L, c, 0);
}

/* Packet heads for this burst (technique 4): exactly one per available chain under the
 * AVAILABLE policy (nothing at all for an empty ring), `count` under BURST. When the pool
 * has fewer, take what it has. Returns how many heads vq->heads holds. */
/* forced: packed 64 B csum dequeue 310.95 -> 311.98 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE uint32_t tx_alloc_heads(struct vl_vq *vq, struct vl_pool *pool,
						uint16_t avail, uint16_t count)
{
	uint32_t want = vq->alloc_policy == VL_ALLOC_BURST ? count : avail;

	if (want > vq->rq.size)
		want = vq->rq.size;
	if (want == 0)
		return 0;
	vq->rq.stats.alloc_calls++;
	if (vl_pool_alloc_bulk(pool, vq->heads, want) != 0) {
		/* A pool that is merely short gives what it has; one that refuses (or has
		 * nothing) gives nothing this burst. */
		uint32_t have = vl_pool_free_count(pool);

		if (have == 0 || have >= want || vl_pool_alloc_bulk(pool, vq->heads, have) != 0)
			want = 0;
		else
			want = have;
	}
	vq->rq.stats.alloc_bufs += want;
	return want;
}

/* Heads [from, to) go back to their pool unused: a short pool needs them as segments. */
static inline void tx_give_back_heads(struct vl_vq *vq, uint32_t from, uint32_t to)
{
	vl_pkt_free_bulk(vq->heads + from, to - from);
	vq->rq.stats.alloc_unused += to - from;
}

/* Grow head `used` to pkt_len bytes. When the pool is short, the heads not yet used are
 * given back first so they can serve as this packet's segments. */
static inline int tx_extend(struct vl_vq *vq, struct vl_pkt *pkt, uint32_t pkt_len,
			    uint32_t used, uint32_t *nheads)
{
	/* The usual case inline: the packet fits its head segment (vl_pkt_extend does the
	 * same for one segment, behind a call, a division and a loop). */
	if (pkt_len <= pkt->pool->buf_size) {
		pkt->data_len = pkt_len;
		pkt->pkt_len = pkt_len;
		pkt->nb_segs = 1;
		return 0;
	}
	if (vl_pkt_extend(pkt, pkt_len) == 0)
		return 0;
	if (*nheads <= used + 1)
		return -1;
	tx_give_back_heads(vq, used + 1, *nheads);
	*nheads = used + 1;
	return vl_pkt_extend(pkt, pkt_len);
}

/* vl_tx_gso_check_guest in a chain unit of its own: the chain's descriptors and header were
 * the first; these are the frame's header bytes, not read before. */
static VL_NOINLINE enum vl_drop tx_zc_gso_check(const struct vl_vq *vq, uint32_t np,
						uint32_t pkt_len, const struct vl_offload *ol)
{
	vl_lab_chain_begin();
	const enum vl_drop why = vl_tx_gso_check_guest(vq->rq.pieces, np, vq->hdr_len, pkt_len, ol);

	vl_lab_chain_end();
	return why;
}

/* The GSO packets of a burst that were copied, checked against their frames now that the
 * copies are in (the batch flushed): the check reads the host copy, the bytes the
 * application gets, never guest memory again. A refused packet is freed (its chain went back
 * already, as every copied chain does) and counted; the rest close up in pkts. Returns how
 * many packets are left; *bytes loses the refused ones' bytes. Zero-copy packets were
 * checked before they were leased (vl_tx_gso_check_guest). */
static VL_NOINLINE uint16_t tx_gso_recheck(struct vl_vq *vq, struct vl_pkt **pkts, uint16_t got,
					   uint64_t *bytes)
{
	uint16_t kept = 0;

	for (uint16_t i = 0; i < got; i++) {
		struct vl_pkt *pkt = pkts[i];
		enum vl_drop why = VL_DROP_NONE;

		if (pkt->ol.gso_type != VL_NET_HDR_GSO_NONE && !pkt->release)
			why = vl_tx_gso_check(pkt, &pkt->ol);
		if (why == VL_DROP_NONE) {
			pkts[kept++] = pkt;
			continue;
		}
		count_drop(vq, why);
		*bytes -= pkt->pkt_len;
		vq->rq.stats.size_bins[vl_size_bin(pkt->pkt_len)]--;
		vl_pkt_free(pkt);
	}
	return kept;
}

/* plain (a compile-time constant, like L): the burst started with zero-copy off, no lease
 * held and no offloads negotiated, so none of their per-chain tests can come out true (a
 * lease is only taken with zero-copy on or behind a held one). */
/* forced: split 1518 B zero-copy dequeue 272.12 -> 287.66 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE uint16_t dequeue_body(struct vl_vq *vq, struct vl_pool *pool,
					      struct vl_pkt **pkts, uint16_t count,
					      const enum vl_layout L, const bool plain)
{
	uint16_t got = 0, consumed = 0;
	uint32_t nheads, used_heads = 0;
	uint64_t bytes = 0; /* counted here, added to the stats once (got counts the packets) */

	if (!vl_tx_burst_start(vq, &count))
		return 0;
	vl_lab_burst_begin(); /* the window reads: avail->idx, the packed scan */
	vl_ring_begin(&vq->rq, L);
	/* Plain packed bursts take whole batches of four first (net/dequeue_packed_batch.h);
	 * the chain loop below takes the rest, from where they stopped. */
	if (L == VL_LAYOUT_PACKED && plain && vq->alloc_policy == VL_ALLOC_AVAILABLE) {
		got = tx_packed_batches(vq, pool, pkts, count, &bytes);
		count = (uint16_t)(count - got);
	}
	uint16_t n = vl_ring_avail_tx_have(&vq->rq, L, count, got > 0);

	nheads = tx_alloc_heads(vq, pool, n, count);
	/* Payload prefetch (vl_ring_prefetch_ahead) unless turned off, for the copies made at
	 * once (a zero-copy packet is not read at all). When a burst finds nothing to ask for
	 * (small packets, or chains of several descriptors), the next VL_TX_PREFETCH_RETRY
	 * bursts with chains skip even the peeks, then one tries again. */
	const bool pf_try = (plain || !vq->zc_on) && !vq->tx_prefetch_off &&
			    vq->tx_prefetch_skip == 0;
	uint32_t pf_next = pf_try && n > 0 ? 0 : VL_TX_PREFETCH_NONE;
	const uint64_t pf_before = vq->rq.stats.payload_prefetches;

	if (!pf_try && n > 0 && vq->tx_prefetch_skip > 0)
		vq->tx_prefetch_skip--;
	/* The chains in runs that end where the next payload prefetch is due (all of them in
	 * one run when none is): the inner loop's bound is the only test a chain pays, and the
	 * call comes before a chain's np and total are set. (Tested in the chain loop, the
	 * compare cost 4 instructions a packet; called after np and total were set, 8 more:
	 * their addresses escape to the general chain walk, so the compiler no longer knew them
	 * zero after the call and redid the first piece's checks. Callgrind, split 64 bytes.) */
	for (uint16_t i = 0; i < n;) {
		if (i == pf_next)
			pf_next = vl_ring_prefetch_ahead(&vq->rq, L, i, n, vq->hdr_len,
							 (uint64_t)vq->hdr_len +
								 vq->batch_threshold);

		const uint16_t run_end = pf_next < n ? (uint16_t)pf_next : n;

		for (; i < run_end; i++) {
			struct vl_chain c;
			uint32_t np = 0, total = 0, pkt_len = 0;
			struct vl_offload ol;

			/* One chain's guest reads (descriptors, then its header) form one unit:
			 * each field is read once into a local; what follows uses locals and
			 * payload. */
			vl_lab_chain_begin();
			enum vl_drop why = vl_ring_fetch(&vq->rq, L, consumed, VL_DIR_DEVICE_READS, &c,
							 &np, &total);

			/* This chain has no id it could be returned under: stop. (The packed scan
			 * may have broken the queue already on a lie further ahead; the chains
			 * before the lie are sound and are served first, as split serves those
			 * before a bad head.) */
			if (why == VL_DROP_HEAD_OUT_OF_RANGE || why == VL_DROP_ID_OUT_OF_RANGE) {
				vl_lab_chain_end();
				goto burst_end;
			}
			/* Under IN_ORDER every chain behind a held one needs a lease; at the bound
			 * (in ring descriptors) the burst stops so the guest keeps the rest of its
			 * descriptors. */
			if (!plain && vl_zc_must_queue(vq) && !vl_zc_room(vq, &c)) {
				vq->rq.stats.zc_stalls++;
				vl_lab_chain_end();
				goto burst_end;
			}
			if (why == VL_DROP_NONE)
				why = tx_check(vq, np, total, &ol, &pkt_len, plain);
			vl_lab_chain_end();
			if (why != VL_DROP_NONE) {
				/* Return the chain (the guest gets its descriptors back) and
				 * skip it. */
				count_drop(vq, why);
				tx_done(vq, L, &c, plain);
				consumed++;
				continue;
			}
			if (used_heads == nheads) {
				/* Leave this chain available: the next burst serves it. */
				vq->rq.stats.alloc_failures++;
				goto burst_end;
			}
			struct vl_pkt *pkt = vq->heads[used_heads];
			bool zc = false;

			if (!plain && vq->zc_on) {
				const uint8_t *one;

				if (pkt_len < vq->zc_min_len) {
					vq->rq.stats.zc_fallbacks[VL_ZC_FALLBACK_SMALL]++;
				} else if (vq->tx_offloads && ol.gso_type != VL_NET_HDR_GSO_NONE &&
					   (why = tx_zc_gso_check(vq, np, pkt_len, &ol)) !=
						   VL_DROP_NONE) {
					/* A GSO packet to be leased is checked against its frame
					 * now: leased, it is never copied (copies are checked after
					 * the burst's flush). */
					count_drop(vq, why);
					tx_done(vq, L, &c, plain);
					consumed++;
					continue;
				} else if (!vl_zc_room(vq, &c)) {
					vq->rq.stats.zc_fallbacks[VL_ZC_FALLBACK_LIMIT]++;
				} else if ((one = vl_zc_payload(vq, np, pkt_len)) != NULL) {
					pkt->data = (uint8_t *)(uintptr_t)one;
					pkt->data_len = pkt_len;
					pkt->pkt_len = pkt_len;
					zc = true;
				} else if (vl_zc_gather(vq, pool, np, pkt_len, pkt)) {
					zc = true;
				} else {
					vq->rq.stats.zc_fallbacks[VL_ZC_FALLBACK_SCATTERED]++;
				}
			}
			if (zc) {
				/* The packet is the guest's buffers; the chain is leased until
				 * it is freed. */
				pkt->release = vl_zc_release;
				pkt->release_ctx = vq;
				pkt->release_tag = vl_zc_take(vq, &c, false);
				vq->rq.stats.zc_packets++;
			} else {
				if (tx_extend(vq, pkt, pkt_len, used_heads, &nheads) != 0) {
					/* Segment chaining failed even with the spare heads given
					 * back: this chain stays available for the next burst. */
					vq->rq.stats.alloc_failures++;
					goto burst_end;
				}
				tx_copy_payload(vq, np, pkt);
				tx_done(vq, L, &c, plain);
			}
			used_heads++;
			if (!plain && vq->tx_offloads)
				pkt->ol = ol;
			pkts[got++] = pkt;
			bytes += pkt_len;
			vq->rq.stats.size_bins[vl_size_bin(pkt_len)]++;
			consumed++;
		}
	}
burst_end:
	if (pf_try && n > 0)
		vq->tx_prefetch_skip =
			vq->rq.stats.payload_prefetches == pf_before ? VL_TX_PREFETCH_RETRY : 0;
	if (used_heads < nheads)
		tx_give_back_heads(vq, used_heads, nheads);
	if (consumed == 0 && got == 0)
		vq->rq.stats.empty_bursts++;
	vl_ring_consume(&vq->rq, L, consumed);
	vl_lab_burst_end();
	/* Copies first: once used->idx moves, the guest may reuse the buffers we read. */
	vl_copy_flush(vq);
	/* Only a queue with a HOST_* GSO feature can have let a GSO packet through. */
	if (!plain && vq->tx_gso_allowed && got)
		got = tx_gso_recheck(vq, pkts, got, &bytes);
	vq->rq.stats.packets += got;
	vq->rq.stats.bytes += bytes;
	vl_ring_flush_used(&vq->rq, L);
	return got;
}

static uint16_t dequeue_split(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			      uint16_t count)
{
	return dequeue_body(vq, pool, pkts, count, VL_LAYOUT_SPLIT, false);
}

static uint16_t dequeue_packed(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			       uint16_t count)
{
	return dequeue_body(vq, pool, pkts, count, VL_LAYOUT_PACKED, false);
}

static uint16_t dequeue_split_plain(struct vl_vq *vq, struct vl_pool *pool,
				    struct vl_pkt **pkts, uint16_t count)
{
	return dequeue_body(vq, pool, pkts, count, VL_LAYOUT_SPLIT, true);
}

static uint16_t dequeue_packed_plain(struct vl_vq *vq, struct vl_pool *pool,
				     struct vl_pkt **pkts, uint16_t count)
{
	return dequeue_body(vq, pool, pkts, count, VL_LAYOUT_PACKED, true);
}

uint16_t vl_net_dequeue(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			uint16_t count)
{
	/* Dispatch once per burst. vl_tx_burst_start may return leases (zc_held_descs), never take
	 * one, so zc_order_count only falls before the body runs. */
	const bool plain = !vq->zc_on && vq->zc_order_count == 0 && !vq->tx_offloads;

	if (vq->rq.layout == VL_LAYOUT_PACKED)
		return plain ? dequeue_packed_plain(vq, pool, pkts, count)
			     : dequeue_packed(vq, pool, pkts, count);
	return plain ? dequeue_split_plain(vq, pool, pkts, count)
		     : dequeue_split(vq, pool, pkts, count);
}

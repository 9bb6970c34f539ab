/* SPDX-License-Identifier: MIT */
/* Writing packets into receive buffers already reserved for them: the header (built in the
 * queue's per-packet slot, stored with the burst's batch), the payload over the chains'
 * pieces, and the prefetch that asks for their lines ahead. Shared by the unified enqueue
 * (net/enqueue.c) and the specialised non-mergeable path it is measured against
 * (net/enqueue_nonmergeable.c, technique 2), which differ only in how they reserve chains.
 * Each runs once per packet inside a per-layout body; those forced (compiler.h) say what
 * forcing buys. */
#ifndef VL_NET_RX_FILL_H
#define VL_NET_RX_FILL_H

#include <string.h>

#include "compiler.h"
#include "net/copy.h"
#include "net/net_hdr.h"
#include "ring/ring.h"

/* Ask now for the lines a receive piece at `host` will be written to: `hdr` header bytes
 * at its start, then payload, `take` bytes in all (1 <= take, hdr <= take). The stores come
 * at the burst's flush (rx_store_hdrs, vl_copy_flush), by which time the lines of the whole
 * burst have been on their way together instead of one miss after another. The payload's
 * first and last lines with intent to write (the same line for most small packets; large
 * ones are copied at once, not batched, and stream the lines between). A line holding
 * header bytes and no payload only to read: rx_store_hdrs usually finds the header right
 * and leaves it, and the driver's copy of the line with it. Every address asked for is
 * inside the piece, but where the piece takes no payload (hdr == take), whose "first payload
 * byte" is one past it: a prefetch never faults, and a line asked for in vain costs only
 * time. */
static inline void rx_prefetch(const uint8_t *host, uint32_t hdr, uint32_t take)
{
	const uint8_t *data = host + hdr;

	if ((((uintptr_t)host ^ (uintptr_t)data) >> 6) != 0)
		VL_PREFETCH_R(host);
	VL_PREFETCH_W(data);
	VL_PREFETCH_W(host + take - 1);
}

/* Write a packet's header (num_buffers = nbufs) and payload over vq->rq.pieces from index 0,
 * the pieces of the chains reserved for it, in order. The header is built in the packet's
 * slot nth of vq->rx_hdrs. Small payload copies go through the batch. */
static inline void rx_write_pkt(struct vl_vq *vq, const struct vl_pkt *pkt,
				uint32_t nbufs, uint16_t nth)
{
	struct vl_rx_hdr *slot = &vq->rx_hdrs[nth];
	const uint8_t *hdr = slot->bytes;
	const struct vl_piece *pc = &vq->rq.pieces[0];
	uint32_t piece = 0, piece_off = 0;

	vl_net_hdr_from_offload(&pkt->ol, vq->mergeable, (uint16_t)nbufs, slot->bytes);

	/* The usual case: the first piece holds the header, and rx_store_hdrs stores it just
	 * before the burst's payload batch is flushed, so the stores into the guest's buffers
	 * come together, after the reservation's prefetches (rx_prefetch) have had the burst's
	 * time to bring the lines. Otherwise (no batching, or a header scattered over pieces)
	 * it goes through the copy engine now. */
	uint32_t done = 0;

	slot->dst = NULL;
	if (pc[0].len >= vq->hdr_len) {
		if (vq->batch_threshold >= vq->hdr_len) {
			slot->dst = pc[0].host;
			slot->gpa = pc[0].gpa;
			vq->rq.stats.copies_batched++; /* a small copy done at the flush, like one */
		} else {
			vl_copy_to_guest(vq, pc[0].host, hdr, vq->hdr_len, pc[0].gpa);
		}
		done = piece_off = vq->hdr_len;
		if (piece_off == pc[0].len) {
			piece = 1;
			piece_off = 0;
		}
	}
	while (done < vq->hdr_len) {
		uint32_t n = pc[piece].len - piece_off;

		if (n > vq->hdr_len - done)
			n = vq->hdr_len - done;
		vl_copy_to_guest(vq, pc[piece].host + piece_off, hdr + done, n,
				 pc[piece].gpa + piece_off);
		done += n;
		piece_off += n;
		if (piece_off == pc[piece].len) {
			piece++;
			piece_off = 0;
		}
	}
	/* Pieces of consecutive reserved chains are consecutive in vq->rq.pieces, so the payload
	 * is one walk over segments and pieces. */
	for (const struct vl_pkt *seg = pkt; seg; seg = seg->next) {
		const uint8_t *src = seg->data;
		uint32_t left = seg->data_len;

		while (left > 0) {
			uint32_t n = pc[piece].len - piece_off;

			if (n > left)
				n = left;
			vl_copy_to_guest(vq, pc[piece].host + piece_off, src, n,
					 pc[piece].gpa + piece_off);
			src += n;
			left -= n;
			piece_off += n;
			if (piece_off == pc[piece].len) {
				piece++;
				piece_off = 0;
			}
		}
	}
}

/* The usual case: a one-segment packet whose header and data the chain c's first piece
 * (vq->rq.pieces[0]) holds whole. One header slot (or, with batching off, one header copy),
 * one payload copy, one used entry; no bookkeeping of reserved chains. The buffer's lines
 * are asked for now (rx_prefetch), as rx_reserve does, and written at the burst's flush. */
/* forced: packed 64 B enqueue 260.75 -> 286.72 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void rx_fill_one(struct vl_vq *vq, const enum vl_layout L,
					 const struct vl_pkt *pkt, const struct vl_chain *c,
					 uint32_t need, uint16_t nth)
{
	const struct vl_piece *pc = &vq->rq.pieces[0];
	struct vl_rx_hdr *slot = &vq->rx_hdrs[nth];
	const uint32_t hdr_len = vq->hdr_len;

	rx_prefetch(pc->host, hdr_len, need);
	vl_net_hdr_from_offload(&pkt->ol, vq->mergeable, 1, slot->bytes);
	if (vq->batch_threshold >= hdr_len) {
		slot->dst = pc->host;
		slot->gpa = pc->gpa;
		vq->rq.stats.copies_batched++; /* the header: a small copy done at the flush */
	} else {
		slot->dst = NULL; /* no batching: stored now, as every copy is */
		vl_copy_to_guest(vq, pc->host, slot->bytes, hdr_len, pc->gpa);
	}
	if (pkt->data_len > 0)
		vl_copy_to_guest(vq, pc->host + hdr_len, pkt->data, pkt->data_len,
				 pc->gpa + hdr_len);
	vl_ring_push_used(&vq->rq, L, c, need);
}

/* rx_store_hdrs for one header length, a constant where it is inlined, so the compare and
 * the copy are a few loads and stores. Returns the headers kept. */
static inline uint32_t rx_store_hdrs_of(const struct vl_rx_hdr *hdrs, uint16_t n,
					const uint32_t len)
{
	uint32_t kept = 0;

	for (uint16_t i = 0; i < n; i++) {
		const struct vl_rx_hdr *h = &hdrs[i];

		if (!h->dst)
			continue;
		if (memcmp(h->dst, h->bytes, len) == 0)
			kept++;
		else
			memcpy(h->dst, h->bytes, len);
	}
	return kept;
}

/* The headers rx_write_pkt and rx_fill_one left in vq->rx_hdrs[0..n): one fixed-size copy
 * each (10 or 12 bytes, the only header lengths), inline -- unless the buffer holds those
 * bytes already. A driver
 * that recycles its buffers (DPDK's virtio PMD: the same mbufs come back within a few
 * bursts) finds last time's header there, usually the same one. Its line is then shared
 * between the driver's cache (it read num_buffers) and ours, and reading it costs nothing
 * where a store would take the line from the driver and have it fetched back, two
 * transfers per packet when the two CPUs are far apart. DPDK's enqueue also assigns each
 * header field only when it differs. The bytes may change under us (the guest's buffer):
 * the compare is a hint, and what the guest reads is its own doing either way. */
/* forced: packed 1518 B mergeable enqueue 410.59 -> 413.31 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void rx_store_hdrs(struct vl_vq *vq, uint16_t n)
{
	const uint32_t hdr_len = vq->hdr_len;

	vq->rq.stats.rx_hdrs_kept += hdr_len == 12 ? rx_store_hdrs_of(vq->rx_hdrs, n, 12)
						: rx_store_hdrs_of(vq->rx_hdrs, n, 10);
	/* Logged after the stores, kept ones too: the device wrote the header, as far as a
	 * migration is concerned (one predictable branch per burst when logging is off). */
	if (vq->rq.log.bitmap)
		for (uint16_t i = 0; i < n; i++)
			if (vq->rx_hdrs[i].dst)
				vl_log_write(&vq->rq.log, vq->rx_hdrs[i].gpa, hdr_len);
}

/* The start of a burst: false when the queue is broken (nothing is read then). The window
 * reads (avail->idx, the packed scan, lazy here) form one unit per burst. */
static inline bool rx_burst_begin(struct vl_vq *vq, const enum vl_layout L)
{
	vq->rq.stats.bursts++;
	if (vq->rq.broken)
		return false;
	vl_lab_burst_begin();
	vl_ring_begin(&vq->rq, L);
	return true;
}

/* A packet that cannot be delivered for its size: counted, its status set. */
/* forced: packed 1518 B mergeable enqueue 410.59 -> 413.72 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void rx_dropped_too_big(struct vl_vq *vq, uint8_t *status,
						uint16_t handled)
{
	vq->rq.stats.drops[VL_DROP_RX_TOO_BIG]++;
	if (status)
		status[handled] = VL_RX_DROPPED_TOO_BIG;
}

/* Whether a packet cannot go to this driver as it is: too long, or offloads it did not
 * negotiate (then counted and its status set). A packet without offloads, or with the
 * checksum flags the driver takes, costs the one test of its flags and GSO type against
 * the queue's mask; only a GSO type or a refused flag takes the full check. */
static VL_ALWAYS_INLINE bool rx_refused(struct vl_vq *vq, const struct vl_pkt *pkt,
					uint8_t *status, uint16_t handled)
{
	if (pkt->pkt_len > VL_PKT_MAX_LEN) {
		rx_dropped_too_big(vq, status, handled);
		return true;
	}
	if (__builtin_expect(((pkt->ol.flags & vq->rx_flags_bad) | pkt->ol.gso_type) == 0, 1))
		return false;
	const enum vl_drop why = vl_net_rx_check(vq->rx_flags_bad, vq->rx_gso_allowed, &pkt->ol);

	if (why == VL_DROP_NONE)
		return false;
	vq->rq.stats.drops[why]++;
	if (status)
		status[handled] = VL_RX_DROPPED_OFFLOAD;
	return true;
}

/* A packet written: its bytes and size to the counters, its status. (The packet count goes
 * to the stats once per burst.) */
/* forced: packed 9000 B mergeable enqueue 2930.33 -> 2933.43 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void rx_delivered(struct vl_vq *vq, const struct vl_pkt *pkt,
					  uint8_t *status, uint16_t handled, uint64_t *bytes)
{
	*bytes += pkt->pkt_len;
	vq->rq.stats.size_bins[vl_size_bin(pkt->pkt_len)]++;
	if (status)
		status[handled] = VL_RX_DELIVERED;
}

/* The end of a burst that consumed the first `consumed` chains of the window and wrote
 * `delivered` packets: counters, the window, then every byte in place (headers, the batch)
 * before the used entries tell the guest it is there. */
/* forced: packed 1518 B mergeable enqueue 410.59 -> 413.53 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void rx_burst_end(struct vl_vq *vq, const enum vl_layout L,
					  uint16_t delivered, uint64_t bytes, uint16_t consumed)
{
	vq->rq.stats.packets += delivered;
	vq->rq.stats.bytes += bytes;
	if (consumed == 0)
		vq->rq.stats.empty_bursts++;
	vl_ring_consume(&vq->rq, L, consumed);
	vl_lab_burst_end();
	rx_store_hdrs(vq, delivered);
	vl_copy_flush(vq);
	vl_ring_flush_used(&vq->rq, L);
}

#endif

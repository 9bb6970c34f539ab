/* SPDX-License-Identifier: MIT */
/* The packed ring's receive fast path: small packets four at a time into four single
 * descriptors (ring/packed_rx_batch.h), header and payload written at once, used descriptors
 * in place. It runs at the start of a packed enqueue burst and stops at the first group of
 * four it cannot take whole; the general path (net/enqueue.c) carries on from there with the
 * rest of the burst, and takes whole bursts the batch cannot start.
 *
 * A group is taken only when all of it is the usual case: dirty logging off, copy batching
 * on (technique 1: these are the small copies it batches, done here together, four after
 * their four descriptors were checked, instead of at the burst's end), four one-segment
 * packets of 1 .. batch_threshold bytes without offloads the driver must be asked about,
 * and four available, single, direct, device-writable descriptors that hold header and
 * packet whole in the queue's memory range. Anything else -- a long or chained packet, an
 * offload to check, a chained, indirect, short or unmapped buffer, an id out of range, the
 * ring's end inside the group, fewer than four buffers, logging -- leaves the group to the
 * general path untouched. Guest values are read once each (the ring layer's peek), checked,
 * then used; if refused, they are read again by the general path, which trusts nothing of
 * these. (The header is always 12 bytes: a packed ring has VERSION_1.)
 *
 * What the general path counts is counted the same way: packets, bytes, size bins, chains,
 * used entries, headers kept, and each header and payload as a batched copy. */
#ifndef VL_NET_RX_BATCH_PACKED_H
#define VL_NET_RX_BATCH_PACKED_H

#include <string.h>

#include "compiler.h"
#include "net/net_queue.h"
#include "net/rx_fill.h"
#include "ring/packed_rx_batch.h"
#include "vhostlab/vl_net.h"

/* Can the burst use batches at all? Settings and the queue's state, once per burst. */
static inline bool rx_batch_usable(const struct vl_vq *vq)
{
	/* The header is 12 bytes: a packed ring has VERSION_1 (vl_net_hdr_len). */
	return vq->batch_threshold >= 12 && vq->rq.log.bitmap == NULL && !vq->rq.broken;
}

/* The header the guest will see, as a 12-byte header's first 8 and last 4 bytes: struct
 * vl_offload is the header's first 10 bytes in order (flags, gso_type, then four
 * little-endian 16-bit fields: vl_pkt.h), num_buffers is 1. */
_Static_assert(sizeof(struct vl_offload) == 10, "vl_offload is the header's first 10 bytes");

/* Store the header at dst unless the buffer holds those bytes already (rx_store_hdrs says
 * why a store is avoided). Returns 1 when kept. The guest's bytes are only compared: what
 * it reads there is its own doing either way. */
static inline uint32_t rx_batch_hdr(uint8_t *dst, const struct vl_offload *ol)
{
	uint64_t lo, glo;
	uint16_t csum_offset;
	uint32_t glast;

	memcpy(&lo, ol, 8);
	memcpy(&csum_offset, (const uint8_t *)ol + 8, 2);
	const uint32_t last = csum_offset | 1u << 16;

	memcpy(&glo, dst, 8);
	memcpy(&glast, dst + 8, 4);
	if (glo == lo && glast == last)
		return 1;
	memcpy(dst, &lo, 8);
	memcpy(dst + 8, &last, 4);
	return 0;
}

/* Does packet p qualify for a group? One segment of 1 .. limit bytes (limit: the batching
 * threshold, at most VL_PKT_MAX_LEN), no offload the driver must be asked about. */
static inline bool rx_batch_pkt_ok(const struct vl_pkt *p, uint32_t limit, uint8_t flags_bad)
{
	return p->next == NULL && p->data_len - 1u < limit && p->data_len == p->pkt_len &&
	       ((p->ol.flags & flags_bad) | p->ol.gso_type) == 0;
}

/* Start a burst (count >= 4, rx_batch_usable) with groups of four from pkts[0..count) while
 * they qualify. -1 when the first four packets do not: nothing is done, the burst is the
 * general path's from its start. Else the burst has begun (rx_burst_begin) and the result is
 * the packets delivered in groups, a multiple of four, 0 included (the ring did not offer a
 * group): the general path goes on from there, without beginning again. Out of line: once
 * per burst, and inlined into the enqueue body it reshaped the general path's code
 * (callgrind, packed 1518 B enqueue, which never takes a group: 8.3 instructions a packet
 * more than without the batches, 3.6 of them its test of all four packets at once). */
static VL_NOINLINE int rx_batches(struct vl_vq *vq, struct vl_pkt *const *pkts, uint16_t count,
				  uint8_t *status)
{
	/* data_len - 1 < limit: 1 .. limit bytes. */
	const uint32_t limit = vq->batch_threshold < VL_PKT_MAX_LEN ? vq->batch_threshold
								     : VL_PKT_MAX_LEN;
	const uint8_t flags_bad = vq->rx_flags_bad;
	uint16_t done = 0;
	uint64_t bytes = 0;

	while ((uint32_t)(count - done) >= VL_PACKED_BATCH) {
		struct vl_pkt *const *p = pkts + done;
		uint32_t i = 0;

		/* The packets first: nothing of the guest is read for a group that cannot go.
		 * Packet by packet: a burst of large packets stops at its first. */
		while (i < VL_PACKED_BATCH && rx_batch_pkt_ok(p[i], limit, flags_bad))
			i++;
		if (i < VL_PACKED_BATCH) {
			if (done == 0)
				return -1;
			break;
		}
		if (done == 0)
			rx_burst_begin(vq, VL_LAYOUT_PACKED); /* true: rx_batch_usable */
		struct vl_packed_rx_batch b;

		if (!vl_packed_rx_batch_peek(&vq->rq, &b))
			break;
		uint32_t used[VL_PACKED_BATCH], short_buf = 0;

		for (i = 0; i < VL_PACKED_BATCH; i++) {
			used[i] = 12u + p[i]->data_len; /* data_len <= 65535: no wrap */
			short_buf |= b.len[i] < used[i];
		}
		if (short_buf)
			break;
		uint32_t kept = 0;

		for (i = 0; i < VL_PACKED_BATCH; i++) {
			kept += rx_batch_hdr(b.host[i], &p[i]->ol);
			memcpy(b.host[i] + 12, p[i]->data, p[i]->data_len);
			bytes += p[i]->data_len;
			vq->rq.stats.size_bins[vl_size_bin(p[i]->data_len)]++;
		}
		vl_packed_rx_batch_done(&vq->rq, &b, used, &vq->rx_direct);
		vq->rq.stats.rx_hdrs_kept += kept;
		vq->rq.stats.copies_batched += 2 * VL_PACKED_BATCH;
		if (status)
			memset(status + done, VL_RX_DELIVERED, VL_PACKED_BATCH);
		done = (uint16_t)(done + VL_PACKED_BATCH);
	}
	vq->rq.stats.packets += done;
	vq->rq.stats.rx_batched += done;
	vq->rq.stats.bytes += bytes;
	return (int)done;
}

/* The end of a burst whose batches wrote used descriptors (vq->rx_direct.count > 0) and
 * whose general path then delivered `delivered` more packets, consuming the first `consumed`
 * chains of the window after the batches: rx_burst_end's work, with the used descriptors
 * published after the batches' (packets and bytes of the batches are counted already). */
static inline void rx_batch_burst_end(struct vl_vq *vq, uint16_t delivered, uint64_t bytes,
				      uint16_t consumed)
{
	vq->rq.stats.packets += delivered;
	vq->rq.stats.bytes += bytes;
	if (consumed > 0)
		vl_packed_consume(&vq->rq, consumed);
	vl_lab_burst_end();
	rx_store_hdrs(vq, delivered);
	vl_copy_flush(vq);
	vl_packed_flush_used_direct(&vq->rq, &vq->rx_direct);
	vq->rx_direct.count = 0;
}

#endif

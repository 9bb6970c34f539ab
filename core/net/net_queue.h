/* SPDX-License-Identifier: MIT */
/* A virtio-net queue: the ring layer's queue (struct vl_ring, ring/ring_queue.h) with the net
 * layer's state around it -- the virtio-net header's length, the copy batch, the receive
 * reservations, zero-copy leases, evict-after-read and payload prefetch. struct vl_vq is the
 * public handle (vhostlab/vl_vq.h); its functions are in net/queue.c. Not a public header. */
#ifndef VL_NET_QUEUE_H
#define VL_NET_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"
#include "ring/packed_rx_batch.h"
#include "ring/ring_queue.h"
#include "vhostlab/vl_pkt.h"
#include "vhostlab/vl_vq.h"

/* An RX packet's header, waiting to be stored at dst (guest address gpa). */
struct vl_rx_hdr {
	uint8_t *dst;
	uint64_t gpa;
	uint8_t bytes[12];
};

/* A deferred small copy (technique 1). */
struct vl_copy {
	void *dst;
	const void *src;
	uint32_t len;
	uint64_t log_gpa; /* guest address of dst to log, or VL_NO_LOG (host destination) */
};

#define VL_NO_LOG UINT64_MAX

/* A bad RX chain met after a good one while reserving for a packet: returned, and its drop
 * counted, only when that packet commits (else it stays in the ring and is walked again). */
struct vl_rx_deferred {
	struct vl_chain chain;
	enum vl_drop why;
};

/* A TX chain consumed but not yet returned because a zero-copy packet holds it (or, under
 * IN_ORDER, because one ahead of it does). */
struct vl_zc_lease {
	struct vl_chain chain;
	bool done;        /* its packet was freed (or it was copied): may go back */
	bool zc;          /* a zero-copy packet held it (false: only queued behind one) */
};

/* One guest RX chain reserved for the packet being enqueued. */
struct vl_rx_buf {
	struct vl_chain chain;
	uint32_t first_piece;
	uint32_t npieces;
	uint32_t cap;     /* bytes the chain can take */
};

struct vl_vq {
	/* The ring: first, so the fields both layers touch per chain sit where they did. */
	struct vl_ring rq;

	uint32_t hdr_len;          /* virtio-net header bytes: 10 or 12 */
	bool mergeable;            /* VIRTIO_NET_F_MRG_RXBUF negotiated */
	bool tx_offloads;          /* VIRTIO_NET_F_CSUM negotiated: TX headers carry offloads */
	uint8_t tx_gso_allowed;    /* VL_TX_GSO_*: the GSO types (and ECN) negotiated for TX */
	uint8_t rx_flags_bad;      /* header flag bits an RX packet may not carry: all without
				    * GUEST_CSUM, all but NEEDS_CSUM and DATA_VALID with it */
	uint8_t rx_gso_allowed;    /* VL_TX_GSO_* bits for RX: the GUEST_* features accepted */

	/* Small-copy batch (technique 1): bounded by the queue size, flushed per burst. */
	struct vl_copy *batch;     /* [size] */
	uint32_t batch_count;
	uint32_t batch_threshold;
	bool evict_reads;          /* vl_vq_set_evict_reads: dequeue evicts copied lines */
	bool tx_prefetch_off;      /* vl_vq_set_tx_prefetch(vq, false) (zeroed: on) */
	uint8_t tx_prefetch_skip;  /* dequeue bursts with chains left to make without payload
				    * prefetch: the last one that tried found nothing to ask for
				    * (dequeue.c) */
	uint8_t tx_batch_skip;     /* packed dequeue bursts left to make without trying four
				    * chains at a time (net/dequeue_packed_batch.h) */

	struct vl_rx_buf *rx_bufs; /* [size]: chains reserved for one RX packet */
	struct vl_rx_deferred *rx_deferred_bad; /* [size]: bad RX chains met after a good one */
	/* [size]: the virtio-net header of each packet of an RX burst, written into the guest
	 * buffer just before the payload batch is flushed (at most one packet per chain:
	 * size slots are enough). */
	struct vl_rx_hdr *rx_hdrs;

	/* Zero-copy dequeue: leases by slot, the order they were taken (for IN_ORDER), the
	 * slots whose packets were freed (without IN_ORDER), free slots. */
	bool zc_on;
	uint32_t zc_min_len;
	uint32_t zc_max;            /* bound on zc_held_descs (1..size - 1, 0 on a size-1 queue) */
	struct vl_zc_lease *leases; /* [size] */
	uint16_t *zc_order;         /* [size] ring of slots, oldest first */
	uint32_t zc_order_head, zc_order_count;
	uint16_t *zc_done;          /* [size] slots ready to go back, in free order */
	uint32_t zc_ndone;
	uint16_t *zc_free;          /* [size] stack of free slots */
	uint32_t zc_nfree;          /* the leases held are the other rq.size - zc_nfree slots */
	uint32_t zc_held_descs;     /* ring descriptors the held leases' chains occupy */
	enum vl_alloc_policy alloc_policy;
	struct vl_pkt **heads;      /* [size] packet heads allocated for a dequeue burst */
	/* Packed enqueue: the used descriptors this burst's groups of four wrote in place
	 * (net/rx_batch_packed.h); count 0 between bursts. */
	struct vl_packed_direct rx_direct;
};

/* Size class of a packet for stats.size_bins (see VL_SIZE_BINS). Inline: once per packet.
 * Between 65 and 1518 bytes the class is the length's bit count less 5 (65-127 -> 2,
 * 128-255 -> 3, 256-511 -> 4, 512-1023 -> 5, 1024-1518 -> 6): one count-leading-zeros,
 * where a loop over the bounds cost 21 instructions per 1518-byte packet (callgrind). */
static inline uint32_t vl_size_bin(uint32_t len)
{
	if (len < 64)
		return 0;
	if (len == 64)
		return 1;
	if (len <= 1518)
		return (uint32_t)(32 - __builtin_clz(len)) - 5u; /* len > 0: clz is defined */
	return 7;
}

#endif

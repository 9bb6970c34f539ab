/* SPDX-License-Identifier: MIT */
/* Virtqueue state shared by the ring layouts and the net datapath. Not a public header. */
#ifndef VL_VQ_INTERNAL_H
#define VL_VQ_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/mem_internal.h"
#include "vhostlab/vl_virtio.h"
#include "vhostlab/vl_vq.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "vhostlab reads virtio structures as little-endian host values"
#endif

/* A translated piece of a buffer: host bytes contiguous in one memory region. */
struct vl_piece {
	uint8_t *host;
	uint32_t len;
};

/* A deferred small copy (technique 1). */
struct vl_copy {
	void *dst;
	const void *src;
	uint32_t len;
};

/* One guest RX chain reserved for the packet being enqueued. */
struct vl_rx_buf {
	uint16_t head;
	uint32_t first_piece;
	uint32_t npieces;
	uint32_t cap;     /* bytes the chain can take */
};

/* Which way data flows through a chain; decides which descriptor flag is an offence. */
enum vl_dir {
	VL_DIR_DEVICE_READS,  /* TX: guest buffers the device only reads */
	VL_DIR_DEVICE_WRITES, /* RX: guest buffers the device fills */
};

struct vl_vq {
	enum vl_layout layout;
	uint32_t size;
	uint64_t features;
	uint32_t hdr_len;          /* virtio-net header bytes: 10 or 12 */
	bool mergeable;            /* VIRTIO_NET_F_MRG_RXBUF negotiated */
	bool indirect_ok;          /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	const struct vl_mem *mem;
	struct vl_vq_config cfg;

	/* Split ring areas (host pointers, validated contiguous at setup). */
	struct vl_split_desc *desc;
	struct vl_split_avail *avail;
	struct vl_split_used *used;
	uint16_t last_avail_idx;   /* next avail entry to consume */
	uint16_t used_idx;         /* shadow of used->idx: what we last published */

	/* Used entries collected during a burst, published once at its end. */
	struct vl_split_used_elem *shadow_used; /* [size] */
	uint32_t shadow_count;

	/* Small-copy batch (technique 1): bounded by the queue size, flushed per burst. */
	struct vl_copy *batch;     /* [size] */
	uint32_t batch_count;
	uint32_t batch_threshold;

	/* Scratch for chain walking. */
	struct vl_piece *pieces;   /* [VL_CHAIN_MAX_PIECES] */
	struct vl_split_desc *indirect_copy; /* [size]: tables not contiguous in host memory */
	struct vl_rx_buf *rx_bufs; /* [size]: chains reserved for one RX packet */
	uint16_t *rx_deferred_bad; /* [size]: bad RX chains met after a good one */

	bool broken;
	enum vl_drop broken_reason;
	bool needs_call;
	struct vl_vq_stats stats;
};

/* Latch the queue as broken (a guest offence at queue level). Cold: never in a healthy run. */
void vl_vq_break(struct vl_vq *vq, enum vl_drop reason) __attribute__((cold));

/* Append the translated pieces of guest range [addr, addr+len) to pieces[*np..cap), adding
 * len to *total. Fails (returning the reason, pieces possibly partly appended) when a byte is
 * unmapped, the total would pass UINT32_MAX, or cap pieces are not enough. */
enum vl_drop vl_chain_add_range(const struct vl_mem *mem, uint64_t addr, uint32_t len,
				struct vl_piece *pieces, uint32_t cap, uint32_t *np,
				uint32_t *total);

#endif

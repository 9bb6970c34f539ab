/* SPDX-License-Identifier: MIT */
/* Packet buffers (chained segments, reference count) and fixed-size pools. */
#ifndef VHOSTLAB_VL_PKT_H
#define VHOSTLAB_VL_PKT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Offload metadata carried by a packet: the fields of the virtio-net header other than
 * num_buffers, in host byte order. Dequeue fills it from the guest's header (after bound
 * checks); enqueue writes it into the guest's header. */
struct vl_offload {
	uint8_t flags;        /* VIRTIO_NET_HDR_F_* */
	uint8_t gso_type;     /* VIRTIO_NET_HDR_GSO_* */
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
};

struct vl_pool;

/* One segment of a packet. The first segment (the head) also describes the whole packet:
 * pkt_len, nb_segs, refcnt and ol are meaningful only there. */
struct vl_pkt {
	struct vl_pkt *next;    /* next segment of the same packet, NULL on the last */
	uint8_t *data;          /* first data byte of this segment (inside buf) */
	uint32_t data_len;      /* data bytes in this segment */
	uint32_t buf_len;       /* capacity of buf */
	uint32_t pkt_len;       /* head: sum of data_len over all segments */
	uint16_t nb_segs;       /* head: number of segments */
	uint16_t refcnt;        /* head: references; the packet returns to its pool at 0 */
	struct vl_offload ol;   /* head: virtio-net header metadata */
	struct vl_pool *pool;   /* the pool this segment came from */
	uint8_t *buf;           /* the segment's storage, buf_len bytes */
	/* head: external data (zero-copy dequeue). When set, `data` points into guest memory
	 * (read-only for the application) and release(pkt) runs when the last reference is
	 * dropped, before the segment returns to its pool. NULL for ordinary packets. */
	void (*release)(struct vl_pkt *pkt);
	void *release_ctx;
	uint32_t release_tag;
};

/* Create a pool of count buffers with buf_size data bytes each. Control path (allocates).
 * Returns NULL if count or buf_size is 0 or too large, or memory is short. */
struct vl_pool *vl_pool_create(uint32_t count, uint32_t buf_size);
/* Destroy a pool. Packets still out are the caller's bug; the count is returned so a
 * caller can report it (0 when every buffer came back). */
uint32_t vl_pool_destroy(struct vl_pool *pool);

uint32_t vl_pool_capacity(const struct vl_pool *pool);
uint32_t vl_pool_buf_size(const struct vl_pool *pool);
uint32_t vl_pool_free_count(const struct vl_pool *pool);
/* Allocations refused since creation (pool empty, or in a lab build a failure injected). */
uint64_t vl_pool_alloc_failures(const struct vl_pool *pool);

/* Allocate n single-segment packets, all or nothing. Each is reset: one segment, data at
 * the start of buf, data_len = pkt_len = 0, refcnt 1, no offloads. Returns 0 on success,
 * -1 (and allocates nothing) if fewer than n are free (or, in the lab's own build of the
 * core only, a failure is injected). */
int vl_pool_alloc_bulk(struct vl_pool *pool, struct vl_pkt **out, uint32_t n);
/* One packet or NULL. */
struct vl_pkt *vl_pkt_alloc(struct vl_pool *pool);

/* Allocate a packet of pkt_len bytes made of as many chained segments as needed (data not
 * initialised, lengths set). NULL if the pool cannot supply all segments (nothing taken). */
struct vl_pkt *vl_pkt_alloc_len(struct vl_pool *pool, uint32_t pkt_len);

/* Grow a fresh single-segment packet (from vl_pool_alloc_bulk) to pkt_len bytes, chaining
 * segments from its pool as needed (data not initialised, lengths set). Returns -1 and
 * changes nothing if the pool cannot supply every segment. */
int vl_pkt_extend(struct vl_pkt *head, uint32_t pkt_len);

/* Take one more reference on a packet. */
void vl_pkt_ref(struct vl_pkt *pkt);
/* Drop one reference; at zero every segment returns to its pool. NULL is ignored. */
void vl_pkt_free(struct vl_pkt *pkt);
/* vl_pkt_free on each of n packets. */
void vl_pkt_free_bulk(struct vl_pkt **pkts, uint32_t n);

/* Append segment seg (a single-segment packet) at the end of head's chain; updates pkt_len
 * and nb_segs. Returns -1 if nb_segs would overflow or pkt_len would pass UINT32_MAX. */
int vl_pkt_chain(struct vl_pkt *head, struct vl_pkt *seg);

/* Copy len bytes starting at packet offset off into dst (out) or from src (in), across
 * segments. Return the bytes copied (less than len when the packet is shorter). */
uint32_t vl_pkt_read(const struct vl_pkt *pkt, uint32_t off, void *dst, uint32_t len);
uint32_t vl_pkt_write(struct vl_pkt *pkt, uint32_t off, const void *src, uint32_t len);

#ifdef __cplusplus
}
#endif
#endif

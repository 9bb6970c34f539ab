/* SPDX-License-Identifier: MIT */
/* Constants and wire structures of the virtio specification (1.2) that the core and its
 * embedders share. Little-endian host assumed (checked at build time in the core). */
#ifndef VHOSTLAB_VL_VIRTIO_H
#define VHOSTLAB_VL_VIRTIO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Feature bits (bit numbers). */
#define VL_F_NET_CSUM          0
#define VL_F_NET_GUEST_CSUM    1
#define VL_F_NET_MTU           3
#define VL_F_NET_GUEST_TSO4    7   /* the driver takes TCPv4 GSO frames on receive */
#define VL_F_NET_GUEST_TSO6    8
#define VL_F_NET_GUEST_ECN     9
#define VL_F_NET_GUEST_UFO     10
#define VL_F_NET_HOST_TSO4     11  /* the device takes TCPv4 GSO frames on transmit */
#define VL_F_NET_HOST_TSO6     12
#define VL_F_NET_HOST_ECN      13
#define VL_F_NET_HOST_UFO      14
#define VL_F_NET_MRG_RXBUF     15
#define VL_F_NET_CTRL_VQ       17
#define VL_F_NET_MQ            22
#define VL_F_RING_INDIRECT_DESC 28
#define VL_F_RING_EVENT_IDX    29
#define VL_F_VERSION_1         32
#define VL_F_RING_PACKED       34
#define VL_F_IN_ORDER          35
#define VL_F_NET_GUEST_USO4    54  /* virtio 1.2: UDP segmentation offload */
#define VL_F_NET_GUEST_USO6    55
#define VL_F_NET_HOST_USO      56

#define VL_FEATURE(bit) (1ULL << (bit))

/* Split-ring descriptor flags (spec 2.7.5). */
#define VL_DESC_F_NEXT     1u
#define VL_DESC_F_WRITE    2u
#define VL_DESC_F_INDIRECT 4u

/* avail->flags / used->flags (spec 2.7.7). */
#define VL_AVAIL_F_NO_INTERRUPT 1u
#define VL_USED_F_NO_NOTIFY     1u

/* Largest queue size any layout allows. */
#define VL_QUEUE_SIZE_MAX 32768u

/* Split virtqueue wire layout (spec 2.7). */
struct vl_split_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vl_split_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* [size], then uint16_t used_event */
};

struct vl_split_used_elem {
	uint32_t id;
	uint32_t len;
};

struct vl_split_used {
	uint16_t flags;
	uint16_t idx;
	struct vl_split_used_elem ring[]; /* [size], then uint16_t avail_event */
};

/* Bytes each split-ring area occupies for a queue of `size` entries (event fields included). */
static inline uint64_t vl_split_desc_bytes(uint32_t size) { return 16ull * size; }
static inline uint64_t vl_split_avail_bytes(uint32_t size) { return 6ull + 2ull * size; }
static inline uint64_t vl_split_used_bytes(uint32_t size) { return 6ull + 8ull * size; }

/* Packed virtqueue wire layout (spec 2.8). */
#define VL_PDESC_F_AVAIL (1u << 7)
#define VL_PDESC_F_USED  (1u << 15)

struct vl_packed_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};

/* Event suppression structure (driver area and device area). */
#define VL_RING_EVENT_ENABLE  0u
#define VL_RING_EVENT_DISABLE 1u
#define VL_RING_EVENT_DESC    2u /* only with VIRTIO_F_RING_EVENT_IDX */

struct vl_packed_event {
	uint16_t off_wrap;  /* bits 0-14: descriptor offset; bit 15: wrap counter */
	uint16_t flags;
};

static inline uint64_t vl_packed_desc_bytes(uint32_t size) { return 16ull * size; }

/* vhost-user's encoding of a packed ring position: index in bits 0-14, wrap counter in 15. */
#define VL_PACKED_WRAP_BIT 0x8000u

/* Split-ring event index arithmetic (spec 2.7.7.2): true when new_idx has moved past
 * event_idx since old_idx, with 16-bit wrap-around. */
static inline int vl_need_event(uint16_t event_idx, uint16_t new_idx, uint16_t old_idx)
{
	return (uint16_t)(new_idx - event_idx - 1) < (uint16_t)(new_idx - old_idx);
}

/* virtio-net header (spec 5.1.6). num_buffers exists when the header is 12 bytes. */
#define VL_NET_HDR_F_NEEDS_CSUM 1u
#define VL_NET_HDR_F_DATA_VALID 2u
#define VL_NET_HDR_F_RSC_INFO   4u

#define VL_NET_HDR_GSO_NONE  0u
#define VL_NET_HDR_GSO_TCPV4 1u
#define VL_NET_HDR_GSO_UDP   3u
#define VL_NET_HDR_GSO_TCPV6 4u
#define VL_NET_HDR_GSO_UDP_L4 5u
#define VL_NET_HDR_GSO_ECN   0x80u

struct vl_net_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers; /* only in the 12-byte header */
};

/* The header is 12 bytes with MRG_RXBUF, VERSION_1 or the packed ring, else 10 (spec 5.1.6). */
static inline uint32_t vl_net_hdr_len(uint64_t features)
{
	const uint64_t twelve = VL_FEATURE(VL_F_NET_MRG_RXBUF) | VL_FEATURE(VL_F_VERSION_1) |
				VL_FEATURE(VL_F_RING_PACKED);
	return (features & twelve) ? 12u : 10u;
}

#ifdef __cplusplus
}
#endif
#endif

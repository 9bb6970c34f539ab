/* SPDX-License-Identifier: MIT */
/* virtio-net header: gathered from / scattered into guest pieces, validated, converted. */
#ifndef VL_NET_HDR_H
#define VL_NET_HDR_H

#include <string.h>

#include "net/net_queue.h"
#include "vhostlab/vl_pkt.h"

/* Copy the first hdr_len bytes described by pieces[0..np) into hdr (hdr_len <= 12; the
 * caller knows the pieces hold at least that many). Each guest byte is read once. */
void vl_net_hdr_gather(const struct vl_piece *pieces, uint32_t np, uint32_t hdr_len,
		       uint8_t hdr[12]);

/* The TX offloads a queue's negotiated features allow (VL_TX_GSO_*): one bit per GSO type
 * the device takes, and ECN. Computed once at queue creation. */
#define VL_TX_GSO_TCPV4 (1u << 0)   /* HOST_TSO4 */
#define VL_TX_GSO_TCPV6 (1u << 1)   /* HOST_TSO6 */
#define VL_TX_GSO_UDP (1u << 2)     /* HOST_UFO */
#define VL_TX_GSO_UDP_L4 (1u << 3)  /* HOST_USO */
#define VL_TX_GSO_ECN (1u << 4)     /* HOST_ECN */
uint8_t vl_net_tx_gso_allowed(uint64_t features);
/* The same bits for what a driver takes on receive: its GUEST_* features (UDP_L4 only with
 * both GUEST_USO4 and GUEST_USO6: the type does not say which IP version it carries). */
uint8_t vl_net_rx_gso_allowed(uint64_t features);
/* Header flags a driver takes on receive: NEEDS_CSUM and DATA_VALID with GUEST_CSUM, none
 * without. */
uint8_t vl_net_rx_flags_allowed(uint64_t features);

/* Check a TX header against the packet length it precedes (CVE-2024-11614 class: checksum
 * and GSO fields must point inside the packet) and against what was negotiated (allowed:
 * vl_net_tx_gso_allowed), and convert it to offload metadata. The first rule broken names
 * the drop (docs/architecture.md, "Hostile inputs"). */
enum vl_drop vl_net_hdr_to_offload(const uint8_t hdr[12], uint32_t pkt_len, uint8_t allowed,
				   struct vl_offload *ol);

/* Check an RX packet's offload metadata against what the receiving driver accepts
 * (flags_bad: vq->rx_flags_bad, gso_allowed: vq->rx_gso_allowed). The first rule broken
 * names the drop; VL_DROP_NONE when the header may go to the guest as it is. */
enum vl_drop vl_net_rx_check(uint8_t flags_bad, uint8_t gso_allowed, const struct vl_offload *ol);

/* Build the RX header bytes the guest will see for a packet spread over num_buffers chains.
 * All 12 bytes are written whatever hdr_len is; a 10-byte header is the first 10 of them.
 * Inline: once per RX packet, a handful of stores of fixed size. */
static inline void vl_net_hdr_from_offload(const struct vl_offload *ol,
					   bool mergeable, uint16_t num_buffers,
					   uint8_t hdr[12])
{
	uint16_t f[5] = {ol->hdr_len, ol->gso_size, ol->csum_start, ol->csum_offset,
			 (uint16_t)(mergeable ? num_buffers : 1)};

	hdr[0] = ol->flags;
	hdr[1] = ol->gso_type;
	/* num_buffers (the fifth field) exists only in the 12-byte header. Without MRG_RXBUF
	 * (a VERSION_1 device still has the field) the spec (5.1.6.4) requires it to be 1.
	 * Little-endian fields, like every virtio 1.x field (vl_virtio.h). */
	memcpy(hdr + 2, f, 10);
}

#endif

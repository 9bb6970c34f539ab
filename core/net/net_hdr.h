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

/* Check a TX header against the packet length it precedes (CVE-2024-11614 class: checksum
 * and GSO fields must point inside the packet) and convert it to offload metadata. */
enum vl_drop vl_net_hdr_to_offload(const uint8_t hdr[12], uint32_t pkt_len,
				   struct vl_offload *ol);

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

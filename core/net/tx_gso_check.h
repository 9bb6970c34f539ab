/* SPDX-License-Identifier: MIT */
/* The frame rules of a TX GSO packet (docs/architecture.md, "Hostile inputs"): once its
 * virtio-net header passed vl_net_hdr_to_offload, the frame itself must be what the header
 * says, or a segmenter downstream would cut by headers that are not there. */
#ifndef VL_NET_TX_GSO_CHECK_H
#define VL_NET_TX_GSO_CHECK_H

#include <stdint.h>

#include "ring/ring_queue.h"
#include "vhostlab/vl_pkt.h"
#include "vhostlab/vl_vq.h"

/* NEEDS_CSUM set (spec 5.1.6.2.1), headers the parser follows (vl_frame_parse), the GSO
 * type's protocols, and the checksum request the L4 checksum. VL_DROP_NONE, or
 * VL_DROP_GSO_WITHOUT_CSUM, _BAD_FRAME, _PROTO_MISMATCH, _CSUM_MISMATCH. The frame's headers
 * are read once from pkt, which must be host memory (a copy dequeue made). */
enum vl_drop vl_tx_gso_check(const struct vl_pkt *pkt, const struct vl_offload *ol);

/* The same rules on a chain still in guest memory (a packet that zero-copy will lease):
 * the frame's first bytes after the skip-byte virtio-net header, at most the largest
 * header stack, are read once through the guest-load door into a local and checked there.
 * The leased packet stays guest memory; what it holds later is the application's to check
 * again (vl_sw_* do). */
enum vl_drop vl_tx_gso_check_guest(const struct vl_piece *pieces, uint32_t np, uint32_t skip,
				   uint32_t pkt_len, const struct vl_offload *ol);

#endif

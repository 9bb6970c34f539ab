/* SPDX-License-Identifier: MIT */
/* Software fallbacks for offloads the far side cannot take (docs/architecture.md,
 * "Software offloads"). A guest that negotiated checksum offload and TSO/USO sends frames
 * with a partial checksum and up to 64 KiB of payload (struct vl_offload says so); when the
 * packet goes somewhere that did not negotiate the same -- another guest without GUEST_TSO4,
 * a link without segmentation -- the embedding application finishes the work here:
 *
 *  - vl_sw_csum_complete writes the checksum a NEEDS_CSUM packet left partial;
 *  - vl_sw_segment cuts a TCP (IPv4, IPv6) or UDP_L4 (IPv4, IPv6) GSO packet into frames of
 *    at most gso_size payload bytes each, every header field and checksum complete.
 *
 * Plain C, libc only, no allocation but from the pool given. The frame's own headers are
 * read once into locals and checked against the offload fields before anything is written;
 * every refusal has a result code and leaves the input packet and the pool as they were. */
#ifndef VHOSTLAB_VL_SW_OFFLOAD_H
#define VHOSTLAB_VL_SW_OFFLOAD_H

#include <stdint.h>

#include "vl_pkt.h"
#include "vl_vq.h"

#ifdef __cplusplus
extern "C" {
#endif

enum vl_sw_result {
	VL_SW_OK = 0,
	VL_SW_NOT_NEEDED,   /* csum: no NEEDS_CSUM; segment: no GSO type (nothing done) */
	VL_SW_BAD_FRAME,    /* the frame's headers are missing, malformed, or not what the
			     * offload fields say (protocol, checksum position, lengths) */
	VL_SW_UNSUPPORTED,  /* a GSO type done elsewhere or not at all: UDP (UFO, which is IPv4
			     * fragmentation, not segmentation), a VLAN stack deeper than one tag,
			     * IPv4 options with a fragment, IPv6 extension headers */
	VL_SW_READ_ONLY,    /* csum: the packet's data is guest memory (zero-copy) */
	VL_SW_TOO_MANY,     /* segment: more frames than the output array holds */
	VL_SW_NO_MEMORY,    /* segment: the pool could not supply every frame */
	VL_SW__COUNT
};

/* A short name for a result ("ok", "bad_frame", ...), "unknown" outside the enum. */
const char *vl_sw_result_name(enum vl_sw_result r);

/* Complete the partial checksum of pkt in place: the ones'-complement sum of the bytes from
 * ol.csum_start to the end (the guest left the pseudo-header sum in the checksum field),
 * folded, complemented, stored at csum_start + csum_offset; NEEDS_CSUM is then cleared.
 * VL_SW_NOT_NEEDED without NEEDS_CSUM, VL_SW_BAD_FRAME when the field lies outside the
 * packet, VL_SW_READ_ONLY for a zero-copy packet (copy it first). */
enum vl_sw_result vl_sw_csum_complete(struct vl_pkt *pkt);

/* Segment a GSO packet (ol.gso_type TCPV4, TCPV6 or UDP_L4, ECN allowed on TCP) into
 * frames: the Ethernet header (and one 802.1Q tag) and the IP and L4 headers of the
 * original, then up to ol.gso_size payload bytes, with
 *  - IPv4: total length, identification incremented per frame, header checksum;
 *    IPv6: payload length;
 *  - TCP: sequence number advanced by the payload before it, FIN and PSH only on the last
 *    frame, CWR only on the first, checksum complete;
 *  - UDP_L4: each frame its own datagram: length and checksum (0 sent as 0xffff).
 * The frames' struct vl_offload is zero (nothing left to offload). On VL_SW_OK *n frames
 * are stored in out[0..*n) and the caller owns them; pkt is unchanged (free it as usual).
 * On any other result nothing is allocated and *n is 0. */
enum vl_sw_result vl_sw_segment(const struct vl_pkt *pkt, struct vl_pool *pool,
				struct vl_pkt **out, uint16_t max, uint16_t *n);

/* Make pkt something RX queue vq's driver takes (vl_net_rx_offload_check, vl_net.h):
 *  - VL_SW_NOT_NEEDED: it takes pkt as it is; enqueue pkt (*n is 0);
 *  - VL_SW_OK: enqueue out[0..*n) instead; the caller owns them, pkt is unchanged:
 *    a GSO type (or ECN) it did not accept: vl_sw_segment's frames, checksums complete;
 *    otherwise one copy of pkt with NEEDS_CSUM completed (vl_sw_csum_complete) and
 *    DATA_VALID and unknown flags cleared (a driver without GUEST_CSUM checks for itself);
 *  - anything else: what vl_sw_segment or the copy refused (VL_SW_BAD_FRAME also for a
 *    GSO type with gso_size 0), nothing allocated, *n is 0. Drop pkt, or enqueue it and
 *    let vl_net_enqueue count the reason.
 * Works on zero-copy packets too (it only reads pkt). */
enum vl_sw_result vl_sw_fit(const struct vl_vq *vq, const struct vl_pkt *pkt,
			    struct vl_pool *pool, struct vl_pkt **out, uint16_t max, uint16_t *n);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: MIT */
/* The reference model's software offloads: what a device does to a frame whose offloads the
 * other side cannot take, on flat buffers, written from the RFCs and the virtio spec apart
 * from the core's vl_sw_offload.h, so the lab can compare the two byte for byte:
 *
 *  - checksum completion (virtio 1.2, 5.1.6.2: the sum from csum_start to the end, stored at
 *    csum_start + csum_offset; the driver left the pseudo-header sum in the field);
 *  - segmentation of a TCP (RFC 793/9293) or UDP (RFC 768) GSO frame over IPv4 (RFC 791) or
 *    IPv6 (RFC 8200): the headers copied in front of each gso_size bytes of payload, then
 *    IPv4 total length, identification + 1 per frame and header checksum, or IPv6 payload
 *    length; the TCP sequence number advanced by the payload before the frame, FIN and PSH
 *    on the last frame only, CWR on the first only (RFC 3168 6.1.2); the UDP length; the L4
 *    checksum over the pseudo-header, a UDP 0 sent as 0xffff;
 *  - the fit: a packet made into what a receiving driver with given features takes (the
 *    model's own RX offload rule, lab_rx_offload_rule). */
#ifndef LAB_MODEL_SEGMENT_H
#define LAB_MODEL_SEGMENT_H

#include <stdint.h>

#include "vhostlab/vl_pkt.h"

/* One output frame: bytes [off, off + len) of the output buffer, and its offloads. */
struct lab_mframe {
	uint32_t off, len;
	struct vl_offload ol;
};

enum lab_mseg {
	LAB_MSEG_OK = 0,
	LAB_MSEG_AS_IS,    /* fit: the driver takes the packet as it is (nothing written) */
	LAB_MSEG_BAD,      /* not a GSO frame the model can cut (type, size, headers) */
	LAB_MSEG_ROOM,     /* more frames or bytes than the caller gave room for */
};

/* Complete f's partial checksum in place (ol->flags has NEEDS_CSUM and the field lies inside
 * the len bytes; LAB_MSEG_BAD otherwise). A computed 0 is stored as 0xffff, as Linux's
 * skb_checksum_help does: the same number in ones' complement, and the only form a UDP
 * checksum may take (RFC 768: 0 means "no checksum"; over IPv6 a receiver drops it, RFC
 * 8200 8.1). The device cannot know the protocol, so it does so whatever the frame is. */
enum lab_mseg lab_model_csum_complete(uint8_t *f, uint32_t len, const struct vl_offload *ol);

/* Cut GSO frame f (len bytes, offloads ol: TCPV4, TCPV6 or UDP_L4, ECN allowed on TCP, a
 * segment size) into frames written back to back into buf (cap bytes), described in
 * fr[0..*n) (at most max): every frame's offloads are zero, every checksum complete. A frame
 * with no payload gives one frame of headers alone. */
enum lab_mseg lab_model_segment(const uint8_t *f, uint32_t len, const struct vl_offload *ol,
				uint8_t *buf, uint32_t cap, struct lab_mframe *fr, uint32_t max,
				uint32_t *n);

/* What a device gives a driver that negotiated `features` for a packet p (len bytes,
 * offloads ol): LAB_MSEG_AS_IS when the driver takes ol (lab_rx_offload_rule); otherwise
 * frames in buf/fr as for lab_model_segment -- a GSO packet segmented, any other copied
 * with NEEDS_CSUM completed and every flag cleared (its other fields kept: a driver
 * without NEEDS_CSUM ignores them). */
enum lab_mseg lab_model_fit(uint64_t features, const uint8_t *p, uint32_t len,
			    const struct vl_offload *ol, uint8_t *buf, uint32_t cap,
			    struct lab_mframe *fr, uint32_t max, uint32_t *n);

#endif

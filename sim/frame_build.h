/* SPDX-License-Identifier: MIT */
/* The lab's Ethernet frames for offloaded traffic: Ethernet (optionally one 802.1Q tag),
 * IPv4 or IPv6, TCP or UDP, then a payload drawn from a seed; and the virtio-net offload
 * fields a Linux driver would send with it (NEEDS_CSUM at the L4 checksum with the
 * pseudo-header sum left in the field, and a GSO type and segment size). Written from the
 * RFCs, apart from the core's parser, so the oracles do not share its mistakes. */
#ifndef LAB_FRAME_BUILD_H
#define LAB_FRAME_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "vhostlab/vl_pkt.h"

struct lab_frame_spec {
	bool ipv6, udp, vlan;
	uint8_t ip_opt_words;  /* IPv4 option words (0..10), NOPs */
	uint8_t tcp_opt_words; /* TCP option words (0..10), NOPs */
	uint8_t tcp_flags;     /* e.g. 0x18 (PSH|ACK) */
	uint16_t ip_id;
	uint32_t seq;
	uint32_t payload;      /* bytes after the L4 header */
	uint64_t seed;         /* payload bytes and addresses/ports derive from it */
};

struct lab_frame_layout {
	uint32_t l3, l4, hdr_len, len;
};

/* Headers only: the L3 offset, L4 offset and header length sp describes. */
void lab_frame_layout_of(const struct lab_frame_spec *sp, struct lab_frame_layout *lay);

/* Write sp's frame into out (cap bytes). The IPv4 header checksum is complete; the L4
 * checksum is complete too (partial = false) or holds the pseudo-header sum only, as a
 * driver leaves it for NEEDS_CSUM (partial = true). Returns the frame's length, 0 when it
 * does not fit cap or the IP length fields. */
uint32_t lab_frame_build(const struct lab_frame_spec *sp, bool partial, uint8_t *out,
			 uint32_t cap, struct lab_frame_layout *lay);

/* The offload fields a driver sends with a partial frame of lay: NEEDS_CSUM at the L4
 * checksum, and with gso_size > 0 the GSO type of sp (TCPV4, TCPV6 or UDP_L4; ECN with
 * ecn on TCP) and hdr_len as Linux sets it (the header length). */
void lab_frame_offload(const struct lab_frame_spec *sp, const struct lab_frame_layout *lay,
		       uint16_t gso_size, bool ecn, struct vl_offload *ol);

/* RFC 1071 sum of len bytes added to sum (not folded). */
uint32_t lab_csum_add(uint32_t sum, const uint8_t *p, uint32_t len);
/* Fold and complement. */
uint16_t lab_csum_fold(uint32_t sum);

#endif

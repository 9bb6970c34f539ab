/* SPDX-License-Identifier: MIT */
/* The headers of an Ethernet frame as the software offloads need them: where the IP and the
 * L4 header start, which protocols, and a copy of every header byte, read once from the
 * packet (whose data may be guest memory a hostile guest rewrites) into the local that all
 * later decisions use. */
#ifndef VL_NET_FRAME_PARSE_H
#define VL_NET_FRAME_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "vhostlab/vl_pkt.h"
#include "vhostlab/vl_sw_offload.h"

/* Ethernet + one VLAN tag + the largest IPv4 header + the largest TCP header. */
#define VL_FRAME_HDR_MAX (14u + 4u + 60u + 60u)

#define VL_IPPROTO_TCP 6u
#define VL_IPPROTO_UDP 17u

struct vl_frame {
	uint16_t l3_off;   /* first byte of the IP header */
	uint16_t l4_off;   /* first byte of the TCP or UDP header */
	uint16_t hdr_len;  /* first payload byte: l4_off + the L4 header's length */
	bool ipv6;
	uint8_t l4_proto;  /* VL_IPPROTO_TCP or VL_IPPROTO_UDP */
	uint8_t hdr[VL_FRAME_HDR_MAX];
};

/* Parse pkt's headers into f. VL_SW_OK, VL_SW_BAD_FRAME (too short, not IPv4 or IPv6, an
 * IPv4 fragment, a header length below its minimum, neither TCP nor UDP), or
 * VL_SW_UNSUPPORTED (a second VLAN tag, IPv6 extension headers). */
enum vl_sw_result vl_frame_parse(const struct vl_pkt *pkt, struct vl_frame *f);

/* Is the parsed frame what GSO type gso (ECN bit cleared) says it is? TCPV4: IPv4 and TCP,
 * TCPV6: IPv6 and TCP, UDP and UDP_L4: UDP over either. False for other types. */
bool vl_frame_gso_matches(uint8_t gso, const struct vl_frame *f);

static inline uint16_t vl_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void vl_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

#endif

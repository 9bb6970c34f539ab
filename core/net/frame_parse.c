/* SPDX-License-Identifier: MIT */
#include "net/frame_parse.h"

#include "vhostlab/vl_virtio.h"

#define ETH_P_IPV4 0x0800u
#define ETH_P_IPV6 0x86ddu
#define ETH_P_8021Q 0x8100u
#define ETH_P_8021AD 0x88a8u

enum vl_sw_result vl_frame_parse(const struct vl_pkt *pkt, struct vl_frame *f)
{
	/* One read of every byte a header can occupy; everything below looks at the copy. */
	uint32_t have = vl_pkt_read(pkt, 0, f->hdr, VL_FRAME_HDR_MAX);
	uint32_t l3 = 14;

	if (have < 14)
		return VL_SW_BAD_FRAME;
	uint16_t type = vl_be16(f->hdr + 12);

	if (type == ETH_P_8021Q || type == ETH_P_8021AD) {
		if (have < 18)
			return VL_SW_BAD_FRAME;
		type = vl_be16(f->hdr + 16);
		l3 = 18;
		if (type == ETH_P_8021Q || type == ETH_P_8021AD)
			return VL_SW_UNSUPPORTED;
	}
	uint32_t l4;

	if (type == ETH_P_IPV4) {
		if (have < l3 + 20 || f->hdr[l3] >> 4 != 4)
			return VL_SW_BAD_FRAME;
		uint32_t ihl = (f->hdr[l3] & 0xfu) * 4u;

		if (ihl < 20 || have < l3 + ihl)
			return VL_SW_BAD_FRAME;
		/* A fragment (more fragments, or an offset) has no L4 header of its own to
		 * segment by. */
		if (vl_be16(f->hdr + l3 + 6) & 0x3fffu)
			return VL_SW_BAD_FRAME;
		f->ipv6 = false;
		f->l4_proto = f->hdr[l3 + 9];
		l4 = l3 + ihl;
	} else if (type == ETH_P_IPV6) {
		if (have < l3 + 40 || f->hdr[l3] >> 4 != 6)
			return VL_SW_BAD_FRAME;
		f->ipv6 = true;
		f->l4_proto = f->hdr[l3 + 6];
		l4 = l3 + 40;
		if (f->l4_proto != VL_IPPROTO_TCP && f->l4_proto != VL_IPPROTO_UDP)
			return VL_SW_UNSUPPORTED; /* extension headers, or another protocol */
	} else {
		return VL_SW_BAD_FRAME;
	}
	uint32_t end;

	if (f->l4_proto == VL_IPPROTO_TCP) {
		if (have < l4 + 20)
			return VL_SW_BAD_FRAME;
		uint32_t doff = (f->hdr[l4 + 12] >> 4) * 4u;

		if (doff < 20 || have < l4 + doff)
			return VL_SW_BAD_FRAME;
		end = l4 + doff;
	} else if (f->l4_proto == VL_IPPROTO_UDP) {
		if (have < l4 + 8)
			return VL_SW_BAD_FRAME;
		end = l4 + 8;
	} else {
		return VL_SW_BAD_FRAME;
	}
	f->l3_off = (uint16_t)l3;
	f->l4_off = (uint16_t)l4;
	f->hdr_len = (uint16_t)end;
	return VL_SW_OK;
}

bool vl_frame_gso_matches(uint8_t gso, const struct vl_frame *f)
{
	switch (gso) {
	case VL_NET_HDR_GSO_TCPV4:
		return !f->ipv6 && f->l4_proto == VL_IPPROTO_TCP;
	case VL_NET_HDR_GSO_TCPV6:
		return f->ipv6 && f->l4_proto == VL_IPPROTO_TCP;
	case VL_NET_HDR_GSO_UDP:
	case VL_NET_HDR_GSO_UDP_L4:
		return f->l4_proto == VL_IPPROTO_UDP;
	default:
		return false;
	}
}

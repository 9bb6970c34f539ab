/* SPDX-License-Identifier: MIT */
/* The reference model's offload rules, written from the spec and docs/architecture.md
 * ("Hostile inputs", offload rows) without the core's code: what a transmitted GSO frame
 * must hold, and which offloads a receiving driver takes. */
#include "model_int.h"
#include "vhostlab/vl_net.h"

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/* Where a frame's L4 header starts and what it is, or false when the frame is not one the
 * device can follow: Ethernet, at most one 802.1Q/802.1ad tag, IPv4 (not a fragment) or
 * IPv6 (TCP or UDP straight after the fixed header), then a whole TCP or UDP header. */
struct mdl_frame {
	bool v6;
	uint8_t proto;
	uint32_t l4;
};

static bool frame_follow(const uint8_t *f, uint32_t len, struct mdl_frame *out)
{
	uint32_t at = 12;

	if (len < at + 2)
		return false;
	uint32_t type = be16(f + at);

	if (type == 0x8100 || type == 0x88a8) {
		at += 4;
		if (len < at + 2)
			return false;
		type = be16(f + at);
		if (type == 0x8100 || type == 0x88a8)
			return false; /* a second tag */
	}
	at += 2; /* the IP header */
	if (type == 0x0800) {
		if (len < at + 20 || f[at] >> 4 != 4 || (f[at] & 15) < 5)
			return false;
		const uint32_t ihl = (f[at] & 15u) * 4;

		if (len < at + ihl)
			return false;
		if ((be16(f + at + 6) & 0x1fff) != 0 || (f[at + 6] & 0x20) != 0)
			return false; /* a fragment offset, or more fragments */
		out->v6 = false;
		out->proto = f[at + 9];
		out->l4 = at + ihl;
	} else if (type == 0x86dd) {
		if (len < at + 40 || f[at] >> 4 != 6)
			return false;
		out->v6 = true;
		out->proto = f[at + 6];
		out->l4 = at + 40;
	} else {
		return false;
	}
	if (out->proto == 6)
		return len >= out->l4 + 20 && f[out->l4 + 12] >> 4 >= 5 &&
		       len >= out->l4 + (f[out->l4 + 12] >> 4) * 4u;
	if (out->proto == 17)
		return len >= out->l4 + 8;
	return false;
}

enum vl_drop mdl_tx_frame_check(const struct vl_offload *ol, const uint8_t *frame, uint32_t len)
{
	return lab_tx_frame_rule(ol, frame, len);
}

enum vl_drop lab_tx_frame_rule(const struct vl_offload *ol, const uint8_t *frame, uint32_t len)
{
	const uint8_t type = ol->gso_type & 0x7f;
	struct mdl_frame fr;

	if (type == VL_NET_HDR_GSO_NONE)
		return VL_DROP_NONE;
	if (!(ol->flags & VL_NET_HDR_F_NEEDS_CSUM))
		return VL_DROP_GSO_WITHOUT_CSUM;
	if (!frame_follow(frame, len, &fr))
		return VL_DROP_GSO_BAD_FRAME;
	bool match;

	if (type == VL_NET_HDR_GSO_TCPV4)
		match = !fr.v6 && fr.proto == 6;
	else if (type == VL_NET_HDR_GSO_TCPV6)
		match = fr.v6 && fr.proto == 6;
	else
		match = fr.proto == 17; /* UDP (UFO) and UDP_L4, over either IP */
	if (!match)
		return VL_DROP_GSO_PROTO_MISMATCH;
	/* The checksum asked for is the L4 one: TCP's field at 16, UDP's at 6. */
	if (ol->csum_start != fr.l4 || ol->csum_offset != (fr.proto == 6 ? 16 : 6))
		return VL_DROP_GSO_CSUM_MISMATCH;
	return VL_DROP_NONE;
}

static bool has(uint64_t features, unsigned bit)
{
	return (features & VL_FEATURE(bit)) != 0;
}

enum vl_drop mdl_rx_offload_check(const struct lab_model *m, const struct vl_offload *ol)
{
	return lab_rx_offload_rule(m->features, ol);
}

enum vl_drop lab_rx_offload_rule(uint64_t m, const struct vl_offload *ol)
{
	const uint8_t csum_flags = VL_NET_HDR_F_NEEDS_CSUM | VL_NET_HDR_F_DATA_VALID;

	if ((ol->flags & csum_flags) && !has(m, VL_F_NET_GUEST_CSUM))
		return VL_DROP_RX_CSUM_NOT_NEGOTIATED;
	if (ol->flags & ~csum_flags)
		return VL_DROP_RX_FLAGS_UNKNOWN;
	if (ol->gso_type == VL_NET_HDR_GSO_NONE)
		return VL_DROP_NONE;
	const uint8_t type = ol->gso_type & 0x7f;
	bool ok;

	switch (type) {
	case VL_NET_HDR_GSO_TCPV4:
		ok = has(m, VL_F_NET_GUEST_TSO4);
		break;
	case VL_NET_HDR_GSO_TCPV6:
		ok = has(m, VL_F_NET_GUEST_TSO6);
		break;
	case VL_NET_HDR_GSO_UDP:
		ok = has(m, VL_F_NET_GUEST_UFO);
		break;
	case VL_NET_HDR_GSO_UDP_L4:
		ok = has(m, VL_F_NET_GUEST_USO4) && has(m, VL_F_NET_GUEST_USO6);
		break;
	default:
		ok = false;
	}
	if (ok && (ol->gso_type & VL_NET_HDR_GSO_ECN))
		ok = has(m, VL_F_NET_GUEST_ECN);
	if (!ok)
		return VL_DROP_RX_GSO_NOT_NEGOTIATED;
	return ol->gso_size == 0 ? VL_DROP_RX_GSO_NO_SEGMENT_SIZE : VL_DROP_NONE;
}

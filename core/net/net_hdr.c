/* SPDX-License-Identifier: MIT */
#include "net/net_hdr.h"

#include <string.h>

#include "ring/guest_load.h"
#include "vhostlab/vl_net.h"

void vl_net_hdr_gather(const struct vl_piece *pieces, uint32_t np, uint32_t hdr_len,
		       uint8_t hdr[12])
{
	uint32_t got = 0;

	/* The header may sit alone, share a piece with data, or straddle any number of
	 * pieces (CVE-2022-2132 class): gather it through the generic path. */
	for (uint32_t i = 0; i < np && got < hdr_len; i++) {
		uint32_t n = pieces[i].len < hdr_len - got ? pieces[i].len : hdr_len - got;

		vl_guest_load_bytes(hdr + got, pieces[i].host, n);
		got += n;
	}
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

uint8_t vl_net_tx_gso_allowed(uint64_t features)
{
	uint8_t a = 0;

	if (features & VL_FEATURE(VL_F_NET_HOST_TSO4))
		a |= VL_TX_GSO_TCPV4;
	if (features & VL_FEATURE(VL_F_NET_HOST_TSO6))
		a |= VL_TX_GSO_TCPV6;
	if (features & VL_FEATURE(VL_F_NET_HOST_UFO))
		a |= VL_TX_GSO_UDP;
	if (features & VL_FEATURE(VL_F_NET_HOST_USO))
		a |= VL_TX_GSO_UDP_L4;
	if (features & VL_FEATURE(VL_F_NET_HOST_ECN))
		a |= VL_TX_GSO_ECN;
	return a;
}

uint8_t vl_net_rx_gso_allowed(uint64_t features)
{
	uint8_t a = 0;

	if (features & VL_FEATURE(VL_F_NET_GUEST_TSO4))
		a |= VL_TX_GSO_TCPV4;
	if (features & VL_FEATURE(VL_F_NET_GUEST_TSO6))
		a |= VL_TX_GSO_TCPV6;
	if (features & VL_FEATURE(VL_F_NET_GUEST_UFO))
		a |= VL_TX_GSO_UDP;
	if ((features & VL_FEATURE(VL_F_NET_GUEST_USO4)) &&
	    (features & VL_FEATURE(VL_F_NET_GUEST_USO6)))
		a |= VL_TX_GSO_UDP_L4;
	if (features & VL_FEATURE(VL_F_NET_GUEST_ECN))
		a |= VL_TX_GSO_ECN;
	return a;
}

uint8_t vl_net_rx_flags_allowed(uint64_t features)
{
	return features & VL_FEATURE(VL_F_NET_GUEST_CSUM)
		       ? (uint8_t)(VL_NET_HDR_F_NEEDS_CSUM | VL_NET_HDR_F_DATA_VALID)
		       : 0;
}

/* The GSO-type bit (VL_TX_GSO_*) a type needs, 0 for NONE and for unknown types. */
static uint8_t gso_need(uint8_t type)
{
	switch (type) {
	case VL_NET_HDR_GSO_TCPV4:
		return VL_TX_GSO_TCPV4;
	case VL_NET_HDR_GSO_TCPV6:
		return VL_TX_GSO_TCPV6;
	case VL_NET_HDR_GSO_UDP:
		return VL_TX_GSO_UDP;
	case VL_NET_HDR_GSO_UDP_L4:
		return VL_TX_GSO_UDP_L4;
	default:
		return 0;
	}
}

enum vl_drop vl_net_rx_check(uint8_t flags_bad, uint8_t gso_allowed, const struct vl_offload *ol)
{
	const uint8_t flags = ol->flags, gso_type = ol->gso_type;

	if (flags & flags_bad)
		return flags & flags_bad & (VL_NET_HDR_F_NEEDS_CSUM | VL_NET_HDR_F_DATA_VALID)
			       ? VL_DROP_RX_CSUM_NOT_NEGOTIATED
			       : VL_DROP_RX_FLAGS_UNKNOWN;
	if (gso_type == VL_NET_HDR_GSO_NONE)
		return VL_DROP_NONE;
	const uint8_t type = gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN, need = gso_need(type);

	/* ECN qualifies a segmentation: a type is needed, and GUEST_ECN. */
	if (need == 0 || !(gso_allowed & need) ||
	    ((gso_type & VL_NET_HDR_GSO_ECN) && !(gso_allowed & VL_TX_GSO_ECN)))
		return VL_DROP_RX_GSO_NOT_NEGOTIATED;
	if (ol->gso_size == 0)
		return VL_DROP_RX_GSO_NO_SEGMENT_SIZE;
	return VL_DROP_NONE;
}

enum vl_drop vl_net_rx_offload_check(const struct vl_vq *vq, const struct vl_offload *ol)
{
	return vl_net_rx_check(vq->rx_flags_bad, vq->rx_gso_allowed, ol);
}

enum vl_drop vl_net_hdr_to_offload(const uint8_t hdr[12], uint32_t pkt_len, uint8_t allowed,
				   struct vl_offload *ol)
{
	/* Spec 5.1.6.2.2: the device ignores flag bits it does not recognise; on transmit it
	 * recognises NEEDS_CSUM alone (DATA_VALID and RSC_INFO are receive flags a driver must
	 * not send, 5.1.6.2.1). Masked here, they never reach a receiving driver that did not
	 * negotiate them. */
	ol->flags = hdr[0] & VL_NET_HDR_F_NEEDS_CSUM;
	ol->gso_type = hdr[1];
	ol->hdr_len = get16(hdr + 2);
	ol->gso_size = get16(hdr + 4);
	ol->csum_start = get16(hdr + 6);
	ol->csum_offset = get16(hdr + 8);

	/* The 16-bit checksum lands at csum_start + csum_offset; both are < 2^16, so the sum
	 * plus 2 fits 32 bits. */
	if ((ol->flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)ol->csum_start + ol->csum_offset + 2u > pkt_len)
		return VL_DROP_CSUM_PAST_FRAME;

	uint8_t gso = ol->gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN;

	switch (gso) {
	case VL_NET_HDR_GSO_NONE:
		/* ECN qualifies a segmentation: alone it asks for nothing a device can do. */
		if (ol->gso_type & VL_NET_HDR_GSO_ECN)
			return VL_DROP_ECN_WITHOUT_GSO;
		break;
	case VL_NET_HDR_GSO_TCPV4:
	case VL_NET_HDR_GSO_UDP:
	case VL_NET_HDR_GSO_TCPV6:
	case VL_NET_HDR_GSO_UDP_L4: {
		/* The device takes only the GSO types it offered and the driver accepted (spec
		 * 5.1.6.2: a driver sends a type only with its HOST_* feature). */
		const uint8_t need = gso_need(gso);

		if (!(allowed & need))
			return VL_DROP_GSO_NOT_NEGOTIATED;
		if ((ol->gso_type & VL_NET_HDR_GSO_ECN) && !(allowed & VL_TX_GSO_ECN))
			return VL_DROP_ECN_NOT_NEGOTIATED;
		/* Segmenting needs a segment size and headers that lie inside the packet. */
		if (ol->gso_size == 0)
			return VL_DROP_GSO_NO_SEGMENT_SIZE;
		if (ol->hdr_len > pkt_len)
			return VL_DROP_GSO_HDR_PAST_FRAME;
		break;
	}
	default:
		return VL_DROP_GSO_UNKNOWN_TYPE;
	}
	return VL_DROP_NONE;
}


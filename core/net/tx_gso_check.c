/* SPDX-License-Identifier: MIT */
#include "net/tx_gso_check.h"

#include "net/frame_parse.h"
#include "ring/guest_load.h"
#include "vhostlab/vl_virtio.h"

enum vl_drop vl_tx_gso_check(const struct vl_pkt *pkt, const struct vl_offload *ol)
{
	struct vl_frame f;

	/* Spec 5.1.6.2.1: with a GSO type the driver MUST also set NEEDS_CSUM; segmenting
	 * rewrites every frame's L4 checksum from the partial sum it asks for. */
	if (!(ol->flags & VL_NET_HDR_F_NEEDS_CSUM))
		return VL_DROP_GSO_WITHOUT_CSUM;
	/* Headers the device cannot follow (two VLAN tags, IPv6 extension headers) are as
	 * unusable to a segmenter as missing ones. */
	if (vl_frame_parse(pkt, &f) != VL_SW_OK)
		return VL_DROP_GSO_BAD_FRAME;
	if (!vl_frame_gso_matches(ol->gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN, &f))
		return VL_DROP_GSO_PROTO_MISMATCH;
	if (ol->csum_start != f.l4_off ||
	    ol->csum_offset != (f.l4_proto == VL_IPPROTO_TCP ? 16u : 6u))
		return VL_DROP_GSO_CSUM_MISMATCH;
	return VL_DROP_NONE;
}

enum vl_drop vl_tx_gso_check_guest(const struct vl_piece *pieces, uint32_t np, uint32_t skip,
				   uint32_t pkt_len, const struct vl_offload *ol)
{
	uint8_t snap[VL_FRAME_HDR_MAX];
	const uint32_t want = pkt_len < VL_FRAME_HDR_MAX ? pkt_len : VL_FRAME_HDR_MAX;
	uint32_t got = 0;

	for (uint32_t i = 0; i < np && got < want; i++) {
		uint32_t left = pieces[i].len;

		if (skip >= left) {
			skip -= left;
			continue;
		}
		left -= skip;
		uint32_t n = left < want - got ? left : want - got;

		vl_guest_load_bytes(snap + got, pieces[i].host + skip, n);
		got += n;
		skip = 0;
	}
	const struct vl_pkt view = {
		.data = snap, .data_len = got, .buf_len = got, .pkt_len = got, .nb_segs = 1,
		.buf = snap,
	};

	return vl_tx_gso_check(&view, ol);
}

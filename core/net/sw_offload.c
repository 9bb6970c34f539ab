/* SPDX-License-Identifier: MIT */
/* Software checksum completion and segmentation: see vhostlab/vl_sw_offload.h. */
#include "vhostlab/vl_sw_offload.h"

#include <string.h>

#include "net/frame_parse.h"
#include "net/inet_csum.h"
#include "vhostlab/vl_net.h"
#include "vhostlab/vl_virtio.h"

static const char *const vl_sw_names[VL_SW__COUNT] = {
	[VL_SW_OK] = "ok",
	[VL_SW_NOT_NEEDED] = "not_needed",
	[VL_SW_BAD_FRAME] = "bad_frame",
	[VL_SW_UNSUPPORTED] = "unsupported",
	[VL_SW_READ_ONLY] = "read_only",
	[VL_SW_TOO_MANY] = "too_many",
	[VL_SW_NO_MEMORY] = "no_memory",
};

const char *vl_sw_result_name(enum vl_sw_result r)
{
	return (unsigned)r < VL_SW__COUNT ? vl_sw_names[r] : "unknown";
}

enum vl_sw_result vl_sw_csum_complete(struct vl_pkt *pkt)
{
	const struct vl_offload ol = pkt->ol;

	if (!(ol.flags & VL_NET_HDR_F_NEEDS_CSUM))
		return VL_SW_NOT_NEEDED;
	/* Zero-copy data is the guest's buffer: never written by the host. */
	if (pkt->release)
		return VL_SW_READ_ONLY;
	/* Both fields below 2^16: the sum cannot wrap in 32 bits. */
	const uint32_t at = (uint32_t)ol.csum_start + ol.csum_offset;

	if (at + 2u > pkt->pkt_len)
		return VL_SW_BAD_FRAME;
	struct vl_csum c = {0, false};
	uint8_t field[2];

	vl_csum_pkt(&c, pkt, ol.csum_start, pkt->pkt_len - ol.csum_start);
	vl_put_be16(field, vl_csum_final(&c));
	vl_pkt_write(pkt, at, field, 2);
	pkt->ol.flags = (uint8_t)(ol.flags & ~VL_NET_HDR_F_NEEDS_CSUM);
	return VL_SW_OK;
}

/* Copy len bytes of src from offset from into dst at offset to, through a small buffer
 * (either packet may be chained at any boundary). */
static void copy_bytes(struct vl_pkt *dst, uint32_t to, const struct vl_pkt *src, uint32_t from,
		       uint32_t len)
{
	uint8_t tmp[512];

	while (len) {
		uint32_t n = len < sizeof(tmp) ? len : (uint32_t)sizeof(tmp);

		vl_pkt_read(src, from, tmp, n);
		vl_pkt_write(dst, to, tmp, n);
		from += n;
		to += n;
		len -= n;
	}
}

/* The L4 checksum of frame `out` (its headers h, the field zeroed): pseudo-header (RFC 793
 * / 768 for IPv4, RFC 8200 8.1 for IPv6) plus the L4 header and payload. */
static uint16_t l4_checksum(const struct vl_frame *f, const uint8_t *h, const struct vl_pkt *out)
{
	struct vl_csum c = {0, false};
	const uint32_t l4_len = out->pkt_len - f->l4_off;
	uint8_t pseudo[8];

	if (f->ipv6)
		vl_csum_bytes(&c, h + f->l3_off + 8, 32); /* source and destination */
	else
		vl_csum_bytes(&c, h + f->l3_off + 12, 8);
	pseudo[0] = (uint8_t)(l4_len >> 24);
	pseudo[1] = (uint8_t)(l4_len >> 16);
	pseudo[2] = (uint8_t)(l4_len >> 8);
	pseudo[3] = (uint8_t)l4_len;
	pseudo[4] = pseudo[5] = pseudo[6] = 0;
	pseudo[7] = f->l4_proto;
	vl_csum_bytes(&c, pseudo, 8);
	vl_csum_pkt(&c, out, f->l4_off, l4_len);
	return vl_csum_final(&c);
}

/* Write frame i of n (payload bytes [off, off + len) of the original) into out. */
static void build_frame(const struct vl_frame *f, const struct vl_pkt *pkt, uint32_t i,
			uint32_t n, uint32_t off, uint32_t len, struct vl_pkt *out)
{
	uint8_t h[VL_FRAME_HDR_MAX];
	const uint32_t l3 = f->l3_off, l4 = f->l4_off, flen = f->hdr_len + len;

	memcpy(h, f->hdr, f->hdr_len);
	if (f->ipv6) {
		vl_put_be16(h + l3 + 4, (uint16_t)(flen - l3 - 40));
	} else {
		const uint32_t ihl = (h[l3] & 0xfu) * 4u;
		struct vl_csum c = {0, false};

		vl_put_be16(h + l3 + 2, (uint16_t)(flen - l3));
		vl_put_be16(h + l3 + 4, (uint16_t)(vl_be16(f->hdr + l3 + 4) + i));
		vl_put_be16(h + l3 + 10, 0);
		vl_csum_bytes(&c, h + l3, ihl);
		vl_put_be16(h + l3 + 10, vl_csum_final(&c));
	}
	if (f->l4_proto == VL_IPPROTO_TCP) {
		uint32_t seq = (uint32_t)f->hdr[l4 + 4] << 24 | (uint32_t)f->hdr[l4 + 5] << 16 |
			       (uint32_t)f->hdr[l4 + 6] << 8 | f->hdr[l4 + 7];

		seq += off; /* modulo 2^32, as sequence numbers are */
		h[l4 + 4] = (uint8_t)(seq >> 24);
		h[l4 + 5] = (uint8_t)(seq >> 16);
		h[l4 + 6] = (uint8_t)(seq >> 8);
		h[l4 + 7] = (uint8_t)seq;
		/* FIN and PSH end the whole send: the last frame only. CWR answers congestion
		 * once: the first frame only (RFC 3168 6.1.2). */
		if (i + 1 < n)
			h[l4 + 13] &= (uint8_t)~0x09u;
		if (i > 0)
			h[l4 + 13] &= (uint8_t)~0x80u;
		vl_put_be16(h + l4 + 16, 0);
	} else {
		vl_put_be16(h + l4 + 4, (uint16_t)(flen - l4));
		vl_put_be16(h + l4 + 6, 0);
	}
	vl_pkt_write(out, 0, h, f->hdr_len);
	copy_bytes(out, f->hdr_len, pkt, f->hdr_len + off, len);

	uint16_t sum = l4_checksum(f, h, out);
	uint8_t field[2];

	/* UDP sends a computed 0 as 0xffff: 0 means "no checksum" (RFC 768). */
	if (f->l4_proto == VL_IPPROTO_UDP && sum == 0)
		sum = 0xffff;
	vl_put_be16(field, sum);
	vl_pkt_write(out, l4 + (f->l4_proto == VL_IPPROTO_TCP ? 16u : 6u), field, 2);
	memset(&out->ol, 0, sizeof(out->ol));
}

enum vl_sw_result vl_sw_segment(const struct vl_pkt *pkt, struct vl_pool *pool,
				struct vl_pkt **out, uint16_t max, uint16_t *n)
{
	const struct vl_offload ol = pkt->ol;
	const uint8_t gso = ol.gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN;
	struct vl_frame f;

	*n = 0;
	if (gso == VL_NET_HDR_GSO_NONE)
		return VL_SW_NOT_NEEDED;
	if (gso == VL_NET_HDR_GSO_UDP)
		return VL_SW_UNSUPPORTED;
	if (gso != VL_NET_HDR_GSO_TCPV4 && gso != VL_NET_HDR_GSO_TCPV6 &&
	    gso != VL_NET_HDR_GSO_UDP_L4)
		return VL_SW_BAD_FRAME;
	/* ECN qualifies TCP; no segment size, nothing to cut by. */
	if (ol.gso_size == 0 ||
	    ((ol.gso_type & VL_NET_HDR_GSO_ECN) && gso == VL_NET_HDR_GSO_UDP_L4))
		return VL_SW_BAD_FRAME;
	enum vl_sw_result r = vl_frame_parse(pkt, &f);

	if (r != VL_SW_OK)
		return r;
	if (!vl_frame_gso_matches(gso, &f))
		return VL_SW_BAD_FRAME;
	const uint32_t payload = pkt->pkt_len - f.hdr_len;
	/* At least one frame, even for a header-only packet; no overflow: payload < 2^32 and
	 * gso_size >= 1. */
	const uint32_t frames = payload ? (payload - 1) / ol.gso_size + 1 : 1;

	/* The largest frame must fit the IP length fields (16 bits). */
	const uint32_t most = payload < ol.gso_size ? payload : ol.gso_size;

	if (f.hdr_len + most - f.l3_off > 0xffffu)
		return VL_SW_BAD_FRAME;
	if (frames > max)
		return VL_SW_TOO_MANY;
	for (uint32_t i = 0; i < frames; i++) {
		uint32_t off = i * ol.gso_size, len = payload - off < ol.gso_size ? payload - off
										: ol.gso_size;

		out[i] = vl_pkt_alloc_len(pool, f.hdr_len + len);
		if (!out[i]) {
			while (i)
				vl_pkt_free(out[--i]);
			return VL_SW_NO_MEMORY;
		}
	}
	for (uint32_t i = 0; i < frames; i++) {
		uint32_t off = i * ol.gso_size, len = payload - off < ol.gso_size ? payload - off
										: ol.gso_size;

		build_frame(&f, pkt, i, frames, off, len, out[i]);
	}
	*n = (uint16_t)frames;
	return VL_SW_OK;
}

enum vl_sw_result vl_sw_fit(const struct vl_vq *vq, const struct vl_pkt *pkt,
			    struct vl_pool *pool, struct vl_pkt **out, uint16_t max, uint16_t *n)
{
	const struct vl_offload ol = pkt->ol;

	*n = 0;
	if (vl_net_rx_offload_check(vq, &ol) == VL_DROP_NONE)
		return VL_SW_NOT_NEEDED;
	/* Whatever was refused, segmenting a GSO packet leaves nothing to offload. */
	if (ol.gso_type != VL_NET_HDR_GSO_NONE)
		return vl_sw_segment(pkt, pool, out, max, n);
	if (max < 1)
		return VL_SW_TOO_MANY;
	if ((ol.flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)ol.csum_start + ol.csum_offset + 2u > pkt->pkt_len)
		return VL_SW_BAD_FRAME;
	struct vl_pkt *copy = vl_pkt_alloc_len(pool, pkt->pkt_len);

	if (!copy)
		return VL_SW_NO_MEMORY;
	copy_bytes(copy, 0, pkt, 0, pkt->pkt_len);
	copy->ol = ol;
	/* Bounds checked above: completion cannot refuse a fresh, writable copy. */
	(void)vl_sw_csum_complete(copy);
	copy->ol.flags = 0;
	out[0] = copy;
	*n = 1;
	return VL_SW_OK;
}

/* SPDX-License-Identifier: MIT */
/* The reference model's checksum completion, segmentation and fit: see model_segment.h.
 * Flat buffers only, one field at a time, so each line can be read against its RFC. */
#include "model_segment.h"

#include <string.h>

#include "model.h"
#include "model_int.h"
#include "vhostlab/vl_virtio.h"

#define TCP_FIN 0x01u
#define TCP_PSH 0x08u
#define TCP_CWR 0x80u

static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* RFC 1071: the ones'-complement sum of 16-bit big-endian words (an odd last byte is the
 * high half of a word), carried around; `sum` is a sum so far, unfolded. */
static uint64_t sum16(uint64_t sum, const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

/* Fold the carries back in and complement: what a checksum field holds. */
static uint32_t csum_field(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~(uint32_t)sum & 0xffff;
}

enum lab_mseg lab_model_csum_complete(uint8_t *f, uint32_t len, const struct vl_offload *ol)
{
	const uint32_t at = (uint32_t)ol->csum_start + ol->csum_offset;

	if (!(ol->flags & VL_NET_HDR_F_NEEDS_CSUM) || ol->csum_start > len || at + 2 > len)
		return LAB_MSEG_BAD;
	const uint32_t c = csum_field(sum16(0, f + ol->csum_start, len - ol->csum_start));

	put16(f + at, c ? c : 0xffff);
	return LAB_MSEG_OK;
}

/* The L4 checksum of a frame whose headers are at h (the field zeroed), over the
 * pseudo-header: IPv4 (RFC 793 3.1, RFC 768) source, destination, zero, protocol, L4
 * length; IPv6 (RFC 8200 8.1) source, destination, 32-bit length, zeros, next header. */
static uint32_t l4_checksum(const uint8_t *fr, const struct mdl_frame *h, uint32_t flen)
{
	const uint32_t l4len = flen - h->l4;
	uint64_t sum = 0;

	if (h->v6) {
		sum = sum16(sum, fr + h->l3 + 8, 32);
		sum += l4len >> 16;
		sum += l4len & 0xffff;
	} else {
		sum = sum16(sum, fr + h->l3 + 12, 8);
		sum += l4len;
	}
	sum += h->proto;
	return csum_field(sum16(sum, fr + h->l4, l4len));
}

/* Frame i of n: the headers, then payload bytes [i * g, i * g + chunk) of the original. */
static void one_segment(const uint8_t *f, const struct mdl_frame *h, uint32_t g, uint32_t i,
			uint32_t n, uint32_t chunk, uint8_t *o)
{
	const uint32_t flen = h->hdr_len + chunk;

	memcpy(o, f, h->hdr_len);
	memcpy(o + h->hdr_len, f + h->hdr_len + i * g, chunk);
	if (h->v6) {
		put16(o + h->l3 + 4, flen - h->l3 - 40);              /* payload length */
	} else {
		const uint32_t ihl = (f[h->l3] & 15u) * 4;

		put16(o + h->l3 + 2, flen - h->l3);                   /* total length */
		put16(o + h->l3 + 4, (get16(f + h->l3 + 4) + i) & 0xffff); /* identification */
		put16(o + h->l3 + 10, 0);
		put16(o + h->l3 + 10, csum_field(sum16(0, o + h->l3, ihl)));
	}
	if (h->proto == 6) {
		uint32_t seq = (uint32_t)f[h->l4 + 4] << 24 | (uint32_t)f[h->l4 + 5] << 16 |
			       (uint32_t)f[h->l4 + 6] << 8 | f[h->l4 + 7];
		uint8_t flags = f[h->l4 + 13];

		seq += i * g; /* modulo 2^32 */
		o[h->l4 + 4] = (uint8_t)(seq >> 24);
		o[h->l4 + 5] = (uint8_t)(seq >> 16);
		o[h->l4 + 6] = (uint8_t)(seq >> 8);
		o[h->l4 + 7] = (uint8_t)seq;
		if (i + 1 != n)
			flags &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (i != 0)
			flags &= (uint8_t)~TCP_CWR;
		o[h->l4 + 13] = flags;
		put16(o + h->l4 + 16, 0);
		put16(o + h->l4 + 16, l4_checksum(o, h, flen));
	} else {
		put16(o + h->l4 + 4, flen - h->l4);                   /* UDP length */
		put16(o + h->l4 + 6, 0);
		const uint32_t c = l4_checksum(o, h, flen);

		put16(o + h->l4 + 6, c ? c : 0xffff);
	}
}

enum lab_mseg lab_model_segment(const uint8_t *f, uint32_t len, const struct vl_offload *ol,
				uint8_t *buf, uint32_t cap, struct lab_mframe *fr, uint32_t max,
				uint32_t *n)
{
	const uint32_t type = ol->gso_type & (uint32_t)~VL_NET_HDR_GSO_ECN;
	const uint32_t g = ol->gso_size;
	struct mdl_frame h;

	*n = 0;
	if (g == 0 || !mdl_frame_follow(f, len, &h))
		return LAB_MSEG_BAD;
	if (!(type == VL_NET_HDR_GSO_TCPV4 && !h.v6 && h.proto == 6) &&
	    !(type == VL_NET_HDR_GSO_TCPV6 && h.v6 && h.proto == 6) &&
	    !(type == VL_NET_HDR_GSO_UDP_L4 && h.proto == 17 &&
	      !(ol->gso_type & VL_NET_HDR_GSO_ECN)))
		return LAB_MSEG_BAD;
	const uint32_t payload = len - h.hdr_len;
	const uint32_t frames = payload == 0 ? 1 : (payload + g - 1) / g;

	if (frames > max || (uint64_t)frames * h.hdr_len + payload > cap)
		return LAB_MSEG_ROOM;
	uint32_t at = 0;

	for (uint32_t i = 0; i < frames; i++) {
		const uint32_t chunk = payload - i * g < g ? payload - i * g : g;

		one_segment(f, &h, g, i, frames, chunk, buf + at);
		fr[i] = (struct lab_mframe){.off = at, .len = h.hdr_len + chunk};
		at += h.hdr_len + chunk;
	}
	*n = frames;
	return LAB_MSEG_OK;
}

enum lab_mseg lab_model_fit(uint64_t features, const uint8_t *p, uint32_t len,
			    const struct vl_offload *ol, uint8_t *buf, uint32_t cap,
			    struct lab_mframe *fr, uint32_t max, uint32_t *n)
{
	*n = 0;
	if (lab_rx_offload_rule(features, ol) == VL_DROP_NONE)
		return LAB_MSEG_AS_IS;
	if (ol->gso_type != VL_NET_HDR_GSO_NONE)
		return lab_model_segment(p, len, ol, buf, cap, fr, max, n);
	if (max < 1 || len > cap)
		return LAB_MSEG_ROOM;
	memcpy(buf, p, len);
	if ((ol->flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    lab_model_csum_complete(buf, len, ol) != LAB_MSEG_OK)
		return LAB_MSEG_BAD;
	fr[0] = (struct lab_mframe){.off = 0, .len = len, .ol = *ol};
	fr[0].ol.flags = 0;
	*n = 1;
	return LAB_MSEG_OK;
}

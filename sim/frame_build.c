/* SPDX-License-Identifier: MIT */
#include "frame_build.h"

#include <string.h>

#include "rng.h"
#include "vhostlab/vl_virtio.h"

static void be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

uint32_t lab_csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	uint64_t s = sum;

	for (uint32_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t lab_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void lab_frame_layout_of(const struct lab_frame_spec *sp, struct lab_frame_layout *lay)
{
	lay->l3 = sp->vlan ? 18u : 14u;
	lay->l4 = lay->l3 + (sp->ipv6 ? 40u : 20u + 4u * sp->ip_opt_words);
	lay->hdr_len = lay->l4 + (sp->udp ? 8u : 20u + 4u * sp->tcp_opt_words);
	lay->len = lay->hdr_len + sp->payload;
}

uint32_t lab_frame_build(const struct lab_frame_spec *sp, bool partial, uint8_t *out,
			 uint32_t cap, struct lab_frame_layout *lay)
{
	struct lab_rng rng = lab_rng_make(sp->seed, 0x46524d45u);

	lab_frame_layout_of(sp, lay);
	const uint32_t l4len = lay->len - lay->l4;

	if (lay->len > cap || sp->ip_opt_words > 10 || sp->tcp_opt_words > 10 ||
	    l4len > 0xffffu - (sp->ipv6 ? 0u : lay->l4 - lay->l3))
		return 0;
	memset(out, 0, lay->hdr_len);
	for (uint32_t i = 0; i < 12; i++)
		out[i] = (uint8_t)lab_rng_below(&rng, 256);
	out[0] &= 0xfe; /* unicast destination */
	if (sp->vlan) {
		be16(out + 12, 0x8100);
		be16(out + 14, 1 + lab_rng_below(&rng, 4094));
	}
	be16(out + lay->l3 - 2, sp->ipv6 ? 0x86dd : 0x0800);
	uint8_t *ip = out + lay->l3, *l4 = out + lay->l4;
	const uint8_t proto = sp->udp ? 17 : 6;
	uint32_t pseudo = 0;
	uint8_t ln[4] = {(uint8_t)(l4len >> 24), (uint8_t)(l4len >> 16), (uint8_t)(l4len >> 8),
			 (uint8_t)l4len};

	if (sp->ipv6) {
		ip[0] = 0x60;
		be16(ip + 4, l4len);
		ip[6] = proto;
		ip[7] = 64;
		for (uint32_t i = 8; i < 40; i++)
			ip[i] = (uint8_t)lab_rng_below(&rng, 256);
		pseudo = lab_csum_add(pseudo, ip + 8, 32);
	} else {
		const uint32_t ihl = lay->l4 - lay->l3;

		ip[0] = (uint8_t)(0x40 | ihl / 4);
		be16(ip + 2, ihl + l4len);
		be16(ip + 4, sp->ip_id);
		be16(ip + 6, 0x4000); /* don't fragment */
		ip[8] = 64;
		ip[9] = proto;
		for (uint32_t i = 12; i < 20; i++)
			ip[i] = (uint8_t)lab_rng_below(&rng, 256);
		memset(ip + 20, 1, ihl - 20); /* NOP options */
		be16(ip + 10, lab_csum_fold(lab_csum_add(0, ip, ihl)));
		pseudo = lab_csum_add(pseudo, ip + 12, 8);
	}
	const uint8_t pz[4] = {0, 0, 0, proto};

	pseudo = lab_csum_add(pseudo, ln, 4);
	pseudo = lab_csum_add(pseudo, pz, 4);
	be16(l4, 1024 + lab_rng_below(&rng, 60000));
	be16(l4 + 2, 1024 + lab_rng_below(&rng, 60000));
	uint32_t field;

	if (sp->udp) {
		be16(l4 + 4, l4len);
		field = 6;
	} else {
		l4[4] = (uint8_t)(sp->seq >> 24);
		l4[5] = (uint8_t)(sp->seq >> 16);
		l4[6] = (uint8_t)(sp->seq >> 8);
		l4[7] = (uint8_t)sp->seq;
		l4[12] = (uint8_t)((5u + sp->tcp_opt_words) << 4);
		l4[13] = sp->tcp_flags;
		be16(l4 + 14, 65535);
		memset(l4 + 20, 1, 4u * sp->tcp_opt_words);
		field = 16;
	}
	for (uint32_t i = 0; i < sp->payload; i++)
		out[lay->hdr_len + i] = (uint8_t)lab_rng_below(&rng, 256);
	if (partial) {
		/* What a driver leaves for NEEDS_CSUM: the pseudo-header sum, folded, not
		 * complemented. */
		be16(l4 + field, (uint16_t)~lab_csum_fold(pseudo));
	} else {
		uint16_t c = lab_csum_fold(lab_csum_add(pseudo, l4, l4len));

		be16(l4 + field, sp->udp && c == 0 ? 0xffff : c);
	}
	return lay->len;
}

void lab_frame_offload(const struct lab_frame_spec *sp, const struct lab_frame_layout *lay,
		       uint16_t gso_size, bool ecn, struct vl_offload *ol)
{
	*ol = (struct vl_offload){0};
	ol->flags = VL_NET_HDR_F_NEEDS_CSUM;
	ol->csum_start = (uint16_t)lay->l4;
	ol->csum_offset = sp->udp ? 6 : 16;
	if (gso_size == 0)
		return;
	ol->gso_type = sp->udp ? VL_NET_HDR_GSO_UDP_L4
		       : sp->ipv6 ? VL_NET_HDR_GSO_TCPV6
				  : VL_NET_HDR_GSO_TCPV4;
	if (ecn && !sp->udp)
		ol->gso_type |= VL_NET_HDR_GSO_ECN;
	ol->gso_size = gso_size;
	ol->hdr_len = (uint16_t)lay->hdr_len;
}

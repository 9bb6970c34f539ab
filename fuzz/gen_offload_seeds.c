/* SPDX-License-Identifier: MIT */
/* fuzz_offload's seeds: frames the lab's frame builder makes (sim/frame_build.h) with the
 * header a Linux driver sends with them -- TCP over IPv4 and IPv6, UDP_L4, one VLAN tag,
 * IP and TCP options, checksum only, ECN -- each also cut into guest pieces, and the header
 * rules broken one at a time (checksum past the frame, ECN alone, a type not negotiated or
 * unknown, no segment size, hdr_len past the frame, GSO without NEEDS_CSUM, a checksum
 * position that is not the L4 checksum, a frame of another protocol). Format: the comment
 * at the top of fuzz/fuzz_offload.c. */
#include <string.h>

#include "frame_build.h"
#include "gen_corpus.h"
#include "vhostlab/vl_virtio.h"

#define OF_ALL 0x1fu /* every HOST_* GSO feature and HOST_ECN */

static void put_hdr(struct fz_out *o, const struct vl_offload *ol)
{
	fz_put8(o, ol->flags);
	fz_put8(o, ol->gso_type);
	fz_put16(o, ol->hdr_len);
	fz_put16(o, ol->gso_size);
	fz_put16(o, ol->csum_start);
	fz_put16(o, ol->csum_offset);
	fz_put16(o, 1); /* num_buffers: ignored on TX */
}

/* One seed: features, cut points, header, frame. */
static void offload_seed(const char *name, uint8_t features, const uint16_t *cuts,
			 uint8_t ncuts, const struct vl_offload *ol, const uint8_t *frame,
			 uint32_t len)
{
	struct fz_out o;

	fz_out_init(&o);
	fz_put8(&o, features);
	fz_put8(&o, ncuts);
	for (uint8_t i = 0; i < ncuts; i++)
		fz_put16(&o, cuts[i]);
	put_hdr(&o, ol);
	fz_put_bytes(&o, frame, len);
	save("fuzz_offload", name, &o);
}

struct of_case {
	const char *name;
	struct lab_frame_spec sp;
	uint16_t gso_size; /* 0: checksum only */
	bool ecn;
};

void gen_offload(void)
{
	static uint8_t frame[VL_PKT_MAX_LEN];
	static const struct of_case cases[] = {
		{"tcp4-gso", {.tcp_flags = 0x18, .payload = 4000, .seed = 1}, 1448, false},
		{"tcp6-gso", {.ipv6 = true, .tcp_flags = 0x19, .payload = 3000, .seed = 2}, 1440,
		 false},
		{"udp4-uso", {.udp = true, .payload = 2500, .seed = 3}, 1000, false},
		{"udp6-uso", {.ipv6 = true, .udp = true, .payload = 1500, .seed = 4}, 500, false},
		{"vlan-tcp4-gso", {.vlan = true, .tcp_flags = 0x10, .payload = 3000, .seed = 5},
		 1000, false},
		{"tcp4-options-gso",
		 {.ip_opt_words = 2, .tcp_opt_words = 3, .tcp_flags = 0x11, .payload = 2000,
		  .seed = 6},
		 700, false},
		{"tcp4-ecn-gso", {.tcp_flags = 0x98, .payload = 3000, .seed = 7}, 1448, true},
		{"tcp4-csum", {.tcp_flags = 0x18, .payload = 100, .seed = 8}, 0, false},
		{"udp6-csum-odd", {.ipv6 = true, .udp = true, .payload = 33, .seed = 9}, 0, false},
		{"tcp4-64k-gso", {.tcp_flags = 0x18, .payload = 65000, .seed = 10}, 1448, false},
		{"tcp6-one-segment", {.ipv6 = true, .tcp_flags = 0x18, .payload = 10, .seed = 11},
		 1448, false},
	};
	struct lab_frame_layout lay;
	struct vl_offload ol;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct of_case *c = &cases[i];
		uint32_t len = lab_frame_build(&c->sp, true, frame, sizeof(frame), &lay);

		if (len == 0)
			continue;
		lab_frame_offload(&c->sp, &lay, c->gso_size, c->ecn, &ol);
		offload_seed(c->name, OF_ALL, NULL, 0, &ol, frame, len);
		if (i == 0) {
			/* The same frame as guest pieces: cut in the Ethernet header, the IP header
			 * and the TCP header (what zero-copy's check reads across). */
			const uint16_t cuts[3] = {12 + 7, 12 + 14 + 9, 12 + 34 + 13};
			struct vl_offload bad = ol;

			offload_seed("tcp4-gso-pieces", OF_ALL, cuts, 3, &ol, frame, len);
			/* Each header rule broken alone, on this frame. */
			bad.csum_offset = (uint16_t)(len - bad.csum_start);
			offload_seed("bad-csum-past-frame", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			offload_seed("bad-gso-not-negotiated", OF_ALL & ~1u, NULL, 0, &bad, frame,
				     len);
			bad.gso_type = VL_NET_HDR_GSO_NONE | VL_NET_HDR_GSO_ECN;
			offload_seed("bad-ecn-alone", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			bad.gso_type = VL_NET_HDR_GSO_TCPV4 | VL_NET_HDR_GSO_ECN;
			offload_seed("bad-ecn-not-negotiated", OF_ALL & ~16u, NULL, 0, &bad, frame,
				     len);
			bad = ol;
			bad.gso_type = 2;
			offload_seed("bad-gso-unknown-type", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			bad.gso_size = 0;
			offload_seed("bad-gso-no-segment-size", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			bad.hdr_len = (uint16_t)(len + 1);
			offload_seed("bad-gso-hdr-past-frame", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			bad.flags = 0;
			offload_seed("bad-gso-without-csum", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			bad.csum_offset = 6;
			offload_seed("bad-gso-csum-mismatch", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			bad.gso_type = VL_NET_HDR_GSO_TCPV6;
			offload_seed("bad-gso-proto-mismatch", OF_ALL, NULL, 0, &bad, frame, len);
			bad = ol;
			bad.gso_type = VL_NET_HDR_GSO_UDP;
			offload_seed("gso-ufo", OF_ALL, NULL, 0, &bad, frame, len);
			memset(frame + 12, 0xff, 2); /* an ethertype the parser does not follow */
			offload_seed("bad-gso-frame", OF_ALL, NULL, 0, &ol, frame, len);
		}
	}
	/* No offload at all, and a frame shorter than any header. */
	memset(&ol, 0, sizeof(ol));
	memset(frame, 0x42, 64);
	offload_seed("plain", 0, NULL, 0, &ol, frame, 64);
	ol.flags = VL_NET_HDR_F_NEEDS_CSUM | VL_NET_HDR_F_DATA_VALID;
	ol.csum_start = 0;
	ol.csum_offset = 1;
	offload_seed("csum-tiny-frame", 0, NULL, 0, &ol, frame, 3);
}

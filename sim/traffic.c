/* SPDX-License-Identifier: MIT */
#include "traffic.h"

#include <string.h>

#include "rng.h"
#include "vhostlab/vl_virtio.h"

/* Streams of their own, so a packet's kind and its frame's shape do not follow its pattern
 * bytes (lab_fill_pattern(seed, key)) or each other. */
#define PICK_SALT 0x7069636bu
#define SPEC_SALT 0x73706563u

#define TCP_FIN 0x01u
#define TCP_PSH 0x08u
#define TCP_ACK 0x10u
#define TCP_ECE 0x40u
#define TCP_CWR 0x80u

static const char *const mode_names[LAB_OFFLOAD__COUNT] = {"none", "csum", "tso", "all"};

const char *lab_offload_name(enum lab_offload m)
{
	return (unsigned)m < LAB_OFFLOAD__COUNT ? mode_names[m] : "unknown";
}

uint64_t lab_offload_features(enum lab_offload m)
{
	uint64_t f = 0;

	if (m >= LAB_OFFLOAD_CSUM)
		f |= VL_FEATURE(VL_F_NET_CSUM) | VL_FEATURE(VL_F_NET_GUEST_CSUM);
	if (m >= LAB_OFFLOAD_TSO)
		f |= VL_FEATURE(VL_F_NET_HOST_TSO4) | VL_FEATURE(VL_F_NET_HOST_TSO6) |
		     VL_FEATURE(VL_F_NET_HOST_ECN) | VL_FEATURE(VL_F_NET_GUEST_TSO4) |
		     VL_FEATURE(VL_F_NET_GUEST_TSO6) | VL_FEATURE(VL_F_NET_GUEST_ECN);
	if (m >= LAB_OFFLOAD_ALL)
		f |= VL_FEATURE(VL_F_NET_HOST_USO) | VL_FEATURE(VL_F_NET_GUEST_USO4) |
		     VL_FEATURE(VL_F_NET_GUEST_USO6);
	return f;
}

const char *lab_offload_feature_name(unsigned bit)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{VL_F_NET_CSUM, "csum"},           {VL_F_NET_GUEST_CSUM, "guest_csum"},
		{VL_F_NET_GUEST_TSO4, "guest_tso4"}, {VL_F_NET_GUEST_TSO6, "guest_tso6"},
		{VL_F_NET_GUEST_ECN, "guest_ecn"}, {VL_F_NET_HOST_TSO4, "host_tso4"},
		{VL_F_NET_HOST_TSO6, "host_tso6"}, {VL_F_NET_HOST_ECN, "host_ecn"},
		{VL_F_NET_GUEST_USO4, "guest_uso4"}, {VL_F_NET_GUEST_USO6, "guest_uso6"},
		{VL_F_NET_HOST_USO, "host_uso"},
	};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].bit == bit)
			return names[i].name;
	return NULL;
}

void lab_traffic_for(enum lab_offload m, bool rx, uint64_t seed, struct lab_traffic *t)
{
	/* The far side offloads one step more than the guest took, all at most. */
	const enum lab_offload s = rx && m < LAB_OFFLOAD_ALL ? (enum lab_offload)(m + 1) : m;

	*t = (struct lab_traffic){
		.seed = seed,
		.rx = rx,
		.csum = s >= LAB_OFFLOAD_CSUM,
		.gso_tcp = s >= LAB_OFFLOAD_TSO,
		.ecn = s >= LAB_OFFLOAD_TSO,
		.gso_udp = s >= LAB_OFFLOAD_ALL,
	};
}

bool lab_traffic_frame_spec(uint64_t seed, uint64_t key, uint32_t len, uint8_t gso_type,
			    struct lab_frame_spec *sp)
{
	struct lab_rng rng = lab_rng_make(seed, key ^ SPEC_SALT);
	const uint8_t type = gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN;
	const uint32_t proto = lab_rng_below(&rng, 4);

	/* Every draw is made whatever len is, so the shape a frame of len bytes gets is the one
	 * it was given when it was made long enough for it. */
	memset(sp, 0, sizeof(*sp));
	sp->ipv6 = type == VL_NET_HDR_GSO_TCPV6 || (type != VL_NET_HDR_GSO_TCPV4 && (proto & 1));
	sp->udp = type == VL_NET_HDR_GSO_UDP_L4 || (type == VL_NET_HDR_GSO_NONE && (proto & 2));
	sp->vlan = lab_rng_chance(&rng, 1, 4);
	sp->ip_opt_words = lab_rng_chance(&rng, 1, 4) ? (uint8_t)(1 + lab_rng_below(&rng, 10)) : 0;
	/* Most TCP segments carry options (timestamps: 3 words). */
	sp->tcp_opt_words = lab_rng_chance(&rng, 1, 2) ? (uint8_t)(1 + lab_rng_below(&rng, 10)) : 0;
	sp->tcp_flags = TCP_ACK;
	if (lab_rng_chance(&rng, 1, 2))
		sp->tcp_flags |= TCP_PSH;
	if (lab_rng_chance(&rng, 1, 8))
		sp->tcp_flags |= TCP_FIN;
	if (lab_rng_chance(&rng, 1, 8))
		sp->tcp_flags |= TCP_ECE;
	/* Linux marks a GSO frame whose first segment carries CWR with the ECN bit. */
	if ((gso_type & VL_NET_HDR_GSO_ECN) ||
	    (type == VL_NET_HDR_GSO_NONE && lab_rng_chance(&rng, 1, 16)))
		sp->tcp_flags |= TCP_CWR;
	sp->ip_id = (uint16_t)lab_rng_below(&rng, 65536);
	/* One in 16 close enough to 2^32 that a 64 KiB frame's segments wrap. */
	sp->seq = lab_rng_chance(&rng, 1, 16) ? 0xffffffffu - lab_rng_below(&rng, 70000)
					       : (uint32_t)lab_rng_next(&rng);
	sp->seed = lab_rng_next(&rng);
	sp->payload_stream = true;

	struct lab_frame_layout lay;

	/* Too long for len: options, then the tag go; then, unless the GSO type fixes the
	 * protocols, the shortest there is (IPv4 and UDP). */
	for (int step = 0;; step++) {
		lab_frame_layout_of(sp, &lay);
		if (lay.hdr_len <= len)
			break;
		if (step == 0)
			sp->tcp_opt_words = 0;
		else if (step == 1)
			sp->ip_opt_words = 0;
		else if (step == 2)
			sp->vlan = false;
		else if (step == 3 && type == VL_NET_HDR_GSO_NONE)
			sp->ipv6 = false, sp->udp = true;
		else
			return false;
	}
	sp->payload = len - lay.hdr_len;
	return true;
}

/* A GSO frame's length for a header of hdr bytes and segments of g: mostly a few segments,
 * now and then a whole number of them, or one, and one in LAB_GSO_BIG_EVERY as long as a
 * GSO frame gets (Linux sends up to 64 KiB). */
static uint32_t gso_len(struct lab_rng *rng, uint32_t hdr, uint32_t g)
{
	const uint32_t pick = lab_rng_below(rng, 16);

	if (lab_rng_chance(rng, 1, LAB_GSO_BIG_EVERY))
		return 65535u - lab_rng_below(rng, 2048);
	if (pick == 0)
		return hdr + g * (1 + lab_rng_below(rng, 12));
	if (pick == 1)
		return hdr + 1 + lab_rng_below(rng, g);
	return hdr + 1 + lab_rng_below(rng, 12 * g);
}

void lab_traffic_pick(const struct lab_traffic *t, uint64_t key, uint32_t size, bool gso_ok,
		      struct lab_content *c)
{
	struct lab_rng rng = lab_rng_make(t->seed, key ^ PICK_SALT);
	/* Drawn whatever is picked: a packet's kind is the same whatever the run allows. */
	const bool gso = lab_rng_chance(&rng, 1, LAB_GSO_EVERY);
	const bool frame = lab_rng_chance(&rng, 1, LAB_FRAME_EVERY);
	const uint32_t csum = lab_rng_below(&rng, 3);
	struct lab_frame_spec sp;
	struct lab_frame_layout lay;

	memset(c, 0, sizeof(*c));
	c->kind = LAB_CONTENT_PATTERN;
	c->len = size;
	if (gso && gso_ok && (t->gso_tcp || t->gso_udp)) {
		const bool udp = t->gso_udp && (!t->gso_tcp || lab_rng_chance(&rng, 1, 3));
		const bool v6 = lab_rng_chance(&rng, 1, 2);
		const bool ecn = !udp && t->ecn && lab_rng_chance(&rng, 1, 4);
		const uint16_t g = (uint16_t)(LAB_GSO_SIZE_MIN +
					      lab_rng_below(&rng, LAB_GSO_SIZE_MAX -
								  LAB_GSO_SIZE_MIN + 1));
		uint8_t type = udp  ? VL_NET_HDR_GSO_UDP_L4
			       : v6 ? VL_NET_HDR_GSO_TCPV6
				    : VL_NET_HDR_GSO_TCPV4;

		if (ecn)
			type |= VL_NET_HDR_GSO_ECN;
		/* The header's shape does not depend on the length once it fits: find it at
		 * the longest, then cut the frame to its own length. */
		lab_traffic_frame_spec(t->seed, key, 65535, type, &sp);
		lab_frame_layout_of(&sp, &lay);
		c->kind = LAB_CONTENT_FRAME;
		c->len = gso_len(&rng, lay.hdr_len, g);
		/* udp: IPv6 or not was drawn in the spec (lab_traffic_frame_spec). */
		lab_frame_offload(&sp, &lay, g, ecn, &c->ol);
		return;
	}
	if (!frame || !lab_traffic_frame_spec(t->seed, key, size, VL_NET_HDR_GSO_NONE, &sp))
		return;
	lab_frame_layout_of(&sp, &lay);
	c->kind = LAB_CONTENT_FRAME;
	/* Checksum left to the other side, or (host to guest) already checked by it, or
	 * complete; without checksum offload always complete. */
	if (t->csum && csum == 0)
		lab_frame_offload(&sp, &lay, 0, false, &c->ol);
	else if (t->csum && t->rx && csum == 1)
		c->ol.flags = VL_NET_HDR_F_DATA_VALID;
}

void lab_traffic_bytes(uint64_t seed, uint64_t key, const struct lab_content *c, uint8_t *out)
{
	struct lab_frame_spec sp;
	struct lab_frame_layout lay;

	if (c->kind == LAB_CONTENT_FRAME &&
	    lab_traffic_frame_spec(seed, key, c->len, c->ol.gso_type, &sp)) {
		lab_frame_build(&sp, (c->ol.flags & VL_NET_HDR_F_NEEDS_CSUM) != 0, out, c->len,
				&lay);
		return;
	}
	lab_fill_pattern(out, c->len, seed, key);
}

uint32_t lab_traffic_hdr_len(uint64_t seed, uint64_t key, const struct lab_content *c)
{
	struct lab_frame_spec sp;
	struct lab_frame_layout lay;

	if (c->kind != LAB_CONTENT_FRAME ||
	    !lab_traffic_frame_spec(seed, key, c->len, c->ol.gso_type, &sp))
		return 0;
	lab_frame_layout_of(&sp, &lay);
	return lay.hdr_len;
}

/* SPDX-License-Identifier: MIT */
/* The lab's offloaded traffic: which features each offload mode negotiates, what packet a
 * key stands for -- a pattern of seeded bytes, or an Ethernet frame (sim/frame_build.h) sent
 * plain, with its checksum left to the other side, or as a GSO frame of up to 64 KiB -- and
 * its bytes. The guest draws its TX packets here, the host its RX packets; the checkers
 * rebuild a packet's bytes from what it stands for (struct lab_content) instead of storing
 * them, as they always did for patterns. */
#ifndef LAB_TRAFFIC_H
#define LAB_TRAFFIC_H

#include <stdbool.h>
#include <stdint.h>

#include "frame_build.h"
#include "vhostlab/vl_pkt.h"

/* `vhostlab run --offload`: the offload features the simulated driver negotiates. */
enum lab_offload {
	LAB_OFFLOAD_NONE = 0, /* none: the header carries nothing */
	LAB_OFFLOAD_CSUM,     /* CSUM, GUEST_CSUM */
	LAB_OFFLOAD_TSO,      /* + HOST_TSO4/6, HOST_ECN, GUEST_TSO4/6, GUEST_ECN */
	LAB_OFFLOAD_ALL,      /* + HOST_USO, GUEST_USO4, GUEST_USO6 */
	LAB_OFFLOAD__COUNT
};

const char *lab_offload_name(enum lab_offload m);
uint64_t lab_offload_features(enum lab_offload m);
/* The name of feature bit `bit` when it is one of the offload features a mode negotiates
 * (spelt as trace files spell it: "csum", "guest_tso4", ...), else NULL. */
const char *lab_offload_feature_name(unsigned bit);

/* Segment sizes of the lab's GSO frames (TCP MSS of IPv4 on a 576-byte and a 1500-byte
 * link), and the longest headers a lab frame has (Ethernet, a VLAN tag, IPv4 with 40
 * bytes of options, TCP with 40): what one segment of a GSO frame can be at most. */
#define LAB_GSO_SIZE_MIN 536u
#define LAB_GSO_SIZE_MAX 1460u
#define LAB_FRAME_HDR_MAX 138u
#define LAB_SEGMENT_MAX (LAB_FRAME_HDR_MAX + LAB_GSO_SIZE_MAX)
/* Most frames one GSO frame is cut into: 65535 bytes at the smallest segment size. */
#define LAB_GSO_FRAMES_MAX (65535u / LAB_GSO_SIZE_MIN + 1u)
/* How often (one packet in ...) a packet is a GSO frame where the sender may send them, and
 * how often such a frame is one of the longest (60..64 KiB); and how often any other packet
 * long enough to hold the headers is a frame rather than a pattern. Few, since a 64 KiB
 * frame costs what some 35 packets of the default sizes do. */
#define LAB_GSO_EVERY 48u
#define LAB_GSO_BIG_EVERY 4u
#define LAB_FRAME_EVERY 4u

/* What a packet's bytes are. */
enum lab_content_kind {
	LAB_CONTENT_PATTERN = 0, /* lab_fill_pattern(seed, key) */
	LAB_CONTENT_FRAME,       /* the frame of key (lab_traffic_frame_spec), its checksum
				  * partial when ol.flags has NEEDS_CSUM */
};

struct lab_content {
	uint8_t kind;            /* enum lab_content_kind */
	/* The packet the sender made (len, ol) did not suit the driver: the host sent frame
	 * `seg` of the `nseg` its fit made (vl_sw_fit), which must be the model's
	 * (lab_model_fit). */
	bool fit;
	uint16_t seg, nseg;
	uint32_t len;            /* the packet's length as its sender made it */
	struct vl_offload ol;    /* and its offloads */
};

/* What a sender may offload. */
struct lab_traffic {
	uint64_t seed;
	bool csum;          /* NEEDS_CSUM (and, host to guest, DATA_VALID) */
	bool rx;            /* host to guest */
	bool gso_tcp, gso_udp, ecn;
};

/* The sender of mode m's traffic. Guest to host (rx false): the guest itself, offloading
 * what m negotiates. Host to guest: the far side of the host, which offloads one step more
 * than the guest took (none: checksums; csum: + TCP GSO with ECN; tso and all: + UDP GSO),
 * so that every mode gets both packets its driver takes as they are and packets the host
 * must make fit (vl_sw_fit). */
void lab_traffic_for(enum lab_offload m, bool rx, uint64_t seed, struct lab_traffic *t);

/* Packet `key`, drawn with `size` bytes: a pattern of size bytes (kind PATTERN, ol zero: the
 * caller gives patterns their headers), a frame of size bytes, or, when gso_ok, now and then
 * a GSO frame of a length of its own (up to 65535 bytes). */
void lab_traffic_pick(const struct lab_traffic *t, uint64_t key, uint32_t size, bool gso_ok,
		      struct lab_content *c);

/* The frame of key, len bytes long, of GSO type gso_type (its protocols follow from it;
 * VL_NET_HDR_GSO_NONE: drawn): false when no lab frame is that short. */
bool lab_traffic_frame_spec(uint64_t seed, uint64_t key, uint32_t len, uint8_t gso_type,
			    struct lab_frame_spec *sp);

/* The length of the Ethernet, IP and L4 headers of packet key when it is a frame, else 0. */
uint32_t lab_traffic_hdr_len(uint64_t seed, uint64_t key, const struct lab_content *c);

/* The c->len bytes packet key holds as its sender made it (c->fit is not applied). */
void lab_traffic_bytes(uint64_t seed, uint64_t key, const struct lab_content *c, uint8_t *out);

#endif

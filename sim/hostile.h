/* SPDX-License-Identifier: MIT */
/* Hostile guest shapes: one generator per datapath class of hostile-inputs.md, for both ring
 * layouts, and the outcome the core is documented to give for each (docs/architecture.md,
 * "Hostile inputs"). A generator writes its chain into a driver ring the way a malicious
 * driver would -- raw descriptors, ids, flags and indices -- into simulated guest memory;
 * tests post a good chain before and after it and check the outcome. */
#ifndef LAB_HOSTILE_H
#define LAB_HOSTILE_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "vhostlab/vl_vq.h"
#include "vring_packed.h"
#include "vring_split.h"

enum lab_hostile {
	LAB_HOSTILE_LOOP,             /* split: next links form a cycle */
	LAB_HOSTILE_LOOP_INDIRECT,    /* split: a cycle inside an indirect table */
	LAB_HOSTILE_NEXT_OUT_OF_RANGE, /* split: next >= queue size */
	LAB_HOSTILE_HEAD_OUT_OF_RANGE, /* split: head >= size; packed: buffer id >= size */
	LAB_HOSTILE_AVAIL_JUMP,       /* split: avail->idx moves by more than the queue size */
	LAB_HOSTILE_NESTED_INDIRECT,  /* an indirect table entry with INDIRECT set */
	LAB_HOSTILE_INDIRECT_LEN_ZERO,
	LAB_HOSTILE_INDIRECT_LEN_ODD, /* not a multiple of 16 */
	LAB_HOSTILE_INDIRECT_TOO_BIG, /* more entries than the queue size */
	LAB_HOSTILE_UNMAPPED,         /* a buffer in the hole between regions */
	LAB_HOSTILE_PAST_END,         /* a buffer that runs past the end of guest RAM */
	LAB_HOSTILE_STRADDLE,         /* a buffer across two regions: legal, must work */
	LAB_HOSTILE_HEADER_SPREAD,    /* TX: header over three descriptors: legal, must work */
	LAB_HOSTILE_SHORT_CHAIN,      /* TX: chain no longer than the header */
	LAB_HOSTILE_ZERO_LEN,         /* only zero-length descriptors */
	LAB_HOSTILE_LEN_OVERFLOW,     /* lengths summing past 2^32 */
	LAB_HOSTILE_DIRECTION,        /* WRITE in a TX chain, read-only in an RX chain */
	LAB_HOSTILE_BAD_OFFLOAD,      /* TX: checksum offset beyond the packet */
	/* TX offload headers, one class per rule (docs/architecture.md, "Hostile inputs",
	 * bogus offload header). They assume HOST_TSO4, HOST_TSO6, HOST_USO and HOST_ECN are
	 * negotiated and HOST_UFO is not (lab_hostile_offload_features). */
	LAB_HOSTILE_ECN_WITHOUT_GSO,  /* the ECN bit alone */
	LAB_HOSTILE_GSO_UNKNOWN_TYPE, /* gso_type 2 */
	LAB_HOSTILE_GSO_NOT_NEGOTIATED, /* UFO on a UDP frame, HOST_UFO not negotiated */
	LAB_HOSTILE_GSO_NO_SEGMENT_SIZE, /* a TCPv4 frame with gso_size 0 */
	LAB_HOSTILE_GSO_HDR_PAST_FRAME, /* hdr_len one past the packet */
	LAB_HOSTILE_GSO_WITHOUT_CSUM, /* a sound TCPv4 GSO frame without NEEDS_CSUM */
	LAB_HOSTILE_GSO_BAD_FRAME,    /* IPv4 and TCP header lengths that run past the frame */
	LAB_HOSTILE_GSO_PROTO_MISMATCH, /* TCPV6 on an IPv4 frame */
	LAB_HOSTILE_GSO_CSUM_MISMATCH, /* the checksum asked for at UDP's offset in TCP */
	LAB_HOSTILE_GSO_FRAME,        /* a sound UDP_L4 frame over IPv6: legal, must work */
	LAB_HOSTILE_RX_TOO_SMALL,     /* RX: buffer smaller than the virtio-net header */
	LAB_HOSTILE_INCOMPLETE,       /* packed: head available, the rest of its chain not */
	LAB_HOSTILE_USED_HEAD,        /* packed: a head whose USED bit equals the wrap counter */
	LAB_HOSTILE__COUNT
};

/* What the core does with a class. */
enum lab_hostile_kind {
	LAB_HK_DROPPED,  /* returned to the guest with used length 0, counted under `reason` */
	LAB_HK_BROKEN,   /* the queue is declared broken with `reason`; chains before it served */
	LAB_HK_IGNORED,  /* not available: nothing consumed, nothing counted, queue fine */
	LAB_HK_WORKS,    /* legal if odd: delivered like any packet */
};

struct lab_hostile_outcome {
	enum lab_hostile_kind kind;
	enum vl_drop reason;
};

/* A driver ring to write into: exactly one of vr (split) / pr (packed) is used. */
struct lab_hostile_env {
	enum vl_layout layout;
	bool rx;                 /* an RX queue (device-writable buffers) or TX */
	uint32_t hdr_len;        /* virtio-net header bytes (10 or 12) */
	struct lab_gmem *g;
	struct lab_vring *vr;
	struct lab_pring *pr;
};

const char *lab_hostile_name(enum lab_hostile c);
/* Does the class exist for this layout and direction? */
bool lab_hostile_applies(enum lab_hostile c, enum vl_layout layout, bool rx);
struct lab_hostile_outcome lab_hostile_expect(enum lab_hostile c, enum vl_layout layout,
					      bool rx);

/* The features the offload classes assume beside VIRTIO_NET_F_CSUM. */
#define LAB_HOSTILE_OFFLOAD_FEATURES                                                         \
	(VL_FEATURE(VL_F_NET_HOST_TSO4) | VL_FEATURE(VL_F_NET_HOST_TSO6) |                   \
	 VL_FEATURE(VL_F_NET_HOST_USO) | VL_FEATURE(VL_F_NET_HOST_ECN))
/* Is c one of the offload-header classes (the ceilings, which never read the header, take
 * them as good packets)? */
bool lab_hostile_is_offload(enum lab_hostile c);

/* Write class c into the ring and make it available. *id receives the id the device must
 * return the chain under (when it is returned at all). Returns 0, or -1 when guest memory
 * or descriptors ran out. */
int lab_hostile_post(struct lab_hostile_env *e, enum lab_hostile c, uint16_t *id);

/* A well-formed chain of one descriptor: TX a zero header then len bytes of `fill`, RX room
 * for a header and len bytes. The same writer the generators use, for the good neighbours. */
int lab_hostile_post_good(struct lab_hostile_env *e, uint32_t len, uint8_t fill, uint16_t *id);

#endif

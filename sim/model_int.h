/* SPDX-License-Identifier: MIT */
/* The reference model's internals, shared by model.c (state, guest memory), model_ring.c
 * (split and packed rings: finding chains, walking them, used write-back) and model_net.c
 * (the virtio-net header, dequeue and enqueue). Not used outside the model. */
#ifndef LAB_MODEL_INT_H
#define LAB_MODEL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

/* One host mapping: guest range [gpa, last] (inclusive: a range may end at 2^64 - 1) at
 * host address `host`. Regions adjacent in guest AND host space are one mapping, so a
 * buffer crossing from one to the other is still one piece. */
struct mdl_map {
	uint64_t gpa, last;
	uintptr_t host;
};

/* A buffer of a chain: one descriptor's guest range (zero-length descriptors are skipped). */
struct mdl_seg {
	uint64_t gpa;
	uint32_t len;
};

/* A chain as the model walked it. */
struct mdl_chain {
	uint16_t id;       /* what the used entry names: split head / packed buffer id */
	uint16_t ndescs;   /* ring descriptors it holds (an indirect table counts as one) */
	uint32_t len;      /* bytes in its buffers */
	uint32_t pieces;   /* host pieces those bytes make (cut at mapping boundaries) */
	uint32_t seg0;     /* its buffers: m->segs[seg0 .. seg0 + nsegs) */
	uint32_t nsegs;
	enum vl_drop why;  /* VL_DROP_NONE, or the chain-level reason to drop it */
};

/* Packed: where a chain of this call's window starts and how many descriptors it holds. */
struct mdl_ploc {
	uint16_t pos;
	bool wrap;
	uint16_t ndescs;
};

struct mdl_used {
	uint16_t id;
	uint16_t ndescs;
	uint32_t len;
};

struct lab_model {
	enum vl_layout layout;
	uint32_t size;
	uint32_t hdr_len;      /* 12 with VERSION_1 or MRG_RXBUF, else 10 (spec 5.1.6) */
	bool mergeable, indirect, in_order;
	uint64_t features;     /* as negotiated: the TX header's GSO types need their HOST_* bit */
	struct lab_gmem *g;
	struct mdl_map *maps;
	uint32_t nmaps;

	/* Ring areas (guest view). Split: descriptor table, avail ring, used ring. Packed:
	 * the descriptor ring (the event areas are not modelled). */
	uint8_t *desc, *avail, *used;
	/* Split: next avail entry to consume, next used index to publish, and the avail
	 * entries the current call may consume (read once per call). */
	uint16_t last_avail, used_idx, window;
	/* Packed: next position to consume / to write a used descriptor, with wrap counters;
	 * the chains of this call's window found so far. */
	uint16_t avail_pos, used_pos;
	bool avail_wrap, used_wrap;
	struct mdl_ploc *ploc;  /* [size] */
	uint32_t nploc, ploc_descs;
	bool ploc_end;

	/* Scratch: the buffers of the chains being walked, one call's used entries, walk
	 * visit marks (split loop detection), linear packet bytes. */
	struct mdl_seg *segs;
	uint32_t nsegs, segs_cap;
	struct mdl_used *usedq; /* [size] */
	uint32_t nused;
	uint32_t *seen;         /* [size]: == stamp when visited by the current table walk */
	uint32_t stamp;
	uint8_t *buf;
	size_t buf_cap;
	/* [size] each: enqueue's chains reserved for one packet and the bad chains met after
	 * the first of them; dequeue's packet offsets in buf. */
	struct mdl_chain *rsv, *deferred;
	size_t *pkt_off;

	enum vl_drop broken;
	struct lab_model_stats st;
};

/* ---- model.c: guest memory ---------------------------------------------------------- */

/* Is every byte of [gpa, gpa + len) mapped? Adds the host pieces it makes to *pieces. */
enum vl_drop mdl_map_range(const struct lab_model *m, uint64_t gpa, uint32_t len,
			   uint32_t *pieces);
/* Guest-view pointer to a mapped range (mdl_map_range said so). */
uint8_t *mdl_gptr(const struct lab_model *m, uint64_t gpa, uint64_t len);
/* Room for n bytes in m->buf (NULL when memory is short). */
uint8_t *mdl_buf(struct lab_model *m, size_t n);
void mdl_break(struct lab_model *m, enum vl_drop why);

/* ---- model_ring.c: rings -------------------------------------------------------------- */

/* Start a call: split reads avail->idx once (more than size new entries breaks the model);
 * packed forgets the previous window. */
void mdl_begin(struct lab_model *m);
/* Is chain `pos` of this call's window available (0 = the first not consumed)? Packed scans
 * as far as needed; an incomplete chain breaks the model (then false). */
bool mdl_available(struct lab_model *m, uint32_t pos);
/* Does the window hold every chain the ring can (split: size entries; packed: every
 * descriptor)? */
bool mdl_window_full(struct lab_model *m);
/* Walk chain `pos` (available) into c, appending its buffers to m->segs. `rx`: buffers
 * must be device-writable, else device-readable. False when the chain has no usable id
 * (the model is then broken); otherwise c->why says whether it is good. */
bool mdl_fetch(struct lab_model *m, uint32_t pos, bool rx, struct mdl_chain *c);
/* The first n chains of the window are consumed. */
void mdl_consume(struct lab_model *m, uint32_t n);
/* Queue a used entry for c; mdl_publish writes the call's entries into the used ring. */
void mdl_push_used(struct lab_model *m, const struct mdl_chain *c, uint32_t len);
void mdl_publish(struct lab_model *m);

/* model_offload.c: a transmitted GSO frame's rules (frame: the packet after the header),
 * and which offloads the receiving driver takes. VL_DROP_NONE or the reason. */
enum vl_drop mdl_tx_frame_check(const struct vl_offload *ol, const uint8_t *frame, uint32_t len);
enum vl_drop mdl_rx_offload_check(const struct lab_model *m, const struct vl_offload *ol);

#endif

/* SPDX-License-Identifier: MIT */
/* The session recorder's view of one burst, shared by session_rec_walk.c (the chains the
 * guest posted, read back from the recorder's copies) and session_rec_burst.c (the burst
 * into statements and expectations). */
#ifndef LAB_SESSION_REC_BURST_H
#define LAB_SESSION_REC_BURST_H

#include <stdbool.h>
#include <stdint.h>

#include "session_rec_internal.h"

/* A descriptor (ring entry or indirect table entry) as the guest wrote it. */
struct rdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t a, b;   /* split: flags, next; packed: id, flags */
};

struct rbuf {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

/* A chain of the burst: split, its head; packed, its first position, wrap and length. */
struct rchain {
	uint16_t head_or_pos;
	bool wrap;
	uint16_t ndescs;
	uint16_t id;
};

struct burst {
	struct lab_srec *r;
	struct srec_q *q;
	bool dequeue;           /* a TX burst: dequeue or discard */
	bool discard;           /* vl_net_discard(_touch): chains only, no packet */
	bool touch;
	uint32_t hdr;           /* virtio-net header bytes */
	bool mergeable;
	struct rchain *chains;  /* [q->size] */
	uint32_t nchains;
	struct rbuf *bufs;      /* [q->size]: one chain's buffers */
	uint8_t *scratch;       /* [VL_PKT_MAX_LEN]: a packet's bytes in one piece */
	char why[200];
};

/* Record why the burst cannot be written (the first reason wins); returns false. */
bool srec_fail(struct burst *b, const char *why);

/* A 16-byte descriptor as the guest wrote it (split or packed layout: see struct rdesc). */
struct rdesc srec_parse_desc(const uint8_t *p);

/* Order the captured byte ranges by address (then by capture order) for srec_cap_read. */
void srec_sort_caps(struct lab_srec *r);

/* n bytes at gpa from the captures, the earliest capture winning where two overlap; false
 * if any byte was not captured. */
bool srec_cap_read(const struct lab_srec *r, uint64_t gpa, uint32_t n, uint8_t *out);

/* Move a packed ring position by n descriptors, flipping the wrap counter at the end. */
void srec_padvance(uint32_t size, uint16_t *pos, bool *wrap, uint32_t n);

/* Distance from (from, fw) forward to (to, tw) on a packed ring of `size`. */
uint32_t srec_pdist(uint32_t size, uint16_t from, bool fw, uint16_t to, bool tw);

/* Walk chain k of b->chains into b->bufs (*nb buffers, *total bytes). */
bool srec_walk(struct burst *b, uint32_t k, uint32_t *nb, uint64_t *total);

/* Fill b->chains with the chains whose descriptors go into the trace. */
bool srec_collect_chains(struct burst *b, uint16_t a_avail);

#endif

/* SPDX-License-Identifier: MIT */
/* The hostile guest: a simulated driver that writes anything anywhere into one virtqueue's
 * guest memory -- raw descriptors, indirect tables, avail entries and indices, packed flag
 * flips, event areas -- or posts well-formed chains of chosen shapes, interleaved with host
 * calls into the core (bursts, frees, completes, pool failures, run-time switches). After
 * every action it checks what must hold whatever the guest wrote (hg_checks.c): the queue is
 * working or broken for a queue-level reason, used entries are well-formed, every packet is
 * readable and inside its buffers, statistics agree, pools are whole at the end.
 *
 * It is driven by actions (struct lab_hg_action), not by bytes: the datapath fuzz targets
 * and `vhostlab trace from-fuzz` decode their inputs into actions (sim/input/dp_decode.c).
 * A run can be recorded as a trace (fz_sink, sim/input/fz_bytes.h). One queue, one layout,
 * one direction per run; one run at a time (the state is static: fuzzing reuses it). */
#ifndef LAB_HOSTILE_GUEST_H
#define LAB_HOSTILE_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_format.h"
#include "vhostlab/vhostlab.h"

/* What one action does. Where the layouts differ the meaning is given as split / packed;
 * every value is taken as given and reduced by the engine (an action is hostile too). */
enum lab_hg_kind {
	LAB_HG_WRITE,     /* ram ? RAM : ring area, at off % area: n bytes of bytes[] */
	LAB_HG_FILL,      /* ram, off % area: count bytes of value `byte` */
	LAB_HG_DESC,      /* descriptor index % size := addr, len, flags, other (split: next;
			   * packed: id, flags stored last with release) */
	LAB_HG_TABLE,     /* one raw 16-byte indirect table entry at RAM offset off */
	LAB_HG_POST,      /* a well-formed chain: shape (FZ_POST_*), len, RAM offset off, hdr
			   * (FZ_POST_RAW_HDR) -- published */
	LAB_HG_AVAIL,     /* split: head `value` into the next avail slot (not published) /
			   * packed: rewrite flags of descriptor `value` by mode `byte`
			   * (FZ_PFLAG_*) */
	LAB_HG_PUBLISH,   /* split: avail->idx := the driver's index / packed: driver position
			   * := value (bit 15: wrap) */
	LAB_HG_FORCE,     /* split: avail->idx := value, the driver continues from there /
			   * packed: the driver skips `byte` positions */
	LAB_HG_EVENT,     /* split: used_event (flag) or avail->flags := value / packed: the
			   * driver event area := off_wrap `value`, flags `other` */
	LAB_HG_BURST,     /* dequeue: count `byte` (the call the setup's hold bits pick) /
			   * enqueue: npkts packets of lens[i] bytes, modifiers mods[i] */
	LAB_HG_FREE,      /* free held packets, mode `byte` (0 all, 1 oldest half, 2 every
			   * other, 3 the newest) */
	LAB_HG_COMPLETE,  /* vl_vq_complete */
	LAB_HG_POOLFAIL,  /* the dequeue pool fails after `byte` allocations (255: never) */
	LAB_HG_KICKS,     /* vl_vq_set_kicks(byte & 1) */
	LAB_HG_BATCH,     /* batching threshold fz_batch_threshold(byte) */
	LAB_HG_POLICY,    /* bits of `byte`: 0 burst allocation, 1 evict-after-read, 2 line
			   * wait, 3 payload prefetch off */
	LAB_HG_ZC,        /* zero-copy as fz_dp_setup.zc, from `byte` */
	LAB_HG_SETMEM,    /* a new memory table over the same regions */
};

struct lab_hg_action {
	enum lab_hg_kind kind;
	bool ram;              /* WRITE, FILL: RAM, else the ring area */
	bool flag;             /* EVENT (split): used_event, else avail->flags */
	uint8_t byte;          /* the one-byte argument */
	uint8_t shape;         /* POST */
	uint16_t off;          /* WRITE, FILL, TABLE, POST: offset in the area */
	uint16_t value;        /* DESC index; AVAIL; PUBLISH; FORCE; EVENT */
	uint16_t count;        /* FILL: bytes; POST: payload length */
	uint64_t addr;         /* DESC, TABLE */
	uint32_t len;          /* DESC, TABLE */
	uint16_t flags, other; /* DESC, TABLE (other: split next / packed id); EVENT */
	uint8_t n;             /* WRITE: bytes (<= 64) */
	uint8_t bytes[64];     /* WRITE */
	uint8_t hdr[10];       /* POST with FZ_POST_RAW_HDR */
	uint8_t npkts;         /* BURST on RX: 1..FZ_DP_MAX_RX_PKTS */
	uint16_t lens[FZ_DP_MAX_RX_PKTS];
	uint8_t mods[FZ_DP_MAX_RX_PKTS];
};

struct lab_hg;

/* Set up guest memory and one queue as the setup says, the guest on `layout`, the host
 * dequeuing (rx false) or enqueuing (rx true). Fails (fz_fail) only on resources. */
struct lab_hg *lab_hg_begin(enum vl_layout layout, bool rx, const struct fz_dp_setup *s);
/* Do one action and check the invariants after it. */
void lab_hg_apply(struct lab_hg *hg, const struct lab_hg_action *a);
/* Free everything the host holds, return every chain, check the pools are whole, tear
 * down. */
void lab_hg_end(struct lab_hg *hg);

/* Guest-physical addresses of the guest's areas (for decoders that aim at them). */
uint64_t lab_hg_ram_gpa(const struct lab_hg *hg);
uint64_t lab_hg_ring_gpa(const struct lab_hg *hg);
uint64_t lab_hg_hole_gpa(const struct lab_hg *hg);
/* FZ_TRACE: print the queue's state after an action (debugging inputs by hand). */
void lab_hg_dump(const struct lab_hg *hg);

#endif

/* SPDX-License-Identifier: MIT */
/* The session recorder's state, shared by session_rec.c (setup, memory, queues, the load
 * observer, the end) and session_rec_burst.c (one burst into statements). */
#ifndef LAB_SESSION_REC_INTERNAL_H
#define LAB_SESSION_REC_INTERNAL_H

#include "session_rec.h"

/* A region of the current memory table, for turning the host address of a load back into
 * the guest address the trace speaks in. */
struct srec_region {
	uintptr_t host;
	uint64_t gpa, size;
};

/* Bytes the core loaded outside the ring areas (indirect table entries, virtio-net headers)
 * or payload placed in a TX buffer: `len` bytes at `gpa`, kept in the arena at `off`. `seq`
 * orders them as taken: where two overlap, the earlier wins. */
struct srec_cap {
	uint64_t gpa;
	uint32_t len, off, seq;
};

struct srec_q {
	uint32_t tq;                /* index in the trace's queues */
	enum lab_trace_dir dir;
	bool packed;
	uint32_t size;
	uint64_t desc, drv, dev;    /* ring areas (split: desc, avail, used) */
	/* What the replay's driver has published so far: split, its avail index; packed, the
	 * position (and wrap) after the last descriptor written. */
	uint16_t pub;
	bool pub_wrap;
	uint16_t *slot_head;        /* split: the head last put in each avail slot */
	bool *slot_set;
	/* Where the real queue stood after the last burst (vl_vq_last_avail / _last_used), to
	 * tell a ring enabled again from a ring restarted. */
	uint16_t last_avail, last_used;
	bool kicks_trace, kicks_want;
	bool used_known;            /* every used element so far is in the trace */
	uint64_t npkts;             /* packets dequeued in the trace (their numbers) */
	/* What the recorded bursts moved (the closing expectations): summed per burst, so a
	 * ring that comes back as a new queue object (fresh counters) adds up all the same. */
	uint64_t sum_packets, sum_bytes, sum_chains, sum_used, sum_drops[VL_DROP__COUNT];
	/* Captured in the current burst, stamped with its number. */
	uint8_t (*snap)[16];        /* descriptor ring entries as read */
	uint32_t *snap_stamp;
	uint32_t *walk_stamp;       /* packed: the core read addr/len (walked the chain) */
	uint16_t *slot_val;         /* split: avail ring entries */
	uint32_t *slot_stamp;
	uint32_t *touched;          /* descriptors captured this burst, in order */
	uint32_t ntouched;
};

struct lab_srec {
	struct lab_trace t;
	uint64_t max_packets, packets, bursts, max_pkt_len;
	uint32_t max_burst;
	bool stopped;
	char why[256];
	bool finished;
	/* Memory. */
	const struct vl_mem *mem;
	struct srec_region *regs;
	uint32_t nregs;
	/* Queues, by the caller's ring number (-1: not in the trace). */
	int ring_q[LAB_SREC_MAX_RINGS];
	struct srec_q q[LAB_TRACE_MAX_QUEUES];
	uint32_t nq;
	uint64_t features_raw;      /* as the first queue had them */
	/* The burst being captured. */
	struct srec_q *cur;
	struct vl_vq *cur_vq;
	uint32_t stamp;
	uint16_t b_avail, b_used;
	bool b_broken;
	struct vl_vq_stats b_stats;
	uint32_t slots_read;        /* split: avail slots read from last_avail on */
	uint16_t idx_read;          /* split: avail->idx as copied (racy; a broken queue only) */
	bool idx_seen;
	struct srec_cap *caps;
	uint32_t ncaps, cap_caps;
	uint32_t nsorted;           /* caps[0 .. nsorted) are sorted by address */
	uint8_t *arena;
	size_t arena_len, arena_cap;
	bool fault;                 /* a load the recorder could not keep */
	char fault_msg[128];
	lab_srec_race_fn race;      /* tests only */
	void *race_ctx;
};

/* session_rec.c */
bool srec_append(struct lab_srec *r, const struct lab_trace_op *op);
/* Keep n bytes at gpa (copied from src) as a capture; false when out of memory. */
bool srec_keep(struct lab_srec *r, uint64_t gpa, const void *src, uint32_t n);
/* Add what the burst that started at `before` moved on vq to q's sums. */
void srec_note_stats(struct srec_q *q, const struct vl_vq *vq, const struct vl_vq_stats *before);

/* What a recorded burst called. */
enum srec_call { SREC_DEQUEUE, SREC_ENQUEUE, SREC_DISCARD, SREC_DISCARD_TOUCH };

/* session_rec_burst.c: the burst r->cur just ran; pkts/n are what it produced or took (a
 * discard: no packets, done the good chains it returned). */
void srec_burst_done(struct lab_srec *r, enum srec_call call, uint16_t max,
		     struct vl_pkt *const *pkts, uint16_t count, uint16_t done,
		     const uint8_t *status);

#endif

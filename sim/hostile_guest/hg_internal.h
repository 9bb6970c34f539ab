/* SPDX-License-Identifier: MIT */
/* Inside the hostile guest (hostile_guest.h): its state and what its files share. One job
 * per file: hg_setup.c (setup, teardown, pools), hg_apply.c (one action), hg_guest.c (the
 * guest's writes: raw and well-formed chains), hg_host.c (the host's calls into the core),
 * hg_checks.c (the invariants after every call), hg_tx_window.c (how many chains a TX burst
 * must take, read from the ring as the spec says), hg_record.c (the trace a run becomes). */
#ifndef LAB_HG_INTERNAL_H
#define LAB_HG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_format.h"
#include "guest_mem.h"
#include "rng.h"
#include "hostile_guest.h"
#include "ring_write.h"
#include "trace.h"
#include "vhostlab/vhostlab.h"

#define HG_HOST_POOL_BUFS 640u   /* the host's RX packets: 8 x 64 segments and room */
#define HG_HOST_BUF_SIZE 2048u
#define HG_PKT_BYTES_MAX (VL_PKT_MAX_LEN + 65000u + 16u)

struct lab_hg {
	enum vl_layout L;
	bool rx;
	struct fz_dp_setup s;
	uint64_t features;
	uint32_t size, hdr_len;
	struct lab_gmem *g;
	struct vl_mem *mem;
	struct vl_vq *vq;
	struct vl_pool *pool;     /* dequeue allocates here */
	struct vl_pool *hpool;    /* the host builds RX packets here */
	const struct vl_mem_region *regs;
	uint32_t nregs;
	uint8_t *ring;            /* guest view of the ring area */
	uint64_t ring_gpa;
	uint8_t *ram;             /* guest view of RAM */
	uint64_t ram_gpa, hole_gpa;
	/* split driver */
	struct vl_split_desc *desc;
	struct vl_split_avail *avail;
	struct vl_split_used *used;
	uint16_t avail_idx;
	uint16_t next_desc;
	/* packed driver */
	struct vl_packed_desc *pdesc;
	struct vl_packed_event *drv_ev;
	uint16_t ppos;
	bool pwrap;
	uint16_t next_id;
	/* host */
	struct vl_pkt *held[FZ_DP_MAX_HELD];
	uint32_t held_no[FZ_DP_MAX_HELD];  /* packet number of held[i]: dequeue order */
	uint32_t nheld;
	uint32_t dequeued;                 /* packets so far: the next one's number */
	uint32_t discarded;                /* good chains vl_net_discard(_touch) returned */
	uint64_t rng;
	uint8_t *log;
	uint64_t log_bytes;
	uint32_t bursts, posts;
	bool line_wait;                    /* POLICY bit 2 as last given (off at the start) */
	/* recording (fz_sink only): the trace's queue, and whether a statement was recorded
	 * (the setup is final from then on) */
	int rq;
	bool rec_started;
};

/* Scratch the checks and the host share: a packet's bytes, and packed TX's snapshot of the
 * descriptor ring before a burst. */
extern uint8_t hg_scratch[HG_PKT_BYTES_MAX];
extern struct vl_packed_desc hg_psnap[256];

/* Broken-queue reasons that concern the whole queue (the others are per chain). */
static inline bool hg_queue_level(enum vl_drop why)
{
	return why == VL_DROP_AVAIL_IDX_JUMP || why == VL_DROP_HEAD_OUT_OF_RANGE ||
	       why == VL_DROP_ID_OUT_OF_RANGE || why == VL_DROP_CHAIN_INCOMPLETE;
}

/* Packed: step a position and its wrap counter n descriptors on. */
static inline void hg_pstep(uint16_t *pos, bool *wrap, uint32_t n, uint32_t size)
{
	uint32_t p = *pos + n % (2 * size);

	while (p >= size) {
		p -= size;
		*wrap = !*wrap;
	}
	*pos = (uint16_t)p;
}


/* ---- hg_checks.c */
/* What a burst (or vl_vq_complete) published. rx_sum: bytes every delivered packet put in
 * the guest (header + payload), which the used lengths must add up to. */
struct burst_mark {
	uint16_t last_used, last_avail;
	uint64_t used_entries;
	bool pdiff;               /* packed TX: descriptors snapshot taken */
	uint64_t evicted, copies; /* lines_evicted, copies_batched + copies_direct */
	uint64_t batched, copy_pf; /* copies_batched, copy_prefetches */
	uint64_t chains, line_waits, alloc_failures, zc_stalls;
	uint32_t held;            /* chains zero-copy leases held before the call */
	bool broken;
};

void hg_check_queue(struct lab_hg *d);
void hg_check_tx_pkt(struct lab_hg *d, const struct vl_pkt *p);
uint64_t hg_copies_made(const struct vl_vq_stats *st);
void hg_mark_before(struct lab_hg *d, struct burst_mark *m);
void hg_check_evictions(struct lab_hg *d, const struct burst_mark *m, uint64_t want_on);
void hg_check_copy_prefetches(struct lab_hg *d, const struct burst_mark *m, bool dequeue);
void hg_check_after_flush(struct lab_hg *d, const struct burst_mark *m, uint64_t rx_sum);

/* ---- hg_tx_window.c */
/* A packed TX burst's window as the harness reads it from the descriptors the burst found
 * (hg_psnap: a TX burst writes nothing into the ring before its flush), by spec 2.8: from the
 * device's position on, a descriptor is available when AVAIL equals the driver's wrap
 * counter there and USED does not, a chain runs on while NEXT is set, and its buffer id is in
 * its last descriptor. What the burst must take follows from this and line wait's rule
 * (docs/architecture.md, "Line wait"), not from the core's state. */
struct tx_window {
	uint32_t n;             /* chains found, at most the burst's count */
	bool end;               /* found fewer than asked for: the scan stopped there */
	bool whole_ring;        /* ... because the n chains hold every descriptor of the ring */
	bool lie;               /* ... at a head whose tail is not available: the queue breaks */
	uint32_t bad_id;        /* the first chain whose id is >= size (the walk stops there), n
				 * when none is */
	uint32_t take;          /* what the burst takes: n, or fewer by line wait */
	bool waits;             /* line wait left chains (take < n): one tx_line_waits */
	uint16_t at[UINT8_MAX + 2]; /* chain i's first position, wrap counter in bit 15; at[n]
				     * where the window ends (a burst's count is a u8) */
};

void hg_tx_window_before(const struct lab_hg *d, const struct burst_mark *m, uint16_t count,
			 struct tx_window *w);
void hg_check_no_line_waits(struct lab_hg *d, const struct burst_mark *m, const char *what);
void hg_check_tx_take(struct lab_hg *d, const struct burst_mark *m, const struct tx_window *w,
		      uint16_t count, const char *what);

/* ---- hg_record.c (only while fz_sink is set) */
void hg_rec_stmt(struct lab_hg *d, const struct lab_trace_op *op);
void hg_rec_setup(struct lab_hg *d, const struct vl_vq_config *qc, uint32_t pool_bufs,
		  uint32_t pool_size);
void hg_rec_batch(struct lab_hg *d, uint32_t threshold);
void hg_rec_policy(struct lab_hg *d, bool burst, bool line_wait);
void hg_rec_zc(struct lab_hg *d, bool on, uint32_t min, uint32_t max);
void hg_rec_fault(struct lab_hg *d, uint8_t after);
void hg_rec_dequeue(struct lab_hg *d, uint16_t count);
void hg_rec_free(struct lab_hg *d, uint64_t *nums, uint32_t n);
void hg_rec_enqueue(struct lab_hg *d, struct vl_pkt *const *pkts, uint32_t n);
void hg_rec_finish(struct lab_hg *d);

/* ---- hg_host.c */
void hg_free_held(struct lab_hg *d, uint8_t mode);
void hg_do_dequeue(struct lab_hg *d, uint16_t count);
void hg_do_discard(struct lab_hg *d, uint16_t count, bool touch);
enum fz_tx_host hg_tx_host(const struct lab_hg *d, uint32_t k);
void hg_do_enqueue(struct lab_hg *d, uint32_t n, const uint16_t *lens, const uint8_t *mods);
void hg_do_complete(struct lab_hg *d);

/* ---- hg_guest.c */
void hg_do_post(struct lab_hg *d, uint8_t shape, uint16_t len, uint16_t off,
		const uint8_t *hdr10);
void hg_do_pflags(struct lab_hg *d, uint16_t pos, uint8_t mode);
void hg_do_setmem(struct lab_hg *d);

#endif

/* SPDX-License-Identifier: MIT */
/* Replay engine internals shared by trace_replay.c (setup, host statements, the loop),
 * replay_guest.c (the driver side: ring writes, posting, reading used elements) and
 * replay_expect.c (expectations). */
#ifndef LAB_REPLAY_INTERNAL_H
#define LAB_REPLAY_INTERNAL_H

#include <stdarg.h>

#include "trace.h"
#include "trace_mem.h"
#include "trace_replay.h"
#include "vhostlab/vhostlab.h"

/* A packet the host dequeued, by its number on the queue. */
struct rp_pkt {
	struct vl_pkt *p;    /* NULL once freed */
	bool held;           /* `dequeue ... hold`: stays until `free` */
	uint32_t freed_line; /* where it was freed (for messages) */
};

struct rp_queue {
	const struct lab_trace_queue *tq;
	bool packed, in_order;
	uint32_t size;
	struct vl_vq *vq;
	uint8_t *desc, *drv, *dev;      /* guest view of the ring areas */
	/* Split driver: avail index to publish, used index read up to, post's descriptors. */
	uint16_t avail_idx, last_used;
	bool last_pop_outstanding;       /* the last element pop_split read was outstanding */
	bool *desc_busy;                 /* [size] held by a posted chain */
	uint16_t *chain_next;            /* [size] next descriptor of a posted chain */
	uint16_t *chain_len;             /* [size] by head: descriptors (0: not posted by post) */
	uint32_t *head_out;              /* [size] by head: times made available (avail, post)
					  * and not yet seen used: what "outstanding" means for
					  * `expect used` without id= */
	/* Packed driver. */
	uint16_t next_avail, next_used, scan_pos;
	bool avail_wrap, used_wrap, scan_wrap;
	bool *fresh;                     /* [size] written by pdesc, not yet grouped */
	uint16_t *pos_id;                /* [size] id of the last pdesc at a position */
	bool *pos_next;                  /* [size] its NEXT flag */
	bool *id_busy;                   /* [size] */
	uint16_t *id_ndescs;             /* [size] */
	uint16_t *order;                 /* [size] ids in flight in posting order (ring) */
	uint32_t order_head, order_count;
	uint32_t free_descs;
	/* In order: buffers of a used descriptor that named a later id (a folded batch) still
	 * to be read as elements of their own, and the length its last one gets. */
	uint32_t batch_left, batch_len;
	/* Host side. */
	struct rp_pkt *pkts;
	uint32_t npkts, cap_pkts;
	bool dequeued, enqueued;         /* a burst of that kind ran */
	uint16_t last_count;             /* what the last burst returned */
	uint8_t *status;                 /* [last enqueue's packets] */
	uint32_t nstatus;
};

struct rp_mutation {
	uint64_t gpa;
	const struct lab_trace_op *op;
	uint8_t *target;                 /* host-view byte the core reads */
	uint64_t reads_left;
	bool fired;
};

struct rp {
	const struct lab_trace *t;
	const struct lab_replay_opts *o;
	struct lab_replay_result *res;
	const struct lab_trace_op *op;   /* the statement running */
	struct lab_tmem *mem;
	struct vl_mem *table;
	struct vl_mem *spare_table;      /* a remap some queue refused (the run stops there) */
	struct vl_pool *pool;
	struct rp_queue q[LAB_TRACE_MAX_QUEUES];
	uint8_t *log;
	uint64_t log_bytes;
	struct rp_mutation *muts;
	uint32_t nmuts, cap_muts;
	uint64_t df_violations;          /* seen so far */
	const struct lab_trace_op *fail_at;  /* fault pool fail-at: the list, calls so far */
	uint64_t fail_calls;
	uint32_t fail_next;
	bool df_on;
	/* The dirty log a `message log-start` shared with the back end (replay_msg.c): its
	 * memfd and this side's mapping (map NULL: none; fd is open exactly while map is). */
	struct {
		int fd;
		uint8_t *map;
		uint64_t bytes, pages;
	} vlog;
	/* In process, with `message` statements: the core's vhost-user device the queues
	 * come from (replay_session.c); NULL when they are made by vl_vq calls. */
	struct rp_session *vu;
	/* Over a socket: the wait for the next used element the expectations read through
	 * (replay_socket.c); NULL in process, where rp_pop_used answers at once. */
	int (*pop)(struct rp *r, struct rp_queue *q, uint32_t *id, uint32_t *len);
};

/* Stop the replay: a trace error (ERROR) or a divergence (DIVERGED). The message says what
 * happened; `sig` is the stable signature (see lab_replay_result). Return false so callers
 * can `return rp_fail(...)`. */
bool rp_error(struct rp *r, const char *sig, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool rp_diverge(struct rp *r, const char *sig, const char *expected, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rp_narrate(struct rp *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Guest view of [gpa, gpa+len) or a trace error naming `what`. */
uint8_t *rp_guest(struct rp *r, uint64_t gpa, uint64_t len, const char *what);

/* replay_guest.c */
bool rp_queue_driver_init(struct rp *r, struct rp_queue *q);
void rp_queue_driver_fini(struct rp_queue *q);
bool rp_guest_op(struct rp *r, const struct lab_trace_op *op);
/* Read the next used element as the driver does: 1 with id/len, 0 when none. A used id not
 * in flight is a divergence (returns -1). */
int rp_pop_used(struct rp *r, struct rp_queue *q, uint32_t *id, uint32_t *len);

/* Is id one the guest has outstanding (made available and not yet used)? Packed: every id
 * rp_pop_used returns is (it checks); split: heads put in the avail ring. Call after the
 * pop that returned it (the pop already counted it back): see head_out. */
bool rp_id_was_outstanding(const struct rp_queue *q, uint32_t id);

/* The driver's used-reading state of one queue (what rp_pop_used changes), saved so an
 * `either` branch that failed can be undone. */
struct rp_used_snap;
struct rp_used_snap *rp_used_save(const struct rp_queue *q);   /* NULL: out of memory */
void rp_used_restore(struct rp_queue *q, const struct rp_used_snap *s);
void rp_used_snap_free(struct rp_used_snap *s);

/* replay_expect.c */
bool rp_expect_op(struct rp *r, const struct lab_trace_op *op);

/* trace_replay.c: one statement (not a block statement) against the in-process core. */
bool rp_run_op(struct rp *r, const struct lab_trace_op *op);
/* Is the statement's kind known, not a block statement, and its queue one of the trace's?
 * (A trace error if not.) */
bool rp_check_op(struct rp *r, const struct lab_trace_op *op);
/* replay_block.c: every statement of the trace in order through `run` (rp_run_op in
 * process, the socket's runner over one), running repeat blocks their number of times and
 * either blocks branch by branch. */
typedef bool (*rp_run_fn)(struct rp *r, const struct lab_trace_op *op);
bool rp_run_ops(struct rp *r, rp_run_fn run);

#endif

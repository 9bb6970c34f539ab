/* SPDX-License-Identifier: MIT */
/* Replay: setup from the trace's setup block, the host statements, the statement loop and the
 * end-of-run checks. Guest statements are in replay_guest.c, expectations in
 * replay_expect.c. See trace_replay.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_fetch.h"
#include "replay_internal.h"
#include "replay_msg.h"
#include "replay_session.h"
#include "vl_lab_control.h"

/* ---- reporting ---------------------------------------------------------------------- */

static void stamp(struct rp *r, enum lab_replay_status st, const char *sig)
{
	struct lab_replay_result *res = r->res;

	res->status = st;
	snprintf(res->signature, sizeof(res->signature), "%s", sig);
	if (r->op) {
		res->op = (uint32_t)(r->op - r->t->ops);
		res->line = r->op->line;
		lab_trace_format_op(r->t, r->op, res->statement, sizeof(res->statement));
	} else {
		res->op = r->t->nops;
		res->line = 0;
		snprintf(res->statement, sizeof(res->statement), "(end of trace)");
	}
}

bool rp_error(struct rp *r, const char *sig, const char *fmt, ...)
{
	va_list ap;

	stamp(r, LAB_REPLAY_ERROR, sig);
	r->res->expected[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(r->res->observed, sizeof(r->res->observed), fmt, ap);
	va_end(ap);
	return false;
}

bool rp_diverge(struct rp *r, const char *sig, const char *expected, const char *fmt, ...)
{
	va_list ap;

	stamp(r, LAB_REPLAY_DIVERGED, sig);
	snprintf(r->res->expected, sizeof(r->res->expected), "%s", expected);
	va_start(ap, fmt);
	vsnprintf(r->res->observed, sizeof(r->res->observed), fmt, ap);
	va_end(ap);
	return false;
}

void rp_narrate(struct rp *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->o->narrate)
		return;
	va_start(ap, fmt);
	vfprintf(r->o->narrate, fmt, ap);
	va_end(ap);
}

uint8_t *rp_guest(struct rp *r, uint64_t gpa, uint64_t len, const char *what)
{
	uint8_t *p = lab_tmem_ptr(r->mem, gpa, len);

	if (!p)
		rp_error(r, "error:address", "%s at 0x%llx (%llu bytes) is not inside one region",
			 what, (unsigned long long)gpa, (unsigned long long)len);
	return p;
}

/* ---- setup -------------------------------------------------------------------------- */

/* The queue's driver state, and (but in a session) its core queue by vl_vq calls. */
static bool setup_queue(struct rp *r, uint32_t i, bool session)
{
	const struct lab_trace_queue *tq = &r->t->queues[i];
	struct rp_queue *q = &r->q[i];
	bool packed = (r->t->features >> VL_F_RING_PACKED) & 1u;
	struct vl_vq_config cfg;
	int err = 0;

	q->tq = tq;
	q->packed = packed;
	q->in_order = (r->t->features >> VL_F_IN_ORDER) & 1u;
	q->size = tq->size;
	if (!rp_queue_driver_init(r, q))
		return false;
	if (session)   /* the queue comes from the core's vhost-user device (replay_session.c) */
		return true;
	vl_vq_config_init(&cfg, packed ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT, tq->size);
	cfg.features = r->t->features;
	cfg.desc_gpa = tq->desc;
	cfg.driver_gpa = tq->driver;
	cfg.device_gpa = tq->device;
	cfg.batch_threshold = tq->batch;
	if (packed) {
		cfg.last_avail_idx = (uint16_t)(tq->start | (tq->wrap ? VL_PACKED_WRAP_BIT : 0));
		cfg.last_used_idx = cfg.last_avail_idx;
	} else {
		cfg.last_avail_idx = tq->start;
	}
	q->vq = vl_vq_create(r->table, &cfg, &err);
	if (!q->vq)
		return rp_error(r, "error:queue", "queue %s: the core refused it: %s", tq->name,
				vl_strerror(err));
	if (tq->zero_copy)
		vl_vq_set_zero_copy(q->vq, true, tq->zc_min, tq->zc_max ? tq->zc_max : tq->size);
	if (tq->alloc == LAB_TRACE_ALLOC_BURST)
		vl_vq_set_alloc_policy(q->vq, VL_ALLOC_BURST);
	/* The core keeps it off on a split queue (only packed rings have lines to wait on). */
	if (tq->line_wait)
		vl_vq_set_tx_line_wait(q->vq, true);
	if (r->log)
		vl_vq_set_dirty_log(q->vq, r->log, r->log_bytes);
	return true;
}

static bool setup(struct rp *r)
{
	const struct lab_trace *t = r->t;
	char err[256];
	uint32_t n;
	int e = 0;

	r->mem = lab_tmem_create(t->regions, t->nregions, t->seed, err, sizeof(err));
	if (!r->mem)
		return rp_error(r, "error:memory", "guest memory: %s", err);
	const struct vl_mem_region *regs = lab_tmem_regions(r->mem, &n);

	/* With `message` statements the core's vhost-user device maps the memory itself. */
	r->table = rp_session_wanted(t) ? NULL : vl_mem_create(regs, n, &e);
	if (!r->table && !rp_session_wanted(t))
		return rp_error(r, "error:memory", "the core refused the memory table: %s",
				vl_strerror(e));
	r->pool = vl_pool_create(t->pool_bufs, t->pool_size);
	if (!r->pool)
		return rp_error(r, "error:memory", "packet pool of %u x %u bytes", t->pool_bufs,
				t->pool_size);
	if (t->dirty_pages) {
		r->log_bytes = (t->dirty_pages + 7) / 8;
		r->log = calloc(r->log_bytes, 1);
		if (!r->log)
			return rp_error(r, "error:memory", "dirty log of %llu pages",
					(unsigned long long)t->dirty_pages);
	}
	for (uint32_t i = 0; i < t->nqueues; i++)
		if (!setup_queue(r, i, rp_session_wanted(t)))
			return false;
	return !rp_session_wanted(t) || rp_session_setup(r);
}

/* ---- host statements ---------------------------------------------------------------- */

/* Packets of earlier bursts not held are freed before the next host action on the queue. */
static void release_unheld(struct rp_queue *q, uint32_t line)
{
	for (uint32_t i = 0; i < q->npkts; i++)
		if (q->pkts[i].p && !q->pkts[i].held) {
			vl_pkt_free(q->pkts[i].p);
			q->pkts[i].p = NULL;
			q->pkts[i].freed_line = line;
		}
}

static bool op_dequeue(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q)
{
	uint64_t max = op->count;
	struct vl_pkt **out;
	uint16_t got;

	if (q->tq->dir != LAB_TRACE_TX)
		return rp_error(r, "error:direction", "dequeue on rx queue %s", q->tq->name);
	if (max > UINT16_MAX)
		max = UINT16_MAX;
	if (q->npkts + max > q->cap_pkts) {
		uint32_t cap = q->cap_pkts ? q->cap_pkts : 64;

		while (cap < q->npkts + max)
			cap *= 2;
		struct rp_pkt *p = realloc(q->pkts, cap * sizeof(*p));

		if (!p)
			return rp_error(r, "error:memory", "out of memory");
		q->pkts = p;
		q->cap_pkts = cap;
	}
	out = calloc(max ? max : 1, sizeof(*out));
	if (!out)
		return rp_error(r, "error:memory", "out of memory");
	got = vl_net_dequeue(q->vq, r->pool, out, (uint16_t)max);
	for (uint16_t i = 0; i < got; i++) {
		q->pkts[q->npkts++] = (struct rp_pkt){out[i], (op->given & LAB_TA_HOLD) != 0, 0};
		if (r->o->on_packet)
			r->o->on_packet(r->o->packet_ctx, q->tq, out[i]);
	}
	free(out);
	q->dequeued = true;
	q->last_count = got;
	r->res->packets_dequeued += got;
	rp_narrate(r, "  -> %u packets (numbers %u..%u)\n", got, q->npkts - got,
		   got ? q->npkts - 1 : q->npkts);
	return true;
}

static bool op_free(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q)
{
	for (uint32_t i = 0; i < op->nitems; i++) {
		uint64_t k = op->nums[i];

		if (k >= q->npkts)
			return rp_error(r, "error:free", "free: queue %s has dequeued %u packets, "
					"there is no packet %llu", q->tq->name, q->npkts,
					(unsigned long long)k);
		if (!q->pkts[k].p)
			return rp_error(r, "error:free", "free: packet %llu of queue %s was already "
					"freed (after line %u)", (unsigned long long)k, q->tq->name,
					q->pkts[k].freed_line);
		vl_pkt_free(q->pkts[k].p);
		q->pkts[k].p = NULL;
		q->pkts[k].freed_line = op->line;
	}
	return true;
}

static bool op_enqueue(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q)
{
	uint64_t bufs = 0;
	struct vl_pool *hp;
	struct vl_pkt **pk;
	bool ok = true;

	if (q->tq->dir != LAB_TRACE_RX)
		return rp_error(r, "error:direction", "enqueue on tx queue %s", q->tq->name);
	for (uint32_t i = 0; i < op->nitems; i++)
		bufs += op->pkts[i].len / 2048 + 1;
	hp = vl_pool_create((uint32_t)bufs + 1, 2048);  /* a pool may not be empty */
	pk = calloc(op->nitems ? op->nitems : 1, sizeof(*pk));
	free(q->status);
	q->status = calloc(op->nitems ? op->nitems : 1, 1);
	if (!hp || !pk || !q->status) {
		ok = rp_error(r, "error:memory", "out of memory for %u host packets", op->nitems);
		goto out;
	}
	for (uint32_t i = 0; i < op->nitems; i++) {
		const struct lab_trace_pkt *s = &op->pkts[i];
		uint8_t chunk[2048];

		pk[i] = vl_pkt_alloc_len(hp, s->len);
		if (!pk[i]) {
			ok = rp_error(r, "error:packet", "host packet %u of %u bytes cannot be built "
				      "(at most %u)", i, s->len, VL_PKT_MAX_LEN);
			goto out;
		}
		for (uint32_t off = 0; off < s->len; off += sizeof(chunk)) {
			uint32_t n = s->len - off < sizeof(chunk) ? s->len - off : sizeof(chunk);

			lab_trace_pat_fill(&s->data, off, chunk, n);
			vl_pkt_write(pk[i], off, chunk, n);
		}
		pk[i]->ol = (struct vl_offload){s->ol.flags, s->ol.gso_type, s->ol.hdr_len,
						s->ol.gso_size, s->ol.csum_start, s->ol.csum_offset};
	}
	uint16_t n = op->nitems > UINT16_MAX ? UINT16_MAX : (uint16_t)op->nitems;

	q->last_count = vl_net_enqueue(q->vq, pk, n, q->status);
	q->nstatus = q->last_count;
	q->enqueued = true;
	for (uint32_t i = 0; i < q->nstatus; i++) {
		if (q->status[i] != VL_RX_DELIVERED)
			continue;
		r->res->packets_enqueued++;
		if (r->o->on_packet)
			r->o->on_packet(r->o->packet_ctx, q->tq, pk[i]);
	}
	rp_narrate(r, "  -> %u of %u packets handled\n", q->last_count, op->nitems);
out:
	if (pk)
		for (uint32_t i = 0; i < op->nitems; i++)
			if (pk[i])
				vl_pkt_free(pk[i]);
	free(pk);
	if (hp)
		vl_pool_destroy(hp);
	return ok;
}

/* set: the options a queue line gives, changed between bursts. */
static bool op_set(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q)
{
	(void)r;
	if (op->given & LAB_TA_BATCH)
		vl_vq_set_batch_threshold(q->vq, (uint32_t)op->count);
	if (op->given & LAB_TA_ALLOC)
		vl_vq_set_alloc_policy(q->vq, op->value == LAB_TRACE_ALLOC_BURST ? VL_ALLOC_BURST
										 : VL_ALLOC_AVAILABLE);
	if (op->given & LAB_TA_ZC)
		vl_vq_set_zero_copy(q->vq, !(op->given & LAB_TA_OFF), (uint32_t)op->len,
				    op->index ? (uint32_t)op->index : q->size);
	if (op->given & LAB_TA_LINE_WAIT)
		vl_vq_set_tx_line_wait(q->vq, op->flags != 0);
	return true;
}

/* remap: a new memory table over the same regions, handed to every queue (what a front end
 * re-sending SET_MEM_TABLE does); the old one is destroyed once no queue uses it. */
static bool op_remap(struct rp *r)
{
	uint32_t n;
	const struct vl_mem_region *regs = lab_tmem_regions(r->mem, &n);
	int e = 0;
	struct vl_mem *m = vl_mem_create(regs, n, &e);

	if (!m)
		return rp_error(r, "error:memory", "remap: the core refused the table: %s",
				vl_strerror(e));
	for (uint32_t i = 0; i < r->t->nqueues; i++) {
		e = vl_vq_set_mem(r->q[i].vq, m);
		if (e != VL_OK) {
			/* Queues before i moved, the others did not: both tables stay alive until
			 * the queues are gone (teardown). */
			r->spare_table = m;
			return rp_diverge(r, "remap", "every queue takes the new table",
					  "queue %s refused it: %s", r->q[i].tq->name,
					  vl_strerror(e));
		}
	}
	vl_mem_destroy(r->table);
	r->table = m;
	return true;
}

/* `discard`: the chains go back as vl_net_discard(_touch) returns them; what the guest sees
 * of it is checked with `expect used` and `expect stat` like any other burst. */
static bool op_discard(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q)
{
	uint64_t max = op->count, bytes = 0, firsts = 0;
	uint16_t got;

	if (q->tq->dir != LAB_TRACE_TX)
		return rp_error(r, "error:direction", "discard on rx queue %s", q->tq->name);
	if (max > UINT16_MAX)
		max = UINT16_MAX;
	if (op->given & LAB_TA_TOUCH)
		got = vl_net_discard_touch(q->vq, (uint16_t)max, &bytes, &firsts);
	else
		got = vl_net_discard(q->vq, (uint16_t)max, &bytes);
	r->res->packets_discarded += got;
	rp_narrate(r, "  -> %u chains back unread%s, %llu packet bytes\n", got,
		   op->given & LAB_TA_TOUCH ? " but for their first bytes" : "",
		   (unsigned long long)bytes);
	return true;
}

static bool host_op(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_queue *q = &r->q[op->queue];

	if (op->kind == LAB_T_REMAP)
		return r->vu ? rp_session_remap(r) : op_remap(r);
	if (!q->vq && op->kind != LAB_T_FREE) {
		/* In a session, a ring a message stopped or disabled has no queue: an embedder
		 * runs nothing on it, and neither does the replay. */
		if (op->kind == LAB_T_DEQUEUE || op->kind == LAB_T_ENQUEUE) {
			q->dequeued = q->dequeued || op->kind == LAB_T_DEQUEUE;
			q->enqueued = q->enqueued || op->kind == LAB_T_ENQUEUE;
			q->last_count = 0;
			q->nstatus = 0;
		}
		rp_narrate(r, "  -> nothing: queue %s is not ready in the core (its ring is "
			   "stopped or disabled)\n", q->tq->name);
		return true;
	}
	if (op->kind != LAB_T_FREE && op->kind != LAB_T_KICKS && op->kind != LAB_T_SET)
		release_unheld(q, op->line);
	switch (op->kind) {
	case LAB_T_DEQUEUE:
		return op_dequeue(r, op, q);
	case LAB_T_DISCARD:
		return op_discard(r, op, q);
	case LAB_T_FREE:
		return op_free(r, op, q);
	case LAB_T_COMPLETE:
		vl_vq_complete(q->vq);
		return true;
	case LAB_T_KICKS:
		vl_vq_set_kicks(q->vq, op->value != 0);
		return true;
	case LAB_T_SET:
		return op_set(r, op, q);
	case LAB_T_ENQUEUE:
		return op_enqueue(r, op, q);
	default:
		return rp_error(r, "error:internal", "not a host statement");
	}
}

/* ---- the loop ----------------------------------------------------------------------- */

static bool df_check(struct rp *r)
{
	uint64_t v;
	char what[400];

	if (!r->df_on || (v = lab_df_violations()) == r->df_violations)
		return true;
	r->df_violations = v;
	lab_df_last_violation(what, sizeof(what));
	return rp_diverge(r, "double-fetch", "each guest field read once per chain", "%s", what);
}

/* Statements that name no queue. */
static bool queueless(enum lab_trace_kind k)
{
	return k == LAB_T_WRITE || k == LAB_T_FILL || k == LAB_T_IDESC || k == LAB_T_MUTATE ||
	       k == LAB_T_DOUBLE_FETCH || k == LAB_T_FAULT || k == LAB_T_REMAP ||
	       k == LAB_T_EXPECT_MEM || k == LAB_T_EXPECT_DIRTY || k == LAB_T_EXPECT_LOGGED;
}

/* The parser resolves queue names; a trace built by a tool is checked here, once. */
bool rp_check_op(struct rp *r, const struct lab_trace_op *op)
{
	if (op->kind >= LAB_T__KIND_COUNT)
		return rp_error(r, "error:internal", "statement kind %u", (unsigned)op->kind);
	if (op->kind == LAB_T_REPEAT || op->kind == LAB_T_EITHER || op->kind == LAB_T_OR ||
	    op->kind == LAB_T_END)
		return rp_error(r, "error:internal", "a block statement outside the block loop");
	if (op->kind == LAB_T_MESSAGE && op->value >= LAB_TRACE_NMSGS)
		return rp_error(r, "error:internal", "message kind %llu",
				(unsigned long long)op->value);
	if (!queueless(op->kind) &&
	    !(op->kind == LAB_T_MESSAGE && lab_trace_msg_queueless(op->value)) &&
	    op->queue >= r->t->nqueues)
		return rp_error(r, "error:queue", "queue %u of %u", op->queue, r->t->nqueues);
	return true;
}

bool rp_run_op(struct rp *r, const struct lab_trace_op *op)
{
	if (!rp_check_op(r, op))
		return false;
	if (op->kind == LAB_T_MESSAGE)   /* a trace with one has a session (setup) */
		return rp_session_message(r, op);
	if (r->vu && (op->kind == LAB_T_MUTATE || op->kind == LAB_T_DOUBLE_FETCH))
		return rp_error(r, "error:session", "%s watches the core's reads of the replay's "
				"mapping of guest memory; with `message` statements the core's "
				"vhost-user device maps it itself", lab_trace_kind_name(op->kind));
	if (op->kind >= LAB_T_EXPECT_DEQUEUED) {   /* every kind after it but message (above)
						    * is an expectation */
		if (r->res->expectations < UINT32_MAX)   /* repeats can run more; no wrap */
			r->res->expectations++;
		return rp_expect_op(r, op);
	}
	if (op->kind >= LAB_T_DEQUEUE)
		return host_op(r, op) && df_check(r);
	return rp_guest_op(r, op);
}

/* After the last statement: every mutation fired, every packet buffer back. */
static bool end_checks(struct rp *r)
{
	uint32_t free_bufs;

	r->op = NULL;
	for (uint32_t i = 0; i < r->nmuts; i++)
		if (!r->muts[i].fired)
			return rp_diverge(r, "end:mutate", "every mutate to fire",
					  "the mutate of line %u never fired: the core never read "
					  "0x%llx (%llu more reads were due)", r->muts[i].op->line,
					  (unsigned long long)r->muts[i].gpa,
					  (unsigned long long)r->muts[i].reads_left);
	for (uint32_t i = 0; i < r->t->nqueues; i++) {
		struct rp_queue *q = &r->q[i];

		for (uint32_t k = 0; k < q->npkts; k++)
			if (q->pkts[k].p) {
				vl_pkt_free(q->pkts[k].p);
				q->pkts[k].p = NULL;
			}
		if (q->vq)
			vl_vq_complete(q->vq);
	}
	free_bufs = vl_pool_free_count(r->pool);
	if (free_bufs != vl_pool_capacity(r->pool))
		return rp_diverge(r, "end:pool", "every packet buffer back in the pool",
				  "%u of %u buffers are missing after every packet was freed",
				  vl_pool_capacity(r->pool) - free_bufs, vl_pool_capacity(r->pool));
	return true;
}

static void teardown(struct rp *r)
{
	lab_df_set_observer(NULL, NULL);
	if (r->df_on)
		lab_df_set_mode(LAB_DF_OFF);
	vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER, &(struct vl_lab_arg){.count = VL_LAB_NEVER});
	/* Packets first: a zero-copy packet hands its chain back to its queue when freed. */
	for (uint32_t i = 0; i < LAB_TRACE_MAX_QUEUES; i++)
		for (uint32_t k = 0; k < r->q[i].npkts; k++)
			if (r->q[i].pkts[k].p) {
				vl_pkt_free(r->q[i].pkts[k].p);
				r->q[i].pkts[k].p = NULL;
			}
	rp_session_teardown(r);
	rp_log_fini(r);
	for (uint32_t i = 0; i < LAB_TRACE_MAX_QUEUES; i++) {
		struct rp_queue *q = &r->q[i];

		for (uint32_t k = 0; k < q->npkts; k++)
			if (q->pkts[k].p)
				vl_pkt_free(q->pkts[k].p);
		free(q->pkts);
		free(q->status);
		vl_vq_destroy(q->vq);
		rp_queue_driver_fini(q);
	}
	if (r->pool)
		vl_pool_destroy(r->pool);
	vl_mem_destroy(r->table);
	vl_mem_destroy(r->spare_table);
	lab_tmem_destroy(r->mem);
	free(r->log);
	free(r->muts);
}

enum lab_replay_status lab_replay_run(const struct lab_trace *t,
				      const struct lab_replay_opts *opts,
				      struct lab_replay_result *res)
{
	static const struct lab_replay_opts quiet;
	struct rp r = {.t = t, .o = opts ? opts : &quiet, .res = res, .vlog.fd = -1};
	bool ok;

	memset(res, 0, sizeof(*res));
	ok = setup(&r) && rp_run_ops(&r, rp_run_op);
	if (ok)
		ok = end_checks(&r);
	teardown(&r);
	if (ok)
		res->status = LAB_REPLAY_PASS;
	return res->status;
}

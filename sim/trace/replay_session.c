/* SPDX-License-Identifier: MIT */
/* The in-process replay through the core's vhost-user device (replay_session.h). */
#include "replay_session.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "replay_msg.h"
#include "trace_names.h"

#define SESSION_MAX_VRINGS (2u * LAB_TRACE_MAX_QUEUES)
/* Every reply is on the socket before the front end waits (the pump): the bound only
 * matters if the core failed to answer a request that has a reply, a bug the replay then
 * reports as a wedge rather than hanging. */
#define SESSION_TIMEOUT_MS 1000

struct rp_session {
	struct rp *r;
	struct vl_vu_dev *dev;
	struct lab_fe_session s;
	bool open;                 /* s owns the front end's socket */
	int dev_fd;                /* the device's end of the socketpair */
	int last_rc;               /* the last message the device rejected (0: none) */
	uint32_t nvrings;
	struct rp_vring_ref v[SESSION_MAX_VRINGS];
	uint32_t vring_of[LAB_TRACE_MAX_QUEUES];
	bool fresh[SESSION_MAX_VRINGS];   /* became ready since the queues were last looked at */
};

bool rp_session_wanted(const struct lab_trace *t)
{
	for (uint32_t i = 0; i < t->nops; i++)
		if (t->ops[i].kind == LAB_T_MESSAGE)
			return true;
	return false;
}

static void on_ready(struct vl_vu_dev *dev, void *opaque, uint32_t qidx, bool ready)
{
	struct rp_session *x = opaque;

	(void)dev;
	if (ready && qidx < SESSION_MAX_VRINGS)
		x->fresh[qidx] = true;
}

/* The queue options of the trace's `queue` line (and a setup `dirty-log`), on a queue the
 * device just made: it knows none of them. */
static void apply_options(struct rp *r, struct rp_queue *q)
{
	const struct lab_trace_queue *tq = q->tq;

	vl_vq_set_batch_threshold(q->vq, tq->batch);
	if (tq->zero_copy)
		vl_vq_set_zero_copy(q->vq, true, tq->zc_min, tq->zc_max ? tq->zc_max : tq->size);
	if (tq->alloc == LAB_TRACE_ALLOC_BURST)
		vl_vq_set_alloc_policy(q->vq, VL_ALLOC_BURST);
	if (tq->line_wait)
		vl_vq_set_tx_line_wait(q->vq, true);
	if (r->log)
		vl_vq_set_dirty_log(q->vq, r->log, r->log_bytes);
}

/* The device's queues after a message: a queue pointer is valid only until the next one. */
static void refresh(struct rp_session *x)
{
	struct rp *r = x->r;

	for (uint32_t i = 0; i < r->t->nqueues; i++) {
		uint32_t v = x->vring_of[i];
		struct rp_queue *q = &r->q[i];

		q->vq = vl_vu_dev_queue(x->dev, v);
		if (q->vq && x->fresh[v])
			apply_options(r, q);
		x->fresh[v] = false;
	}
}

/* fe_msg.h's pump: the device handles every message waiting on its end. A rejected one is
 * answered (NACK with REPLY_ACK, which the session negotiates) and noted; a fatal one
 * resets the device, and the socket is shut so the front end sees it closed. */
static void pump(void *ctx)
{
	struct rp_session *x = ctx;

	for (;;) {
		int rc = vl_vu_dev_handle(x->dev, x->dev_fd);

		if (rc == VL_ERR_VU_AGAIN)
			break;
		if (rc != 0) {
			x->last_rc = rc;
			rp_narrate(x->r, "  (the core's vhost-user device refused %s: %s)\n",
				   vl_vu_request_name(vl_vu_dev_last_request(x->dev)),
				   vl_strerror(rc));
		}
		if (vl_vu_err_fatal(rc)) {
			shutdown(x->dev_fd, SHUT_RDWR);
			break;
		}
	}
	refresh(x);
}

static bool fail(struct rp_session *x, enum lab_fe_rc rc, const char *doing)
{
	return rp_fe_fail(x->r, &x->s, SESSION_TIMEOUT_MS, rc, doing);
}

/* GET_FEATURES, and exactly the trace's features acknowledged (with PROTOCOL_FEATURES for
 * REPLY_ACK, and LOG_SHMFD when the trace logs). */
static bool negotiate(struct rp_session *x)
{
	const uint64_t want = x->r->t->features;
	enum lab_fe_rc rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &x->s.offered);

	if (rc != LAB_FE_OK)
		return fail(x, rc, "GET_FEATURES");
	const uint64_t missing = want & ~x->s.offered;

	if (missing) {
		char names[200] = "";
		size_t n = 0;

		for (unsigned i = 0; i < LAB_TN_NFEATURES; i++)
			if ((missing & lab_tn_features[i].mask) && n < sizeof(names))
				n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
						      n ? " " : "", lab_tn_features[i].name);
		return rp_error(x->r, "error:session", "the trace sends vhost-user messages, so "
				"it runs on the core's vhost-user device, which does not offer %s "
				"(features 0x%" PRIx64 ")", names, missing);
	}
	if (rp_trace_logs(x->r->t))
		x->s.proto_want = VL_FEATURE(RP_PROTOCOL_F_LOG_SHMFD);
	rc = lab_fe_ack_features(&x->s, want | VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES));
	return rc == LAB_FE_OK || fail(x, rc, "negotiation");
}

static bool send_table(struct rp_session *x)
{
	uint32_t n;
	const struct vl_mem_region *regs = lab_tmem_guest_regions(x->r->mem, &n);
	enum lab_fe_rc rc = lab_fe_send_mem_table(&x->s, regs, n, lab_tmem_fd(x->r->mem));

	return rc == LAB_FE_OK || fail(x, rc, "SET_MEM_TABLE");
}

/* Queues to vrings as over a socket: the k-th rx queue 2k, the k-th tx queue 2k+1. The
 * device needs no partner ring: one the trace lacks is never set up. */
static uint32_t plan(struct rp_session *x)
{
	const struct lab_trace *t = x->r->t;
	uint32_t nrx = 0, ntx = 0;

	for (uint32_t i = 0; i < t->nqueues; i++) {
		uint32_t k = t->queues[i].dir == LAB_TRACE_RX ? nrx++ : ntx++;
		uint32_t v = 2 * k + (t->queues[i].dir == LAB_TRACE_TX);

		x->vring_of[i] = v;
		x->v[v].tq = &t->queues[i];
	}
	x->nvrings = 2 * (nrx > ntx ? nrx : ntx);
	return nrx > ntx ? nrx : ntx;
}

static bool start_vring(struct rp_session *x, uint32_t i)
{
	const struct lab_trace_queue *tq = &x->r->t->queues[i];
	struct rp_vring_ref *w = &x->v[x->vring_of[i]];
	uint32_t base = tq->start;

	w->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->kick < 0 || w->call < 0)
		return rp_error(x->r, "error:session", "eventfd: %s", strerror(errno));
	if (lab_trace_packed(x->r->t)) {   /* avail and used halves, as over a socket */
		base = (uint32_t)tq->start | (tq->wrap ? 1u << 15 : 0);
		base |= base << 16;
	}
	struct lab_fe_vring fv = {.index = x->vring_of[i], .size = tq->size, .base = base,
				  .desc = tq->desc, .avail = tq->driver, .used = tq->device,
				  .kick = w->kick, .call = w->call};
	enum lab_fe_rc rc = lab_fe_vring_setup(&x->s, &fv);

	if (rc != LAB_FE_OK)
		return fail(x, rc, "vring setup");
	if (!x->r->q[i].vq)
		return rp_error(x->r, "error:queue", "queue %s: the core's vhost-user device made "
				"no queue of vring %u%s%s", tq->name, x->vring_of[i],
				x->last_rc ? ": " : "", x->last_rc ? vl_strerror(x->last_rc) : "");
	return true;
}

bool rp_session_setup(struct rp *r)
{
	struct rp_session *x = calloc(1, sizeof(*x));
	struct vl_vu_config cfg;
	int sv[2] = {-1, -1}, err = 0;

	if (!x)
		return rp_error(r, "error:memory", "out of memory");
	r->vu = x;
	x->r = r;
	x->dev_fd = -1;
	for (uint32_t v = 0; v < SESSION_MAX_VRINGS; v++)
		x->v[v].kick = x->v[v].call = -1;
	uint32_t npairs = plan(x);

	vl_vu_config_init(&cfg);
	if (npairs > 1) {
		cfg.features |= VL_FEATURE(VL_F_NET_MQ);
		cfg.max_queue_pairs = npairs;
	}
	cfg.cb.queue_ready = on_ready;
	cfg.opaque = x;
	x->dev = vl_vu_dev_create(&cfg, &err);
	if (!x->dev)
		return rp_error(r, "error:session", "the core's vhost-user device: %s",
				vl_strerror(err));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
	    fcntl(sv[1], F_SETFL, O_NONBLOCK) != 0) {
		int e = errno;

		if (sv[0] >= 0) {
			close(sv[0]);
			close(sv[1]);
		}
		return rp_error(r, "error:session", "socketpair: %s", strerror(e));
	}
	x->dev_fd = sv[1];
	lab_fe_session_open(&x->s, sv[0], lab_trace_packed(r->t) ? VL_LAYOUT_PACKED
								 : VL_LAYOUT_SPLIT,
			    SESSION_TIMEOUT_MS);
	x->open = true;
	x->s.c.pump = pump;
	x->s.c.pump_ctx = x;
	if (!negotiate(x) || !send_table(x))
		return false;
	for (uint32_t i = 0; i < r->t->nqueues; i++)
		if (!start_vring(x, i))
			return false;
	return true;
}

bool rp_session_message(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_session *x = r->vu;
	const struct rp_link l = {.s = &x->s, .timeout_ms = SESSION_TIMEOUT_MS, .v = x->v,
				  .nvrings = x->nvrings, .vring_of = x->vring_of};

	return rp_msg_run(r, &l, op);
}

bool rp_session_remap(struct rp *r)
{
	return send_table(r->vu);
}

void rp_session_teardown(struct rp *r)
{
	struct rp_session *x = r->vu;

	if (!x)
		return;
	for (uint32_t i = 0; i < LAB_TRACE_MAX_QUEUES; i++)
		r->q[i].vq = NULL;   /* the device's, destroyed with it */
	if (x->open) {
		x->s.c.pump = NULL;
		lab_fe_session_fini(&x->s);
	}
	vl_vu_dev_destroy(x->dev);
	if (x->dev_fd >= 0)
		close(x->dev_fd);
	for (uint32_t v = 0; v < SESSION_MAX_VRINGS; v++) {
		if (x->v[v].kick >= 0)
			close(x->v[v].kick);
		if (x->v[v].call >= 0)
			close(x->v[v].call);
	}
	free(x);
	r->vu = NULL;
}

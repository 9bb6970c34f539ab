/* SPDX-License-Identifier: MIT */
/* Replay over a socket (replay_socket.h): the session setup from the trace's setup block,
 * what each statement means when the device is another process, and the waits. The guest
 * statements and the reading of used elements are the in-process replay's own
 * (replay_guest.c), the statement loop with version 2's blocks is rp_run_ops, the
 * expectations on used elements are replay_expect.c's, reading through socket_pop. */
#include "replay_socket.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fe_session.h"
#include "replay_internal.h"
#include "replay_msg.h"
#include "trace_names.h"

#define RS_MAX_VRINGS (2u * LAB_TRACE_MAX_QUEUES)
/* A scratch ring (the missing partner of a pair): 64 entries fit one page in either layout
 * (split: 1024 + 134 + 518 bytes). */
#define RS_SCRATCH_SIZE 64u
#define RS_PAGE 4096u

struct rs_vring {
	struct rp_queue *q; /* the driver state: a trace queue's, or a scratch ring's */
	int kick, call;
};

struct rs {
	struct rp r; /* the shared replay state; rs_of goes back from it */
	const struct lab_replay_socket_opts *so;
	struct lab_replay_opts ro;
	struct lab_fe_session s;
	bool session; /* s is open (it owns the socket) */
	int listen_fd;
	uint32_t nvrings;
	struct rs_vring v[RS_MAX_VRINGS];
	uint32_t vring_of[LAB_TRACE_MAX_QUEUES];
	struct lab_trace_queue scratch_tq[RS_MAX_VRINGS];
	struct rp_queue scratch_q[RS_MAX_VRINGS];
	uint32_t nscratch;
	struct lab_trace_region regions[LAB_TRACE_MAX_REGIONS];
	uint32_t nregions;
	/* Expectations skipped from here on: they depend on a statement only the in-process
	 * core carries out (an enqueue on the queue, a zero-copy queue; for all: mutate,
	 * fault, adversarial double-fetch). */
	bool tainted[LAB_TRACE_MAX_QUEUES];
	bool all_tainted;
};

static struct rs *rs_of(struct rp *r)
{
	return (struct rs *)(void *)((char *)r - offsetof(struct rs, r));
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A failed exchange with the back end (replay_msg.c says what each outcome is). */
static bool rs_fail_rc(struct rs *x, enum lab_fe_rc rc, const char *doing)
{
	return rp_fe_fail(&x->r, &x->s, x->so->timeout_ms, rc, doing);
}

/* ---- setup -------------------------------------------------------------------------- */

static bool rs_na(struct rs *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool rs_na(struct rs *x, const char *fmt, ...)
{
	va_list ap;

	rp_error(&x->r, "n/a", "(see below)");
	x->r.res->status = LAB_REPLAY_NA;
	va_start(ap, fmt);
	vsnprintf(x->r.res->observed, sizeof(x->r.res->observed), fmt, ap);
	va_end(ap);
	return false;
}

/* Queues to vrings (the k-th rx queue 2k, the k-th tx queue 2k+1), scratch rings for the
 * partners the trace does not have, and the region that holds them above the trace's. */
static bool plan(struct rs *x)
{
	const struct lab_trace *t = x->r.t;
	bool packed = lab_trace_packed(t);
	uint32_t nrx = 0, ntx = 0, npairs;
	bool have[RS_MAX_VRINGS] = {false};
	uint64_t top = 0;

	for (uint32_t i = 0; i < t->nqueues; i++) {
		uint32_t k = t->queues[i].dir == LAB_TRACE_RX ? nrx++ : ntx++;
		uint32_t v = 2 * k + (t->queues[i].dir == LAB_TRACE_TX);

		x->vring_of[i] = v;
		x->v[v].q = &x->r.q[i];
		have[v] = true;
	}
	/* A trace without queues (only messages, e.g. `message get-features`) sets no vring
	 * up: the session is the negotiation and the memory table. */
	npairs = nrx > ntx ? nrx : ntx;
	x->nvrings = 2 * npairs;
	memcpy(x->regions, t->regions, t->nregions * sizeof(*t->regions));
	x->nregions = t->nregions;
	for (uint32_t i = 0; i < t->nregions; i++)
		if (t->regions[i].gpa + t->regions[i].size > top)
			top = t->regions[i].gpa + t->regions[i].size;
	for (uint32_t v = 0; v < x->nvrings; v++) {
		if (have[v])
			continue;
		struct lab_trace_queue *tq = &x->scratch_tq[x->nscratch];

		memset(tq, 0, sizeof(*tq));
		snprintf(tq->name, sizeof(tq->name), "(scratch %u)", v);
		tq->dir = v % 2 ? LAB_TRACE_TX : LAB_TRACE_RX;
		tq->size = RS_SCRATCH_SIZE;
		tq->wrap = true;
		if (top > UINT64_MAX - RS_PAGE * (x->nscratch + 1) ||
		    !lab_trace_queue_at(tq, packed, top + (uint64_t)RS_PAGE * x->nscratch))
			return rs_na(x, "no guest address above the trace's regions for a scratch "
				     "ring");
		x->v[v].q = &x->scratch_q[x->nscratch++];
		x->v[v].q->tq = tq;
	}
	if (x->nscratch) {
		if (x->nregions == LAB_TRACE_MAX_REGIONS)
			return rs_na(x, "%u regions and a scratch region are more than %u",
				     x->nregions, LAB_TRACE_MAX_REGIONS);
		x->regions[x->nregions++] = (struct lab_trace_region){
			.gpa = top, .size = (uint64_t)RS_PAGE * x->nscratch};
	}
	if (x->nregions > LAB_FE_MAX_REGIONS)
		return rs_na(x, "%u regions%s: one SET_MEM_TABLE carries at most %u", x->nregions,
			     x->nscratch ? " (with the scratch region)" : "", LAB_FE_MAX_REGIONS);
	return true;
}

static bool connect_back_end(struct rs *x)
{
	char err[256];
	int sock;

	if (x->so->server) {
		x->listen_fd = lab_fe_listen(x->so->socket, err, sizeof(err));
		sock = x->listen_fd < 0 ? -1 :
		       lab_fe_accept(x->listen_fd, x->so->timeout_ms + 2000, err, sizeof(err));
	} else {
		sock = lab_fe_connect_served(x->so->socket, x->so->timeout_ms, err, sizeof(err));
	}
	if (sock < 0)
		return rp_error(&x->r, "error:connect", "back end at '%s': %s", x->so->socket, err);
	lab_fe_session_open(&x->s, sock, lab_trace_packed(x->r.t) ? VL_LAYOUT_PACKED
								 : VL_LAYOUT_SPLIT,
			    x->so->timeout_ms);
	x->session = true;
	return true;
}

/* The trace's features must all be offered: the back end then runs with exactly them (and
 * PROTOCOL_FEATURES, a vhost-user bit, when offered). */
static bool negotiate(struct rs *x)
{
	const uint64_t want = x->r.t->features;
	const bool logs = rp_trace_logs(x->r.t);
	enum lab_fe_rc rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &x->s.offered);

	if (rc != LAB_FE_OK)
		return rs_fail_rc(x, rc, "GET_FEATURES");
	const uint64_t offered = x->s.offered, missing = want & ~offered;

	if (missing) {
		char names[200] = "";
		size_t n = 0;

		for (unsigned i = 0; i < LAB_TN_NFEATURES; i++)
			if ((missing & lab_tn_features[i].mask) && n < sizeof(names))
				n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
						      n ? " " : "", lab_tn_features[i].name);
		return rs_na(x, "the back end does not offer %s (features 0x%" PRIx64 " of the "
			     "trace, 0x%" PRIx64 " offered, 0x%" PRIx64 " missing)", names, want,
			     offered, missing);
	}
	if (logs && (!(offered & VL_FEATURE(RP_F_LOG_ALL)) ||
		     !(offered & VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES))))
		return rs_na(x, "the trace logs dirty pages (message log-start) and the back end "
			     "does not offer %s", offered & VL_FEATURE(RP_F_LOG_ALL) ?
			     "protocol features (bit 30)" : "VHOST_F_LOG_ALL (bit 26)");
	if (logs)
		x->s.proto_want = VL_FEATURE(RP_PROTOCOL_F_LOG_SHMFD);
	rc = lab_fe_ack_features(&x->s, want | (offered &
						VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES)));
	if (rc != LAB_FE_OK)
		return rs_fail_rc(x, rc, "negotiation");
	if (logs && !(x->s.proto_acked & VL_FEATURE(RP_PROTOCOL_F_LOG_SHMFD)))
		return rs_na(x, "the trace logs dirty pages (message log-start) and the back end "
			     "does not offer protocol feature LOG_SHMFD (bit 1)");
	return true;
}

static bool send_table(struct rs *x)
{
	uint32_t n;
	const struct vl_mem_region *regs = lab_tmem_guest_regions(x->r.mem, &n);
	enum lab_fe_rc rc = lab_fe_send_mem_table(&x->s, regs, n, lab_tmem_fd(x->r.mem));

	return rc == LAB_FE_OK || rs_fail_rc(x, rc, "SET_MEM_TABLE");
}

static bool start_vring(struct rs *x, uint32_t v)
{
	struct rs_vring *w = &x->v[v];
	struct rp_queue *q = w->q;
	const struct lab_trace_queue *tq = q->tq;

	q->packed = lab_trace_packed(x->r.t);
	q->in_order = (x->r.t->features >> VL_F_IN_ORDER) & 1u;
	q->size = tq->size;
	if (!rp_queue_driver_init(&x->r, q))
		return false;
	w->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->kick < 0 || w->call < 0)
		return rp_error(&x->r, "error:socket", "eventfd: %s", strerror(errno));
	/* SET_VRING_BASE: split, the next avail index; packed, position and wrap counter for
	 * avail in bits 0-15 and for used in 16-31, the same at a (re)start. */
	uint32_t base = tq->start;

	if (q->packed) {
		base = (uint32_t)tq->start | (tq->wrap ? 1u << 15 : 0);
		base |= base << 16;
	}
	struct lab_fe_vring fv = {.index = v, .size = tq->size, .base = base, .desc = tq->desc,
				  .avail = tq->driver, .used = tq->device, .kick = w->kick,
				  .call = w->call};
	enum lab_fe_rc rc = lab_fe_vring_setup(&x->s, &fv);

	return rc == LAB_FE_OK || rs_fail_rc(x, rc, "vring setup");
}

static bool setup(struct rs *x)
{
	const struct lab_trace *t = x->r.t;
	char err[256];

	if (!plan(x) || !connect_back_end(x) || !negotiate(x))
		return false;
	x->r.mem = lab_tmem_create(x->regions, x->nregions, t->seed, err, sizeof(err));
	if (!x->r.mem)
		return rp_error(&x->r, "error:memory", "guest memory: %s", err);
	if (!send_table(x))
		return false;
	for (uint32_t i = 0; i < t->nqueues; i++) {
		x->r.q[i].tq = &t->queues[i];
		/* A zero-copy queue gives chains back when the host frees the packet, which
		 * only the in-process core is told; a line-waiting one leaves chains for "the
		 * next dequeue", and a back end that runs on its own has no such boundary. */
		x->tainted[i] = t->queues[i].zero_copy ||
				(t->queues[i].line_wait && lab_trace_packed(t));
	}
	for (uint32_t v = 0; v < x->nvrings; v++)
		if (!start_vring(x, v))
			return false;
	return true;
}

static void teardown(struct rs *x)
{
	for (uint32_t v = 0; v < RS_MAX_VRINGS; v++) {
		if (x->v[v].q)
			rp_queue_driver_fini(x->v[v].q);
		if (x->v[v].kick >= 0)
			close(x->v[v].kick);
		if (x->v[v].call >= 0)
			close(x->v[v].call);
	}
	if (x->session)
		lab_fe_session_fini(&x->s);
	if (x->listen_fd >= 0) {
		close(x->listen_fd);
		unlink(x->so->socket);
	}
	rp_log_fini(&x->r);
	lab_tmem_destroy(x->r.mem);
}

/* ---- statements --------------------------------------------------------------------- */

/* Counts saturate (a repeat can run more than 32 bits count), as in process. */
static void count_expectation(struct rp *r)
{
	if (r->res->expectations < UINT32_MAX)
		r->res->expectations++;
}

static bool skip(struct rs *x, const char *why)
{
	if (x->r.res->skipped < UINT32_MAX)
		x->r.res->skipped++;
	rp_narrate(&x->r, "  skipped: %s\n", why);
	return true;
}

/* Wait up to wait_ms for the next used element of driver queue q: 1 with id/len, 0 none,
 * -1 a used id not in flight (already a divergence), -2 the back end closed the socket. */
static int wait_used(struct rs *x, struct rp_queue *q, int wait_ms, uint32_t *id,
		     uint32_t *len)
{
	int call = -1;
	int64_t deadline = now_ms() + wait_ms;

	for (uint32_t v = 0; v < x->nvrings; v++)
		if (x->v[v].q == q)
			call = x->v[v].call;
	for (;;) {
		int got = rp_pop_used(&x->r, q, id, len);
		uint64_t calls;

		if (got != 0 || now_ms() >= deadline)
			return got;
		if (lab_fe_peer_gone(&x->s))
			return -2;
		struct pollfd p = {.fd = call, .events = POLLIN};

		if (poll(&p, 1, 1) > 0 && read(call, &calls, sizeof(calls)) < 0)
			continue;
	}
}

/* rp.pop: what the expectations read used elements through. `expect used ... none` waits
 * the settle time (nothing may come), the others up to the timeout (something must). */
static int socket_pop(struct rp *r, struct rp_queue *q, uint32_t *id, uint32_t *len)
{
	struct rs *x = rs_of(r);
	bool none = r->op && r->op->kind == LAB_T_EXPECT_USED && (r->op->given & LAB_TA_NONE);
	int rc = wait_used(x, q, none ? x->so->settle_ms : x->so->timeout_ms, id, len);
	char expected[256];

	if (rc != -2)
		return rc;
	lab_trace_format_op(r->t, r->op, expected, sizeof(expected));
	rp_diverge(r, "crash", expected, "the back end closed the connection while the replay "
		   "waited for a used element on queue %s", q->tq->name);
	return -1;
}

/* `expect broken Q no`: over a socket, the back end still holds the connection. `expect
 * broken Q any`: the queue makes no progress within the settle time, or the back end
 * closes the connection. A named reason is the core's own word for it: in-process only. */
static bool expect_broken(struct rs *x, const struct lab_trace_op *op)
{
	char expected[256];
	uint32_t id = 0, len = 0;

	if (!(op->given & (LAB_TA_NONE | LAB_TA_ANY)))
		return skip(x, "a broken queue's reason is the in-process core's");
	count_expectation(&x->r);
	lab_trace_format_op(x->r.t, op, expected, sizeof(expected));
	if (op->given & LAB_TA_NONE)
		return !lab_fe_peer_gone(&x->s) ||
		       rp_diverge(&x->r, "crash", expected, "the back end closed the connection");
	int rc = wait_used(x, &x->r.q[op->queue], x->so->settle_ms, &id, &len);

	if (rc == -1)
		return false;
	return rc != 1 || rp_diverge(&x->r, "expect broken", expected, "the queue made progress "
				     "within %d ms: used id %u len %u", x->so->settle_ms, id, len);
}

static bool kick(struct rs *x, const struct lab_trace_op *op)
{
	uint64_t one = 1;

	if (!rp_guest_op(&x->r, op))
		return false;
	if (write(x->v[x->vring_of[op->queue]].kick, &one, sizeof(one)) != sizeof(one))
		return rp_error(&x->r, "error:socket", "kick eventfd: %s", strerror(errno));
	return true;
}

static bool taint(struct rs *x, const struct lab_trace_op *op, bool all, const char *why)
{
	if (all)
		x->all_tainted = true;
	else
		x->tainted[op->queue] = true;
	return skip(x, why);
}

/* `expect mem`: the back end writes when it runs, so the bytes get the timeout to become
 * what the trace expects (at once when they already are); then the in-process check says
 * what differs. */
static bool expect_mem(struct rs *x, const struct lab_trace_op *op)
{
	int64_t deadline = now_ms() + x->so->timeout_ms;
	const uint8_t *g = lab_tmem_ptr(x->r.mem, op->addr, op->len);

	while (g && !lab_trace_pat_match(&op->pat, g, op->len) && now_ms() < deadline) {
		if (lab_fe_peer_gone(&x->s))
			break;
		nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
	}
	return rp_expect_op(&x->r, op);
}

/* `message`: sent as it is (replay_msg.c, the same code the in-process replay runs it
 * with). A reply that is not the one expected is a divergence at the statement; no answer a
 * wedge, a closed socket a crash. */
static bool message(struct rs *x, const struct lab_trace_op *op)
{
	struct rp_vring_ref refs[RS_MAX_VRINGS];
	const struct rp_link l = {.s = &x->s, .timeout_ms = x->so->timeout_ms, .v = refs,
				  .nvrings = x->nvrings, .vring_of = x->vring_of};

	for (uint32_t v = 0; v < x->nvrings; v++)
		refs[v] = (struct rp_vring_ref){x->v[v].q->tq, x->v[v].kick, x->v[v].call};
	return rp_msg_run(&x->r, &l, op);
}

/* `expect logged`: the back end marks pages as it writes them, so the bits get the timeout
 * to appear (at once when they are there); then the check says which page is missing. */
static bool expect_logged(struct rs *x, const struct lab_trace_op *op)
{
	int64_t deadline = now_ms() + x->so->timeout_ms;

	while (x->r.vlog.map && !rp_logged_holds(&x->r, op) && now_ms() < deadline) {
		if (lab_fe_peer_gone(&x->s))
			break;
		nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
	}
	return rp_expect_logged(&x->r, op);
}

/* Guest statements that write a queue's rings. */
static bool ring_statement(enum lab_trace_kind k)
{
	return k == LAB_T_DESC || k == LAB_T_PDESC || k == LAB_T_AVAIL || k == LAB_T_POST ||
	       k == LAB_T_KICK;
}

static bool run_op(struct rp *r, const struct lab_trace_op *op)
{
	struct rs *x = rs_of(r);

	if (!rp_check_op(r, op))
		return false;
	bool dep = x->all_tainted || (op->kind != LAB_T_EXPECT_MEM &&
				       op->kind != LAB_T_EXPECT_LOGGED && x->tainted[op->queue]);

	/* The ring of a queue whose buffers the in-process host used no longer follows the
	 * trace here (e.g. its buffers were never used): what the driver writes there next is
	 * skipped too. */
	if (ring_statement(op->kind) && x->tainted[op->queue])
		return skip(x, "this queue's ring depends on an in-process only statement above");
	switch (op->kind) {
	case LAB_T_WRITE: case LAB_T_FILL: case LAB_T_DESC: case LAB_T_PDESC: case LAB_T_IDESC:
	case LAB_T_AVAIL: case LAB_T_POST:
		return rp_guest_op(r, op);
	case LAB_T_KICK:
		return kick(x, op);
	case LAB_T_MUTATE:
	case LAB_T_FAULT:
		return taint(x, op, true, "in-process only; the expectations after it are too");
	case LAB_T_DOUBLE_FETCH:
		return op->value == LAB_TRACE_DF_ADVERSARIAL ?
			       taint(x, op, true, "adversarial double-fetch is in-process only; "
					 "the expectations after it are too") :
			       skip(x, "the double-fetch detector is in-process only");
	case LAB_T_DEQUEUE:
	case LAB_T_DISCARD:
		/* The back end takes what the guest made available when it runs. */
		rp_narrate(r, "  (the back end runs on its own)\n");
		return true;
	case LAB_T_ENQUEUE:
		return taint(x, op, false, "the packets come from the in-process host; this "
			     "queue's expectations after it are skipped");
	case LAB_T_SET:
		if ((op->given & LAB_TA_ZC) && !(op->given & LAB_TA_OFF))
			return taint(x, op, false, "zero-copy is in-process only; this queue's "
				     "expectations after it are skipped");
		return skip(x, "in-process only");
	case LAB_T_FREE: case LAB_T_COMPLETE: case LAB_T_KICKS:
		return skip(x, "in-process only");
	case LAB_T_REMAP:
		return send_table(x);
	case LAB_T_MESSAGE:
		return message(x, op);
	case LAB_T_EXPECT_USED:
	case LAB_T_EXPECT_USED_SET:
		if (dep)
			return skip(x, "depends on an in-process only statement above");
		count_expectation(r);
		return rp_expect_op(r, op);   /* reading used elements through socket_pop */
	case LAB_T_EXPECT_MEM:
		/* Guest memory after an enqueue holds packets only the in-process host sent. */
		for (uint32_t i = 0; i < r->t->nqueues; i++)
			dep = dep || x->tainted[i];
		if (dep)
			return skip(x, "depends on an in-process only statement above");
		count_expectation(r);
		return expect_mem(x, op);
	case LAB_T_EXPECT_BROKEN:
		return expect_broken(x, op);
	case LAB_T_EXPECT_LOGGED:
		/* As `expect mem`: pages the in-process host's packets would have dirtied. */
		for (uint32_t i = 0; i < r->t->nqueues; i++)
			dep = dep || x->tainted[i];
		if (dep)
			return skip(x, "depends on an in-process only statement above");
		count_expectation(r);
		return expect_logged(x, op);
	default:
		return skip(x, "this expectation reads the in-process core");
	}
}

enum lab_replay_status lab_replay_socket_run(const struct lab_trace *t,
					     const struct lab_replay_socket_opts *opts,
					     struct lab_replay_result *res)
{
	struct rs *x = calloc(1, sizeof(*x));
	bool ok;

	memset(res, 0, sizeof(*res));
	if (!x) {
		res->status = LAB_REPLAY_ERROR;
		snprintf(res->signature, sizeof(res->signature), "error:memory");
		snprintf(res->observed, sizeof(res->observed), "out of memory");
		return res->status;
	}
	x->r.t = t;
	x->r.res = res;
	x->ro.narrate = opts->narrate;
	x->r.o = &x->ro;
	x->r.pop = socket_pop;
	x->so = opts;
	x->listen_fd = -1;
	x->r.vlog.fd = -1;
	for (uint32_t v = 0; v < RS_MAX_VRINGS; v++)
		x->v[v].kick = x->v[v].call = -1;
	ok = setup(x);
	if (!ok && res->status != LAB_REPLAY_PASS)
		snprintf(res->statement, sizeof(res->statement), "(setup)");
	ok = ok && rp_run_ops(&x->r, run_op);
	teardown(x);
	free(x);
	if (ok)
		res->status = LAB_REPLAY_PASS;
	return res->status;
}

/* SPDX-License-Identifier: MIT */
/* `message` statements and `expect logged` through the lab's front end (replay_msg.h). */
#include "replay_msg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fe_feature_deps.h"

#define PAGE_SHIFT 12
#define VRING_F_LOG 1u   /* SET_VRING_ADDR flags: log the used ring's writes */

bool rp_fe_fail(struct rp *r, const struct lab_fe_session *s, int timeout_ms,
		enum lab_fe_rc rc, const char *doing)
{
	const char *what = s->c.what;

	switch (rc) {
	case LAB_FE_TIMEOUT:
		return rp_diverge(r, "wedge", doing, "no answer within %d ms to %s: %s",
				  timeout_ms, lab_fe_request_name(s->c.last_sent), what);
	case LAB_FE_CLOSED:
		return rp_diverge(r, "crash", doing, "the back end closed the connection: %s",
				  what);
	case LAB_FE_NACK:
		return rp_diverge(r, "nack", doing, "%s", what);
	case LAB_FE_BAD_REPLY:
		return rp_diverge(r, "bad-reply", doing, "%s", what);
	default:
		return rp_error(r, "error:socket", "%s: %s", doing, what);
	}
}

bool rp_trace_logs(const struct lab_trace *t)
{
	for (uint32_t i = 0; i < t->nops; i++)
		if (t->ops[i].kind == LAB_T_MESSAGE && t->ops[i].value == LAB_TRACE_MSG_LOG_START)
			return true;
	return false;
}

static void count_expectation(struct rp *r)
{
	if (r->res->expectations < UINT32_MAX)   /* repeats can run more; no wrap */
		r->res->expectations++;
}

void rp_log_fini(struct rp *r)
{
	if (!r->vlog.map)
		return;
	munmap(r->vlog.map, r->vlog.bytes);
	close(r->vlog.fd);
	r->vlog.map = NULL;
	r->vlog.fd = -1;
}

/* A fresh zeroed bitmap of `pages` bits in a memfd, in whole 4 KiB pages (what QEMU hands
 * over), replacing any earlier one. */
static bool log_make(struct rp *r, uint64_t pages)
{
	uint64_t bytes = ((pages + 7) / 8 + 4095) / 4096 * 4096;
	int fd = memfd_create("vhostlab-replay-log", MFD_CLOEXEC);
	void *m = MAP_FAILED;

	if (fd >= 0 && ftruncate(fd, (off_t)bytes) == 0)
		m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return rp_error(r, "error:memory", "a dirty log of %" PRIu64 " pages (%" PRIu64
				" bytes): %s", pages, bytes, strerror(e));
	}
	rp_log_fini(r);
	r->vlog.fd = fd;
	r->vlog.map = m;
	r->vlog.bytes = bytes;
	r->vlog.pages = pages;
	return true;
}

/* SET_LOG_BASE {mmap_size, mmap_offset} with the memfd: with LOG_SHMFD the back end answers
 * with an empty reply (vhost-user.rst), which the front end waits for. */
static enum lab_fe_rc set_log_base(struct rp *r, struct lab_fe_session *s)
{
	uint64_t p[2] = {r->vlog.bytes, 0};
	uint8_t none = 0;
	enum lab_fe_rc rc = lab_fe_send(&s->c, LAB_FE_SET_LOG_BASE, LAB_FE_F_VERSION, p,
					sizeof(p), &r->vlog.fd, 1);

	return rc != LAB_FE_OK ? rc : lab_fe_reply(&s->c, LAB_FE_SET_LOG_BASE, &none, 0);
}

/* SET_VRING_ADDR again with the log flag and the used ring's (packed: device area's) guest
 * address as log_guest_addr, as QEMU sends it once logging is on. */
static enum lab_fe_rc addr_logged(struct lab_fe_session *s, uint32_t v,
				  const struct lab_trace_queue *tq)
{
	uint8_t p[40];
	uint32_t head[2] = {v, VRING_F_LOG};
	uint64_t a[4] = {tq->desc, tq->device, tq->driver, tq->device};

	memcpy(p, head, sizeof(head));
	memcpy(p + 8, a, sizeof(a));
	return lab_fe_set(s, LAB_FE_SET_VRING_ADDR, p, sizeof(p), NULL, 0);
}

/* log-start: the bitmap, SET_LOG_BASE, SET_FEATURES with LOG_ALL, every vring's address
 * again with the log flag: the order in which QEMU turns logging on. */
static bool log_start(struct rp *r, const struct rp_link *l, const struct lab_trace_op *op)
{
	struct lab_fe_session *s = l->s;
	uint64_t f = s->acked | VL_FEATURE(RP_F_LOG_ALL);
	enum lab_fe_rc rc;

	if (!(s->proto_acked & VL_FEATURE(RP_PROTOCOL_F_LOG_SHMFD)) ||
	    !(s->offered & VL_FEATURE(RP_F_LOG_ALL)))
		return rp_error(r, "error:log", "log-start needs VHOST_F_LOG_ALL (bit 26, offered: "
				"%s) and protocol feature LOG_SHMFD (bit 1, offered: %s)",
				s->offered & VL_FEATURE(RP_F_LOG_ALL) ? "yes" : "no",
				s->proto_offered & VL_FEATURE(RP_PROTOCOL_F_LOG_SHMFD) ? "yes"
											: "no");
	if (!log_make(r, op->count))
		return false;
	rc = set_log_base(r, s);
	if (rc != LAB_FE_OK)
		return rp_fe_fail(r, s, l->timeout_ms, rc, "SET_LOG_BASE");
	rc = lab_fe_set(s, LAB_FE_SET_FEATURES, &f, sizeof(f), NULL, 0);
	if (rc != LAB_FE_OK)
		return rp_fe_fail(r, s, l->timeout_ms, rc, "SET_FEATURES with LOG_ALL");
	s->acked = f;
	for (uint32_t v = 0; v < l->nvrings; v++) {
		if (!l->v[v].tq)   /* in process: the partner of a pair the trace lacks */
			continue;
		rc = addr_logged(s, v, l->v[v].tq);
		if (rc != LAB_FE_OK)
			return rp_fe_fail(r, s, l->timeout_ms, rc, "SET_VRING_ADDR with the log flag");
	}
	return true;
}

bool rp_msg_run(struct rp *r, const struct rp_link *l, const struct lab_trace_op *op)
{
	struct lab_fe_session *s = l->s;
	char expected[256];
	enum lab_fe_rc rc;
	uint32_t num = 0;

	lab_trace_format_op(r->t, op, expected, sizeof(expected));
	if (op->value == LAB_TRACE_MSG_LOG_START)
		return log_start(r, l, op);
	if (op->value == LAB_TRACE_MSG_GET_FEATURES) {
		uint64_t f;
		const char *broken;

		rc = lab_fe_get_u64(s, LAB_FE_GET_FEATURES, &f);
		if (rc != LAB_FE_OK)
			return rp_fe_fail(r, s, l->timeout_ms, rc, "GET_FEATURES");
		if (!(op->given & LAB_TA_EXPECT))
			return true;
		count_expectation(r);
		broken = lab_fe_feature_deps_broken(f);
		return !broken || rp_diverge(r, "message get-features", expected, "offered "
					     "0x%" PRIx64 ": %s", f, broken);
	}
	const uint32_t v = l->vring_of[op->queue];
	const struct rp_vring_ref *w = &l->v[v];

	switch (op->value) {
	case LAB_TRACE_MSG_GET_VRING_BASE:
		rc = lab_fe_get_vring_base(s, v, &num);
		if (rc != LAB_FE_OK)
			return rp_fe_fail(r, s, l->timeout_ms, rc, "GET_VRING_BASE");
		rp_narrate(r, "  -> GET_VRING_BASE answered 0x%" PRIx32 "\n", num);
		if (!(op->given & LAB_TA_EXPECT))
			return true;
		count_expectation(r);
		return num == op->count ||
		       rp_diverge(r, "message get-vring-base", expected, "GET_VRING_BASE for "
				  "vring %u (queue %s) returned 0x%" PRIx32, v, w->tq->name, num);
	case LAB_TRACE_MSG_VRING_ENABLE:
		rc = lab_fe_enable(s, v, op->count != 0);
		return rc == LAB_FE_OK || rp_fe_fail(r, s, l->timeout_ms, rc, "SET_VRING_ENABLE");
	default: {
		const struct lab_fe_vring fv = {.index = v, .size = w->tq->size,
						.base = (uint32_t)op->count, .desc = w->tq->desc,
						.avail = w->tq->driver, .used = w->tq->device,
						.kick = w->kick, .call = w->call};

		rc = lab_fe_vring_setup(s, &fv);
		return rc == LAB_FE_OK || rp_fe_fail(r, s, l->timeout_ms, rc, "vring setup");
	}
	}
}

static bool page_marked(const struct rp *r, uint64_t p)
{
	return p < r->vlog.pages &&
	       ((__atomic_load_n(&r->vlog.map[p / 8], __ATOMIC_ACQUIRE) >> (p % 8)) & 1u);
}

bool rp_logged_holds(const struct rp *r, const struct lab_trace_op *op)
{
	if (!r->vlog.map || op->len == 0 || op->addr > UINT64_MAX - op->len)
		return false;
	for (uint64_t p = op->addr >> PAGE_SHIFT; p <= (op->addr + op->len - 1) >> PAGE_SHIFT; p++)
		if (!page_marked(r, p))
			return false;
	return true;
}

bool rp_expect_logged(struct rp *r, const struct lab_trace_op *op)
{
	char expected[256];
	uint64_t marked = 0;

	/* The parser checks both; a trace built by a tool may not have been parsed. */
	if (!r->vlog.map)
		return rp_error(r, "error:log", "expect logged without a `message log-start` above");
	if (op->len == 0 || op->addr > UINT64_MAX - op->len)
		return rp_error(r, "error:log", "expect logged of %" PRIu64 " bytes at 0x%" PRIx64,
				op->len, op->addr);
	for (uint64_t p = 0; p < r->vlog.pages; p++)
		marked += page_marked(r, p);
	lab_trace_format_op(r->t, op, expected, sizeof(expected));
	for (uint64_t p = op->addr >> PAGE_SHIFT; p <= (op->addr + op->len - 1) >> PAGE_SHIFT; p++) {
		if (p >= r->vlog.pages)
			return rp_diverge(r, "expect logged:range", expected, "page %" PRIu64
					  " is beyond the %" PRIu64 " pages the log covers", p,
					  r->vlog.pages);
		if (!page_marked(r, p))
			return rp_diverge(r, "expect logged", expected, "guest page %" PRIu64
					  " (gpa 0x%" PRIx64 ") is not marked in the shared log "
					  "(%" PRIu64 " of its %" PRIu64 " pages are)", p,
					  p << PAGE_SHIFT, marked, r->vlog.pages);
	}
	rp_narrate(r, "  -> marked; %" PRIu64 " of the log's %" PRIu64 " pages are marked in "
		   "all\n", marked, r->vlog.pages);
	return true;
}

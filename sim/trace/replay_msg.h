/* SPDX-License-Identifier: MIT */
/* The `message` statements and `expect logged`, as the lab's front end (sim/frontend's
 * session) carries them out: shared by the replay over a socket (replay_socket.c), where
 * the back end is another process, and the in-process replay (replay_session.c), where it
 * is the core's own vhost-user device on the other end of a socketpair. One code path, so
 * a message means the same thing to both (docs/trace-format.md, "vhost-user messages"). */
#ifndef LAB_REPLAY_MSG_H
#define LAB_REPLAY_MSG_H

#include <stdbool.h>
#include <stdint.h>

#include "fe_session.h"
#include "replay_internal.h"

/* vhost-user bits a dirty log needs (vhost-user.rst, "Migration"). */
#define RP_F_LOG_ALL 26u            /* VHOST_F_LOG_ALL */
#define RP_PROTOCOL_F_LOG_SHMFD 1u  /* SET_LOG_BASE carries the bitmap's fd */

/* One vring of the session: its number, the trace queue (or scratch ring) whose areas it
 * has, and the eventfds it was set up with. */
struct rp_vring_ref {
	const struct lab_trace_queue *tq;
	int kick, call;
};

struct rp_link {
	struct lab_fe_session *s;
	int timeout_ms;
	const struct rp_vring_ref *v;   /* [nvrings], by vring number */
	uint32_t nvrings;
	const uint32_t *vring_of;       /* trace queue index -> vring number */
};

/* A failed exchange: no answer is a wedge, a closed socket a crash, a refusal (REPLY_ACK)
 * a nack, a broken reply a divergence, a failure on this side an error. Returns false. */
bool rp_fe_fail(struct rp *r, const struct lab_fe_session *s, int timeout_ms,
		enum lab_fe_rc rc, const char *doing);
/* Does the trace hold a `message log-start`? (The session then asks for LOG_SHMFD.) */
bool rp_trace_logs(const struct lab_trace *t);
/* One `message` statement: sent, its reply checked (an expect= counts as an expectation). */
bool rp_msg_run(struct rp *r, const struct rp_link *l, const struct lab_trace_op *op);
/* Do the pages of `expect logged` all have their bit in the shared log? */
bool rp_logged_holds(const struct rp *r, const struct lab_trace_op *op);
/* `expect logged`: a divergence naming the first page not marked, and how many pages the
 * log marks in all. */
bool rp_expect_logged(struct rp *r, const struct lab_trace_op *op);
/* Unmap and close the shared log. */
void rp_log_fini(struct rp *r);

#endif

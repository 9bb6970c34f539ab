/* SPDX-License-Identifier: MIT */
/* The in-process replay of a trace that talks vhost-user (`message` statements): the core's
 * queues come from its own vhost-user device (vl_vhost_user.h), set up and driven by the
 * lab's front end over a socketpair, exactly the messages `replay --socket` sends and the
 * handler `vhostlab serve` runs (vl_vu_dev_handle). Single-threaded and deterministic: after
 * the front end sends a message, the device's end of the pair is handled at once (the
 * connection's pump, fe_msg.h), so the reply is waiting when the front end reads it.
 *
 * What changes against the plain in-process replay (queues made by vl_vq calls): guest
 * memory is mapped by the device from the memfd (a region's `pieces=` does not apply), the
 * features must be ones the device offers, and a queue is there only while its ring is
 * ready (started, set up, enabled): a stopped ring's `dequeue` runs nothing, as an embedder
 * runs nothing on it. `mutate` and `double-fetch` watch the core's reads of the replay's own
 * mapping, which the device does not use: they are a setup error here. */
#ifndef LAB_REPLAY_SESSION_H
#define LAB_REPLAY_SESSION_H

#include <stdbool.h>

#include "replay_internal.h"

/* Does the trace need a session (a `message` statement anywhere)? */
bool rp_session_wanted(const struct lab_trace *t);
/* After the guest memory and every queue's driver state exist: the device, the
 * negotiation, the memory table and every queue's vring; r->q[i].vq set from the device. */
bool rp_session_setup(struct rp *r);
/* A `message` statement, through the device. */
bool rp_session_message(struct rp *r, const struct lab_trace_op *op);
/* `remap`: SET_MEM_TABLE again with the same regions. */
bool rp_session_remap(struct rp *r);
/* Forget the queues (the device owns them) and free everything. */
void rp_session_teardown(struct rp *r);

#endif

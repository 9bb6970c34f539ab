/* SPDX-License-Identifier: MIT */
/* Replay over a socket: a trace's guest side played against any vhost-user back end, the
 * lab's front end in QEMU's place (`vhostlab replay --socket`, docs/trace-format.md,
 * "Replay over a socket").
 *
 * The trace's regions become the guest's RAM (one memfd, trace_mem.h) handed to the back
 * end with SET_MEM_TABLE at the trace's guest addresses; its queues become vrings (the k-th
 * rx queue ring 2k, the k-th tx queue ring 2k+1, a missing partner of a pair an empty ring
 * in a scratch region above the trace's). The guest statements write the shared memory with
 * the in-process replay's driver (replay_guest.c) and `kick` also signals the ring's kick
 * eventfd; `dequeue`/`discard` let the back end run; expectations on used elements wait for
 * them (the timeout), `expect used ... none` waits the settle time first. What only the
 * in-process core can do or show is skipped and counted, and so is an expectation that
 * depends on a skipped statement (a queue's expectations after an `enqueue` on it, every
 * expectation after a `mutate`, `fault` or adversarial `double-fetch`). */
#ifndef LAB_REPLAY_SOCKET_H
#define LAB_REPLAY_SOCKET_H

#include <stdbool.h>
#include <stdio.h>

#include "trace.h"
#include "trace_replay.h"

struct lab_replay_socket_opts {
	const char *socket;  /* the back end's vhost-user socket */
	bool server;         /* listen at socket for a back end in client mode */
	int timeout_ms;      /* bound of every message wait and of `expect used` */
	int settle_ms;       /* what `expect used ... none` waits before it looks */
	FILE *narrate;       /* every statement and what it did (NULL: quiet) */
};

/* LAB_REPLAY_PASS, DIVERGED (an expectation failed; signature "wedge" when the back end
 * stopped answering a message, "crash" when it closed the connection), ERROR (the trace
 * or the replay's side failed) or NA (the back end does not offer a feature the trace
 * negotiates, or the trace needs more than vhost-user can carry; `observed` says which). */
enum lab_replay_status lab_replay_socket_run(const struct lab_trace *t,
					     const struct lab_replay_socket_opts *opts,
					     struct lab_replay_result *res);

#endif

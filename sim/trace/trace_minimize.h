/* SPDX-License-Identifier: MIT */
/* Minimise a failing trace: drop statements, shorten payloads and simplify chains while the
 * failure stays the same: the same status and signature, at the same statement (by its
 * canonical text), with the same observation (lab_replay_result.observed). Every candidate is
 * replayed in a forked child, so a trace that crashes the core (a sanitizer report, a
 * signal) or hangs it can be minimised too: its signature is then "crash:SIGNAME" or
 * "hang". */
#ifndef LAB_TRACE_MINIMIZE_H
#define LAB_TRACE_MINIMIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"
#include "trace_replay.h"

struct lab_minimize_report {
	char signature[64];          /* the failure kept */
	uint32_t ops_before, ops_after;
	size_t bytes_before, bytes_after;   /* canonical text */
	uint32_t replays;
};

/* Replay t in a child process (killed after timeout_s seconds). The result's signature is
 * the replay's, or "crash:SIG..." / "hang" when the child dies or times out. */
void lab_replay_isolated(const struct lab_trace *t, const struct lab_replay_opts *o,
			 unsigned timeout_s, struct lab_replay_result *res);

/* Shrink t; write the smallest trace found, as canonical text, into *out (malloc'd).
 * Returns false with a message in err when t does not fail to begin with or memory runs
 * out. progress(ctx, report) is called after every accepted step (may be NULL). */
bool lab_trace_minimize(const struct lab_trace *t, const struct lab_replay_opts *o,
			char **out, struct lab_minimize_report *rep,
			void (*progress)(void *ctx, const struct lab_minimize_report *rep),
			void *ctx, char *err, size_t errlen);

#endif

/* SPDX-License-Identifier: MIT */
/* Replay: run a trace against the core in a fresh simulated guest and check every
 * expectation, in file order (docs/trace-format.md, "Replay").
 *
 * Each replay builds its own guest memory (trace_mem.h), memory table, queues and pools,
 * and tears them down at the end, so replays are independent and deterministic. The run
 * stops at the first divergence: an expectation that does not hold, a double fetch seen in
 * `detect` mode, a packet buffer not back in its pool at the end, or a statement that
 * cannot be carried out (a trace error, e.g. `free` of a packet never dequeued). */
#ifndef LAB_TRACE_REPLAY_H
#define LAB_TRACE_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"

struct vl_pkt;

struct lab_replay_opts {
	/* Narrate every statement and what it did to this stream (NULL: quiet). */
	FILE *narrate;
	/* The program's core reports guest loads (the lab build, VL_LAB_BUILD): `mutate` and
	 * `double-fetch` need it; without it they are a setup error naming the statement. */
	bool hooks;
	/* Every packet the host dequeued (guest TX) or delivered to the guest (RX), in order,
	 * e.g. for a pcap file (NULL: none). */
	void (*on_packet)(void *ctx, const struct lab_trace_queue *q, const struct vl_pkt *pkt);
	void *packet_ctx;
};

enum lab_replay_status {
	LAB_REPLAY_PASS = 0,
	LAB_REPLAY_DIVERGED = 1,  /* an expectation or an end-of-run check failed */
	LAB_REPLAY_ERROR = 2,     /* the trace cannot run (setup or statement error) */
	LAB_REPLAY_NA = 3,        /* over a socket: the back end cannot run this trace (it does
				   * not offer a feature the trace negotiates, ...); `observed`
				   * says why */
};

struct lab_replay_result {
	enum lab_replay_status status;
	uint32_t op;              /* index of the statement where it stopped (nops: at the end) */
	uint32_t line;            /* its source line (0 if built by a tool or at the end) */
	char statement[256];      /* its canonical text */
	char expected[256];       /* what the trace expected (DIVERGED) */
	char observed[512];       /* what happened instead, or the error */
	/* What kind of failure, stable across values and lines: "expect packet:data",
	 * "expect used:id", "end:pool", "double-fetch", "error:free", ... The minimiser keeps a
	 * trace only while this stays the same. */
	char signature[64];
	/* Counts of what ran. */
	uint32_t ops_run, expectations;
	uint64_t packets_dequeued, packets_enqueued;
	uint64_t packets_discarded;   /* good chains `discard` returned */
	/* Over a socket (replay_socket.h): statements not carried out because they are
	 * in-process only, or expectations that depend on one. In process: always 0 (a
	 * `message` goes to the core's own vhost-user device, replay_session.h). */
	uint32_t skipped;
};

enum lab_replay_status lab_replay_run(const struct lab_trace *t,
				      const struct lab_replay_opts *opts,
				      struct lab_replay_result *res);

#endif

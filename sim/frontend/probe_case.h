/* SPDX-License-Identifier: MIT */
/* `vhostlab probe`'s cases: each one rule of the virtio spec or the vhost-user protocol
 * (../shared/design/conformance.md names them: S- split ring, P- packed ring, N- virtio-net,
 * U- vhost-user), checked against a back end over a fresh session, and a verdict with what
 * was seen. The table (probe_cases.c) lists every case once; a case that applies to both
 * ring layouts runs on each. */
#ifndef LAB_PROBE_CASE_H
#define LAB_PROBE_CASE_H

#include <stdbool.h>
#include <stdint.h>

#include "fe_session.h"

enum probe_verdict { PROBE_PASS, PROBE_FAIL, PROBE_WEDGE, PROBE_CRASH, PROBE_NA };

/* What the back end does with frames (--expect): sends each back as it came (echo), sends
 * each back with its destination and source MAC addresses swapped (macswap: DPDK testpmd's
 * macswap forwarding), drops them (sink), or drops them and sends frames of its own on RX
 * (source: vhostlab serve --mode txonly, testpmd's txonly). */
enum probe_expect { PROBE_EXPECT_ECHO, PROBE_EXPECT_MACSWAP, PROBE_EXPECT_SINK,
		    PROBE_EXPECT_SOURCE };

/* Does a frame sent on TX come back on RX (echo or macswap)? */
static inline bool probe_expect_returns(enum probe_expect e)
{
	return e == PROBE_EXPECT_ECHO || e == PROBE_EXPECT_MACSWAP;
}

#define PROBE_SPLIT 1u
#define PROBE_PACKED 2u
#define PROBE_BOTH (PROBE_SPLIT | PROBE_PACKED)
#define PROBE_ANY 4u /* layout-independent: runs once, on the first ring selected */
#define PROBE_QUEUE_SIZE 64u

struct probe_ctx {
	struct lab_fe_session s;
	enum probe_expect expect;
	uint64_t mask;      /* --features: the bits the probe may negotiate */
	int arg;            /* the case's parameter (probe_case.arg) */
	/* Does the back end still serve? Closes this case's connection, opens a fresh one and
	 * asks GET_FEATURES on it (the hostile suite's verdict: a back end that survived). */
	enum lab_fe_rc (*fresh)(struct probe_ctx *x);
	const void *run_opts; /* for fresh: the probe_opts and listening socket of the run */
	int listen_fd;
	char detail[512];
};

struct probe_case {
	const char *id;
	const char *suite;   /* "conformance", "traffic" or "hostile" */
	const char *rule;    /* the spec section or vhost-user message it checks */
	const char *desc;
	unsigned layouts;    /* PROBE_SPLIT / PROBE_PACKED */
	uint64_t needs;      /* features the back end must offer, else n/a */
	uint64_t drops;      /* features the case negotiates away */
	/* What the back end must do with frames, else n/a: false, nothing; true (= 1), send
	 * them back (--expect echo or macswap); PROBE_NEEDS_SOURCE, send its own (source). */
	unsigned char needs_echo;
	bool bring_up;       /* start from a negotiated session with both queues running */
	uint32_t queue_size; /* of both queues when bring_up; 0: PROBE_QUEUE_SIZE */
	enum probe_verdict (*run)(struct probe_ctx *x);
	int arg;             /* what `run` is given as probe_ctx.arg: one body, several rules */
};
#define PROBE_NEEDS_SOURCE 2

extern const struct probe_case probe_cases[];
extern const unsigned probe_ncases;

/* Verdict helpers for case bodies: a failed exchange becomes wedge (timeout), crash
 * (closed) or fail, with the connection's evidence as detail. */
enum probe_verdict probe_from_rc(struct probe_ctx *x, enum lab_fe_rc rc);
enum probe_verdict probe_fail(struct probe_ctx *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
enum probe_verdict probe_pass(struct probe_ctx *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A frame of len bytes for seq, the same every run: a broadcast Ethernet header, then a
 * pattern, so a back end that parses frames sees a plausible one. */
void probe_frame(uint8_t *dst, uint32_t len, uint32_t seq);

#endif

/* SPDX-License-Identifier: MIT */
/* Running `vhostlab probe`'s cases against one back end: a first session to learn what it
 * offers, then every selected case on every selected ring layout over a session of its own
 * (a new connection each, so one case's wedge or crash is not the next case's). */
#ifndef LAB_PROBE_RUN_H
#define LAB_PROBE_RUN_H

#include "probe_case.h"

#define PROBE_SUITE_CONFORMANCE 1u
#define PROBE_SUITE_TRAFFIC 2u
#define PROBE_SUITE_HOSTILE 4u

struct probe_opts {
	const char *socket;
	bool server;            /* listen at socket for a back end in client mode */
	uint64_t mask;          /* --features: the probe negotiates only these bits */
	unsigned layouts;       /* PROBE_SPLIT / PROBE_PACKED */
	unsigned suites;        /* PROBE_SUITE_* */
	const char *only;       /* --case: comma-separated ids to run, or NULL for all */
	enum probe_expect expect;
	int timeout_ms;
	const char *record_dir; /* --record: each failing case as DIR/<case>-<ring>.trace */
};

struct probe_result {
	const struct probe_case *c;
	enum vl_layout layout;
	enum probe_verdict verdict;
	char detail[512];
	/* --record: the trace written for a failing case ("" none), or why none was. */
	char trace[512];
	char trace_note[256];
};

struct probe_report {
	uint64_t offered, proto_offered;
	struct probe_result *results; /* probe_ncases * 2 */
	unsigned n;
	char err[512];                /* why the back end could not be reached at all */
};

/* Every result in rep (free with probe_report_free). Returns 0, or -1 when the first session
 * could not learn the offered features (rep->err says why; the cases that need no feature
 * ran all the same). */
int probe_run(const struct probe_opts *o, struct probe_report *rep);
void probe_report_free(struct probe_report *rep);
const char *probe_verdict_name(enum probe_verdict v);

#endif

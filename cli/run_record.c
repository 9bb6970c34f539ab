/* SPDX-License-Identifier: MIT */
/* Recording a `vhostlab run` configuration as a trace: see run_record.h. The configuration
 * is run a second time with the recorder attached (runs are deterministic for a seed), which
 * keeps the first run at full speed and lets recording stop where the run stops. */
#include "run_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_minimize.h"
#include "trace_record.h"

/* A file name from the configuration's name: letters, digits and '-' only. */
static void file_name(uint32_t k, const char *name, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "run-%03u", k + 1);
	bool dash = false;

	for (const char *s = name; *s && at + 8 < n; s++) {
		bool keep = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			    (*s >= '0' && *s <= '9');

		if (keep) {
			if (!dash)
				buf[at++] = '-';
			dash = true;
			buf[at++] = *s;
		} else if (dash) {
			dash = false;
		}
	}
	snprintf(buf + at, n - at, ".trace");
}

void run_record(const char *dir, uint32_t k, const struct lab_scenario_config *cfg,
		const char *name, struct run_recording *out)
{
	struct lab_scenario_config c = *cfg;
	struct lab_scenario_result *res = calloc(1, sizeof(*res));
	struct lab_replay_opts o = {.hooks = true};
	struct lab_replay_result rr;
	char fname[256], err[256];

	memset(out, 0, sizeof(*out));
	if (!res) {
		snprintf(out->error, sizeof(out->error), "out of memory");
		return;
	}
	c.record = true;
	c.progress = NULL;
	lab_scenario_run(&c, res);
	if (!res->recorder) {
		snprintf(out->error, sizeof(out->error), "the recorder could not start: %.200s",
			 res->error);
		free(res);
		return;
	}
	const struct lab_trace *t = lab_rec_trace(res->recorder);

	file_name(k, name, fname, sizeof(fname));
	snprintf(out->path, sizeof(out->path), "%s/%s", dir, fname);
	out->statements = t->nops;
	if (!lab_trace_save(t, out->path, err, sizeof(err))) {
		snprintf(out->error, sizeof(out->error), "%s", err);
		out->path[0] = '\0';
	} else {
		lab_replay_isolated(t, &o, 600, &rr);
		snprintf(out->replay, sizeof(out->replay), "%s",
			 rr.status == LAB_REPLAY_PASS ? "pass"
			 : rr.status == LAB_REPLAY_DIVERGED ? "diverged" : "error");
		out->replay_line = rr.line;
		snprintf(out->signature, sizeof(out->signature), "%s", rr.signature);
	}
	lab_rec_destroy(res->recorder);
	free(res);
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab run --record DIR` / `--record-failures DIR`: write a configuration's run as a
 * trace and replay it at once, so the report can say whether the trace reproduces it. */
#ifndef VL_CLI_RUN_RECORD_H
#define VL_CLI_RUN_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "scenario.h"

struct run_recording {
	char path[512];          /* the trace written ("" when none) */
	uint32_t statements;
	char replay[16];         /* "pass", "diverged", "error" */
	uint32_t replay_line;    /* where the replay stopped */
	char signature[64];
	char error[256];         /* recording failed: why */
};

/* Run configuration `cfg` (index k) again with recording, write DIR/NAME.trace and replay
 * it in a child process. `failed`: the configuration failed in the first run. */
void run_record(const char *dir, uint32_t k, const struct lab_scenario_config *cfg,
		const char *name, struct run_recording *out);

#endif

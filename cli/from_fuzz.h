/* SPDX-License-Identifier: MIT */
/* `vhostlab trace from-fuzz`: run one fuzz input through its target with recording on and
 * collect the trace it leaves (docs/cli.md, fuzz/README.md "Turning a crash into a trace").
 *
 * The target runs in a child process, so an input that crashes the core or fails one of the
 * harness's checks still gives its trace: the child streams every statement to the parent
 * before the core runs it, and the parent keeps what arrived. */
#ifndef VL_CLI_FROM_FUZZ_H
#define VL_CLI_FROM_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ff_opts {
	/* Record what the run observed at its end as expectations: each queue's statistics,
	 * broken state, held chains and call decision, the dirty pages and a digest of every
	 * guest region. A trace that replays with them proves the conversion exact; a bug
	 * report wants the run's failure, not these. */
	bool observed;
};

struct ff_result {
	char *text;               /* the trace: setup and statements, canonical, one per line */
	size_t len;
	char **lossy;             /* what the run did that the trace cannot express */
	uint32_t nlossy;
	bool failed;              /* the run did not finish cleanly ... */
	char failure[1100];       /* ... how: the harness's message, a signal, an exit status */
};

/* The target a command-line name means ("fuzz_split_dequeue" or "split_dequeue"): its
 * canonical name, or NULL with *why saying why it cannot be converted. */
const char *ff_target(const char *name, const char **why);

/* Run `data` through `target` (as ff_target returned it). Returns 0 with *res filled, or -1
 * with a message in err (nothing was recorded: a failure before the setup, a broken pipe).
 * Free res with ff_result_free either way. */
int ff_convert(const char *target, const uint8_t *data, size_t size, const struct ff_opts *o,
	       struct ff_result *res, char *err, size_t errlen);
void ff_result_free(struct ff_result *res);

#endif

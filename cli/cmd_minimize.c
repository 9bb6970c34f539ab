/* SPDX-License-Identifier: MIT */
/* vhostlab minimize: shrink a failing trace while its failure keeps the same signature. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace.h"
#include "trace_minimize.h"

static void minimize_usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab minimize FILE -o OUT [--json]\n"
		"\n"
		"Shrink a failing trace: drop statements, drop buffers and packets, halve lengths,\n"
		"keeping each step only while the replay still fails with the same signature (the\n"
		"kind of failure, e.g. \"expect packet:data\", \"crash:SEGV\"). Each candidate is\n"
		"replayed in a child process, so crashing and hanging traces shrink too. Progress\n"
		"goes to stderr; the result is written to OUT in canonical form.\n"
		"\n"
		"options:\n"
		"  -o, --output OUT  where to write the minimised trace (required)\n"
		"  --json            print the report as one JSON object on stdout\n"
		"  -h, --help        this text\n"
		"\n"
		"exit status: 0 minimised; 1 the trace passes or does not run (nothing to keep) or\n"
		"OUT cannot be written; 2 usage error or a trace that does not parse.\n");
}

static void on_progress(void *ctx, const struct lab_minimize_report *rep)
{
	(void)ctx;
	fprintf(stderr, "vhostlab minimize: %u -> %u statements, %zu -> %zu bytes (%u replays)\n",
		rep->ops_before, rep->ops_after, rep->bytes_before, rep->bytes_after, rep->replays);
}

int cmd_minimize(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out_path = NULL;
	bool json = false;
	char err[512];

	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, "ho:", longopts, NULL);

		if (c == -1)
			break;
		switch (c) {
		case 'o': out_path = optarg; break;
		case 'j': json = true; break;
		case 'h': minimize_usage(stdout); return CLI_EXIT_OK;
		default: minimize_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || !out_path) {
		cli_usage_error("minimize", "want one trace FILE and -o OUT (try --help)");
		return CLI_EXIT_USAGE;
	}
	const char *in = argv[optind];
	struct lab_trace t;
	struct lab_replay_opts o = {.hooks = true};
	struct lab_minimize_report rep;
	char *text = NULL;

	lab_trace_init(&t);
	if (!lab_trace_load(&t, in, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		lab_trace_free(&t);
		return CLI_EXIT_USAGE;
	}
	bool ok = lab_trace_minimize(&t, &o, &text, &rep, json ? NULL : on_progress, NULL, err,
				     sizeof(err));

	lab_trace_free(&t);
	if (!ok) {
		fprintf(stderr, "vhostlab minimize: %s: %s\n", in, err);
		return CLI_EXIT_FAIL;
	}
	FILE *f = fopen(out_path, "w");
	bool wrote = f && fputs(text, f) >= 0;

	if (f && fclose(f) != 0)
		wrote = false;
	free(text);
	if (!wrote) {
		fprintf(stderr, "vhostlab minimize: cannot write %s\n", out_path);
		return CLI_EXIT_FAIL;
	}
	if (json) {
		printf("{\"input\": ");
		cli_json_string(stdout, in);
		printf(", \"output\": ");
		cli_json_string(stdout, out_path);
		printf(", \"signature\": ");
		cli_json_string(stdout, rep.signature);
		printf(", \"statements_before\": %u, \"statements_after\": %u, \"bytes_before\": %zu, "
		       "\"bytes_after\": %zu, \"replays\": %u}\n", rep.ops_before, rep.ops_after,
		       rep.bytes_before, rep.bytes_after, rep.replays);
	} else {
		printf("%s -> %s: failure \"%s\" kept; %u -> %u statements, %zu -> %zu bytes "
		       "(%u replays)\n", in, out_path, rep.signature, rep.ops_before, rep.ops_after,
		       rep.bytes_before, rep.bytes_after, rep.replays);
	}
	return CLI_EXIT_OK;
}

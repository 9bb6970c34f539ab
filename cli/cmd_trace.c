/* SPDX-License-Identifier: MIT */
/* vhostlab trace: tools around trace files. `fmt` writes a trace in canonical form (the
 * round trip parse -> write -> parse is the identity, docs/trace-format.md); `from-fuzz`
 * turns a fuzz input into the trace of what it did (from_fuzz.h); `upgrade` makes version 1
 * traces version 2 (cmd_trace_upgrade.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "from_fuzz.h"
#include "trace.h"

void cli_trace_usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab trace SUBCOMMAND ...\n"
		"\n"
		"subcommands:\n"
		"  fmt FILE [-o OUT]   parse FILE and write it in canonical form to OUT (default:\n"
		"                      stdout); comments are dropped; the version is kept\n"
		"  upgrade FILE... [--in-place | -o OUT] [--no-fold]\n"
		"                      make traces version 2: the header, and runs of\n"
		"                      a group of statements repeated verbatim folded into\n"
		"                      `repeat N { ... }` where that makes the trace shorter\n"
		"                      (not with --no-fold; not in a trace that has blocks\n"
		"                      already). Each trace is replayed before and\n"
		"                      after; the folded form is written only if both replays end\n"
		"                      the same way (else unfolded, said on stderr). A folded\n"
		"                      trace is written in canonical form (no comments); one that\n"
		"                      does not fold keeps its text but for the header. Writes to\n"
		"                      stdout (one FILE), OUT (one FILE) or over each FILE\n"
		"                      (--in-place); one line per file on stderr: versions,\n"
		"                      statements, repeat blocks, how the trace replays\n"
		"  upgrade --check FILE...\n"
		"                      print each FILE that is not version 2; exit 1 if any\n"
		"  from-fuzz TARGET INPUT [-o OUT] [--lossy] [--observed]\n"
		"                      run the fuzz input INPUT through TARGET (fuzz_split_dequeue,\n"
		"                      fuzz_split_enqueue, fuzz_packed_dequeue, fuzz_packed_enqueue,\n"
		"                      fuzz_scenario; the fuzz_ prefix may be left out) and write the\n"
		"                      trace of what it did to OUT (default: stdout), to replay with\n"
		"                      `vhostlab replay`. An input that crashes or fails a check\n"
		"                      gives the trace up to the statement it failed at.\n"
		"      --lossy         write the trace even when the input did something the format\n"
		"                      cannot express (run-time switches of queue options, a new\n"
		"                      memory table, ...); each is listed on stderr and in the\n"
		"                      trace's comments. Without it such an input is an error\n"
		"      --observed      datapath targets: also expect what the run observed at its\n"
		"                      end: statistics, broken state, held chains, call decision,\n"
		"                      dirty pages and a digest of all guest memory (checks the\n"
		"                      conversion is exact)\n"
		"\n"
		"exit status: 0 success; 1 the output could not be written, or (upgrade --check)\n"
		"a FILE is not version 2, or (from-fuzz)\n"
		"the input cannot become an exact trace without --lossy, the target ran\n"
		"nothing, the trace would exceed 256 MiB or the recorded trace does not parse\n"
		"(an internal error); 2 usage error, or (fmt) a trace FILE that does not parse\n"
		"(the message names file, line and column), or (from-fuzz) an unknown or\n"
		"unsupported target, --observed with fuzz_scenario, or an unreadable input or\n"
		"one of 64 MiB or more.\n");
}

static int trace_fmt(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	char err[512];
	struct lab_trace t;
	int rc = CLI_EXIT_OK;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			cli_trace_usage(stdout);
			return CLI_EXIT_OK;
		} else if (!in && argv[i][0] != '-') {
			in = argv[i];
		} else {
			cli_usage_error("trace fmt", "unexpected argument '%s'", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	if (!in) {
		cli_usage_error("trace fmt", "no trace file given");
		return CLI_EXIT_USAGE;
	}
	lab_trace_init(&t);
	if (!lab_trace_load(&t, in, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		lab_trace_free(&t);
		return CLI_EXIT_USAGE;
	}
	if (out) {
		if (!lab_trace_save(&t, out, err, sizeof(err))) {
			fprintf(stderr, "vhostlab trace fmt: %s\n", err);
			rc = CLI_EXIT_FAIL;
		}
	} else {
		size_t len;
		char *text = lab_trace_format(&t, &len);

		if (!text || fwrite(text, 1, len, stdout) != len) {
			fprintf(stderr, "vhostlab trace fmt: cannot write the trace\n");
			rc = CLI_EXIT_FAIL;
		}
		free(text);
	}
	lab_trace_free(&t);
	return rc;
}

/* The whole file (fuzz inputs are small; a cap keeps a wrong path from eating memory). */
static uint8_t *read_input(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n;

	*len = 0;
	if (!f) {
		cli_usage_error("trace from-fuzz", "cannot read input '%s': %s", path,
				strerror(errno));
		return NULL;
	}
	do {
		if (*len == cap) {
			uint8_t *p = cap >= (64u << 20) ? NULL : realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!p) {
				cli_usage_error("trace from-fuzz", "input '%s': too large or out of "
						"memory", path);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = p;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0);
	if (ferror(f)) {
		cli_usage_error("trace from-fuzz", "cannot read input '%s'", path);
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	return buf ? buf : malloc(1);
}

/* One comment line (the writer drops comments: `trace fmt` of the output loses them). */
static void comment(FILE *out, const char *prefix, const char *text)
{
	fprintf(out, "# %s", prefix);
	for (; *text; text++)
		fputc(*text == '\n' ? ' ' : *text, out);
	fputc('\n', out);
}

/* What replaying a trace of a failed run shows. The datapath harness's checks are
 * invariants (ranges, sums, positions), not the equalities a trace expects: its traces
 * show what the core did, and fail where the core crashes, a sanitizer reports or a packet
 * buffer is lost. The scenario records the lab's oracles it can as expectations. */
static const char *failure_note(const char *target)
{
	return strcmp(target, "fuzz_scenario") ?
		       "the harness's checks are not trace expectations: the replay repeats what "
		       "the core did up to here" :
		       "the lab's oracles the format can state are expectations in the trace";
}

static int write_converted(FILE *out, const char *target, const char *input, size_t size,
			   const struct ff_result *res)
{
	char line[512];

	snprintf(line, sizeof(line), "vhostlab trace from-fuzz %s %s (%zu bytes)", target, input,
		 size);
	comment(out, "", line);
	if (res->failed) {
		comment(out, "the run failed, the trace stops where it did: ", res->failure);
		comment(out, "", failure_note(target));
	}
	for (uint32_t i = 0; i < res->nlossy; i++)
		comment(out, "not in this trace (--lossy): ", res->lossy[i]);
	fwrite(res->text, 1, res->len, out);
	return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

static int trace_from_fuzz(int argc, char **argv)
{
	const char *pos[2] = {NULL, NULL}, *out = NULL, *target, *why;
	struct ff_opts o = {0};
	struct ff_result res;
	struct lab_trace check;
	bool lossy = false;
	char err[1200];
	int npos = 0, rc = CLI_EXIT_OK;
	uint8_t *data;
	size_t size;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--lossy")) {
			lossy = true;
		} else if (!strcmp(argv[i], "--observed")) {
			o.observed = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			cli_trace_usage(stdout);
			return CLI_EXIT_OK;
		} else if (npos < 2 && argv[i][0] != '-') {
			pos[npos++] = argv[i];
		} else {
			cli_usage_error("trace from-fuzz", "unexpected argument '%s'", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	if (npos < 2) {
		cli_usage_error("trace from-fuzz", "%s (usage: vhostlab trace from-fuzz TARGET "
				"INPUT [-o OUT])", npos ? "no input file given" : "no target given");
		return CLI_EXIT_USAGE;
	}
	target = ff_target(pos[0], &why);
	if (!target) {
		if (why)
			cli_usage_error("trace from-fuzz", "'%s': %s", pos[0], why);
		else
			cli_usage_error("trace from-fuzz", "unknown target '%s' (try `vhostlab trace "
					"--help`)", pos[0]);
		return CLI_EXIT_USAGE;
	}
	if (o.observed && !strcmp(target, "fuzz_scenario")) {
		cli_usage_error("trace from-fuzz", "--observed: fuzz_scenario's traces carry the "
				"lab's oracles as expectations instead");
		return CLI_EXIT_USAGE;
	}
	data = read_input(pos[1], &size);
	if (!data)
		return CLI_EXIT_USAGE;
	if (ff_convert(target, data, size, &o, &res, err, sizeof(err)) != 0) {
		fprintf(stderr, "vhostlab trace from-fuzz: %s: %s\n", pos[1], err);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	for (uint32_t i = 0; i < res.nlossy; i++)
		fprintf(stderr, "vhostlab trace from-fuzz: %s: %s: %s\n", pos[1],
			lossy ? "not in the trace" : "cannot be expressed in a trace", res.lossy[i]);
	if (res.nlossy && !lossy) {
		fprintf(stderr, "vhostlab trace from-fuzz: %s: no trace written; --lossy writes it "
			"without the above\n", pos[1]);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (res.failed)
		fprintf(stderr, "vhostlab trace from-fuzz: %s: %s; the trace stops where the run "
			"did (%s)\n", pos[1], res.failure, failure_note(target));
	if (res.len > LAB_TRACE_MAX_TEXT) {
		fprintf(stderr, "vhostlab trace from-fuzz: %s: the trace would be %zu bytes, more "
			"than a trace may be (%u)\n", pos[1], res.len, LAB_TRACE_MAX_TEXT);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	/* What went down the pipe must be a trace: a recorder or writer bug shows here, not in
	 * the maintainer's replay. */
	if (!lab_trace_parse(&check, res.text, res.len, pos[1], err, sizeof(err))) {
		fprintf(stderr, "vhostlab trace from-fuzz: internal error: the recorded trace does "
			"not parse: %s\n", err);
		lab_trace_free(&check);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	lab_trace_free(&check);
	if (out) {
		FILE *f = fopen(out, "w");

		if (!f || write_converted(f, target, pos[1], size, &res) != 0) {
			fprintf(stderr, "vhostlab trace from-fuzz: cannot write '%s': %s\n", out,
				strerror(errno));
			rc = CLI_EXIT_FAIL;
		}
		if (f && fclose(f) != 0)
			rc = CLI_EXIT_FAIL;
	} else if (write_converted(stdout, target, pos[1], size, &res) != 0) {
		fprintf(stderr, "vhostlab trace from-fuzz: cannot write the trace\n");
		rc = CLI_EXIT_FAIL;
	}
out:
	ff_result_free(&res);
	free(data);
	return rc;
}

int cmd_trace(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		cli_trace_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "fmt"))
		return trace_fmt(argc - 2, argv + 2);
	if (!strcmp(argv[1], "from-fuzz"))
		return trace_from_fuzz(argc - 2, argv + 2);
	if (!strcmp(argv[1], "upgrade"))
		return trace_upgrade(argc - 2, argv + 2);
	cli_usage_error("trace", "unknown subcommand '%s' (try `vhostlab trace --help`)", argv[1]);
	return CLI_EXIT_USAGE;
}

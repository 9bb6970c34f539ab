/* SPDX-License-Identifier: MIT */
/* vhostlab bench: the command. Repetitions are interleaved (rep 1 of every cell, then
 * rep 2, ...) so that a slow spell of a shared machine spreads over all cells instead of
 * spoiling one; each cell reports the median with min and max. */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

/* Under callgrind: one cell, one repetition; the parent reads the counts from stdout. */
static int run_child(const struct bench_opts *o)
{
	struct bench_rep r;
	char err[512];

	if (o->ncells != 1) {
		cli_usage_error("bench", "--callgrind-child takes exactly one cell, not %u",
				o->ncells);
		return CLI_EXIT_USAGE;
	}
	if (bench_run_threads(o, &o->cells[0], &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "vhostlab bench: FAIL: %s\n", err);
		return CLI_EXIT_FAIL;
	}
	printf("packets=%" PRIu64 " calls=%" PRIu64 "\n", r.packets, r.calls);
	return CLI_EXIT_OK;
}

static int measure(const struct bench_opts *o, struct bench_result *res)
{
	char name[160], err[512], path[PATH_MAX];

	for (uint32_t rep = 0; rep < o->reps; rep++) {
		if (!o->quiet)
			fprintf(stderr, "vhostlab bench: rep %u/%u of %u cells\n", rep + 1, o->reps,
				o->ncells);
		for (uint32_t i = 0; i < o->ncells; i++) {
			if (bench_run_threads(o, &o->cells[i], &res[i].reps[rep], err,
					      sizeof(err)) != 0) {
				bench_cell_name(&o->cells[i], name, sizeof(name));
				fprintf(stderr, "vhostlab bench: FAIL: %s (rep %u): %s\n", name,
					rep + 1, err);
				return CLI_EXIT_FAIL;
			}
			res[i].nreps = rep + 1;
		}
	}
	if (!o->instructions)
		return CLI_EXIT_OK;
	for (uint32_t i = 0; i < o->ncells; i++) {
		bench_cell_name(&o->cells[i], name, sizeof(name));
		if (!o->quiet)
			fprintf(stderr, "vhostlab bench: callgrind %u/%u %s\n", i + 1, o->ncells,
				name);
		if (bench_callgrind_cell(o, &o->cells[i], &res[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "vhostlab bench: FAIL: %s: instructions: %s\n", name, err);
			return CLI_EXIT_FAIL;
		}
		if (o->profile_dir && !o->quiet && bench_profile_path(o, &o->cells[i], path,
								      sizeof(path)))
			fprintf(stderr, "vhostlab bench: kept %s\n", path);
	}
	return CLI_EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_opts *o = malloc(sizeof(*o));

	if (!o) {
		fprintf(stderr, "vhostlab bench: out of memory\n");
		return CLI_EXIT_FAIL;
	}
	int rc = bench_parse(argc, argv, o);

	if (rc != 0) {
		free(o);
		return rc < 0 ? CLI_EXIT_OK : rc;
	}
	if (o->callgrind_child) {
		rc = run_child(o);
		free(o);
		return rc;
	}
	/* Even with --quiet and --json (stdout stays the document alone): lab numbers must not
	 * pass for production ones. The JSON's "core" says the same. */
	if (cli_lab_core_note())
		fprintf(stderr, "vhostlab bench: %s\n", cli_lab_core_note());
	if (o->profile_dir) {
		char err[512];

		if (bench_profile_prepare(o, err, sizeof(err)) != 0) {
			cli_usage_error("bench", "%s", err);
			free(o);
			return CLI_EXIT_USAGE;
		}
	}
	struct bench_result *res = calloc(o->ncells, sizeof(*res));

	if (!res) {
		fprintf(stderr, "vhostlab bench: out of memory for %u cells\n", o->ncells);
		free(o);
		return CLI_EXIT_FAIL;
	}
	for (uint32_t i = 0; i < o->ncells; i++)
		res[i].cell = o->cells[i];
	double timer = bench_timer_overhead_ns();

	if (!o->quiet)
		fprintf(stderr, "vhostlab bench: %u cells x %u reps on the %s core, %u thread%s\n",
			o->ncells, o->reps, cli_core_build(), o->threads, o->threads > 1 ? "s" : "");
	rc = measure(o, res);
	if (rc == CLI_EXIT_OK) {
		if (o->json)
			bench_print_json(stdout, o, res, o->ncells, timer);
		else
			bench_print_table(stdout, o, res, o->ncells);
	}
	free(res);
	free(o);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/* vhostlab: entry point and subcommand dispatch. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vhostlab/vhostlab.h"

/* Each program prints its own name; the lab build of the core makes the lab program. */
#ifdef VL_LAB_BUILD
#define PROGRAM "vhostlab"
#else
#define PROGRAM "vhostlab-fast"
#endif

#ifdef VL_LAB_BUILD
static void usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab [--version] [-h|--help] COMMAND [ARGS]\n"
		"\n"
		"vhostlab is a virtio-net vhost-user back end core and the lab that tests it.\n"
		"This is the lab program: it links the lab build of the core (guest-load hooks,\n"
		"fault injection) and runs every command on it. Its serve and bench are for the\n"
		"lab (serve --record, the hooks' cost) and say so on stderr; vhostlab-fast, built\n"
		"beside it, is the production program for serving and benchmarking.\n"
		"\n"
		"commands:\n"
		"  run      run the simulated-guest lab over a scenario matrix and verify every\n"
		"           packet both ways (default: 128 configurations x 100000 packets)\n"
		"  replay   replay trace files against the core and check their expectations\n"
		"  minimize shrink a failing trace while it fails the same way\n"
		"  trace    trace file tools: fmt (canonical form), from-fuzz (a fuzz input as a\n"
		"           trace)\n"
		"  serve    serve a vhost-user virtio-net device to QEMU or DPDK virtio-user\n"
		"           (loopback, rxonly, txonly, tap or pair forwarding; null and\n"
		"           touch ceilings), on the lab build of the core; --record needs it\n"
		"  bench    benchmark the core against a lean simulated guest: Mpps, ns per\n"
		"           packet, allocations per call, instructions per packet (callgrind),\n"
		"           on the lab build of the core (vhostlab-fast bench: the production one)\n"
		"  probe    play a vhost-user front end against any back end's socket and\n"
		"           check it case by case (conformance, traffic)\n"
		"  help     show this text, or `vhostlab help COMMAND` for a command's options\n"
		"\n"
		"exit status: 0 success, 1 a check failed, 2 usage error.\n"
		"Documentation: docs/cli.md\n");
}
#else
static void usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab-fast [--version] [-h|--help] COMMAND [ARGS]\n"
		"\n"
		"vhostlab-fast is the production program of vhostlab: serve and bench linked\n"
		"with the production core (libvhostlab's objects: no lab hooks, no fault\n"
		"injection). The lab's commands (run, replay, minimize, trace) and serve --record\n"
		"need the lab build of the core: they are in vhostlab.\n"
		"\n"
		"commands:\n"
		"  serve    serve a vhost-user virtio-net device to QEMU or DPDK virtio-user\n"
		"           (loopback, rxonly, txonly, tap or pair forwarding; null and\n"
		"           touch ceilings)\n"
		"  bench    benchmark the core against a lean simulated guest: Mpps, ns per\n"
		"           packet, allocations per call, instructions per packet (callgrind)\n"
		"  help     show this text, or `vhostlab-fast help COMMAND` for a command's options\n"
		"\n"
		"exit status: 0 success, 1 a check failed, 2 usage error.\n"
		"Documentation: docs/cli.md\n");
}
#endif

void cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vhostlab %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

bool cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	if (text == NULL || text[0] < '0' || text[0] > '9') {
		cli_usage_error(cmd, "%s: '%s' is not a number", opt, text ? text : "");
		return false;
	}
	unsigned long long v = strtoull(text, &end, 10);

	if (errno != 0 || *end != '\0') {
		cli_usage_error(cmd, "%s: '%s' is not a number", opt, text);
		return false;
	}
	if (v < min || v > max) {
		cli_usage_error(cmd, "%s: %s is out of range [%llu, %llu]", opt, text,
				(unsigned long long)min, (unsigned long long)max);
		return false;
	}
	*out = v;
	return true;
}

void cli_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

/* The subcommands. The lab program (vhostlab, the lab build of the core) has them all and
 * runs each itself; the production program (vhostlab-fast, the production core,
 * cli/core_build.c) only those that want speed and need no hooks. */
struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const struct cli_command commands[] = {
#ifdef VL_LAB_BUILD
	{"run", cmd_run},
	{"replay", cmd_replay},
	{"minimize", cmd_minimize},
	{"trace", cmd_trace},
	{"probe", cmd_probe},
#endif
	{"serve", cmd_serve},
	{"bench", cmd_bench},
};

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *cmd = argv[1];

	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "--version")) {
		printf("%s %s (core: %s, build: %s)\n", PROGRAM, VHOSTLAB_VERSION,
		       cli_core_build(), cli_build_variant());
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "help")) {
		if (argc > 2) {
			char *help_argv[] = {argv[2], "--help", NULL};
			const struct cli_command *c = find_command(argv[2]);

			if (c)
				return c->fn(2, help_argv);
			cli_usage_error("help", "unknown command '%s'", argv[2]);
			return CLI_EXIT_USAGE;
		}
		usage(stdout);
		return CLI_EXIT_OK;
	}
	const struct cli_command *c = find_command(cmd);

	if (c == NULL) {
#ifndef VL_LAB_BUILD
		fprintf(stderr,
			"vhostlab-fast: '%s' is not one of its commands (serve, bench); the lab's commands "
			"run in vhostlab\n", cmd);
#else
		fprintf(stderr, "vhostlab: unknown command '%s' (try `vhostlab --help`)\n", cmd);
#endif
		return CLI_EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}

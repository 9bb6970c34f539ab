/* SPDX-License-Identifier: MIT */
/* vhostlab: entry point and subcommand dispatch. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vhostlab/vhostlab.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab [--version] [-h|--help] COMMAND [ARGS]\n"
		"\n"
		"vhostlab is a virtio-net vhost-user back end core and the lab that tests it.\n"
		"\n"
		"commands:\n"
		"  run      run the simulated-guest lab over a scenario matrix and verify every\n"
		"           packet both ways (default: 16 configurations x 100000 packets)\n"
		"  replay   replay trace files against the core and check their expectations\n"
		"  minimize shrink a failing trace while it fails the same way\n"
		"  trace    trace file tools: fmt (canonical form), from-fuzz (a fuzz input as a\n"
		"           trace)\n"
		"  serve    serve a vhost-user virtio-net device to QEMU or DPDK virtio-user\n"
		"           (loopback, rxonly, txonly, tap or pair forwarding)\n"
		"  help     show this text, or `vhostlab help COMMAND` for a command's options\n"
		"\n"
		"exit status: 0 success, 1 a check failed, 2 usage error.\n"
		"Documentation: docs/cli.md\n");
}

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
		printf("vhostlab %s\n", VHOSTLAB_VERSION);
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "help")) {
		if (argc > 2) {
			char *help_argv[] = {argv[2], "--help", NULL};

			if (!strcmp(argv[2], "run"))
				return cmd_run(2, help_argv);
			if (!strcmp(argv[2], "replay"))
				return cmd_replay(2, help_argv);
			if (!strcmp(argv[2], "minimize"))
				return cmd_minimize(2, help_argv);
			if (!strcmp(argv[2], "trace"))
				return cmd_trace(2, help_argv);
			if (!strcmp(argv[2], "serve"))
				return cmd_serve(2, help_argv);
			cli_usage_error("help", "unknown command '%s'", argv[2]);
			return CLI_EXIT_USAGE;
		}
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "replay"))
		return cmd_replay(argc - 1, argv + 1);
	if (!strcmp(cmd, "minimize"))
		return cmd_minimize(argc - 1, argv + 1);
	if (!strcmp(cmd, "trace"))
		return cmd_trace(argc - 1, argv + 1);
	if (!strcmp(cmd, "serve"))
		return cmd_serve(argc - 1, argv + 1);
	fprintf(stderr, "vhostlab: unknown command '%s' (try `vhostlab --help`)\n", cmd);
	return CLI_EXIT_USAGE;
}

/* SPDX-License-Identifier: MIT */
/* vhostlab replay: run trace files against the core in the simulated guest and report, for
 * each, whether every expectation held (docs/cli.md, docs/trace-format.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pcap.h"
#include "trace.h"
#include "replay_socket.h"
#include "trace_replay.h"
#include "vhostlab/vhostlab.h"

static void replay_usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab replay [OPTIONS] FILE...\n"
		"       vhostlab replay --socket PATH [--server] [--timeout-ms N] [--settle-ms N]\n"
		"                       [OPTIONS] FILE...\n"
		"\n"
		"Replay trace files (docs/trace-format.md) against the core in a fresh simulated\n"
		"guest each, and check every expectation in file order. Deterministic: the same\n"
		"trace gives the same result on any machine. A trace with `message` statements\n"
		"(vhost-user messages, version 2) runs on the core's own vhost-user device, the\n"
		"lab's front end sending them over a socketpair.\n"
		"\n"
		"With --socket, each trace's guest side is played over vhost-user against the back\n"
		"end at PATH (any back end, a connection per trace): the trace's regions are the\n"
		"guest's RAM, its queues vrings (k-th rx queue ring 2k, k-th tx queue ring 2k+1),\n"
		"its features negotiated exactly. Statements only the in-process core can carry\n"
		"out or show are skipped and counted, and so are the expectations that depend on\n"
		"them (docs/trace-format.md, \"Replay over a socket\"); `message` statements are\n"
		"sent.\n"
		"\n"
		"options:\n"
		"  --socket PATH     replay over vhost-user against the back end at PATH\n"
		"  --server          listen at PATH for a back end in client mode instead\n"
		"  --timeout-ms N    bound of every message and used-element wait, 10..600000\n"
		"                    (default 2000)\n"
		"  --settle-ms N     what `expect used ... none` waits before it looks,\n"
		"                    0..600000 (default 200)\n"
		"  --json      one JSON document on stdout: per trace its status, the statement\n"
		"              where it stopped, what was expected and what happened\n"
		"  --verbose   narrate every statement and what it did (stderr)\n"
		"  --quiet     print only failures\n"
		"  --pcap FILE write every packet the host dequeued or delivered, of every trace,\n"
		"              to FILE (pcap, Ethernet; opens in Wireshark/tshark)\n"
		"  -h, --help  this text\n"
		"\n"
		"exit status: 0 every trace passed; 1 a trace diverged (an expectation failed, the\n"
		"back end wedged or closed the connection) or could not run; 2 usage error or a\n"
		"trace that does not parse; 3 (--socket) none failed but the back end could not\n"
		"run some trace (n/a: a feature of the trace it does not offer, ...).\n");
}

/* Exit status when no trace failed but one was n/a over a socket. */
#define REPLAY_EXIT_NA 3

static const char *status_name(enum lab_replay_status s)
{
	switch (s) {
	case LAB_REPLAY_PASS: return "pass";
	case LAB_REPLAY_DIVERGED: return "diverged";
	case LAB_REPLAY_NA: return "n/a";
	default: return "error";
	}
}

/* Over a socket a divergence may be the back end's wedge or crash: said first. */
static const char *fail_word(const struct lab_replay_result *r)
{
	if (!strcmp(r->signature, "wedge"))
		return "WEDGE";
	if (!strcmp(r->signature, "crash"))
		return "CRASH";
	return "FAIL";
}

struct replay_item {
	const char *file;
	bool socket;
	bool parsed;
	char parse_error[512];
	struct lab_replay_result res;
};

static void print_text(const struct replay_item *it, bool quiet)
{
	const struct lab_replay_result *r = &it->res;

	if (!it->parsed) {
		fprintf(stderr, "%s\n", it->parse_error);
		return;
	}
	if (r->status == LAB_REPLAY_PASS && it->socket) {
		if (!quiet)
			printf("PASS %s: %u statements, %u expectations checked over the socket, "
			       "%u skipped as in-process only\n", it->file, r->ops_run,
			       r->expectations, r->skipped);
		return;
	}
	if (r->status == LAB_REPLAY_PASS) {
		if (!quiet)
			printf("PASS %s: %u statements, %u expectations, %llu packets dequeued, "
			       "%llu delivered, %llu discarded\n", it->file, r->ops_run,
			       r->expectations, (unsigned long long)r->packets_dequeued,
			       (unsigned long long)r->packets_enqueued,
			       (unsigned long long)r->packets_discarded);
		return;
	}
	if (r->status == LAB_REPLAY_NA) {
		printf("N/A %s: %s\n", it->file, r->observed);
		return;
	}
	printf("%s %s:%u: %s\n", fail_word(r), it->file, r->line, r->statement);
	if (r->status == LAB_REPLAY_DIVERGED)
		printf("  expected: %s\n  observed: %s\n", r->expected, r->observed);
	else
		printf("  error: %s\n", r->observed);
	printf("  signature: %s\n", r->signature);
	if (it->socket)
		printf("  (%u statements ran, %u expectations checked, %u skipped as in-process "
		       "only)\n", r->ops_run, r->expectations, r->skipped);
}

static void print_json(const struct replay_item *items, int n, int passed, int na)
{
	printf("{\"traces\": [");
	for (int i = 0; i < n; i++) {
		const struct replay_item *it = &items[i];
		const struct lab_replay_result *r = &it->res;

		printf("%s\n  {\"file\": ", i ? "," : "");
		cli_json_string(stdout, it->file);
		if (!it->parsed) {
			printf(", \"status\": \"parse-error\", \"error\": ");
			cli_json_string(stdout, it->parse_error);
			printf("}");
			continue;
		}
		printf(", \"status\": \"%s\", \"statements\": %u, \"expectations\": %u, "
		       "\"packets_dequeued\": %llu, \"packets_delivered\": %llu, "
		       "\"packets_discarded\": %llu",
		       status_name(r->status), r->ops_run, r->expectations,
		       (unsigned long long)r->packets_dequeued,
		       (unsigned long long)r->packets_enqueued,
		       (unsigned long long)r->packets_discarded);
		if (it->socket)   /* in process nothing is skipped */
			printf(", \"skipped\": %u", r->skipped);
		if (r->status == LAB_REPLAY_NA) {
			printf(", \"reason\": ");
			cli_json_string(stdout, r->observed);
		} else if (r->status != LAB_REPLAY_PASS) {
			printf(", \"line\": %u, \"statement\": ", r->line);
			cli_json_string(stdout, r->statement);
			printf(", \"expected\": ");
			cli_json_string(stdout, r->expected);
			printf(", \"observed\": ");
			cli_json_string(stdout, r->observed);
			printf(", \"signature\": ");
			cli_json_string(stdout, r->signature);
		}
		printf("}");
	}
	printf("\n], \"passed\": %d, \"failed\": %d, \"na\": %d}\n", passed, n - passed - na, na);
}

/* Packets to the pcap file: the frame is the packet without its virtio-net header. */
static void pcap_packet(void *ctx, const struct lab_trace_queue *q, const struct vl_pkt *pkt)
{
	static uint8_t frame[VL_PKT_MAX_LEN];
	uint32_t n = vl_pkt_read(pkt, 0, frame, pkt->pkt_len);

	(void)q;
	lab_pcap_write(ctx, frame, n);
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"pcap", required_argument, NULL, 'p'},
		{"socket", required_argument, NULL, 's'},
		{"server", no_argument, NULL, 'S'},
		{"timeout-ms", required_argument, NULL, 't'},
		{"settle-ms", required_argument, NULL, 'e'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false, verbose = false, quiet = false, parse_failed = false;
	int passed = 0, na = 0;
	struct lab_replay_socket_opts so = {.timeout_ms = 2000, .settle_ms = 200};
	uint64_t v;
	const char *pcap_path = NULL;
	struct lab_pcap pcap = {0};

	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, "hvq", longopts, NULL);

		if (c == -1)
			break;
		switch (c) {
		case 'j': json = true; break;
		case 'v': verbose = true; break;
		case 'q': quiet = true; break;
		case 'p': pcap_path = optarg; break;
		case 's': so.socket = optarg; break;
		case 'S': so.server = true; break;
		case 't':
			if (!cli_parse_u64("replay", "--timeout-ms", optarg, 10, 600000, &v))
				return CLI_EXIT_USAGE;
			so.timeout_ms = (int)v;
			break;
		case 'e':
			if (!cli_parse_u64("replay", "--settle-ms", optarg, 0, 600000, &v))
				return CLI_EXIT_USAGE;
			so.settle_ms = (int)v;
			break;
		case 'h': replay_usage(stdout); return CLI_EXIT_OK;
		default: replay_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_usage_error("replay", "no trace file given (try --help)");
		return CLI_EXIT_USAGE;
	}
	if (so.server && !so.socket) {
		cli_usage_error("replay", "--server needs --socket PATH");
		return CLI_EXIT_USAGE;
	}
	if (so.socket && pcap_path) {
		cli_usage_error("replay", "--pcap: over a socket the packets are the back end's "
				"(no pcap with --socket)");
		return CLI_EXIT_USAGE;
	}
	so.narrate = verbose ? stderr : NULL;
	if (pcap_path && !lab_pcap_open(&pcap, pcap_path)) {
		cli_usage_error("replay", "--pcap: cannot create '%s'", pcap_path);
		return CLI_EXIT_USAGE;
	}
	int n = argc - optind;
	struct replay_item *items = calloc((size_t)n, sizeof(*items));

	if (!items) {
		cli_usage_error("replay", "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++) {
		struct replay_item *it = &items[i];
		struct lab_trace t;
		struct lab_replay_opts o = {.narrate = verbose ? stderr : NULL, .hooks = true};

		if (pcap_path) {
			o.on_packet = pcap_packet;
			o.packet_ctx = &pcap;
		}

		it->file = argv[optind + i];
		it->socket = so.socket != NULL;
		lab_trace_init(&t);
		it->parsed = lab_trace_load(&t, it->file, it->parse_error, sizeof(it->parse_error));
		if (it->parsed) {
			if (verbose)
				fprintf(stderr, "== %s\n", it->file);
			enum lab_replay_status st = so.socket ?
				lab_replay_socket_run(&t, &so, &it->res) :
				lab_replay_run(&t, &o, &it->res);

			passed += st == LAB_REPLAY_PASS;
			na += st == LAB_REPLAY_NA;
		} else {
			parse_failed = true;
		}
		lab_trace_free(&t);
		if (!json)
			print_text(it, quiet);
	}
	if (json)
		print_json(items, n, passed, na);
	else if (!quiet || passed != n)
		printf("%d of %d traces passed\n", passed, n);
	if (!json && na)
		printf("%d n/a over the socket\n", na);
	free(items);
	if (pcap_path && !lab_pcap_close(&pcap)) {
		fprintf(stderr, "vhostlab replay: --pcap: writing '%s' failed\n", pcap_path);
		return CLI_EXIT_FAIL;
	}
	if (parse_failed)
		return CLI_EXIT_USAGE;
	if (passed + na < n)
		return CLI_EXIT_FAIL;
	return na ? REPLAY_EXIT_NA : CLI_EXIT_OK;
}

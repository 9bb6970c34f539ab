/* SPDX-License-Identifier: MIT */
/* vhostlab probe: the lab's guest as a vhost-user front end, aimed at any back end's socket,
 * with a verdict per conformance and traffic case (sim/frontend/probe_case.h). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "probe_run.h"

static void probe_usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab probe --socket PATH [--server] [--features HEX]\n"
		"                      [--ring split|packed] [--suite NAME[,NAME]]\n"
		"                      [--expect echo|macswap|sink|source] [--timeout-ms N]\n"
		"                      [--record DIR]"
		" [--json]\n"
		"\n"
		"Play a vhost-user front end (QEMU's role) against any virtio-net back end: the\n"
		"lab's simulated guest negotiates with whatever the back end offers, hands it\n"
		"guest RAM as memfd regions, sets up an RX and a TX queue and runs each case of\n"
		"the selected suites over a connection of its own. Each case checks one rule of\n"
		"the virtio spec or the vhost-user protocol and gets a verdict: pass, fail (with\n"
		"what was seen), wedge (a wait timed out: the last message, the ring's indices\n"
		"and what was in flight), crash (the back end closed the connection or went\n"
		"away) or n/a (with the feature it lacks).\n"
		"\n"
		"options:\n"
		"  --socket PATH     the back end's vhost-user socket (required)\n"
		"  --server          listen at PATH for a back end in client mode (it connects\n"
		"                    once per case) instead of connecting to it\n"
		"  --features HEX    negotiate only these feature bits of what is offered\n"
		"                    (default: every bit the probe's driver implements)\n"
		"  --ring R          split or packed (default: both, cases run on each)\n"
		"  --suite NAMES     conformance, traffic, hostile, comma-separated (default:\n"
		"                    all)\n"
		"  --case IDS        only the cases with these ids, comma-separated\n"
		"  --expect E        what the back end does with frames: echo (sends each back\n"
		"                    as it came, e.g. vhostlab serve --mode loopback; default),\n"
		"                    macswap (sends each back with its MAC addresses swapped,\n"
		"                    e.g. testpmd --forward-mode=macswap), sink (drops them:\n"
		"                    cases that need the frame back are n/a) or source (drops\n"
		"                    them and sends frames of its own, e.g. vhostlab serve\n"
		"                    --mode txonly: the source cases check what arrives)\n"
		"  --timeout-ms N    bound of every wait, 10..600000 (default 1000)\n"
		"  --record DIR      write each failing case (fail, wedge, crash) as a trace\n"
		"                    DIR/<case>-<ring>.trace that `vhostlab replay --socket`\n"
		"                    plays back; a case whose failure a trace cannot hold gets\n"
		"                    none, and the output says why\n"
		"  --json            one JSON document on stdout: {\"ok\", \"backend\",\n"
		"                    \"features\", \"cases\": [{\"id\", \"suite\", \"ring\", \"rule\",\n"
		"                    \"verdict\", \"detail\"}]}\n"
		"  -h, --help        this text\n"
		"\n"
		"exit status: 0 every applicable case passed; 1 a case failed, wedged or\n"
		"crashed, or the back end could not be reached; 2 usage error.\n");
}

static bool parse_suites(const char *text, unsigned *out)
{
	char buf[128];

	if (strlen(text) >= sizeof(buf))
		return false;
	memcpy(buf, text, strlen(text) + 1);
	*out = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "conformance"))
			*out |= PROBE_SUITE_CONFORMANCE;
		else if (!strcmp(t, "traffic"))
			*out |= PROBE_SUITE_TRAFFIC;
		else if (!strcmp(t, "hostile"))
			*out |= PROBE_SUITE_HOSTILE;
		else {
			cli_usage_error("probe", "--suite: unknown suite '%s' "
					"(conformance, traffic, hostile)",
					t);
			return false;
		}
	}
	return *out != 0;
}

/* --case: every id must name a case of the table. */
static bool check_case_ids(const char *text)
{
	char buf[512];

	if (strlen(text) >= sizeof(buf)) {
		cli_usage_error("probe", "--case: list too long");
		return false;
	}
	memcpy(buf, text, strlen(text) + 1);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned i = 0;

		while (i < probe_ncases && strcmp(probe_cases[i].id, t))
			i++;
		if (i == probe_ncases) {
			cli_usage_error("probe", "--case: no case '%s'", t);
			return false;
		}
	}
	return true;
}

static bool parse_hex(const char *text, uint64_t *out)
{
	char *end;
	const char *p = strncmp(text, "0x", 2) && strncmp(text, "0X", 2) ? text : text + 2;

	if (*p == '\0' || *p == '-' || *p == '+' || *p == ' ') {
		cli_usage_error("probe", "--features: '%s' is not a hex number", text);
		return false;
	}
	*out = strtoull(p, &end, 16);
	if (*end != '\0') {
		cli_usage_error("probe", "--features: '%s' is not a hex number", text);
		return false;
	}
	return true;
}

static const char *ring_name(const struct probe_result *r)
{
	if (r->c->layouts & PROBE_ANY)
		return "-";
	return r->layout == VL_LAYOUT_PACKED ? "packed" : "split";
}

static void print_json(const struct probe_opts *o, const struct probe_report *rep, bool ok)
{
	printf("{\"ok\": %s, \"backend\": {\"socket\": ", ok ? "true" : "false");
	cli_json_string(stdout, o->socket);
	static const char *const expects[] = {"echo", "macswap", "sink", "source"};

	printf(", \"mode\": \"%s\", \"expect\": \"%s\", \"features_offered\": \"0x%" PRIx64 "\", "
	       "\"protocol_features_offered\": \"0x%" PRIx64 "\", \"error\": ",
	       o->server ? "client" : "server", expects[o->expect], rep->offered,
	       rep->proto_offered);
	cli_json_string(stdout, rep->err);
	printf("}, \"features\": \"0x%" PRIx64 "\", \"cases\": [", rep->offered & o->mask);
	for (unsigned i = 0; i < rep->n; i++) {
		const struct probe_result *r = &rep->results[i];

		printf("%s\n  {\"id\": ", i ? "," : "");
		cli_json_string(stdout, r->c->id);
		printf(", \"suite\": \"%s\", \"ring\": \"%s\", \"rule\": ", r->c->suite, ring_name(r));
		cli_json_string(stdout, r->c->rule);
		printf(", \"description\": ");
		cli_json_string(stdout, r->c->desc);
		printf(", \"verdict\": \"%s\", \"detail\": ", probe_verdict_name(r->verdict));
		cli_json_string(stdout, r->detail);
		if (o->record_dir) {
			printf(", \"trace\": ");
			if (r->trace[0])
				cli_json_string(stdout, r->trace);
			else
				printf("null");
			printf(", \"trace_note\": ");
			cli_json_string(stdout, r->trace_note);
		}
		printf("}");
	}
	printf("\n]}\n");
}

static void print_table(const struct probe_report *rep, const char *suite, unsigned *count)
{
	bool any = false;

	for (unsigned i = 0; i < rep->n; i++) {
		const struct probe_result *r = &rep->results[i];

		if (strcmp(r->c->suite, suite))
			continue;
		if (!any)
			printf("suite %s\n  %-24s %-6s %-6s %-40s %s\n", suite, "case", "ring",
			       "verdict", "rule", "detail");
		any = true;
		count[r->verdict]++;
		printf("  %-24s %-6s %-6s %-40s %s\n", r->c->id, ring_name(r),
		       probe_verdict_name(r->verdict), r->c->rule, r->detail);
		if (r->trace[0])
			printf("  %-24s trace: %s\n", "", r->trace);
		else if (r->trace_note[0])
			printf("  %-24s no trace: %s\n", "", r->trace_note);
	}
	if (any)
		printf("\n");
}

int cmd_probe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"server", no_argument, NULL, 'S'},
		{"features", required_argument, NULL, 'f'},
		{"ring", required_argument, NULL, 'r'},
		{"suite", required_argument, NULL, 'u'},
		{"case", required_argument, NULL, 'c'},
		{"expect", required_argument, NULL, 'e'},
		{"timeout-ms", required_argument, NULL, 't'},
		{"record", required_argument, NULL, 'R'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct probe_opts o = {.mask = ~0ull, .layouts = PROBE_SPLIT | PROBE_PACKED,
			       .suites = PROBE_SUITE_CONFORMANCE | PROBE_SUITE_TRAFFIC |
					 PROBE_SUITE_HOSTILE,
			       .expect = PROBE_EXPECT_ECHO, .timeout_ms = 1000};
	bool json = false;
	uint64_t v;

	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, "h", longopts, NULL);

		if (c == -1)
			break;
		switch (c) {
		case 's': o.socket = optarg; break;
		case 'S': o.server = true; break;
		case 'f':
			if (!parse_hex(optarg, &o.mask))
				return CLI_EXIT_USAGE;
			break;
		case 'r':
			if (!strcmp(optarg, "split"))
				o.layouts = PROBE_SPLIT;
			else if (!strcmp(optarg, "packed"))
				o.layouts = PROBE_PACKED;
			else {
				cli_usage_error("probe", "--ring: '%s' is not split or packed", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'u':
			if (!parse_suites(optarg, &o.suites)) {
				cli_usage_error("probe", "--suite: '%s' names no suite", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'c':
			if (!check_case_ids(optarg))
				return CLI_EXIT_USAGE;
			o.only = optarg;
			break;
		case 'e':
			if (!strcmp(optarg, "echo"))
				o.expect = PROBE_EXPECT_ECHO;
			else if (!strcmp(optarg, "macswap"))
				o.expect = PROBE_EXPECT_MACSWAP;
			else if (!strcmp(optarg, "sink"))
				o.expect = PROBE_EXPECT_SINK;
			else if (!strcmp(optarg, "source"))
				o.expect = PROBE_EXPECT_SOURCE;
			else {
				cli_usage_error("probe", "--expect: '%s' is not echo, macswap, sink or "
						"source", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 't':
			if (!cli_parse_u64("probe", "--timeout-ms", optarg, 10, 600000, &v))
				return CLI_EXIT_USAGE;
			o.timeout_ms = (int)v;
			break;
		case 'R': o.record_dir = optarg; break;
		case 'j': json = true; break;
		case 'h': probe_usage(stdout); return CLI_EXIT_OK;
		default: probe_usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_usage_error("probe", "unexpected argument '%s' (try --help)", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (!o.socket) {
		cli_usage_error("probe", "--socket PATH is required (try --help)");
		return CLI_EXIT_USAGE;
	}
	if (o.record_dir) {
		struct stat st;

		if (stat(o.record_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			cli_usage_error("probe", "--record: '%s' is not a directory", o.record_dir);
			return CLI_EXIT_USAGE;
		}
	}
	struct probe_report rep;
	int rc = probe_run(&o, &rep);
	unsigned count[5] = {0};
	bool ok = rc == 0;

	for (unsigned i = 0; i < rep.n; i++)
		ok = ok && (rep.results[i].verdict == PROBE_PASS ||
			    rep.results[i].verdict == PROBE_NA);
	if (json) {
		print_json(&o, &rep, ok);
	} else {
		if (rc != 0)
			fprintf(stderr, "vhostlab probe: features of the back end at '%s' not "
				"learnt: %s\n", o.socket, rep.err);
		printf("back end %s: features offered 0x%" PRIx64 ", protocol features 0x%" PRIx64
		       "\n\n", o.socket, rep.offered, rep.proto_offered);
		print_table(&rep, "conformance", count);
		print_table(&rep, "traffic", count);
		print_table(&rep, "hostile", count);
		printf("%s: %u cases: %u pass, %u fail, %u wedge, %u crash, %u n/a\n",
		       ok ? "ok" : "FAIL", rep.n, count[PROBE_PASS], count[PROBE_FAIL],
		       count[PROBE_WEDGE], count[PROBE_CRASH], count[PROBE_NA]);
	}
	probe_report_free(&rep);
	return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab run`: the simulated-guest lab over a scenario matrix. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "scenario.h"
#include "vhostlab/vhostlab.h"

#define MAX_CHOICES 8u

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab run [options]\n"
		"\n"
		"Runs the simulated guest against the vhostlab core on every configuration of the\n"
		"matrix {mergeable} x {indirect} x {batch threshold} x {region granularity} and\n"
		"verifies every packet both ways: bytes and virtio-net header fields, used lengths,\n"
		"that every posted descriptor chain comes back exactly once, that no guest byte\n"
		"outside the buffers granted for writing changes, and that every packet buffer\n"
		"returns to its pool. Non-mergeable configurations use the legacy 10-byte header\n"
		"with indirect off and the VIRTIO_F_VERSION_1 12-byte header with indirect on.\n"
		"\n"
		"options:\n"
		"  --mergeable on|off|both   mergeable RX buffers (default both)\n"
		"  --indirect on|off|both    indirect descriptors (default both)\n"
		"  --batch LIST              small-copy batch thresholds in bytes, 0 = off\n"
		"                            (default 0,256)\n"
		"  --granularity LIST        guest RAM region size: coarse or a multiple of 4096\n"
		"                            (default coarse,4096)\n"
		"  --packets N               packets per direction per configuration (default 100000)\n"
		"  --sizes LIST              packet sizes in bytes, 1..65535\n"
		"                            (default 64,128,256,257,1500,9000)\n"
		"  --seed N                  seed of every random choice (default 1)\n"
		"  --queue-size N            power of two, 2..32768 (default 256)\n"
		"  --burst N                 packets per host burst, 1..256 (default 32)\n"
		"  --json                    print the result as JSON on stdout\n"
		"  --quiet                   no progress on stderr\n"
		"  -h, --help                this text\n"
		"\n"
		"exit status: 0 every configuration passed, 1 one failed (the message names the\n"
		"configuration, seed and packet), 2 usage error.\n");
}

struct run_opts {
	bool merge[2];
	uint32_t nmerge;
	bool ind[2];
	uint32_t nind;
	uint32_t batch[MAX_CHOICES];
	uint32_t nbatch;
	uint64_t gran[MAX_CHOICES];
	uint32_t ngran;
	struct lab_scenario_config base;
	bool json, quiet;
};

static bool parse_onoff(const char *opt, const char *v, bool *out, uint32_t *n)
{
	if (!strcmp(v, "on")) {
		out[0] = true;
		*n = 1;
	} else if (!strcmp(v, "off")) {
		out[0] = false;
		*n = 1;
	} else if (!strcmp(v, "both")) {
		out[0] = false;
		out[1] = true;
		*n = 2;
	} else {
		cli_usage_error("run", "%s: '%s' is not one of on, off, both", opt, v);
		return false;
	}
	return true;
}

/* Split a comma list and parse each item with parse_one; false on any error. */
static bool parse_list(const char *opt, const char *v, uint32_t max_items, uint32_t *n,
		       bool (*parse_one)(const char *opt, const char *item, void *out, uint32_t i),
		       void *out)
{
	char buf[512];

	if (strlen(v) >= sizeof(buf) || v[0] == '\0') {
		cli_usage_error("run", "%s: '%s' is not a valid list", opt, v);
		return false;
	}
	strcpy(buf, v);
	*n = 0;
	for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		if (*n == max_items) {
			cli_usage_error("run", "%s: more than %u values in '%s'", opt, max_items, v);
			return false;
		}
		if (!parse_one(opt, item, out, *n))
			return false;
		(*n)++;
	}
	if (*n == 0) {
		cli_usage_error("run", "%s: '%s' is not a valid list", opt, v);
		return false;
	}
	return true;
}

static bool one_batch(const char *opt, const char *item, void *out, uint32_t i)
{
	uint64_t v;

	if (!cli_parse_u64("run", opt, item, 0, 65536, &v))
		return false;
	((uint32_t *)out)[i] = (uint32_t)v;
	return true;
}

static bool one_size(const char *opt, const char *item, void *out, uint32_t i)
{
	uint64_t v;

	if (!cli_parse_u64("run", opt, item, 1, VL_PKT_MAX_LEN, &v))
		return false;
	((uint32_t *)out)[i] = (uint32_t)v;
	return true;
}

static bool one_gran(const char *opt, const char *item, void *out, uint32_t i)
{
	uint64_t v;

	if (!strcmp(item, "coarse")) {
		((uint64_t *)out)[i] = 0;
		return true;
	}
	if (!cli_parse_u64("run", opt, item, 1, 1ull << 30, &v))
		return false;
	if (v % 4096 != 0) {
		cli_usage_error("run", "%s: %s is not a multiple of 4096 (or 'coarse')", opt, item);
		return false;
	}
	((uint64_t *)out)[i] = v;
	return true;
}

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	enum { O_MERGE = 256, O_IND, O_BATCH, O_GRAN, O_PKTS, O_SIZES, O_SEED, O_QSIZE,
	       O_BURST, O_JSON, O_QUIET };
	static const struct option longopts[] = {
		{"mergeable", required_argument, NULL, O_MERGE},
		{"indirect", required_argument, NULL, O_IND},
		{"batch", required_argument, NULL, O_BATCH},
		{"granularity", required_argument, NULL, O_GRAN},
		{"packets", required_argument, NULL, O_PKTS},
		{"sizes", required_argument, NULL, O_SIZES},
		{"seed", required_argument, NULL, O_SEED},
		{"queue-size", required_argument, NULL, O_QSIZE},
		{"burst", required_argument, NULL, O_BURST},
		{"json", no_argument, NULL, O_JSON},
		{"quiet", no_argument, NULL, O_QUIET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t v;

	lab_scenario_defaults(&o->base);
	o->merge[0] = false, o->merge[1] = true, o->nmerge = 2;
	o->ind[0] = false, o->ind[1] = true, o->nind = 2;
	o->batch[0] = 0, o->batch[1] = VL_BATCH_THRESHOLD_DEFAULT, o->nbatch = 2;
	o->gran[0] = 0, o->gran[1] = 4096, o->ngran = 2;

	opterr = 0;
	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, "h", longopts, NULL);
		const char *opt = optind > 0 && optind <= argc ? argv[optind - 1] : "?";

		if (c == -1)
			break;
		switch (c) {
		case 'h':
			run_usage(stdout);
			return -1;
		case O_MERGE:
			if (!parse_onoff("--mergeable", optarg, o->merge, &o->nmerge))
				return CLI_EXIT_USAGE;
			break;
		case O_IND:
			if (!parse_onoff("--indirect", optarg, o->ind, &o->nind))
				return CLI_EXIT_USAGE;
			break;
		case O_BATCH:
			if (!parse_list("--batch", optarg, MAX_CHOICES, &o->nbatch, one_batch,
					o->batch))
				return CLI_EXIT_USAGE;
			break;
		case O_GRAN:
			if (!parse_list("--granularity", optarg, MAX_CHOICES, &o->ngran, one_gran,
					o->gran))
				return CLI_EXIT_USAGE;
			break;
		case O_PKTS:
			if (!cli_parse_u64("run", "--packets", optarg, 1, 1000000000, &v))
				return CLI_EXIT_USAGE;
			o->base.packets = v;
			break;
		case O_SIZES:
			if (!parse_list("--sizes", optarg, LAB_MAX_SIZES, &o->base.nsizes, one_size,
					o->base.sizes))
				return CLI_EXIT_USAGE;
			break;
		case O_SEED:
			if (!cli_parse_u64("run", "--seed", optarg, 0, UINT64_MAX, &v))
				return CLI_EXIT_USAGE;
			o->base.seed = v;
			break;
		case O_QSIZE:
			if (!cli_parse_u64("run", "--queue-size", optarg, 2, VL_QUEUE_SIZE_MAX, &v))
				return CLI_EXIT_USAGE;
			if (v & (v - 1)) {
				cli_usage_error("run", "--queue-size: %s is not a power of two",
						optarg);
				return CLI_EXIT_USAGE;
			}
			o->base.queue_size = (uint32_t)v;
			break;
		case O_BURST:
			if (!cli_parse_u64("run", "--burst", optarg, 1, 256, &v))
				return CLI_EXIT_USAGE;
			o->base.burst = (uint32_t)v;
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case ':':
			cli_usage_error("run", "option '%s' needs a value", opt);
			return CLI_EXIT_USAGE;
		default:
			cli_usage_error("run", "unknown option '%s' (try `vhostlab run --help`)",
					opt);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

struct progress_ctx {
	uint32_t index, total;
	const char *name;
	bool tty;
};

static void on_progress(void *p, uint64_t tx, uint64_t rx, uint64_t total)
{
	const struct progress_ctx *c = p;

	/* Percentages only where they overwrite each other; a log gets one line per
	 * configuration (printed when it finishes). */
	if (!c->tty)
		return;
	unsigned pct = (unsigned)((tx + rx) * 100 / (2 * total));

	fprintf(stderr, "\r[%u/%u] %s: %u%%", c->index, c->total, c->name, pct);
	fflush(stderr);
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* JSON strings: our error texts are ASCII, but escape what JSON requires anyway. */
static void json_string(FILE *out, const char *s)
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

struct config_result {
	struct lab_scenario_config cfg;
	struct lab_scenario_result res;
};

static void print_json(FILE *out, const struct run_opts *o, const struct config_result *r,
		       uint32_t n, bool ok, double wall)
{
	fprintf(out, "{\"ok\": %s, \"seed\": %" PRIu64 ", \"wall_seconds\": %.3f, \"configs\": [",
		ok ? "true" : "false", o->base.seed, wall);
	for (uint32_t i = 0; i < n; i++) {
		const struct lab_scenario_config *c = &r[i].cfg;
		const struct lab_scenario_result *s = &r[i].res;
		double pps = s->seconds > 0 ? (double)(s->tx_packets + s->rx_packets) / s->seconds
					    : 0.0;

		fprintf(out, "%s\n  {\"ring\": \"split\", \"mergeable\": %s, \"indirect\": %s, "
			"\"batch_threshold\": %u, \"granularity\": %" PRIu64 ", \"version_1\": %s, "
			"\"hdr_len\": %u, \"queue_size\": %u, \"burst\": %u, "
			"\"tx_packets\": %" PRIu64 ", \"rx_packets\": %" PRIu64 ", "
			"\"tx_bytes\": %" PRIu64 ", \"rx_bytes\": %" PRIu64 ", \"checks\": %" PRIu64
			", \"containment_scans\": %" PRIu64 ", \"seconds\": %.3f, \"pps\": %.0f, "
			"\"copies_batched\": %" PRIu64 ", \"copies_direct\": %" PRIu64 ", "
			"\"ok\": %s, \"error\": ",
			i ? "," : "", c->mergeable ? "true" : "false", c->indirect ? "true" : "false",
			c->batch_threshold, c->granularity, c->modern ? "true" : "false", s->hdr_len,
			c->queue_size, c->burst, s->tx_packets, s->rx_packets, s->tx_bytes,
			s->rx_bytes, s->checks, s->containment_scans, s->seconds, pps,
			s->tx_stats.copies_batched + s->rx_stats.copies_batched,
			s->tx_stats.copies_direct + s->rx_stats.copies_direct,
			s->ok ? "true" : "false");
		if (s->ok)
			fprintf(out, "null}");
		else
			json_string(out, s->error), fputc('}', out);
	}
	fprintf(out, "\n]}\n");
}

static void config_name(const struct lab_scenario_config *c, char *buf, size_t len)
{
	char gran[24];

	if (c->granularity)
		snprintf(gran, sizeof(gran), "%" PRIu64, c->granularity);
	else
		snprintf(gran, sizeof(gran), "coarse");
	snprintf(buf, len, "split mrg=%-3s ind=%-3s batch=%-4u gran=%-6s", c->mergeable ? "on" : "off",
		 c->indirect ? "on" : "off", c->batch_threshold, gran);
}

static void print_table(const struct config_result *r, uint32_t n, double wall)
{
	uint32_t passed = 0;
	uint64_t pkts = 0;

	printf("%-44s %3s %9s %12s %9s %12s %9s %7s %9s  %s\n", "configuration", "hdr", "tx_pkts",
	       "tx_bytes", "rx_pkts", "rx_bytes", "checks", "secs", "pkts/s", "result");
	for (uint32_t i = 0; i < n; i++) {
		const struct lab_scenario_result *s = &r[i].res;
		char name[96];
		double pps = s->seconds > 0 ? (double)(s->tx_packets + s->rx_packets) / s->seconds
					    : 0.0;

		config_name(&r[i].cfg, name, sizeof(name));
		printf("%-44s %3u %9" PRIu64 " %12" PRIu64 " %9" PRIu64 " %12" PRIu64 " %9" PRIu64
		       " %7.2f %9.0f  %s\n", name, s->hdr_len, s->tx_packets, s->tx_bytes,
		       s->rx_packets, s->rx_bytes, s->checks, s->seconds, pps,
		       s->ok ? "ok" : "FAIL");
		passed += s->ok;
		pkts += s->tx_packets + s->rx_packets;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!r[i].res.ok)
			printf("FAIL %s\n", r[i].res.error);
	printf("%u/%u configurations passed; %" PRIu64 " packets verified in %.1f s (%.0f "
	       "packets/s)\n", passed, n, pkts, wall, wall > 0 ? (double)pkts / wall : 0.0);
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o = {0};
	int rc = parse_opts(argc, argv, &o);

	if (rc != 0)
		return rc < 0 ? CLI_EXIT_OK : rc;

	uint32_t total = o.nmerge * o.nind * o.nbatch * o.ngran;
	struct config_result *results = calloc(total, sizeof(*results));

	if (!results) {
		fprintf(stderr, "vhostlab run: out of memory\n");
		return CLI_EXIT_FAIL;
	}
	struct progress_ctx pc = {.total = total, .tty = isatty(STDERR_FILENO) != 0};
	double t0 = now_seconds();
	uint32_t k = 0;
	bool all_ok = true;

	for (uint32_t m = 0; m < o.nmerge; m++)
		for (uint32_t i = 0; i < o.nind; i++)
			for (uint32_t b = 0; b < o.nbatch; b++)
				for (uint32_t g = 0; g < o.ngran; g++, k++) {
					struct lab_scenario_config *c = &results[k].cfg;
					char name[96];

					*c = o.base;
					c->mergeable = o.merge[m];
					c->indirect = o.ind[i];
					c->modern = c->mergeable || c->indirect;
					c->batch_threshold = o.batch[b];
					c->granularity = o.gran[g];
					config_name(c, name, sizeof(name));
					pc.index = k + 1;
					pc.name = name;
					if (!o.quiet) {
						c->progress = on_progress;
						c->progress_ctx = &pc;
					}
					lab_scenario_run(c, &results[k].res);
					all_ok &= results[k].res.ok;
					if (!o.quiet)
						fprintf(stderr, "%s[%u/%u] %s: %s in %.2f s\n",
							pc.tty ? "\r" : "", k + 1, total, name,
							results[k].res.ok ? "ok" : "FAIL",
							results[k].res.seconds);
				}
	double wall = now_seconds() - t0;

	if (o.json)
		print_json(stdout, &o, results, total, all_ok, wall);
	else
		print_table(results, total, wall);
	for (uint32_t i = 0; i < total; i++)
		if (!results[i].res.ok)
			fprintf(stderr, "vhostlab run: FAIL %s\n", results[i].res.error);
	free(results);
	return all_ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

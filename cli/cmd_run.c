/* SPDX-License-Identifier: MIT */
/* `vhostlab run`: the simulated-guest lab over a scenario matrix. */
#include <getopt.h>
#include <sys/stat.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "run_report.h"
#include "scenario.h"
#include "vhostlab/vhostlab.h"

#define MAX_CHOICES 8u

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab run [options]\n"
		"\n"
		"Runs the simulated guest against the vhostlab core on every configuration of the\n"
		"matrix {ring layout} x {mergeable} x {indirect} x {in-order} x {event idx} x\n"
		"{batch threshold} x {region granularity} x {queue size} and verifies every packet\n"
		"both ways: bytes and virtio-net header fields, used lengths, that every posted\n"
		"descriptor chain comes back exactly once (in order under in-order), that no guest\n"
		"byte outside the buffers granted for writing changes, that no notification the\n"
		"guest needed is missed (calls and kicks), and that every packet buffer returns to\n"
		"its pool. Split non-mergeable configurations use the legacy 10-byte header with\n"
		"indirect off; every other configuration the VIRTIO_F_VERSION_1 12-byte header.\n"
		"\n"
		"options:\n"
		"  --ring split|packed|both  virtqueue layout (default both)\n"
		"  --mergeable on|off|both   mergeable RX buffers (default both)\n"
		"  --indirect on|off|both    indirect descriptors (default both)\n"
		"  --in-order on|off|both    VIRTIO_F_IN_ORDER (default both)\n"
		"  --event-idx on|off|both   VIRTIO_RING_F_EVENT_IDX (default both)\n"
		"  --batch LIST              small-copy batch thresholds in bytes, 0 = off\n"
		"                            (default 0,256)\n"
		"  --granularity LIST        guest RAM region size: coarse or a multiple of 4096\n"
		"                            (default coarse,4096)\n"
		"  --queue-size LIST         entries per queue, 2..32768; split needs powers of two,\n"
		"                            packed takes any size (default 256)\n"
		"  --zero-copy on|off|both|mixed  zero-copy dequeue; the host holds some packets\n"
		"                            and frees them in random order (default mixed)\n"
		"  --dirty-log on|off|both|mixed  dirty-page logging, checked page by page\n"
		"                            (default on: every configuration is checked)\n"
		"  --evict on|off|both|mixed  evict-after-read on the TX queue: one guest line\n"
		"                            evicted per dequeue copy, checked (default mixed; off\n"
		"                            where the CPU has no CLFLUSHOPT, and on or both is\n"
		"                            then a usage error)\n"
		"  --faults LIST|all|mixed   allocation faults: none, nth (every 7th allocation\n"
		"                            fails), prob (1 in 10), scarce (a nearly empty pool)\n"
		"                            (default mixed)\n"
		"  --offload LIST|mixed      offload features the driver negotiates: none, csum\n"
		"                            (CSUM, GUEST_CSUM), tso (+ HOST_ and GUEST_TSO4/6,\n"
		"                            HOST_ and GUEST_ECN), all (+ HOST_USO, GUEST_USO4/6).\n"
		"                            The guest sends checksum-offload and GSO frames (up to\n"
		"                            64 KiB) as they allow; the host segments and completes\n"
		"                            them with the core's fallbacks and compares each frame\n"
		"                            with the model's, and sends the guest what a side\n"
		"                            offloading one step more sends, made to fit where the\n"
		"                            driver cannot take it (default mixed)\n"
		"  --stats                   also print each queue's statistics\n"
		"  --packets N               packets per direction per configuration (default 100000)\n"
		"  --sizes LIST              packet sizes in bytes, 1..65535\n"
		"                            (default 64,128,256,257,1500,9000)\n"
		"  --seed N                  seed of every random choice (default 1)\n"
		"  --burst N                 packets per host burst, 1..256 (default 32)\n"
		"  --record-failures DIR     write a trace of every failing configuration to DIR\n"
		"                            (run again with the recorder up to the failure) and\n"
		"                            replay it: `vhostlab replay DIR/FILE` reproduces it\n"
		"  --record DIR              the same for every configuration (use few --packets:\n"
		"                            a trace holds every byte the guest wrote)\n"
		"  --json                    print the result as JSON on stdout\n"
		"  --quiet                   no progress on stderr\n"
		"  -h, --help                this text\n"
		"\n"
		"mixed: each configuration gets one value, chosen from its position in the matrix so\n"
		"that every value meets every other dimension's values; the matrix does not grow.\n"
		"The default matrix is 128 configurations of 100000 packets each way.\n"
		"exit status: 0 every configuration passed, 1 one failed (the message names the\n"
		"configuration, seed and packet), 2 usage error.\n");
}

/* An on/off dimension of the matrix: one or both values. */
struct choice {
	bool v[2];
	uint32_t n;
};

/* An extra dimension that can also be "mixed" into the matrix without multiplying it. */
struct extra {
	uint32_t v[LAB_FAULTS__COUNT];
	uint32_t n;
	bool mixed;
	uint32_t nvalues;     /* values "mixed" spreads over */
};

struct run_opts {
	struct extra zc, log, evict, faults, offload;
	bool stats;
	bool packed[2];
	uint32_t nring;
	struct choice merge, ind, order, evt;
	uint32_t batch[MAX_CHOICES];
	uint32_t nbatch;
	uint64_t gran[MAX_CHOICES];
	uint32_t ngran;
	uint32_t qsize[MAX_CHOICES];
	uint32_t nqsize;
	struct lab_scenario_config base;
	bool json, quiet;
	const char *record_dir;     /* --record / --record-failures */
	bool record_all;
};

/* The trace directory must exist and be writable (created if missing, one level). */
static bool record_dir_ok(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
		cli_usage_error("run", "cannot create the trace directory '%s': %s", dir,
				strerror(errno));
		return false;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) != 0) {
		cli_usage_error("run", "'%s' is not a writable directory", dir);
		return false;
	}
	return true;
}

static bool parse_onoff(const char *opt, const char *v, struct choice *c)
{
	if (!strcmp(v, "on")) {
		c->v[0] = true;
		c->n = 1;
	} else if (!strcmp(v, "off")) {
		c->v[0] = false;
		c->n = 1;
	} else if (!strcmp(v, "both")) {
		c->v[0] = false;
		c->v[1] = true;
		c->n = 2;
	} else {
		cli_usage_error("run", "%s: '%s' is not one of on, off, both", opt, v);
		return false;
	}
	return true;
}

static bool parse_extra_onoff(const char *opt, const char *v, struct extra *x)
{
	struct choice c;

	if (!strcmp(v, "mixed")) {
		x->mixed = true;
		return true;
	}
	if (!parse_onoff(opt, v, &c))
		return false;
	x->mixed = false;
	x->n = c.n;
	x->v[0] = c.v[0];
	x->v[1] = c.v[1];
	return true;
}

static bool one_fault(const char *opt, const char *item, void *out, uint32_t i)
{
	for (uint32_t f = 0; f < LAB_FAULTS__COUNT; f++) {
		if (!strcmp(item, lab_faults_name((enum lab_faults)f))) {
			((uint32_t *)out)[i] = f;
			return true;
		}
	}
	cli_usage_error("run", "%s: '%s' is not one of none, nth, prob, scarce, all, mixed", opt,
			item);
	return false;
}

static bool one_offload(const char *opt, const char *item, void *out, uint32_t i)
{
	for (uint32_t m = 0; m < LAB_OFFLOAD__COUNT; m++) {
		if (!strcmp(item, lab_offload_name((enum lab_offload)m))) {
			((uint32_t *)out)[i] = m;
			return true;
		}
	}
	cli_usage_error("run", "%s: '%s' is not one of none, csum, tso, all, mixed", opt, item);
	return false;
}

static bool parse_ring(const char *v, struct run_opts *o)
{
	if (!strcmp(v, "split")) {
		o->packed[0] = false;
		o->nring = 1;
	} else if (!strcmp(v, "packed")) {
		o->packed[0] = true;
		o->nring = 1;
	} else if (!strcmp(v, "both")) {
		o->packed[0] = false;
		o->packed[1] = true;
		o->nring = 2;
	} else {
		cli_usage_error("run", "--ring: '%s' is not one of split, packed, both", v);
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

static bool one_u32(const char *opt, const char *item, void *out, uint32_t i, uint64_t min,
		    uint64_t max)
{
	uint64_t v;

	if (!cli_parse_u64("run", opt, item, min, max, &v))
		return false;
	((uint32_t *)out)[i] = (uint32_t)v;
	return true;
}

static bool one_batch(const char *opt, const char *item, void *out, uint32_t i)
{
	return one_u32(opt, item, out, i, 0, 65536);
}

static bool one_size(const char *opt, const char *item, void *out, uint32_t i)
{
	return one_u32(opt, item, out, i, 1, VL_PKT_MAX_LEN);
}

static bool one_qsize(const char *opt, const char *item, void *out, uint32_t i)
{
	return one_u32(opt, item, out, i, 2, VL_QUEUE_SIZE_MAX);
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

/* Queue sizes that are not powers of two exist only for packed rings. */
static bool check_qsizes(const struct run_opts *o)
{
	bool split = !o->packed[0] || o->nring == 2;

	for (uint32_t i = 0; i < o->nqsize && split; i++) {
		uint32_t q = o->qsize[i];

		if (q & (q - 1)) {
			cli_usage_error("run", "--queue-size: %u is not a power of two, which split "
					"rings need (add --ring packed)", q);
			return false;
		}
	}
	return true;
}

/* Evict-after-read needs CLFLUSHOPT. Without it, mixed runs every configuration with it
 * off (said on stderr: a run that covers less must not look like one that covers all), and
 * asking for it explicitly is a usage error. */
static bool check_evict(struct run_opts *o)
{
	if (vl_vq_evict_supported())
		return true;
	if (!o->evict.mixed && (o->evict.v[0] || (o->evict.n > 1 && o->evict.v[1]))) {
		cli_usage_error("run", "--evict on: this CPU has no CLFLUSHOPT, so evict-after-read "
				"cannot run here (use --evict off or mixed)");
		return false;
	}
	if (o->evict.mixed && !o->quiet)
		fprintf(stderr, "vhostlab run: this CPU has no CLFLUSHOPT: every configuration "
			"runs with evict-after-read off\n");
	o->evict = (struct extra){.n = 1};
	return true;
}

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	enum { O_RING = 256, O_MERGE, O_IND, O_ORDER, O_EVT, O_BATCH, O_GRAN, O_PKTS, O_SIZES,
	       O_SEED, O_QSIZE, O_BURST, O_JSON, O_QUIET, O_ZC, O_LOG, O_FAULTS, O_STATS,
	       O_RECF, O_REC, O_EVICT, O_OFFLOAD };
	static const struct option longopts[] = {
		{"ring", required_argument, NULL, O_RING},
		{"mergeable", required_argument, NULL, O_MERGE},
		{"indirect", required_argument, NULL, O_IND},
		{"in-order", required_argument, NULL, O_ORDER},
		{"event-idx", required_argument, NULL, O_EVT},
		{"batch", required_argument, NULL, O_BATCH},
		{"granularity", required_argument, NULL, O_GRAN},
		{"packets", required_argument, NULL, O_PKTS},
		{"sizes", required_argument, NULL, O_SIZES},
		{"seed", required_argument, NULL, O_SEED},
		{"queue-size", required_argument, NULL, O_QSIZE},
		{"burst", required_argument, NULL, O_BURST},
		{"zero-copy", required_argument, NULL, O_ZC},
		{"dirty-log", required_argument, NULL, O_LOG},
		{"evict", required_argument, NULL, O_EVICT},
		{"faults", required_argument, NULL, O_FAULTS},
		{"offload", required_argument, NULL, O_OFFLOAD},
		{"stats", no_argument, NULL, O_STATS},
		{"record-failures", required_argument, NULL, O_RECF},
		{"record", required_argument, NULL, O_REC},
		{"json", no_argument, NULL, O_JSON},
		{"quiet", no_argument, NULL, O_QUIET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const struct choice both = {{false, true}, 2};
	uint64_t v;

	lab_scenario_defaults(&o->base);
	o->packed[0] = false, o->packed[1] = true, o->nring = 2;
	o->merge = o->ind = o->order = o->evt = both;
	o->batch[0] = 0, o->batch[1] = VL_BATCH_THRESHOLD_DEFAULT, o->nbatch = 2;
	o->gran[0] = 0, o->gran[1] = 4096, o->ngran = 2;
	o->qsize[0] = 256, o->nqsize = 1;
	o->zc = (struct extra){.mixed = true, .nvalues = 2};
	/* The dirty-log oracle runs in every configuration: each byte the core writes to guest
	 * memory is checked against the log (scenario.c dirty_log_check). */
	o->log = (struct extra){.v = {1}, .n = 1, .nvalues = 2};
	o->evict = (struct extra){.mixed = true, .nvalues = 2};
	o->faults = (struct extra){.mixed = true, .nvalues = LAB_FAULTS__COUNT};
	o->offload = (struct extra){.mixed = true, .nvalues = LAB_OFFLOAD__COUNT};

	opterr = 0;
	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, "h", longopts, NULL);
		const char *opt = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
		bool ok = true;

		if (c == -1)
			break;
		switch (c) {
		case 'h':
			run_usage(stdout);
			return -1;
		case O_RING:
			ok = parse_ring(optarg, o);
			break;
		case O_MERGE:
			ok = parse_onoff("--mergeable", optarg, &o->merge);
			break;
		case O_IND:
			ok = parse_onoff("--indirect", optarg, &o->ind);
			break;
		case O_ORDER:
			ok = parse_onoff("--in-order", optarg, &o->order);
			break;
		case O_EVT:
			ok = parse_onoff("--event-idx", optarg, &o->evt);
			break;
		case O_BATCH:
			ok = parse_list("--batch", optarg, MAX_CHOICES, &o->nbatch, one_batch, o->batch);
			break;
		case O_GRAN:
			ok = parse_list("--granularity", optarg, MAX_CHOICES, &o->ngran, one_gran,
					o->gran);
			break;
		case O_QSIZE:
			ok = parse_list("--queue-size", optarg, MAX_CHOICES, &o->nqsize, one_qsize,
					o->qsize);
			break;
		case O_PKTS:
			ok = cli_parse_u64("run", "--packets", optarg, 1, 1000000000, &v);
			o->base.packets = v;
			break;
		case O_SIZES:
			ok = parse_list("--sizes", optarg, LAB_MAX_SIZES, &o->base.nsizes, one_size,
					o->base.sizes);
			break;
		case O_SEED:
			ok = cli_parse_u64("run", "--seed", optarg, 0, UINT64_MAX, &v);
			o->base.seed = v;
			break;
		case O_BURST:
			ok = cli_parse_u64("run", "--burst", optarg, 1, 256, &v);
			o->base.burst = (uint32_t)v;
			break;
		case O_ZC:
			ok = parse_extra_onoff("--zero-copy", optarg, &o->zc);
			break;
		case O_LOG:
			ok = parse_extra_onoff("--dirty-log", optarg, &o->log);
			break;
		case O_EVICT:
			ok = parse_extra_onoff("--evict", optarg, &o->evict);
			break;
		case O_FAULTS:
			o->faults.mixed = !strcmp(optarg, "mixed");
			if (!strcmp(optarg, "all")) {
				for (uint32_t f = 0; f < LAB_FAULTS__COUNT; f++)
					o->faults.v[f] = f;
				o->faults.n = LAB_FAULTS__COUNT;
			} else if (!o->faults.mixed) {
				ok = parse_list("--faults", optarg, LAB_FAULTS__COUNT, &o->faults.n,
						one_fault, o->faults.v);
			}
			break;
		case O_OFFLOAD:
			o->offload.mixed = !strcmp(optarg, "mixed");
			if (!o->offload.mixed)
				ok = parse_list("--offload", optarg, LAB_OFFLOAD__COUNT,
						&o->offload.n, one_offload, o->offload.v);
			break;
		case O_STATS:
			o->stats = true;
			break;
		case O_RECF:
		case O_REC:
			o->record_dir = optarg;
			o->record_all = c == O_REC;
			ok = record_dir_ok(optarg);
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
		if (!ok)
			return CLI_EXIT_USAGE;
	}
	if (optind < argc) {
		cli_usage_error("run", "unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	return check_qsizes(o) && check_evict(o) ? 0 : CLI_EXIT_USAGE;
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

static uint32_t parity(uint32_t v)
{
	return (uint32_t)__builtin_popcount(v) & 1u;
}

/* The value an extra dimension takes in configuration k: its explicit values cycle with the
 * matrix (they multiply it, see build_matrix); "mixed" picks by parities of k's bits, so
 * each value meets each value of every other dimension about equally often. */
static uint32_t extra_value(const struct extra *x, uint32_t k, uint32_t salt, uint32_t pick)
{
	if (!x->mixed)
		return x->v[pick];
	if (x->nvalues == 2)
		return parity(k & salt);
	return (parity(k & salt) << 1 | parity(k & (salt >> 8))) % x->nvalues;
}

static uint32_t extra_count(const struct extra *x)
{
	return x->mixed ? 1 : x->n;
}

/* Every combination of the chosen values, in a fixed order. */
static uint32_t build_matrix(const struct run_opts *o, struct config_result *out)
{
	uint32_t k = 0;

	for (uint32_t L = 0; L < o->nring; L++)
	for (uint32_t m = 0; m < o->merge.n; m++)
	for (uint32_t i = 0; i < o->ind.n; i++)
	for (uint32_t io = 0; io < o->order.n; io++)
	for (uint32_t e = 0; e < o->evt.n; e++)
	for (uint32_t b = 0; b < o->nbatch; b++)
	for (uint32_t g = 0; g < o->ngran; g++)
	for (uint32_t q = 0; q < o->nqsize; q++)
	for (uint32_t z = 0; z < extra_count(&o->zc); z++)
	for (uint32_t d = 0; d < extra_count(&o->log); d++)
	for (uint32_t v = 0; v < extra_count(&o->evict); v++)
	for (uint32_t f = 0; f < extra_count(&o->faults); f++)
	for (uint32_t x = 0; x < extra_count(&o->offload); x++) {
		struct lab_scenario_config *c = &out[k].cfg;

		*c = o->base;
		c->layout = o->packed[L] ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
		c->mergeable = o->merge.v[m];
		c->indirect = o->ind.v[i];
		c->in_order = o->order.v[io];
		c->event_idx = o->evt.v[e];
		c->modern = c->mergeable || c->indirect;
		c->batch_threshold = o->batch[b];
		c->granularity = o->gran[g];
		c->queue_size = o->qsize[q];
		c->zero_copy = extra_value(&o->zc, k, 0x5a, z) != 0;
		c->dirty_log = extra_value(&o->log, k, 0x33, d) != 0;
		/* Layout, in-order, mergeable and event idx: the paths a copy can take. */
		c->evict = extra_value(&o->evict, k, 0x6c, v) != 0;
		c->faults = (enum lab_faults)extra_value(&o->faults, k, 0x0f55, f);
		/* Parities of batch, event idx and in-order, and of everything but granularity
		 * and batch: each offload mode meets every value of each other dimension, every
		 * ring x mergeable, ring x indirect and ring x zero-copy pair, and every fault mode
		 * equally often. */
		c->offload = (enum lab_offload)extra_value(&o->offload, k, 0x0e7c, x);
		k++;
	}
	return k;
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o = {0};
	int rc = parse_opts(argc, argv, &o);

	if (rc != 0)
		return rc < 0 ? CLI_EXIT_OK : rc;

	uint32_t total = o.nring * o.merge.n * o.ind.n * o.order.n * o.evt.n * o.nbatch * o.ngran *
			 o.nqsize * extra_count(&o.zc) * extra_count(&o.log) * extra_count(&o.evict) *
			 extra_count(&o.faults) * extra_count(&o.offload);
	struct config_result *results = calloc(total, sizeof(*results));

	if (!results) {
		fprintf(stderr, "vhostlab run: out of memory\n");
		return CLI_EXIT_FAIL;
	}
	build_matrix(&o, results);

	struct progress_ctx pc = {.total = total, .tty = isatty(STDERR_FILENO) != 0};
	double t0 = now_seconds();
	bool all_ok = true;

	for (uint32_t k = 0; k < total; k++) {
		struct lab_scenario_config *c = &results[k].cfg;
		char name[128];

		run_config_name(c, name, sizeof(name));
		pc.index = k + 1;
		pc.name = name;
		if (!o.quiet) {
			c->progress = on_progress;
			c->progress_ctx = &pc;
		}
		lab_scenario_run(c, &results[k].res);
		c->progress = NULL;
		all_ok &= results[k].res.ok;
		if (o.record_dir && (o.record_all || !results[k].res.ok)) {
			struct run_recording *rec = &results[k].rec;

			if (!o.quiet)
				fprintf(stderr, "%s[%u/%u] %s: recording a trace...", pc.tty ? "\r" : "",
					k + 1, total, name);
			run_record(o.record_dir, k, c, name, rec);
			if (!o.quiet)
				fprintf(stderr, " done\n");
			if (rec->error[0])
				fprintf(stderr, "vhostlab run: recording %s failed: %s\n", name,
					rec->error);
			else if (!o.quiet || !results[k].res.ok)
				fprintf(stderr, "vhostlab run: trace %s (%u statements): replay %s%s%s\n",
					rec->path, rec->statements, rec->replay,
					rec->signature[0] ? ", " : "", rec->signature);
		}
		if (!o.quiet)
			fprintf(stderr, "%s[%u/%u] %s: %s in %.2f s\n", pc.tty ? "\r" : "", k + 1,
				total, name, results[k].res.ok ? "ok" : "FAIL",
				results[k].res.seconds);
	}
	double wall = now_seconds() - t0;

	if (o.json) {
		run_print_json(stdout, o.base.seed, results, total, all_ok, wall, o.stats);
	} else {
		run_print_table(stdout, results, total, wall);
		if (o.stats)
			run_print_stats(stdout, results, total);
	}
	for (uint32_t i = 0; i < total; i++)
		if (!results[i].res.ok)
			fprintf(stderr, "vhostlab run: FAIL %s\n", results[i].res.error);
	free(results);
	return all_ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

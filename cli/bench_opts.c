/* SPDX-License-Identifier: MIT */
/* vhostlab bench: command line, value lists and the cartesian product of cells. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#define CMD "bench"
#define BENCH_MAX_SIZE 9216u /* jumbo frames; the guest's buffers are sized for this */

static void bench_usage(FILE *out)
{
	fprintf(out,
		"usage: vhostlab bench [options]\n"
		"\n"
		"Measures the vhostlab core in-process against a lean simulated guest: the guest\n"
		"posts descriptor chains, the core moves packets, the guest harvests and checks\n"
		"them (count, lengths, sequence numbers, and the bytes of every 16th packet).\n"
		"Only the core's calls are timed; the guest's own cost is reported beside it.\n"
		"Every list option takes comma-separated values; the cells measured are the\n"
		"cartesian product. Repetitions are interleaved: rep 1 of every cell, then rep 2.\n"
		"\n"
		"cells:\n"
		"  --direction LIST   dequeue (guest TX -> host), enqueue (host -> guest RX), both\n"
		"                     (one cell doing both per iteration) (default dequeue,enqueue)\n"
		"  --layout LIST      split, packed (default split,packed)\n"
		"  --sizes LIST       packet bytes without the virtio-net header, 1..9216\n"
		"                     (default 64,1518; the issue's list: 64,128,256,512,1024,1518,9000)\n"
		"  --mergeable LIST   on, off: VIRTIO_NET_F_MRG_RXBUF (default off)\n"
		"  --in-order LIST    on, off: VIRTIO_F_IN_ORDER (default off)\n"
		"  --batch LIST       small-copy batch threshold in bytes, 0 = off, all = every copy\n"
		"                     batched whatever its size (default 256)\n"
		"  --zero-copy LIST   on, off: zero-copy dequeue, dequeue only (default off)\n"
		"  --alloc LIST       available, burst: dequeue allocation policy (default available)\n"
		"  --fill LIST        chains the guest makes available before each core call: full\n"
		"                     (a burst), one (one packet's), empty (none) (default full)\n"
		"  --csum LIST        on, off: VIRTIO_NET_F_CSUM, with which dequeue reads and checks\n"
		"                     every TX header (off: it is not read); enqueue cells keep the\n"
		"                     first value (default off)\n"
		"  --pieces LIST      descriptors per TX chain, 1..%u: the guest's buffer cut into\n"
		"                     that many, the header in the first (a Linux guest sends its\n"
		"                     headers and its data apart); enqueue cells keep the first\n"
		"                     value (default 1)\n"
		"  --indirect LIST    on, off: each TX chain as one ring descriptor pointing at a\n"
		"                     table of its pieces (VIRTIO_RING_F_INDIRECT_DESC: how Linux\n"
		"                     and DPDK's virtio-user send several pieces); enqueue cells\n"
		"                     keep the first value (default off)\n"
		"  --regions LIST     guest RAM regions the buffers are spread over, 1..%u;\n"
		"                     the memory table holds one more (the rings'). Above 1,\n"
		"                     consecutive buffers lie in different regions, so every\n"
		"                     translation searches the table: QEMU with hot-plugged\n"
		"                     DIMMs fills up to 509 slots (default 1)\n"
		"run:\n"
		"  --burst N          packets per core call, 1..256 (default 32)\n"
		"  --queue-size N     entries per queue, burst..32768, a power of two (default 256)\n"
		"  --reps N           interleaved repetitions per cell, 1..%u (default 5)\n"
		"  --seconds S        length of one repetition (default 0.2)\n"
		"  --packets N        packets per repetition instead of a time (empty fill: calls\n"
		"                     = N / burst)\n"
		"  --threads N        run each repetition on N threads at once, 1..%u, each with\n"
		"                     its own guest, queues and pool; times and counts are summed\n"
		"                     over the threads, and wall_mpps (JSON; the table's 'wall\n"
		"                     Mpps') is their packets per second together, guest work\n"
		"                     included: compare --threads 2 with 1 (default 1)\n"
		"  --quick            smoke run: 3 repetitions of 20000 packets (under a minute\n"
		"                     with the default cells)\n"
		"  --instructions     also count the core's instructions per packet: each cell runs\n"
		"                     again under valgrind --tool=callgrind, collecting only inside\n"
		"                     the core's calls (deterministic; 20000 packets unless --packets)\n"
		"  --profile DIR      --instructions, and keep each cell's callgrind output as\n"
		"                     DIR/CELL.callgrind (CELL: the cell's name, '/' as '_'; DIR is\n"
		"                     made if missing) for callgrind_annotate: the core's cost by\n"
		"                     function (by source line in a build with -DCMAKE_C_FLAGS=-g)\n"
		"output:\n"
		"  --json             JSON on stdout (fields: docs/cli.md)\n"
		"  --quiet            no progress on stderr\n"
		"  -h, --help         this text\n"
		"\n"
		"exit status: 0 measured, 1 the core misbehaved (the message names the cell and\n"
		"packet) or a measurement failed, 2 usage error.\n",
		BENCH_MAX_PIECES, BENCH_MAX_REGIONS, BENCH_MAX_REPS, BENCH_MAX_THREADS);
	fprintf(out, "\ncore: %s\n", cli_lab_core_note() ?
		"the lab build (guest-load hooks; slower), which this program (vhostlab) runs\n"
		"on: its numbers are the lab's, not production's. vhostlab-fast bench measures\n"
		"the production core (scripts/perf_gate.py does)." :
		"the production core (libvhostlab's objects, no lab hooks): this is\n"
		"vhostlab-fast, the production program. vhostlab bench measures the lab build.");
}

const char *bench_dir_name(enum bench_dir d)
{
	static const char *const names[] = {"dequeue", "enqueue", "both"};

	return d < BENCH_DIR__COUNT ? names[d] : "?";
}

const char *bench_fill_name(enum bench_fill f)
{
	static const char *const names[] = {"full", "one", "empty"};

	return f < BENCH_FILL__COUNT ? names[f] : "?";
}

const char *bench_layout_name(enum vl_layout l)
{
	return l == VL_LAYOUT_PACKED ? "packed" : "split";
}

const char *bench_alloc_name(enum vl_alloc_policy a)
{
	return a == VL_ALLOC_BURST ? "burst" : "available";
}

void bench_cell_name(const struct bench_cell *c, char *buf, size_t len)
{
	char batch[16];

	if (c->batch == BENCH_BATCH_ALL)
		snprintf(batch, sizeof(batch), "all");
	else
		snprintf(batch, sizeof(batch), "%u", c->batch);
	snprintf(buf, len, "%s/%s/%u/mrg=%s/io=%s/batch=%s/zc=%s/alloc=%s/fill=%s",
		 bench_dir_name(c->dir), bench_layout_name(c->layout), c->size,
		 c->mergeable ? "on" : "off", c->in_order ? "on" : "off", batch,
		 c->zero_copy ? "on" : "off", bench_alloc_name(c->alloc), bench_fill_name(c->fill));
	if (c->csum) {
		size_t used = strlen(buf);

		if (used < len)
			snprintf(buf + used, len - used, "/csum=on");
	}
	if (c->pieces > 1) {
		size_t used = strlen(buf);

		if (used < len)
			snprintf(buf + used, len - used, "/pieces=%u", c->pieces);
	}
	if (c->indirect) {
		size_t used = strlen(buf);

		if (used < len)
			snprintf(buf + used, len - used, "/indirect=on");
	}
	if (c->regions > 1) {
		size_t used = strlen(buf);

		if (used < len)
			snprintf(buf + used, len - used, "/regions=%u", c->regions);
	}
}

/* One list option: up to BENCH_MAX_LIST values, each parsed by one(). */
struct list {
	uint32_t v[BENCH_MAX_LIST];
	uint32_t n;
};

typedef bool (*item_fn)(const char *opt, const char *item, uint32_t *out);

static bool parse_list(const char *opt, const char *text, item_fn one, struct list *l)
{
	char buf[512];
	size_t len = strlen(text);

	if (len == 0 || len >= sizeof(buf)) {
		cli_usage_error(CMD, "%s: '%s' is not a list of values", opt, text);
		return false;
	}
	memcpy(buf, text, len + 1);
	l->n = 0;
	for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		if (l->n == BENCH_MAX_LIST) {
			cli_usage_error(CMD, "%s: more than %u values in '%s'", opt,
					BENCH_MAX_LIST, text);
			return false;
		}
		uint32_t v;

		if (!one(opt, item, &v))
			return false;
		for (uint32_t i = 0; i < l->n; i++)
			if (l->v[i] == v) {
				cli_usage_error(CMD, "%s: '%s' appears twice in '%s'", opt, item,
						text);
				return false;
			}
		l->v[l->n++] = v;
	}
	if (l->n == 0) {
		cli_usage_error(CMD, "%s: '%s' is not a list of values", opt, text);
		return false;
	}
	return true;
}

/* A word out of a fixed set; the error names the value and the choices. */
static bool one_word(const char *opt, const char *item, const char *const *words, uint32_t n,
		     uint32_t *out)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(item, words[i])) {
			*out = i;
			return true;
		}
	char choices[128] = "";

	for (uint32_t i = 0; i < n; i++) {
		strncat(choices, words[i], sizeof(choices) - strlen(choices) - 1);
		if (i + 1 < n)
			strncat(choices, ", ", sizeof(choices) - strlen(choices) - 1);
	}
	cli_usage_error(CMD, "%s: unknown value '%s' (choose from %s)", opt, item, choices);
	return false;
}

static bool one_dir(const char *opt, const char *item, uint32_t *out)
{
	static const char *const w[] = {"dequeue", "enqueue", "both"};

	return one_word(opt, item, w, 3, out);
}

static bool one_layout(const char *opt, const char *item, uint32_t *out)
{
	static const char *const w[] = {"split", "packed"};

	return one_word(opt, item, w, 2, out);
}

static bool one_onoff(const char *opt, const char *item, uint32_t *out)
{
	static const char *const w[] = {"off", "on"};

	return one_word(opt, item, w, 2, out);
}

static bool one_alloc(const char *opt, const char *item, uint32_t *out)
{
	static const char *const w[] = {"available", "burst"};

	return one_word(opt, item, w, 2, out);
}

static bool one_fill(const char *opt, const char *item, uint32_t *out)
{
	static const char *const w[] = {"full", "one", "empty"};

	return one_word(opt, item, w, 3, out);
}

static bool one_size(const char *opt, const char *item, uint32_t *out)
{
	uint64_t v;

	if (!cli_parse_u64(CMD, opt, item, 1, BENCH_MAX_SIZE, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool one_pieces(const char *opt, const char *item, uint32_t *out)
{
	uint64_t v;

	if (!cli_parse_u64(CMD, opt, item, 1, BENCH_MAX_PIECES, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool one_regions(const char *opt, const char *item, uint32_t *out)
{
	uint64_t v;

	if (!cli_parse_u64(CMD, opt, item, 1, BENCH_MAX_REGIONS, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool one_batch(const char *opt, const char *item, uint32_t *out)
{
	uint64_t v;

	if (!strcmp(item, "all")) {
		*out = BENCH_BATCH_ALL;
		return true;
	}
	if (!cli_parse_u64(CMD, opt, item, 0, UINT32_MAX - 1, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool parse_seconds(const char *opt, const char *text, double *out)
{
	char *end;
	double v = strtod(text, &end);

	if (end == text || *end != '\0' || !(v >= 0.001 && v <= 3600)) {
		cli_usage_error(CMD, "%s: '%s' is not a number of seconds in [0.001, 3600]", opt,
				text);
		return false;
	}
	*out = v;
	return true;
}

static bool list_has(const struct list *l, uint32_t v)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->v[i] == v)
			return true;
	return false;
}

struct dims {
	struct list dir, layout, size, mrg, order, batch, zc, alloc, fill, csum, pieces, indirect,
		regions;
};

/* Options that do not apply to a direction would only repeat a cell: enqueue cells have no
 * allocation policy, read no TX header (CSUM) and post no TX chains (pieces, indirect), so
 * they keep the first value listed of each, and are measured once. */
static bool add_cell(struct bench_opts *o, const struct bench_cell *c)
{
	char a[160], b[160];

	bench_cell_name(c, a, sizeof(a));
	for (uint32_t i = 0; i < o->ncells; i++) {
		bench_cell_name(&o->cells[i], b, sizeof(b));
		if (!strcmp(a, b))
			return true;
	}
	if (o->ncells == BENCH_MAX_CELLS) {
		cli_usage_error(CMD, "the options make more than %u cells", BENCH_MAX_CELLS);
		return false;
	}
	o->cells[o->ncells++] = *c;
	return true;
}

static bool build_cells(struct bench_opts *o, const struct dims *d)
{
	uint32_t idx[13] = {0};
	const struct list *dims[13] = {&d->dir,   &d->layout, &d->size,   &d->mrg,
				       &d->order, &d->batch,  &d->zc,     &d->alloc,
				       &d->fill,  &d->csum,   &d->pieces, &d->indirect,
				       &d->regions};

	o->ncells = 0;
	for (;;) {
		struct bench_cell c = {
			.dir = (enum bench_dir)d->dir.v[idx[0]],
			.layout = (enum vl_layout)d->layout.v[idx[1]],
			.size = d->size.v[idx[2]],
			.mergeable = d->mrg.v[idx[3]] != 0,
			.in_order = d->order.v[idx[4]] != 0,
			.batch = d->batch.v[idx[5]],
			.zero_copy = d->zc.v[idx[6]] != 0,
			.alloc = (enum vl_alloc_policy)d->alloc.v[idx[7]],
			.fill = (enum bench_fill)d->fill.v[idx[8]],
			.csum = d->csum.v[idx[9]] != 0,
			.pieces = d->pieces.v[idx[10]],
			.indirect = d->indirect.v[idx[11]] != 0,
			.regions = d->regions.v[idx[12]],
		};

		if (c.dir == BENCH_ENQUEUE) {
			c.alloc = (enum vl_alloc_policy)d->alloc.v[0];
			c.csum = d->csum.v[0] != 0;
			c.pieces = d->pieces.v[0];
			c.indirect = d->indirect.v[0] != 0;
		}
		if (!add_cell(o, &c))
			return false;
		/* Odometer over the thirteen dimensions, the last one fastest. */
		int k = 12;

		while (k >= 0 && ++idx[k] == dims[k]->n)
			idx[k--] = 0;
		if (k < 0)
			return true;
	}
}

static bool check_combinations(const struct bench_opts *o, const struct dims *d)
{
	if (list_has(&d->zc, 1) && (list_has(&d->dir, BENCH_ENQUEUE) ||
				    list_has(&d->dir, BENCH_BOTH))) {
		cli_usage_error(CMD,
				"--zero-copy on: zero-copy is a dequeue technique; --direction "
				"must be dequeue only (it includes %s)",
				list_has(&d->dir, BENCH_ENQUEUE) ? "enqueue" : "both");
		return false;
	}
	if (o->burst > o->queue_size) {
		cli_usage_error(CMD, "--burst %u is larger than --queue-size %u", o->burst,
				o->queue_size);
		return false;
	}
	uint32_t most_pieces = 0, least_size = UINT32_MAX;

	for (uint32_t i = 0; i < d->pieces.n; i++)
		most_pieces = d->pieces.v[i] > most_pieces ? d->pieces.v[i] : most_pieces;
	for (uint32_t i = 0; i < d->size.n; i++)
		least_size = d->size.v[i] < least_size ? d->size.v[i] : least_size;
	if (most_pieces > least_size) {
		cli_usage_error(CMD, "--pieces %u is more than the smallest of --sizes, %u: every "
				"piece needs a payload byte", most_pieces, least_size);
		return false;
	}
	/* A direct chain takes a ring descriptor per piece; an indirect one takes one. */
	if (list_has(&d->indirect, 0) && (uint64_t)most_pieces * o->burst > o->queue_size) {
		cli_usage_error(CMD, "--pieces %u x --burst %u descriptors do not fit --queue-size %u",
				most_pieces, o->burst, o->queue_size);
		return false;
	}
	/* The indirect tables live after the buffers; spread over regions, they would add
	 * regions of their own and the table would hold more than was asked for. */
	for (uint32_t i = 0; i < d->regions.n; i++)
		if (d->regions.v[i] > 1 && list_has(&d->indirect, 1)) {
			cli_usage_error(CMD, "--regions %u with --indirect on: the indirect cells "
					"keep their tables in one region; measure them with "
					"--regions 1", d->regions.v[i]);
			return false;
		}
	if ((o->queue_size & (o->queue_size - 1)) != 0) {
		cli_usage_error(CMD, "--queue-size %u is not a power of two", o->queue_size);
		return false;
	}
	return true;
}

int bench_parse(int argc, char **argv, struct bench_opts *o)
{
	enum { O_DIR = 256, O_LAYOUT, O_SIZES, O_MRG, O_ORDER, O_BATCH, O_ZC, O_ALLOC, O_FILL, O_CSUM,
	       O_PIECES, O_INDIRECT, O_REGIONS, O_BURST, O_QSIZE, O_REPS, O_SECS, O_PKTS, O_QUICK, O_INSTR,
	       O_PROFILE, O_JSON, O_QUIET, O_CHILD, O_THREADS };
	static const struct option longopts[] = {
		{"direction", required_argument, NULL, O_DIR},
		{"layout", required_argument, NULL, O_LAYOUT},
		{"sizes", required_argument, NULL, O_SIZES},
		{"mergeable", required_argument, NULL, O_MRG},
		{"in-order", required_argument, NULL, O_ORDER},
		{"batch", required_argument, NULL, O_BATCH},
		{"zero-copy", required_argument, NULL, O_ZC},
		{"alloc", required_argument, NULL, O_ALLOC},
		{"fill", required_argument, NULL, O_FILL},
		{"csum", required_argument, NULL, O_CSUM},
		{"pieces", required_argument, NULL, O_PIECES},
		{"indirect", required_argument, NULL, O_INDIRECT},
		{"regions", required_argument, NULL, O_REGIONS},
		{"burst", required_argument, NULL, O_BURST},
		{"queue-size", required_argument, NULL, O_QSIZE},
		{"reps", required_argument, NULL, O_REPS},
		{"seconds", required_argument, NULL, O_SECS},
		{"packets", required_argument, NULL, O_PKTS},
		{"quick", no_argument, NULL, O_QUICK},
		{"instructions", no_argument, NULL, O_INSTR},
		{"profile", required_argument, NULL, O_PROFILE},
		{"json", no_argument, NULL, O_JSON},
		{"quiet", no_argument, NULL, O_QUIET},
		{"callgrind-child", no_argument, NULL, O_CHILD},
		{"threads", required_argument, NULL, O_THREADS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct dims d = {
		.dir = {{BENCH_DEQUEUE, BENCH_ENQUEUE}, 2},
		.layout = {{VL_LAYOUT_SPLIT, VL_LAYOUT_PACKED}, 2},
		.size = {{64, 1518}, 2},
		.mrg = {{0}, 1},
		.order = {{0}, 1},
		.batch = {{VL_BATCH_THRESHOLD_DEFAULT}, 1},
		.zc = {{0}, 1},
		.alloc = {{VL_ALLOC_AVAILABLE}, 1},
		.fill = {{BENCH_FILL_FULL}, 1},
		.csum = {{0}, 1},
		.pieces = {{1}, 1},
		.indirect = {{0}, 1},
		.regions = {{1}, 1},
	};
	bool reps_given = false, len_given = false;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->burst = 32;
	o->threads = 1;
	o->queue_size = 256;
	o->reps = 5;
	o->seconds = 0.2;
	opterr = 0;
	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, ":h", longopts, NULL);
		const char *opt = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
		bool ok = true;

		if (c == -1)
			break;
		switch (c) {
		case O_DIR: ok = parse_list("--direction", optarg, one_dir, &d.dir); break;
		case O_LAYOUT: ok = parse_list("--layout", optarg, one_layout, &d.layout); break;
		case O_SIZES: ok = parse_list("--sizes", optarg, one_size, &d.size); break;
		case O_MRG: ok = parse_list("--mergeable", optarg, one_onoff, &d.mrg); break;
		case O_ORDER: ok = parse_list("--in-order", optarg, one_onoff, &d.order); break;
		case O_BATCH: ok = parse_list("--batch", optarg, one_batch, &d.batch); break;
		case O_ZC: ok = parse_list("--zero-copy", optarg, one_onoff, &d.zc); break;
		case O_ALLOC: ok = parse_list("--alloc", optarg, one_alloc, &d.alloc); break;
		case O_FILL: ok = parse_list("--fill", optarg, one_fill, &d.fill); break;
		case O_CSUM: ok = parse_list("--csum", optarg, one_onoff, &d.csum); break;
		case O_PIECES: ok = parse_list("--pieces", optarg, one_pieces, &d.pieces); break;
		case O_INDIRECT:
			ok = parse_list("--indirect", optarg, one_onoff, &d.indirect);
			break;
		case O_REGIONS:
			ok = parse_list("--regions", optarg, one_regions, &d.regions);
			break;
		case O_BURST:
			ok = cli_parse_u64(CMD, "--burst", optarg, 1, 256, &v);
			o->burst = (uint32_t)v;
			break;
		case O_QSIZE:
			ok = cli_parse_u64(CMD, "--queue-size", optarg, 2, VL_QUEUE_SIZE_MAX, &v);
			o->queue_size = (uint32_t)v;
			break;
		case O_REPS:
			ok = cli_parse_u64(CMD, "--reps", optarg, 1, BENCH_MAX_REPS, &v);
			o->reps = (uint32_t)v;
			reps_given = true;
			break;
		case O_SECS:
			ok = parse_seconds("--seconds", optarg, &o->seconds);
			o->packets = 0;
			len_given = true;
			break;
		case O_PKTS:
			ok = cli_parse_u64(CMD, "--packets", optarg, 1, 1000000000000ull, &o->packets);
			len_given = true;
			break;
		case O_THREADS:
			ok = cli_parse_u64(CMD, "--threads", optarg, 1, BENCH_MAX_THREADS, &v);
			o->threads = (uint32_t)v;
			break;
		case O_QUICK: o->quick = true; break;
		case O_INSTR: o->instructions = true; break;
		case O_PROFILE:
			ok = *optarg != '\0';
			if (!ok)
				cli_usage_error(CMD, "--profile needs a directory, not ''");
			o->profile_dir = optarg;
			o->instructions = true;
			break;
		case O_JSON: o->json = true; break;
		case O_QUIET: o->quiet = true; break;
		case O_CHILD: o->callgrind_child = true; break;
		case 'h': bench_usage(stdout); return -1;
		case ':':
			cli_usage_error(CMD, "%s needs a value", opt);
			return CLI_EXIT_USAGE;
		default:
			cli_usage_error(CMD, "unknown option '%s' (try --help)", opt);
			return CLI_EXIT_USAGE;
		}
		if (!ok)
			return CLI_EXIT_USAGE;
	}
	if (optind < argc) {
		cli_usage_error(CMD, "unexpected argument '%s' (try --help)", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (o->quick) {
		if (!reps_given)
			o->reps = 3;
		if (!len_given)
			o->packets = 20000;
	}
	if (!check_combinations(o, &d) || !build_cells(o, &d))
		return CLI_EXIT_USAGE;
	return 0;
}

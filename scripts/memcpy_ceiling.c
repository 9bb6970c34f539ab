/* SPDX-License-Identifier: MIT */
/* vl_memcpy_ceiling: how fast this machine's memcpy moves packet-sized copies on one core --
 * the ceiling a copying back end works under (reports/vs-dpdk.md puts it beside the results).
 *
 * For each size, two cases:
 *   warm  32 source and 32 destination buffers (64 KiB each side), copied slot to slot over
 *         and over: everything stays in L1/L2, so this is memcpy's own cost;
 *   cold  256 MiB each side, walked once per pass at a 2176-byte stride (a DPDK mbuf's
 *         size): every copy misses the caches, as packet buffers of a busy ring do (the
 *         walk is sequential, so the hardware prefetcher helps -- a real ring is not
 *         always that kind).
 * Source slots start on a cache line (a DPDK mbuf's data does); destination slots start
 * --dst-offsets bytes past one (default 0: a line-aligned segment; 16: where malloc's large
 * blocks put one). With several offsets or --reps, the cases run interleaved, rep after rep,
 * and each reports its median, so two offsets compare within one run.
 * The length is read from a volatile, so the compiler cannot turn memcpy into a fixed-size
 * move the core's copies never get. Reports ns per copy, millions of copies per second (the
 * Mpps a back end doing only that copy could reach) and GB/s of payload. */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define WARM_SLOTS 32u
#define SLOT_STRIDE 2176u
#define COLD_BYTES (256u << 20)
#define CHUNK 4096u /* copies between clock reads */
#define MAX_SIZES 16u
#define MAX_OFFSETS 8u
#define MAX_REPS 64u

struct result {
	uint32_t size, dst_offset;
	const char *buffers;
	double ns_per_copy, mcopies, gbps;
	double ns[MAX_REPS]; /* one per repetition; ns_per_copy is their median */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t *region(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "vl_memcpy_ceiling: cannot map %zu bytes\n", bytes);
		exit(1);
	}
	memset(p, 0x5a, bytes); /* fault every page in before timing */
	return p;
}

static volatile uint32_t copy_len; /* read per copy: see the header */
static volatile uint8_t sink;

/* Copy `len` bytes from slot i of src to slot i of dst, slots cycling over `slots`, for about
 * `seconds`; returns copies done and their time. */
static void run(uint8_t *dst, const uint8_t *src, uint32_t slots, double seconds,
		uint64_t *copies, double *elapsed)
{
	uint64_t n = 0;
	uint32_t slot = 0;
	double t0 = now(), t;

	do {
		for (uint32_t i = 0; i < CHUNK; i++) {
			size_t off = (size_t)slot * SLOT_STRIDE;

			memcpy(dst + off, src + off, copy_len);
			if (++slot == slots)
				slot = 0;
		}
		n += CHUNK;
		t = now();
	} while (t - t0 < seconds);
	sink = dst[0];
	*copies = n;
	*elapsed = t - t0;
}

/* ns per copy of one timed pass, after a warm-up pass (caches, frequency). */
static double measure(uint8_t *dst, const uint8_t *src, uint32_t slots, uint32_t size,
		      double seconds)
{
	uint64_t copies;
	double secs;

	copy_len = size;
	run(dst, src, slots, seconds / 10, &copies, &secs);
	run(dst, src, slots, seconds, &copies, &secs);
	return secs * 1e9 / (double)copies;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Fill in the median and the units it gives. */
static void finish(struct result *r, uint32_t reps)
{
	double v[MAX_REPS];

	memcpy(v, r->ns, reps * sizeof(v[0]));
	qsort(v, reps, sizeof(v[0]), cmp_double);
	r->ns_per_copy = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
	r->mcopies = 1e3 / r->ns_per_copy;
	r->gbps = (double)r->size / r->ns_per_copy;
}

/* A comma-separated list of numbers in [lo, hi], at most max of them. */
static int parse_list(const char *opt, char *arg, uint32_t lo, uint32_t hi, uint32_t max,
		      uint32_t *out, uint32_t *n)
{
	*n = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (end == tok || *end || v < lo || v > hi || *n == max) {
			fprintf(stderr,
				"vl_memcpy_ceiling: %s: '%s' is not a number in %u..%u (at most %u "
				"of them)\n",
				opt, tok, lo, hi, max);
			return -1;
		}
		out[(*n)++] = (uint32_t)v;
	}
	if (*n == 0) {
		fprintf(stderr, "vl_memcpy_ceiling: %s: an empty list\n", opt);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vl_memcpy_ceiling [--sizes N[,N...]] [--dst-offsets N[,N...]] [--reps N]\n"
		"                         [--seconds S] [--json]\n"
		"  memcpy of packet-sized copies on one core, cache-warm and cache-cold buffers\n"
		"  --sizes        copy sizes in bytes, 1..%u (default 64,1518)\n"
		"  --dst-offsets  destination bytes past a cache line, 0..63 (default 0); the\n"
		"                 source is always line-aligned\n"
		"  --reps         interleaved repetitions of every case, 1..%u; each case\n"
		"                 reports its median (default 1)\n"
		"  --seconds      timing per case and repetition (default 0.5)\n"
		"  --json         one JSON document on stdout instead of the table\n"
		"  Pin it with taskset to the core whose ceiling you want.\n",
		SLOT_STRIDE, MAX_REPS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"sizes", required_argument, NULL, 's'},
		{"dst-offsets", required_argument, NULL, 'o'},
		{"reps", required_argument, NULL, 'r'},
		{"seconds", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint32_t sizes[MAX_SIZES] = {64, 1518}, offsets[MAX_OFFSETS] = {0}, reps = 1;
	uint32_t nsizes = 2, noffsets = 1;
	double seconds = 0.5;
	int json = 0, c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 's':
			if (parse_list("--sizes", optarg, 1, SLOT_STRIDE, MAX_SIZES, sizes,
				       &nsizes) != 0)
				return 2;
			break;
		case 'o':
			if (parse_list("--dst-offsets", optarg, 0, 63, MAX_OFFSETS, offsets,
				       &noffsets) != 0)
				return 2;
			break;
		case 'r': {
			unsigned long v = strtoul(optarg, &end, 10);

			if (end == optarg || *end || v < 1 || v > MAX_REPS) {
				fprintf(stderr,
					"vl_memcpy_ceiling: --reps: '%s' is not a number in 1..%u\n",
					optarg, MAX_REPS);
				return 2;
			}
			reps = (uint32_t)v;
			break;
		}
		case 't':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0 && seconds <= 60)) {
				fprintf(stderr,
					"vl_memcpy_ceiling: --seconds: '%s' is not in (0, 60]\n",
					optarg);
				return 2;
			}
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vl_memcpy_ceiling: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	/* A line more on the destination side: the last slot's copy starts up to 63 bytes in. */
	uint8_t *wsrc = region((size_t)WARM_SLOTS * SLOT_STRIDE);
	uint8_t *wdst = region((size_t)WARM_SLOTS * SLOT_STRIDE + 64);
	uint8_t *csrc = region(COLD_BYTES);
	uint8_t *cdst = region(COLD_BYTES + 64);
	static struct result res[2 * MAX_SIZES * MAX_OFFSETS];
	uint32_t nres = 0;

	for (uint32_t i = 0; i < nsizes; i++)
		for (uint32_t k = 0; k < noffsets; k++)
			for (int cold = 0; cold < 2; cold++)
				res[nres++] = (struct result){.size = sizes[i],
							      .dst_offset = offsets[k],
							      .buffers = cold ? "cold" : "warm"};
	for (uint32_t r = 0; r < reps; r++)
		for (uint32_t i = 0; i < nres; i++) {
			bool cold = res[i].buffers[0] == 'c';

			res[i].ns[r] = measure((cold ? cdst : wdst) + res[i].dst_offset,
					       cold ? csrc : wsrc,
					       cold ? COLD_BYTES / SLOT_STRIDE : WARM_SLOTS,
					       res[i].size, seconds);
		}
	for (uint32_t i = 0; i < nres; i++)
		finish(&res[i], reps);
	if (json) {
		printf("{\"seconds_per_case\": %.3f, \"reps\": %u, \"cases\": [", seconds, reps);
		for (uint32_t i = 0; i < nres; i++)
			printf("%s\n  {\"size\": %u, \"dst_offset\": %u, \"buffers\": \"%s\", "
			       "\"ns_per_copy\": %.3f, \"mcopies_per_s\": %.3f, "
			       "\"gbytes_per_s\": %.3f}",
			       i ? "," : "", res[i].size, res[i].dst_offset, res[i].buffers,
			       res[i].ns_per_copy, res[i].mcopies, res[i].gbps);
		printf("\n]}\n");
	} else {
		printf("%6s  %10s  %-7s %10s %12s %8s\n", "size", "dst offset", "buffers",
		       "ns/copy", "Mcopies/s", "GB/s");
		for (uint32_t i = 0; i < nres; i++)
			printf("%6u  %10u  %-7s %10.2f %12.2f %8.2f\n", res[i].size,
			       res[i].dst_offset, res[i].buffers, res[i].ns_per_copy,
			       res[i].mcopies, res[i].gbps);
	}
	return 0;
}

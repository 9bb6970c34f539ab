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
 * The length is read from a volatile, so the compiler cannot turn memcpy into a fixed-size
 * move the core's copies never get. Reports ns per copy, millions of copies per second (the
 * Mpps a back end doing only that copy could reach) and GB/s of payload. */
#include <getopt.h>
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

struct result {
	uint32_t size;
	const char *buffers;
	double ns_per_copy, mcopies, gbps;
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

static struct result measure(uint8_t *dst, const uint8_t *src, uint32_t slots,
			     const char *buffers, uint32_t size, double seconds)
{
	uint64_t copies;
	double secs;

	copy_len = size;
	run(dst, src, slots, seconds / 10, &copies, &secs); /* warm-up: caches, frequency */
	run(dst, src, slots, seconds, &copies, &secs);
	return (struct result){
		.size = size,
		.buffers = buffers,
		.ns_per_copy = secs * 1e9 / (double)copies,
		.mcopies = (double)copies / secs / 1e6,
		.gbps = (double)copies * size / secs / 1e9,
	};
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vl_memcpy_ceiling [--sizes N[,N...]] [--seconds S] [--json]\n"
		"  memcpy of packet-sized copies on one core, cache-warm and cache-cold buffers\n"
		"  --sizes     copy sizes in bytes, 1..%u (default 64,1518)\n"
		"  --seconds   timing per case (default 0.5)\n"
		"  --json      one JSON document on stdout instead of the table\n"
		"  Pin it with taskset to the core whose ceiling you want.\n",
		SLOT_STRIDE);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"sizes", required_argument, NULL, 's'},
		{"seconds", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint32_t sizes[16] = {64, 1518};
	uint32_t nsizes = 2;
	double seconds = 0.5;
	int json = 0, c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 's':
			nsizes = 0;
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				unsigned long v = strtoul(tok, &end, 10);

				if (*end || v < 1 || v > SLOT_STRIDE || nsizes == 16) {
					fprintf(stderr,
						"vl_memcpy_ceiling: --sizes: '%s' is not a size in "
						"1..%u (at most 16 sizes)\n",
						tok, SLOT_STRIDE);
					return 2;
				}
				sizes[nsizes++] = (uint32_t)v;
			}
			break;
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
	if (optind < argc || nsizes == 0) {
		usage(stderr);
		return 2;
	}

	uint8_t *wsrc = region((size_t)WARM_SLOTS * SLOT_STRIDE);
	uint8_t *wdst = region((size_t)WARM_SLOTS * SLOT_STRIDE);
	uint8_t *csrc = region(COLD_BYTES);
	uint8_t *cdst = region(COLD_BYTES);
	struct result res[32];
	uint32_t nres = 0;

	for (uint32_t i = 0; i < nsizes; i++) {
		res[nres++] = measure(wdst, wsrc, WARM_SLOTS, "warm", sizes[i], seconds);
		res[nres++] = measure(cdst, csrc, COLD_BYTES / SLOT_STRIDE, "cold", sizes[i],
				      seconds);
	}
	if (json) {
		printf("{\"seconds_per_case\": %.3f, \"cases\": [", seconds);
		for (uint32_t i = 0; i < nres; i++)
			printf("%s\n  {\"size\": %u, \"buffers\": \"%s\", \"ns_per_copy\": %.3f, "
			       "\"mcopies_per_s\": %.3f, \"gbytes_per_s\": %.3f}",
			       i ? "," : "", res[i].size, res[i].buffers, res[i].ns_per_copy,
			       res[i].mcopies, res[i].gbps);
		printf("\n]}\n");
	} else {
		printf("%6s  %-7s %10s %12s %8s\n", "size", "buffers", "ns/copy", "Mcopies/s",
		       "GB/s");
		for (uint32_t i = 0; i < nres; i++)
			printf("%6u  %-7s %10.2f %12.2f %8.2f\n", res[i].size, res[i].buffers,
			       res[i].ns_per_copy, res[i].mcopies, res[i].gbps);
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* vl_cpu_pingpong: how long one cache line takes to go from one CPU to another and back --
 * a probe of where the two CPUs sit, run just before and just after each measurement of
 * reports/vs-dpdk.md.
 *
 * Why: on the VM these reports come from, the host moves the two virtual CPUs between
 * placements every few seconds to minutes. Close together the round trip is about 45 ns;
 * far apart (another core complex) about 430 ns, and every front end / back end pair then
 * runs at roughly half its close rate or less. A run is only comparable with a run of the same placement,
 * and this probe says which one it had.
 *
 * Two threads, one pinned to each CPU, take turns writing a counter in one line: each waits
 * for the other's value, then writes the next. The time per round is two line transfers. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct shared {
	_Alignas(64) volatile uint64_t turn; /* the one line that travels */
	uint64_t rounds;
	int cpu;                             /* the responder's CPU */
	int err;                             /* its pinning error, 0 if none */
	volatile int ready;                  /* 1: pinned and waiting, -1: could not pin */
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Answers every odd value with the next even one. */
static void *responder(void *arg)
{
	struct shared *sh = arg;

	sh->err = pin(sh->cpu);
	sh->ready = sh->err ? -1 : 1;
	if (sh->err)
		return NULL;
	for (uint64_t i = 1; i <= sh->rounds; i++) {
		while (sh->turn != 2 * i - 1)
			relax();
		sh->turn = 2 * i;
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: vl_cpu_pingpong [--cpus A,B] [--rounds N] [--json]\n"
		"  The round trip of one cache line between CPU A and CPU B, in ns: the median of\n"
		"  5 batches of N/5 rounds (default CPUs 0,1, N 50000).\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"cpus", required_argument, NULL, 'c'},
					     {"rounds", required_argument, NULL, 'r'},
					     {"json", no_argument, NULL, 'j'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	int a = 0, b = 1, json = 0;
	long rounds = 50000;

	for (int c; (c = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
		char *end;

		switch (c) {
		case 'c':
			if (sscanf(optarg, "%d,%d", &a, &b) != 2 || a < 0 || b < 0 || a == b ||
			    a >= CPU_SETSIZE || b >= CPU_SETSIZE) {
				fprintf(stderr, "vl_cpu_pingpong: --cpus: '%s' is not two different "
						"CPU numbers A,B\n", optarg);
				return 2;
			}
			break;
		case 'r':
			errno = 0;
			rounds = strtol(optarg, &end, 10);
			if (errno || *end || rounds < 5 || rounds > 100000000) {
				fprintf(stderr, "vl_cpu_pingpong: --rounds: '%s' is not in [5, 1e8]\n",
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
		fprintf(stderr, "vl_cpu_pingpong: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	int err = pin(a);

	if (err) {
		fprintf(stderr, "vl_cpu_pingpong: cannot run on CPU %d: %s\n", a, strerror(err));
		return 1;
	}
	enum { BATCHES = 5 };
	uint64_t per = (uint64_t)rounds / BATCHES;
	struct shared *sh = aligned_alloc(64, sizeof(*sh));

	if (!sh) {
		fprintf(stderr, "vl_cpu_pingpong: out of memory\n");
		return 1;
	}
	memset(sh, 0, sizeof(*sh));
	sh->rounds = per * BATCHES;
	sh->cpu = b;
	pthread_t t;

	if ((err = pthread_create(&t, NULL, responder, sh)) != 0) {
		fprintf(stderr, "vl_cpu_pingpong: cannot start a thread: %s\n", strerror(err));
		return 1;
	}
	while (sh->ready == 0)
		relax();
	if (sh->ready < 0) {
		pthread_join(t, NULL);
		fprintf(stderr, "vl_cpu_pingpong: cannot run on CPU %d: %s\n", b, strerror(sh->err));
		return 1;
	}
	double ns[BATCHES];
	uint64_t i = 1;

	for (int k = 0; k < BATCHES; k++) {
		double t0 = now();

		for (uint64_t stop = i + per; i < stop; i++) {
			sh->turn = 2 * i - 1;
			while (sh->turn != 2 * i)
				relax();
		}
		ns[k] = (now() - t0) * 1e9 / (double)per;
	}
	pthread_join(t, NULL);
	qsort(ns, BATCHES, sizeof(ns[0]), cmp_double);
	if (json)
		printf("{\"cpus\": [%d, %d], \"rounds\": %llu, \"round_trip_ns\": %.1f}\n", a, b,
		       (unsigned long long)(per * BATCHES), ns[BATCHES / 2]);
	else
		printf("%.1f\n", ns[BATCHES / 2]);
	free(sh);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* vhostlab bench --threads N: one repetition of a cell on N threads at once. Each thread runs
 * bench_run_rep as the single-threaded bench does -- its own simulated guest, memory table,
 * queues and pool, so the threads share nothing of the datapath (the contract of vl_vq.h:
 * queues that share nothing may run on different threads) -- and they start the measured
 * work together at a barrier. What scales with threads is then what the machine gives: the
 * core's instructions per packet do not change (callgrind counts every thread), and the
 * packets per second of N threads against 1 say how well N cores are used. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct bench_thread {
	const struct bench_opts *o;
	const struct bench_cell *c;
	atomic_int *go;          /* 0: wait, 1: run, -1: another thread failed to start */
	struct bench_rep rep;
	int rc;
	char err[512];
};

static void *thread_main(void *arg)
{
	struct bench_thread *t = arg;

	/* Setup (guest memory, queues) is inside bench_run_rep: the start signal lines up the
	 * threads' starts, and each run's own warm-up absorbs the rest of the skew. */
	int go;

	while ((go = atomic_load_explicit(t->go, memory_order_acquire)) == 0)
		sched_yield();
	if (go < 0)
		return NULL;
	t->rc = bench_run_rep(t->o, t->c, &t->rep, t->err, sizeof(t->err));
	return NULL;
}

int bench_run_threads(const struct bench_opts *o, const struct bench_cell *c,
		      struct bench_rep *r, char *err, size_t errlen)
{
	uint32_t n = o->threads ? o->threads : 1;

	if (n == 1)
		return bench_run_rep(o, c, r, err, errlen);
	struct bench_thread t[BENCH_MAX_THREADS];
	pthread_t tid[BENCH_MAX_THREADS];
	atomic_int go;
	uint32_t started = 0;
	int rc = 0;

	/* Computed once, here: the threads would race to fill the cache. */
	(void)bench_timer_overhead_ns();
	atomic_init(&go, 0);
	memset(t, 0, sizeof(t));
	for (uint32_t i = 0; i < n; i++) {
		t[i] = (struct bench_thread){.o = o, .c = c, .go = &go};
		if (pthread_create(&tid[i], NULL, thread_main, &t[i]) != 0)
			break;
		started++;
	}
	atomic_store_explicit(&go, started == n ? 1 : -1, memory_order_release);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (started < n) {
		snprintf(err, errlen, "--threads %u: only %u threads could be started", n, started);
		return -1;
	}

	memset(r, 0, sizeof(*r));
	r->threads = n;
	for (uint32_t i = 0; i < n; i++) {
		const struct bench_rep *p = &t[i].rep;

		if (t[i].rc != 0 && rc == 0) {
			snprintf(err, errlen, "thread %u of %u: %s", i + 1, n, t[i].err);
			rc = -1;
		}
		r->packets += p->packets;
		r->calls += p->calls;
		r->core_ns += p->core_ns;
		r->driver_ns += p->driver_ns;
		r->alloc_calls += p->alloc_calls;
		r->alloc_bufs += p->alloc_bufs;
		r->checked_bytes += p->checked_bytes;
		r->zc_packets += p->zc_packets;
		if (p->wall_ns > r->wall_ns)
			r->wall_ns = p->wall_ns;
		r->thread_wall_mpps[i] = p->thread_wall_mpps[0];
	}
	return rc;
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --threads N`: the queue pairs on N worker threads. Pair q belongs to worker
 * q % N, which alone runs its forwarding (both rings, of every port in pair mode), its kicks,
 * its evict tuner, and frees its packets to its pair's pool; the datapath takes no lock. The
 * poll loop (serve_loop.c) keeps the sockets: connections, messages, client reconnects and
 * the live statistics, each run with every worker paused at the end of a round through its
 * queue gate (vl_vq_gate, vl_vq.h "Queues over threads"): asked, woken if asleep, and waited
 * for; then the loop handles the message (which may swap the memory table, stop, start or
 * disable rings, start the log, reset the device), and resumes them. A worker re-reads its
 * pairs' queues every round, so a queue that went or came is seen at once.
 *
 * Pausing around every message rather than only those that touch a running ring keeps one
 * rule for all of them: a message costs a few microseconds of the workers' time, and a
 * front end sends messages at set-up, around migration and at reset, not per packet. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "serve.h"

/* How long an idle worker sleeps at most, in milliseconds (as the single loop: kicks and
 * a pause wake it earlier; txonly finds room again without a kick). */
#define WORKER_IDLE_WAIT_MS 20
#define WORKER_IDLE_WAIT_TXONLY_MS 1
/* A busy worker reads the clock (for the evict tuner) every this many rounds. */
#define WORKER_CLOCK_ROUNDS 64u

struct serve_worker {
	struct serve *s;
	uint32_t index;
	pthread_t tid;
	struct vl_vq_gate *gate;
	int wake_fd;                 /* eventfd: the loop wakes a sleeping worker to pause it */
	atomic_bool stop;
	uint32_t pause_no;           /* the loop's: the pause it asked for */
	bool running;
	/* The worker's poll set: wake_fd, then the kick fds of its rings. */
	struct pollfd *fds;
	uint32_t *qidx;              /* ring of fds[i] (i >= 1) */
	struct serve_port **port;    /* port of fds[i] */
	uint32_t cap;
};

static void wake(struct serve_worker *w)
{
	uint64_t one = 1;

	/* A full counter already wakes it; nothing else can fail on an eventfd. */
	if (write(w->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		serve_event(w->s, "error", NULL, "worker %u: wake-up: %s", w->index,
			    strerror(errno));
}

/* Sleep until a kick on one of the worker's rings, a wake-up or the timeout. */
static void worker_sleep(struct serve_worker *w)
{
	struct serve *s = w->s;
	uint32_t n = 1;

	w->fds[0] = (struct pollfd){.fd = w->wake_fd, .events = POLLIN};
	for (uint32_t q = w->index; q < s->o.queues; q += s->nworkers) {
		for (uint32_t i = 0; i < s->nports; i++) {
			struct serve_port *p = &s->port[i];

			for (uint32_t r = 0; r < 2; r++) {
				int fd = p->pairs[q].vq[r] && serve_fwd_wants_kick(s, p, q, r) ?
						 vl_vu_dev_kick_fd(p->dev, 2 * q + r) : -1;

				if (fd < 0 || n == w->cap)
					continue;
				w->fds[n] = (struct pollfd){.fd = fd, .events = POLLIN};
				w->qidx[n] = 2 * q + r;
				w->port[n] = p;
				n++;
			}
		}
	}
	/* Asked to pause after the round's check: the wake-up is already in wake_fd, but
	 * there is no need to go through poll for it. */
	if (vl_vq_gate_pending(w->gate))
		return;
	int rc = poll(w->fds, n, s->o.mode == SERVE_TXONLY ? WORKER_IDLE_WAIT_TXONLY_MS
							  : WORKER_IDLE_WAIT_MS);

	if (rc <= 0)
		return;
	if (w->fds[0].revents) {
		uint64_t v;

		if (read(w->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			serve_event(s, "error", NULL, "worker %u: wake-up: %s", w->index,
				    strerror(errno));
	}
	for (uint32_t i = 1; i < n; i++) {
		if (w->fds[i].revents && vl_vu_dev_consume_kick(w->port[i]->dev, w->qidx[i]))
			w->port[i]->pairs[w->qidx[i] / 2].st.kicks++;
	}
}

static void *worker_main(void *arg)
{
	struct serve_worker *w = arg;
	struct serve *s = w->s;
	uint32_t rounds = 0;

	while (!atomic_load_explicit(&w->stop, memory_order_acquire)) {
		/* The end of a round: the only place the loop may come in. */
		vl_vq_gate_poll(w->gate);
		bool busy = false;

		for (uint32_t q = w->index; q < s->o.queues; q += s->nworkers)
			busy |= serve_fwd_pair(s, q);
		if (!busy || ++rounds % WORKER_CLOCK_ROUNDS == 0) {
			double now = serve_now();

			for (uint32_t q = w->index; q < s->o.queues; q += s->nworkers)
				serve_evict_tick_pair(s, q, now);
		}
		/* Kicks as the single loop handles them (serve_loop.c): off while busy, on
		 * again before sleeping, with one more round for what came meanwhile. */
		for (uint32_t q = w->index; !s->o.busy_poll && q < s->o.queues; q += s->nworkers)
			busy |= serve_set_kicks_pair(s, q, !busy);
		if (busy)
			continue;
		if (s->o.busy_poll) {
			if (s->o.idle_pause_ns)
				serve_idle_pause(serve_now() + (double)s->o.idle_pause_ns * 1e-9);
			continue;
		}
		worker_sleep(w);
	}
	vl_vq_gate_leave(w->gate);
	return NULL;
}

bool serve_threads_start(struct serve *s)
{
	uint32_t n = s->o.threads;

	if (n == 0)
		return true;
	s->workers = calloc(n, sizeof(*s->workers));
	if (!s->workers) {
		serve_event(s, "error", NULL, "--threads %u: out of memory", n);
		return false;
	}
	s->nworkers = n;
	for (uint32_t i = 0; i < n; i++)
		s->workers[i].wake_fd = -1;  /* serve_threads_stop closes only what was opened */
	/* Rings per worker: two per pair it owns, of every port; plus its wake-up. */
	uint32_t cap = 1 + 2 * s->nports * ((s->o.queues + n - 1) / n);

	for (uint32_t i = 0; i < n; i++) {
		struct serve_worker *w = &s->workers[i];

		w->s = s;
		w->index = i;
		w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		w->gate = vl_vq_gate_create();
		w->cap = cap;
		w->fds = calloc(cap, sizeof(*w->fds));
		w->qidx = calloc(cap, sizeof(*w->qidx));
		w->port = calloc(cap, sizeof(*w->port));
		atomic_init(&w->stop, false);
		if (w->wake_fd < 0 || !w->gate || !w->fds || !w->qidx || !w->port) {
			serve_event(s, "error", NULL, "--threads %u: cannot set up worker %u: %s", n,
				    i, w->wake_fd < 0 ? strerror(errno) : "out of memory");
			return false;
		}
		if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
			serve_event(s, "error", NULL, "--threads %u: cannot start worker %u", n, i);
			return false;
		}
		w->running = true;
	}
	serve_event(s, "threads", NULL, "%u worker threads: queue pair q runs on worker q %% %u",
		    n, n);
	return true;
}

void serve_threads_stop(struct serve *s)
{
	if (!s->workers)
		return;
	for (uint32_t i = 0; i < s->nworkers; i++) {
		struct serve_worker *w = &s->workers[i];

		atomic_store_explicit(&w->stop, true, memory_order_release);
		if (w->running)
			wake(w);
	}
	for (uint32_t i = 0; i < s->nworkers; i++) {
		struct serve_worker *w = &s->workers[i];

		if (w->running)
			pthread_join(w->tid, NULL);
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		vl_vq_gate_destroy(w->gate);
		free(w->fds);
		free(w->qidx);
		free(w->port);
	}
	free(s->workers);
	/* From here on the loop's thread is the only one: shutdown runs as without workers. */
	s->workers = NULL;
	s->nworkers = 0;
}

void serve_threads_pause(struct serve *s)
{
	if (!s->workers || s->pause_depth++ > 0)
		return;
	/* Ask all, wake all, then wait for each: they stop in parallel. */
	for (uint32_t i = 0; i < s->nworkers; i++) {
		struct serve_worker *w = &s->workers[i];

		if (!w->running)
			continue;
		w->pause_no = vl_vq_gate_request(w->gate);
		wake(w);
	}
	for (uint32_t i = 0; i < s->nworkers; i++) {
		struct serve_worker *w = &s->workers[i];

		if (w->running)
			vl_vq_gate_wait(w->gate, w->pause_no);
	}
}

void serve_threads_resume(struct serve *s)
{
	if (!s->workers || --s->pause_depth > 0)
		return;
	for (uint32_t i = 0; i < s->nworkers; i++) {
		struct serve_worker *w = &s->workers[i];

		if (w->running)
			vl_vq_gate_resume(w->gate, w->pause_no);
	}
}

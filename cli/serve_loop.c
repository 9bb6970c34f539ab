/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: the poll loop. One thread does everything, so every call on a device and
 * its queues is serialised as vl_vhost_user.h requires.
 *
 * Each round runs every queue pair's forwarding once, then polls: the sockets always, and
 * (without --poll) the kick eventfds of the rings that could make progress and the TAP
 * device. A round that moved packets polls without waiting, so a busy device never
 * sleeps; an idle one sleeps until a kick, a message or a short timeout. The timeout covers
 * what no kick announces: txonly finding room again when a front end does not kick its RX
 * ring, a client reconnecting, the next statistics line and the end of --duration. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

/* How long an idle round sleeps at most, in seconds. Kicks wake it earlier. */
#define SERVE_IDLE_WAIT 0.02
#define SERVE_IDLE_WAIT_TXONLY 0.001
/* While packets flow (and always under --poll) the sockets are polled at most this often, in
 * seconds, not every round. A poll(2) costs about as much as moving a 32-packet burst: every
 * round paying it cost 20 % of the 64-byte host-to-guest rate (A/B against testpmd, 24 vs
 * 30 Mpps). 20 us keeps it near 2 % and answers any message far sooner than a front end
 * notices (DPDK's own vhost back end reads its socket in another thread and its datapath
 * never waits for it). */
#define SERVE_BUSY_POLL_GAP 0.00002
#define SERVE_BUSY_CLOCK_ROUNDS 8

enum fd_kind { FD_KICK, FD_LISTEN, FD_CONN, FD_TAP, FD__COUNT };

struct fd_ref {
	enum fd_kind kind;
	struct serve_port *port;
	uint32_t qidx;
};

struct poll_set {
	struct pollfd *fds;
	struct fd_ref *refs;
	uint32_t n, cap;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

double serve_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void add(struct poll_set *ps, int fd, enum fd_kind kind, struct serve_port *p,
		uint32_t qidx)
{
	if (fd < 0 || ps->n == ps->cap)
		return;
	ps->fds[ps->n] = (struct pollfd){.fd = fd, .events = POLLIN};
	ps->refs[ps->n] = (struct fd_ref){.kind = kind, .port = p, .qidx = qidx};
	ps->n++;
}

/* Rebuilt every round: any message may have replaced a ring's kick fd. With --threads the
 * workers wait for their own kicks. */
static void build(struct serve *s, struct poll_set *ps)
{
	ps->n = 0;
	for (uint32_t i = 0; i < s->nports; i++) {
		struct serve_port *p = &s->port[i];

		add(ps, p->listen_fd, FD_LISTEN, p, 0);
		add(ps, p->conn_fd, FD_CONN, p, 0);
		if (s->o.busy_poll || serve_threaded(s))
			continue;
		for (uint32_t q = 0; q < s->o.queues; q++) {
			for (uint32_t r = 0; r < 2; r++) {
				if (p->pairs[q].vq[r] && serve_fwd_wants_kick(s, p, q, r))
					add(ps, vl_vu_dev_kick_fd(p->dev, 2 * q + r), FD_KICK, p,
					    2 * q + r);
			}
		}
	}
	if (s->o.mode == SERVE_TAP && !s->o.busy_poll && !serve_threaded(s)) {
		for (uint32_t q = 0; q < s->o.queues; q++) {
			if (serve_fwd_wants_tap(s, q))
				add(ps, s->tap_fds[q], FD_TAP, &s->port[0], q);
		}
	}
}

/* Kicks first, then new connections, then messages: a message may close a kick fd that
 * this round's poll reported, and the kick must be read through the device (by ring),
 * never through a number that may now name another file. With --threads, a connection and
 * a message run with every worker paused (serve_threads.c). */
static void dispatch(struct serve *s, struct poll_set *ps)
{
	for (int kind = 0; kind < FD__COUNT; kind++) {
		for (uint32_t i = 0; i < ps->n; i++) {
			struct fd_ref *ref = &ps->refs[i];

			if ((int)ref->kind != kind || ps->fds[i].revents == 0)
				continue;
			switch (ref->kind) {
			case FD_KICK:
				if (vl_vu_dev_consume_kick(ref->port->dev, ref->qidx))
					ref->port->pairs[ref->qidx / 2].st.kicks++;
				break;
			case FD_LISTEN:
				serve_threads_pause(s);
				serve_port_accept(ref->port);
				serve_threads_resume(s);
				break;
			case FD_CONN:
				serve_threads_pause(s);
				if (serve_port_connected(ref->port))
					serve_port_message(ref->port);
				serve_threads_resume(s);
				break;
			case FD_TAP:   /* the next round reads it */
			case FD__COUNT:
				break;
			}
		}
	}
}

/* A spin-wait hint: the core runs the other hyperthread, or saves power, meanwhile. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* --idle-pause: spin until `until` without touching the rings. Each poll of an empty ring
 * reads the line the front end writes next (the packed descriptor, the split avail index),
 * and every such read makes the front end's next store to that line wait for the line to
 * come back; polling less often while nothing flows leaves the front end more of its time
 * (serve_opts.idle_pause_ns has the measurements). */
void serve_idle_pause(double until)
{
	while (serve_now() < until)
		cpu_relax();
}

/* "Never", as a time: later than any deadline. */
#define SERVE_NEVER 1e18

static double dmin(double a, double b)
{
	return a < b ? a : b;
}

static int poll_timeout_ms(struct serve *s, bool busy, double now, double end,
			   double next_stats)
{
	/* With --threads the loop only waits for the sockets: spinning, even under --poll,
	 * would take a CPU from the workers. */
	if (!serve_threaded(s) && (busy || s->o.busy_poll))
		return 0;
	double wait = s->o.mode == SERVE_TXONLY ? SERVE_IDLE_WAIT_TXONLY : SERVE_IDLE_WAIT;

	wait = dmin(wait, end - now);
	wait = dmin(wait, next_stats - now);
	for (uint32_t i = 0; i < s->nports; i++)
		wait = dmin(wait, serve_port_wait(&s->port[i], now));
	return wait <= 0 ? 0 : (int)(wait * 1000.0) + 1; /* rounded up: never early */
}

bool serve_set_kicks_pair(struct serve *s, uint32_t q, bool want)
{
	bool changed = false;

	for (uint32_t i = 0; i < s->nports; i++) {
		struct serve_port *p = &s->port[i];
		struct serve_pair *sp = &p->pairs[q];

		for (uint32_t r = 0; r < 2; r++) {
			if (!sp->vq[r] || sp->kicks_off[r] == !want)
				continue;
			vl_vq_set_kicks(sp->vq[r], want);
			serve_rec_kicks(p, 2 * q + r, want);
			sp->kicks_off[r] = !want;
			changed = true;
		}
	}
	/* vl_vq_set_kicks(true) ends with the full barrier the kick handshake needs; the
	 * caller runs one more round before sleeping. */
	return changed;
}

bool serve_set_kicks(struct serve *s, bool want)
{
	bool changed = false;

	for (uint32_t q = 0; q < s->o.queues; q++)
		changed |= serve_set_kicks_pair(s, q, want);
	return changed;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: poll() returns EINTR and the loop sees the flag at once. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A front end that vanishes mid-reply must not kill the back end. */
	signal(SIGPIPE, SIG_IGN);
}

const char *serve_loop(struct serve *s)
{
	struct poll_set ps = {0};
	const char *why = NULL;

	ps.cap = s->nports * (2 + 2 * s->o.queues) + s->o.queues;
	ps.fds = calloc(ps.cap, sizeof(*ps.fds));
	ps.refs = calloc(ps.cap, sizeof(*ps.refs));
	if (!ps.fds || !ps.refs) {
		serve_event(s, "error", NULL, "out of memory");
		goto out;
	}
	install_signals();

	double end = s->o.duration > 0 ? s->start + s->o.duration : SERVE_NEVER;
	double next_stats = s->o.stats_interval > 0 ? s->start + s->o.stats_interval : SERVE_NEVER;

	s->last_stats = s->start;
	double last_poll = 0, now = 0, idle_from = 0;
	bool last_busy = false;
	uint32_t clock_skips = 0;

	for (;;) {
		if (stop_signal) {
			why = "signal";
			break;
		}
		/* The clock is read every round unless the last rounds were busy: then every
		 * SERVE_BUSY_CLOCK_ROUNDS-th (a round takes about a microsecond then, and a read
		 * costs a few percent of it; nothing here needs finer time while packets flow). */
		bool fresh = !last_busy || ++clock_skips >= SERVE_BUSY_CLOCK_ROUNDS;

		if (fresh) {
			now = serve_now();
			clock_skips = 0;
			/* The last round moved nothing: it was idle from idle_from to now
			 * (its poll of the rings, its pause or its sleep). */
			if (!last_busy && idle_from > 0 && !serve_threaded(s))
				s->idle += now - idle_from;
		}

		if (now >= end) {
			why = "duration";
			break;
		}
		for (uint32_t i = 0; i < s->nports; i++) {
			/* A client connecting touches the port: workers paused (only then). */
			bool connects = serve_port_wait(&s->port[i], now) <= 0;

			if (connects)
				serve_threads_pause(s);
			serve_port_tick(&s->port[i], now);
			if (connects)
				serve_threads_resume(s);
		}
		bool busy = false;

		if (!serve_threaded(s)) {
			if (fresh)
				serve_evict_tick(s, now);
			for (uint32_t q = 0; q < s->o.queues; q++)
				busy |= serve_fwd_pair(s, q);
			/* While packets flow the loop does not sleep, so kicks would only cost
			 * both sides a system call per burst: the guest is told not to send them.
			 * Before sleeping they are wanted again, and one more round runs, for
			 * what the guest posted while it was told not to kick. */
			if (!s->o.busy_poll && serve_set_kicks(s, !busy))
				busy = true;
		}
		last_busy = busy;
		/* The clock may be a few busy rounds old here: then the idle span starts now. */
		if (!busy)
			idle_from = fresh ? now : serve_now();
		if (now >= next_stats) {
			serve_threads_pause(s);  /* the workers' counters hold still */
			serve_stats_live(s, now);
			serve_threads_resume(s);
			next_stats += s->o.stats_interval;
			if (next_stats <= now)
				next_stats = now + s->o.stats_interval;
		}
		if (!busy && s->o.busy_poll && s->o.idle_pause_ns && !serve_threaded(s))
			serve_idle_pause(now + (double)s->o.idle_pause_ns * 1e-9);
		/* A busy round goes straight on to the next burst, and so does every round under
		 * --poll (which never sleeps): the sockets wait their turn. A round that does not
		 * poll cannot sleep either, so no kick is missed: kicks are wanted again only
		 * after a round that was not busy, and such a round polls (unless --poll, which
		 * ignores kicks). */
		if (!serve_threaded(s) && (busy || s->o.busy_poll) &&
		    now - last_poll < SERVE_BUSY_POLL_GAP)
			continue;
		last_poll = now;
		build(s, &ps);

		int rc = poll(ps.fds, ps.n, poll_timeout_ms(s, busy, now, end, next_stats));

		if (rc < 0) {
			if (errno == EINTR)
				continue;
			serve_event(s, "error", NULL, "poll: %s", strerror(errno));
			break;
		}
		if (rc > 0)
			dispatch(s, &ps);
	}
out:
	free(ps.fds);
	free(ps.refs);
	return why;
}

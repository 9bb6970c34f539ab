/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --evict off|on|auto`: evict-after-read on the guest's transmit rings
 * (vl_vq_set_evict_reads). auto, the default, gives each TX ring a vl_evict_tuner, which
 * tries both settings now and then and keeps the one under which the ring ran faster: it
 * pays when the front end's CPU is far from serve's, and costs when it is close, and
 * neither serve nor the front end can see where a hypervisor put them. */
#include "serve.h"

static uint64_t to_ns(double seconds)
{
	return seconds > 0 ? (uint64_t)(seconds * 1e9) : 0;
}

/* The tuner's count: chains taken from the ring, which both dequeue and discard (the null and
 * touch modes) count; discard makes no packets, so `packets` stays 0 there. */
static uint64_t moved(const struct vl_vq *vq)
{
	return vl_vq_stats(vq)->chains;
}

static void apply(struct serve *s, struct serve_port *p, struct vl_vq *vq, bool on)
{
	if (vl_vq_evict_reads(vq) == on)
		return;
	if (vl_vq_set_evict_reads(vq, on) == VL_OK || s->evict_unsupported_told)
		return;
	s->evict_unsupported_told = true;
	serve_event(s, "evict", p, "this CPU has no CLFLUSHOPT: --evict %s runs without "
		    "evicting", s->o.evict == SERVE_EVICT_ON ? "on" : "auto");
}

/* A trial that changed the decision is an event: the rate moved with where the CPUs are. */
static void announce(struct serve *s, struct serve_port *p, uint32_t pair)
{
	struct serve_pair *sp = &p->pairs[pair];
	const struct vl_evict_tuner *t = &sp->evict;

	if (t->trials == sp->evict_trials_seen)
		return;
	sp->evict_trials_seen = t->trials;
	if (t->on == sp->evict_told)
		return;
	sp->evict_told = t->on;
	serve_event(s, "evict", p, "queue pair %u: evict-after-read %s (the trial's off/on pairs: "
		    "%.2fx the rate with it, median; on needs every pair faster and %.2fx)", pair,
		    t->on ? "on" : "off", t->last_gain, VL_EVICT_MIN_GAIN);
}

void serve_evict_start(struct serve *s, struct serve_port *p, uint32_t pair, double now)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct vl_vq *vq = sp->vq[SERVE_RING_TX];

	if (s->o.evict == SERVE_EVICT_AUTO) {
		/* A queue that comes back starts a new trial, with the counters of the trials
		 * so far (the final statistics sum them); its last decision still stands for
		 * the announcements. The first start of a pair finds the tuner zeroed. */
		vl_evict_tuner_restart(&sp->evict, to_ns(now), moved(vq));
		apply(s, p, vq, sp->evict.on);
	} else {
		apply(s, p, vq, s->o.evict == SERVE_EVICT_ON);
	}
}

void serve_evict_tick(struct serve *s, double now)
{
	if (s->o.evict != SERVE_EVICT_AUTO)
		return;
	uint64_t ns = to_ns(now);

	for (uint32_t i = 0; i < s->nports; i++) {
		struct serve_port *p = &s->port[i];

		for (uint32_t q = 0; q < s->o.queues; q++) {
			struct serve_pair *sp = &p->pairs[q];
			struct vl_vq *vq = sp->vq[SERVE_RING_TX];

			if (!vq)
				continue;
			apply(s, p, vq, vl_evict_tuner_step(&sp->evict, ns, moved(vq)));
			announce(s, p, q);
		}
	}
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --evict off|on|auto` and `--prefetch off|on|auto`: evict-after-read
 * (vl_vq_set_evict_reads) and payload prefetch (vl_vq_set_tx_prefetch) on the guest's
 * transmit rings. Both pay when the front end's CPU is far from serve's and cost when it is
 * close, and neither serve nor the front end can see where a hypervisor put them. So those
 * set to auto, the default, follow one vl_evict_tuner per TX ring, which tries them off and
 * on together now and then and keeps the setting under which the ring ran faster (one
 * tuner, not one each: two trials at once would measure each other). */
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

static bool tuned(const struct serve *s)
{
	return s->o.evict == SERVE_EVICT_AUTO || s->o.prefetch == SERVE_EVICT_AUTO;
}

static bool wanted(enum serve_evict when, bool tuner_on)
{
	return when == SERVE_EVICT_AUTO ? tuner_on : when == SERVE_EVICT_ON;
}

/* The two measures as their options and the tuner's decision (tuner_on) say. */
static void apply(struct serve *s, struct serve_port *p, struct vl_vq *vq, bool tuner_on)
{
	const bool evict = wanted(s->o.evict, tuner_on);

	if (vl_vq_tx_prefetch(vq) != wanted(s->o.prefetch, tuner_on))
		vl_vq_set_tx_prefetch(vq, wanted(s->o.prefetch, tuner_on));
	if (vl_vq_evict_reads(vq) == evict)
		return;
	if (vl_vq_set_evict_reads(vq, evict) == VL_OK ||
	    atomic_exchange_explicit(&s->evict_unsupported_told, true, memory_order_relaxed))
		return;
	serve_event(s, "evict", p, "this CPU has no CLFLUSHOPT: --evict %s runs without "
		    "evicting", s->o.evict == SERVE_EVICT_ON ? "on" : "auto");
}

/* A trial that changed the decision is an event: the rate moved with where the CPUs are. */
static void announce(struct serve *s, struct serve_port *p, uint32_t pair)
{
	struct serve_pair *sp = &p->pairs[pair];
	const struct vl_evict_tuner *t = &sp->evict;
	const bool ev = s->o.evict == SERVE_EVICT_AUTO, pf = s->o.prefetch == SERVE_EVICT_AUTO;
	const char *what = ev && pf ? "evict-after-read and payload prefetch"
			   : ev ? "evict-after-read" : "payload prefetch";

	if (t->trials == sp->evict_trials_seen)
		return;
	sp->evict_trials_seen = t->trials;
	if (t->on == sp->evict_told)
		return;
	sp->evict_told = t->on;
	serve_event(s, "evict", p, "queue pair %u: %s %s (the trial's off/on pairs: %.2fx the "
		    "rate with it, median; on needs every pair faster and %.2fx)", pair, what,
		    t->on ? "on" : "off", t->last_gain, VL_EVICT_MIN_GAIN);
}

void serve_evict_start(struct serve *s, struct serve_port *p, uint32_t pair, double now)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct vl_vq *vq = sp->vq[SERVE_RING_TX];

	if (tuned(s)) {
		/* A queue that comes back starts a new trial, with the counters of the trials
		 * so far (the final statistics sum them); its last decision still stands for
		 * the announcements. The first start of a pair finds the tuner zeroed. */
		vl_evict_tuner_restart(&sp->evict, to_ns(now), moved(vq));
		apply(s, p, vq, sp->evict.on);
	} else {
		apply(s, p, vq, false);
	}
}

void serve_evict_tick_pair(struct serve *s, uint32_t q, double now)
{
	if (!tuned(s))
		return;
	uint64_t ns = to_ns(now);

	for (uint32_t i = 0; i < s->nports; i++) {
		struct serve_port *p = &s->port[i];
		struct serve_pair *sp = &p->pairs[q];
		struct vl_vq *vq = sp->vq[SERVE_RING_TX];

		if (!vq)
			continue;
		apply(s, p, vq, vl_evict_tuner_step(&sp->evict, ns, moved(vq)));
		announce(s, p, q);
	}
}

void serve_evict_tick(struct serve *s, double now)
{
	for (uint32_t q = 0; q < s->o.queues; q++)
		serve_evict_tick_pair(s, q, now);
}

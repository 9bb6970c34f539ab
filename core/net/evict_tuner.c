/* SPDX-License-Identifier: MIT */
/* Evict-after-read: whether this CPU can, and the tuner that decides whether it pays
 * (vl_vq.h has the rules). The tuner is plain arithmetic on the times and counts it is given,
 * so tests script it. */
#include <stdint.h>

#include "net/evict.h"
#include "vhostlab/vl_vq.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

bool vl_cpu_can_evict(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return (b >> 23) & 1u;
}
#else
bool vl_cpu_can_evict(void)
{
	return false;
}
#endif

/* The trial's epochs, off (false) or on (true): off on | on off | off on. */
static const bool trial_mode[VL_EVICT_TRIAL_EPOCHS] = {false, true, true, false, false, true};

void vl_evict_tuner_init(struct vl_evict_tuner *t, uint64_t now_ns, uint64_t packets)
{
	*t = (struct vl_evict_tuner){.in_trial = true};
	t->epoch_start_ns = now_ns;
	t->epoch_start_packets = packets;
	t->on = trial_mode[0];
}

void vl_evict_tuner_restart(struct vl_evict_tuner *t, uint64_t now_ns, uint64_t packets)
{
	const struct vl_evict_tuner was = *t;

	vl_evict_tuner_init(t, now_ns, packets);
	t->trials = was.trials;
	t->trials_on = was.trials_on;
	t->trials_idle = was.trials_idle;
	t->shifts = was.shifts;
	t->retries = was.retries;
	t->last_gain = was.last_gain;
}

static double median3(double a, double b, double c)
{
	if (a > b) {
		double x = a;

		a = b;
		b = x;
	}
	/* a <= b: the median is b, unless c is below it (then the larger of a and c). */
	if (c >= b)
		return b;
	return c > a ? c : a;
}

/* The trial is complete: on wins if every pair gained and the median gain is enough. Returns
 * whether the verdict was split: the median gain enough, but a pair the other way. */
static bool decide(struct vl_evict_tuner *t)
{
	double g[3];
	bool all = true;

	for (uint32_t p = 0; p < 3; p++) {
		uint32_t i = 2 * p;
		double off = trial_mode[i] ? t->rate[i + 1] : t->rate[i];
		double on = trial_mode[i] ? t->rate[i] : t->rate[i + 1];

		g[p] = on / off; /* off > 0: an idle epoch ended the trial before */
		all = all && g[p] > 1.0;
	}
	t->last_gain = median3(g[0], g[1], g[2]);
	t->on = all && t->last_gain >= VL_EVICT_MIN_GAIN;
	/* The rate the hold expects: the median of the winner's three epochs. */
	bool want = t->on;
	double r[3];

	for (uint32_t i = 0, k = 0; i < VL_EVICT_TRIAL_EPOCHS; i++)
		if (trial_mode[i] == want)
			r[k++] = t->rate[i];
	t->hold_rate = median3(r[0], r[1], r[2]);
	t->trials++;
	t->trials_on += t->on;
	return !all && t->last_gain >= VL_EVICT_MIN_GAIN;
}

/* Hold the verdict just reached: as long as the last hold when it agrees with the verdict
 * held then (the conditions have not moved), twice as long, else the shortest hold again. */
static void start_hold(struct vl_evict_tuner *t)
{
	if (!t->decided || t->on != t->held_on)
		t->hold_epochs = VL_EVICT_HOLD_EPOCHS;
	else if (t->hold_epochs * 2 <= VL_EVICT_HOLD_MAX_EPOCHS)
		t->hold_epochs *= 2;
	t->decided = true;
	t->in_trial = false;
	t->epoch = 0;
}

bool vl_evict_tuner_step(struct vl_evict_tuner *t, uint64_t now_ns, uint64_t packets)
{
	/* A clock that went back, or a count that did (a new queue): start the epoch again. */
	if (now_ns < t->epoch_start_ns || packets < t->epoch_start_packets) {
		t->epoch_start_ns = now_ns;
		t->epoch_start_packets = packets;
		return t->on;
	}
	uint64_t span = now_ns - t->epoch_start_ns;

	if (span < VL_EVICT_EPOCH_NS)
		return t->on;
	uint64_t got = packets - t->epoch_start_packets;
	/* Epochs may run long (the caller's clock is coarse, or it slept): the rate is per ns,
	 * and the idle test scales with the span, so a long quiet epoch is still quiet. */
	double rate = (double)got / (double)span;
	bool idle = rate * (double)VL_EVICT_EPOCH_NS < (double)VL_EVICT_MIN_PACKETS;

	t->epoch_start_ns = now_ns;
	t->epoch_start_packets = packets;
	if (!t->in_trial) {
		/* A rate that left the trial's by more than VL_EVICT_SHIFT either way: the CPUs
		 * moved (or the traffic changed), and the decision may no longer hold. */
		bool shifted = rate * VL_EVICT_SHIFT < t->hold_rate ||
			       rate > t->hold_rate * VL_EVICT_SHIFT;

		t->shifts += shifted;
		if (shifted || ++t->epoch >= t->hold_epochs) {
			/* The held verdict goes with the trial (start_hold compares the next one
			 * with it), unless the rate moved: then nothing held before counts. */
			t->held_on = t->on;
			t->decided = t->decided && !shifted;
			t->in_trial = true;
			t->epoch = 0;
			t->on = trial_mode[0];
		}
		return t->on;
	}
	/* Nothing to measure: off, and the trial starts over with the next epoch, so the
	 * first epochs with traffic decide (a trial ends quickly once it flows). */
	if (idle) {
		t->trials_idle += t->epoch > 0;
		t->epoch = 0;
		t->on = trial_mode[0];
		return t->on;
	}
	t->rate[t->epoch++] = rate;
	if (t->epoch < VL_EVICT_TRIAL_EPOCHS) {
		t->on = trial_mode[t->epoch];
		return t->on;
	}
	/* A split verdict may be one noisy epoch (far apart, a trial log showed such verdicts
	 * where eviction paid), so look again before holding off for VL_EVICT_HOLD_EPOCHS. The
	 * all-pairs rule stays: a steady drift in the rate gives a split verdict every time,
	 * and after VL_EVICT_RETRIES of them off is held. */
	if (decide(t) && t->retry_run < VL_EVICT_RETRIES) {
		t->retry_run++;
		t->retries++;
		t->epoch = 0;
		t->on = trial_mode[0];
		return t->on;
	}
	t->retry_run = 0;
	start_hold(t);
	return t->on;
}

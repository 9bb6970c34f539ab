/* SPDX-License-Identifier: MIT */
/* Evict-after-read (vl_vq_set_evict_reads) and its tuner (vl_evict_tuner).
 *
 * The eviction: dequeue evicts the first source line of every copy it makes, batched or
 * direct, once per copy; packets come out byte for byte as without it; enqueue (whose copies
 * write guest memory) never evicts; off stops it. Split and packed, without and with
 * VIRTIO_F_IN_ORDER. On a CPU without CLFLUSHOPT the call must refuse and nothing is evicted.
 *
 * The tuner, scripted with the times and counts a poll loop would give it: the order of a
 * trial's epochs, the verdict on clear gains, ties, small gains, a lost pair and a steady
 * drift, the idle rule, the hold between trials and its early end when the rate moves, and a
 * clock that goes back. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "net/evict.h"
#include "ring_fixture.h"

static const struct vl_vq_stats *tx_st(const struct rf *f)
{
	return vl_vq_stats(f->tx.q);
}

/* Turn eviction on for s; false (after checking the refusal) where this CPU cannot. */
static bool evict_on(struct rf_q *s)
{
	int rc = vl_vq_set_evict_reads(s->q, true);

	/* The public question answers what the core's own test does. */
	assert_int_equal(vl_vq_evict_supported(), vl_cpu_can_evict());
	if (!vl_cpu_can_evict()) {
		assert_int_equal(rc, VL_ERR_UNSUPPORTED);
		assert_false(vl_vq_evict_reads(s->q));
		return false;
	}
	assert_int_equal(rc, VL_OK);
	assert_true(vl_vq_evict_reads(s->q));
	return true;
}

/* Chains of one, two and three descriptors (payload pieces 60; 744 + 756; 92 + 104 + 104
 * bytes): six copies, the two of the 1500-byte packet above the batch threshold (direct),
 * the rest batched. Each copy evicts one line; the packets are unchanged. Then off: a burst
 * evicts nothing more. */
static void scn_evicts_one_line_per_copy(struct rf *f)
{
	bool can = evict_on(&f->tx);
	struct rf_good g[3] = {
		rf_post_good(f, &f->tx, 60, 1),
		rf_post_good_n(f, &f->tx, 1500, 2, 2),
		rf_post_good_n(f, &f->tx, 300, 3, 3),
	};

	rf_burst_expect_goods(f, &f->tx, g, 3);
	assert_int_equal(tx_st(f)->copies_direct, 2);
	assert_int_equal(tx_st(f)->copies_batched, 4);
	assert_int_equal(tx_st(f)->lines_evicted, can ? 6 : 0);
	for (int i = 0; i < 3; i++)
		rf_free_good(f, &g[i]);

	assert_int_equal(vl_vq_set_evict_reads(f->tx.q, false), VL_OK);
	assert_false(vl_vq_evict_reads(f->tx.q));
	struct rf_good h = rf_post_good_n(f, &f->tx, 1500, 4, 2);

	rf_burst_expect_good(f, &f->tx, &h);
	assert_int_equal(tx_st(f)->copies_direct, 4);
	assert_int_equal(tx_st(f)->lines_evicted, can ? 6 : 0);
	rf_free_good(f, &h);
}

/* On the receive queue it is a no-op: enqueue's copies write guest memory, which the driver
 * reads next, and their sources are host packets. */
static void scn_enqueue_never_evicts(struct rf *f)
{
	evict_on(&f->rx);
	struct rf_good g[2] = {
		rf_post_good(f, &f->rx, 60, 5),
		rf_post_good(f, &f->rx, 1500, 6),
	};

	rf_burst_expect_goods(f, &f->rx, g, 2);
	/* At least the two payloads were copied (headers may be stored apart). */
	assert_true(vl_vq_stats(f->rx.q)->copies_batched + vl_vq_stats(f->rx.q)->copies_direct >=
		    2);
	assert_int_equal(vl_vq_stats(f->rx.q)->lines_evicted, 0);
	for (int i = 0; i < 2; i++)
		rf_free_good(f, &g[i]);
}

/* The touch ceiling evicts the one line it reads, per good packet; null reads nothing and
 * evicts nothing. */
static void scn_touch_evicts_the_line_it_reads(struct rf *f)
{
	bool can = evict_on(&f->tx);
	struct rf_good g[3] = {
		rf_post_good(f, &f->tx, 60, 7),
		rf_post_good_n(f, &f->tx, 1500, 8, 2),
		rf_post_good_n(f, &f->tx, 300, 9, 3),
	};
	uint64_t firsts = 0;

	assert_int_equal(vl_net_discard_touch(f->tx.q, 32, NULL, &firsts), 3);
	assert_int_equal(firsts, rf_pattern_byte(7, 0) + rf_pattern_byte(8, 0) +
					 rf_pattern_byte(9, 0));
	assert_int_equal(tx_st(f)->lines_evicted, can ? 3 : 0);
	for (int i = 0; i < 3; i++) {
		rf_expect_used(&f->tx, g[i].head, 0);
		rf_free_good(f, &g[i]);
	}
	struct rf_good h = rf_post_good(f, &f->tx, 60, 10);

	assert_int_equal(vl_net_discard(f->tx.q, 32, NULL), 1);
	assert_int_equal(tx_st(f)->lines_evicted, can ? 3 : 0);
	rf_expect_used(&f->tx, h.head, 0);
	rf_free_good(f, &h);
}

/* ---- the tuner ------------------------------------------------------------------------ */

/* A poll loop's view: the clock and the running packet count. */
struct script {
	struct vl_evict_tuner t;
	uint64_t now, packets;
};

static void script_init(struct script *s)
{
	s->now = 1000000000ull; /* any start */
	s->packets = 123;
	vl_evict_tuner_init(&s->t, s->now, s->packets);
}

/* One epoch of VL_EVICT_EPOCH_NS at `mpps` million packets per second, fed as a loop would
 * (a step every millisecond); returns the decision at its end. */
static bool epoch(struct script *s, double mpps)
{
	const uint64_t step = 1000000; /* 1 ms */
	bool on = s->t.on;

	for (uint64_t t = 0; t < VL_EVICT_EPOCH_NS; t += step) {
		s->now += step;
		s->packets += (uint64_t)(mpps * 1e6 * (double)step / 1e9);
		on = vl_evict_tuner_step(&s->t, s->now, s->packets);
	}
	return on;
}

/* A trial whose off epochs run at off_mpps[i] and on epochs at on_mpps[i] (the i-th pair):
 * checks that the modes come in the order off on | on off | off on, and that the trial ends
 * in a hold unless its verdict was split and tried again; returns the verdict. */
static bool trial(struct script *s, const double off_mpps[3], const double on_mpps[3])
{
	static const bool order[6] = {false, true, true, false, false, true};
	bool on = false;

	assert_true(s->t.in_trial);
	for (uint32_t e = 0; e < 6; e++) {
		assert_int_equal(s->t.on, order[e]);
		on = epoch(s, order[e] ? on_mpps[e / 2] : off_mpps[e / 2]);
	}
	assert_int_equal(s->t.in_trial, s->t.retry_run > 0);
	return on;
}

static void test_tuner_turns_on_when_it_pays(void **state)
{
	(void)state;
	struct script s;

	script_init(&s);
	assert_false(s.t.on); /* a trial starts off */
	assert_true(trial(&s, (double[]){5, 5.2, 4.9}, (double[]){9.8, 10, 10.1}));
	assert_int_equal(s.t.trials, 1);
	assert_int_equal(s.t.trials_on, 1);
	assert_true(s.t.last_gain > 1.9 && s.t.last_gain < 2.0); /* median of 1.96, 1.92, 2.06 */
	/* Held on for VL_EVICT_HOLD_EPOCHS epochs while the rate stays within VL_EVICT_SHIFT of
	 * the on epochs' median (10 Mpps), then a new trial. */
	for (uint32_t e = 0; e < VL_EVICT_HOLD_EPOCHS - 1; e++)
		assert_true(epoch(&s, e % 2 ? 7.8 : 12.9));
	assert_false(epoch(&s, 10));
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.shifts, 0);
}

/* Epochs at mpps while the tuner holds its verdict, up to limit: how many it held. */
static uint32_t hold_for(struct script *s, double mpps, uint32_t limit)
{
	uint32_t n = 0;

	while (!s->t.in_trial && n < limit) {
		epoch(s, mpps);
		n++;
	}
	return n;
}

/* Each verdict that agrees with the one held before doubles the next hold, up to
 * VL_EVICT_HOLD_MAX_EPOCHS; a verdict the other way, or a hold a moved rate cut short,
 * starts again from VL_EVICT_HOLD_EPOCHS. */
static void test_tuner_holds_longer_while_verdicts_agree(void **state)
{
	(void)state;
	struct script s;
	const double off[3] = {5, 5, 5}, on[3] = {10, 10, 10};
	const double slow[3] = {16, 16, 16}, slower[3] = {13, 13, 13};
	uint32_t want = VL_EVICT_HOLD_EPOCHS;

	script_init(&s);
	for (uint32_t k = 0; k < 6; k++) {
		assert_true(trial(&s, off, on));
		assert_int_equal(s.t.hold_epochs, want);
		assert_int_equal(hold_for(&s, 10, 1000), want);
		if (want * 2 <= VL_EVICT_HOLD_MAX_EPOCHS)
			want *= 2;
	}
	assert_int_equal(want, VL_EVICT_HOLD_MAX_EPOCHS);
	assert_int_equal(s.t.trials, 6);
	/* The verdict turns: the shortest hold, then doubling again. */
	assert_false(trial(&s, slow, slower));
	assert_int_equal(hold_for(&s, 16, 1000), VL_EVICT_HOLD_EPOCHS);
	assert_false(trial(&s, slow, slower));
	assert_int_equal(s.t.hold_epochs, 2 * VL_EVICT_HOLD_EPOCHS);
	/* A rate that moved cuts the hold short, and the verdict after it is held for the
	 * shortest hold though it agrees with the one before. */
	assert_int_equal(hold_for(&s, 16, 10), 10);
	assert_false(epoch(&s, 8));
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.shifts, 1);
	assert_false(trial(&s, (double[]){8, 8, 8}, (double[]){7, 7, 7}));
	assert_int_equal(hold_for(&s, 8, 1000), VL_EVICT_HOLD_EPOCHS);
	assert_int_equal(s.t.shifts, 1);
}

/* A hold ends early when an epoch's rate moves more than VL_EVICT_SHIFT away from the
 * winner's: down (the CPUs moved apart, or the traffic fell) or up (they moved close). */
static void test_tuner_retries_when_the_rate_moves(void **state)
{
	(void)state;
	struct script s;

	script_init(&s);
	assert_false(trial(&s, (double[]){16, 16.5, 15.5}, (double[]){13, 13, 13}));
	assert_false(epoch(&s, 16));
	assert_false(s.t.in_trial);
	assert_false(epoch(&s, 5)); /* off stays off for the new trial's first epoch */
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.shifts, 1);
	assert_true(trial(&s, (double[]){5, 5, 5}, (double[]){10, 10.5, 9.5}));
	assert_true(epoch(&s, 10));
	assert_true(epoch(&s, 12.9)); /* within 1.3x of 10 */
	assert_false(s.t.in_trial);
	assert_false(epoch(&s, 13.1));
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.shifts, 2);
}

static void test_tuner_keeps_off_without_a_clear_gain(void **state)
{
	(void)state;
	struct script s;

	/* A tie (a front end that sends at a fixed rate): off, the cheaper. */
	script_init(&s);
	assert_false(trial(&s, (double[]){3, 3, 3}, (double[]){3, 3, 3}));
	/* Faster in every pair, but by 3 %: below VL_EVICT_MIN_GAIN. */
	script_init(&s);
	assert_false(trial(&s, (double[]){10, 10, 10}, (double[]){10.3, 10.3, 10.3}));
	assert_true(s.t.last_gain > 1.02 && s.t.last_gain < 1.04);
	/* One pair lost and the median gain under VL_EVICT_MIN_GAIN: held off, no new trial. */
	script_init(&s);
	assert_false(trial(&s, (double[]){10, 10, 10}, (double[]){10.3, 9.8, 10.4}));
	assert_false(s.t.in_trial);
	assert_int_equal(s.t.retries, 0);
	/* Slower with it: off. */
	script_init(&s);
	assert_false(trial(&s, (double[]){16, 16, 16}, (double[]){13, 13, 13}));
	assert_int_equal(s.t.trials, 1);
	assert_int_equal(s.t.trials_on, 0);
	/* Held off until the next trial. */
	for (uint32_t e = 0; e < VL_EVICT_HOLD_EPOCHS; e++) {
		assert_false(s.t.in_trial);
		assert_false(epoch(&s, 16));
	}
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.shifts, 0);
}

/* A split verdict (a median gain of 1.5, one pair lost, as one noisy epoch far apart gives)
 * is not held for a second: a new trial starts at once, and a clean one turns it on. */
static void test_tuner_tries_a_split_verdict_again(void **state)
{
	(void)state;
	struct script s;

	script_init(&s);
	assert_false(trial(&s, (double[]){10, 10, 10}, (double[]){15, 9, 16}));
	assert_true(s.t.last_gain > 1.49 && s.t.last_gain < 1.51);
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.retries, 1);
	assert_int_equal(s.t.trials, 1);
	assert_true(trial(&s, (double[]){10, 10, 10}, (double[]){15, 14, 16}));
	assert_false(s.t.in_trial);
	assert_int_equal(s.t.retries, 1);
	assert_int_equal(s.t.trials, 2);
	assert_int_equal(s.t.trials_on, 1);
	/* The run of retries starts over after a clean verdict: the next split one is tried
	 * again too. */
	for (uint32_t e = 0; e + 1 < VL_EVICT_HOLD_EPOCHS; e++)
		assert_true(epoch(&s, 15));
	assert_false(epoch(&s, 15)); /* the hold is over: a trial, off first */
	assert_true(s.t.in_trial);
	assert_false(trial(&s, (double[]){10, 10, 10}, (double[]){15, 9, 16}));
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.retries, 2);
}

/* A rate that climbs 10 % an epoch, whatever the mode: with off first in every pair each
 * pair would show a gain; the middle pair's reversed order shows a loss, so the verdict is
 * split every time. After VL_EVICT_RETRIES tries again off is held. */
static void test_tuner_ignores_a_steady_drift(void **state)
{
	(void)state;
	struct script s;
	double r[6 * (VL_EVICT_RETRIES + 1)];

	r[0] = 5;
	for (uint32_t i = 1; i < 6 * (VL_EVICT_RETRIES + 1); i++)
		r[i] = r[i - 1] * 1.1;
	script_init(&s);
	for (uint32_t k = 0; k <= VL_EVICT_RETRIES; k++) {
		const double *q = r + 6 * k;

		/* Epochs: off q0, on q1, on q2, off q3, off q4, on q5. */
		assert_false(trial(&s, (double[]){q[0], q[3], q[4]}, (double[]){q[1], q[2], q[5]}));
		assert_int_equal(s.t.in_trial, k < VL_EVICT_RETRIES);
	}
	assert_int_equal(s.t.retries, VL_EVICT_RETRIES);
	assert_int_equal(s.t.trials, VL_EVICT_RETRIES + 1);
	assert_int_equal(s.t.trials_on, 0);
	assert_false(s.t.on); /* held off (trial() checked the hold) */
	assert_int_equal(s.t.retry_run, 0);
}

/* An epoch under VL_EVICT_MIN_PACKETS starts the trial over, off (counted when it had
 * measured an epoch); idle epochs keep it waiting; the first busy ones decide. */
static void test_tuner_idle_starts_the_trial_over(void **state)
{
	(void)state;
	struct script s;

	script_init(&s);
	for (int e = 0; e < 10; e++) /* no traffic yet: every epoch is a trial's first */
		assert_false(epoch(&s, 0));
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.trials_idle, 0);
	assert_true(epoch(&s, 10)); /* off at 10 Mpps: the next epoch is on */
	assert_false(epoch(&s, 0.05)); /* on, 50 000 packets/s: 1000 in the epoch */
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.epoch, 0);
	assert_int_equal(s.t.trials_idle, 1);
	assert_int_equal(s.t.trials, 0);
	/* Traffic again: a whole trial, which decides. */
	assert_true(trial(&s, (double[]){5, 5, 5}, (double[]){8, 8, 8}));
	assert_int_equal(s.t.trials, 1);
	/* Idle while held: the rate fell, so a new trial, which waits for traffic, off. */
	assert_false(epoch(&s, 0));
	assert_true(s.t.in_trial);
	assert_false(epoch(&s, 0));
	assert_int_equal(s.t.epoch, 0);
}

/* A queue that starts over (serve: the front end reconnected) gets a new trial, off, from
 * the new clock and count, and keeps the counters of the trials before. */
static void test_tuner_restart_keeps_the_counters(void **state)
{
	(void)state;
	struct script s;

	script_init(&s);
	assert_true(trial(&s, (double[]){5, 5, 5}, (double[]){10, 10, 10}));
	assert_true(epoch(&s, 10));
	assert_false(epoch(&s, 20)); /* a shift */
	assert_true(epoch(&s, 20)); /* the new trial's first epoch: on next */
	assert_false(epoch(&s, 0.01)); /* idle: started over */
	const struct vl_evict_tuner was = s.t;

	assert_int_equal(was.trials, 1);
	assert_int_equal(was.trials_on, 1);
	assert_int_equal(was.shifts, 1);
	assert_int_equal(was.trials_idle, 1);
	/* A split verdict tried again, an on decision held, then the restart: off, in a trial,
	 * at epoch 0, measured from the count it is given (a new queue counts from 0). */
	assert_false(trial(&s, (double[]){5, 5, 5}, (double[]){10, 4, 10}));
	assert_true(trial(&s, (double[]){5, 5, 5}, (double[]){10, 10, 10}));
	s.now += 12345;
	s.packets = 0;
	vl_evict_tuner_restart(&s.t, s.now, s.packets);
	assert_false(s.t.on);
	assert_true(s.t.in_trial);
	assert_int_equal(s.t.epoch, 0);
	assert_int_equal(s.t.epoch_start_ns, s.now);
	assert_int_equal(s.t.epoch_start_packets, 0);
	assert_int_equal(s.t.trials, 3);
	assert_int_equal(s.t.trials_on, 2);
	assert_int_equal(s.t.shifts, 1);
	assert_int_equal(s.t.trials_idle, 1);
	assert_int_equal(s.t.retries, 1);
	assert_int_equal(s.t.retry_run, 0);
	assert_true(s.t.last_gain > 1.9 && s.t.last_gain < 2.1);
	/* And it runs a whole trial from there. */
	assert_false(trial(&s, (double[]){7, 7, 7}, (double[]){7, 7, 7}));
	assert_int_equal(s.t.trials, 4);
	assert_int_equal(s.t.trials_on, 2);
}

/* Steps closer together than an epoch decide nothing; one long gap (the loop slept) makes a
 * long epoch whose rate is per nanosecond: 3000 packets over 40 ms is idle (1500 per 20 ms),
 * 6000 is not. A clock that goes back starts the epoch again, and so does a count that does
 * (the queue was replaced). */
static void test_tuner_epochs_follow_the_clock(void **state)
{
	(void)state;
	struct script s;

	script_init(&s);
	s.now += VL_EVICT_EPOCH_NS - 1;
	s.packets += 1000000;
	assert_false(vl_evict_tuner_step(&s.t, s.now, s.packets));
	assert_int_equal(s.t.epoch, 0);

	script_init(&s);
	s.now += 2 * VL_EVICT_EPOCH_NS;
	s.packets += 3000;
	assert_false(vl_evict_tuner_step(&s.t, s.now, s.packets));
	assert_int_equal(s.t.epoch, 0); /* idle: the trial starts over */
	assert_int_equal(s.t.epoch_start_ns, s.now);

	script_init(&s);
	s.now += 2 * VL_EVICT_EPOCH_NS;
	s.packets += 6000;
	assert_true(vl_evict_tuner_step(&s.t, s.now, s.packets)); /* epoch 0 done: on next */
	assert_int_equal(s.t.epoch, 1);

	/* Back in time: no epoch ends, the next one starts from there. */
	s.now -= VL_EVICT_EPOCH_NS;
	assert_true(vl_evict_tuner_step(&s.t, s.now, s.packets + 5000));
	assert_int_equal(s.t.epoch, 1);
	assert_int_equal(s.t.epoch_start_ns, s.now);
	/* A count that went back (a new queue): likewise. */
	assert_true(vl_evict_tuner_step(&s.t, s.now + VL_EVICT_EPOCH_NS, 7));
	assert_int_equal(s.t.epoch, 1);
	assert_int_equal(s.t.epoch_start_packets, 7);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

static const struct rf_case cases[] = {
	RF_CASES4(evicts_one_line_per_copy),
	RF_CASES4(enqueue_never_evicts),
	RF_CASES4(touch_evicts_the_line_it_reads),
};

int main(void)
{
	const struct CMUnitTest more[] = {
		cmocka_unit_test(test_tuner_turns_on_when_it_pays),
		cmocka_unit_test(test_tuner_keeps_off_without_a_clear_gain),
		cmocka_unit_test(test_tuner_retries_when_the_rate_moves),
		cmocka_unit_test(test_tuner_holds_longer_while_verdicts_agree),
		cmocka_unit_test(test_tuner_tries_a_split_verdict_again),
		cmocka_unit_test(test_tuner_ignores_a_steady_drift),
		cmocka_unit_test(test_tuner_idle_starts_the_trial_over),
		cmocka_unit_test(test_tuner_epochs_follow_the_clock),
		cmocka_unit_test(test_tuner_restart_keeps_the_counters),
	};

	return rf_run_cases("evict", RF_LIST(cases), RF_LIST(more));
}

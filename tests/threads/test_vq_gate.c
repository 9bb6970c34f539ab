/* SPDX-License-Identifier: MIT */
/* The queue gate (vl_vq.h, "Queues over threads"): a control thread pauses an owner thread
 * at its burst boundary, changes what the owner works on, and resumes it. The owner's
 * "queue" here is plain memory it writes every round without atomics: if a pause did not
 * stop it, the control thread would see it change mid-pause (and ThreadSanitizer, in the
 * tsan part of ./lab test, would report the race). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vhostlab/vhostlab.h"

struct owner {
	struct vl_vq_gate *gate;
	uint64_t *work;          /* what the owner writes every round; replaced while paused */
	uint64_t rounds;         /* owner only until joined */
	uint64_t pauses;         /* owner only until joined: vl_vq_gate_poll returned true */
	uint64_t swaps_seen;     /* owner only: times *work was found replaced after a pause */
	uint64_t *last;
	atomic_bool stop;
	bool leave;              /* call vl_vq_gate_leave before exiting */
};

static void *owner_main(void *arg)
{
	struct owner *o = arg;
	uint64_t *work = o->work;

	o->last = work;
	while (!atomic_load_explicit(&o->stop, memory_order_acquire)) {
		(*work)++;  /* the "burst" */
		o->rounds++;
		if (vl_vq_gate_poll(o->gate)) {
			o->pauses++;
			work = o->work;  /* re-read what the control thread may have replaced */
			if (work != o->last)
				o->swaps_seen++;
			o->last = work;
		}
	}
	if (o->leave)
		vl_vq_gate_leave(o->gate);
	return NULL;
}

static void test_pause_stops_the_owner_and_resume_hands_over(void **state)
{
	(void)state;
	uint64_t a = 0, b = 0;
	struct owner o = {.work = &a};

	o.gate = vl_vq_gate_create();
	assert_non_null(o.gate);
	atomic_init(&o.stop, false);
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, owner_main, &o), 0);
	uint32_t swaps = 0;

	for (int i = 0; i < 2000; i++) {
		uint32_t n = vl_vq_gate_pause(o.gate);
		uint64_t *cur = o.work;
		uint64_t before = *cur;

		/* Paused: the owner does not touch its work, however long the pause lasts. */
		for (volatile int spin = 0; spin < 200; spin++)
			;
		assert_int_equal(*cur, before);
		if (i % 3 == 0) {  /* hand over another "queue", as SET_MEM_TABLE would */
			o.work = cur == &a ? &b : &a;
			swaps++;
		}
		vl_vq_gate_resume(o.gate, n);
	}
	atomic_store_explicit(&o.stop, true, memory_order_release);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* Every pause was met by the owner once: the control thread asks for the next only
	 * after the owner acknowledged this one, and the owner acknowledges the next only
	 * after it saw this one end. Every hand-over was seen after its pause. */
	assert_int_equal(o.pauses, 2000);
	assert_int_equal(o.swaps_seen, swaps);
	assert_int_equal(a + b, o.rounds);
	vl_vq_gate_destroy(o.gate);
}

static void test_a_pause_is_not_granted_by_the_previous_acknowledgement(void **state)
{
	(void)state;
	struct vl_vq_gate *g = vl_vq_gate_create();

	assert_non_null(g);
	/* Single-threaded, the owner's side played by hand: the owner acknowledged pause 1
	 * and is released; pause 2 is asked before the owner polls again. */
	uint32_t n1 = vl_vq_gate_request(g);

	vl_vq_gate_resume(g, n1);      /* run = n1 first, so the owner's poll does not wait */
	assert_true(vl_vq_gate_poll(g));
	uint32_t n2 = vl_vq_gate_request(g);

	assert_int_not_equal(n1, n2);
	assert_true(vl_vq_gate_pending(g));
	vl_vq_gate_resume(g, n2);
	assert_true(vl_vq_gate_poll(g));  /* the owner stops for n2 (run already says n2) */
	assert_false(vl_vq_gate_pending(g));
	assert_false(vl_vq_gate_poll(g));
	vl_vq_gate_destroy(g);
}

static void test_an_owner_that_left_grants_every_pause(void **state)
{
	(void)state;
	uint64_t a = 0;
	struct owner o = {.work = &a, .leave = true};

	o.gate = vl_vq_gate_create();
	assert_non_null(o.gate);
	atomic_init(&o.stop, true);  /* leaves at once */
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, owner_main, &o), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	uint32_t n = vl_vq_gate_pause(o.gate);  /* returns: nobody is there to stop */

	vl_vq_gate_resume(o.gate, n);
	assert_int_equal(o.rounds, 0);
	vl_vq_gate_destroy(o.gate);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pause_stops_the_owner_and_resume_hands_over),
		cmocka_unit_test(test_a_pause_is_not_granted_by_the_previous_acknowledgement),
		cmocka_unit_test(test_an_owner_that_left_grants_every_pause),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

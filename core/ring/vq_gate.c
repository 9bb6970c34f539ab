/* SPDX-License-Identifier: MIT */
/* The queue gate (vl_vq.h, "Queues over threads"): how a control thread reaches the queues
 * another thread owns. Three counters, each written by one side only:
 *   req  control: the number of the pause it asks for (0: none asked yet)
 *   ack  owner:   the number of the last pause it stopped for (or VQ_GATE_GONE)
 *   run  control: the number of the last pause it ended
 * A pause is numbered, not a flag, so a control thread that resumes and at once pauses again
 * can never take the owner's acknowledgement of the previous pause for the new one.
 * Every store is a release and every load that decides something an acquire: whatever the
 * control thread did to the queues before `run` is visible to the owner after it reads
 * `run`, and whatever the owner did before `ack` is visible to the control thread. */
/* nanosleep, sched_yield: POSIX, in libc. */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "alloc.h"
#include "vhostlab/vl_vq.h"

/* ack once the owner left: every later pause is granted at once. */
#define VQ_GATE_GONE UINT32_MAX
/* A waiting side spins this many times (about a microsecond each with the yield), then
 * sleeps in short naps: a pause lasts one control message, so most waits end spinning,
 * and a long one (a table built while the owner waits) leaves the CPU to others. */
#define VQ_GATE_SPINS 64u
#define VQ_GATE_NAP_NS 20000L

struct vl_vq_gate {
	_Atomic uint32_t req;
	/* The owner's side on its own cache line: the owner polls req every burst, and the
	 * control thread's stores to run should not move the line it reads. */
	_Alignas(64) _Atomic uint32_t ack;
	_Atomic uint32_t run;
	_Alignas(64) uint32_t seen;   /* owner only: the last pause it stopped for */
	uint32_t next;                /* control only: the number of the next pause */
};

struct vl_vq_gate *vl_vq_gate_create(void)
{
	struct vl_vq_gate *g = vl_malloc(sizeof(*g));

	if (!g)
		return NULL;
	atomic_init(&g->req, 0);
	atomic_init(&g->ack, 0);
	atomic_init(&g->run, 0);
	g->seen = 0;
	g->next = 1;
	return g;
}

void vl_vq_gate_destroy(struct vl_vq_gate *g)
{
	free(g);
}

static void gate_wait_step(uint32_t *spins)
{
	if (*spins < VQ_GATE_SPINS) {
		(*spins)++;
		sched_yield();
		return;
	}
	struct timespec nap = {.tv_sec = 0, .tv_nsec = VQ_GATE_NAP_NS};

	nanosleep(&nap, NULL);
}

bool vl_vq_gate_pending(const struct vl_vq_gate *g)
{
	return atomic_load_explicit(&g->req, memory_order_relaxed) != g->seen;
}

bool vl_vq_gate_poll(struct vl_vq_gate *g)
{
	uint32_t r = atomic_load_explicit(&g->req, memory_order_acquire);

	if (r == g->seen)
		return false;
	/* Stop: nothing of ours touches a queue until run says this pause (or a later one,
	 * which the next poll acknowledges) ended. */
	g->seen = r;
	atomic_store_explicit(&g->ack, r, memory_order_release);
	uint32_t spins = 0;

	while (atomic_load_explicit(&g->run, memory_order_acquire) != r)
		gate_wait_step(&spins);
	return true;
}

void vl_vq_gate_leave(struct vl_vq_gate *g)
{
	atomic_store_explicit(&g->ack, VQ_GATE_GONE, memory_order_release);
}

uint32_t vl_vq_gate_request(struct vl_vq_gate *g)
{
	uint32_t n = g->next++;

	if (g->next == VQ_GATE_GONE)  /* skip GONE and 0 when the numbers wrap */
		g->next = 1;
	atomic_store_explicit(&g->req, n, memory_order_release);
	return n;
}

void vl_vq_gate_wait(struct vl_vq_gate *g, uint32_t pause)
{
	uint32_t spins = 0;

	for (;;) {
		uint32_t a = atomic_load_explicit(&g->ack, memory_order_acquire);

		if (a == pause || a == VQ_GATE_GONE)
			return;
		gate_wait_step(&spins);
	}
}

uint32_t vl_vq_gate_pause(struct vl_vq_gate *g)
{
	uint32_t n = vl_vq_gate_request(g);

	vl_vq_gate_wait(g, n);
	return n;
}

void vl_vq_gate_resume(struct vl_vq_gate *g, uint32_t pause)
{
	atomic_store_explicit(&g->run, pause, memory_order_release);
}

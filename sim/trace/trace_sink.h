/* SPDX-License-Identifier: MIT */
/* A trace sink: the calls a lab run makes to be recorded as a trace (docs/trace-format.md),
 * as a table of function pointers a tool hands to the run.
 *
 * Why a table and not the recorder (trace_record.h) itself: the fuzz harness
 * (sim/hostile_guest/) records only when `vhostlab trace from-fuzz` asks, and that tool
 * decides what happens to each statement -- cli/from_fuzz.c forwards it to the recorder and
 * streams it out at once, so a run that crashes the process still leaves its trace up to
 * the statement that crashed it, and keeps what the format cannot express apart. The
 * harness only reports: one NULL pointer test per host action while fuzzing.
 *
 * The protocol mirrors the recorder's:
 *   begin, queue (queue_ref), pool, dirty_log   the setup, before any statement; the setup
 *                                               is final at the first sync;
 *   sync                                        before every statement: the guest's writes
 *                                               since the last sync or absorb become
 *                                               write/fill statements;
 *   op                                          one statement (host action, fault,
 *                                               expectation);
 *   absorb                                      after a core call that writes guest
 *                                               memory: those bytes are the device's.
 * Device writes of a call the trace has no statement for are simply not absorbed: the next
 * sync then writes them as the guest, and the replayed core sees the same memory. A run
 * that records itself into a recorder of its own (the scenario, lab_scenario_config.record)
 * hands over the whole trace instead. */
#ifndef LAB_TRACE_SINK_H
#define LAB_TRACE_SINK_H

#include <stdint.h>

#include "guest_mem.h"
#include "trace.h"
#include "vhostlab/vl_vq.h"

struct lab_trace_sink {
	void *ctx;
	/* Guest memory and the negotiated features: the trace's regions and features. */
	void (*begin)(void *ctx, struct lab_gmem *g, uint64_t features);
	/* A queue as the core was configured; returns its index (lab_trace_op.queue). */
	int (*queue)(void *ctx, const char *name, enum lab_trace_dir dir,
		     const struct vl_vq_config *cfg);
	/* The queue's entry, for options set after vl_vq_create (zero-copy, alloc). */
	struct lab_trace_queue *(*queue_ref)(void *ctx, int q);
	void (*pool)(void *ctx, uint32_t bufs, uint32_t size);
	void (*dirty_log)(void *ctx, uint64_t pages);
	void (*sync)(void *ctx);
	void (*op)(void *ctx, const struct lab_trace_op *op);
	void (*absorb)(void *ctx);
	/* Something the run did that the trace format cannot express, in one sentence: the
	 * trace no longer reproduces the run exactly from there on. */
	void (*lossy)(void *ctx, const char *what);
	/* The run's own check failed with this message (the harness aborts right after). */
	void (*failed)(void *ctx, const char *message);
	/* The end of a run that got there: vqs[i] is queue i, log the dirty-log bitmap (NULL
	 * without one). The tool may record what the run observed as expectations. */
	void (*observe)(void *ctx, struct vl_vq *const *vqs, uint32_t n, const uint8_t *log,
			uint64_t log_bytes);
	/* Instead of all the above: the whole trace of a run that recorded itself. */
	void (*recorded)(void *ctx, const struct lab_trace *t);
};

#endif

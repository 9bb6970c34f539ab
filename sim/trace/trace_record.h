/* SPDX-License-Identifier: MIT */
/* Recording: turn a run of the lab's own guest (sim/guest_mem.h) into a trace, whatever
 * wrote the guest's memory -- the net driver, a hostile generator, a fuzz harness.
 *
 * The recorder keeps a shadow copy of every guest byte. Before each host action the caller
 * runs lab_rec_sync: every byte that differs from the shadow becomes a `write` (or a `fill`
 * for a run of one value) -- that is exactly what the guest wrote since the last action,
 * rings included. The caller then appends the host statement (lab_rec_op), runs the action
 * on the core, and calls lab_rec_absorb so the device's own writes (used rings, RX data)
 * are not mistaken for guest writes next time. Replaying the trace therefore gives the core
 * the same memory before every burst. */
#ifndef LAB_TRACE_RECORD_H
#define LAB_TRACE_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "vhostlab/vl_virtio.h"
#include "vhostlab/vl_vq.h"
#include "trace.h"

struct lab_recorder;

/* Start recording guest g (its regions become the trace's `region` statements, RAM cut into
 * its host pieces). Returns NULL when out of memory. */
struct lab_recorder *lab_rec_create(struct lab_gmem *g, uint64_t features, uint64_t seed);
void lab_rec_destroy(struct lab_recorder *r);

/* Declare a queue as the core was configured (cfg as given to vl_vq_create). Returns its
 * index for lab_trace_op.queue, or -1 when the trace holds LAB_TRACE_MAX_QUEUES already. */
int lab_rec_queue(struct lab_recorder *r, const char *name, enum lab_trace_dir dir,
		  const struct vl_vq_config *cfg);
/* The queue entry, for options (zero-copy, alloc, ...) set after lab_rec_queue. */
struct lab_trace_queue *lab_rec_queue_ref(struct lab_recorder *r, int q);
void lab_rec_set_pool(struct lab_recorder *r, uint32_t bufs, uint32_t size);
void lab_rec_set_dirty_log(struct lab_recorder *r, uint64_t pages);

/* Emit the guest's writes since the last sync/absorb. */
void lab_rec_sync(struct lab_recorder *r);
/* Append a statement (its arrays are copied). False when out of memory. */
bool lab_rec_op(struct lab_recorder *r, const struct lab_trace_op *op);
/* After a host action: take the device's writes into the shadow. */
void lab_rec_absorb(struct lab_recorder *r);

/* The trace recorded so far (owned by the recorder). */
struct lab_trace *lab_rec_trace(struct lab_recorder *r);

#endif

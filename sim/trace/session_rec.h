/* SPDX-License-Identifier: MIT */
/* Recording a real front end's session as a trace (docs/serve.md, "Recording"): what a
 * vhost-user front end (QEMU, DPDK virtio-user) did, as the core saw it, so that
 * `vhostlab replay` runs the same bursts against a simulated guest and checks the same
 * guest-visible results.
 *
 * Read-driven. The guest's memory is too big to diff and changes under our feet (the front
 * end runs concurrently), so the recorder never scans it: it records exactly what the core
 * read. During each burst it observes every load of a guest-owned ring field through the
 * lab-hooks core (sim/double_fetch.h, lab_df_set_observer) and keeps a copy of each
 * descriptor, avail slot, indirect table entry and virtio-net header; after the burst it
 * writes them as guest statements (desc / pdesc / avail / kick / write) in front of the
 * host statement, places each dequeued packet's payload in the buffers its chain named, and
 * appends what the front end could observe as expectations (packets and their digests,
 * enqueue counts and statuses, used elements).
 *
 * The window reads are the one place where a concurrent guest makes a copy taken after the
 * core's read differ from what the core read: split avail->idx (the guest keeps publishing)
 * and the packed flags word that ended the scan (the guest may have made it available since).
 * Those values are not copied but derived from what the core did with them: the avail index
 * published in the trace covers exactly the chains the burst consumed (dequeue) or looked at
 * (enqueue), and only packed descriptors the core walked are written. (A burst that took
 * everything available and one that stopped at a count look the same to the core, so both
 * replay the same.)
 *
 * One thread: every call, and the bursts between lab_srec_begin and lab_srec_dequeued /
 * _enqueued / _discarded, on the thread that runs the datapath. The memory table given must be the one
 * the queues use, until the next lab_srec_memory. */
#ifndef LAB_SESSION_REC_H
#define LAB_SESSION_REC_H

#include <stdbool.h>
#include <stdint.h>

#include "trace.h"
#include "vhostlab/vl_mem.h"
#include "vhostlab/vl_pkt.h"
#include "vhostlab/vl_vq.h"

/* Ring numbers a caller may use (vhost-user: 2 x 128 queue pairs). */
#define LAB_SREC_MAX_RINGS 256u

struct lab_srec;

struct lab_srec_counts {
	uint64_t packets;     /* dequeued + enqueued (handled) packets recorded */
	uint64_t bursts;      /* host bursts recorded (bursts that changed nothing are left out) */
	uint32_t statements;  /* statements in the trace so far */
	uint32_t queues, regions;
};

/* A recorder that stops by itself once max_packets packets are recorded (0: no bound but the
 * format's). NULL when out of memory. */
struct lab_srec *lab_srec_create(uint64_t max_packets);
void lab_srec_destroy(struct lab_srec *r);

/* Why recording stopped, or NULL while it goes on. After a stop every call but the
 * accessors and lab_srec_finish does nothing, so the caller need not check. */
const char *lab_srec_stopped(const struct lab_srec *r);
void lab_srec_stop(struct lab_srec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The memory table the queues use: at the start, and again after every change (a change
 * becomes a `remap`; regions it adds join the trace's layout; a layout the format cannot
 * hold -- regions overlapping earlier ones, not 4 KiB aligned, more than it allows -- stops
 * recording). False when recording stopped. */
bool lab_srec_memory(struct lab_srec *r, const struct vl_mem *mem);

/* Ring `ring` (the caller's number, < LAB_SREC_MAX_RINGS) is ready with queue vq. The first
 * time, the queue joins the trace (name, direction, its config and current positions; its
 * features must match the other queues'); later times (a ring disabled and enabled again)
 * it must be the same ring where it stopped, else recording stops (a restarted ring cannot
 * be expressed). False when recording stopped. */
bool lab_srec_queue(struct lab_srec *r, uint32_t ring, const char *name, enum lab_trace_dir dir,
		    struct vl_vq *vq);
/* The device asked the guest for kicks (or not) on the ring: `kicks` before its next
 * recorded burst when it differs from what the trace says. */
void lab_srec_kicks(struct lab_srec *r, uint32_t ring, bool want);

/* Around one burst on ring's queue vq: lab_srec_begin before vl_net_dequeue /
 * vl_net_enqueue / vl_net_discard(_touch), then exactly one of the three after it with what
 * the call did. */
void lab_srec_begin(struct lab_srec *r, uint32_t ring, struct vl_vq *vq);
void lab_srec_dequeued(struct lab_srec *r, uint16_t max, struct vl_pkt *const *pkts,
		       uint16_t n);
/* A vl_net_discard burst (touch: vl_net_discard_touch) of up to max chains that returned n
 * good ones: `discard Q MAX [touch]`, the used entries, no packet. */
void lab_srec_discarded(struct lab_srec *r, uint16_t max, uint16_t n, bool touch);
/* status[i] for i < done as vl_net_enqueue gave it. */
void lab_srec_enqueued(struct lab_srec *r, struct vl_pkt *const *pkts, uint16_t count,
		       uint16_t done, const uint8_t *status);

/* Stop recording (if it goes on) and append the closing expectations (each queue's
 * counters over the recording). Returns the trace, owned by the recorder. Idempotent. */
const struct lab_trace *lab_srec_finish(struct lab_srec *r);
void lab_srec_counts(const struct lab_srec *r, struct lab_srec_counts *c);

/* For tests: a guest racing the recorder. fn runs at every load the core reports during a
 * burst, after the core's read and before the recorder copies the bytes, with their guest
 * address: it may change guest memory, as a front end running on another CPU may do in
 * that window. NULL removes it. */
typedef void (*lab_srec_race_fn)(void *ctx, uint64_t gpa, size_t len);
void lab_srec_set_race(struct lab_srec *r, lab_srec_race_fn fn, void *ctx);

#endif

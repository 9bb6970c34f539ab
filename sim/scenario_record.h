/* SPDX-License-Identifier: MIT */
/* Recording a scenario run as a trace (`vhostlab run --record-failures`): the actions through
 * the shadow-diff recorder (sim/trace/trace_record.h), and the oracles' expectations in trace
 * form, each derived from the guest's own record of what it posted or what the host sent --
 * never from what the core returned -- so the trace fails where the run failed:
 *  - every dequeued packet: its length, offload fields and bytes (as an FNV-1a digest of the
 *    payload the driver generated for that packet);
 *  - every handled RX packet: delivered; where it landed: header fields and payload digests
 *    per guest range;
 *  - a used-buffer notification the guest's reckoning says was due: `expect call ... yes`;
 *  - no queue broken, every buffer back in the pool (the replay's own end check).
 * Containment, lost-kick and liveness failures have no expectation in the format; a trace
 * recorded for one of those carries the run up to the failure and says so in the CLI. */
#ifndef LAB_SCENARIO_RECORD_H
#define LAB_SCENARIO_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "net_driver.h"
#include "trace_record.h"

enum { SC_TX = 0, SC_RX = 1 };
#define SC_MAX_FAILS 64u   /* pool refusals recorded per burst */

struct sc_rec {
	struct lab_recorder *rec;
	uint64_t seed;
	uint32_t hdr_len;
	bool mergeable;
	uint64_t dequeued;         /* TX packets dequeued so far: the next one's number */
};

/* Call before the host action; sc_rec_after after it. */
void sc_rec_before(struct sc_rec *s);
void sc_rec_after(struct sc_rec *s);

void sc_rec_kicks(struct sc_rec *s, int q, bool on);
/* A dequeue of up to max packets; fails: the pool calls refused during it (counted from 0 at
 * the burst's start, ascending). Returns the first packet's number; the caller adds the
 * burst's packets to s->dequeued. */
uint64_t sc_rec_dequeue(struct sc_rec *s, uint32_t max, const uint64_t *fails, uint32_t nfails);
void sc_rec_expect_packet(struct sc_rec *s, uint64_t num, const struct lab_expect *e);
void sc_rec_free(struct sc_rec *s, uint64_t num);
void sc_rec_complete(struct sc_rec *s);
/* keys[i]: the lab key packet i's payload was generated from (lab_make_payload). */
void sc_rec_enqueue(struct sc_rec *s, struct vl_pkt *const *pkts, const uint64_t *keys,
		    uint32_t n);
void sc_rec_expect_delivered(struct sc_rec *s, uint32_t i);
void sc_rec_expect_call(struct sc_rec *s, int q);
/* The net driver's RX observer (ctx = struct sc_rec *). */
void sc_rec_rx_landing(void *ctx, const struct lab_rx_landing *l);

#endif

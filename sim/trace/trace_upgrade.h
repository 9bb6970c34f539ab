/* SPDX-License-Identifier: MIT */
/* Version 1 trace to version 2 (`vhostlab trace upgrade`, docs/trace-format.md,
 * "Version 1 and trace upgrade"): the header says 2, and runs of a group of consecutive
 * statements repeated verbatim become `repeat N { group }` wherever that makes the trace
 * shorter (a recorded session's identical bursts, a generated flood). Statements are the
 * same when their canonical text is: a repeat of an identical group runs exactly what the
 * copies ran, so the upgraded trace replays as the original did. */
#ifndef LAB_TRACE_UPGRADE_H
#define LAB_TRACE_UPGRADE_H

#include <stdbool.h>
#include <stdint.h>

#include "trace.h"

struct lab_trace_upgrade_stats {
	uint32_t ops_before, ops_after;  /* statements, block lines included */
	uint32_t repeats;                /* repeat blocks made */
};

/* Upgrade t in place: version 2, folded. A trace that has blocks already keeps its
 * statements (its author chose them); one without, of either version -- a flat version 2
 * recording, say -- is folded. False when memory runs out (t is then unchanged). */
bool lab_trace_upgrade(struct lab_trace *t, struct lab_trace_upgrade_stats *st);

#endif

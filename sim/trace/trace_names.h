/* SPDX-License-Identifier: MIT */
/* The words of the trace format (docs/trace-format.md) that both the parser and the writer
 * spell: feature names, descriptor flag names, the keyword choices of statements. One table
 * each, so what the writer prints is exactly what the parser reads. Internal to sim/trace. */
#ifndef LAB_TRACE_NAMES_H
#define LAB_TRACE_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "trace.h"

struct lab_tn_bit {
	const char *name;
	uint64_t mask;
};

/* Features by name, in bit order (the canonical order of `features`). */
#define LAB_TN_NFEATURES 19u
extern const struct lab_tn_bit lab_tn_features[LAB_TN_NFEATURES];
/* Descriptor flags by name, in bit order. A split ring names the first three (next write
 * indirect), a packed ring all five (avail used as well). */
#define LAB_TN_NDESC_FLAGS 5u
#define LAB_TN_NDESC_FLAGS_SPLIT 3u
extern const struct lab_tn_bit lab_tn_desc_flags[LAB_TN_NDESC_FLAGS];
static inline unsigned lab_tn_desc_flag_count(bool packed)
{
	return packed ? LAB_TN_NDESC_FLAGS : LAB_TN_NDESC_FLAGS_SPLIT;
}

/* Keyword choices, indexed by the enum of trace.h they spell. */
extern const char *const lab_tn_dirs[2];        /* enum lab_trace_dir: tx rx */
extern const char *const lab_tn_allocs[2];      /* enum lab_trace_alloc */
extern const char *const lab_tn_df_modes[3];    /* enum lab_trace_df */
extern const char *const lab_tn_faults[2];      /* enum lab_trace_fault */
extern const char *const lab_tn_statuses[4];    /* enum lab_trace_status */
extern const char *const lab_tn_messages[LAB_TRACE_NMSGS];    /* enum lab_trace_msg: `message` words */
extern const char *const lab_tn_switch[2];      /* off on: kicks, line-wait= (index = bool) */
/* Offload fields of a packet (struct lab_trace_ol), in LAB_OL_* bit order. */
#define LAB_TN_NOL 6u
extern const char *const lab_tn_ol[LAB_TN_NOL];

#endif

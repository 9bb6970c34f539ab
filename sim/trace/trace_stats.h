/* SPDX-License-Identifier: MIT */
/* The counters `expect stat` names (docs/trace-format.md): the fields of struct vl_vq_stats
 * by their C names, then `drops.REASON` by vl_drop_name. One table for the replay (which
 * reads a counter by name) and for tools that write every counter as an expectation. */
#ifndef LAB_TRACE_STATS_H
#define LAB_TRACE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhostlab/vl_vq.h"

/* Counters there are (the plain fields, then one per drop reason but "none"). */
uint32_t lab_trace_stat_count(void);
/* Counter i's name into buf ("packets", "drops.chain_loop") and its value in s. */
uint64_t lab_trace_stat_get(const struct vl_vq_stats *s, uint32_t i, char *name, size_t n);
/* The value of the counter named `name`; false when there is no such counter. */
bool lab_trace_stat_value(const struct vl_vq_stats *s, const char *name, uint64_t *v);

#endif

/* SPDX-License-Identifier: MIT */
/* Counters by name for `expect stat`: see trace_stats.h. */
#include "trace_stats.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define STAT(f) {#f, offsetof(struct vl_vq_stats, f)}
static const struct {
	const char *name;
	size_t off;
} stat_fields[] = {
	STAT(packets), STAT(bytes), STAT(chains), STAT(used_entries), STAT(bursts),
	STAT(empty_bursts), STAT(alloc_failures), STAT(alloc_calls), STAT(alloc_bufs),
	STAT(alloc_unused), STAT(zc_packets), STAT(zc_returned), STAT(zc_stalls),
	STAT(rx_no_room), STAT(copies_batched), STAT(copies_direct), STAT(rx_hdrs_kept),
	STAT(calls_needed), STAT(calls_suppressed), STAT(rx_bufs_wasted), STAT(log_pages),
	STAT(log_out_of_range), STAT(tx_write_ignored), STAT(tx_line_waits),
};
#undef STAT
#define NFIELDS ((uint32_t)(sizeof(stat_fields) / sizeof(stat_fields[0])))

uint32_t lab_trace_stat_count(void)
{
	return NFIELDS + VL_DROP__COUNT - 1;
}

uint64_t lab_trace_stat_get(const struct vl_vq_stats *s, uint32_t i, char *name, size_t n)
{
	uint64_t v;

	if (i < NFIELDS) {
		snprintf(name, n, "%s", stat_fields[i].name);
		memcpy(&v, (const uint8_t *)s + stat_fields[i].off, sizeof(v));
		return v;
	}
	i -= NFIELDS - 1;   /* drop reasons start at 1 */
	snprintf(name, n, "drops.%s", vl_drop_name((enum vl_drop)i));
	return s->drops[i];
}

bool lab_trace_stat_value(const struct vl_vq_stats *s, const char *name, uint64_t *v)
{
	char buf[64];

	for (uint32_t i = 0; i < lab_trace_stat_count(); i++) {
		uint64_t x = lab_trace_stat_get(s, i, buf, sizeof(buf));

		if (!strcmp(buf, name)) {
			*v = x;
			return true;
		}
	}
	return false;
}

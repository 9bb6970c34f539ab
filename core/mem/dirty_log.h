/* SPDX-License-Identifier: MIT */
/* Dirty-page log for live migration (vhost-user SET_LOG_BASE): one bit per 4 KiB page of
 * guest-physical memory, bit n of byte n/8 for page n. Every guest write the core makes is
 * recorded here. Marks go through a small per-queue cache of (byte, bits) pairs that is
 * flushed with atomic OR -- the log is shared with the front end and other queues -- at the
 * end of each burst, after the writes it describes (a page must never be seen clean after
 * it was changed). */
#ifndef VL_DIRTY_LOG_H
#define VL_DIRTY_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VL_LOG_PAGE_SHIFT 12u
#define VL_LOG_CACHE_SLOTS 16u

struct vl_dirty_log {
	uint8_t *bitmap;        /* NULL: logging off */
	uint64_t bytes;         /* bitmap size: covers bytes * 8 pages */
	uint32_t ncached;
	uint64_t cache_byte[VL_LOG_CACHE_SLOTS];
	uint8_t cache_bits[VL_LOG_CACHE_SLOTS];
	/* Counters live in the queue's statistics. */
	uint64_t *pages_marked; /* page marks added to the cache (a page already cached: none) */
	uint64_t *out_of_range; /* writes to pages the log does not cover */
};

/* Write every cached mark into the shared bitmap. The release fence keeps the guest writes
 * they describe ahead of them. */
void vl_log_flush(struct vl_dirty_log *log);

static inline void vl_log_page(struct vl_dirty_log *log, uint64_t page)
{
	uint64_t byte = page >> 3;
	uint8_t bit = (uint8_t)(1u << (page & 7));

	if (byte >= log->bytes) {
		(*log->out_of_range)++;
		return;
	}
	for (uint32_t i = 0; i < log->ncached; i++) {
		if (log->cache_byte[i] == byte) {
			/* Another page of the same bitmap byte is a new mark too. */
			if (!(log->cache_bits[i] & bit)) {
				log->cache_bits[i] |= bit;
				(*log->pages_marked)++;
			}
			return;
		}
	}
	if (log->ncached == VL_LOG_CACHE_SLOTS)
		vl_log_flush(log);
	log->cache_byte[log->ncached] = byte;
	log->cache_bits[log->ncached] = bit;
	log->ncached++;
	(*log->pages_marked)++;
}

/* Mark the pages of guest range [gpa, gpa + len). len == 0 marks nothing. Inline: it runs
 * for every guest write the core makes, and with logging off (the common case) it must cost
 * one predictable test of bitmap, not a call (the compiler inlines it unforced: forcing it
 * cost up to 2.06 instructions per packet, scripts/inline_cost.py). */
static inline void vl_log_write(struct vl_dirty_log *log, uint64_t gpa, uint64_t len)
{
	if (log->bitmap == NULL || len == 0)
		return;
	uint64_t first = gpa >> VL_LOG_PAGE_SHIFT;
	/* len - 1 <= UINT64_MAX - gpa for every range the core writes (it was translated). */
	uint64_t last = (gpa + (len - 1)) >> VL_LOG_PAGE_SHIFT;

	for (uint64_t p = first; p <= last; p++)
		vl_log_page(log, p);
}

#endif

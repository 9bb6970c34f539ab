/* SPDX-License-Identifier: MIT */
/* Guest memory for hints: payload prefetch walks the memory table from the cursor's range
 * (mem/cursor.h) and asks the CPU for lines. It reads nothing and decides nothing, so it does
 * not pass the door's check (a prefetch of any address is harmless); it finds ranges with
 * the cursor's lookup (vl_mem_find) and leaves the cursor on the range it ended in. Not a
 * public header. */
#ifndef VL_MEM_PREFETCH_H
#define VL_MEM_PREFETCH_H

#include <stdint.h>

#include "compiler.h"
#include "mem/cursor.h"
#include "mem/mem_internal.h"

/* Payload prefetch: ask for the first packet byte of a guest buffer (the byte after the
 * virtio-net header) a few chains before it is read (the ring layouts' prefetch_payloads,
 * ring/ring.h, run it over a burst's window). The driver wrote that line just before,
 * so it sits in the driver's cache, and with the CPUs far apart a read of it waits a
 * cross-core round trip (hundreds of ns) that the copy would otherwise wait for chain after
 * chain. The descriptor fields steering it are peeked (vl_guest_peek*), outside the lab's
 * accounting: nothing is decided from them, and a lie costs one useless prefetch; fetch reads
 * and checks the descriptor as ever. The state of one run of prefetches, in locals, so the
 * loop's loads are not redone after every store to the queue; the memory range of the queue's
 * last translation is unpacked into a single compare (the buffers of a burst are nearly
 * always in one range), and any other range is looked up as the cursor would (vl_mem_find). */
struct vl_payload_prefetch {
	const struct vl_mem *mem;
	uint64_t lo;        /* the range at hint: addr - lo < starts <=> the header and the */
	uint64_t starts;    /* first packet byte from addr lie inside it (0: no addr does) */
	uintptr_t to_host;  /* addr + to_host: the host address of addr + hdr_len (an integer,
			     * wrapping: a prefetch of any address is harmless, pointer
			     * arithmetic outside an object is not) */
	uint32_t hint;      /* the cursor's range index, written back at the end */
	uint32_t hdr_len;   /* bytes before the payload's first byte */
	uint64_t min_len;   /* only buffers longer than this (header included) */
	uint64_t issued;    /* lines asked for */
};

/* Unpack range i. starts counts the addresses a buffer may begin at: last - gpa - hdr_len + 1
 * of them, none when the range is shorter than hdr_len + 1 bytes (last >= gpa: no wrap). The
 * + 1 overflows only for a range of all 2^64 addresses with hdr_len 0, which then counts
 * 2^64 - 1 (one start missed: a hint, and a table no guest can give). */
/* forced: split 1518 B dequeue 398.78 -> 399.59 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void vl_payload_prefetch_range(struct vl_payload_prefetch *p, uint32_t i)
{
	const struct vl_mem_range *r = &p->mem->ranges[i];
	const uint64_t room = r->last - r->gpa; /* bytes in the range, less one */

	p->hint = i;
	p->lo = r->gpa;
	p->starts = room < p->hdr_len ? 0 : room - p->hdr_len + (room - p->hdr_len < UINT64_MAX);
	p->to_host = (uintptr_t)r->host + p->hdr_len - (uintptr_t)r->gpa;
}

/* Start a run for buffers whose payload starts skip bytes in (the virtio-net header's
 * length) and that are longer than min_len bytes (the net layer's choice: what it will copy
 * at once). */
static inline void vl_payload_prefetch_begin(struct vl_payload_prefetch *p,
					     const struct vl_mem_cursor *c, uint32_t skip,
					     uint64_t min_len)
{
	*p = (struct vl_payload_prefetch){.mem = c->mem, .hint = c->hint, .hdr_len = skip,
					  .min_len = min_len};
	if (p->hint < p->mem->n)
		vl_payload_prefetch_range(p, p->hint);
}

/* Another range than the last: its index, or -1 (vl_mem_find, out of line: rare; mem/mem.c).
 * Given the table, not p: p's address kept in the loop would keep p in memory, every field
 * reloaded and stored back at every buffer (callgrind: about 10 instructions a packet). */
int64_t vl_payload_prefetch_lookup(const struct vl_mem *mem, uint64_t addr);

/* A buffer at guest address addr, len bytes: prefetched when it is longer than min_len and
 * its header and first packet byte lie in one memory region. */
static inline void vl_payload_prefetch_one(struct vl_payload_prefetch *p, uint64_t addr,
					   uint32_t len)
{
	if (len <= p->min_len)
		return;
	if (addr - p->lo >= p->starts) {
		const int64_t r = vl_payload_prefetch_lookup(p->mem, addr);

		if (r < 0)
			return;
		vl_payload_prefetch_range(p, (uint32_t)r);
		if (addr - p->lo >= p->starts)
			return;
	}
	VL_PREFETCH_R((const void *)(uintptr_t)(addr + p->to_host));
	p->issued++;
}

/* End the run: the cursor keeps the range it ended in; returns the lines asked for. */
static inline uint64_t vl_payload_prefetch_end(const struct vl_payload_prefetch *p,
					       struct vl_mem_cursor *c)
{
	c->hint = p->hint;
	return p->issued;
}

#endif

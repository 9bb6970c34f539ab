/* SPDX-License-Identifier: MIT */
/* The datapath's door to guest memory: a cursor over one memory table that remembers the
 * range it last found. A guest's buffers mostly come from one region, so a buffer wholly
 * inside the remembered range is one subtraction and two compares; anything else (another
 * range, a straddle, an unmapped byte) searches the table (vl_mem_find) and remembers what it
 * found. Every guest address the ring and net layers turn into a pointer goes through here or
 * through vl_mem_xlate (mem_internal.h), with the kind of access the device will make.
 * Not a public header. */
#ifndef VL_MEM_CURSOR_H
#define VL_MEM_CURSOR_H

#include <stdint.h>

#include "mem/mem_internal.h"

struct vl_mem_cursor {
	const struct vl_mem *mem;
	uint32_t hint;   /* index of the range last found: any value is safe, it is checked
			  * against the table (which may have replaced the one it came from) */
	/* The range last found by vl_mem_cursor_whole, unpacked: its first address, its bytes
	 * (0: nothing remembered) and the host address of its first byte. */
	uint64_t gpa;
	uint64_t size;
	uint8_t *host;
};

/* Point the cursor at a (new) table: what it remembered belonged to the old one. */
static inline void vl_mem_cursor_set(struct vl_mem_cursor *c, const struct vl_mem *mem)
{
	c->mem = mem;
	c->size = 0;
}

/* vl_mem_cursor_whole past the remembered range: search, remember, answer. Out of line: it
 * runs only when a guest's buffers move to another region. Without the access kind, which
 * only the caller's check needs: an argument the production build never uses still cost the
 * split indirect walk 7 instructions a descriptor to compute (callgrind). */
uint8_t *vl_mem_cursor_miss(struct vl_mem_cursor *c, uint64_t addr, uint32_t len);

/* The host address of the buffer [addr, addr + len) when one range of the table holds it
 * whole, else NULL (the caller splits it into pieces with vl_mem_xlate, or drops it).
 * access: VL_ACCESS_READ or VL_ACCESS_WRITE, what the device will do with the bytes.
 * Once per descriptor, in both ring walks. */
static inline uint8_t *vl_mem_cursor_whole(struct vl_mem_cursor *c, uint64_t addr,
					   uint32_t len, unsigned access)
{
	/* An address below the range wraps high; off < size makes size - off safe. */
	const uint64_t off = addr - c->gpa;

	uint8_t *host = off < c->size && len <= c->size - off ? c->host + off
							       : vl_mem_cursor_miss(c, addr, len);

	if (host != NULL)
		vl_mem_door_check(host, addr, len, access);
	return host;
}

/* vl_mem_xlate (clamping *len to the bytes contiguous from gpa) starting at the cursor's
 * range index, which it moves to the range found. For indirect tables and payload prefetch,
 * which come from the memory the buffers do. */
static inline void *vl_mem_cursor_xlate(struct vl_mem_cursor *c, uint64_t gpa,
					uint64_t *len, unsigned access)
{
	return vl_mem_xlate_hint(c->mem, gpa, len, &c->hint, access);
}

#endif

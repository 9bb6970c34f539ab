/* SPDX-License-Identifier: MIT */
/* Layout-neutral chain building: a guest range becomes host pieces, one per memory region it
 * touches. The one place where descriptor addresses meet the memory table. */
#include "ring/guest_load.h"
#include "ring/ring_queue.h"

enum vl_drop vl_chain_add_range(const struct vl_mem *mem, uint64_t addr, uint32_t len,
				unsigned access, struct vl_piece *pieces, uint32_t cap,
				uint32_t *np, uint32_t *total)
{
	/* Checked before any piece is added: the sum of a chain's lengths must fit 32 bits
	 * (used lengths and packet lengths are 32-bit). */
	if (len > UINT32_MAX - *total)
		return VL_DROP_LEN_OVERFLOW;

	uint32_t left = len;

	while (left > 0) {
		uint64_t chunk = left;
		uint8_t *host = vl_mem_xlate(mem, addr, &chunk, access);

		if (host == NULL)
			return VL_DROP_UNMAPPED;
		if (*np >= cap)
			return VL_DROP_TOO_MANY_PIECES;
		pieces[*np].host = host;
		pieces[*np].len = (uint32_t)chunk; /* chunk <= left <= UINT32_MAX */
		pieces[*np].gpa = addr;
		(*np)++;
		left -= (uint32_t)chunk;
		/* A region ending at 2^64-1 makes addr + chunk wrap to 0; address 0 is not the
		 * continuation of this buffer even if something is mapped there. */
		if (left > 0 && addr + chunk < addr)
			return VL_DROP_UNMAPPED;
		addr += chunk;
	}
	*total += len;
	return VL_DROP_NONE;
}

enum vl_drop vl_chain_copy_indirect(struct vl_ring *rq, uint64_t addr, uint32_t len,
				    const uint8_t **table)
{
	/* Copied out piece by piece, each guest byte read once (the walk then reads only the
	 * copy). */
	uint64_t done = 0;

	while (done < len) {
		uint64_t chunk = len - done;

		/* addr + done wraps only past a range ending at 2^64-1: not a continuation. */
		if (done > 0 && addr + done < addr)
			return VL_DROP_UNMAPPED;
		const uint8_t *src = vl_mem_xlate(rq->cur.mem, addr + done, &chunk, VL_ACCESS_READ);

		if (!src)
			return VL_DROP_UNMAPPED;
		vl_guest_load_bytes(rq->indirect_copy + done, src, (size_t)chunk);
		done += chunk;
	}
	*table = rq->indirect_copy;
	return VL_DROP_NONE;
}

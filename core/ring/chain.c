/* SPDX-License-Identifier: MIT */
/* Layout-neutral chain building: a guest range becomes host pieces, one per memory region it
 * touches. The one place where descriptor addresses meet the memory table. */
#include "ring/guest_load.h"
#include "ring/ring_queue.h"

enum vl_drop vl_chain_add_range(const struct vl_mem *mem, uint64_t addr, uint32_t len,
				struct vl_piece *pieces, uint32_t cap, uint32_t *np,
				uint32_t *total)
{
	/* Checked before any piece is added: the sum of a chain's lengths must fit 32 bits
	 * (used lengths and packet lengths are 32-bit). */
	if (len > UINT32_MAX - *total)
		return VL_DROP_LEN_OVERFLOW;

	uint32_t left = len;

	while (left > 0) {
		uint64_t chunk = left;
		uint8_t *host = vl_mem_xlate(mem, addr, &chunk);

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
		const uint8_t *src = vl_mem_xlate(rq->mem, addr + done, &chunk);

		if (!src)
			return VL_DROP_UNMAPPED;
		vl_guest_load_bytes(rq->indirect_copy + done, src, (size_t)chunk);
		done += chunk;
	}
	*table = rq->indirect_copy;
	return VL_DROP_NONE;
}

int64_t vl_payload_prefetch_lookup(const struct vl_mem *mem, uint64_t addr)
{
	return vl_mem_find(mem, addr);
}

uint8_t *vl_chain_xlate_miss(struct vl_ring *rq, uint64_t addr, uint32_t len)
{
	const struct vl_mem *mem = rq->mem;
	int64_t i = vl_mem_find(mem, addr);

	if (i < 0)
		return NULL;
	const struct vl_mem_range *r = &mem->ranges[i];

	rq->mem_hint = (uint32_t)i;
	rq->xl_gpa = r->gpa;
	/* A range's bytes: last - gpa + 1 overflows only for a range of all 2^64 bytes, which
	 * a region's 64-bit size cannot express; the sum of the ranges' could, so saturate. */
	rq->xl_size = r->last - r->gpa < UINT64_MAX ? r->last - r->gpa + 1 : UINT64_MAX;
	rq->xl_host = r->host;
	const uint64_t off = addr - r->gpa;

	return len <= rq->xl_size - off ? r->host + off : NULL;
}

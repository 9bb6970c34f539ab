/* SPDX-License-Identifier: MIT */
/* Packed ring, device reads: the part of a line (ring/packed_batch.h says when one is read). */
#include "ring/packed_batch.h"

enum vl_packed_batch_why vl_packed_batch_read_part(struct vl_ring *rq, uint32_t pos,
						   uint32_t want, bool wrap, uint32_t min_len,
						   uint32_t max_len, struct vl_packed_batch *b)
{
	const struct vl_packed_desc *d = &rq->pdesc[pos];
	/* Descriptors are 16 bytes and the ring 16-byte aligned: from pos to its line's end. */
	const uint32_t rest = VL_PACKED_BATCH - (uint32_t)(((uintptr_t)d & 63u) >> 4);
	const uint32_t n = rest < want ? rest : want;

	b->n = n;
	if (pos + n > rq->size)
		return VL_PACKED_BATCH_NOT_HERE;
	return vl_packed_batch_read_n(rq, d, n, wrap, min_len, max_len, b);
}

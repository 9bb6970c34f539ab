/* SPDX-License-Identifier: MIT */
#include "alloc.h"
#include "net/zero_copy.h"
#include "pkt/pool_internal.h"

#include <stdlib.h>

#include "vhostlab/vl_error.h"

int vl_zc_setup(struct vl_vq *vq)
{
	vq->leases = vl_calloc(vq->rq.size, sizeof(*vq->leases));
	vq->zc_order = vl_calloc(vq->rq.size, sizeof(*vq->zc_order));
	vq->zc_done = vl_calloc(vq->rq.size, sizeof(*vq->zc_done));
	vq->zc_free = vl_calloc(vq->rq.size, sizeof(*vq->zc_free));
	if (!vq->leases || !vq->zc_order || !vq->zc_done || !vq->zc_free) {
		vl_zc_teardown(vq);
		return VL_ERR_NOMEM;
	}
	for (uint32_t i = 0; i < vq->rq.size; i++)
		vq->zc_free[i] = (uint16_t)(vq->rq.size - 1 - i);
	vq->zc_nfree = vq->rq.size;
	vq->zc_max = vl_zc_clamp_bound(vq->rq.size / 2, vq->rq.size);
	vq->zc_min_len = 0;
	return VL_OK;
}

void vl_zc_teardown(struct vl_vq *vq)
{
	free(vq->leases);
	free(vq->zc_order);
	free(vq->zc_done);
	free(vq->zc_free);
	vq->leases = NULL;
	vq->zc_order = vq->zc_done = vq->zc_free = NULL;
}

uint16_t vl_zc_take(struct vl_vq *vq, const struct vl_chain *c, bool done)
{
	/* Cannot run dry: leases are chains the device holds, never more than the ring. */
	uint16_t slot = vq->zc_free[--vq->zc_nfree];

	vq->leases[slot].chain = *c;
	vq->leases[slot].done = done;
	vq->leases[slot].zc = !done;
	vq->zc_held_descs += c->ndescs;
	if (vq->rq.in_order)
		vq->zc_order[(vq->zc_order_head + vq->zc_order_count++) % vq->rq.size] = slot;
	else if (done)
		vq->zc_done[vq->zc_ndone++] = slot;
	return slot;
}

bool vl_zc_gather(struct vl_vq *vq, struct vl_pool *pool, uint32_t np, uint32_t pkt_len,
		  struct vl_pkt *head)
{
	struct vl_pkt *segs[VL_ZC_MAX_SEGS - 1];
	uint32_t skip = vq->hdr_len, first = 0;

	/* The payload starts in the first piece the header does not fill whole; from there on
	 * every piece is a segment (none is empty: a walk adds no piece for a zero-length
	 * descriptor, and each piece of a range split over regions holds at least a byte). */
	while (first < np && skip >= vq->rq.pieces[first].len) {
		skip -= vq->rq.pieces[first].len;
		first++;
	}
	const uint32_t first_off = skip, nseg = np - first;

	/* The caller tried the one-piece case first, so nseg >= 2; checked anyway, as the
	 * allocation below takes nseg - 1. */
	if (nseg < 2 || nseg > VL_ZC_MAX_SEGS)
		return false;
	vq->rq.stats.alloc_calls++;
	if (vl_pool_alloc_bulk(pool, segs, nseg - 1) != 0)
		return false;
	vq->rq.stats.alloc_bufs += nseg - 1;

	struct vl_pkt *prev = NULL;

	for (uint32_t i = first; i < np; i++) {
		const struct vl_piece *p = &vq->rq.pieces[i];
		const uint32_t off = i == first ? first_off : 0;
		struct vl_pkt *seg = i == first ? head : segs[i - first - 1];

		/* Guest memory, read-only for the application (vl_pkt.h). */
		seg->data = (uint8_t *)(uintptr_t)(p->host + off);
		seg->data_len = p->len - off;
		if (prev)
			prev->next = seg;
		prev = seg;
	}
	head->pkt_len = pkt_len;
	head->nb_segs = (uint16_t)nseg;
	return true;
}

void vl_zc_release(struct vl_pkt *pkt)
{
	struct vl_vq *vq = pkt->release_ctx;
	uint16_t slot = (uint16_t)pkt->release_tag;

	vq->leases[slot].done = true;
	if (!vq->rq.in_order)
		vq->zc_done[vq->zc_ndone++] = slot;
}

static void give_back(struct vl_vq *vq, uint16_t slot)
{
	vl_ring_shadow_push(&vq->rq, &vq->leases[slot].chain, 0);
	vq->zc_free[vq->zc_nfree++] = slot;
	vq->zc_held_descs -= vq->leases[slot].chain.ndescs;
	/* Chains copied or dropped behind a held one (IN_ORDER) had no zero-copy packet. */
	if (vq->leases[slot].zc)
		vq->rq.stats.zc_returned++;
}

void vl_zc_return(struct vl_vq *vq)
{
	if (vq->rq.in_order) {
		while (vq->zc_order_count > 0) {
			uint16_t slot = vq->zc_order[vq->zc_order_head];

			if (!vq->leases[slot].done)
				break;
			give_back(vq, slot);
			vq->zc_order_head = (vq->zc_order_head + 1) % vq->rq.size;
			vq->zc_order_count--;
		}
		return;
	}
	/* In the order the packets were freed (the API promises free order). */
	for (uint32_t i = 0; i < vq->zc_ndone; i++)
		give_back(vq, vq->zc_done[i]);
	vq->zc_ndone = 0;
}

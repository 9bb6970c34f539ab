/* SPDX-License-Identifier: MIT */
/* Discard: guest TX chains go straight back to the guest, unread. The least a back end can do
 * per packet -- walk the chain far enough to know what to return, publish it -- so a front end
 * can be measured against a device that costs (almost) nothing: the ceiling `vhostlab serve
 * --mode null` reports beside the real back ends. One body, instantiated per ring layout. */
#include "net/zero_copy.h"
#include "ring/ring.h"
#include "vhostlab/vl_net.h"

static inline uint16_t discard_body(struct vl_vq *vq, uint16_t count, uint64_t *bytes,
				    const enum vl_layout L)
{
	uint16_t consumed = 0, good = 0;
	uint64_t sum = 0;

	if (!vl_tx_burst_start(vq, &count))
		return 0;
	vl_lab_burst_begin();
	vl_ring_begin(vq, L);
	uint16_t n = vl_ring_avail(vq, L, count);

	for (uint16_t i = 0; i < n; i++) {
		struct vl_chain c;
		uint32_t np = 0, total = 0;

		/* The descriptors are walked (and checked) as dequeue walks them: the packed
		 * ring needs the chain's length to know where the next one starts, and a back
		 * end that returned chains it never looked at would return garbage ids too. The
		 * buffers themselves are never read. */
		vl_lab_chain_begin();
		enum vl_drop why = vl_ring_fetch(vq, L, consumed, VL_DIR_DEVICE_READS, &c, &np,
						 &total);
		vl_lab_chain_end();
		if (why == VL_DROP_HEAD_OUT_OF_RANGE || why == VL_DROP_ID_OUT_OF_RANGE)
			break; /* no id to return it under; the queue is broken */
		if (vl_zc_must_queue(vq)) {
			/* IN_ORDER behind a chain a zero-copy packet still holds: in its turn. */
			if (!vl_zc_room(vq)) {
				vq->stats.zc_stalls++;
				break;
			}
			vl_zc_take(vq, &c, true);
		} else {
			vl_ring_push_used(vq, L, &c, 0);
		}
		consumed++;
		if (why == VL_DROP_NONE && total <= vq->hdr_len)
			why = VL_DROP_SHORT_CHAIN;
		if (why != VL_DROP_NONE) {
			vq->stats.drops[why]++;
			continue;
		}
		good++;
		sum += total - vq->hdr_len;
	}
	if (consumed == 0)
		vq->stats.empty_bursts++;
	vl_ring_consume(vq, L, consumed);
	vl_lab_burst_end();
	vl_ring_flush_used(vq, L);
	if (bytes)
		*bytes += sum;
	return good;
}

static uint16_t discard_split(struct vl_vq *vq, uint16_t count, uint64_t *bytes)
{
	return discard_body(vq, count, bytes, VL_LAYOUT_SPLIT);
}

static uint16_t discard_packed(struct vl_vq *vq, uint16_t count, uint64_t *bytes)
{
	return discard_body(vq, count, bytes, VL_LAYOUT_PACKED);
}

uint16_t vl_net_discard(struct vl_vq *vq, uint16_t count, uint64_t *bytes)
{
	if (vq->layout == VL_LAYOUT_PACKED)
		return discard_packed(vq, count, bytes);
	return discard_split(vq, count, bytes);
}

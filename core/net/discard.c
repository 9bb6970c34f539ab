/* SPDX-License-Identifier: MIT */
/* Discard: guest TX chains go straight back to the guest, unread. The least a back end can do
 * per packet -- walk the chain far enough to know what to return, publish it -- so a front end
 * can be measured against a device that costs (almost) nothing: the ceiling `vhostlab serve
 * --mode null` reports beside the real back ends.
 *
 * The touch variant reads one byte of each packet, the first after the virtio-net header, and
 * nothing else: the least a back end that looks at its packets at all can do (`--mode
 * touch`). The front end wrote that cache line just before, so reading it moves the line
 * between the two CPUs, and the front end pays to take it back when it writes the buffer
 * again; every copying back end pays that, DPDK's included. The gap between the two ceilings
 * is that line's cost alone. One body, instantiated per ring layout and variant. */
#include "net/evict.h"
#include "net/zero_copy.h"
#include "ring/ring.h"
#include "vhostlab/vl_net.h"

/* The packet's first byte: the one after the header, in whichever piece holds it. The caller
 * knows the chain is longer than the header (np pieces, together longer than hdr_len). With
 * evict-after-read on, its line is evicted as dequeue evicts a copy's first line, so touch
 * stays the ceiling of a back end that evicts too. */
static inline uint8_t first_packet_byte(struct vl_vq *vq, uint32_t np)
{
	uint32_t skip = vq->hdr_len;
	uint8_t b = 0;

	for (uint32_t i = 0; i < np; i++) {
		if (skip < vq->rq.pieces[i].len) {
			vl_guest_load_bytes(&b, vq->rq.pieces[i].host + skip, 1);
			if (vq->evict_reads) {
				vl_evict_line(vq->rq.pieces[i].host + skip);
				vq->rq.stats.lines_evicted++;
			}
			break;
		}
		skip -= vq->rq.pieces[i].len;
	}
	return b;
}

static inline uint16_t discard_body(struct vl_vq *vq, uint16_t count, uint64_t *bytes,
				    uint64_t *first_bytes, const enum vl_layout L, const bool touch)
{
	uint16_t consumed = 0, good = 0;
	uint64_t sum = 0, firsts = 0;

	if (!vl_tx_burst_start(vq, &count))
		return 0;
	vl_lab_burst_begin();
	vl_ring_begin(&vq->rq, L);
	uint16_t n = vl_ring_avail_tx(&vq->rq, L, count);
	uint32_t pf_next = touch && !vq->tx_prefetch_off && n > 0 ? 0 : VL_TX_PREFETCH_NONE;

	for (uint16_t i = 0; i < n; i++) {
		/* touch reads a line of each packet: asked for ahead, as dequeue asks for the
		 * lines it reads at once (any packet here), so the ceiling stays one for a back
		 * end that reads its packets. Before np and total are set, as in dequeue. */
		if (i == pf_next)
			pf_next = vl_ring_prefetch_ahead(&vq->rq, L, i, n, vq->hdr_len,
							 vq->hdr_len);

		struct vl_chain c;
		uint32_t np = 0, total = 0;

		/* The descriptors are walked (and checked) as dequeue walks them: the packed
		 * ring needs the chain's length to know where the next one starts, and a back
		 * end that returned chains it never looked at would return garbage ids too. The
		 * buffers themselves are never read (touch: one byte of each good packet,
		 * below). */
		vl_lab_chain_begin();
		enum vl_drop why = vl_ring_fetch(&vq->rq, L, consumed, VL_DIR_DEVICE_READS, &c, &np,
						 &total);
		vl_lab_chain_end();
		if (why == VL_DROP_HEAD_OUT_OF_RANGE || why == VL_DROP_ID_OUT_OF_RANGE)
			break; /* no id to return it under; the queue is broken */
		if (vl_zc_must_queue(vq)) {
			/* IN_ORDER behind a chain a zero-copy packet still holds: in its turn. */
			if (!vl_zc_room(vq, &c)) {
				vq->rq.stats.zc_stalls++;
				break;
			}
			vl_zc_take(vq, &c, true);
		} else {
			vl_ring_push_used(&vq->rq, L, &c, 0);
		}
		consumed++;
		/* The chain's length decides as in dequeue: no packet, or one over 64 KiB. */
		if (why == VL_DROP_NONE && total <= vq->hdr_len)
			why = VL_DROP_SHORT_CHAIN;
		else if (why == VL_DROP_NONE && total - vq->hdr_len > VL_PKT_MAX_LEN)
			why = VL_DROP_TX_TOO_BIG;
		if (why != VL_DROP_NONE) {
			vq->rq.stats.drops[why]++;
			continue;
		}
		good++;
		sum += total - vq->hdr_len;
		if (touch)
			firsts += first_packet_byte(vq, np);
	}
	if (consumed == 0)
		vq->rq.stats.empty_bursts++;
	vl_ring_consume(&vq->rq, L, consumed);
	vl_lab_burst_end();
	vl_ring_flush_used(&vq->rq, L);
	if (bytes)
		*bytes += sum;
	if (first_bytes)
		*first_bytes += firsts;
	return good;
}

static uint16_t discard_split(struct vl_vq *vq, uint16_t count, uint64_t *bytes)
{
	return discard_body(vq, count, bytes, NULL, VL_LAYOUT_SPLIT, false);
}

static uint16_t discard_packed(struct vl_vq *vq, uint16_t count, uint64_t *bytes)
{
	return discard_body(vq, count, bytes, NULL, VL_LAYOUT_PACKED, false);
}

uint16_t vl_net_discard(struct vl_vq *vq, uint16_t count, uint64_t *bytes)
{
	if (vq->rq.layout == VL_LAYOUT_PACKED)
		return discard_packed(vq, count, bytes);
	return discard_split(vq, count, bytes);
}

uint16_t vl_net_discard_touch(struct vl_vq *vq, uint16_t count, uint64_t *bytes,
			      uint64_t *first_bytes)
{
	if (vq->rq.layout == VL_LAYOUT_PACKED)
		return discard_body(vq, count, bytes, first_bytes, VL_LAYOUT_PACKED, true);
	return discard_body(vq, count, bytes, first_bytes, VL_LAYOUT_SPLIT, true);
}

/* SPDX-License-Identifier: MIT */
/* Dequeue: guest TX chains become host packets. One body, instantiated per ring layout. */
#include "net/copy.h"
#include "net/net_hdr.h"
#include "ring/ring.h"
#include "vhostlab/vl_net.h"

/* Validate what a walked TX chain holds and read its header: the chain must be longer than
 * the header (CVE-2022-2132: a chain no longer than the header carries no packet), the packet
 * must fit VL_PKT_MAX_LEN, and the offload fields must point inside the packet. */
static inline enum vl_drop tx_check(const struct vl_vq *vq, uint32_t np, uint32_t total,
				    struct vl_offload *ol, uint32_t *pkt_len)
{
	uint8_t hdr[12];

	if (total <= vq->hdr_len)
		return VL_DROP_SHORT_CHAIN;
	*pkt_len = total - vq->hdr_len;
	if (*pkt_len > VL_PKT_MAX_LEN)
		return VL_DROP_TX_TOO_BIG;
	vl_net_hdr_gather(vq->pieces, np, vq->hdr_len, hdr);
	return vl_net_hdr_to_offload(hdr, *pkt_len, ol);
}

/* Copy the chain's bytes after the header into the packet's segments. */
static inline void tx_copy_payload(struct vl_vq *vq, uint32_t np, struct vl_pkt *pkt)
{
	uint32_t skip = vq->hdr_len;
	struct vl_pkt *seg = pkt;
	uint32_t seg_off = 0;

	for (uint32_t i = 0; i < np; i++) {
		const uint8_t *src = vq->pieces[i].host;
		uint32_t left = vq->pieces[i].len;

		if (skip >= left) {
			skip -= left;
			continue;
		}
		src += skip;
		left -= skip;
		skip = 0;
		while (left > 0) {
			/* The packet was sized to the chain, so a segment is always there. */
			if (seg_off == seg->data_len) {
				seg = seg->next;
				seg_off = 0;
			}
			uint32_t n = seg->data_len - seg_off;

			if (n > left)
				n = left;
			vl_copy(vq, seg->data + seg_off, src, n, VL_NO_LOG);
			seg_off += n;
			src += n;
			left -= n;
		}
	}
}

static inline void count_drop(struct vl_vq *vq, enum vl_drop why)
{
	vq->stats.drops[why]++;
}

static inline uint16_t dequeue_body(struct vl_vq *vq, struct vl_pool *pool,
				    struct vl_pkt **pkts, uint16_t count, const enum vl_layout L)
{
	uint16_t got = 0, consumed = 0;

	vq->stats.bursts++;
	if (vq->broken)
		return 0;
	vl_ring_begin(vq, L);
	uint16_t n = vl_ring_avail(vq, L, count);

	for (uint16_t i = 0; i < n; i++) {
		struct vl_chain c;
		uint32_t np = 0, total = 0, pkt_len = 0;
		struct vl_offload ol;
		enum vl_drop why = vl_ring_fetch(vq, L, consumed, VL_DIR_DEVICE_READS, &c, &np,
						 &total);

		if (vq->broken)
			break;

		if (why == VL_DROP_NONE)
			why = tx_check(vq, np, total, &ol, &pkt_len);
		if (why != VL_DROP_NONE) {
			/* Return the chain (the guest gets its descriptors back) and skip it. */
			count_drop(vq, why);
			vl_ring_push_used(vq, L, &c, 0);
			consumed++;
			continue;
		}
		struct vl_pkt *pkt = vl_pkt_alloc_len(pool, pkt_len);

		if (pkt == NULL) {
			/* Leave this chain available: the next burst serves it. */
			vq->stats.alloc_failures++;
			break;
		}
		pkt->ol = ol;
		tx_copy_payload(vq, np, pkt);
		pkts[got++] = pkt;
		vq->stats.packets++;
		vq->stats.bytes += pkt_len;
		vl_ring_push_used(vq, L, &c, 0);
		consumed++;
	}
	if (consumed == 0)
		vq->stats.empty_bursts++;
	vl_ring_consume(vq, L, consumed);
	/* Copies first: once used->idx moves, the guest may reuse the buffers we read. */
	vl_copy_flush(vq);
	/* TX used lengths are all 0, so under IN_ORDER the burst may go back as one. */
	vl_ring_flush_used(vq, L, vq->in_order);
	return got;
}

static uint16_t dequeue_split(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			      uint16_t count)
{
	return dequeue_body(vq, pool, pkts, count, VL_LAYOUT_SPLIT);
}

static uint16_t dequeue_packed(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			       uint16_t count)
{
	return dequeue_body(vq, pool, pkts, count, VL_LAYOUT_PACKED);
}

uint16_t vl_net_dequeue(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			uint16_t count)
{
	/* Dispatch once per burst. */
	if (vq->layout == VL_LAYOUT_PACKED)
		return dequeue_packed(vq, pool, pkts, count);
	return dequeue_split(vq, pool, pkts, count);
}

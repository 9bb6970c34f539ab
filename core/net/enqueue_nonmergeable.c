/* SPDX-License-Identifier: MIT */
/* A specialised receive path for queues without VIRTIO_NET_F_MRG_RXBUF: what a two-path
 * enqueue would keep beside the general one. Technique 2 (docs/architecture.md) claims the
 * one unified path (net/enqueue.c) is at least as fast as such a path; this is the
 * alternative it is raced against (scripts/seed_claims.py, claim 2a). It is not in the
 * default build: only a core configured with -DVL_RX_TWO_PATHS=ON sends non-mergeable queues
 * here (vl_net_enqueue), and test_rx_paths checks it against the unified path byte for byte.
 *
 * Without mergeable buffers a packet takes exactly one chain, so there is nothing to reserve:
 * a bad chain goes back empty and the next one is tried; a good chain either holds header
 * and packet or the packet is dropped (the chain stays for the next packet); no chain is
 * ever deferred or returned with others. The writing itself is the unified path's
 * (net/rx_fill.h), so the two differ only in that bookkeeping. Its `forced:` lines were
 * measured in a -DVL_RX_TWO_PATHS=ON Release build (scripts/inline_cost.py --build). */
#include "compiler.h"
#include "net/enqueue_nonmergeable.h"
#include "net/rx_fill.h"
#include "ring/ring.h"
#include "vhostlab/vl_net.h"

/* Fetch the chain at window position pos into *c (its pieces from vq->rq.pieces[0], *len bytes
 * in all). False when the window holds no chain there. `ahead` (packets left) sizes the
 * packed scan as the unified path does. */
/* forced: packed 64 B enqueue 267.53 -> 312.47 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE bool nm_fetch(struct vl_vq *vq, const enum vl_layout L, uint16_t pos,
				      uint16_t ahead, struct vl_chain *c, uint32_t *len,
				      enum vl_drop *why)
{
	/* pos < size <= 32768 and ahead <= 65535: no wrap in 32 bits. */
	const uint32_t want = (uint32_t)pos + (L == VL_LAYOUT_PACKED && ahead > 1 ? ahead : 1u);
	uint32_t np = 0;

	if (vl_ring_avail(&vq->rq, L, (uint16_t)(want < 0xffffu ? want : 0xffffu)) <= pos)
		return false;
	*len = 0;
	vl_lab_chain_begin();
	*why = vl_ring_fetch(&vq->rq, L, pos, VL_DIR_DEVICE_WRITES, c, &np, len);
	vl_lab_chain_end();
	return true;
}

/* The chain at *pos did not fit the packet or could not be walked (why). A bad one --
 * one that could not be walked, or that cannot hold even the header (spec 5.1.6.3.1) --
 * goes back empty and counts a drop, and the chains after it are fetched until one is
 * good. False when the window runs out, or a chain has no id it could be returned under
 * (the queue is broken then): the burst stops. Out of line: a packet that fits its chain
 * never comes here. */
static VL_NOINLINE bool nm_skip_bad(struct vl_vq *vq, const enum vl_layout L, uint16_t *pos,
				    uint16_t ahead, struct vl_chain *c, uint32_t *len,
				    enum vl_drop why)
{
	for (;;) {
		if (why == VL_DROP_NONE && *len < vq->hdr_len)
			why = VL_DROP_RX_BUF_TOO_SMALL;
		if (why == VL_DROP_NONE)
			return true;
		if (why == VL_DROP_HEAD_OUT_OF_RANGE || why == VL_DROP_ID_OUT_OF_RANGE)
			return false;
		vq->rq.stats.drops[why]++;
		vl_ring_push_used(&vq->rq, L, c, 0);
		(*pos)++;
		if (!nm_fetch(vq, L, *pos, ahead, c, len, &why))
			return false;
	}
}

/* forced: split 1518 B enqueue 379.41 -> 391.53 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE uint16_t nm_body(struct vl_vq *vq, struct vl_pkt *const *pkts,
					 uint16_t count, uint8_t *status, const enum vl_layout L)
{
	uint16_t handled = 0, delivered = 0, pos = 0;
	uint64_t bytes = 0;
	const uint32_t hdr_len = vq->hdr_len;

	if (!rx_burst_begin(vq, L))
		return 0;

	for (; handled < count; handled++) {
		const struct vl_pkt *pkt = pkts[handled];
		const uint16_t ahead = (uint16_t)(count - handled);
		struct vl_chain c;
		uint32_t len;
		enum vl_drop why;

		if (rx_refused(vq, pkt, status, handled))
			continue;
		const uint32_t need = hdr_len + pkt->pkt_len;

		if (!nm_fetch(vq, L, pos, ahead, &c, &len, &why) ||
		    ((why != VL_DROP_NONE || len < need) &&
		     !nm_skip_bad(vq, L, &pos, ahead, &c, &len, why))) {
			if (!vq->rq.broken)
				vq->rq.stats.rx_no_room++;
			break;
		}
		if (len < need) {
			/* One chain must hold it all; it stays for the next packet. */
			rx_dropped_too_big(vq, status, handled);
			continue;
		}
		/* Each delivered packet took a chain of the window: delivered < size, a valid
		 * rx_hdrs slot. */
		if (vq->rq.pieces[0].len >= need && !pkt->next) {
			rx_fill_one(vq, L, pkt, &c, need, delivered++);
		} else {
			const uint32_t plen = vq->rq.pieces[0].len;

			rx_prefetch(vq->rq.pieces[0].host, plen < hdr_len ? plen : hdr_len,
				    plen < need ? plen : need);
			rx_write_pkt(vq, pkt, 1, delivered++);
			vl_ring_push_used(&vq->rq, L, &c, need);
		}
		pos++;
		rx_delivered(vq, pkt, status, handled, &bytes);
	}
	rx_burst_end(vq, L, delivered, bytes, pos);
	return handled;
}

/* Both layouts' bodies, each with its layout a constant. */
uint16_t vl_net_enqueue_nonmergeable(struct vl_vq *vq, struct vl_pkt *const *pkts,
				     uint16_t count, uint8_t *status)
{
	if (vq->rq.layout == VL_LAYOUT_PACKED)
		return nm_body(vq, pkts, count, status, VL_LAYOUT_PACKED);
	return nm_body(vq, pkts, count, status, VL_LAYOUT_SPLIT);
}

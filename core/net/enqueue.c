/* SPDX-License-Identifier: MIT */
/* Enqueue: host packets land in guest RX buffers. ONE path for mergeable and non-mergeable
 * buffers (technique 2): a packet reserves chains until they hold header + data. With
 * VIRTIO_NET_F_MRG_RXBUF it may use up to queue-size chains; without, exactly one chain must
 * hold it all. Nothing of a packet is published unless all of it fits.
 * enqueue_body and rx_reserve are forced inline (compiler.h): gcc and clang otherwise
 * keep one enqueue_body with the layout as a run-time argument (too big for their budgets),
 * so the per-chain layout tests of ring/ring.h would not fold away. */
#include "compiler.h"
#include "net/enqueue_nonmergeable.h"
#include "net/rx_batch_packed.h"
#include "net/rx_fill.h"
#include "ring/ring.h"
#include "vhostlab/vl_net.h"

enum reserve_result {
	RESERVE_OK,
	RESERVE_NO_ROOM,  /* the guest has not posted enough buffers yet: stop the burst */
	RESERVE_DROP,     /* the packet can never be delivered: drop it, keep the buffers */
};

/* Burst state: of the ring's window of available chains, the first `committed` are consumed
 * (returned or holding packets). */
struct rx_burst {
	uint16_t committed;
	enum vl_drop drop_reason;  /* for RESERVE_DROP */
};

/* The chain at window position `committed`, fetched once by rx_fetch_first: either a packet
 * fits it whole (rx_fill_one) or rx_reserve carries on from it without reading it again. */
struct rx_first {
	struct vl_chain c;
	enum vl_drop why;
	uint32_t np;   /* pieces it took in vq->rq.pieces, from index 0 */
	uint32_t len;  /* bytes those pieces hold */
};

/* A chain that cannot take data is returned at once with length 0 if no good chain precedes
 * it in this packet's window (so the consumed part of the ring stays a prefix); otherwise it
 * is remembered and returned just before the packet's own chains when the packet commits.
 * If the packet does not commit, deferred chains stay in the ring and are walked again. The
 * drop is counted when the chain is returned, so a chain walked again is counted once. */
static inline void rx_bad_chain(struct vl_vq *vq, const enum vl_layout L, struct rx_burst *b,
				const struct vl_chain *c, enum vl_drop why, uint32_t nbufs,
				uint32_t *ndeferred)
{
	if (nbufs == 0) {
		vq->rq.stats.drops[why]++;
		vl_ring_push_used(&vq->rq, L, c, 0);
		b->committed++;
	} else {
		struct vl_rx_deferred *d = &vq->rx_deferred_bad[(*ndeferred)++];

		d->chain = *c;
		d->why = why;
	}
}

/* Under VIRTIO_F_IN_ORDER chains must come back in the order they were made available, so a
 * bad chain cannot be returned ahead of good ones reserved before it: those are returned
 * empty with it, and the packet starts over after it. */
static inline void rx_bad_chain_in_order(struct vl_vq *vq, const enum vl_layout L,
					 struct rx_burst *b, const struct vl_chain *c,
					 enum vl_drop why, uint32_t nbufs, uint16_t pos)
{
	for (uint32_t i = 0; i < nbufs; i++)
		vl_ring_push_used(&vq->rq, L, &vq->rx_bufs[i].chain, 0);
	vq->rq.stats.rx_bufs_wasted += nbufs;
	vq->rq.stats.drops[why]++;
	vl_ring_push_used(&vq->rq, L, c, 0);
	b->committed = pos;
}

/* Reserve chains for `need` bytes starting at the first unconsumed avail entry. On success,
 * vq->rx_bufs[0..*nbufs) describe the chains and *pos is the window position after them.
 * `ahead`: packets left in the burst, this one included. Every packet takes at least one
 * chain, so the window is asked for that many chains beyond the current position at once: a
 * packed ring scans them in one pass instead of one call per chain (a split window is known
 * from the start). Once the packet's first chain is known, as many times more as the packet
 * takes chains of that size: a 9000-byte packet in 1536-byte buffers takes 6, and asking for
 * one chain per packet had the scan called five times per packet. */
/* forced: packed 9000 B mergeable enqueue 2930.33 -> 2960.43 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE enum reserve_result rx_reserve(struct vl_vq *vq, const enum vl_layout L,
						       struct rx_burst *b, uint32_t need,
						       uint16_t ahead, uint32_t *nbufs,
						       uint32_t *ndeferred, uint16_t *pos,
						       const struct rx_first *f)
{
	uint32_t np = 0, cap = 0, ring_descs = 0;
	const uint16_t packets_left = ahead;

	*nbufs = 0;
	*ndeferred = 0;
	*pos = b->committed;
	while (cap < need) {
		struct vl_chain c;
		uint32_t first = np, len = 0;
		enum vl_drop why;

		if (f) {
			/* The first chain, already fetched (pieces from index 0, as here). */
			c = f->c;
			why = f->why;
			np = f->np;
			len = f->len;
			f = NULL;
			goto fetched;
		}
		/* *pos < size <= 32768 and ahead <= 65535: no wrap in 32 bits. Split: the
		 * window is already known, one more chain is all there is to ask. */
		uint32_t want = (uint32_t)*pos + (L == VL_LAYOUT_PACKED && ahead > 1 ? ahead : 1u);

		if (vl_ring_avail(&vq->rq, L, (uint16_t)(want < 0xffffu ? want : 0xffffu)) <= *pos) {
			if (vq->rq.broken)
				return RESERVE_NO_ROOM; /* the caller stops */
			/* Even a ring full of this guest's buffers cannot hold the packet:
			 * waiting would stall the queue forever. (Deferred bad chains stay in
			 * the ring and are returned with the next packet that commits.) */
			/* Full: the window holds every chain the ring can, or its chains hold every
			 * descriptor (chains of several descriptors run the guest out of
			 * descriptors before the avail ring fills). */
			if (vq->mergeable && b->committed == 0 &&
			    (ring_descs >= vq->rq.size || vl_ring_full(&vq->rq, L))) {
				b->drop_reason = VL_DROP_RX_TOO_BIG;
				return RESERVE_DROP;
			}
			return RESERVE_NO_ROOM;
		}
		/* One chain's guest reads form one unit (RX reads no header). */
		vl_lab_chain_begin();
		why = vl_ring_fetch(&vq->rq, L, *pos, VL_DIR_DEVICE_WRITES, &c, &np, &len);
		vl_lab_chain_end();
fetched:
		/* This chain has no id it could be returned under: stop. (The packed scan ahead
		 * may have broken the queue already on a lie further on; the chains before the
		 * lie are sound and are filled first, as dequeue serves them.) */
		if (why == VL_DROP_HEAD_OUT_OF_RANGE || why == VL_DROP_ID_OUT_OF_RANGE)
			return RESERVE_NO_ROOM;
		(*pos)++;
		ring_descs += c.ndescs;

		if (why == VL_DROP_TOO_MANY_PIECES && first > 0) {
			/* The chain is fine on its own; this packet needs too many pieces. */
			b->drop_reason = VL_DROP_RX_TOO_MANY_PIECES;
			return RESERVE_DROP;
		}
		/* Spec 5.1.6.3.1: every receive buffer holds at least the header. */
		if (why == VL_DROP_NONE && len < vq->hdr_len)
			why = VL_DROP_RX_BUF_TOO_SMALL;
		if (why != VL_DROP_NONE) {
			np = first;
			if (vq->rq.in_order && *nbufs > 0) {
				rx_bad_chain_in_order(vq, L, b, &c, why, *nbufs, *pos);
				*nbufs = 0;
				np = 0;
				cap = 0;
				continue;
			}
			rx_bad_chain(vq, L, b, &c, why, *nbufs, ndeferred);
			continue;
		}
		if (!vq->mergeable && len < need) {
			/* Without mergeable buffers this one chain would have to hold it all. */
			b->drop_reason = VL_DROP_RX_TOO_BIG;
			return RESERVE_DROP;
		}
		/* The lines this chain's first piece will take, asked for now (rx_prefetch):
		 * the header (the packet's first chain only) and the first and last lines of
		 * the payload it holds. take >= 1: the chain holds at least the header (checked
		 * above), so it has a first piece, and no piece is empty (vl_chain_add_range);
		 * cap < need inside the loop. */
		{
			const uint32_t hdr = *nbufs > 0 ? 0 : vq->hdr_len;
			const uint32_t plen = vq->rq.pieces[first].len, left = need - cap;
			const uint32_t take = plen < left ? plen : left;

			rx_prefetch(vq->rq.pieces[first].host, hdr < take ? hdr : take, take);
		}
		struct vl_rx_buf *rb = &vq->rx_bufs[(*nbufs)++];

		rb->chain = c;
		rb->first_piece = first;
		rb->npieces = np - first;
		rb->cap = len;
		/* The packet takes more than its first chain: from now on ask for as many chains
		 * per packet left (at most 65535). From the packets left, not from ahead: an
		 * in-order restart after a bad chain comes back here. len >= hdr_len > 0 (checked
		 * above), and need / hdr_len < 6600, so the product fits 32 bits. */
		if (L == VL_LAYOUT_PACKED && *nbufs == 1 && len < need) {
			const uint32_t ask = (uint32_t)packets_left * ((need + len - 1) / len);

			ahead = (uint16_t)(ask < 0xffffu ? ask : 0xffffu);
		}
		/* need <= VL_PKT_MAX_LEN + 12, so cap stops growing long before it could wrap. */
		cap += len;
	}
	return RESERVE_OK;
}

/* rx_reserve per layout, out of line: it serves what the usual case (rx_fits_one) does not
 * -- a packet over several chains, a bad chain -- and inlined into enqueue_body it shaped the
 * usual case's code: the look-ahead change in it alone cost 5 instructions per 64-byte packed
 * packet, which never reaches it (callgrind). Out of line, 64-byte packets take 3 fewer
 * (packed) and 1 more (split) than before; a 9000-byte mergeable packet pays the call, 62
 * more on split. */
static VL_NOINLINE enum reserve_result rx_reserve_split(struct vl_vq *vq, struct rx_burst *b,
						       uint32_t need, uint16_t ahead,
						       uint32_t *nbufs, uint32_t *ndeferred,
						       uint16_t *pos, const struct rx_first *f)
{
	return rx_reserve(vq, VL_LAYOUT_SPLIT, b, need, ahead, nbufs, ndeferred, pos, f);
}

static VL_NOINLINE enum reserve_result rx_reserve_packed(struct vl_vq *vq, struct rx_burst *b,
							uint32_t need, uint16_t ahead,
							uint32_t *nbufs, uint32_t *ndeferred,
							uint16_t *pos, const struct rx_first *f)
{
	return rx_reserve(vq, VL_LAYOUT_PACKED, b, need, ahead, nbufs, ndeferred, pos, f);
}

/* Write the packet into the reserved chains (rx_write_pkt) and record their used entries,
 * after any deferred bad chains. */
static inline void rx_fill(struct vl_vq *vq, const enum vl_layout L,
			   const struct vl_pkt *pkt, uint32_t nbufs, uint32_t ndeferred,
			   uint16_t nth)
{
	rx_write_pkt(vq, pkt, nbufs, nth);
	for (uint32_t i = 0; i < ndeferred; i++) {
		vq->rq.stats.drops[vq->rx_deferred_bad[i].why]++;
		vl_ring_push_used(&vq->rq, L, &vq->rx_deferred_bad[i].chain, 0);
	}
	uint32_t left = vq->hdr_len + pkt->pkt_len;

	for (uint32_t i = 0; i < nbufs; i++) {
		uint32_t used = vq->rx_bufs[i].cap < left ? vq->rx_bufs[i].cap : left;

		vl_ring_push_used(&vq->rq, L, &vq->rx_bufs[i].chain, used);
		left -= used;
	}
}

/* Fetch the chain at the window position the next packet starts at into f. False when the
 * window has none there (rx_reserve then decides between waiting and dropping, without
 * reading the guest again: the split window and the packed scan are kept per burst). f is
 * the caller's local, whose address goes out of line only on the way to rx_reserve, after
 * the usual case is decided: passed there from the start, the fetch's counters lived in
 * memory (callgrind: 9 instructions a packed 64-byte packet). */
/* forced: packed 1518 B mergeable enqueue 396.46 -> 444.28 instr/pkt without it (2026-12-07:
 * with a third instance of the body, gcc 12 kept it out of line) */
static VL_ALWAYS_INLINE bool rx_fetch_first(struct vl_vq *vq, const enum vl_layout L,
					    const struct rx_burst *b, uint16_t ahead,
					    struct rx_first *f)
{
	const uint32_t pos = b->committed;
	/* As in rx_reserve: pos < size <= 32768, ahead <= 65535. */
	const uint32_t want = pos + (L == VL_LAYOUT_PACKED && ahead > 1 ? ahead : 1u);

	/* Packed: when this burst's scan already found a chain at pos, vl_ring_avail would
	 * answer more than pos (it returns the smaller of the chains found and want, both
	 * past pos) and nothing else matters here; the window is asked only past them. One
	 * compare per packet instead of the window call (callgrind: packed 64 B enqueue
	 * 255.9 -> 243.2 instructions a packet). */
	if ((L != VL_LAYOUT_PACKED || pos >= vq->rq.pscanned) &&
	    vl_ring_avail(&vq->rq, L, (uint16_t)(want < 0xffffu ? want : 0xffffu)) <= pos)
		return false;
	f->np = 0;
	f->len = 0;
	vl_lab_chain_begin();
	f->why = vl_ring_fetch(&vq->rq, L, (uint16_t)pos, VL_DIR_DEVICE_WRITES, &f->c, &f->np,
			       &f->len);
	vl_lab_chain_end();
	return true;
}

/* The usual case: the packet is one segment and the fetched chain's first piece holds header
 * and packet (a guest posts buffers of a full frame or more). */
static inline bool rx_fits_one(const struct vl_vq *vq, const struct vl_pkt *pkt,
			       const struct rx_first *f, uint32_t need)
{
	return f->why == VL_DROP_NONE && f->len >= need && vq->rq.pieces[0].len >= need && !pkt->next;
}

/* forced: split 64 B mergeable enqueue 218.78 -> 233.09 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE uint16_t enqueue_body(struct vl_vq *vq, struct vl_pkt *const *pkts,
					      uint16_t count, uint8_t *status,
					      const enum vl_layout L, const bool batched,
					      uint16_t done)
{
	struct rx_burst b = {0};
	uint16_t handled = 0, delivered = 0;
	uint64_t bytes = 0; /* added to the stats once, with delivered as the packet count */

	/* After groups of four (enqueue_packed): the burst has begun, and goes on here. */
	if (batched)
		handled = done;
	else if (!rx_burst_begin(vq, L))
		return 0;

	for (; handled < count; handled++) {
		const struct vl_pkt *pkt = pkts[handled];
		uint32_t nbufs, ndeferred;
		uint16_t pos;

		if (rx_refused(vq, pkt, status, handled))
			continue;
		const uint32_t need = vq->hdr_len + pkt->pkt_len;
		const uint16_t ahead = (uint16_t)(count - handled);
		struct rx_first first;
		const bool have = rx_fetch_first(vq, L, &b, ahead, &first);

		if (have && rx_fits_one(vq, pkt, &first, need)) {
			/* Each delivered packet took at least one chain of the window:
			 * delivered < size, a valid rx_hdrs slot. */
			rx_fill_one(vq, L, pkt, &first.c, need, delivered++);
			b.committed++;
			rx_delivered(vq, pkt, status, handled, &bytes);
			continue;
		}
		/* A copy for rx_reserve: first's own address never leaves this body. */
		const struct rx_first f = first;
		enum reserve_result r = L == VL_LAYOUT_PACKED ?
			rx_reserve_packed(vq, &b, need, ahead, &nbufs, &ndeferred, &pos,
					  have ? &f : NULL) :
			rx_reserve_split(vq, &b, need, ahead, &nbufs, &ndeferred, &pos,
					 have ? &f : NULL);
		if (r == RESERVE_NO_ROOM) {
			if (!vq->rq.broken)
				vq->rq.stats.rx_no_room++;
			break;
		}
		if (r == RESERVE_DROP) {
			vq->rq.stats.drops[b.drop_reason]++;
			if (status)
				status[handled] = b.drop_reason == VL_DROP_RX_TOO_BIG
							  ? VL_RX_DROPPED_TOO_BIG
							  : VL_RX_DROPPED_TOO_MANY_PIECES;
			continue;
		}
		/* Each delivered packet took at least one chain of the window: delivered <
		 * size, a valid rx_hdrs slot. */
		rx_fill(vq, L, pkt, nbufs, ndeferred, delivered++);
		b.committed = pos;
		rx_delivered(vq, pkt, status, handled, &bytes);
	}
	if (batched && vq->rx_direct.count > 0)
		rx_batch_burst_end(vq, delivered, bytes, b.committed);
	else
		rx_burst_end(vq, L, delivered, bytes, b.committed);
	return handled;
}

/* Out of line, as the packed bodies are: with the packed dispatch beside it in
 * vl_net_enqueue, gcc 12 allocated the split body's registers differently (callgrind, split
 * 64 B mergeable enqueue 220.0 -> 220.9 instructions a packet; out of line 220.0). */
static VL_NOINLINE uint16_t enqueue_split(struct vl_vq *vq, struct vl_pkt *const *pkts,
					  uint16_t count, uint8_t *status)
{
	return enqueue_body(vq, pkts, count, status, VL_LAYOUT_SPLIT, false, 0);
}

/* A packed burst that began with groups of four (net/rx_batch_packed.h): the general path
 * from the first group that was not the usual case. An instance of the body of its own, out
 * of line: with the test of `batched` in the one body, or both instances in one function,
 * the general path of bursts that never take a group (packed 1518 B) cost 4 to 50
 * instructions a packet more (callgrind). */
static VL_NOINLINE uint16_t enqueue_packed_after_batches(struct vl_vq *vq,
							 struct vl_pkt *const *pkts,
							 uint16_t count, uint8_t *status,
							 uint16_t done)
{
	return enqueue_body(vq, pkts, count, status, VL_LAYOUT_PACKED, true, done);
}

static VL_NOINLINE uint16_t enqueue_packed_general(struct vl_vq *vq, struct vl_pkt *const *pkts,
						   uint16_t count, uint8_t *status)
{
	return enqueue_body(vq, pkts, count, status, VL_LAYOUT_PACKED, false, 0);
}

static uint16_t enqueue_packed(struct vl_vq *vq, struct vl_pkt *const *pkts, uint16_t count,
			       uint8_t *status)
{
	/* The group's last descriptor and the first packet tested here: a burst into a ring
	 * without four buffers (the ring first: an idle poll is the most frequent call), or of
	 * large packets, does not pay the call. */
	if (vl_packed_rx_batch_ready(&vq->rq) && count >= VL_PACKED_BATCH &&
	    rx_batch_usable(vq) && rx_batch_pkt_ok(pkts[0], vq->batch_threshold, vq->rx_flags_bad)) {
		const int done = rx_batches(vq, pkts, count, status);

		if (done >= 0)
			return enqueue_packed_after_batches(vq, pkts, count, status,
							    (uint16_t)done);
	}
	return enqueue_packed_general(vq, pkts, count, status);
}

uint16_t vl_net_enqueue(struct vl_vq *vq, struct vl_pkt *const *pkts, uint16_t count,
			uint8_t *status)
{
#ifdef VL_RX_TWO_PATHS
	/* The two-path build of technique 2's comparison (CMake option VL_RX_TWO_PATHS). */
	if (!vq->mergeable)
		return vl_net_enqueue_nonmergeable(vq, pkts, count, status);
#endif
	if (vq->rq.layout == VL_LAYOUT_PACKED)
		return enqueue_packed(vq, pkts, count, status);
	return enqueue_split(vq, pkts, count, status);
}

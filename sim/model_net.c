/* SPDX-License-Identifier: MIT */
/* The reference model's virtio-net datapath: the header (spec 5.1.6), transmit (5.1.6.2:
 * the device reads header + packet from a chain) and receive (5.1.6.3-4: the device writes
 * header + packet into one buffer, or several with mergeable buffers and num_buffers). Where
 * the spec leaves a choice, the policy is the one docs/architecture.md documents, named at
 * each place. */
#include <string.h>

#include "model_int.h"
#include "vhostlab/vl_net.h"

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* ---- header ------------------------------------------------------------------------ */

/* The offload fields of a header (every field but num_buffers). */
static void hdr_read(const uint8_t *h, struct vl_offload *ol)
{
	/* Spec 5.1.6.2.2: flag bits the device does not recognise are ignored; on transmit
	 * only NEEDS_CSUM means anything. */
	ol->flags = h[0] & VL_NET_HDR_F_NEEDS_CSUM;
	ol->gso_type = h[1];
	ol->hdr_len = le16(h + 2);
	ol->gso_size = le16(h + 4);
	ol->csum_start = le16(h + 6);
	ol->csum_offset = le16(h + 8);
}

/* "Hostile inputs", bogus offload header: a checksum must land inside the packet, ECN means
 * nothing without GSO, a GSO packet needs a known and negotiated type (and HOST_ECN for
 * ECN), a segment size and headers inside the packet -- each refusal under its own drop
 * reason, in that order. */
/* Spec 5.1.6.2: a driver sends a GSO type, or ECN, only with the HOST_* feature for it. */
static bool gso_negotiated(const struct lab_model *m, uint8_t type)
{
	uint64_t bit = type == VL_NET_HDR_GSO_TCPV4   ? VL_FEATURE(VL_F_NET_HOST_TSO4)
		       : type == VL_NET_HDR_GSO_TCPV6 ? VL_FEATURE(VL_F_NET_HOST_TSO6)
		       : type == VL_NET_HDR_GSO_UDP   ? VL_FEATURE(VL_F_NET_HOST_UFO)
						      : VL_FEATURE(VL_F_NET_HOST_USO);

	return (m->features & bit) != 0;
}

static enum vl_drop hdr_check(const struct lab_model *m, const struct vl_offload *ol,
			      uint32_t len)
{
	if ((ol->flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)ol->csum_start + ol->csum_offset + 2u > len)
		return VL_DROP_CSUM_PAST_FRAME;
	switch (ol->gso_type & ~VL_NET_HDR_GSO_ECN) {
	case VL_NET_HDR_GSO_NONE:
		return (ol->gso_type & VL_NET_HDR_GSO_ECN) ? VL_DROP_ECN_WITHOUT_GSO : VL_DROP_NONE;
	case VL_NET_HDR_GSO_TCPV4:
	case VL_NET_HDR_GSO_UDP:
	case VL_NET_HDR_GSO_TCPV6:
	case VL_NET_HDR_GSO_UDP_L4:
		if (!gso_negotiated(m, ol->gso_type & ~VL_NET_HDR_GSO_ECN))
			return VL_DROP_GSO_NOT_NEGOTIATED;
		if ((ol->gso_type & VL_NET_HDR_GSO_ECN) &&
		    !(m->features & VL_FEATURE(VL_F_NET_HOST_ECN)))
			return VL_DROP_ECN_NOT_NEGOTIATED;
		if (ol->gso_size == 0)
			return VL_DROP_GSO_NO_SEGMENT_SIZE;
		return ol->hdr_len > len ? VL_DROP_GSO_HDR_PAST_FRAME : VL_DROP_NONE;
	default:
		return VL_DROP_GSO_UNKNOWN_TYPE;
	}
}

/* Spec 5.1.6.4: the receive header carries the packet's offloads; num_buffers (present in
 * the 12-byte header) is the number of buffers used with MRG_RXBUF, and 1 without. */
static void hdr_write(const struct lab_model *m, const struct vl_offload *ol, uint32_t nbufs,
		      uint8_t *h)
{
	h[0] = ol->flags;
	h[1] = ol->gso_type;
	put_le16(h + 2, ol->hdr_len);
	put_le16(h + 4, ol->gso_size);
	put_le16(h + 6, ol->csum_start);
	put_le16(h + 8, ol->csum_offset);
	if (m->hdr_len == 12)
		put_le16(h + 10, (uint16_t)(m->mergeable ? nbufs : 1u));
}

/* ---- transmit ------------------------------------------------------------------------ */

/* A good TX chain's bytes, in order, at dst. */
static void gather(const struct lab_model *m, const struct mdl_chain *c, uint8_t *dst)
{
	for (uint32_t i = 0; i < c->nsegs; i++) {
		const struct mdl_seg *s = &m->segs[c->seg0 + i];

		memcpy(dst, mdl_gptr(m, s->gpa, s->len), s->len);
		dst += s->len;
	}
}

/* "Dequeue": the chain must be longer than the header, the packet at most VL_PKT_MAX_LEN,
 * its offloads sound; any malformed chain is returned (used length 0) and counted. */
uint32_t lab_model_dequeue(struct lab_model *m, uint32_t max, struct lab_model_pkt *out)
{
	uint32_t got = 0, pos = 0;
	size_t end = 0;

	if (m->broken != VL_DROP_NONE)
		return 0;
	mdl_begin(m);
	for (; pos < max && mdl_available(m, pos); pos++) {
		struct mdl_chain c;
		struct vl_offload ol = {0};

		m->nsegs = 0;
		if (!mdl_fetch(m, pos, false, &c))
			break;
		if (c.why == VL_DROP_NONE && c.pieces > VL_CHAIN_MAX_PIECES)
			c.why = VL_DROP_TOO_MANY_PIECES;
		if (c.why == VL_DROP_NONE && c.len <= m->hdr_len)
			c.why = VL_DROP_SHORT_CHAIN;
		if (c.why == VL_DROP_NONE && c.len - m->hdr_len > VL_PKT_MAX_LEN)
			c.why = VL_DROP_TX_TOO_BIG;
		if (c.why == VL_DROP_NONE) {
			uint8_t *b = mdl_buf(m, end + c.len);

			if (!b)
				break; /* out of host memory: leave the chain for the next call */
			gather(m, &c, b + end);
			hdr_read(b + end, &ol);
			c.why = hdr_check(m, &ol, c.len - m->hdr_len);
			/* A GSO packet's frame must be what its header says it is. */
			if (c.why == VL_DROP_NONE)
				c.why = mdl_tx_frame_check(&ol, b + end + m->hdr_len,
							   c.len - m->hdr_len);
		}
		/* Transmit buffers are only read: every one goes back with length 0. */
		mdl_push_used(m, &c, 0);
		if (c.why != VL_DROP_NONE) {
			m->st.drops[c.why]++;
			continue;
		}
		out[got] = (struct lab_model_pkt){NULL, c.len - m->hdr_len, ol};
		m->pkt_off[got++] = end + m->hdr_len;
		end += c.len;
		m->st.packets++;
		m->st.bytes += c.len - m->hdr_len;
	}
	mdl_consume(m, pos);
	mdl_publish(m);
	/* buf may have moved while it grew: point into it only now. */
	for (uint32_t i = 0; i < got; i++)
		out[i].data = m->buf + m->pkt_off[i];
	return got;
}

/* ---- receive ------------------------------------------------------------------------- */

enum reserve {
	RSV_OK,
	RSV_NO_ROOM,  /* not enough buffers yet: the call stops */
	RSV_DROP,     /* the packet can never be delivered: drop it, keep the buffers */
};

/* A packet's reservation in progress: chains from the first not consumed in this call. */
struct rsv {
	uint32_t committed;  /* chains of the window consumed by earlier packets (and bad ones) */
	uint32_t pos;        /* the next chain to look at */
	uint32_t nbufs, ndeferred;
	enum vl_drop drop;   /* RSV_DROP: why */
};

/* A chain that cannot take data ("Enqueue", last row): returned empty at once when no good
 * chain of this packet precedes it; otherwise after them under IN_ORDER ("In-order": the
 * good ones are returned empty with it and the packet starts over), or just before the
 * packet's entries when it commits. */
static void rx_bad_chain(struct lab_model *m, struct rsv *r, const struct mdl_chain *c,
			 uint32_t *cap, uint32_t *pieces)
{
	if (r->nbufs > 0 && m->in_order) {
		for (uint32_t i = 0; i < r->nbufs; i++)
			mdl_push_used(m, &m->rsv[i], 0);
		m->st.drops[c->why]++;
		mdl_push_used(m, c, 0);
		r->committed = r->pos;
		r->nbufs = 0;
		*cap = *pieces = 0;
		m->nsegs = 0;
	} else if (r->nbufs > 0) {
		m->deferred[r->ndeferred++] = *c;
	} else {
		m->st.drops[c->why]++;
		mdl_push_used(m, c, 0);
		r->committed++;
	}
}

/* "Enqueue": reserve chains until they hold `need` bytes; with MRG_RXBUF any number, without
 * it exactly one. */
static enum reserve rx_reserve(struct lab_model *m, struct rsv *r, uint32_t need)
{
	uint32_t cap = 0, pieces = 0, descs = 0;

	r->pos = r->committed;
	r->nbufs = r->ndeferred = 0;
	m->nsegs = 0;
	while (cap < need) {
		struct mdl_chain c;

		if (!mdl_available(m, r->pos)) {
			if (m->broken != VL_DROP_NONE)
				return RSV_NO_ROOM;
			/* "Enqueue" + "Findings" (vl_split_full): mergeable, and even a full ring
			 * -- the window holds every chain the ring can, or the chains walked hold
			 * every descriptor -- cannot hold it: waiting would stall the queue. Only
			 * when nothing was consumed yet in this call (else the ring is not full of
			 * this guest's buffers). */
			if (m->mergeable && r->committed == 0 &&
			    (descs >= m->size || mdl_window_full(m))) {
				r->drop = VL_DROP_RX_TOO_BIG;
				return RSV_DROP;
			}
			return RSV_NO_ROOM;
		}
		if (!mdl_fetch(m, r->pos, true, &c))
			return RSV_NO_ROOM;
		r->pos++;
		descs += c.ndescs;
		/* "Enqueue": a packet needing more than VL_CHAIN_MAX_PIECES host pieces (whole
		 * descriptors of the chains reserved) is dropped; one chain alone that large is
		 * a malformed chain ("Hostile inputs", more than 1024 pieces). */
		if (c.why == VL_DROP_NONE && r->nbufs > 0 &&
		    pieces + c.pieces > VL_CHAIN_MAX_PIECES) {
			r->drop = VL_DROP_RX_TOO_MANY_PIECES;
			return RSV_DROP;
		}
		if (c.why == VL_DROP_NONE && c.pieces > VL_CHAIN_MAX_PIECES)
			c.why = VL_DROP_TOO_MANY_PIECES;
		/* Spec 5.1.6.3.1: every receive buffer holds at least the header. */
		if (c.why == VL_DROP_NONE && c.len < m->hdr_len)
			c.why = VL_DROP_RX_BUF_TOO_SMALL;
		if (c.why != VL_DROP_NONE) {
			m->nsegs = c.seg0;
			rx_bad_chain(m, r, &c, &cap, &pieces);
			continue;
		}
		if (!m->mergeable && c.len < need) {
			r->drop = VL_DROP_RX_TOO_BIG;
			return RSV_DROP;
		}
		m->rsv[r->nbufs++] = c;
		cap += c.len;
		pieces += c.pieces;
	}
	return RSV_OK;
}

/* Header then packet, in buffer order; used entries: deferred bad chains first (empty),
 * then each buffer with the bytes written into it. */
static bool rx_fill(struct lab_model *m, const struct vl_pkt *pkt, const struct rsv *r)
{
	uint32_t total = m->hdr_len + pkt->pkt_len, off = 0;
	uint8_t *lin = mdl_buf(m, total);

	if (!lin)
		return false;
	hdr_write(m, &pkt->ol, r->nbufs, lin);
	vl_pkt_read(pkt, 0, lin + m->hdr_len, pkt->pkt_len);
	for (uint32_t b = 0; b < r->nbufs && off < total; b++) {
		const struct mdl_chain *c = &m->rsv[b];

		for (uint32_t i = 0; i < c->nsegs && off < total; i++) {
			const struct mdl_seg *s = &m->segs[c->seg0 + i];
			uint32_t n = s->len < total - off ? s->len : total - off;

			memcpy(mdl_gptr(m, s->gpa, n), lin + off, n);
			off += n;
		}
	}
	for (uint32_t i = 0; i < r->ndeferred; i++) {
		m->st.drops[m->deferred[i].why]++;
		mdl_push_used(m, &m->deferred[i], 0);
	}
	uint32_t left = total;

	for (uint32_t b = 0; b < r->nbufs; b++) {
		uint32_t n = m->rsv[b].len < left ? m->rsv[b].len : left;

		mdl_push_used(m, &m->rsv[b], n);
		left -= n;
	}
	return true;
}

static void set_status(uint8_t *status, uint32_t i, uint8_t v)
{
	if (status)
		status[i] = v;
}

uint32_t lab_model_enqueue(struct lab_model *m, struct vl_pkt *const *pkts, uint32_t n,
			   uint8_t *status)
{
	struct rsv r = {0};
	uint32_t handled = 0;

	if (m->broken != VL_DROP_NONE)
		return 0;
	mdl_begin(m);
	for (; handled < n; handled++) {
		const struct vl_pkt *pkt = pkts[handled];

		/* "Dequeue"/"Enqueue": no packet is longer than VL_PKT_MAX_LEN either way. */
		if (pkt->pkt_len > VL_PKT_MAX_LEN) {
			m->st.drops[VL_DROP_RX_TOO_BIG]++;
			set_status(status, handled, VL_RX_DROPPED_TOO_BIG);
			continue;
		}
		/* "Enqueue": offloads the driver did not accept are not delivered. */
		const enum vl_drop ol_why = mdl_rx_offload_check(m, &pkt->ol);

		if (ol_why != VL_DROP_NONE) {
			m->st.drops[ol_why]++;
			set_status(status, handled, VL_RX_DROPPED_OFFLOAD);
			continue;
		}
		enum reserve res = rx_reserve(m, &r, m->hdr_len + pkt->pkt_len);

		if (res == RSV_OK && !rx_fill(m, pkt, &r))
			res = RSV_NO_ROOM; /* out of host memory: try again next call */
		if (res == RSV_NO_ROOM) {
			if (m->broken == VL_DROP_NONE)
				m->st.rx_no_room++;
			break;
		}
		if (res == RSV_DROP) {
			m->st.drops[r.drop]++;
			set_status(status, handled,
				   r.drop == VL_DROP_RX_TOO_BIG ? VL_RX_DROPPED_TOO_BIG
								: VL_RX_DROPPED_TOO_MANY_PIECES);
			continue;
		}
		r.committed = r.pos;
		m->st.packets++;
		m->st.bytes += pkt->pkt_len;
		set_status(status, handled, VL_RX_DELIVERED);
	}
	mdl_consume(m, r.committed);
	mdl_publish(m);
	return handled;
}

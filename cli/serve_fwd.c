/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: the forwarding modes, one round per queue pair.
 *
 * Packets bound for a guest's RX ring wait in that pair's pending burst until the ring has
 * room; the source is not read again while they wait. So a slow receiver holds the
 * sender back (its TX ring fills, nothing is lost) instead of losing packets: loopback
 * returns every packet. What waits for a destination that is not connected, or that goes
 * away, is dropped (NO_PEER). A packet whose offloads its destination's driver did not
 * negotiate is made to fit in software first (serve_fit.c). */
#include <stddef.h>

#include "serve.h"

/* Where packets received on p go: a guest port (loopback, pair), or NULL (rxonly, txonly and
 * tap deliver or free them within the round). */
static struct serve_port *dest_port(struct serve *s, struct serve_port *p)
{
	switch (s->o.mode) {
	case SERVE_LOOPBACK:
		return p;
	case SERVE_PAIR:
		return &s->port[1 - p->index];
	default:
		return NULL;
	}
}

static void drop(struct serve_pair *sp, struct vl_pkt **pkts, uint32_t n, enum serve_drop why)
{
	sp->st.drops[why] += n;
	vl_pkt_free_bulk(pkts, n);
}

static bool pending_empty(const struct serve_pending *pd)
{
	return pd->n == 0 && pd->fit_n == 0;
}

/* Everything waiting for pair sp's RX ring is lost (its guest went away). */
static uint32_t drop_pending(struct serve_pair *sp, enum serve_drop why)
{
	struct serve_pending *pd = &sp->pend;
	uint32_t n = pd->n + pd->fit_n;

	drop(sp, &pd->fit[pd->fit_head], pd->fit_n, why);
	drop(sp, &pd->pkts[pd->head], pd->n, why);
	pd->head = pd->n = pd->fit_head = pd->fit_n = 0;
	return n;
}

/* A queue that broke stays broken until the front end sets it up again: say so once. */
static void check_broken(struct serve_port *p, uint32_t pair, uint32_t ring)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct vl_vq *vq = sp->vq[ring];

	if (!vq || sp->broken_told[ring] || !vl_vq_broken(vq))
		return;
	sp->broken_told[ring] = true;
	serve_event(p->s, "broken", p, "queue pair %u %s ring broken: %s", pair,
		    ring == SERVE_RING_RX ? "RX" : "TX", vl_drop_name(vl_vq_broken_reason(vq)));
}

static void notify(struct serve_port *p, uint32_t pair, uint32_t ring)
{
	if (vl_vu_dev_notify(p->dev, 2 * pair + ring))
		p->pairs[pair].st.calls++;
}

/* One burst from the guest's TX ring of (p, pair). */
static uint16_t receive(struct serve *s, struct serve_port *p, uint32_t pair,
			struct vl_pkt **pkts)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct vl_vq *vq = sp->vq[SERVE_RING_TX];

	if (!vq)
		return 0;
	/* Bytes from the core's counter: a loop over the packets' lengths cost about 4
	 * instructions a packet (callgrind). */
	const uint64_t bytes = vl_vq_stats(vq)->bytes;

	serve_rec_begin(p, 2 * pair + SERVE_RING_TX, vq);
	uint16_t n = vl_net_dequeue(vq, sp->pool, pkts, (uint16_t)s->o.burst);

	serve_rec_dequeued(p, (uint16_t)s->o.burst, pkts, n);

	sp->st.rx_bytes += vl_vq_stats(vq)->bytes - bytes;
	sp->st.rx_packets += n;
	notify(p, pair, SERVE_RING_TX);
	check_broken(p, pair, SERVE_RING_TX);
	return n;
}

/* After the round freed its packets: chains leased to zero-copy packets go back to the guest
 * now instead of at the next burst, so an idle ring does not keep them. Skipped when
 * nothing is held: vl_vq_complete would then publish nothing and leave the call decision of
 * the dequeue in place, and notifying again would signal that call twice. */
static void release_tx(struct serve_port *p, uint32_t pair)
{
	struct vl_vq *vq = p->pairs[pair].vq[SERVE_RING_TX];

	if (!vq || vl_vq_broken(vq) || vl_vq_zero_copy_held(vq) == 0)
		return;
	vl_vq_complete(vq);
	notify(p, pair, SERVE_RING_TX);
}

_Static_assert(SERVE_FIT_MAX <= SERVE_BURST_MAX, "one status array serves both");

/* One enqueue burst of pkts[0..n) into (dst, pair)'s RX ring vq: counted, the handled ones
 * freed, the guest signalled if it asked. Returns how many were handled (the rest found no
 * room). The call is decided per burst (vl_vq_needs_call: the last burst's used entries),
 * so a round of several bursts signals after each: a later burst that passed no used_event
 * of its own would otherwise hide the one before it, and the guest would sleep on frames
 * it was never told of. */
static uint32_t enqueue(struct serve_port *dst, uint32_t pair, struct vl_vq *vq,
			struct vl_pkt **pkts, uint32_t n)
{
	struct serve_pair *sp = &dst->pairs[pair];
	uint8_t status[SERVE_BURST_MAX];

	serve_rec_begin(dst, 2 * pair + SERVE_RING_RX, vq);
	uint16_t done = vl_net_enqueue(vq, pkts, (uint16_t)n, status);

	serve_rec_enqueued(dst, pkts, (uint16_t)n, done, status);
	for (uint16_t i = 0; i < done; i++) {
		if (status[i] == VL_RX_DELIVERED) {
			sp->st.tx_packets++;
			sp->st.tx_bytes += pkts[i]->pkt_len;
		} else {
			sp->st.drops[status[i] == VL_RX_DROPPED_OFFLOAD ? SERVE_DROP_OFFLOAD
									 : SERVE_DROP_TOO_BIG]++;
		}
	}
	vl_pkt_free_bulk(pkts, done);
	if (done > 0)
		notify(dst, pair, SERVE_RING_RX);
	return done;
}

/* Put what waits for (dst, pair) into its guest's RX ring, in order, as far as there is
 * room: the frames made of a packet first, then the packets its driver takes as they are,
 * up to one it does not, which software makes fit (serve_fit.c) and which goes next. */
static uint32_t deliver(struct serve_port *dst, uint32_t pair)
{
	struct serve_pair *sp = &dst->pairs[pair];
	struct serve_pending *pd = &sp->pend;
	struct vl_vq *vq = sp->vq[SERVE_RING_RX];
	uint32_t moved = 0;

	if (pending_empty(pd))
		return 0;
	if (!serve_port_connected(dst) || (vq && vl_vq_broken(vq)))
		return drop_pending(sp, SERVE_DROP_NO_PEER);
	if (!vq)
		return 0; /* connected, ring not (yet, or not now) enabled: wait */
	for (;;) {
		if (pd->fit_n > 0) {
			uint32_t done = enqueue(dst, pair, vq, &pd->fit[pd->fit_head], pd->fit_n);

			pd->fit_head += done;
			pd->fit_n -= done;
			moved += done;
			if (pd->fit_n > 0)
				break; /* no room for the rest */
			pd->fit_head = 0;
		}
		if (pd->n == 0)
			break;
		uint32_t k = serve_fit_prefix(vq, &pd->pkts[pd->head], pd->n);

		if (k > 0) {
			uint32_t done = enqueue(dst, pair, vq, &pd->pkts[pd->head], k);

			pd->head += done;
			pd->n -= done;
			moved += done;
			if (done < k)
				break;
			continue;
		}
		struct vl_pkt *pkt = pd->pkts[pd->head++];

		pd->n--;
		serve_fit_packet(dst, sp, vq, pkt);
	}
	if (pd->n == 0)
		pd->head = 0;
	check_broken(dst, pair, SERVE_RING_RX);
	return moved;
}

static bool fwd_rxonly(struct serve *s, struct serve_port *p, uint32_t pair)
{
	struct vl_pkt *pkts[SERVE_BURST_MAX];
	uint16_t n = receive(s, p, pair, pkts);

	vl_pkt_free_bulk(pkts, n);
	release_tx(p, pair);
	return n > 0;
}

/* The same frames every round (enqueue copies them), with fresh sequence numbers. Whatever
 * the guest sends meanwhile is counted and dropped, so its TX ring never stalls it. The TX
 * ring is polled in every round that sent nothing and after every poll that yielded
 * packets; after an empty poll in a round that sent frames, the next busy rounds skip it,
 * 1, then 3, then TXONLY_TX_SKIP_MAX at a time while it stays empty. An empty poll costs
 * about 250 instructions (8 a frame in 32-frame bursts, callgrind), and a front end seldom
 * sends to a txonly back end; one that does (testpmd io, sending back what it gets) finds
 * its ring drained every round while it sends. (Skipping 7 rounds after any empty poll had
 * testpmd io drop 8 and 60 times more frames for a full TX ring than polling every round,
 * one run each on two rings; with the backoff, 7 of 8 runs dropped within the old build's
 * range, one more.) */
#define TXONLY_TX_SKIP_MAX 7u

static bool fwd_txonly(struct serve *s, struct serve_port *p, uint32_t pair)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct vl_vq *vq = sp->vq[SERVE_RING_RX];
	bool moved = false, polled = sp->txonly_skip == 0;

	if (polled)
		moved = fwd_rxonly(s, p, pair);
	else
		sp->txonly_skip--;
	if (!vq || vl_vq_broken(vq)) {
		sp->txonly_skip = sp->txonly_backoff = 0;
		return moved;
	}
	uint8_t status[SERVE_BURST_MAX];
	/* Delivered frames from the core's counter, the rest (done counts both) were dropped:
	 * a loop over the statuses cost about 12 instructions a frame. Every frame is as long
	 * as the first. */
	const uint64_t before = vl_vq_stats(vq)->packets;

	serve_rec_begin(p, 2 * pair + SERVE_RING_RX, vq);
	uint16_t done = vl_net_enqueue(vq, sp->gen, (uint16_t)s->o.burst, status);

	serve_rec_enqueued(p, sp->gen, (uint16_t)s->o.burst, done, status);

	if (done == 0) {
		sp->txonly_skip = sp->txonly_backoff = 0;
		return moved;
	}
	const uint64_t delivered = vl_vq_stats(vq)->packets - before;

	sp->st.tx_packets += delivered;
	sp->st.tx_bytes += delivered * sp->gen[0]->pkt_len;
	sp->st.drops[SERVE_DROP_TOO_BIG] += done - delivered;
	if (polled && moved) {
		sp->txonly_backoff = 0;
	} else if (polled) {
		const uint32_t b = 2 * sp->txonly_backoff + 1;

		sp->txonly_backoff = b < TXONLY_TX_SKIP_MAX ? b : TXONLY_TX_SKIP_MAX;
		sp->txonly_skip = sp->txonly_backoff;
	}
	sp->gen_seq += done;
	serve_gen_stamp(sp->gen, s->o.burst, sp->gen_seq);
	notify(p, pair, SERVE_RING_RX);
	check_broken(p, pair, SERVE_RING_RX);
	return true;
}

/* src's TX ring to dst's RX ring (loopback: src == dst). */
static bool fwd_guest(struct serve *s, struct serve_port *src, struct serve_port *dst,
		      uint32_t pair)
{
	struct serve_pair *dsp = &dst->pairs[pair];
	struct serve_pending *pd = &dsp->pend;
	uint32_t moved = deliver(dst, pair);

	if (pending_empty(pd)) {
		uint16_t n = receive(s, src, pair, pd->pkts);

		if (n > 0 && !serve_port_connected(dst)) {
			drop(dsp, pd->pkts, n, SERVE_DROP_NO_PEER);
		} else if (n > 0) {
			pd->head = 0;
			pd->n = n;
			deliver(dst, pair);
		}
		moved += n;
	}
	release_tx(src, pair);
	return moved > 0;
}

static bool fwd_tap(struct serve *s, struct serve_port *p, uint32_t pair)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct serve_pending *pd = &sp->pend;
	int fd = s->tap_fds[pair];
	struct vl_pkt *pkts[SERVE_BURST_MAX];
	uint16_t n = receive(s, p, pair, pkts);

	for (uint16_t i = 0; i < n; i++) {
		if (!serve_tap_write(fd, pkts[i]))
			sp->st.drops[SERVE_DROP_TAP]++;
	}
	vl_pkt_free_bulk(pkts, n);
	release_tx(p, pair);

	uint32_t moved = n + deliver(p, pair);

	/* Read the TAP device only when the guest can take frames: until then the kernel
	 * queues them (and drops beyond its queue length), as for a slow NIC. */
	if (!serve_fwd_wants_tap(s, pair))
		return moved > 0;
	uint32_t k = 0;

	while (k < s->o.burst) {
		bool err;
		struct vl_pkt *pkt = serve_tap_read(s, fd, sp->pool, &err);

		if (!pkt) {
			if (err)
				sp->st.drops[SERVE_DROP_TAP]++;
			break;
		}
		pd->pkts[k++] = pkt;
	}
	if (k > 0) {
		pd->head = 0;
		pd->n = k;
		deliver(p, pair);
	}
	return moved + k > 0;
}

bool serve_fwd_pair(struct serve *s, uint32_t pair)
{
	struct serve_port *a = &s->port[0];

	switch (s->o.mode) {
	case SERVE_RXONLY:
		return fwd_rxonly(s, a, pair);
	case SERVE_TXONLY:
		return fwd_txonly(s, a, pair);
	case SERVE_LOOPBACK:
		return fwd_guest(s, a, a, pair);
	case SERVE_PAIR: {
		bool ab = fwd_guest(s, a, &s->port[1], pair);
		bool ba = fwd_guest(s, &s->port[1], a, pair);

		return ab || ba;
	}
	case SERVE_TAP:
		return fwd_tap(s, a, pair);
	case SERVE_NULL:
	case SERVE_TOUCH:
		return serve_null_pair(s, a, pair);
	}
	return false;
}

bool serve_fwd_wants_kick(const struct serve *s, const struct serve_port *p, uint32_t pair,
			  uint32_t ring)
{
	if (ring == SERVE_RING_RX)
		return true; /* room for what waits, or for txonly's frames */
	if (s->o.mode == SERVE_LOOPBACK)
		return pending_empty(&p->pairs[pair].pend);
	if (s->o.mode == SERVE_PAIR)
		return pending_empty(&s->port[1 - p->index].pairs[pair].pend);
	return true;
}

bool serve_fwd_wants_tap(const struct serve *s, uint32_t pair)
{
	const struct serve_port *p = &s->port[0];
	const struct serve_pair *sp = &p->pairs[pair];

	return pending_empty(&sp->pend) && serve_port_connected(p) &&
	       sp->vq[SERVE_RING_RX] != NULL;
}

/* A copy of pkt in pkt's own pool (NULL when the pool is short). */
static struct vl_pkt *copy_pkt(const struct vl_pkt *pkt)
{
	struct vl_pkt *c = pkt->pkt_len ? vl_pkt_alloc_len(pkt->pool, pkt->pkt_len)
					: vl_pkt_alloc(pkt->pool);
	uint32_t off = 0;

	if (!c)
		return NULL;
	for (const struct vl_pkt *seg = pkt; seg; seg = seg->next) {
		vl_pkt_write(c, off, seg->data, seg->data_len);
		off += seg->data_len;
	}
	c->ol = pkt->ol;
	return c;
}

/* Replace each of pkts[*head .. *head + n) that references p's guest memory with a copy,
 * compacted to the front (*head becomes 0); returns how many are left. */
static uint32_t unshare(struct serve_port *p, struct serve_pair *dsp, struct vl_pkt **pkts,
			uint32_t *head, uint32_t n)
{
	uint32_t kept = 0;

	/* Compacted to the front as it goes (kept <= i, so no entry is overwritten before it
	 * is read); the slots before the old head were delivered already. */
	for (uint32_t i = 0; i < n; i++) {
		struct vl_pkt *pkt = pkts[*head + i];

		/* Only packets that reference guest memory (a release callback) need a copy; in
		 * pair mode the other guest's packets wait here too. */
		if (pkt->release && serve_port_owns_pool(p, pkt->pool)) {
			struct vl_pkt *c = copy_pkt(pkt);

			vl_pkt_free(pkt);
			if (!c) {
				dsp->st.drops[SERVE_DROP_NO_MEMORY]++;
				continue;
			}
			pkt = c;
		}
		pkts[kept++] = pkt;
	}
	*head = 0;
	return kept;
}

void serve_fwd_unshare(struct serve *s, struct serve_port *p, uint32_t pair, bool all_pairs)
{
	struct serve_port *dst = dest_port(s, p);

	if (!dst || !dst->pairs || !s->o.zero_copy)
		return;
	for (uint32_t q = all_pairs ? 0 : pair; q < (all_pairs ? s->o.queues : pair + 1); q++) {
		struct serve_pair *dsp = &dst->pairs[q];
		struct serve_pending *pd = &dsp->pend;

		/* The software fallback's frames are copies, but one it let through as it was
		 * may be a guest's. */
		pd->fit_n = unshare(p, dsp, pd->fit, &pd->fit_head, pd->fit_n);
		pd->n = unshare(p, dsp, pd->pkts, &pd->head, pd->n);
	}
}

void serve_fwd_disconnected(struct serve *s, struct serve_port *p)
{
	for (uint32_t q = 0; q < s->o.queues; q++)
		drop_pending(&p->pairs[q], SERVE_DROP_NO_PEER);
}

void serve_fwd_flush_all(struct serve *s)
{
	for (uint32_t i = 0; i < s->nports; i++) {
		if (s->port[i].pairs)
			serve_fwd_disconnected(s, &s->port[i]);
	}
}

void serve_fwd_notify(struct serve_port *p, uint32_t pair, uint32_t ring)
{
	notify(p, pair, ring);
}

void serve_fwd_check_broken(struct serve_port *p, uint32_t pair, uint32_t ring)
{
	check_broken(p, pair, ring);
}

/* SPDX-License-Identifier: MIT */
/* One round of a differential run, phase by phase, and the comparisons after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "df_internal.h"

/* ---- one round, phase by phase ------------------------------------------------------- */

/* The guest's wish for used-buffer notifications (the decisions are compared, exactly). */
static void arm(struct lab_ring *r, uint8_t mode, uint8_t later)
{
	static const enum lab_call_mode modes[4] = {LAB_CALLS_NEXT, LAB_CALLS_OFF,
						    LAB_CALLS_LATER, LAB_CALLS_NEXT};
	uint32_t n = lab_ring_in_flight(r);

	lab_ring_arm_calls(r, modes[mode & 3], n ? later % n : 0);
}

static void phase_tx_post(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	for (uint32_t i = 0; i < rd->ntx; i++)
		df_post_tx(d, v, &rd->tx[i]);
	lab_ring_publish(&v->tx);
	arm(&v->tx, rd->notify, (uint8_t)(rd->notify >> 4));
}

/* A ceiling's TX burst. Its count of good chains joins the dequeue counts compared with
 * variant 0's; its byte total, and touch's sum of first bytes, must be exactly those of the
 * packets the guest posted in that order (every chain here is well formed, none is dropped). */
static void phase_discard(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	const bool touch = v->tx_mode == DF_TX_TOUCH;
	uint64_t bytes = 0, firsts = 0, want_bytes = 0, want_firsts = 0;
	uint16_t n = touch ? vl_net_discard_touch(v->txq, rd->count, &bytes, &firsts)
			   : vl_net_discard(v->txq, rd->count, &bytes);

	v->npkts = 0;
	df_log32(&v->all, "dequeue count", n);
	df_log32(&v->grp, "dequeue needs_call", vl_vq_needs_call(v->txq));
	for (uint16_t i = 0; i < n; i++) {
		const struct df_expect *x = df_next_expected(d, v, i);
		uint8_t first;

		want_bytes += x->pkt_len;
		/* the posted payload's first byte (pkt_len >= 1) */
		df_tx_bytes(df_buf[0], x->pkt_len, x->serial, x->hdr);
		first = df_buf[0][0];
		want_firsts += first;
	}
	if (bytes != want_bytes)
		fz_fail("round %u, %s: %u chains of %llu bytes, the guest posted %llu", d->round,
			df_vname(v->idx), n, (unsigned long long)bytes, (unsigned long long)want_bytes);
	if (touch && firsts != want_firsts)
		fz_fail("round %u, %s: the first bytes of %u packets add up to %llu, posted %llu",
			d->round, df_vname(v->idx), n, (unsigned long long)firsts,
			(unsigned long long)want_firsts);
	v->disc_good += n;
	v->disc_bytes += bytes;
}

/* Replace zero-copy packet i of v by a copy from v's pool (bytes and offloads), so the
 * chain it held can go back. */
static void unhold(struct df_var *v, uint16_t i)
{
	struct vl_pkt *p = v->pkts[i], *c;

	if (!p->release)
		return;
	if (!(c = vl_pkt_alloc_len(v->pool, p->pkt_len)))
		fz_fail("%s: no pool buffers to copy a held %u-byte packet", df_vname(v->idx),
			p->pkt_len);
	if (vl_pkt_read(p, 0, df_buf[0], p->pkt_len) != p->pkt_len ||
	    vl_pkt_write(c, 0, df_buf[0], p->pkt_len) != p->pkt_len)
		fz_fail("%s: copying a held %u-byte packet failed", df_vname(v->idx), p->pkt_len);
	c->ol = p->ol;
	vl_pkt_free(p);
	v->pkts[i] = c;
}

static void phase_dequeue(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	if (v->model) {
		/* Its packets are compared with variant 0's (compare_packets). */
		v->npkts = (uint16_t)lab_model_dequeue(v->mtx, rd->count, v->mpkts);
		df_log32(&v->all, "dequeue count", v->npkts);
		for (uint16_t i = 0; i < v->npkts; i++)
			df_check_tx_packet(d, v, NULL, i, false);
		return;
	}
	if (v->tx_mode != DF_TX_DEQUEUE) {
		phase_discard(d, v, rd);
		return;
	}
	uint64_t stalls = vl_vq_stats(v->txq)->zc_stalls;

	v->npkts = vl_net_dequeue(v->txq, v->pool, v->pkts, rd->count);
	/* Zero-copy under IN_ORDER stops a burst at its bound (ring descriptors held, vl_vq.h)
	 * where the others take every chain. To stay in lockstep the variant lets go of what
	 * it holds -- each packet copied into one of its own, the original freed, the chains
	 * returned (vl_vq_complete) -- and goes on with the rest of the burst. Each round
	 * makes progress: with nothing held, no chain waits for a lease. */
	while (v->npkts < rd->count && vl_vq_stats(v->txq)->zc_stalls != stalls) {
		for (uint16_t i = 0; i < v->npkts; i++)
			unhold(v, i);
		vl_vq_complete(v->txq);
		stalls = vl_vq_stats(v->txq)->zc_stalls;
		uint16_t n = vl_net_dequeue(v->txq, v->pool, v->pkts + v->npkts,
					    (uint16_t)(rd->count - v->npkts));

		v->extra_bursts++;
		v->extra_empty += n == 0;
		v->npkts = (uint16_t)(v->npkts + n);
	}
	df_log32(&v->all, "dequeue count", v->npkts);
	df_log32(&v->grp, "dequeue needs_call", vl_vq_needs_call(v->txq));
	for (uint16_t i = 0; i < v->npkts; i++)
		df_check_tx_packet(d, v, v->pkts[i], i, v->idx == 0);
}

/* Participant v's dequeued packet i: length, offloads, and its bytes copied to dst. */
static uint32_t packet_of(const struct df_var *v, uint16_t i, struct vl_offload *ol,
			  uint8_t *dst)
{
	if (v->model) {
		const struct lab_model_pkt *p = &v->mpkts[i];

		*ol = p->ol;
		memcpy(dst, p->data, p->len);
		return p->len;
	}
	*ol = v->pkts[i]->ol;
	return vl_pkt_read(v->pkts[i], 0, dst, v->pkts[i]->pkt_len);
}

/* Every participant's packets equal variant 0's, byte for byte. */
static void compare_packets(struct df *d)
{
	const struct df_var *r = &d->v[0];

	for (unsigned k = 1; k < DF_PARTS; k++) {
		const struct df_var *v = &d->v[k];

		if (v->tx_mode != DF_TX_DEQUEUE)
			continue; /* no packets: its count is in the logs, its bytes checked */
		if (v->npkts != r->npkts)
			fz_fail("round %u: %s dequeued %u packets, variant 0 %u", d->round, df_vname(k),
				v->npkts, r->npkts);
		for (uint16_t i = 0; i < v->npkts; i++) {
			struct vl_offload oa, ob;
			uint32_t la = packet_of(r, i, &oa, df_buf[0]);
			uint32_t lb = packet_of(v, i, &ob, df_buf[1]);

			if (la != lb || memcmp(&oa, &ob, sizeof(oa)))
				fz_fail("round %u: packet %u: %s has %u bytes, variant 0 %u (or "
					"offloads differ)", d->round, i, df_vname(k), lb, la);
			if (memcmp(df_buf[0], df_buf[1], la))
				fz_fail("round %u: packet %u bytes differ between variant 0 and %s",
					d->round, i, df_vname(k));
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void phase_tx_return(struct df *d, struct df_var *v)
{
	uint32_t serials[256], n = 0, id, len;
	int rc;

	/* No holding: every packet goes back at once, and with it its chain. (The model
	 * returned its chains when it dequeued them.) */
	if (!v->model) {
		vl_pkt_free_bulk(v->pkts, v->npkts);
		vl_vq_complete(v->txq);
		df_log32(&v->grp, "complete needs_call", vl_vq_needs_call(v->txq));
		if (vl_vq_zero_copy_held(v->txq))
			fz_fail("round %u, %s: %u chains held after every packet was freed",
				d->round, df_vname(v->idx), vl_vq_zero_copy_held(v->txq));
	}
	v->npkts = 0;
	while ((rc = lab_ring_pop_used(&v->tx, &id, &len)) == 1) {
		if (id >= d->size || !v->txc[id].busy)
			fz_fail("round %u, %s: TX used id %u not in flight", d->round,
				df_vname(v->idx), id);
		if (len != 0)
			fz_fail("round %u, %s: TX used id %u with length %u", d->round,
				df_vname(v->idx), id, len);
		df_log32(&v->grp, "tx used id", id);
		if (n < 256)
			serials[n++] = v->txc[id].serial;
		df_release_chain(v, &v->txc[id]);
	}
	if (rc < 0)
		fz_fail("round %u, %s: the TX used ring names a buffer not in flight",
			d->round, df_vname(v->idx));
	qsort(serials, n, sizeof(serials[0]), cmp_u32);
	df_log32(&v->all, "tx returned", n);
	for (uint32_t i = 0; i < n; i++)
		df_log32(&v->all, "tx returned serial", serials[i]);
}

static void phase_rx_post(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	for (uint32_t i = 0; i < rd->nrx; i++)
		df_post_rx(d, v, &rd->rx[i]);
	lab_ring_publish(&v->rx);
	arm(&v->rx, (uint8_t)(rd->notify >> 2), (uint8_t)(rd->notify >> 4));
}

static void phase_enqueue(struct df *d, struct df_var *v, uint32_t npkts)
{
	memset(v->status, 0xEE, sizeof(v->status));
	if (v->model)
		v->handled = (uint16_t)lab_model_enqueue(v->mrx, d->hpkts, npkts, v->status);
	else
		v->handled = vl_net_enqueue(v->rxq, d->hpkts, (uint16_t)npkts, v->status);
	df_log32(&v->all, "enqueue handled", v->handled);
	for (uint16_t i = 0; i < v->handled; i++)
		df_log32(&v->all, "enqueue status", v->status[i]);
	if (!v->model)
		df_log32(&v->grp, "enqueue needs_call", vl_vq_needs_call(v->rxq));
}

/* Harvest RX used entries: each delivered packet, in order, takes num_buffers entries (one
 * without mergeable buffers); with `record` it must also reassemble from its buffers to what
 * the host sent (header fields, num_buffers, payload; untouched bytes past each used
 * length). The other variants are compared with variant 0 through guest RAM. */
static void phase_rx_harvest(struct df *d, struct df_var *v, bool record)
{
	uint32_t id, len;
	int rc;

	for (uint16_t i = 0; i < v->handled; i++) {
		if (v->status[i] != VL_RX_DELIVERED)
			continue;
		const struct vl_pkt *p = d->hpkts[i];
		uint32_t want = d->hdr_len + p->pkt_len, got = 0, nbufs = 0, expect_bufs = 1;
		uint8_t *asm_buf = df_buf[0];

		do {
			rc = lab_ring_pop_used(&v->rx, &id, &len);
			if (rc != 1)
				fz_fail("round %u, %s: RX packet %u delivered, its used entry "
					"%u is missing", d->round, df_vname(v->idx), i, nbufs);
			if (id >= d->size || !v->rxc[id].busy)
				fz_fail("round %u, %s: RX used id %u not in flight", d->round,
					df_vname(v->idx), id);
			struct df_chain *c = &v->rxc[id];

			if (len > c->cap || len > want - got || len == 0)
				fz_fail("round %u, %s: RX used length %u (buffer %u, %u bytes "
					"left of the packet)", d->round, df_vname(v->idx), len, c->cap,
					want - got);
			df_log32(&v->all, "rx used id", id);
			df_log32(&v->all, "rx used len", len);
			if (record)
				df_read_rx(d, v, c, len, asm_buf + got);
			else if (nbufs == 0)
				df_peek_rx(v, c, len < 12 ? len : 12, asm_buf); /* num_buffers */
			got += len;
			nbufs++;
			if (nbufs == 1 && d->hdr_len == 12 && d->mergeable) {
				if (got < 12)
					fz_fail("round %u, %s: first RX buffer holds %u bytes",
						d->round, df_vname(v->idx), got);
				expect_bufs = df_get16(asm_buf + 10);
			}
			df_release_chain(v, c);
		} while (nbufs < expect_bufs);
		if (got != want)
			fz_fail("round %u, %s: RX packet %u: %u bytes in %u buffers, sent %u",
				d->round, df_vname(v->idx), i, got, nbufs, want);
		if (!record)
			continue; /* compared with variant 0 through guest RAM */
		const uint8_t *h = asm_buf;

		if (h[0] != p->ol.flags || h[1] != p->ol.gso_type || df_get16(h + 2) != p->ol.hdr_len ||
		    df_get16(h + 4) != p->ol.gso_size || df_get16(h + 6) != p->ol.csum_start ||
		    df_get16(h + 8) != p->ol.csum_offset)
			fz_fail("round %u, %s: RX packet %u header fields differ from the "
				"packet's offloads", d->round, df_vname(v->idx), i);
		if (d->hdr_len == 12 && df_get16(h + 10) != (d->mergeable ? nbufs : 1u))
			fz_fail("round %u, %s: RX packet %u num_buffers %u, used %u buffers",
				d->round, df_vname(v->idx), i, df_get16(h + 10), nbufs);
		vl_pkt_read(p, 0, df_buf[1], p->pkt_len);
		if (memcmp(asm_buf + d->hdr_len, df_buf[1], p->pkt_len))
			fz_fail("round %u, %s: RX packet %u payload differs from what the "
				"host sent", d->round, df_vname(v->idx), i);
	}
	rc = lab_ring_pop_used(&v->rx, &id, &len);
	if (rc != 0)
		fz_fail("round %u, %s: an RX used entry (id %u len %u) no delivered packet "
			"explains", d->round, df_vname(v->idx), id, len);
}

/* The counters every participant keeps, the model included: guest-visible outcomes. */
static void log_counters(struct df_log *l, uint64_t packets, uint64_t bytes, uint64_t chains,
			 uint64_t rx_no_room, const uint64_t *drops)
{
	df_log32(l, "stats packets", (uint32_t)packets);
	df_log32(l, "stats bytes", (uint32_t)bytes);
	df_log32(l, "stats chains", (uint32_t)chains);
	df_log32(l, "stats rx_no_room", (uint32_t)rx_no_room);
	for (unsigned k = 0; k < VL_DROP__COUNT; k++)
		df_log32(l, "stats drops", (uint32_t)drops[k]);
}

static void log_stats(struct df_var *v, const struct vl_vq *q)
{
	const struct vl_vq_stats *s = vl_vq_stats(q);
	/* A ceiling counts no packets in the queue; what it returned stands in for them. */
	const bool ceiling = q == v->txq && v->tx_mode != DF_TX_DEQUEUE;

	log_counters(&v->all, ceiling ? v->disc_good : s->packets,
		     ceiling ? v->disc_bytes : s->bytes, s->chains, s->rx_no_room, s->drops);
	/* How the core got there: the same for every core variant, not a model matter. */
	const bool tx = q == v->txq;

	df_log32(&v->core, "stats bursts", (uint32_t)(s->bursts - (tx ? v->extra_bursts : 0)));
	df_log32(&v->core, "stats empty bursts",
		 (uint32_t)(s->empty_bursts - (tx ? v->extra_empty : 0)));
	for (unsigned k = 0; k < VL_SIZE_BINS; k++)
		df_log32(&v->core, "stats size bins", (uint32_t)s->size_bins[k]);
	df_log32(&v->grp, "stats used entries", (uint32_t)s->used_entries);
	df_log32(&v->grp, "stats calls needed", (uint32_t)s->calls_needed);
	df_log32(&v->grp, "stats calls suppressed", (uint32_t)s->calls_suppressed);
	df_log32(&v->grp, "stats zc packets", (uint32_t)s->zc_packets);
	df_log32(&v->grp, "stats zc returned", (uint32_t)s->zc_returned);
	df_log32(&v->grp, "stats zc stalls", (uint32_t)s->zc_stalls);
	for (unsigned k = 0; k < VL_ZC_FALLBACK__COUNT; k++)
		df_log32(&v->grp, "stats zc fallbacks", (uint32_t)s->zc_fallbacks[k]);
	df_log32(&v->grp, "stats rx bufs wasted", (uint32_t)s->rx_bufs_wasted);
	df_log32(&v->grp, "stats log out of range", (uint32_t)s->log_out_of_range);
}

static void log_model_stats(struct df_var *v, const struct lab_model *m)
{
	const struct lab_model_stats *s = lab_model_stats(m);

	log_counters(&v->all, s->packets, s->bytes, s->chains, s->rx_no_room, s->drops);
}

/* Well-formed traffic: a packet no buffer could hold is the one legitimate drop, and no
 * queue breaks. */
static void check_queue(struct df *d, unsigned k, bool rx, const uint64_t *drops, bool broken)
{
	for (unsigned r = 1; r < VL_DROP__COUNT; r++)
		if (drops[r] && r != VL_DROP_RX_TOO_BIG)
			fz_fail("round %u, %s: %s queue dropped %llu well-formed chains/packets as %s",
				d->round, df_vname(k), rx ? "RX" : "TX", (unsigned long long)drops[r],
				vl_drop_name((enum vl_drop)r));
	if (broken)
		fz_fail("round %u, %s: %s queue broken", d->round, df_vname(k), rx ? "RX" : "TX");
}

static void check_stats(struct df *d, unsigned k)
{
	struct df_var *v = &d->v[k];

	if (v->model) {
		log_model_stats(v, v->mtx);
		log_model_stats(v, v->mrx);
		check_queue(d, k, false, lab_model_stats(v->mtx)->drops,
			    lab_model_broken(v->mtx) != VL_DROP_NONE);
		check_queue(d, k, true, lab_model_stats(v->mrx)->drops,
			    lab_model_broken(v->mrx) != VL_DROP_NONE);
		return;
	}
	log_stats(v, v->txq);
	log_stats(v, v->rxq);
	for (unsigned s = 0; s < 2; s++) {
		const struct vl_vq *q = s ? v->rxq : v->txq;
		const struct vl_vq_stats *st = vl_vq_stats(q);

		check_queue(d, k, s != 0, st->drops, vl_vq_broken(q));
		if (st->alloc_failures)
			fz_fail("round %u, %s: %llu allocation failures", d->round, df_vname(k),
				(unsigned long long)st->alloc_failures);
	}
}

/* memcmp first: a byte loop would cost a coverage callback per byte in fuzzing builds. */
static void first_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *at)
{
	size_t i = 0;

	if (!memcmp(a, b, n)) {
		*at = n;
		return;
	}
	while (i < n && a[i] == b[i])
		i++;
	*at = i;
}

/* After a round: the logs, guest RAM, the rings and the dirty log, as the table at the top
 * says. */
static void compare_round(struct df *d, bool last)
{
	uint64_t rx_ring_len = lab_ring_area_bytes(d->L, d->size);
	size_t at;
	/* Guest RAM: the guest has written nothing above the highest allocation of any
	 * participant, and a device only where the guest let it, so the rounds compare what
	 * lies below it (comparing all of it nine times a round was a large part of a short
	 * run, and reading it filled every page of the memfd, which the next input's reset
	 * then cleared); after the last round the rest must still be zero, as every input
	 * found it, which catches a stray write anywhere. */
	uint32_t ram_len = 0;

	for (unsigned k = 0; k < DF_PARTS; k++)
		if (d->v[k].ram_hi > ram_len)
			ram_len = d->v[k].ram_hi;
	for (unsigned k = 0; last && k < DF_PARTS; k++) {
		const struct df_var *v = &d->v[k];
		uint64_t nz = lab_gmem_find_nonzero(v->g, v->ram_gpa + ram_len, DF_RAM - ram_len);

		if (nz != v->ram_gpa + DF_RAM)
			fz_fail("round %u: %s wrote guest RAM at gpa 0x%llx (0x%02x), above every "
				"allocation of the guest", d->round, df_vname(k),
				(unsigned long long)nz, v->ram[nz - v->ram_gpa]);
	}

	for (unsigned k = 0; k < DF_PARTS; k++)
		check_stats(d, k);
	for (unsigned k = 1; k < DF_PARTS; k++) {
		struct df_var *v = &d->v[k];
		unsigned lead = v->zc ? 3 : 0;

		df_log_compare(d, &d->v[0].all, &v->all, 0, k, "guest-visible");
		first_diff(d->v[0].ram, v->ram, ram_len, &at);
		if (at != ram_len)
			fz_fail("round %u: guest RAM differs between variant 0 and %s at gpa 0x%llx "
				"(0x%02x vs 0x%02x)", d->round, df_vname(k),
				(unsigned long long)(v->ram_gpa + at), d->v[0].ram[at], v->ram[at]);
		if (v->model)
			continue; /* the rest is how the core does it, not what the guest sees */
		/* The ceilings fill no size classes: how they work is their own. */
		if (v->tx_mode == DF_TX_DEQUEUE)
			df_log_compare(d, &d->v[0].core, &v->core, 0, k, "core");
		if (k != lead)
			df_log_compare(d, &d->v[lead].grp, &v->grp, lead, k, "exact");
		first_diff(d->v[0].ring + v->rx_ring_off, v->ring + v->rx_ring_off, rx_ring_len,
			   &at);
		if (at != rx_ring_len)
			fz_fail("round %u: the RX ring differs between variant 0 and %u at offset "
				"0x%zx", d->round, k, at);
		if (k != lead) {
			first_diff(d->v[lead].ring, v->ring, DF_RING_AREA, &at);
			if (at != DF_RING_AREA)
				fz_fail("round %u: the ring area differs between variant %u and %u at "
					"offset 0x%zx", d->round, lead, k, at);
			if (v->log && memcmp(d->v[lead].log, v->log, v->log_bytes))
				fz_fail("round %u: the dirty log differs between variant %u and %u",
					d->round, lead, k);
		}
	}
	for (unsigned k = 0; k < DF_PARTS; k++) {
		df_log_reset(&d->v[k].all);
		df_log_reset(&d->v[k].core);
		df_log_reset(&d->v[k].grp);
	}
}

static void build_host_packets(struct df *d, const struct fz_df_round *rd)
{
	for (uint32_t i = 0; i < rd->npkts; i++) {
		uint32_t len = 1u + rd->pk[i].len % DF_RX_MAX_PKT;
		struct vl_pkt *p = vl_pkt_alloc_len(d->hpool, len);
		uint8_t ol = rd->pk[i].ol;

		if (!p)
			fz_fail("host pool exhausted");
		fz_fill(df_buf[0], len, 0x80000000u + d->round * 64u + i);
		vl_pkt_write(p, 0, df_buf[0], len);
		p->ol.flags = (uint8_t)(ol & 3u); /* NEEDS_CSUM, DATA_VALID: GUEST_CSUM */
		p->ol.gso_type = (uint8_t)(ol >> 3 & 1u ? VL_NET_HDR_GSO_TCPV6 : 0);
		p->ol.hdr_len = (uint16_t)(ol * 3u);
		p->ol.gso_size = (uint16_t)(ol * 11u);
		p->ol.csum_start = (uint16_t)(len / 2);
		p->ol.csum_offset = (uint16_t)(ol >> 4);
		d->hpkts[i] = p;
	}
}

void df_run_round(struct df *d, const struct fz_df_round *rd, bool last)
{
	for (unsigned k = 0; k < DF_PARTS; k++)
		phase_tx_post(d, &d->v[k], rd);
	for (unsigned k = 0; k < DF_PARTS; k++)
		phase_dequeue(d, &d->v[k], rd);
	compare_packets(d);
	for (unsigned k = 0; k < DF_PARTS; k++)
		phase_tx_return(d, &d->v[k]);
	build_host_packets(d, rd);
	for (unsigned k = 0; k < DF_PARTS; k++) {
		phase_rx_post(d, &d->v[k], rd);
		phase_enqueue(d, &d->v[k], rd->npkts);
		phase_rx_harvest(d, &d->v[k], k == 0);
	}
	vl_pkt_free_bulk(d->hpkts, rd->npkts);
	compare_round(d, last);
}


/* SPDX-License-Identifier: MIT */
/* The session recorder, one burst: what the core read during it (session_rec.c's observer)
 * and what it returned become guest statements, the host statement and expectations. The
 * burst's chains are read back from the recorder's copies by session_rec_walk.c.
 *
 * Everything here works on the recorder's own copies (descriptor snapshots, avail slots,
 * captured bytes), never on guest memory again, except the split used ring the core itself
 * just wrote (the guest only reads it). The copies come from a guest that may be hostile:
 * every index, length and count is checked before use, and a burst that does not add up
 * stops the recording rather than write a trace that would not replay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_rec_burst.h"
#include "vhostlab/vl_net.h"
#include "vhostlab/vl_virtio.h"

/* ---- payload ------------------------------------------------------------------------ */

static uint32_t linearize(const struct vl_pkt *pkt, uint8_t *out)
{
	uint32_t off = 0;

	for (const struct vl_pkt *s = pkt; s && off < VL_PKT_MAX_LEN; s = s->next) {
		uint32_t n = s->data_len;

		if (n > VL_PKT_MAX_LEN - off)
			n = VL_PKT_MAX_LEN - off;
		memcpy(out + off, s->data, n);
		off += n;
	}
	return off;
}

/* Does the header the chain's buffers begin with say what the packet carries? */
static bool header_matches(struct burst *b, uint32_t nb, const struct vl_pkt *pkt)
{
	uint8_t h[12];
	uint32_t got = 0;

	for (uint32_t i = 0; i < nb && got < b->hdr; i++) {
		uint32_t n = b->bufs[i].len < b->hdr - got ? b->bufs[i].len : b->hdr - got;

		if (!srec_cap_read(b->r, b->bufs[i].gpa, n, h + got))
			return false;
		got += n;
	}
	uint16_t hdr_len, gso_size, csum_start, csum_offset;

	memcpy(&hdr_len, h + 2, 2);
	memcpy(&gso_size, h + 4, 2);
	memcpy(&csum_start, h + 6, 2);
	memcpy(&csum_offset, h + 8, 2);
	return got == b->hdr && h[0] == pkt->ol.flags && h[1] == pkt->ol.gso_type &&
	       hdr_len == pkt->ol.hdr_len && gso_size == pkt->ol.gso_size &&
	       csum_start == pkt->ol.csum_start && csum_offset == pkt->ol.csum_offset;
}

/* Put each dequeued packet's bytes where its chain holds them, after the header. Packet k is
 * the k-th consumed chain when no chain was dropped; otherwise the next chain whose length
 * and header match it (a dropped chain made no packet). */
static bool place_payload(struct burst *b, struct vl_pkt *const *pkts, uint16_t n)
{
	uint32_t k = 0;
	char miss[140] = "";

	for (uint32_t c = 0; c < b->nchains && k < n; c++) {
		uint32_t nb;
		uint64_t total = 0;
		bool walked = srec_walk(b, c, &nb, &total);

		if (!walked || total <= b->hdr || total - b->hdr != pkts[k]->pkt_len) {
			if (!miss[0])
				snprintf(miss, sizeof(miss), " (chain %u of %u: %s, %llu bytes with "
					 "the header; packet %u: %u bytes)", c, b->nchains,
					 walked ? "walked" : "not all of it was seen",
					 (unsigned long long)total, k, pkts[k]->pkt_len);
			continue;
		}
		if (b->nchains != n && !header_matches(b, nb, pkts[k]))
			continue;
		uint32_t len = linearize(pkts[k], b->scratch), off = 0, skip = b->hdr;

		for (uint32_t i = 0; i < nb; i++) {
			uint32_t bl = b->bufs[i].len;

			if (b->bufs[i].write)
				return srec_fail(b, "a TX chain with a device-writable buffer made a packet");
			if (skip >= bl) {
				skip -= bl;
				continue;
			}
			uint32_t take = bl - skip;

			if (take > len - off)
				take = len - off;
			if (!srec_keep(b->r, b->bufs[i].gpa + skip, b->scratch + off, take))
				return srec_fail(b, "out of memory");
			off += take;
			skip = 0;
		}
		if (off != len)
			return srec_fail(b, "a packet does not fill its chain");
		k++;
	}
	if (k != n) {
		snprintf(b->why, sizeof(b->why), "the burst's packets cannot be matched to its "
			 "chains%s", miss);
		return false;
	}
	return true;
}

/* ---- statements --------------------------------------------------------------------- */

static bool put(struct burst *b, const struct lab_trace_op *op)
{
	return srec_append(b->r, op);
}

static bool put_write(struct burst *b, uint64_t gpa, const uint8_t *bytes, uint32_t n)
{
	struct lab_trace_op op = {.kind = LAB_T_WRITE, .addr = gpa};

	op.pat.kind = LAB_PAT_HEX;
	op.pat.bytes = malloc(n);
	op.pat.nbytes = n;
	if (!op.pat.bytes)
		return srec_fail(b, "out of memory");
	memcpy(op.pat.bytes, bytes, n);
	return put(b, &op);
}

/* The end of the trace region holding gpa (a `write` stays inside one region). */
static uint64_t region_end(const struct lab_trace *t, uint64_t gpa)
{
	for (uint32_t i = 0; i < t->nregions; i++)
		if (gpa - t->regions[i].gpa < t->regions[i].size)
			return t->regions[i].gpa + t->regions[i].size;
	return 0;
}

/* Every captured byte (and placed payload) as `write`s: runs of adjacent bytes merged, cut
 * at region ends and at the format's bytes per statement. */
static bool put_data(struct burst *b)
{
	struct lab_srec *r = b->r;
	uint8_t *run = NULL;
	size_t cap = 0;
	bool ok = true;

	srec_sort_caps(r);
	for (uint32_t i = 0; ok && i < r->ncaps;) {
		uint64_t start = r->caps[i].gpa, end = start;
		size_t len = 0;

		/* Merge while the next capture starts at or before the run's end: the earlier
		 * copy of an overlapping byte wins. */
		for (; i < r->ncaps && r->caps[i].gpa <= end; i++) {
			const struct srec_cap *c = &r->caps[i];
			uint64_t c_end = c->gpa + c->len;

			if (c_end <= end)
				continue;
			size_t add = (size_t)(c_end - end);

			if (len + add > cap) {
				size_t ncap = cap ? cap : 4096;

				while (ncap < len + add)
					ncap *= 2;
				uint8_t *nrun = realloc(run, ncap);

				if (!nrun) {
					free(run);
					return srec_fail(b, "out of memory");
				}
				run = nrun;
				cap = ncap;
			}
			memcpy(run + len, r->arena + c->off + (end - c->gpa), add);
			len += add;
			end = c_end;
		}
		for (uint64_t at = start; ok && at < end;) {
			uint64_t stop = region_end(&r->t, at), n = end - at;

			if (stop <= at) {
				ok = srec_fail(b, "captured bytes outside the trace's regions");
				break;
			}
			if (n > stop - at)
				n = stop - at;
			if (n > LAB_TRACE_MAX_BYTES)
				n = LAB_TRACE_MAX_BYTES;
			ok = put_write(b, at, run + (at - start), (uint32_t)n);
			at += n;
		}
	}
	free(run);
	return ok;
}

static bool put_split_ring(struct burst *b, uint16_t a_avail, bool broke)
{
	struct lab_srec *r = b->r;
	struct srec_q *q = b->q;
	uint16_t rel_pub = (uint16_t)(q->pub - r->b_avail);
	bool any = false;

	if (rel_pub > q->size)
		return srec_fail(b, "the trace's avail index ran ahead of the ring");
	for (uint32_t i = 0; i < q->ntouched; i++) {
		uint32_t idx = q->touched[i];
		struct rdesc d = srec_parse_desc(q->snap[idx]);
		struct lab_trace_op op = {.kind = LAB_T_DESC, .queue = q->tq, .index = idx,
					  .addr = d.addr, .len = d.len, .flags = d.a, .next = d.b,
					  .given = LAB_TA_FLAGS | LAB_TA_NEXT};

		if (!put(b, &op))
			return false;
	}
	/* Avail slots: those not yet in the trace in order (`avail`), those already there
	 * only if the guest wrote another head since (a raw write of the slot). */
	for (uint32_t i = 0; i < r->slots_read; i++) {
		uint32_t slot = (uint16_t)(r->b_avail + i) % q->size;
		uint16_t v = q->slot_val[slot];

		if (q->slot_stamp[slot] != r->stamp)
			return srec_fail(b, "the core skipped an avail slot");
		if (i < rel_pub) {
			if (q->slot_set[slot] && q->slot_head[slot] == v)
				continue;
			uint8_t raw[2];

			memcpy(raw, &v, 2);
			if (!put_write(b, q->drv + 4 + 2ull * slot, raw, 2))
				return false;
		} else {
			struct lab_trace_op op = {.kind = LAB_T_AVAIL, .queue = q->tq, .index = v};

			if (!put(b, &op))
				return false;
			any = true;
		}
		q->slot_head[slot] = v;
		q->slot_set[slot] = true;
	}
	/* The index the trace publishes: what the core's read covered, derived from what it
	 * did (the copy of avail->idx was taken after the core's read, and the guest may have
	 * moved it since). Dequeue takes min(window, max) chains: publishing exactly those
	 * consumed reproduces it. Enqueue looks at chains one at a time until it has enough or
	 * the window ends: publishing the slots it read reproduces both. Never less than what
	 * the trace published before: the guest's index only grows. */
	uint16_t reach = b->dequeue ? (uint16_t)(a_avail - r->b_avail) : (uint16_t)r->slots_read;
	uint16_t idx = (uint16_t)(r->b_avail + (reach > rel_pub ? reach : rel_pub));

	/* A burst that broke the queue on avail->idx: the value it read is what broke it. */
	if (broke && vl_vq_broken_reason(r->cur_vq) == VL_DROP_AVAIL_IDX_JUMP && r->idx_seen)
		idx = r->idx_read;
	if (any || idx != q->pub) {
		struct lab_trace_op op = {.kind = LAB_T_KICK, .queue = q->tq, .value = idx,
					  .given = LAB_TA_IDX};

		if (!put(b, &op))
			return false;
	}
	q->pub = idx;
	return true;
}

static bool put_packed_ring(struct burst *b)
{
	struct lab_srec *r = b->r;
	struct srec_q *q = b->q;
	uint16_t pos = r->b_avail & 0x7fffu;
	bool wrap = (r->b_avail & VL_PACKED_WRAP_BIT) != 0;
	uint32_t dpub = srec_pdist(q->size, pos, wrap, q->pub, q->pub_wrap), off = 0;
	bool any = false;

	if (dpub > q->size)
		return srec_fail(b, "the trace's ring position ran ahead of the ring");
	/* Positions before the published one were written (and stay available) already. */
	for (uint32_t c = 0; c < b->nchains; c++) {
		for (uint32_t i = 0; i < b->chains[c].ndescs; i++, off++) {
			if (off >= dpub) {
				struct rdesc d = srec_parse_desc(q->snap[pos]);
				struct lab_trace_op op = {.kind = LAB_T_PDESC, .queue = q->tq,
							  .index = pos, .addr = d.addr,
							  .len = d.len, .id = d.a, .flags = d.b};

				if (!put(b, &op))
					return false;
				any = true;
			}
			srec_padvance(q->size, &pos, &wrap, 1);
		}
	}
	if (off > dpub) {
		q->pub = pos;
		q->pub_wrap = wrap;
	}
	if (any) {
		/* A packed kick makes the replay's driver group what it wrote into chains. */
		struct lab_trace_op op = {.kind = LAB_T_KICK, .queue = q->tq};

		return put(b, &op);
	}
	return true;
}

static void put_ol(const struct vl_offload *ol, struct lab_trace_ol *o)
{
	o->given = LAB_OL_FLAGS;
	o->flags = ol->flags;
	o->gso_type = ol->gso_type;
	o->hdr_len = ol->hdr_len;
	o->gso_size = ol->gso_size;
	o->csum_start = ol->csum_start;
	o->csum_offset = ol->csum_offset;
	o->given |= (ol->gso_type ? LAB_OL_GSO_TYPE : 0) | (ol->hdr_len ? LAB_OL_HDR_LEN : 0) |
		    (ol->gso_size ? LAB_OL_GSO_SIZE : 0) |
		    (ol->csum_start ? LAB_OL_CSUM_START : 0) |
		    (ol->csum_offset ? LAB_OL_CSUM_OFFSET : 0);
}

static bool put_enqueue(struct burst *b, struct vl_pkt *const *pkts, uint16_t m)
{
	struct lab_trace_op op = {.kind = LAB_T_ENQUEUE, .queue = b->q->tq, .nitems = m};

	op.pkts = calloc(m ? m : 1, sizeof(*op.pkts));
	if (!op.pkts)
		return srec_fail(b, "out of memory");
	for (uint16_t i = 0; i < m; i++) {
		struct lab_trace_pkt *p = &op.pkts[i];
		uint32_t len = linearize(pkts[i], b->scratch);

		p->len = len;
		p->data.kind = LAB_PAT_HEX;
		p->data.nbytes = len;
		p->data.bytes = malloc(len ? len : 1);
		if (!p->data.bytes) {
			lab_trace_op_free(&op);
			return srec_fail(b, "out of memory");
		}
		memcpy(p->data.bytes, b->scratch, len);
		put_ol(&pkts[i]->ol, &p->ol);
		if (b->r->max_pkt_len < len)
			b->r->max_pkt_len = len;
	}
	return put(b, &op);
}

static bool put_used(struct burst *b, uint32_t id, uint32_t len)
{
	struct lab_trace_op op = {.kind = LAB_T_EXPECT_USED, .queue = b->q->tq, .id = (uint16_t)id,
				  .len = len, .given = LAB_TA_ID | LAB_TA_LEN};

	return put(b, &op);
}

/* Split: the used elements the core just wrote, read back from the ring (only the device
 * writes it; the guest reads). */
static bool expect_used_split(struct burst *b, uint16_t a_used)
{
	struct lab_srec *r = b->r;
	struct srec_q *q = b->q;
	uint16_t n = (uint16_t)(a_used - r->b_used);

	if (n > q->size)
		return srec_fail(b, "the used index moved by more than the ring's size");
	for (uint16_t i = 0; i < n; i++) {
		uint32_t slot = (uint16_t)(r->b_used + i) % q->size;
		uint64_t len = 8;
		const uint8_t *e = vl_mem_translate(r->mem, q->dev + 4 + 8ull * slot, &len,
						    VL_ACCESS_READ);
		uint32_t id, ulen;

		if (!e || len < 8)
			return srec_fail(b, "the used ring is not mapped");
		memcpy(&id, e, 4);
		memcpy(&ulen, e + 4, 4);
		if (!put_used(b, id, ulen))
			return false;
	}
	return true;
}

/* Packed: written by the device where the guest rewrites descriptors as soon as it sees them
 * used, so they are not read back but derived: TX returns every chain consumed with length
 * 0, one used descriptor each (under IN_ORDER too); RX fills chains in order, each
 * to its capacity but the packet's last. A burst with dropped chains (whose returns the core
 * orders by rules of its own) ends the used expectations of the queue. */
static bool expect_used_packed(struct burst *b, uint16_t a_avail, uint16_t done,
			       struct vl_pkt *const *pkts, const uint8_t *status)
{
	struct lab_srec *r = b->r;
	struct srec_q *q = b->q;
	const struct vl_vq_stats *st = vl_vq_stats(r->cur_vq);
	uint32_t consumed = 0, k = 0;

	for (uint32_t c = 0, d = srec_pdist(q->size, r->b_avail & 0x7fffu,
				       (r->b_avail & VL_PACKED_WRAP_BIT) != 0, a_avail & 0x7fffu,
				       (a_avail & VL_PACKED_WRAP_BIT) != 0);
	     c < b->nchains && d > 0; c++) {
		d -= b->chains[c].ndescs < d ? b->chains[c].ndescs : d;
		consumed++;
	}
	if (b->dequeue) {
		for (uint32_t c = 0; c < consumed; c++)
			if (!put_used(b, b->chains[c].id, 0))
				return false;
		return true;
	}
	uint64_t drops = 0, before = 0;

	for (uint32_t d = 1; d < VL_DROP__COUNT; d++) {
		drops += st->drops[d];
		before += r->b_stats.drops[d];
	}
	if (drops != before || st->rx_bufs_wasted != r->b_stats.rx_bufs_wasted) {
		q->used_known = false;
		return true;
	}
	for (uint16_t i = 0; i < done; i++) {
		if (status[i] != VL_RX_DELIVERED)
			continue;
		uint64_t left = b->hdr + (uint64_t)pkts[i]->pkt_len;

		while (left > 0) {
			uint32_t nb;
			uint64_t total;

			if (k >= consumed || !srec_walk(b, k, &nb, &total)) {
				q->used_known = false;
				return true;
			}
			uint64_t used = b->mergeable && total < left ? total : left;

			if (!put_used(b, b->chains[k].id, (uint32_t)used))
				return false;
			left -= used;
			k++;
			if (!b->mergeable)
				break;
		}
	}
	if (k != consumed)
		q->used_known = false; /* the packets do not account for the chains */
	return true;
}

static bool put_expectations(struct burst *b, struct vl_pkt *const *pkts, uint16_t done,
			     const uint8_t *status, uint16_t a_avail, uint16_t a_used)
{
	struct srec_q *q = b->q;

	if (b->discard) {
		/* No packet to expect: what the guest sees of a discard is its used entries. */
	} else if (b->dequeue) {
		struct lab_trace_op op = {.kind = LAB_T_EXPECT_DEQUEUED, .queue = q->tq,
					  .count = done};

		if (!put(b, &op))
			return false;
		for (uint16_t i = 0; i < done; i++) {
			uint32_t len = linearize(pkts[i], b->scratch);
			struct lab_trace_op p = {.kind = LAB_T_EXPECT_PACKET, .queue = q->tq,
						 .index = q->npkts + i, .len = len};

			p.pat.kind = LAB_PAT_FNV1A;
			p.pat.value = lab_trace_fnv1a(LAB_FNV1A_INIT, b->scratch, len);
			put_ol(&pkts[i]->ol, &p.ol);
			if (!put(b, &p))
				return false;
		}
	} else {
		struct lab_trace_op op = {.kind = LAB_T_EXPECT_ENQUEUED, .queue = q->tq,
					  .count = done};

		if (!put(b, &op))
			return false;
		for (uint16_t i = 0; i < done; i++) {
			if (status[i] == VL_RX_DELIVERED)
				continue;
			struct lab_trace_op s = {.kind = LAB_T_EXPECT_STATUS, .queue = q->tq,
						 .index = i, .value = status[i]};

			if (status[i] > VL_RX_DROPPED_OFFLOAD)
				return srec_fail(b, "an enqueue status the format has no name for");
			if (!put(b, &s))
				return false;
		}
	}
	if (!q->used_known)
		return true;
	if (!q->packed)
		return expect_used_split(b, a_used);
	return expect_used_packed(b, a_avail, done, pkts, status);
}

/* ---- the burst ---------------------------------------------------------------------- */

static uint64_t drops_sum(const struct vl_vq_stats *s)
{
	uint64_t n = 0;

	for (uint32_t d = 1; d < VL_DROP__COUNT; d++)
		n += s->drops[d];
	return n;
}

static void truncate_to(struct lab_trace *t, uint32_t n)
{
	while (t->nops > n)
		lab_trace_op_free(&t->ops[--t->nops]);
}

static bool record(struct burst *b, uint16_t max, struct vl_pkt *const *pkts, uint16_t count,
		   uint16_t done, const uint8_t *status, uint16_t a_avail, uint16_t a_used,
		   bool broke)
{
	struct srec_q *q = b->q;

	if (q->kicks_want != q->kicks_trace) {
		struct lab_trace_op op = {.kind = LAB_T_KICKS, .queue = q->tq,
					  .value = q->kicks_want};

		if (!put(b, &op))
			return false;
		q->kicks_trace = q->kicks_want;
	}
	srec_sort_caps(b->r);
	if (!srec_collect_chains(b, a_avail))
		return false;
	if (b->dequeue && !b->discard && !place_payload(b, pkts, done))
		return false;
	if (!put_data(b))
		return false;
	if (!(q->packed ? put_packed_ring(b) : put_split_ring(b, a_avail, broke)))
		return false;
	if (b->discard) {
		struct lab_trace_op op = {.kind = LAB_T_DISCARD, .queue = q->tq, .count = max,
					  .given = b->touch ? LAB_TA_TOUCH : 0};

		if (!put(b, &op))
			return false;
	} else if (b->dequeue) {
		struct lab_trace_op op = {.kind = LAB_T_DEQUEUE, .queue = q->tq, .count = max};

		if (!put(b, &op))
			return false;
	} else {
		/* The packets handled and the one that found no room: the rest were not tried. */
		uint16_t m = done < count ? (uint16_t)(done + 1) : count;

		if (!put_enqueue(b, pkts, m))
			return false;
	}
	return put_expectations(b, pkts, done, status, a_avail, a_used);
}

void srec_burst_done(struct lab_srec *r, enum srec_call call, uint16_t max,
		     struct vl_pkt *const *pkts, uint16_t count, uint16_t done,
		     const uint8_t *status)
{
	const bool dequeue = call != SREC_ENQUEUE;
	const bool discard = call == SREC_DISCARD || call == SREC_DISCARD_TOUCH;

	struct srec_q *q = r->cur;
	struct vl_vq *vq = r->cur_vq;
	const struct vl_vq_stats *st = vl_vq_stats(vq);
	uint16_t a_avail = vl_vq_last_avail(vq), a_used = vl_vq_last_used(vq);
	bool broken = vl_vq_broken(vq);
	uint64_t f = r->t.features;

	if (r->fault) {
		lab_srec_stop(r, "%s", r->fault_msg);
		return;
	}
	/* A burst that changed nothing (an empty ring, no room yet) is left out: it consumed,
	 * returned and dropped nothing, and what it read is read again by the next one. */
	if (st->chains == r->b_stats.chains && done == 0 && drops_sum(st) == drops_sum(&r->b_stats) &&
	    broken == r->b_broken && a_used == r->b_used) {
		q->last_avail = a_avail;
		return;
	}
	struct burst b = {
		.r = r, .q = q, .dequeue = dequeue, .discard = discard,
		.touch = call == SREC_DISCARD_TOUCH,
		.hdr = (f & (VL_FEATURE(VL_F_NET_MRG_RXBUF) | VL_FEATURE(VL_F_VERSION_1) |
			     VL_FEATURE(VL_F_RING_PACKED))) ? 12 : 10,
		.mergeable = (f & VL_FEATURE(VL_F_NET_MRG_RXBUF)) != 0,
		.chains = calloc(q->size, sizeof(struct rchain)),
		.bufs = calloc(q->size, sizeof(struct rbuf)),
		.scratch = malloc(VL_PKT_MAX_LEN),
	};
	uint32_t start = r->t.nops;
	bool broke = broken && !r->b_broken;
	bool ok = b.chains && b.bufs && b.scratch ? record(&b, max, pkts, count, done, status,
							   a_avail, a_used, broke)
						  : srec_fail(&b, "out of memory");

	free(b.chains);
	free(b.bufs);
	free(b.scratch);
	if (!ok) {
		/* Never half a burst: the trace ends with the last whole one. */
		truncate_to(&r->t, start);
		lab_srec_stop(r, "a burst on queue %s could not be recorded: %s",
			      r->t.queues[q->tq].name, b.why[0] ? b.why : "see above");
		return;
	}
	r->bursts++;
	r->packets += done;
	if (dequeue && !discard) {
		q->npkts += done;
		for (uint16_t i = 0; i < done; i++)
			if (r->max_pkt_len < pkts[i]->pkt_len)
				r->max_pkt_len = pkts[i]->pkt_len;
		if (r->max_burst < max)
			r->max_burst = max;
	}
	q->last_avail = a_avail;
	q->last_used = a_used;
	srec_note_stats(q, vq, &r->b_stats);
	if (broke)
		lab_srec_stop(r, "queue %s broke (%s): the trace ends with the burst that broke it",
			      r->t.queues[q->tq].name, vl_drop_name(vl_vq_broken_reason(vq)));
}

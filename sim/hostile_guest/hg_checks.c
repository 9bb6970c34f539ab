/* SPDX-License-Identifier: MIT */
/* The hostile guest's invariants: what must hold after every call into the core, whatever
 * the guest wrote (hostile_guest.h). */
#include <stdio.h>
#include <string.h>

#include "hg_internal.h"
#include "model.h"

/* Must hold between any two calls into the core, whatever the guest wrote. */
void hg_check_queue(struct lab_hg *d)
{
	const struct vl_vq *vq = d->vq;
	const struct vl_vq_stats *st = vl_vq_stats(vq);
	enum vl_drop why = vl_vq_broken_reason(vq);
	uint32_t held = vl_vq_zero_copy_held(vq);

	if (vl_vq_broken(vq)) {
		if (!hg_queue_level(why))
			fz_fail("queue broken with reason %d (%s), not a queue-level reason",
				(int)why, vl_drop_name(why));
		if (st->drops[why] == 0)
			fz_fail("queue broken as %s but drops[%s] is 0", vl_drop_name(why),
				vl_drop_name(why));
	} else if (why != VL_DROP_NONE) {
		fz_fail("queue not broken but has broken reason %s", vl_drop_name(why));
	}
	if (held > d->size)
		fz_fail("zero-copy holds %u chains on a queue of %u", held, d->size);
	/* The bound counts ring descriptors and is below the queue size (vl_vq.h): held
	 * chains never take the whole ring, each holds at least one descriptor. */
	uint32_t held_descs = vl_vq_zero_copy_held_descs(vq);

	if (held_descs >= d->size || held_descs < held)
		fz_fail("zero-copy holds %u chains over %u ring descriptors on a queue of %u",
			held, held_descs, d->size);
	if (d->rx && held)
		fz_fail("RX queue holds %u zero-copy chains", held);
	uint16_t la = vl_vq_last_avail(vq), lu = vl_vq_last_used(vq);

	if (d->L == VL_LAYOUT_SPLIT) {
		/* Every chain consumed was returned or is held by a zero-copy lease. */
		if ((uint16_t)(la - lu) != held)
			fz_fail("split: last_avail %u - last_used %u != %u chains held", la, lu,
				held);
		return;
	}
	if ((la & 0x7fffu) >= d->size || (lu & 0x7fffu) >= d->size)
		fz_fail("packed: position outside the ring: last_avail 0x%04x last_used 0x%04x "
			"size %u", la, lu, d->size);
	if (held == 0 && la != lu)
		fz_fail("packed: nothing held but last_avail 0x%04x != last_used 0x%04x", la, lu);
}

/* A dequeued packet: bounded, consistent segments, offloads that passed the checks, and
 * every byte readable (each zero-copy segment must lie inside one guest region). */
void hg_check_tx_pkt(struct lab_hg *d, const struct vl_pkt *p)
{
	if (!p)
		fz_fail("dequeue returned a NULL packet");
	if (p->pkt_len > VL_PKT_MAX_LEN || p->pkt_len == 0)
		fz_fail("dequeued packet of %u bytes (must be 1..%u)", p->pkt_len, VL_PKT_MAX_LEN);
	if (p->refcnt != 1)
		fz_fail("dequeued packet with refcnt %u", p->refcnt);
	uint32_t sum = 0, nseg = 0;

	for (const struct vl_pkt *s = p; s; s = s->next) {
		nseg++;
		if (nseg > 65535)
			fz_fail("dequeued packet segment list does not end");
		/* A zero-copy packet's segments all point into guest memory. */
		if (p->release) {
			bool inside = false;

			for (uint32_t i = 0; i < d->nregs && !inside; i++) {
				const uint8_t *h = d->regs[i].host;

				inside = s->data >= h && s->data_len <= d->regs[i].size &&
					 (uint64_t)(s->data - h) <= d->regs[i].size - s->data_len;
			}
			if (!inside)
				fz_fail("zero-copy packet segment %u (%u bytes) outside every "
					"guest region", nseg, s->data_len);
		} else if (s->data < s->buf || s->data_len > s->buf_len ||
			   (uint64_t)(s->data - s->buf) > s->buf_len - s->data_len) {
			fz_fail("packet segment data outside its buffer");
		}
		sum += s->data_len;
	}
	if (sum != p->pkt_len || nseg != p->nb_segs)
		fz_fail("packet of %u bytes / %u segments has segments summing to %u / %u",
			p->pkt_len, p->nb_segs, sum, nseg);
	const struct vl_offload *ol = &p->ol;

	if ((ol->flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)ol->csum_start + ol->csum_offset + 2u > p->pkt_len)
		fz_fail("checksum at %u+%u outside a %u-byte packet", ol->csum_start,
			ol->csum_offset, p->pkt_len);
	uint8_t gso = ol->gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN;

	if (gso == VL_NET_HDR_GSO_NONE) {
		if (ol->gso_type & VL_NET_HDR_GSO_ECN)
			fz_fail("ECN without a GSO type passed");
	} else if (gso == VL_NET_HDR_GSO_TCPV4 || gso == VL_NET_HDR_GSO_UDP ||
		   gso == VL_NET_HDR_GSO_TCPV6 || gso == VL_NET_HDR_GSO_UDP_L4) {
		if (ol->gso_size == 0 || ol->hdr_len > p->pkt_len)
			fz_fail("GSO packet with gso_size %u hdr_len %u (len %u) passed",
				ol->gso_size, ol->hdr_len, p->pkt_len);
		/* Only what was negotiated passes (spec 5.1.6.2). */
		int bit = gso == VL_NET_HDR_GSO_TCPV4   ? VL_F_NET_HOST_TSO4
			  : gso == VL_NET_HDR_GSO_TCPV6 ? VL_F_NET_HOST_TSO6
			  : gso == VL_NET_HDR_GSO_UDP   ? VL_F_NET_HOST_UFO
							: VL_F_NET_HOST_USO;

		if (!(d->features & VL_FEATURE(bit)))
			fz_fail("GSO type 0x%02x passed without its feature (bit %d)", gso, bit);
		if ((ol->gso_type & VL_NET_HDR_GSO_ECN) &&
		    !(d->features & VL_FEATURE(VL_F_NET_HOST_ECN)))
			fz_fail("GSO with ECN passed without HOST_ECN");
	} else {
		fz_fail("unknown GSO type 0x%02x passed", ol->gso_type);
	}
	if (vl_pkt_read(p, 0, hg_scratch, p->pkt_len) != p->pkt_len)
		fz_fail("packet of %u bytes could not be read whole", p->pkt_len);
	/* A GSO packet passed only if its frame is what the header says (the model's rule).
	 * A zero-copy packet is guest memory the guest may have changed since: copies only. */
	if (gso != VL_NET_HDR_GSO_NONE && !p->release) {
		const enum vl_drop why = lab_tx_frame_rule(ol, hg_scratch, p->pkt_len);

		if (why != VL_DROP_NONE)
			fz_fail("GSO packet (type 0x%02x, %u bytes) passed, but its frame breaks %s",
				ol->gso_type, p->pkt_len, vl_drop_name(why));
	}
}

uint64_t hg_copies_made(const struct vl_vq_stats *st)
{
	return st->copies_batched + st->copies_direct;
}

void hg_mark_before(struct lab_hg *d, struct burst_mark *m)
{
	const struct vl_vq_stats *st = vl_vq_stats(d->vq);

	m->last_used = vl_vq_last_used(d->vq);
	m->last_avail = vl_vq_last_avail(d->vq);
	m->used_entries = st->used_entries;
	m->evicted = st->lines_evicted;
	m->copies = hg_copies_made(st);
	m->batched = st->copies_batched;
	m->copy_pf = st->copy_prefetches;
	m->chains = st->chains;
	m->line_waits = st->tx_line_waits;
	m->alloc_failures = st->alloc_failures;
	m->zc_stalls = st->zc_stalls;
	m->held = vl_vq_zero_copy_held(d->vq);
	m->broken = vl_vq_broken(d->vq);
	m->pdiff = d->L == VL_LAYOUT_PACKED && !d->rx;
	if (m->pdiff)
		memcpy(hg_psnap, d->pdesc, (size_t)d->size * sizeof(*hg_psnap));
}

/* Evict-after-read (FZ_OP_POLICY bit 1) evicts exactly `want_on` lines in the call since m
 * while on -- dequeue one per copy it made, touch one per good chain it read, the rest none
 * -- and none while off (or where the CPU lacks CLFLUSHOPT and it stayed off). Where: the
 * lines the copies read, which ASan and the guard pages check; CLFLUSHOPT of an address in
 * no mapping would fault like a read, so a stray one ends the run too. */
void hg_check_evictions(struct lab_hg *d, const struct burst_mark *m, uint64_t want_on)
{
	const uint64_t got = vl_vq_stats(d->vq)->lines_evicted - m->evicted;
	const uint64_t want = vl_vq_evict_reads(d->vq) ? want_on : 0;

	if (got != want)
		fz_fail("evict-after-read %s: %llu lines evicted, %llu expected",
			vl_vq_evict_reads(d->vq) ? "on" : "off", (unsigned long long)got,
			(unsigned long long)want);
}

/* A copy dequeue's batch deferred asks for its source's first line as it is queued, while
 * payload prefetch is on (FZ_OP_POLICY bit 3 turns it off): exactly one per batched copy of
 * a dequeue call, none in any other call (enqueue's copies go to the guest). */
void hg_check_copy_prefetches(struct lab_hg *d, const struct burst_mark *m, bool dequeue)
{
	const struct vl_vq_stats *st = vl_vq_stats(d->vq);
	const uint64_t got = st->copy_prefetches - m->copy_pf;
	const uint64_t want =
		dequeue && vl_vq_tx_prefetch(d->vq) ? st->copies_batched - m->batched : 0;

	if (got != want)
		fz_fail("copy prefetch %s: %llu source lines asked for, %llu expected",
			vl_vq_tx_prefetch(d->vq) ? "on" : "off", (unsigned long long)got,
			(unsigned long long)want);
}

static void check_split_used(struct lab_hg *d, const struct burst_mark *m, uint64_t n,
			     uint64_t rx_sum)
{
	uint16_t after = vl_vq_last_used(d->vq);

	if ((uint16_t)(after - m->last_used) != (uint16_t)n)
		fz_fail("split: used index moved %u, %llu entries published",
			(uint16_t)(after - m->last_used), (unsigned long long)n);
	if (n == 0)
		return;
	uint16_t gidx = __atomic_load_n(&d->used->idx, __ATOMIC_ACQUIRE);

	if (gidx != after)
		fz_fail("split: used->idx in guest memory %u, device says %u", gidx, after);
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		const struct vl_split_used_elem *e =
			&d->used->ring[(uint16_t)(m->last_used + i) & (d->size - 1)];

		if (e->id >= d->size)
			fz_fail("split: used entry %llu has id %u >= queue size %u",
				(unsigned long long)i, e->id, d->size);
		if (!d->rx && e->len != 0)
			fz_fail("split: TX used entry (id %u) with length %u", e->id, e->len);
		sum += e->len;
	}
	if (d->rx && sum != rx_sum)
		fz_fail("split: RX used lengths add up to %llu, delivered packets wrote %llu",
			(unsigned long long)sum, (unsigned long long)rx_sum);
}

static bool pused_flags_ok(uint16_t flags, uint32_t len)
{
	bool a = (flags & VL_PDESC_F_AVAIL) != 0, u = (flags & VL_PDESC_F_USED) != 0;

	if (flags & ~(uint16_t)(VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_WRITE))
		return false;
	return a == u && ((flags & VL_DESC_F_WRITE) != 0) == (len != 0);
}

static void check_packed_used(struct lab_hg *d, const struct burst_mark *m, uint64_t n,
			      uint64_t rx_sum)
{
	uint16_t after = vl_vq_last_used(d->vq);

	if (n == 0) {
		if (after != m->last_used)
			fz_fail("packed: used position moved 0x%04x -> 0x%04x, nothing published",
				m->last_used, after);
		return;
	}
	if (n > d->size)
		fz_fail("packed: %llu used descriptors in one flush (size %u)",
			(unsigned long long)n, d->size);
	/* The first used descriptor is written last: it must be intact whatever the burst
	 * wrote into guest buffers. */
	uint16_t pos = m->last_used & 0x7fffu;
	bool wrap = (m->last_used & VL_PACKED_WRAP_BIT) != 0;
	struct vl_packed_desc h = d->pdesc[pos];

	if (!pused_flags_ok(h.flags, h.len) || ((h.flags & VL_PDESC_F_AVAIL) != 0) != wrap)
		fz_fail("packed: first used descriptor at %u has flags 0x%04x len %u (device "
			"wrap %d)", pos, h.flags, h.len, wrap);
	if (h.id >= d->size)
		fz_fail("packed: used descriptor at %u names id %u >= size %u", pos, h.id, d->size);
	if (d->rx && h.len > rx_sum)
		fz_fail("packed: RX used length %u > %llu bytes delivered", h.len,
			(unsigned long long)rx_sum);
	if (!m->pdiff)
		return;
	/* TX writes nothing into guest memory but used descriptors: every descriptor that
	 * changed must be one, and no more than were published. */
	uint64_t changed = 0;

	for (uint32_t i = 0; i < d->size; i++) {
		const struct vl_packed_desc *b = &hg_psnap[i], *a = &d->pdesc[i];

		if (!memcmp(a, b, sizeof(*a)))
			continue;
		changed++;
		if (a->addr != b->addr)
			fz_fail("packed: the device rewrote the address of descriptor %u", i);
		if (!pused_flags_ok(a->flags, a->len) || a->len != 0 || a->id >= d->size)
			fz_fail("packed: TX descriptor %u rewritten as flags 0x%04x len %u id %u",
				i, a->flags, a->len, a->id);
	}
	if (changed > n)
		fz_fail("packed: %llu descriptors changed, %llu used descriptors published",
			(unsigned long long)changed, (unsigned long long)n);
}

void hg_check_after_flush(struct lab_hg *d, const struct burst_mark *m, uint64_t rx_sum)
{
	uint64_t n = vl_vq_stats(d->vq)->used_entries - m->used_entries;

	if (d->L == VL_LAYOUT_SPLIT) {
		if (n > d->size)
			fz_fail("split: %llu used entries in one flush (size %u)",
				(unsigned long long)n, d->size);
		check_split_used(d, m, n, rx_sum);
	} else {
		check_packed_used(d, m, n, rx_sum);
	}
}


/* SPDX-License-Identifier: MIT */
/* The session recorder, one burst: the chains the guest posted, read back from the
 * recorder's copies (descriptor snapshots, avail slots, captured bytes), never from guest
 * memory again. The copies come from a guest that may be hostile: every index, length and
 * count is checked before use, and what does not add up fails the burst (srec_fail). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_rec_burst.h"
#include "vhostlab/vl_virtio.h"

bool srec_fail(struct burst *b, const char *why)
{
	if (!b->why[0])
		snprintf(b->why, sizeof(b->why), "%s", why);
	return false;
}

struct rdesc srec_parse_desc(const uint8_t *p)
{
	struct rdesc d;

	memcpy(&d.addr, p, 8);
	memcpy(&d.len, p + 8, 4);
	memcpy(&d.a, p + 12, 2);
	memcpy(&d.b, p + 14, 2);
	return d;
}

/* ---- captured bytes ----------------------------------------------------------------- */

static int cmp_cap(const void *x, const void *y)
{
	const struct srec_cap *a = x, *b = y;

	if (a->gpa != b->gpa)
		return a->gpa < b->gpa ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void srec_sort_caps(struct lab_srec *r)
{
	if (r->ncaps > 1)
		qsort(r->caps, r->ncaps, sizeof(*r->caps), cmp_cap);
	r->nsorted = r->ncaps;
}

/* n bytes at gpa from the captures the core read (the sorted ones: payload placed since is
 * appended after them), false if some byte was never read. Captures
 * barely overlap (a chain walked twice in one burst reads its table twice), so looking a
 * few back from the last one starting at or before the byte finds the one holding it. */
bool srec_cap_read(const struct lab_srec *r, uint64_t gpa, uint32_t n, uint8_t *out)
{
	uint64_t x = gpa, end = gpa + n;

	if (end < gpa)
		return false;
	while (x < end) {
		uint32_t lo = 0, hi = r->nsorted;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (r->caps[mid].gpa <= x)
				lo = mid + 1;
			else
				hi = mid;
		}
		const struct srec_cap *hit = NULL;

		for (uint32_t k = lo, seen = 0; k > 0 && seen < 16; k--, seen++) {
			const struct srec_cap *c = &r->caps[k - 1];

			if (x - c->gpa < c->len) {
				hit = c;
				break;
			}
		}
		if (!hit)
			return false;
		uint64_t take = hit->gpa + hit->len - x;

		if (take > end - x)
			take = end - x;
		memcpy(out + (x - gpa), r->arena + hit->off + (x - hit->gpa), (size_t)take);
		x += take;
	}
	return true;
}

/* ---- chains ------------------------------------------------------------------------- */

static bool snap_desc(const struct burst *b, uint32_t i, struct rdesc *d)
{
	if (i >= b->q->size || b->q->snap_stamp[i] != b->r->stamp)
		return false;
	*d = srec_parse_desc(b->q->snap[i]);
	return true;
}

static bool table_entry(const struct burst *b, uint64_t table, uint32_t i, struct rdesc *d)
{
	uint8_t raw[16];

	if (!srec_cap_read(b->r, table + 16ull * i, 16, raw))
		return false;
	*d = srec_parse_desc(raw);
	return true;
}

static bool add_buf(struct burst *b, uint32_t *nb, uint64_t *total, uint64_t gpa, uint32_t len,
		    bool write)
{
	if (len == 0)
		return true; /* the core skips empty descriptors */
	if (*nb >= b->q->size)
		return false;
	b->bufs[(*nb)++] = (struct rbuf){gpa, len, write};
	*total += len;
	return true;
}

/* An indirect table's entries at `table`, `len` bytes, as the core walked them. */
static bool walk_table(struct burst *b, uint64_t table, uint32_t len, uint32_t *nb,
		       uint64_t *total)
{
	uint32_t entries = len / 16, idx = 0;

	if (len == 0 || len % 16 || entries > b->q->size)
		return false;
	for (uint32_t hops = 0; hops < entries; hops++) {
		struct rdesc d;

		if (!table_entry(b, table, idx, &d))
			return false;
		uint16_t flags = b->q->packed ? d.b : d.a;

		if (flags & VL_DESC_F_INDIRECT)
			return false;
		if (!add_buf(b, nb, total, d.addr, d.len, (flags & VL_DESC_F_WRITE) != 0))
			return false;
		if (b->q->packed) {
			idx++; /* packed tables are consecutive entries (spec 2.8.8) */
			if (idx == entries)
				return true;
			continue;
		}
		if (!(flags & VL_DESC_F_NEXT))
			return true;
		if (d.b >= entries)
			return false;
		idx = d.b;
	}
	return false;
}

/* The buffers of split chain `head` into b->bufs. */
static bool walk_split(struct burst *b, uint16_t head, uint32_t *nb, uint64_t *total)
{
	uint32_t idx = head;

	*nb = 0;
	*total = 0;
	for (uint32_t hops = 0; hops < b->q->size; hops++) {
		struct rdesc d;

		if (!snap_desc(b, idx, &d))
			return false;
		if (d.a & VL_DESC_F_INDIRECT)
			return !(d.a & VL_DESC_F_NEXT) && walk_table(b, d.addr, d.len, nb, total);
		if (!add_buf(b, nb, total, d.addr, d.len, (d.a & VL_DESC_F_WRITE) != 0))
			return false;
		if (!(d.a & VL_DESC_F_NEXT))
			return true;
		idx = d.b;
	}
	return false;
}

void srec_padvance(uint32_t size, uint16_t *pos, bool *wrap, uint32_t n)
{
	uint32_t p = *pos + n;

	while (p >= size) {
		p -= size;
		*wrap = !*wrap;
	}
	*pos = (uint16_t)p;
}

static bool pavail(uint16_t flags, bool wrap)
{
	return ((flags & VL_PDESC_F_AVAIL) != 0) == wrap && ((flags & VL_PDESC_F_USED) != 0) != wrap;
}

/* The packed chain at (pos, wrap) as the snapshots show it: available descriptors joined by
 * NEXT, at most `room` of them; its id from the last. */
static bool packed_chain(const struct burst *b, uint16_t pos, bool wrap, uint32_t room,
			 struct rchain *c)
{
	uint16_t p = pos;
	bool w = wrap;

	c->head_or_pos = pos;
	c->wrap = wrap;
	for (uint32_t n = 1; n <= room; n++) {
		struct rdesc d;

		if (!snap_desc(b, p, &d) || !pavail(d.b, w))
			return false;
		if (!(d.b & VL_DESC_F_NEXT)) {
			c->ndescs = (uint16_t)n;
			c->id = d.a;
			return true;
		}
		srec_padvance(b->q->size, &p, &w, 1);
	}
	return false;
}

static bool walk_packed(struct burst *b, const struct rchain *c, uint32_t *nb, uint64_t *total)
{
	uint16_t p = c->head_or_pos;
	bool w = c->wrap;

	*nb = 0;
	*total = 0;
	for (uint32_t i = 0; i < c->ndescs; i++, srec_padvance(b->q->size, &p, &w, 1)) {
		struct rdesc d;

		if (!snap_desc(b, p, &d))
			return false;
		if (d.b & VL_DESC_F_INDIRECT)
			return c->ndescs == 1 && walk_table(b, d.addr, d.len, nb, total);
		if (!add_buf(b, nb, total, d.addr, d.len, (d.b & VL_DESC_F_WRITE) != 0))
			return false;
	}
	return true;
}

bool srec_walk(struct burst *b, uint32_t k, uint32_t *nb, uint64_t *total)
{
	if (b->q->packed)
		return walk_packed(b, &b->chains[k], nb, total);
	return walk_split(b, b->chains[k].head_or_pos, nb, total);
}

uint32_t srec_pdist(uint32_t size, uint16_t from, bool fw, uint16_t to, bool tw)
{
	uint32_t a = from + (fw ? size : 0), z = to + (tw ? size : 0);

	return (z + 2 * size - a) % (2 * size);
}

/* The chains whose descriptors go into the trace. Dequeue: exactly those consumed. Enqueue:
 * those the core walked (a chain reserved for a packet that then found no room stays
 * available, and the replay must see it), or -- when a mergeable packet was dropped for a
 * full ring -- every chain the scan saw. Not the descriptor that ended the scan: copied after
 * the core read it, it may already show a chain the core did not see. */
bool srec_collect_chains(struct burst *b, uint16_t a_avail)
{
	struct lab_srec *r = b->r;
	struct srec_q *q = b->q;
	const struct vl_vq_stats *st = vl_vq_stats(r->cur_vq);

	b->nchains = 0;
	if (!q->packed) {
		uint16_t consumed = (uint16_t)(a_avail - r->b_avail);

		if (consumed > q->size || consumed > r->slots_read)
			return srec_fail(b, "the queue consumed chains whose heads were not seen");
		for (uint16_t i = 0; i < consumed; i++) {
			uint32_t slot = (uint16_t)(r->b_avail + i) % q->size;

			if (q->slot_stamp[slot] != r->stamp)
				return srec_fail(b, "an avail slot the core used was not seen");
			b->chains[b->nchains++] = (struct rchain){q->slot_val[slot], false, 0, 0};
		}
		return true;
	}
	uint16_t pos = r->b_avail & 0x7fffu;
	bool wrap = (r->b_avail & VL_PACKED_WRAP_BIT) != 0;
	uint32_t consumed = srec_pdist(q->size, pos, wrap, a_avail & 0x7fffu,
				  (a_avail & VL_PACKED_WRAP_BIT) != 0);
	bool full = !b->dequeue && b->mergeable &&
		    st->drops[VL_DROP_RX_TOO_BIG] > r->b_stats.drops[VL_DROP_RX_TOO_BIG];
	uint32_t descs = 0;

	if (consumed > q->size)
		return srec_fail(b, "the packed queue moved by more than its size");
	while (descs < q->size && (!b->dequeue || descs < consumed)) {
		struct rchain c;

		if (!packed_chain(b, pos, wrap, q->size - descs, &c))
			break;
		if (!full && q->walk_stamp[pos] != r->stamp && descs >= consumed)
			break;
		b->chains[b->nchains++] = c;
		descs += c.ndescs;
		srec_padvance(q->size, &pos, &wrap, c.ndescs);
	}
	if (descs < consumed)
		return srec_fail(b, "the packed queue consumed descriptors that were not seen");
	if (b->dequeue && descs != consumed)
		return srec_fail(b, "the packed queue consumed part of a chain");
	return true;
}


/* SPDX-License-Identifier: MIT */
/* The reference model's rings, read as the virtio 1.2 spec describes them: the split ring
 * (2.7: descriptor table, available ring, used ring) and the packed ring (2.8: one ring of
 * descriptors whose AVAIL/USED bits the driver and device flip), with indirect descriptor
 * tables (2.7.5.3, 2.8.8). Malformed chains get the reasons of docs/architecture.md
 * ("Hostile inputs"); see model.h for how far that goes. */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"

/* Little-endian field access at any alignment (virtio 1.x structures are little-endian). */
static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)v);
	wr16(p + 2, (uint16_t)(v >> 16));
}

/* A 16-bit field the other side polls: stored in one piece, after everything before it
 * (the split used index, the packed flags that expose a used descriptor). */
static void publish16(uint8_t *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)(void *)p, v, __ATOMIC_RELEASE);
}

/* Both layouts use 16-byte descriptors (struct vl_split_desc, struct vl_packed_desc):
 * address and length first, then split flags and next, or packed id and flags. */
#define D_ADDR 0
#define D_LEN 8
#define S_FLAGS 12
#define S_NEXT 14
#define P_ID 12
#define P_FLAGS 14

static void step(uint16_t *pos, bool *wrap, uint32_t n, uint32_t size)
{
	uint32_t p = *pos + n;

	while (p >= size) {
		p -= size;
		*wrap = !*wrap;
	}
	*pos = (uint16_t)p;
}

/* ---- finding chains ---------------------------------------------------------------- */

void mdl_begin(struct lab_model *m)
{
	m->nused = 0;
	if (m->layout == VL_LAYOUT_SPLIT) {
		/* avail->idx counts the heads the driver has made available (spec 2.7.6). */
		uint16_t n = (uint16_t)(rd16(m->avail + 2) - m->last_avail);

		/* More new entries than the ring holds: no index from this driver can be
		 * trusted any more (queue-level, "Hostile inputs"). */
		m->window = 0;
		if (n > m->size)
			mdl_break(m, VL_DROP_AVAIL_IDX_JUMP);
		else
			m->window = n;
		return;
	}
	m->nploc = 0;
	m->ploc_descs = 0;
	m->ploc_end = false;
}

/* Spec 2.8.1: available to the device when AVAIL equals the driver's wrap counter and USED
 * does not. */
static bool packed_is_avail(uint16_t flags, bool wrap)
{
	return ((flags & VL_PDESC_F_AVAIL) != 0) == wrap &&
	       ((flags & VL_PDESC_F_USED) != 0) != wrap;
}

/* The next chain after those found in this call's window: consecutive descriptors linked by
 * NEXT (spec 2.8.6). The driver exposes a chain's head last, so an available head whose
 * continuation is not available is a lie, and so is a chain that would run around the ring
 * onto its own window: both break the model. */
static bool packed_find_next(struct lab_model *m)
{
	if (m->ploc_end || m->broken != VL_DROP_NONE)
		return false;
	if (m->ploc_descs == m->size) {
		m->ploc_end = true; /* every descriptor of the ring is in the window */
		return false;
	}
	struct mdl_ploc loc = {m->avail_pos, m->avail_wrap, 0};

	step(&loc.pos, &loc.wrap, m->ploc_descs, m->size);
	uint16_t pos = loc.pos;
	bool wrap = loc.wrap;

	for (;;) {
		uint16_t flags = rd16(m->desc + 16u * pos + P_FLAGS);

		if (!packed_is_avail(flags, wrap)) {
			if (loc.ndescs == 0) {
				m->ploc_end = true;
				return false;
			}
			mdl_break(m, VL_DROP_CHAIN_INCOMPLETE);
			return false;
		}
		loc.ndescs++;
		if (!(flags & VL_DESC_F_NEXT))
			break;
		if (m->ploc_descs + loc.ndescs == m->size) {
			mdl_break(m, VL_DROP_CHAIN_INCOMPLETE);
			return false;
		}
		step(&pos, &wrap, 1, m->size);
	}
	m->ploc[m->nploc++] = loc;
	m->ploc_descs += loc.ndescs;
	return true;
}

bool mdl_available(struct lab_model *m, uint32_t pos)
{
	if (m->layout == VL_LAYOUT_SPLIT)
		return m->broken == VL_DROP_NONE && pos < m->window;
	while (m->nploc <= pos && packed_find_next(m))
		;
	return pos < m->nploc;
}

bool mdl_window_full(struct lab_model *m)
{
	if (m->layout == VL_LAYOUT_SPLIT)
		return m->window == m->size;
	while (packed_find_next(m))
		;
	return m->ploc_descs == m->size;
}

void mdl_consume(struct lab_model *m, uint32_t n)
{
	if (m->layout == VL_LAYOUT_SPLIT) {
		m->last_avail = (uint16_t)(m->last_avail + n);
	} else {
		uint32_t descs = 0;

		for (uint32_t i = 0; i < n; i++)
			descs += m->ploc[i].ndescs;
		step(&m->avail_pos, &m->avail_wrap, descs, m->size);
		m->nploc = 0;
		m->ploc_descs = 0;
		m->ploc_end = false;
	}
	m->st.chains += n;
}

/* ---- walking a chain ----------------------------------------------------------------- */

static void add_seg(struct lab_model *m, uint64_t gpa, uint32_t len)
{
	if (m->nsegs == m->segs_cap) {
		uint32_t cap = m->segs_cap ? 2 * m->segs_cap : 64;
		struct mdl_seg *s = realloc(m->segs, cap * sizeof(*s));

		if (!s)
			abort(); /* lab code: a few KiB of scratch is not a case to model */
		m->segs = s;
		m->segs_cap = cap;
	}
	m->segs[m->nsegs++] = (struct mdl_seg){gpa, len};
}

/* One buffer descriptor (ring or table entry). TX buffers are device-readable, RX buffers
 * device-writable (spec 2.7.5: WRITE marks a device-writable buffer); a zero-length
 * descriptor holds nothing. */
static enum vl_drop add_buf(struct lab_model *m, struct mdl_chain *c, uint64_t addr,
			    uint32_t len, uint16_t flags, bool rx)
{
	if (((flags & VL_DESC_F_WRITE) != 0) != rx)
		return VL_DROP_DIRECTION;
	if (len == 0)
		return VL_DROP_NONE;
	/* Lengths are 32-bit everywhere a chain's size is reported (used len). */
	if (len > UINT32_MAX - c->len)
		return VL_DROP_LEN_OVERFLOW;
	enum vl_drop why = mdl_map_range(m, addr, len, &c->pieces);

	if (why != VL_DROP_NONE)
		return why;
	add_seg(m, addr, len);
	c->nsegs++;
	c->len += len;
	return VL_DROP_NONE;
}

/* An indirect descriptor's table: the feature negotiated, a whole number of 16-byte
 * entries, no more entries than the queue size (a chain is never longer, spec 2.7.5.3.1),
 * every byte mapped. */
static enum vl_drop map_table(struct lab_model *m, uint64_t addr, uint32_t len,
			      const uint8_t **table)
{
	uint32_t pieces = 0;

	if (!m->indirect)
		return VL_DROP_INDIRECT_NOT_NEGOTIATED;
	if (len == 0 || len % 16u != 0 || len / 16u > m->size)
		return VL_DROP_INDIRECT_LEN;
	if (mdl_map_range(m, addr, len, &pieces) != VL_DROP_NONE)
		return VL_DROP_UNMAPPED;
	*table = mdl_gptr(m, addr, len);
	return *table ? VL_DROP_NONE : VL_DROP_UNMAPPED;
}

static uint32_t next_stamp(struct lab_model *m)
{
	if (++m->stamp == 0) {
		memset(m->seen, 0, m->size * sizeof(*m->seen));
		m->stamp = 1;
	}
	return m->stamp;
}

/* Split (spec 2.7.5): from the head, follow `next` while NEXT is set; an INDIRECT
 * descriptor (never with NEXT, never inside a table) replaces the rest of the chain by its
 * table, walked from entry 0. A descriptor visited twice is a loop. */
static void walk_split(struct lab_model *m, uint16_t head, bool rx, struct mdl_chain *c)
{
	const uint8_t *table = m->desc;
	uint32_t entries = m->size, idx = head, stamp = next_stamp(m);
	bool in_table = false;

	for (;;) {
		if (m->seen[idx] == stamp) {
			c->why = VL_DROP_CHAIN_LOOP;
			return;
		}
		m->seen[idx] = stamp;
		const uint8_t *d = table + 16u * idx;
		uint64_t addr = rd64(d + D_ADDR);
		uint32_t len = rd32(d + D_LEN);
		uint16_t flags = rd16(d + S_FLAGS), next = rd16(d + S_NEXT);

		if (!in_table)
			c->ndescs++;
		if (flags & VL_DESC_F_INDIRECT) {
			if (in_table)
				c->why = VL_DROP_NESTED_INDIRECT;
			else if (flags & VL_DESC_F_NEXT)
				c->why = VL_DROP_INDIRECT_WITH_NEXT;
			else
				c->why = map_table(m, addr, len, &table);
			if (c->why != VL_DROP_NONE)
				return;
			entries = len / 16u;
			idx = 0;
			in_table = true;
			stamp = next_stamp(m); /* table entries are numbered afresh */
			continue;
		}
		c->why = add_buf(m, c, addr, len, flags, rx);
		if (c->why != VL_DROP_NONE || !(flags & VL_DESC_F_NEXT))
			return;
		if (next >= entries) {
			c->why = VL_DROP_NEXT_OUT_OF_RANGE;
			return;
		}
		idx = next;
	}
}

/* Packed (spec 2.8.6-2.8.8): the chain's descriptors are consecutive in the ring; an
 * INDIRECT one must be the chain's only descriptor, and its table's entries are consecutive
 * (NEXT ignored), may not be INDIRECT themselves, and in a TX chain may carry WRITE. */
static void walk_packed(struct lab_model *m, const struct mdl_ploc *loc, bool rx,
			struct mdl_chain *c)
{
	uint16_t pos = loc->pos;
	bool wrap = loc->wrap;

	for (uint32_t i = 0; i < loc->ndescs; i++, step(&pos, &wrap, 1, m->size)) {
		const uint8_t *d = m->desc + 16u * pos;
		uint64_t addr = rd64(d + D_ADDR);
		uint32_t len = rd32(d + D_LEN);
		uint16_t flags = rd16(d + P_FLAGS);

		if (flags & VL_DESC_F_INDIRECT) {
			const uint8_t *table;

			c->why = loc->ndescs != 1 ? VL_DROP_INDIRECT_WITH_NEXT
						  : map_table(m, addr, len, &table);
			for (uint32_t k = 0; c->why == VL_DROP_NONE && k < len / 16u; k++) {
				const uint8_t *e = table + 16u * k;
				uint16_t ef = rd16(e + P_FLAGS);

				/* WRITE on a TX table entry is read anyway (the core's rule for
				 * DPDK's virtio-user, ring/packed.c). */
				if (!rx)
					ef &= (uint16_t)~VL_DESC_F_WRITE;
				if (ef & VL_DESC_F_INDIRECT)
					c->why = VL_DROP_NESTED_INDIRECT;
				else
					c->why = add_buf(m, c, rd64(e + D_ADDR), rd32(e + D_LEN), ef,
							 rx);
			}
			return;
		}
		c->why = add_buf(m, c, addr, len, flags, rx);
		if (c->why != VL_DROP_NONE)
			return;
	}
}

bool mdl_fetch(struct lab_model *m, uint32_t pos, bool rx, struct mdl_chain *c)
{
	memset(c, 0, sizeof(*c));
	c->seg0 = m->nsegs;
	if (m->layout == VL_LAYOUT_SPLIT) {
		uint32_t slot = (uint16_t)(m->last_avail + pos) & (m->size - 1);
		uint16_t head = rd16(m->avail + 4 + 2u * slot);

		/* No descriptor to walk and no id to return it under: queue-level. */
		if (head >= m->size) {
			mdl_break(m, VL_DROP_HEAD_OUT_OF_RANGE);
			return false;
		}
		c->id = head;
		walk_split(m, head, rx, c);
		return true;
	}
	const struct mdl_ploc *loc = &m->ploc[pos];
	uint16_t last = loc->pos;
	bool wrap = loc->wrap;

	/* The buffer id is in the chain's last descriptor (spec 2.8.6). */
	step(&last, &wrap, loc->ndescs - 1u, m->size);
	uint16_t id = rd16(m->desc + 16u * last + P_ID);

	if (id >= m->size) {
		mdl_break(m, VL_DROP_ID_OUT_OF_RANGE);
		return false;
	}
	c->id = id;
	c->ndescs = loc->ndescs;
	walk_packed(m, loc, rx, c);
	return true;
}

/* ---- used write-back ----------------------------------------------------------------- */

void mdl_push_used(struct lab_model *m, const struct mdl_chain *c, uint32_t len)
{
	/* One entry per chain consumed in this call, and a call consumes at most a ring. */
	if (m->nused == m->size)
		abort();
	m->usedq[m->nused++] = (struct mdl_used){c->id, c->ndescs, len};
}

void mdl_publish(struct lab_model *m)
{
	uint32_t n = m->nused;

	m->nused = 0;
	if (n == 0)
		return;
	if (m->layout == VL_LAYOUT_SPLIT) {
		/* Spec 2.7.8: each element (id, bytes written) in the next used slot, then the
		 * index, so the driver never sees an element before it is complete. */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t slot = (uint16_t)(m->used_idx + i) & (m->size - 1);
			uint8_t *e = m->used + 4 + 8u * slot;

			wr32(e, m->usedq[i].id);
			wr32(e + 4, m->usedq[i].len);
		}
		m->used_idx = (uint16_t)(m->used_idx + n);
		publish16(m->used + 2, m->used_idx);
		return;
	}
	/* Spec 2.8.7, 2.8.21: a used descriptor at the next used position carries the buffer
	 * id and the bytes written, WRITE when that is not zero, AVAIL = USED = the device's
	 * wrap counter; the position then skips the buffer's descriptors. The first one's
	 * flags go last, so the driver sees the call's buffers (a multi-buffer packet's
	 * included) all at once. */
	uint8_t *head = m->desc + 16u * m->used_pos;
	uint16_t head_flags = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct mdl_used *u = &m->usedq[i];
		uint8_t *d = m->desc + 16u * m->used_pos;
		uint16_t flags = m->used_wrap ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0;

		if (u->len)
			flags |= VL_DESC_F_WRITE;

		wr16(d + P_ID, u->id);
		wr32(d + D_LEN, u->len);
		if (i == 0)
			head_flags = flags;
		else
			publish16(d + P_FLAGS, flags);
		step(&m->used_pos, &m->used_wrap, u->ndescs, m->size);
	}
	publish16(head + P_FLAGS, head_flags);
}

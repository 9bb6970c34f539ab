/* SPDX-License-Identifier: MIT */
/* The reference model (model.h): its state, and guest memory as the device is given it. */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

static int cmp_map(const void *a, const void *b)
{
	const struct mdl_map *x = a, *y = b;

	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

/* The region table as host mappings: sorted by guest address, and regions that continue
 * each other in both guest and host space joined (bytes contiguous in host memory are one
 * piece, whichever region entries describe them). */
static int build_maps(struct lab_model *m)
{
	uint32_t n;
	const struct vl_mem_region *r = lab_gmem_regions(m->g, &n);

	if (n == 0)
		return -1;
	m->maps = calloc(n, sizeof(*m->maps));
	if (!m->maps)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		m->maps[i] = (struct mdl_map){r[i].gpa, r[i].gpa + (r[i].size - 1),
					      (uintptr_t)r[i].host};
	qsort(m->maps, n, sizeof(*m->maps), cmp_map);
	m->nmaps = 1;
	for (uint32_t i = 1; i < n; i++) {
		struct mdl_map *prev = &m->maps[m->nmaps - 1];
		const struct mdl_map *cur = &m->maps[i];
		uint64_t prev_size = prev->last - prev->gpa + 1;

		if (prev->last + 1 == cur->gpa && prev->host + prev_size == cur->host)
			prev->last = cur->last;
		else
			m->maps[m->nmaps++] = *cur;
	}
	return 0;
}

/* The mapping holding gpa, or NULL. */
static const struct mdl_map *find_map(const struct lab_model *m, uint64_t gpa)
{
	uint32_t lo = 0, hi = m->nmaps;

	/* The last mapping starting at or below gpa. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->maps[mid].gpa <= gpa)
			lo = mid;
		else
			hi = mid;
	}
	const struct mdl_map *c = &m->maps[lo];

	return c->gpa <= gpa && gpa <= c->last ? c : NULL;
}

enum vl_drop mdl_map_range(const struct lab_model *m, uint64_t gpa, uint32_t len,
			   uint32_t *pieces)
{
	uint64_t left = len;

	while (left > 0) {
		const struct mdl_map *c = find_map(m, gpa);

		if (!c)
			return VL_DROP_UNMAPPED;
		(*pieces)++;
		/* Bytes of this mapping from gpa on, minus one (no overflow at 2^64 - 1). */
		uint64_t room_m1 = c->last - gpa;

		if (left - 1 <= room_m1)
			return VL_DROP_NONE;
		left -= room_m1 + 1;
		gpa += room_m1 + 1;
		/* Past 2^64 - 1 nothing continues the buffer. */
		if (gpa == 0)
			return VL_DROP_UNMAPPED;
	}
	return VL_DROP_NONE;
}

uint8_t *mdl_gptr(const struct lab_model *m, uint64_t gpa, uint64_t len)
{
	return lab_gmem_guest_ptr(m->g, gpa, len);
}

uint8_t *mdl_buf(struct lab_model *m, size_t n)
{
	if (n > m->buf_cap) {
		uint8_t *b = realloc(m->buf, n);

		if (!b)
			return NULL;
		m->buf = b;
		m->buf_cap = n;
	}
	return m->buf;
}

void mdl_break(struct lab_model *m, enum vl_drop why)
{
	if (m->broken == VL_DROP_NONE)
		m->broken = why;
}

/* Point at the ring areas and take the resume position. */
static int setup_rings(struct lab_model *m, const struct vl_vq_config *q)
{
	uint32_t size = m->size;

	if (m->layout == VL_LAYOUT_SPLIT) {
		m->desc = mdl_gptr(m, q->desc_gpa, vl_split_desc_bytes(size));
		m->avail = mdl_gptr(m, q->driver_gpa, vl_split_avail_bytes(size));
		m->used = mdl_gptr(m, q->device_gpa, vl_split_used_bytes(size));
		/* Everything consumed before was returned: used->idx resumes where avail does. */
		m->last_avail = m->used_idx = q->last_avail_idx;
		return m->desc && m->avail && m->used ? 0 : -1;
	}
	m->desc = mdl_gptr(m, q->desc_gpa, vl_packed_desc_bytes(size));
	m->avail_pos = q->last_avail_idx & (uint16_t)~VL_PACKED_WRAP_BIT;
	m->avail_wrap = (q->last_avail_idx & VL_PACKED_WRAP_BIT) != 0;
	m->used_pos = q->last_used_idx & (uint16_t)~VL_PACKED_WRAP_BIT;
	m->used_wrap = (q->last_used_idx & VL_PACKED_WRAP_BIT) != 0;
	return m->desc && m->avail_pos < size && m->used_pos < size ? 0 : -1;
}

struct lab_model *lab_model_create(const struct lab_model_config *cfg)
{
	const struct vl_vq_config *q = &cfg->vq;
	uint32_t size = vl_vq_config_size(q);
	struct lab_model *m;

	if (q->layout != VL_LAYOUT_SPLIT && q->layout != VL_LAYOUT_PACKED)
		return NULL;
	/* Split sizes are powers of two (spec 2.7); packed sizes anything up to 2^15. */
	if (q->layout == VL_LAYOUT_SPLIT && (size & (size - 1)) != 0)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->layout = q->layout;
	m->size = size;
	m->g = cfg->gmem;
	m->mergeable = (q->features & VL_FEATURE(VL_F_NET_MRG_RXBUF)) != 0;
	m->indirect = (q->features & VL_FEATURE(VL_F_RING_INDIRECT_DESC)) != 0;
	m->in_order = (q->features & VL_FEATURE(VL_F_IN_ORDER)) != 0;
	m->features = q->features;
	/* Spec 5.1.6: num_buffers is part of the header for a VERSION_1 device or with
	 * MRG_RXBUF; packed rings exist only for VERSION_1 devices. */
	m->hdr_len = (q->features & VL_FEATURE(VL_F_VERSION_1)) || m->mergeable ||
			     q->layout == VL_LAYOUT_PACKED
		     ? 12u
		     : 10u;
	m->ploc = calloc(size, sizeof(*m->ploc));
	m->usedq = calloc(size, sizeof(*m->usedq));
	m->seen = calloc(size, sizeof(*m->seen));
	m->rsv = calloc(size, sizeof(*m->rsv));
	m->deferred = calloc(size, sizeof(*m->deferred));
	m->pkt_off = calloc(size, sizeof(*m->pkt_off));
	if (!m->g || !m->ploc || !m->usedq || !m->seen || !m->rsv || !m->deferred ||
	    !m->pkt_off || build_maps(m) != 0 ||
	    setup_rings(m, q) != 0) {
		lab_model_destroy(m);
		return NULL;
	}
	return m;
}

void lab_model_destroy(struct lab_model *m)
{
	if (!m)
		return;
	free(m->maps);
	free(m->ploc);
	free(m->usedq);
	free(m->seen);
	free(m->rsv);
	free(m->deferred);
	free(m->pkt_off);
	free(m->segs);
	free(m->buf);
	free(m);
}

const struct lab_model_stats *lab_model_stats(const struct lab_model *m)
{
	return &m->st;
}

enum vl_drop lab_model_broken(const struct lab_model *m)
{
	return m->broken;
}

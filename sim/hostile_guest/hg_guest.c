/* SPDX-License-Identifier: MIT */
/* The guest side of the hostile guest beyond raw writes: well-formed chains of a chosen
 * shape through its own cursor, packed flag flips, a new memory table. */
#include <string.h>

#include "hg_internal.h"

struct hg_desc {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags;
};

static void write_desc(struct lab_hg *d, uint16_t i, const struct hg_desc *e, bool more,
		       uint16_t next)
{
	struct vl_split_desc *s = &d->desc[i];

	s->addr = e->gpa;
	s->len = e->len;
	s->flags = (uint16_t)(e->flags | (more ? VL_DESC_F_NEXT : 0));
	s->next = next;
}

/* A well-formed chain of the shape asked for, through the driver cursor. */
void hg_do_post(struct lab_hg *d, uint8_t shape, uint16_t len16, uint16_t off16,
		const uint8_t *hdr10)
{
	uint32_t len = len16;
	uint32_t off = off16 % FZ_DP_RAM;
	uint8_t hdr[12] = {0};
	uint16_t dir = d->rx ? VL_DESC_F_WRITE : 0;

	if (shape & FZ_POST_RAW_HDR)
		memcpy(hdr, hdr10, 10);
	uint32_t total = d->hdr_len + len;
	uint32_t nsegs = 1 + (shape & FZ_POST_NSEGS_MASK);
	bool indirect = (shape & FZ_POST_INDIRECT) != 0;
	uint32_t table_room = indirect ? 16u * 12u + 16u : 0;

	if (total + table_room + 1 > FZ_DP_RAM)
		total = FZ_DP_RAM - table_room - 1;
	if (shape & FZ_POST_MISALIGN)
		off++;
	if (off + total + table_room > FZ_DP_RAM)
		off = FZ_DP_RAM - total - table_room;
	uint64_t gpa = d->ram_gpa + off;
	uint8_t *buf = d->ram + off;

	d->posts++;
	if (d->rx) {
		memset(buf, 0xA5, total);
	} else {
		memcpy(buf, hdr, d->hdr_len);
		fz_fill(buf + d->hdr_len, total - d->hdr_len, d->posts);
	}
	struct hg_desc e[12];
	uint32_t ne = 0, at = 0, rest = total;

	if ((shape & FZ_POST_HDR_ALONE) && total > d->hdr_len) {
		e[ne++] = (struct hg_desc){gpa, d->hdr_len, dir};
		at = d->hdr_len;
		rest = total - d->hdr_len;
	}
	for (uint32_t i = 0; i < nsegs; i++) {
		uint32_t l = i + 1 < nsegs ? rest / nsegs : rest - rest / nsegs * (nsegs - 1);

		e[ne++] = (struct hg_desc){gpa + at, l, dir};
		at += l;
		if (i == 0 && (shape & FZ_POST_ZERO_LEN))
			e[ne++] = (struct hg_desc){gpa, 0, dir};
	}
	if (indirect) {
		uint32_t toff = (off + total + 15u) & ~15u;
		uint8_t *t = d->ram + toff;

		for (uint32_t i = 0; i < ne; i++) {
			if (d->L == VL_LAYOUT_SPLIT) {
				struct vl_split_desc s = {
					e[i].gpa, e[i].len,
					(uint16_t)(e[i].flags | (i + 1 < ne ? VL_DESC_F_NEXT : 0)),
					(uint16_t)(i + 1 < ne ? i + 1 : 0),
				};

				memcpy(t + 16 * i, &s, 16);
			} else {
				struct vl_packed_desc p = {e[i].gpa, e[i].len, 0, e[i].flags};

				memcpy(t + 16 * i, &p, 16);
			}
		}
		e[0] = (struct hg_desc){d->ram_gpa + toff, 16u * ne, VL_DESC_F_INDIRECT};
		ne = 1;
	}
	if (d->L == VL_LAYOUT_SPLIT) {
		uint16_t idx[12];

		for (uint32_t i = 0; i < ne; i++)
			idx[i] = (uint16_t)(d->next_desc++ % d->size);
		for (uint32_t i = 0; i < ne; i++)
			write_desc(d, idx[i], &e[i], i + 1 < ne, i + 1 < ne ? idx[i + 1] : 0);
		d->avail->ring[d->avail_idx & (d->size - 1)] = idx[0];
		d->avail_idx++;
		__atomic_store_n(&d->avail->idx, d->avail_idx, __ATOMIC_RELEASE);
		return;
	}
	uint16_t id = (uint16_t)(d->next_id++ % d->size), head = d->ppos, head_flags = 0;

	for (uint32_t i = 0; i < ne; i++) {
		struct vl_packed_desc *p = &d->pdesc[d->ppos];
		uint16_t flags = (uint16_t)(e[i].flags | hg_pavail_bits(d->pwrap) |
					    (i + 1 < ne ? VL_DESC_F_NEXT : 0));

		p->addr = e[i].gpa;
		p->len = e[i].len;
		p->id = id;
		if (i == 0)
			head_flags = flags;
		else
			__atomic_store_n(&p->flags, flags, __ATOMIC_RELEASE);
		hg_pstep(&d->ppos, &d->pwrap, 1, d->size);
	}
	__atomic_store_n(&d->pdesc[head].flags, head_flags, __ATOMIC_RELEASE);
}

void hg_do_pflags(struct lab_hg *d, uint16_t pos, uint8_t mode)
{
	struct vl_packed_desc *p = &d->pdesc[pos % d->size];
	uint16_t f = (uint16_t)(p->flags & ~(VL_PDESC_F_AVAIL | VL_PDESC_F_USED));
	bool w = d->pwrap;

	switch (mode & 3) {
	case FZ_PFLAG_AVAIL:
		f |= hg_pavail_bits(w);
		break;
	case FZ_PFLAG_USED:
		f |= (uint16_t)(w ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0);
		break;
	case FZ_PFLAG_OTHER:
		f |= hg_pavail_bits(!w);
		break;
	default:
		break;
	}
	if (mode & FZ_PFLAG_NEXT)
		f ^= VL_DESC_F_NEXT;
	if (mode & FZ_PFLAG_WRITE)
		f ^= VL_DESC_F_WRITE;
	if (mode & FZ_PFLAG_INDIRECT)
		f ^= VL_DESC_F_INDIRECT;
	__atomic_store_n(&p->flags, f, __ATOMIC_RELEASE);
}

void hg_do_setmem(struct lab_hg *d)
{
	int err = 0;
	struct vl_mem *m = vl_mem_create(d->regs, d->nregs, &err);

	if (!m)
		fz_fail("vl_mem_create: %s", vl_strerror(err));
	if (vl_vq_set_mem(d->vq, m) != VL_OK) {
		vl_mem_destroy(m);
		fz_fail("vl_vq_set_mem refused the same regions");
	}
	vl_mem_destroy(d->mem);
	d->mem = m;
}


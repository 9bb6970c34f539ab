/* SPDX-License-Identifier: MIT */
/* The guest side of the hostile guest beyond raw writes: well-formed chains of a chosen
 * shape through its own cursor, packed flag flips, a new memory table. Every ring write goes
 * through the lab's one ring writer (sim/ring_write.h). */
#include <string.h>

#include "hg_internal.h"
#include "ring_write.h"

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
	struct lab_pdesc e[12];
	uint32_t ne = 0, at = 0, rest = total;

	if ((shape & FZ_POST_HDR_ALONE) && total > d->hdr_len) {
		e[ne++] = (struct lab_pdesc){gpa, d->hdr_len, dir};
		at = d->hdr_len;
		rest = total - d->hdr_len;
	}
	for (uint32_t i = 0; i < nsegs; i++) {
		uint32_t l = i + 1 < nsegs ? rest / nsegs : rest - rest / nsegs * (nsegs - 1);

		e[ne++] = (struct lab_pdesc){gpa + at, l, dir};
		at += l;
		if (i == 0 && (shape & FZ_POST_ZERO_LEN))
			e[ne++] = (struct lab_pdesc){gpa, 0, dir};
	}
	if (indirect) {
		uint32_t toff = (off + total + 15u) & ~15u;

		if (d->L == VL_LAYOUT_SPLIT)
			lab_rw_split_table(d->ram + toff, e, ne);
		else
			lab_rw_packed_table(d->ram + toff, e, ne);
		e[0] = (struct lab_pdesc){d->ram_gpa + toff, 16u * ne, VL_DESC_F_INDIRECT};
		ne = 1;
	}
	if (d->L == VL_LAYOUT_SPLIT) {
		uint16_t idx[12];

		for (uint32_t i = 0; i < ne; i++)
			idx[i] = (uint16_t)(d->next_desc++ % d->size);
		lab_rw_split_chain(d->desc, idx, e, ne);
		lab_rw_split_avail(d->avail, d->size, d->avail_idx++, idx[0]);
		lab_rw_split_publish(d->avail, d->avail_idx);
		return;
	}
	lab_rw_packed_chain(d->pdesc, d->size, &d->ppos, &d->pwrap,
			    (uint16_t)(d->next_id++ % d->size), e, ne);
}

void hg_do_pflags(struct lab_hg *d, uint16_t pos, uint8_t mode)
{
	struct vl_packed_desc *p = &d->pdesc[pos % d->size];
	uint16_t f = (uint16_t)(p->flags & ~(VL_PDESC_F_AVAIL | VL_PDESC_F_USED));
	bool w = d->pwrap;

	switch (mode & 3) {
	case FZ_PFLAG_AVAIL:
		f |= lab_pring_avail_flags(w);
		break;
	case FZ_PFLAG_USED:
		f |= (uint16_t)(w ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0);
		break;
	case FZ_PFLAG_OTHER:
		f |= lab_pring_avail_flags(!w);
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
	lab_rw_packed_flags(d->pdesc, (uint16_t)(pos % d->size), f);
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


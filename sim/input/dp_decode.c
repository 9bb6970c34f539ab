/* SPDX-License-Identifier: MIT */
/* The datapath input decoded into actions of the hostile guest: the header into a setup,
 * each operation (an opcode byte and its arguments, dp_format.h) into one struct
 * lab_hg_action. Every byte string decodes: an exhausted input reads as zeros. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_format.h"
#include "hostile_guest.h"

/* addr: sel u8, then by sel % 8 (dp_format.h). */
static uint64_t dec_addr(const struct lab_hg *hg, struct fz_in *in)
{
	/* hg is NULL when only the operations' extents are wanted (fz_dp_op_starts). */
	const uint64_t ram = hg ? lab_hg_ram_gpa(hg) : 0;
	const uint64_t ring = hg ? lab_hg_ring_gpa(hg) : 0;
	const uint64_t hole = hg ? lab_hg_hole_gpa(hg) : 0;

	switch (fz_u8(in) % 8) {
	case 0:
	case 1:
	case 2:
		return ram + fz_u16(in) % (FZ_DP_RAM + 0x100u);
	case 3:
		return ring + fz_u16(in) % FZ_DP_RING_AREA;
	case 4: {
		uint64_t page = fz_u8(in) % 17u;

		return ram + page * LAB_PAGE_SIZE - fz_u8(in);
	}
	case 5:
		return hole + fz_u16(in);
	case 6:
		return fz_u64(in);
	default:
		return ram + FZ_DP_RAM - fz_u8(in);
	}
}

/* len: sel u8, then by sel % 3. */
static uint32_t dec_len(struct fz_in *in)
{
	switch (fz_u8(in) % 3) {
	case 0:
		return fz_u16(in);
	case 1:
		return fz_u32(in);
	default:
		return 0xffffffffu - fz_u8(in);
	}
}

/* DESC and TABLE: addr, len, flags, next / id. */
static void dec_desc(const struct lab_hg *hg, struct fz_in *in, struct lab_hg_action *a)
{
	a->addr = dec_addr(hg, in);
	a->len = dec_len(in);
	a->flags = fz_u16(in);
	a->other = fz_u16(in);
}

static void dec_op(const struct lab_hg *hg, struct fz_in *in, enum fz_op op, bool split,
		   bool rx, struct lab_hg_action *a)
{
	switch (op) {
	case FZ_OP_WRITE:
		a->kind = LAB_HG_WRITE;
		a->ram = fz_u8(in) & 1;
		a->off = fz_u16(in);
		a->n = (uint8_t)(fz_u8(in) % 65u);
		fz_bytes(in, a->bytes, a->n);
		break;
	case FZ_OP_FILL:
		a->kind = LAB_HG_FILL;
		a->ram = fz_u8(in) & 1;
		a->off = fz_u16(in);
		a->count = fz_u16(in);
		a->byte = fz_u8(in);
		break;
	case FZ_OP_DESC:
		a->kind = LAB_HG_DESC;
		a->value = fz_u16(in);
		dec_desc(hg, in, a);
		break;
	case FZ_OP_TABLE:
		a->kind = LAB_HG_TABLE;
		a->off = fz_u16(in);
		dec_desc(hg, in, a);
		break;
	case FZ_OP_POST:
		a->kind = LAB_HG_POST;
		a->shape = fz_u8(in);
		a->count = fz_u16(in);
		a->off = fz_u16(in);
		if (a->shape & FZ_POST_RAW_HDR)
			fz_bytes(in, a->hdr, sizeof(a->hdr));
		break;
	case FZ_OP_AVAIL:
		a->kind = LAB_HG_AVAIL;
		a->value = fz_u16(in);
		if (!split)
			a->byte = fz_u8(in);
		break;
	case FZ_OP_PUBLISH:
		a->kind = LAB_HG_PUBLISH;
		if (!split)
			a->value = fz_u16(in);
		break;
	case FZ_OP_FORCE:
		a->kind = LAB_HG_FORCE;
		if (split)
			a->value = fz_u16(in);
		else
			a->byte = fz_u8(in);
		break;
	case FZ_OP_EVENT:
		a->kind = LAB_HG_EVENT;
		if (split) {
			a->flag = fz_u8(in) & 1;
			a->value = fz_u16(in);
		} else {
			a->value = fz_u16(in);
			a->other = fz_u16(in);
		}
		break;
	case FZ_OP_BURST:
		a->kind = LAB_HG_BURST;
		if (rx) {
			a->npkts = (uint8_t)(1u + fz_u8(in) % FZ_DP_MAX_RX_PKTS);
			for (uint32_t i = 0; i < a->npkts; i++) {
				a->lens[i] = fz_u16(in);
				a->mods[i] = fz_u8(in);
			}
		} else {
			a->byte = fz_u8(in);
		}
		break;
	case FZ_OP_COMPLETE:
		a->kind = LAB_HG_COMPLETE;
		break;
	case FZ_OP_SETMEM:
		a->kind = LAB_HG_SETMEM;
		break;
	default: { /* one u8 argument */
		static const enum lab_hg_kind one[FZ_OP__COUNT] = {
			[FZ_OP_FREE] = LAB_HG_FREE, [FZ_OP_POOLFAIL] = LAB_HG_POOLFAIL,
			[FZ_OP_KICKS] = LAB_HG_KICKS, [FZ_OP_BATCH] = LAB_HG_BATCH,
			[FZ_OP_POLICY] = LAB_HG_POLICY, [FZ_OP_ZC] = LAB_HG_ZC,
		};

		a->kind = one[op];
		a->byte = fz_u8(in);
		break;
	}
	}
}

size_t fz_dp_op_starts(const uint8_t *data, size_t size, enum vl_layout layout, bool rx,
		       size_t *starts, size_t max)
{
	struct fz_in in = fz_in_make(data, size);
	size_t n = 0;

	in.off = FZ_DP_HDR_LEN;
	for (uint32_t ops = 0; ops < FZ_DP_MAX_OPS && fz_more(&in) && n < max; ops++) {
		struct lab_hg_action a;

		starts[n++] = in.off;
		enum fz_op op = (enum fz_op)(fz_u8(&in) % FZ_OP__COUNT);

		memset(&a, 0, sizeof(a));
		dec_op(NULL, &in, op, layout == VL_LAYOUT_SPLIT, rx, &a);
	}
	return n;
}

static bool fz_trace(void)
{
	static int t = -1;

	if (t < 0)
		t = getenv("FZ_TRACE") != NULL;
	return t != 0;
}

int fz_dp_run(const uint8_t *data, size_t size, enum vl_layout layout, bool rx)
{
	struct fz_in in = fz_in_make(data, size);
	struct fz_dp_setup s;

	if (size < FZ_DP_HDR_LEN)
		return 0;
	s.features = fz_u8(&in);
	s.qsize = fz_u8(&in);
	s.start = fz_u16(&in);
	s.batch = fz_u8(&in);
	s.pool = fz_u8(&in);
	s.zc = fz_u8(&in);
	s.hold = fz_u8(&in);
	s.log = fz_u8(&in);
	s.fill = fz_u8(&in);

	struct lab_hg *hg = lab_hg_begin(layout, rx, &s);

	for (uint32_t ops = 0; ops < FZ_DP_MAX_OPS && fz_more(&in); ops++) {
		size_t at = in.off;
		enum fz_op op = (enum fz_op)(fz_u8(&in) % FZ_OP__COUNT);
		struct lab_hg_action a;

		memset(&a, 0, sizeof(a));
		dec_op(hg, &in, op, layout == VL_LAYOUT_SPLIT, rx, &a);
		lab_hg_apply(hg, &a);
		if (fz_trace()) {
			fprintf(stderr, "op %-8s @%-5zu", fz_op_names[op], at);
			for (size_t i = at + 1; i < in.off && i < at + 24; i++)
				fprintf(stderr, " %02x", in.p[i]);
			fputc('\n', stderr);
			lab_hg_dump(hg);
		}
	}
	lab_hg_end(hg);
	return 0;
}

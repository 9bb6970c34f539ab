/* SPDX-License-Identifier: MIT */
/* The datapath input format: setup codes and the seed encoders (dp_format.h). */
#include "dp_format.h"

#include <string.h>

const char *const fz_op_names[FZ_OP__COUNT] = {
	"WRITE", "FILL", "DESC", "TABLE", "POST", "AVAIL", "PUBLISH", "FORCE", "EVENT",
	"BURST", "FREE", "COMPLETE", "POOLFAIL", "KICKS", "BATCH", "POLICY", "ZC", "SETMEM",
};

/* ---- datapath format: setup and codes ------------------------------------------------ */

uint64_t fz_dp_features(uint8_t dpf, uint8_t hold, enum vl_layout layout)
{
	uint64_t f = VL_FEATURE(VL_F_NET_CSUM);

	if (!(hold & FZ_HOLD_NO_GUEST_CSUM))
		f |= VL_FEATURE(VL_F_NET_GUEST_CSUM);

	/* The hold bits narrow both directions: GSO types the device takes on TX (HOST_*) and
	 * the driver on RX (GUEST_*), and ECN with them. */
	if (!(hold & FZ_HOLD_NO_GSO))
		f |= VL_FEATURE(VL_F_NET_HOST_TSO4) | VL_FEATURE(VL_F_NET_HOST_TSO6) |
		     VL_FEATURE(VL_F_NET_HOST_UFO) | VL_FEATURE(VL_F_NET_HOST_USO) |
		     VL_FEATURE(VL_F_NET_GUEST_TSO4) | VL_FEATURE(VL_F_NET_GUEST_TSO6) |
		     VL_FEATURE(VL_F_NET_GUEST_UFO) | VL_FEATURE(VL_F_NET_GUEST_USO4) |
		     VL_FEATURE(VL_F_NET_GUEST_USO6);
	if (!(hold & FZ_HOLD_NO_ECN))
		f |= VL_FEATURE(VL_F_NET_HOST_ECN) | VL_FEATURE(VL_F_NET_GUEST_ECN);

	if (dpf & FZ_DPF_MERGEABLE)
		f |= VL_FEATURE(VL_F_NET_MRG_RXBUF);
	if (dpf & FZ_DPF_INDIRECT)
		f |= VL_FEATURE(VL_F_RING_INDIRECT_DESC);
	if (dpf & FZ_DPF_IN_ORDER)
		f |= VL_FEATURE(VL_F_IN_ORDER);
	if (dpf & FZ_DPF_EVENT_IDX)
		f |= VL_FEATURE(VL_F_RING_EVENT_IDX);
	if ((dpf & FZ_DPF_VERSION_1) || layout == VL_LAYOUT_PACKED)
		f |= VL_FEATURE(VL_F_VERSION_1);
	if (layout == VL_LAYOUT_PACKED)
		f |= VL_FEATURE(VL_F_RING_PACKED);
	return f;
}

uint32_t fz_batch_threshold(uint8_t code)
{
	static const uint32_t t[8] = {0, 1, 16, 256, 1024, 65536, UINT32_MAX, 64};

	return t[code % 8];
}

uint32_t fz_pool_buf_size(uint8_t code)
{
	static const uint32_t s[4] = {2048, 512, 128, 4096};

	return s[code % 4];
}

uint32_t fz_zc_min_len(uint8_t code)
{
	static const uint32_t m[4] = {0, 1, 64, 512};

	return m[code % 4];
}

/* ---- datapath format: encoders ------------------------------------------------------- */

void fz_enc_setup(struct fz_out *o, const struct fz_dp_setup *s)
{
	fz_put8(o, s->features);
	fz_put8(o, s->qsize);
	fz_put16(o, s->start);
	fz_put8(o, s->batch);
	fz_put8(o, s->pool);
	fz_put8(o, s->zc);
	fz_put8(o, s->hold);
	fz_put8(o, s->log);
	fz_put8(o, s->fill);
}

void fz_enc_addr_ram(struct fz_out *o, uint16_t off)
{
	fz_put8(o, 0);
	fz_put16(o, off);
}

void fz_enc_addr_ring(struct fz_out *o, uint16_t off)
{
	fz_put8(o, 3);
	fz_put16(o, off);
}

void fz_enc_addr_boundary(struct fz_out *o, uint8_t page, uint8_t back)
{
	fz_put8(o, 4);
	fz_put8(o, page);
	fz_put8(o, back);
}

void fz_enc_addr_hole(struct fz_out *o, uint16_t off)
{
	fz_put8(o, 5);
	fz_put16(o, off);
}

void fz_enc_addr_raw(struct fz_out *o, uint64_t gpa)
{
	fz_put8(o, 6);
	fz_put64(o, gpa);
}

void fz_enc_addr_ram_end(struct fz_out *o, uint8_t back)
{
	fz_put8(o, 7);
	fz_put8(o, back);
}

void fz_enc_len(struct fz_out *o, uint32_t len)
{
	if (len <= 0xffffu) {
		fz_put8(o, 0);
		fz_put16(o, (uint16_t)len);
	} else if (len >= 0xffffff00u) {
		fz_put8(o, 2);
		fz_put8(o, (uint8_t)(0xffffffffu - len));
	} else {
		fz_put8(o, 1);
		fz_put32(o, len);
	}
}

void fz_enc_write(struct fz_out *o, bool ram, uint16_t off, const void *src, uint8_t n)
{
	if (n > 64)
		n = 64;
	fz_put8(o, FZ_OP_WRITE);
	fz_put8(o, ram ? 1 : 0);
	fz_put16(o, off);
	fz_put8(o, n);
	fz_put_bytes(o, src, n);
}

void fz_enc_fill(struct fz_out *o, bool ram, uint16_t off, uint16_t len, uint8_t byte)
{
	fz_put8(o, FZ_OP_FILL);
	fz_put8(o, ram ? 1 : 0);
	fz_put16(o, off);
	fz_put16(o, len);
	fz_put8(o, byte);
}

void fz_enc_desc_head(struct fz_out *o, uint16_t idx)
{
	fz_put8(o, FZ_OP_DESC);
	fz_put16(o, idx);
}

void fz_enc_table_head(struct fz_out *o, uint16_t ram_off)
{
	fz_put8(o, FZ_OP_TABLE);
	fz_put16(o, ram_off);
}

void fz_enc_desc_tail(struct fz_out *o, uint16_t flags, uint16_t next_or_id)
{
	fz_put16(o, flags);
	fz_put16(o, next_or_id);
}

void fz_enc_post(struct fz_out *o, uint8_t shape, uint16_t len, uint16_t ram_off,
		 const uint8_t *hdr10)
{
	static const uint8_t zero[10];

	if (hdr10)
		shape |= FZ_POST_RAW_HDR;
	fz_put8(o, FZ_OP_POST);
	fz_put8(o, shape);
	fz_put16(o, len);
	fz_put16(o, ram_off);
	if (shape & FZ_POST_RAW_HDR)
		fz_put_bytes(o, hdr10 ? hdr10 : zero, 10);
}

void fz_enc_avail(struct fz_out *o, uint16_t head)
{
	fz_put8(o, FZ_OP_AVAIL);
	fz_put16(o, head);
}

void fz_enc_pflags(struct fz_out *o, uint16_t pos, uint8_t mode)
{
	fz_put8(o, FZ_OP_AVAIL);
	fz_put16(o, pos);
	fz_put8(o, mode);
}

void fz_enc_publish(struct fz_out *o)
{
	fz_put8(o, FZ_OP_PUBLISH);
}

void fz_enc_setpos(struct fz_out *o, uint16_t pos_wrap)
{
	fz_put8(o, FZ_OP_PUBLISH);
	fz_put16(o, pos_wrap);
}

void fz_enc_force(struct fz_out *o, uint16_t idx)
{
	fz_put8(o, FZ_OP_FORCE);
	fz_put16(o, idx);
}

void fz_enc_skip(struct fz_out *o, uint8_t n)
{
	fz_put8(o, FZ_OP_FORCE);
	fz_put8(o, n);
}

void fz_enc_event_split(struct fz_out *o, bool used_event, uint16_t value)
{
	fz_put8(o, FZ_OP_EVENT);
	fz_put8(o, used_event ? 1 : 0);
	fz_put16(o, value);
}

void fz_enc_event_packed(struct fz_out *o, uint16_t off_wrap, uint16_t flags)
{
	fz_put8(o, FZ_OP_EVENT);
	fz_put16(o, off_wrap);
	fz_put16(o, flags);
}

void fz_enc_dequeue(struct fz_out *o, uint8_t count)
{
	fz_put8(o, FZ_OP_BURST);
	fz_put8(o, count);
}

void fz_enc_enqueue(struct fz_out *o, uint8_t n, const uint16_t *lens, const uint8_t *mods)
{
	if (n == 0)
		n = 1;
	if (n > FZ_DP_MAX_RX_PKTS)
		n = FZ_DP_MAX_RX_PKTS;
	fz_put8(o, FZ_OP_BURST);
	fz_put8(o, (uint8_t)(n - 1));
	for (uint8_t i = 0; i < n; i++) {
		fz_put16(o, lens[i]);
		fz_put8(o, mods ? mods[i] : 0);
	}
}

void fz_enc_op1(struct fz_out *o, enum fz_op op, uint8_t arg)
{
	fz_put8(o, (uint8_t)op);
	fz_put8(o, arg);
}

void fz_enc_op0(struct fz_out *o, enum fz_op op)
{
	fz_put8(o, (uint8_t)op);
}


/* SPDX-License-Identifier: MIT */
#include "hostile.h"

#include <string.h>

#include "frame_build.h"
#include "ring_write.h"
#include "vhostlab/vl_virtio.h"

static const char *const names[LAB_HOSTILE__COUNT] = {
	[LAB_HOSTILE_LOOP] = "loop",
	[LAB_HOSTILE_LOOP_INDIRECT] = "loop_indirect",
	[LAB_HOSTILE_NEXT_OUT_OF_RANGE] = "next_out_of_range",
	[LAB_HOSTILE_HEAD_OUT_OF_RANGE] = "head_out_of_range",
	[LAB_HOSTILE_AVAIL_JUMP] = "avail_jump",
	[LAB_HOSTILE_NESTED_INDIRECT] = "nested_indirect",
	[LAB_HOSTILE_INDIRECT_LEN_ZERO] = "indirect_len_zero",
	[LAB_HOSTILE_INDIRECT_LEN_ODD] = "indirect_len_odd",
	[LAB_HOSTILE_INDIRECT_TOO_BIG] = "indirect_too_big",
	[LAB_HOSTILE_UNMAPPED] = "unmapped",
	[LAB_HOSTILE_PAST_END] = "past_end",
	[LAB_HOSTILE_STRADDLE] = "straddle",
	[LAB_HOSTILE_HEADER_SPREAD] = "header_spread",
	[LAB_HOSTILE_SHORT_CHAIN] = "short_chain",
	[LAB_HOSTILE_ZERO_LEN] = "zero_len",
	[LAB_HOSTILE_LEN_OVERFLOW] = "len_overflow",
	[LAB_HOSTILE_DIRECTION] = "direction",
	[LAB_HOSTILE_BAD_OFFLOAD] = "bad_offload",
	[LAB_HOSTILE_ECN_WITHOUT_GSO] = "ecn_without_gso",
	[LAB_HOSTILE_GSO_UNKNOWN_TYPE] = "gso_unknown_type",
	[LAB_HOSTILE_GSO_NOT_NEGOTIATED] = "gso_not_negotiated",
	[LAB_HOSTILE_GSO_NO_SEGMENT_SIZE] = "gso_no_segment_size",
	[LAB_HOSTILE_GSO_HDR_PAST_FRAME] = "gso_hdr_past_frame",
	[LAB_HOSTILE_GSO_WITHOUT_CSUM] = "gso_without_csum",
	[LAB_HOSTILE_GSO_BAD_FRAME] = "gso_bad_frame",
	[LAB_HOSTILE_GSO_PROTO_MISMATCH] = "gso_proto_mismatch",
	[LAB_HOSTILE_GSO_CSUM_MISMATCH] = "gso_csum_mismatch",
	[LAB_HOSTILE_GSO_FRAME] = "gso_frame",
	[LAB_HOSTILE_RX_TOO_SMALL] = "rx_too_small",
	[LAB_HOSTILE_INCOMPLETE] = "incomplete",
	[LAB_HOSTILE_USED_HEAD] = "used_head",
};

const char *lab_hostile_name(enum lab_hostile c)
{
	return (unsigned)c < LAB_HOSTILE__COUNT ? names[c] : "unknown";
}

bool lab_hostile_is_offload(enum lab_hostile c)
{
	return c == LAB_HOSTILE_BAD_OFFLOAD ||
	       (c >= LAB_HOSTILE_ECN_WITHOUT_GSO && c <= LAB_HOSTILE_GSO_FRAME);
}

bool lab_hostile_applies(enum lab_hostile c, enum vl_layout layout, bool rx)
{
	if (lab_hostile_is_offload(c))
		return !rx;
	bool split = layout == VL_LAYOUT_SPLIT;

	switch (c) {
	case LAB_HOSTILE_LOOP:
	case LAB_HOSTILE_LOOP_INDIRECT:
	case LAB_HOSTILE_NEXT_OUT_OF_RANGE:
	case LAB_HOSTILE_AVAIL_JUMP:
		return split; /* packed chains have no next links and no avail index */
	case LAB_HOSTILE_INCOMPLETE:
	case LAB_HOSTILE_USED_HEAD:
		return !split;
	case LAB_HOSTILE_HEADER_SPREAD:
	case LAB_HOSTILE_SHORT_CHAIN:
	case LAB_HOSTILE_BAD_OFFLOAD:
		return !rx;
	case LAB_HOSTILE_RX_TOO_SMALL:
		return rx;
	default:
		return (unsigned)c < LAB_HOSTILE__COUNT;
	}
}

struct lab_hostile_outcome lab_hostile_expect(enum lab_hostile c, enum vl_layout layout,
					      bool rx)
{
	struct lab_hostile_outcome o = {LAB_HK_DROPPED, VL_DROP_NONE};

	switch (c) {
	case LAB_HOSTILE_LOOP:
	case LAB_HOSTILE_LOOP_INDIRECT:
		o.reason = VL_DROP_CHAIN_LOOP;
		break;
	case LAB_HOSTILE_NEXT_OUT_OF_RANGE:
		o.reason = VL_DROP_NEXT_OUT_OF_RANGE;
		break;
	case LAB_HOSTILE_HEAD_OUT_OF_RANGE:
		o.kind = LAB_HK_BROKEN;
		o.reason = layout == VL_LAYOUT_SPLIT ? VL_DROP_HEAD_OUT_OF_RANGE
						     : VL_DROP_ID_OUT_OF_RANGE;
		break;
	case LAB_HOSTILE_AVAIL_JUMP:
		o.kind = LAB_HK_BROKEN;
		o.reason = VL_DROP_AVAIL_IDX_JUMP;
		break;
	case LAB_HOSTILE_NESTED_INDIRECT:
		o.reason = VL_DROP_NESTED_INDIRECT;
		break;
	case LAB_HOSTILE_INDIRECT_LEN_ZERO:
	case LAB_HOSTILE_INDIRECT_LEN_ODD:
	case LAB_HOSTILE_INDIRECT_TOO_BIG:
		o.reason = VL_DROP_INDIRECT_LEN;
		break;
	case LAB_HOSTILE_UNMAPPED:
	case LAB_HOSTILE_PAST_END:
		o.reason = VL_DROP_UNMAPPED;
		break;
	case LAB_HOSTILE_STRADDLE:
	case LAB_HOSTILE_HEADER_SPREAD:
		o.kind = LAB_HK_WORKS;
		break;
	case LAB_HOSTILE_SHORT_CHAIN:
		o.reason = VL_DROP_SHORT_CHAIN;
		break;
	case LAB_HOSTILE_ZERO_LEN:
		o.reason = rx ? VL_DROP_RX_BUF_TOO_SMALL : VL_DROP_SHORT_CHAIN;
		break;
	case LAB_HOSTILE_LEN_OVERFLOW:
		o.reason = VL_DROP_LEN_OVERFLOW;
		break;
	case LAB_HOSTILE_DIRECTION:
		o.reason = VL_DROP_DIRECTION;
		break;
	case LAB_HOSTILE_BAD_OFFLOAD:
		o.reason = VL_DROP_CSUM_PAST_FRAME;
		break;
	case LAB_HOSTILE_ECN_WITHOUT_GSO:
		o.reason = VL_DROP_ECN_WITHOUT_GSO;
		break;
	case LAB_HOSTILE_GSO_UNKNOWN_TYPE:
		o.reason = VL_DROP_GSO_UNKNOWN_TYPE;
		break;
	case LAB_HOSTILE_GSO_NOT_NEGOTIATED:
		o.reason = VL_DROP_GSO_NOT_NEGOTIATED;
		break;
	case LAB_HOSTILE_GSO_NO_SEGMENT_SIZE:
		o.reason = VL_DROP_GSO_NO_SEGMENT_SIZE;
		break;
	case LAB_HOSTILE_GSO_HDR_PAST_FRAME:
		o.reason = VL_DROP_GSO_HDR_PAST_FRAME;
		break;
	case LAB_HOSTILE_GSO_WITHOUT_CSUM:
		o.reason = VL_DROP_GSO_WITHOUT_CSUM;
		break;
	case LAB_HOSTILE_GSO_BAD_FRAME:
		o.reason = VL_DROP_GSO_BAD_FRAME;
		break;
	case LAB_HOSTILE_GSO_PROTO_MISMATCH:
		o.reason = VL_DROP_GSO_PROTO_MISMATCH;
		break;
	case LAB_HOSTILE_GSO_CSUM_MISMATCH:
		o.reason = VL_DROP_GSO_CSUM_MISMATCH;
		break;
	case LAB_HOSTILE_GSO_FRAME:
		o.kind = LAB_HK_WORKS;
		break;
	case LAB_HOSTILE_RX_TOO_SMALL:
		o.reason = VL_DROP_RX_BUF_TOO_SMALL;
		break;
	case LAB_HOSTILE_INCOMPLETE:
		o.kind = LAB_HK_BROKEN;
		o.reason = VL_DROP_CHAIN_INCOMPLETE;
		break;
	case LAB_HOSTILE_USED_HEAD:
		o.kind = LAB_HK_IGNORED;
		break;
	default:
		break;
	}
	return o;
}

/* ---- writing chains as a (malicious) driver ------------------------------------------ */

/* One descriptor as a generator lists it. For split, next_to < 0 links to the following
 * descriptor of the list when NEXT is set; >= 0 names a list index (loops), and
 * next_raw >= 0 names a raw table index (out of range). */
struct hdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	int next_to;
	int next_raw;
};

#define HD(a, l, f) \
	((struct hdesc){.addr = (a), .len = (l), .flags = (f), .next_to = -1, .next_raw = -1})

static uint16_t dir_flag(const struct lab_hostile_env *e)
{
	return e->rx ? VL_DESC_F_WRITE : 0;
}

/* Split: descriptors from the driver's free list, linked as listed; the head made available
 * under `head` (or the first descriptor's index when head < 0). */
static int post_split(struct lab_hostile_env *e, const struct hdesc *d, uint32_t n, int head,
		      uint16_t *id)
{
	int idx[8];

	for (uint32_t i = 0; i < n; i++)
		if ((idx[i] = lab_vring_desc_get(e->vr)) < 0)
			return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t next = 0;

		if (d[i].next_raw >= 0)
			next = (uint16_t)d[i].next_raw;
		else if (d[i].next_to >= 0)
			next = (uint16_t)idx[d[i].next_to];
		else if (i + 1 < n)
			next = (uint16_t)idx[i + 1];
		lab_vring_set_desc(e->vr, (uint16_t)idx[i], d[i].addr, d[i].len, d[i].flags, next);
	}
	*id = head >= 0 ? (uint16_t)head : (uint16_t)idx[0];
	lab_vring_add_avail(e->vr, *id);
	lab_vring_kick(e->vr);
	return 0;
}

/* Packed: consecutive descriptors; NEXT as the listed flags say, the id in every one, the
 * head's flags written last. head_bits / tail_bits >= 0 replace the AVAIL/USED bits the
 * driver's wrap counter calls for, on the head / on every later descriptor (lies). */
static int post_packed(struct lab_hostile_env *e, const struct hdesc *d, uint32_t n, uint16_t id,
		       int head_bits, int tail_bits)
{
	struct lab_pring *pr = e->pr;
	uint16_t head = pr->next_avail, head_flags = 0;

	for (uint32_t i = 0; i < n; i++) {
		int lie = i == 0 ? head_bits : tail_bits;
		uint16_t bits = lie >= 0 ? (uint16_t)lie : lab_pring_avail_flags(pr->avail_wrap);
		uint16_t flags = (uint16_t)(d[i].flags | bits);

		if (i == 0) {
			lab_rw_packed_body(pr->desc, head, d[i].addr, d[i].len, id);
			head_flags = flags;
		} else {
			lab_rw_packed_desc(pr->desc, pr->next_avail, d[i].addr, d[i].len, id, flags);
		}
		if (++pr->next_avail == pr->size) {
			pr->next_avail = 0;
			pr->avail_wrap = !pr->avail_wrap;
		}
	}
	lab_rw_packed_flags(pr->desc, head, head_flags);
	return 0;
}

static uint16_t next_packed_id(struct lab_hostile_env *e)
{
	/* Ids are only echoed back; the position makes a unique, in-range one. */
	return e->pr->next_avail;
}

/* Post descriptors d (NEXT added between them) on either layout. */
static int post(struct lab_hostile_env *e, struct hdesc *d, uint32_t n, uint16_t *id)
{
	for (uint32_t i = 0; i + 1 < n; i++)
		d[i].flags |= VL_DESC_F_NEXT;
	if (e->layout == VL_LAYOUT_SPLIT)
		return post_split(e, d, n, -1, id);
	*id = next_packed_id(e);
	return post_packed(e, d, n, *id, -1, -1);
}

static uint64_t alloc_bytes(struct lab_hostile_env *e, uint64_t len, const void *src)
{
	uint64_t gpa = lab_gmem_alloc(e->g, len ? len : 1, 64);

	if (gpa && src && len)
		memcpy(lab_gmem_guest_ptr(e->g, gpa, len), src, len);
	return gpa;
}

/* A TX buffer: header (zero, or `hdr` if given) then len bytes of fill. RX: room only. */
static uint64_t make_buf(struct lab_hostile_env *e, uint32_t len, uint8_t fill, const uint8_t *hdr)
{
	uint32_t total = e->hdr_len + len;
	uint64_t gpa = lab_gmem_alloc(e->g, total, 64);

	if (!gpa)
		return 0;
	uint8_t *p = lab_gmem_guest_ptr(e->g, gpa, total);

	memset(p, 0, e->hdr_len);
	if (hdr)
		memcpy(p, hdr, e->hdr_len);
	memset(p + e->hdr_len, fill, len);
	return gpa;
}

static void put_le16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* The 100-byte packet of an offload class: a frame (lab_frame_build, partial checksum) or,
 * for gso_bad_frame, one whose IPv4 and TCP header lengths (60 + 60) run past it, behind
 * the header that breaks the class's rule -- every other field sound. The first byte is
 * 0x5a, as every hostile packet's (the ceilings add it up). */
static uint64_t offload_buf(struct lab_hostile_env *e, enum lab_hostile c)
{
	const bool udp = c == LAB_HOSTILE_GSO_NOT_NEGOTIATED || c == LAB_HOSTILE_GSO_FRAME;
	const bool v6 = c == LAB_HOSTILE_GSO_FRAME;
	const struct lab_frame_spec sp = {.ipv6 = v6, .udp = udp, .seed = 0x5a + (uint64_t)c,
					  .tcp_flags = 0x18,
					  .payload = 100 - (v6 ? 62u : udp ? 42u : 54u)};
	struct lab_frame_layout lay;
	struct vl_offload ol;
	uint8_t frame[100], hdr[12] = {0};

	if (lab_frame_build(&sp, true, frame, sizeof(frame), &lay) != 100)
		return 0;
	frame[0] = 0x5a;
	lab_frame_offload(&sp, &lay, 1000, false, &ol);
	switch (c) {
	case LAB_HOSTILE_ECN_WITHOUT_GSO:
		ol.gso_type = VL_NET_HDR_GSO_ECN;
		break;
	case LAB_HOSTILE_GSO_UNKNOWN_TYPE:
		ol.gso_type = 2;
		break;
	case LAB_HOSTILE_GSO_NOT_NEGOTIATED:
		ol.gso_type = VL_NET_HDR_GSO_UDP;
		break;
	case LAB_HOSTILE_GSO_NO_SEGMENT_SIZE:
		ol.gso_size = 0;
		break;
	case LAB_HOSTILE_GSO_HDR_PAST_FRAME:
		ol.hdr_len = 101;
		break;
	case LAB_HOSTILE_GSO_WITHOUT_CSUM:
		ol.flags = 0;
		break;
	case LAB_HOSTILE_GSO_BAD_FRAME:
		frame[lay.l3] = 0x4f;                      /* IHL 15: 60 bytes */
		frame[lay.l4 + 12] = 0xf0;                 /* data offset 15: 60 bytes */
		break;
	case LAB_HOSTILE_GSO_PROTO_MISMATCH:
		ol.gso_type = VL_NET_HDR_GSO_TCPV6;
		break;
	case LAB_HOSTILE_GSO_CSUM_MISMATCH:
		ol.csum_offset = 6;
		break;
	default:
		break;
	}
	hdr[0] = ol.flags;
	hdr[1] = ol.gso_type;
	put_le16(hdr + 2, ol.hdr_len);
	put_le16(hdr + 4, ol.gso_size);
	put_le16(hdr + 6, ol.csum_start);
	put_le16(hdr + 8, ol.csum_offset);
	uint64_t gpa = make_buf(e, 100, 0, hdr);

	if (gpa)
		memcpy(lab_gmem_guest_ptr(e->g, gpa + e->hdr_len, 100), frame, 100);
	return gpa;
}

int lab_hostile_post_good(struct lab_hostile_env *e, uint32_t len, uint8_t fill, uint16_t *id)
{
	uint64_t gpa = make_buf(e, len, fill, NULL);
	struct hdesc d[1] = {HD(gpa, e->hdr_len + len, dir_flag(e))};

	return gpa ? post(e, d, 1, id) : -1;
}

/* A table in guest memory, in the layout's entry format, entries as listed. */
static uint64_t make_table(struct lab_hostile_env *e, const struct hdesc *d, uint32_t n)
{
	uint8_t buf[8 * 16];

	for (uint32_t i = 0; i < n; i++) {
		if (e->layout == VL_LAYOUT_SPLIT)
			lab_rw_split_desc(buf, i, d[i].addr, d[i].len, d[i].flags,
					  (uint16_t)(d[i].next_to >= 0 ? d[i].next_to : (int)i + 1));
		else
			lab_rw_packed_entry(buf, i, d[i].addr, d[i].len, 0, d[i].flags);
	}
	return alloc_bytes(e, 16ull * n, buf);
}

int lab_hostile_post(struct lab_hostile_env *e, enum lab_hostile c, uint16_t *id)
{
	const uint16_t w = dir_flag(e);
	uint64_t buf = make_buf(e, 100, 0x5a, NULL);
	struct hdesc d[4];

	if (!buf)
		return -1;
	switch (c) {
	case LAB_HOSTILE_LOOP:
		d[0] = HD(buf, 50, (uint16_t)(w | VL_DESC_F_NEXT));
		d[1] = HD(buf + 50, e->hdr_len + 50, (uint16_t)(w | VL_DESC_F_NEXT));
		d[1].next_to = 0;
		return post_split(e, d, 2, -1, id);
	case LAB_HOSTILE_LOOP_INDIRECT: {
		struct hdesc t[2] = {HD(buf, 50, (uint16_t)(w | VL_DESC_F_NEXT)),
				     HD(buf + 50, e->hdr_len + 50, (uint16_t)(w | VL_DESC_F_NEXT))};

		t[1].next_to = 0;
		d[0] = HD(make_table(e, t, 2), 32, VL_DESC_F_INDIRECT);
		return d[0].addr ? post_split(e, d, 1, -1, id) : -1;
	}
	case LAB_HOSTILE_NEXT_OUT_OF_RANGE:
		d[0] = HD(buf, 50, (uint16_t)(w | VL_DESC_F_NEXT));
		d[0].next_raw = (int)e->vr->size;
		return post_split(e, d, 1, -1, id);
	case LAB_HOSTILE_HEAD_OUT_OF_RANGE:
		d[0] = HD(buf, e->hdr_len + 100, w);
		if (e->layout == VL_LAYOUT_SPLIT) {
			/* The avail entry names a head past the table. */
			lab_vring_add_avail(e->vr, (uint16_t)e->vr->size);
			lab_vring_kick(e->vr);
			*id = (uint16_t)e->vr->size;
			return 0;
		}
		*id = (uint16_t)e->pr->size;
		return post_packed(e, d, 1, *id, -1, -1);
	case LAB_HOSTILE_AVAIL_JUMP:
		/* The driver's index claims queue size + 1 more entries than it wrote (and keeps
		 * claiming them: later kicks publish from the moved index). */
		*id = 0;
		e->vr->avail_idx = (uint16_t)(e->vr->avail_idx + e->vr->size + 1);
		lab_vring_kick(e->vr);
		return 0;
	case LAB_HOSTILE_NESTED_INDIRECT: {
		struct hdesc t[1] = {HD(buf, 32, VL_DESC_F_INDIRECT)};

		d[0] = HD(make_table(e, t, 1), 16, VL_DESC_F_INDIRECT);
		return d[0].addr ? post(e, d, 1, id) : -1;
	}
	case LAB_HOSTILE_INDIRECT_LEN_ZERO:
	case LAB_HOSTILE_INDIRECT_LEN_ODD:
	case LAB_HOSTILE_INDIRECT_TOO_BIG: {
		struct hdesc t[1] = {HD(buf, e->hdr_len + 100, w)};
		uint64_t table = make_table(e, t, 1);
		uint32_t len = c == LAB_HOSTILE_INDIRECT_LEN_ZERO ? 0
			       : c == LAB_HOSTILE_INDIRECT_LEN_ODD ? 17
			       : 16u * (e->layout == VL_LAYOUT_SPLIT ? e->vr->size : e->pr->size) + 16;

		d[0] = HD(table, len, VL_DESC_F_INDIRECT);
		return table ? post(e, d, 1, id) : -1;
	}
	case LAB_HOSTILE_UNMAPPED:
		d[0] = HD(lab_gmem_hole_gpa(e->g), e->hdr_len + 100, w);
		return post(e, d, 1, id);
	case LAB_HOSTILE_PAST_END:
		d[0] = HD(lab_gmem_end_gpa(e->g) - 16, e->hdr_len + 100, w);
		return post(e, d, 1, id);
	case LAB_HOSTILE_STRADDLE: {
		/* Two pages of our own, the buffer across the page boundary: a region boundary
		 * at 4 KiB granularity, simply contiguous otherwise. */
		uint64_t two = lab_gmem_alloc(e->g, 2 * LAB_PAGE_SIZE, LAB_PAGE_SIZE);
		uint32_t total = e->hdr_len + 100;

		if (!two)
			return -1;
		uint64_t gpa = two + LAB_PAGE_SIZE - 40;
		uint8_t *p = lab_gmem_guest_ptr(e->g, gpa, total);

		memset(p, 0, e->hdr_len);
		memset(p + e->hdr_len, 0x5a, 100);
		d[0] = HD(gpa, total, w);
		return post(e, d, 1, id);
	}
	case LAB_HOSTILE_HEADER_SPREAD:
		d[0] = HD(buf, 4, 0);
		d[1] = HD(buf + 4, 4, 0);
		d[2] = HD(buf + 8, e->hdr_len - 8, 0);
		d[3] = HD(buf + e->hdr_len, 100, 0);
		return post(e, d, 4, id);
	case LAB_HOSTILE_SHORT_CHAIN:
		d[0] = HD(buf, e->hdr_len, 0);
		return post(e, d, 1, id);
	case LAB_HOSTILE_ZERO_LEN:
		d[0] = HD(buf, 0, w);
		d[1] = HD(buf, 0, w);
		return post(e, d, 2, id);
	case LAB_HOSTILE_LEN_OVERFLOW:
		d[0] = HD(buf, e->hdr_len + 100, w);
		d[1] = HD(buf, 0xfffffff0u, w);
		return post(e, d, 2, id);
	case LAB_HOSTILE_DIRECTION:
		d[0] = HD(buf, e->hdr_len + 100, e->rx ? 0 : VL_DESC_F_WRITE);
		return post(e, d, 1, id);
	case LAB_HOSTILE_BAD_OFFLOAD: {
		/* NEEDS_CSUM with the checksum far beyond the 100-byte packet. */
		uint8_t hdr[12] = {VL_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 0, 0, 0x60, 0xea, 0x10, 0};
		uint64_t b = make_buf(e, 100, 0x5a, hdr);

		d[0] = HD(b, e->hdr_len + 100, 0);
		return b ? post(e, d, 1, id) : -1;
	}
	case LAB_HOSTILE_ECN_WITHOUT_GSO:
	case LAB_HOSTILE_GSO_UNKNOWN_TYPE:
	case LAB_HOSTILE_GSO_NOT_NEGOTIATED:
	case LAB_HOSTILE_GSO_NO_SEGMENT_SIZE:
	case LAB_HOSTILE_GSO_HDR_PAST_FRAME:
	case LAB_HOSTILE_GSO_WITHOUT_CSUM:
	case LAB_HOSTILE_GSO_BAD_FRAME:
	case LAB_HOSTILE_GSO_PROTO_MISMATCH:
	case LAB_HOSTILE_GSO_CSUM_MISMATCH:
	case LAB_HOSTILE_GSO_FRAME: {
		uint64_t b = offload_buf(e, c);

		d[0] = HD(b, e->hdr_len + 100, 0);
		return b ? post(e, d, 1, id) : -1;
	}
	case LAB_HOSTILE_RX_TOO_SMALL:
		d[0] = HD(buf, e->hdr_len - 1, w);
		return post(e, d, 1, id);
	case LAB_HOSTILE_INCOMPLETE:
		/* The head says NEXT and is available; the next descriptor carries the other wrap
		 * counter's bits, so it is not. */
		d[0] = HD(buf, 50, (uint16_t)(w | VL_DESC_F_NEXT));
		d[1] = HD(buf + 50, e->hdr_len + 50, w);
		*id = next_packed_id(e);
		return post_packed(e, d, 2, *id, -1, lab_pring_avail_flags(!e->pr->avail_wrap));
	case LAB_HOSTILE_USED_HEAD:
		d[0] = HD(buf, e->hdr_len + 100, w);
		*id = next_packed_id(e);
		return post_packed(e, d, 1, *id,
				   e->pr->avail_wrap ? (int)(VL_PDESC_F_AVAIL | VL_PDESC_F_USED) : 0, -1);
	default:
		return -1;
	}
}

/* SPDX-License-Identifier: MIT */
/* fuzz_offload: the TX virtio-net header and the frame behind it, straight into the core's
 * offload code (core/net/net_hdr.c, tx_gso_check.c, sw_offload.c) without a ring around
 * them, so every execution is spent on the header and frame rules.
 *
 * Input: features u8 (bit 0 HOST_TSO4, 1 HOST_TSO6, 2 HOST_UFO, 3 HOST_USO, 4 HOST_ECN),
 * cuts u8 (bits 0-1: how many cut points follow), that many u16 cut points (where the frame
 * is split into guest pieces for the zero-copy check), the 12-byte header, then the frame
 * (at most 65535 bytes). See fuzz/README.md.
 *
 * Checked on every input:
 *  - vl_net_hdr_to_offload returns a known drop reason; when it accepts, the offload it made
 *    keeps its rules: only NEEDS_CSUM of the flags, the checksum field inside the frame, a
 *    GSO type that was negotiated (ECN only with HOST_ECN), a segment size and hdr_len
 *    inside the frame;
 *  - an accepted GSO header: the frame check on the host copy (vl_tx_gso_check) and on the
 *    same bytes as guest pieces behind the header (vl_tx_gso_check_guest, what zero-copy
 *    runs) agree whenever the frame fits the guest check's header window;
 *  - vl_sw_csum_complete: a known result; on OK, NEEDS_CSUM is cleared and the checksum it
 *    stored is right (the ones'-complement sum from csum_start then folds to the complement
 *    of what the field held, for even offsets);
 *  - vl_sw_segment of a frame that passed the check: a known result; on OK 1..max frames,
 *    each with zero offload fields and at most 65535 bytes;
 *  - every packet buffer is back in the pool at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "fz_bytes.h"
#include "net/net_hdr.h"
#include "net/tx_gso_check.h"
#include "net/frame_parse.h"
#include "vhostlab/vhostlab.h"

#define OF_MAX_FRAMES 64u
#define OF_POOL_BUFS 4096u
#define OF_POOL_BUF 2048u

static struct vl_pool *pool;
static uint8_t frame[VL_PKT_MAX_LEN];
static uint8_t guest[12 + VL_PKT_MAX_LEN]; /* the chain's bytes: header, then frame */

/* Ones'-complement sum of bytes [from, len) as big-endian 16-bit words from `from`,
 * folded to 16 bits. */
static uint16_t csum_fold(const uint8_t *p, uint32_t from, uint32_t len)
{
	uint64_t s = 0;

	for (uint32_t i = from; i < len; i += 2)
		s += (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0u);
	while (s >> 16)
		s = (s & 0xffffu) + (s >> 16);
	return (uint16_t)s;
}

static bool ones_equal(uint16_t a, uint16_t b)
{
	return a == b || (a == 0 && b == 0xffffu) || (a == 0xffffu && b == 0);
}

static void check_offload(const struct vl_offload *ol, uint32_t len, uint8_t allowed)
{
	uint8_t gso = ol->gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN;

	if (ol->flags & (uint8_t)~VL_NET_HDR_F_NEEDS_CSUM)
		fz_fail("accepted header keeps flags 0x%02x (only NEEDS_CSUM may pass)", ol->flags);
	if ((ol->flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)ol->csum_start + ol->csum_offset + 2u > len)
		fz_fail("accepted checksum field at %u+%u past a %u-byte frame", ol->csum_start,
			ol->csum_offset, len);
	if (gso == VL_NET_HDR_GSO_NONE) {
		if (ol->gso_type & VL_NET_HDR_GSO_ECN)
			fz_fail("accepted ECN without a GSO type");
		return;
	}
	const uint8_t need = gso == VL_NET_HDR_GSO_TCPV4   ? VL_TX_GSO_TCPV4
			     : gso == VL_NET_HDR_GSO_TCPV6 ? VL_TX_GSO_TCPV6
			     : gso == VL_NET_HDR_GSO_UDP   ? VL_TX_GSO_UDP
			     : gso == VL_NET_HDR_GSO_UDP_L4 ? VL_TX_GSO_UDP_L4
							    : 0;

	if (!(allowed & need))
		fz_fail("accepted GSO type %u that was not negotiated (allowed 0x%02x)", gso,
			allowed);
	if ((ol->gso_type & VL_NET_HDR_GSO_ECN) && !(allowed & VL_TX_GSO_ECN))
		fz_fail("accepted ECN that was not negotiated");
	if (ol->gso_size == 0 || ol->hdr_len > len)
		fz_fail("accepted GSO with segment size %u, hdr_len %u of a %u-byte frame",
			ol->gso_size, ol->hdr_len, len);
}

/* The frame as guest pieces behind the 12-byte header, cut where the input says. */
static uint32_t make_pieces(struct vl_piece *pc, const uint16_t *cut, uint32_t ncut,
			    uint32_t total)
{
	uint32_t np = 0, at = 0;

	for (uint32_t i = 0; i <= ncut; i++) {
		uint32_t end = i < ncut ? cut[i] % (total + 1) : total;

		if (end <= at)
			continue;
		pc[np].host = guest + at;
		pc[np].len = end - at;
		pc[np].gpa = 0x100000u + at;
		np++;
		at = end;
	}
	return np;
}

static void check_csum(const struct vl_pkt *pkt, uint32_t len)
{
	struct vl_pkt *c = vl_pkt_alloc_len(pool, len);

	if (!c)
		fz_fail("pool exhausted copying a %u-byte frame", len);
	vl_pkt_write(c, 0, frame, len);
	c->ol = pkt->ol;
	enum vl_sw_result r = vl_sw_csum_complete(c);

	if (r >= VL_SW__COUNT)
		fz_fail("vl_sw_csum_complete returned %d", (int)r);
	if (r == VL_SW_OK) {
		const uint32_t at = (uint32_t)pkt->ol.csum_start + pkt->ol.csum_offset;
		static uint8_t after[VL_PKT_MAX_LEN];

		if (c->ol.flags & VL_NET_HDR_F_NEEDS_CSUM)
			fz_fail("vl_sw_csum_complete left NEEDS_CSUM set");
		if (vl_pkt_read(c, 0, after, len) != len)
			fz_fail("completed packet shorter than %u bytes", len);
		if (pkt->ol.csum_offset % 2 == 0) {
			uint16_t old = (uint16_t)(frame[at] << 8 | frame[at + 1]);
			uint16_t sum = csum_fold(after, pkt->ol.csum_start, len);

			if (!ones_equal(sum, (uint16_t)~old))
				fz_fail("checksum at %u: the sum from %u folds to 0x%04x, not the "
					"complement of the pseudo-header sum 0x%04x", at,
					pkt->ol.csum_start, sum, old);
		}
	}
	vl_pkt_free(c);
}

static void check_segment(const struct vl_pkt *pkt)
{
	struct vl_pkt *out[OF_MAX_FRAMES];
	uint16_t n = 0xffffu;
	enum vl_sw_result r = vl_sw_segment(pkt, pool, out, OF_MAX_FRAMES, &n);

	if (r >= VL_SW__COUNT)
		fz_fail("vl_sw_segment returned %d", (int)r);
	if (r != VL_SW_OK) {
		if (n != 0)
			fz_fail("vl_sw_segment: %s with %u frames made", vl_sw_result_name(r), n);
		return;
	}
	if (n == 0 || n > OF_MAX_FRAMES)
		fz_fail("vl_sw_segment: OK with %u frames (max %u)", n, OF_MAX_FRAMES);
	for (uint16_t i = 0; i < n; i++) {
		const struct vl_offload z = {0};

		if (out[i]->pkt_len == 0 || out[i]->pkt_len > VL_PKT_MAX_LEN)
			fz_fail("segment %u of %u has %u bytes", i, n, out[i]->pkt_len);
		if (memcmp(&out[i]->ol, &z, sizeof(z)))
			fz_fail("segment %u of %u keeps offload fields", i, n);
	}
	vl_pkt_free_bulk(out, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = fz_in_make(data, size);
	uint8_t hdr[12];
	uint16_t cut[3];
	struct vl_piece pc[4];
	struct vl_offload ol;

	fz_set_target("fuzz_offload");
	if (!pool && !(pool = vl_pool_create(OF_POOL_BUFS, OF_POOL_BUF)))
		fz_fail("vl_pool_create");
	const uint8_t fbits = fz_u8(&in);
	const uint32_t ncut = fz_u8(&in) & 3u;

	for (uint32_t i = 0; i < ncut; i++)
		cut[i] = fz_u16(&in);
	fz_bytes(&in, hdr, sizeof(hdr));
	const uint32_t len = (uint32_t)(in.n - in.off > VL_PKT_MAX_LEN ? VL_PKT_MAX_LEN
								    : in.n - in.off);

	if (len == 0)
		return 0;
	fz_bytes(&in, frame, len);
	uint64_t features = VL_FEATURE(VL_F_NET_CSUM);

	if (fbits & 1u)
		features |= VL_FEATURE(VL_F_NET_HOST_TSO4);
	if (fbits & 2u)
		features |= VL_FEATURE(VL_F_NET_HOST_TSO6);
	if (fbits & 4u)
		features |= VL_FEATURE(VL_F_NET_HOST_UFO);
	if (fbits & 8u)
		features |= VL_FEATURE(VL_F_NET_HOST_USO);
	if (fbits & 16u)
		features |= VL_FEATURE(VL_F_NET_HOST_ECN);
	const uint8_t allowed = vl_net_tx_gso_allowed(features);
	enum vl_drop why = vl_net_hdr_to_offload(hdr, len, allowed, &ol);

	if (why >= VL_DROP__COUNT)
		fz_fail("vl_net_hdr_to_offload returned %d", (int)why);
	if (fz_verbose())
		fprintf(stderr, "fuzz_offload: %u-byte frame, header %s\n", len, vl_drop_name(why));
	if (why != VL_DROP_NONE)
		return 0;
	check_offload(&ol, len, allowed);

	struct vl_pkt *pkt = vl_pkt_alloc_len(pool, len);

	if (!pkt)
		fz_fail("pool exhausted for a %u-byte frame", len);
	vl_pkt_write(pkt, 0, frame, len);
	pkt->ol = ol;
	if (ol.gso_type != VL_NET_HDR_GSO_NONE) {
		const enum vl_drop host = vl_tx_gso_check(pkt, &ol);

		memcpy(guest, hdr, 12);
		memcpy(guest + 12, frame, len);
		const uint32_t np = make_pieces(pc, cut, ncut, 12 + len);
		const enum vl_drop in_guest = vl_tx_gso_check_guest(pc, np, 12, len, &ol);

		if (len <= VL_FRAME_HDR_MAX && host != in_guest)
			fz_fail("a %u-byte GSO frame: the host copy's check says %s, the guest "
				"pieces' (%u) %s", len, vl_drop_name(host), np, vl_drop_name(in_guest));
		if (host == VL_DROP_NONE)
			check_segment(pkt);
	}
	if (ol.flags & VL_NET_HDR_F_NEEDS_CSUM)
		check_csum(pkt, len);
	vl_pkt_free(pkt);
	if (vl_pool_free_count(pool) != vl_pool_capacity(pool))
		fz_fail("packet leak: %u of %u pool buffers free", vl_pool_free_count(pool),
			vl_pool_capacity(pool));
	return 0;
}

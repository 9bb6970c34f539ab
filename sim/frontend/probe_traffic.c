/* SPDX-License-Identifier: MIT */
/* Traffic cases of `vhostlab probe`: frames through the back end with byte oracles
 * (probe_bodies.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_record.h"
#include "fe_traffic.h"
#include "probe_bodies.h"

void probe_frame(uint8_t *dst, uint32_t len, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i++)
		dst[i] = (uint8_t)(i * 7u + seq * 31u + (i >> 8));
	/* A broadcast Ethernet header from a locally administered address, type 0x88b5 (the
	 * IEEE local experimental EtherType): a frame nobody forwards anywhere real. */
	static const uint8_t eth[14] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x56,
					0x4c, 0x00, 0x00, 0x39, 0x88, 0xb5};
	memcpy(dst, eth, len < 14 ? len : 14);
}

enum lab_fe_rc probe_rx_for_echo(struct probe_ctx *x, uint32_t n)
{
	if (!probe_expect_returns(x->expect))
		return LAB_FE_OK;
	for (uint32_t i = 0; i < n; i++)
		if (lab_fe_post_rx(&x->s, 2048) < 0)
			return LAB_FE_ERROR;
	lab_fe_kick(&x->s, LAB_FE_RX);
	return LAB_FE_OK;
}

enum lab_fe_rc probe_rx_drain(struct probe_ctx *x, uint32_t n)
{
	if (!probe_expect_returns(x->expect))
		return LAB_FE_OK;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id, len;
		enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &id, &len);

		if (rc != LAB_FE_OK)
			return rc;
		lab_fe_release(&x->s, LAB_FE_RX, id);
	}
	return LAB_FE_OK;
}

/* probe_check_rx after --expect's transformation of the frame. */
static enum probe_verdict check_rx_against(struct probe_ctx *x, const uint8_t *hdr,
					   const uint8_t *frame, uint32_t flen,
					   const uint32_t *ids, const uint32_t *lens,
					   uint32_t nbuf)
{
	uint32_t cap, at = 0;
	uint16_t num_buffers;

	memcpy(&num_buffers, hdr + 10, 2);
	if (lens[0] < LAB_FE_NET_HDR)
		return probe_fail(x, "RX used length %u, shorter than the 12-byte header", lens[0]);
	static const uint8_t zero2[2] = {0, 0};
	const uint8_t nb[2] = {(uint8_t)nbuf, (uint8_t)(nbuf >> 8)};

	/* Recording (probe --record): each check below as the expectation it is. */
	lab_fe_rec_expect_bytes(&x->s, LAB_FE_RX, ids[0], 0, zero2, 2, !hdr[0] && !hdr[1]);
	if (hdr[0] != 0 || hdr[1] != 0)
		return probe_fail(x, "RX header flags 0x%02x gso_type 0x%02x for a plain frame "
				  "(expected 0, 0)", hdr[0], hdr[1]);
	lab_fe_rec_expect_bytes(&x->s, LAB_FE_RX, ids[0], 10, nb, 2, num_buffers == nbuf);
	if (num_buffers != nbuf)
		return probe_fail(x, "RX header num_buffers %u, the frame took %u buffer(s)",
				  num_buffers, nbuf);
	for (uint32_t b = 0; b < nbuf; b++) {
		const uint8_t *p = lab_fe_buffer(&x->s, LAB_FE_RX, ids[b], &cap);
		uint32_t skip = b == 0 ? LAB_FE_NET_HDR : 0, n = lens[b] - skip;

		if (lens[b] > cap || at + n > flen)
			return probe_fail(x, "RX buffer %u: used length %u (capacity %u) runs past "
					  "the %u-byte frame + header", b, lens[b], cap, flen);
		lab_fe_rec_expect_bytes(&x->s, LAB_FE_RX, ids[b], skip, frame + at, n,
					!memcmp(p + skip, frame + at, n));
		for (uint32_t i = 0; i < n; i++)
			if (p[skip + i] != frame[at + i])
				return probe_fail(x, "RX frame byte %u is 0x%02x, sent 0x%02x%s",
						  at + i, p[skip + i], frame[at + i],
						  p[skip + i] == LAB_FE_POISON ?
						  " (the poison: not written when used idx moved)" : "");
		at += n;
	}
	if (at != flen)
		return probe_fail(x, "RX got %u frame bytes in %u buffer(s), sent %u", at, nbuf,
				  flen);
	return PROBE_PASS;
}

enum probe_verdict probe_check_rx(struct probe_ctx *x, const uint8_t *frame, uint32_t flen,
				   const uint32_t *ids, const uint32_t *lens, uint32_t nbuf)
{
	uint32_t cap;
	const uint8_t *hdr = lab_fe_buffer(&x->s, LAB_FE_RX, ids[0], &cap);
	uint8_t *swapped = NULL;

	/* --expect macswap: what comes back is the frame with its two MAC addresses swapped. */
	if (x->expect == PROBE_EXPECT_MACSWAP && flen >= 12) {
		if (!(swapped = malloc(flen)))
			return probe_fail(x, "probe: out of memory");
		memcpy(swapped, frame + 6, 6);
		memcpy(swapped + 6, frame, 6);
		memcpy(swapped + 12, frame + 12, flen - 12);
		frame = swapped;
	}
	enum probe_verdict v = check_rx_against(x, hdr, frame, flen, ids, lens, nbuf);

	free(swapped);
	return v;
}

enum probe_verdict probe_echo_one(struct probe_ctx *x, uint32_t len, uint32_t seq,
				  enum lab_fe_shape shape)
{
	uint8_t frame[4096];
	uint32_t id, ulen, rid, rlen;

	probe_frame(frame, len, seq);
	if (lab_fe_post_rx(&x->s, 2048) < 0 || lab_fe_post_tx(&x->s, frame, len, shape) < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_RX);
	lab_fe_kick(&x->s, LAB_FE_TX);
	enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &ulen);

	if (rc == LAB_FE_OK)
		rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &rid, &rlen);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	lab_fe_release(&x->s, LAB_FE_TX, id);
	enum probe_verdict v = probe_check_rx(x, frame, len, &rid, &rlen, 1);

	if (v == PROBE_PASS && rlen != LAB_FE_NET_HDR + len)
		v = probe_fail(x, "RX used length %u for a %u-byte frame (expected %u)", rlen, len,
			       LAB_FE_NET_HDR + len);
	lab_fe_release(&x->s, LAB_FE_RX, rid);
	return v == PROBE_PASS ? probe_pass(x, "%u-byte frame back whole, used length %u", len,
					    rlen) : v;
}

enum probe_verdict probe_echo_indirect(struct probe_ctx *x)
{
	return probe_echo_one(x, 300, 5, LAB_FE_INDIRECT);
}

enum probe_verdict probe_echo_frames(struct probe_ctx *x)
{
	static const uint32_t sizes[] = {60, 1514, 64, 1000, 128, 1500, 333, 1024};
	static const enum lab_fe_shape shapes[] = {LAB_FE_ONE, LAB_FE_HDR_DATA, LAB_FE_FOUR};
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < 32; i++) {
		uint32_t len = sizes[i % 8];
		enum probe_verdict v = probe_echo_one(x, len, 100 + i, shapes[i % 3]);

		if (v != PROBE_PASS)
			return v;
		bytes += len;
	}
	return probe_pass(x, "32 frames (60-1514 bytes, 3 chain shapes), %" PRIu64 " bytes, "
			  "each back byte for byte", bytes);
}

enum probe_verdict probe_mergeable(struct probe_ctx *x)
{
	enum { LEN = 4000, BUF = 1536, NBUF = 3 };
	uint8_t frame[LEN];
	uint32_t id, ulen, ids[NBUF], lens[NBUF];

	probe_frame(frame, LEN, 7);
	for (int i = 0; i < NBUF + 1; i++)
		if (lab_fe_post_rx(&x->s, BUF) < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
	if (lab_fe_post_tx(&x->s, frame, LEN, LAB_FE_HDR_DATA) < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_RX);
	lab_fe_kick(&x->s, LAB_FE_TX);
	enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &ulen);

	for (int i = 0; i < NBUF && rc == LAB_FE_OK; i++)
		rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &ids[i], &lens[i]);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	/* 5.1.6.4.1: every buffer but the last filled completely. */
	if (lens[0] != BUF || lens[1] != BUF || lens[2] != LAB_FE_NET_HDR + LEN - 2 * BUF)
		return probe_fail(x, "used lengths %u, %u, %u for a %u-byte frame in %u-byte "
				  "buffers (expected %u, %u, %u)", lens[0], lens[1], lens[2], LEN,
				  BUF, BUF, BUF, LAB_FE_NET_HDR + LEN - 2 * BUF);
	enum probe_verdict v = probe_check_rx(x, frame, LEN, ids, lens, NBUF);

	return v == PROBE_PASS ? probe_pass(x, "4000-byte frame over 3 buffers, num_buffers 3, "
					    "used lengths 1536, 1536, 940") : v;
}

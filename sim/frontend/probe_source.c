/* SPDX-License-Identifier: MIT */
/* Traffic cases against a back end that sends frames of its own (--expect source: vhostlab
 * serve --mode txonly, testpmd's txonly): the probe posts RX buffers and checks every packet
 * that arrives by the rules a driver relies on, since it cannot know the bytes (virtio
 * 2.7.8.2 / 2.8.4, 5.1.6.4): the used length covers the 12-byte header and an Ethernet
 * header and stays within the buffers; the header's flags and GSO type hold only what was
 * negotiated (the probe takes no receive offload here: both 0); num_buffers is 1 without
 * MRG_RXBUF and, with it, the number of buffers the packet used; the Ethernet header was
 * written (not the poison the buffer held). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fe_record.h"
#include "fe_traffic.h"
#include "probe_bodies.h"

#define HDR LAB_FE_NET_HDR
#define FRAMES 32u
#define RX_BUF 2048u           /* with MRG_RXBUF: a big frame spreads over several */
#define RX_BUF_WHOLE 65562u    /* without: room for the largest frame behind its header */

/* The next packet: its buffers released; *len the frame bytes, *nbuf the buffers. */
static enum probe_verdict one_packet(struct probe_ctx *x, uint32_t k, uint32_t *flen,
				     uint32_t *nbuf)
{
	uint32_t id, len, cap;
	enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &id, &len);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	const uint8_t *b = lab_fe_buffer(&x->s, LAB_FE_RX, id, &cap);
	uint8_t flags = b[0], gso = b[1], eth[14];
	uint16_t nb;

	const bool mrg = x->s.acked & VL_FEATURE(VL_F_NET_MRG_RXBUF);
	static const uint8_t plain[2] = {0, 0}, one[2] = {1, 0};

	memcpy(&nb, b + 10, 2);
	memcpy(eth, b + HDR, len >= HDR + 14 && len <= cap ? 14 : 0);
	/* Recording (probe --record): the header checks whose answer is exact. */
	lab_fe_rec_expect_bytes(&x->s, LAB_FE_RX, id, 0, plain, 2, !flags && !gso);
	if (!mrg)
		lab_fe_rec_expect_bytes(&x->s, LAB_FE_RX, id, 10, one, 2, nb == 1);
	lab_fe_release(&x->s, LAB_FE_RX, id);
	if (len > cap)
		return probe_fail(x, "packet %u: used length %u past the %u-byte buffer", k, len,
				  cap);
	if (len < HDR + 14)
		return probe_fail(x, "packet %u: used length %u, less than the 12-byte header and "
				  "an Ethernet header", k, len);
	if (flags != 0 || gso != 0)
		return probe_fail(x, "packet %u: header flags 0x%02x gso_type 0x%02x, with no "
				  "receive offload negotiated (expected 0, 0)", k, flags, gso);
	bool poison = true;

	for (unsigned i = 0; i < 14; i++)
		poison &= eth[i] == LAB_FE_POISON;
	if (poison)
		return probe_fail(x, "packet %u: its Ethernet header is still the poison the "
				  "buffer held: the used length covers bytes never written", k);

	if (nb == 0 || (!mrg && nb != 1))
		return probe_fail(x, "packet %u: num_buffers %u (%s)", k, nb,
				  mrg ? "at least 1" : "without MRG_RXBUF it is 1");
	*flen = len - HDR;
	for (uint32_t i = 1; i < nb; i++) {
		rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &id, &len);
		if (rc == LAB_FE_TIMEOUT)
			return probe_fail(x, "packet %u: num_buffers %u, but buffer %u of it never "
					  "came", k, nb, i + 1);
		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
		lab_fe_buffer(&x->s, LAB_FE_RX, id, &cap);
		lab_fe_release(&x->s, LAB_FE_RX, id);
		if (len > cap)
			return probe_fail(x, "packet %u buffer %u: used length %u past %u bytes", k,
					  i + 1, len, cap);
		*flen += len;
	}
	*nbuf = nb;
	return PROBE_PASS;
}

/* Post n RX buffers of cap bytes and kick. */
static enum lab_fe_rc post(struct probe_ctx *x, uint32_t n, uint32_t cap)
{
	for (uint32_t i = 0; i < n; i++)
		if (lab_fe_post_rx(&x->s, cap) < 0)
			return LAB_FE_ERROR;
	lab_fe_kick(&x->s, LAB_FE_RX);
	return LAB_FE_OK;
}

enum probe_verdict probe_source_frames(struct probe_ctx *x)
{
	uint32_t lo = UINT32_MAX, hi = 0, most = 0;
	const bool mrg = x->s.acked & VL_FEATURE(VL_F_NET_MRG_RXBUF);
	const uint32_t cap = mrg ? RX_BUF : RX_BUF_WHOLE;

	/* A source fills what it is given: every buffer a packet took is posted again, so
	 * frames of any size keep coming (64 KiB ones too). */
	if (post(x, mrg ? 48 : 16, cap) != LAB_FE_OK)
		return probe_from_rc(x, LAB_FE_ERROR);
	for (uint32_t k = 0; k < FRAMES; k++) {
		uint32_t flen = 0, nb = 0;
		enum probe_verdict v = one_packet(x, k, &flen, &nb);

		if (v != PROBE_PASS)
			return v;
		if (post(x, nb, cap) != LAB_FE_OK)
			return probe_from_rc(x, LAB_FE_ERROR);
		lo = flen < lo ? flen : lo;
		hi = flen > hi ? flen : hi;
		most = nb > most ? nb : most;
	}
	return probe_pass(x, "%u frames of %u..%u bytes arrived, each well formed (plain "
			  "header, num_buffers up to %u%s)", FRAMES, lo, hi, most,
			  mrg ? ", MRG_RXBUF" : ", no MRG_RXBUF");
}

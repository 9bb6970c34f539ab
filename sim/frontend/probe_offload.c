/* SPDX-License-Identifier: MIT */
/* Traffic cases with offloads (probe_bodies.h): a TCP or UDP frame of up to 64 KiB sent with
 * the virtio-net header a Linux driver writes (NEEDS_CSUM with the pseudo-header sum left in
 * the checksum field; a GSO type and segment size), through an echoing back end, and what
 * comes back on RX checked byte for byte against the lab's reference model
 * (sim/model_segment.h), written apart from the core:
 *
 *  - the probe's driver takes the offload on receive (GUEST_CSUM, GUEST_TSO4, ...): the
 *    packet may come back as it went (its header's flags and GSO fields kept), or the back
 *    end may do the work itself: segments, every checksum complete;
 *  - it does not: the back end must segment the packet or complete its checksum in software
 *    (virtio 5.1.6.4: a device sends only what the driver negotiated), and the frames must
 *    be exactly those the model makes.
 *
 * Where a back end completed a checksum it may say so with DATA_VALID to a driver that took
 * GUEST_CSUM (5.1.6.4.1); the GSO fields of a segment are 0. hdr_len is a hint and not
 * compared. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_record.h"
#include "fe_traffic.h"
#include "frame_build.h"
#include "model_segment.h"
#include "probe_bodies.h"

#define F(b) VL_FEATURE(b)
#define HDR LAB_FE_NET_HDR
#define RX_BUF 2048u
#define MAX_FRAMES 64u
#define BIG_PAYLOAD 65000u   /* L4 payload of a GSO frame: frames of 65042..65074 bytes */
#define SMALL_PAYLOAD 1000u  /* of a checksum-only frame */

/* probe_case.arg (probe_bodies.h): which offload, and whether the probe's driver takes it on
 * receive. */
enum { OL_CSUM = OL_ARG_CSUM, OL_TSO4 = OL_ARG_TSO4, OL_TSO6 = OL_ARG_TSO6, OL_USO = OL_ARG_USO };
#define OL_GUEST OL_ARG_GUEST

struct ol_kind {
	const char *name;
	bool ipv6, udp;
	uint16_t gso_size;   /* 0: checksum only */
	uint64_t host, guest; /* features to send it, to take it back whole */
};

static const struct ol_kind kinds[] = {
	[OL_CSUM] = {"checksum", false, false, 0, F(VL_F_NET_CSUM), F(VL_F_NET_GUEST_CSUM)},
	[OL_TSO4] = {"TCPv4 GSO", false, false, 1448, F(VL_F_NET_CSUM) | F(VL_F_NET_HOST_TSO4),
		     F(VL_F_NET_GUEST_CSUM) | F(VL_F_NET_GUEST_TSO4)},
	[OL_TSO6] = {"TCPv6 GSO", true, false, 1428, F(VL_F_NET_CSUM) | F(VL_F_NET_HOST_TSO6),
		     F(VL_F_NET_GUEST_CSUM) | F(VL_F_NET_GUEST_TSO6)},
	[OL_USO] = {"UDP GSO", false, true, 1472, F(VL_F_NET_CSUM) | F(VL_F_NET_HOST_USO),
		    F(VL_F_NET_GUEST_CSUM) | F(VL_F_NET_GUEST_USO4) | F(VL_F_NET_GUEST_USO6)},
};

/* One packet received: its header's offload fields and its bytes (owned). */
struct rx_pkt {
	struct vl_offload ol;
	uint8_t *bytes;
	uint32_t len;
};

/* What may come back: the packet as sent (whole), or the model's frames (cut). */
struct want {
	bool whole_ok;
	const uint8_t *frame;
	uint32_t len;
	struct vl_offload ol;
	uint8_t *cut;                  /* the model's frames, back to back */
	struct lab_mframe fr[MAX_FRAMES];
	uint32_t n;
};

static void hdr_write(uint8_t *h, const struct vl_offload *ol)
{
	memset(h, 0, HDR);
	h[0] = ol->flags;
	h[1] = ol->gso_type;
	memcpy(h + 2, &ol->hdr_len, 2);
	memcpy(h + 4, &ol->gso_size, 2);
	memcpy(h + 6, &ol->csum_start, 2);
	memcpy(h + 8, &ol->csum_offset, 2);
}

static void hdr_read(const uint8_t *h, struct vl_offload *ol)
{
	ol->flags = h[0];
	ol->gso_type = h[1];
	memcpy(&ol->hdr_len, h + 2, 2);
	memcpy(&ol->gso_size, h + 4, 2);
	memcpy(&ol->csum_start, h + 6, 2);
	memcpy(&ol->csum_offset, h + 8, 2);
}

/* The frame behind its header in one guest allocation, as two descriptors. */
static int post_offloaded(struct probe_ctx *x, const uint8_t *frame, uint32_t len,
			  const struct vl_offload *ol)
{
	uint64_t gpa = lab_gmem_alloc(x->s.g, HDR + (uint64_t)len, 16);

	if (!gpa) {
		snprintf(x->s.c.what, sizeof(x->s.c.what), "probe: guest RAM full");
		return -1;
	}
	uint8_t *p = lab_gmem_guest_ptr(x->s.g, gpa, HDR + (uint64_t)len);

	hdr_write(p, ol);
	memcpy(p + HDR, frame, len);
	const struct lab_pdesc e[2] = {{gpa, HDR, 0}, {gpa + HDR, len, 0}};
	const struct lab_fe_alloc a = {gpa, HDR + len};

	return lab_fe_post_chain(&x->s, LAB_FE_TX, e, 2, &a, 1);
}

/* The next packet on RX: num_buffers buffers gathered (one without MRG_RXBUF). */
static enum probe_verdict receive(struct probe_ctx *x, struct rx_pkt *out)
{
	uint32_t id, len, cap;
	enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &id, &len);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	const uint8_t *b = lab_fe_buffer(&x->s, LAB_FE_RX, id, &cap);
	uint16_t nb;

	if (len < HDR || len > cap) {
		lab_fe_release(&x->s, LAB_FE_RX, id);
		return probe_fail(x, "RX used length %u in a %u-byte buffer (the header is %u)",
				  len, cap, HDR);
	}
	hdr_read(b, &out->ol);
	memcpy(&nb, b + 10, 2);
	const bool mrg = x->s.acked & F(VL_F_NET_MRG_RXBUF);

	if (nb == 0 || (!mrg && nb != 1) || nb > MAX_FRAMES) {
		lab_fe_release(&x->s, LAB_FE_RX, id);
		return probe_fail(x, "RX header num_buffers %u (%s)", nb,
				  mrg ? "0 or more buffers than posted" : "without MRG_RXBUF it is 1");
	}
	out->bytes = malloc((size_t)nb * RX_BUF);
	if (!out->bytes) {
		lab_fe_release(&x->s, LAB_FE_RX, id);
		return probe_fail(x, "probe: out of memory");
	}
	out->len = len - HDR;
	memcpy(out->bytes, b + HDR, out->len);
	lab_fe_release(&x->s, LAB_FE_RX, id);
	for (uint16_t i = 1; i < nb; i++) {
		rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &id, &len);
		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
		b = lab_fe_buffer(&x->s, LAB_FE_RX, id, &cap);
		if (len > cap) {
			lab_fe_release(&x->s, LAB_FE_RX, id);
			return probe_fail(x, "RX buffer %u of a packet: used length %u past its "
					  "%u bytes", i, len, cap);
		}
		memcpy(out->bytes + out->len, b, len);
		out->len += len;
		lab_fe_release(&x->s, LAB_FE_RX, id);
	}
	return PROBE_PASS;
}

/* The first byte where got differs from want (under --expect macswap, want's MAC addresses
 * swapped), or -1. */
static long first_difference(const struct probe_ctx *x, const uint8_t *got, const uint8_t *want,
			     uint32_t len)
{
	for (uint32_t i = 0; i < len; i++) {
		uint8_t w = want[i];

		if (x->expect == PROBE_EXPECT_MACSWAP && i < 12)
			w = want[i < 6 ? i + 6 : i - 6];
		if (got[i] != w)
			return (long)i;
	}
	return -1;
}

/* Received packet k against expected frame (bytes, len, offloads): a segment or a completed
 * frame (flags 0, GSO 0) may carry DATA_VALID where the driver took GUEST_CSUM. */
static enum probe_verdict compare(struct probe_ctx *x, const struct rx_pkt *p, uint32_t k,
				  const uint8_t *want, uint32_t len, const struct vl_offload *ol)
{
	uint8_t flags = p->ol.flags;

	if (!ol->flags && !ol->gso_type && flags == VL_NET_HDR_F_DATA_VALID &&
	    (x->s.acked & F(VL_F_NET_GUEST_CSUM)))
		flags = 0;
	if (flags != ol->flags || p->ol.gso_type != ol->gso_type ||
	    (ol->gso_type && p->ol.gso_size != ol->gso_size) ||
	    (ol->flags & VL_NET_HDR_F_NEEDS_CSUM &&
	     (p->ol.csum_start != ol->csum_start || p->ol.csum_offset != ol->csum_offset)))
		return probe_fail(x, "packet %u: header flags 0x%x gso_type 0x%x gso_size %u "
				  "csum %u/%u, expected flags 0x%x gso_type 0x%x gso_size %u csum "
				  "%u/%u", k, p->ol.flags, p->ol.gso_type, p->ol.gso_size,
				  p->ol.csum_start, p->ol.csum_offset, ol->flags, ol->gso_type,
				  ol->gso_size, ol->csum_start, ol->csum_offset);
	if (p->len != len)
		return probe_fail(x, "packet %u: %u bytes, expected %u", k, p->len, len);
	long d = first_difference(x, p->bytes, want, len);

	if (d >= 0)
		return probe_fail(x, "packet %u (%u bytes): byte %ld is 0x%02x, expected 0x%02x", k,
				  len, d, p->bytes[d], want[d]);
	return PROBE_PASS;
}

/* Receive and check what came back for the frame: whole (when allowed and the first packet
 * is the whole length) or the model's w->n frames. */
static enum probe_verdict check_back(struct probe_ctx *x, const struct want *w,
				     const char *name)
{
	struct rx_pkt p = {0};
	enum probe_verdict v = receive(x, &p);

	if (v != PROBE_PASS)
		return v;
	if (w->whole_ok && p.len == w->len && (w->n != 1 || w->fr[0].len != w->len)) {
		v = compare(x, &p, 0, w->frame, w->len, &w->ol);
		free(p.bytes);
		return v != PROBE_PASS ? v :
			probe_pass(x, "%u-byte %s frame back whole, flags 0x%x gso_type 0x%x",
				   w->len, name, w->ol.flags, w->ol.gso_type);
	}
	if (w->whole_ok && w->n == 1 && p.len == w->len) {
		/* The same length either way (a checksum-only frame): as sent, or completed. */
		char first[sizeof(x->detail)];

		if (compare(x, &p, 0, w->frame, w->len, &w->ol) == PROBE_PASS) {
			free(p.bytes);
			return probe_pass(x, "%u-byte %s frame back whole, flags 0x%x", w->len, name,
					  w->ol.flags);
		}
		memcpy(first, x->detail, sizeof(first));
		v = compare(x, &p, 0, w->cut + w->fr[0].off, w->fr[0].len, &w->fr[0].ol);
		free(p.bytes);
		if (v != PROBE_PASS)
			return probe_fail(x, "neither as sent (%.200s) nor completed (%.200s)", first,
					  x->detail);
		return probe_pass(x, "%u-byte %s frame back with its checksum completed, flags "
				  "0x%x", w->len, name, p.ol.flags);
	}
	if (w->n == 0) {
		free(p.bytes);
		return probe_fail(x, "a %u-byte packet came back where the %u-byte frame was "
				  "expected whole", p.len, w->len);
	}
	uint64_t bytes = 0;

	for (uint32_t k = 0; k < w->n && v == PROBE_PASS; k++) {
		if (k > 0)
			v = receive(x, &p);
		if (v == PROBE_PASS) {
			v = compare(x, &p, k, w->cut + w->fr[k].off, w->fr[k].len, &w->fr[k].ol);
			bytes += p.len;
		}
		free(p.bytes);
		p.bytes = NULL;
	}
	if (v != PROBE_PASS)
		return v;
	uint32_t extra_id, extra_len;
	int more = lab_fe_used_within(&x->s, LAB_FE_RX, 50, &extra_id, &extra_len);

	if (more != 0)
		return probe_fail(x, "a packet more than the %u the model makes came back", w->n);
	return probe_pass(x, "%u-byte %s frame back as %u frame(s) of %" PRIu64 " bytes in all, "
			  "each as the reference model makes it%s", w->len, name, w->n, bytes,
			  w->whole_ok ? " (the driver would have taken it whole)" : "");
}

enum probe_verdict probe_offload(struct probe_ctx *x)
{
	const struct ol_kind *k = &kinds[x->arg & 0xf];
	const bool guest = x->arg & OL_GUEST;

	/* The probe's driver reads these offloads itself (this file): they join its features. */
	x->s.features_extra = k->host | (guest ? k->guest : 0);
	/* probe --record: the trace format has no expectation for a packet gathered over
	 * buffers and compared with the model's frames, so a failure here is no trace. */
	lab_fe_rec_unrecordable(&x->s, "the offload cases compare packets gathered over RX "
				"buffers with the reference model's frames: no trace expectation "
				"says that");
	enum lab_fe_rc rc = lab_fe_bring_up(&x->s, x->mask | x->s.features_extra, 128, 0);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	const struct lab_frame_spec sp = {
		.ipv6 = k->ipv6, .udp = k->udp, .tcp_flags = 0x18, .ip_id = 0x1234,
		.seq = 0x01020304, .payload = k->gso_size ? BIG_PAYLOAD : SMALL_PAYLOAD,
		.seed = 0x5052 + (uint64_t)x->arg, .payload_stream = true};
	const uint32_t cap = 65536, cut_cap = 2 * 65536;
	uint8_t *frame = malloc(cap), *cut = malloc(cut_cap);
	struct want *w = calloc(1, sizeof(*w));
	struct lab_frame_layout lay;
	enum probe_verdict v = PROBE_PASS;

	if (!frame || !cut || !w) {
		v = probe_fail(x, "probe: out of memory");
		goto out;
	}
	w->frame = frame;
	w->cut = cut;
	w->len = lab_frame_build(&sp, true, frame, cap, &lay);
	lab_frame_offload(&sp, &lay, k->gso_size, false, &w->ol);
	enum lab_mseg m = lab_model_fit(x->s.acked, frame, w->len, &w->ol, cut, cut_cap, w->fr,
					MAX_FRAMES, &w->n);

	if (m == LAB_MSEG_AS_IS) {
		/* The driver takes it whole; a back end may still do the work itself. */
		w->whole_ok = true;
		if (k->gso_size)
			m = lab_model_segment(frame, w->len, &w->ol, cut, cut_cap, w->fr,
					      MAX_FRAMES, &w->n);
		else
			m = lab_model_fit(x->s.acked & ~k->guest, frame, w->len, &w->ol, cut,
					  cut_cap, w->fr, MAX_FRAMES, &w->n);
	}
	if (m != LAB_MSEG_OK || !w->len) {
		v = probe_fail(x, "probe: the model cannot make the %s frame (%d)", k->name, m);
		goto out;
	}
	/* Room for every frame the back end may send (MRG_RXBUF spreads a whole one). */
	const uint32_t nrx = w->n > 34 ? w->n + 2 : 36;

	for (uint32_t i = 0; i < nrx; i++)
		if (lab_fe_post_rx(&x->s, RX_BUF) < 0) {
			v = probe_from_rc(x, LAB_FE_ERROR);
			goto out;
		}
	lab_fe_kick(&x->s, LAB_FE_RX);
	int txid = post_offloaded(x, frame, w->len, &w->ol);
	uint32_t id, ulen;

	if (txid < 0) {
		v = probe_from_rc(x, LAB_FE_ERROR);
		goto out;
	}
	lab_fe_kick(&x->s, LAB_FE_TX);
	rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &ulen);
	if (rc != LAB_FE_OK) {
		v = probe_from_rc(x, rc);
		goto out;
	}
	lab_fe_release(&x->s, LAB_FE_TX, id);
	v = check_back(x, w, k->name);
out:
	free(frame);
	free(cut);
	free(w);
	return v;
}

/* SPDX-License-Identifier: MIT */
/* Conformance cases on chain layouts and the virtio-net header (probe_bodies.h): each sends
 * chains the lab's shapes do not make, laid out here descriptor by descriptor, through an
 * echoing back end and checks what comes back on RX against what was sent. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_traffic.h"
#include "probe_bodies.h"

#define HDR LAB_FE_NET_HDR

/* Guest RAM holding n bytes copied from src; 0 when full. */
static uint64_t put(struct probe_ctx *x, const void *src, uint32_t n)
{
	uint64_t gpa = lab_gmem_alloc(x->s.g, n, 16);

	if (gpa)
		memcpy(lab_gmem_guest_ptr(x->s.g, gpa, n), src, n);
	return gpa;
}

/* A TX chain of header `hdr` then `frame`: the header cut at the lengths in hcut (summing
 * to 12; the last may run on into the frame when extra > 0, i.e. the first extra frame
 * bytes share the header's last descriptor), then the rest of the frame in one descriptor.
 * Returns the id or -1. */
static int post_cut(struct probe_ctx *x, const uint8_t *hdr, const uint8_t *frame,
		    uint32_t flen, const uint32_t *hcut, uint32_t ncut, uint32_t extra)
{
	uint8_t whole[HDR + 2048];
	struct lab_pdesc e[16];
	uint32_t n = 0, at = 0, total = HDR + flen;

	if (flen > 2048 || ncut > 14)
		return -1;
	memcpy(whole, hdr, HDR);
	memcpy(whole + HDR, frame, flen);
	struct lab_fe_alloc a = {put(x, whole, total), total};

	if (!a.gpa)
		return -1;
	for (uint32_t i = 0; i < ncut; i++) {
		uint32_t len = hcut[i] + (i + 1 == ncut ? extra : 0);

		e[n++] = (struct lab_pdesc){a.gpa + at, len, 0};
		at += len;
	}
	if (at < total)
		e[n++] = (struct lab_pdesc){a.gpa + at, total - at, 0};
	return lab_fe_post_chain(&x->s, LAB_FE_TX, e, n, &a, 1);
}

/* Room for the echo of the next TX chain, posted (and kicked) before the chain: a polling
 * back end may take the chain the moment it is published and drop what has nowhere to go. */
static bool rx_room(struct probe_ctx *x)
{
	if (lab_fe_post_rx(&x->s, 2048) < 0)
		return false;
	lab_fe_kick(&x->s, LAB_FE_RX);
	return true;
}

/* After rx_room and a TX chain posted: kick, wait for both, and check the echo is the frame,
 * whole, behind a plain header with num_buffers 1. A chain used on TX with no echo is a
 * frame the back end dropped: a fail naming the shape, not a wedge. */
static enum probe_verdict echo_posted(struct probe_ctx *x, int txid, const uint8_t *frame,
				      uint32_t flen, const char *shape)
{
	uint32_t id, ulen, rid, rlen;

	if (txid < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_TX);
	enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &ulen);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	lab_fe_release(&x->s, LAB_FE_TX, id);
	rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &rid, &rlen);
	if (rc == LAB_FE_TIMEOUT)
		return probe_fail(x, "%s: the TX chain was used, but no echo came within %d ms "
				  "(the frame was dropped)", shape, x->s.c.timeout_ms);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	enum probe_verdict v = probe_check_rx(x, frame, flen, &rid, &rlen, 1);

	if (v == PROBE_PASS && rlen != HDR + flen)
		v = probe_fail(x, "RX used length %u for a %u-byte frame", rlen, flen);
	lab_fe_release(&x->s, LAB_FE_RX, rid);
	if (v != PROBE_PASS) {
		char seen[sizeof(x->detail)];

		memcpy(seen, x->detail, sizeof(seen));
		return probe_fail(x, "%s: %.400s", shape, seen);
	}
	return PROBE_PASS;
}

enum probe_verdict probe_chain_shapes(struct probe_ctx *x)
{
	static const struct {
		const char *name;
		uint32_t cut[12], ncut, extra;
	} shapes[] = {
		{"header and frame in one descriptor", {12}, 1, 600},
		{"header, then frame", {12}, 1, 0},
		{"header 4+4+4, then frame", {4, 4, 4}, 3, 0},
		{"header 5+7, then frame", {5, 7}, 2, 0},
		{"header in 12 one-byte descriptors", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 12, 0},
		{"header and 100 frame bytes, then the rest", {12}, 1, 100},
		{"header 2+10 with 7 frame bytes, then the rest", {2, 10}, 2, 7},
	};
	const uint8_t hdr[HDR] = {0};
	uint8_t frame[600];

	probe_frame(frame, sizeof(frame), 11);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		int id = !rx_room(x) ? -1 :
			 post_cut(x, hdr, frame, sizeof(frame), shapes[i].cut, shapes[i].ncut,
				  shapes[i].extra);
		enum probe_verdict v = echo_posted(x, id, frame, sizeof(frame), shapes[i].name);

		if (v != PROBE_PASS)
			return v;
	}
	return probe_pass(x, "one 600-byte frame in 7 chain shapes (header in 1, 2, 3 and 12 "
			  "descriptors, sharing one with the frame): 7 identical echoes");
}

enum probe_verdict probe_tx_hdr_ignored(struct probe_ctx *x)
{
	/* struct virtio_net_hdr_v1: flags, gso_type, hdr_len, gso_size, csum_start,
	 * csum_offset, num_buffers (u8, u8, then le16s). */
	static const struct {
		uint8_t hdr[HDR];
		const char *what;
	} hdrs[] = {
		{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, "TX num_buffers 0xffff"},
		{{0xf8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "TX flags 0xf8 (no defined bit)"},
		{{0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0},
		 "TX flags 0 with csum_start and csum_offset 0xffff"},
	};
	const uint32_t cut[] = {HDR};
	uint8_t frame[300];

	if (x->arg < 0 || (size_t)x->arg >= sizeof(hdrs) / sizeof(hdrs[0]))
		return probe_fail(x, "probe: no header %d", x->arg);
	probe_frame(frame, sizeof(frame), 13);
	for (int i = 0; i < 4; i++) {
		int id = !rx_room(x) ? -1 :
			 post_cut(x, hdrs[x->arg].hdr, frame, sizeof(frame), cut, 1, 0);
		enum probe_verdict v = echo_posted(x, id, frame, sizeof(frame), hdrs[x->arg].what);

		if (v != PROBE_PASS)
			return v;
	}
	return probe_pass(x, "%s: 4 frames echoed byte for byte with a plain header, "
			  "num_buffers 1", hdrs[x->arg].what);
}

enum probe_verdict probe_indirect_flags(struct probe_ctx *x)
{
	uint8_t frame[400], whole[HDR + 400] = {0};
	bool packed = x->s.layout == VL_LAYOUT_PACKED;

	probe_frame(frame, sizeof(frame), 17);
	memcpy(whole + HDR, frame, sizeof(frame));
	struct lab_fe_alloc a[2] = {{put(x, whole, sizeof(whole)), sizeof(whole)},
				    {lab_gmem_alloc(x->s.g, 32, 16), 32}};

	if (!a[0].gpa || !a[1].gpa)
		return probe_from_rc(x, LAB_FE_ERROR);
	const struct lab_pdesc t[2] = {{a[0].gpa, HDR + 100, 0},
				       {a[0].gpa + HDR + 100, sizeof(frame) - 100, 0}};
	uint8_t *table = lab_gmem_guest_ptr(x->s.g, a[1].gpa, 32);

	if (packed) {
		lab_rw_packed_table(table, t, 2);
		/* 2.8.7: in a packed table only WRITE means anything; NEXT, AVAIL, USED and the
		 * Buffer IDs are ignored. Entry layout: addr, len, id (byte 12), flags (14). */
		const uint16_t junk[2][2] = {{0xbeef, VL_PDESC_F_AVAIL | VL_DESC_F_NEXT},
					     {0x1234, VL_PDESC_F_USED | VL_PDESC_F_AVAIL}};

		for (int i = 0; i < 2; i++) {
			uint16_t flags;

			memcpy(&flags, table + 16 * i + 14, 2);
			flags = (uint16_t)(flags | junk[i][1]);
			memcpy(table + 16 * i + 12, &junk[i][0], 2);
			memcpy(table + 16 * i + 14, &flags, 2);
		}
	} else {
		lab_rw_split_table(table, t, 2);
	}
	/* 2.7.5.3.2 (S-06): WRITE on the descriptor that points to a table is ignored. */
	const struct lab_pdesc e = {a[1].gpa, 32, VL_DESC_F_INDIRECT | VL_DESC_F_WRITE};
	int id = rx_room(x) ? lab_fe_post_chain(&x->s, LAB_FE_TX, &e, 1, a, 2) : -1;
	enum probe_verdict v = echo_posted(x, id, frame, sizeof(frame),
					   packed ? "INDIRECT|WRITE, table with junk flags and ids" :
						    "INDIRECT|WRITE head");

	return v != PROBE_PASS ? v :
	       probe_pass(x, "an INDIRECT descriptor with WRITE set%s: frame echoed whole",
			  packed ? ", table entries with NEXT/AVAIL/USED and junk ids" : "");
}

enum probe_verdict probe_no_device_writes(struct probe_ctx *x)
{
	enum { N = 16 };
	struct lab_ring *r = &x->s.q[LAB_FE_TX].ring;
	int ids[N];
	uint8_t frame[1514];
	uint64_t total = 0;

	if (probe_rx_for_echo(x, N) != LAB_FE_OK)
		return probe_from_rc(x, LAB_FE_ERROR);
	for (int i = 0; i < N; i++) {
		uint32_t len = 60 + 90 * (uint32_t)i;

		probe_frame(frame, len, 40 + (uint32_t)i);
		ids[i] = lab_fe_post_tx(&x->s, frame, len, i % 2 ? LAB_FE_FOUR : LAB_FE_HDR_DATA);
		if (ids[i] < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
		for (int k = 0; k < (int)LAB_FE_CHAIN_ALLOCS; k++)
			total += x->s.q[LAB_FE_TX].alloc[ids[i]][k].len;
	}
	/* What the device may only read: every TX buffer and, split, the descriptor table and
	 * the avail ring (2.7.5.1, 2.7.6). A copy before the kick, compared after all came back. */
	uint64_t dlen = 0, alen = 0;
	uint8_t *desc = NULL, *avail = NULL;

	if (r->layout == VL_LAYOUT_SPLIT) {
		dlen = 16ull * r->size;
		alen = 6ull + 2ull * r->size;
		desc = (uint8_t *)r->s.desc;
		avail = (uint8_t *)r->s.avail;
	}
	uint8_t *copy = malloc(total + dlen + alen);

	if (!copy)
		return probe_fail(x, "probe: out of memory");
	uint64_t at = 0;

	for (int i = 0; i < N; i++)
		for (int k = 0; k < (int)LAB_FE_CHAIN_ALLOCS; k++) {
			const struct lab_fe_alloc *a = &x->s.q[LAB_FE_TX].alloc[ids[i]][k];

			if (a->len)
				memcpy(copy + at, lab_gmem_guest_ptr(x->s.g, a->gpa, a->len), a->len);
			at += a->len;
		}
	if (dlen) {
		memcpy(copy + at, desc, dlen);
		memcpy(copy + at + dlen, avail, alen);
	}
	lab_fe_kick(&x->s, LAB_FE_TX);
	uint32_t got[N];
	enum lab_fe_rc rc = LAB_FE_OK;

	for (int i = 0; i < N && rc == LAB_FE_OK; i++) {
		uint32_t len;

		rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &got[i], &len);
	}
	enum probe_verdict v = PROBE_PASS;

	if (rc != LAB_FE_OK)
		v = probe_from_rc(x, rc);
	at = 0;
	for (int i = 0; i < N && v == PROBE_PASS; i++)
		for (int k = 0; k < (int)LAB_FE_CHAIN_ALLOCS && v == PROBE_PASS; k++) {
			const struct lab_fe_alloc *a = &x->s.q[LAB_FE_TX].alloc[ids[i]][k];

			if (a->len && memcmp(copy + at, lab_gmem_guest_ptr(x->s.g, a->gpa, a->len),
					     a->len))
				v = probe_fail(x, "TX chain %d (id %d): the device wrote into a "
					       "readable buffer at gpa 0x%" PRIx64, i, ids[i], a->gpa);
			at += a->len;
		}
	if (v == PROBE_PASS && dlen && memcmp(copy + at, desc, dlen))
		v = probe_fail(x, "the descriptor table changed while the device used 16 chains");
	if (v == PROBE_PASS && dlen && memcmp(copy + at + dlen, avail, alen))
		v = probe_fail(x, "the avail ring changed while the device used 16 chains");
	free(copy);
	for (int i = 0; i < N && rc == LAB_FE_OK; i++)
		lab_fe_release(&x->s, LAB_FE_TX, got[i]);
	if (v == PROBE_PASS && (rc = probe_rx_drain(x, N)) != LAB_FE_OK)
		v = probe_from_rc(x, rc);
	return v != PROBE_PASS ? v :
	       probe_pass(x, "16 TX chains used; their %" PRIu64 " buffer bytes%s unchanged", total,
			  dlen ? ", the descriptor table and the avail ring" : "");
}

/* One received packet: its first used buffer, then (MRG_RXBUF) as many more as its header's
 * num_buffers says. Compared against each candidate frame; which one matched in *which. */
static enum probe_verdict take_packet(struct probe_ctx *x, const uint8_t *const *frames,
				      const uint32_t *lens, int nframes, int *which)
{
	enum { MAXB = 8 };
	uint32_t ids[MAXB], ulens[MAXB], cap, nb = 1;
	enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &ids[0], &ulens[0]);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	const uint8_t *h = lab_fe_buffer(&x->s, LAB_FE_RX, ids[0], &cap);
	uint16_t num_buffers;

	memcpy(&num_buffers, h + 10, 2);
	if (x->s.acked & VL_FEATURE(VL_F_NET_MRG_RXBUF)) {
		if (num_buffers < 1 || num_buffers > MAXB)
			return probe_fail(x, "RX num_buffers %u (used length %u)", num_buffers,
					  ulens[0]);
		nb = num_buffers;
	}
	for (uint32_t b = 1; b < nb && rc == LAB_FE_OK; b++)
		rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &ids[b], &ulens[b]);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	uint32_t got = 0;

	for (uint32_t b = 0; b < nb; b++)
		got += ulens[b];
	enum probe_verdict v = PROBE_PASS;
	bool sized = false;

	*which = -1;
	for (int f = 0; f < nframes && *which < 0; f++)
		if (got == HDR + lens[f]) {
			sized = true;
			v = probe_check_rx(x, frames[f], lens[f], ids, ulens, nb);
			*which = v == PROBE_PASS ? f : -1;
		}
	if (!sized)
		v = probe_fail(x, "RX packet of %u bytes over %u buffer(s) (num_buffers %u): no "
			       "whole frame sent is that long (partial publish or truncation)", got,
			       nb, num_buffers);
	for (uint32_t b = 0; b < nb; b++)
		lab_fe_release(&x->s, LAB_FE_RX, ids[b]);
	return v;
}

enum probe_verdict probe_no_partial(struct probe_ctx *x)
{
	/* arg 0 (N-02, no MRG_RXBUF): two 1000-byte RX buffers, a 1514-byte frame. arg 1 (N-04,
	 * MRG_RXBUF): one 1536-byte buffer for a 4000-byte frame. Nothing may be published for
	 * the big frame while it does not fit; then room for a small frame is posted (and, for
	 * MRG, enough for the big one too) and what comes must be whole frames. */
	bool mrg = x->arg == 1;
	uint32_t big = mrg ? 4000 : 1514, cap = mrg ? 1536 : 1000, first = mrg ? 1 : 2;
	uint8_t bigf[4000], small[100];
	uint32_t id, len;

	probe_frame(bigf, big, 21);
	probe_frame(small, sizeof(small), 22);
	for (uint32_t i = 0; i < first; i++)
		if (lab_fe_post_rx(&x->s, cap) < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
	if (lab_fe_post_tx(&x->s, bigf, big, LAB_FE_HDR_DATA) < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_RX);
	lab_fe_kick(&x->s, LAB_FE_TX);
	int got = lab_fe_used_within(&x->s, LAB_FE_RX, 300, &id, &len);

	if (got != 0)
		return probe_fail(x, "a %u-byte frame with %u RX buffer(s) of %u: an RX buffer was "
				  "used (length %u) though the frame does not fit %s", big, first,
				  cap, len, mrg ? "them all (partial publish)" :
						  "one (spread or truncated)");
	/* Room now: 3 more buffers (MRG: the big frame fits in 3 with the first), the small. */
	for (uint32_t i = 0; i < 3; i++)
		if (lab_fe_post_rx(&x->s, mrg ? cap : 2048) < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
	if (lab_fe_post_tx(&x->s, small, sizeof(small), LAB_FE_HDR_DATA) < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_RX);
	lab_fe_kick(&x->s, LAB_FE_TX);
	const uint8_t *frames[2] = {bigf, small};
	const uint32_t lens[2] = {big, sizeof(small)};
	bool big_came = false;

	for (;;) {
		int which = -1;
		enum probe_verdict v = take_packet(x, frames, lens, 2, &which);

		if (v != PROBE_PASS)
			return v;
		if (which == 1)
			break;
		if (big_came)
			return probe_fail(x, "the %u-byte frame was received twice", big);
		big_came = true;
	}
	return probe_pass(x, "nothing published while the %u-byte frame did not fit; then %s",
			  big, big_came ? "it came whole, and the next frame after it" :
					  "it was dropped and the next frame came whole");
}

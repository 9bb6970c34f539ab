/* SPDX-License-Identifier: MIT */
/* vhost-user protocol cases of `vhostlab probe` (probe_bodies.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fe_feature_deps.h"
#include "fe_record.h"
#include "fe_traffic.h"
#include "probe_bodies.h"

#define F(bit) VL_FEATURE(bit)

enum probe_verdict probe_version_1(struct probe_ctx *x)
{
	uint64_t f;
	enum lab_fe_rc rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &f);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (!(f & F(VL_F_VERSION_1)))
		return probe_fail(x, "GET_FEATURES offered 0x%" PRIx64 " without VERSION_1", f);
	return probe_pass(x, "offered 0x%" PRIx64, f);
}

enum probe_verdict probe_feature_deps(struct probe_ctx *x)
{
	uint64_t f;
	enum lab_fe_rc rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &f);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	const char *broken = lab_fe_feature_deps_broken(f);

	lab_fe_rec_feature_deps(&x->s, !broken);
	if (broken)
		return probe_fail(x, "offered 0x%" PRIx64 ": %s", f, broken);
	return probe_pass(x, "offered 0x%" PRIx64 ": no bit without its prerequisites", f);
}

enum probe_verdict probe_protocol_first(struct probe_ctx *x)
{
	uint64_t p;
	enum lab_fe_rc rc = lab_fe_get_u64(&x->s, LAB_FE_GET_PROTOCOL_FEATURES, &p);

	return rc != LAB_FE_OK ? probe_from_rc(x, rc) :
				 probe_pass(x, "protocol features 0x%" PRIx64, p);
}

/* GET_FEATURES and GET_PROTOCOL_FEATURES; *offered says whether REPLY_ACK is offered. */
static enum lab_fe_rc offers_reply_ack(struct probe_ctx *x, bool *offered)
{
	uint64_t p = 0;
	enum lab_fe_rc rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &x->s.offered);

	if (rc == LAB_FE_OK && (x->s.offered & F(LAB_FE_F_PROTOCOL_FEATURES)))
		rc = lab_fe_get_u64(&x->s, LAB_FE_GET_PROTOCOL_FEATURES, &p);
	*offered = p & F(LAB_FE_PROTOCOL_F_REPLY_ACK);
	return rc;
}

enum probe_verdict probe_reply_ack(struct probe_ctx *x)
{
	enum lab_fe_rc rc = lab_fe_negotiate(&x->s, x->mask);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (!x->s.reply_ack) {
		snprintf(x->detail, sizeof(x->detail), "REPLY_ACK (protocol bit 3) not offered");
		return PROBE_NA;
	}
	/* SET_PROTOCOL_FEATURES, SET_OWNER and SET_FEATURES were acked by now; a GET with
	 * NEED_REPLY keeps its own reply and gets no second one. */
	rc = lab_fe_send(&x->s.c, LAB_FE_GET_FEATURES, LAB_FE_F_VERSION | LAB_FE_F_NEED_REPLY,
			 NULL, 0, NULL, 0);
	uint64_t f;

	if (rc == LAB_FE_OK)
		rc = lab_fe_reply(&x->s.c, LAB_FE_GET_FEATURES, &f, 8);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (lab_fe_readable(&x->s.c, 100)) {
		struct lab_fe_msg m;

		rc = lab_fe_recv(&x->s.c, &m);
		return probe_fail(x, "GET_FEATURES with NEED_REPLY got a second message "
				  "(%s: request %u, flags 0x%x, size %u)", lab_fe_rc_name(rc),
				  m.request, m.flags, m.size);
	}
	return probe_pass(x, "3 SET requests acked with 0; GET_FEATURES with NEED_REPLY got "
			  "one reply");
}

enum probe_verdict probe_unoffered_feature(struct probe_ctx *x)
{
	bool offered;
	enum lab_fe_rc rc = offers_reply_ack(x, &offered);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (!offered) {
		snprintf(x->detail, sizeof(x->detail), "REPLY_ACK not offered: a refusal is not "
			 "observable");
		return PROBE_NA;
	}
	uint64_t f = x->s.offered, p = F(LAB_FE_PROTOCOL_F_REPLY_ACK);

	rc = lab_fe_set(&x->s, LAB_FE_SET_PROTOCOL_FEATURES, &p, 8, NULL, 0);
	x->s.reply_ack = true;
	if (rc == LAB_FE_OK)
		rc = lab_fe_set(&x->s, LAB_FE_SET_OWNER, NULL, 0, NULL, 0);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	unsigned bad = 63;

	while (bad > 40 && (f & F(bad)))
		bad--;
	uint64_t ask = (f & LAB_FE_DRIVER_FEATURES & ~F(VL_F_RING_PACKED)) | F(bad);

	rc = lab_fe_set(&x->s, LAB_FE_SET_FEATURES, &ask, 8, NULL, 0);
	if (rc == LAB_FE_NACK)
		return probe_pass(x, "SET_FEATURES 0x%" PRIx64 " (bit %u not offered): %s", ask,
				  bad, x->s.c.what);
	if (rc == LAB_FE_CLOSED)
		return probe_pass(x, "SET_FEATURES 0x%" PRIx64 " (bit %u not offered): the back "
				  "end closed the connection", ask, bad);
	if (rc == LAB_FE_OK)
		return probe_fail(x, "SET_FEATURES 0x%" PRIx64 " with bit %u, never offered, was "
				  "acked with 0", ask, bad);
	return probe_from_rc(x, rc);
}

enum probe_verdict probe_minimal_features(struct probe_ctx *x)
{
	/* VERSION_1 alone (RING_PACKED comes with a packed session): no PROTOCOL_FEATURES, so
	 * the rings run from SET_FEATURES on without SET_VRING_ENABLE. */
	enum lab_fe_rc rc = lab_fe_bring_up(&x->s, F(VL_F_VERSION_1), 64, 0);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (probe_expect_returns(x->expect))
		return probe_echo_one(x, 128, 1, LAB_FE_HDR_DATA);
	uint8_t frame[128];
	uint32_t id, len;

	probe_frame(frame, sizeof(frame), 1);
	if (lab_fe_post_tx(&x->s, frame, sizeof(frame), LAB_FE_HDR_DATA) < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_TX);
	rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &len);
	return rc != LAB_FE_OK ? probe_from_rc(x, rc) :
				 probe_pass(x, "features 0x%" PRIx64 ": TX chain used", x->s.acked);
}

/* Post n TX frames, kick, wait for all n used; with `echoes`, supply and drain RX for them. */
static enum lab_fe_rc send_frames(struct probe_ctx *x, uint32_t n, uint32_t len, bool echoes)
{
	uint8_t frame[2048];

	if (echoes && probe_rx_for_echo(x, n) != LAB_FE_OK)
		return LAB_FE_ERROR;
	for (uint32_t i = 0; i < n; i++) {
		probe_frame(frame, len, i);
		if (lab_fe_post_tx(&x->s, frame, len, LAB_FE_HDR_DATA) < 0)
			return LAB_FE_ERROR;
	}
	lab_fe_kick(&x->s, LAB_FE_TX);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id, ulen;
		enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &ulen);

		if (rc != LAB_FE_OK)
			return rc;
		lab_fe_release(&x->s, LAB_FE_TX, id);
	}
	return echoes ? probe_rx_drain(x, n) : LAB_FE_OK;
}

enum probe_verdict probe_get_vring_base(struct probe_ctx *x)
{
	enum lab_fe_rc rc = send_frames(x, 3, 100, true);
	uint32_t num;

	if (rc == LAB_FE_OK)
		rc = lab_fe_get_vring_base(&x->s, LAB_FE_TX, &num);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	const struct lab_ring *r = &x->s.q[LAB_FE_TX].ring;
	uint32_t want;

	if (r->layout == VL_LAYOUT_PACKED) {
		/* Bits 0-14 avail index, 15 its wrap; 16-30 used index, 31 its wrap. */
		uint32_t avail = r->p.next_avail | (r->p.avail_wrap ? 0x8000u : 0);
		uint32_t used = r->p.next_used | (r->p.used_wrap ? 0x8000u : 0);

		want = avail | used << 16;
	} else {
		want = r->s.avail_idx;
	}
	lab_fe_rec_expect_base(&x->s, want, num == want);
	if (num != want)
		return probe_fail(x, "GET_VRING_BASE returned 0x%x, expected 0x%x (3 chains "
				  "posted and used)", num, want);
	/* The ring is stopped: a chain posted now must not be used. */
	uint8_t frame[100];
	uint32_t id, len;

	probe_frame(frame, sizeof(frame), 9);
	if (lab_fe_post_tx(&x->s, frame, sizeof(frame), LAB_FE_HDR_DATA) < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_TX);
	int got = lab_fe_used_within(&x->s, LAB_FE_TX, 200, &id, &len);

	if (got != 0)
		return probe_fail(x, "a chain posted after GET_VRING_BASE was used (id %u): the "
				  "ring did not stop", id);
	return probe_pass(x, "returned 0x%x; nothing used after it in 200 ms", num);
}

enum probe_verdict probe_vring_enable(struct probe_ctx *x)
{
	uint32_t id, len;
	enum lab_fe_rc rc = lab_fe_enable(&x->s, LAB_FE_RX, false);

	for (int i = 0; i < 4 && rc == LAB_FE_OK; i++)
		if (lab_fe_post_rx(&x->s, 2048) < 0)
			rc = LAB_FE_ERROR;
	if (rc == LAB_FE_OK)
		rc = send_frames(x, 1, 100, false);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	int got = lab_fe_used_within(&x->s, LAB_FE_RX, 200, &id, &len);

	if (got != 0)
		return probe_fail(x, "RX ring disabled, yet an RX buffer was used (id %u, len %u)",
				  id, len);
	rc = lab_fe_enable(&x->s, LAB_FE_RX, true);
	if (rc == LAB_FE_OK)
		rc = send_frames(x, 1, 300, false);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	/* Re-enabled, the ring receives again. The frame sent while it was disabled may come
	 * first (a back end may hold it) or never (it may drop it): the spec leaves that open.
	 * The one sent after must arrive, whole: 312 bytes with the header. */
	uint32_t held = 0;

	for (;;) {
		rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &id, &len);
		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
		lab_fe_release(&x->s, LAB_FE_RX, id);
		if (len == LAB_FE_NET_HDR + 300)
			break;
		if (len != LAB_FE_NET_HDR + 100 || held++)
			return probe_fail(x, "after re-enable: RX used length %u, expected 312 (or "
					  "112 once, the frame sent while disabled)", len);
	}
	return probe_pass(x, "nothing received in 200 ms while disabled; after re-enable the "
			  "next frame arrived%s", held ? " (the one sent while disabled before it)" :
			  "");
}

/* SPDX-License-Identifier: MIT */
/* Conformance cases on vhost-user requests around traffic (probe_bodies.h): a request the
 * back end does not know, a new memory table while frames are in flight, and a ring stopped
 * by GET_VRING_BASE and resumed by SET_VRING_BASE. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fe_traffic.h"
#include "probe_bodies.h"

/* A request number no version of vhost-user.rst assigns (the front-end list ends in the
 * 40s); with NEED_REPLY the back end owes an answer. */
#define UNKNOWN_REQUEST 99u

enum probe_verdict probe_unknown_request(struct probe_ctx *x)
{
	enum lab_fe_rc rc = lab_fe_negotiate(&x->s, x->mask);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (!x->s.reply_ack) {
		snprintf(x->detail, sizeof(x->detail), "REPLY_ACK (protocol bit 3) not offered: "
			 "an error reply is not due");
		return PROBE_NA;
	}
	uint64_t ack;

	rc = lab_fe_send(&x->s.c, UNKNOWN_REQUEST, LAB_FE_F_VERSION | LAB_FE_F_NEED_REPLY, NULL,
			 0, NULL, 0);
	if (rc == LAB_FE_OK)
		rc = lab_fe_reply(&x->s.c, UNKNOWN_REQUEST, &ack, sizeof(ack));
	if (rc == LAB_FE_CLOSED)
		return probe_fail(x, "request %u with NEED_REPLY: the back end closed the "
				  "connection instead of answering with an error", UNKNOWN_REQUEST);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (ack == 0)
		return probe_fail(x, "request %u, which no version of the protocol defines, was "
				  "acked with 0 (success)", UNKNOWN_REQUEST);
	uint64_t f;

	rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &f);
	return rc != LAB_FE_OK ? probe_from_rc(x, rc) :
	       probe_pass(x, "request %u answered with status %" PRIu64 "; GET_FEATURES after it "
			  "answered", UNKNOWN_REQUEST, ack);
}

enum probe_verdict probe_mem_table_live(struct probe_ctx *x)
{
	/* VU "Memory access" and hostile-inputs.md (ordering): a front end re-sends the table
	 * while traffic runs (QEMU does when guest memory grows). The same RAM comes again as a
	 * fresh table while 8 frames are in flight: none may be lost or corrupted. */
	enum { N = 8 };
	uint8_t frames[N][600];
	uint32_t id, len;

	for (uint32_t i = 0; i < N; i++) {
		probe_frame(frames[i], 300 + 30 * i, 60 + i);
		if (lab_fe_post_rx(&x->s, 2048) < 0 ||
		    lab_fe_post_tx(&x->s, frames[i], 300 + 30 * i, LAB_FE_HDR_DATA) < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
	}
	lab_fe_kick(&x->s, LAB_FE_RX);
	lab_fe_kick(&x->s, LAB_FE_TX);
	enum lab_fe_rc rc = lab_fe_set_mem_table(&x->s);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	for (uint32_t i = 0; i < N; i++) {
		rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &len);
		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
		lab_fe_release(&x->s, LAB_FE_TX, id);
	}
	for (uint32_t i = 0; i < N; i++) {
		rc = lab_fe_wait_used(&x->s, LAB_FE_RX, &id, &len);
		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
		enum probe_verdict v = probe_check_rx(x, frames[i], 300 + 30 * i, &id, &len, 1);

		lab_fe_release(&x->s, LAB_FE_RX, id);
		if (v != PROBE_PASS)
			return probe_fail(x, "frame %u of 8, in flight across SET_MEM_TABLE: %.400s",
					  i, x->detail);
	}
	enum probe_verdict v = probe_echo_one(x, 500, 70, LAB_FE_FOUR);

	return v != PROBE_PASS ? v :
	       probe_pass(x, "8 frames in flight across a new SET_MEM_TABLE, all echoed whole and "
			  "in order; one more after it");
}

enum probe_verdict probe_vring_base_resume(struct probe_ctx *x)
{
	/* VU SET_VRING_BASE (S-15): a ring stopped by GET_VRING_BASE and set up again with the
	 * value it returned resumes where it was: the next frame goes through once, nothing
	 * already sent is sent again. */
	uint32_t base, id, len;

	for (uint32_t i = 0; i < 3; i++) {
		enum probe_verdict v = probe_echo_one(x, 100 + i, 80 + i, LAB_FE_HDR_DATA);

		if (v != PROBE_PASS)
			return v;
	}
	/* Room for a frame sent twice, had the back end rewound, before the ring is stopped: a
	 * back end may re-send the moment the ring is set up again, and one with nowhere to put
	 * the copy drops it unseen. A conforming one fills it with the next frame's echo. */
	if (lab_fe_post_rx(&x->s, 2048) < 0)
		return probe_from_rc(x, LAB_FE_ERROR);
	lab_fe_kick(&x->s, LAB_FE_RX);
	enum lab_fe_rc rc = lab_fe_get_vring_base(&x->s, LAB_FE_TX, &base);

	if (rc == LAB_FE_OK)
		rc = lab_fe_queue_resume(&x->s, LAB_FE_TX, base);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	enum probe_verdict v = probe_echo_one(x, 400, 90, LAB_FE_HDR_DATA);

	if (v == PROBE_FAIL) {
		char seen[sizeof(x->detail)];

		memcpy(seen, x->detail, sizeof(seen));
		return probe_fail(x, "the first echo after resuming at base 0x%x is not the frame "
				  "sent (a chain from before the stop sent again?): %.380s", base, seen);
	}
	if (v != PROBE_PASS)
		return v;
	if (lab_fe_used_within(&x->s, LAB_FE_RX, 200, &id, &len) != 0)
		return probe_fail(x, "after resuming at base 0x%x an extra RX packet of %u bytes "
				  "came: a frame sent again", base, len);
	if (lab_fe_used_within(&x->s, LAB_FE_TX, 50, &id, &len) != 0)
		return probe_fail(x, "after resuming at base 0x%x a TX entry nobody posted came "
				  "back (id %u)", base, id);
	return probe_pass(x, "stopped at base 0x%x, resumed there: the next frame echoed once, "
			  "nothing re-sent", base);
}

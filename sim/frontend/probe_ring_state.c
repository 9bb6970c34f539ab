/* SPDX-License-Identifier: MIT */
/* Conformance cases on what the device writes into the rings and when it notifies
 * (probe_bodies.h): notification suppression, used.flags, used packed slots left alone, and
 * packed slots the driver did not make available left unconsumed. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fe_record.h"
#include "fe_traffic.h"
#include "probe_bodies.h"

/* One TX frame through: post (with its echo's RX room), kick, wait used, give back. */
static enum lab_fe_rc one_frame(struct probe_ctx *x, uint32_t flen, uint32_t seq)
{
	uint8_t frame[1514];
	uint32_t id, len;

	probe_frame(frame, flen, seq);
	if (probe_rx_for_echo(x, 1) != LAB_FE_OK ||
	    lab_fe_post_tx(&x->s, frame, flen, LAB_FE_HDR_DATA) < 0)
		return LAB_FE_ERROR;
	lab_fe_kick(&x->s, LAB_FE_TX);
	enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &len);

	if (rc != LAB_FE_OK)
		return rc;
	lab_fe_release(&x->s, LAB_FE_TX, id);
	return probe_rx_drain(x, 1);
}

enum probe_verdict probe_no_calls(struct probe_ctx *x)
{
	/* Without EVENT_IDX (the case negotiates it away): split avail.flags NO_INTERRUPT
	 * (2.7.7.2, SHOULD NOT notify), packed driver event flags DISABLE (2.8.10). The RX
	 * queue's calls are its own; only TX's are counted. */
	struct lab_ring *r = &x->s.q[LAB_FE_TX].ring;
	uint64_t before = lab_fe_take_calls(&x->s, LAB_FE_TX);

	lab_ring_arm_calls(r, LAB_CALLS_OFF, 0);
	for (uint32_t i = 0; i < 8; i++) {
		enum lab_fe_rc rc = one_frame(x, 100 + i, i);

		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
	}
	uint32_t id, len;

	lab_fe_used_within(&x->s, LAB_FE_RX, 100, &id, &len);
	uint64_t off = lab_fe_take_calls(&x->s, LAB_FE_TX) - before;

	if (off != 0)
		return probe_fail(x, "notifications off (%s), 8 TX chains used: %" PRIu64 " calls",
				  r->layout == VL_LAYOUT_SPLIT ? "avail.flags NO_INTERRUPT" :
								 "driver event DISABLE", off);
	/* Calls asked for again: one must come, or the case proved nothing about the fd. */
	lab_ring_arm_calls(r, LAB_CALLS_NEXT, 0);
	enum lab_fe_rc rc = one_frame(x, 100, 9);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	for (int w = 0; w < x->s.c.timeout_ms / 5 && lab_fe_take_calls(&x->s, LAB_FE_TX) == before;
	     w++)
		lab_fe_used_within(&x->s, LAB_FE_RX, 5, &id, &len);
	if (lab_fe_take_calls(&x->s, LAB_FE_TX) == before)
		return probe_fail(x, "no call with notifications off (right), but none either "
				  "once they were enabled again");
	return probe_pass(x, "8 chains used with notifications off: no call; enabled again: "
			  "a call");
}

enum probe_verdict probe_used_flags(struct probe_ctx *x)
{
	/* 2.7.10.2 (S-12): with EVENT_IDX used.flags must be 0; without it, 0 or
	 * NO_NOTIFY (1). Read after every chain of 20 and once more after a pause. */
	const struct lab_ring *r = &x->s.q[LAB_FE_TX].ring;
	bool event_idx = x->s.acked & VL_FEATURE(VL_F_RING_EVENT_IDX);
	uint16_t allowed = event_idx ? 0 : VL_USED_F_NO_NOTIFY;

	for (uint32_t i = 0; i <= 20; i++) {
		uint16_t f = __atomic_load_n(&r->s.used->flags, __ATOMIC_ACQUIRE);

		if (f & ~allowed)
			return probe_fail(x, "used.flags 0x%04x after %u chains (%s: %s)", f, i,
					  event_idx ? "EVENT_IDX" : "no EVENT_IDX",
					  event_idx ? "must be 0" : "0 or 1");
		if (i == 20)
			break;
		enum lab_fe_rc rc = one_frame(x, 64 + 10 * i, i);

		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
	}
	return probe_pass(x, "used.flags within %s over 20 chains", event_idx ? "{0}" : "{0, 1}");
}

enum probe_verdict probe_used_slot_stable(struct probe_ctx *x)
{
	/* 2.8.15 (P-03): a descriptor is not changed after its USED bit was set. With nothing
	 * available on TX, the device has no reason to write any TX slot: 300 ms of silence. */
	const struct lab_pring *p = &x->s.q[LAB_FE_TX].ring.p;
	uint8_t before[LAB_FE_MAX_QUEUE_SIZE * 16];
	size_t n = (size_t)p->size * 16;

	for (uint32_t i = 0; i < 6; i++) {
		enum lab_fe_rc rc = one_frame(x, 200 + i, i);

		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
	}
	memcpy(before, p->desc, n);
	uint32_t id, len;

	lab_fe_kick(&x->s, LAB_FE_TX);
	lab_fe_used_within(&x->s, LAB_FE_RX, 300, &id, &len);
	for (size_t at = 0; at < n; at += 16)
		if (memcmp(before + at, (const uint8_t *)p->desc + at, 16))
			return probe_fail(x, "TX slot %zu changed after it was used and nothing was "
					  "available", at / 16);
	return probe_pass(x, "6 chains used; the %u TX slots unchanged for 300 ms after",
			  p->size);
}

enum probe_verdict probe_stale_slot(struct probe_ctx *x)
{
	/* 2.8.15 (P-02): the device uses a descriptor only once its AVAIL bit says it was made
	 * available on this lap. The next slot gets a good TX buffer under three sets of flags
	 * that do not: last lap's available marking, last lap's used marking, and used marking
	 * for this lap. None may be consumed; then the slot is posted for real and must be. */
	struct lab_pring *p = &x->s.q[LAB_FE_TX].ring.p;
	uint8_t whole[LAB_FE_NET_HDR + 200] = {0};

	/* A chain through first: the case meets the ring mid-lap, its wrap counter set. */
	if (one_frame(x, 100, 1) != LAB_FE_OK)
		return probe_from_rc(x, LAB_FE_ERROR);
	const bool w = p->avail_wrap;
	const uint16_t A = VL_PDESC_F_AVAIL, U = VL_PDESC_F_USED;
	const struct {
		uint16_t flags;
		const char *what;
	} lies[] = {
		{w ? U : A, "available on the last lap (AVAIL != wrap)"},
		{w ? 0 : (uint16_t)(A | U), "used on the last lap (AVAIL = USED = !wrap)"},
		{w ? (uint16_t)(A | U) : 0, "used-looking (AVAIL = USED = wrap)"},
	};

	probe_frame(whole + LAB_FE_NET_HDR, 200, 5);
	uint64_t gpa = lab_gmem_alloc(x->s.g, sizeof(whole), 16);

	if (!gpa)
		return probe_from_rc(x, LAB_FE_ERROR);
	memcpy(lab_gmem_guest_ptr(x->s.g, gpa, sizeof(whole)), whole, sizeof(whole));
	lab_fe_rec_unrecordable(&x->s, "the case writes packed descriptors raw, past the "
				"driver's books the recorder follows");
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		uint16_t pos = p->next_avail, flags;
		uint32_t id, len;

		lab_pring_write_raw(p, pos, gpa, sizeof(whole), 0, lies[i].flags);
		lab_fe_kick(&x->s, LAB_FE_TX);
		int got = lab_fe_used_within(&x->s, LAB_FE_TX, 150, &id, &len);

		memcpy(&flags, (const uint8_t *)p->desc + 16u * pos + 14, 2);
		if (got != 0 || flags != lies[i].flags)
			return probe_fail(x, "slot %u with flags 0x%04x, %s, was consumed (%s; slot "
					  "flags now 0x%04x)", pos, lies[i].flags, lies[i].what,
					  got ? "a used entry came" : "its flags were rewritten",
					  flags);
	}
	lab_gmem_free(x->s.g, gpa, sizeof(whole));
	enum lab_fe_rc rc = one_frame(x, 120, 2);

	return rc != LAB_FE_OK ? probe_from_rc(x, rc) :
	       probe_pass(x, "the next slot left unconsumed under 3 stale/used flag sets; posted "
			  "properly it was used");
}

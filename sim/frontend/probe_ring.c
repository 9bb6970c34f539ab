/* SPDX-License-Identifier: MIT */
/* Virtqueue and virtio-net cases of `vhostlab probe` (probe_bodies.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fe_traffic.h"
#include "probe_bodies.h"

/* Post one TX frame, kick, wait for it used; *len is the used length. */
static enum lab_fe_rc tx_one(struct probe_ctx *x, uint32_t flen, enum lab_fe_shape shape,
			     uint32_t *id, uint32_t *len)
{
	uint8_t frame[2048];
	enum lab_fe_rc rc = probe_rx_for_echo(x, 1);

	probe_frame(frame, flen, flen);
	if (rc != LAB_FE_OK || lab_fe_post_tx(&x->s, frame, flen, shape) < 0)
		return LAB_FE_ERROR;
	lab_fe_kick(&x->s, LAB_FE_TX);
	rc = lab_fe_wait_used(&x->s, LAB_FE_TX, id, len);
	if (rc == LAB_FE_OK) {
		lab_fe_release(&x->s, LAB_FE_TX, *id);
		rc = probe_rx_drain(x, 1);
	}
	return rc;
}

enum probe_verdict probe_tx_used_len(struct probe_ctx *x)
{
	uint32_t id, len;
	enum lab_fe_rc rc = tx_one(x, 200, LAB_FE_HDR_DATA, &id, &len);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (len != 0)
		return probe_fail(x, "TX chain of 212 readable bytes came back with used length %u "
				  "(the device wrote nothing: 0)", len);
	return probe_pass(x, "used length 0");
}

enum probe_verdict probe_rx_used_len(struct probe_ctx *x)
{
	return probe_echo_one(x, 100, 3, LAB_FE_ONE);
}

enum probe_verdict probe_in_order(struct probe_ctx *x)
{
	enum { N = 8 };
	uint8_t frame[2048];
	int posted[N];

	if (probe_rx_for_echo(x, N) != LAB_FE_OK)
		return probe_from_rc(x, LAB_FE_ERROR);
	for (int i = 0; i < N; i++) {
		probe_frame(frame, 60 + 150 * (uint32_t)i, (uint32_t)i);
		posted[i] = lab_fe_post_tx(&x->s, frame, 60 + 150 * (uint32_t)i,
					   i % 2 ? LAB_FE_HDR_DATA : LAB_FE_FOUR);
		if (posted[i] < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
	}
	lab_fe_kick(&x->s, LAB_FE_TX);
	/* In order (2.7.9 / 2.8.20): each used id is the next posted, or a later one standing
	 * for a batch that ends there (split; the packed driver expands batches itself). */
	int next = 0;

	while (next < N) {
		uint32_t id, len;
		enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &len);

		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
		int at = next;

		while (at < N && (uint32_t)posted[at] != id)
			at++;
		if (at == N)
			return probe_fail(x, "used id %u out of order: next in posting order was "
					  "%d", id, posted[next]);
		if (x->s.layout == VL_LAYOUT_PACKED && at != next)
			return probe_fail(x, "used id %u, but %d was posted before it", id,
					  posted[next]);
		next = at + 1;
	}
	enum lab_fe_rc rc = probe_rx_drain(x, N);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	return probe_pass(x, "8 chains of 3 shapes and 8 lengths used in posting order");
}

enum probe_verdict probe_calls(struct probe_ctx *x)
{
	struct lab_ring *r = &x->s.q[LAB_FE_TX].ring;
	uint32_t due = 0;

	for (uint32_t i = 0; i < 6; i++) {
		uint8_t frame[100];
		uint32_t id, len;

		probe_frame(frame, sizeof(frame), i);
		lab_ring_call_due(r);
		uint64_t before = lab_fe_take_calls(&x->s, LAB_FE_TX);

		/* Armed before the chain is made available, as a driver must: a back end that
		 * polls the ring (DPDK, OVS) may use the chain the moment it is published, and
		 * judges the call against the event fields it sees then. */
		lab_ring_arm_calls(r, LAB_CALLS_NEXT, 0);
		if (probe_rx_for_echo(x, 1) != LAB_FE_OK ||
		    lab_fe_post_tx(&x->s, frame, sizeof(frame), LAB_FE_HDR_DATA) < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
		lab_fe_kick(&x->s, LAB_FE_TX);
		enum lab_fe_rc rc = lab_fe_wait_used(&x->s, LAB_FE_TX, &id, &len);

		if (rc == LAB_FE_OK) {
			lab_fe_release(&x->s, LAB_FE_TX, id);
			rc = probe_rx_drain(x, 1);
		}
		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
		if (!lab_ring_call_due(r))
			continue;
		due++;
		/* The call follows the used write: give it the timeout to arrive. */
		for (int w = 0; w < x->s.c.timeout_ms / 5 &&
				lab_fe_take_calls(&x->s, LAB_FE_TX) == before; w++)
			lab_fe_used_within(&x->s, LAB_FE_RX, 5, &id, &len);
		if (lab_fe_take_calls(&x->s, LAB_FE_TX) == before) {
			char ring[200];

			lab_fe_describe_ring(&x->s, LAB_FE_TX, ring, sizeof(ring));
			return probe_fail(x, "chain %u used with notifications asked for, no call "
					  "within %d ms (%s)", i, x->s.c.timeout_ms, ring);
		}
	}
	if (due == 0)
		return probe_fail(x, "the driver's own reckoning found no call due in 6 chains: "
				  "the case checked nothing");
	return probe_pass(x, "%u calls due, %u arrived (%" PRIu64 " calls in all)", due, due,
			  x->s.q[LAB_FE_TX].calls);
}

enum probe_verdict probe_packed_wrap(struct probe_ctx *x)
{
	/* Size 4 (lab_fe_bring_up in the table's setup is size 4 for this case): 80 chains of
	 * 2 descriptors are 40 laps of the ring, each flipping the wrap counters. */
	for (uint32_t i = 0; i < 80; i++) {
		const struct lab_pring *p = &x->s.q[LAB_FE_TX].ring.p;
		uint16_t slot = p->next_used;
		bool wrap = p->used_wrap;
		uint32_t id, len;
		enum lab_fe_rc rc = tx_one(x, 64 + i, LAB_FE_HDR_DATA, &id, &len);

		if (rc == LAB_FE_TIMEOUT) {
			uint16_t flags = __atomic_load_n(&p->desc[slot].flags, __ATOMIC_ACQUIRE);

			return probe_fail(x, "chain %u: slot %u flags 0x%04x, a used descriptor on "
					  "wrap %d has AVAIL=USED=%d (2.8.1); %s", i, slot, flags,
					  wrap, wrap, x->s.c.what);
		}
		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
	}
	return probe_pass(x, "80 chains, 40 laps of a 4-entry ring, every used descriptor "
			  "marked for its wrap");
}

enum probe_verdict probe_packed_id_slot(struct probe_ctx *x)
{
	/* Four descriptors with junk ids in the first three (ring_write.h): the device must
	 * take the id from the last and write the used descriptor at the first slot, the
	 * next chain's 4 slots on (the lab's packed driver reads exactly there). */
	for (uint32_t i = 0; i < 6; i++) {
		uint32_t id, len;
		enum lab_fe_rc rc = tx_one(x, 300, LAB_FE_FOUR, &id, &len);

		if (rc != LAB_FE_OK)
			return probe_from_rc(x, rc);
	}
	return probe_pass(x, "6 chains of 4 descriptors, each used at its first slot with "
			  "the last descriptor's id");
}

enum probe_verdict probe_spurious_kicks(struct probe_ctx *x)
{
	uint32_t id, len;

	for (int i = 0; i < 1000; i++) {
		lab_fe_kick(&x->s, LAB_FE_TX);
		lab_fe_kick(&x->s, LAB_FE_RX);
	}
	int got = lab_fe_used_within(&x->s, LAB_FE_TX, 100, &id, &len);

	if (got != 0)
		return probe_fail(x, "1000 kicks with nothing posted, then a used entry (id %u)",
				  id);
	enum lab_fe_rc rc = tx_one(x, 100, LAB_FE_HDR_DATA, &id, &len);

	return rc != LAB_FE_OK ? probe_from_rc(x, rc) :
				 probe_pass(x, "1000 kicks on each queue: nothing used; a chain "
					    "after them used");
}

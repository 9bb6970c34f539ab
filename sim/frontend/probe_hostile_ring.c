/* SPDX-License-Identifier: MIT */
/* The hostile suite's datapath cases (probe_bodies.h): one per class of hostile-inputs.md
 * that the lab generates (sim/hostile.h), written into a probed back end's ring by the same
 * generator `vhostlab run` uses. vhostlab's core documents its outcome for each; another back
 * end may drop, ignore or refuse such a chain as it likes, so the verdict is robustness:
 *  - it keeps serving: a good chain posted right after is used (a class that is legal if odd
 *    must be; after an illegal one the back end may instead stop the ring, the spec's
 *    NEEDS_RESET, as long as it still answers messages);
 *  - it returns only what was posted, each chain at most once;
 *  - it writes nothing it was not given to write: a poisoned guard page on each side of
 *    what was posted, the good TX chain's bytes, and all guest RAM but the rings and the
 *    RX buffers (copied once the chains are posted), compared after;
 *  - it neither crashes nor wedges: a fresh connection is served at the end. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_record.h"
#include "fe_traffic.h"
#include "hostile.h"
#include "probe_bodies.h"

#define GUARD 4096u
#define GUARD_BYTE 0xA5u
#define GOOD_LEN 200u
#define GOOD_FILL 0x3Cu

struct watch {
	uint64_t guard[2];
	uint8_t *ram;       /* a copy of guest RAM after posting */
	uint64_t ram_gpa, ram_len;
};

static uint64_t guard_page(struct probe_ctx *x)
{
	uint64_t gpa = lab_gmem_alloc(x->s.g, GUARD, 64);

	if (gpa)
		memset(lab_gmem_guest_ptr(x->s.g, gpa, GUARD), GUARD_BYTE, GUARD);
	return gpa;
}

/* The good neighbour, written here rather than by lab_hostile_post_good so its buffer is
 * known: TX, a zero header and GOOD_LEN bytes of GOOD_FILL, compared after the case (a
 * device that writes into it at once is caught however early it does); RX, room for the
 * header and GOOD_LEN bytes. One descriptor, on the raw ring the generator wrote. */
static int post_good(struct probe_ctx *x, struct lab_ring *r, bool rx, uint64_t *gpa,
		     uint16_t *id)
{
	const uint32_t len = LAB_FE_NET_HDR + GOOD_LEN;
	const uint16_t dir = rx ? VL_DESC_F_WRITE : 0;

	*gpa = lab_gmem_alloc(x->s.g, len, 64);
	if (!*gpa)
		return -1;
	uint8_t *p = lab_gmem_guest_ptr(x->s.g, *gpa, len);

	memset(p, 0, LAB_FE_NET_HDR);
	memset(p + LAB_FE_NET_HDR, rx ? LAB_FE_POISON : GOOD_FILL, GOOD_LEN);
	if (r->layout == VL_LAYOUT_SPLIT) {
		int d = lab_vring_desc_get(&r->s);

		if (d < 0)
			return -1;
		lab_vring_set_desc(&r->s, (uint16_t)d, *gpa, len, dir, 0);
		lab_vring_add_avail(&r->s, (uint16_t)d);
		lab_vring_kick(&r->s);
		*id = (uint16_t)d;
		return 0;
	}
	struct lab_pring *pr = &r->p;

	/* Ids are only echoed back: the position is a unique one (as the generators do). */
	*id = pr->next_avail;
	lab_pring_write_raw(pr, pr->next_avail, *gpa, len, *id,
			    (uint16_t)(dir | lab_pring_avail_flags(pr->avail_wrap)));
	if (++pr->next_avail == pr->size) {
		pr->next_avail = 0;
		pr->avail_wrap = !pr->avail_wrap;
	}
	return 0;
}

/* Is gpa inside a buffer the device was given to write: an RX chain of the lab's driver, or
 * (an RX class) the hostile and good chains' RX buffers in [wlo, whi)? */
static bool writable(struct probe_ctx *x, uint64_t gpa, uint64_t wlo, uint64_t whi)
{
	if (gpa >= wlo && gpa < whi)
		return true;
	for (uint32_t id = 0; id < LAB_FE_MAX_QUEUE_SIZE; id++)
		for (uint32_t k = 0; k < LAB_FE_CHAIN_ALLOCS; k++) {
			const struct lab_fe_alloc *a = &x->s.q[LAB_FE_RX].alloc[id][k];

			if (a->len && gpa >= a->gpa && gpa < a->gpa + a->len)
				return true;
		}
	return false;
}

/* A stray write: the first changed byte outside what the device may write, or 0. */
static uint64_t stray_write(struct probe_ctx *x, const struct watch *w, uint64_t wlo,
			    uint64_t whi)
{
	for (int i = 0; i < 2; i++) {
		const uint8_t *p = lab_gmem_guest_ptr(x->s.g, w->guard[i], GUARD);

		for (uint32_t b = 0; b < GUARD; b++)
			if (p[b] != GUARD_BYTE)
				return w->guard[i] + b;
	}
	const uint8_t *now = lab_gmem_guest_ptr(x->s.g, w->ram_gpa, w->ram_len);

	for (uint64_t b = 0; b < w->ram_len; b++)
		if (now[b] != w->ram[b] && !writable(x, w->ram_gpa + b, wlo, whi))
			return w->ram_gpa + b;
	return 0;
}

/* Used entries on the hostile ring, read raw (the generators bypass the driver's books):
 * every id must be one posted (but see `lied`); *good set when the good chain came back. */
static enum probe_verdict harvest(struct probe_ctx *x, struct lab_ring *r, bool lied,
				  uint16_t hid,
				  uint32_t hdescs, uint16_t gid, int *hseen, bool *good,
				  uint32_t *consumed)
{
	for (;;) {
		uint32_t id, len, ndescs;

		if (r->layout == VL_LAYOUT_SPLIT) {
			uint16_t idx = __atomic_load_n(&r->s.used->idx, __ATOMIC_ACQUIRE);

			if (idx == r->s.last_used)
				return PROBE_PASS;
			const struct vl_split_used_elem *u = &r->s.used->ring[r->s.last_used % r->size];

			id = u->id;
			len = u->len;
			r->s.last_used++;
		} else {
			/* Only slots of chains posted: past them a slot never written (flags 0)
			 * looks used once the wrap counter is 0. */
			if (*consumed >= hdescs + 1)
				return PROBE_PASS;
			const struct vl_packed_desc *d = &r->p.desc[r->p.next_used];
			uint16_t f = __atomic_load_n(&d->flags, __ATOMIC_ACQUIRE);
			bool avail = f & VL_PDESC_F_AVAIL, used = f & VL_PDESC_F_USED;

			if (avail != used || used != r->p.used_wrap)
				return PROBE_PASS;
			id = d->id;
			len = d->len;
		}
		if (id == gid && !*good) {
			*good = true;
			ndescs = 1;
		} else if (id == hid && (*hseen)++ == 0) {
			ndescs = hdescs;
		} else if (!lied) {
			return probe_fail(x, "used entry id %u (length %u): not in flight (the hostile "
					  "chain was id %u, returned %d time(s); the good one id %u)",
					  id, len, hid, *hseen, gid);
		} else {
			ndescs = 1;
		}
		if (r->layout == VL_LAYOUT_PACKED) {
			uint32_t next = r->p.next_used + ndescs;

			*consumed += ndescs;
			while (next >= r->size) {
				next -= r->size;
				r->p.used_wrap = !r->p.used_wrap;
			}
			r->p.next_used = (uint16_t)next;
		}
	}
}

enum probe_verdict probe_hostile_ring(struct probe_ctx *x)
{
	const enum lab_hostile c = (enum lab_hostile)x->arg;
	const bool rx = !lab_hostile_applies(c, x->s.layout, false);
	/* Legal if odd (not an offload class: those are legal only with features the probe does
	 * not negotiate): the back end must serve it, and the good chain, like any other. */
	const bool legal = lab_hostile_expect(c, x->s.layout, rx).kind == LAB_HK_WORKS &&
			   !lab_hostile_is_offload(c);
	const uint32_t q = rx ? LAB_FE_RX : LAB_FE_TX;
	/* AVAIL_JUMP makes the device believe in avail entries the driver never wrote: whatever
	 * heads they hold are, to the device, posted, so returning them is no fault. */
	const bool lied = c == LAB_HOSTILE_AVAIL_JUMP;
	struct lab_ring *r = &x->s.q[q].ring;
	struct lab_hostile_env env = {x->s.layout, rx, LAB_FE_NET_HDR, x->s.g, &r->s, &r->p};
	struct watch w = {{guard_page(x), 0}, NULL, lab_gmem_ram_gpa(x->s.g),
			  lab_gmem_ram_size(x->s.g)};
	uint16_t hid, gid;
	uint8_t small[GOOD_LEN];

	if (!w.guard[0] || (probe_expect_returns(x->expect) && !rx && probe_rx_for_echo(x, 2)))
		return probe_from_rc(x, LAB_FE_ERROR);
	uint64_t wlo = lab_gmem_ram_gpa(x->s.g) + lab_gmem_ram_size(x->s.g), whi = 0;
	uint16_t pos0 = r->p.next_avail;
	bool wrap0 = r->p.avail_wrap;

	if (x->s.layout == VL_LAYOUT_PACKED)
		lab_fe_rec_unrecordable(&x->s, "the case's generator writes packed descriptors "
					"raw, past the driver's books the recorder follows");
	if (lab_hostile_post(&env, c, &hid) != 0)
		return probe_fail(x, "probe: the %s generator ran out of guest RAM or descriptors",
				  lab_hostile_name(c));
	uint32_t hdescs = (uint32_t)r->p.next_avail + (r->p.avail_wrap != wrap0 ? r->size : 0) -
			  pos0;
	/* The good neighbour: TX a frame of GOOD_LEN bytes of GOOD_FILL; RX room for one, and
	 * (echo) the frame to fill it sent on TX. */
	uint64_t good_gpa;

	if (post_good(x, r, rx, &good_gpa, &gid) != 0)
		return probe_fail(x, "probe: guest RAM full");
	w.guard[1] = guard_page(x);
	if (!w.guard[1])
		return probe_fail(x, "probe: guest RAM full");
	if (rx) {
		/* The RX chains just posted lie between the first guard and the second. */
		wlo = w.guard[0] + GUARD;
		whi = w.guard[1];
		memset(small, GOOD_FILL, sizeof(small));
		if (lab_fe_post_tx(&x->s, small, sizeof(small), LAB_FE_HDR_DATA) < 0)
			return probe_from_rc(x, LAB_FE_ERROR);
	}
	if (!(w.ram = malloc(w.ram_len)))
		return probe_fail(x, "probe: out of memory");
	memcpy(w.ram, lab_gmem_guest_ptr(x->s.g, w.ram_gpa, w.ram_len), w.ram_len);
	lab_fe_kick(&x->s, LAB_FE_RX);
	lab_fe_kick(&x->s, LAB_FE_TX);

	int hseen = 0;
	bool good = false;
	uint32_t consumed = 0;
	enum probe_verdict v = PROBE_PASS;
	int waited = 0;

	while (v == PROBE_PASS && !good && waited < x->s.c.timeout_ms) {
		uint32_t id, len;

		v = harvest(x, r, lied, hid, hdescs, gid, &hseen, &good, &consumed);
		if (!rx)
			lab_fe_used_within(&x->s, LAB_FE_RX, 5, &id, &len);
		else
			lab_fe_used_within(&x->s, LAB_FE_TX, 5, &id, &len);
		waited += 5;
	}
	/* A little longer, for a late second return of either chain. */
	for (int i = 0; i < 10 && v == PROBE_PASS; i++) {
		uint32_t id, len;

		lab_fe_used_within(&x->s, LAB_FE_TX + LAB_FE_RX - q, 5, &id, &len);
		v = harvest(x, r, lied, hid, hdescs, gid, &hseen, &good, &consumed);
	}
	uint64_t stray = v == PROBE_PASS ? stray_write(x, &w, wlo, whi) : 0;

	if (v == PROBE_PASS && !stray && !rx) {
		const uint8_t *p = lab_gmem_guest_ptr(x->s.g, good_gpa, LAB_FE_NET_HDR + GOOD_LEN);

		for (uint32_t b = 0; b < LAB_FE_NET_HDR + GOOD_LEN && !stray; b++)
			if (p[b] != (b < LAB_FE_NET_HDR ? 0 : GOOD_FILL))
				stray = good_gpa + b;
	}

	free(w.ram);
	if (stray)
		return probe_fail(x, "%s: the device wrote guest byte 0x%" PRIx64 ", outside every "
				  "buffer it was given to write", lab_hostile_name(c), stray);
	if (v != PROBE_PASS)
		return v;
	if (!good && legal)
		return probe_fail(x, "%s is legal, yet the good chain after it was not used within "
				  "%d ms (hostile chain returned %d time(s))", lab_hostile_name(c),
				  x->s.c.timeout_ms, hseen);
	uint64_t f;
	enum lab_fe_rc rc = good ? LAB_FE_OK : lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &f);

	if (rc != LAB_FE_OK && rc != LAB_FE_CLOSED)
		return probe_from_rc(x, rc);
	char seen[200];

	snprintf(seen, sizeof(seen), "%s: hostile chain returned %d time(s); %s", lab_hostile_name(c),
		 hseen, good ? "the good chain after it used" :
		 rc == LAB_FE_CLOSED ? "the back end closed the connection" :
				       "the ring stopped (declared broken), messages still answered");
	rc = x->fresh(x);
	if (rc != LAB_FE_OK) {
		enum probe_verdict fv = probe_from_rc(x, rc);
		char why[sizeof(x->detail)];

		memcpy(why, x->detail, sizeof(why));
		snprintf(x->detail, sizeof(x->detail), "%s; then a fresh connection: %.250s", seen,
			 why);
		return fv;
	}
	return probe_pass(x, "%s; nothing written outside the buffers; a fresh connection served",
			  seen);
}

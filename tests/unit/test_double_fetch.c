/* SPDX-License-Identifier: MIT */
/* Double fetch / TOCTOU: the core's loads of guest-owned ring fields go through the hooked
 * helpers of core/ring/guest_load.h (this test, like every lab program, links the lab build of
 * the core, VL_LAB_BUILD, whatever the build type), and sim/double_fetch.c watches them.
 *
 *  - The detector itself: same bytes twice in one unit is a violation, in two units it is
 *    not; a chain re-reading its burst's window bytes is; flips are put back at unit end
 *    unless the core wrote there since.
 *  - A deliberately buggy fetch (test-only code reading a core field twice through the same
 *    helpers) IS detected, and under ADVERSARIAL its second read sees another value.
 *  - DETECT over seeded traffic of every chain shape, both layouts, both directions: direct,
 *    header alone, header over 3 descriptors, many descriptors with zero-length ones,
 *    indirect tables (straddling 4 KiB regions, copied out), buffers straddling regions,
 *    mergeable RX over several buffers, in-order, zero-copy, event idx notifications:
 *    zero violations, no load outside a unit, balanced units.
 *  - ADVERSARIAL (every byte the core reads is changed right after it is read, put back when
 *    the unit ends): the same traffic gives the same outcomes byte for byte (packets, used
 *    entries, statistics) as without hooks, and every used id is one the driver posted.
 *  - ADVERSARIAL_PERSIST (the changes stay: a guest scribbling over its rings): no crash, no
 *    out-of-bounds access (ASan, guard pages), no hang, used ids in range.
 *  - The full scenario (sim/scenario.c, every oracle) under DETECT and ADVERSARIAL. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_fetch.h"
#include "net/net_queue.h" /* struct vl_vq around the ring queue it drives */
#include "ring/packed.h"
#include "ring/split.h"
#include "ring_fixture.h"
#include "scenario.h"

#ifndef VL_LAB_BUILD
#error "test_double_fetch needs the lab build of the core (VL_LAB_BUILD)"
#endif

#define F_INDIRECT VL_FEATURE(VL_F_RING_INDIRECT_DESC)
#define F_V1 VL_FEATURE(VL_F_VERSION_1)
#define F_MRG VL_FEATURE(VL_F_NET_MRG_RXBUF)
#define F_EVENT VL_FEATURE(VL_F_RING_EVENT_IDX)
#define F_IN_ORDER VL_FEATURE(VL_F_IN_ORDER)

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	uint64_t x = rnd_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rnd_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static void expect_clean(const char *what)
{
	struct lab_df_stats st;
	char msg[512];

	lab_df_get_stats(&st);
	if (lab_df_last_violation(msg, sizeof(msg)))
		fail_msg("%s: %llu double fetch(es); last: %s", what,
			 (unsigned long long)st.violations, msg);
	assert_int_equal(st.violations, 0);
	if (st.unscoped != 0)
		fail_msg("%s: %llu guest loads outside any unit", what,
			 (unsigned long long)st.unscoped);
	if (st.unbalanced != 0)
		fail_msg("%s: %llu unbalanced unit brackets", what,
			 (unsigned long long)st.unbalanced);
	/* The hooks really ran. */
	assert_true(st.loads > 0);
	assert_true(st.chains > 0);
	assert_true(st.bursts > 0);
}

/* ---- the detector on its own ------------------------------------------------------------ */

static void test_detector_basics(void **state)
{
	uint8_t buf[64];
	struct lab_df_stats st;
	char msg[512];

	(void)state;
	memset(buf, 0x11, sizeof(buf));
	lab_df_set_mode(LAB_DF_DETECT);
	lab_df_reset();
	assert_false(lab_df_last_violation(msg, sizeof(msg)));
	assert_string_equal(msg, "");

	/* Disjoint reads in one chain: fine. The same bytes in the next chain: fine. */
	vl_lab_chain_begin();
	vl_lab_guest_load(buf, 8);
	vl_lab_guest_load(buf + 8, 4);
	vl_lab_chain_end();
	vl_lab_chain_begin();
	vl_lab_guest_load(buf, 16);
	vl_lab_chain_end();
	assert_int_equal(lab_df_violations(), 0);

	/* A partial overlap inside one chain is a double fetch. */
	vl_lab_chain_begin();
	vl_lab_guest_load(buf, 16);
	vl_lab_guest_load(buf + 14, 2);
	vl_lab_chain_end();
	assert_int_equal(lab_df_violations(), 1);
	assert_true(lab_df_last_violation(msg, sizeof(msg)));
	char where[32];

	snprintf(where, sizeof(where), "%p", (void *)(buf + 14));
	assert_non_null(strstr(msg, where));
	assert_non_null(strstr(msg, "chain"));

	/* Window reads of a burst, then a chain of that burst reading them again: detected;
	 * a chain reading other bytes twice in two chains of one burst: not. */
	vl_lab_burst_begin();
	vl_lab_guest_load(buf + 32, 2);
	vl_lab_chain_begin();
	vl_lab_guest_load(buf + 40, 16);
	vl_lab_chain_end();
	vl_lab_chain_begin();
	vl_lab_guest_load(buf + 40, 16);
	vl_lab_chain_end();
	assert_int_equal(lab_df_violations(), 1);
	vl_lab_chain_begin();
	vl_lab_guest_load(buf + 33, 1);
	vl_lab_chain_end();
	assert_int_equal(lab_df_violations(), 2);
	/* The window reads twice in one burst. */
	vl_lab_guest_load(buf + 32, 2);
	assert_int_equal(lab_df_violations(), 3);
	assert_true(lab_df_last_violation(msg, sizeof(msg)));
	assert_non_null(strstr(msg, "burst-window"));
	vl_lab_burst_end();

	/* Outside every unit: counted, not checked. Unbalanced brackets: counted. */
	vl_lab_guest_load(buf, 4);
	vl_lab_guest_load(buf, 4);
	vl_lab_chain_end();
	vl_lab_burst_begin();
	vl_lab_chain_begin();
	vl_lab_burst_end();
	lab_df_get_stats(&st);
	assert_int_equal(st.violations, 3);
	assert_int_equal(st.unscoped, 2);
	assert_int_equal(st.unbalanced, 2);

	/* OFF: nothing is seen. */
	lab_df_reset();
	lab_df_set_mode(LAB_DF_OFF);
	vl_lab_chain_begin();
	vl_lab_guest_load(buf, 4);
	vl_lab_guest_load(buf, 4);
	vl_lab_chain_end();
	lab_df_get_stats(&st);
	assert_int_equal(st.loads, 0);
	assert_int_equal(st.violations, 0);
	assert_string_equal(lab_df_mode_name(LAB_DF_ADVERSARIAL), "adversarial");
}

static void test_detector_adversarial(void **state)
{
	uint8_t buf[64], copy[64];
	struct lab_df_stats st;

	(void)state;
	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	memcpy(copy, buf, sizeof(buf));
	lab_df_set_mode(LAB_DF_ADVERSARIAL);
	lab_df_reset();
	lab_df_set_seed(99);

	/* Every byte read changes at once and comes back when the chain ends. */
	vl_lab_burst_begin();
	vl_lab_guest_load(buf, 2);
	vl_lab_chain_begin();
	vl_lab_guest_load(buf + 8, 16);
	for (unsigned i = 8; i < 24; i++)
		assert_int_not_equal(buf[i], copy[i]);
	assert_int_not_equal(buf[0], copy[0]);
	assert_int_not_equal(buf[1], copy[1]);
	vl_lab_chain_end();
	assert_memory_equal(buf + 2, copy + 2, sizeof(buf) - 2);
	assert_int_not_equal(buf[0], copy[0]); /* the burst's window flip lasts the burst */
	vl_lab_burst_end();
	assert_memory_equal(buf, copy, sizeof(buf));

	/* A byte the core wrote in the meantime is left as written. */
	vl_lab_chain_begin();
	vl_lab_guest_load(buf + 32, 4);
	buf[33] = 0xEE;
	vl_lab_chain_end();
	assert_int_equal(buf[32], copy[32]);
	assert_int_equal(buf[33], 0xEE);
	assert_int_equal(buf[34], copy[34]);
	buf[33] = copy[33];

	/* A double read sees the changed value (and is counted); both flips come back. */
	vl_lab_chain_begin();
	uint8_t first = buf[40];

	vl_lab_guest_load(buf + 40, 1);
	uint8_t second = buf[40];

	vl_lab_guest_load(buf + 40, 1);
	vl_lab_chain_end();
	assert_int_not_equal(first, second);
	assert_memory_equal(buf, copy, sizeof(buf));
	lab_df_get_stats(&st);
	assert_int_equal(st.violations, 1);
	assert_int_equal(st.mutations, 5);
	assert_int_equal(st.restored, 4);
	assert_int_equal(st.kept, 1);

	/* PERSIST: the change stays. */
	lab_df_set_mode(LAB_DF_ADVERSARIAL_PERSIST);
	vl_lab_chain_begin();
	vl_lab_guest_load(buf, 4);
	vl_lab_chain_end();
	assert_memory_not_equal(buf, copy, 4);
	lab_df_reset();
	lab_df_set_mode(LAB_DF_OFF);
}

/* ---- a double fetch injected on purpose --------------------------------------------------
 * What vl_split_fetch would look like with the classic bug: the head is read, validated, then
 * read again and the second value used. Test-only code, built from the core's own helpers. */
static enum vl_drop buggy_split_fetch(struct vl_ring *rq, uint16_t pos, struct vl_chain *c,
				      uint32_t *np, uint32_t *total)
{
	uint16_t slot = (uint16_t)(rq->last_avail_idx + pos) & (uint16_t)(rq->size - 1);
	uint16_t h = vl_guest_load16(&rq->avail->ring[slot]);

	if (h >= rq->size)
		return VL_DROP_HEAD_OUT_OF_RANGE;
	h = vl_guest_load16(&rq->avail->ring[slot]); /* the bug: a second fetch */
	c->id = h;
	c->ndescs = 1;
	if (h >= rq->size)
		return VL_DROP_HEAD_OUT_OF_RANGE; /* (the unsafe original would not check) */
	return vl_split_walk(rq, h, NULL, VL_DIR_DEVICE_READS, np, total);
}

/* The packed variant: re-reading a descriptor's flags in the chain after the scan kept them
 * (the core keeps the scan's copy in rq->pflags precisely to avoid this). */
static uint16_t buggy_packed_reread_flags(struct vl_ring *rq)
{
	return vl_guest_load16(&rq->pdesc[rq->pchains[0].start].flags);
}

static void test_injected_split(void **state)
{
	struct rf f;
	struct vl_chain c;
	uint32_t np = 0, total = 0;
	char msg[512];

	(void)state;
	rf_setup_gran(&f, RF_COARSE);
	struct rf_good g = rf_post_good(&f, &f.tx, 100, 1);

	/* DETECT: caught, at the avail ring slot. */
	lab_df_set_mode(LAB_DF_DETECT);
	lab_df_reset();
	vl_lab_burst_begin();
	vl_split_begin(&f.tx.q->rq);
	assert_int_equal(vl_split_avail(&f.tx.q->rq, 8), 1);
	vl_lab_chain_begin();
	assert_int_equal(buggy_split_fetch(&f.tx.q->rq, 0, &c, &np, &total), VL_DROP_NONE);
	vl_lab_chain_end();
	vl_lab_burst_end();
	assert_int_equal(lab_df_violations(), 1);
	assert_true(lab_df_last_violation(msg, sizeof(msg)));
	char where[32];
	uint16_t slot = (uint16_t)(vl_vq_last_avail(f.tx.q) & (f.cfg.qsize - 1));

	snprintf(where, sizeof(where), "%p", (void *)&f.tx.q->rq.avail->ring[slot]);
	if (!strstr(msg, where))
		fail_msg("violation report '%s' does not name %s", msg, where);
	assert_int_equal(c.id, g.head);

	/* ADVERSARIAL: the second read sees a value the guest never posted. */
	lab_df_set_mode(LAB_DF_ADVERSARIAL);
	lab_df_reset();
	np = total = 0;
	vl_lab_burst_begin();
	vl_split_begin(&f.tx.q->rq);
	vl_lab_chain_begin();
	(void)buggy_split_fetch(&f.tx.q->rq, 0, &c, &np, &total);
	vl_lab_chain_end();
	vl_lab_burst_end();
	assert_int_equal(lab_df_violations(), 1);
	assert_int_not_equal(c.id, g.head);

	/* The real core, same chain (put back intact): clean, and the packet is right. */
	lab_df_set_mode(LAB_DF_DETECT);
	lab_df_reset();
	rf_burst_expect_good(&f, &f.tx, &g);
	rf_expect_used(&f.tx, g.head, 0);
	expect_clean("split dequeue after the injected case");
	lab_df_set_mode(LAB_DF_OFF);
	rf_teardown(&f);
}

static void test_injected_packed(void **state)
{
	struct rf f;
	struct rf_cfg cfg;

	(void)state;
	rf_cfg_init_packed(&cfg, RF_COARSE, 64);
	rf_setup(&f, &cfg);
	struct rf_good g = rf_post_good_n(&f, &f.tx, 300, 2, 3);

	lab_df_set_mode(LAB_DF_DETECT);
	lab_df_reset();
	vl_lab_burst_begin();
	vl_packed_begin(&f.tx.q->rq);
	assert_int_equal(vl_packed_avail(&f.tx.q->rq, 8), 1);
	vl_lab_chain_begin();
	(void)buggy_packed_reread_flags(&f.tx.q->rq);
	vl_lab_chain_end();
	vl_lab_burst_end();
	assert_int_equal(lab_df_violations(), 1);

	lab_df_reset();
	rf_burst_expect_good(&f, &f.tx, &g);
	rf_expect_used(&f.tx, g.head, 0);
	expect_clean("packed dequeue after the injected case");
	lab_df_set_mode(LAB_DF_OFF);
	rf_teardown(&f);
}

/* ---- the double fetch the detector found: looping split chains ----------------------------
 * A walk used to follow a -> b -> a until its hop budget (queue size) ran out, reading a and b
 * again on every lap: a guest could change them between two reads. The walk now stamps each
 * descriptor (and table entry) it visits and stops at the first revisit, before reading it. */
static void test_split_loops_read_once(void **state)
{
	(void)state;
	for (int mode = LAB_DF_DETECT; mode <= LAB_DF_ADVERSARIAL; mode++) {
		for (int rx = 0; rx < 2; rx++) {
			struct rf f;

			rf_setup_gran(&f, RF_4K);
			struct rf_q *s = rf_side(&f, rx);
			const uint16_t fl = (uint16_t)((rx ? VL_DESC_F_WRITE : 0) | VL_DESC_F_NEXT);
			uint64_t buf = rf_alloc(&f, 64);
			uint16_t a = rf_desc(s), b = rf_desc(s), c = rf_desc(s);
			const uint16_t ab[2] = { a, b };

			rf_set_desc(s, a, buf, 16, fl, b);
			rf_set_desc(s, b, buf + 16, 16, fl, a);
			rf_post_head(s, a, ab, 2);
			rf_set_desc(s, c, buf + 32, 16, fl, c);
			rf_post_head(s, c, &c, 1);
			/* An indirect table of 3 entries, e0 -> e1 -> e0 (fewer steps than it has
			 * entries), straddling a region boundary (copied out, then walked). */
			uint64_t t = rf_straddle(&f, 24);
			const struct vl_split_desc e[3] = {
				{ buf, 16, fl, 1 }, { buf + 16, 16, fl, 0 }, { buf + 32, 16, fl, 0 },
			};

			rf_write(&f, t, e, sizeof(e));
			uint16_t ind = rf_post_indirect(s, t, sizeof(e));

			lab_df_set_mode((enum lab_df_mode)mode);
			lab_df_reset();
			if (rx) {
				struct vl_pkt *p = rf_make_pkt(&f, 10, 1);
				uint8_t st = 0xFF;

				/* Three bad chains returned, then no room for the packet. */
				assert_int_equal(vl_net_enqueue(s->q, &p, 1, &st), 0);
				vl_pkt_free(p);
			} else {
				struct vl_pkt *p[4];

				assert_int_equal(vl_net_dequeue(s->q, f.pool, p, 4), 0);
			}
			expect_clean(rx ? "looping RX chains" : "looping TX chains");
			lab_df_set_mode(LAB_DF_OFF);
			assert_int_equal(rf_drops(s, VL_DROP_CHAIN_LOOP), 3);
			assert_int_equal(rf_drops_other(s, VL_DROP_CHAIN_LOOP), 0);
			rf_expect_used(s, a, 0);
			rf_expect_used(s, c, 0);
			rf_expect_used(s, ind, 0);
			assert_false(vl_vq_broken(s->q));
			rf_teardown(&f);
		}
	}
}

/* ---- seeded traffic of every shape ------------------------------------------------------ */

enum shape {
	SHAPE_ONE,      /* one descriptor */
	SHAPE_HDR_SEP,  /* header alone, then 1..3 data descriptors */
	SHAPE_HDR3,     /* header over 3 descriptors, then 1..2 data descriptors */
	SHAPE_MANY,     /* 2..8 descriptors at random cuts, some of length 0 */
	SHAPE__COUNT
};

/* One chain the driver posted: its bytes are one contiguous guest range cut into
 * descriptors (direct or in an indirect table). */
struct rec {
	bool busy;
	bool dequeued;          /* TX: its packet came out */
	uint64_t alloc_gpa, alloc_len;
	uint64_t gpa;           /* first byte */
	uint32_t bytes;         /* TX: header + packet; RX: capacity */
	uint64_t tbl_alloc, tbl_alloc_len; /* indirect table allocation, or 0 */
	uint32_t pkt_len;       /* TX */
	uint8_t seed;           /* TX */
};

struct tcfg {
	const char *name;
	enum vl_layout layout;
	uint32_t qsize;
	uint64_t gran;
	uint64_t features;      /* beyond INDIRECT + VERSION_1 */
	bool zero_copy;
	uint32_t rounds;
	uint64_t seed;
};

/* What a run produced, compared between modes. */
struct outcome {
	uint64_t tx_packets, tx_bytes, tx_used, rx_packets, rx_bytes, rx_used;
	uint64_t tx_chains, rx_chains, calls_needed, calls_suppressed, drops, zc_packets;
	uint64_t posted, indirect, straddled;
	uint64_t digest;        /* of every packet byte and used entry seen, in order */
};

struct tr {
	struct rf f;
	const struct tcfg *cfg;
	struct rec *tx, *rx;    /* [qsize], by id */
	uint16_t *tx_fifo;      /* ids in posting order, not yet dequeued */
	uint32_t tx_head, tx_count;
	/* RX packets delivered, awaiting their used entries (posting order). */
	uint32_t rx_len[4096];
	uint8_t rx_seed[4096];
	uint32_t rx_head, rx_count;
	/* The RX packet being reassembled from used entries. */
	uint32_t asm_left_bufs, asm_off;
	bool assembling;
	uint32_t rx_inflight;
	bool persist;           /* ADVERSARIAL_PERSIST: the ring may hold anything */
	struct outcome out;
};

static void digest(struct tr *t, uint64_t v)
{
	t->out.digest = (t->out.digest ^ v) * 0x100000001B3ull;
}

static bool side_room(struct rf_q *s, uint32_t ndirect)
{
	if (s->layout == VL_LAYOUT_PACKED)
		return s->pr.free_descs >= ndirect && s->pr.nfree_ids > 0;
	return s->vr.nfree >= ndirect;
}

/* Cut [0, bytes) into descriptors of the given shape. Returns how many. */
static uint32_t cut(uint32_t bytes, uint32_t hdr, enum shape sh, uint32_t *at)
{
	uint32_t n = 0;

	at[n++] = 0;
	switch (sh) {
	case SHAPE_ONE:
		break;
	case SHAPE_HDR_SEP: {
		at[n++] = hdr;
		uint32_t extra = rnd_below(3);

		for (uint32_t i = 0; i < extra; i++) {
			uint32_t c = hdr + 1 + rnd_below(bytes - hdr - 1 > 0 ? bytes - hdr - 1 : 1);

			if (c > at[n - 1] && c < bytes)
				at[n++] = c;
		}
		break;
	}
	case SHAPE_HDR3: {
		uint32_t a = 1 + rnd_below(hdr - 2);
		uint32_t b = a + 1 + rnd_below(hdr - a - 1);

		at[n++] = a;
		at[n++] = b;
		at[n++] = hdr;
		if (rnd_below(2) && bytes > hdr + 2)
			at[n++] = hdr + 1 + rnd_below(bytes - hdr - 1);
		break;
	}
	default: {
		uint32_t k = 1 + rnd_below(7);

		for (uint32_t i = 0; i < k; i++) {
			/* Repeated cuts make zero-length descriptors (skipped by the device). */
			uint32_t c = rnd_below(8) == 0 ? at[n - 1] : at[n - 1] + 1 + rnd_below(bytes / 4 + 1);

			if (c >= bytes)
				break;
			at[n++] = c;
		}
		break;
	}
	}
	return n;
}

static void release(struct tr *t, struct rec *r);

/* Post one chain of `bytes` on side s. Returns its id, or -1 when the ring has no room. */
static int post(struct tr *t, struct rf_q *s, uint32_t bytes, uint32_t pkt_len, uint8_t seed)
{
	struct rf *f = &t->f;
	const uint32_t hdr = f->hdr_len;
	uint32_t at[16];
	struct rf_desc d[16];
	enum shape sh = (enum shape)rnd_below(SHAPE__COUNT);
	bool indirect = rnd_below(4) == 0;
	bool straddle = f->cfg.granularity != 0 && rnd_below(2);
	uint32_t n = cut(bytes, hdr, sh, at);

	if (!side_room(s, indirect ? 1 : n))
		return -1;

	struct rec r = { .busy = true, .bytes = bytes, .pkt_len = pkt_len, .seed = seed };

	if (straddle) {
		/* Place the range across a 4 KiB region boundary. */
		r.alloc_len = (uint64_t)bytes + 4096 + 64;
		r.alloc_gpa = rf_alloc(f, r.alloc_len);
		uint64_t boundary = (r.alloc_gpa / 4096 + 1) * 4096;
		uint64_t room = boundary - r.alloc_gpa;

		r.gpa = boundary - 1 - rnd_below((uint32_t)(bytes < room ? bytes : room));
		t->out.straddled++;
	} else {
		r.alloc_len = (uint64_t)bytes + 64;
		r.alloc_gpa = rf_alloc(f, r.alloc_len);
		r.gpa = r.alloc_gpa + rnd_below(64);
	}
	uint8_t *p = rf_ptr(f, r.gpa, bytes);

	if (s->rx) {
		memset(p, 0xA5, bytes);
	} else {
		memset(p, 0, hdr);
		rf_pattern(p + hdr, pkt_len, seed);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t end = i + 1 < n ? at[i + 1] : bytes;

		d[i] = (struct rf_desc){ r.gpa + at[i], end - at[i],
					 s->rx ? VL_DESC_F_WRITE : 0 };
	}
	uint16_t id;

	if (indirect) {
		/* The table itself may straddle a region boundary (then the core copies it out). */
		uint32_t tlen = 16 * n;
		uint64_t tgpa;

		r.tbl_alloc_len = tlen + 4096 + 64;
		r.tbl_alloc = rf_alloc(f, r.tbl_alloc_len);
		if (rnd_below(2)) {
			uint64_t boundary = (r.tbl_alloc / 4096 + 1) * 4096;

			tgpa = boundary - 8 - 16 * rnd_below(n);
			if (tgpa < r.tbl_alloc)
				tgpa = r.tbl_alloc;
		} else {
			tgpa = r.tbl_alloc + 8 * rnd_below(8);
		}
		if (s->layout == VL_LAYOUT_PACKED)
			rf_write_ptable(f, tgpa, d, n);
		else
			rf_write_table(f, tgpa, d, n);
		id = rf_post_indirect(s, tgpa, tlen);
		t->out.indirect++;
	} else {
		id = rf_post_chain(s, d, n);
	}
	struct rec *tab = s->rx ? t->rx : t->tx;

	assert_true(id < f->cfg.qsize);
	if (tab[id].busy) {
		/* Only a scribbling guest's ring can give back an id the device never returned. */
		assert_true(t->persist);
		release(t, &tab[id]);
		if (s->rx)
			t->rx_inflight--;
	}
	tab[id] = r;
	t->out.posted++;
	return id;
}

static void release(struct tr *t, struct rec *r)
{
	lab_gmem_free(t->f.g, r->alloc_gpa, r->alloc_len);
	if (r->tbl_alloc)
		lab_gmem_free(t->f.g, r->tbl_alloc, r->tbl_alloc_len);
	memset(r, 0, sizeof(*r));
}

/* The guest's wish for calls, changed before every burst. */
static void arm_notifications(struct tr *t, struct rf_q *s)
{
	bool event = (t->f.cfg.features & F_EVENT) != 0;

	if (s->layout == VL_LAYOUT_PACKED) {
		uint16_t flags = event && rnd_below(2) ? VL_RING_EVENT_DESC
						     : (uint16_t)rnd_below(2);

		s->pr.driver_event->off_wrap = (uint16_t)(rnd_below(t->f.cfg.qsize) |
							  (rnd_below(2) ? VL_PACKED_WRAP_BIT : 0));
		s->pr.driver_event->flags = flags;
	} else if (event) {
		s->vr.avail->ring[s->vr.size] = (uint16_t)(s->vr.used->idx + rnd_below(8));
	} else {
		lab_vring_set_avail_flags(&s->vr, rnd_below(2) ? VL_AVAIL_F_NO_INTERRUPT : 0);
	}
}

static bool pop(struct tr *t, struct rf_q *s, uint32_t *id, uint32_t *len)
{
	if (!t->persist)
		return rf_pop_used(s, id, len);
	/* The ring may be garbage: the driver's own checks would fail, so stop at them. */
	if (s->layout == VL_LAYOUT_PACKED) {
		bool bad = false;

		return lab_pring_pop_used(&s->pr, id, len, &bad);
	}
	return rf_pop_used(s, id, len);
}

static void harvest_tx(struct tr *t)
{
	uint32_t id, len;

	while (pop(t, &t->f.tx, &id, &len)) {
		digest(t, id);
		t->out.tx_used++;
		if (t->persist) {
			assert_true(id < t->f.cfg.qsize);
			if (t->tx[id].busy && t->tx[id].dequeued)
				release(t, &t->tx[id]);
			continue;
		}
		if (id >= t->f.cfg.qsize || !t->tx[id].busy)
			fail_msg("TX used id %u was not posted", id);
		if (!t->tx[id].dequeued)
			fail_msg("TX used id %u came back before its packet was dequeued", id);
		assert_int_equal(len, 0);
		release(t, &t->tx[id]);
	}
}

static void harvest_rx(struct tr *t)
{
	struct rf *f = &t->f;
	uint32_t id, len;
	bool mrg = (f->cfg.features & F_MRG) != 0;

	while (pop(t, &f->rx, &id, &len)) {
		digest(t, (uint64_t)id << 32 | len);
		t->out.rx_used++;
		if (t->persist) {
			assert_true(id < f->cfg.qsize);
			if (t->rx[id].busy) {
				release(t, &t->rx[id]);
				t->rx_inflight--;
			}
			continue;
		}
		if (id >= f->cfg.qsize || !t->rx[id].busy)
			fail_msg("RX used id %u was not posted", id);
		struct rec *r = &t->rx[id];

		if (len > r->bytes)
			fail_msg("RX used length %u exceeds the buffer (%u)", len, r->bytes);
		const uint8_t *p = rf_ptr(f, r->gpa, r->bytes);
		uint32_t skip = 0;

		if (!t->assembling) {
			assert_true(t->rx_count > 0);
			assert_true(len >= f->hdr_len);
			uint16_t nb = 1;

			if (f->hdr_len == 12)
				nb = (uint16_t)(p[10] | p[11] << 8);
			if (!mrg)
				assert_int_equal(nb, 1);
			assert_true(nb >= 1);
			for (uint32_t i = 0; i < 10; i++)
				assert_int_equal(p[i], 0);
			t->assembling = true;
			t->asm_left_bufs = nb;
			t->asm_off = 0;
			skip = f->hdr_len;
		}
		uint32_t plen = t->rx_len[t->rx_head], seed = t->rx_seed[t->rx_head];

		for (uint32_t i = skip; i < len; i++) {
			if (t->asm_off >= plen || p[i] != rf_pattern_byte((uint8_t)seed, t->asm_off))
				fail_msg("RX packet byte %u (buffer id %u offset %u) wrong", t->asm_off,
					 id, i);
			t->asm_off++;
		}
		if (--t->asm_left_bufs == 0) {
			assert_int_equal(t->asm_off, plen);
			t->assembling = false;
			t->rx_head = (t->rx_head + 1) % 4096;
			t->rx_count--;
		}
		release(t, r);
		t->rx_inflight--;
	}
}

static void tx_burst(struct tr *t)
{
	struct rf *f = &t->f;
	struct vl_pkt *pkts[64];

	arm_notifications(t, &f->tx);
	uint16_t n = vl_net_dequeue(f->tx.q, f->pool, pkts, 64);

	for (uint16_t i = 0; i < n; i++) {
		t->out.tx_packets++;
		t->out.tx_bytes += pkts[i]->pkt_len;
		if (t->persist) {
			vl_pkt_free(pkts[i]);
			continue;
		}
		assert_true(t->tx_count > 0);
		uint16_t id = t->tx_fifo[t->tx_head];
		struct rec *r = &t->tx[id];

		t->tx_head = (t->tx_head + 1) % f->cfg.qsize;
		t->tx_count--;
		assert_true(r->busy);
		rf_assert_pkt_pattern(pkts[i], r->pkt_len, r->seed);
		assert_int_equal(pkts[i]->ol.flags, 0);
		assert_int_equal(pkts[i]->ol.gso_type, 0);
		digest(t, pkts[i]->pkt_len);
		r->dequeued = true;
		vl_pkt_free(pkts[i]);
	}
	/* Chains of freed zero-copy packets: back now, or with the next burst. */
	if (t->cfg->zero_copy && rnd_below(2))
		vl_vq_complete(f->tx.q);
	harvest_tx(t);
}

static void rx_burst(struct tr *t, uint32_t npkts)
{
	struct rf *f = &t->f;
	struct vl_pkt *pkts[16];
	uint8_t st[16];
	bool mrg = (f->cfg.features & F_MRG) != 0;
	uint32_t lens[16];
	uint8_t seeds[16];

	for (uint32_t i = 0; i < npkts; i++) {
		lens[i] = 1 + rnd_below(mrg ? 1500 : 1400);
		seeds[i] = (uint8_t)rnd();
		pkts[i] = rf_make_pkt(f, lens[i], seeds[i]);
		st[i] = 0xFF;
	}
	arm_notifications(t, &f->rx);
	uint16_t h = vl_net_enqueue(f->rx.q, pkts, (uint16_t)npkts, st);

	for (uint32_t i = 0; i < npkts; i++) {
		if (i < h) {
			if (!t->persist) {
				assert_int_equal(st[i], VL_RX_DELIVERED);
				assert_true(t->rx_count < 4096);
				uint32_t at = (t->rx_head + t->rx_count++) % 4096;

				t->rx_len[at] = lens[i];
				t->rx_seed[at] = seeds[i];
			}
			t->out.rx_packets++;
			t->out.rx_bytes += lens[i];
		}
		vl_pkt_free(pkts[i]);
	}
	harvest_rx(t);
}

static void post_tx(struct tr *t, uint32_t k)
{
	struct rf *f = &t->f;

	for (uint32_t i = 0; i < k; i++) {
		uint32_t len = 1 + rnd_below(rnd_below(4) ? 300 : 6000);
		int id = post(t, &f->tx, f->hdr_len + len, len, (uint8_t)rnd());

		if (id < 0)
			return;
		if (!t->persist) {
			assert_true(t->tx_count < f->cfg.qsize);
			t->tx_fifo[(t->tx_head + t->tx_count++) % f->cfg.qsize] = (uint16_t)id;
		}
	}
}

static void post_rx(struct tr *t, uint32_t want)
{
	struct rf *f = &t->f;
	bool mrg = (f->cfg.features & F_MRG) != 0;

	while (t->rx_inflight < want) {
		uint32_t cap = mrg ? f->hdr_len + 20 + rnd_below(700) : f->hdr_len + 1600;

		if (post(t, &f->rx, cap, 0, 0) < 0)
			return;
		t->rx_inflight++;
	}
}

static void run_traffic(const struct tcfg *c, enum lab_df_mode mode, struct outcome *out)
{
	struct tr *t = calloc(1, sizeof(*t));
	struct rf_cfg cfg;

	assert_non_null(t);
	t->cfg = c;
	t->persist = mode == LAB_DF_ADVERSARIAL_PERSIST;
	rnd_state = c->seed * 2654435761u + 12345;
	if (c->layout == VL_LAYOUT_PACKED) {
		rf_cfg_init_packed(&cfg, c->gran, c->qsize);
		cfg.start_idx = (uint16_t)(c->qsize - 3);
	} else {
		rf_cfg_init(&cfg, c->gran);
		cfg.qsize = c->qsize;
		cfg.start_idx = (uint16_t)(65536 - 3 * c->qsize - 7);
	}
	cfg.features = F_INDIRECT | F_V1 | c->features;
	cfg.ram_size = 8u << 20;
	cfg.seed = c->seed;
	rf_setup(&t->f, &cfg);
	t->tx = calloc(c->qsize, sizeof(*t->tx));
	t->rx = calloc(c->qsize, sizeof(*t->rx));
	t->tx_fifo = calloc(c->qsize, sizeof(*t->tx_fifo));
	assert_non_null(t->tx);
	assert_non_null(t->rx);
	assert_non_null(t->tx_fifo);
	if (c->zero_copy)
		vl_vq_set_zero_copy(t->f.tx.q, true, 64, 8);

	lab_df_set_mode(mode);
	lab_df_reset();
	lab_df_set_seed(c->seed + 1);
	for (uint32_t round = 0; round < c->rounds; round++) {
		post_tx(t, rnd_below(14));
		post_rx(t, 4 + rnd_below(c->qsize < 40 ? c->qsize / 2 : 20));
		tx_burst(t);
		rx_burst(t, 1 + rnd_below(8));
		if (t->persist && vl_vq_broken(t->f.tx.q) && vl_vq_broken(t->f.rx.q))
			break;
	}
	/* Drain TX: everything posted comes out and back. */
	for (uint32_t i = 0; i < 8 && !t->persist; i++) {
		tx_burst(t);
		if (t->cfg->zero_copy)
			vl_vq_complete(t->f.tx.q);
		harvest_tx(t);
	}
	if (!t->persist) {
		assert_int_equal(t->tx_count, 0);
		for (uint32_t id = 0; id < c->qsize; id++)
			assert_false(t->tx[id].busy);
		assert_false(t->assembling);
		assert_int_equal(t->rx_count, 0);
	} else {
		vl_vq_complete(t->f.tx.q);
	}
	lab_df_set_mode(LAB_DF_OFF);

	const struct vl_vq_stats *ts = vl_vq_stats(t->f.tx.q), *rs = vl_vq_stats(t->f.rx.q);

	t->out.tx_chains = ts->chains;
	t->out.rx_chains = rs->chains;
	t->out.calls_needed = ts->calls_needed + rs->calls_needed;
	t->out.calls_suppressed = ts->calls_suppressed + rs->calls_suppressed;
	t->out.zc_packets = ts->zc_packets;
	for (int i = 0; i < VL_DROP__COUNT; i++)
		t->out.drops += ts->drops[i] + rs->drops[i];
	if (!t->persist) {
		assert_false(vl_vq_broken(t->f.tx.q));
		assert_false(vl_vq_broken(t->f.rx.q));
		assert_int_equal(t->out.drops, 0);
		assert_int_equal(ts->packets, t->out.tx_packets);
		assert_int_equal(rs->packets, t->out.rx_packets);
		assert_true(t->out.tx_packets > 0);
		assert_true(t->out.rx_packets > 0);
	}
	*out = t->out;
	free(t->tx);
	free(t->rx);
	free(t->tx_fifo);
	rf_teardown(&t->f);
	free(t);
}

static const struct tcfg configs[] = {
	{ "split coarse", VL_LAYOUT_SPLIT, 256, RF_COARSE, 0, false, 60, 1 },
	{ "split 4k mrg event", VL_LAYOUT_SPLIT, 256, RF_4K, F_MRG | F_EVENT, false, 60, 2 },
	{ "split 4k mrg in-order zc", VL_LAYOUT_SPLIT, 64, RF_4K, F_MRG | F_IN_ORDER, true, 60, 3 },
	{ "split coarse event zc", VL_LAYOUT_SPLIT, 128, RF_COARSE, F_EVENT, true, 60, 4 },
	{ "split 4k in-order event", VL_LAYOUT_SPLIT, 32, RF_4K, F_IN_ORDER | F_EVENT, false, 60, 5 },
	{ "packed coarse", VL_LAYOUT_PACKED, 256, RF_COARSE, 0, false, 60, 6 },
	{ "packed 4k mrg event", VL_LAYOUT_PACKED, 100, RF_4K, F_MRG | F_EVENT, false, 60, 7 },
	{ "packed 4k mrg in-order zc", VL_LAYOUT_PACKED, 63, RF_4K, F_MRG | F_IN_ORDER, true, 60, 8 },
	{ "packed coarse event in-order", VL_LAYOUT_PACKED, 256, RF_COARSE, F_EVENT | F_IN_ORDER,
	  false, 60, 9 },
	{ "packed 4k event zc", VL_LAYOUT_PACKED, 37, RF_4K, F_EVENT, true, 60, 10 },
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

static void test_detect_traffic(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCONFIGS; i++) {
		struct outcome o;
		struct lab_df_stats st;

		run_traffic(&configs[i], LAB_DF_DETECT, &o);
		/* run_traffic turned the detector OFF at the end; the counters stay. */
		lab_df_get_stats(&st);
		char what[128];

		snprintf(what, sizeof(what), "DETECT %s", configs[i].name);
		print_message("%-30s posted %llu (indirect %llu, straddling %llu), tx %llu rx %llu "
			      "packets, %llu loads in %llu chains / %llu bursts\n",
			      configs[i].name, (unsigned long long)o.posted,
			      (unsigned long long)o.indirect, (unsigned long long)o.straddled,
			      (unsigned long long)o.tx_packets, (unsigned long long)o.rx_packets,
			      (unsigned long long)st.loads, (unsigned long long)st.chains,
			      (unsigned long long)st.bursts);
		expect_clean(what);
		assert_true(o.indirect > 0);
		if (configs[i].gran)
			assert_true(o.straddled > 0);
		if (configs[i].zero_copy)
			assert_true(o.zc_packets > 0);
		assert_true(o.calls_needed > 0);
		assert_int_equal(st.mutations, 0);
	}
}

/* Flips between reads change nothing the core does: same packets, same used entries, same
 * statistics as a run without hooks. */
static void test_adversarial_traffic(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCONFIGS; i++) {
		struct outcome plain, adv;
		struct lab_df_stats st;
		char what[128];

		run_traffic(&configs[i], LAB_DF_OFF, &plain);
		run_traffic(&configs[i], LAB_DF_ADVERSARIAL, &adv);
		lab_df_get_stats(&st);
		snprintf(what, sizeof(what), "ADVERSARIAL %s", configs[i].name);
		expect_clean(what);
		assert_true(st.mutations > 0);
		/* Every flip was put back: the core never wrote a byte it had read within the
		 * same unit. */
		assert_int_equal(st.restored, st.mutations);
		assert_int_equal(st.kept, 0);
		if (memcmp(&plain, &adv, sizeof(plain)) != 0)
			fail_msg("%s: outcomes differ from the run without hooks (digest %llx vs "
				 "%llx, tx %llu/%llu, rx %llu/%llu)", what,
				 (unsigned long long)plain.digest, (unsigned long long)adv.digest,
				 (unsigned long long)plain.tx_packets,
				 (unsigned long long)adv.tx_packets,
				 (unsigned long long)plain.rx_packets,
				 (unsigned long long)adv.rx_packets);
	}
}

/* The guest scribbles over every field right after the core read it, for good: the core
 * must stay memory-safe (ASan, guard pages), terminate every burst, and return only ids in
 * range (checked as the used entries are harvested). */
static void test_adversarial_persist_traffic(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCONFIGS; i++) {
		struct lab_df_stats st;
		uint64_t flips = 0, tx = 0, rx = 0, drops = 0;

		/* Several seeds: a scribbled ring breaks a queue soon, differently each time. */
		for (uint64_t k = 0; k < 8; k++) {
			struct tcfg c = configs[i];
			struct outcome o;

			c.seed = configs[i].seed * 1000 + k;
			run_traffic(&c, LAB_DF_ADVERSARIAL_PERSIST, &o);
			lab_df_get_stats(&st);
			assert_true(st.mutations > 0);
			assert_true(o.posted > 0);
			flips += st.mutations;
			tx += o.tx_packets;
			rx += o.rx_packets;
			drops += o.drops;
		}
		print_message("%-30s scribbled: %llu flips, tx %llu rx %llu packets, %llu drops\n",
			      configs[i].name, (unsigned long long)flips, (unsigned long long)tx,
			      (unsigned long long)rx, (unsigned long long)drops);
	}
}

/* ---- the full scenario ------------------------------------------------------------------ */

static void scenario_under(enum lab_df_mode mode, const struct lab_scenario_config *cfg)
{
	struct lab_scenario_result *res = calloc(1, sizeof(*res));
	struct lab_df_stats st;
	char what[600], desc[400];

	assert_non_null(res);
	lab_scenario_describe(cfg, desc, sizeof(desc));
	snprintf(what, sizeof(what), "scenario %s (%s)", desc, lab_df_mode_name(mode));
	lab_df_set_mode(mode);
	lab_df_reset();
	lab_df_set_seed(cfg->seed + 17);
	int rc = lab_scenario_run(cfg, res);

	lab_df_get_stats(&st);
	lab_df_set_mode(LAB_DF_OFF);
	if (rc != 0)
		fail_msg("%s: %s", what, res->error);
	assert_true(res->ok);
	assert_int_equal(res->tx_packets, cfg->packets);
	assert_int_equal(res->rx_packets, cfg->packets);
	expect_clean(what);
	if (mode == LAB_DF_ADVERSARIAL) {
		assert_true(st.mutations > 0);
		assert_int_equal(st.restored, st.mutations);
	}
	free(res);
}

static void scenario_cfg(struct lab_scenario_config *cfg, unsigned k)
{
	lab_scenario_defaults(cfg);
	cfg->packets = 300;
	cfg->layout = (k & 1) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
	cfg->mergeable = (k >> 1) & 1;
	cfg->indirect = true;
	cfg->modern = true;
	cfg->event_idx = true;
	cfg->in_order = (k >> 2) & 1;
	cfg->granularity = 4096;
	cfg->batch_threshold = 256;
	cfg->zero_copy = (k >> 1) & 1;
	cfg->dirty_log = k & 1;
	cfg->seed = 100 + k;
}

static void test_scenario_detect(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 4; k++) {
		struct lab_scenario_config cfg;

		scenario_cfg(&cfg, k);
		scenario_under(LAB_DF_DETECT, &cfg);
	}
	/* And the plain configuration of each layout: direct descriptors, coarse memory. */
	for (unsigned k = 0; k < 2; k++) {
		struct lab_scenario_config cfg;

		lab_scenario_defaults(&cfg);
		cfg.packets = 300;
		cfg.layout = k ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
		cfg.mergeable = false;
		cfg.indirect = false;
		cfg.modern = false;
		scenario_under(LAB_DF_DETECT, &cfg);
	}
}

static void test_scenario_adversarial(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 4; k++) {
		struct lab_scenario_config cfg;

		scenario_cfg(&cfg, k + 4);
		scenario_under(LAB_DF_ADVERSARIAL, &cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detector_basics),
		cmocka_unit_test(test_detector_adversarial),
		cmocka_unit_test(test_injected_split),
		cmocka_unit_test(test_injected_packed),
		cmocka_unit_test(test_split_loops_read_once),
		cmocka_unit_test(test_detect_traffic),
		cmocka_unit_test(test_adversarial_traffic),
		cmocka_unit_test(test_adversarial_persist_traffic),
		cmocka_unit_test(test_scenario_detect),
		cmocka_unit_test(test_scenario_adversarial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

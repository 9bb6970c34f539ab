/* SPDX-License-Identifier: MIT */
/* The specialised non-mergeable receive path (core/net/enqueue_nonmergeable.c, built into the
 * core only with -DVL_RX_TWO_PATHS=ON, compiled into this test on its own) against the
 * unified one (vl_net_enqueue): technique 2's comparison races the two, so they must do the
 * same thing. Two fixtures of the same configuration get the same random traffic -- good
 * chains of one piece or several (the header cut over tiny pieces), indirect tables, chains
 * too small for a header, read-only ones, ones outside guest memory, packets too big for
 * their chain, multi-segment packets, bursts larger than what is posted -- one enqueued by
 * each path; then a packet over the size limit and a chain that breaks the queue. After
 * every burst: the same return value and per-packet status, the same used entries in the
 * same order, the same counters (the whole stats block) and the same guest memory, ring area
 * and RAM, byte for byte. Each case also checks that the traffic reached
 * every one of those outcomes, so a generator that stopped making some kind of chain fails. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "net/enqueue_nonmergeable.h"
#include "ring_fixture.h"
#include "rng.h"

#define ROUNDS 120
#define SLOT_SIZE 4096u  /* guest RAM per outstanding chain: buffer pieces and table */
#define MAX_OUT 96u      /* chains posted and not yet used, at most */
#define MAX_BURST 40u

/* One twin: [0] runs the unified path, [1] the specialised one. */
struct twin {
	struct rf f[2];
	uint64_t slot_gpa[MAX_OUT];  /* the same in both: same configuration, same allocations */
	int32_t slot_of_id[2][1024]; /* chain id -> slot, per fixture; -1 none */
	bool slot_busy[MAX_OUT];
	uint32_t out;                /* chains outstanding */
};

struct rxp_case {
	const char *name;
	enum vl_layout layout;
	bool in_order;
	bool legacy_hdr; /* no VERSION_1: 10-byte header */
	bool no_batch;
	uint64_t granularity;
	uint64_t seed;
};

static void twin_setup(struct twin *t, const struct rxp_case *c)
{
	memset(t, 0, sizeof(*t));
	for (int k = 0; k < 2; k++) {
		struct rf_cfg cfg;

		if (c->layout == VL_LAYOUT_PACKED)
			rf_cfg_init_packed(&cfg, c->granularity, 256);
		else
			rf_cfg_init(&cfg, c->granularity);
		cfg.ram_size = (uint64_t)MAX_OUT * SLOT_SIZE + (1u << 20);
		if (c->legacy_hdr)
			cfg.features &= ~VL_FEATURE(VL_F_VERSION_1);
		if (c->in_order)
			cfg.features |= VL_FEATURE(VL_F_IN_ORDER);
		if (c->no_batch)
			cfg.batch_threshold = 0;
		rf_setup(&t->f[k], &cfg);
		for (uint32_t i = 0; i < MAX_OUT; i++) {
			uint64_t gpa = rf_alloc(&t->f[k], SLOT_SIZE);

			if (k == 0)
				t->slot_gpa[i] = gpa;
			else
				assert_int_equal(gpa, t->slot_gpa[i]);
		}
		memset(t->slot_of_id[k], 0xff, sizeof(t->slot_of_id[k]));
	}
	assert_int_equal(t->f[0].hdr_len, c->legacy_hdr ? 10 : 12);
}

static uint32_t free_slot(const struct twin *t)
{
	for (uint32_t i = 0; i < MAX_OUT; i++)
		if (!t->slot_busy[i])
			return i;
	fail_msg("no free slot");
	return 0;
}

/* Post the chain d[0..n) (in slot s's memory) on both fixtures, as one indirect
 * descriptor naming a table of them in the slot's last 256 bytes when indirect. */
static void post_in_slot(struct twin *t, uint32_t s, const struct rf_desc *d, uint32_t n,
			 bool indirect)
{
	const uint64_t gpa = t->slot_gpa[s];

	for (int k = 0; k < 2; k++) {
		struct rf *f = &t->f[k];
		uint16_t id;

		rf_fill(f, gpa, 0xA5, SLOT_SIZE);
		if (indirect) {
			const uint64_t table = gpa + SLOT_SIZE - 256;

			rf_write_qtable(f, &f->rx, table, d, n);
			id = rf_post_indirect(&f->rx, table, n * 16);
		} else {
			id = rf_post_chain(&f->rx, d, n);
		}
		assert_true(id < 1024);
		assert_int_equal(t->slot_of_id[k][id], -1);
		t->slot_of_id[k][id] = (int32_t)s;
	}
	t->slot_busy[s] = true;
	t->out++;
}

/* Post one random chain in slot s on both fixtures. The kinds, by what the device must do
 * with them: fill (one piece; several, the header over pieces of 1..hdr_len+3 bytes; an
 * indirect table), refuse as too small for a header, or refuse outright (read-only piece,
 * a piece outside guest memory). The buffer's capacity varies so some packets do not fit. */
static void post_random(struct twin *t, struct lab_rng *r, uint32_t s)
{
	static const uint32_t caps[] = { 40, 76, 600, 1530, 1530, 2048, 3500, 4000 };
	const uint32_t hdr = t->f[0].hdr_len;
	const uint32_t kind = lab_rng_below(r, 16);
	uint32_t cap = caps[lab_rng_below(r, sizeof(caps) / sizeof(caps[0]))] + hdr;
	const uint64_t gpa = t->slot_gpa[s];
	struct rf_desc d[6];
	uint32_t n = 0;
	bool indirect = false;

	if (cap > SLOT_SIZE - 256)
		cap = SLOT_SIZE - 256; /* the table, if any, goes in the slot's last 256 bytes */
	if (kind < 7) {
		d[n++] = (struct rf_desc){ gpa, cap, VL_DESC_F_WRITE };
	} else if (kind < 11) {
		/* Several pieces over the buffer; the first may hold part of the header only. */
		uint32_t off = 0, pieces = 2 + lab_rng_below(r, 4);

		for (uint32_t i = 0; i < pieces && off < cap; i++) {
			uint32_t len = i + 1 == pieces ? cap - off : 1 + lab_rng_below(r, hdr + 3);

			if (len > cap - off)
				len = cap - off;
			d[n++] = (struct rf_desc){ gpa + off, len, VL_DESC_F_WRITE };
			off += len;
		}
		indirect = kind >= 9;
	} else if (kind == 11) {
		d[n++] = (struct rf_desc){ gpa, 1 + lab_rng_below(r, hdr - 1), VL_DESC_F_WRITE }; /* < hdr */
	} else if (kind == 12) {
		d[n++] = (struct rf_desc){ gpa, hdr / 2, VL_DESC_F_WRITE };
		d[n++] = (struct rf_desc){ gpa + 64, hdr / 2 - 1, VL_DESC_F_WRITE }; /* < hdr */
	} else if (kind == 13) {
		d[n++] = (struct rf_desc){ gpa, cap, 0 }; /* read-only: not an RX buffer */
	} else if (kind == 14) {
		d[n++] = (struct rf_desc){ gpa, 32, VL_DESC_F_WRITE };
		d[n++] = (struct rf_desc){ lab_gmem_hole_gpa(t->f[0].g), 512, VL_DESC_F_WRITE };
	} else {
		d[n++] = (struct rf_desc){ gpa, hdr, VL_DESC_F_WRITE }; /* room for a header only */
	}
	post_in_slot(t, s, d, n, indirect);
}

/* Random offloads, so header bytes differ from packet to packet. */
static void random_ol(struct lab_rng *r, uint32_t len, struct vl_offload *ol)
{
	memset(ol, 0, sizeof(*ol));
	if (lab_rng_below(r, 3) == 0 && len >= 60) {
		ol->flags = VL_NET_HDR_F_NEEDS_CSUM;
		ol->csum_start = 34;
		ol->csum_offset = 16;
		ol->gso_type = VL_NET_HDR_GSO_TCPV4;
		ol->hdr_len = 54;
		ol->gso_size = (uint16_t)(100 + lab_rng_below(r, 1400));
	}
}

/* Take every used entry the guest sees on both; they must match, id by id. */
static void pop_all(struct twin *t)
{
	uint32_t id[2], len[2];

	for (;;) {
		bool got0 = rf_pop_used(&t->f[0].rx, &id[0], &len[0]);
		bool got1 = rf_pop_used(&t->f[1].rx, &id[1], &len[1]);

		assert_int_equal(got0, got1);
		if (!got0)
			return;
		assert_int_equal(id[0], id[1]);
		assert_int_equal(len[0], len[1]);
		assert_true(id[0] < 1024);
		for (int k = 0; k < 2; k++) {
			int32_t s = t->slot_of_id[k][id[k]];

			assert_true(s >= 0);
			t->slot_of_id[k][id[k]] = -1;
			if (k == 0) {
				t->slot_busy[s] = false;
				t->out--;
			}
		}
	}
}

static void assert_twins_equal(struct twin *t)
{
	const struct vl_vq_stats *a = vl_vq_stats(t->f[0].rx.q), *b = vl_vq_stats(t->f[1].rx.q);
	struct lab_gmem *g0 = t->f[0].g;
	const uint64_t rg = lab_gmem_ring_gpa(g0), rs = lab_gmem_ring_size(g0);
	const uint64_t ag = lab_gmem_ram_gpa(g0), as = lab_gmem_ram_size(g0);

	assert_memory_equal(a, b, sizeof(*a));
	assert_true(memcmp(rf_ptr(&t->f[0], rg, rs), rf_ptr(&t->f[1], rg, rs), rs) == 0);
	assert_true(memcmp(rf_ptr(&t->f[0], ag, as), rf_ptr(&t->f[1], ag, as), as) == 0);
}

/* One burst of n packets of lengths len[] and offloads ol[] (NULL: none) on both twins:
 * the same return value and statuses. Returns the packets handled. */
static uint16_t burst_of(struct twin *t, uint32_t n, const uint32_t *len,
			 const struct vl_offload *ol)
{
	uint8_t st[2][MAX_BURST];
	uint16_t ret[2];

	assert_true(n <= MAX_BURST);
	for (int k = 0; k < 2; k++) {
		struct vl_pkt *pkts[MAX_BURST];

		for (uint32_t i = 0; i < n; i++) {
			pkts[i] = rf_make_pkt(&t->f[k], len[i], (uint8_t)(len[i] + i));
			if (ol)
				pkts[i]->ol = ol[i];
		}
		memset(st[k], 0xee, sizeof(st[k]));
		ret[k] = k == 0 ? vl_net_enqueue(t->f[k].rx.q, pkts, (uint16_t)n, st[k])
			       : vl_net_enqueue_nonmergeable(t->f[k].rx.q, pkts, (uint16_t)n,
							     st[k]);
		vl_pkt_free_bulk(pkts, n);
	}
	assert_int_equal(ret[0], ret[1]);
	assert_memory_equal(st[0], st[1], ret[0]);
	return ret[0];
}

static void one_burst(struct twin *t, struct lab_rng *r)
{
	static const uint32_t lens[] = { 0, 1, 60, 64, 64, 65, 500, 1518, 1518, 1600, 3000,
					 5000 };
	uint32_t n = 1 + lab_rng_below(r, MAX_BURST);
	uint32_t len[MAX_BURST];
	struct vl_offload ol[MAX_BURST];

	for (uint32_t i = 0; i < n; i++) {
		len[i] = lens[lab_rng_below(r, sizeof(lens) / sizeof(lens[0]))];
		random_ol(r, len[i], &ol[i]);
	}
	(void)burst_of(t, n, len, ol);
}

/* The ends of the random traffic, on both twins: a packet over VL_PKT_MAX_LEN (dropped
 * before any chain is looked at), then a chain with no id the device could return it under
 * (split: a head of queue size in the avail ring; packed: a buffer id of queue size),
 * which breaks the queue, and a burst on the broken queue. */
static void ends(struct twin *t)
{
	static const uint32_t zeros[MAX_BURST];
	const uint32_t over[2] = { VL_PKT_MAX_LEN + 1, 0 };

	/* Drain what is posted with empty packets, which every good chain holds. */
	while (burst_of(t, MAX_BURST, zeros, NULL) == MAX_BURST)
		pop_all(t);
	pop_all(t);
	const uint32_t slot = free_slot(t);
	const struct rf_desc good = { t->slot_gpa[slot], 2048, VL_DESC_F_WRITE };

	post_in_slot(t, slot, &good, 1, false);
	assert_int_equal(burst_of(t, 2, over, NULL), 2);
	assert_twins_equal(t);

	for (int k = 0; k < 2; k++) {
		struct rf_q *s = &t->f[k].rx;
		const uint16_t size = (uint16_t)t->f[k].cfg.qsize;

		if (s->layout == VL_LAYOUT_SPLIT) {
			lab_vring_add_avail(&s->vr, size);
			lab_vring_kick(&s->vr);
		} else {
			const uint16_t pos = rf_pavail_enc(s) & 0x7fff;
			const struct rf_desc d = { t->slot_gpa[0], 64, VL_DESC_F_WRITE };

			(void)rf_post_chain(s, &d, 1);
			rf_pdesc(s, pos)->id = size;
		}
	}
	assert_int_equal(burst_of(t, 1, zeros, NULL), 0);
	assert_true(vl_vq_broken(t->f[0].rx.q) && vl_vq_broken(t->f[1].rx.q));
	assert_int_equal(vl_vq_broken_reason(t->f[0].rx.q), vl_vq_broken_reason(t->f[1].rx.q));
	assert_int_equal(vl_vq_broken_reason(t->f[0].rx.q),
			 t->f[0].rx.layout == VL_LAYOUT_SPLIT ? VL_DROP_HEAD_OUT_OF_RANGE
							      : VL_DROP_ID_OUT_OF_RANGE);
	assert_int_equal(burst_of(t, 1, zeros, NULL), 0);
	assert_twins_equal(t);
}

static void run_case(const struct rxp_case *c)
{
	struct twin *t = test_malloc(sizeof(*t));
	struct lab_rng r = lab_rng_make(c->seed, 0x7278);
	twin_setup(t, c);
	for (uint32_t round = 0; round < ROUNDS; round++) {
		/* Some rounds post nothing, so bursts also find the ring short or empty. */
		uint32_t posts = lab_rng_below(&r, 4) == 0 ? 0 : lab_rng_below(&r, 24);

		for (uint32_t i = 0; i < posts && t->out < MAX_OUT; i++)
			post_random(t, &r, free_slot(t));
		one_burst(t, &r);
		/* The guest takes its buffers back most rounds, not all: used entries pile up. */
		if (lab_rng_below(&r, 5) != 0)
			pop_all(t);
		assert_twins_equal(t);
	}
	pop_all(t);
	assert_twins_equal(t);

	/* The traffic reached every outcome the two paths must agree on. */
	const struct vl_vq_stats *s = vl_vq_stats(t->f[0].rx.q);
	const uint64_t too_big = s->drops[VL_DROP_RX_TOO_BIG];

	ends(t);
	assert_int_equal(s->drops[VL_DROP_RX_TOO_BIG], too_big + 1);

	assert_true(s->packets > 0);
	assert_true(s->drops[VL_DROP_RX_TOO_BIG] > 0);
	assert_true(s->drops[VL_DROP_RX_BUF_TOO_SMALL] > 0);
	assert_true(s->drops[VL_DROP_DIRECTION] > 0);
	assert_true(s->drops[VL_DROP_UNMAPPED] > 0);
	assert_true(s->rx_no_room > 0);
	assert_true(s->empty_bursts > 0);
	for (int k = 0; k < 2; k++)
		rf_teardown(&t->f[k]);
	test_free(t);
}

static const struct rxp_case CASES[] = {
	{ "split", VL_LAYOUT_SPLIT, false, false, false, RF_COARSE, 1 },
	{ "split_in_order", VL_LAYOUT_SPLIT, true, false, false, RF_COARSE, 2 },
	{ "split_legacy_hdr_no_batch", VL_LAYOUT_SPLIT, false, true, true, RF_COARSE, 3 },
	{ "split_4k", VL_LAYOUT_SPLIT, false, false, false, RF_4K, 4 },
	{ "packed", VL_LAYOUT_PACKED, false, false, false, RF_COARSE, 5 },
	{ "packed_in_order", VL_LAYOUT_PACKED, true, false, false, RF_COARSE, 6 },
	{ "packed_no_batch_4k", VL_LAYOUT_PACKED, false, false, true, RF_4K, 7 },
	{ "packed_in_order_4k", VL_LAYOUT_PACKED, true, false, false, RF_4K, 8 },
};

static void test_case(void **state)
{
	run_case(*state);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(CASES) / sizeof(CASES[0])];

	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++)
		tests[i] = (struct CMUnitTest){ CASES[i].name, test_case, NULL, NULL,
						(void *)&CASES[i] };
	return cmocka_run_group_tests_name("rx_paths", tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* The session recorder (sim/trace/session_rec.h) end to end, in one process: the lab's own
 * driver (sim/vring.h) plays the front end on simulated guest memory, the hooked core runs
 * bursts with the recorder watching, and the recorded trace must replay (trace_replay.h) with
 * every expectation holding. The racing tests make the guest publish more right after the
 * core read a window field and before the recorder copied it -- what a real front end on
 * another CPU does -- and the trace must still replay: those fields are derived from what
 * the core did, not copied. An edited expectation must fail replay at that statement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guest_mem.h"
#include "session_rec.h"
#include "trace.h"
#include "trace_replay.h"
#include "vhostlab/vhostlab.h"
#include "vring.h"

#define QSIZE 16u
#define F(bit) VL_FEATURE(bit)

struct fx {
	struct lab_gmem *g;
	struct vl_mem *mem;
	struct lab_ring ring;
	struct vl_vq *vq;
	struct vl_pool *pool;
	struct lab_srec *rec;
	enum vl_layout layout;
	bool tx;
	uint64_t features;
	uint8_t next_seed;
	/* The race: after the core's read of `race_gpa`, post `race_chains` more. */
	uint64_t race_gpa;
	uint32_t race_chains;
	bool raced;
};

static struct fx *fx_new(enum vl_layout layout, bool tx, uint64_t extra)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct lab_gmem_config gc = {.ram_size = 1u << 20,
				     .ring_area_size = lab_ring_area_bytes(layout, QSIZE),
				     .granularity = 0, .seed = 3};
	char err[128];
	uint32_t n;
	int e = 0;
	struct vl_vq_config cfg;

	assert_non_null(f);
	f->layout = layout;
	f->tx = tx;
	f->features = F(VL_F_VERSION_1) | F(VL_F_RING_INDIRECT_DESC) | extra |
		      (layout == VL_LAYOUT_PACKED ? F(VL_F_RING_PACKED) : 0);
	f->g = lab_gmem_create(&gc, err, sizeof(err));
	assert_non_null(f->g);
	const struct vl_mem_region *regs = lab_gmem_regions(f->g, &n);

	f->mem = vl_mem_create(regs, n, &e);
	assert_non_null(f->mem);
	assert_int_equal(lab_ring_init(&f->ring, layout, f->g, lab_gmem_ring_gpa(f->g), QSIZE, 0,
				       (extra & F(VL_F_IN_ORDER)) != 0, false), 0);
	vl_vq_config_init(&cfg, layout, QSIZE);
	lab_ring_device_config(&f->ring, &cfg);
	cfg.features = f->features;
	f->vq = vl_vq_create(f->mem, &cfg, &e);
	assert_non_null(f->vq);
	f->pool = vl_pool_create(256, 2048);
	assert_non_null(f->pool);
	f->rec = lab_srec_create(0);
	assert_non_null(f->rec);
	assert_true(lab_srec_memory(f->rec, f->mem));
	assert_true(lab_srec_queue(f->rec, 1, tx ? "tx0" : "rx0", tx ? LAB_TRACE_TX : LAB_TRACE_RX,
				   f->vq));
	f->next_seed = 1;
	return f;
}

static void fx_free(struct fx *f)
{
	lab_srec_destroy(f->rec);
	vl_vq_destroy(f->vq);
	lab_ring_fini(&f->ring);
	vl_mem_destroy(f->mem);
	assert_int_equal(vl_pool_destroy(f->pool), 0);
	lab_gmem_destroy(f->g);
	free(f);
}

static uint8_t *gp(struct fx *f, uint64_t gpa, uint64_t len)
{
	uint8_t *p = lab_gmem_guest_ptr(f->g, gpa, len);

	assert_non_null(p);
	return p;
}

/* A TX packet of len bytes: header and data in two descriptors, or (indirect) both in a
 * table of two entries behind one descriptor. */
static void post_tx(struct fx *f, uint32_t len, bool indirect)
{
	uint64_t hdr = lab_gmem_alloc(f->g, 12, 16), data = lab_gmem_alloc(f->g, len, 16);
	uint8_t *d = gp(f, data, len);

	memset(gp(f, hdr, 12), 0, 12);
	for (uint32_t i = 0; i < len; i++)
		d[i] = (uint8_t)(f->next_seed * 31 + i);
	f->next_seed++;
	if (!indirect) {
		struct lab_pdesc e[2] = {{hdr, 12, 0}, {data, len, 0}};

		assert_true(lab_ring_post(&f->ring, e, 2) >= 0);
		return;
	}
	uint64_t tab = lab_gmem_alloc(f->g, 32, 16);
	uint8_t *t = gp(f, tab, 32);
	uint32_t hlen = 12;

	/* Entries: address, length, then split flags + next (NEXT to entry 1), packed id +
	 * flags (consecutive entries, nothing to set). */
	memset(t, 0, 32);
	memcpy(t, &hdr, 8);
	memcpy(t + 8, &hlen, 4);
	if (f->layout == VL_LAYOUT_SPLIT) {
		uint16_t fl = VL_DESC_F_NEXT, next = 1;

		memcpy(t + 12, &fl, 2);
		memcpy(t + 14, &next, 2);
	}
	memcpy(t + 16, &data, 8);
	memcpy(t + 24, &len, 4);
	struct lab_pdesc e = {tab, 32, VL_DESC_F_INDIRECT};

	assert_true(lab_ring_post(&f->ring, &e, 1) >= 0);
}

/* An RX buffer of len bytes. */
static void post_rx(struct fx *f, uint32_t len)
{
	struct lab_pdesc e = {lab_gmem_alloc(f->g, len, 16), len, VL_DESC_F_WRITE};

	assert_true(lab_ring_post(&f->ring, &e, 1) >= 0);
}

static void harvest(struct fx *f)
{
	uint32_t id, len;

	while (lab_ring_pop_used(&f->ring, &id, &len) == 1)
		;
}

static uint16_t dequeue(struct fx *f)
{
	struct vl_pkt *pkts[32];

	lab_srec_begin(f->rec, 1, f->vq);
	uint16_t n = vl_net_dequeue(f->vq, f->pool, pkts, 32);

	lab_srec_dequeued(f->rec, 32, pkts, n);
	vl_pkt_free_bulk(pkts, n);
	harvest(f);
	return n;
}

static uint16_t enqueue(struct fx *f, const uint32_t *lens, uint16_t count)
{
	struct vl_pkt *pkts[8];
	uint8_t status[8];

	for (uint16_t i = 0; i < count; i++) {
		uint8_t buf[4096];

		for (uint32_t k = 0; k < lens[i]; k++)
			buf[k] = (uint8_t)(i * 7 + k);
		pkts[i] = vl_pkt_alloc_len(f->pool, lens[i]);
		assert_non_null(pkts[i]);
		vl_pkt_write(pkts[i], 0, buf, lens[i]);
	}
	lab_srec_begin(f->rec, 1, f->vq);
	uint16_t done = vl_net_enqueue(f->vq, pkts, count, status);

	lab_srec_enqueued(f->rec, pkts, count, done, status);
	vl_pkt_free_bulk(pkts, count);
	harvest(f);
	return done;
}

/* Replay the recorded trace; returns the status, result in *res. */
static enum lab_replay_status replay(const struct lab_trace *t, struct lab_replay_result *res)
{
	struct lab_replay_opts o = {.hooks = true};

	return lab_replay_run(t, &o, res);
}

static void assert_replays(struct fx *f, uint64_t packets)
{
	struct lab_replay_result res;
	struct lab_srec_counts c;
	const struct lab_trace *t = lab_srec_finish(f->rec);
	enum lab_replay_status st = replay(t, &res);

	if (st != LAB_REPLAY_PASS)
		fail_msg("replay: %s at statement %u '%s': expected %s, observed %s", res.signature,
			 res.op, res.statement, res.expected, res.observed);
	lab_srec_counts(f->rec, &c);
	assert_int_equal(c.packets, packets);
	assert_int_equal(res.packets_dequeued + res.packets_enqueued, packets);
}

/* The guest publishes race_chains more right after the core's read of race_gpa. */
static void racer(void *ctx, uint64_t gpa, size_t len)
{
	struct fx *f = ctx;

	(void)len;
	if (f->raced || gpa != f->race_gpa)
		return;
	f->raced = true;
	for (uint32_t i = 0; i < f->race_chains; i++) {
		if (f->tx)
			post_tx(f, 100, false);
		else
			post_rx(f, 2048);
	}
	lab_ring_publish(&f->ring);
}

/* Where the core reads the window: split avail->idx; packed, the flags of the descriptor
 * after the `posted` ones. */
static uint64_t window_gpa(struct fx *f, uint32_t posted)
{
	if (f->layout == VL_LAYOUT_SPLIT)
		return f->ring.s.avail_gpa + 2;
	return f->ring.p.desc_gpa + 16ull * posted + 14;
}

static void tx_with_race(enum vl_layout layout, bool indirect)
{
	struct fx *f = fx_new(layout, true, 0);

	post_tx(f, 60, false);
	post_tx(f, 1500, indirect);
	post_tx(f, 200, false);
	lab_ring_publish(&f->ring);
	f->race_gpa = window_gpa(f, 6 - (indirect ? 1 : 0));
	f->race_chains = 2;
	lab_srec_set_race(f->rec, racer, f);
	assert_int_equal(dequeue(f), 3);
	assert_true(f->raced);
	lab_srec_set_race(f->rec, NULL, NULL);
	assert_int_equal(dequeue(f), 2);
	assert_int_equal(dequeue(f), 0); /* changes nothing: not recorded */
	assert_replays(f, 5);
	fx_free(f);
}

static void test_split_tx_race(void **state)
{
	(void)state;
	tx_with_race(VL_LAYOUT_SPLIT, true);
}

static void test_packed_tx_race(void **state)
{
	(void)state;
	tx_with_race(VL_LAYOUT_PACKED, true);
}

/* Mergeable RX: of two packets the first fits the one buffer posted, the second (two
 * buffers' worth) finds no room; the guest posts more right after the core's window read,
 * which the trace must not show to that burst. Then the rest fits. */
static void rx_with_race(enum vl_layout layout)
{
	struct fx *f = fx_new(layout, false, F(VL_F_NET_MRG_RXBUF));
	uint32_t lens[3] = {100, 3000, 60};

	post_rx(f, 2048);
	lab_ring_publish(&f->ring);
	f->race_gpa = window_gpa(f, 1);
	f->race_chains = 3;
	lab_srec_set_race(f->rec, racer, f);
	assert_int_equal(enqueue(f, lens, 2), 1);
	assert_true(f->raced);
	lab_srec_set_race(f->rec, NULL, NULL);
	assert_int_equal(enqueue(f, lens + 1, 2), 2);
	assert_replays(f, 3);
	fx_free(f);
}

static void test_split_rx_race(void **state)
{
	(void)state;
	rx_with_race(VL_LAYOUT_SPLIT);
}

static void test_packed_rx_race(void **state)
{
	(void)state;
	rx_with_race(VL_LAYOUT_PACKED);
}

/* The null and touch bursts of serve (vl_net_discard, vl_net_discard_touch) recorded between
 * dequeues, the guest racing the first one's window read: the trace replays, its discards
 * return the same good chains and its dequeue the same packet. */
static void discards(enum vl_layout layout)
{
	struct fx *f = fx_new(layout, true, 0);
	struct lab_replay_result res;
	struct lab_srec_counts c;
	uint64_t bytes = 0, firsts = 0;

	post_tx(f, 60, false);
	post_tx(f, 1500, true);
	post_tx(f, 200, false);
	lab_ring_publish(&f->ring);
	f->race_gpa = window_gpa(f, 5);
	f->race_chains = 2;   /* 100 bytes each, payload seeds 4 and 5 */
	lab_srec_set_race(f->rec, racer, f);
	lab_srec_begin(f->rec, 1, f->vq);
	uint16_t n = vl_net_discard(f->vq, 32, &bytes);

	lab_srec_discarded(f->rec, 32, n, false);
	harvest(f);
	assert_int_equal(n, 3);
	assert_true(f->raced);
	assert_int_equal(bytes, 60 + 1500 + 200);
	lab_srec_set_race(f->rec, NULL, NULL);
	lab_srec_begin(f->rec, 1, f->vq);
	n = vl_net_discard_touch(f->vq, 32, &bytes, &firsts);
	lab_srec_discarded(f->rec, 32, n, true);
	harvest(f);
	assert_int_equal(n, 2);
	assert_int_equal(firsts, 4 * 31 + 5 * 31); /* post_tx's first payload bytes */
	post_tx(f, 80, false);
	lab_ring_publish(&f->ring);
	assert_int_equal(dequeue(f), 1);

	const struct lab_trace *t = lab_srec_finish(f->rec);
	uint32_t stmts = 0;

	for (uint32_t i = 0; i < t->nops; i++)
		if (t->ops[i].kind == LAB_T_DISCARD)
			assert_int_equal(t->ops[i].given, stmts++ ? LAB_TA_TOUCH : 0);
	assert_int_equal(stmts, 2);
	if (replay(t, &res) != LAB_REPLAY_PASS)
		fail_msg("replay: %s at statement %u '%s': expected %s, observed %s", res.signature,
			 res.op, res.statement, res.expected, res.observed);
	assert_int_equal(res.packets_discarded, 5);
	assert_int_equal(res.packets_dequeued, 1);
	lab_srec_counts(f->rec, &c);
	assert_int_equal(c.packets, 6);
	fx_free(f);
}

static void test_split_discards(void **state)
{
	(void)state;
	discards(VL_LAYOUT_SPLIT);
}

static void test_packed_discards(void **state)
{
	(void)state;
	discards(VL_LAYOUT_PACKED);
}

/* Many bursts around the ring (positions and indices wrap), both directions' statements. */
static void many_bursts(enum vl_layout layout)
{
	struct fx *f = fx_new(layout, true, F(VL_F_IN_ORDER));
	uint64_t total = 0;

	for (uint32_t round = 0; round < 20; round++) {
		for (uint32_t i = 0; i < 1 + round % 5; i++)
			post_tx(f, 64 + 97 * i, i % 2 == 1);
		lab_ring_publish(&f->ring);
		total += dequeue(f);
	}
	assert_int_equal(total, 60);
	assert_replays(f, 60);
	fx_free(f);
}

static void test_split_wraps(void **state)
{
	(void)state;
	many_bursts(VL_LAYOUT_SPLIT);
}

static void test_packed_wraps(void **state)
{
	(void)state;
	many_bursts(VL_LAYOUT_PACKED);
}

/* An edited expectation fails replay at that very statement. */
static void test_edited_trace_fails_there(void **state)
{
	struct fx *f = fx_new(VL_LAYOUT_SPLIT, true, 0);
	struct lab_replay_result res;
	uint32_t at = UINT32_MAX;

	(void)state;
	post_tx(f, 300, false);
	lab_ring_publish(&f->ring);
	assert_int_equal(dequeue(f), 1);
	struct lab_trace *t = (struct lab_trace *)lab_srec_finish(f->rec);

	for (uint32_t i = 0; i < t->nops && at == UINT32_MAX; i++)
		if (t->ops[i].kind == LAB_T_EXPECT_PACKET)
			at = i;
	assert_true(at != UINT32_MAX);
	t->ops[at].pat.value ^= 1;
	assert_int_equal(replay(t, &res), LAB_REPLAY_DIVERGED);
	assert_int_equal(res.op, at);
	assert_string_equal(res.signature, "expect packet:data");
	fx_free(f);
}

/* A ring set up anew (other positions) cannot continue the trace: recording stops, and what
 * was recorded still replays. */
static void test_restarted_ring_stops_recording(void **state)
{
	struct fx *f = fx_new(VL_LAYOUT_SPLIT, true, 0);

	(void)state;
	post_tx(f, 80, false);
	lab_ring_publish(&f->ring);
	assert_int_equal(dequeue(f), 1);
	post_tx(f, 80, false);
	lab_ring_publish(&f->ring);
	/* The same ring after a burst the recorder did not see. */
	struct vl_pkt *p;

	assert_int_equal(vl_net_dequeue(f->vq, f->pool, &p, 1), 1);
	vl_pkt_free(p);
	assert_false(lab_srec_queue(f->rec, 1, "tx0", LAB_TRACE_TX, f->vq));
	assert_non_null(strstr(lab_srec_stopped(f->rec), "set up again"));
	assert_replays(f, 1);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_tx_race),
		cmocka_unit_test(test_packed_tx_race),
		cmocka_unit_test(test_split_rx_race),
		cmocka_unit_test(test_packed_rx_race),
		cmocka_unit_test(test_split_discards),
		cmocka_unit_test(test_packed_discards),
		cmocka_unit_test(test_split_wraps),
		cmocka_unit_test(test_packed_wraps),
		cmocka_unit_test(test_edited_trace_fails_there),
		cmocka_unit_test(test_restarted_ring_stops_recording),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

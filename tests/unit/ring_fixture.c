/* SPDX-License-Identifier: MIT */
/* Fixture shared by the ring and net unit tests: see ring_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ring_fixture.h"

/* Bytes of the straddle window on each side of the boundary (see rf_straddle). */
#define RF_STRADDLE_BEFORE 2048u
#define RF_STRADDLE_AFTER 6144u

void rf_cfg_init(struct rf_cfg *cfg, uint64_t granularity)
{
	*cfg = (struct rf_cfg){
		.granularity = granularity,
		/* CSUM: TX headers carry offloads the core checks (without it they are ignored).
		 * GUEST_CSUM and GUEST_TSO4: the driver takes the RX offloads the tests send
		 * (checksum flags, TCPv4 GSO); test_net's rx_offload rows narrow them. */
		.features = VL_FEATURE(VL_F_RING_INDIRECT_DESC) | VL_FEATURE(VL_F_VERSION_1) |
			    VL_FEATURE(VL_F_NET_CSUM) | VL_FEATURE(VL_F_NET_GUEST_CSUM) |
			    VL_FEATURE(VL_F_NET_GUEST_TSO4),
		.qsize = 256,
		.start_idx = 0,
		.batch_threshold = VL_BATCH_THRESHOLD_DEFAULT,
		.ram_size = 1024 * 1024,
		.seed = 7,
		.layout = VL_LAYOUT_SPLIT,
		.start_wrap = true,
	};
}

void rf_cfg_init_packed(struct rf_cfg *cfg, uint64_t granularity, uint32_t qsize)
{
	rf_cfg_init(cfg, granularity);
	cfg->layout = VL_LAYOUT_PACKED;
	cfg->qsize = qsize;
}

void rf_vq_config(const struct rf *f, const struct rf_q *s, struct vl_vq_config *qc)
{
	vl_vq_config_init(qc, f->cfg.layout, f->cfg.qsize);
	qc->features = f->cfg.features; /* rf_setup added RING_PACKED for packed */
	qc->batch_threshold = f->cfg.batch_threshold;
	if (f->cfg.layout == VL_LAYOUT_PACKED) {
		uint16_t at = (uint16_t)(f->cfg.start_idx |
					 (f->cfg.start_wrap ? VL_PACKED_WRAP_BIT : 0));

		qc->last_avail_idx = at;
		qc->last_used_idx = at;
		qc->desc_gpa = s->pr.desc_gpa;
		qc->driver_gpa = s->pr.driver_gpa;
		qc->device_gpa = s->pr.device_gpa;
	} else {
		qc->last_avail_idx = f->cfg.start_idx;
		qc->desc_gpa = s->vr.desc_gpa;
		qc->driver_gpa = s->vr.avail_gpa;
		qc->device_gpa = s->vr.used_gpa;
	}
}

static uint64_t ring_area_bytes(const struct rf_cfg *cfg)
{
	return cfg->layout == VL_LAYOUT_PACKED ? lab_pring_area_bytes(cfg->qsize)
					       : lab_vring_area_bytes(cfg->qsize);
}

static void q_setup(struct rf *f, struct rf_q *s, uint64_t ring_gpa, bool rx)
{
	struct vl_vq_config qc;
	int err = -1;

	s->rx = rx;
	s->layout = f->cfg.layout;
	if (s->layout == VL_LAYOUT_PACKED) {
		bool in_order = (f->cfg.features & VL_FEATURE(VL_F_IN_ORDER)) != 0;

		assert_int_equal(lab_pring_init(&s->pr, f->g, ring_gpa, f->cfg.qsize,
						f->cfg.start_idx, f->cfg.start_wrap, in_order),
				 0);
	} else {
		assert_int_equal(lab_vring_init(&s->vr, f->g, ring_gpa, f->cfg.qsize,
						f->cfg.start_idx),
				 0);
		s->chain_desc = calloc((size_t)f->cfg.qsize * RF_MAX_CHAIN,
				       sizeof(*s->chain_desc));
		s->chain_n = calloc(f->cfg.qsize, sizeof(*s->chain_n));
		assert_non_null(s->chain_desc);
		assert_non_null(s->chain_n);
	}
	rf_vq_config(f, s, &qc);
	s->q = vl_vq_create(f->mem, &qc, &err);
	assert_non_null(s->q);
	assert_int_equal(err, VL_OK);
}

/* Reserve RAM around the end of the first RAM region: a pad up to the window (freed again)
 * so the first-fit allocator places the window exactly there. */
static void reserve_straddle_window(struct rf *f)
{
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(f->g, &n);

	assert_true(n >= 3); /* ring area + at least two RAM regions */
	uint64_t boundary = r[1].gpa + r[1].size;

	assert_int_equal(r[1].gpa, lab_gmem_ram_gpa(f->g));
	assert_int_equal(r[2].gpa, boundary);
	uint64_t pad_len = boundary - RF_STRADDLE_BEFORE - r[1].gpa;
	uint64_t pad = 0;

	if (pad_len > 0) {
		pad = lab_gmem_alloc(f->g, pad_len, 64);
		assert_int_equal(pad, r[1].gpa);
	}
	uint64_t win = lab_gmem_alloc(f->g, RF_STRADDLE_BEFORE + RF_STRADDLE_AFTER, 64);

	assert_int_equal(win, boundary - RF_STRADDLE_BEFORE);
	if (pad_len > 0)
		lab_gmem_free(f->g, pad, pad_len);
	f->straddle_gpa = boundary;
}

void rf_setup(struct rf *f, const struct rf_cfg *cfg)
{
	char msg[256] = "";
	int err = -1;
	uint32_t n = 0;

	memset(f, 0, sizeof(*f));
	f->cfg = *cfg;
	if (cfg->layout == VL_LAYOUT_PACKED)
		f->cfg.features |= VL_FEATURE(VL_F_RING_PACKED);
	f->hdr_len = vl_net_hdr_len(f->cfg.features);

	struct lab_gmem_config gc = {
		.ram_size = cfg->ram_size,
		.ring_area_size = 2 * ring_area_bytes(cfg),
		.granularity = cfg->granularity,
		.seed = cfg->seed,
	};

	f->g = lab_gmem_create(&gc, msg, sizeof(msg));
	if (!f->g)
		fail_msg("lab_gmem_create: %s", msg);
	const struct vl_mem_region *regs = lab_gmem_regions(f->g, &n);

	f->mem = vl_mem_create(regs, n, &err);
	assert_non_null(f->mem);
	/* The guard pages keep every region a separate host mapping: nothing merges. */
	assert_int_equal(vl_mem_region_count(f->mem), n);

	uint64_t ring = lab_gmem_ring_gpa(f->g);

	q_setup(f, &f->tx, ring, false);
	q_setup(f, &f->rx, ring + ring_area_bytes(cfg), true);
	f->pool = vl_pool_create(RF_POOL_BUFS, RF_POOL_BUF_SIZE);
	assert_non_null(f->pool);
	reserve_straddle_window(f);
}

void rf_setup_gran(struct rf *f, uint64_t granularity)
{
	struct rf_cfg cfg;

	rf_cfg_init(&cfg, granularity);
	rf_setup(f, &cfg);
}

void rf_case_run(const struct rf_case *c)
{
	const uint32_t qsize = c->qsize ? c->qsize : 256;
	struct rf_cfg cfg;
	struct rf f;

	if (c->layout == VL_LAYOUT_PACKED)
		rf_cfg_init_packed(&cfg, c->granularity, qsize);
	else
		rf_cfg_init(&cfg, c->granularity);
	cfg.qsize = qsize;
	cfg.start_idx = c->start_idx;
	cfg.features |= c->features;
	cfg.features &= ~c->features_off;
	if (c->wrap0)
		cfg.start_wrap = false;
	if (c->ram_size)
		cfg.ram_size = c->ram_size;
	if (c->no_batch)
		cfg.batch_threshold = 0;
	rf_setup(&f, &cfg);
	if (c->side_fn)
		c->side_fn(&f, rf_side(&f, c->rx));
	else
		c->fn(&f);
	rf_teardown(&f);
}

static void case_test(void **state)
{
	rf_case_run(*state);
}

int rf_run_cases(const char *group, const struct rf_case *cases, size_t n,
		 const struct CMUnitTest *more, size_t n_more)
{
	struct CMUnitTest *tests = calloc(n + n_more, sizeof(*tests));

	if (!tests) {
		print_error("rf_run_cases: no memory for %zu tests\n", n + n_more);
		return (int)(n + n_more);
	}
	for (size_t i = 0; i < n; i++)
		tests[i] = (struct CMUnitTest){
			.name = cases[i].name,
			.test_func = case_test,
			/* cmocka passes the state on as void *; case_test only reads it. */
			.initial_state = (void *)&cases[i],
		};
	for (size_t i = 0; i < n_more; i++)
		tests[n + i] = more[i];

	int failed = _cmocka_run_group_tests(group, tests, n + n_more, NULL, NULL);

	free(tests);
	return failed;
}

static void q_teardown(struct rf_q *s)
{
	vl_vq_destroy(s->q);
	if (s->layout == VL_LAYOUT_PACKED)
		lab_pring_fini(&s->pr);
	else
		lab_vring_fini(&s->vr);
	free(s->chain_desc);
	free(s->chain_n);
}

void rf_teardown(struct rf *f)
{
	q_teardown(&f->tx);
	q_teardown(&f->rx);
	/* Every packet a scenario took must have come back. */
	assert_int_equal(vl_pool_destroy(f->pool), 0);
	vl_mem_destroy(f->mem);
	lab_gmem_destroy(f->g);
	memset(f, 0, sizeof(*f));
}

struct rf_q *rf_side(struct rf *f, bool rx)
{
	return rx ? &f->rx : &f->tx;
}

/* ---- guest RAM ------------------------------------------------------------------------- */

uint64_t rf_alloc(struct rf *f, uint64_t len)
{
	uint64_t gpa = lab_gmem_alloc(f->g, len, 64);

	assert_true(gpa != 0);
	return gpa;
}

void *rf_ptr(struct rf *f, uint64_t gpa, uint64_t len)
{
	void *p = lab_gmem_guest_ptr(f->g, gpa, len);

	assert_non_null(p);
	return p;
}

void rf_write(struct rf *f, uint64_t gpa, const void *src, uint64_t len)
{
	memcpy(rf_ptr(f, gpa, len), src, len);
}

void rf_read(struct rf *f, uint64_t gpa, void *dst, uint64_t len)
{
	memcpy(dst, rf_ptr(f, gpa, len), len);
}

uint64_t rf_put_bytes(struct rf *f, const void *src, uint64_t len)
{
	uint64_t gpa = rf_alloc(f, len);

	rf_write(f, gpa, src, len);
	return gpa;
}

void rf_fill(struct rf *f, uint64_t gpa, uint8_t byte, uint64_t len)
{
	memset(rf_ptr(f, gpa, len), byte, len);
}

uint64_t rf_straddle(struct rf *f, uint32_t before)
{
	assert_true(before > 0 && before <= RF_STRADDLE_BEFORE);
	uint64_t gpa = f->straddle_gpa - before;
	uint64_t len = (uint64_t)before + 1;

	/* The core's own table must end a host mapping exactly at the boundary... */
	assert_non_null(vl_mem_translate(f->mem, gpa, &len, VL_ACCESS_READ));
	assert_int_equal(len, before);
	/* ...and the next one start there, somewhere else in host memory. */
	len = 1;
	assert_non_null(vl_mem_translate(f->mem, f->straddle_gpa, &len, VL_ACCESS_READ));
	return gpa;
}

uint8_t rf_pattern_byte(uint8_t seed, uint32_t i)
{
	return (uint8_t)(seed * 31u + i * 7u + (i >> 8) * 13u + 1u);
}

void rf_pattern(uint8_t *dst, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		dst[i] = rf_pattern_byte(seed, i);
}

void rf_assert_pattern_at(struct rf *f, uint64_t gpa, uint32_t len, uint8_t seed, uint32_t off)
{
	const uint8_t *p = rf_ptr(f, gpa, len);

	for (uint32_t i = 0; i < len; i++) {
		if (p[i] != rf_pattern_byte(seed, off + i))
			fail_msg("guest byte at gpa 0x%llx (pattern offset %u) is 0x%02x, "
				 "expected 0x%02x", (unsigned long long)(gpa + i), off + i, p[i],
				 rf_pattern_byte(seed, off + i));
	}
}

/* ---- descriptors ----------------------------------------------------------------------- */

uint16_t rf_desc(struct rf_q *s)
{
	assert_int_equal(s->layout, VL_LAYOUT_SPLIT);
	int d = lab_vring_desc_get(&s->vr);

	assert_true(d >= 0);
	return (uint16_t)d;
}

void rf_set_desc(struct rf_q *s, uint16_t idx, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	assert_int_equal(s->layout, VL_LAYOUT_SPLIT);
	lab_vring_set_desc(&s->vr, idx, addr, len, flags, next);
}

void rf_post_head(struct rf_q *s, uint16_t head, const uint16_t *descs, uint32_t n)
{
	assert_int_equal(s->layout, VL_LAYOUT_SPLIT);
	assert_true(head < s->vr.size);
	assert_true(n <= RF_MAX_CHAIN);
	memcpy(&s->chain_desc[(size_t)head * RF_MAX_CHAIN], descs, n * sizeof(*descs));
	s->chain_n[head] = (uint16_t)n;
	lab_vring_add_avail(&s->vr, head);
	lab_vring_kick(&s->vr);
}

/* Packed: the driver writes the chain into consecutive ring descriptors (NEXT on all but the
 * last, the buffer id in each, the head's flags last). */
static uint16_t post_chain_packed(struct rf_q *s, const struct rf_desc *d, uint32_t n)
{
	struct lab_pdesc *e = calloc(n, sizeof(*e));

	assert_non_null(e);
	for (uint32_t i = 0; i < n; i++)
		e[i] = (struct lab_pdesc){ d[i].gpa, d[i].len, d[i].flags };
	int id = lab_pring_post(&s->pr, e, n);

	free(e);
	if (id < 0)
		fail_msg("packed ring: no room for a chain of %u descriptors", n);
	return (uint16_t)id;
}

uint16_t rf_post_chain(struct rf_q *s, const struct rf_desc *d, uint32_t n)
{
	uint16_t idx[RF_MAX_CHAIN];

	if (s->layout == VL_LAYOUT_PACKED) {
		assert_true(n > 0 && n <= s->pr.size);
		return post_chain_packed(s, d, n);
	}
	assert_true(n > 0 && n <= RF_MAX_CHAIN);
	for (uint32_t i = 0; i < n; i++)
		idx[i] = rf_desc(s);
	for (uint32_t i = 0; i < n; i++) {
		bool more = i + 1 < n;

		rf_set_desc(s, idx[i], d[i].gpa, d[i].len,
			    (uint16_t)(d[i].flags | (more ? VL_DESC_F_NEXT : 0)),
			    more ? idx[i + 1] : 0);
	}
	rf_post_head(s, idx[0], idx, n);
	return idx[0];
}

void rf_write_table(struct rf *f, uint64_t gpa, const struct rf_desc *d, uint32_t n)
{
	uint8_t *p = rf_ptr(f, gpa, (uint64_t)n * sizeof(struct vl_split_desc));

	for (uint32_t i = 0; i < n; i++) {
		bool more = i + 1 < n;
		struct vl_split_desc e = {
			.addr = d[i].gpa,
			.len = d[i].len,
			.flags = (uint16_t)(d[i].flags | (more ? VL_DESC_F_NEXT : 0)),
			.next = (uint16_t)(more ? i + 1 : 0),
		};

		/* The table may sit at any alignment (straddle cases): copy bytes. */
		memcpy(p + (size_t)i * sizeof(e), &e, sizeof(e));
	}
}

void rf_write_ptable(struct rf *f, uint64_t gpa, const struct rf_desc *d, uint32_t n)
{
	uint8_t *p = rf_ptr(f, gpa, (uint64_t)n * sizeof(struct vl_packed_desc));

	for (uint32_t i = 0; i < n; i++) {
		struct vl_packed_desc e = {
			.addr = d[i].gpa,
			.len = d[i].len,
			.id = 0xFFFF,
			.flags = d[i].flags,
		};

		memcpy(p + (size_t)i * sizeof(e), &e, sizeof(e));
	}
}

void rf_write_qtable(struct rf *f, const struct rf_q *s, uint64_t gpa, const struct rf_desc *d,
		     uint32_t n)
{
	if (s->layout == VL_LAYOUT_PACKED)
		rf_write_ptable(f, gpa, d, n);
	else
		rf_write_table(f, gpa, d, n);
}

uint64_t rf_valid_table(struct rf *f, const struct rf_q *s)
{
	uint64_t buf = rf_alloc(f, f->hdr_len + 40);
	uint64_t t = rf_alloc(f, 32);

	rf_fill(f, buf, 0, f->hdr_len + 40);
	struct rf_desc e[2] = {
		{ buf, f->hdr_len, rf_dirf(s) },
		{ buf + f->hdr_len, 40, rf_dirf(s) },
	};

	rf_write_qtable(f, s, t, e, 2);
	return t;
}

uint16_t rf_post_indirect(struct rf_q *s, uint64_t table_gpa, uint32_t table_len)
{
	struct rf_desc d = { table_gpa, table_len, VL_DESC_F_INDIRECT };

	return rf_post_chain(s, &d, 1);
}

/* ---- well-formed traffic --------------------------------------------------------------- */

void rf_write_tx_pkt(struct rf *f, uint64_t gpa, uint32_t len, uint8_t seed)
{
	uint8_t *p = rf_ptr(f, gpa, (uint64_t)f->hdr_len + len);

	memset(p, 0, f->hdr_len);
	rf_pattern(p + f->hdr_len, len, seed);
}

void rf_good_fill(struct rf *f, const struct rf_q *s, const struct rf_good *g)
{
	if (s->rx)
		rf_fill(f, g->gpa, 0xA5, f->hdr_len + g->len); /* shows what the device wrote */
	else
		rf_write_tx_pkt(f, g->gpa, g->len, g->seed);
}

struct rf_good rf_good_buf(struct rf *f, const struct rf_q *s, uint32_t len, uint8_t seed)
{
	struct rf_good g = { .len = len, .seed = seed };

	g.gpa = rf_alloc(f, f->hdr_len + len);
	rf_good_fill(f, s, &g);
	return g;
}

struct rf_good rf_post_good_n(struct rf *f, struct rf_q *s, uint32_t len, uint8_t seed,
			      uint32_t ndescs)
{
	const uint32_t total = f->hdr_len + len;
	struct rf_desc d[8];

	assert_true(ndescs >= 1 && ndescs <= 8 && ndescs <= total);
	struct rf_good g = rf_good_buf(f, s, len, seed);

	for (uint32_t i = 0, off = 0; i < ndescs; i++) {
		uint32_t l = i + 1 < ndescs ? total / ndescs : total - off;

		d[i] = (struct rf_desc){ g.gpa + off, l, s->rx ? VL_DESC_F_WRITE : 0 };
		off += l;
	}
	g.head = rf_post_chain(s, d, ndescs);
	return g;
}

struct rf_good rf_post_good(struct rf *f, struct rf_q *s, uint32_t len, uint8_t seed)
{
	return rf_post_good_n(f, s, len, seed, 1);
}

struct rf_good rf_good_slices(struct rf *f, const struct rf_q *s, struct rf_desc *d,
			      uint32_t n, uint8_t seed)
{
	struct rf_good g = { .seed = seed };

	assert_true(n >= 1);
	if (s->rx) {
		g.len = 8 * n - f->hdr_len;
		g.gpa = rf_alloc(f, 8ull * n);
		rf_fill(f, g.gpa, 0xA5, 8ull * n);
		for (uint32_t i = 0; i < n; i++)
			d[i] = (struct rf_desc){ g.gpa + 8ull * i, 8, VL_DESC_F_WRITE };
		return g;
	}
	g.len = 4 * (n - 1);
	g.gpa = rf_alloc(f, f->hdr_len + g.len);
	rf_write_tx_pkt(f, g.gpa, g.len, seed);
	d[0] = (struct rf_desc){ g.gpa, f->hdr_len, 0 };
	for (uint32_t i = 1; i < n; i++)
		d[i] = (struct rf_desc){ g.gpa + f->hdr_len + 4ull * (i - 1), 4, 0 };
	return g;
}

struct rf_good rf_post_longest_chain(struct rf *f, struct rf_q *s, uint8_t seed)
{
	const uint32_t n = f->cfg.qsize;
	struct rf_desc *d = calloc(n, sizeof(*d));

	assert_non_null(d);
	struct rf_good g = rf_good_slices(f, s, d, n, seed);

	g.head = rf_post_chain(s, d, n);
	free(d);
	return g;
}

void rf_free_good(struct rf *f, const struct rf_good *g)
{
	lab_gmem_free(f->g, g->gpa, f->hdr_len + g->len);
}

uint32_t rf_good_used_len(const struct rf *f, const struct rf_q *s, const struct rf_good *g)
{
	return s->rx ? f->hdr_len + g->len : 0;
}

void rf_burst_expect_goods_ask(struct rf *f, struct rf_q *s, const struct rf_good *g,
			       uint32_t n, uint16_t tx_count)
{
	struct vl_pkt *pkts[512];
	uint8_t st[512];

	assert_true(n > 0 && n <= 256 && tx_count <= 512);
	if (!s->rx) {
		assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, tx_count), n);
		for (uint32_t i = 0; i < n; i++) {
			rf_assert_pkt_pattern(pkts[i], g[i].len, g[i].seed);
			assert_int_equal(pkts[i]->ol.flags, 0);
			assert_int_equal(pkts[i]->ol.gso_type, 0);
			vl_pkt_free(pkts[i]);
		}
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		pkts[i] = rf_make_pkt(f, g[i].len, g[i].seed);
		st[i] = 0xFF;
	}
	assert_int_equal(vl_net_enqueue(s->q, pkts, (uint16_t)n, st), n);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(st[i], VL_RX_DELIVERED);
		vl_pkt_free(pkts[i]);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t hdr[12];
		const uint8_t zero[10] = {0};

		rf_read(f, g[i].gpa, hdr, f->hdr_len);
		assert_memory_equal(hdr, zero, 10);
		if (f->hdr_len == 12)
			assert_int_equal(hdr[10] | hdr[11] << 8, 1);
		rf_assert_pattern_at(f, g[i].gpa + f->hdr_len, g[i].len, g[i].seed, 0);
	}
}

void rf_burst_expect_goods(struct rf *f, struct rf_q *s, const struct rf_good *g, uint32_t n)
{
	/* TX asks for more than expected: exactly these n must come out, in order. */
	rf_burst_expect_goods_ask(f, s, g, n, 512);
}

void rf_burst_expect_returned(struct rf *f, struct rf_q *s, const struct rf_good *g, uint32_t n)
{
	rf_burst_expect_goods(f, s, g, n);
	for (uint32_t i = 0; i < n; i++) {
		rf_expect_used(s, g[i].head, rf_good_used_len(f, s, &g[i]));
		rf_free_good(f, &g[i]);
	}
	rf_expect_no_used(s);
}

void rf_expect_only_good(struct rf *f, struct rf_q *s, const struct rf_good *g)
{
	rf_burst_expect_good(f, s, g);
	rf_expect_used(s, g->head, rf_good_used_len(f, s, g));
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	rf_expect_still_works(f, s);
}

void rf_burst_expect_good(struct rf *f, struct rf_q *s, const struct rf_good *g)
{
	rf_burst_expect_goods(f, s, g, 1);
}

/* ---- used ring ------------------------------------------------------------------------- */

struct vl_packed_desc *rf_pdesc(struct rf_q *s, uint16_t pos)
{
	assert_int_equal(s->layout, VL_LAYOUT_PACKED);
	assert_true(pos < s->pr.size);
	return &s->pr.desc[pos];
}

uint16_t rf_pavail_enc(const struct rf_q *s)
{
	return (uint16_t)(s->pr.next_avail | (s->pr.avail_wrap ? VL_PACKED_WRAP_BIT : 0));
}

bool rf_pop_used(struct rf_q *s, uint32_t *id, uint32_t *len)
{
	if (s->layout == VL_LAYOUT_PACKED) {
		bool bad = false;

		if (lab_pring_pop_used(&s->pr, id, len, &bad))
			return true;
		if (bad)
			fail_msg("the device returned id %u, which the driver has not in flight",
				 *id);
		return false;
	}
	if (!lab_vring_pop_used(&s->vr, id, len))
		return false;
	if (*id < s->vr.size) {
		const uint16_t *d = &s->chain_desc[(size_t)*id * RF_MAX_CHAIN];

		for (uint32_t i = 0; i < s->chain_n[*id]; i++)
			lab_vring_desc_put(&s->vr, d[i]);
		s->chain_n[*id] = 0;
	}
	return true;
}

void rf_expect_used(struct rf_q *s, uint16_t id, uint32_t len)
{
	uint32_t got_id = UINT32_MAX, got_len = UINT32_MAX;

	if (!rf_pop_used(s, &got_id, &got_len))
		fail_msg("expected used entry (id %u, len %u), the ring has none", id, len);
	if (got_id != id || got_len != len)
		fail_msg("used entry is (id %u, len %u), expected (id %u, len %u)", got_id,
			 got_len, id, len);
}

void rf_expect_no_used(struct rf_q *s)
{
	if (s->layout == VL_LAYOUT_PACKED) {
		uint32_t id = UINT32_MAX, len = UINT32_MAX;

		if (rf_pop_used(s, &id, &len))
			fail_msg("unexpected used buffer (id %u, len %u)", id, len);
		return;
	}
	assert_int_equal(lab_vring_used_pending(&s->vr), 0);
}

/* ---- packets --------------------------------------------------------------------------- */

struct vl_pkt *rf_make_pkt(struct rf *f, uint32_t len, uint8_t seed)
{
	struct vl_pkt *pkt = vl_pkt_alloc_len(f->pool, len);
	uint8_t *tmp = malloc(len ? len : 1);

	assert_non_null(pkt);
	assert_non_null(tmp);
	rf_pattern(tmp, len, seed);
	assert_int_equal(vl_pkt_write(pkt, 0, tmp, len), len);
	free(tmp);
	return pkt;
}

void rf_assert_pkt_pattern(const struct vl_pkt *pkt, uint32_t len, uint8_t seed)
{
	assert_non_null(pkt);
	assert_int_equal(pkt->pkt_len, len);
	uint8_t *tmp = malloc(len ? len : 1);

	assert_non_null(tmp);
	assert_int_equal(vl_pkt_read(pkt, 0, tmp, len), len);
	for (uint32_t i = 0; i < len; i++) {
		if (tmp[i] != rf_pattern_byte(seed, i)) {
			uint8_t got = tmp[i];

			free(tmp);
			fail_msg("packet byte %u is 0x%02x, expected 0x%02x", i, got,
				 rf_pattern_byte(seed, i));
		}
	}
	free(tmp);
}

uint64_t rf_drops(const struct rf_q *s, enum vl_drop why)
{
	return vl_vq_stats(s->q)->drops[why];
}

uint64_t rf_drops_other(const struct rf_q *s, enum vl_drop except)
{
	uint64_t sum = 0;

	for (int i = VL_DROP_NONE + 1; i < VL_DROP__COUNT; i++)
		if (i != (int)except)
			sum += vl_vq_stats(s->q)->drops[i];
	return sum;
}

uint16_t rf_dirf(const struct rf_q *s)
{
	return s->rx ? VL_DESC_F_WRITE : 0;
}

void rf_expect_still_works(struct rf *f, struct rf_q *s)
{
	const bool packed = s->layout == VL_LAYOUT_PACKED;
	struct vl_vq_stats before = *vl_vq_stats(s->q);
	struct rf_good g = rf_post_good_n(f, s, 300, 0x51, packed ? 2 : 1);

	rf_burst_expect_good(f, s, &g);
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
	assert_memory_equal(before.drops, vl_vq_stats(s->q)->drops, sizeof(before.drops));
	assert_false(vl_vq_broken(s->q));
	if (packed) {
		assert_int_equal(vl_vq_last_avail(s->q), rf_pavail_enc(s));
		assert_int_equal(vl_vq_last_used(s->q), rf_pavail_enc(s));
	}
}

void rf_expect_bad_then_good(struct rf *f, struct rf_q *s, const uint16_t *bad, uint32_t nbad,
			     enum vl_drop why)
{
	const struct vl_vq_stats *st = vl_vq_stats(s->q);
	const uint64_t chains = st->chains, used = st->used_entries;
	struct rf_good g = rf_post_good(f, s, 100, 0x3C);

	rf_burst_expect_good(f, s, &g);
	assert_int_equal(rf_drops(s, why), nbad);
	assert_int_equal(rf_drops_other(s, why), 0);
	assert_false(vl_vq_broken(s->q));
	assert_int_equal(vl_vq_broken_reason(s->q), VL_DROP_NONE);
	assert_int_equal(st->chains, chains + nbad + 1);
	assert_int_equal(st->used_entries, used + nbad + 1);
	if (s->layout == VL_LAYOUT_SPLIT)
		assert_int_equal(lab_vring_used_pending(&s->vr), nbad + 1);
	for (uint32_t i = 0; i < nbad; i++)
		rf_expect_used(s, bad[i], 0);
	rf_expect_used(s, g.head, rf_good_used_len(f, s, &g));
	rf_expect_no_used(s);
	rf_expect_still_works(f, s);
}

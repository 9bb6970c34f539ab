/* SPDX-License-Identifier: MIT */
/* Unit tests for packet buffers and pools (vl_pkt.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "vhostlab/vl_pkt.h"
#include "vl_lab_control.h"

#define SENTINEL 0xEEu

/* ---- helpers ---------------------------------------------------------------------------- */

/* The stress test's shapes: one stream, seeded where it starts. */
static struct lab_rng rng;

static uint32_t rng_below(uint32_t n)
{
	return lab_rng_below(&rng, n);
}

static struct vl_pool *pool_ok(uint32_t count, uint32_t buf_size)
{
	struct vl_pool *pool = vl_pool_create(count, buf_size);

	assert_non_null(pool);
	assert_int_equal(vl_pool_capacity(pool), count);
	assert_int_equal(vl_pool_buf_size(pool), buf_size);
	assert_int_equal(vl_pool_free_count(pool), count);
	assert_int_equal(vl_pool_alloc_failures(pool), 0);
	return pool;
}

/* A packet as vl_pool_alloc_bulk promises to hand it out. */
static void check_fresh(const struct vl_pkt *p, const struct vl_pool *pool)
{
	assert_non_null(p);
	assert_ptr_equal(p->pool, pool);
	assert_null(p->next);
	assert_non_null(p->buf);
	assert_ptr_equal(p->data, p->buf);
	assert_int_equal(p->buf_len, vl_pool_buf_size(pool));
	assert_int_equal(p->data_len, 0);
	assert_int_equal(p->pkt_len, 0);
	assert_int_equal(p->nb_segs, 1);
	assert_int_equal(p->refcnt, 1);
	assert_int_equal(p->ol.flags, 0);
	assert_int_equal(p->ol.gso_type, 0);
	assert_int_equal(p->ol.hdr_len, 0);
	assert_int_equal(p->ol.gso_size, 0);
	assert_int_equal(p->ol.csum_start, 0);
	assert_int_equal(p->ol.csum_offset, 0);
}

static uint32_t segs_for(uint32_t len, uint32_t bs)
{
	uint32_t n = len / bs + (len % bs != 0);

	return n ? n : 1;
}

/* The shape vl_pkt_alloc_len promises: nseg segments, every one full but the last. */
static void check_layout(const struct vl_pkt *p, const struct vl_pool *pool, uint32_t len)
{
	uint32_t bs = vl_pool_buf_size(pool);
	uint32_t nseg = segs_for(len, bs);
	uint32_t left = len, n = 0;

	assert_non_null(p);
	assert_int_equal(p->pkt_len, len);
	assert_int_equal(p->nb_segs, nseg);
	assert_int_equal(p->refcnt, 1);
	for (const struct vl_pkt *s = p; s; s = s->next) {
		uint32_t want = left < bs ? left : bs;

		assert_true(n < nseg);
		assert_ptr_equal(s->pool, pool);
		assert_ptr_equal(s->data, s->buf);
		assert_int_equal(s->buf_len, bs);
		assert_int_equal(s->data_len, want);
		left -= want;
		n++;
	}
	assert_int_equal(n, nseg);
	assert_int_equal(left, 0);
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13 + (i >> 8));
}

static void expect_bytes(const uint8_t *p, size_t n, uint8_t value)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(p[i], value);
}

/* ---- pool creation ------------------------------------------------------------------------ */

static void test_pool_create_limits(void **state)
{
	(void)state;
	assert_null(vl_pool_create(0, 64));
	assert_null(vl_pool_create(64, 0));
	assert_null(vl_pool_create(0, 0));
	/* Too large: refused up front rather than attempted. */
	assert_null(vl_pool_create(UINT32_MAX, 64));
	assert_null(vl_pool_create(64, UINT32_MAX));
	assert_null(vl_pool_create(UINT32_MAX, UINT32_MAX));
	assert_int_equal(vl_pool_destroy(NULL), 0);

	/* The smallest pool: one buffer of one byte. */
	struct vl_pool *pool = pool_ok(1, 1);
	struct vl_pkt *p = vl_pkt_alloc(pool);

	check_fresh(p, pool);
	p->buf[0] = 0x5a;
	assert_null(vl_pkt_alloc(pool));
	assert_int_equal(vl_pool_alloc_failures(pool), 1);
	assert_int_equal(vl_pool_free_count(pool), 0);
	vl_pkt_free(p);
	assert_int_equal(vl_pool_free_count(pool), 1);
	assert_int_equal(vl_pool_destroy(pool), 0);

	pool = pool_ok(1000, 2048);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

static void test_alloc_fresh_state(void **state)
{
	(void)state;
	enum { N = 8, BS = 128 };
	struct vl_pool *pool = pool_ok(N, BS);
	struct vl_pkt *p[N];

	assert_int_equal(vl_pool_alloc_bulk(pool, p, N), 0);
	assert_int_equal(vl_pool_free_count(pool), 0);
	for (int i = 0; i < N; i++) {
		check_fresh(p[i], pool);
		/* Distinct descriptors, disjoint buffers. */
		for (int j = 0; j < i; j++) {
			uintptr_t a = (uintptr_t)p[i]->buf, b = (uintptr_t)p[j]->buf;

			assert_ptr_not_equal(p[i], p[j]);
			assert_true(a >= b + BS || b >= a + BS);
		}
		memset(p[i]->buf, i + 1, BS);
	}
	for (int i = 0; i < N; i++)
		expect_bytes(p[i]->buf, BS, (uint8_t)(i + 1));

	/* Dirty every field an earlier user may leave behind, then return them. */
	for (int i = 0; i < N; i++) {
		p[i]->data = p[i]->buf + 10;
		p[i]->data_len = 5;
		p[i]->pkt_len = 77;
		p[i]->ol = (struct vl_offload){.flags = 1, .gso_type = 2, .hdr_len = 3,
					       .gso_size = 4, .csum_start = 5, .csum_offset = 6};
	}
	vl_pkt_free_bulk(p, N);
	assert_int_equal(vl_pool_free_count(pool), N);

	/* Everything comes back reset, one at a time this time. */
	for (int i = 0; i < N; i++) {
		p[i] = vl_pkt_alloc(pool);
		check_fresh(p[i], pool);
		assert_int_equal(vl_pool_free_count(pool), N - 1 - i);
	}
	/* A chained segment is reset too (next cleared, nb_segs back to 1). */
	p[0]->next = p[1];
	p[0]->nb_segs = 2;
	vl_pkt_free(p[0]); /* returns p[0] and p[1] */
	vl_pkt_free_bulk(p + 2, N - 2);
	assert_int_equal(vl_pool_free_count(pool), N);
	assert_int_equal(vl_pool_alloc_bulk(pool, p, N), 0);
	for (int i = 0; i < N; i++)
		check_fresh(p[i], pool);
	vl_pkt_free_bulk(p, N);
	assert_int_equal(vl_pool_alloc_failures(pool), 0);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* Every segment starts on a 64-byte cache line, whatever the segment size, and a whole
 * segment is writable without touching its neighbours (the sizes: under a line, an odd
 * one, a line and a half, serve's 2048). */
static void test_segments_start_on_lines(void **state)
{
	(void)state;
	static const uint32_t sizes[] = {1, 100, 96, 2048};
	enum { N = 5 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		const uint32_t bs = sizes[k];
		struct vl_pool *pool = pool_ok(N, bs);
		struct vl_pkt *p[N];

		assert_int_equal(vl_pool_alloc_bulk(pool, p, N), 0);
		for (int i = 0; i < N; i++) {
			assert_int_equal((uintptr_t)p[i]->buf % 64, 0);
			assert_int_equal(p[i]->buf_len, bs);
			memset(p[i]->buf, i + 1, bs);
		}
		for (int i = 0; i < N; i++)
			expect_bytes(p[i]->buf, bs, (uint8_t)(i + 1));
		vl_pkt_free_bulk(p, N);
		assert_int_equal(vl_pool_destroy(pool), 0);
	}
}

static void test_bulk_all_or_nothing(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(10, 64);
	struct vl_pkt *out[12];
	struct vl_pkt *extra[12];

	assert_int_equal(vl_pool_alloc_bulk(pool, out, 4), 0);
	assert_int_equal(vl_pool_free_count(pool), 6);
	/* One more than free: refused, nothing taken, one failure counted. */
	assert_int_equal(vl_pool_alloc_bulk(pool, extra, 7), -1);
	assert_int_equal(vl_pool_free_count(pool), 6);
	assert_int_equal(vl_pool_alloc_failures(pool), 1);
	/* More than the whole pool. */
	assert_int_equal(vl_pool_alloc_bulk(pool, extra, 11), -1);
	assert_int_equal(vl_pool_free_count(pool), 6);
	assert_int_equal(vl_pool_alloc_failures(pool), 2);
	/* Exactly what is free. */
	assert_int_equal(vl_pool_alloc_bulk(pool, out + 4, 6), 0);
	assert_int_equal(vl_pool_free_count(pool), 0);
	assert_int_equal(vl_pool_alloc_failures(pool), 2);
	for (int i = 0; i < 10; i++) {
		check_fresh(out[i], pool);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(out[i], out[j]);
	}
	/* Empty pool: every kind of allocation fails and is counted. */
	assert_int_equal(vl_pool_alloc_bulk(pool, extra, 1), -1);
	assert_null(vl_pkt_alloc(pool));
	assert_null(vl_pkt_alloc_len(pool, 1));
	assert_int_equal(vl_pool_alloc_failures(pool), 5);
	assert_int_equal(vl_pool_free_count(pool), 0);
	/* Zero packets: trivially all of them. */
	assert_int_equal(vl_pool_alloc_bulk(pool, extra, 0), 0);
	assert_int_equal(vl_pool_alloc_failures(pool), 5);

	vl_pkt_free_bulk(out, 10);
	assert_int_equal(vl_pool_free_count(pool), 10);
	/* The same ten come back (as a set). */
	assert_int_equal(vl_pool_alloc_bulk(pool, extra, 10), 0);
	for (int i = 0; i < 10; i++) {
		int found = 0;

		for (int j = 0; j < 10; j++)
			found += extra[i] == out[j];
		assert_int_equal(found, 1);
	}
	vl_pkt_free_bulk(extra, 10);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

static void test_free_count_bookkeeping(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(32, 100);
	struct vl_pkt *d[4];

	struct vl_pkt *a = vl_pkt_alloc(pool);

	assert_non_null(a);
	assert_int_equal(vl_pool_free_count(pool), 31);
	struct vl_pkt *b = vl_pkt_alloc_len(pool, 250); /* 100 + 100 + 50 */

	check_layout(b, pool, 250);
	assert_int_equal(vl_pool_free_count(pool), 28);
	struct vl_pkt *c = vl_pkt_alloc_len(pool, 0);

	check_layout(c, pool, 0);
	assert_int_equal(vl_pool_free_count(pool), 27);
	assert_int_equal(vl_pool_alloc_bulk(pool, d, 4), 0);
	assert_int_equal(vl_pool_free_count(pool), 23);

	vl_pkt_free(b);
	assert_int_equal(vl_pool_free_count(pool), 26);
	vl_pkt_free(NULL);
	assert_int_equal(vl_pool_free_count(pool), 26);
	vl_pkt_free_bulk(d, 4);
	assert_int_equal(vl_pool_free_count(pool), 30);
	vl_pkt_free_bulk(d, 0);
	assert_int_equal(vl_pool_free_count(pool), 30);

	struct vl_pkt *rest[3] = {a, NULL, c};

	vl_pkt_free_bulk(rest, 3);
	assert_int_equal(vl_pool_free_count(pool), 32);
	assert_int_equal(vl_pool_alloc_failures(pool), 0);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

static void test_refcount(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(4, 64);
	struct vl_pkt *p = vl_pkt_alloc(pool);

	assert_int_equal(p->refcnt, 1);
	vl_pkt_ref(p);
	assert_int_equal(p->refcnt, 2);
	assert_int_equal(vl_pool_free_count(pool), 3);
	vl_pkt_free(p);
	/* Still held: not back in the pool, still usable. */
	assert_int_equal(vl_pool_free_count(pool), 3);
	assert_int_equal(p->refcnt, 1);
	p->data_len = 1;
	p->pkt_len = 1;
	p->buf[0] = 0x42;
	assert_int_equal(vl_pool_free_count(pool), 3);
	vl_pkt_free(p);
	assert_int_equal(vl_pool_free_count(pool), 4);

	/* A multi-segment packet with three references returns all segments on the last. */
	struct vl_pkt *q = vl_pkt_alloc_len(pool, 130); /* 64 + 64 + 2 */

	check_layout(q, pool, 130);
	assert_int_equal(vl_pool_free_count(pool), 1);
	vl_pkt_ref(q);
	vl_pkt_ref(q);
	assert_int_equal(q->refcnt, 3);
	vl_pkt_free(q);
	assert_int_equal(vl_pool_free_count(pool), 1);
	vl_pkt_free(q);
	assert_int_equal(vl_pool_free_count(pool), 1);
	assert_int_equal(q->refcnt, 1);
	vl_pkt_free(q);
	assert_int_equal(vl_pool_free_count(pool), 4);

	/* Reallocated packets start over at one reference. */
	struct vl_pkt *all[4];

	assert_int_equal(vl_pool_alloc_bulk(pool, all, 4), 0);
	for (int i = 0; i < 4; i++)
		check_fresh(all[i], pool);
	vl_pkt_free_bulk(all, 4);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* ---- vl_pkt_alloc_len ---------------------------------------------------------------------- */

static void test_alloc_len_segments(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(64, 100);
	static const struct {
		uint32_t len, segs;
	} cases[] = {
		{0, 1},    {1, 1},     {99, 1},    {100, 1},   {101, 2},   {199, 2},
		{200, 2},  {201, 3},   {1000, 10}, {1001, 11}, {6399, 64}, {6400, 64},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vl_pkt *p = vl_pkt_alloc_len(pool, cases[i].len);

		check_layout(p, pool, cases[i].len);
		assert_int_equal(p->nb_segs, cases[i].segs);
		assert_int_equal(vl_pool_free_count(pool), 64 - cases[i].segs);
		vl_pkt_free(p);
		assert_int_equal(vl_pool_free_count(pool), 64);
	}
	assert_int_equal(vl_pool_alloc_failures(pool), 0);

	/* One byte more than the whole pool holds: nothing taken. */
	assert_null(vl_pkt_alloc_len(pool, 6401));
	assert_int_equal(vl_pool_free_count(pool), 64);
	assert_int_equal(vl_pool_alloc_failures(pool), 1);

	/* With 4 buffers left: 401 bytes (5 segments) fail, 400 bytes (4) succeed. */
	struct vl_pkt *hold = vl_pkt_alloc_len(pool, 6000);

	check_layout(hold, pool, 6000);
	assert_int_equal(vl_pool_free_count(pool), 4);
	assert_null(vl_pkt_alloc_len(pool, 401));
	assert_int_equal(vl_pool_free_count(pool), 4);
	assert_int_equal(vl_pool_alloc_failures(pool), 2);
	struct vl_pkt *last = vl_pkt_alloc_len(pool, 400);

	check_layout(last, pool, 400);
	assert_int_equal(vl_pool_free_count(pool), 0);
	vl_pkt_free(hold);
	vl_pkt_free(last);
	assert_int_equal(vl_pool_destroy(pool), 0);

	/* A 64 KiB packet in 256-byte buffers: 256 segments. */
	pool = pool_ok(300, 256);
	struct vl_pkt *big = vl_pkt_alloc_len(pool, 65536);

	check_layout(big, pool, 65536);
	assert_int_equal(big->nb_segs, 256);
	assert_int_equal(vl_pool_free_count(pool), 44);
	vl_pkt_free(big);
	assert_int_equal(vl_pool_free_count(pool), 300);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* Past 256 segments (a 64 KiB packet in 256-byte buffers) a packet is refused and counted
 * as an allocation failure, with buffers to spare in the pool. */
static void test_alloc_len_segment_limit(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(300, 256);

	assert_null(vl_pkt_alloc_len(pool, 65537));
	assert_int_equal(vl_pool_free_count(pool), 300);
	assert_int_equal(vl_pool_alloc_failures(pool), 1);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* ---- vl_pkt_extend ------------------------------------------------------------------------- */

/* Grow a fresh packet: segments chained as vl_pkt_alloc_len would lay them out; refused with
 * the packet untouched and one failure counted when the pool is short or the packet would need
 * more than 256 segments. */
static void test_extend(void **state)
{
	(void)state;
	static const uint32_t lens[] = { 0, 1, 255, 256, 257, 1000, 65536 };
	struct vl_pool *pool = pool_ok(300, 256);

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct vl_pkt *p = NULL;

		assert_int_equal(vl_pool_alloc_bulk(pool, &p, 1), 0);
		assert_int_equal(vl_pkt_extend(p, lens[i]), 0);
		check_layout(p, pool, lens[i]);
		assert_int_equal(vl_pool_free_count(pool), 300 - p->nb_segs);
		vl_pkt_free(p);
		assert_int_equal(vl_pool_free_count(pool), 300);
	}
	assert_int_equal(vl_pool_alloc_failures(pool), 0);

	struct vl_pkt *p = NULL;

	assert_int_equal(vl_pool_alloc_bulk(pool, &p, 1), 0);
	assert_int_equal(vl_pkt_extend(p, 65537), -1);
	check_fresh(p, pool);
	assert_int_equal(vl_pool_free_count(pool), 299);
	assert_int_equal(vl_pool_alloc_failures(pool), 1);
	vl_pkt_free(p);
	assert_int_equal(vl_pool_destroy(pool), 0);

	/* Four buffers: the head and three more. 401 bytes need four more, 400 three. */
	pool = pool_ok(4, 100);
	assert_int_equal(vl_pool_alloc_bulk(pool, &p, 1), 0);
	assert_int_equal(vl_pkt_extend(p, 401), -1);
	check_fresh(p, pool);
	assert_int_equal(vl_pool_free_count(pool), 3);
	assert_int_equal(vl_pool_alloc_failures(pool), 1);
	assert_int_equal(vl_pkt_extend(p, 400), 0);
	check_layout(p, pool, 400);
	assert_int_equal(vl_pool_free_count(pool), 0);
	vl_pkt_free(p);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* ---- vl_pkt_read / vl_pkt_write ------------------------------------------------------------ */

static void test_read_write_across_segments(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(16, 8);
	struct vl_pkt *p = vl_pkt_alloc_len(pool, 30); /* segments of 8, 8, 8, 6 */
	uint8_t src[30], want[30], other[20], dst[64];

	check_layout(p, pool, 30);
	assert_int_equal(p->nb_segs, 4);
	pattern(src, sizeof(src), 1);
	assert_int_equal(vl_pkt_write(p, 0, src, 30), 30);
	/* Each segment holds its slice. */
	assert_memory_equal(p->data, src, 8);
	assert_memory_equal(p->next->data, src + 8, 8);
	assert_memory_equal(p->next->next->data, src + 16, 8);
	assert_memory_equal(p->next->next->next->data, src + 24, 6);

	static const struct {
		uint32_t off, len, got;
	} reads[] = {
		{0, 30, 30}, {5, 10, 10}, {7, 2, 2},  {8, 8, 8},  {8, 9, 9},   {15, 2, 2},
		{24, 6, 6},  {23, 7, 7},  {28, 10, 2}, {29, 1, 1}, {0, 64, 30}, {1, 0, 0},
	};

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		memset(dst, SENTINEL, sizeof(dst));
		assert_int_equal(vl_pkt_read(p, reads[i].off, dst, reads[i].len), reads[i].got);
		assert_memory_equal(dst, src + reads[i].off, reads[i].got);
		expect_bytes(dst + reads[i].got, sizeof(dst) - reads[i].got, SENTINEL);
	}
	/* At or past the end: nothing. A huge length stops at the packet's end. */
	memset(dst, SENTINEL, sizeof(dst));
	assert_int_equal(vl_pkt_read(p, 30, dst, 5), 0);
	assert_int_equal(vl_pkt_read(p, 31, dst, 5), 0);
	assert_int_equal(vl_pkt_read(p, UINT32_MAX, dst, 5), 0);
	expect_bytes(dst, sizeof(dst), SENTINEL);
	assert_int_equal(vl_pkt_read(p, 20, dst, UINT32_MAX), 10);
	assert_memory_equal(dst, src + 20, 10);
	expect_bytes(dst + 10, sizeof(dst) - 10, SENTINEL);

	/* Overwrite [6, 26): the end of segment 0 through the start of segment 3. */
	pattern(other, sizeof(other), 77);
	memcpy(want, src, sizeof(want));
	memcpy(want + 6, other, 20);
	assert_int_equal(vl_pkt_write(p, 6, other, 20), 20);
	assert_memory_equal(p->data, want, 8);
	assert_memory_equal(p->next->data, want + 8, 8);
	assert_memory_equal(p->next->next->data, want + 16, 8);
	assert_memory_equal(p->next->next->next->data, want + 24, 6);
	assert_int_equal(vl_pkt_read(p, 0, dst, 30), 30);
	assert_memory_equal(dst, want, 30);

	/* A write running past the end is cut short; past the end, nothing. */
	assert_int_equal(vl_pkt_write(p, 25, src, 10), 5);
	memcpy(want + 25, src, 5);
	assert_int_equal(vl_pkt_write(p, 30, src, 1), 0);
	assert_int_equal(vl_pkt_write(p, UINT32_MAX, src, 1), 0);
	assert_int_equal(vl_pkt_write(p, 3, src, 0), 0);
	assert_int_equal(vl_pkt_read(p, 0, dst, 30), 30);
	assert_memory_equal(dst, want, 30);
	/* The spare capacity of the last segment (bytes 6 and 7 of its buffer) is untouched
	 * by a write that ends at the packet's end. */
	struct vl_pkt *tail = p->next->next->next;

	tail->buf[6] = 0x11;
	tail->buf[7] = 0x22;
	assert_int_equal(vl_pkt_write(p, 0, src, 30), 30);
	assert_int_equal(tail->buf[6], 0x11);
	assert_int_equal(tail->buf[7], 0x22);

	vl_pkt_free(p);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

static void test_read_write_data_offsets(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(8, 16);
	struct vl_pkt *h = vl_pkt_alloc(pool);
	struct vl_pkt *z = vl_pkt_alloc(pool);
	struct vl_pkt *s = vl_pkt_alloc(pool);
	uint8_t src[11], dst[16];

	memset(h->buf, SENTINEL, 16);
	memset(z->buf, SENTINEL, 16);
	memset(s->buf, SENTINEL, 16);
	/* Head: 5 bytes at buf + 3; an empty segment; then 6 bytes at buf + 10. */
	h->data = h->buf + 3;
	h->data_len = 5;
	h->pkt_len = 5;
	s->data = s->buf + 10;
	s->data_len = 6;
	assert_int_equal(vl_pkt_chain(h, z), 0);
	assert_int_equal(vl_pkt_chain(h, s), 0);
	assert_int_equal(h->pkt_len, 11);
	assert_int_equal(h->nb_segs, 3);

	pattern(src, sizeof(src), 9);
	assert_int_equal(vl_pkt_write(h, 0, src, 11), 11);
	expect_bytes(h->buf, 3, SENTINEL);
	assert_memory_equal(h->buf + 3, src, 5);
	expect_bytes(h->buf + 8, 8, SENTINEL);
	expect_bytes(z->buf, 16, SENTINEL);
	expect_bytes(s->buf, 10, SENTINEL);
	assert_memory_equal(s->buf + 10, src + 5, 6);

	/* Offset exactly at the empty segment; a read hopping over it; one inside s. */
	memset(dst, 0, sizeof(dst));
	assert_int_equal(vl_pkt_read(h, 5, dst, 6), 6);
	assert_memory_equal(dst, src + 5, 6);
	assert_int_equal(vl_pkt_read(h, 4, dst, 2), 2);
	assert_int_equal(dst[0], src[4]);
	assert_int_equal(dst[1], src[5]);
	assert_int_equal(vl_pkt_read(h, 7, dst, 16), 4);
	assert_memory_equal(dst, src + 7, 4);
	/* A write at an offset into the head's data lands after its data pointer. */
	assert_int_equal(vl_pkt_write(h, 1, "\x01\x02", 2), 2);
	assert_int_equal(h->buf[4], 0x01);
	assert_int_equal(h->buf[5], 0x02);
	assert_int_equal(h->buf[3], src[0]);

	vl_pkt_free(h);
	assert_int_equal(vl_pool_free_count(pool), 8);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* ---- vl_pkt_chain --------------------------------------------------------------------------- */

static void test_chain(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(8, 64);
	struct vl_pkt *head = vl_pkt_alloc(pool);
	struct vl_pkt *s1 = vl_pkt_alloc(pool);
	struct vl_pkt *s2 = vl_pkt_alloc(pool);

	head->data_len = head->pkt_len = 10;
	s1->data_len = s1->pkt_len = 20;
	assert_int_equal(vl_pkt_chain(head, s1), 0);
	assert_int_equal(head->nb_segs, 2);
	assert_int_equal(head->pkt_len, 30);
	assert_ptr_equal(head->next, s1);
	assert_null(s1->next);
	/* An empty segment is a segment. */
	assert_int_equal(vl_pkt_chain(head, s2), 0);
	assert_int_equal(head->nb_segs, 3);
	assert_int_equal(head->pkt_len, 30);
	assert_ptr_equal(s1->next, s2);
	assert_null(s2->next);
	assert_int_equal(vl_pool_free_count(pool), 5);
	/* Freeing the head returns the whole chain. */
	vl_pkt_free(head);
	assert_int_equal(vl_pool_free_count(pool), 8);

	/* Appended after the last segment of a multi-segment packet. */
	struct vl_pkt *m = vl_pkt_alloc_len(pool, 150); /* 64 + 64 + 22 */
	struct vl_pkt *t = vl_pkt_alloc(pool);

	t->data_len = 7;
	assert_int_equal(vl_pkt_chain(m, t), 0);
	assert_int_equal(m->nb_segs, 4);
	assert_int_equal(m->pkt_len, 157);
	assert_ptr_equal(m->next->next->next, t);
	assert_int_equal(m->next->next->data_len, 22);
	uint8_t src[157], dst[157];

	pattern(src, sizeof(src), 3);
	assert_int_equal(vl_pkt_write(m, 0, src, 157), 157);
	assert_memory_equal(t->data, src + 150, 7);
	assert_int_equal(vl_pkt_read(m, 0, dst, 200), 157);
	assert_memory_equal(dst, src, 157);
	vl_pkt_free(m);
	assert_int_equal(vl_pool_free_count(pool), 8);

	/* pkt_len may reach UINT32_MAX but not pass it (lengths set by hand). */
	head = vl_pkt_alloc(pool);
	s1 = vl_pkt_alloc(pool);
	s2 = vl_pkt_alloc(pool);
	struct vl_pkt *s3 = vl_pkt_alloc(pool);

	head->pkt_len = UINT32_MAX - 5;
	s1->data_len = 6;
	assert_int_equal(vl_pkt_chain(head, s1), -1);
	assert_int_equal(head->pkt_len, UINT32_MAX - 5);
	assert_int_equal(head->nb_segs, 1);
	assert_null(head->next);
	s1->data_len = 5;
	assert_int_equal(vl_pkt_chain(head, s1), 0);
	assert_int_equal(head->pkt_len, UINT32_MAX);
	assert_int_equal(head->nb_segs, 2);
	s3->data_len = 1;
	assert_int_equal(vl_pkt_chain(head, s3), -1);
	assert_null(s1->next);
	assert_int_equal(vl_pkt_chain(head, s2), 0); /* empty: still fits */
	assert_int_equal(head->pkt_len, UINT32_MAX);
	assert_int_equal(head->nb_segs, 3);
	assert_ptr_equal(s1->next, s2);

	/* nb_segs may reach UINT16_MAX but not wrap. */
	head->pkt_len = 100;
	head->nb_segs = UINT16_MAX;
	s3->data_len = 0;
	assert_int_equal(vl_pkt_chain(head, s3), -1);
	assert_int_equal(head->nb_segs, UINT16_MAX);
	assert_int_equal(head->pkt_len, 100);
	assert_null(s2->next);
	head->nb_segs = UINT16_MAX - 1;
	assert_int_equal(vl_pkt_chain(head, s3), 0);
	assert_int_equal(head->nb_segs, UINT16_MAX);
	assert_ptr_equal(s2->next, s3);
	assert_int_equal(vl_pool_free_count(pool), 4);
	vl_pkt_free(head); /* four segments */
	assert_int_equal(vl_pool_free_count(pool), 8);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* ---- fault injection and destruction --------------------------------------------------------- */

static void test_fail_after(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(16, 32);
	struct vl_pkt *bulk[16];

	/* Three calls succeed, whatever they ask for ... */
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = pool, .count = 3});
	struct vl_pkt *a = vl_pkt_alloc(pool);

	assert_non_null(a);
	assert_int_equal(vl_pool_alloc_bulk(pool, bulk, 2), 0);
	struct vl_pkt *b = vl_pkt_alloc_len(pool, 100); /* 4 segments, one call */

	check_layout(b, pool, 100);
	assert_int_equal(vl_pool_free_count(pool), 9);
	assert_int_equal(vl_pool_alloc_failures(pool), 0);
	/* ... then every call fails, takes nothing, and is counted. */
	assert_null(vl_pkt_alloc(pool));
	assert_int_equal(vl_pool_alloc_bulk(pool, bulk + 2, 1), -1);
	assert_null(vl_pkt_alloc_len(pool, 1));
	assert_null(vl_pkt_alloc(pool));
	assert_int_equal(vl_pool_free_count(pool), 9);
	assert_int_equal(vl_pool_alloc_failures(pool), 4);
	/* Freeing does not end the injection. */
	vl_pkt_free(a);
	assert_null(vl_pkt_alloc(pool));
	assert_int_equal(vl_pool_alloc_failures(pool), 5);

	/* VL_LAB_NEVER (UINT64_MAX) switches it off. */
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = pool, .count = VL_LAB_NEVER});
	a = vl_pkt_alloc(pool);
	assert_non_null(a);
	assert_int_equal(vl_pool_alloc_bulk(pool, bulk + 2, 9), 0);
	assert_int_equal(vl_pool_free_count(pool), 0);
	assert_int_equal(vl_pool_alloc_failures(pool), 5);
	vl_pkt_free(a);
	vl_pkt_free(b);
	vl_pkt_free_bulk(bulk, 11);
	assert_int_equal(vl_pool_free_count(pool), 16);

	/* Zero: the very next call fails. */
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = pool, .count = 0});
	assert_null(vl_pkt_alloc(pool));
	assert_int_equal(vl_pool_alloc_failures(pool), 6);
	assert_int_equal(vl_pool_free_count(pool), 16);

	/* A later setting replaces an earlier one. */
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = pool, .count = 100});
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = pool, .count = 1});
	b = vl_pkt_alloc_len(pool, 32 * 5);
	check_layout(b, pool, 32 * 5);
	assert_null(vl_pkt_alloc(pool));
	assert_int_equal(vl_pool_alloc_failures(pool), 7);
	vl_pkt_free(b);

	/* Off again: a long run of successes. */
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = pool, .count = VL_LAB_NEVER});
	for (int round = 0; round < 100; round++) {
		assert_int_equal(vl_pool_alloc_bulk(pool, bulk, 16), 0);
		vl_pkt_free_bulk(bulk, 16);
	}
	assert_int_equal(vl_pool_alloc_failures(pool), 7);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* vl_lab_control refuses what it cannot apply and changes nothing: no argument, a pool op
 * without a pool, an op it does not know. */
static void test_lab_control_rejects(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(4, 32);
	struct vl_lab_arg no_pool = {.count = 0};

	assert_int_equal(vl_lab_control(VL_LAB_POOL_FAIL_AFTER, NULL), VL_ERR_INVALID_ARG);
	assert_int_equal(vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &no_pool), VL_ERR_INVALID_ARG);
	assert_int_equal(vl_lab_control(VL_LAB_POOL_FAULT_HOOK, &no_pool), VL_ERR_INVALID_ARG);
	enum vl_lab_op unknown = (enum vl_lab_op)(VL_LAB_POOL_FAULT_HOOK + 1);

	assert_int_equal(vl_lab_control(unknown, &no_pool), VL_ERR_INVALID_ARG);
	/* Nothing was injected anywhere: the pool and the allocator still supply. */
	struct vl_pkt *p = vl_pkt_alloc(pool);

	assert_non_null(p);
	vl_pkt_free(p);
	struct vl_pool *other = pool_ok(1, 32);

	assert_int_equal(vl_pool_destroy(other), 0);
	assert_int_equal(vl_pool_alloc_failures(pool), 0);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

static void test_destroy_outstanding(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(8, 64);
	struct vl_pkt *all[8];

	assert_int_equal(vl_pool_destroy(pool), 0);

	/* 1 + 3 + 1 segments out, one of them returned: 4 outstanding. */
	pool = pool_ok(8, 64);
	struct vl_pkt *a = vl_pkt_alloc(pool);
	struct vl_pkt *b = vl_pkt_alloc_len(pool, 129);
	struct vl_pkt *c = vl_pkt_alloc(pool);

	assert_non_null(a);
	check_layout(b, pool, 129);
	assert_non_null(c);
	vl_pkt_free(c);
	assert_int_equal(vl_pool_destroy(pool), 4);

	pool = pool_ok(8, 64);
	assert_int_equal(vl_pool_alloc_bulk(pool, all, 8), 0);
	assert_int_equal(vl_pool_destroy(pool), 8);

	/* A packet whose extra reference was dropped is still out. */
	pool = pool_ok(8, 64);
	a = vl_pkt_alloc(pool);
	vl_pkt_ref(a);
	vl_pkt_free(a);
	assert_int_equal(vl_pool_destroy(pool), 1);

	/* Everything returned after heavy use: 0. */
	pool = pool_ok(8, 64);
	for (int i = 0; i < 50; i++) {
		b = vl_pkt_alloc_len(pool, (uint32_t)(i * 37) % 500);
		assert_non_null(b);
		vl_pkt_free(b);
	}
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* ---- randomized ------------------------------------------------------------------------------ */

#define STRESS_POOL 512u
#define STRESS_BUF 64u
#define STRESS_SLOTS 64u
#define STRESS_ITERS 20000u
#define STRESS_MAXLEN 4000u

struct live {
	struct vl_pkt *p;
	uint32_t len;
	uint32_t tag;
};

static uint8_t stress_byte(uint32_t tag, uint32_t off)
{
	return (uint8_t)(tag * 131u + off * 7u + (off >> 8));
}

static void stress_verify(const struct live *l, uint8_t *buf)
{
	memset(buf, SENTINEL, STRESS_MAXLEN + 16);
	assert_int_equal(vl_pkt_read(l->p, 0, buf, l->len + 16), l->len);
	for (uint32_t i = 0; i < l->len; i++)
		assert_int_equal(buf[i], stress_byte(l->tag, i));
	expect_bytes(buf + l->len, 16, SENTINEL);

	/* A random window, possibly running past the end. */
	uint32_t off = rng_below(l->len + 1);
	uint32_t n = rng_below(l->len - off + 9);
	uint32_t want = n < l->len - off ? n : l->len - off;

	assert_int_equal(vl_pkt_read(l->p, off, buf, n), want);
	for (uint32_t i = 0; i < want; i++)
		assert_int_equal(buf[i], stress_byte(l->tag, off + i));
}

static void test_random_stress(void **state)
{
	(void)state;
	struct vl_pool *pool = pool_ok(STRESS_POOL, STRESS_BUF);
	struct live live[STRESS_SLOTS];
	uint8_t *buf = malloc(STRESS_MAXLEN + 16);
	uint8_t *data = malloc(STRESS_MAXLEN);
	uint32_t outstanding = 0, tag = 0;
	uint64_t want_failures = 0, multi = 0, freed = 0;

	assert_non_null(buf);
	assert_non_null(data);
	memset(live, 0, sizeof(live));
	rng = lab_rng_make(0x0123456789abcdefull, 0);

	for (uint32_t it = 0; it < STRESS_ITERS; it++) {
		struct live *l = &live[rng_below(STRESS_SLOTS)];

		if (l->p) {
			stress_verify(l, buf);
			uint32_t segs = l->p->nb_segs;

			if (rng_below(8) == 0) {
				/* A second reference keeps everything in place for one free. */
				uint32_t before = vl_pool_free_count(pool);

				vl_pkt_ref(l->p);
				vl_pkt_free(l->p);
				assert_int_equal(vl_pool_free_count(pool), before);
				stress_verify(l, buf);
			}
			vl_pkt_free(l->p);
			l->p = NULL;
			outstanding -= segs;
			freed++;
		} else {
			uint32_t len;

			switch (rng_below(8)) {
			case 0: /* an exact multiple of the buffer size, or one byte either side */
				len = (rng_below(STRESS_MAXLEN / STRESS_BUF) + 1) * STRESS_BUF;
				len = len - 1 + rng_below(3);
				if (len > STRESS_MAXLEN)
					len = STRESS_MAXLEN;
				break;
			case 1:
				len = rng_below(3); /* 0, 1 or 2 bytes */
				break;
			default:
				len = rng_below(STRESS_MAXLEN + 1);
				break;
			}
			uint32_t need = segs_for(len, STRESS_BUF);
			uint32_t free_before = vl_pool_free_count(pool);
			struct vl_pkt *p = vl_pkt_alloc_len(pool, len);

			if (need > free_before) {
				assert_null(p);
				assert_int_equal(vl_pool_free_count(pool), free_before);
				want_failures++;
			} else {
				check_layout(p, pool, len);
				outstanding += need;
				multi += need > 1;
				l->p = p;
				l->len = len;
				l->tag = ++tag;
				for (uint32_t i = 0; i < len; i++)
					data[i] = stress_byte(l->tag, i);
				/* Write in two pieces, tail first, split at a random offset. */
				uint32_t k = rng_below(len + 1);

				assert_int_equal(vl_pkt_write(p, k, data + k, len - k), len - k);
				assert_int_equal(vl_pkt_write(p, 0, data, k), k);
			}
		}
		assert_int_equal(STRESS_POOL - vl_pool_free_count(pool), outstanding);
		assert_int_equal(vl_pool_alloc_failures(pool), want_failures);
	}

	/* The run exercised what it claims to: refusals, multi-segment packets, frees. */
	assert_true(want_failures > 0);
	assert_true(multi > 0);
	assert_true(freed > 0);

	for (uint32_t s = 0; s < STRESS_SLOTS; s++) {
		if (live[s].p) {
			stress_verify(&live[s], buf);
			vl_pkt_free(live[s].p);
		}
	}
	assert_int_equal(vl_pool_free_count(pool), STRESS_POOL);
	assert_int_equal(vl_pool_destroy(pool), 0);
	free(data);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_create_limits),
		cmocka_unit_test(test_alloc_fresh_state),
		cmocka_unit_test(test_segments_start_on_lines),
		cmocka_unit_test(test_bulk_all_or_nothing),
		cmocka_unit_test(test_free_count_bookkeeping),
		cmocka_unit_test(test_refcount),
		cmocka_unit_test(test_alloc_len_segments),
		cmocka_unit_test(test_alloc_len_segment_limit),
		cmocka_unit_test(test_extend),
		cmocka_unit_test(test_read_write_across_segments),
		cmocka_unit_test(test_read_write_data_offsets),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_fail_after),
		cmocka_unit_test(test_lab_control_rejects),
		cmocka_unit_test(test_destroy_outstanding),
		cmocka_unit_test(test_random_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Dirty-page logging (vl_vq_set_dirty_log): every guest write a queue makes sets bit
 * (gpa / 4096) of the log bitmap -- packet data and headers, used ring entries and index,
 * packed used descriptors, the kick wish (avail_event / used->flags / the packed device
 * area) -- and nothing else does.
 *
 * Each case computes the expected bitmap itself, from the guest addresses it posted, the used
 * lengths the guest must see and the ring addresses of the driver side (sim/vring_*), and
 * compares every bit: pages written must be marked, pages not written must not. Bitmaps too
 * small for the pages written count log_out_of_range and leave the bytes after them alone. */
#define _POSIX_C_SOURCE 200809L /* sigaction, mprotect, sysconf, posix_memalign */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring_fixture.h"

#define PAGE 4096ull
#define EVENT_IDX VL_FEATURE(VL_F_RING_EVENT_IDX)
#define IN_ORDER VL_FEATURE(VL_F_IN_ORDER)
/* Bytes after the part of a bitmap the core is told about; they must stay zero. */
#define GUARD 64u

/* ---- helpers ---------------------------------------------------------------------------- */

/* Bitmap bytes covering all guest-physical memory. */
static uint64_t full_bytes(const struct rf *f)
{
	return ((lab_gmem_end_gpa(f->g) >> 12) + 7) / 8;
}

/* A zeroed bitmap of `bytes` plus GUARD bytes, given to queue s as `bytes` long. */
static uint8_t *log_on(struct rf_q *s, uint64_t bytes)
{
	uint8_t *bm = calloc(bytes + GUARD, 1);

	assert_non_null(bm);
	vl_vq_set_dirty_log(s->q, bm, bytes);
	return bm;
}

static uint8_t *exp_new(const struct rf *f)
{
	uint8_t *e = calloc(full_bytes(f) + GUARD, 1);

	assert_non_null(e);
	return e;
}

/* Expect the pages of guest range [gpa, gpa + len). */
static void exp_mark(uint8_t *exp, uint64_t gpa, uint64_t len)
{
	for (uint64_t p = gpa / PAGE; len && p <= (gpa + len - 1) / PAGE; p++)
		exp[p / 8] |= (uint8_t)(1u << (p % 8));
}

static uint64_t exp_count(const uint8_t *exp, uint64_t bytes)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < bytes; i++)
		n += (uint64_t)__builtin_popcount(exp[i]);
	return n;
}

/* Every bit of bm[0, bytes + GUARD) equals exp's (the guard part of exp is zero when the
 * caller told the core about `bytes` only). */
static void assert_log(const uint8_t *bm, const uint8_t *exp, uint64_t bytes)
{
	for (uint64_t i = 0; i < bytes + GUARD; i++) {
		if (bm[i] == exp[i])
			continue;
		for (unsigned b = 0; b < 8; b++) {
			bool got = (bm[i] >> b) & 1, want = (exp[i] >> b) & 1;

			if (got != want)
				fail_msg("dirty log: page %llu (gpa 0x%llx) is %s, expected %s%s",
					 (unsigned long long)(i * 8 + b),
					 (unsigned long long)((i * 8 + b) * PAGE),
					 got ? "marked" : "clean", want ? "marked" : "clean",
					 i >= bytes ? " (past the bitmap the core was given)" : "");
		}
	}
}

static bool has(const struct rf *f, uint64_t feature)
{
	return (f->cfg.features & feature) != 0;
}

/* Where the kick wish lives (kicks wanted): split with event idx avail_event, split without
 * it used->flags, packed the device event area. */
static void exp_kick_wish(const struct rf *f, const struct rf_q *s, uint8_t *exp)
{
	if (s->layout == VL_LAYOUT_PACKED)
		exp_mark(exp, s->pr.device_gpa, sizeof(struct vl_packed_event));
	else if (has(f, EVENT_IDX))
		exp_mark(exp, s->vr.used_gpa + 4 + 8ull * f->cfg.qsize, 2);
	else
		exp_mark(exp, s->vr.used_gpa, 2);
}

/* The ring writes of one flush publishing n used elements from used position used_before
 * (vl_vq_last_used before the burst): split, each element's 8 bytes at its ring slot and
 * used->idx; packed, bytes 8..15 (len, id, flags) of the descriptor at each used position,
 * the position moving by the element's descriptor count ndescs[i]. Plus the kick wish when
 * the flush stored it: only a changed wish is stored, and with kicks wanted it changes only
 * under event idx (it names the next entry, which moved when the burst consumed chains). */
static void exp_used(const struct rf *f, const struct rf_q *s, uint8_t *exp,
		      uint16_t used_before, const uint16_t *ndescs, uint32_t n)
{
	const uint32_t qs = f->cfg.qsize;

	if (s->layout == VL_LAYOUT_SPLIT) {
		for (uint32_t i = 0; i < n; i++)
			exp_mark(exp, s->vr.used_gpa + 4 + 8ull * ((used_before + i) & (qs - 1)), 8);
		if (n)
			exp_mark(exp, s->vr.used_gpa + 2, 2);
	} else {
		uint32_t pos = used_before & 0x7fffu;

		for (uint32_t i = 0; i < n; i++) {
			exp_mark(exp, s->pr.desc_gpa + 16ull * pos + 8, 8);
			pos = (pos + (ndescs ? ndescs[i] : 1u)) % qs;
		}
	}
}

/* A flush that consumed chains in its burst: its used writes, and the kick wish when that
 * moved (event idx). */
static void exp_flush(const struct rf *f, const struct rf_q *s, uint8_t *exp,
		      uint16_t used_before, const uint16_t *ndescs, uint32_t n)
{
	exp_used(f, s, exp, used_before, ndescs, n);
	if (n && has(f, EVENT_IDX))
		exp_kick_wish(f, s, exp);
}

/* A device-writable one-descriptor RX buffer of cap bytes at gpa, poisoned. */
static uint16_t post_rx(struct rf *f, uint64_t gpa, uint32_t cap)
{
	struct rf_desc d = { gpa, cap, VL_DESC_F_WRITE };

	rf_fill(f, gpa, 0xA5, cap);
	return rf_post_chain(&f->rx, &d, 1);
}

static uint64_t alloc_pages(struct rf *f, uint32_t pages)
{
	uint64_t gpa = lab_gmem_alloc(f->g, pages * PAGE, PAGE);

	assert_true(gpa != 0);
	return gpa;
}

/* Enqueue n packets of lens[i] pattern(seeds[i]) bytes; all must be delivered. */
static void enq(struct rf *f, const uint32_t *lens, const uint8_t *seeds, uint32_t n)
{
	struct vl_pkt *pkts[32];
	uint8_t stat[32];

	assert_true(n <= 32);
	for (uint32_t i = 0; i < n; i++)
		pkts[i] = rf_make_pkt(f, lens[i], seeds[i]);
	assert_int_equal(vl_net_enqueue(f->rx.q, pkts, (uint16_t)n, stat), n);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(stat[i], VL_RX_DELIVERED);
		vl_pkt_free(pkts[i]);
	}
}

/* The guest's view of a delivered packet: header (zero offloads, num_buffers 1 with the
 * 12-byte header) and the payload. */
static void assert_rx_at(struct rf *f, uint64_t gpa, uint32_t len, uint8_t seed)
{
	uint8_t hdr[12];
	const uint8_t zero[10] = {0};

	rf_read(f, gpa, hdr, f->hdr_len);
	assert_memory_equal(hdr, zero, 10);
	if (f->hdr_len == 12)
		assert_int_equal(hdr[10] | hdr[11] << 8, 1);
	rf_assert_pattern_at(f, gpa + f->hdr_len, len, seed, 0);
}

static const struct vl_vq_stats *st(const struct rf_q *s)
{
	return vl_vq_stats(s->q);
}

/* One enqueue burst of n packets (lens[i] bytes of pattern seeds[i]) into the RX buffers
 * posted at gpas[i], with logging on into bm (bytes long): the guest sees each packet, and
 * the log holds what exp held before plus exactly the pages the burst wrote -- each buffer's
 * header and data, the used ring, the kick wish when it moved. Returns how many pages the
 * core counted marked (log_pages) in the burst. */
static uint64_t enq_logged(struct rf *f, const uint8_t *bm, uint8_t *exp, uint64_t bytes,
			   const uint64_t *gpas, const uint32_t *lens, const uint8_t *seeds,
			   uint32_t n)
{
	struct rf_q *s = &f->rx;
	const uint16_t used0 = vl_vq_last_used(s->q);
	const uint64_t pages_before = st(s)->log_pages;

	enq(f, lens, seeds, n);
	for (uint32_t i = 0; i < n; i++) {
		assert_rx_at(f, gpas[i], lens[i], seeds[i]);
		exp_mark(exp, gpas[i], f->hdr_len + lens[i]);
	}
	exp_flush(f, s, exp, used0, NULL, n);
	assert_log(bm, exp, bytes);
	return st(s)->log_pages - pages_before;
}

/* ---- RX: data, header, used ring, kick wish --------------------------------------------- */

/* Two packets into two buffers, then a third after the bitmap was cleared (as the front end
 * does when it syncs). Buffer A has three pages of room but gets a 100-byte packet: only its
 * first page is written. B is an ordinary 64-byte aligned buffer (it may cross a page: the
 * expectation follows its address). With a clean page cache, log_pages counts each page
 * marked in a burst once. */
static void scn_rx_enqueue(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t bytes = full_bytes(f);
	const uint32_t h = f->hdr_len;
	uint64_t a = alloc_pages(f, 3);
	uint64_t b = rf_alloc(f, h + 1500);
	uint64_t c = rf_alloc(f, h + 700);

	post_rx(f, a, 3 * PAGE);
	post_rx(f, b, h + 1500);
	uint8_t *bm = log_on(s, bytes);
	uint8_t *exp = exp_new(f);
	const uint64_t ab[2] = { a, b };
	const uint32_t lens[2] = { 100, 1500 };
	const uint8_t seeds[2] = { 0x11, 0x22 };

	uint64_t counted = enq_logged(f, bm, exp, bytes, ab, lens, seeds, 2);

	assert_int_equal(counted, exp_count(exp, bytes));
	assert_int_equal(st(s)->log_out_of_range, 0);
	/* Not written: A's second and third pages. */
	assert_false(bm[(a / PAGE + 1) / 8] & (1u << ((a / PAGE + 1) % 8)));

	/* The front end clears the log; the next burst marks only its own writes. */
	memset(bm, 0, bytes);
	memset(exp, 0, bytes);
	post_rx(f, c, h + 700);
	const uint32_t len2 = 700;
	const uint8_t seed2 = 0x33;

	counted = enq_logged(f, bm, exp, bytes, &c, &len2, &seed2, 1);
	assert_int_equal(counted, exp_count(exp, bytes));
	assert_int_equal(st(s)->log_out_of_range, 0);

	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(bm);
	free(exp);
}

/* A header the buffer already holds is not stored again (rx_hdrs_kept, with batching on) but
 * is logged all the same: as far as a migration is concerned the device wrote it. The header
 * sits alone at the end of a page, the payload on the next, so only that log entry can mark
 * the header's page. */
static void scn_rx_kept_header_logged(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t bytes = full_bytes(f);
	const uint32_t h = f->hdr_len, len = 200;
	const uint64_t buf = alloc_pages(f, 2) + PAGE - h;
	const struct rf_desc d = { buf, h + len, VL_DESC_F_WRITE };
	uint8_t seed = 0x44;
	uint32_t id, used_len;

	post_rx(f, buf, h + len);
	enq(f, &len, &seed, 1);
	assert_true(rf_pop_used(s, &id, &used_len));
	assert_int_equal(used_len, h + len);

	/* The same buffer again, its header as the last packet left it. */
	uint8_t *bm = log_on(s, bytes);
	uint8_t *exp = exp_new(f);
	const uint64_t kept = st(s)->rx_hdrs_kept;

	rf_fill(f, buf + h, 0xA5, len);
	(void)rf_post_chain(s, &d, 1);
	seed = 0x55;
	uint64_t counted = enq_logged(f, bm, exp, bytes, &buf, &len, &seed, 1);

	assert_int_equal(counted, exp_count(exp, bytes));
	assert_int_equal(st(s)->rx_hdrs_kept, kept + (f->cfg.batch_threshold ? 1 : 0));
	assert_true(buf / PAGE != (buf + h) / PAGE);

	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(bm);
	free(exp);
}

/* A buffer across a page boundary: the packet written over both pages marks both (in 4 KiB
 * regions these are also two host mappings). Then one whose header alone straddles. */
static void scn_rx_straddle_page(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t bytes = full_bytes(f);
	const uint32_t h = f->hdr_len;
	uint64_t two = alloc_pages(f, 2);
	uint64_t at = two + PAGE - 50;

	post_rx(f, at, 300);
	uint8_t *bm = log_on(s, bytes);
	uint8_t *exp = exp_new(f);
	const uint32_t len = 200;
	const uint8_t seed = 0x44;

	/* Both pages, whatever enq_logged works out from the address. */
	exp_mark(exp, two, PAGE);
	exp_mark(exp, two + PAGE, 1);
	uint64_t counted = enq_logged(f, bm, exp, bytes, &at, &len, &seed, 1);

	assert_int_equal(counted, exp_count(exp, bytes));

	/* The header alone across the boundary, the payload after it. */
	memset(bm, 0, bytes);
	memset(exp, 0, bytes);
	at = two + PAGE - h / 2;
	post_rx(f, at, 300);
	const uint32_t len2 = 64;
	const uint8_t seed2 = 0x45;

	exp_mark(exp, two, PAGE);
	exp_mark(exp, two + PAGE, 1);
	counted = enq_logged(f, bm, exp, bytes, &at, &len2, &seed2, 1);
	assert_int_equal(counted, exp_count(exp, bytes));
	assert_int_equal(st(s)->log_out_of_range, 0);

	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(bm);
	free(exp);
}

/* More pages in one burst than the page cache holds (20 packets, each in its own bitmap
 * byte): the cache is flushed on the way and every page still ends up marked, no other. */
static void scn_rx_many_pages(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t bytes = full_bytes(f);
	const uint32_t h = f->hdr_len;
	uint64_t buf[20];
	uint32_t lens[20];
	uint8_t seeds[20];

	for (uint32_t i = 0; i < 20; i++) {
		buf[i] = alloc_pages(f, 8); /* eight pages apart: one bitmap byte each */
		lens[i] = 100 + 150 * i;
		seeds[i] = (uint8_t)(0x60 + i);
		post_rx(f, buf[i], h + lens[i]);
	}
	uint8_t *bm = log_on(s, bytes);
	uint8_t *exp = exp_new(f);

	/* A flushed page may be marked (and counted) again later in the burst. */
	uint64_t counted = enq_logged(f, bm, exp, bytes, buf, lens, seeds, 20);

	assert_true(counted >= exp_count(exp, bytes));
	assert_int_equal(st(s)->log_out_of_range, 0);
	vl_vq_set_dirty_log(s->q, NULL, 0);
	for (uint32_t i = 0; i < 20; i++)
		lab_gmem_free(f->g, buf[i], 8 * PAGE);
	free(bm);
	free(exp);
}

/* ---- the kick wish alone ---------------------------------------------------------------- */

/* Turning kicks off and on writes the wish at once and marks its page -- except split with
 * event idx turning them off, which leaves avail_event stale and writes nothing. An empty
 * burst leaves the wish as it is (unchanged, so not stored again) and marks nothing. */
static void scn_kick_wish(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t bytes = full_bytes(f);
	uint8_t *bm = log_on(s, bytes);
	uint8_t *exp = exp_new(f);
	const bool split_evt = s->layout == VL_LAYOUT_SPLIT && has(f, EVENT_IDX);

	vl_vq_set_kicks(s->q, false);
	if (!split_evt)
		exp_kick_wish(f, s, exp);
	assert_log(bm, exp, bytes);
	if (s->layout == VL_LAYOUT_SPLIT && !split_evt)
		assert_int_equal(s->vr.used->flags, VL_USED_F_NO_NOTIFY);
	if (s->layout == VL_LAYOUT_PACKED)
		assert_int_equal(s->pr.device_event->flags, VL_RING_EVENT_DISABLE);

	memset(bm, 0, bytes);
	memset(exp, 0, bytes);
	vl_vq_set_kicks(s->q, true);
	exp_kick_wish(f, s, exp);
	assert_log(bm, exp, bytes);

	/* An enqueue that finds no buffer publishes nothing and stores nothing. */
	memset(bm, 0, bytes);
	memset(exp, 0, bytes);
	struct vl_pkt *pkt = rf_make_pkt(f, 100, 0x70);

	assert_int_equal(vl_net_enqueue(s->q, &pkt, 1, NULL), 0);
	vl_pkt_free(pkt);
	assert_int_equal(st(s)->rx_no_room, 1);
	assert_log(bm, exp, bytes);
	assert_int_equal(st(s)->log_out_of_range, 0);

	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(bm);
	free(exp);
}

/* ---- bitmaps too small ------------------------------------------------------------------- */

/* First a bitmap covering the ring area but not RAM: the ring pages are marked, the header
 * and payload writes (one page each: a page-aligned buffer) are counted out of range. Then a
 * one-byte bitmap (pages 0-7, below everything): every write is counted, none marked --
 * split: header, payload, used entries, used->idx (4); packed: header, payload, used
 * descriptor (3); the kick wish is unchanged, so neither stored nor logged. The bytes after
 * the bitmap stay zero. */
static void scn_out_of_range(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t ram_page = lab_gmem_ram_gpa(f->g) / PAGE;
	const uint64_t small = ram_page / 8; /* pages [0, small * 8) */
	uint64_t a = alloc_pages(f, 1);

	/* Fixture sanity: the rings lie below the cut, the RAM above it. */
	assert_true((lab_gmem_ring_gpa(f->g) + lab_gmem_ring_size(f->g)) / PAGE <= small * 8);
	post_rx(f, a, 1024);
	uint8_t *bm = log_on(s, small);
	uint8_t *exp = exp_new(f);
	uint16_t used0 = vl_vq_last_used(s->q);
	const uint32_t len = 100;
	const uint8_t seed = 0x7A;

	enq(f, &len, &seed, 1);
	assert_rx_at(f, a, 100, 0x7A);
	exp_flush(f, s, exp, used0, NULL, 1);
	assert_log(bm, exp, small); /* the guard covers the bytes for a's page and beyond */
	assert_true(a / PAGE / 8 < small + GUARD);
	assert_int_equal(st(s)->log_out_of_range, 2);
	assert_int_equal(st(s)->log_pages, exp_count(exp, small));
	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(bm);

	/* One byte. */
	uint64_t pages_before = st(s)->log_pages;
	uint8_t *tiny = log_on(s, 1);

	memset(exp, 0, full_bytes(f));
	post_rx(f, a, 1024);
	const uint8_t seed2 = 0x7B;

	enq(f, &len, &seed2, 1);
	assert_rx_at(f, a, 100, 0x7B);
	assert_log(tiny, exp, 1);
	assert_int_equal(st(s)->log_out_of_range, 2 + (s->layout == VL_LAYOUT_SPLIT ? 4 : 3));
	assert_int_equal(st(s)->log_pages, pages_before);
	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(tiny);
	free(exp);
}

/* ---- logging off, and switching bitmaps ---------------------------------------------- */

/* Never set: traffic counts nothing. Set then NULL: the bitmap is left alone. Switched from
 * one bitmap to another between bursts: each holds only its own bursts' pages. A size of 0
 * turns logging off too. */
static void scn_off(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t bytes = full_bytes(f);
	const uint32_t h = f->hdr_len;
	const uint32_t len = 300;
	uint8_t seed = 0x80;
	uint64_t buf[4];

	for (uint32_t i = 0; i < 4; i++)
		buf[i] = alloc_pages(f, 1);

	post_rx(f, buf[0], 1024);
	enq(f, &len, &seed, 1);
	assert_int_equal(st(s)->log_pages, 0);
	assert_int_equal(st(s)->log_out_of_range, 0);

	/* Set, then off again. */
	uint8_t *bm = log_on(s, bytes);
	uint8_t *zero = exp_new(f);

	vl_vq_set_dirty_log(s->q, NULL, 0);
	post_rx(f, buf[1], 1024);
	seed++;
	enq(f, &len, &seed, 1);
	assert_log(bm, zero, bytes);
	assert_int_equal(st(s)->log_pages, 0);

	/* Bitmap A for one burst, B for the next. */
	uint8_t *bm2 = calloc(bytes + GUARD, 1);
	uint8_t *exp_a = exp_new(f), *exp_b = exp_new(f);

	assert_non_null(bm2);
	vl_vq_set_dirty_log(s->q, bm, bytes);
	post_rx(f, buf[2], 1024);
	uint16_t used0 = vl_vq_last_used(s->q);

	seed++;
	enq(f, &len, &seed, 1);
	exp_mark(exp_a, buf[2], h + len);
	exp_flush(f, s, exp_a, used0, NULL, 1);
	vl_vq_set_dirty_log(s->q, bm2, bytes);
	post_rx(f, buf[3], 1024);
	uint16_t used1 = vl_vq_last_used(s->q);

	seed++;
	enq(f, &len, &seed, 1);
	exp_mark(exp_b, buf[3], h + len);
	exp_flush(f, s, exp_b, used1, NULL, 1);
	assert_log(bm, exp_a, bytes);
	assert_log(bm2, exp_b, bytes);

	/* Size 0: off. */
	memset(bm2, 0, bytes);
	vl_vq_set_dirty_log(s->q, bm2, 0);
	post_rx(f, buf[0], 1024);
	seed++;
	enq(f, &len, &seed, 1);
	assert_log(bm2, zero, bytes);

	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(bm);
	free(bm2);
	free(zero);
	free(exp_a);
	free(exp_b);
}

/* ---- TX: only the used ring ------------------------------------------------------------- */

/* Dequeue reads the guest's buffers and never writes them: a burst of a two-descriptor chain,
 * a chain across a page boundary and a 5000-byte chain over two pages marks only the TX used
 * ring (packed: the used descriptors, one per chain under IN_ORDER too) and the kick wish.
 * Zero-copy: holding a chain marks only the wish, returning it only the ring. */
static void scn_tx(struct rf *f)
{
	struct rf_q *s = &f->tx;
	const uint64_t bytes = full_bytes(f);
	const uint32_t h = f->hdr_len;
	struct vl_pkt *pkts[32];
	uint8_t *bm = log_on(s, bytes);
	uint8_t *exp = exp_new(f);
	uint64_t two = alloc_pages(f, 2);
	uint8_t *p = rf_ptr(f, two, 2 * PAGE);

	struct rf_good g0 = rf_post_good_n(f, s, 400, 0x90, 2);
	uint64_t at = two + PAGE - 100;

	memset(p + PAGE - 100, 0, h);
	rf_pattern(p + PAGE - 100 + h, 500, 0x91);
	struct rf_desc d1 = { at, h + 500, 0 };
	uint16_t id1 = rf_post_chain(s, &d1, 1);
	struct rf_good g2 = rf_post_good(f, s, 5000, 0x92);
	uint16_t used0 = vl_vq_last_used(s->q);

	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 32), 3);
	rf_assert_pkt_pattern(pkts[0], 400, 0x90);
	rf_assert_pkt_pattern(pkts[1], 500, 0x91);
	rf_assert_pkt_pattern(pkts[2], 5000, 0x92);
	vl_pkt_free_bulk(pkts, 3);
	const uint16_t nd[3] = { 2, 1, 1 };

	exp_flush(f, s, exp, used0, nd, 3);
	assert_log(bm, exp, bytes);
	assert_int_equal(st(s)->log_out_of_range, 0);
	rf_expect_used(s, g0.head, 0);
	rf_expect_used(s, id1, 0);
	rf_expect_used(s, g2.head, 0);
	rf_expect_no_used(s);

	/* Zero-copy: held, then returned. */
	memset(bm, 0, bytes);
	memset(exp, 0, bytes);
	vl_vq_set_zero_copy(s->q, true, 0, 8);
	struct rf_good z = rf_post_good(f, s, 800, 0x93);

	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 32), 1);
	assert_int_equal(vl_vq_zero_copy_held(s->q), 1);
	/* Nothing published, but a chain consumed: under event idx the wish moved. */
	if (has(f, EVENT_IDX))
		exp_kick_wish(f, s, exp);
	assert_log(bm, exp, bytes);
	uint16_t used1 = vl_vq_last_used(s->q);

	memset(bm, 0, bytes);
	memset(exp, 0, bytes);
	vl_pkt_free(pkts[0]);
	vl_vq_complete(s->q);
	exp_used(f, s, exp, used1, NULL, 1); /* nothing consumed: the wish stays */
	assert_log(bm, exp, bytes);
	rf_expect_used(s, z.head, 0);
	rf_expect_no_used(s);

	vl_vq_set_dirty_log(s->q, NULL, 0);
	lab_gmem_free(f->g, two, 2 * PAGE);
	free(bm);
	free(exp);
}

/* One burst whose used entries wrap around the end of the ring far enough to reach a page of
 * the used ring that only the wrapped part touches: 2048 entries (the ring's entries 0-510 on
 * its first page, 512-1022 on its second, 2047 across its fourth and fifth), 600 chains from
 * index 2047. Pages 1 (wrapped entries 512-598), 0 (the rest and used->idx), 3 and 4 (entry
 * 2047) are marked; page 2 is not. */
static void scn_tx_wrap_run(struct rf *f)
{
	struct rf_q *s = &f->tx;
	const uint64_t bytes = full_bytes(f);
	struct vl_pkt *pkts[600];
	uint16_t ids[600];

	for (uint32_t i = 0; i < 600; i++)
		ids[i] = rf_post_good(f, s, 20, (uint8_t)i).head;
	uint8_t *bm = log_on(s, bytes);
	uint8_t *exp = exp_new(f);
	uint16_t used0 = vl_vq_last_used(s->q);

	assert_int_equal(used0, 2047);
	assert_int_equal(vl_net_dequeue(s->q, f->pool, pkts, 600), 600);
	vl_pkt_free_bulk(pkts, 600);
	exp_flush(f, s, exp, used0, NULL, 600);
	assert_log(bm, exp, bytes);
	const uint64_t used_page = s->vr.used_gpa / PAGE;

	for (uint64_t p = 0; p < 5; p++) {
		uint64_t pg = used_page + p;

		assert_int_equal((bm[pg / 8] >> (pg % 8)) & 1, p == 2 ? 0 : 1);
	}
	for (uint32_t i = 0; i < 600; i++)
		rf_expect_used(s, ids[i], 0);
	rf_expect_no_used(s);
	vl_vq_set_dirty_log(s->q, NULL, 0);
	free(bm);
	free(exp);
}

/* ---- a mark never reaches the bitmap before its write ---------------------------------- */

/* The bitmap is made read-only during the burst; the first store into it faults, and the
 * handler notes what the watched guest word held at that moment, then lets the store go. */
static uint8_t *g_prot;
static size_t g_prot_len;
static const volatile uint16_t *g_watch;
static uint16_t g_watch_at_fault;
static volatile sig_atomic_t g_faults;

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
	uint8_t *a = si->si_addr;

	(void)uctx;
	if (g_prot == NULL || a < g_prot || a >= g_prot + g_prot_len) {
		/* Not ours: let the default action report it when the access is retried. */
		signal(sig, SIG_DFL);
		return;
	}
	if (g_faults++ == 0)
		g_watch_at_fault = *g_watch;
	mprotect(g_prot, g_prot_len, PROT_READ | PROT_WRITE);
}

/* Packed RX, 4096 entries: 14 packets, each in its own bitmap byte, land in buffers used at
 * ring positions [B - 10, B + 4), where B is the first descriptor of a new 8-page group
 * (bitmap byte) of the descriptor ring. Entering the used write-back the page cache holds 14
 * data bytes and the kick wish's: the used descriptors before B add the 16th (their pages'
 * byte), the one at B needs a 17th and the cache is flushed mid-write-back. The head's flags
 * -- the store that exposes the whole burst, made last -- sit on a page that flush marks:
 * the bitmap must not say so before that store happened (a migration sync in between would
 * clear the bit and lose the write). */
static void scn_packed_head_mark_order(struct rf *f)
{
	struct rf_q *s = &f->rx;
	const uint64_t bytes = full_bytes(f);
	const uint32_t h = f->hdr_len;
	const uint16_t p0 = f->cfg.start_idx;
	uint64_t buf[14];
	uint32_t lens[14];
	uint8_t seeds[14];

	/* The setup this case relies on. */
	const uint64_t head_byte = (s->pr.desc_gpa + 16ull * p0) / PAGE / 8;
	const uint64_t b_byte = (s->pr.desc_gpa + 16ull * (p0 + 10)) / PAGE / 8;

	assert_int_equal((s->pr.desc_gpa + 16ull * (p0 + 10)) % (8 * PAGE), 0);
	assert_int_equal(b_byte, head_byte + 1);
	assert_true(s->pr.device_gpa / PAGE / 8 != head_byte);
	assert_true(s->pr.device_gpa / PAGE / 8 != b_byte);
	for (uint32_t i = 0; i < 14; i++) {
		buf[i] = alloc_pages(f, 8);
		lens[i] = 100;
		seeds[i] = (uint8_t)(0x90 + i);
		post_rx(f, buf[i], 1024);
		for (uint32_t k = 0; k < i; k++)
			assert_true(buf[k] / PAGE / 8 != buf[i] / PAGE / 8);
		assert_true(buf[i] / PAGE / 8 > s->pr.device_gpa / PAGE / 8);
	}

	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)((bytes + GUARD + (uint64_t)pg - 1) / (uint64_t)pg * (uint64_t)pg);
	void *mem = NULL;

	assert_true(pg > 0);
	assert_int_equal(posix_memalign(&mem, (size_t)pg, len), 0);
	memset(mem, 0, len);
	uint8_t *bm = mem;
	uint8_t *exp = exp_new(f);
	struct sigaction sa, old;

	vl_vq_set_dirty_log(s->q, bm, bytes);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	g_prot = bm;
	g_prot_len = len;
	g_watch = &rf_pdesc(s, p0)->flags;
	g_faults = 0;
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	assert_int_equal(mprotect(bm, len, PROT_READ), 0);

	enq(f, lens, seeds, 14);

	mprotect(bm, len, PROT_READ | PROT_WRITE);
	sigaction(SIGSEGV, &old, NULL);
	g_prot = NULL;
	const uint16_t head_final = rf_pdesc(s, p0)->flags;

	assert_true(g_faults >= 1);
	assert_true(head_final & VL_PDESC_F_USED);
	if (g_watch_at_fault != head_final)
		fail_msg("the bitmap was first written while the head used descriptor's flags "
			 "were still 0x%04x (final 0x%04x): a page was marked before its write",
			 g_watch_at_fault, head_final);

	uint16_t used0 = p0;

	for (uint32_t i = 0; i < 14; i++) {
		assert_rx_at(f, buf[i], 100, seeds[i]);
		exp_mark(exp, buf[i], h + 100);
	}
	exp_flush(f, s, exp, used0, NULL, 14);
	assert_log(bm, exp, bytes);
	vl_vq_set_dirty_log(s->q, NULL, 0);
	for (uint32_t i = 0; i < 14; i++)
		lab_gmem_free(f->g, buf[i], 8 * PAGE);
	free(mem);
	free(exp);
}

static void test_packed_head_mark_order(void **state)
{
	(void)state;
	/* The RX ring follows the TX ring's area; B is the first position of its descriptor
	 * ring on a 32 KiB (8-page) boundary. */
	const uint32_t qs = 4096;
	const uint64_t desc = LAB_GMEM_RING_GPA + lab_pring_area_bytes(qs);
	const uint64_t group = (desc / (8 * PAGE) + 1) * (8 * PAGE);
	const uint64_t b = (group - desc) / 16;

	assert_true(b >= 10 && b + 4 < qs);
	const struct rf_case c = {
		.fn = scn_packed_head_mark_order, .layout = VL_LAYOUT_PACKED,
		.granularity = RF_COARSE, .qsize = qs, .start_idx = (uint16_t)(b - 10),
	};

	rf_case_run(&c);
}

/* ---- the runs ----------------------------------------------------------------------- */

#define SPLIT VL_LAYOUT_SPLIT
#define PACKED VL_LAYOUT_PACKED
#define NOBATCH true

/* name, scenario, layout, RAM granularity, features added, queue size, start index,
 * batching off */
#define CASE(nm, scn, lay, gran, feat, qs, start, nob)                                       \
	{ .name = nm, .fn = scn, .layout = lay, .granularity = gran, .features = feat,       \
	  .qsize = qs, .start_idx = start, .no_batch = nob }

static const struct rf_case cases[] = {
	/* Split, 1024 entries: from index 600 the used entries sit on the used ring's second
	 * page, used->idx and flags on its first; from 1023 the first entry straddles the second
	 * and third pages and the next one wraps to the first, and avail_event (event idx) is on
	 * the third. */
	CASE("rx_split_mid_batch", scn_rx_enqueue, SPLIT, RF_COARSE, 0, 1024, 600, false),
	CASE("rx_split_mid_nobatch", scn_rx_enqueue, SPLIT, RF_COARSE, 0, 1024, 600, NOBATCH),
	CASE("rx_split_wrap_event_idx_batch", scn_rx_enqueue, SPLIT, RF_COARSE, EVENT_IDX, 1024,
	  1023, false),
	CASE("rx_split_wrap_event_idx_nobatch", scn_rx_enqueue, SPLIT, RF_4K, EVENT_IDX, 1024, 1023,
	  NOBATCH),
	CASE("rx_split_256", scn_rx_enqueue, SPLIT, RF_4K, 0, 256, 0, false),
	/* Packed, 1024 entries (four pages of descriptors) from position 255: the used
	 * descriptors at 255 and 256 are on the ring's first and second pages, the third
	 * burst's at 257. */
	CASE("rx_packed_writeback_batch", scn_rx_enqueue, PACKED, RF_COARSE, 0, 1024, 255, false),
	CASE("rx_packed_writeback_event_idx_nobatch", scn_rx_enqueue, PACKED, RF_4K, EVENT_IDX, 1024,
	  255, NOBATCH),
	CASE("rx_packed_wrap", scn_rx_enqueue, PACKED, RF_COARSE, 0, 256, 255, false),
	CASE("rx_kept_header_logged_split", scn_rx_kept_header_logged, SPLIT, RF_COARSE, 0, 256, 0,
	  false),
	CASE("rx_kept_header_logged_packed", scn_rx_kept_header_logged, PACKED, RF_4K, EVENT_IDX, 256,
	  0, false),
	CASE("rx_straddle_split_coarse_batch", scn_rx_straddle_page, SPLIT, RF_COARSE, 0, 256, 0,
	  false),
	CASE("rx_straddle_split_coarse_nobatch", scn_rx_straddle_page, SPLIT, RF_COARSE, 0, 256, 0,
	  NOBATCH),
	CASE("rx_straddle_split_4k_batch", scn_rx_straddle_page, SPLIT, RF_4K, 0, 256, 0, false),
	CASE("rx_straddle_split_4k_nobatch", scn_rx_straddle_page, SPLIT, RF_4K, 0, 256, 0, NOBATCH),
	CASE("rx_straddle_packed_coarse_batch", scn_rx_straddle_page, PACKED, RF_COARSE, 0, 256, 0,
	  false),
	CASE("rx_straddle_packed_4k_nobatch", scn_rx_straddle_page, PACKED, RF_4K, 0, 256, 0,
	  NOBATCH),
	CASE("rx_many_pages_split_batch", scn_rx_many_pages, SPLIT, RF_COARSE, 0, 256, 0, false),
	CASE("rx_many_pages_split_nobatch", scn_rx_many_pages, SPLIT, RF_COARSE, 0, 256, 0, NOBATCH),
	CASE("rx_many_pages_packed", scn_rx_many_pages, PACKED, RF_COARSE, 0, 256, 0, false),
	CASE("kick_wish_split", scn_kick_wish, SPLIT, RF_COARSE, 0, 1024, 0, false),
	CASE("kick_wish_split_event_idx", scn_kick_wish, SPLIT, RF_COARSE, EVENT_IDX, 1024, 0, false),
	CASE("kick_wish_packed", scn_kick_wish, PACKED, RF_COARSE, 0, 256, 0, false),
	CASE("kick_wish_packed_event_idx", scn_kick_wish, PACKED, RF_COARSE, EVENT_IDX, 256, 0,
	  false),
	CASE("out_of_range_split_batch", scn_out_of_range, SPLIT, RF_COARSE, 0, 256, 0, false),
	CASE("out_of_range_split_nobatch", scn_out_of_range, SPLIT, RF_COARSE, 0, 256, 0, NOBATCH),
	CASE("out_of_range_packed", scn_out_of_range, PACKED, RF_COARSE, 0, 256, 0, false),
	CASE("off_split", scn_off, SPLIT, RF_COARSE, 0, 256, 0, false),
	CASE("off_packed", scn_off, PACKED, RF_COARSE, 0, 256, 0, false),
	CASE("tx_split", scn_tx, SPLIT, RF_COARSE, 0, 256, 0, false),
	CASE("tx_split_4k_event_idx", scn_tx, SPLIT, RF_4K, EVENT_IDX, 1024, 1022, NOBATCH),
	CASE("tx_packed", scn_tx, PACKED, RF_COARSE, 0, 1024, 254, false),
	CASE("tx_packed_in_order", scn_tx, PACKED, RF_4K, IN_ORDER, 1024, 254, false),
	CASE("tx_split_wrap_run", scn_tx_wrap_run, SPLIT, RF_COARSE, 0, 2048, 2047, false),
};

int main(void)
{
	/* Its start position depends on where the rings lie. */
	const struct CMUnitTest more[] = {
		cmocka_unit_test(test_packed_head_mark_order),
	};

	return rf_run_cases("dirty_log", cases, sizeof(cases) / sizeof(cases[0]), more,
			    sizeof(more) / sizeof(more[0]));
}

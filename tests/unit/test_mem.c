/* SPDX-License-Identifier: MIT */
/* Unit tests for the guest memory table (vl_mem.h) and vl_strerror (vl_error.h).
 *
 * Region hosts are real buffers (one arena split into slices) whenever a test reads or
 * writes through a translation. A few creation and translation tests use made-up host
 * addresses near the ends of the address space; those pointers are compared, never
 * dereferenced. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "vhostlab/vl_error.h"
#include "vhostlab/vl_mem.h"

#define PAGE 4096u
#define SENTINEL 0xEEu

/* ---- helpers ---------------------------------------------------------------------------- */

static struct vl_mem_region region(uint64_t gpa, uint64_t size, void *host)
{
	struct vl_mem_region r;

	memset(&r, 0, sizeof(r));
	r.gpa = gpa;
	r.size = size;
	r.host = host;
	/* Bookkeeping fields the table must not interpret. */
	r.uaddr = 0x7f0000000000ull ^ gpa;
	r.mmap_offset = gpa;
	return r;
}

static void *fake_host(uintptr_t addr)
{
	return (void *)addr;
}

static uint8_t *xmalloc(size_t n)
{
	uint8_t *p = malloc(n);

	assert_non_null(p);
	return p;
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
	struct lab_rng r = lab_rng_make(seed, 0);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(lab_rng_next(&r) >> 24);
}

static struct vl_mem *create_ok(const struct vl_mem_region *r, uint32_t n)
{
	int err = -1;
	struct vl_mem *mem = vl_mem_create(r, n, &err);

	assert_non_null(mem);
	assert_int_equal(err, VL_OK);
	return mem;
}

static void expect_reject(const struct vl_mem_region *r, uint32_t n, int code)
{
	int err = -1;

	assert_null(vl_mem_create(r, n, &err));
	assert_int_equal(err, code);
	/* A NULL err is allowed and changes nothing but the reporting. */
	assert_null(vl_mem_create(r, n, NULL));
}

/* Translate with both access kinds; both must give want / want_len (the table has no
 * per-region permissions). */
static void expect_xlate(const struct vl_mem *mem, uint64_t gpa, uint64_t req, const void *want,
			 uint64_t want_len)
{
	static const unsigned kinds[] = {VL_ACCESS_READ, VL_ACCESS_WRITE};

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		uint64_t len = req;
		void *p = vl_mem_translate(mem, gpa, &len, kinds[k]);

		if (p != want || len != want_len)
			print_error("translate(%#llx, %#llx): got %p/%#llx, want %p/%#llx\n",
				    (unsigned long long)gpa, (unsigned long long)req, p,
				    (unsigned long long)len, want, (unsigned long long)want_len);
		assert_ptr_equal(p, want);
		assert_int_equal(len, want_len);
	}
}

static void expect_miss(const struct vl_mem *mem, uint64_t gpa, uint64_t req)
{
	expect_xlate(mem, gpa, req, NULL, 0);
}

static void expect_bytes(const uint8_t *p, size_t n, uint8_t value)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != value)
			print_error("byte %zu is %#x, want %#x\n", i, p[i], value);
		assert_int_equal(p[i], value);
	}
}

/* ---- vl_strerror ------------------------------------------------------------------------- */

static void test_strerror_every_code(void **state)
{
	(void)state;
	for (int e = 0; e < VL_ERR__COUNT; e++) {
		const char *s = vl_strerror(e);

		assert_non_null(s);
		assert_true(strlen(s) > 0);
		/* Every defined code has its own text, not the fallback. */
		assert_string_not_equal(s, "unknown error");
		for (int f = 0; f < e; f++)
			assert_string_not_equal(s, vl_strerror(f));
	}
}

static void test_strerror_out_of_range(void **state)
{
	static const int bad[] = {-1, -2, INT_MIN, VL_ERR__COUNT, VL_ERR__COUNT + 1, 1000, INT_MAX};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *s = vl_strerror(bad[i]);

		assert_non_null(s);
		assert_string_equal(s, "unknown error");
	}
}

/* ---- vl_mem_create: accepted and rejected tables ----------------------------------------- */

static void test_create_empty_table(void **state)
{
	(void)state;
	struct vl_mem *mem = create_ok(NULL, 0);

	assert_int_equal(vl_mem_region_count(mem), 0);
	expect_miss(mem, 0, 1);
	expect_miss(mem, 0, 0);
	expect_miss(mem, UINT64_MAX, UINT64_MAX);

	uint8_t b[4] = {1, 2, 3, 4};

	assert_int_equal(vl_mem_read(mem, 0, b, sizeof(b)), 0);
	assert_int_equal(vl_mem_write(mem, 0, b, sizeof(b)), 0);
	vl_mem_destroy(mem);
	vl_mem_destroy(NULL); /* harmless */
}

static void test_create_null_regions(void **state)
{
	(void)state;
	expect_reject(NULL, 1, VL_ERR_INVALID_ARG);
	expect_reject(NULL, 7, VL_ERR_INVALID_ARG);
}

static void test_create_zero_size(void **state)
{
	(void)state;
	uint8_t *buf = xmalloc(3 * PAGE);
	struct vl_mem_region r[3] = {
		region(0x1000, PAGE, buf),
		region(0x3000, 0, buf + PAGE),
		region(0x5000, PAGE, buf + 2 * PAGE),
	};

	expect_reject(r, 3, VL_ERR_REGION_ZERO_SIZE);
	expect_reject(&r[1], 1, VL_ERR_REGION_ZERO_SIZE);
	/* Control: the same table with a real size is fine. */
	r[1].size = 1;
	vl_mem_destroy(create_ok(r, 3));
	free(buf);
}

static void test_create_gpa_wrap(void **state)
{
	(void)state;
	uint8_t *buf = xmalloc(PAGE);
	struct vl_mem_region r;

	/* Last byte at 2^64: one past the top. */
	r = region(UINT64_MAX - PAGE + 2, PAGE, buf);
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);
	r = region(UINT64_MAX, 2, buf);
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);
	r = region(1, UINT64_MAX, buf);
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);
	r = region(UINT64_MAX, UINT64_MAX, buf);
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);

	/* Last byte exactly at 2^64 - 1 is legal. */
	r = region(UINT64_MAX - PAGE + 1, PAGE, buf);
	vl_mem_destroy(create_ok(&r, 1));
	r = region(UINT64_MAX, 1, buf);
	vl_mem_destroy(create_ok(&r, 1));

	/* A wrapping region among good ones is still found. */
	struct vl_mem_region many[3] = {
		region(0, 16, buf),
		region(UINT64_MAX - 14, 16, buf + 16),
		region(0x100, 16, buf + 32),
	};

	expect_reject(many, 3, VL_ERR_REGION_OVERFLOW);
	free(buf);
}

static void test_create_host_wrap(void **state)
{
	(void)state;
	struct vl_mem_region r;

	/* Host range whose last byte would be at 2^N (N = pointer width). */
	r = region(0x1000, 17, fake_host(UINTPTR_MAX - 15));
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);
	r = region(0x1000, 2, fake_host(UINTPTR_MAX));
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);
	/* Last host byte exactly at UINTPTR_MAX is legal. */
	r = region(0x1000, 16, fake_host(UINTPTR_MAX - 15));
	vl_mem_destroy(create_ok(&r, 1));
	r = region(0x1000, 1, fake_host(UINTPTR_MAX));
	vl_mem_destroy(create_ok(&r, 1));

	/* Same boundary measured from a real buffer. */
	uint8_t *buf = xmalloc(64);
	uint64_t room = (uint64_t)(UINTPTR_MAX - (uintptr_t)buf) + 1; /* bytes from buf to top */

	r = region(0, room + 1, buf);
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);
	r = region(0, UINT64_MAX, buf);
	expect_reject(&r, 1, VL_ERR_REGION_OVERFLOW);
	r = region(0, room, buf);
	vl_mem_destroy(create_ok(&r, 1));
	free(buf);
}

static void test_create_null_host(void **state)
{
	(void)state;
	uint8_t *buf = xmalloc(2 * PAGE);
	struct vl_mem_region r[2] = {
		region(0x1000, PAGE, buf),
		region(0x2000, PAGE, NULL),
	};

	expect_reject(r, 2, VL_ERR_INVALID_ARG);
	expect_reject(&r[1], 1, VL_ERR_INVALID_ARG);
	r[1].host = buf + PAGE;
	vl_mem_destroy(create_ok(r, 2));
	free(buf);
}

static void test_create_overlap(void **state)
{
	(void)state;
	uint8_t *a = xmalloc(8 * PAGE);
	struct vl_mem_region r[3];

	/* Partial overlap. */
	r[0] = region(0x1000, 0x2000, a);
	r[1] = region(0x2000, 0x2000, a + 4 * PAGE);
	expect_reject(r, 2, VL_ERR_REGION_OVERLAP);
	/* Identical start, same and different sizes, either order. */
	r[0] = region(0x1000, 0x1000, a);
	r[1] = region(0x1000, 0x1000, a);
	expect_reject(r, 2, VL_ERR_REGION_OVERLAP);
	r[1] = region(0x1000, 0x10, a + 4 * PAGE);
	expect_reject(r, 2, VL_ERR_REGION_OVERLAP);
	r[0] = region(0x1000, 0x10, a + 4 * PAGE);
	r[1] = region(0x1000, 0x1000, a);
	expect_reject(r, 2, VL_ERR_REGION_OVERLAP);
	/* Overlap by exactly one byte ... */
	r[0] = region(0x1000, 0x1000, a);
	r[1] = region(0x1fff, 0x1000, a + 4 * PAGE);
	expect_reject(r, 2, VL_ERR_REGION_OVERLAP);
	/* ... versus touching (legal). */
	r[1] = region(0x2000, 0x1000, a + 4 * PAGE);
	vl_mem_destroy(create_ok(r, 2));
	/* Containment, with a later region that does not overlap anything, any order. */
	r[0] = region(0x20000, 0x10, a + 7 * PAGE);
	r[1] = region(0x3000, 0x10, a + 6 * PAGE);
	r[2] = region(0x0, 0x10000, a);
	expect_reject(r, 3, VL_ERR_REGION_OVERLAP);
	/* Overlap with the tail of a merged range (A+B merge, C starts in B). */
	r[0] = region(0x2fff, 0x10, a + 6 * PAGE);
	r[1] = region(0x2000, 0x1000, a + PAGE);
	r[2] = region(0x1000, 0x1000, a);
	expect_reject(r, 3, VL_ERR_REGION_OVERLAP);
	r[0].gpa = 0x3000; /* control: touching the merged range is fine */
	{
		struct vl_mem *mem = create_ok(r, 3);

		assert_int_equal(vl_mem_region_count(mem), 2);
		vl_mem_destroy(mem);
	}
	/* At the top of the address space. */
	r[0] = region(UINT64_MAX - 15, 16, a);
	r[1] = region(UINT64_MAX, 1, a + PAGE);
	expect_reject(r, 2, VL_ERR_REGION_OVERLAP);
	free(a);
}

static void test_create_too_many(void **state)
{
	(void)state;
	uint32_t n = VL_MEM_MAX_REGIONS + 1;
	struct vl_mem_region *r = calloc(n, sizeof(*r));
	uint8_t *buf = xmalloc(64);

	assert_non_null(r);
	/* Every region valid on its own; one-byte regions every other address never merge. */
	for (uint32_t i = 0; i < n; i++)
		r[i] = region(2ull * i, 1, buf + (i % 64));
	expect_reject(r, n, VL_ERR_TOO_MANY_REGIONS);

	/* Exactly the maximum is accepted. */
	struct vl_mem *mem = create_ok(r, VL_MEM_MAX_REGIONS);

	assert_int_equal(vl_mem_region_count(mem), VL_MEM_MAX_REGIONS);
	expect_xlate(mem, 0, 5, buf, 1);
	expect_miss(mem, 1, 5);
	uint64_t top_gpa = 2ull * (VL_MEM_MAX_REGIONS - 1);

	expect_xlate(mem, top_gpa, 5, buf + ((VL_MEM_MAX_REGIONS - 1) % 64), 1);
	expect_miss(mem, top_gpa + 1, 1);
	expect_miss(mem, 2ull * VL_MEM_MAX_REGIONS, 1);
	vl_mem_destroy(mem);
	free(buf);
	free(r);
}

static void test_create_keeps_own_copy(void **state)
{
	(void)state;
	uint8_t *buf = xmalloc(2 * PAGE);
	struct vl_mem_region r[2] = {
		region(0x2000, PAGE, buf + PAGE),
		region(0x1000, PAGE, buf),
	};
	struct vl_mem *mem = create_ok(r, 2);

	/* The caller's array is neither sorted in place nor referenced afterwards. */
	assert_int_equal(r[0].gpa, 0x2000);
	assert_ptr_equal(r[0].host, buf + PAGE);
	memset(r, 0xA5, sizeof(r));
	assert_int_equal(vl_mem_region_count(mem), 1);
	expect_xlate(mem, 0x1000, 3 * PAGE, buf, 2 * PAGE);
	vl_mem_destroy(mem);
	free(buf);
}

/* ---- vl_mem_translate --------------------------------------------------------------------- */

static void test_translate_single_region_bounds(void **state)
{
	(void)state;
	uint8_t *buf = xmalloc(PAGE);
	struct vl_mem_region r = region(0x10000, PAGE, buf);
	struct vl_mem *mem = create_ok(&r, 1);

	assert_int_equal(vl_mem_region_count(mem), 1);
	/* First byte. */
	expect_xlate(mem, 0x10000, 1, buf, 1);
	expect_xlate(mem, 0x10000, PAGE, buf, PAGE);
	expect_xlate(mem, 0x10000, PAGE + 1, buf, PAGE);
	expect_xlate(mem, 0x10000, UINT64_MAX, buf, PAGE);
	/* Inside: never more than asked, clamped to the end. */
	expect_xlate(mem, 0x10000 + 100, 10, buf + 100, 10);
	expect_xlate(mem, 0x10000 + 100, PAGE, buf + 100, PAGE - 100);
	/* Last byte. */
	expect_xlate(mem, 0x10000 + PAGE - 1, 1, buf + PAGE - 1, 1);
	expect_xlate(mem, 0x10000 + PAGE - 1, 2, buf + PAGE - 1, 1);
	expect_xlate(mem, 0x10000 + PAGE - 1, UINT64_MAX, buf + PAGE - 1, 1);
	/* One past the last byte, one before the first, far away. */
	expect_miss(mem, 0x10000 + PAGE, 1);
	expect_miss(mem, 0x10000 + PAGE, UINT64_MAX);
	expect_miss(mem, 0x10000 - 1, 1);
	expect_miss(mem, 0x10000 - 1, 2); /* a range that would reach in does not count */
	expect_miss(mem, 0, PAGE * 100);
	expect_miss(mem, UINT64_MAX, 1);
	vl_mem_destroy(mem);
	free(buf);
}

static void test_translate_straddle_not_host_contiguous(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc(4 * PAGE);
	/* Guest-adjacent, host slices with a one-page gap between them. */
	struct vl_mem_region r[2] = {
		region(0x1000, PAGE, arena),
		region(0x2000, PAGE, arena + 2 * PAGE),
	};
	struct vl_mem *mem = create_ok(r, 2);

	assert_int_equal(vl_mem_region_count(mem), 2);
	/* A request straddling the boundary is clamped to the first region. */
	expect_xlate(mem, 0x1800, PAGE, arena + 0x800, 0x800);
	expect_xlate(mem, 0x1000, 2 * PAGE, arena, PAGE);
	expect_xlate(mem, 0x1fff, 2, arena + PAGE - 1, 1);
	/* The second region starts where the first ends, at its own host address. */
	expect_xlate(mem, 0x2000, 2 * PAGE, arena + 2 * PAGE, PAGE);
	expect_xlate(mem, 0x2fff, 2, arena + 3 * PAGE - 1, 1);
	expect_miss(mem, 0x3000, 1);
	vl_mem_destroy(mem);

	/* Host order reversed (second guest region sits just below the first in host space). */
	r[0] = region(0x1000, PAGE, arena + PAGE);
	r[1] = region(0x2000, PAGE, arena);
	mem = create_ok(r, 2);
	assert_int_equal(vl_mem_region_count(mem), 2);
	expect_xlate(mem, 0x1000, 2 * PAGE, arena + PAGE, PAGE);
	expect_xlate(mem, 0x2000, 2 * PAGE, arena, PAGE);
	vl_mem_destroy(mem);

	/* Host gap of a single byte, and host overlap by a byte: neither is contiguous. */
	r[0] = region(0x1000, PAGE, arena);
	r[1] = region(0x2000, PAGE, arena + PAGE + 1);
	mem = create_ok(r, 2);
	assert_int_equal(vl_mem_region_count(mem), 2);
	expect_xlate(mem, 0x1ff0, 0x20, arena + PAGE - 0x10, 0x10);
	vl_mem_destroy(mem);
	r[1] = region(0x2000, PAGE, arena + PAGE - 1);
	mem = create_ok(r, 2);
	assert_int_equal(vl_mem_region_count(mem), 2);
	expect_xlate(mem, 0x1ff0, 0x20, arena + PAGE - 0x10, 0x10);
	expect_xlate(mem, 0x2000, 0x20, arena + PAGE - 1, 0x20);
	vl_mem_destroy(mem);
	free(arena);
}

static void test_translate_merged_regions(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc(4 * PAGE);
	/* Three pieces contiguous in guest and host space, given out of order. */
	struct vl_mem_region r[3] = {
		region(0x2800, 0x800, arena + 0x1800),
		region(0x1000, 0x1000, arena),
		region(0x2000, 0x800, arena + 0x1000),
	};
	struct vl_mem *mem = create_ok(r, 3);

	assert_int_equal(vl_mem_region_count(mem), 1);
	/* The translated length spans every piece. */
	expect_xlate(mem, 0x1000, UINT64_MAX, arena, 0x2000);
	expect_xlate(mem, 0x1000, 0x2000, arena, 0x2000);
	expect_xlate(mem, 0x1000, 0x1fff, arena, 0x1fff);
	expect_xlate(mem, 0x1fff, 2, arena + 0xfff, 2);
	expect_xlate(mem, 0x27ff, 0x1000, arena + 0x17ff, 0x801);
	expect_xlate(mem, 0x2fff, 0x1000, arena + 0x1fff, 1);
	expect_miss(mem, 0x3000, 1);
	expect_miss(mem, 0xfff, 1);
	vl_mem_destroy(mem);

	/* Only the first two pieces contiguous in host space: two ranges. */
	r[0].host = arena + 0x2800;
	mem = create_ok(r, 3);
	assert_int_equal(vl_mem_region_count(mem), 2);
	expect_xlate(mem, 0x1000, UINT64_MAX, arena, 0x1800);
	expect_xlate(mem, 0x2800, UINT64_MAX, arena + 0x2800, 0x800);
	vl_mem_destroy(mem);
	free(arena);
}

static void test_translate_host_adjacent_guest_not(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc(2 * PAGE);
	/* Host-contiguous slices, but a one-page guest hole between them: not merged. */
	struct vl_mem_region r[2] = {
		region(0x3000, PAGE, arena + PAGE),
		region(0x1000, PAGE, arena),
	};
	struct vl_mem *mem = create_ok(r, 2);

	assert_int_equal(vl_mem_region_count(mem), 2);
	expect_xlate(mem, 0x1000, 3 * PAGE, arena, PAGE);
	expect_miss(mem, 0x2000, 1);
	expect_miss(mem, 0x2fff, 1);
	expect_xlate(mem, 0x3000, 3 * PAGE, arena + PAGE, PAGE);
	vl_mem_destroy(mem);
	free(arena);
}

static void test_translate_hole(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc(3 * PAGE);
	struct vl_mem_region r[3] = {
		region(0x10000, PAGE, arena),
		region(0x20000, PAGE, arena + PAGE),     /* hole [0x11000, 0x20000) */
		region(0x21001, PAGE, arena + 2 * PAGE), /* one-byte hole at 0x21000 */
	};
	struct vl_mem *mem = create_ok(r, 3);

	assert_int_equal(vl_mem_region_count(mem), 3);
	expect_xlate(mem, 0x10fff, 100, arena + PAGE - 1, 1);
	expect_miss(mem, 0x11000, 1);
	expect_miss(mem, 0x11000, 0x10000);
	expect_miss(mem, 0x18000, 1);
	expect_miss(mem, 0x1ffff, 2);
	expect_xlate(mem, 0x20000, 100, arena + PAGE, 100);
	expect_xlate(mem, 0x20fff, 100, arena + 2 * PAGE - 1, 1);
	expect_miss(mem, 0x21000, 100);
	expect_xlate(mem, 0x21001, 100, arena + 2 * PAGE, 100);
	expect_xlate(mem, 0x22000, 100, arena + 3 * PAGE - 1, 1);
	expect_miss(mem, 0x22001, 1);
	vl_mem_destroy(mem);
	free(arena);
}

static void test_translate_top_of_address_space(void **state)
{
	(void)state;
	uint8_t *top = xmalloc(PAGE);
	uint8_t *low = xmalloc(PAGE);
	struct vl_mem_region r[2] = {
		region(UINT64_MAX - PAGE + 1, PAGE, top),
		region(0, PAGE, low),
	};
	struct vl_mem *mem = create_ok(r, 2);

	assert_int_equal(vl_mem_region_count(mem), 2);
	/* gpa = 2^64 - 1 with the largest possible length: one byte. */
	expect_xlate(mem, UINT64_MAX, UINT64_MAX, top + PAGE - 1, 1);
	expect_xlate(mem, UINT64_MAX, 1, top + PAGE - 1, 1);
	expect_xlate(mem, UINT64_MAX - 1, UINT64_MAX, top + PAGE - 2, 2);
	expect_xlate(mem, UINT64_MAX - 10, 100, top + PAGE - 11, 11);
	expect_xlate(mem, UINT64_MAX - PAGE + 1, UINT64_MAX, top, PAGE);
	expect_miss(mem, UINT64_MAX - PAGE, UINT64_MAX);
	/* Huge lengths from the bottom are clamped, nothing wraps into the top region. */
	expect_xlate(mem, 0, UINT64_MAX, low, PAGE);
	expect_xlate(mem, PAGE - 1, UINT64_MAX, low + PAGE - 1, 1);
	expect_miss(mem, PAGE, UINT64_MAX);
	vl_mem_destroy(mem);
	free(top);
	free(low);
}

#if UINTPTR_MAX == UINT64_MAX
/* Sizes that only a 64-bit host range can hold; the host addresses are made up. */
static void test_translate_huge_region(void **state)
{
	(void)state;
	/* gpa 0 .. 2^64 - 2, host 1 .. 2^64 - 1: the largest expressible region. */
	struct vl_mem_region r = region(0, UINT64_MAX, fake_host(1));
	struct vl_mem *mem = create_ok(&r, 1);

	expect_xlate(mem, 0, UINT64_MAX, fake_host(1), UINT64_MAX);
	expect_xlate(mem, 5, UINT64_MAX, fake_host(6), UINT64_MAX - 5);
	expect_xlate(mem, UINT64_MAX - 1, UINT64_MAX, fake_host(UINTPTR_MAX), 1);
	expect_miss(mem, UINT64_MAX, UINT64_MAX);
	expect_miss(mem, UINT64_MAX, 0);
	vl_mem_destroy(mem);

	/* Two halves, guest- and host-contiguous: merged into one range of 2^64 - 2 bytes. */
	struct vl_mem_region h[2] = {
		region(1ull << 63, (1ull << 63) - 1, fake_host((uintptr_t)1 << 63)),
		region(1, (1ull << 63) - 1, fake_host(1)),
	};

	mem = create_ok(h, 2);
	assert_int_equal(vl_mem_region_count(mem), 1);
	expect_xlate(mem, 1, UINT64_MAX, fake_host(1), UINT64_MAX - 1);
	expect_xlate(mem, (1ull << 63) - 1, 2, fake_host(((uintptr_t)1 << 63) - 1), 2);
	expect_miss(mem, 0, UINT64_MAX);
	expect_miss(mem, UINT64_MAX, UINT64_MAX);
	vl_mem_destroy(mem);
}
#endif

/* A host range that ends exactly at the top of the address space, followed in guest space by
 * another region: the contiguity check must not compute a pointer past the top (undefined
 * behaviour, caught by -fsanitize=pointer-overflow) nor merge on a wrapped address. */
static void test_merge_check_at_host_top(void **state)
{
	(void)state;
	uint8_t *b = xmalloc(16);
	struct vl_mem_region r[2] = {
		region(0, 16, fake_host(UINTPTR_MAX - 15)),
		region(16, 16, b),
	};
	struct vl_mem *mem = create_ok(r, 2);

	assert_int_equal(vl_mem_region_count(mem), 2);
	expect_xlate(mem, 0, 100, fake_host(UINTPTR_MAX - 15), 16);
	expect_xlate(mem, 15, 100, fake_host(UINTPTR_MAX), 1);
	expect_xlate(mem, 16, 100, b, 16);
	vl_mem_destroy(mem);

	/* Contiguous up to the very last host byte: merged. */
	r[0] = region(0, 16, fake_host(UINTPTR_MAX - 31));
	r[1] = region(16, 16, fake_host(UINTPTR_MAX - 15));
	mem = create_ok(r, 2);
	assert_int_equal(vl_mem_region_count(mem), 1);
	expect_xlate(mem, 0, 100, fake_host(UINTPTR_MAX - 31), 32);
	expect_xlate(mem, 31, 100, fake_host(UINTPTR_MAX), 1);
	expect_miss(mem, 32, 1);
	vl_mem_destroy(mem);
	free(b);
}

static void test_translate_zero_length(void **state)
{
	(void)state;
	uint8_t *buf = xmalloc(PAGE);
	uint8_t *top = xmalloc(16);
	struct vl_mem_region r[2] = {
		region(0x1000, PAGE, buf),
		region(UINT64_MAX - 15, 16, top),
	};
	struct vl_mem *mem = create_ok(r, 2);

	/* Mapped: the host pointer, *len stays 0. */
	expect_xlate(mem, 0x1000, 0, buf, 0);
	expect_xlate(mem, 0x1800, 0, buf + 0x800, 0);
	expect_xlate(mem, 0x1fff, 0, buf + PAGE - 1, 0);
	expect_xlate(mem, UINT64_MAX, 0, top + 15, 0);
	/* Unmapped: NULL and 0. */
	expect_miss(mem, 0x2000, 0);
	expect_miss(mem, 0xfff, 0);
	expect_miss(mem, 0, 0);
	expect_miss(mem, UINT64_MAX - 16, 0);

	/* Zero-length copies move nothing and touch nothing. */
	memset(buf, SENTINEL, PAGE);
	assert_int_equal(vl_mem_read(mem, 0x1000, NULL, 0), 0);
	assert_int_equal(vl_mem_write(mem, 0x1000, NULL, 0), 0);
	assert_int_equal(vl_mem_read(mem, 0x2000, NULL, 0), 0);
	assert_int_equal(vl_mem_write(mem, 0x2000, NULL, 0), 0);
	expect_bytes(buf, PAGE, SENTINEL);
	vl_mem_destroy(mem);
	free(buf);
	free(top);
}

static void test_unsorted_input(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc(8 * PAGE);
	/* R0+R1 merge (guest- and host-contiguous); R2 is guest-adjacent to R1 but not
	 * host-contiguous; R3 is host-contiguous with R2 behind a guest hole; R4 is guest-adjacent
	 * to R3 behind a host gap; R5 is lowest in guest space and given last but one. */
	const struct vl_mem_region r0 = region(0x100000, PAGE, arena);
	const struct vl_mem_region r1 = region(0x101000, PAGE, arena + PAGE);
	const struct vl_mem_region r2 = region(0x102000, PAGE, arena + 3 * PAGE);
	const struct vl_mem_region r3 = region(0x104000, PAGE, arena + 4 * PAGE);
	const struct vl_mem_region r4 = region(0x105000, 2 * PAGE, arena + 6 * PAGE);
	const struct vl_mem_region r5 = region(0x50000, 16, arena + 5 * PAGE);
	struct vl_mem_region in[6] = {r4, r1, r3, r0, r5, r2};
	struct vl_mem *mem = create_ok(in, 6);

	assert_int_equal(vl_mem_region_count(mem), 5);
	expect_miss(mem, 0x4ffff, 1);
	expect_xlate(mem, 0x50000, 100, arena + 5 * PAGE, 16);
	expect_xlate(mem, 0x5000f, 100, arena + 5 * PAGE + 15, 1);
	expect_miss(mem, 0x50010, 1);
	expect_miss(mem, 0xfffff, 1);
	expect_xlate(mem, 0x100000, UINT64_MAX, arena, 2 * PAGE);
	expect_xlate(mem, 0x101fff, UINT64_MAX, arena + 2 * PAGE - 1, 1);
	expect_xlate(mem, 0x102000, UINT64_MAX, arena + 3 * PAGE, PAGE);
	expect_xlate(mem, 0x102fff, UINT64_MAX, arena + 4 * PAGE - 1, 1);
	expect_miss(mem, 0x103000, 1);
	expect_miss(mem, 0x103fff, 1);
	expect_xlate(mem, 0x104000, UINT64_MAX, arena + 4 * PAGE, PAGE);
	expect_xlate(mem, 0x104fff, UINT64_MAX, arena + 5 * PAGE - 1, 1);
	expect_xlate(mem, 0x105000, UINT64_MAX, arena + 6 * PAGE, 2 * PAGE);
	expect_xlate(mem, 0x106fff, UINT64_MAX, arena + 8 * PAGE - 1, 1);
	expect_miss(mem, 0x107000, 1);

	/* The regions as given, unmerged, in guest-physical order (for tools that describe
	 * the table). */
	const struct vl_mem_region sorted[6] = {r5, r0, r1, r2, r3, r4};
	struct vl_mem_region got;

	assert_int_equal(vl_mem_table_size(mem), 6);
	for (uint32_t i = 0; i < 6; i++) {
		assert_int_equal(vl_mem_table_region(mem, i, &got), VL_OK);
		assert_memory_equal(&got, &sorted[i], sizeof(got));
	}
	assert_int_equal(vl_mem_table_region(mem, 6, &got), VL_ERR_INVALID_ARG);
	vl_mem_destroy(mem);

	/* Every rotation of the input gives the same table. */

	for (unsigned rot = 0; rot < 6; rot++) {
		for (unsigned i = 0; i < 6; i++)
			in[i] = sorted[(i + rot) % 6];
		mem = create_ok(in, 6);
		assert_int_equal(vl_mem_region_count(mem), 5);
		for (unsigned i = 0; i < 6; i++) {
			uint64_t last = sorted[i].gpa + sorted[i].size - 1;

			expect_xlate(mem, sorted[i].gpa, 1, sorted[i].host, 1);
			uint8_t *host_last = (uint8_t *)sorted[i].host + sorted[i].size - 1;

			expect_xlate(mem, last, 1, host_last, 1);
		}
		vl_mem_destroy(mem);
	}
	free(arena);
}

#define MANY 5000u
#define MANY_BASE 0x100000ull

/* Region i of the many-regions layout: pairs (2k, 2k+1) are guest-adjacent, and a one-page
 * guest hole follows every pair. */
static uint64_t many_gpa(uint32_t i)
{
	return MANY_BASE + (uint64_t)i * PAGE + (uint64_t)(i / 2) * PAGE;
}

static void shuffle(struct vl_mem_region *r, uint32_t n, uint64_t seed)
{
	struct lab_rng rng = lab_rng_make(seed, 0);

	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = lab_rng_below(&rng, i + 1);
		struct vl_mem_region t = r[i];

		r[i] = r[j];
		r[j] = t;
	}
}

static void test_many_regions(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc((size_t)MANY * PAGE);
	struct vl_mem_region *r = calloc(MANY, sizeof(*r));
	uint8_t *host[MANY];

	assert_non_null(r);
	fill_random(arena, (size_t)MANY * PAGE, 0x9e3779b97f4a7c15ull);

	/* Hosts in reverse order: region 2k+1 sits just BELOW region 2k in host space, so
	 * guest-adjacent pairs are not host-contiguous and nothing merges. */
	for (uint32_t i = 0; i < MANY; i++) {
		host[i] = arena + (size_t)(MANY - 1 - i) * PAGE;
		r[i] = region(many_gpa(i), PAGE, host[i]);
	}
	shuffle(r, MANY, 12345);
	struct vl_mem *mem = create_ok(r, MANY);

	assert_int_equal(vl_mem_region_count(mem), MANY);
	expect_miss(mem, 0, 1);
	expect_miss(mem, MANY_BASE - 1, 1);
	for (uint32_t i = 0; i < MANY; i++) {
		uint64_t g = many_gpa(i);

		expect_xlate(mem, g, 3 * PAGE, host[i], PAGE);
		expect_xlate(mem, g + 1234, 1, host[i] + 1234, 1);
		expect_xlate(mem, g + PAGE - 1, 3 * PAGE, host[i] + PAGE - 1, 1);
		if (i % 2 == 1) {
			/* First and last byte of the hole after each pair. */
			expect_miss(mem, g + PAGE, 1);
			expect_miss(mem, g + 2 * PAGE - 1, 1);
		}
	}
	expect_miss(mem, UINT64_MAX, 1);

	/* Piecewise copies over each pair: two pieces, then the hole. */
	uint8_t *buf = xmalloc(3 * PAGE);

	for (uint32_t k = 0; k < MANY / 2; k++) {
		memset(buf, SENTINEL, 3 * PAGE);
		assert_int_equal(vl_mem_read(mem, many_gpa(2 * k), buf, 3 * PAGE), 2 * PAGE);
		assert_memory_equal(buf, host[2 * k], PAGE);
		assert_memory_equal(buf + PAGE, host[2 * k + 1], PAGE);
		expect_bytes(buf + 2 * PAGE, PAGE, SENTINEL);
	}
	for (uint32_t k = 0; k < MANY / 2; k += 97) {
		fill_random(buf, 3 * PAGE, 1000 + k);
		assert_int_equal(vl_mem_write(mem, many_gpa(2 * k) + 10, buf, 3 * PAGE),
				 2 * PAGE - 10);
		assert_memory_equal(host[2 * k] + 10, buf, PAGE - 10);
		assert_memory_equal(host[2 * k + 1], buf + PAGE - 10, PAGE);
	}
	vl_mem_destroy(mem);

	/* Hosts in forward order: each guest-adjacent pair is also host-contiguous and merges;
	 * consecutive pairs are host-contiguous but separated by a guest hole, so they do not. */
	for (uint32_t i = 0; i < MANY; i++) {
		host[i] = arena + (size_t)i * PAGE;
		r[i] = region(many_gpa(i), PAGE, host[i]);
	}
	shuffle(r, MANY, 54321);
	mem = create_ok(r, MANY);
	assert_int_equal(vl_mem_region_count(mem), MANY / 2);
	for (uint32_t k = 0; k < MANY / 2; k++) {
		uint64_t g = many_gpa(2 * k);

		expect_xlate(mem, g, 3 * PAGE, host[2 * k], 2 * PAGE);
		expect_xlate(mem, g + PAGE - 1, 3 * PAGE, host[2 * k] + PAGE - 1, PAGE + 1);
		expect_xlate(mem, g + 2 * PAGE - 1, 3 * PAGE, host[2 * k] + 2 * PAGE - 1, 1);
		expect_miss(mem, g + 2 * PAGE, 1);
		expect_miss(mem, g + 3 * PAGE - 1, 1);
	}
	vl_mem_destroy(mem);
	free(buf);
	free(r);
	free(arena);
}

/* ---- vl_mem_read / vl_mem_write ------------------------------------------------------------- */

/* Guest layout used by the copy tests (host offsets into a 0x6000-byte arena):
 *   A [0x10000, 0x11000) -> 0x0000   (host gap 0x1000..0x2000)
 *   B [0x11000, 0x11800) -> 0x2000   guest-adjacent to A, not host-contiguous
 *   C [0x11800, 0x12000) -> 0x2800   guest- and host-contiguous with B: merged
 *   hole [0x12000, 0x13000)          (host gap 0x3000..0x4000)
 *   D [0x13000, 0x14000) -> 0x4000   then unmapped above; host 0x5000..0x6000 unused */
#define ARENA_SIZE 0x6000u

static struct vl_mem *copy_layout(uint8_t *arena)
{
	struct vl_mem_region r[4] = {
		region(0x13000, 0x1000, arena + 0x4000),
		region(0x11800, 0x0800, arena + 0x2800),
		region(0x10000, 0x1000, arena),
		region(0x11000, 0x0800, arena + 0x2000),
	};
	struct vl_mem *mem = create_ok(r, 4);

	assert_int_equal(vl_mem_region_count(mem), 3);
	return mem;
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static void test_copy_piecewise(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc(ARENA_SIZE);
	uint8_t *src = xmalloc(0x3000);
	uint8_t *dst = xmalloc(0x3000);
	struct vl_mem *mem = copy_layout(arena);

	memset(arena, SENTINEL, ARENA_SIZE);
	/* Exactly A + B + C: three host pieces, two of them one range. */
	pattern(src, 0x2000, 1);
	assert_int_equal(vl_mem_write(mem, 0x10000, src, 0x2000), 0x2000);
	assert_memory_equal(arena, src, 0x1000);
	expect_bytes(arena + 0x1000, 0x1000, SENTINEL);
	assert_memory_equal(arena + 0x2000, src + 0x1000, 0x1000);
	expect_bytes(arena + 0x3000, 0x3000, SENTINEL);
	memset(dst, 0, 0x3000);
	assert_int_equal(vl_mem_read(mem, 0x10000, dst, 0x2000), 0x2000);
	assert_memory_equal(dst, src, 0x2000);

	/* Four bytes across the A/B boundary land in two host places. */
	const uint8_t four[4] = {0x11, 0x22, 0x33, 0x44};

	assert_int_equal(vl_mem_write(mem, 0x10ffe, four, 4), 4);
	assert_int_equal(arena[0xffe], 0x11);
	assert_int_equal(arena[0xfff], 0x22);
	assert_int_equal(arena[0x2000], 0x33);
	assert_int_equal(arena[0x2001], 0x44);
	assert_int_equal(arena[0xffd], src[0xffd]);
	assert_int_equal(arena[0x2002], src[0x1002]);
	expect_bytes(arena + 0x1000, 0x1000, SENTINEL);
	memset(dst, 0, 8);
	assert_int_equal(vl_mem_read(mem, 0x10ffd, dst, 6), 6);
	assert_int_equal(dst[0], src[0xffd]);
	assert_memory_equal(dst + 1, four, 4);
	assert_int_equal(dst[5], src[0x1002]);

	/* Across the merged B/C boundary, from an offset inside A. */
	pattern(src, 0x1800, 99);
	assert_int_equal(vl_mem_write(mem, 0x10800, src, 0x1800), 0x1800);
	assert_memory_equal(arena + 0x800, src, 0x800);
	assert_memory_equal(arena + 0x2000, src + 0x800, 0x1000);
	expect_bytes(arena + 0x1000, 0x1000, SENTINEL);
	expect_bytes(arena + 0x3000, 0x3000, SENTINEL);
	assert_int_equal(vl_mem_read(mem, 0x10800, dst, 0x1800), 0x1800);
	assert_memory_equal(dst, src, 0x1800);

	/* D alone, and D with one byte more than it holds. */
	pattern(src, 0x1001, 7);
	assert_int_equal(vl_mem_write(mem, 0x13000, src, 0x1001), 0x1000);
	assert_memory_equal(arena + 0x4000, src, 0x1000);
	expect_bytes(arena + 0x5000, 0x1000, SENTINEL);
	memset(dst, SENTINEL, 0x1001);
	assert_int_equal(vl_mem_read(mem, 0x13000, dst, 0x1001), 0x1000);
	assert_memory_equal(dst, src, 0x1000);
	assert_int_equal(dst[0x1000], SENTINEL);

	vl_mem_destroy(mem);
	free(dst);
	free(src);
	free(arena);
}

static void test_copy_short_at_hole(void **state)
{
	(void)state;
	uint8_t *arena = xmalloc(ARENA_SIZE);
	uint8_t *src = xmalloc(0x3000);
	uint8_t *dst = xmalloc(0x3000);
	struct vl_mem *mem = copy_layout(arena);
	uint64_t len;

	memset(arena, SENTINEL, ARENA_SIZE);
	pattern(src, 0x3000, 3);

	/* From inside C into the hole: 0x10 bytes, and gpa + result is unmapped. */
	assert_int_equal(vl_mem_write(mem, 0x11ff0, src, 0x20), 0x10);
	assert_memory_equal(arena + 0x2ff0, src, 0x10);
	expect_bytes(arena + 0x3000, 0x3000, SENTINEL);
	len = 1;
	assert_null(vl_mem_translate(mem, 0x11ff0 + 0x10, &len, VL_ACCESS_WRITE));
	memset(dst, 0x55, 0x20);
	assert_int_equal(vl_mem_read(mem, 0x11ff0, dst, 0x20), 0x10);
	assert_memory_equal(dst, src, 0x10);
	expect_bytes(dst + 0x10, 0x10, 0x55);

	/* From A through B and C into the hole: stops at 0x12000. */
	assert_int_equal(vl_mem_write(mem, 0x10800, src, 0x3000), 0x1800);
	assert_memory_equal(arena + 0x800, src, 0x800);
	assert_memory_equal(arena + 0x2000, src + 0x800, 0x1000);
	expect_bytes(arena + 0x1000, 0x1000, SENTINEL);
	expect_bytes(arena + 0x3000, 0x3000, SENTINEL); /* D untouched: the hole stops the copy */
	memset(dst, 0x55, 0x3000);
	assert_int_equal(vl_mem_read(mem, 0x10800, dst, 0x3000), 0x1800);
	assert_memory_equal(dst, src, 0x1800);
	expect_bytes(dst + 0x1800, 0x1800, 0x55);

	/* Starting in the hole, below everything, above everything: nothing. */
	static const uint64_t unmapped[] = {0x12000, 0x12fff, 0xffff, 0, 0x14000, UINT64_MAX};

	for (size_t i = 0; i < sizeof(unmapped) / sizeof(unmapped[0]); i++) {
		memset(dst, 0x55, 0x10);
		assert_int_equal(vl_mem_read(mem, unmapped[i], dst, 0x10), 0);
		expect_bytes(dst, 0x10, 0x55);
		assert_int_equal(vl_mem_write(mem, unmapped[i], src, 0x10), 0);
	}
	expect_bytes(arena + 0x3000, 0x3000, SENTINEL);

	/* The last byte of D then the unmapped space above it. */
	assert_int_equal(vl_mem_write(mem, 0x13fff, src, 2), 1);
	assert_int_equal(arena[0x4fff], src[0]);
	expect_bytes(arena + 0x5000, 0x1000, SENTINEL);

	vl_mem_destroy(mem);
	free(dst);
	free(src);
	free(arena);
}

static void test_copy_top_no_wrap(void **state)
{
	(void)state;
	uint8_t *top = xmalloc(PAGE);
	uint8_t *low = xmalloc(PAGE);
	uint8_t dst[16];
	uint8_t src[16];
	struct vl_mem_region r[2] = {
		region(UINT64_MAX - PAGE + 1, PAGE, top),
		region(0, PAGE, low),
	};
	struct vl_mem *mem = create_ok(r, 2);

	pattern(top, PAGE, 5);
	memset(low, SENTINEL, PAGE);
	/* A read running off 2^64 - 1 stops there; it does not continue at address 0, which is
	 * mapped. */
	memset(dst, 0x55, sizeof(dst));
	assert_int_equal(vl_mem_read(mem, UINT64_MAX - 1, dst, 10), 2);
	assert_int_equal(dst[0], top[PAGE - 2]);
	assert_int_equal(dst[1], top[PAGE - 1]);
	expect_bytes(dst + 2, sizeof(dst) - 2, 0x55);
	/* Even for the largest length (the copy must stop after one byte, before dst ends). */
	memset(dst, 0x55, sizeof(dst));
	assert_int_equal(vl_mem_read(mem, UINT64_MAX, dst, UINT64_MAX), 1);
	assert_int_equal(dst[0], top[PAGE - 1]);
	expect_bytes(dst + 1, sizeof(dst) - 1, 0x55);

	pattern(src, sizeof(src), 200);
	assert_int_equal(vl_mem_write(mem, UINT64_MAX - 2, src, sizeof(src)), 3);
	assert_memory_equal(top + PAGE - 3, src, 3);
	expect_bytes(low, PAGE, SENTINEL);
	assert_int_equal(vl_mem_write(mem, UINT64_MAX, src, UINT64_MAX), 1);
	assert_int_equal(top[PAGE - 1], src[0]);
	expect_bytes(low, PAGE, SENTINEL);

	/* The whole top region in one call. */
	uint8_t *big = xmalloc(2 * PAGE);

	assert_int_equal(vl_mem_read(mem, UINT64_MAX - PAGE + 1, big, 2 * PAGE), PAGE);
	assert_memory_equal(big, top, PAGE);
	free(big);
	vl_mem_destroy(mem);
	free(top);
	free(low);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strerror_every_code),
		cmocka_unit_test(test_strerror_out_of_range),
		cmocka_unit_test(test_create_empty_table),
		cmocka_unit_test(test_create_null_regions),
		cmocka_unit_test(test_create_zero_size),
		cmocka_unit_test(test_create_gpa_wrap),
		cmocka_unit_test(test_create_host_wrap),
		cmocka_unit_test(test_create_null_host),
		cmocka_unit_test(test_create_overlap),
		cmocka_unit_test(test_create_too_many),
		cmocka_unit_test(test_create_keeps_own_copy),
		cmocka_unit_test(test_translate_single_region_bounds),
		cmocka_unit_test(test_translate_straddle_not_host_contiguous),
		cmocka_unit_test(test_translate_merged_regions),
		cmocka_unit_test(test_translate_host_adjacent_guest_not),
		cmocka_unit_test(test_translate_hole),
		cmocka_unit_test(test_translate_top_of_address_space),
#if UINTPTR_MAX == UINT64_MAX
		cmocka_unit_test(test_translate_huge_region),
#endif
		cmocka_unit_test(test_merge_check_at_host_top),
		cmocka_unit_test(test_translate_zero_length),
		cmocka_unit_test(test_unsorted_input),
		cmocka_unit_test(test_many_regions),
		cmocka_unit_test(test_copy_piecewise),
		cmocka_unit_test(test_copy_short_at_hole),
		cmocka_unit_test(test_copy_top_no_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Unit tests for the lab's simulated guest RAM (sim/guest_mem.c): layout of the host-view
 * region table, guest/host views sharing bytes, guard pages, the allocator and the
 * snapshot diff. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fork, waitpid, sigaction */
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest_mem.h"
#include "vhostlab/vl_mem.h"

/* Children fault on purpose. Under valgrind that fault is first reported as an invalid
 * read, which a memcheck run would count against this test; the header-only client request
 * silences the child (a no-op without valgrind, and optional at build time). */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define QUIET_VALGRIND() VALGRIND_DISABLE_ERROR_REPORTING
#endif
#endif
#ifndef QUIET_VALGRIND
#define QUIET_VALGRIND() ((void)0)
#endif

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define PAGE ((uint64_t)LAB_PAGE_SIZE)
#define GRANULE 64ull

/* ---- helpers --------------------------------------------------------------------------- */

/* xorshift64*: the tests' own stream, independent of the placement PRNG in guest_mem.c. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static struct lab_gmem *make(uint64_t ram, uint64_t ring, uint64_t gran, uint64_t seed)
{
	struct lab_gmem_config cfg = {
		.ram_size = ram, .ring_area_size = ring, .granularity = gran, .seed = seed,
	};
	char err[256] = "";
	struct lab_gmem *g = lab_gmem_create(&cfg, err, sizeof(err));

	if (!g)
		fail_msg("lab_gmem_create: %s", err);
	assert_string_equal(err, "");
	return g;
}

static void fill_random(void *p, uint64_t len, uint64_t *s)
{
	uint8_t *b = p;

	for (uint64_t i = 0; i < len; i++)
		b[i] = (uint8_t)rnd(s);
}

static int cmp_host(const void *a, const void *b)
{
	const struct vl_mem_region *x = a, *y = b;
	uintptr_t hx = (uintptr_t)x->host, hy = (uintptr_t)y->host;

	return (hx > hy) - (hx < hy);
}

/* Everything the core relies on about the table, for any granularity. */
static void check_layout(const struct lab_gmem *g)
{
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);
	uint64_t ring_end = LAB_GMEM_RING_GPA + lab_gmem_ring_size(g);
	uint64_t gpa = lab_gmem_ram_gpa(g);

	assert_true(n >= 2);
	assert_int_equal(lab_gmem_ring_gpa(g), LAB_GMEM_RING_GPA);
	assert_int_equal(lab_gmem_ram_gpa(g), ring_end + LAB_GMEM_HOLE_SIZE);
	assert_int_equal(lab_gmem_hole_gpa(g), ring_end + LAB_GMEM_HOLE_SIZE / 2);
	assert_int_equal(lab_gmem_end_gpa(g), lab_gmem_ram_gpa(g) + lab_gmem_ram_size(g));

	/* Exactly one ring region, then RAM regions tiling [ram_gpa, end) in order. */
	assert_int_equal(r[0].gpa, LAB_GMEM_RING_GPA);
	assert_int_equal(r[0].size, lab_gmem_ring_size(g));
	assert_int_equal(r[0].mmap_offset, 0);
	for (uint32_t i = 1; i < n; i++) {
		assert_int_equal(r[i].gpa, gpa);
		assert_int_equal(r[i].mmap_offset,
				 lab_gmem_ring_size(g) + (gpa - lab_gmem_ram_gpa(g)));
		gpa += r[i].size;
	}
	assert_int_equal(gpa, lab_gmem_end_gpa(g));
	for (uint32_t i = 0; i < n; i++) {
		assert_true(r[i].size > 0);
		assert_int_equal(r[i].size % PAGE, 0);
		assert_int_equal(r[i].uaddr, r[i].gpa);
		assert_non_null(r[i].host);
		assert_int_equal((uintptr_t)r[i].host % PAGE, 0);
	}

	/* In host order, at least one page separates any two regions. */
	struct vl_mem_region *by_host = malloc(n * sizeof(*by_host));

	assert_non_null(by_host);
	memcpy(by_host, r, n * sizeof(*by_host));
	qsort(by_host, n, sizeof(*by_host), cmp_host);
	for (uint32_t i = 0; i + 1 < n; i++) {
		uintptr_t end = (uintptr_t)by_host[i].host + by_host[i].size;

		assert_true(end + PAGE <= (uintptr_t)by_host[i + 1].host);
	}
	free(by_host);

	/* The core must see every region separately: nothing merges. */
	int err = -1;
	struct vl_mem *mem = vl_mem_create(r, n, &err);

	assert_non_null(mem);
	assert_int_equal(err, 0);
	assert_int_equal(vl_mem_region_count(mem), n);
	vl_mem_destroy(mem);
}

/* Run fn(arg) in a child; return the signal that killed it, or -1 if it exited. */
static int child_signal(void (*fn)(const void *arg), const void *arg)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;

		/* Die of the signal itself, even under a sanitizer that installs handlers. */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		sigaction(SIGABRT, &sa, NULL);
		QUIET_VALGRIND();
		fn(arg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}

/* ---- layout ---------------------------------------------------------------------------- */

static void test_coarse_layout(void **state)
{
	(void)state;
	/* 11 pages of RAM (rounded up) in 4 coarse regions: 2, 2, 2 and the 5-page rest. */
	struct lab_gmem *g = make(10 * PAGE + 100, 3 * PAGE + 1, 0, 1);
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);

	assert_int_equal(lab_gmem_ring_size(g), 4 * PAGE);
	assert_int_equal(lab_gmem_ram_size(g), 11 * PAGE);
	assert_int_equal(n, 1 + LAB_GMEM_COARSE_REGIONS);
	assert_int_equal(r[1].size, 2 * PAGE);
	assert_int_equal(r[2].size, 2 * PAGE);
	assert_int_equal(r[3].size, 2 * PAGE);
	assert_int_equal(r[4].size, 5 * PAGE);
	check_layout(g);
	lab_gmem_destroy(g);
}

static void test_coarse_small_ram(void **state)
{
	(void)state;
	struct lab_gmem *g = make(2 * PAGE, PAGE, 0, 2);
	uint32_t n = 0;

	lab_gmem_regions(g, &n);
	assert_int_equal(n, 3); /* ring + one region per page */
	check_layout(g);
	lab_gmem_destroy(g);

	g = make(1, 1, 0, 3);
	lab_gmem_regions(g, &n);
	assert_int_equal(n, 2);
	assert_int_equal(lab_gmem_ram_size(g), PAGE);
	check_layout(g);
	lab_gmem_destroy(g);
}

static void test_fine_layout_16mib(void **state)
{
	(void)state;
	struct lab_gmem *g = make(16 * MIB, 4 * PAGE, PAGE, 42);
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);
	uint32_t ascending = 0;

	assert_int_equal(n, 1 + 16 * MIB / PAGE);
	check_layout(g);
	/* Scattered: host order does not simply follow gpa order. */
	for (uint32_t i = 1; i + 1 < n; i++)
		ascending += (uintptr_t)r[i + 1].host > (uintptr_t)r[i].host;
	assert_true(ascending < (n - 2) * 3 / 4);
	lab_gmem_destroy(g);
}

static void test_fine_layout_remainder(void **state)
{
	(void)state;
	/* 10 pages cut into 3-page regions: 3, 3, 3 and a 1-page rest. */
	struct lab_gmem *g = make(10 * PAGE, PAGE, 3 * PAGE, 4);
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);

	assert_int_equal(n, 5);
	assert_int_equal(r[1].size, 3 * PAGE);
	assert_int_equal(r[3].size, 3 * PAGE);
	assert_int_equal(r[4].size, PAGE);
	check_layout(g);
	lab_gmem_destroy(g);
}

/* Host offsets relative to the lowest region: a function of the seed alone. */
static void relative_offsets(const struct lab_gmem *g, uint64_t *out, uint32_t n)
{
	const struct vl_mem_region *r = lab_gmem_regions(g, NULL);
	uintptr_t lo = UINTPTR_MAX;

	for (uint32_t i = 0; i < n; i++)
		lo = (uintptr_t)r[i].host < lo ? (uintptr_t)r[i].host : lo;
	for (uint32_t i = 0; i < n; i++)
		out[i] = (uintptr_t)r[i].host - lo;
}

static void test_placement_follows_seed(void **state)
{
	(void)state;
	enum { N = 1 + 64 };
	uint64_t a[N], b[N], c[N];
	struct lab_gmem *g1 = make(64 * PAGE, PAGE, PAGE, 7);
	struct lab_gmem *g2 = make(64 * PAGE, PAGE, PAGE, 7);
	struct lab_gmem *g3 = make(64 * PAGE, PAGE, PAGE, 8);

	relative_offsets(g1, a, N);
	relative_offsets(g2, b, N);
	relative_offsets(g3, c, N);
	assert_memory_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, c, sizeof(a));
	lab_gmem_destroy(g3);
	lab_gmem_destroy(g2);
	lab_gmem_destroy(g1);
}

/* ---- guest view and host view share the bytes ----------------------------------------- */

static void test_views_share_bytes(void **state)
{
	(void)state;
	struct lab_gmem *g = make(1 * MIB, 2 * PAGE, PAGE, 5);
	uint64_t s = 0x1234;
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);
	struct vl_mem *mem = vl_mem_create(r, n, NULL);
	uint64_t ram = lab_gmem_ram_gpa(g);

	assert_non_null(mem);
	fill_random(lab_gmem_guest_ptr(g, LAB_GMEM_RING_GPA, lab_gmem_ring_size(g)),
		    lab_gmem_ring_size(g), &s);
	fill_random(lab_gmem_guest_ptr(g, ram, lab_gmem_ram_size(g)), lab_gmem_ram_size(g), &s);

	/* Every region, whole: the translation is the region's host view and holds the same
	 * bytes as the guest view. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t len = r[i].size;
		void *h = vl_mem_translate(mem, r[i].gpa, &len, VL_ACCESS_READ);

		assert_ptr_equal(h, r[i].host);
		assert_int_equal(len, r[i].size);
		assert_memory_equal(h, lab_gmem_guest_ptr(g, r[i].gpa, len), len);
	}

	/* A 20-byte range across the first RAM region boundary: translate clamps at the
	 * boundary, vl_mem_read stitches both halves. */
	uint64_t gpa = ram + PAGE - 10, len = 20;
	uint8_t buf[3 * 4096 + 50];

	assert_non_null(vl_mem_translate(mem, gpa, &len, VL_ACCESS_READ));
	assert_int_equal(len, 10);
	assert_int_equal(vl_mem_read(mem, gpa, buf, 20), 20);
	assert_memory_equal(buf, lab_gmem_guest_ptr(g, gpa, 20), 20);

	/* Across four regions at once, and the other direction: host writes, guest reads. */
	gpa = ram + 5 * PAGE - 25;
	assert_int_equal(vl_mem_read(mem, gpa, buf, sizeof(buf)), sizeof(buf));
	assert_memory_equal(buf, lab_gmem_guest_ptr(g, gpa, sizeof(buf)), sizeof(buf));
	fill_random(buf, sizeof(buf), &s);
	assert_int_equal(vl_mem_write(mem, gpa, buf, sizeof(buf)), sizeof(buf));
	assert_memory_equal(buf, lab_gmem_guest_ptr(g, gpa, sizeof(buf)), sizeof(buf));

	/* The ring area's last bytes and RAM's first are not contiguous: a read stops at
	 * the hole. */
	gpa = LAB_GMEM_RING_GPA + lab_gmem_ring_size(g) - 4;
	assert_int_equal(vl_mem_read(mem, gpa, buf, 8), 4);
	vl_mem_destroy(mem);
	lab_gmem_destroy(g);
}

static void test_hole_and_bounds(void **state)
{
	(void)state;
	struct lab_gmem *g = make(64 * KIB, PAGE, PAGE, 6);
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);
	struct vl_mem *mem = vl_mem_create(r, n, NULL);
	uint64_t ram = lab_gmem_ram_gpa(g), end = lab_gmem_end_gpa(g);
	uint64_t ring_end = LAB_GMEM_RING_GPA + lab_gmem_ring_size(g);
	uint64_t len = 16;

	assert_non_null(mem);
	assert_null(vl_mem_translate(mem, lab_gmem_hole_gpa(g), &len, VL_ACCESS_READ));
	assert_int_equal(len, 0);
	len = 1;
	assert_null(vl_mem_translate(mem, end, &len, VL_ACCESS_READ));
	len = 1;
	assert_null(vl_mem_translate(mem, 0, &len, VL_ACCESS_READ));
	len = 1;
	assert_null(vl_mem_translate(mem, ring_end, &len, VL_ACCESS_READ));
	len = 1;
	assert_null(vl_mem_translate(mem, ram - 1, &len, VL_ACCESS_READ));

	/* Guest view: whole areas yes; anything touching the hole or beyond, no. */
	assert_non_null(lab_gmem_guest_ptr(g, LAB_GMEM_RING_GPA, lab_gmem_ring_size(g)));
	assert_non_null(lab_gmem_guest_ptr(g, ram, lab_gmem_ram_size(g)));
	assert_non_null(lab_gmem_guest_ptr(g, end - 1, 1));
	assert_null(lab_gmem_guest_ptr(g, ram, lab_gmem_ram_size(g) + 1));
	assert_null(lab_gmem_guest_ptr(g, ring_end - 1, 2));
	assert_null(lab_gmem_guest_ptr(g, lab_gmem_hole_gpa(g), 1));
	assert_null(lab_gmem_guest_ptr(g, lab_gmem_hole_gpa(g), 0));
	assert_null(lab_gmem_guest_ptr(g, end, 0));
	assert_null(lab_gmem_guest_ptr(g, LAB_GMEM_RING_GPA - 1, 1));
	assert_null(lab_gmem_guest_ptr(g, ram + 8, UINT64_MAX));
	assert_null(lab_gmem_guest_ptr(g, UINT64_MAX, 2));
	/* The guest view is contiguous even though the host view is not. */
	assert_ptr_equal((uint8_t *)lab_gmem_guest_ptr(g, ram, 1) + PAGE,
			 lab_gmem_guest_ptr(g, ram + PAGE, 1));
	vl_mem_destroy(mem);
	lab_gmem_destroy(g);
}

/* ---- guard pages ----------------------------------------------------------------------- */

static void touch(const void *p)
{
	*(volatile const uint8_t *)p;
}

static void touch_after(const void *arg)
{
	const struct vl_mem_region *r = arg;

	touch((const uint8_t *)r->host + r->size);
}

static void touch_before(const void *arg)
{
	const struct vl_mem_region *r = arg;

	touch((const uint8_t *)r->host - 1);
}

static void touch_inside(const void *arg)
{
	const struct vl_mem_region *r = arg;

	touch(r->host);
	touch((const uint8_t *)r->host + r->size - 1);
}

static void test_guard_pages_fault(void **state)
{
	(void)state;
	struct lab_gmem *g = make(16 * PAGE, 2 * PAGE, PAGE, 9);
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);
	const uint32_t picks[] = { 0, 1, n / 2, n - 1 };

	for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++) {
		const struct vl_mem_region *reg = &r[picks[i]];

		assert_int_equal(child_signal(touch_inside, reg), -1);
		assert_int_equal(child_signal(touch_after, reg), SIGSEGV);
		assert_int_equal(child_signal(touch_before, reg), SIGSEGV);
	}
	lab_gmem_destroy(g);
}

/* ---- allocator ------------------------------------------------------------------------- */

static void test_alloc_alignment(void **state)
{
	(void)state;
	struct lab_gmem *g = make(1 * MIB, PAGE, 0, 10);
	uint64_t ram = lab_gmem_ram_gpa(g), end = lab_gmem_end_gpa(g);

	for (uint64_t align = 1; align <= 64 * KIB; align <<= 1) {
		/* An odd-sized allocation first, so the cursor is not already aligned. */
		uint64_t pad = lab_gmem_alloc(g, 100, 1);
		uint64_t gpa = lab_gmem_alloc(g, 300, align);

		assert_int_not_equal(pad, 0);
		assert_int_not_equal(gpa, 0);
		assert_int_equal(gpa % align, 0);
		assert_int_equal(gpa % GRANULE, 0);
		assert_true(gpa >= ram && gpa + 300 <= end);
		assert_non_null(lab_gmem_guest_ptr(g, gpa, 300));
	}
	/* An alignment no RAM address satisfies. */
	assert_int_equal(lab_gmem_alloc(g, 64, 1ull << 62), 0);
	lab_gmem_destroy(g);
}

/* lab_gmem_alloc_edge: an allocation against each region edge in turn, from the cursor's
 * region on; at the end, a multiple of 64 ends on the region's last byte; one longer than a
 * region runs over into the neighbours; none left: 0. lab_gmem_pieces counts the regions a
 * range touches. */
static void check_edge_allocs(struct lab_gmem *g, uint64_t len, enum lab_gmem_edge edge)
{
	uint32_t n;
	const struct vl_mem_region *r = lab_gmem_regions(g, &n);
	uint64_t *got = calloc(n, sizeof(*got));
	uint32_t taken = 0;

	assert_non_null(got);
	for (;;) {
		uint64_t gpa = lab_gmem_alloc_edge(g, len, edge);

		if (gpa == 0)
			break;
		assert_int_equal(gpa % GRANULE, 0);
		/* Which region's edge: the allocation's first byte or its one past last. */
		uint32_t hit = 0;

		for (uint32_t i = 1; i < n; i++)
			if (edge == LAB_GMEM_REGION_START ? gpa == r[i].gpa
							   : gpa + len == r[i].gpa + r[i].size)
				hit = i;
		assert_int_not_equal(hit, 0);
		assert_int_equal(got[hit], 0); /* each edge once */
		got[hit] = gpa;
		assert_non_null(lab_gmem_guest_ptr(g, gpa, len));
		if (len <= r[hit].size)
			assert_int_equal(lab_gmem_pieces(g, gpa, len), 1);
		taken++;
	}
	/* The 8 regions from the cursor's had room at that edge once (a long one takes its
	 * neighbours' too). */
	if (len <= r[1].size)
		assert_int_equal(taken, n - 1 < 8 ? n - 1 : 8);
	else
		assert_true(taken >= 1 && taken < 8);
	for (uint32_t i = 1; i < n; i++)
		if (got[i])
			lab_gmem_free(g, got[i], len);
	assert_int_equal(lab_gmem_bytes_allocated(g), 0);
	free(got);
}

static void test_alloc_edge(void **state)
{
	(void)state;
	/* Fine: 16 regions of a page; coarse: 4 regions of 4 pages. */
	struct lab_gmem *fine = make(16 * PAGE, PAGE, PAGE, 11);
	struct lab_gmem *coarse = make(16 * PAGE, PAGE, 0, 12);
	struct lab_gmem *gs[2] = {fine, coarse};

	for (int k = 0; k < 2; k++) {
		struct lab_gmem *g = gs[k];

		check_edge_allocs(g, 64, LAB_GMEM_REGION_END);
		check_edge_allocs(g, 640, LAB_GMEM_REGION_END);
		check_edge_allocs(g, 100, LAB_GMEM_REGION_START);
		check_edge_allocs(g, 1, LAB_GMEM_REGION_START);
	}
	/* Longer than a fine region: ends on one region's edge, straddles the one before. */
	check_edge_allocs(fine, PAGE + 128, LAB_GMEM_REGION_END);
	check_edge_allocs(fine, 2 * PAGE, LAB_GMEM_REGION_START);

	/* The last byte of a region: the byte of an END allocation of 64 at its end; a buffer
	 * ending there is one piece, one byte more is two. */
	uint64_t ram = lab_gmem_ram_gpa(fine);
	uint64_t e = lab_gmem_alloc_edge(fine, 64, LAB_GMEM_REGION_END);

	assert_int_not_equal(e, 0);
	assert_int_equal((e + 64 - ram) % PAGE, 0);
	assert_int_equal(lab_gmem_pieces(fine, e, 64), 1);
	assert_int_equal(lab_gmem_pieces(fine, e + 63, 1), 1);
	assert_int_equal(lab_gmem_pieces(fine, e + 63, 2), 2);
	assert_int_equal(lab_gmem_pieces(fine, e, 0), 0);
	assert_int_equal(lab_gmem_pieces(fine, ram, 16 * PAGE), 16);
	assert_int_equal(lab_gmem_pieces(coarse, lab_gmem_ram_gpa(coarse), 16 * PAGE), 4);
	lab_gmem_free(fine, e, 64);

	/* A region's edge taken: the next region's (next fit from the cursor); full RAM: 0. */
	uint64_t a = lab_gmem_alloc_edge(fine, 64, LAB_GMEM_REGION_START);
	uint64_t b = lab_gmem_alloc_edge(fine, 64, LAB_GMEM_REGION_START);

	assert_int_not_equal(a, 0);
	assert_int_not_equal(b, 0);
	assert_int_not_equal(a, b);
	uint64_t all = lab_gmem_alloc(fine, 14 * PAGE, 64);

	assert_int_not_equal(all, 0);
	assert_int_equal(lab_gmem_alloc_edge(fine, 64, LAB_GMEM_REGION_START), 0);
	assert_int_equal(lab_gmem_alloc_edge(fine, 17 * PAGE, LAB_GMEM_REGION_END), 0);
	lab_gmem_free(fine, all, 14 * PAGE);
	lab_gmem_free(fine, a, 64);
	lab_gmem_free(fine, b, 64);
	assert_int_equal(lab_gmem_bytes_allocated(fine), 0);
	lab_gmem_destroy(fine);
	lab_gmem_destroy(coarse);
}

static void test_alloc_exhaustion_and_reuse(void **state)
{
	(void)state;
	struct lab_gmem *g = make(PAGE, PAGE, 0, 11);
	uint64_t gpas[PAGE / GRANULE];
	const uint64_t ngr = PAGE / GRANULE;

	for (uint64_t i = 0; i < ngr; i++) {
		gpas[i] = lab_gmem_alloc(g, i % 2 ? GRANULE : 1, 1);
		assert_int_not_equal(gpas[i], 0);
	}
	assert_int_equal(lab_gmem_bytes_allocated(g), PAGE);
	assert_int_equal(lab_gmem_alloc(g, 1, 1), 0);
	assert_int_equal(lab_gmem_alloc(g, 0, 1), 0);

	/* Freeing one granule makes room for exactly that granule again. */
	lab_gmem_free(g, gpas[17], GRANULE);
	assert_int_equal(lab_gmem_bytes_allocated(g), PAGE - GRANULE);
	assert_int_equal(lab_gmem_alloc(g, 2 * GRANULE, 1), 0);
	assert_int_equal(lab_gmem_alloc(g, GRANULE, 1), gpas[17]);

	for (uint64_t i = 0; i < ngr; i++)
		lab_gmem_free(g, gpas[i], i % 2 ? GRANULE : 1);
	assert_int_equal(lab_gmem_bytes_allocated(g), 0);

	/* Empty again: the whole RAM in one piece, but not a byte more. */
	assert_int_equal(lab_gmem_alloc(g, PAGE + 1, 1), 0);
	assert_int_equal(lab_gmem_alloc(g, PAGE, PAGE), lab_gmem_ram_gpa(g));
	assert_int_equal(lab_gmem_alloc(g, 1, 1), 0);
	lab_gmem_free(g, lab_gmem_ram_gpa(g), PAGE);
	assert_int_equal(lab_gmem_alloc(g, UINT64_MAX, 1), 0);
	lab_gmem_destroy(g);
}

#define SHADOW_RAM (64 * KIB)
#define SHADOW_GR (SHADOW_RAM / GRANULE)
#define MAX_LIVE 256

struct live {
	uint64_t gpa, len;
	uint8_t tag;
};

struct shadow {
	struct lab_gmem *g;
	int owner[SHADOW_GR]; /* index into live[] or -1 */
	struct live live[MAX_LIVE];
	unsigned nlive;
	uint64_t bytes;
};

static uint64_t granules(uint64_t len)
{
	return len ? (len + GRANULE - 1) / GRANULE : 1;
}

/* Is there any aligned run of `need` free granules? (What the allocator must find.) */
static bool shadow_has_fit(const struct shadow *sh, uint64_t need, uint64_t align)
{
	uint64_t ram = lab_gmem_ram_gpa(sh->g);

	for (uint64_t s = 0; s + need <= SHADOW_GR;) {
		uint64_t k = 0;

		if ((ram + s * GRANULE) % align != 0) {
			s++;
			continue;
		}
		while (k < need && sh->owner[s + k] < 0)
			k++;
		if (k == need)
			return true;
		s += k + 1; /* every start up to s + k would cover the busy granule */
	}
	return false;
}

static void shadow_alloc(struct shadow *sh, uint64_t *s)
{
	uint64_t len = rnd(s) % 4 == 0 ? rnd(s) % 64 : rnd(s) % 3000;
	uint64_t align = 1ull << (rnd(s) % 13);
	uint64_t gpa = lab_gmem_alloc(sh->g, len, align);
	uint64_t ram = lab_gmem_ram_gpa(sh->g);

	if (gpa == 0) {
		assert_false(shadow_has_fit(sh, granules(len), align));
		return;
	}
	assert_int_equal(gpa % align, 0);
	assert_true(gpa >= ram && gpa - ram + granules(len) * GRANULE <= SHADOW_RAM);
	assert_true(sh->nlive < MAX_LIVE);

	struct live *l = &sh->live[sh->nlive];
	uint64_t first = (gpa - ram) / GRANULE;

	for (uint64_t k = 0; k < granules(len); k++) {
		assert_int_equal(sh->owner[first + k], -1); /* overlap with a live block */
		sh->owner[first + k] = (int)sh->nlive;
	}
	l->gpa = gpa;
	l->len = len;
	l->tag = (uint8_t)rnd(s);
	/* Stamp the bytes: an overlapping allocation would clobber them. */
	memset(lab_gmem_guest_ptr(sh->g, gpa, 1), l->tag, len);
	sh->bytes += granules(len) * GRANULE;
	sh->nlive++;
}

static void shadow_free(struct shadow *sh, unsigned idx)
{
	struct live *l = &sh->live[idx];
	const uint8_t *p = lab_gmem_guest_ptr(sh->g, l->gpa, 1);
	uint64_t first = (l->gpa - lab_gmem_ram_gpa(sh->g)) / GRANULE;

	for (uint64_t i = 0; i < l->len; i++)
		assert_int_equal(p[i], l->tag);
	lab_gmem_free(sh->g, l->gpa, l->len);
	for (uint64_t k = 0; k < granules(l->len); k++)
		sh->owner[first + k] = -1;
	sh->bytes -= granules(l->len) * GRANULE;
	/* Move the last live entry into the hole and repoint its granules. */
	sh->nlive--;
	if (idx != sh->nlive) {
		*l = sh->live[sh->nlive];
		first = (l->gpa - lab_gmem_ram_gpa(sh->g)) / GRANULE;
		for (uint64_t k = 0; k < granules(l->len); k++)
			sh->owner[first + k] = (int)idx;
	}
}

static void test_alloc_randomized(void **state)
{
	(void)state;
	struct shadow *sh = calloc(1, sizeof(*sh));
	uint64_t s = 0xfeedface;

	assert_non_null(sh);
	sh->g = make(SHADOW_RAM, PAGE, PAGE, 12);
	for (unsigned i = 0; i < SHADOW_GR; i++)
		sh->owner[i] = -1;
	for (unsigned op = 0; op < 5000; op++) {
		bool do_free = sh->nlive == MAX_LIVE || (sh->nlive > 0 && rnd(&s) % 100 < 45);

		if (do_free)
			shadow_free(sh, (unsigned)(rnd(&s) % sh->nlive));
		else
			shadow_alloc(sh, &s);
		assert_int_equal(lab_gmem_bytes_allocated(sh->g), sh->bytes);
	}
	while (sh->nlive > 0)
		shadow_free(sh, sh->nlive - 1);
	assert_int_equal(lab_gmem_bytes_allocated(sh->g), 0);
	lab_gmem_destroy(sh->g);
	free(sh);
}

struct bad_free {
	struct lab_gmem *g;
	uint64_t gpa, len;
};

static void do_bad_free(const void *arg)
{
	const struct bad_free *b = arg;

	/* stderr is where the message goes; keep the test log readable. */
	if (!freopen("/dev/null", "w", stderr))
		_exit(2);
	lab_gmem_free(b->g, b->gpa, b->len);
}

static void test_bad_free_aborts(void **state)
{
	(void)state;
	struct lab_gmem *g = make(PAGE, PAGE, 0, 13);
	uint64_t ram = lab_gmem_ram_gpa(g);
	uint64_t a = lab_gmem_alloc(g, 200, 1); /* 4 granules */
	uint64_t b = lab_gmem_alloc(g, 64, 1);
	const struct bad_free cases[] = {
		{ g, ram + 1024, 64 },  /* never allocated */
		{ g, a + 64, 64 },      /* inside an allocation */
		{ g, a, 64 },           /* right start, too short */
		{ g, a, 300 },          /* runs into the next allocation */
		{ g, a + 1, 199 },      /* not granule aligned */
		{ g, ram - 64, 64 },    /* below RAM */
		{ g, LAB_GMEM_RING_GPA, 64 },
	};

	assert_int_equal(a, ram);
	assert_int_equal(b, ram + 4 * GRANULE);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(child_signal(do_bad_free, &cases[i]), SIGABRT);
	/* The parent's state is untouched by the children: the real frees work. */
	lab_gmem_free(g, a, 200);
	lab_gmem_free(g, b, 64);
	assert_int_equal(lab_gmem_bytes_allocated(g), 0);
	lab_gmem_destroy(g);
}

/* ---- snapshot and diff ----------------------------------------------------------------- */

#define MAX_RUNS 16

struct runs {
	size_t n;
	uint64_t gpa[MAX_RUNS], len[MAX_RUNS];
};

static void record_run(void *ctx, uint64_t gpa, uint64_t len)
{
	struct runs *r = ctx;

	assert_true(r->n < MAX_RUNS);
	r->gpa[r->n] = gpa;
	r->len[r->n] = len;
	r->n++;
}

/* Flip every byte of [gpa, gpa+len) so each one surely differs from before. */
static void flip_guest(struct lab_gmem *g, uint64_t gpa, uint64_t len)
{
	uint8_t *p = lab_gmem_guest_ptr(g, gpa, len);

	assert_non_null(p);
	for (uint64_t i = 0; i < len; i++)
		p[i] ^= 0x5a;
}

/* The same through the host view, as the core would write. */
static void flip_host(const struct vl_mem *mem, uint64_t gpa, uint64_t len)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	assert_int_equal(vl_mem_read(mem, gpa, buf, len), len);
	for (uint64_t i = 0; i < len; i++)
		buf[i] ^= 0xa5;
	assert_int_equal(vl_mem_write(mem, gpa, buf, len), len);
	free(buf);
}

static void test_snapshot_diff(void **state)
{
	(void)state;
	struct lab_gmem *g = make(64 * KIB, 2 * PAGE, PAGE, 14);
	uint32_t n = 0;
	const struct vl_mem_region *reg = lab_gmem_regions(g, &n);
	struct vl_mem *mem = vl_mem_create(reg, n, NULL);
	uint64_t ring = LAB_GMEM_RING_GPA, ring_end = ring + lab_gmem_ring_size(g);
	uint64_t ram = lab_gmem_ram_gpa(g), end = lab_gmem_end_gpa(g);
	uint64_t s = 99;
	struct runs got = { 0 };

	assert_non_null(mem);
	fill_random(lab_gmem_guest_ptr(g, ring, lab_gmem_ring_size(g)), lab_gmem_ring_size(g), &s);
	fill_random(lab_gmem_guest_ptr(g, ram, lab_gmem_ram_size(g)), lab_gmem_ram_size(g), &s);
	lab_gmem_snapshot(g);
	assert_int_equal(lab_gmem_diff(g, record_run, &got), 0);
	assert_int_equal(got.n, 0);

	/* Expected runs, in gpa order. */
	const struct { uint64_t gpa, len; bool host; } want[] = {
		{ ring + 5, 3, false },
		{ ring_end - 1, 1, false },          /* last ring byte ... */
		{ ram, 1, false },                   /* ... and first RAM byte: two runs */
		{ ram + PAGE - 8, 16, true },        /* across a region boundary */
		{ ram + 3 * PAGE + 100, 10000, true }, /* across several regions and blocks */
		{ ram + 8 * PAGE + 10, 2, false },   /* two runs one byte apart */
		{ ram + 8 * PAGE + 13, 2, false },
		{ ram + 10 * PAGE - 4, 4, false },   /* ends where a 4 KiB block ends ... */
		{ ram + 12 * PAGE, 5, true },        /* ... next change a clean block later */
		{ end - 1, 1, true },                /* last byte of guest memory */
	};
	const size_t nwant = sizeof(want) / sizeof(want[0]);

	for (size_t i = 0; i < nwant; i++) {
		if (want[i].host)
			flip_host(mem, want[i].gpa, want[i].len);
		else
			flip_guest(g, want[i].gpa, want[i].len);
	}
	assert_int_equal(lab_gmem_diff(g, record_run, &got), nwant);
	assert_int_equal(got.n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		assert_int_equal(got.gpa[i], want[i].gpa);
		assert_int_equal(got.len[i], want[i].len);
	}
	assert_int_equal(lab_gmem_diff(g, NULL, NULL), nwant);

	/* Undo the guest-view flips: only the host-view runs remain. */
	for (size_t i = 0; i < nwant; i++)
		if (!want[i].host)
			flip_guest(g, want[i].gpa, want[i].len);
	assert_int_equal(lab_gmem_diff(g, NULL, NULL), 4);

	/* A fresh snapshot absorbs everything. */
	lab_gmem_snapshot(g);
	got.n = 0;
	assert_int_equal(lab_gmem_diff(g, record_run, &got), 0);
	assert_int_equal(got.n, 0);
	vl_mem_destroy(mem);
	lab_gmem_destroy(g);
}

/* Pages nobody touched stay holes of the memfd, which the snapshot and the diff skip: the
 * diff must still see writes into them (through either view), end a run where a touched
 * page meets an untouched one, join a run across pages touched only after the snapshot,
 * and see a write of zeros into an untouched page as no change. */
static void test_snapshot_diff_untouched_pages(void **state)
{
	(void)state;
	struct lab_gmem *g = make(16 * PAGE, PAGE, PAGE, 16);
	uint32_t n = 0;
	const struct vl_mem_region *reg = lab_gmem_regions(g, &n);
	struct vl_mem *mem = vl_mem_create(reg, n, NULL);
	uint64_t ram = lab_gmem_ram_gpa(g);
	struct runs got = { 0 };

	assert_non_null(mem);
	/* Touch RAM pages 2 and 5 only; the rest stays untouched. */
	flip_guest(g, ram + 3 * PAGE - 3, 3);
	flip_guest(g, ram + 5 * PAGE + 7, 1);
	lab_gmem_snapshot(g);
	assert_int_equal(lab_gmem_diff(g, NULL, NULL), 0);

	const struct { uint64_t gpa, len; bool host; } want[] = {
		{ ram + 3 * PAGE - 2, 2, false },     /* to the end of page 2; page 3 untouched */
		{ ram + 5 * PAGE - 1, 9, true },      /* from untouched page 4 into page 5 */
		{ ram + 7 * PAGE + 100, 10, true },   /* inside untouched page 7 */
		{ ram + 10 * PAGE - 6, 12, false },   /* across untouched pages 9 and 10 */
		{ ram + 16 * PAGE - 1, 1, true },     /* the last byte of RAM, untouched */
	};
	const size_t nwant = sizeof(want) / sizeof(want[0]);

	for (size_t i = 0; i < nwant; i++) {
		if (want[i].host)
			flip_host(mem, want[i].gpa, want[i].len);
		else
			flip_guest(g, want[i].gpa, want[i].len);
	}
	/* Zeros written over zeros in untouched page 12: no change. */
	memset(lab_gmem_guest_ptr(g, ram + 12 * PAGE, 64), 0, 64);
	assert_int_equal(lab_gmem_diff(g, record_run, &got), nwant);
	assert_int_equal(got.n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		assert_int_equal(got.gpa[i], want[i].gpa);
		assert_int_equal(got.len[i], want[i].len);
	}

	/* A new snapshot takes the newly touched pages in; changing them back is a change. */
	lab_gmem_snapshot(g);
	assert_int_equal(lab_gmem_diff(g, NULL, NULL), 0);
	flip_guest(g, ram + 7 * PAGE + 100, 10);
	got.n = 0;
	assert_int_equal(lab_gmem_diff(g, record_run, &got), 1);
	assert_int_equal(got.gpa[0], ram + 7 * PAGE + 100);
	assert_int_equal(got.len[0], 10);
	vl_mem_destroy(mem);
	lab_gmem_destroy(g);
}

static void test_diff_before_snapshot(void **state)
{
	(void)state;
	struct lab_gmem *g = make(8 * PAGE, PAGE, 0, 15);
	uint64_t gpa = lab_gmem_ram_gpa(g) + 4 * PAGE + 3;
	struct runs got = { 0 };

	/* Guest memory starts zeroed, and so does the implicit first snapshot. */
	assert_int_equal(lab_gmem_diff(g, NULL, NULL), 0);
	*(uint8_t *)lab_gmem_guest_ptr(g, gpa, 1) = 0xff;
	assert_int_equal(lab_gmem_diff(g, record_run, &got), 1);
	assert_int_equal(got.gpa[0], gpa);
	assert_int_equal(got.len[0], 1);
	lab_gmem_destroy(g);
}

/* A reset guest is a fresh one: the allocator hands out the same addresses in the same
 * order, every byte reads zero through both views, and the implicit first snapshot is zero
 * again (a diff right after the reset reports nothing, one write reports exactly it). */
static void test_reset_is_fresh(void **state)
{
	(void)state;
	struct lab_gmem *g = make(16 * PAGE, 2 * PAGE, PAGE, 17);
	uint32_t n = 0;
	const struct vl_mem_region *reg = lab_gmem_regions(g, &n);
	struct vl_mem *mem = vl_mem_create(reg, n, NULL);
	const uint64_t ram = lab_gmem_ram_gpa(g), ring = lab_gmem_ring_gpa(g);
	uint64_t first[4], again[4];
	struct runs got = { 0 };
	uint8_t buf[64];

	assert_non_null(mem);
	for (int i = 0; i < 4; i++)
		first[i] = lab_gmem_alloc(g, 100 + 900 * (uint64_t)i, 64);
	lab_gmem_free(g, first[1], 1000);
	flip_guest(g, ring + 5, 40);
	flip_guest(g, ram + 3 * PAGE - 3, 7);
	flip_host(mem, ram + 9 * PAGE + 1, 3);
	lab_gmem_snapshot(g);
	flip_guest(g, ram + 12 * PAGE, 5);
	assert_int_not_equal(lab_gmem_bytes_allocated(g), 0);

	lab_gmem_reset(g);
	assert_int_equal(lab_gmem_bytes_allocated(g), 0);
	for (int i = 0; i < 4; i++)
		again[i] = lab_gmem_alloc(g, 100 + 900 * (uint64_t)i, 64);
	assert_memory_equal(first, again, sizeof(first));
	for (uint64_t gpa = ram; gpa < ram + 16 * PAGE; gpa += sizeof(buf)) {
		assert_int_equal(vl_mem_read(mem, gpa, buf, sizeof(buf)), sizeof(buf));
		for (size_t i = 0; i < sizeof(buf); i++)
			assert_int_equal(buf[i], 0);
	}
	const uint8_t *rp = lab_gmem_guest_ptr(g, ring, 2 * PAGE);

	for (uint64_t i = 0; i < 2 * PAGE; i++)
		assert_int_equal(rp[i], 0);
	/* The snapshot taken before the reset is gone: nothing differs from zero yet. */
	assert_int_equal(lab_gmem_diff(g, NULL, NULL), 0);
	flip_guest(g, ram + 3 * PAGE - 1, 1);
	assert_int_equal(lab_gmem_diff(g, record_run, &got), 1);
	assert_int_equal(got.gpa[0], ram + 3 * PAGE - 1);
	assert_int_equal(got.len[0], 1);
	vl_mem_destroy(mem);
	lab_gmem_destroy(g);
}

/* Nothing but zeros reads as all zero, whether the pages were ever touched or not; the
 * first non-zero byte is found in a filled page, across a page boundary, and at the range's
 * last byte, and a byte just outside the range is not reported. */
static void test_find_nonzero(void **state)
{
	(void)state;
	struct lab_gmem *g = make(16 * PAGE, PAGE, 0, 18);
	const uint64_t ram = lab_gmem_ram_gpa(g);
	uint8_t *p = lab_gmem_guest_ptr(g, ram, 16 * PAGE);

	assert_int_equal(lab_gmem_find_nonzero(g, ram, 16 * PAGE), ram + 16 * PAGE);
	memset(p + 2 * PAGE, 0, PAGE); /* filled, still zero */
	assert_int_equal(lab_gmem_find_nonzero(g, ram, 16 * PAGE), ram + 16 * PAGE);
	p[5 * PAGE + 9] = 1;
	assert_int_equal(lab_gmem_find_nonzero(g, ram, 16 * PAGE), ram + 5 * PAGE + 9);
	assert_int_equal(lab_gmem_find_nonzero(g, ram + 5 * PAGE + 10, 11 * PAGE - 10),
			 ram + 16 * PAGE);
	assert_int_equal(lab_gmem_find_nonzero(g, ram, 5 * PAGE + 9), ram + 5 * PAGE + 9);
	p[16 * PAGE - 1] = 7;
	assert_int_equal(lab_gmem_find_nonzero(g, ram + 6 * PAGE, 10 * PAGE), ram + 16 * PAGE - 1);
	assert_int_equal(lab_gmem_find_nonzero(g, ram + 16 * PAGE, 0), ram + 16 * PAGE);
	lab_gmem_reset(g);
	assert_int_equal(lab_gmem_find_nonzero(g, ram, 16 * PAGE), ram + 16 * PAGE);
	lab_gmem_destroy(g);
}

/* ---- configuration errors -------------------------------------------------------------- */

static void expect_fail(uint64_t ram, uint64_t ring, uint64_t gran, const char *field,
			const char *value)
{
	struct lab_gmem_config cfg = {
		.ram_size = ram, .ring_area_size = ring, .granularity = gran, .seed = 1,
	};
	char err[256] = "";

	assert_null(lab_gmem_create(&cfg, err, sizeof(err)));
	if (!strstr(err, field) || !strstr(err, value))
		fail_msg("error \"%s\" should name %s and %s", err, field, value);
	/* No message buffer at all is fine too. */
	assert_null(lab_gmem_create(&cfg, NULL, 0));
}

static void test_bad_configs(void **state)
{
	(void)state;
	char err[256] = "";

	expect_fail(MIB, PAGE, 1000, "granularity", "1000");
	expect_fail(MIB, PAGE, PAGE + 1, "granularity", "4097");
	expect_fail(0, PAGE, 0, "ram_size", "0");
	expect_fail(MIB, 0, 0, "ring_area_size", "0");
	expect_fail(1ull << 50, PAGE, 0, "ram_size", "1125899906842624");
	/* 512 MiB at 4 KiB: 131072 regions, more than a memory table holds. */
	expect_fail(512 * MIB, PAGE, PAGE, "granularity", "131072");
	assert_null(lab_gmem_create(NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "config"));
	/* A message that does not fit is truncated, never overflowed. */
	struct lab_gmem_config cfg = {
		.ram_size = MIB, .ring_area_size = PAGE, .granularity = 1000,
	};

	memset(err, 'x', sizeof(err));
	assert_null(lab_gmem_create(&cfg, err, 8));
	assert_int_equal(strlen(err), 7);
	assert_int_equal(err[8], 'x');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coarse_layout),
		cmocka_unit_test(test_coarse_small_ram),
		cmocka_unit_test(test_fine_layout_16mib),
		cmocka_unit_test(test_fine_layout_remainder),
		cmocka_unit_test(test_placement_follows_seed),
		cmocka_unit_test(test_views_share_bytes),
		cmocka_unit_test(test_hole_and_bounds),
		cmocka_unit_test(test_guard_pages_fault),
		cmocka_unit_test(test_alloc_alignment),
		cmocka_unit_test(test_alloc_edge),
		cmocka_unit_test(test_alloc_exhaustion_and_reuse),
		cmocka_unit_test(test_alloc_randomized),
		cmocka_unit_test(test_bad_free_aborts),
		cmocka_unit_test(test_snapshot_diff),
		cmocka_unit_test(test_snapshot_diff_untouched_pages),
		cmocka_unit_test(test_diff_before_snapshot),
		cmocka_unit_test(test_reset_is_fresh),
		cmocka_unit_test(test_find_nonzero),
		cmocka_unit_test(test_bad_configs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Simulated guest RAM: one memfd, a contiguous guest view and a scattered, guarded host view.
 * The layout and the contract of every call are described in guest_mem.h. */
#include "guest_mem.h"
#include "gpa_ptr.h"
#include "rng.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Allocation unit of the RAM allocator: small enough for headers and indirect tables, large
 * enough that the bitmap stays tiny (one bit per 64 bytes). */
#define GMEM_GRANULE 64u
/* Snapshot diff compares blocks of this size with memcmp before scanning bytes. */
#define GMEM_DIFF_BLOCK 4096u
/* Upper bound on either area. Keeps every gpa and offset computation far from wrapping and
 * refuses sizes whose snapshot copy could never be allocated anyway. */
#define GMEM_MAX_AREA (1ull << 36)
/* Host placement spends up to this many times the guest size on extra guard gaps. */
#define GMEM_SLACK_FACTOR 2u
/* lab_gmem_alloc_edge tries this many regions from the cursor's before giving up. */
#define GMEM_EDGE_TRIES 8u
/* Marks "no fit" inside the allocator (a granule index can never be this large). */
#define GMEM_NO_FIT UINT64_MAX

struct lab_gmem {
	int fd;                        /* the memfd holding every guest byte */
	uint64_t ring_size;            /* page multiple; memfd offset 0 */
	uint64_t ram_gpa;
	uint64_t ram_size;             /* page multiple; memfd offset ring_size */
	uint64_t total;                /* memfd size: ring_size + ram_size */
	uint8_t *guest;                /* guest view: the whole memfd, contiguous */
	/* The guest view as lab_gpa_ptr's table: the ring area, then RAM right after it in the
	 * view but behind the hole in gpa, so no range joins the two. */
	struct vl_mem_region gview[2];
	uint8_t *host_base;            /* host view: reservation holding regions and guards */
	uint64_t host_len;
	struct vl_mem_region *regions; /* gpa order; regions[0] is the ring area */
	uint32_t nregions;
	/* Allocator state over RAM. `used` has a bit per allocated granule; `head` marks the
	 * first granule of each allocation so a free with a wrong gpa or len is caught. */
	uint64_t *used;
	uint64_t *head;
	uint64_t ngranules;
	uint64_t cursor;               /* next-fit: where the next search starts */
	uint64_t allocated;            /* bytes, counted in whole granules */
	uint8_t *snap;                 /* memfd contents at the last snapshot */
};

/* ---- errors ---------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Misuse of the allocator is a bug in the lab itself, never a scenario outcome: stop loudly
 * at the point of the mistake rather than corrupt the bookkeeping. */
__attribute__((format(printf, 1, 2)))
static _Noreturn void gmem_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---- small arithmetic ------------------------------------------------------------------ */

static uint64_t round_up(uint64_t x, uint64_t unit)
{
	return (x + unit - 1) / unit * unit;
}

static uint64_t div_round_up(uint64_t x, uint64_t unit)
{
	return x / unit + (x % unit != 0);
}


/* ---- configuration --------------------------------------------------------------------- */

static uint64_t ram_region_count(uint64_t ram_size, uint64_t granularity)
{
	uint64_t pages = ram_size / LAB_PAGE_SIZE;

	if (granularity == 0)
		return pages < LAB_GMEM_COARSE_REGIONS ? pages : LAB_GMEM_COARSE_REGIONS;
	return div_round_up(ram_size, granularity);
}

static bool check_area(const char *field, uint64_t size, char *err, size_t errlen)
{
	if (size == 0) {
		set_err(err, errlen, "lab_gmem: %s 0 is invalid (must be > 0)", field);
		return false;
	}
	if (size > GMEM_MAX_AREA) {
		set_err(err, errlen, "lab_gmem: %s %" PRIu64 " exceeds the maximum %llu",
			field, size, GMEM_MAX_AREA);
		return false;
	}
	return true;
}

static bool check_granularity(const struct lab_gmem_config *cfg, char *err, size_t errlen)
{
	uint64_t gran = cfg->granularity;
	uint64_t nram;

	if (gran % LAB_PAGE_SIZE != 0) {
		set_err(err, errlen,
			"lab_gmem: granularity %" PRIu64 " is not a positive multiple of %u "
			"(or 0 for %u coarse regions)", gran, LAB_PAGE_SIZE,
			LAB_GMEM_COARSE_REGIONS);
		return false;
	}
	/* The ring area takes one slot of the table handed to vl_mem_create. */
	nram = ram_region_count(round_up(cfg->ram_size, LAB_PAGE_SIZE), gran);
	if (nram > VL_MEM_MAX_REGIONS - 1) {
		set_err(err, errlen,
			"lab_gmem: granularity %" PRIu64 " cuts ram_size %" PRIu64 " into %"
			PRIu64 " regions; at most %u fit a memory table", gran, cfg->ram_size,
			nram, VL_MEM_MAX_REGIONS - 1);
		return false;
	}
	return true;
}

static bool check_config(const struct lab_gmem_config *cfg, char *err, size_t errlen)
{
	if (!cfg) {
		set_err(err, errlen, "lab_gmem: config is NULL");
		return false;
	}
	return check_area("ram_size", cfg->ram_size, err, errlen) &&
	       check_area("ring_area_size", cfg->ring_area_size, err, errlen) &&
	       check_granularity(cfg, err, errlen);
}

/* ---- region table ---------------------------------------------------------------------- */

static void set_region(struct vl_mem_region *r, uint64_t gpa, uint64_t size, uint64_t off)
{
	r->gpa = gpa;
	r->size = size;
	r->uaddr = gpa; /* the lab has no front-end address space: use the gpa */
	r->mmap_offset = off;
	r->host = NULL; /* filled in by map_host_view */
}

/* Size of RAM region i of nram. Coarse: equal page-multiple shares, the last takes the
 * remainder. Fine: `granularity` bytes, the last takes what is left (may be shorter). */
static uint64_t ram_region_size(const struct lab_gmem *g, uint64_t granularity, uint64_t i,
				uint64_t nram)
{
	uint64_t unit = granularity;

	if (granularity == 0)
		unit = g->ram_size / LAB_PAGE_SIZE / nram * LAB_PAGE_SIZE;
	if (i + 1 < nram)
		return unit;
	return g->ram_size - unit * (nram - 1);
}

static bool build_regions(struct lab_gmem *g, uint64_t granularity, char *err, size_t errlen)
{
	uint64_t nram = ram_region_count(g->ram_size, granularity);
	uint64_t off = 0;

	g->nregions = (uint32_t)(nram + 1);
	g->regions = calloc(g->nregions, sizeof(*g->regions));
	if (!g->regions) {
		set_err(err, errlen, "lab_gmem: out of memory for %u regions", g->nregions);
		return false;
	}
	set_region(&g->regions[0], LAB_GMEM_RING_GPA, g->ring_size, 0);
	for (uint64_t i = 0; i < nram; i++) {
		uint64_t size = ram_region_size(g, granularity, i, nram);

		set_region(&g->regions[i + 1], g->ram_gpa + off, size, g->ring_size + off);
		off += size;
	}
	return true;
}

/* ---- mappings -------------------------------------------------------------------------- */

static bool open_memfd(struct lab_gmem *g, char *err, size_t errlen)
{
	g->fd = memfd_create("vhostlab-guest", MFD_CLOEXEC);
	if (g->fd < 0) {
		set_err(err, errlen, "lab_gmem: memfd_create: %s", strerror(errno));
		return false;
	}
	if (ftruncate(g->fd, (off_t)g->total) != 0) {
		set_err(err, errlen, "lab_gmem: ftruncate memfd to %" PRIu64 " bytes: %s",
			g->total, strerror(errno));
		return false;
	}
	return true;
}

static bool map_guest_view(struct lab_gmem *g, char *err, size_t errlen)
{
	void *p = mmap(NULL, g->total, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);

	if (p == MAP_FAILED) {
		set_err(err, errlen, "lab_gmem: mmap guest view of %" PRIu64 " bytes: %s",
			g->total, strerror(errno));
		return false;
	}
	g->guest = p;
	g->gview[0] = (struct vl_mem_region){.gpa = LAB_GMEM_RING_GPA, .size = g->ring_size,
					     .host = g->guest};
	g->gview[1] = (struct vl_mem_region){.gpa = g->ram_gpa, .size = g->ram_size,
					     .host = g->guest + g->ring_size};
	return true;
}

/* Fisher-Yates: the host order of regions, so gpa neighbours do not sit side by side. */
static void shuffle(uint32_t *order, uint32_t n, uint64_t *rng)
{
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)(lab_rng_step(rng) % i);
		uint32_t t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
}

/* Bytes of PROT_NONE before the next region: one guard page, plus random extra pages so
 * host offsets do not follow a regular stride. */
static uint64_t guard_gap(uint64_t *rng, uint64_t max_extra_pages)
{
	return LAB_PAGE_SIZE * (1 + lab_rng_step(rng) % (max_extra_pages + 1));
}

/* Reserve the whole host view as PROT_NONE first: the guards are then just the parts that
 * no region is mapped over, and nothing else in the process can land between regions. */
static bool reserve_host_view(struct lab_gmem *g, const uint32_t *order, uint64_t rng,
			      uint64_t max_extra, char *err, size_t errlen)
{
	uint64_t len = LAB_PAGE_SIZE; /* trailing guard after the last region */
	void *p;

	for (uint32_t i = 0; i < g->nregions; i++)
		len += guard_gap(&rng, max_extra) + g->regions[order[i]].size;
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		set_err(err, errlen, "lab_gmem: reserve %" PRIu64 " bytes for the host view: %s",
			len, strerror(errno));
		return false;
	}
	g->host_base = p;
	g->host_len = len;
	return true;
}

static bool map_region(struct lab_gmem *g, uint32_t idx, uint8_t *at, char *err,
		       size_t errlen)
{
	struct vl_mem_region *r = &g->regions[idx];
	void *p = mmap(at, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, g->fd,
		       (off_t)r->mmap_offset);

	if (p == MAP_FAILED) {
		/* Thousands of regions each cost two mappings: name the likely limit. */
		set_err(err, errlen,
			"lab_gmem: mmap region %u (gpa 0x%" PRIx64 ", %" PRIu64 " bytes): %s "
			"(%u regions; see vm.max_map_count)", idx, r->gpa, r->size,
			strerror(errno), g->nregions);
		return false;
	}
	r->host = p;
	return true;
}

static bool map_host_view(struct lab_gmem *g, uint64_t seed, char *err, size_t errlen)
{
	uint64_t rng = seed;
	uint64_t max_extra = GMEM_SLACK_FACTOR * (g->total / LAB_PAGE_SIZE) / g->nregions;
	uint32_t *order = malloc(g->nregions * sizeof(*order));
	uint64_t gap_rng, off = 0;
	bool ok;

	if (!order) {
		set_err(err, errlen, "lab_gmem: out of memory for host placement");
		return false;
	}
	shuffle(order, g->nregions, &rng);
	/* The gaps are drawn twice from the same state: once to size the reservation,
	 * once to place the regions in it. */
	gap_rng = rng;
	ok = reserve_host_view(g, order, gap_rng, max_extra, err, errlen);
	for (uint32_t i = 0; ok && i < g->nregions; i++) {
		off += guard_gap(&gap_rng, max_extra);
		ok = map_region(g, order[i], g->host_base + off, err, errlen);
		off += g->regions[order[i]].size;
	}
	free(order);
	return ok;
}

/* ---- create / destroy ------------------------------------------------------------------ */

static bool init_tracking(struct lab_gmem *g, char *err, size_t errlen)
{
	size_t words;

	g->ngranules = g->ram_size / GMEM_GRANULE;
	words = (size_t)div_round_up(g->ngranules, 64);
	g->used = calloc(words, sizeof(*g->used));
	g->head = calloc(words, sizeof(*g->head));
	/* calloc matches a fresh memfd (all zero), so a diff before the first snapshot
	 * reports every change since creation. Untouched pages cost nothing until written. */
	g->snap = calloc(1, g->total);
	if (!g->used || !g->head || !g->snap) {
		set_err(err, errlen, "lab_gmem: out of memory for allocator and snapshot "
			"(%" PRIu64 " bytes)", g->total);
		return false;
	}
	return true;
}

struct lab_gmem *lab_gmem_create(const struct lab_gmem_config *cfg, char *err, size_t errlen)
{
	struct lab_gmem *g;

	if (!check_config(cfg, err, errlen))
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g) {
		set_err(err, errlen, "lab_gmem: out of memory");
		return NULL;
	}
	g->fd = -1;
	g->ring_size = round_up(cfg->ring_area_size, LAB_PAGE_SIZE);
	g->ram_size = round_up(cfg->ram_size, LAB_PAGE_SIZE);
	g->total = g->ring_size + g->ram_size;
	g->ram_gpa = LAB_GMEM_RING_GPA + g->ring_size + LAB_GMEM_HOLE_SIZE;
	if (!build_regions(g, cfg->granularity, err, errlen) || !open_memfd(g, err, errlen) ||
	    !map_guest_view(g, err, errlen) || !map_host_view(g, cfg->seed, err, errlen) ||
	    !init_tracking(g, err, errlen)) {
		lab_gmem_destroy(g);
		return NULL;
	}
	set_err(err, errlen, "%s", "");
	return g;
}

void lab_gmem_destroy(struct lab_gmem *g)
{
	if (!g)
		return;
	/* One munmap of the reservation drops every region mapping and guard in it. */
	if (g->host_base)
		munmap(g->host_base, g->host_len);
	if (g->guest)
		munmap(g->guest, g->total);
	if (g->fd >= 0)
		close(g->fd);
	free(g->snap);
	free(g->head);
	free(g->used);
	free(g->regions);
	free(g);
}

/* ---- layout queries -------------------------------------------------------------------- */

const struct vl_mem_region *lab_gmem_regions(const struct lab_gmem *g, uint32_t *n)
{
	if (n)
		*n = g->nregions;
	return g->regions;
}

int lab_gmem_memfd(const struct lab_gmem *g)
{
	return g->fd;
}

uint64_t lab_gmem_region_memfd_offset(const struct lab_gmem *g, uint32_t i)
{
	if (i >= g->nregions)
		gmem_die("lab_gmem_region_memfd_offset: region %u of %u", i, g->nregions);
	return g->regions[i].mmap_offset;
}

uint64_t lab_gmem_ring_gpa(const struct lab_gmem *g)
{
	(void)g;
	return LAB_GMEM_RING_GPA;
}

uint64_t lab_gmem_ring_size(const struct lab_gmem *g)
{
	return g->ring_size;
}

uint64_t lab_gmem_ram_gpa(const struct lab_gmem *g)
{
	return g->ram_gpa;
}

uint64_t lab_gmem_ram_size(const struct lab_gmem *g)
{
	return g->ram_size;
}

uint64_t lab_gmem_hole_gpa(const struct lab_gmem *g)
{
	return LAB_GMEM_RING_GPA + g->ring_size + LAB_GMEM_HOLE_SIZE / 2;
}

uint64_t lab_gmem_end_gpa(const struct lab_gmem *g)
{
	return g->ram_gpa + g->ram_size;
}

void *lab_gmem_guest_ptr(const struct lab_gmem *g, uint64_t gpa, uint64_t len)
{
	return lab_gpa_ptr(g->gview, 2, gpa, len);
}

/* ---- allocator ------------------------------------------------------------------------- */

static bool bit_test(const uint64_t *map, uint64_t i)
{
	return (map[i / 64] >> (i % 64)) & 1;
}

/* Set or clear bits [from, from + n): a mask for each word touched (a page is 64 granules). */
static void bits_assign(uint64_t *map, uint64_t from, uint64_t n, bool set)
{
	for (uint64_t i = from, end = from + n; i < end;) {
		const uint64_t lo = i % 64, k = end - i < 64 - lo ? end - i : 64 - lo;
		const uint64_t mask = (k == 64 ? ~0ull : ((1ull << k) - 1)) << lo;

		if (set)
			map[i / 64] |= mask;
		else
			map[i / 64] &= ~mask;
		i += k;
	}
}

/* First index in [from, to) whose bit equals `set`, or `to`. Scans a word at a time because
 * a nearly full or nearly empty RAM is the common case in long scenarios. */
static uint64_t find_bit(const uint64_t *map, uint64_t from, uint64_t to, bool set)
{
	while (from < to) {
		uint64_t w = map[from / 64];

		if (!set)
			w = ~w;
		w &= ~0ull << (from % 64);
		if (w) {
			uint64_t i = from / 64 * 64 + (uint64_t)__builtin_ctzll(w);

			return i < to ? i : to;
		}
		from = from / 64 * 64 + 64;
	}
	return to;
}

/* Smallest granule index >= i whose gpa is a multiple of align. The alignment applies to
 * the gpa, not to the offset in RAM; callers guarantee align <= end gpa, so no overflow. */
static uint64_t align_granule(const struct lab_gmem *g, uint64_t i, uint64_t align)
{
	uint64_t gpa;

	if (align <= GMEM_GRANULE)
		return i; /* RAM starts page aligned, so every granule is 64-byte aligned */
	gpa = g->ram_gpa + i * GMEM_GRANULE;
	gpa = (gpa + align - 1) & ~(align - 1);
	return (gpa - g->ram_gpa) / GMEM_GRANULE;
}

/* First fit of `need` free granules starting at an aligned index in [lo, hi). */
static uint64_t find_run(const struct lab_gmem *g, uint64_t lo, uint64_t hi, uint64_t need,
			 uint64_t align)
{
	uint64_t s = align_granule(g, lo, align);

	while (s < hi && need <= g->ngranules - s) {
		uint64_t busy = find_bit(g->used, s, s + need, true);

		if (busy == s + need)
			return s;
		/* Skip the busy stretch, then realign: no start before it can fit. */
		s = find_bit(g->used, busy + 1, g->ngranules, false);
		s = align_granule(g, s, align);
	}
	return GMEM_NO_FIT;
}

/* Mark granules [s, s + need) as one allocation; its gpa. */
static uint64_t take_run(struct lab_gmem *g, uint64_t s, uint64_t need)
{
	bits_assign(g->used, s, need, true);
	bits_assign(g->head, s, 1, true);
	g->allocated += need * GMEM_GRANULE;
	return g->ram_gpa + s * GMEM_GRANULE;
}

/* Granules for len bytes. A zero-length allocation still takes one granule so it gets a
 * distinct, valid gpa (scenarios use zero-length buffers as hostile descriptors). */
static uint64_t granules_for(uint64_t len)
{
	return len ? div_round_up(len, GMEM_GRANULE) : 1;
}

uint64_t lab_gmem_alloc(struct lab_gmem *g, uint64_t len, uint64_t align)
{
	uint64_t need, s;

	if (align == 0 || (align & (align - 1)) != 0)
		gmem_die("lab_gmem_alloc: align %" PRIu64 " is not a power of two", align);
	/* No multiple of a larger alignment lies in [ram_gpa, end): 0 is below RAM. */
	if (len > g->ram_size || align > lab_gmem_end_gpa(g))
		return 0;
	need = granules_for(len);
	/* Next fit: from the cursor to the end, then wrap once over the starts before it. */
	s = find_run(g, g->cursor, g->ngranules, need, align);
	if (s == GMEM_NO_FIT)
		s = find_run(g, 0, g->cursor, need, align);
	if (s == GMEM_NO_FIT)
		return 0;
	g->cursor = s + need < g->ngranules ? s + need : 0;
	return take_run(g, s, need);
}

/* Index in g->regions of the RAM region holding RAM offset off (< ram_size). */
static uint32_t ram_region_at(const struct lab_gmem *g, uint64_t off)
{
	uint64_t gpa = g->ram_gpa + off;
	uint32_t lo = 1, hi = g->nregions - 1;

	/* regions[1..] are in gpa order and tile RAM: the last whose start is <= gpa. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;

		if (g->regions[mid].gpa <= gpa)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

uint64_t lab_gmem_alloc_edge(struct lab_gmem *g, uint64_t len, enum lab_gmem_edge edge)
{
	const uint64_t need = granules_for(len);
	const uint32_t nram = g->nregions - 1;
	const uint32_t first = ram_region_at(g, g->cursor * GMEM_GRANULE) - 1;

	if (len > g->ram_size)
		return 0;
	/* Next fit fills the regions behind the cursor and leaves those ahead free: the first
	 * few regions from the cursor's have a free edge if any has. */
	for (uint32_t k = 0; k < nram && k < GMEM_EDGE_TRIES; k++) {
		const struct vl_mem_region *r = &g->regions[1 + (first + k) % nram];
		/* Regions are page multiples from a page-aligned RAM start: whole granules. */
		const uint64_t lo = (r->gpa - g->ram_gpa) / GMEM_GRANULE;
		const uint64_t hi = lo + r->size / GMEM_GRANULE;
		uint64_t s;

		if (edge == LAB_GMEM_REGION_END) {
			if (need > hi)
				continue;
			s = hi - need;
		} else {
			if (need > g->ngranules - lo)
				continue;
			s = lo;
		}
		if (find_bit(g->used, s, s + need, true) == s + need)
			return take_run(g, s, need);
	}
	return 0;
}

uint32_t lab_gmem_pieces(const struct lab_gmem *g, uint64_t gpa, uint64_t len)
{
	if (len == 0)
		return 0;
	uint32_t i = ram_region_at(g, gpa - g->ram_gpa);
	const uint32_t from = i;
	const uint64_t last = gpa + len - 1;

	while (i + 1 < g->nregions && g->regions[i + 1].gpa <= last)
		i++;
	return i - from + 1;
}

/* Does [first, first+need) match one live allocation exactly? Its first granule must be a
 * head, all granules used, no other head inside, and the granule after it must not continue
 * the same allocation (free or another head). */
static bool is_live_allocation(const struct lab_gmem *g, uint64_t first, uint64_t need)
{
	uint64_t end = first + need;

	if (!bit_test(g->head, first))
		return false;
	if (find_bit(g->used, first, end, false) != end)
		return false;
	if (find_bit(g->head, first + 1, end, true) != end)
		return false;
	return end == g->ngranules || !bit_test(g->used, end) || bit_test(g->head, end);
}

void lab_gmem_free(struct lab_gmem *g, uint64_t gpa, uint64_t len)
{
	uint64_t need = len <= g->ram_size ? granules_for(len) : 0;
	uint64_t off = gpa - g->ram_gpa;
	uint64_t first = off / GMEM_GRANULE;

	if (gpa < g->ram_gpa || off % GMEM_GRANULE != 0 || need == 0 ||
	    first >= g->ngranules || need > g->ngranules - first ||
	    !is_live_allocation(g, first, need))
		gmem_die("lab_gmem_free: gpa 0x%" PRIx64 " len %" PRIu64
			 " is not a live allocation", gpa, len);
	bits_assign(g->used, first, need, false);
	bits_assign(g->head, first, 1, false);
	g->allocated -= need * GMEM_GRANULE;
}

uint64_t lab_gmem_bytes_allocated(const struct lab_gmem *g)
{
	return g->allocated;
}

/* ---- snapshot and diff ----------------------------------------------------------------- */

/* Guest memory nobody has touched is a hole in the memfd: it reads as zeros and costs no
 * page until something reads or writes it (reading a hole through a shared mapping fills
 * it in). A hole never comes back once filled (nothing punches the memfd), and the snapshot
 * copy of a hole stays zero (calloc, and only filled pages are ever copied), so both the
 * snapshot and the diff need only the memfd's filled extents: a page that is a hole at the
 * diff was one at the snapshot too, zero both times. Most of a lab run's RAM is never
 * touched; copying and comparing it all (and faulting it in to do so) was most of
 * fuzz_scenario's time. The extents come from lseek SEEK_DATA/SEEK_HOLE, exact on tmpfs
 * (swapped-out pages count as data); where it fails the whole range counts as filled. */
static uint64_t next_filled(const struct lab_gmem *g, uint64_t from, uint64_t to,
			    uint64_t *filled_end)
{
	off_t d = lseek(g->fd, (off_t)from, SEEK_DATA);

	if (d < 0) {
		if (errno == ENXIO) /* nothing filled at or after `from` */
			return to;
		*filled_end = to;
		return from;
	}
	if ((uint64_t)d >= to)
		return to;
	off_t h = lseek(g->fd, d, SEEK_HOLE);

	*filled_end = h < 0 || (uint64_t)h > to ? to : (uint64_t)h;
	return (uint64_t)d;
}

void lab_gmem_reset(struct lab_gmem *g)
{
	const size_t words = (size_t)div_round_up(g->ngranules, 64);
	uint64_t end = 0;

	memset(g->used, 0, words * sizeof(*g->used));
	memset(g->head, 0, words * sizeof(*g->head));
	g->cursor = 0;
	g->allocated = 0;
	/* Zero, not punched back into holes: the pages stay mapped for the next user, and a
	 * zero page reads as a hole does, so snapshots and diffs report the same runs. The
	 * snapshot copy is only ever written over filled extents (lab_gmem_snapshot), and a
	 * filled extent never turns back into a hole, so clearing the same extents clears it. */
	for (uint64_t at = next_filled(g, 0, g->total, &end); at < g->total;
	     at = next_filled(g, end, g->total, &end)) {
		memset(g->guest + at, 0, end - at);
		memset(g->snap + at, 0, end - at);
	}
}

uint64_t lab_gmem_find_nonzero(const struct lab_gmem *g, uint64_t gpa, uint64_t len)
{
	static const uint8_t zero[GMEM_DIFF_BLOCK];

	if (gpa < g->ram_gpa || gpa - g->ram_gpa > g->ram_size ||
	    len > g->ram_size - (gpa - g->ram_gpa))
		gmem_die("lab_gmem_find_nonzero: [0x%" PRIx64 ", +%" PRIu64 ") is not in RAM",
			 gpa, len);
	const uint64_t from = g->ring_size + (gpa - g->ram_gpa), to = from + len;
	uint64_t end = 0;

	for (uint64_t at = next_filled(g, from, to, &end); at < to;
	     at = next_filled(g, end, to, &end)) {
		/* memcmp a block at a time: a byte loop costs a coverage callback a byte in
		 * the fuzzing builds. */
		for (uint64_t b = at; b < end; b += GMEM_DIFF_BLOCK) {
			const uint64_t n = end - b < GMEM_DIFF_BLOCK ? end - b : GMEM_DIFF_BLOCK;

			if (!memcmp(g->guest + b, zero, n))
				continue;
			uint64_t i = b;

			while (g->guest[i] == 0)
				i++;
			return g->ram_gpa + (i - g->ring_size);
		}
	}
	return gpa + len;
}

void lab_gmem_snapshot(struct lab_gmem *g)
{
	uint64_t end = 0;

	for (uint64_t at = next_filled(g, 0, g->total, &end); at < g->total;
	     at = next_filled(g, end, g->total, &end))
		memcpy(g->snap + at, g->guest + at, end - at);
}

/* A run of differing bytes being collected while scanning one area. */
struct diff_scan {
	uint64_t gpa;       /* gpa of the area's first byte */
	uint64_t run_start; /* area offset where the open run began */
	bool in_run;
	size_t runs;
	void (*cb)(void *ctx, uint64_t gpa, uint64_t len);
	void *ctx;
};

static void close_run(struct diff_scan *d, uint64_t end)
{
	if (!d->in_run)
		return;
	if (d->cb)
		d->cb(d->ctx, d->gpa + d->run_start, end - d->run_start);
	d->in_run = false;
	d->runs++;
}

static void scan_block(struct diff_scan *d, const uint8_t *cur, const uint8_t *old,
		       uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++) {
		bool differs = cur[i] != old[i];

		if (differs && !d->in_run) {
			d->run_start = i;
			d->in_run = true;
		} else if (!differs) {
			close_run(d, i);
		}
	}
}

/* Diff one area (ring or RAM) separately: the hole between them means no run may join
 * the last ring byte to the first RAM byte. Only its filled extents are compared (see
 * next_filled): a memfd hole equals the snapshot, so it ends any open run. */
static size_t diff_area(const struct lab_gmem *g, uint64_t off, uint64_t size, uint64_t gpa,
			void (*cb)(void *ctx, uint64_t gpa, uint64_t len), void *ctx)
{
	const uint8_t *cur = g->guest + off, *old = g->snap + off;
	struct diff_scan d = { .gpa = gpa, .cb = cb, .ctx = ctx };
	uint64_t fend = 0;

	for (uint64_t f = next_filled(g, off, off + size, &fend); f < off + size;
	     f = next_filled(g, fend, off + size, &fend)) {
		for (uint64_t b = f - off; b < fend - off; b += GMEM_DIFF_BLOCK) {
			uint64_t end = fend - off - b < GMEM_DIFF_BLOCK ? fend - off
									 : b + GMEM_DIFF_BLOCK;

			if (memcmp(cur + b, old + b, end - b) == 0)
				close_run(&d, b);
			else
				scan_block(&d, cur, old, b, end);
		}
		close_run(&d, fend - off); /* a hole (equal) or the area's end follows */
	}
	close_run(&d, size);
	return d.runs;
}

size_t lab_gmem_diff(const struct lab_gmem *g,
		     void (*cb)(void *ctx, uint64_t gpa, uint64_t len), void *ctx)
{
	return diff_area(g, 0, g->ring_size, LAB_GMEM_RING_GPA, cb, ctx) +
	       diff_area(g, g->ring_size, g->ram_size, g->ram_gpa, cb, ctx);
}

/* SPDX-License-Identifier: MIT */
/* Guest memory for trace replay: see trace_mem.h. */
#include "trace_mem.h"
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

#define TMEM_PAGE 4096u
/* Host pieces: a region cut at `pieces=`; enough for 1 GiB at 4 KiB. */
#define TMEM_MAX_PIECES (LAB_TRACE_MAX_MEM / TMEM_PAGE)

/* The guest view reserves the whole span from the lowest region to the end of the highest
 * (holes stay inaccessible); more than this is refused. */
#define TMEM_MAX_SPAN (1ull << 40)

struct lab_tmem {
	int fd;
	uint64_t total;
	uint32_t nregions;
	/* Guest view: regions at their gpa offsets from `lo`, so adjacent regions are
	 * contiguous for the driver, as in a guest. regions[] (gpa order) is that view as
	 * lab_gpa_ptr's table: host = the region's first byte in gview. */
	struct vl_mem_region regions[LAB_TRACE_MAX_REGIONS];
	uint8_t *gview;
	uint64_t lo, span;
	uint8_t *host_base;
	uint64_t host_len;
	struct vl_mem_region *pieces;  /* gpa order */
	uint32_t npieces;
};

__attribute__((format(printf, 3, 4)))
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The parser validated the table; check again what a hand-built trace could get wrong,
 * because a bad table here would corrupt the mappings rather than fail cleanly. */
static bool check_regions(const struct lab_trace_region *r, uint32_t n, uint64_t *total,
			  uint64_t *npieces, char *err, size_t errlen)
{
	*total = 0;
	*npieces = 0;
	if (n == 0 || n > LAB_TRACE_MAX_REGIONS) {
		set_err(err, errlen, "%u regions (want 1 to %u)", n, LAB_TRACE_MAX_REGIONS);
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t p = r[i].pieces ? r[i].pieces : r[i].size;

		if (!r[i].size || r[i].size % TMEM_PAGE || r[i].gpa % TMEM_PAGE ||
		    r[i].size > LAB_TRACE_MAX_MEM || r[i].gpa > UINT64_MAX - r[i].size ||
		    p % TMEM_PAGE) {
			set_err(err, errlen, "region %u (gpa 0x%" PRIx64 " size 0x%" PRIx64
				"): not 4 KiB aligned or too large", i, r[i].gpa, r[i].size);
			return false;
		}
		for (uint32_t j = 0; j < i; j++)
			if (r[i].gpa < r[j].gpa + r[j].size && r[j].gpa < r[i].gpa + r[i].size) {
				set_err(err, errlen, "region %u overlaps region %u", i, j);
				return false;
			}
		*total += r[i].size;
		*npieces += (r[i].size + p - 1) / p;
		if (*total > LAB_TRACE_MAX_MEM) {
			set_err(err, errlen, "regions hold more than %llu bytes",
				(unsigned long long)LAB_TRACE_MAX_MEM);
			return false;
		}
	}
	return true;
}

static int cmp_region(const void *a, const void *b)
{
	const struct lab_trace_region *x = a, *y = b;

	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

static int cmp_piece(const void *a, const void *b)
{
	const struct vl_mem_region *x = a, *y = b;

	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

/* Host view: reserve everything PROT_NONE, then map each piece at a shuffled slot after a
 * random guard gap, so gpa neighbours are never host neighbours. */
static bool map_host_view(struct lab_tmem *m, uint64_t seed, char *err, size_t errlen)
{
	uint32_t n = m->npieces;
	uint32_t *order = malloc((size_t)n * sizeof(*order));
	uint64_t *gap = malloc((size_t)n * sizeof(*gap));
	struct lab_rng rng = {seed};
	uint64_t len = TMEM_PAGE, off = 0;
	bool ok = order && gap;

	for (uint32_t i = 0; ok && i < n; i++)
		order[i] = i;
	for (uint32_t i = n; ok && i > 1; i--) {
		uint32_t j = (uint32_t)(lab_rng_next(&rng) % i), t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	for (uint32_t i = 0; ok && i < n; i++) {
		gap[i] = TMEM_PAGE * (1 + lab_rng_next(&rng) % 4);
		len += gap[i] + m->pieces[order[i]].size;
	}
	if (!ok) {
		set_err(err, errlen, "out of memory placing %u host pieces", n);
		goto out;
	}
	void *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			  0);

	if (base == MAP_FAILED) {
		set_err(err, errlen, "reserve %" PRIu64 " bytes for the host view: %s", len,
			strerror(errno));
		ok = false;
		goto out;
	}
	m->host_base = base;
	m->host_len = len;
	for (uint32_t i = 0; i < n; i++) {
		struct vl_mem_region *p = &m->pieces[order[i]];

		off += gap[i];
		void *at = mmap(m->host_base + off, p->size, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_FIXED, m->fd, (off_t)p->mmap_offset);

		if (at == MAP_FAILED) {
			set_err(err, errlen, "map host piece at gpa 0x%" PRIx64 ": %s "
				"(%u pieces; see vm.max_map_count)", p->gpa, strerror(errno), n);
			ok = false;
			goto out;
		}
		p->host = at;
		off += p->size;
	}
out:
	free(order);
	free(gap);
	return ok;
}

struct lab_tmem *lab_tmem_create(const struct lab_trace_region *regions, uint32_t n,
				 uint64_t seed, char *err, size_t errlen)
{
	uint64_t total, npieces;
	struct lab_tmem *m;

	if (!check_regions(regions, n, &total, &npieces, err, errlen))
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->pieces = calloc(npieces, sizeof(*m->pieces)))) {
		free(m);
		set_err(err, errlen, "out of memory for %" PRIu64 " host pieces", npieces);
		return NULL;
	}
	m->fd = memfd_create("vhostlab-trace", MFD_CLOEXEC);
	if (m->fd < 0 || ftruncate(m->fd, (off_t)total) != 0) {
		set_err(err, errlen, "memfd of %" PRIu64 " bytes: %s", total, strerror(errno));
		goto fail;
	}
	m->total = total;
	struct lab_trace_region sorted[LAB_TRACE_MAX_REGIONS];

	memcpy(sorted, regions, n * sizeof(*regions));
	qsort(sorted, n, sizeof(*sorted), cmp_region);
	m->lo = sorted[0].gpa;
	m->span = sorted[n - 1].gpa + sorted[n - 1].size - m->lo;
	if (m->span > TMEM_MAX_SPAN) {
		set_err(err, errlen, "regions span 0x%" PRIx64 " bytes of guest addresses (at most "
			"0x%llx)", m->span, (unsigned long long)TMEM_MAX_SPAN);
		goto fail;
	}
	void *gv = mmap(NULL, m->span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			0);

	if (gv == MAP_FAILED) {
		set_err(err, errlen, "reserve the guest view: %s", strerror(errno));
		goto fail;
	}
	m->gview = gv;
	for (uint64_t i = 0, off = 0; i < n; i++) {
		struct vl_mem_region *r = &m->regions[m->nregions++];
		uint64_t psz = sorted[i].pieces ? sorted[i].pieces : sorted[i].size;

		r->gpa = sorted[i].gpa;
		r->size = sorted[i].size;
		r->uaddr = r->gpa;
		r->mmap_offset = off;
		r->host = m->gview + (r->gpa - m->lo);
		if (mmap(r->host, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, m->fd,
			 (off_t)off) == MAP_FAILED) {
			set_err(err, errlen, "map guest view of region %" PRIu64 ": %s", i,
				strerror(errno));
			goto fail;
		}
		for (uint64_t at = 0; at < r->size; at += psz) {
			struct vl_mem_region *p = &m->pieces[m->npieces++];

			p->gpa = r->gpa + at;
			p->size = r->size - at < psz ? r->size - at : psz;
			p->uaddr = p->gpa;
			p->mmap_offset = off + at;
		}
		off += r->size;
	}
	if (!map_host_view(m, seed, err, errlen))
		goto fail;
	qsort(m->pieces, m->npieces, sizeof(*m->pieces), cmp_piece);
	return m;
fail:
	lab_tmem_destroy(m);
	return NULL;
}

void lab_tmem_destroy(struct lab_tmem *m)
{
	if (!m)
		return;
	if (m->host_base)
		munmap(m->host_base, m->host_len);
	if (m->gview)
		munmap(m->gview, m->span);
	if (m->fd >= 0)
		close(m->fd);
	free(m->pieces);
	free(m);
}

const struct vl_mem_region *lab_tmem_regions(const struct lab_tmem *m, uint32_t *n)
{
	*n = m->npieces;
	return m->pieces;
}

const struct vl_mem_region *lab_tmem_guest_regions(const struct lab_tmem *m, uint32_t *n)
{
	*n = m->nregions;
	return m->regions;
}

int lab_tmem_fd(const struct lab_tmem *m)
{
	return m->fd;
}

/* Adjacent regions join: they are side by side in the guest view. */
void *lab_tmem_ptr(const struct lab_tmem *m, uint64_t gpa, uint64_t len)
{
	return lab_gpa_ptr(m->regions, m->nregions, gpa, len);
}

/* One byte, so the guard gaps between host pieces never matter here. */
void *lab_tmem_host_ptr(const struct lab_tmem *m, uint64_t gpa)
{
	return lab_gpa_ptr(m->pieces, m->npieces, gpa, 1);
}

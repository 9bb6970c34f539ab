/* SPDX-License-Identifier: MIT */
/* Guest memory table: validation, sorting, merging, translation and piecewise copies. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "mem/cursor.h"
#include "mem/prefetch.h"
#include "mem/mem_internal.h"
#include "vhostlab/vl_error.h"

static int region_cmp(const void *a, const void *b)
{
	const struct vl_mem_region *x = a, *y = b;

	return (x->gpa > y->gpa) - (x->gpa < y->gpa);
}

static int fail(int *err, int code)
{
	if (err)
		*err = code;
	return code;
}

struct vl_mem *vl_mem_create(const struct vl_mem_region *regions, uint32_t n, int *err)
{
	if (regions == NULL && n > 0) {
		fail(err, VL_ERR_INVALID_ARG);
		return NULL;
	}
	if (n > VL_MEM_MAX_REGIONS) {
		fail(err, VL_ERR_TOO_MANY_REGIONS);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct vl_mem_region *r = &regions[i];

		if (r->size == 0) {
			fail(err, VL_ERR_REGION_ZERO_SIZE);
			return NULL;
		}
		/* size - 1 is the offset of the last byte; the adds must not wrap. */
		if (r->host == NULL) {
			fail(err, VL_ERR_INVALID_ARG);
			return NULL;
		}
		/* Host side written so the subtraction is done in uintptr_t: with a 32-bit
		 * uintptr_t, UINTPTR_MAX - (size - 1) would wrap in uint64_t arithmetic. */
		if (r->gpa > UINT64_MAX - (r->size - 1) ||
		    r->size - 1 > UINTPTR_MAX - (uintptr_t)r->host) {
			fail(err, VL_ERR_REGION_OVERFLOW);
			return NULL;
		}
	}

	struct vl_mem *mem = vl_calloc(1, sizeof(*mem));
	struct vl_mem_region *sorted = vl_calloc(n ? n : 1, sizeof(*sorted));
	struct vl_mem_range *ranges = vl_calloc(n ? n : 1, sizeof(*ranges));

	if (!mem || !sorted || !ranges) {
		free(mem);
		free(sorted);
		free(ranges);
		fail(err, VL_ERR_NOMEM);
		return NULL;
	}
	if (n)
		memcpy(sorted, regions, (size_t)n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), region_cmp);

	uint32_t m = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct vl_mem_region *r = &sorted[i];
		uint64_t last = r->gpa + (r->size - 1);

		if (m > 0) {
			struct vl_mem_range *prev = &ranges[m - 1];

			if (r->gpa <= prev->last) {
				free(mem);
				free(sorted);
				free(ranges);
				fail(err, VL_ERR_REGION_OVERLAP);
				return NULL;
			}
			/* Adjacent in guest space and in host space: one range. prev->last + 1
			 * cannot wrap because r->gpa > prev->last exists. The host side is
			 * compared as integers: prev->host + size may lie past the top of the
			 * address space (a pointer overflow); the unsigned difference equals
			 * size only when r->host is exactly there (or NULL, rejected above). */
			if (r->gpa == prev->last + 1 &&
			    (uintptr_t)r->host - (uintptr_t)prev->host ==
				    prev->last - prev->gpa + 1) {
				prev->last = last;
				continue;
			}
		}
		ranges[m].gpa = r->gpa;
		ranges[m].last = last;
		ranges[m].host = r->host;
		m++;
	}
	mem->n = m;
	mem->ranges = ranges;
	mem->orig = sorted;
	mem->norig = n;
	fail(err, VL_OK);
	return mem;
}

void vl_mem_destroy(struct vl_mem *mem)
{
	if (!mem)
		return;
	free(mem->ranges);
	free(mem->orig);
	free(mem);
}

uint32_t vl_mem_region_count(const struct vl_mem *mem)
{
	return mem->n;
}

uint32_t vl_mem_table_size(const struct vl_mem *mem)
{
	return mem->norig;
}

int vl_mem_table_region(const struct vl_mem *mem, uint32_t i, struct vl_mem_region *out)
{
	if (i >= mem->norig)
		return VL_ERR_INVALID_ARG;
	*out = mem->orig[i];
	return VL_OK;
}

void *vl_mem_translate(const struct vl_mem *mem, uint64_t gpa, uint64_t *len, unsigned access)
{
	/* No per-region permissions in a vhost-user table (vl_mem.h); the kind goes to the
	 * door's check. */
	return vl_mem_xlate(mem, gpa, len, access);
}

uint64_t vl_mem_read(const struct vl_mem *mem, uint64_t gpa, void *dst, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t chunk = len - done;
		/* gpa + done may wrap only if the previous chunk ended at 2^64-1; then the
		 * wrapped address is translated as address 0, which must not count. */
		if (done > 0 && gpa + done < gpa)
			break;
		const uint8_t *src = vl_mem_xlate(mem, gpa + done, &chunk, VL_ACCESS_READ);

		if (!src)
			break;
		memcpy((uint8_t *)dst + done, src, chunk);
		done += chunk;
	}
	return done;
}

uint64_t vl_mem_write(const struct vl_mem *mem, uint64_t gpa, const void *src, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t chunk = len - done;

		if (done > 0 && gpa + done < gpa)
			break;
		uint8_t *dst = vl_mem_xlate(mem, gpa + done, &chunk, VL_ACCESS_WRITE);

		if (!dst)
			break;
		memcpy(dst, (const uint8_t *)src + done, chunk);
		done += chunk;
	}
	return done;
}

uint8_t *vl_mem_cursor_miss(struct vl_mem_cursor *c, uint64_t addr, uint32_t len)
{
	const struct vl_mem *mem = c->mem;
	int64_t i = vl_mem_find(mem, addr);

	if (i < 0)
		return NULL;
	const struct vl_mem_range *r = &mem->ranges[i];

	c->hint = (uint32_t)i;
	c->gpa = r->gpa;
	/* A range's bytes: last - gpa + 1 overflows only for a range of all 2^64 bytes, which
	 * a region's 64-bit size cannot express; the sum of the ranges' could, so saturate. */
	c->size = r->last - r->gpa < UINT64_MAX ? r->last - r->gpa + 1 : UINT64_MAX;
	c->host = r->host;
	const uint64_t off = addr - r->gpa;

	return len <= c->size - off ? r->host + off : NULL;
}

int64_t vl_payload_prefetch_lookup(const struct vl_mem *mem, uint64_t addr)
{
	return vl_mem_find(mem, addr);
}

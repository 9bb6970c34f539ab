/* SPDX-License-Identifier: MIT */
/* Fixed-size packet pool: create, bulk alloc (all or nothing), free. (Fault injection: lab
 * build only, pool_internal.h.) */
#include <stdlib.h>

#include "alloc.h"
#include "pkt/pool_internal.h"

/* Keeps capacity * buf_size comfortably inside size_t and pointer arithmetic sane. */
#define VL_POOL_MAX_BUFFERS (1u << 24)
#define VL_POOL_MAX_BUF_SIZE (1u << 20)

struct vl_pool *vl_pool_create(uint32_t count, uint32_t buf_size)
{
	if (count == 0 || buf_size == 0 || count > VL_POOL_MAX_BUFFERS ||
	    buf_size > VL_POOL_MAX_BUF_SIZE)
		return NULL;

	struct vl_pool *pool = vl_calloc(1, sizeof(*pool));

	if (!pool)
		return NULL;
	pool->free_stack = vl_calloc(count, sizeof(*pool->free_stack));
	pool->descs = vl_calloc(count, sizeof(*pool->descs));
	/* Each segment starts on a cache line, as DPDK's mbufs do. malloc's large blocks start
	 * 16 bytes past a page, and a copy between a line-aligned guest buffer and such a
	 * segment splits a wide load or store across two lines every 64 bytes (glibc's memcpy
	 * aligns only the destination). */
	const size_t stride = ((size_t)buf_size + 63u) & ~(size_t)63u;

	pool->storage = vl_malloc_lines((size_t)count * stride);
	if (!pool->free_stack || !pool->descs || !pool->storage) {
		free(pool->free_stack);
		free(pool->descs);
		free(pool->storage);
		free(pool);
		return NULL;
	}
	pool->capacity = count;
	pool->buf_size = buf_size;
#ifdef VL_LAB_BUILD
	pool->fail_after = UINT64_MAX;
#endif
	for (uint32_t i = 0; i < count; i++) {
		struct vl_pkt *p = &pool->descs[i];

		p->pool = pool;
		p->buf = pool->storage + (size_t)i * stride;
		p->buf_len = buf_size;
		/* Push in reverse so the first allocations hand out the lowest addresses. */
		pool->free_stack[count - 1 - i] = p;
	}
	pool->nfree = count;
	return pool;
}

uint32_t vl_pool_destroy(struct vl_pool *pool)
{
	if (!pool)
		return 0;
	uint32_t outstanding = pool->capacity - pool->nfree;

	free(pool->free_stack);
	free(pool->descs);
	free(pool->storage);
	free(pool);
	return outstanding;
}

uint32_t vl_pool_capacity(const struct vl_pool *pool) { return pool->capacity; }
uint32_t vl_pool_buf_size(const struct vl_pool *pool) { return pool->buf_size; }
uint32_t vl_pool_free_count(const struct vl_pool *pool) { return pool->nfree; }
uint64_t vl_pool_alloc_failures(const struct vl_pool *pool) { return pool->alloc_failures; }

int vl_pool_alloc_bulk(struct vl_pool *pool, struct vl_pkt **out, uint32_t n)
{
	if (n == 0)
		return 0;
	if (!vl_pool_may_alloc(pool) || n > pool->nfree) {
		pool->alloc_failures++;
		return -1;
	}
	/* nfree in a local: the resets' stores would otherwise make the compiler reload it. */
	uint32_t nfree = pool->nfree;

	for (uint32_t i = 0; i < n; i++) {
		struct vl_pkt *p = pool->free_stack[--nfree];

		vl_pkt_reset(p);
		out[i] = p;
	}
	pool->nfree = nfree;
	return 0;
}

struct vl_pkt *vl_pkt_alloc(struct vl_pool *pool)
{
	struct vl_pkt *p;

	return vl_pool_alloc_bulk(pool, &p, 1) == 0 ? p : NULL;
}

/* Return one segment to its pool. The stack cannot overflow: a segment is pushed only by
 * the free of the packet that popped it. */
static void seg_release(struct vl_pkt *seg)
{
	struct vl_pool *pool = seg->pool;

	pool->free_stack[pool->nfree++] = seg;
}

void vl_pkt_ref(struct vl_pkt *pkt)
{
	pkt->refcnt++;
}

void vl_pkt_free(struct vl_pkt *pkt)
{
	if (!pkt)
		return;
	if (--pkt->refcnt > 0)
		return;
	/* External data: its owner learns the packet is gone (zero-copy returns the guest's
	 * descriptors) before the segment is recycled. */
	if (pkt->release)
		pkt->release(pkt);
	while (pkt) {
		struct vl_pkt *next = pkt->next;

		seg_release(pkt);
		pkt = next;
	}
}

void vl_pkt_free_bulk(struct vl_pkt **pkts, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct vl_pkt *p = pkts[i];

		/* The usual case inline: one segment, last reference, own data. */
		if (p && p->refcnt == 1 && !p->release && !p->next) {
			p->refcnt = 0;
			seg_release(p);
		} else {
			vl_pkt_free(p);
		}
	}
}

/* SPDX-License-Identifier: MIT */
/* Packet pool internals: a LIFO stack of free segments over one contiguous allocation. */
#ifndef VL_POOL_INTERNAL_H
#define VL_POOL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "vhostlab/vl_pkt.h"

struct vl_pool {
	uint32_t capacity;
	uint32_t buf_size;
	uint32_t nfree;
	struct vl_pkt **free_stack; /* [capacity]; top at nfree - 1 (last freed is reused first,
				     * which keeps recently touched buffers in cache) */
	struct vl_pkt *descs;       /* [capacity] */
	uint8_t *storage;           /* capacity segments, each buf_size bytes on whole lines */
	uint64_t alloc_failures;
#ifdef VL_LAB_BUILD
	/* Fault injection, set through vl_lab_control (core/lab/vl_lab_control.h). Absent from
	 * a production build, so the allocation fast path there has no check to make. */
	uint64_t fail_after;        /* allocation calls left before injected failures */
	bool (*fault)(void *ctx);   /* fault hook, NULL when unset */
	void *fault_ctx;
#endif
};

/* True when an allocation call may proceed (consumes one unit of the injection budget).
 * Always true in a production build, where it folds away. */
static inline int vl_pool_may_alloc(struct vl_pool *pool)
{
#ifndef VL_LAB_BUILD
	(void)pool;
	return 1;
#else
	if (pool->fault && pool->fault(pool->fault_ctx))
		return 0;
	if (pool->fail_after == UINT64_MAX)
		return 1;
	if (pool->fail_after == 0)
		return 0;
	pool->fail_after--;
	return 1;
#endif
}

/* A segment as a fresh packet of len bytes, all in it (len <= buf_len: the caller's check). */
static inline void vl_pkt_reset_len(struct vl_pkt *p, uint32_t len)
{
	p->next = NULL;
	p->data = p->buf;
	p->data_len = len;
	p->pkt_len = len;
	p->nb_segs = 1;
	p->refcnt = 1;
	p->ol = (struct vl_offload){0};
	p->release = NULL;
}

static inline void vl_pkt_reset(struct vl_pkt *p)
{
	vl_pkt_reset_len(p, 0);
}

/* vl_pool_alloc_bulk without the reset, for a caller that resets each packet itself
 * (vl_pkt_reset_len with its length: the usual reset's stores, less two). n > 0. */
static inline int vl_pool_take_bulk(struct vl_pool *pool, struct vl_pkt **out, uint32_t n)
{
	if (!vl_pool_may_alloc(pool) || n > pool->nfree) {
		pool->alloc_failures++;
		return -1;
	}
	uint32_t nfree = pool->nfree;

	for (uint32_t i = 0; i < n; i++)
		out[i] = pool->free_stack[--nfree];
	pool->nfree = nfree;
	return 0;
}

#endif

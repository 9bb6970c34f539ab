/* SPDX-License-Identifier: MIT */
/* Multi-segment packet helpers: build by length, chain, read and write across segments. */
#include <string.h>

#include "pkt/pool_internal.h"

/* Most segments vl_pkt_alloc_len gathers in one call (a 64 KiB packet in 256-byte buffers). */
#define VL_PKT_MAX_SEGS_PER_ALLOC 256u

/* Segments a packet of pkt_len bytes takes in pool's buffers (at least one), or 0 when that
 * is more than one call gathers (counted as an allocation failure). */
static uint32_t segs_for(struct vl_pool *pool, uint32_t pkt_len)
{
	const uint32_t bs = pool->buf_size;
	/* Written to avoid pkt_len + bs - 1 overflowing. */
	uint32_t nseg = pkt_len / bs + (pkt_len % bs != 0);

	if (nseg == 0)
		nseg = 1;
	if (nseg > VL_PKT_MAX_SEGS_PER_ALLOC) {
		pool->alloc_failures++;
		return 0;
	}
	return nseg;
}

struct vl_pkt *vl_pkt_alloc_len(struct vl_pool *pool, uint32_t pkt_len)
{
	uint32_t bs = pool->buf_size;
	uint32_t nseg = segs_for(pool, pkt_len);
	struct vl_pkt *segs[VL_PKT_MAX_SEGS_PER_ALLOC];

	if (nseg == 0)
		return NULL;
	if (vl_pool_alloc_bulk(pool, segs, nseg) != 0)
		return NULL;

	uint32_t left = pkt_len;

	for (uint32_t i = 0; i < nseg; i++) {
		segs[i]->data_len = left < bs ? left : bs;
		left -= segs[i]->data_len;
		segs[i]->next = i + 1 < nseg ? segs[i + 1] : NULL;
	}
	segs[0]->pkt_len = pkt_len;
	segs[0]->nb_segs = (uint16_t)nseg;
	return segs[0];
}

int vl_pkt_extend(struct vl_pkt *head, uint32_t pkt_len)
{
	struct vl_pool *pool = head->pool;
	uint32_t bs = pool->buf_size;
	uint32_t nseg = segs_for(pool, pkt_len);
	struct vl_pkt *segs[VL_PKT_MAX_SEGS_PER_ALLOC];

	if (nseg == 0)
		return -1;
	if (nseg > 1 && vl_pool_alloc_bulk(pool, segs, nseg - 1) != 0)
		return -1;

	struct vl_pkt *prev = head;
	uint32_t left = pkt_len;

	head->data_len = left < bs ? left : bs;
	left -= head->data_len;
	for (uint32_t i = 0; i + 1 < nseg; i++) {
		segs[i]->data_len = left < bs ? left : bs;
		left -= segs[i]->data_len;
		prev->next = segs[i];
		prev = segs[i];
	}
	head->pkt_len = pkt_len;
	head->nb_segs = (uint16_t)nseg;
	return 0;
}

int vl_pkt_chain(struct vl_pkt *head, struct vl_pkt *seg)
{
	if (head->nb_segs == UINT16_MAX || seg->data_len > UINT32_MAX - head->pkt_len)
		return -1;

	struct vl_pkt *tail = head;

	while (tail->next)
		tail = tail->next;
	tail->next = seg;
	seg->next = NULL;
	head->nb_segs++;
	head->pkt_len += seg->data_len;
	return 0;
}

uint32_t vl_pkt_read(const struct vl_pkt *pkt, uint32_t off, void *dst, uint32_t len)
{
	uint32_t done = 0;

	for (const struct vl_pkt *s = pkt; s && done < len; s = s->next) {
		if (off >= s->data_len) {
			off -= s->data_len;
			continue;
		}
		uint32_t n = s->data_len - off;

		if (n > len - done)
			n = len - done;
		memcpy((uint8_t *)dst + done, s->data + off, n);
		done += n;
		off = 0;
	}
	return done;
}

uint32_t vl_pkt_write(struct vl_pkt *pkt, uint32_t off, const void *src, uint32_t len)
{
	uint32_t done = 0;

	for (struct vl_pkt *s = pkt; s && done < len; s = s->next) {
		if (off >= s->data_len) {
			off -= s->data_len;
			continue;
		}
		uint32_t n = s->data_len - off;

		if (n > len - done)
			n = len - done;
		memcpy(s->data + off, (const uint8_t *)src + done, n);
		done += n;
		off = 0;
	}
	return done;
}

/* SPDX-License-Identifier: MIT */
/* The ring interface the net datapath is written against. Each call takes the layout as a
 * compile-time constant: a net body is a static inline function instantiated once per layout,
 * so every switch below folds away and no call through a pointer happens per descriptor.
 *
 * Adding a layout: add its enum value, implement the six operations in ring/<layout>.{h,c},
 * add one case to each switch here, and one instantiation per net body (net/dequeue.c,
 * net/enqueue.c). The virtio-net logic itself is not touched. */
#ifndef VL_RING_H
#define VL_RING_H

#include "ring/split.h"

static inline uint16_t vl_ring_avail_count(struct vl_vq *vq, const enum vl_layout L)
{
	switch (L) {
	case VL_LAYOUT_SPLIT:
	default:
		return vl_split_avail_count(vq);
	}
}

static inline int vl_ring_head(struct vl_vq *vq, const enum vl_layout L, uint16_t pos,
			       uint16_t *head)
{
	switch (L) {
	case VL_LAYOUT_SPLIT:
	default:
		return vl_split_head(vq, pos, head);
	}
}

static inline enum vl_drop vl_ring_walk(struct vl_vq *vq, const enum vl_layout L,
					uint16_t head, enum vl_dir dir, uint32_t *np,
					uint32_t *total)
{
	switch (L) {
	case VL_LAYOUT_SPLIT:
	default:
		return vl_split_walk(vq, head, dir, np, total);
	}
}

static inline void vl_ring_push_used(struct vl_vq *vq, const enum vl_layout L, uint16_t id,
				     uint32_t len)
{
	switch (L) {
	case VL_LAYOUT_SPLIT:
	default:
		vl_split_push_used(vq, id, len);
	}
}

static inline void vl_ring_consume(struct vl_vq *vq, const enum vl_layout L, uint16_t n)
{
	switch (L) {
	case VL_LAYOUT_SPLIT:
	default:
		vl_split_consume(vq, n);
	}
}

static inline void vl_ring_flush_used(struct vl_vq *vq, const enum vl_layout L)
{
	switch (L) {
	case VL_LAYOUT_SPLIT:
	default:
		vl_split_flush_used(vq);
	}
}

#endif

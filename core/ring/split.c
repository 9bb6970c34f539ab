/* SPDX-License-Identifier: MIT */
/* Split virtqueue: chain walking with every hostile-input check, and used-ring publication. */
#include "ring/split.h"

/* Make an indirect table readable as host descriptors. A table that lies in one host mapping
 * is used in place (its entries are still read once each, through vl_guest_load_bytes); one
 * that straddles regions is copied out first. */
static enum vl_drop split_map_indirect(struct vl_vq *vq, const struct vl_split_desc *d,
				       const uint8_t **table, uint32_t *entries)
{
	if (!vq->indirect_ok)
		return VL_DROP_INDIRECT_NOT_NEGOTIATED;
	/* Spec 2.7.5.3.1: a driver MUST NOT set both INDIRECT and NEXT. */
	if (d->flags & VL_DESC_F_NEXT)
		return VL_DROP_INDIRECT_WITH_NEXT;
	/* A table of more than queue-size entries cannot describe a legal chain (spec: chains
	 * are never longer than the queue size); bounding it also bounds the copy-out buffer. */
	if (d->len == 0 || d->len % sizeof(struct vl_split_desc) != 0 ||
	    d->len / sizeof(struct vl_split_desc) > vq->size)
		return VL_DROP_INDIRECT_LEN;

	uint64_t len = d->len;
	/* Bytes, not descriptors: the guest may place the table at any alignment. */
	const uint8_t *host = vl_mem_xlate(vq->mem, d->addr, &len);

	if (host == NULL)
		return VL_DROP_UNMAPPED;
	if (len < d->len) {
		if (vl_mem_read(vq->mem, d->addr, vq->indirect_copy, d->len) != d->len)
			return VL_DROP_UNMAPPED;
		host = (const uint8_t *)vq->indirect_copy;
	}
	*table = host;
	*entries = d->len / (uint32_t)sizeof(struct vl_split_desc);
	return VL_DROP_NONE;
}

enum vl_drop vl_split_walk(struct vl_vq *vq, uint16_t head, enum vl_dir dir, uint32_t *np,
			   uint32_t *total)
{
	const uint8_t *itable = NULL; /* the indirect table, once entered */
	uint32_t entries = vq->size;
	bool indirect = false;
	uint32_t idx = head;
	/* Hop budget: a chain cannot visit more descriptors than its table holds, so running
	 * out means the next fields form a cycle (spec 2.7.5.2 bounds chains by queue size). */
	uint32_t budget = entries;
	const bool want_writable = dir == VL_DIR_DEVICE_WRITES;

	*total = 0;
	for (;;) {
		struct vl_split_desc d;

		if (budget-- == 0)
			return VL_DROP_CHAIN_LOOP;
		if (indirect)
			vl_guest_load_bytes(&d, itable + (size_t)idx * sizeof(d), sizeof(d));
		else
			vl_guest_load_split_desc(&d, &vq->desc[idx]);

		if (d.flags & VL_DESC_F_INDIRECT) {
			if (indirect)
				return VL_DROP_NESTED_INDIRECT;
			enum vl_drop why = split_map_indirect(vq, &d, &itable, &entries);

			if (why != VL_DROP_NONE)
				return why;
			indirect = true;
			idx = 0;
			budget = entries;
			continue;
		}
		/* TX buffers must all be device-readable, RX buffers all device-writable. */
		if (((d.flags & VL_DESC_F_WRITE) != 0) != want_writable)
			return VL_DROP_DIRECTION;
		if (d.len > 0) {
			enum vl_drop why = vl_chain_add_range(vq->mem, d.addr, d.len, vq->pieces,
							      VL_CHAIN_MAX_PIECES, np, total);
			if (why != VL_DROP_NONE)
				return why;
		}
		if (!(d.flags & VL_DESC_F_NEXT))
			return VL_DROP_NONE;
		if (d.next >= entries)
			return VL_DROP_NEXT_OUT_OF_RANGE;
		idx = d.next;
	}
}

void vl_split_flush_used(struct vl_vq *vq)
{
	uint32_t n = vq->shadow_count;

	if (n == 0) {
		vq->needs_call = false;
		return;
	}
	uint32_t mask = vq->size - 1;
	uint32_t start = vq->used_idx & mask;
	/* The shadow holds at most queue-size entries, so the copy wraps at most once. */
	uint32_t first = n < vq->size - start ? n : vq->size - start;

	memcpy(&vq->used->ring[start], vq->shadow_used, first * sizeof(*vq->shadow_used));
	if (first < n)
		memcpy(&vq->used->ring[0], vq->shadow_used + first,
		       (n - first) * sizeof(*vq->shadow_used));
	vq->used_idx = (uint16_t)(vq->used_idx + n);
	/* Spec 2.7.8.2: the device MUST write the used elements (and the buffers they describe)
	 * before the index that exposes them. The release store orders every earlier store,
	 * including the batched copies flushed just before this call. */
	__atomic_store_n(&vq->used->idx, vq->used_idx, __ATOMIC_RELEASE);
	vq->stats.used_entries += n;
	vq->shadow_count = 0;

	/* Reading the guest's notification wish after publishing needs a full barrier (store
	 * then load): otherwise we could read a stale NO_INTERRUPT and miss a wake-up. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint16_t flags = vl_guest_load16(&vq->avail->flags);

	vq->needs_call = !(flags & VL_AVAIL_F_NO_INTERRUPT);
	if (vq->needs_call)
		vq->stats.calls_needed++;
}

/* SPDX-License-Identifier: MIT */
/* Split virtqueue: chain walking with every hostile-input check, and used-ring publication. */
#include "ring/split.h"

#include <string.h>

/* A fresh stamp for the descriptors one table walk visits (rq->seen). Inline: once per
 * walk, an increment and a rarely taken branch. */
static inline uint16_t next_stamp(struct vl_ring *rq)
{
	if (++rq->seen_stamp == 0) {
		/* Once every 65535 walks: forget every old stamp. */
		memset(rq->seen, 0, (size_t)rq->size * sizeof(*rq->seen));
		rq->seen_stamp = 1;
	}
	return rq->seen_stamp;
}

/* Walk an indirect table (spec 2.7.5.3): its entries link with NEXT like ring descriptors,
 * within the table's own index space; an INDIRECT entry is a nested table, which we refuse. */
static enum vl_drop walk_table(struct vl_ring *rq, const uint8_t *table, uint32_t entries,
			       enum vl_dir dir, uint32_t *np, uint32_t *total)
{
	uint16_t stamp = next_stamp(rq); /* table entries are another index space */
	uint32_t idx = 0;

	/* Every entry is visited once at most (the stamps), so the walk ends within `entries`
	 * steps. */
	for (;;) {
		struct vl_split_desc d;

		/* An entry this walk already visited: a loop, caught before it is read a second
		 * time. idx < entries <= size: 0 and every next were checked. */
		if (rq->seen[idx] == stamp)
			return VL_DROP_CHAIN_LOOP;
		rq->seen[idx] = stamp;
		vl_guest_load_bytes(&d, table + (size_t)idx * sizeof(d), sizeof(d));
		if (d.flags & VL_DESC_F_INDIRECT)
			return VL_DROP_NESTED_INDIRECT;
		enum vl_drop why = vl_chain_add_desc(rq, d.addr, d.len, d.flags, dir, np, total);

		if (why != VL_DROP_NONE)
			return why;
		if (!(d.flags & VL_DESC_F_NEXT))
			return VL_DROP_NONE;
		if (d.next >= entries)
			return VL_DROP_NEXT_OUT_OF_RANGE;
		idx = d.next;
	}
}

enum vl_drop vl_split_walk_indirect(struct vl_ring *rq, uint64_t addr, uint32_t len,
				    enum vl_dir dir, uint32_t *np, uint32_t *total)
{
	const uint8_t *table;
	uint32_t entries;

	*total = 0;
	enum vl_drop why = vl_chain_map_indirect(rq, addr, len, &table, &entries);

	return why != VL_DROP_NONE ? why : walk_table(rq, table, entries, dir, np, total);
}

enum vl_drop vl_split_walk(struct vl_ring *rq, uint16_t head, const struct vl_split_desc *first,
			   enum vl_dir dir, uint32_t *np, uint32_t *total)
{
	uint32_t idx = head;
	uint16_t stamp = next_stamp(rq);

	*total = 0;
	rq->walk_ring_descs = 0;
	/* Every descriptor is visited once at most (the stamps), so the walk ends within
	 * queue-size steps (spec 2.7.5.2 bounds chains by the queue size). */
	for (;;) {
		struct vl_split_desc d;

		/* A descriptor this walk already visited: a loop, caught before it is read a
		 * second time (the guest could have changed it in between: double fetch). idx <
		 * size: the head and every next were checked. */
		if (rq->seen[idx] == stamp)
			return VL_DROP_CHAIN_LOOP;
		rq->seen[idx] = stamp;
		if (first) {
			/* The head, already read by vl_split_fetch. */
			d = *first;
			first = NULL;
		} else {
			vl_guest_load_split_desc(&d, &rq->desc[idx]);
		}
		rq->walk_ring_descs++;

		if (d.flags & VL_DESC_F_INDIRECT) {
			/* Spec 2.7.5.3.1: a driver MUST NOT set both INDIRECT and NEXT. */
			if (d.flags & VL_DESC_F_NEXT)
				return VL_DROP_INDIRECT_WITH_NEXT;
			const uint8_t *table;
			uint32_t entries;
			enum vl_drop why = vl_chain_map_indirect(rq, d.addr, d.len, &table,
								 &entries);

			return why != VL_DROP_NONE ? why
						   : walk_table(rq, table, entries, dir, np, total);
		}
		enum vl_drop why = vl_chain_add_desc(rq, d.addr, d.len, d.flags, dir, np, total);

		if (why != VL_DROP_NONE)
			return why;
		if (!(d.flags & VL_DESC_F_NEXT))
			return VL_DROP_NONE;
		if (d.next >= rq->size)
			return VL_DROP_NEXT_OUT_OF_RANGE;
		idx = d.next;
	}
}

/* Our wish for kicks, written where the guest reads it (spec 2.7.7, 2.7.10): with event idx,
 * avail_event = the next entry we will look at (kick me when you pass it); leaving it stale
 * lets the guest skip kicks while we poll (one spurious kick per 16-bit wrap at most).
 * Without event idx, the NO_NOTIFY flag.
 * A burst stores the wish only when the field does not already hold it. The guest reads
 * this cache line around every kick decision; a store per burst (empty ones included)
 * would take the line from the guest's core each time, a load leaves it shared. The field
 * is the device's, so the load is not a guest input (no lab hook); comparing with it,
 * rather than with what we stored last, still puts the wish back if something overwrote
 * it. */
void vl_split_update_kick_wish(struct vl_ring *rq, bool force)
{
	if (rq->event_idx) {
		if (!rq->want_kicks)
			return;
		uint16_t *avail_event = (uint16_t *)&rq->used->ring[rq->size];

		if (!force && __atomic_load_n(avail_event, __ATOMIC_RELAXED) == rq->last_avail_idx)
			return;
		__atomic_store_n(avail_event, rq->last_avail_idx, __ATOMIC_RELAXED);
		vl_log_write(&rq->log, rq->cfg.device_gpa + 4 + 8ull * rq->size, 2);
	} else {
		uint16_t flags = (uint16_t)(rq->want_kicks ? 0 : VL_USED_F_NO_NOTIFY);

		if (!force && __atomic_load_n(&rq->used->flags, __ATOMIC_RELAXED) == flags)
			return;
		__atomic_store_n(&rq->used->flags, flags, __ATOMIC_RELAXED);
		vl_log_write(&rq->log, rq->cfg.device_gpa, 2);
	}
}

void vl_split_flush_used(struct vl_ring *rq)
{
	uint32_t n = rq->shadow_count;
	uint16_t old = rq->used_idx;

	/* The chains this burst consumed are marked taken before anything is published (here,
	 * out of the per-chain path, rather than in vl_split_consume). */
	if (rq->infl)
		vl_inflight_split_taken(rq);
	vl_split_update_kick_wish(rq, false);
	if (n == 0) {
		rq->needs_call = false;
		vl_log_flush(&rq->log);
		return;
	}
	uint32_t mask = rq->size - 1;

	/* The shadow holds at most queue-size entries, so the ring is written at most once
	 * around. */
	if (rq->infl)
		vl_inflight_split_pre_publish(rq);
	for (uint32_t i = 0; i < n; i++) {
		struct vl_split_used_elem *u = &rq->used->ring[(old + i) & mask];

		u->id = rq->shadow[i].id;
		u->len = rq->shadow[i].len;
	}
	rq->used_idx = (uint16_t)(old + n);
	if (rq->log.bitmap) {
		/* The entries written, in at most two runs (the ring wraps once at most), and
		 * the index. */
		uint32_t start = old & mask, first = n < rq->size - start ? n : rq->size - start;
		uint64_t ring = rq->cfg.device_gpa + 4;

		vl_log_write(&rq->log, ring + 8ull * start, 8ull * first);
		vl_log_write(&rq->log, ring, 8ull * (n - first));
		vl_log_write(&rq->log, rq->cfg.device_gpa + 2, 2);
	}
	/* Spec 2.7.8.2: the device MUST write the used elements (and the buffers they describe)
	 * before the index that exposes them. The release store orders every earlier store,
	 * including the batched copies flushed just before this call. */
	__atomic_store_n(&rq->used->idx, rq->used_idx, __ATOMIC_RELEASE);
	rq->stats.used_entries += n;
	rq->shadow_count = 0;

	/* Reading the guest's notification wish after publishing needs a full barrier (store
	 * then load): otherwise we could read a stale value and miss a wake-up. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* The batch is the guest's now: its heads are no longer in flight. */
	if (rq->infl)
		vl_inflight_split_post_publish(rq, n);
	vl_lab_chain_begin(); /* the notification decision: a unit of its own */
	if (rq->event_idx) {
		/* used_event sits after the avail ring (spec 2.7.10). */
		uint16_t used_event = vl_guest_load16(&rq->avail->ring[rq->size]);

		rq->needs_call = vl_need_event(used_event, rq->used_idx, old);
	} else {
		uint16_t flags = vl_guest_load16(&rq->avail->flags);

		rq->needs_call = !(flags & VL_AVAIL_F_NO_INTERRUPT);
	}
	vl_lab_chain_end();
	if (rq->needs_call)
		rq->stats.calls_needed++;
	else
		rq->stats.calls_suppressed++;
	vl_log_flush(&rq->log);
}

void vl_split_prefetch_payloads(struct vl_ring *rq, uint16_t from, uint16_t to, uint32_t skip,
				 uint64_t min_len)
{
	const uint16_t *ring = rq->avail->ring;
	const struct vl_split_desc *desc = rq->desc;
	const uint32_t size = rq->size;
	const uint16_t base = rq->last_avail_idx;
	struct vl_payload_prefetch p;

	vl_payload_prefetch_begin(&p, &rq->cur, skip, min_len);
	/* Each chain's first descriptor, whatever follows it: one holding the header and data
	 * (a one-piece packet, or the first piece of several) is asked for; a header alone (a
	 * Linux guest's) is not longer than min_len; an indirect one asks for its table's line,
	 * which fetch reads next. Not testing the flags saves their peek and branch a chain. */
	for (uint16_t i = from; i < to; i++) {
		const uint16_t h = vl_guest_peek16(&ring[(uint16_t)(base + i) & (size - 1)]);

		if (h >= size)
			continue;
		const struct vl_split_desc *d = &desc[h];

		vl_payload_prefetch_one(&p, vl_guest_peek64(&d->addr), vl_guest_peek32(&d->len));
	}
	rq->stats.payload_prefetches += vl_payload_prefetch_end(&p, &rq->cur);
}

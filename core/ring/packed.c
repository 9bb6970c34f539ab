/* SPDX-License-Identifier: MIT */
/* Packed virtqueue: availability scan, chain walking, used write-back, event suppression. */
#include <stddef.h>

#include "ring/packed.h"

/* Move a ring position by n descriptors, flipping the wrap counter at each end. Inline: per
 * descriptor in the scan, the walk and the used write-back. */
static inline void advance(uint16_t *pos, bool *wrap, uint32_t n, uint32_t size)
{
	uint32_t p = (uint32_t)*pos + n;

	while (p >= size) {
		p -= size;
		*wrap = !*wrap;
	}
	*pos = (uint16_t)p;
}

/* The AVAIL and USED bits of a descriptor available for driver wrap counter w: AVAIL == w
 * and USED != w. A descriptor with both bits equal to w looks used: for the device it is
 * simply not available (spec 2.8.1). */
static inline uint16_t avail_bits(bool wrap)
{
	return wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED;
}

/* The window state lives in locals while the loop runs: each flags load is an acquire,
 * after which the compiler would otherwise reload every rq field it touches.
 * The usual window is a run of chains of one descriptor each; the inner loop takes such a run
 * up to the ring's end with nothing per chain but the flags load, one compare and two stores
 * (callgrind, packed 64 B enqueue: the loop that also tested the ring end and counted room
 * per chain cost 29.7 instructions a chain with its call, this one 22.6). Its first descriptor that is not such a chain
 * hands its flags, already read, to the general step: no flags word is loaded twice. */
void vl_packed_scan(struct vl_ring *rq, uint32_t want)
{
	const uint32_t size = rq->size;
	const struct vl_packed_desc *ring = rq->pdesc;
	uint16_t *pflags = rq->pflags;
	struct vl_packed_chain *chains = rq->pchains;
	uint32_t scanned = rq->pscanned, descs = rq->pscan_descs;
	uint16_t pos = rq->avail_pos;
	bool wrap = rq->avail_wrap;

	if (scanned >= want || rq->pscan_end)
		return;
	advance(&pos, &wrap, descs, size);
	uint16_t bits = avail_bits(wrap);

	/* Chains that may still join the window: up to want, and no more descriptors than the
	 * ring has (the whole ring in the window: nothing more can be available). */
	uint32_t room = want - scanned < size - descs ? want - scanned : size - descs;

	while (room > 0) {
		/* A run of one-descriptor chains, no further than the ring's end. */
		const uint32_t run = room < size - pos ? room : size - pos;
		uint32_t k = 0;
		uint16_t flags = 0;

		for (; k < run; k++) {
			flags = vl_guest_load16_acquire(&ring[pos + k].flags);
			if ((flags & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_NEXT)) != bits)
				break;
			pflags[pos + k] = flags;
			chains[scanned + k] = (struct vl_packed_chain){
				.start = (uint16_t)(pos + k), .ndescs = 1};
		}
		scanned += k;
		descs += k;
		room -= k;
		pos = (uint16_t)(pos + k);
		if (pos == size) {
			pos = 0;
			wrap = !wrap;
			bits = avail_bits(wrap);
		}
		if (k == run)
			continue;
		/* flags: the descriptor at pos, read by the run and not a one-descriptor chain.
		 * Chains of several descriptors follow each other here without going back
		 * through the run's set-up (a guest that sends headers and data apart makes
		 * every chain one of them); the first one-descriptor chain after them is taken
		 * here too, and the run goes on after it. */
		for (;;) {
			const uint16_t start = pos;
			uint32_t n = 1;

			if ((flags & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED)) != bits)
				goto end;
			pflags[pos] = flags;
			if (++pos == size) {
				pos = 0;
				wrap = !wrap;
				bits = avail_bits(wrap);
			}
			while (flags & VL_DESC_F_NEXT) {
				/* A chain longer than what is left of the ring would run into
				 * itself. */
				if (descs + n >= size) {
					vl_ring_break(rq, VL_DROP_CHAIN_INCOMPLETE);
					goto end;
				}
				flags = vl_guest_load16_acquire(&ring[pos].flags);
				/* The driver makes a chain's head available after all its other
				 * descriptors (spec 2.8.6): a visible head with a missing tail is
				 * a lie, and the positions that follow cannot be trusted. */
				if ((flags & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED)) != bits) {
					vl_ring_break(rq, VL_DROP_CHAIN_INCOMPLETE);
					goto end;
				}
				pflags[pos] = flags;
				n++;
				if (++pos == size) {
					pos = 0;
					wrap = !wrap;
					bits = avail_bits(wrap);
				}
			}
			chains[scanned++] =
				(struct vl_packed_chain){.start = start, .ndescs = (uint16_t)n};
			descs += n;
			room = want - scanned < size - descs ? want - scanned : size - descs;
			if (room == 0)
				break;
			flags = vl_guest_load16_acquire(&ring[pos].flags);
			if ((flags & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_NEXT)) == bits) {
				pflags[pos] = flags;
				chains[scanned++] = (struct vl_packed_chain){.start = pos, .ndescs = 1};
				descs++;
				room--;
				if (++pos == size) {
					pos = 0;
					wrap = !wrap;
					bits = avail_bits(wrap);
				}
				break;
			}
		}
	}
	rq->pscanned = scanned;
	rq->pscan_descs = descs;
	/* Room ran out before want: the whole ring is in the window, nothing more can come. */
	if (scanned < want)
		rq->pscan_end = true;
	return;
end:
	rq->pscanned = scanned;
	rq->pscan_descs = descs;
	rq->pscan_end = true;
}

/* Walk an indirect table: entries are consecutive (NEXT is ignored, spec 2.8.8); only WRITE
 * is a valid flag; an INDIRECT entry is a nested table, which we refuse.
 * A device-writable entry in a TX (device-reads) table is read anyway and counted: DPDK
 * 22.11's virtio-user initialises every packed indirect entry with WRITE and never clears it
 * on the header entry of a multi-segment transmit, so refusing it would drop every such
 * packet (DPDK's own vhost library never checks). Reading memory the guest offered for
 * writing harms nothing; the other direction -- writing a device-readable buffer -- stays a
 * drop everywhere, and so does WRITE on TX outside packed indirect tables. */
static enum vl_drop packed_walk_table(struct vl_ring *rq, const uint8_t *table, uint32_t entries,
				      enum vl_dir dir, uint32_t *np, uint32_t *total)
{
	for (uint32_t i = 0; i < entries; i++) {
		struct vl_packed_desc d;

		vl_guest_load_bytes(&d, table + (size_t)i * sizeof(d), sizeof(d));
		if (d.flags & VL_DESC_F_INDIRECT)
			return VL_DROP_NESTED_INDIRECT;
		if (dir == VL_DIR_DEVICE_READS && (d.flags & VL_DESC_F_WRITE)) {
			d.flags &= (uint16_t)~VL_DESC_F_WRITE;
			rq->stats.tx_write_ignored++;
		}
		enum vl_drop why = vl_chain_add_desc(rq, d.addr, d.len, d.flags, dir, np, total);

		if (why != VL_DROP_NONE)
			return why;
	}
	return VL_DROP_NONE;
}

enum vl_drop vl_packed_walk_indirect(struct vl_ring *rq, uint64_t addr, uint32_t len,
				     enum vl_dir dir, uint32_t *np, uint32_t *total)
{
	const uint8_t *table;
	uint32_t entries;
	enum vl_drop why = vl_chain_map_indirect(rq, addr, len, &table, &entries);

	return why != VL_DROP_NONE ? why : packed_walk_table(rq, table, entries, dir, np, total);
}

enum vl_drop vl_packed_fetch(struct vl_ring *rq, uint16_t pos, enum vl_dir dir,
			     struct vl_chain *c, uint32_t *np, uint32_t *total)
{
	const struct vl_packed_chain *pc = &rq->pchains[pos];
	const uint32_t size = rq->size;
	uint16_t p = pc->start;
	bool wrap = false; /* only positions matter here; advance wants a counter to flip */

	*total = 0;
	/* The buffer id is in the chain's last descriptor (spec 2.8.6). Read it first so a
	 * chain dropped for its contents can still be returned under its id. */
	uint16_t last = p;
	bool last_wrap = false;

	advance(&last, &last_wrap, pc->ndescs - 1u, size);
	uint16_t id = vl_guest_load16(&rq->pdesc[last].id);

	if (id >= size) {
		vl_ring_break(rq, VL_DROP_ID_OUT_OF_RANGE);
		return VL_DROP_ID_OUT_OF_RANGE;
	}
	c->id = id;
	c->ndescs = pc->ndescs;

	for (uint32_t i = 0; i < pc->ndescs; i++, advance(&p, &wrap, 1, size)) {
		const uint16_t flags = rq->pflags[p]; /* read once, by the scan */
		const uint64_t addr = vl_guest_load64(&rq->pdesc[p].addr);
		const uint32_t len = vl_guest_load32(&rq->pdesc[p].len);

		/* Spec 2.8.8: an indirect descriptor is never part of a NEXT list (a chain of one
		 * is vl_packed_fetch_inline's). */
		if (flags & VL_DESC_F_INDIRECT)
			return VL_DROP_INDIRECT_WITH_NEXT;
		enum vl_drop why = vl_chain_add_desc(rq, addr, len, flags, dir, np, total);

		if (why != VL_DROP_NONE)
			return why;
	}
	return VL_DROP_NONE;
}

void vl_packed_consume(struct vl_ring *rq, uint16_t n)
{
	uint32_t descs = rq->pscan_descs; /* the usual case: the whole window was consumed */

	if (n < rq->pscanned) {
		descs = 0;
		for (uint16_t i = 0; i < n; i++)
			descs += rq->pchains[i].ndescs;
	}
	advance(&rq->avail_pos, &rq->avail_wrap, descs, rq->size);
	rq->stats.chains += n;
	vl_packed_begin(rq);
}

void vl_packed_prefetch_payloads(struct vl_ring *rq, uint16_t from, uint16_t to, uint32_t skip,
				 uint64_t min_len)
{
	const struct vl_packed_chain *chains = rq->pchains;
	const struct vl_packed_desc *ring = rq->pdesc;
	struct vl_payload_prefetch p;

	vl_payload_prefetch_begin(&p, &rq->cur, skip, min_len);
	/* Each chain's first descriptor, whatever follows it (see vl_split_prefetch_payloads). */
	for (uint16_t i = from; i < to; i++) {
		const struct vl_packed_desc *d = &ring[chains[i].start];

		vl_payload_prefetch_one(&p, vl_guest_peek64(&d->addr), vl_guest_peek32(&d->len));
	}
	rq->stats.payload_prefetches += vl_payload_prefetch_end(&p, &rq->cur);
}

/* Our wish for kicks in the device event suppression area (spec 2.8.10): DISABLE while we
 * poll; with event idx, DESC naming the next descriptor we will look at; else ENABLE.
 * A burst stores it only when the area does not already hold it: the guest reads this line
 * before every kick decision, and a store per burst would take the line from its core (a
 * load leaves it shared). The area is the device's, so the load is not a guest input (no
 * lab hook); comparing with it still puts the wish back if something overwrote it. */
void vl_packed_update_kick_wish(struct vl_ring *rq, bool force)
{
	uint16_t flags = VL_RING_EVENT_DISABLE;
	uint16_t off_wrap = 0;
	bool with_off = rq->want_kicks && rq->event_idx;

	if (with_off) {
		off_wrap = (uint16_t)(rq->avail_pos | (rq->avail_wrap ? VL_PACKED_WRAP_BIT : 0));
		flags = VL_RING_EVENT_DESC;
	} else if (rq->want_kicks) {
		flags = VL_RING_EVENT_ENABLE;
	}
	if (!force && __atomic_load_n(&rq->device_event->flags, __ATOMIC_RELAXED) == flags &&
	    (!with_off ||
	     __atomic_load_n(&rq->device_event->off_wrap, __ATOMIC_RELAXED) == off_wrap))
		return;
	if (with_off)
		__atomic_store_n(&rq->device_event->off_wrap, off_wrap, __ATOMIC_RELAXED);
	__atomic_store_n(&rq->device_event->flags, flags, __ATOMIC_RELEASE);
	vl_log_write(&rq->log, rq->cfg.device_gpa, sizeof(struct vl_packed_event));
}

/* Did the used descriptors just written, from (old_pos, old_wrap) up to the current used
 * position, pass the one the guest asked to hear about? Positions are mapped onto a line of
 * 2 * size slots (wrap counter 1 -> upper half), where one flush moves at most size. */
static inline bool packed_need_call(const struct vl_ring *rq, uint16_t old_pos,
				    bool old_wrap)
{
	/* The event suppression structure is read as one 32-bit snapshot, so offset, wrap and
	 * flags come from the same guest write. */
	uint32_t snap = vl_guest_load_event(rq->driver_event);
	uint16_t off_wrap = (uint16_t)snap, flags = (uint16_t)(snap >> 16) & 3u;
	const uint32_t size = rq->size, line = 2 * size;

	if (flags == VL_RING_EVENT_DISABLE)
		return false;
	/* ENABLE, the reserved value 3, and DESC without event idx: notify (a spurious call
	 * is harmless, a missing one hangs the guest). */
	if (flags != VL_RING_EVENT_DESC || !rq->event_idx)
		return true;
	uint32_t off = off_wrap & 0x7fffu;

	if (off >= size)
		return true;
	uint32_t ev = off + ((off_wrap & VL_PACKED_WRAP_BIT) ? size : 0);
	uint32_t from = old_pos + (old_wrap ? size : 0);
	uint32_t to = rq->used_pos + (rq->used_wrap ? size : 0);

	return (ev + line - from) % line < (to + line - from) % line;
}

/* For the receive batches' flush (ring/packed_rx_batch.c). A wrapper, so that the static
 * function stays inline in vl_packed_flush_used (made external itself, or static without
 * `inline`, gcc 12 kept a call there: callgrind, packed 1518 B mergeable enqueue 396.99 ->
 * 397.37 instructions a packet). */
bool vl_packed_need_call(const struct vl_ring *rq, uint16_t old_pos, bool old_wrap)
{
	return packed_need_call(rq, old_pos, old_wrap);
}

/* The last 8 bytes of a packed descriptor (len, id, flags) as one word: the ring is 16-byte
 * aligned (vl_ring_init), so the word is aligned and its store is single. */
typedef uint64_t __attribute__((may_alias)) vl_desc_tail_alias;
_Static_assert(sizeof(struct vl_used_elem) == 8 && offsetof(struct vl_used_elem, id) == 4,
	       "a shadow used element is a packed descriptor's len and id, then ndescs");
_Static_assert(offsetof(struct vl_packed_desc, len) == 8 &&
		       offsetof(struct vl_packed_desc, flags) == 14,
	       "len, id and flags are a packed descriptor's last 8 bytes");

void vl_packed_flush_used(struct vl_ring *rq)
{
	const uint32_t n = rq->shadow_count;
	const uint16_t old_pos = rq->used_pos;
	const bool old_wrap = rq->used_wrap;

	vl_packed_update_kick_wish(rq, false);
	if (n == 0) {
		rq->needs_call = false;
		vl_log_flush(&rq->log);
		return;
	}
	/* Position, wrap counter and the flags they imply live in locals: each flags store is
	 * a release, after which the compiler would otherwise reload the rq fields. */
	struct vl_packed_desc *ring = rq->pdesc;
	const struct vl_used_elem *sh = rq->shadow;
	const uint32_t size = rq->size;
	uint32_t pos = old_pos;
	bool wrap = old_wrap;
	uint16_t wbits = wrap ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0;
	const uint16_t head_flags = (uint16_t)(wbits | (sh[0].len ? VL_DESC_F_WRITE : 0));

	/* The head's id and length now, its flags last (below). */
	__atomic_store_n(&ring[pos].id, sh[0].id, __ATOMIC_RELAXED);
	__atomic_store_n(&ring[pos].len, sh[0].len, __ATOMIC_RELAXED);
	for (uint32_t i = 0;;) {
		pos += sh[i].ndescs; /* one chain: at most size descriptors */
		if (pos >= size) {
			pos -= size;
			wrap = !wrap;
			wbits ^= VL_PDESC_F_AVAIL | VL_PDESC_F_USED;
		}
		if (++i == n)
			break;
		/* Every other used descriptor whole in one store: len, id and flags are its last
		 * 8 bytes (little-endian: len low, flags high), so the guest sees all three
		 * together or none -- the order spec 2.8.21 asks for within the burst is kept by
		 * the head, written last. A release store: the buffer's bytes come first. The
		 * shadow element holds len and id in that order: its low 48 bits are stored as
		 * they are. (One store instead of three, from one load: 25.0 -> 23.2
		 * instructions a chain in this flush and its call, callgrind, packed 64 B enqueue.) */
		const uint64_t w = *(const vl_desc_tail_alias *)(const void *)&sh[i];
		const uint16_t flags = (uint16_t)(wbits | ((uint32_t)w ? VL_DESC_F_WRITE : 0));

		__atomic_store_n((vl_desc_tail_alias *)(void *)&ring[pos].len,
				 (w & 0xffffffffffffull) | (uint64_t)flags << 48, __ATOMIC_RELEASE);
	}
	rq->used_pos = (uint16_t)pos;
	rq->used_wrap = wrap;
	/* The first used descriptor last: it exposes the whole burst, data included. */
	__atomic_store_n(&rq->pdesc[old_pos].flags, head_flags, __ATOMIC_RELEASE);
	/* Logged only now: a full page cache is flushed to the bitmap on the way, and the head's
	 * page must not be marked before its flags are written. len, id and flags: the last 8
	 * bytes of each descriptor. */
	if (rq->log.bitmap) {
		uint16_t lpos = old_pos;
		bool lwrap = old_wrap;

		for (uint32_t i = 0; i < n; i++) {
			vl_log_write(&rq->log, rq->cfg.desc_gpa + 16ull * lpos + 8, 8);
			advance(&lpos, &lwrap, rq->shadow[i].ndescs, rq->size);
		}
	}
	rq->stats.used_entries += n;
	rq->shadow_count = 0;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vl_lab_chain_begin(); /* the notification decision: a unit of its own */
	rq->needs_call = packed_need_call(rq, old_pos, old_wrap);
	vl_lab_chain_end();
	if (rq->needs_call)
		rq->stats.calls_needed++;
	else
		rq->stats.calls_suppressed++;
	vl_log_flush(&rq->log);
}

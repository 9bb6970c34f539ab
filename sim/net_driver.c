/* SPDX-License-Identifier: MIT */
#include "net_driver.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring_write.h"
#include "vhostlab/vl_net.h"

/* Record room per slot: LAB_SHAPED_SEGS segs, then LAB_SHAPED_SEGS + 1 allocs. */
#define REC_ROOM (2 * LAB_SHAPED_SEGS + 1)

/* ---- failures ---------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static int drv_fail(struct lab_net_driver *d,
							   const char *fmt, ...)
{
	if (d->err && d->err[0] == '\0') {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---- expectation queues ------------------------------------------------------------ */

static int fifo_init(struct lab_fifo *f, uint32_t cap)
{
	f->e = calloc(cap, sizeof(*f->e));
	f->cap = cap;
	f->head = f->count = 0;
	return f->e ? 0 : -1;
}

static bool fifo_push(struct lab_fifo *f, const struct lab_expect *e)
{
	if (f->count == f->cap)
		return false;
	f->e[(f->head + f->count) % f->cap] = *e;
	f->count++;
	return true;
}

static bool fifo_pop(struct lab_fifo *f, struct lab_expect *e)
{
	if (f->count == 0)
		return false;
	*e = f->e[f->head];
	f->head = (f->head + 1) % f->cap;
	f->count--;
	return true;
}

/* ---- grants (containment) ---------------------------------------------------------- */

/* The bits [from, to) of one grant byte (0 <= from < to <= 8). */
static uint8_t grant_mask(uint64_t from, uint64_t to)
{
	return (uint8_t)(((1u << to) - 1) & ~((1u << from) - 1));
}

/* Set or clear bits [first, first + len) of the grant bitmap: whole bytes at once in the
 * middle, a mask at each ragged end (a chain at the limits has hundreds of small buffers). */
static void grant_set(struct lab_net_driver *d, uint64_t gpa, uint32_t len, bool on)
{
	uint64_t i = gpa - lab_gmem_ram_gpa(d->g);
	const uint64_t end = i + len;

	while (i < end) {
		const uint64_t lo = i & 7, n = end - i;

		if (lo == 0 && n >= 8) {
			memset(&d->grant[i >> 3], on ? 0xff : 0, n >> 3);
			i += n & ~(uint64_t)7;
			continue;
		}
		const uint64_t hi = lo + n < 8 ? lo + n : 8;
		const uint8_t m = grant_mask(lo, hi);

		d->grant[i >> 3] = on ? d->grant[i >> 3] | m : d->grant[i >> 3] & (uint8_t)~m;
		i += hi - lo;
	}
}

static bool in_range(uint64_t gpa, uint64_t len, uint64_t base, uint64_t size)
{
	return gpa >= base && len <= size && gpa - base <= size - len;
}

bool lab_drv_write_allowed(const struct lab_net_driver *d, uint64_t gpa, uint64_t len)
{
	/* The device owns the used rings; RX buffers while they are posted. */
	if (d->cfg.layout == VL_LAYOUT_PACKED) {
		/* The device writes used descriptors into the ring itself (id, len, flags of
		 * descriptors it owns) and its event suppression structure. */
		for (int q = 0; q < 2; q++) {
			const struct lab_pring *pr = q ? &d->rx.p : &d->tx.p;

			if (in_range(gpa, len, pr->desc_gpa, vl_packed_desc_bytes(pr->size)) ||
			    in_range(gpa, len, pr->device_gpa, sizeof(struct vl_packed_event)))
				return true;
		}
	} else if (in_range(gpa, len, d->tx.s.used_gpa, vl_split_used_bytes(d->tx.size)) ||
		   in_range(gpa, len, d->rx.s.used_gpa, vl_split_used_bytes(d->rx.size))) {
		return true;
	}
	uint64_t ram = lab_gmem_ram_gpa(d->g);

	if (!in_range(gpa, len, ram, lab_gmem_ram_size(d->g)))
		return false;
	/* A mask at the ragged ends, whole bytes between: the memory door asks this for every
	 * RX descriptor the core translates (door_check.h). */
	uint64_t i = gpa - ram;
	const uint64_t end = i + len;

	while (i < end) {
		const uint64_t lo = i & 7, n = end - i;

		if (lo == 0 && n >= 8) {
			if (d->grant[i >> 3] != 0xff)
				return false;
			i += 8;
			continue;
		}
		const uint64_t hi = lo + n < 8 ? lo + n : 8;
		const uint8_t m = grant_mask(lo, hi);

		if ((d->grant[i >> 3] & m) != m)
			return false;
		i += hi - lo;
	}
	return true;
}

/* ---- setup ------------------------------------------------------------------------- */

int lab_drv_init(struct lab_net_driver *d, struct lab_gmem *g,
		 const struct lab_net_driver_config *cfg, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->g = g;
	d->cfg = *cfg;
	d->err = err;
	d->errlen = errlen;
	d->hdr_len = vl_net_hdr_len(cfg->features);
	d->mergeable = (cfg->features & VL_FEATURE(VL_F_NET_MRG_RXBUF)) != 0;
	d->rng = lab_rng_make(cfg->seed, 0x5eed);

	uint64_t ring = lab_gmem_ring_gpa(g);
	bool event_idx = (cfg->features & VL_FEATURE(VL_F_RING_EVENT_IDX)) != 0;

	d->in_order = (cfg->features & VL_FEATURE(VL_F_IN_ORDER)) != 0;
	if (lab_ring_init(&d->tx, cfg->layout, g, ring, cfg->queue_size, cfg->start_idx,
			  d->in_order, event_idx) != 0 ||
	    lab_ring_init(&d->rx, cfg->layout, g,
			  ring + lab_ring_area_bytes(cfg->layout, cfg->queue_size),
			  cfg->queue_size, cfg->start_idx, d->in_order, event_idx) != 0)
		return drv_fail(d, "ring area too small for queue size %u", cfg->queue_size);
	d->tx_order = calloc(cfg->queue_size, sizeof(*d->tx_order));
	d->rx_order = calloc(cfg->queue_size, sizeof(*d->rx_order));
	if (!d->tx_order || !d->rx_order)
		return drv_fail(d, "out of memory setting up the simulated driver");
	d->tx_rec = calloc(cfg->queue_size, sizeof(*d->tx_rec));
	d->rx_rec = calloc(cfg->queue_size, sizeof(*d->rx_rec));
	d->tx_room = calloc((size_t)cfg->queue_size * REC_ROOM, sizeof(*d->tx_room));
	d->rx_room = calloc((size_t)cfg->queue_size * REC_ROOM, sizeof(*d->rx_room));
	d->stage = calloc(2 * LAB_MAX_SEGS + 1, sizeof(*d->stage));
	d->scratch = malloc(VL_PKT_MAX_LEN + 12);
	d->scratch2 = malloc(VL_PKT_MAX_LEN + 12);
	d->grant = calloc(lab_gmem_ram_size(g) / 8 + 1, 1);
	if (!d->tx_rec || !d->rx_rec || !d->tx_room || !d->rx_room || !d->stage || !d->scratch ||
	    !d->scratch2 || !d->grant ||
	    fifo_init(&d->tx_expect, cfg->queue_size) != 0 ||
	    fifo_init(&d->rx_expect, 4 * cfg->queue_size + 1024) != 0)
		return drv_fail(d, "out of memory setting up the simulated driver");
	return 0;
}

void lab_drv_fini(struct lab_net_driver *d)
{
	lab_ring_fini(&d->tx);
	lab_ring_fini(&d->rx);
	free(d->tx_order);
	free(d->rx_order);
	for (uint32_t i = 0; i < d->cfg.queue_size; i++) {
		if (d->tx_rec && d->tx_rec[i].wide) {
			free(d->tx_rec[i].segs);
			free(d->tx_rec[i].allocs);
		}
		if (d->rx_rec && d->rx_rec[i].wide) {
			free(d->rx_rec[i].segs);
			free(d->rx_rec[i].allocs);
		}
	}
	free(d->tx_rec);
	free(d->rx_rec);
	free(d->tx_room);
	free(d->rx_room);
	free(d->stage);
	free(d->scratch);
	free(d->scratch2);
	free(d->grant);
	free(d->tx_expect.e);
	free(d->rx_expect.e);
	free(d->landing);
	memset(d, 0, sizeof(*d));
}

void lab_make_payload(uint8_t *dst, uint32_t len, uint64_t seed, uint64_t key)
{
	lab_fill_pattern(dst, len, seed, key);
}

/* ---- chain construction -------------------------------------------------------------- */


/* Put `len` bytes of src into fresh guest RAM at a random misalignment; records the
 * allocation in rec. Every LAB_EDGE_EVERY-th placement (counted, not drawn: the draws stay
 * what they were) goes against a RAM region's edge instead, alternately ending on its last
 * byte and starting on its first (lab_gmem_alloc_edge); with fine granularity such buffers
 * also straddle into the next region or end where one ends. Returns the gpa or 0 when RAM
 * is full. */
static uint64_t place_bytes(struct lab_net_driver *d, struct lab_chain_rec *rec,
			    const uint8_t *src, uint32_t len)
{
	uint32_t skew = lab_rng_chance(&d->rng, 1, 2) ? lab_rng_below(&d->rng, 64) : 0;
	const uint64_t nth = d->placements++ % LAB_EDGE_EVERY;
	uint64_t alloc_len = 0, base = 0;

	if (len && nth % (LAB_EDGE_EVERY / 2) == LAB_EDGE_EVERY / 2 - 1) {
		const bool end = nth == LAB_EDGE_EVERY - 1;

		/* At the end: whole granules, the buffer in their last bytes. */
		alloc_len = end ? ((uint64_t)len + 63) / 64 * 64 : len;
		base = lab_gmem_alloc_edge(d->g, alloc_len,
					   end ? LAB_GMEM_REGION_END : LAB_GMEM_REGION_START);
		if (base) {
			skew = (uint32_t)(alloc_len - len);
			rec->edge_end += end;
			rec->edge_start += !end;
		}
	}
	if (base == 0) {
		/* A chain at the limits keeps its small buffers inside one 64-byte granule, so
		 * each is one host piece (pages, and so regions, start on granules) and the
		 * chain's pieces stay what the core accepts. */
		if (rec->limit != LAB_LIMIT_NONE && len <= 64 && skew > 64 - len)
			skew = 64 - len;
		alloc_len = (uint64_t)len + skew;
		base = lab_gmem_alloc(d->g, alloc_len ? alloc_len : 1, 64);
	}
	if (base == 0)
		return 0;
	rec->allocs[rec->nallocs].gpa = base;
	rec->allocs[rec->nallocs].len = (uint32_t)(alloc_len ? alloc_len : 1);
	rec->nallocs++;
	if (src && len)
		memcpy(lab_gmem_guest_ptr(d->g, base + skew, len), src, len);
	return base + skew;
}

static void release_chain(struct lab_net_driver *d, struct lab_chain_rec *rec, bool granted)
{
	for (uint32_t i = 0; i < rec->nsegs && granted; i++)
		grant_set(d, rec->segs[i].gpa, rec->segs[i].len, false);
	for (uint32_t i = 0; i < rec->nallocs; i++)
		lab_gmem_free(d->g, rec->allocs[i].gpa, rec->allocs[i].len);
	if (rec->wide) {
		free(rec->segs);
		free(rec->allocs);
		rec->segs = rec->allocs = NULL;
		rec->wide = false;
	}
	rec->in_flight = false;
	rec->nsegs = rec->nallocs = 0;
}

/* A posted chain's record into its slot: its segs and allocs into the slot's room, or, for a
 * chain longer than that (at the limits), into arrays of its own. -1 when out of memory. */
static int keep_chain(struct lab_chain_rec *slot, struct lab_seg *room,
		      const struct lab_chain_rec *rec)
{
	struct lab_seg *segs = room, *allocs = room + LAB_SHAPED_SEGS;
	const bool wide = rec->nsegs > LAB_SHAPED_SEGS || rec->nallocs > LAB_SHAPED_SEGS + 1;

	if (wide) {
		segs = malloc((rec->nsegs ? rec->nsegs : 1) * sizeof(*segs));
		allocs = malloc((rec->nallocs ? rec->nallocs : 1) * sizeof(*allocs));
		if (!segs || !allocs) {
			free(segs);
			free(allocs);
			return -1;
		}
	}
	*slot = *rec;
	slot->wide = wide;
	slot->segs = segs;
	slot->allocs = allocs;
	memcpy(segs, rec->segs, rec->nsegs * sizeof(*segs));
	memcpy(allocs, rec->allocs, rec->nallocs * sizeof(*allocs));
	return 0;
}

/* ---- chains at the core's limits ----------------------------------------------------- */

/* The shape the chain with this key takes: one in LAB_LIMIT_EVERY is at the limits (keys
 * count posted chains, so the rate is steady and nothing is drawn for it). */
static enum lab_limit limit_shape(const struct lab_net_driver *d, uint64_t key)
{
	if (key % LAB_LIMIT_DIRECT_EVERY == LAB_LIMIT_DIRECT_EVERY - 1)
		return LAB_LIMIT_DIRECT;
	if (d->cfg.use_indirect && key % LAB_LIMIT_EVERY == LAB_LIMIT_EVERY - 1)
		return LAB_LIMIT_INDIRECT;
	return LAB_LIMIT_NONE;
}

/* Descriptors of a chain at the limits: as many as the core accepts. A chain (split: the
 * walk's stamps; packed: the scan) and an indirect table (vl_chain_map_indirect) may have
 * queue-size descriptors (spec 2.7.5.2, 2.7.5.3.1), and a chain at most VL_CHAIN_MAX_PIECES
 * host pieces: placed one piece per descriptor, min(queue size, VL_CHAIN_MAX_PIECES). A
 * mergeable receive packet's pieces over all its buffers count against that cap too, so an
 * RX table that may follow other buffers of its packet keeps half of it for them. */
static uint32_t limit_pieces(const struct lab_net_driver *d, enum lab_limit limit, bool rx)
{
	return rx && d->mergeable && limit == LAB_LIMIT_INDIRECT ? VL_CHAIN_MAX_PIECES / 2
								 : VL_CHAIN_MAX_PIECES;
}

static uint32_t limit_descs(const struct lab_net_driver *d, enum lab_limit limit, bool rx)
{
	const uint32_t most = limit_pieces(d, limit, rx);

	return d->cfg.queue_size < most ? d->cfg.queue_size : most;
}

/* A direct chain at the limits needs its descriptors free, which for queue-size
 * descriptors means an empty ring: posting waits for that (returns -1) up to
 * LAB_LIMIT_PATIENCE rounds, then the chain goes out ordinary. */
static int limit_wait(struct lab_net_driver *d, const struct lab_ring *r, uint64_t *since,
		      enum lab_limit *limit, uint32_t n)
{
	if (*limit != LAB_LIMIT_DIRECT || lab_ring_free_descs(r) >= n) {
		*since = 0;
		return 0;
	}
	if (*since == 0)
		*since = d->round + 1;
	if (d->round + 1 - *since < LAB_LIMIT_PATIENCE)
		return -1;
	*since = 0;
	*limit = LAB_LIMIT_NONE;
	return 0;
}

/* `total` bytes over n descriptors, as evenly as they go; with fewer bytes than descriptors,
 * one byte each and zero-length descriptors after them (legal, skipped). */
static uint32_t cut_limit(uint32_t total, uint32_t n, uint32_t *lens)
{
	for (uint32_t i = 0; i < n; i++)
		lens[i] = total / n + (i < total % n);
	return n;
}

/* The host pieces the core makes of a chain at the limits' buffers (regions are never
 * joined in the host view: guard pages sit between them). place_bytes keeps a buffer of up
 * to 64 bytes inside one granule, so one piece; only longer ones are looked up. */
static uint32_t chain_pieces(const struct lab_net_driver *d, const struct lab_chain_rec *rec)
{
	uint32_t p = 0;

	for (uint32_t i = 0; i < rec->nsegs; i++)
		p += rec->segs[i].len <= 64 ? rec->segs[i].len != 0
					    : lab_gmem_pieces(d->g, rec->segs[i].gpa, rec->segs[i].len);
	return p;
}

static void count_posted(struct lab_net_driver *d, const struct lab_chain_rec *rec)
{
	d->limit_chains += rec->limit != LAB_LIMIT_NONE;
	d->limit_chains_indirect += rec->limit == LAB_LIMIT_INDIRECT;
	d->region_end_buffers += rec->edge_end;
	d->region_start_buffers += rec->edge_start;
}

/* Cut `total` bytes into segment lengths. TX shapes put the header alone, share it with
 * data, or spread it over three descriptors; a rare zero-length descriptor is mixed in. */
static uint32_t cut_segments(struct lab_net_driver *d, uint32_t total, uint32_t hdr,
			     uint32_t max_data_segs, uint32_t max_descs, uint32_t *lens)
{
	uint32_t n = 0, rest = total;
	/* Spec 2.7.5.3.1: no chain (indirect tables included) longer than the queue size. */
	uint32_t limit = d->cfg.queue_size < LAB_MAX_SEGS ? d->cfg.queue_size : LAB_MAX_SEGS;

	if (limit > max_descs)
		limit = max_descs;
	uint32_t hdr_modes = limit >= 4 ? 3 : limit >= 2 ? 1 : 0;

	if (hdr && hdr_modes) {
		/* Mode 0 (header alone) needs 2 descriptors, mode 1 (header in three) needs 4;
		 * the shared mode needs one and is chosen when nothing else fits. */
		switch (hdr_modes == 3 ? lab_rng_below(&d->rng, 3) : 2 * lab_rng_below(&d->rng, 2)) {
		case 0: /* header alone */
			lens[n++] = hdr;
			rest -= hdr;
			break;
		case 1: /* header over three descriptors */
			lens[n++] = 1 + lab_rng_below(&d->rng, hdr - 2);
			lens[n] = 1 + lab_rng_below(&d->rng, hdr - lens[0] - 1);
			n++;
			lens[n++] = hdr - lens[0] - lens[1];
			rest -= hdr;
			break;
		default: /* header shares the first data descriptor */
			break;
		}
	}
	if (max_data_segs > limit - n)
		max_data_segs = limit - n;
	uint32_t k = 1 + lab_rng_below(&d->rng, max_data_segs);

	if (k > rest)
		k = rest ? rest : 1;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t left_segs = k - i;
		uint32_t len = left_segs == 1 ? rest : 1 + lab_rng_below(&d->rng, rest - left_segs + 1);

		lens[n++] = len;
		rest -= len;
	}
	if (n < limit && lab_rng_chance(&d->rng, 1, 32)) {
		/* A zero-length descriptor somewhere after the first: legal, skipped. */
		uint32_t at = 1 + lab_rng_below(&d->rng, n);

		memmove(&lens[at + 1], &lens[at], (n - at) * sizeof(*lens));
		lens[at] = 0;
		n++;
	}
	return n;
}

/* Link the segments of rec into a chain (direct, or one descriptor naming an indirect table)
 * with the given descriptor flags and make it available. Returns 1 with the id the device
 * must return, or 0 when out of descriptors, ids or guest RAM. */
static int link_chain(struct lab_net_driver *d, struct lab_ring *r, struct lab_chain_rec *rec,
		      uint16_t flags, uint16_t *id_out)
{
	bool indirect = d->cfg.use_indirect && lab_rng_chance(&d->rng, 1, 2);
	struct lab_pdesc elems[LAB_MAX_SEGS];
	int id;

	if (rec->limit != LAB_LIMIT_NONE) /* drawn above all the same: the sequence stays */
		indirect = rec->limit == LAB_LIMIT_INDIRECT;
	for (uint32_t i = 0; i < rec->nsegs; i++)
		elems[i] = (struct lab_pdesc){
			.addr = rec->segs[i].gpa, .len = rec->segs[i].len, .flags = flags,
		};
	if (indirect) {
		/* Both layouts use 16-byte table entries. Split entries are linked by next, and
		 * we store them in a shuffled order so next really has to be followed (the walk
		 * starts at entry 0, which holds segment 0). Packed entries are consecutive, their
		 * ids junk. Written here, then copied into guest RAM. */
		uint8_t table[LAB_MAX_SEGS * 16];
		uint16_t slot[LAB_MAX_SEGS];
		bool packed = d->cfg.layout == VL_LAYOUT_PACKED;

		for (uint32_t i = 0; i < rec->nsegs; i++)
			slot[i] = (uint16_t)i;
		for (uint32_t i = rec->nsegs; !packed && i > 2; i--) {
			uint32_t j = 1 + lab_rng_below(&d->rng, i - 1);
			uint16_t t = slot[i - 1];

			slot[i - 1] = slot[j];
			slot[j] = t;
		}
		if (packed)
			lab_rw_packed_table(table, elems, rec->nsegs);
		else
			lab_rw_split_chain(table, slot, elems, rec->nsegs);
		if (lab_ring_free_descs(r) < 1)
			return 0;
		uint32_t tbytes = rec->nsegs * 16;
		uint64_t tgpa = place_bytes(d, rec, table, tbytes);

		if (tgpa == 0)
			return 0;
		elems[0] = (struct lab_pdesc){.addr = tgpa, .len = tbytes, .flags = VL_DESC_F_INDIRECT};
		id = lab_ring_post(r, elems, 1);
	} else {
		if (lab_ring_free_descs(r) < rec->nsegs)
			return 0;
		id = lab_ring_post(r, elems, rec->nsegs);
	}
	if (id < 0)
		return 0;
	*id_out = (uint16_t)id;
	return 1;
}

/* Under IN_ORDER the device returns buffers exactly in the order they were posted. */
static int check_order(struct lab_net_driver *d, uint16_t *order, uint32_t *head,
		       uint32_t *count, uint32_t id, const char *q)
{
	if (!d->in_order)
		return 0;
	if (*count == 0 || order[*head] != id)
		return drv_fail(d, "%s: in-order device returned id %u, but %s was posted first", q,
				id, *count ? "another" : "nothing");
	*head = (*head + 1) % d->cfg.queue_size;
	(*count)--;
	return 0;
}

/* ---- TX ---------------------------------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* A valid header for a packet of pkt_len bytes: sometimes a checksum request pointing
 * inside the packet, random hdr_len / gso_size with GSO_NONE (fields must pass through). */
static void make_tx_header(struct lab_net_driver *d, uint32_t pkt_len, uint8_t *hdr)
{
	memset(hdr, 0, 12);
	if (pkt_len >= 2 && lab_rng_chance(&d->rng, 1, 2)) {
		uint32_t start = lab_rng_below(&d->rng, pkt_len - 1);
		uint32_t off = lab_rng_below(&d->rng, pkt_len - 1 - start);

		hdr[0] = VL_NET_HDR_F_NEEDS_CSUM;
		put16(hdr + 6, (uint16_t)(start > 0xffff ? 0xffff : start));
		put16(hdr + 8, (uint16_t)(off > 0xffff - 2 ? 0 : off));
		if (get16(hdr + 6) + get16(hdr + 8) + 2u > pkt_len)
			put16(hdr + 8, 0);
		if (get16(hdr + 6) + 2u > pkt_len)
			put16(hdr + 6, 0);
	}
	put16(hdr + 2, (uint16_t)lab_rng_below(&d->rng, 128));
	put16(hdr + 4, (uint16_t)lab_rng_below(&d->rng, 9000));
	/* num_buffers means nothing on transmit (a 12-byte header's last field): junk, derived
	 * rather than drawn so the workload's shapes stay what they were. */
	put16(hdr + 10, (uint16_t)(pkt_len * 2654435761u >> 9));
}

/* A TX packet long enough to give each of n descriptors a byte: the smallest configured
 * size that is, else the largest (the rest of its descriptors are then empty). */
static uint32_t limit_pkt_len(const struct lab_net_driver *d, uint32_t pkt_len, uint32_t n)
{
	uint32_t best = 0, most = 0;

	if (d->hdr_len + pkt_len >= n)
		return pkt_len;
	for (uint32_t i = 0; i < d->cfg.nsizes; i++) {
		const uint32_t sz = d->cfg.sizes[i];

		if (d->hdr_len + sz >= n && (best == 0 || sz < best))
			best = sz;
		most = sz > most ? sz : most;
	}
	return best ? best : most;
}

static int post_tx_chain(struct lab_net_driver *d, uint32_t pkt_len, enum lab_limit limit);

int lab_drv_post_tx(struct lab_net_driver *d)
{
	uint32_t pkt_len = d->cfg.sizes[lab_rng_below(&d->rng, d->cfg.nsizes)];

	if (d->tx_expect.count == d->tx_expect.cap || lab_ring_free_descs(&d->tx) == 0)
		return 0;
	enum lab_limit limit = limit_shape(d, d->tx_key);

	if (limit_wait(d, &d->tx, &d->tx_limit_wait, &limit, limit_descs(d, limit, false)) != 0)
		return 0;
	if (limit != LAB_LIMIT_NONE) {
		int p = post_tx_chain(d, limit_pkt_len(d, pkt_len, limit_descs(d, limit, false)),
				      limit);

		if (p != 2)
			return p;
	}
	return post_tx_chain(d, pkt_len, LAB_LIMIT_NONE);
}

/* Post one TX packet of pkt_len bytes, of random shape or at the limits. 1 posted, 0 out of
 * descriptors or RAM, -1 driver failure, 2 a chain at the limits came out with more host
 * pieces than the core accepts (its buffers are given back: post it ordinary). */
static int post_tx_chain(struct lab_net_driver *d, uint32_t pkt_len, enum lab_limit limit)
{
	uint16_t head;
	uint32_t total = d->hdr_len + pkt_len;
	uint32_t lens[LAB_MAX_SEGS];
	struct lab_chain_rec rec = {.segs = d->stage, .allocs = d->stage + LAB_MAX_SEGS};

	rec.key = d->tx_key;
	rec.limit = limit;
	rec.pkt_len = pkt_len;
	rec.total = total;
	make_tx_header(d, pkt_len, rec.hdr);
	memcpy(d->scratch, rec.hdr, d->hdr_len);
	lab_make_payload(d->scratch + d->hdr_len, pkt_len, d->cfg.seed, rec.key);

	uint32_t n = limit != LAB_LIMIT_NONE
			     ? cut_limit(total, limit_descs(d, limit, false), lens)
			     : cut_segments(d, total, d->hdr_len, LAB_MAX_TX_DATA_SEGS,
					    LAB_SHAPED_SEGS, lens);
	uint32_t off = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t gpa = place_bytes(d, &rec, d->scratch + off, lens[i]);

		if (gpa == 0)
			goto no_room;
		rec.segs[rec.nsegs].gpa = gpa;
		rec.segs[rec.nsegs].len = lens[i];
		rec.nsegs++;
		off += lens[i];
	}
	if (limit != LAB_LIMIT_NONE && chain_pieces(d, &rec) > limit_pieces(d, limit, false)) {
		release_chain(d, &rec, false);
		return 2;
	}
	if (!link_chain(d, &d->tx, &rec, 0, &head))
		goto no_room;
	rec.in_flight = true;
	rec.posted_round = d->round;
	if (keep_chain(&d->tx_rec[head], d->tx_room + (size_t)head * REC_ROOM, &rec) != 0)
		return drv_fail(d, "out of memory keeping TX chain %u", head);
	count_posted(d, &rec);
	if (d->in_order)
		d->tx_order[(d->tx_order_head + d->tx_order_count++) % d->cfg.queue_size] = head;

	struct lab_expect e = {.key = rec.key, .pkt_len = pkt_len};

	e.ol.flags = rec.hdr[0] & VL_NET_HDR_F_NEEDS_CSUM; /* the rest is ignored (5.1.6.2.2) */
	e.ol.gso_type = rec.hdr[1];
	e.ol.hdr_len = get16(rec.hdr + 2);
	e.ol.gso_size = get16(rec.hdr + 4);
	e.ol.csum_start = get16(rec.hdr + 6);
	e.ol.csum_offset = get16(rec.hdr + 8);
	fifo_push(&d->tx_expect, &e);
	d->tx_key++;
	d->tx_in_flight++;
	return 1;
no_room:
	release_chain(d, &rec, false);
	return 0;
}

static bool same_offload(const struct vl_offload *a, const struct vl_offload *b)
{
	return a->flags == b->flags && a->gso_type == b->gso_type && a->hdr_len == b->hdr_len &&
	       a->gso_size == b->gso_size && a->csum_start == b->csum_start &&
	       a->csum_offset == b->csum_offset;
}

/* First byte offset where a and b differ, or len. */
static uint32_t first_diff(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	if (memcmp(a, b, len) == 0)
		return len;
	uint32_t i = 0;

	while (a[i] == b[i])
		i++;
	return i;
}

int lab_drv_recheck(struct lab_net_driver *d, const struct vl_pkt *pkt,
		    const struct lab_expect *e)
{
	if (pkt->pkt_len != e->pkt_len)
		return drv_fail(d, "TX packet %" PRIu64 ": length %u, guest sent %u", e->key,
				pkt->pkt_len, e->pkt_len);
	if (!same_offload(&pkt->ol, &e->ol))
		return drv_fail(d, "TX packet %" PRIu64 ": offload fields differ from the header "
				"the guest wrote", e->key);
	if (vl_pkt_read(pkt, 0, d->scratch2, pkt->pkt_len) != pkt->pkt_len)
		return drv_fail(d, "TX packet %" PRIu64 ": segments hold fewer bytes than pkt_len",
				e->key);
	lab_make_payload(d->scratch, e->pkt_len, d->cfg.seed, e->key);
	uint32_t at = first_diff(d->scratch, d->scratch2, e->pkt_len);

	if (at != e->pkt_len)
		return drv_fail(d, "TX packet %" PRIu64 " (len %u): byte %u is 0x%02x, guest sent "
				"0x%02x", e->key, e->pkt_len, at, d->scratch2[at], d->scratch[at]);
	d->checks++;
	return 0;
}

int lab_drv_check_dequeued(struct lab_net_driver *d, const struct vl_pkt *pkt,
			   struct lab_expect *seen)
{
	struct lab_expect e;

	if (!fifo_pop(&d->tx_expect, &e))
		return drv_fail(d, "TX: host dequeued a packet (len %u) the guest never posted",
				pkt->pkt_len);
	if (seen)
		*seen = e;
	return lab_drv_recheck(d, pkt, &e);
}

/* Read the bytes a chain's segments hold, in order, into dst (up to max bytes). */
static uint32_t gather_segs(const struct lab_net_driver *d, const struct lab_chain_rec *rec,
			    uint8_t *dst, uint32_t max)
{
	uint32_t got = 0;

	for (uint32_t i = 0; i < rec->nsegs && got < max; i++) {
		uint32_t n = rec->segs[i].len < max - got ? rec->segs[i].len : max - got;

		if (n)
			memcpy(dst + got, lab_gmem_guest_ptr(d->g, rec->segs[i].gpa, n), n);
		got += n;
	}
	return got;
}

int lab_drv_harvest_tx(struct lab_net_driver *d)
{
	uint32_t id, len;

	for (;;) {
		int got = lab_ring_pop_used(&d->tx, &id, &len);

		if (got == 0)
			break;
		if (got < 0 || id >= d->tx.size || !d->tx_rec[id].in_flight)
			return drv_fail(d, "TX used ring returned id %u, which is not in flight",
					id);
		if (check_order(d, d->tx_order, &d->tx_order_head, &d->tx_order_count, id, "TX"))
			return -1;
		struct lab_chain_rec *rec = &d->tx_rec[id];

		if (len != 0)
			return drv_fail(d, "TX packet %" PRIu64 ": used length %u, expected 0 (the "
					"device writes nothing to TX buffers)", rec->key, len);
		/* Read-only grant: the buffers must hold exactly what the guest wrote. */
		memcpy(d->scratch, rec->hdr, d->hdr_len);
		lab_make_payload(d->scratch + d->hdr_len, rec->pkt_len, d->cfg.seed, rec->key);
		gather_segs(d, rec, d->scratch2, rec->total);
		uint32_t at = first_diff(d->scratch, d->scratch2, rec->total);

		if (at != rec->total)
			return drv_fail(d, "TX packet %" PRIu64 ": the device modified byte %u of "
					"its read-only buffer", rec->key, at);
		release_chain(d, rec, false);
		d->tx_in_flight--;
		d->checks++;
	}
	return 0;
}

int lab_drv_check_tx_age(struct lab_net_driver *d, uint64_t max_age)
{
	for (uint32_t i = 0; i < d->tx.size; i++) {
		const struct lab_chain_rec *rec = &d->tx_rec[i];

		if (rec->in_flight && d->round - rec->posted_round > max_age)
			return drv_fail(d, "TX packet %" PRIu64 " (head %u) posted in round %" PRIu64
					" still not returned in round %" PRIu64, rec->key, i,
					rec->posted_round, d->round);
	}
	return 0;
}

/* ---- RX ---------------------------------------------------------------------------- */

int lab_drv_post_rx(struct lab_net_driver *d)
{
	struct lab_chain_rec rec = {.segs = d->stage, .allocs = d->stage + LAB_MAX_SEGS};
	uint32_t lens[LAB_MAX_SEGS];
	uint16_t head;
	uint32_t cap;

	if (lab_ring_free_descs(&d->rx) == 0)
		return 0;
	rec.limit = limit_shape(d, d->rx_buf_key);
	if (limit_wait(d, &d->rx, &d->rx_limit_wait, &rec.limit,
		       limit_descs(d, rec.limit, true)) != 0)
		return 0;
	if (d->mergeable) {
		/* Mostly ordinary buffers, sometimes tiny ones that hold little beyond the
		 * header, so packets spread over many buffers. Never so small that a full ring
		 * could not hold the largest packet: then the device must drop it. */
		/* The ring holds queue-size descriptors; buffers of up to 3 descriptors (see
		 * below) mean only a third as many buffers fit. */
		uint32_t per_buf = d->cfg.queue_size >= 64 ? 3 : 1;
		uint32_t nbufs = d->cfg.queue_size / per_buf ? d->cfg.queue_size / per_buf : 1;
		uint32_t min_cap = (d->cfg.rx_buf_max + nbufs - 1) / nbufs;

		if (min_cap < d->hdr_len)
			min_cap = d->hdr_len;
		cap = lab_rng_chance(&d->rng, 1, 8) ? min_cap + lab_rng_below(&d->rng, 16)
						     : min_cap + 1 + lab_rng_below(&d->rng, 2048);
	} else {
		cap = d->cfg.rx_buf_max + lab_rng_below(&d->rng, 64);
	}
	const uint32_t shaped_cap = cap;

	if (rec.limit != LAB_LIMIT_NONE) {
		/* A byte for each descriptor, and room for the largest packet: a direct chain
		 * is all the ring holds, and no mergeable packet then spans two tables. */
		const uint32_t n = limit_descs(d, rec.limit, true);

		cap = cap > d->cfg.rx_buf_max ? cap : d->cfg.rx_buf_max;
		cap = cap > n ? cap : n;
	}
again:
	rec.key = d->rx_buf_key;
	rec.total = cap;

	/* Mergeable packets need several buffers at once: on small queues, one descriptor per
	 * buffer (as Linux posts them) so the ring can hold queue-size buffers. */
	uint32_t max_segs = d->mergeable ? (d->cfg.queue_size >= 64 ? 3 : 1) : 4;
	uint32_t n = rec.limit != LAB_LIMIT_NONE
			     ? cut_limit(cap, limit_descs(d, rec.limit, true), lens)
			     : cut_segments(d, cap, 0, max_segs,
					    max_segs == 1 ? 1 : LAB_SHAPED_SEGS, lens);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t gpa = place_bytes(d, &rec, NULL, lens[i]);

		if (gpa == 0)
			goto no_room;
		/* Poison, so bytes the device claims to have written but did not are caught. */
		if (lens[i])
			memset(lab_gmem_guest_ptr(d->g, gpa, lens[i]), 0xa5, lens[i]);
		/* Half the buffers (a bit of the key, scrambled so it does not follow packet keys
		 * in lockstep) start with the header most packets get (no offloads, one buffer),
		 * as a driver that recycles its buffers leaves it (DPDK's virtio PMD): the device
		 * may keep those bytes instead of storing them again (rx_hdrs_kept), and the guest
		 * must still find the right header. */
		if (i == 0 && ((d->rx_buf_key * 0x9e3779b97f4a7c15ull) >> 63)) {
			uint8_t common[12] = {0};
			const uint32_t hn = lens[0] < d->hdr_len ? lens[0] : d->hdr_len;

			if (d->hdr_len == 12)
				common[10] = 1;
			if (hn)
				memcpy(lab_gmem_guest_ptr(d->g, gpa, hn), common, hn);
		}
		rec.segs[rec.nsegs].gpa = gpa;
		rec.segs[rec.nsegs].len = lens[i];
		rec.nsegs++;
	}
	if (rec.limit != LAB_LIMIT_NONE &&
	    chain_pieces(d, &rec) > limit_pieces(d, rec.limit, true)) {
		/* More host pieces than the core accepts: give the buffers back, post it ordinary. */
		release_chain(d, &rec, false);
		rec.limit = LAB_LIMIT_NONE;
		rec.edge_end = rec.edge_start = 0;
		cap = shaped_cap;
		goto again;
	}
	if (!link_chain(d, &d->rx, &rec, VL_DESC_F_WRITE, &head))
		goto no_room;
	for (uint32_t i = 0; i < rec.nsegs; i++)
		grant_set(d, rec.segs[i].gpa, rec.segs[i].len, true);
	rec.in_flight = true;
	rec.posted_round = d->round;
	if (keep_chain(&d->rx_rec[head], d->rx_room + (size_t)head * REC_ROOM, &rec) != 0)
		return drv_fail(d, "out of memory keeping RX buffer %u", head);
	count_posted(d, &rec);
	if (d->in_order)
		d->rx_order[(d->rx_order_head + d->rx_order_count++) % d->cfg.queue_size] = head;
	d->rx_buf_key++;
	d->rx_in_flight++;
	return 1;
no_room:
	release_chain(d, &rec, false);
	return 0;
}

int lab_drv_expect_rx(struct lab_net_driver *d, uint64_t key, uint32_t pkt_len,
		      const struct vl_offload *ol)
{
	struct lab_expect e = {.key = key, .pkt_len = pkt_len, .ol = *ol};

	if (!fifo_push(&d->rx_expect, &e))
		return drv_fail(d, "RX: more than %u delivered packets awaiting the guest",
				d->rx_expect.cap);
	return 0;
}

/* Pop one used RX entry and validate it against the record of that head. */
static int rx_pop(struct lab_net_driver *d, uint32_t *id, uint32_t *len)
{
	int got = lab_ring_pop_used(&d->rx, id, len);

	if (got == 0)
		return 1;
	if (got < 0 || *id >= d->rx.size || !d->rx_rec[*id].in_flight)
		return drv_fail(d, "RX used ring returned id %u, which is not in flight", *id);
	if (check_order(d, d->rx_order, &d->rx_order_head, &d->rx_order_count, *id, "RX"))
		return -1;
	if (*len > d->rx_rec[*id].total)
		return drv_fail(d, "RX buffer %u: used length %u exceeds its capacity %u", *id,
				*len, d->rx_rec[*id].total);
	if (*len == 0)
		return drv_fail(d, "RX buffer %u returned with used length 0 (a well-formed "
				"buffer was rejected)", *id);
	return 0;
}

/* For the observer: the first `len` bytes of a used buffer, as guest ranges. */
static void note_landing(struct lab_net_driver *d, const struct lab_chain_rec *rec, uint32_t len)
{
	if (!d->rx_observer || !d->landing)
		return;
	for (uint32_t i = 0; i < rec->nsegs && len; i++) {
		uint32_t n = rec->segs[i].len < len ? rec->segs[i].len : len;

		if (n && d->nlanding == d->nlanding_cap) {
			/* A buffer at the limits has many more pieces than the room made. */
			struct lab_seg *more = realloc(d->landing, 2 * (size_t)d->nlanding_cap *
								   sizeof(*more));

			if (!more)
				return;
			d->landing = more;
			d->nlanding_cap *= 2;
		}
		if (n)
			d->landing[d->nlanding++] = (struct lab_seg){rec->segs[i].gpa, n};
		len -= n;
	}
}

static int rx_check_packet(struct lab_net_driver *d, uint32_t got, const uint8_t *hdr,
			   uint16_t nbufs)
{
	struct lab_expect e;

	if (!fifo_pop(&d->rx_expect, &e))
		return drv_fail(d, "RX: guest received a packet (%u bytes) the host never sent",
				got);
	/* The observer hears what the packet had to be before it is checked, so a recording of
	 * a failing run holds the very expectation that failed. */
	if (d->rx_observer && d->landing) {
		struct lab_rx_landing l = {&e, nbufs, d->nlanding, d->landing};

		d->rx_observer(d->rx_observer_ctx, &l);
	}
	struct vl_offload ol = {
		.flags = hdr[0], .gso_type = hdr[1], .hdr_len = get16(hdr + 2),
		.gso_size = get16(hdr + 4), .csum_start = get16(hdr + 6),
		.csum_offset = get16(hdr + 8),
	};

	if (got != e.pkt_len)
		return drv_fail(d, "RX packet %" PRIu64 ": guest received %u bytes over %u "
				"buffer(s), host sent %u", e.key, got, nbufs, e.pkt_len);
	if (!same_offload(&ol, &e.ol))
		return drv_fail(d, "RX packet %" PRIu64 ": header fields differ from the host's "
				"offload metadata", e.key);
	lab_make_payload(d->scratch, e.pkt_len, d->cfg.seed, e.key);
	uint32_t at = first_diff(d->scratch, d->scratch2, e.pkt_len);

	if (at != e.pkt_len)
		return drv_fail(d, "RX packet %" PRIu64 " (len %u, %u buffer(s)): byte %u is "
				"0x%02x, host sent 0x%02x", e.key, e.pkt_len, nbufs, at,
				d->scratch2[at], d->scratch[at]);
	d->checks++;
	return 0;
}

int lab_drv_harvest_rx(struct lab_net_driver *d)
{
	for (;;) {
		uint32_t id, len;
		uint8_t hdr[12];
		int r = rx_pop(d, &id, &len);

		if (r != 0)
			return r > 0 ? 0 : -1;
		struct lab_chain_rec *rec = &d->rx_rec[id];

		if (len < d->hdr_len)
			return drv_fail(d, "RX buffer %u: used length %u is shorter than the "
					"%u-byte header", id, len, d->hdr_len);
		/* The first buffer: header, then data. */
		if (d->rx_observer && !d->landing) {
			d->nlanding_cap = d->rx.size * LAB_SHAPED_SEGS;
			d->landing = calloc(d->nlanding_cap, sizeof(*d->landing));
		}
		d->nlanding = 0;
		note_landing(d, rec, len);
		gather_segs(d, rec, d->scratch2, len);
		memcpy(hdr, d->scratch2, d->hdr_len);
		memmove(d->scratch2, d->scratch2 + d->hdr_len, len - d->hdr_len);
		uint32_t got = len - d->hdr_len;
		uint16_t nbufs = d->hdr_len == 12 ? get16(hdr + 10) : 1;

		if (!d->mergeable && nbufs != 1)
			return drv_fail(d, "RX: num_buffers is %u without mergeable buffers (must "
					"be 1)", nbufs);
		if (nbufs == 0 || nbufs > d->rx.size)
			return drv_fail(d, "RX: num_buffers %u out of range", nbufs);
		release_chain(d, rec, true);
		d->rx_in_flight--;
		for (uint16_t b = 1; b < nbufs; b++) {
			int more = rx_pop(d, &id, &len);

			if (more > 0)
				return drv_fail(d, "RX: num_buffers says %u but only %u used "
						"buffers are published", nbufs, b);
			if (more < 0)
				return -1;
			rec = &d->rx_rec[id];
			if (got + len > VL_PKT_MAX_LEN)
				return drv_fail(d, "RX: merged packet exceeds %u bytes",
						VL_PKT_MAX_LEN);
			note_landing(d, rec, len);
			gather_segs(d, rec, d->scratch2 + got, len);
			got += len;
			release_chain(d, rec, true);
			d->rx_in_flight--;
		}
		if (rx_check_packet(d, got, hdr, nbufs) != 0)
			return -1;
	}
}

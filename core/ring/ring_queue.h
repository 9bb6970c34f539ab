/* SPDX-License-Identifier: MIT */
/* The ring layer's queue: what a virtqueue is whatever rides on it -- the layout's areas and
 * positions, chain walking scratch, the shadow used ring, notification state, the dirty log.
 * The net layer keeps its own state (copy batch, receive reservations, zero-copy leases,
 * eviction) beside it in struct vl_vq (net/net_queue.h); nothing here knows about packets.
 * Not a public header. */
#ifndef VL_RING_QUEUE_H
#define VL_RING_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"
#include "mem/dirty_log.h"
#include "mem/cursor.h"
#include "mem/prefetch.h"
#include "mem/mem_internal.h"
#include "vhostlab/vl_virtio.h"
#include "vhostlab/vl_vq.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "vhostlab reads virtio structures as little-endian host values"
#endif

struct vl_infl_split;

/* A translated piece of a buffer: host bytes contiguous in one memory region. */
struct vl_piece {
	uint8_t *host;
	uint32_t len;
	uint64_t gpa;     /* guest-physical address of host[0], for the dirty log */
};

/* A chain as the net layer sees it, whatever the layout. */
struct vl_chain {
	uint16_t id;     /* what the used ring must name: split head / packed buffer id */
	uint16_t ndescs; /* ring descriptors the chain occupies until it is returned (an
			  * indirect table counts as its one ring descriptor) */
};

/* A used element waiting in the shadow used ring until the burst's flush. In the order of a
 * packed descriptor's len and id (vl_packed_flush_used reads the element as one word and
 * stores its low 48 bits as they are). */
struct vl_used_elem {
	uint32_t len;
	uint16_t id;
	uint16_t ndescs;
};

/* A chain the packed scan found available: where it starts and how long it is. */
struct vl_packed_chain {
	uint16_t start;
	uint16_t ndescs;
};

/* Which way data flows through a chain; decides which descriptor flag is an offence. */
enum vl_dir {
	VL_DIR_DEVICE_READS,  /* TX: guest buffers the device only reads */
	VL_DIR_DEVICE_WRITES, /* RX: guest buffers the device fills */
};

struct vl_ring {
	enum vl_layout layout;
	uint32_t size;
	uint64_t features;
	bool indirect_ok;          /* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	bool in_order;             /* VIRTIO_F_IN_ORDER negotiated */
	bool event_idx;            /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool want_kicks;           /* the device asks the guest for available notifications */
	/* The guest memory table, through the range the last buffer was found in (the door:
	 * mem/cursor.h). Set whenever the table changes. */
	struct vl_mem_cursor cur;
	struct vl_vq_config cfg;

	/* Split ring areas (host pointers, validated contiguous at setup). */
	struct vl_split_desc *desc;
	struct vl_split_avail *avail;
	struct vl_split_used *used;
	uint16_t last_avail_idx;   /* next avail entry to consume */
	uint16_t used_idx;         /* shadow of used->idx: what we last published */
	uint16_t window;           /* split: avail entries seen at the start of this burst */
	uint32_t head_limit;       /* split: heads below it take the usual path (the size; 0
				    * with an inflight area attached: ring/inflight.h) */
	uint32_t walk_ring_descs;  /* split: ring descriptors the last walk visited */

	/* Packed ring (spec 2.8): positions 0..size-1 plus a one-bit wrap counter each. */
	struct vl_packed_desc *pdesc;
	struct vl_packed_event *driver_event; /* the guest's wish for used notifications */
	struct vl_packed_event *device_event; /* our wish for available notifications */
	uint16_t avail_pos;        /* next descriptor to consume */
	bool avail_wrap;
	uint16_t used_pos;         /* where the next used descriptor goes */
	bool used_wrap;
	uint16_t *pflags;          /* [size]: flags read by this burst's scan, by position */
	struct vl_packed_chain *pchains; /* [size]: chains the scan found, in ring order */
	uint32_t pscanned;         /* chains scanned in this burst's window */
	uint32_t pscan_descs;      /* descriptors those chains cover */
	bool pscan_end;            /* the scan met a descriptor that is not available */
	bool tx_line_wait;         /* vl_vq_set_tx_line_wait */

	/* Used elements collected during a burst, published once at its end. */
	struct vl_used_elem *shadow; /* [size] */
	uint32_t shadow_count;

	/* Scratch for chain walking. */
	struct vl_piece *pieces;   /* [VL_CHAIN_MAX_PIECES] */
	uint8_t *indirect_copy;    /* [16 * size]: tables not contiguous in host memory */
	/* Split walks: seen[i] == seen_stamp when descriptor (or table entry) i was visited by
	 * the current walk, so a loop stops before any descriptor is read twice. */
	uint16_t *seen;            /* [size] */
	uint16_t seen_stamp;

	bool broken;
	enum vl_drop broken_reason;
	bool needs_call;
	struct vl_dirty_log log;

	/* Inflight tracking (ring/inflight.h), split rings; NULL: off (the datapath tests only
	 * this pointer). */
	struct vl_infl_split *infl;
	uint16_t *infl_heads;      /* [size]: the head fetched at each window position */
	uint16_t *resubmit;        /* [size]: heads to take again, in the order first taken */
	uint32_t resubmit_next;    /* the next of them */
	uint32_t resubmit_left;    /* how many are left: window positions 0..left-1 are these,
				    * and last_avail_idx stays that many entries behind the next
				    * avail entry to take, so the window and the slots of the
				    * other positions come out of the usual arithmetic */
	uint64_t infl_counter;     /* the order of the next head taken */
	uint16_t infl_base;        /* last_avail_idx at the last flush */
	/* The queue's public statistics: the ring counts chains, used entries, drops and
	 * notifications; the net layer counts packets, bytes and copies in the same block. */
	struct vl_vq_stats stats;
};

/* Latch-free helpers shared by the layouts. Inline: one shadow used element per chain,
 * three stores. */
static inline void vl_ring_shadow_push(struct vl_ring *rq, const struct vl_chain *c,
				       uint32_t len)
{
	struct vl_used_elem *e = &rq->shadow[rq->shadow_count++];

	e->id = c->id;
	e->ndescs = c->ndescs;
	e->len = len;
}

/* Control path of the ring queue (ring/ring_queue.c). */

/* The embedder's configuration is one a ring can be made of: VL_OK or the vl_err code. */
int vl_ring_check_config(const struct vl_vq_config *cfg);
/* Make rq a queue over mem as cfg says (a configuration vl_ring_check_config accepted, which
 * the caller checks before it allocates anything): scratch allocated, ring areas translated (each
 * aligned and in one host mapping), positions resumed, the kick wish published. VL_OK, or a
 * vl_err code with nothing left allocated. */
int vl_ring_init(struct vl_ring *rq, const struct vl_mem *mem, const struct vl_vq_config *cfg);
/* Free what vl_ring_init allocated (rq is zeroed; a zeroed rq is fine). */
void vl_ring_fini(struct vl_ring *rq);
/* Translate the ring areas in a new memory table; on error rq keeps the old one. */
int vl_ring_set_mem(struct vl_ring *rq, const struct vl_mem *mem);
/* Positions in vhost-user's GET_VRING_BASE encoding (vl_vq_last_avail, vl_vq_last_used). */
uint16_t vl_ring_last_avail(const struct vl_ring *rq);
uint16_t vl_ring_last_used(const struct vl_ring *rq);
void vl_ring_set_dirty_log(struct vl_ring *rq, uint8_t *bitmap, uint64_t bytes);
/* Store the device's wish for kicks (vl_vq_set_kicks says what the caller must do next). */
void vl_ring_set_kicks(struct vl_ring *rq, bool want);

/* Latch the queue as broken (a guest offence at queue level). Cold: never in a healthy run. */
void vl_ring_break(struct vl_ring *rq, enum vl_drop reason) __attribute__((cold));

/* Append the translated pieces of guest range [addr, addr+len) to pieces[*np..cap), adding
 * len to *total. Fails (returning the reason, pieces possibly partly appended) when a byte is
 * unmapped, the total would pass UINT32_MAX, or cap pieces are not enough. */
enum vl_drop vl_chain_add_range(const struct vl_mem *mem, uint64_t addr, uint32_t len,
				unsigned access, struct vl_piece *pieces, uint32_t cap,
				uint32_t *np, uint32_t *total);

/* What the device does with a chain's buffers, as the memory door's access kind. */
static inline unsigned vl_dir_access(enum vl_dir dir)
{
	return dir == VL_DIR_DEVICE_WRITES ? VL_ACCESS_WRITE : VL_ACCESS_READ;
}

/* One buffer descriptor of a chain, either layout: its direction must match the chain's (TX
 * buffers device-readable, RX buffers device-writable), then its bytes become pieces
 * (zero-length descriptors add nothing). Forced inline into both walks: it runs per
 * descriptor and its direction test folds with the caller's constant dir. */
/* forced: split 1518 B 2-piece dequeue 603.78 -> 618.72 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE enum vl_drop vl_chain_add_desc(struct vl_ring *rq, uint64_t addr,
						       uint32_t len, uint16_t flags,
						       enum vl_dir dir, uint32_t *np,
						       uint32_t *total)
{
	if (((flags & VL_DESC_F_WRITE) != 0) != (dir == VL_DIR_DEVICE_WRITES))
		return VL_DROP_DIRECTION;
	if (len == 0)
		return VL_DROP_NONE;
	/* The usual case inline: the whole buffer inside one memory region. Everything else
	 * (a straddle, an unmapped byte, a full piece array, a total past 32 bits) takes
	 * vl_chain_add_range, which starts over and names the failure. */
	if (*np < VL_CHAIN_MAX_PIECES && len <= UINT32_MAX - *total) {
		uint8_t *host = vl_mem_cursor_whole(&rq->cur, addr, len, vl_dir_access(dir));

		if (host != NULL) {
			struct vl_piece *pc = &rq->pieces[(*np)++];

			pc->host = host;
			pc->len = len;
			pc->gpa = addr;
			*total += len;
			return VL_DROP_NONE;
		}
	}
	/* The general walk gets copies of the counters: were the caller's own addresses passed
	 * out of line, they would escape, and the caller (a net body, where np and total are
	 * locals) would keep them in memory on the usual path too. (Callgrind, copies at every
	 * out-of-line walk: packed 64 B dequeue 247.8 -> 233.9 instructions a packet, split
	 * 64 B 219.0 -> 213.1.) */
	uint32_t n = *np, t = *total;
	const enum vl_drop why = vl_chain_add_range(rq->cur.mem, addr, len, vl_dir_access(dir),
						    rq->pieces, VL_CHAIN_MAX_PIECES, &n, &t);

	*np = n;
	*total = t;
	return why;
}

/* The table of an indirect descriptor that straddles host mappings, copied into
 * rq->indirect_copy (*table then points there). VL_DROP_UNMAPPED when a byte is in no region. */
enum vl_drop vl_chain_copy_indirect(struct vl_ring *rq, uint64_t addr, uint32_t len,
				    const uint8_t **table);

/* Validate an indirect descriptor (addr, len) and make its table readable: *table points at
 * the table in place when it lies in one host mapping, else at a copy in rq->indirect_copy;
 * *entries = len / 16. Both layouts use 16-byte table entries. Entries may sit at any
 * alignment: read them with vl_guest_load_bytes. Inline: once per indirect chain, a few
 * compares and a translation from the queue's last range. */
static inline enum vl_drop vl_chain_map_indirect(struct vl_ring *rq, uint64_t addr,
						 uint32_t len, const uint8_t **table,
						 uint32_t *entries)
{
	if (!rq->indirect_ok)
		return VL_DROP_INDIRECT_NOT_NEGOTIATED;
	/* A table of more than queue-size entries cannot describe a legal chain (spec: chains
	 * are never longer than the queue size); bounding it also bounds the copy-out buffer. */
	if (len == 0 || len % 16u != 0 || len / 16u > rq->size)
		return VL_DROP_INDIRECT_LEN;

	uint64_t got = len;
	/* Tables come from the memory the buffers do: start at the queue's last range. */
	const uint8_t *host = vl_mem_cursor_xlate(&rq->cur, addr, &got, VL_ACCESS_READ);

	if (host == NULL)
		return VL_DROP_UNMAPPED;
	*entries = len / 16u;
	if (got < len)
		return vl_chain_copy_indirect(rq, addr, len, table);
	*table = host;
	return VL_DROP_NONE;
}

#endif

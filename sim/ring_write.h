/* SPDX-License-Identifier: MIT */
/* The one place the lab writes guest-side ring structures: descriptors, avail entries and
 * index, packed chains and flags, event suppression areas and indirect tables, in the order
 * and with the barriers a driver uses (plain stores for what is not yet visible, a release
 * store for what publishes it: split avail->idx, a packed descriptor's flags, the head's
 * last). Every guest ring driver of the lab writes through it: the scenario runner's
 * (vring_split.c, vring_packed.c, net_driver.c), the hostile shapes (hostile.c), the trace
 * replayer (trace/replay_guest.c) and the fuzz targets.
 *
 * It works on guest-view pointers, not on a memory model: the caller found the areas
 * (lab_gmem, the replayer's lab_tmem, a fuzz target's buffer). Plain fields are stored with
 * memcpy, so a table may sit at any byte (a fuzzer's); the fields a release store publishes
 * must be 2-byte aligned, as the spec requires of the rings (2.7, 2.8). Nothing here checks
 * an index or keeps state: what to write, and whether it is well formed, is the caller's
 * (a hostile caller writes what a malicious driver would). */
#ifndef LAB_RING_WRITE_H
#define LAB_RING_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "vhostlab/vl_virtio.h"

/* One element of a chain or table: flags may hold VL_DESC_F_WRITE or VL_DESC_F_INDIRECT;
 * NEXT (and, packed, AVAIL/USED) are added by the writer. */
struct lab_pdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
};

/* ---- split rings (spec 2.7) ------------------------------------------------------------ */

/* Descriptor idx of a descriptor table, or entry idx of an indirect table (same format,
 * 2.7.5.3), exactly as given: plain stores; the avail index publishes it. */
void lab_rw_split_desc(void *table, uint32_t idx, uint64_t addr, uint32_t len, uint16_t flags,
		       uint16_t next);
/* A chain of n elements at table indices idx[0..n-1] (NULL: 0..n-1, an indirect table's
 * order): NEXT and next = idx[i+1] on all but the last, whose next is 0 (2.7.5). */
void lab_rw_split_chain(void *table, const uint16_t *idx, const struct lab_pdesc *elems,
			uint32_t n);
/* head into avail->ring[at % size], at being the driver's avail index for it; plain store:
 * the device may not read it before the index publishes it (2.7.13.2). size: a power of 2. */
void lab_rw_split_avail(struct vl_split_avail *avail, uint32_t size, uint16_t at, uint16_t head);
/* avail->idx = idx with a release store: the ring entries and descriptors before it are
 * visible first (2.7.13.3.1: a suitable memory barrier before the idx update). Any value:
 * hostile cases publish more than was written. */
void lab_rw_split_publish(struct vl_split_avail *avail, uint16_t idx);
/* avail->flags (VL_AVAIL_F_NO_INTERRUPT or 0; 2.7.7), relaxed: the caller fences before it
 * looks at the used ring again. */
void lab_rw_split_avail_flags(struct vl_split_avail *avail, uint16_t flags);
/* used_event, after avail->ring[size] (2.7.7.2, VIRTIO_F_EVENT_IDX), sequentially
 * consistent: the driver's next read of used->idx must not pass it. */
void lab_rw_split_used_event(struct vl_split_avail *avail, uint32_t size, uint16_t at);
/* used->idx at ring setup only (a device that consumed everything before idx left it so);
 * no driver writes the used ring. */
void lab_rw_split_used_idx(struct vl_split_used *used, uint16_t idx);

/* ---- packed rings (spec 2.8) ----------------------------------------------------------- */

/* What a driver writes where the device must ignore a buffer id (every descriptor of a
 * chain but the last, the entries of an indirect table, 2.8.6 / 2.8.7): never id, derived
 * from id and the ring position (or table index) pos. */
uint16_t lab_pring_junk_id(uint16_t id, uint16_t pos);

/* AVAIL/USED of an available descriptor for driver wrap counter `wrap` (2.8.1). */
static inline uint16_t lab_pring_avail_flags(bool wrap)
{
	return (uint16_t)(wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED);
}

/* Address, length and id of the descriptor at ring position pos, plain stores; its flags
 * stay as they were (lab_rw_packed_flags makes it available). */
void lab_rw_packed_body(struct vl_packed_desc *ring, uint16_t pos, uint64_t addr, uint32_t len,
			uint16_t id);
/* Flags of the descriptor at pos, release store: everything written before is visible
 * before it (2.8.21.2.1: a suitable memory barrier before the flags update). */
void lab_rw_packed_flags(struct vl_packed_desc *ring, uint16_t pos, uint16_t flags);
/* One raw descriptor: body, then flags exactly as given (a release store). */
void lab_rw_packed_desc(struct vl_packed_desc *ring, uint16_t pos, uint64_t addr, uint32_t len,
			uint16_t id, uint16_t flags);
/* A chain of n elements (1 <= n <= size) at consecutive positions from (*pos, *wrap), moved
 * past it (across the ring's end, flipping *wrap): AVAIL/USED for the wrap counter in force
 * at each position, NEXT on all but the last, the buffer id in the last descriptor and
 * lab_pring_junk_id in the others (2.8.6); the head's flags stored last, so the device
 * never sees part of a chain (2.8.21.1.1). */
void lab_rw_packed_chain(struct vl_packed_desc *ring, uint32_t size, uint16_t *pos, bool *wrap,
			 uint16_t id, const struct lab_pdesc *elems, uint32_t n);
/* The driver event suppression area (2.8.10): off_wrap (relaxed) when flags is
 * VL_RING_EVENT_DESC, then flags, sequentially consistent (the driver reads the used ring
 * again after it). */
void lab_rw_packed_event(struct vl_packed_event *ev, uint16_t flags, uint16_t off_wrap);

/* ---- indirect tables (2.7.5.3, 2.8.7) -------------------------------------------------- */

/* Entry i of a packed-format table exactly as given, plain stores (any alignment). */
void lab_rw_packed_entry(void *table, uint32_t i, uint64_t addr, uint32_t len, uint16_t id,
			 uint16_t flags);
/* n entries at table in the layout's format, plain stores (the descriptor naming the table
 * publishes it). Split: a chain over 0..n-1 (lab_rw_split_chain with idx NULL). Packed:
 * consecutive (2.8.7), ids junk (lab_pring_junk_id(0, i)), flags as given plus junk in the
 * bits a table entry does not use (lab_pring_table_junk_flags: NEXT, AVAIL, USED). */
uint16_t lab_pring_table_junk_flags(uint32_t i);
void lab_rw_split_table(void *table, const struct lab_pdesc *elems, uint32_t n);
void lab_rw_packed_table(void *table, const struct lab_pdesc *elems, uint32_t n);

#endif

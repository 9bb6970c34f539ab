/* SPDX-License-Identifier: MIT */
/* Guest-side ring writes for every lab driver: see ring_write.h. */
#include "ring_write.h"

#include <stddef.h>
#include <string.h>

/* Both descriptor formats are 16 bytes: address, length, then two 16-bit fields (split:
 * flags, next; packed: id, flags). */
#define DESC_BYTES 16u

static uint8_t *entry(void *table, uint32_t i)
{
	return (uint8_t *)table + (size_t)DESC_BYTES * i;
}

static void put_addr_len(uint8_t *at, uint64_t addr, uint32_t len)
{
	memcpy(at + offsetof(struct vl_split_desc, addr), &addr, sizeof(addr));
	memcpy(at + offsetof(struct vl_split_desc, len), &len, sizeof(len));
}

static void put16(uint8_t *at, uint16_t v)
{
	memcpy(at, &v, sizeof(v));
}

/* ---- split ----------------------------------------------------------------------------- */

void lab_rw_split_desc(void *table, uint32_t idx, uint64_t addr, uint32_t len, uint16_t flags,
		       uint16_t next)
{
	uint8_t *at = entry(table, idx);

	put_addr_len(at, addr, len);
	put16(at + offsetof(struct vl_split_desc, flags), flags);
	put16(at + offsetof(struct vl_split_desc, next), next);
}

void lab_rw_split_chain(void *table, const uint16_t *idx, const struct lab_pdesc *elems,
			uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		bool more = i + 1 < n;
		uint16_t next = more ? (idx ? idx[i + 1] : (uint16_t)(i + 1)) : 0;

		lab_rw_split_desc(table, idx ? idx[i] : i, elems[i].addr, elems[i].len,
				  (uint16_t)(elems[i].flags | (more ? VL_DESC_F_NEXT : 0)), next);
	}
}

void lab_rw_split_table(void *table, const struct lab_pdesc *elems, uint32_t n)
{
	lab_rw_split_chain(table, NULL, elems, n);
}

void lab_rw_split_avail(struct vl_split_avail *avail, uint32_t size, uint16_t at, uint16_t head)
{
	put16((uint8_t *)avail + offsetof(struct vl_split_avail, ring) + 2u * (at % size), head);
}

void lab_rw_split_publish(struct vl_split_avail *avail, uint16_t idx)
{
	__atomic_store_n(&avail->idx, idx, __ATOMIC_RELEASE);
}

void lab_rw_split_avail_flags(struct vl_split_avail *avail, uint16_t flags)
{
	__atomic_store_n(&avail->flags, flags, __ATOMIC_RELAXED);
}

void lab_rw_split_used_event(struct vl_split_avail *avail, uint32_t size, uint16_t at)
{
	__atomic_store_n(&avail->ring[size], at, __ATOMIC_SEQ_CST);
}

void lab_rw_split_used_idx(struct vl_split_used *used, uint16_t idx)
{
	__atomic_store_n(&used->idx, idx, __ATOMIC_RELEASE);
}

/* ---- packed ---------------------------------------------------------------------------- */

uint16_t lab_pring_junk_id(uint16_t id, uint16_t pos)
{
	/* Deterministic (no draw from a generator: workloads stay what they were), spread over
	 * all 16 bits, so it is often out of range and otherwise another chain's id. */
	uint16_t junk = (uint16_t)((pos + 1u) * 40503u ^ 0xA5C3u ^ id);

	return junk == id ? (uint16_t)~id : junk;
}

void lab_rw_packed_body(struct vl_packed_desc *ring, uint16_t pos, uint64_t addr, uint32_t len,
			uint16_t id)
{
	uint8_t *at = entry(ring, pos);

	put_addr_len(at, addr, len);
	put16(at + offsetof(struct vl_packed_desc, id), id);
}

void lab_rw_packed_flags(struct vl_packed_desc *ring, uint16_t pos, uint16_t flags)
{
	__atomic_store_n(&ring[pos].flags, flags, __ATOMIC_RELEASE);
}

void lab_rw_packed_desc(struct vl_packed_desc *ring, uint16_t pos, uint64_t addr, uint32_t len,
			uint16_t id, uint16_t flags)
{
	lab_rw_packed_body(ring, pos, addr, len, id);
	lab_rw_packed_flags(ring, pos, flags);
}

void lab_rw_packed_chain(struct vl_packed_desc *ring, uint32_t size, uint16_t *pos, bool *wrap,
			 uint16_t id, const struct lab_pdesc *elems, uint32_t n)
{
	uint16_t head = *pos, head_flags = 0;

	for (uint32_t i = 0; i < n; i++) {
		bool more = i + 1 < n;
		uint16_t flags = (uint16_t)(elems[i].flags | lab_pring_avail_flags(*wrap) |
					    (more ? VL_DESC_F_NEXT : 0));

		/* The buffer id belongs in the last descriptor (2.8.6); the device must ignore it
		 * elsewhere, so the others carry junk a device reading the wrong one would
		 * return (never the real id). */
		lab_rw_packed_body(ring, *pos, elems[i].addr, elems[i].len,
				   more ? lab_pring_junk_id(id, *pos) : id);
		if (i == 0)
			head_flags = flags;
		else
			lab_rw_packed_flags(ring, *pos, flags);
		if (++*pos == size) {
			*pos = 0;
			*wrap = !*wrap;
		}
	}
	/* The head last: the device must never see a partial chain (2.8.21.1.1). */
	if (n)
		lab_rw_packed_flags(ring, head, head_flags);
}

void lab_rw_packed_event(struct vl_packed_event *ev, uint16_t flags, uint16_t off_wrap)
{
	if (flags == VL_RING_EVENT_DESC)
		__atomic_store_n(&ev->off_wrap, off_wrap, __ATOMIC_RELAXED);
	__atomic_store_n(&ev->flags, flags, __ATOMIC_SEQ_CST);
}

/* ---- indirect tables ------------------------------------------------------------------- */

void lab_rw_packed_entry(void *table, uint32_t i, uint64_t addr, uint32_t len, uint16_t id,
			 uint16_t flags)
{
	uint8_t *at = entry(table, i);

	put_addr_len(at, addr, len);
	put16(at + offsetof(struct vl_packed_desc, id), id);
	put16(at + offsetof(struct vl_packed_desc, flags), flags);
}

uint16_t lab_pring_table_junk_flags(uint32_t i)
{
	/* Entries of a packed table are consecutive, not linked (NEXT means nothing there) and
	 * never made available or used one by one (AVAIL, USED): only WRITE and INDIRECT are
	 * read. A driver may leave anything in the others; derived from i, not drawn. */
	return (uint16_t)(((i & 1) ? VL_DESC_F_NEXT : 0) | ((i & 2) ? VL_PDESC_F_AVAIL : 0) |
			  ((i & 4) ? VL_PDESC_F_USED : 0));
}

void lab_rw_packed_table(void *table, const struct lab_pdesc *elems, uint32_t n)
{
	/* The device ignores a table entry's id (2.8.7) and its unused flags: junk. */
	for (uint32_t i = 0; i < n; i++)
		lab_rw_packed_entry(table, i, elems[i].addr, elems[i].len,
				    lab_pring_junk_id(0, (uint16_t)i),
				    (uint16_t)(elems[i].flags | lab_pring_table_junk_flags(i)));
}

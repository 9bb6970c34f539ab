/* SPDX-License-Identifier: MIT */
/* The guest side of a packed virtqueue (spec 2.8), written as a driver writes it: chains go
 * into consecutive descriptors, the buffer id into the last one, the head's flags last after
 * a write barrier; used descriptors are read at the next position and the driver skips as
 * many descriptors as the buffer occupied. Low-level on purpose, like vring_split.h: hostile
 * tests write raw descriptors with lab_pring_write_raw. The ring bytes are written by
 * ring_write.h; this file keeps the driver's state (positions, ids, chains in flight). */
#ifndef LAB_VRING_PACKED_H
#define LAB_VRING_PACKED_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "ring_write.h"
#include "vhostlab/vl_virtio.h"

struct lab_pring {
	struct lab_gmem *gmem;
	uint32_t size;
	bool in_order;                 /* VIRTIO_F_IN_ORDER: the device may batch used ids */
	uint64_t desc_gpa, driver_gpa, device_gpa;
	struct vl_packed_desc *desc;   /* guest view */
	struct vl_packed_event *driver_event; /* written by us */
	struct vl_packed_event *device_event; /* written by the device */
	uint16_t next_avail;
	bool avail_wrap;
	uint16_t next_used;
	bool used_wrap;
	uint32_t free_descs;           /* ring slots not held by in-flight chains */
	uint16_t *free_ids;            /* [size] stack of free buffer ids */
	uint32_t nfree_ids;
	uint16_t *id_ndescs;           /* [size] descriptors of the chain posted under an id */
	bool *id_busy;                 /* [size] */
	uint16_t *order;               /* [size] ids in flight, in posting order */
	uint32_t order_head, order_count;
	int32_t batch_last;            /* in-order batch being expanded: its last id, or -1 */
};

/* Bytes of ring area for a queue of `size` (descriptor ring, then one page holding both
 * event suppression structures). */
uint64_t lab_pring_area_bytes(uint32_t size);

/* Lay out the ring at ring_gpa (page-aligned); start both driver positions at start_pos with
 * wrap counter start_wrap (the spec starts at 0 / 1; the lab starts near the end of the ring
 * so wrap counters flip early). */
int lab_pring_init(struct lab_pring *pr, struct lab_gmem *g, uint64_t ring_gpa, uint32_t size,
		   uint16_t start_pos, bool start_wrap, bool in_order);
void lab_pring_fini(struct lab_pring *pr);

/* Post a chain of n elements (n <= size; written by lab_rw_packed_chain). Returns the buffer
 * id, or -1 when no id or too few free descriptors are left. The chain is visible to the
 * device on return. */
int lab_pring_post(struct lab_pring *pr, const struct lab_pdesc *elems, uint32_t n);

/* Write one raw descriptor, flags exactly as given (hostile cases; lab_rw_packed_desc).
 * Does not move next_avail. */
void lab_pring_write_raw(struct lab_pring *pr, uint16_t pos, uint64_t addr, uint32_t len,
			 uint16_t id, uint16_t flags);

/* Next used buffer, if the device published one: id and the length it wrote. Frees the id
 * and its descriptors. Under in-order, a used descriptor naming a later id stands for every
 * buffer posted before it too: those come out one by one with length 0. Returns false when
 * nothing is used; *bad is set (and false returned) when the device names an id that is not
 * in flight or, in order, not ahead of us. */
bool lab_pring_pop_used(struct lab_pring *pr, uint32_t *id, uint32_t *len, bool *bad);

#endif

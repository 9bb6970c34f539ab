/* SPDX-License-Identifier: MIT */
/* The guest side of a split virtqueue, written exactly as a driver would write it: the
 * descriptor table, available ring and used ring live in simulated guest RAM and are touched
 * only through the guest view. Low-level on purpose: hostile tests use these calls to write
 * any descriptor a malicious driver could; the net driver builds well-formed chains on top.
 * The ring bytes are written by ring_write.h; this file keeps the driver's state (indices,
 * free descriptors). */
#ifndef LAB_VRING_SPLIT_H
#define LAB_VRING_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "ring_write.h"
#include "vhostlab/vl_virtio.h"

struct lab_vring {
	struct lab_gmem *gmem;
	uint32_t size;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	struct vl_split_desc *desc;   /* guest view */
	struct vl_split_avail *avail;
	struct vl_split_used *used;
	uint16_t avail_idx;           /* driver's next avail index (published on kick) */
	uint16_t last_used;           /* next used entry the driver will read */
	uint16_t *free_stack;         /* free descriptor indices */
	uint32_t nfree;
};

/* Bytes of ring area a queue of `size` needs (each part page-aligned). */
uint64_t lab_vring_area_bytes(uint32_t size);

/* Lay out the rings at ring_gpa (page-aligned, lab_vring_area_bytes long, inside the ring
 * area), zero them, and start both indices at start_idx (to cross the 16-bit wrap early). */
int lab_vring_init(struct lab_vring *vr, struct lab_gmem *g, uint64_t ring_gpa, uint32_t size,
		   uint16_t start_idx);
void lab_vring_fini(struct lab_vring *vr);

/* Descriptor allocation from the driver's free list. Returns -1 when empty. */
int lab_vring_desc_get(struct lab_vring *vr);
void lab_vring_desc_put(struct lab_vring *vr, uint16_t idx);

void lab_vring_set_desc(struct lab_vring *vr, uint16_t idx, uint64_t addr, uint32_t len,
			uint16_t flags, uint16_t next);

/* Put head in the next avail slot; visible to the device after lab_vring_kick. */
void lab_vring_add_avail(struct lab_vring *vr, uint16_t head);
/* Publish avail_idx (store-release, as a driver's wmb + idx write). */
void lab_vring_kick(struct lab_vring *vr);
/* Write an arbitrary avail->idx (hostile cases). */
void lab_vring_force_avail_idx(struct lab_vring *vr, uint16_t idx);
/* avail->flags: VL_AVAIL_F_NO_INTERRUPT or 0. */
void lab_vring_set_avail_flags(struct lab_vring *vr, uint16_t flags);

/* Next used element if the device published one (load-acquire of used->idx). */
bool lab_vring_pop_used(struct lab_vring *vr, uint32_t *id, uint32_t *len);
/* Used entries published but not yet popped. */
uint16_t lab_vring_used_pending(const struct lab_vring *vr);

#endif

/* SPDX-License-Identifier: MIT */
/* Guest memory: the one door through which a guest-physical address becomes a host pointer. */
#ifndef VHOSTLAB_VL_MEM_H
#define VHOSTLAB_VL_MEM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on regions in one table. vhost-user front ends send at most a few hundred
 * (VHOST_USER_MAX_RAM_SLOTS is 509); the lab's 4 KiB granularity needs thousands. */
#define VL_MEM_MAX_REGIONS 65536u

/* One guest memory region as the embedder describes it. */
struct vl_mem_region {
	uint64_t gpa;         /* guest-physical address of the first byte */
	uint64_t size;        /* bytes; must be > 0 */
	uint64_t uaddr;       /* front-end virtual address (vhost-user ring addresses use it) */
	uint64_t mmap_offset; /* offset of gpa inside the mapped fd (bookkeeping for vhost-user) */
	void *host;           /* where the region's first byte is mapped in this process */
};

/* Access kinds for vl_mem_translate. The table itself has no per-region permissions (a
 * vhost-user memory table has none); the kind is passed so a write can be logged for live
 * migration and an IOTLB can check permissions without changing every caller. */
enum vl_access {
	VL_ACCESS_READ = 1,
	VL_ACCESS_WRITE = 2,
};

struct vl_mem;

/* Build a table from n regions (any order). The table keeps its own sorted copy; regions
 * adjacent in guest-physical space AND in host space are merged so translate treats them as
 * one. Rejects zero sizes, gpa/host ranges that wrap 2^64, overlaps and n > VL_MEM_MAX_REGIONS.
 * Returns NULL on failure and, if err is not NULL, stores a vl_err code there. */
struct vl_mem *vl_mem_create(const struct vl_mem_region *regions, uint32_t n, int *err);
void vl_mem_destroy(struct vl_mem *mem);

/* Number of regions after merging. */
uint32_t vl_mem_region_count(const struct vl_mem *mem);

/* The regions as given to vl_mem_create (not merged), in guest-physical order: how many,
 * and region i copied into *out (VL_ERR_INVALID_ARG for i out of range). For tools that describe
 * the table, e.g. to record a session as a trace. */
uint32_t vl_mem_table_size(const struct vl_mem *mem);
int vl_mem_table_region(const struct vl_mem *mem, uint32_t i, struct vl_mem_region *out);

/* Translate gpa for an access of *len bytes. Returns the host pointer of gpa and clamps *len
 * to the bytes that are contiguous in host memory from there (never more than asked).
 * Returns NULL and sets *len = 0 when gpa lies in no region. A request of *len == 0 returns
 * the host pointer if gpa is mapped (NULL otherwise) and leaves *len at 0. Never overflows,
 * whatever gpa and *len are. */
void *vl_mem_translate(const struct vl_mem *mem, uint64_t gpa, uint64_t *len, unsigned access);

/* Copy helpers that split at region boundaries. Return the number of bytes copied; a result
 * smaller than len means the range runs into unmapped space at gpa + result. */
uint64_t vl_mem_read(const struct vl_mem *mem, uint64_t gpa, void *dst, uint64_t len);
uint64_t vl_mem_write(const struct vl_mem *mem, uint64_t gpa, const void *src, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif

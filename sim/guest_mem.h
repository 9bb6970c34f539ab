/* SPDX-License-Identifier: MIT */
/* Simulated guest RAM for the lab.
 *
 * One memfd holds all guest bytes. It is mapped twice:
 *  - the guest view: one contiguous mapping the simulated driver reads and writes through
 *    (like a guest kernel, it never sees the host's scattering);
 *  - the host view: every region mapped separately at a scattered host address with
 *    inaccessible (PROT_NONE) guard pages around it. Only the host view is handed to the core
 *    (lab_gmem_regions), so any core access that runs past a region faults.
 *
 * Guest-physical layout:
 *   [ring area: one region, always coarse][hole of LAB_GMEM_HOLE_SIZE][RAM, cut into regions
 *   of `granularity` bytes (or LAB_GMEM_COARSE_REGIONS regions when granularity is 0)]
 *   [unmapped above]
 * Rings live in the ring area so they are contiguous in host memory, as the core requires;
 * buffers, headers and indirect tables live in RAM and straddle regions freely. */
#ifndef LAB_GUEST_MEM_H
#define LAB_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "vhostlab/vl_mem.h"

#define LAB_PAGE_SIZE 4096u
#define LAB_GMEM_RING_GPA 0x10000ull       /* first byte of the ring area */
#define LAB_GMEM_HOLE_SIZE 0x10000ull      /* unmapped gap between ring area and RAM */
#define LAB_GMEM_COARSE_REGIONS 4u          /* RAM regions when granularity is 0 */

struct lab_gmem_config {
	uint64_t ram_size;       /* RAM bytes (rounded up to a page); > 0 */
	uint64_t ring_area_size; /* ring area bytes (rounded up to a page); > 0 */
	uint64_t granularity;    /* RAM region size: 0 = coarse, else a multiple of 4096 */
	uint64_t seed;           /* drives host placement (scattering) */
};

struct lab_gmem;

/* Create guest RAM. On failure returns NULL and writes a message into err (if errlen > 0). */
struct lab_gmem *lab_gmem_create(const struct lab_gmem_config *cfg, char *err, size_t errlen);
void lab_gmem_destroy(struct lab_gmem *g);

/* The host-view region table to give to vl_mem_create. Valid until lab_gmem_destroy. */
const struct vl_mem_region *lab_gmem_regions(const struct lab_gmem *g, uint32_t *n);

/* The memfd holding every guest byte, for a front end that hands guest RAM to a back end in
 * another process (vhost-user SET_MEM_TABLE): each region of lab_gmem_regions lies at its
 * mmap_offset in this fd (lab_gmem_region_memfd_offset). Owned by g: callers that send it
 * keep it open until lab_gmem_destroy, and never close it. */
int lab_gmem_memfd(const struct lab_gmem *g);
/* Where region i of lab_gmem_regions starts inside the memfd (its mmap_offset); i must be
 * below the count lab_gmem_regions returned. */
uint64_t lab_gmem_region_memfd_offset(const struct lab_gmem *g, uint32_t i);

uint64_t lab_gmem_ring_gpa(const struct lab_gmem *g);   /* == LAB_GMEM_RING_GPA */
uint64_t lab_gmem_ring_size(const struct lab_gmem *g);
uint64_t lab_gmem_ram_gpa(const struct lab_gmem *g);    /* ring end + hole */
uint64_t lab_gmem_ram_size(const struct lab_gmem *g);
/* A guest-physical address inside the hole (mapped by no region), for hostile cases. */
uint64_t lab_gmem_hole_gpa(const struct lab_gmem *g);
/* First guest-physical address above all guest memory. */
uint64_t lab_gmem_end_gpa(const struct lab_gmem *g);

/* Guest view: pointer to gpa for len bytes, or NULL unless [gpa, gpa+len) lies entirely in
 * the ring area or entirely in RAM. */
void *lab_gmem_guest_ptr(const struct lab_gmem *g, uint64_t gpa, uint64_t len);

/* Allocator over RAM for the driver's buffers, indirect tables and headers (first fit over
 * 64-byte granules, next-fit cursor). Returns a gpa aligned to `align` (a power of two,
 * >= 1), or 0 when no room. lab_gmem_free takes the same gpa and len. */
uint64_t lab_gmem_alloc(struct lab_gmem *g, uint64_t len, uint64_t align);
void lab_gmem_free(struct lab_gmem *g, uint64_t gpa, uint64_t len);

/* Where lab_gmem_alloc_edge puts an allocation against a RAM region's edge. */
enum lab_gmem_edge {
	LAB_GMEM_REGION_START, /* its first byte is a region's first byte */
	LAB_GMEM_REGION_END,   /* its last granule ends where a region ends: for a len that is a
				* multiple of 64, its last byte is the region's last byte */
};

/* Like lab_gmem_alloc (64-byte aligned, freed with lab_gmem_free), but against an edge of a
 * RAM region of the host view, trying up to 8 regions from the one holding the allocator's
 * cursor on, so successive calls spread over regions. An allocation longer than a region
 * runs over into its neighbours (it still starts or ends on the edge). 0 when none of them
 * has room at that edge. */
uint64_t lab_gmem_alloc_edge(struct lab_gmem *g, uint64_t len, enum lab_gmem_edge edge);

/* How many regions of the host view [gpa, gpa+len) touches: the host pieces the core makes
 * of it. 0 for len 0; the range must lie in RAM. */
uint32_t lab_gmem_pieces(const struct lab_gmem *g, uint64_t gpa, uint64_t len);
uint64_t lab_gmem_bytes_allocated(const struct lab_gmem *g);
/* Back to what lab_gmem_create returned, layout and host placement kept: every allocation
 * dropped (the next ones land where a fresh one's would), every guest byte zero and the
 * snapshot zero. For callers that run many short inputs on one guest (the fuzz targets):
 * creating and mapping guest memory costs far more than the run. Only pages something has
 * filled are cleared, so the cost follows the memory the last user touched. */
void lab_gmem_reset(struct lab_gmem *g);
/* The first gpa in [gpa, gpa + len) whose byte is not zero, or gpa + len when all are; the
 * range must lie in RAM. Reads only pages something has filled (a hole is zero), so a check
 * that the unused part of RAM stayed untouched costs nothing where it was. */
uint64_t lab_gmem_find_nonzero(const struct lab_gmem *g, uint64_t gpa, uint64_t len);

/* Containment checks: snapshot every guest byte (ring area and RAM), later report each
 * maximal run of bytes that differ from the snapshot via cb. Returns the number of runs.
 * Pages nothing has touched yet (holes of the memfd, zero) are neither copied nor compared:
 * the cost follows the memory in use, not the memory's size. */
void lab_gmem_snapshot(struct lab_gmem *g);
size_t lab_gmem_diff(const struct lab_gmem *g,
		     void (*cb)(void *ctx, uint64_t gpa, uint64_t len), void *ctx);

#endif

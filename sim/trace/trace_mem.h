/* SPDX-License-Identifier: MIT */
/* Guest memory for trace replay, built from a trace's `region` statements: any number of
 * regions at any guest addresses (a real front end's memory table, or the lab's own layout).
 *
 * Like sim/guest_mem.h, one memfd holds every guest byte and is mapped twice: a guest view
 * (each region mapped on its own, for the replay engine's writes and checks) and a host view
 * in which every host piece (a region, or its `pieces=` cuts) sits at a shuffled address with
 * inaccessible guard pages around it. Only the host view is given to the core. */
#ifndef LAB_TRACE_MEM_H
#define LAB_TRACE_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"
#include "vhostlab/vl_mem.h"

struct lab_tmem;

/* Regions as validated by the parser (4 KiB multiples, no overlap). NULL with a message in
 * err on failure. */
struct lab_tmem *lab_tmem_create(const struct lab_trace_region *regions, uint32_t n,
				 uint64_t seed, char *err, size_t errlen);
void lab_tmem_destroy(struct lab_tmem *m);

/* The host-view table for vl_mem_create (one entry per host piece). */
const struct vl_mem_region *lab_tmem_regions(const struct lab_tmem *m, uint32_t *n);

/* The regions as a front end hands them to a back end over vhost-user (SET_MEM_TABLE): one
 * entry per trace region in gpa order, mmap_offset its offset in lab_tmem_fd's memfd, uaddr
 * = gpa (regions never overlap, so these "user addresses" are unique). The back end maps
 * the same memfd: what the guest view writes, it sees. */
const struct vl_mem_region *lab_tmem_guest_regions(const struct lab_tmem *m, uint32_t *n);
int lab_tmem_fd(const struct lab_tmem *m);

/* Guest view of [gpa, gpa+len), or NULL unless every byte lies in the regions (adjacent
 * regions join: they are side by side in the guest view). lab_gpa_ptr decides. */
void *lab_tmem_ptr(const struct lab_tmem *m, uint64_t gpa, uint64_t len);

/* Host-view pointer of a gpa (NULL if unmapped): where the core sees that byte. */
void *lab_tmem_host_ptr(const struct lab_tmem *m, uint64_t gpa);

#endif

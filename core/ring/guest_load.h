/* SPDX-License-Identifier: MIT */
/* Loads of guest-owned ring fields. Every read the core makes of memory the guest may change
 * concurrently goes through these helpers, so that:
 *  - each field is read exactly once into a local (the atomic load stops the compiler from
 *    re-reading shared memory instead of keeping the local: the double-fetch class);
 *  - a lab build can later instrument them (double-fetch detection, mutation between reads)
 *    while production compiles them to plain moves. */
#ifndef VL_GUEST_LOAD_H
#define VL_GUEST_LOAD_H

#include <stdint.h>
#include <string.h>

#include "vhostlab/vl_virtio.h"

/* Load-acquire: the index that makes entries available must be read before the entries. */
static inline uint16_t vl_guest_load16_acquire(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint16_t vl_guest_load16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* One descriptor of the (16-byte aligned) ring descriptor table, each field read once. */
static inline void vl_guest_load_split_desc(struct vl_split_desc *out,
					    const struct vl_split_desc *in)
{
	out->addr = __atomic_load_n(&in->addr, __ATOMIC_RELAXED);
	out->len = __atomic_load_n(&in->len, __ATOMIC_RELAXED);
	out->flags = __atomic_load_n(&in->flags, __ATOMIC_RELAXED);
	out->next = __atomic_load_n(&in->next, __ATOMIC_RELAXED);
}

/* Guest bytes of arbitrary alignment (indirect table entries, virtio-net headers) copied into
 * host memory. The compiler barrier makes the copy happen here, so later uses read the local
 * and never go back to guest memory. */
static inline void vl_guest_load_bytes(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	__asm__ __volatile__("" ::: "memory");
}

#endif

/* SPDX-License-Identifier: MIT */
/* Loads of guest-owned ring fields. Every read the core makes of memory the guest may change
 * concurrently goes through these helpers, so that:
 *  - each field is read exactly once into a local (the atomic load stops the compiler from
 *    re-reading shared memory instead of keeping the local: the double-fetch class);
 *  - a lab build instruments them (double-fetch detection, mutation between reads) while
 *    production compiles them to plain moves.
 *
 * Lab hooks (the lab build of the core, VL_LAB_BUILD; see core/lab/vl_lab_hooks.h): every
 * helper reports the bytes it read (vl_lab_guest_load) after reading them, and the net layer
 * marks its units of work (vl_lab_burst_begin/end, vl_lab_chain_begin/end). Without the
 * switch these are function-like macros expanding to nothing: production code is unchanged. */
#ifndef VL_GUEST_LOAD_H
#define VL_GUEST_LOAD_H

#include <stdint.h>
#include <string.h>

#include "vhostlab/vl_virtio.h"

#ifdef VL_LAB_BUILD
#include "lab/vl_lab_hooks.h"
#else
#define vl_lab_guest_load(addr, len) ((void)0)
#define vl_lab_chain_begin() ((void)0)
#define vl_lab_chain_end() ((void)0)
#define vl_lab_burst_begin() ((void)0)
#define vl_lab_burst_end() ((void)0)
#endif

/* Every helper below is inline: each is one load (a plain move on x86) issued per ring field,
 * per descriptor; a call would cost more than the body, and the caller's surrounding loads
 * could no longer be scheduled around it. None is forced (compiler.h): gcc 12 -O2 inlines
 * them all unforced; forcing saved no instruction in any perf gate cell (inline_cost.py). */

/* Load-acquire: the index that makes entries available must be read before the entries. */
static inline uint16_t vl_guest_load16_acquire(const uint16_t *p)
{
	uint16_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);

	vl_lab_guest_load(p, sizeof(v));
	return v;
}

static inline uint16_t vl_guest_load16(const uint16_t *p)
{
	uint16_t v = __atomic_load_n(p, __ATOMIC_RELAXED);

	vl_lab_guest_load(p, sizeof(v));
	return v;
}

static inline uint32_t vl_guest_load32(const uint32_t *p)
{
	uint32_t v = __atomic_load_n(p, __ATOMIC_RELAXED);

	vl_lab_guest_load(p, sizeof(v));
	return v;
}

static inline uint64_t vl_guest_load64(const uint64_t *p)
{
	uint64_t v = __atomic_load_n(p, __ATOMIC_RELAXED);

	vl_lab_guest_load(p, sizeof(v));
	return v;
}

/* A peek: a guest field read only to steer a prefetch, never to decide anything, so it is
 * not one of the chain's reads the lab counts (vl_lab_guest_load) -- fetch reads the same field
 * again, once, as ever. */
static inline uint16_t vl_guest_peek16(const uint16_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline uint32_t vl_guest_peek32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline uint64_t vl_guest_peek64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* The packed event suppression structure (driver area) as one 32-bit snapshot, so offset,
 * wrap and flags come from the same guest write: off_wrap in the low half, flags in the
 * high half (little-endian, like every virtio 1.x field). The area is 4-byte aligned. */
typedef uint32_t __attribute__((may_alias)) vl_guest_u32_alias;

static inline uint32_t vl_guest_load_event(const struct vl_packed_event *e)
{
	const vl_guest_u32_alias *p = (const vl_guest_u32_alias *)(const void *)e;
	uint32_t v = __atomic_load_n(p, __ATOMIC_RELAXED);

	vl_lab_guest_load(e, sizeof(v));
	return v;
}

/* One descriptor of the (16-byte aligned) ring descriptor table, each field read once. */
static inline void vl_guest_load_split_desc(struct vl_split_desc *out,
					    const struct vl_split_desc *in)
{
	out->addr = __atomic_load_n(&in->addr, __ATOMIC_RELAXED);
	vl_lab_guest_load(&in->addr, sizeof(in->addr));
	out->len = __atomic_load_n(&in->len, __ATOMIC_RELAXED);
	vl_lab_guest_load(&in->len, sizeof(in->len));
	out->flags = __atomic_load_n(&in->flags, __ATOMIC_RELAXED);
	vl_lab_guest_load(&in->flags, sizeof(in->flags));
	out->next = __atomic_load_n(&in->next, __ATOMIC_RELAXED);
	vl_lab_guest_load(&in->next, sizeof(in->next));
}

/* Guest bytes of arbitrary alignment (indirect table entries, virtio-net headers) copied into
 * host memory. The compiler barrier makes the copy happen here, so later uses read the local
 * and never go back to guest memory. */
static inline void vl_guest_load_bytes(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	__asm__ __volatile__("" ::: "memory");
	vl_lab_guest_load(src, n);
}

#endif

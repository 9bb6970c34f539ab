/* SPDX-License-Identifier: MIT */
/* Evict-after-read (docs/architecture.md): the instruction, and whether this
 * CPU has it. The policy of when to use it is vl_evict_tuner (evict_tuner.c). */
#ifndef VL_NET_EVICT_H
#define VL_NET_EVICT_H

#include <stdbool.h>

#include "compiler.h"

/* Whether vl_evict_line does anything here: an x86 CPU that reports CLFLUSHOPT (CPUID leaf 7,
 * EBX bit 23). Plain CLFLUSH would do the same, but each one waits for the last: a burst of
 * them would serialise the very copies they follow. */
bool vl_cpu_can_evict(void);

/* Write back (if dirty anywhere) and drop from every cache the line holding p. CLFLUSHOPT is
 * ordered only against writes to the same line and fences, so a burst's evictions overlap;
 * the "memory" clobber keeps the compiler from hoisting it above the copy that read the line.
 * Only reached once vl_vq_set_evict_reads found the instruction (elsewhere a no-op). */
/* forced: split 1518 B 2-piece dequeue 603.78 -> 606.94 instr/pkt without it (2026-12-07) */
static VL_ALWAYS_INLINE void vl_evict_line(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("clflushopt %0" : : "m"(*(const volatile char *)p) : "memory");
#else
	(void)p;
#endif
}

#endif

/* SPDX-License-Identifier: MIT */
/* Compiler attributes of the core's hot path (technique 5 of docs/architecture.md).
 *
 * VL_ALWAYS_INLINE marks the per-packet and per-descriptor helpers whose inlining the
 * datapath's design depends on, written `static VL_ALWAYS_INLINE type f(...)`. By default it
 * forces inlining; the CMake option VL_FORCE_INLINE=OFF (compile definition
 * VL_NO_FORCE_INLINE) turns it into a plain `inline`, leaving every decision to the compiler's
 * heuristics -- the "no forced inline" build variant the seed-claims report measures.
 *
 * Why force at all: gcc 12 and clang 14 at -O2 both decline to inline dequeue_body and
 * enqueue_body into their per-layout wrappers (too large for their single-call budgets) and
 * instead keep ONE out-of-line body taking the ring layout as a run-time argument, so every
 * `L == VL_LAYOUT_SPLIT` test in ring/ring.h runs per chain instead of folding away. Small
 * helpers (guest loads, translation, copy queueing) are inlined by the heuristics today, but
 * only while their callers stay under the budgets, and a forced one can cost instructions
 * (it changes the caller's register allocation and layout too).
 *
 * The rule: every VL_ALWAYS_INLINE has a one-line `forced:` comment just above it saying what
 * it buys, measured: the perf gate cell (scripts/perf_gate.py) whose count rises most when
 * that one site is made a plain `static inline`, in instructions per packet with -> without
 * (callgrind, gcc 12 -O2 Release build, and the date). A helper whose forcing lowers no gate
 * cell is a plain `static inline`. Re-measure: scripts/inline_cost.py [FUNCTION ...]. */
#ifndef VL_COMPILER_H
#define VL_COMPILER_H

#ifdef VL_NO_FORCE_INLINE
#define VL_ALWAYS_INLINE inline
#else
#define VL_ALWAYS_INLINE inline __attribute__((always_inline))
#endif

/* The opposite, for a slow path inside a forced-inline body: kept out of line so its code does
 * not crowd the usual case's registers and layout. */
#define VL_NOINLINE __attribute__((noinline))

/* Ask for the cache line at p with intent to write: the line is fetched (from another core's
 * cache, usually: guest buffers were last touched by the driver) while the CPU goes on, so the
 * store that follows does not wait for it. x86 PREFETCHW, a no-op hint on CPUs without it. */
#if defined(__x86_64__) || defined(__i386__)
#define VL_PREFETCH_W(p) __asm__ volatile("prefetchw %0" : : "m"(*(const char *)(p)))
#else
#define VL_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)
#endif

/* Ask for the cache line at p to read: a shared copy, so the core that holds it keeps its
 * own (a receive header we expect to find already right, see rx_store_hdrs). */
#define VL_PREFETCH_R(p) __builtin_prefetch((p), 0, 3)

#endif

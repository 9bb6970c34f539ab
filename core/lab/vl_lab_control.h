/* SPDX-License-Identifier: MIT */
/* LAB ONLY: the one entry point to the lab's controls over the core (fault injection and
 * allocation accounting), in the spirit of SQLite's sqlite3_test_control. Not part of the
 * production API: this header is not installed, and vl_lab_control exists only in the lab
 * build of the core (CMake target vhostlab_lab_core, compiled with VL_LAB_BUILD), which the
 * simulated guest, the fuzzers, the unit tests and the `vhostlab` program link. The
 * production library (libvhostlab) has neither the function nor the state behind it: its
 * allocator and its pools carry no countdown and no hook (core/alloc.c, core/pkt/pool.c).
 *
 * One entry point, one argument struct: each op reads the fields it names below and ignores
 * the rest, so a call reads as what it does, e.g.
 *
 *     vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &(struct vl_lab_arg){.pool = p, .count = 0});
 *
 * A struct rather than varargs: the countdowns are 64-bit, and a caller passing a plain int
 * through `...` would be read back as garbage without a word from the compiler.
 *
 * Process-wide state (the allocator countdown) is not thread-safe: for tests only. */
#ifndef VL_LAB_CONTROL_H
#define VL_LAB_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#include "vhostlab/vl_error.h"
#include "vhostlab/vl_pkt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A countdown that never runs out: every call succeeds (the default). */
#define VL_LAB_NEVER UINT64_MAX

enum vl_lab_op {
	/* The core's control-path allocations (vl_mem_create, vl_vq_create, vl_pool_create,
	 * the vhost-user device...): the next `count` succeed, every later one fails (the core
	 * reports VL_ERR_NOMEM or NULL), until set again; count = VL_LAB_NEVER turns it off. */
	VL_LAB_ALLOC_FAIL_AFTER,
	/* Sets `count` to the core allocations attempted since the process started
	 * (successful or not). */
	VL_LAB_ALLOC_COUNT,
	/* Pool `pool`: the next `count` allocation calls succeed, then every call fails
	 * (allocating nothing) until set again; count = VL_LAB_NEVER turns it off. */
	VL_LAB_POOL_FAIL_AFTER,
	/* Pool `pool`: every allocation call first asks fail(ctx) and fails (allocating
	 * nothing) when it returns true; fail = NULL removes the hook. Checked before the
	 * countdown, which a refused call does not consume. */
	VL_LAB_POOL_FAULT_HOOK,
};

struct vl_lab_arg {
	struct vl_pool *pool;     /* VL_LAB_POOL_* */
	uint64_t count;           /* in: *_FAIL_AFTER; out: VL_LAB_ALLOC_COUNT */
	bool (*fail)(void *ctx);  /* VL_LAB_POOL_FAULT_HOOK */
	void *ctx;                /* VL_LAB_POOL_FAULT_HOOK */
};

/* Apply op with arg. Returns VL_OK, or VL_ERR_INVALID_ARG (nothing changed) for an unknown
 * op, a NULL arg, or a pool op without a pool. */
int vl_lab_control(enum vl_lab_op op, struct vl_lab_arg *arg);

#ifdef __cplusplus
}
#endif

#endif

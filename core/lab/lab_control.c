/* SPDX-License-Identifier: MIT */
/* LAB ONLY: vl_lab_control (vl_lab_control.h), the one door through which the lab reaches
 * the core's fault injection. The state stays with what it governs -- the allocator's
 * countdown in alloc.c, a pool's countdown and hook in its struct vl_pool -- and exists
 * only in a lab build (VL_LAB_BUILD); this file just dispatches. */
#ifndef VL_LAB_BUILD
#error "core/lab/lab_control.c belongs to the lab build of the core only (VL_LAB_BUILD)"
#endif

#include "vl_lab_control.h"

#include "alloc.h"
#include "pkt/pool_internal.h"
#include "vhostlab/vl_error.h"

int vl_lab_control(enum vl_lab_op op, struct vl_lab_arg *arg)
{
	if (arg == NULL)
		return VL_ERR_INVALID_ARG;
	switch (op) {
	case VL_LAB_ALLOC_FAIL_AFTER:
		vl_alloc_lab_fail_after(arg->count);
		return VL_OK;
	case VL_LAB_ALLOC_COUNT:
		arg->count = vl_alloc_lab_count();
		return VL_OK;
	case VL_LAB_POOL_FAIL_AFTER:
		if (arg->pool == NULL)
			return VL_ERR_INVALID_ARG;
		arg->pool->fail_after = arg->count;
		return VL_OK;
	case VL_LAB_POOL_FAULT_HOOK:
		if (arg->pool == NULL)
			return VL_ERR_INVALID_ARG;
		arg->pool->fault = arg->fail;
		arg->pool->fault_ctx = arg->ctx;
		return VL_OK;
	}
	return VL_ERR_INVALID_ARG;
}

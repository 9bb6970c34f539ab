/* SPDX-License-Identifier: MIT */
#include "vhostlab/vl_error.h"

#include <stddef.h>

static const char *const vl_err_text[VL_ERR__COUNT] = {
	[VL_OK] = "success",
	[VL_ERR_NOMEM] = "out of memory",
	[VL_ERR_INVALID_ARG] = "invalid argument",
	[VL_ERR_TOO_MANY_REGIONS] = "too many memory regions",
	[VL_ERR_REGION_ZERO_SIZE] = "memory region of size 0",
	[VL_ERR_REGION_OVERFLOW] = "memory region wraps around the 64-bit address space",
	[VL_ERR_REGION_OVERLAP] = "memory regions overlap",
	[VL_ERR_QUEUE_SIZE] = "invalid queue size",
	[VL_ERR_RING_UNMAPPED] = "ring area not contiguous in mapped guest memory",
	[VL_ERR_RING_MISALIGNED] = "ring area misaligned",
	[VL_ERR_LAYOUT] = "unsupported ring layout",
	[VL_ERR_RING_BASE] = "ring position outside the ring",
	[VL_ERR_VU_CLOSED] = "vhost-user peer closed the connection",
	[VL_ERR_VU_IO] = "vhost-user connection unusable",
	[VL_ERR_VU_AGAIN] = "no vhost-user message waiting",
	[VL_ERR_VU_MSG] = "malformed vhost-user message",
	[VL_ERR_VU_FDS] = "wrong number of file descriptors in a vhost-user message",
	[VL_ERR_VU_REQUEST] = "vhost-user request not supported",
	[VL_ERR_VU_QUEUE_INDEX] = "vhost-user ring index out of range",
	[VL_ERR_VU_STATE] = "vhost-user request not valid in this state",
	[VL_ERR_VU_FEATURES] = "vhost-user features not offered",
	[VL_ERR_VU_VALUE] = "vhost-user value out of range",
	[VL_ERR_VU_MAP] = "cannot map vhost-user shared memory",
	[VL_ERR_UNSUPPORTED] = "not supported by this CPU or build",
	[VL_ERR_VU_FILE_SHORT] = "vhost-user shared memory claimed past the end of its file",
	[VL_ERR_LOG_TOO_SMALL] = "dirty log too small for the guest's memory",
	[VL_ERR_REGION_UNKNOWN] = "no memory region matches the one to remove",
	[VL_ERR_INFLIGHT] = "inflight area does not fit the device's queues",
	[VL_ERR_INFLIGHT_PACKED] = "inflight tracking is implemented for split rings only",
};

const char *vl_strerror(int err)
{
	if (err < 0 || err >= VL_ERR__COUNT || vl_err_text[err] == NULL)
		return "unknown error";
	return vl_err_text[err];
}

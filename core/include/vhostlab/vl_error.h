/* SPDX-License-Identifier: MIT */
/* Error codes returned by the control-path calls of the vhostlab core. */
#ifndef VHOSTLAB_VL_ERROR_H
#define VHOSTLAB_VL_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Every control-path call returns 0 or one of these (negated nowhere: they are positive).
 * Each names the offence, so a caller can print it next to the value that caused it. */
enum vl_err {
	VL_OK = 0,
	VL_ERR_NOMEM,            /* an allocation failed */
	VL_ERR_INVALID_ARG,      /* NULL pointer or nonsensical argument from the embedder */
	VL_ERR_TOO_MANY_REGIONS, /* more memory regions than VL_MEM_MAX_REGIONS */
	VL_ERR_REGION_ZERO_SIZE, /* a memory region of size 0 */
	VL_ERR_REGION_OVERFLOW,  /* gpa + size (or host + size) wraps around 2^64 */
	VL_ERR_REGION_OVERLAP,   /* two regions overlap in guest-physical space */
	VL_ERR_QUEUE_SIZE,       /* queue size 0, > 32768, or not a power of two (split) */
	VL_ERR_RING_UNMAPPED,    /* a ring area is not entirely inside one host mapping */
	VL_ERR_RING_MISALIGNED,  /* a ring area violates the alignment the spec requires */
	VL_ERR_LAYOUT,           /* the requested ring layout is not supported */
	VL_ERR_RING_BASE,        /* packed resume position outside the ring (or inconsistent) */
	/* vhost-user (vl_vhost_user.h). The first two mean the connection is gone. */
	VL_ERR_VU_CLOSED,        /* the peer closed the connection */
	VL_ERR_VU_IO,            /* connection unusable: socket error, message cut short or
				  * larger than any request, reply not taken */
	VL_ERR_VU_AGAIN,         /* non-blocking socket, no message waiting */
	VL_ERR_VU_MSG,           /* malformed message: version, flags or payload size */
	VL_ERR_VU_FDS,           /* wrong number of file descriptors for the request */
	VL_ERR_VU_REQUEST,       /* request unknown or not offered */
	VL_ERR_VU_QUEUE_INDEX,   /* ring index beyond the device's rings */
	VL_ERR_VU_STATE,         /* not valid now (no memory table yet, ring running, feature
				  * not negotiated) */
	VL_ERR_VU_FEATURES,      /* features that were not offered */
	VL_ERR_VU_VALUE,         /* a value out of range (MTU, status, flags, enable) */
	VL_ERR_VU_MAP,           /* a region or log cannot be mapped (not a regular file,
				  * shorter than claimed, mmap failed) */
	VL_ERR_UNSUPPORTED,      /* this CPU or build lacks what the call needs */
	/* Added with issue 58 (kept after the others: the numbers above do not move). */
	VL_ERR_VU_FILE_SHORT,    /* shared memory (region, log, inflight area) claimed past the
				  * end of the file its fd names */
	VL_ERR_LOG_TOO_SMALL,    /* the dirty log's bits do not cover every guest region */
	VL_ERR_REGION_UNKNOWN,   /* REM_MEM_REG names no region of the table */
	VL_ERR_INFLIGHT,         /* an inflight area that does not fit the device's queues
				  * (size, queue count or queue size) */
	VL_ERR_INFLIGHT_PACKED,  /* inflight tracking asked for a packed ring: only split rings
				  * are tracked */
	VL_ERR__COUNT
};

/* A constant, human-readable description of an error code ("unknown error" if out of range). */
const char *vl_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif

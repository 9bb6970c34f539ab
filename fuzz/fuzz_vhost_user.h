/* SPDX-License-Identifier: MIT */
/* The input format of fuzz_vhost_user (a hostile vhost-user front end and its hostile guest),
 * shared by the target and gen_corpus so seeds follow the format wherever it goes.
 *
 * An input is a sequence of operations, each an opcode byte (taken modulo FZ_VU_OP__COUNT)
 * and its arguments; an exhausted input reads as zeros. At most FZ_VU_MAX_OPS run.
 *
 *   MSG    request u8 (0xff: a u32 follows), flags u8, nfds u8 (% 11: up to 10, more than a
 *          message may carry), one kind byte per fd (enum fz_vu_fd), size u16, then the
 *          payload: min(size, FZ_VU_MAX_SENT) bytes from the input, zeros up to size when
 *          size <= FZ_VU_PAYLOAD_LIMIT; above it only the header is sent (the device must
 *          give up on the connection at once). The device handles it; replies are read and
 *          checked.
 *   GUEST  offset u32, len u8, bytes: written into guest memory (offset modulo its size).
 *   POST   ring u8 (% 4), count u8 (% 16 + 1), len u16 (% 1024 + 1): the guest posts count
 *          one-descriptor buffers on that ring at the seeds' fixed ring layout (below), in
 *          the layout the device's queue has; even rings receive (device-writable), odd
 *          rings transmit (a zero header and payload).
 *   BURST  npkts u8 (% 9), len u16 (% 2048 + 1): on every ready ring, consume the kick, run
 *          one burst (odd: dequeue up to 32; even: enqueue npkts packets of len bytes) and
 *          notify.
 *   CUT    nbytes u16, nfds u8 (% 3), request u8, flags u8, size u16 (% 601), then size
 *          payload bytes: only the first nbytes % (12 + size) bytes of the message are sent
 *          (the fds with the first), then the front end closes. The device must report the peer gone and release everything; a new
 *          connection follows.
 *
 * Guest memory: one memfd of FZ_VU_MEM_SIZE bytes, which seeds announce at guest-physical
 * FZ_VU_GPA and front-end address FZ_VU_UADDR. Seed rings sit at FZ_VU_RING(q): split
 * descriptors, avail at +FZ_VU_AVAIL_OFF, used at +FZ_VU_USED_OFF (up to 256 entries);
 * packed descriptors, driver area at +FZ_VU_AVAIL_OFF, device area at +FZ_VU_DEVICE_OFF.
 * Buffers: FZ_VU_BUF(q, id), FZ_VU_BUF_SIZE bytes each. */
#ifndef VL_FUZZ_VHOST_USER_H
#define VL_FUZZ_VHOST_USER_H

#include <stdint.h>
#include <string.h>

#include "fuzz_target.h"
#include "fz_bytes.h"
#include "vhostlab/vhostlab.h"

enum fz_vu_op {
	FZ_VU_MSG = 0,
	FZ_VU_GUEST,
	FZ_VU_POST,
	FZ_VU_BURST,
	FZ_VU_CUT,
	FZ_VU_OP__COUNT
};

/* What a descriptor attached to a message is (kind byte % FZ_VU_FD__COUNT). */
enum fz_vu_fd {
	FZ_VU_FD_GUEST = 0, /* the guest memory memfd (a dup) */
	FZ_VU_FD_EVENT,     /* a fresh eventfd */
	FZ_VU_FD_LOG,       /* a 64 KiB memfd for the dirty log */
	FZ_VU_FD_SMALL,     /* a 4 KiB memfd: too small for most claims */
	FZ_VU_FD__COUNT
};

/* Enough for a seed to fill every memory slot (509 ADD_MEM_REG) after a start-up. */
#define FZ_VU_MAX_OPS 1024u
#define FZ_VU_MAX_SENT 600u          /* payload bytes taken from the input */
#define FZ_VU_PAYLOAD_LIMIT 4096u    /* the largest payload the device reads whole */
#define FZ_VU_MEM_SIZE 0x100000u     /* 1 MiB of guest memory */
#define FZ_VU_LOG_SIZE 0x10000u
#define FZ_VU_SMALL_SIZE 0x1000u
#define FZ_VU_GPA 0x40000000ull
#define FZ_VU_UADDR 0x7f1200000000ull
#define FZ_VU_RINGS 4u               /* the device has 2 queue pairs */
#define FZ_VU_RING(q) ((uint64_t)(q) * 0x8000u)
#define FZ_VU_AVAIL_OFF 0x2000u
#define FZ_VU_USED_OFF 0x4000u
#define FZ_VU_DEVICE_OFF 0x2040u
#define FZ_VU_BUF_SIZE 1024u
#define FZ_VU_BUF(q, id) (0x20000u + ((uint64_t)(q) * 256u + (id)) * FZ_VU_BUF_SIZE)
#define FZ_VU_MAX_QSIZE 256u

/* Request numbers the seeds use (QEMU docs/interop/vhost-user.rst). */
enum {
	FZ_VU_GET_FEATURES = 1, FZ_VU_SET_FEATURES = 2, FZ_VU_SET_OWNER = 3,
	FZ_VU_RESET_OWNER = 4, FZ_VU_SET_MEM_TABLE = 5, FZ_VU_SET_LOG_BASE = 6,
	FZ_VU_SET_VRING_NUM = 8, FZ_VU_SET_VRING_ADDR = 9, FZ_VU_SET_VRING_BASE = 10,
	FZ_VU_GET_VRING_BASE = 11, FZ_VU_SET_VRING_KICK = 12, FZ_VU_SET_VRING_CALL = 13,
	FZ_VU_SET_VRING_ERR = 14, FZ_VU_GET_PROTOCOL_FEATURES = 15,
	FZ_VU_SET_PROTOCOL_FEATURES = 16, FZ_VU_GET_QUEUE_NUM = 17, FZ_VU_SET_VRING_ENABLE = 18,
	FZ_VU_SEND_RARP = 19, FZ_VU_NET_SET_MTU = 20, FZ_VU_GET_INFLIGHT_FD = 31,
	FZ_VU_SET_INFLIGHT_FD = 32, FZ_VU_RESET_DEVICE = 34, FZ_VU_GET_MAX_MEM_SLOTS = 36,
	FZ_VU_ADD_MEM_REG = 37, FZ_VU_REM_MEM_REG = 38, FZ_VU_SET_STATUS = 39,
	FZ_VU_GET_STATUS = 40,
};
#define FZ_VU_VERSION 1u
#define FZ_VU_NEED_REPLY 8u
#define FZ_VU_NOFD 0x100ull

/* ---- encoders (gen_corpus) --------------------------------------------------------------- */

static inline void fzvu_msg(struct fz_out *o, uint32_t req, uint8_t flags, const uint8_t *kinds,
			    uint8_t nfds, const void *payload, uint16_t size)
{
	fz_put8(o, FZ_VU_MSG);
	if (req >= 0xff) {
		fz_put8(o, 0xff);
		fz_put32(o, req);
	} else {
		fz_put8(o, (uint8_t)req);
	}
	fz_put8(o, flags);
	fz_put8(o, nfds);
	for (uint8_t i = 0; i < nfds; i++)
		fz_put8(o, kinds[i]);
	fz_put16(o, size);
	/* The target takes at most FZ_VU_MAX_SENT bytes from the input, none for a size beyond
	 * FZ_VU_PAYLOAD_LIMIT; payload holds at least that many. */
	if (size && size <= FZ_VU_PAYLOAD_LIMIT)
		fz_put_bytes(o, payload, size < FZ_VU_MAX_SENT ? size : FZ_VU_MAX_SENT);
}

static inline void fzvu_none(struct fz_out *o, uint32_t req)
{
	fzvu_msg(o, req, FZ_VU_VERSION, NULL, 0, NULL, 0);
}

static inline void fzvu_u64(struct fz_out *o, uint32_t req, uint64_t v)
{
	fzvu_msg(o, req, FZ_VU_VERSION, NULL, 0, &v, 8);
}

static inline void fzvu_state(struct fz_out *o, uint32_t req, uint32_t index, uint32_t num)
{
	uint32_t st[2] = {index, num};

	fzvu_msg(o, req, FZ_VU_VERSION, NULL, 0, st, 8);
}

/* KICK / CALL / ERR with a fresh eventfd, or NOFD. */
static inline void fzvu_ring_fd(struct fz_out *o, uint32_t req, uint32_t q, int with_fd)
{
	uint64_t v = q | (with_fd ? 0 : FZ_VU_NOFD);
	uint8_t kind = FZ_VU_FD_EVENT;

	fzvu_msg(o, req, FZ_VU_VERSION, &kind, with_fd ? 1 : 0, &v, 8);
}

/* SET_MEM_TABLE: the whole guest memory as one region, or cut in n equal regions. */
static inline void fzvu_mem_table(struct fz_out *o, uint32_t n)
{
	uint8_t p[8 + 8 * 32] = {0}, kinds[8] = {0};
	uint64_t part = FZ_VU_MEM_SIZE / n;

	memcpy(p, &n, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t r[4] = {FZ_VU_GPA + i * part, part, FZ_VU_UADDR + i * part, i * part};

		memcpy(p + 8 + 32 * i, r, 32);
	}
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION | FZ_VU_NEED_REPLY, kinds, (uint8_t)n, p,
		 (uint16_t)(8 + 32 * n));
}

/* ADD_MEM_REG / REM_MEM_REG of [off, off + size) of the guest memfd. */
static inline void fzvu_mem_reg(struct fz_out *o, uint32_t req, uint64_t off, uint64_t size)
{
	uint64_t p[5] = {0, FZ_VU_GPA + off, size, FZ_VU_UADDR + off, off};
	uint8_t kind = FZ_VU_FD_GUEST;

	fzvu_msg(o, req, FZ_VU_VERSION | FZ_VU_NEED_REPLY, &kind, req == FZ_VU_ADD_MEM_REG ? 1 : 0,
		 p, 40);
}

/* ADD_MEM_REG / REM_MEM_REG of [off, off + size) of the guest memfd at any guest and user
 * address. */
static inline void fzvu_mem_reg_at(struct fz_out *o, uint32_t req, uint64_t gpa, uint64_t size,
				   uint64_t uaddr, uint64_t off)
{
	uint64_t p[5] = {0, gpa, size, uaddr, off};
	uint8_t kind = FZ_VU_FD_GUEST;

	fzvu_msg(o, req, FZ_VU_VERSION | FZ_VU_NEED_REPLY, &kind, req == FZ_VU_ADD_MEM_REG ? 1 : 0,
		 p, 40);
}

/* SET_LOG_BASE {size, offset} with one fd of the given kind. */
static inline void fzvu_log_base(struct fz_out *o, uint8_t kind, uint64_t size, uint64_t offset)
{
	uint64_t p[2] = {size, offset};

	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION, &kind, 1, p, 16);
}

/* GET_INFLIGHT_FD (no fd) / SET_INFLIGHT_FD (one fd of the given kind): {size, offset,
 * queues, queue size}. */
static inline void fzvu_inflight(struct fz_out *o, uint32_t req, uint8_t kind, uint64_t size,
				 uint64_t offset, uint16_t nq, uint16_t qs)
{
	uint8_t p[24] = {0};

	memcpy(p, &size, 8);
	memcpy(p + 8, &offset, 8);
	memcpy(p + 16, &nq, 2);
	memcpy(p + 18, &qs, 2);
	fzvu_msg(o, req, FZ_VU_VERSION | FZ_VU_NEED_REPLY, &kind,
		 req == FZ_VU_SET_INFLIGHT_FD ? 1 : 0, p, 24);
}

/* SET_VRING_NUM, BASE, ADDR (the fixed layout), KICK for ring q. */
static inline void fzvu_ring(struct fz_out *o, uint32_t q, uint32_t size, int packed, uint32_t base)
{
	uint64_t ring = FZ_VU_UADDR + FZ_VU_RING(q);
	struct {
		uint32_t index, flags;
		uint64_t desc, used, avail, log;
	} a = {q, 0, ring, ring + (packed ? FZ_VU_DEVICE_OFF : FZ_VU_USED_OFF),
	       ring + FZ_VU_AVAIL_OFF, 0};

	fzvu_state(o, FZ_VU_SET_VRING_NUM, q, size);
	fzvu_state(o, FZ_VU_SET_VRING_BASE, q, base);
	fzvu_msg(o, FZ_VU_SET_VRING_ADDR, FZ_VU_VERSION, NULL, 0, &a, sizeof(a));
	fzvu_ring_fd(o, FZ_VU_SET_VRING_KICK, q, 1);
}

static inline void fzvu_post(struct fz_out *o, uint8_t q, uint8_t count, uint16_t len)
{
	fz_put8(o, FZ_VU_POST);
	fz_put8(o, q);
	fz_put8(o, (uint8_t)(count - 1));
	fz_put16(o, (uint16_t)(len - 1));
}

static inline void fzvu_burst(struct fz_out *o, uint8_t npkts, uint16_t len)
{
	fz_put8(o, FZ_VU_BURST);
	fz_put8(o, npkts);
	fz_put16(o, (uint16_t)(len - 1));
}

static inline void fzvu_guest(struct fz_out *o, uint32_t off, const void *bytes, uint8_t len)
{
	fz_put8(o, FZ_VU_GUEST);
	fz_put32(o, off);
	fz_put8(o, len);
	fz_put_bytes(o, bytes, len);
}

/* size <= 64 */
static inline void fzvu_cut(struct fz_out *o, uint16_t nbytes, uint8_t nfds, uint8_t req,
			    uint16_t size)
{
	uint8_t zeros[64] = {0};

	fz_put8(o, FZ_VU_CUT);
	fz_put16(o, nbytes);
	fz_put8(o, nfds);
	fz_put8(o, req);
	fz_put8(o, FZ_VU_VERSION);
	fz_put16(o, size);
	fz_put_bytes(o, zeros, size);
}

#endif

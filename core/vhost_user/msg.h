/* SPDX-License-Identifier: MIT */
/* vhost-user wire format and message framing (QEMU docs/interop/vhost-user.rst): a 12-byte
 * header -- request, flags, payload size -- then the payload, with file descriptors in
 * SCM_RIGHTS ancillary data. All numbers are host byte order. Not a public header. */
#ifndef VL_VU_MSG_H
#define VL_VU_MSG_H

#include <stdint.h>

/* Requests from the front end. */
enum vu_request {
	VU_NONE = 0,
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_RESET_OWNER = 4,
	VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6,
	VU_SET_LOG_FD = 7,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ERR = 14,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
	VU_SEND_RARP = 19,
	VU_NET_SET_MTU = 20,
	VU_SET_SLAVE_REQ_FD = 21,
	VU_IOTLB_MSG = 22,
	VU_SET_VRING_ENDIAN = 23,
	VU_GET_CONFIG = 24,
	VU_SET_CONFIG = 25,
	VU_CREATE_CRYPTO_SESSION = 26,
	VU_CLOSE_CRYPTO_SESSION = 27,
	VU_POSTCOPY_ADVISE = 28,
	VU_POSTCOPY_LISTEN = 29,
	VU_POSTCOPY_END = 30,
	VU_GET_INFLIGHT_FD = 31,
	VU_SET_INFLIGHT_FD = 32,
	VU_GPU_SET_SOCKET = 33,
	VU_RESET_DEVICE = 34,
	VU_VRING_KICK = 35,
	VU_GET_MAX_MEM_SLOTS = 36,
	VU_ADD_MEM_REG = 37,
	VU_REM_MEM_REG = 38,
	VU_SET_STATUS = 39,
	VU_GET_STATUS = 40,
	VU_REQUEST__COUNT
};

/* Header flags: version in bits 0-1, REPLY on our answers, NEED_REPLY from REPLY_ACK. */
#define VU_VERSION_MASK 0x3u
#define VU_VERSION 0x1u
#define VU_FLAG_REPLY 0x4u
#define VU_FLAG_NEED_REPLY 0x8u

/* KICK/CALL/ERR u64: ring index in bits 0-7, "no fd" in bit 8, nothing above. */
#define VU_VRING_INDEX_MASK 0xffull
#define VU_VRING_NOFD 0x100ull

/* SET_VRING_ADDR flags: log the used ring (the only flag defined). */
#define VU_VRING_F_LOG 0x1u

/* Regions one SET_MEM_TABLE can carry (and so fds one message can carry). */
#define VU_MEM_MSG_REGIONS 8u
#define VU_MAX_FDS 8u

/* The largest payload read in full. Bigger than any request this back end accepts, so a
 * payload that is merely the wrong size is read whole and rejected with the stream still in
 * step; a size beyond this cannot be (framing is lost: the connection is unusable). */
#define VU_PAYLOAD_MAX 4096u

struct vu_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
};

struct vu_state {
	uint32_t index;
	uint32_t num;
};

struct vu_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc;  /* front-end virtual addresses of the three areas */
	uint64_t used;
	uint64_t avail;
	uint64_t log;   /* guest-physical address of the used ring for the log */
};

struct vu_region_desc {
	uint64_t gpa;
	uint64_t size;
	uint64_t uaddr;
	uint64_t mmap_offset;
};

struct vu_mem_desc {
	uint32_t nregions;
	uint32_t padding;
	struct vu_region_desc regions[VU_MEM_MSG_REGIONS];
};

struct vu_mem_reg_desc {
	uint64_t padding;
	struct vu_region_desc region;
};

struct vu_log_desc {
	uint64_t size;
	uint64_t offset;
};

/* GET_INFLIGHT_FD (request and reply) and SET_INFLIGHT_FD: the area's size and offset in the
 * fd, and the queues it covers. */
struct vu_inflight_desc {
	uint64_t mmap_size;
	uint64_t mmap_offset;
	uint16_t num_queues;
	uint16_t queue_size;
	uint32_t padding;
};

/* Payload sizes each request must carry exactly (SET_MEM_TABLE: 8 + 32 per region). */
#define VU_SIZE_U64 8u
#define VU_SIZE_STATE 8u
#define VU_SIZE_ADDR 40u
#define VU_SIZE_MEM_HDR 8u
#define VU_SIZE_REGION 32u
#define VU_SIZE_MEM_REG 40u
#define VU_SIZE_LOG 16u
#define VU_SIZE_INFLIGHT 24u

_Static_assert(sizeof(struct vu_hdr) == 12, "vhost-user header");
_Static_assert(sizeof(struct vu_state) == VU_SIZE_STATE, "vring state");
_Static_assert(sizeof(struct vu_addr) == VU_SIZE_ADDR, "vring address");
_Static_assert(sizeof(struct vu_region_desc) == VU_SIZE_REGION, "memory region");
_Static_assert(sizeof(struct vu_mem_desc) == VU_SIZE_MEM_HDR + 8 * VU_SIZE_REGION, "mem table");
_Static_assert(sizeof(struct vu_mem_reg_desc) == VU_SIZE_MEM_REG, "single region");
_Static_assert(sizeof(struct vu_log_desc) == VU_SIZE_LOG, "log");
_Static_assert(sizeof(struct vu_inflight_desc) == VU_SIZE_INFLIGHT, "inflight");

/* One message as received: the payload in private memory, aligned for every view. */
struct vu_msg {
	struct vu_hdr hdr;
	union {
		uint64_t u64;
		struct vu_state state;
		struct vu_addr addr;
		struct vu_mem_desc mem;
		struct vu_mem_reg_desc reg;
		struct vu_log_desc log;
		struct vu_inflight_desc inflight;
		uint8_t bytes[VU_PAYLOAD_MAX];
	} p;
	int fds[VU_MAX_FDS];  /* received descriptors; a handler keeping one sets it to -1 */
	uint32_t nfds;
	uint32_t fds_dropped; /* descriptors beyond VU_MAX_FDS (already closed, or cut by the
			       * kernel): the message is rejected */
};

/* Read one whole message into m (closing, on failure, every descriptor that came with it).
 * Returns 0, VL_ERR_VU_AGAIN (nothing waiting on a non-blocking socket), VL_ERR_VU_CLOSED
 * (end of stream or reset, also mid-message) or VL_ERR_VU_IO (error, a message stalled for
 * VL_VU_IO_TIMEOUT_MS part-way, or a payload over VU_PAYLOAD_MAX). */
int vu_msg_recv(int sock, struct vu_msg *m);

/* Send the reply to `request`: the header (VERSION | REPLY) and an 8-byte payload (a u64 or
 * a vring state, as its bytes), or none when payload is NULL (SET_LOG_BASE's reply).
 * Returns 0, VL_ERR_VU_CLOSED or VL_ERR_VU_IO. */
int vu_msg_reply(int sock, uint32_t request, const uint64_t *payload);
/* The same with `size` payload bytes (at most VU_SIZE_INFLIGHT) and, when fd >= 0, that
 * descriptor attached to the first byte (GET_INFLIGHT_FD's reply). The caller keeps fd. */
int vu_msg_reply_fd(int sock, uint32_t request, const void *payload, uint32_t size, int fd);

/* Close every descriptor still held in m. */
void vu_msg_close_fds(struct vu_msg *m);

#endif

/* SPDX-License-Identifier: MIT */
/* Test fixture for the vhost-user tests: a fake front end on one end of a socketpair, the
 * device (vl_vu_dev) on the other, guest memory in memfds that both sides map (the front end
 * at its own address, which is the "user address" it announces; the device wherever its mmap
 * lands), and a minimal virtio driver writing split and packed rings in that memory exactly
 * as a front end's guest would.
 *
 * Every helper asserts (cmocka) on a fixture failure; message helpers return what
 * vl_vu_dev_handle returned so tests state the outcome they expect. */
#ifndef VL_TEST_VU_FIXTURE_H
#define VL_TEST_VU_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhostlab/vhostlab.h"

/* Guest memory: one memfd of VUF_MEM_SIZE bytes at guest-physical VUF_GPA. Rings live in the
 * first VUF_RING_AREA bytes (ring i at i * VUF_RING_STRIDE), packet buffers after. */
#define VUF_GPA 0x100000ull
#define VUF_MEM_SIZE (4ull << 20)
#define VUF_RING_AREA (1ull << 20)
#define VUF_RING_STRIDE 0x40000ull
#define VUF_BUF_SIZE 2048u        /* one buffer per descriptor id and ring */
#define VUF_MAX_RINGS 4u
#define VUF_HDR_LEN 12u           /* VERSION_1 / MRG_RXBUF / packed: 12-byte header */

/* The request numbers the tests send (docs/interop/vhost-user.rst). */
enum {
	VUF_GET_FEATURES = 1, VUF_SET_FEATURES = 2, VUF_SET_OWNER = 3, VUF_RESET_OWNER = 4,
	VUF_SET_MEM_TABLE = 5, VUF_SET_LOG_BASE = 6, VUF_SET_LOG_FD = 7, VUF_SET_VRING_NUM = 8,
	VUF_SET_VRING_ADDR = 9, VUF_SET_VRING_BASE = 10, VUF_GET_VRING_BASE = 11,
	VUF_SET_VRING_KICK = 12, VUF_SET_VRING_CALL = 13, VUF_SET_VRING_ERR = 14,
	VUF_GET_PROTOCOL_FEATURES = 15, VUF_SET_PROTOCOL_FEATURES = 16, VUF_GET_QUEUE_NUM = 17,
	VUF_SET_VRING_ENABLE = 18, VUF_SEND_RARP = 19, VUF_NET_SET_MTU = 20,
	VUF_GET_INFLIGHT_FD = 31, VUF_SET_INFLIGHT_FD = 32, VUF_RESET_DEVICE = 34,
	VUF_GET_MAX_MEM_SLOTS = 36,
	VUF_ADD_MEM_REG = 37, VUF_REM_MEM_REG = 38, VUF_SET_STATUS = 39, VUF_GET_STATUS = 40,
};
#define VUF_F_VERSION 1u
#define VUF_F_REPLY 4u
#define VUF_F_NEED_REPLY 8u
#define VUF_NOFD 0x100ull

struct vuf_region {
	uint64_t gpa, size, uaddr, offset;
};

/* The guest side of one ring (single-descriptor chains; buffer of id i at a fixed slot). */
struct vuf_ring {
	enum vl_layout layout;
	uint32_t size;
	bool in_order;
	uint64_t desc_gpa, driver_gpa, device_gpa; /* guest-physical */
	uint64_t buf_gpa;                          /* slot 0 */
	void *desc, *driver, *device;              /* front-end view */
	uint16_t avail_idx, used_idx;              /* split */
	uint16_t avail_pos, used_pos;              /* packed */
	bool avail_wrap, used_wrap;
	uint32_t next_id;                          /* split head / packed id, round robin */
	uint16_t *fifo;                            /* packed: ids in posting order */
	uint32_t fifo_head, fifo_count;
	uint32_t *pend_id, *pend_len;              /* packed: a batch being handed out */
	uint32_t pend_n, pend_head;
	uint32_t in_flight;
};

struct vuf {
	int fe, be;                 /* socketpair: front end, back end */
	struct vl_vu_config cfg;
	struct vl_vu_dev *dev;
	int mem_fd;
	uint8_t *mem;               /* front-end view of guest memory */
	struct vl_pool *pool;
	/* callbacks seen */
	bool ready[2 * VL_VU_MAX_QUEUE_PAIRS];
	uint32_t ready_events, mem_events, status_events;
	uint8_t last_status;
	uint32_t announce_events;   /* SEND_RARP handed on */
	uint8_t last_mac[6];
	struct vuf_ring ring[VUF_MAX_RINGS];
	int kick[VUF_MAX_RINGS], call[VUF_MAX_RINGS]; /* front end's copies of the eventfds */
};

/* Number of open file descriptors of the process (/proc/self/fd). */
int vuf_count_fds(void);

/* Create the pair, the guest memory and a device with cfg (NULL: vl_vu_config_init). */
void vuf_init(struct vuf *f, const struct vl_vu_config *cfg);
void vuf_fini(struct vuf *f);

/* A region of the fixture's memory: [off, off + size) of the memfd at gpa VUF_GPA + off. */
struct vuf_region vuf_region(const struct vuf *f, uint64_t off, uint64_t size);

/* Send one raw message: header + payload through lab_fd_send (sim/fd_send.h), the fds
 * (at most LAB_FD_SEND_MAX_FDS) attached to its first byte. */
void vuf_send(struct vuf *f, uint32_t request, uint32_t flags, const void *payload,
	      uint32_t size, const int *fds, uint32_t nfds);
/* Send, then let the device handle it: returns vl_vu_dev_handle's result. */
int vuf_msg(struct vuf *f, uint32_t request, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, uint32_t nfds);
int vuf_u64(struct vuf *f, uint32_t request, uint64_t v);
int vuf_state(struct vuf *f, uint32_t request, uint32_t index, uint32_t num);
int vuf_none(struct vuf *f, uint32_t request);
/* SET_VRING_KICK/CALL/ERR with an fd (or NOFD when fd < 0). */
int vuf_ring_fd(struct vuf *f, uint32_t request, uint64_t index, int fd);
int vuf_addr(struct vuf *f, uint32_t index, uint32_t flags, uint64_t desc, uint64_t used,
	     uint64_t avail, uint64_t log);
/* SET_MEM_TABLE over the fixture's memfd (one fd per region, each a dup). */
int vuf_mem_table(struct vuf *f, const struct vuf_region *r, uint32_t n);
/* The device's reply to `request`: asserts one is there, returns its u64 payload (or the
 * state's num for GET_VRING_BASE) and the payload size in *size. */
uint64_t vuf_reply(struct vuf *f, uint32_t request, uint32_t *size);
/* Assert that no reply is waiting. */
void vuf_no_reply(struct vuf *f);
/* GET_FEATURES-style request: send, handle (must succeed), return the reply. */
uint64_t vuf_get(struct vuf *f, uint32_t request);

/* The guest side of ring qidx, laid out at qidx * VUF_RING_STRIDE. */
void vuf_ring_init(struct vuf *f, uint32_t qidx, enum vl_layout layout, uint32_t size,
		   bool in_order);
/* The front-end addresses of its three areas (what SET_VRING_ADDR carries). */
void vuf_ring_uaddrs(const struct vuf *f, uint32_t qidx, uint64_t *desc, uint64_t *avail,
		     uint64_t *used);
/* SET_VRING_NUM, BASE (fresh ring), ADDR, KICK (a new eventfd) for ring qidx: what a front
 * end sends per queue. Each must succeed. */
void vuf_ring_setup(struct vuf *f, uint32_t qidx);

/* Guest actions: post a TX packet of `len` payload bytes filled from `seed` (returns its id)
 * or an RX buffer of `cap` bytes; publish. -1 when the ring is full. */
int vuf_post_tx(struct vuf *f, uint32_t qidx, uint32_t len, uint32_t seed);
int vuf_post_rx(struct vuf *f, uint32_t qidx, uint32_t cap);
/* Next used buffer: true with id/len; false when none. */
bool vuf_pop_used(struct vuf *f, uint32_t qidx, uint32_t *id, uint32_t *len);
/* Front-end pointer to the buffer of id on ring qidx. */
uint8_t *vuf_buf(struct vuf *f, uint32_t qidx, uint32_t id);

/* The DPDK virtio-user start-up sequence (docs: real-front-ends.md) for every ring in
 * [0, nrings): SET_OWNER, GET_FEATURES, GET/SET_PROTOCOL_FEATURES, SET_VRING_CALL per ring,
 * SET_FEATURES(features), SET_STATUS, GET_STATUS x2, SET_MEM_TABLE (one region), per ring
 * SET_VRING_NUM / BASE / ADDR / KICK, SET_VRING_ENABLE per ring, SET_STATUS(DRIVER_OK).
 * Rings are laid out with vuf_ring_init first. */
void vuf_dpdk_start(struct vuf *f, uint64_t features, enum vl_layout layout, uint32_t qsize,
		    uint32_t nrings);

/* Fill / check a payload pattern. */
void vuf_fill(uint8_t *p, uint32_t len, uint32_t seed);
bool vuf_check(const uint8_t *p, uint32_t len, uint32_t seed);

/* Asserts that traffic still flows on the first pair: a 100-byte packet from the guest
 * (ring 1) reaches the host intact and comes back used, and a 200-byte one from the host
 * reaches the guest's buffer (ring 0) whole. */
void vuf_still_moves(struct vuf *f, uint32_t seed);

/* Host side: dequeue everything on TX ring qidx and check each packet against the seeds in
 * order; enqueue `n` packets of `len` bytes (seeds from `seed`) on RX ring qidx. Return the
 * packets moved. */
uint32_t vuf_host_tx(struct vuf *f, uint32_t qidx, uint32_t len, uint32_t *seed);
uint32_t vuf_host_rx(struct vuf *f, uint32_t qidx, uint32_t n, uint32_t len, uint32_t seed);

#endif

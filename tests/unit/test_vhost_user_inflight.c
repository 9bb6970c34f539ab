/* SPDX-License-Identifier: MIT */
/* Inflight tracking (INFLIGHT_SHMFD) in process: a front end gets the inflight area
 * (GET_INFLIGHT_FD) and hands it back (SET_INFLIGHT_FD) as QEMU does at every device start;
 * a back end takes TX chains with zero-copy and returns some out of order; it "crashes" (it
 * is simply never called again) and a new back end on the same guest memory gets the same
 * area: its TX queue takes again exactly the chains the first had taken and not returned, in
 * the order first taken, then the guest's new ones -- where resuming at the guest's used
 * index alone would have sent a returned chain twice and lost one still held. Then the bad
 * inputs of the two messages and of the area. */
#define _GNU_SOURCE /* memfd_create, eventfd */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vu_fixture.h"

#define F(bit) VL_FEATURE(bit)
#define FEATURES (F(VL_F_VERSION_1) | F(VL_F_NET_MRG_RXBUF) | F(VL_VU_F_PROTOCOL_FEATURES))
#define PROTO                                                                                \
	(VL_FEATURE(VL_VU_PROTOCOL_F_MQ) | VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |            \
	 VL_FEATURE(VL_VU_PROTOCOL_F_INFLIGHT_SHMFD))
#define QSIZE 64u
#define LEN 600u       /* TX payload: above the zero-copy threshold below */
#define ZC_MIN 512u

/* The fixture's callbacks check that reports come from f->dev and change something: a second
 * device on the same fixture starts with nothing ready, and the first, destroyed at the end,
 * reports as f->dev again for the moment. */
static struct vl_vu_dev *new_device(struct vuf *f)
{
	struct vl_vu_dev *old = f->dev;
	int err;

	memset(f->ready, 0, sizeof(f->ready));
	f->dev = vl_vu_dev_create(&f->cfg, &err);
	assert_non_null(f->dev);
	return old;
}

static void destroy_old(struct vuf *f, struct vl_vu_dev *old)
{
	struct vl_vu_dev *now = f->dev;
	bool ready[2] = {f->ready[0], f->ready[1]};

	f->dev = old;
	f->ready[0] = f->ready[1] = true;
	vl_vu_dev_destroy(old);
	f->dev = now;
	f->ready[0] = ready[0];
	f->ready[1] = ready[1];
}

struct infl_desc {
	uint64_t mmap_size, mmap_offset;
	uint16_t num_queues, queue_size;
	uint32_t padding;
};

/* GET_INFLIGHT_FD: the reply's 24 bytes and its descriptor (the caller closes it). */
static int get_inflight(struct vuf *f, uint16_t nq, uint16_t qs, struct infl_desc *out,
			int *fd)
{
	struct infl_desc in = {0, 0, nq, qs, 0};
	int rc = vuf_msg(f, VUF_GET_INFLIGHT_FD, VUF_F_VERSION, &in, sizeof(in), NULL, 0);

	*fd = -1;
	if (rc != VL_OK) {
		vuf_no_reply(f);
		return rc;
	}
	uint32_t hdr[3];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {out, sizeof(*out)}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf)};

	assert_int_equal(recvmsg(f->fe, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC), 12 + 24);
	assert_int_equal(hdr[0], VUF_GET_INFLIGHT_FD);
	assert_int_equal(hdr[1], VUF_F_VERSION | VUF_F_REPLY);
	assert_int_equal(hdr[2], 24);
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	assert_non_null(c);
	assert_int_equal(c->cmsg_type, SCM_RIGHTS);
	memcpy(fd, CMSG_DATA(c), sizeof(*fd));
	vuf_no_reply(f);
	return rc;
}

static int set_inflight(struct vuf *f, const struct infl_desc *d, int fd)
{
	int dupfd = dup(fd);
	int rc = vuf_msg(f, VUF_SET_INFLIGHT_FD, VUF_F_VERSION, d, sizeof(*d), &dupfd, 1);

	close(dupfd);
	return rc;
}

/* What QEMU sends a vhost-user back end at device start with inflight tracking: protocol
 * features, features, the memory table, the area (GET the first time, SET every time), then
 * each ring at its base. area_fd NULL: a front end without inflight tracking. */
static void qemu_start(struct vuf *f, int *area_fd, struct infl_desc *area, uint32_t base)
{
	const bool inflight = area_fd != NULL;
	struct vuf_region r = vuf_region(f, 0, VUF_MEM_SIZE);
	uint8_t mt[8 + 32] = {1};
	int fd = dup(f->mem_fd);

	assert_int_equal(vuf_none(f, VUF_SET_OWNER), VL_OK);
	assert_int_equal(vuf_u64(f, VUF_SET_PROTOCOL_FEATURES,
				 inflight ? PROTO : PROTO & ~VL_FEATURE(VL_VU_PROTOCOL_F_INFLIGHT_SHMFD)),
			 VL_OK);
	assert_int_equal(vuf_u64(f, VUF_SET_FEATURES, FEATURES), VL_OK);
	memcpy(mt + 8, &r, 32);
	assert_int_equal(vuf_msg(f, VUF_SET_MEM_TABLE, VUF_F_VERSION, mt, sizeof(mt), &fd, 1),
			 VL_OK);
	close(fd);
	if (inflight && *area_fd < 0)
		assert_int_equal(get_inflight(f, 2, QSIZE, area, area_fd), VL_OK);
	if (inflight)
		assert_int_equal(set_inflight(f, area, *area_fd), VL_OK);
	for (uint32_t q = 0; q < 2; q++) {
		uint64_t d, a, u;

		vuf_ring_uaddrs(f, q, &d, &a, &u);
		assert_int_equal(vuf_state(f, VUF_SET_VRING_NUM, q, QSIZE), VL_OK);
		assert_int_equal(vuf_state(f, VUF_SET_VRING_BASE, q, base), VL_OK);
		assert_int_equal(vuf_addr(f, q, 0, d, u, a, 0), VL_OK);
		assert_int_equal(vuf_ring_fd(f, VUF_SET_VRING_KICK, q, -1), VL_OK);
		assert_int_equal(vuf_state(f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
		assert_non_null(vl_vu_dev_queue(f->dev, q));
	}
}

/* Dequeue everything on TX ring 1 and check each packet's payload against the seeds, in
 * order; return how many. */
static uint32_t dequeue_expect(struct vuf *f, const uint32_t *seeds, uint32_t n)
{
	struct vl_pkt *pkts[16];
	uint8_t data[LEN];
	uint16_t got = vl_net_dequeue(vl_vu_dev_queue(f->dev, 1), f->pool, pkts, 16);

	assert_int_equal(got, n);
	for (uint16_t i = 0; i < got; i++) {
		assert_int_equal(vl_pkt_read(pkts[i], 0, data, LEN), LEN);
		assert_true(vuf_check(data, LEN, seeds[i]));
		vl_pkt_free(pkts[i]);
	}
	return got;
}

/* crash_mid_publish: the first back end dies just after publishing its last batch of used
 * entries and before clearing their marks (the area's used index then lags the guest's): the
 * new one must not take that batch again. */
static void crash_and_resubmit(bool crash_mid_publish)
{
	struct vuf f;
	struct infl_desc area;
	int area_fd = -1;
	struct vl_pkt *held[4];
	uint32_t id, len;

	vuf_init(&f, NULL);
	for (uint32_t q = 0; q < 2; q++)
		vuf_ring_init(&f, q, VL_LAYOUT_SPLIT, QSIZE, false);
	qemu_start(&f, &area_fd, &area, 0);
	assert_int_equal(area.num_queues, 2);
	assert_int_equal(area.queue_size, QSIZE);
	assert_true(area.mmap_size >= 2 * (16 + 16 * QSIZE));
	vuf_still_moves(&f, 1); /* ids 0 of both rings: taken and returned */

	/* Four TX chains (ids 1..4, seeds 101..104) held by zero-copy; 2 and 4 come back. */
	struct vl_vq *vq = vl_vu_dev_queue(f.dev, 1);

	vl_vq_set_zero_copy(vq, true, ZC_MIN, QSIZE - 1);
	for (uint32_t i = 1; i <= 4; i++)
		assert_int_equal(vuf_post_tx(&f, 1, LEN, 100 + i), (int)i);
	assert_int_equal(vl_net_dequeue(vq, f.pool, held, 4), 4);
	assert_int_equal(vl_vq_zero_copy_held(vq), 4);
	vl_pkt_free(held[1]);
	vl_pkt_free(held[3]);
	vl_vq_complete(vq);
	for (uint32_t want = 2; want <= 4; want += 2) {
		assert_true(vuf_pop_used(&f, 1, &id, &len));
		assert_int_equal(id, want);
	}
	assert_false(vuf_pop_used(&f, 1, &id, &len));
	/* The guest's used index is 3 (id 0, then 2 and 4); 1 and 3 are in flight. */
	uint8_t *map = mmap(NULL, area.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, area_fd, 0);

	assert_true(map != MAP_FAILED);
	const uint64_t per = area.mmap_size / 2;
	uint8_t *q1 = map + per;
	uint16_t used_idx;

	memcpy(&used_idx, q1 + 14, 2);
	assert_int_equal(used_idx, 3);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(q1[16 + 16 * i], i == 1 || i == 3); /* inflight flags */
	if (crash_mid_publish) {
		/* As the area was between used->idx and the clearing of the batch {2, 4}. */
		used_idx = 1;
		memcpy(q1 + 14, &used_idx, 2);
		q1[16 + 16 * 2] = 1;
		q1[16 + 16 * 4] = 1;
	}

	/* The crash: the old device is never called again (it still holds 1 and 3). The guest
	 * posts two more (ids 5, 6). A new back end; QEMU restores the base from used->idx. */
	for (uint32_t i = 5; i <= 6; i++)
		assert_int_equal(vuf_post_tx(&f, 1, LEN, 100 + i), (int)i);
	struct vl_vu_dev *old = new_device(&f);

	qemu_start(&f, &area_fd, &area, 3);
	assert_int_equal(vl_vu_dev_ring_resubmitted(f.dev, 1), 2);
	assert_int_equal(vl_vu_dev_ring_resubmitted(f.dev, 0), 0);
	const uint32_t seeds[4] = {101, 103, 105, 106};

	assert_int_equal(dequeue_expect(&f, seeds, 4), 4);
	for (uint32_t i = 0; i < 4; i++) {
		const uint32_t want[4] = {1, 3, 5, 6};

		assert_true(vuf_pop_used(&f, 1, &id, &len));
		assert_int_equal(id, want[i]);
	}
	assert_false(vuf_pop_used(&f, 1, &id, &len));
	/* Nothing in flight any more, and traffic goes on. */
	for (uint32_t i = 0; i < QSIZE; i++)
		assert_int_equal(q1[16 + 16 * i], 0);
	vuf_still_moves(&f, 7);

	/* The old back end's packets, then the old device itself (it returns 1 and 3 to the
	 * ring again as it goes: after the checks). */
	vl_pkt_free(held[0]);
	vl_pkt_free(held[2]);
	destroy_old(&f, old);
	munmap(map, area.mmap_size);
	close(area_fd);
	vuf_fini(&f);
}

static void test_crash_resubmits_the_chains_in_flight(void **state)
{
	(void)state;
	crash_and_resubmit(false);
}

static void test_crash_after_publishing_a_batch(void **state)
{
	(void)state;
	crash_and_resubmit(true);
}

/* Without inflight tracking the same crash shows what it is for: the new back end resumes
 * at the guest's used index and takes chain 4 (returned) a second time and never chain 1. */
static void test_without_inflight_a_returned_chain_comes_again(void **state)
{
	(void)state;
	struct vuf f;
	struct vl_pkt *held[4];
	uint32_t id, len;

	vuf_init(&f, NULL);
	for (uint32_t q = 0; q < 2; q++)
		vuf_ring_init(&f, q, VL_LAYOUT_SPLIT, QSIZE, false);
	qemu_start(&f, NULL, NULL, 0);
	struct vl_vq *vq = vl_vu_dev_queue(f.dev, 1);

	vl_vq_set_zero_copy(vq, true, ZC_MIN, QSIZE - 1);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(vuf_post_tx(&f, 1, LEN, 100 + i), (int)i);
	assert_int_equal(vl_net_dequeue(vq, f.pool, held, 4), 4);
	vl_pkt_free(held[1]);
	vl_pkt_free(held[3]);
	vl_vq_complete(vq);
	while (vuf_pop_used(&f, 1, &id, &len))
		;
	struct vl_vu_dev *old = new_device(&f);

	/* QEMU restores the base from the guest's used index, 2: avail entries 2 and 3 hold
	 * ids 2 and 3 -- and 3 was returned already, while 0 is never taken again. */
	qemu_start(&f, NULL, NULL, 2);
	assert_int_equal(vl_vu_dev_ring_resubmitted(f.dev, 1), 0);
	const uint32_t seeds[2] = {102, 103};

	assert_int_equal(dequeue_expect(&f, seeds, 2), 2);
	vl_pkt_free(held[0]);
	vl_pkt_free(held[2]);
	destroy_old(&f, old);
	vuf_fini(&f);
}

static int inflight_kib(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long long lo, hi, kib = 0;

	assert_non_null(m);
	while (fgets(line, sizeof(line), m))
		if (strstr(line, "vhostlab-inflight") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			kib += (hi - lo) / 1024;
	fclose(m);
	return (int)kib;
}

static void test_inflight_bad_inputs(void **state)
{
	(void)state;
	struct vuf f;
	struct infl_desc a, b;
	int fd, fd2;

	vuf_init(&f, NULL);
	for (uint32_t q = 0; q < 2; q++)
		vuf_ring_init(&f, q, VL_LAYOUT_SPLIT, QSIZE, false);
	const int fds0 = vuf_count_fds();

	/* Not negotiated; before SET_FEATURES. */
	assert_int_equal(get_inflight(&f, 2, QSIZE, &a, &fd), VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES, PROTO), VL_OK);
	assert_int_equal(get_inflight(&f, 2, QSIZE, &a, &fd), VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, FEATURES), VL_OK);
	/* Queue count and size. */
	assert_int_equal(get_inflight(&f, 0, QSIZE, &a, &fd), VL_ERR_INFLIGHT);
	assert_int_equal(get_inflight(&f, 3, QSIZE, &a, &fd), VL_ERR_INFLIGHT); /* 2 rings */
	assert_int_equal(get_inflight(&f, 2, 0, &a, &fd), VL_ERR_QUEUE_SIZE);
	assert_int_equal(get_inflight(&f, 2, 40000, &a, &fd), VL_ERR_QUEUE_SIZE);
	assert_int_equal(vuf_count_fds(), fds0);
	assert_int_equal(inflight_kib(), 0);
	/* A good one; asked again, the first area is let go. */
	assert_int_equal(get_inflight(&f, 2, QSIZE, &a, &fd), VL_OK);
	const int kib = inflight_kib();

	assert_true(kib > 0);
	assert_int_equal(get_inflight(&f, 2, QSIZE, &b, &fd2), VL_OK);
	assert_int_equal(inflight_kib(), kib);
	close(fd2);
	/* SET: too small for its queues, past its file, count and size; the area in force
	 * stays. */
	b = a;
	b.mmap_size = a.mmap_size - 64;
	assert_int_equal(set_inflight(&f, &b, fd), VL_ERR_INFLIGHT);
	b = a;
	b.mmap_offset = 4096;
	assert_int_equal(set_inflight(&f, &b, fd), VL_ERR_VU_FILE_SHORT);
	b = a;
	b.num_queues = 200;
	assert_int_equal(set_inflight(&f, &b, fd), VL_ERR_INFLIGHT);
	b = a;
	b.queue_size = 0;
	assert_int_equal(set_inflight(&f, &b, fd), VL_ERR_QUEUE_SIZE);
	assert_int_equal(vuf_msg(&f, VUF_SET_INFLIGHT_FD, VUF_F_VERSION, &a, sizeof(a), NULL, 0),
			 VL_ERR_VU_FDS);
	assert_int_equal(vuf_msg(&f, VUF_SET_INFLIGHT_FD, VUF_F_VERSION, &a, 16, &fd, 1),
			 VL_ERR_VU_MSG);
	assert_int_equal(inflight_kib(), kib);
	/* An area made for 32 descriptors, a ring of 64: the ring does not start. */
	b = a;
	b.queue_size = 32;
	assert_int_equal(set_inflight(&f, &b, fd), VL_OK);
	struct vuf_region r = vuf_region(&f, 0, VUF_MEM_SIZE);
	uint8_t mt[8 + 32] = {1};
	int mfd = dup(f.mem_fd);
	uint64_t d, av, u;

	memcpy(mt + 8, &r, 32);
	assert_int_equal(vuf_msg(&f, VUF_SET_MEM_TABLE, VUF_F_VERSION, mt, sizeof(mt), &mfd, 1),
			 VL_OK);
	close(mfd);
	vuf_ring_uaddrs(&f, 1, &d, &av, &u);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 1, QSIZE), VL_OK);
	assert_int_equal(vuf_addr(&f, 1, 0, d, u, av, 0), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_ERR_INFLIGHT);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	/* The right size, but the front end wrote a version no back end writes. */
	assert_int_equal(set_inflight(&f, &a, fd), VL_OK);
	uint8_t *map = mmap(NULL, a.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	const uint16_t bad_version = 7;

	assert_true(map != MAP_FAILED);
	memcpy(map + a.mmap_size / 2 + 8, &bad_version, 2);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_ERR_INFLIGHT);
	/* An area in use (version 1, this ring's size) whose last batch cannot be undone: its
	 * used index lags the guest's (0, a new ring) by more than the ring holds, or the batch
	 * list starts at a head past the ring. Header: features u64, version, desc_num,
	 * last_batch_head, used_idx (u16 each). */
	uint8_t *q1 = map + a.mmap_size / 2;
	const uint16_t in_use[4] = {1, QSIZE, 0, (uint16_t)(0u - (QSIZE + 1u))};

	memcpy(q1 + 8, in_use, sizeof(in_use));
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_ERR_INFLIGHT);
	const uint16_t bad_head[4] = {1, QSIZE, QSIZE, 0xffff}; /* lag 1, head QSIZE */

	memcpy(q1 + 8, bad_head, sizeof(bad_head));
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_ERR_INFLIGHT);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	/* An area in use with two chains in flight (heads 3 and 1, taken at the same count, so
	 * they are taken again in head order): the ring starts; now neither message is taken
	 * while it runs. Descriptor states follow the 16-byte header, 16 bytes each: inflight
	 * u8, 5 bytes of padding, next u16, counter u64. */
	const uint16_t clean[4] = {1, QSIZE, 0, 0}; /* lag 0: no batch to undo */
	const uint64_t same_count = 5;

	memset(map, 0, a.mmap_size);
	memcpy(q1 + 8, clean, sizeof(clean));
	for (uint32_t h = 1; h <= 3; h += 2) {
		q1[16 + 16 * h] = 1;
		memcpy(q1 + 16 + 16 * h + 8, &same_count, 8);
	}
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 1, 1), VL_OK);
	assert_non_null(vl_vu_dev_queue(f.dev, 1));
	assert_int_equal(set_inflight(&f, &a, fd), VL_ERR_VU_STATE);
	assert_int_equal(get_inflight(&f, 2, QSIZE, &b, &fd2), VL_ERR_VU_STATE);
	munmap(map, a.mmap_size);
	close(fd);
	vuf_fini(&f);
	assert_int_equal(inflight_kib(), 0);
}

/* Packed rings are not tracked: with VIRTIO_F_RING_PACKED negotiated both messages are
 * refused with their own error (the descriptor that came with SET is closed, nothing is
 * mapped), and an area set up under split features keeps a packed ring from starting, so a
 * front end never believes chains would be resubmitted when they would not. */
static void test_inflight_refused_on_packed_rings(void **state)
{
	(void)state;
	struct vuf f;
	struct infl_desc a, b;
	int fd;
	const uint64_t packed = FEATURES | F(VL_F_RING_PACKED);

	/* The sizes of one queue's region (16-byte header + 16 per descriptor split, 32 + 32
	 * packed, each rounded up to 64): what GET_INFLIGHT_FD below hands out for split. */
	assert_int_equal(vl_inflight_queue_bytes(VL_LAYOUT_SPLIT, QSIZE), 1088);
	assert_int_equal(vl_inflight_queue_bytes(VL_LAYOUT_PACKED, QSIZE), 2112);
	vuf_init(&f, NULL);
	for (uint32_t q = 0; q < 2; q++)
		vuf_ring_init(&f, q, VL_LAYOUT_PACKED, QSIZE, false);
	const int fds0 = vuf_count_fds();

	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES, PROTO), VL_OK);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, packed), VL_OK);
	assert_int_equal(get_inflight(&f, 2, QSIZE, &a, &fd), VL_ERR_INFLIGHT_PACKED);
	assert_int_equal(fd, -1);
	assert_int_equal(inflight_kib(), 0);
	/* SET with an area the front end made itself: refused, its descriptor closed. */
	int own = memfd_create("fe-inflight", MFD_CLOEXEC);

	assert_true(own >= 0);
	assert_int_equal(ftruncate(own, 2 * 2112), 0);
	b = (struct infl_desc){2 * 2112, 0, 2, QSIZE, 0};
	assert_int_equal(set_inflight(&f, &b, own), VL_ERR_INFLIGHT_PACKED);
	close(own);
	assert_int_equal(inflight_kib(), 0);
	assert_int_equal(vuf_count_fds(), fds0);
	/* An area taken under split features, then the features renegotiated with packed rings
	 * (no ring ran): the packed ring does not start. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, FEATURES), VL_OK);
	assert_int_equal(get_inflight(&f, 2, QSIZE, &a, &fd), VL_OK);
	assert_int_equal(a.mmap_size, 2 * 1088);
	assert_int_equal(set_inflight(&f, &a, fd), VL_OK);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, packed), VL_OK);
	struct vuf_region r = vuf_region(&f, 0, VUF_MEM_SIZE);
	uint8_t mt[8 + 32] = {1};
	int mfd = dup(f.mem_fd);
	uint64_t d, av, u;

	memcpy(mt + 8, &r, 32);
	assert_int_equal(vuf_msg(&f, VUF_SET_MEM_TABLE, VUF_F_VERSION, mt, sizeof(mt), &mfd, 1),
			 VL_OK);
	close(mfd);
	vuf_ring_uaddrs(&f, 1, &d, &av, &u);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 1, QSIZE), VL_OK);
	assert_int_equal(vuf_addr(&f, 1, 0, d, u, av, 0), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_ERR_INFLIGHT_PACKED);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	close(fd);
	vuf_fini(&f);
	assert_int_equal(inflight_kib(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_resubmits_the_chains_in_flight),
		cmocka_unit_test(test_crash_after_publishing_a_batch),
		cmocka_unit_test(test_without_inflight_a_returned_chain_comes_again),
		cmocka_unit_test(test_inflight_bad_inputs),
		cmocka_unit_test(test_inflight_refused_on_packed_rings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* The fake front end of the vhost-user tests (vu_fixture.h). */
#define _GNU_SOURCE /* memfd_create, eventfd */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_send.h"
#include "vu_fixture.h"

/* Split ring areas inside a ring's stride (room for 4096 entries). */
#define SPLIT_AVAIL_OFF 0x10000u
#define SPLIT_USED_OFF 0x20000u
#define PACKED_DRIVER_OFF 0x10000u
#define PACKED_DEVICE_OFF 0x10010u
/* Buffer slots: after the ring area, VUF_SLOTS per ring. */
#define VUF_SLOTS 256u

int vuf_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n; /* ".", ".." and the directory's own fd included: the same every time */
}

static void on_ready(struct vl_vu_dev *dev, void *opaque, uint32_t qidx, bool ready)
{
	struct vuf *f = opaque;

	assert_ptr_equal(dev, f->dev);
	assert_true(qidx < 2 * VL_VU_MAX_QUEUE_PAIRS);
	/* Each report is a change. */
	assert_int_not_equal(f->ready[qidx], ready);
	f->ready[qidx] = ready;
	f->ready_events++;
	/* The accessor agrees: ready means the queue is there. Not ready comes before the
	 * queue is destroyed: it is still safe to touch (ASan would see otherwise). */
	struct vl_vq *q = vl_vu_dev_queue(dev, qidx);

	if (ready)
		assert_non_null(q);
	if (q)
		assert_true(vl_vq_stats(q)->bursts < UINT64_MAX);
}

static void on_mem(struct vl_vu_dev *dev, void *opaque)
{
	struct vuf *f = opaque;

	assert_ptr_equal(dev, f->dev);
	assert_non_null(vl_vu_dev_mem(dev));
	f->mem_events++;
}

static void on_status(struct vl_vu_dev *dev, void *opaque, uint8_t status)
{
	struct vuf *f = opaque;

	assert_ptr_equal(dev, f->dev);
	f->last_status = status;
	f->status_events++;
}

static void on_announce(struct vl_vu_dev *dev, void *opaque, const uint8_t mac[6])
{
	struct vuf *f = opaque;

	assert_ptr_equal(dev, f->dev);
	memcpy(f->last_mac, mac, sizeof(f->last_mac));
	f->announce_events++;
}

void vuf_init(struct vuf *f, const struct vl_vu_config *cfg)
{
	int sv[2], err = -1;

	memset(f, 0, sizeof(*f));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->fe = sv[0];
	f->be = sv[1];
	if (cfg)
		f->cfg = *cfg;
	else
		vl_vu_config_init(&f->cfg);
	f->cfg.cb.queue_ready = on_ready;
	f->cfg.cb.mem_changed = on_mem;
	f->cfg.cb.status_changed = on_status;
	f->cfg.cb.announce = on_announce;
	f->cfg.opaque = f;
	f->dev = vl_vu_dev_create(&f->cfg, &err);
	assert_non_null(f->dev);
	assert_int_equal(err, VL_OK);

	f->mem_fd = memfd_create("vuf-guest", MFD_CLOEXEC);
	assert_true(f->mem_fd >= 0);
	assert_int_equal(ftruncate(f->mem_fd, (off_t)VUF_MEM_SIZE), 0);
	f->mem = mmap(NULL, VUF_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->mem_fd, 0);
	assert_true(f->mem != MAP_FAILED);
	f->pool = vl_pool_create(1024, 2048);
	assert_non_null(f->pool);
	for (uint32_t i = 0; i < VUF_MAX_RINGS; i++)
		f->kick[i] = f->call[i] = -1;
}

void vuf_fini(struct vuf *f)
{
	vl_vu_dev_destroy(f->dev);
	close(f->fe);
	close(f->be);
	munmap(f->mem, VUF_MEM_SIZE);
	close(f->mem_fd);
	for (uint32_t i = 0; i < VUF_MAX_RINGS; i++) {
		if (f->kick[i] >= 0)
			close(f->kick[i]);
		if (f->call[i] >= 0)
			close(f->call[i]);
		free(f->ring[i].fifo);
		free(f->ring[i].pend_id);
		free(f->ring[i].pend_len);
	}
	assert_int_equal(vl_pool_destroy(f->pool), 0);
}

struct vuf_region vuf_region(const struct vuf *f, uint64_t off, uint64_t size)
{
	struct vuf_region r = {
		.gpa = VUF_GPA + off,
		.size = size,
		.uaddr = (uint64_t)(uintptr_t)f->mem + off,
		.offset = off,
	};

	return r;
}

/* ---- messages --------------------------------------------------------------------------- */

void vuf_send(struct vuf *f, uint32_t request, uint32_t flags, const void *payload,
	      uint32_t size, const int *fds, uint32_t nfds)
{
	uint8_t buf[12 + 512];
	uint32_t hdr[3] = {request, flags, size};

	assert_true(size <= 512);
	memcpy(buf, hdr, 12);
	if (size)
		memcpy(buf + 12, payload, size);
	assert_int_equal(lab_fd_send(f->fe, buf, 12 + size, fds, nfds), (ssize_t)(12 + size));
}

int vuf_msg(struct vuf *f, uint32_t request, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, uint32_t nfds)
{
	vuf_send(f, request, flags, payload, size, fds, nfds);
	return vl_vu_dev_handle(f->dev, f->be);
}

int vuf_u64(struct vuf *f, uint32_t request, uint64_t v)
{
	return vuf_msg(f, request, VUF_F_VERSION, &v, 8, NULL, 0);
}

int vuf_state(struct vuf *f, uint32_t request, uint32_t index, uint32_t num)
{
	uint32_t st[2] = {index, num};

	return vuf_msg(f, request, VUF_F_VERSION, st, 8, NULL, 0);
}

int vuf_none(struct vuf *f, uint32_t request)
{
	return vuf_msg(f, request, VUF_F_VERSION, NULL, 0, NULL, 0);
}

int vuf_ring_fd(struct vuf *f, uint32_t request, uint64_t index, int fd)
{
	uint64_t v = index | (fd < 0 ? VUF_NOFD : 0);

	return vuf_msg(f, request, VUF_F_VERSION, &v, 8, fd < 0 ? NULL : &fd, fd < 0 ? 0 : 1);
}

int vuf_addr(struct vuf *f, uint32_t index, uint32_t flags, uint64_t desc, uint64_t used,
	     uint64_t avail, uint64_t log)
{
	struct {
		uint32_t index, flags;
		uint64_t desc, used, avail, log;
	} a = {index, flags, desc, used, avail, log};

	return vuf_msg(f, VUF_SET_VRING_ADDR, VUF_F_VERSION, &a, sizeof(a), NULL, 0);
}

int vuf_mem_table(struct vuf *f, const struct vuf_region *r, uint32_t n)
{
	uint8_t p[8 + 8 * 32] = {0};
	int fds[8];
	uint32_t nn = n;

	assert_true(n <= 8);
	memcpy(p, &nn, 4);
	for (uint32_t i = 0; i < n; i++) {
		memcpy(p + 8 + 32 * i, &r[i], 32);
		fds[i] = dup(f->mem_fd);
		assert_true(fds[i] >= 0);
	}
	int rc = vuf_msg(f, VUF_SET_MEM_TABLE, VUF_F_VERSION, p, 8 + 32 * n, fds, n);

	for (uint32_t i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}

uint64_t vuf_reply(struct vuf *f, uint32_t request, uint32_t *size)
{
	uint32_t hdr[3];
	uint8_t payload[64] = {0};
	uint64_t v = 0;

	assert_int_equal(recv(f->fe, hdr, 12, MSG_DONTWAIT), 12);
	assert_int_equal(hdr[0], request);
	assert_int_equal(hdr[1], VUF_F_VERSION | VUF_F_REPLY);
	assert_true(hdr[2] <= sizeof(payload));
	if (hdr[2])
		assert_int_equal(recv(f->fe, payload, hdr[2], MSG_DONTWAIT), (ssize_t)hdr[2]);
	if (size)
		*size = hdr[2];
	if (request == VUF_GET_VRING_BASE) {
		uint32_t num;

		memcpy(&num, payload + 4, 4);
		return num;
	}
	memcpy(&v, payload, sizeof(v));
	return v;
}

void vuf_no_reply(struct vuf *f)
{
	uint8_t b;

	assert_int_equal(recv(f->fe, &b, 1, MSG_DONTWAIT), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
}

uint64_t vuf_get(struct vuf *f, uint32_t request)
{
	uint32_t size;

	assert_int_equal(vuf_none(f, request), VL_OK);
	uint64_t v = vuf_reply(f, request, &size);

	assert_int_equal(size, 8);
	return v;
}

/* ---- the guest's rings ------------------------------------------------------------------ */

static uint64_t ring_base_off(uint32_t qidx)
{
	return qidx * VUF_RING_STRIDE;
}

void vuf_ring_init(struct vuf *f, uint32_t qidx, enum vl_layout layout, uint32_t size,
		   bool in_order)
{
	struct vuf_ring *r = &f->ring[qidx];
	uint64_t base = ring_base_off(qidx);

	assert_true(qidx < VUF_MAX_RINGS && size <= 4096);
	free(r->fifo);
	free(r->pend_id);
	free(r->pend_len);
	memset(r, 0, sizeof(*r));
	r->layout = layout;
	r->size = size;
	r->in_order = in_order;
	r->desc_gpa = VUF_GPA + base;
	if (layout == VL_LAYOUT_PACKED) {
		r->driver_gpa = VUF_GPA + base + PACKED_DRIVER_OFF;
		r->device_gpa = VUF_GPA + base + PACKED_DEVICE_OFF;
		r->avail_wrap = r->used_wrap = true;
		r->fifo = calloc(size, sizeof(*r->fifo));
		r->pend_id = calloc(size, sizeof(*r->pend_id));
		r->pend_len = calloc(size, sizeof(*r->pend_len));
		assert_true(r->fifo && r->pend_id && r->pend_len);
	} else {
		r->driver_gpa = VUF_GPA + base + SPLIT_AVAIL_OFF;
		r->device_gpa = VUF_GPA + base + SPLIT_USED_OFF;
	}
	r->desc = f->mem + (r->desc_gpa - VUF_GPA);
	r->driver = f->mem + (r->driver_gpa - VUF_GPA);
	r->device = f->mem + (r->device_gpa - VUF_GPA);
	memset(f->mem + base, 0, VUF_RING_STRIDE);
	r->buf_gpa = VUF_GPA + VUF_RING_AREA + (uint64_t)qidx * VUF_SLOTS * VUF_BUF_SIZE;
}

void vuf_ring_uaddrs(const struct vuf *f, uint32_t qidx, uint64_t *desc, uint64_t *avail,
		     uint64_t *used)
{
	const struct vuf_ring *r = &f->ring[qidx];
	uint64_t ua = (uint64_t)(uintptr_t)f->mem - VUF_GPA;

	*desc = ua + r->desc_gpa;
	*avail = ua + r->driver_gpa;
	*used = ua + r->device_gpa;
}

void vuf_ring_setup(struct vuf *f, uint32_t qidx)
{
	const struct vuf_ring *r = &f->ring[qidx];
	uint64_t d, a, u;

	assert_int_equal(vuf_state(f, VUF_SET_VRING_NUM, qidx, r->size), VL_OK);
	assert_int_equal(vuf_state(f, VUF_SET_VRING_BASE, qidx,
				   r->layout == VL_LAYOUT_PACKED ? 0x8000u : 0u), VL_OK);
	vuf_ring_uaddrs(f, qidx, &d, &a, &u);
	assert_int_equal(vuf_addr(f, qidx, 0, d, u, a, 0), VL_OK);
	if (f->kick[qidx] >= 0)
		close(f->kick[qidx]);
	f->kick[qidx] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(f->kick[qidx] >= 0);
	assert_int_equal(vuf_ring_fd(f, VUF_SET_VRING_KICK, qidx, f->kick[qidx]), VL_OK);
}

uint8_t *vuf_buf(struct vuf *f, uint32_t qidx, uint32_t id)
{
	assert_true(id < VUF_SLOTS);
	return f->mem + (f->ring[qidx].buf_gpa - VUF_GPA) + (uint64_t)id * VUF_BUF_SIZE;
}

/* The id of the next buffer: ids go round robin, and the tests never post more than the
 * ring holds, so the next one is free. */
static int next_id(struct vuf_ring *r)
{
	if (r->in_flight >= r->size || r->in_flight >= VUF_SLOTS)
		return -1;
	uint32_t id = r->next_id;

	r->next_id = (r->next_id + 1) % (r->size < VUF_SLOTS ? r->size : VUF_SLOTS);
	r->in_flight++;
	return (int)id;
}

static int post(struct vuf *f, uint32_t qidx, uint32_t len, uint16_t flags)
{
	struct vuf_ring *r = &f->ring[qidx];
	int id = next_id(r);

	if (id < 0)
		return -1;
	uint64_t addr = r->buf_gpa + (uint64_t)id * VUF_BUF_SIZE;

	if (r->layout == VL_LAYOUT_SPLIT) {
		struct vl_split_desc *d = (struct vl_split_desc *)r->desc + id;
		struct vl_split_avail *av = r->driver;

		d->addr = addr;
		d->len = len;
		d->flags = flags;
		d->next = 0;
		av->ring[r->avail_idx % r->size] = (uint16_t)id;
		r->avail_idx++;
		__atomic_store_n(&av->idx, r->avail_idx, __ATOMIC_RELEASE);
	} else {
		struct vl_packed_desc *d = (struct vl_packed_desc *)r->desc + r->avail_pos;
		uint16_t pf = r->avail_wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED;

		d->addr = addr;
		d->len = len;
		d->id = (uint16_t)id;
		__atomic_store_n(&d->flags, (uint16_t)(flags | pf), __ATOMIC_RELEASE);
		if (++r->avail_pos == r->size) {
			r->avail_pos = 0;
			r->avail_wrap = !r->avail_wrap;
		}
		r->fifo[(r->fifo_head + r->fifo_count) % r->size] = (uint16_t)id;
		r->fifo_count++;
	}
	return id;
}

int vuf_post_tx(struct vuf *f, uint32_t qidx, uint32_t len, uint32_t seed)
{
	struct vuf_ring *r = &f->ring[qidx];

	assert_true(VUF_HDR_LEN + len <= VUF_BUF_SIZE);
	if (r->in_flight >= r->size || r->in_flight >= VUF_SLOTS)
		return -1;
	uint8_t *b = vuf_buf(f, qidx, r->next_id);

	memset(b, 0, VUF_HDR_LEN);
	vuf_fill(b + VUF_HDR_LEN, len, seed);
	return post(f, qidx, VUF_HDR_LEN + len, 0);
}

int vuf_post_rx(struct vuf *f, uint32_t qidx, uint32_t cap)
{
	struct vuf_ring *r = &f->ring[qidx];

	assert_true(cap <= VUF_BUF_SIZE);
	if (r->in_flight >= r->size || r->in_flight >= VUF_SLOTS)
		return -1;
	memset(vuf_buf(f, qidx, r->next_id), 0xa5, cap);
	return post(f, qidx, cap, VL_DESC_F_WRITE);
}

/* Packed in-order: one used descriptor may stand for a batch ending with its id; the earlier
 * buffers of the batch are handed out first, with length 0 (TX). */
bool vuf_pop_used(struct vuf *f, uint32_t qidx, uint32_t *id, uint32_t *len)
{
	struct vuf_ring *r = &f->ring[qidx];

	if (r->pend_n) {
		*id = r->pend_id[r->pend_head];
		*len = r->pend_len[r->pend_head];
		r->pend_head++;
		r->pend_n--;
		r->in_flight--;
		return true;
	}
	r->pend_head = 0;
	if (r->layout == VL_LAYOUT_SPLIT) {
		struct vl_split_used *u = r->device;

		if (__atomic_load_n(&u->idx, __ATOMIC_ACQUIRE) == r->used_idx)
			return false;
		*id = u->ring[r->used_idx % r->size].id;
		*len = u->ring[r->used_idx % r->size].len;
		r->used_idx++;
		r->in_flight--;
		assert_true(*id < r->size);
		return true;
	}
	struct vl_packed_desc *d = (struct vl_packed_desc *)r->desc + r->used_pos;
	uint16_t fl = __atomic_load_n(&d->flags, __ATOMIC_ACQUIRE);
	bool av = (fl & VL_PDESC_F_AVAIL) != 0, us = (fl & VL_PDESC_F_USED) != 0;

	if (av != r->used_wrap || us != r->used_wrap)
		return false;
	uint16_t uid = d->id;
	uint32_t ulen = d->len;
	uint32_t skip = 0;

	/* Buffers come back in posting order here; in-order batches fold several. */
	do {
		assert_true(r->fifo_count > 0);
		uint16_t head = r->fifo[r->fifo_head];

		r->fifo_head = (r->fifo_head + 1) % r->size;
		r->fifo_count--;
		r->pend_id[skip] = head;
		r->pend_len[skip] = head == uid ? ulen : 0;
		skip++;
		if (head == uid)
			break;
		assert_true(r->in_order);
	} while (1);
	r->used_pos = (uint16_t)(r->used_pos + skip);
	while (r->used_pos >= r->size) {
		r->used_pos = (uint16_t)(r->used_pos - r->size);
		r->used_wrap = !r->used_wrap;
	}
	r->pend_n = skip;
	return vuf_pop_used(f, qidx, id, len);
}

/* ---- the DPDK start-up sequence --------------------------------------------------------- */

void vuf_dpdk_start(struct vuf *f, uint64_t features, enum vl_layout layout, uint32_t qsize,
		    uint32_t nrings)
{
	const uint64_t proto = VL_FEATURE(VL_VU_PROTOCOL_F_MQ) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_STATUS);
	uint64_t st;
	struct vuf_region r = vuf_region(f, 0, VUF_MEM_SIZE);
	uint8_t mt[8 + 32] = {1};

	assert_int_equal(vuf_none(f, VUF_SET_OWNER), VL_OK);
	assert_int_equal(vuf_get(f, VUF_GET_FEATURES), f->cfg.features);
	assert_int_equal(vuf_get(f, VUF_GET_PROTOCOL_FEATURES), f->cfg.protocol_features);
	assert_int_equal(vuf_u64(f, VUF_SET_PROTOCOL_FEATURES, proto), VL_OK);
	for (uint32_t q = 0; q < nrings; q++) {
		f->call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_true(f->call[q] >= 0);
		assert_int_equal(vuf_ring_fd(f, VUF_SET_VRING_CALL, q, f->call[q]), VL_OK);
	}
	assert_int_equal(vuf_u64(f, VUF_SET_FEATURES, features), VL_OK);
	/* ACKNOWLEDGE | DRIVER | FEATURES_OK, with REPLY_ACK as DPDK asks for it. */
	st = 0xb;
	assert_int_equal(vuf_msg(f, VUF_SET_STATUS, VUF_F_VERSION | VUF_F_NEED_REPLY, &st, 8, NULL,
				 0), VL_OK);
	assert_int_equal(vuf_reply(f, VUF_SET_STATUS, NULL), 0);
	assert_int_equal(vuf_get(f, VUF_GET_STATUS), 0xb);
	assert_int_equal(vuf_get(f, VUF_GET_STATUS), 0xb);
	memcpy(mt + 8, &r, 32);
	int fd = dup(f->mem_fd);

	assert_int_equal(vuf_msg(f, VUF_SET_MEM_TABLE, VUF_F_VERSION | VUF_F_NEED_REPLY, mt,
				 sizeof(mt), &fd, 1), VL_OK);
	close(fd);
	assert_int_equal(vuf_reply(f, VUF_SET_MEM_TABLE, NULL), 0);
	for (uint32_t q = 0; q < nrings; q++) {
		vuf_ring_init(f, q, layout, qsize,
			      (features & VL_FEATURE(VL_F_IN_ORDER)) != 0);
		vuf_ring_setup(f, q);
		/* Started, not yet enabled: protocol features were negotiated. */
		assert_null(vl_vu_dev_queue(f->dev, q));
	}
	/* Enabled, but the front end writes the status and DRIVER_OK is not in it yet: the
	 * rings wait for it (docs/lifecycle.md, "Reset and status"). */
	for (uint32_t q = 0; q < nrings; q++) {
		assert_int_equal(vuf_state(f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
		assert_null(vl_vu_dev_queue(f->dev, q));
		assert_false(f->ready[q]);
	}
	st = 0xf; /* DRIVER_OK */
	assert_int_equal(vuf_msg(f, VUF_SET_STATUS, VUF_F_VERSION | VUF_F_NEED_REPLY, &st, 8, NULL,
				 0), VL_OK);
	assert_int_equal(vuf_reply(f, VUF_SET_STATUS, NULL), 0);
	assert_int_equal(f->last_status, 0xf);
	for (uint32_t q = 0; q < nrings; q++) {
		assert_non_null(vl_vu_dev_queue(f->dev, q));
		assert_true(f->ready[q]);
	}
	vuf_no_reply(f);
}

/* ---- payloads and the host side --------------------------------------------------------- */

void vuf_fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (uint32_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

bool vuf_check(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint8_t want[VUF_BUF_SIZE];

	if (len > sizeof(want))
		return false;
	vuf_fill(want, len, seed);
	return memcmp(p, want, len) == 0;
}

uint32_t vuf_host_tx(struct vuf *f, uint32_t qidx, uint32_t len, uint32_t *seed)
{
	struct vl_vq *vq = vl_vu_dev_queue(f->dev, qidx);
	struct vl_pkt *pkts[64];
	uint8_t data[VUF_BUF_SIZE];

	assert_non_null(vq);
	uint16_t n = vl_net_dequeue(vq, f->pool, pkts, 64);

	for (uint16_t i = 0; i < n; i++) {
		assert_int_equal(pkts[i]->pkt_len, len);
		assert_int_equal(vl_pkt_read(pkts[i], 0, data, len), len);
		assert_true(vuf_check(data, len, (*seed)++));
		vl_pkt_free(pkts[i]);
	}
	return n;
}

uint32_t vuf_host_rx(struct vuf *f, uint32_t qidx, uint32_t n, uint32_t len, uint32_t seed)
{
	struct vl_vq *vq = vl_vu_dev_queue(f->dev, qidx);
	struct vl_pkt *pkts[64];
	uint8_t data[VUF_BUF_SIZE], st[64];

	assert_non_null(vq);
	assert_true(n <= 64 && len <= sizeof(data));
	for (uint32_t i = 0; i < n; i++) {
		pkts[i] = vl_pkt_alloc_len(f->pool, len);
		assert_non_null(pkts[i]);
		vuf_fill(data, len, seed + i);
		assert_int_equal(vl_pkt_write(pkts[i], 0, data, len), len);
	}
	uint16_t done = vl_net_enqueue(vq, pkts, (uint16_t)n, st);

	for (uint32_t i = 0; i < done; i++)
		assert_int_equal(st[i], VL_RX_DELIVERED);
	vl_pkt_free_bulk(pkts, n);
	return done;
}

void vuf_still_moves(struct vuf *f, uint32_t seed)
{
	uint32_t id, len, s = seed;

	assert_true(vuf_post_tx(f, 1, 100, seed) >= 0);
	assert_int_equal(vuf_host_tx(f, 1, 100, &s), 1);
	assert_true(vuf_pop_used(f, 1, &id, &len));
	assert_true(vuf_post_rx(f, 0, VUF_BUF_SIZE) >= 0);
	assert_int_equal(vuf_host_rx(f, 0, 1, 200, seed), 1);
	assert_true(vuf_pop_used(f, 0, &id, &len));
	assert_int_equal(len, VUF_HDR_LEN + 200);
	assert_true(vuf_check(vuf_buf(f, 0, id) + VUF_HDR_LEN, 200, seed));
}

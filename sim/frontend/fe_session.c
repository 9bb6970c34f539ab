/* SPDX-License-Identifier: MIT */
/* One vhost-user session of the lab's front end (fe_session.h). */
#include "fe_session.h"
#include "fe_record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define RAM_SIZE (4ull << 20)
#define MAX_REGIONS LAB_FE_MAX_REGIONS

static uint64_t queue_area(enum vl_layout layout)
{
	uint64_t n = lab_ring_area_bytes(layout, LAB_FE_MAX_QUEUE_SIZE);

	return (n + LAB_PAGE_SIZE - 1) / LAB_PAGE_SIZE * LAB_PAGE_SIZE;
}

void lab_fe_session_open(struct lab_fe_session *s, int sock, enum vl_layout layout,
			 int timeout_ms)
{
	memset(s, 0, sizeof(*s));
	s->c.sock = sock;
	s->c.timeout_ms = timeout_ms;
	s->layout = layout;
	for (uint32_t i = 0; i < LAB_FE_QUEUES; i++)
		s->q[i].kick = s->q[i].call = -1;
}

int lab_fe_session_init(struct lab_fe_session *s, int sock, enum vl_layout layout,
			int timeout_ms, char *err, size_t errlen)
{
	struct lab_gmem_config cfg;

	lab_fe_session_open(s, sock, layout, timeout_ms);
	lab_fe_session_gmem_config(layout, &cfg);
	s->g = lab_gmem_create(&cfg, err, errlen);
	return s->g ? 0 : -1;
}

void lab_fe_session_gmem_config(enum vl_layout layout, struct lab_gmem_config *cfg)
{
	/* Coarse RAM: the ring area and four RAM regions, inside one SET_MEM_TABLE. */
	*cfg = (struct lab_gmem_config){.ram_size = RAM_SIZE,
					.ring_area_size = LAB_FE_QUEUES * queue_area(layout),
					.granularity = 0, .seed = 57};
}

void lab_fe_session_init_on(struct lab_fe_session *s, int sock, enum vl_layout layout,
			    int timeout_ms, struct lab_gmem *g)
{
	lab_fe_session_open(s, sock, layout, timeout_ms);
	s->g = g;
	s->g_borrowed = true;
}

void lab_fe_session_fini(struct lab_fe_session *s)
{
	for (uint32_t i = 0; i < LAB_FE_QUEUES; i++) {
		if (s->q[i].started)
			lab_ring_fini(&s->q[i].ring);
		if (s->q[i].kick >= 0)
			close(s->q[i].kick);
		if (s->q[i].call >= 0)
			close(s->q[i].call);
	}
	if (s->c.sock >= 0)
		close(s->c.sock);
	if (s->g && !s->g_borrowed)
		lab_gmem_destroy(s->g);
	s->c.sock = -1;
	s->g = NULL;
}

enum lab_fe_rc lab_fe_get_u64(struct lab_fe_session *s, uint32_t request, uint64_t *v)
{
	enum lab_fe_rc rc = lab_fe_send(&s->c, request, LAB_FE_F_VERSION, NULL, 0, NULL, 0);

	return rc != LAB_FE_OK ? rc : lab_fe_reply(&s->c, request, v, sizeof(*v));
}

enum lab_fe_rc lab_fe_set(struct lab_fe_session *s, uint32_t request, const void *payload,
			  uint32_t size, const int *fds, size_t nfds)
{
	uint32_t flags = LAB_FE_F_VERSION | (s->reply_ack ? LAB_FE_F_NEED_REPLY : 0);
	enum lab_fe_rc rc = lab_fe_send(&s->c, request, flags, payload, size, fds, nfds);

	if (rc != LAB_FE_OK || !s->reply_ack)
		return rc;
	uint64_t ack;

	rc = lab_fe_reply(&s->c, request, &ack, sizeof(ack));
	if (rc == LAB_FE_OK && ack != 0) {
		snprintf(s->c.what, sizeof(s->c.what), "%s refused: REPLY_ACK status %" PRIu64,
			 lab_fe_request_name(request), ack);
		return LAB_FE_NACK;
	}
	return rc;
}

enum lab_fe_rc lab_fe_negotiate(struct lab_fe_session *s, uint64_t want)
{
	enum lab_fe_rc rc = lab_fe_get_u64(s, LAB_FE_GET_FEATURES, &s->offered);

	if (rc != LAB_FE_OK)
		return rc;
	const uint64_t offered = s->offered;

	if (!(offered & VL_FEATURE(VL_F_VERSION_1))) {
		snprintf(s->c.what, sizeof(s->c.what), "GET_FEATURES offered 0x%" PRIx64
			 " without VERSION_1 (bit 32): the probe drives virtio 1.x only", offered);
		return LAB_FE_ERROR;
	}
	uint64_t layout_bit = VL_FEATURE(VL_F_RING_PACKED);
	uint64_t ack = offered & want & (LAB_FE_DRIVER_FEATURES | s->features_extra) & ~layout_bit;

	if (s->layout == VL_LAYOUT_PACKED) {
		if (!(offered & layout_bit)) {
			snprintf(s->c.what, sizeof(s->c.what), "RING_PACKED (bit 34) not offered "
				 "(features 0x%" PRIx64 ")", offered);
			return LAB_FE_ERROR;
		}
		ack |= layout_bit;
	}
	return lab_fe_ack_features(s, ack);
}

enum lab_fe_rc lab_fe_ack_features(struct lab_fe_session *s, uint64_t ack)
{
	enum lab_fe_rc rc;

	if (ack & VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES)) {
		rc = lab_fe_get_u64(s, LAB_FE_GET_PROTOCOL_FEATURES, &s->proto_offered);
		if (rc != LAB_FE_OK)
			return rc;
		s->proto_acked = s->proto_offered &
				 (VL_FEATURE(LAB_FE_PROTOCOL_F_REPLY_ACK) | s->proto_want);
		rc = lab_fe_set(s, LAB_FE_SET_PROTOCOL_FEATURES, &s->proto_acked, 8, NULL, 0);
		if (rc != LAB_FE_OK)
			return rc;
		s->reply_ack = (s->proto_acked & VL_FEATURE(LAB_FE_PROTOCOL_F_REPLY_ACK)) != 0;
	}
	rc = lab_fe_set(s, LAB_FE_SET_OWNER, NULL, 0, NULL, 0);
	if (rc != LAB_FE_OK)
		return rc;
	s->acked = ack;
	return lab_fe_set(s, LAB_FE_SET_FEATURES, &ack, 8, NULL, 0);
}

enum lab_fe_rc lab_fe_set_mem_table(struct lab_fe_session *s)
{
	uint32_t n;
	const struct vl_mem_region *r = lab_gmem_regions(s->g, &n);
	struct vl_mem_region t[MAX_REGIONS];

	/* The regions' offsets in the one memfd, as lab_fe_send_mem_table takes them. */
	for (uint32_t i = 0; i < n && i < MAX_REGIONS; i++) {
		t[i] = r[i];
		t[i].mmap_offset = lab_gmem_region_memfd_offset(s->g, i);
	}
	return lab_fe_send_mem_table(s, t, n, lab_gmem_memfd(s->g));
}

enum lab_fe_rc lab_fe_send_mem_table(struct lab_fe_session *s, const struct vl_mem_region *r,
				     uint32_t n, int fd)
{
	if (n > MAX_REGIONS) {
		snprintf(s->c.what, sizeof(s->c.what), "guest RAM has %u regions, SET_MEM_TABLE "
			 "carries %u", n, MAX_REGIONS);
		return LAB_FE_ERROR;
	}
	/* struct VhostUserMemory: u32 nregions, u32 padding, then per region guest_phys_addr,
	 * memory_size, userspace_addr, mmap_offset (u64 each), one fd per region. */
	uint8_t payload[8 + MAX_REGIONS * 32];
	int fds[MAX_REGIONS];
	uint32_t pad = 0;

	memcpy(payload, &n, 4);
	memcpy(payload + 4, &pad, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t f[4] = {r[i].gpa, r[i].size, r[i].uaddr, r[i].mmap_offset};

		memcpy(payload + 8 + i * 32, f, sizeof(f));
		fds[i] = fd;
	}
	return lab_fe_set(s, LAB_FE_SET_MEM_TABLE, payload, 8 + n * 32, fds, n);
}

static enum lab_fe_rc send_state(struct lab_fe_session *s, uint32_t request, uint32_t index,
				 uint32_t num)
{
	uint32_t st[2] = {index, num};

	return lab_fe_set(s, request, st, sizeof(st), NULL, 0);
}

static enum lab_fe_rc send_fd(struct lab_fe_session *s, uint32_t request, uint32_t qidx, int fd)
{
	uint64_t v = qidx;

	return lab_fe_set(s, request, &v, sizeof(v), &fd, 1);
}

/* struct vhost_vring_addr: index, flags, then desc, used, avail, log (u64 from byte 8). */
static enum lab_fe_rc send_addr(struct lab_fe_session *s, const struct lab_fe_vring *v)
{
	uint8_t p[40];
	uint32_t head[2] = {v->index, 0};
	uint64_t a[4] = {v->desc, v->used, v->avail, 0};

	memcpy(p, head, sizeof(head));
	memcpy(p + 8, a, sizeof(a));
	return lab_fe_set(s, LAB_FE_SET_VRING_ADDR, p, sizeof(p), NULL, 0);
}

enum lab_fe_rc lab_fe_vring_setup(struct lab_fe_session *s, const struct lab_fe_vring *v)
{
	enum lab_fe_rc rc = send_state(s, LAB_FE_SET_VRING_NUM, v->index, v->size);

	if (rc == LAB_FE_OK)
		rc = send_state(s, LAB_FE_SET_VRING_BASE, v->index, v->base);
	if (rc == LAB_FE_OK)
		rc = send_addr(s, v);
	if (rc == LAB_FE_OK)
		rc = send_fd(s, LAB_FE_SET_VRING_KICK, v->index, v->kick);
	if (rc == LAB_FE_OK)
		rc = send_fd(s, LAB_FE_SET_VRING_CALL, v->index, v->call);
	if (rc == LAB_FE_OK && (s->acked & VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES)))
		rc = lab_fe_enable(s, v->index, true);
	return rc;
}

enum lab_fe_rc lab_fe_queue_start(struct lab_fe_session *s, uint32_t qidx, uint32_t size,
				  uint16_t start)
{
	struct lab_fe_queue *q = &s->q[qidx];
	bool in_order = s->acked & VL_FEATURE(VL_F_IN_ORDER);
	bool event_idx = s->acked & VL_FEATURE(VL_F_RING_EVENT_IDX);
	uint64_t gpa = lab_gmem_ring_gpa(s->g) + qidx * queue_area(s->layout);

	if (lab_ring_init(&q->ring, s->layout, s->g, gpa, size, start, in_order, event_idx) != 0) {
		snprintf(s->c.what, sizeof(s->c.what), "ring %u of size %u: no memory", qidx, size);
		return LAB_FE_ERROR;
	}
	q->started = true;
	q->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	q->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->kick < 0 || q->call < 0) {
		snprintf(s->c.what, sizeof(s->c.what), "eventfd: %s", strerror(errno));
		return LAB_FE_ERROR;
	}
	struct vl_vq_config cfg;

	lab_ring_device_config(&q->ring, &cfg);
	/* Packed (vhost-user.rst, SET_VRING_BASE): avail index and wrap in bits 0-15, the used
	 * ones in 16-31; at a fresh start the two are the same. */
	uint32_t base = s->layout == VL_LAYOUT_PACKED ?
				(uint32_t)cfg.last_avail_idx | (uint32_t)cfg.last_used_idx << 16 :
				cfg.last_avail_idx;

	return lab_fe_queue_resume(s, qidx, base);
}

/* The lab's region table maps every gpa at user address == gpa (guest_mem.c), so the
 * "user addresses" of SET_VRING_ADDR are the rings' guest-physical addresses. */
static enum lab_fe_rc queue_resume(struct lab_fe_session *s, uint32_t qidx, uint32_t base)
{
	struct lab_fe_queue *q = &s->q[qidx];
	struct vl_vq_config cfg;

	lab_ring_device_config(&q->ring, &cfg);
	struct lab_fe_vring v = {.index = qidx, .size = q->ring.size, .base = base,
				 .desc = cfg.desc_gpa, .avail = cfg.driver_gpa,
				 .used = cfg.device_gpa, .kick = q->kick, .call = q->call};

	return lab_fe_vring_setup(s, &v);
}

enum lab_fe_rc lab_fe_queue_resume(struct lab_fe_session *s, uint32_t qidx, uint32_t base)
{
	const uint32_t sent = s->c.sent;
	struct lab_fe_rec *rec = s->rec;

	/* One `message vring-setup` says every message of it, the SET_VRING_ENABLE too: the
	 * recorder is off while they go. */
	s->rec = NULL;
	enum lab_fe_rc rc = queue_resume(s, qidx, base);

	s->rec = rec;
	if (s->rec)
		lab_fe_rec_message(s, LAB_TRACE_MSG_VRING_SETUP, qidx, base, s->c.sent - sent, rc);
	return rc;
}

enum lab_fe_rc lab_fe_bring_up(struct lab_fe_session *s, uint64_t want, uint32_t size,
			       uint16_t start)
{
	enum lab_fe_rc rc = lab_fe_negotiate(s, want);

	if (rc == LAB_FE_OK)
		rc = lab_fe_set_mem_table(s);
	for (uint32_t i = 0; i < LAB_FE_QUEUES && rc == LAB_FE_OK; i++)
		rc = lab_fe_queue_start(s, i, size, start);
	if (rc == LAB_FE_OK && s->rec)
		lab_fe_rec_up(s);
	return rc;
}

enum lab_fe_rc lab_fe_enable(struct lab_fe_session *s, uint32_t qidx, bool on)
{
	const uint32_t sent = s->c.sent;
	enum lab_fe_rc rc = send_state(s, LAB_FE_SET_VRING_ENABLE, qidx, on ? 1u : 0u);

	if (s->rec)
		lab_fe_rec_message(s, LAB_TRACE_MSG_VRING_ENABLE, qidx, on, s->c.sent - sent, rc);
	return rc;
}

static enum lab_fe_rc get_vring_base(struct lab_fe_session *s, uint32_t qidx, uint32_t *num)
{
	uint32_t st[2] = {qidx, 0};
	enum lab_fe_rc rc = lab_fe_send(&s->c, LAB_FE_GET_VRING_BASE, LAB_FE_F_VERSION, st,
					sizeof(st), NULL, 0);
	uint32_t reply[2];

	if (rc == LAB_FE_OK)
		rc = lab_fe_reply(&s->c, LAB_FE_GET_VRING_BASE, reply, sizeof(reply));
	if (rc != LAB_FE_OK)
		return rc;
	const uint32_t index = reply[0];

	if (index != qidx) {
		snprintf(s->c.what, sizeof(s->c.what), "GET_VRING_BASE for ring %u answered for "
			 "ring %u", qidx, index);
		return LAB_FE_BAD_REPLY;
	}
	*num = reply[1];
	return LAB_FE_OK;
}

enum lab_fe_rc lab_fe_get_vring_base(struct lab_fe_session *s, uint32_t qidx, uint32_t *num)
{
	const uint32_t sent = s->c.sent;
	enum lab_fe_rc rc = get_vring_base(s, qidx, num);

	if (s->rec)
		lab_fe_rec_message(s, LAB_TRACE_MSG_GET_VRING_BASE, qidx, 0, s->c.sent - sent, rc);
	return rc;
}

void lab_fe_kick(struct lab_fe_session *s, uint32_t qidx)
{
	uint64_t one = 1;

	if (s->rec)
		lab_fe_rec_kick(s, qidx);
	/* A full counter (2^64 - 2 kicks unread) is the back end's problem, not a lost kick. */
	if (write(s->q[qidx].kick, &one, sizeof(one)) != sizeof(one))
		return;
}

bool lab_fe_peer_gone(const struct lab_fe_session *s)
{
	struct pollfd p = {.fd = s->c.sock, .events = POLLIN};

	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLHUP | POLLERR))
		return true;
	uint8_t b;

	return recv(s->c.sock, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

uint64_t lab_fe_take_calls(struct lab_fe_session *s, uint32_t qidx)
{
	uint64_t n;

	if (read(s->q[qidx].call, &n, sizeof(n)) == sizeof(n))
		s->q[qidx].calls += n;
	return s->q[qidx].calls;
}

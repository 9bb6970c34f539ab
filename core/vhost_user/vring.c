/* SPDX-License-Identifier: MIT */
/* Ring messages: SET_VRING_NUM / ADDR / BASE / KICK / CALL / ERR / ENABLE, GET_VRING_BASE,
 * and the ring lifecycle behind them.
 *
 * A ring is started by SET_VRING_KICK and stopped by GET_VRING_BASE. A started ring gets its
 * datapath queue (vl_vq_create) as soon as it has a size, addresses and a memory table --
 * created by whichever message completes the set, whose error it is if creation fails. The
 * queue is handed to the embedder while the ring is also enabled. Everything the queue was
 * built from (size, base, addresses) is frozen while it exists: a message changing it is
 * refused, except SET_VRING_ADDR repeating the same addresses (live migration re-sends them
 * to switch the log flag). The dispatcher has validated the ring index. */
#include <string.h>
#include <unistd.h>

#include "vhost_user/vu_internal.h"

void vu_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static uint32_t ring_index(const struct vl_vu_dev *dev, const struct vu_ring *ring)
{
	return (uint32_t)(ring - dev->rings);
}

void vu_ring_tell(struct vl_vu_dev *dev, struct vu_ring *ring)
{
	bool ready = ring->vq && ring->enabled;

	if (ready == ring->ready_told)
		return;
	ring->ready_told = ready;
	if (dev->cfg.cb.queue_ready)
		dev->cfg.cb.queue_ready(dev, dev->cfg.opaque, ring_index(dev, ring), ready);
}

int vu_ring_translate(const struct vu_table *t, enum vl_layout L, uint32_t num,
		      const uint64_t ua[3], uint64_t gpa[3])
{
	/* Areas in the order desc, driver (avail), device (used), with the alignment spec 2.7
	 * and 2.8 require; the split sizes include the event index fields. */
	const bool packed = L == VL_LAYOUT_PACKED;
	const uint64_t len[3] = {
		packed ? vl_packed_desc_bytes(num) : vl_split_desc_bytes(num),
		packed ? sizeof(struct vl_packed_event) : vl_split_avail_bytes(num),
		packed ? sizeof(struct vl_packed_event) : vl_split_used_bytes(num),
	};
	const uint64_t align[3] = {16, packed ? 4 : 2, 4};
	/* What the device does with each area (the queue checks the same at creation). */
	const unsigned access[3] = {
		packed ? VL_ACCESS_READ | VL_ACCESS_WRITE : VL_ACCESS_READ, VL_ACCESS_READ,
		VL_ACCESS_WRITE,
	};

	for (int k = 0; k < 3; k++) {
		uint64_t got = len[k];

		if (!vu_table_ua_to_gpa(t, ua[k], len[k], &gpa[k]))
			return VL_ERR_RING_UNMAPPED;
		const uintptr_t host = (uintptr_t)vl_mem_translate(t->mem, gpa[k], &got, access[k]);

		/* The front end's region table and the core's agree (one was built from the
		 * other); a ring the door cannot give whole is refused all the same. */
		if (host == 0 || got < len[k])
			return VL_ERR_RING_UNMAPPED;
		/* Aligned as a guest address and where the device touches it: a region's guest
		 * and host addresses need not agree modulo the alignment (the front end sets
		 * both), and the datapath uses aligned atomics on ring fields. */
		if (gpa[k] % align[k] != 0 || host % align[k] != 0)
			return VL_ERR_RING_MISALIGNED;
	}
	return VL_OK;
}

/* A packed resume position: both halves inside the ring, and the used side not ahead of the
 * avail side nor more than a ring behind it. Positions are placed on a line of 2 x size
 * (wrap counter 1 = the first half: both counters start at 1 and flip every lap). */
static int check_packed_base(uint32_t size, uint16_t avail, uint16_t used)
{
	uint32_t pa = avail & ~VL_PACKED_WRAP_BIT, pu = used & ~VL_PACKED_WRAP_BIT;

	if (pa >= size || pu >= size)
		return VL_ERR_RING_BASE;
	uint32_t la = pa + ((avail & VL_PACKED_WRAP_BIT) ? 0 : size);
	uint32_t lu = pu + ((used & VL_PACKED_WRAP_BIT) ? 0 : size);

	if ((la + 2 * size - lu) % (2 * size) > size)
		return VL_ERR_RING_BASE;
	return VL_OK;
}

/* Where the ring resumes: what SET_VRING_BASE (or the last stop) said, else the start of a
 * fresh ring (split index 0; packed position 0 with both wrap counters 1). */
static void ring_base(const struct vl_vu_dev *dev, const struct vu_ring *ring, uint16_t *avail,
		      uint16_t *used)
{
	if (ring->base_set) {
		*avail = ring->base_avail;
		*used = ring->base_used;
	} else {
		*avail = *used = vu_layout(dev) == VL_LAYOUT_PACKED ? VL_PACKED_WRAP_BIT : 0;
	}
}

int vu_ring_try_start(struct vl_vu_dev *dev, struct vu_ring *ring)
{
	if (!ring->started || ring->vq || !ring->num || !ring->addr_ok || !dev->table.mem)
		return VL_OK;
	/* A front end that writes the status (QEMU 7.2, DPDK's virtio-user) says when the
	 * driver is ready: rings set up before then wait for DRIVER_OK, as DPDK's back end
	 * waits. One that never writes it runs its rings as soon as they are set up. */
	if (dev->status_set && !(dev->status & VL_STATUS_DRIVER_OK))
		return VL_OK;

	const enum vl_layout L = vu_layout(dev);
	const uint64_t ua[3] = {ring->desc_ua, ring->driver_ua, ring->device_ua};
	uint64_t gpa[3];
	uint16_t avail, used;
	/* The addresses were checked when they came, but the size or the table may have
	 * changed since: translate them now, with what the queue will use. */
	int rc = vu_ring_translate(&dev->table, L, ring->num, ua, gpa);

	if (rc != VL_OK)
		return rc;
	ring_base(dev, ring, &avail, &used);
	if (L == VL_LAYOUT_PACKED) {
		rc = check_packed_base(ring->num, avail, used);
		if (rc != VL_OK)
			return rc;
	}

	if (L == VL_LAYOUT_SPLIT) {
		/* A split ring resumes where the guest's used->idx says the device stopped, when
		 * that differs from the base it was given: a virtio-user server that outlives its
		 * back end hands the next one base 0 with its indices far ahead (DPDK's vhost
		 * library resyncs the same way). Every buffer up to used->idx is the guest's
		 * again; what the old back end took and never returned is lost to both sides
		 * (the guest still counts it in flight), and the window check of every burst
		 * still guards against an avail index more than a ring ahead. The field is the
		 * device's: read once, the value only chooses where the ring starts. */
		uint64_t len = 4;
		const struct vl_split_used *u =
			vl_mem_translate(dev->table.mem, gpa[2], &len, VL_ACCESS_READ);

		if (u != NULL && len >= 4) {
			uint16_t guest_used = __atomic_load_n(&u->idx, __ATOMIC_ACQUIRE);

			if (guest_used != avail) {
				ring->resyncs++;
				avail = used = guest_used;
			}
		}
	}

	struct vl_vq_config cfg;

	vl_vq_config_init(&cfg, L, ring->num);
	/* The queue gets the virtio bits; the two vhost bits mean nothing to it. */
	cfg.features = dev->features &
		       ~(VL_FEATURE(VL_VU_F_LOG_ALL) | VL_FEATURE(VL_VU_F_PROTOCOL_FEATURES));
	cfg.desc_gpa = gpa[0];
	cfg.driver_gpa = gpa[1];
	cfg.device_gpa = gpa[2];
	cfg.last_avail_idx = avail;
	cfg.last_used_idx = used;
	cfg.batch_threshold = dev->cfg.batch_threshold;

	struct vl_vq *vq = vl_vq_create(dev->table.mem, &cfg, &rc);

	if (!vq)
		return rc;
	/* Before anything runs on it: a queue after a crash takes its inflight chains first. */
	rc = vu_inflight_attach(dev, ring, vq);
	if (rc != VL_OK) {
		vl_vq_destroy(vq);
		return rc;
	}
	ring->vq = vq;
	ring->err_told = false;
	vu_log_apply_vq(dev, vq);
	vu_ring_tell(dev, ring);
	return VL_OK;
}

void vu_ring_stop(struct vl_vu_dev *dev, struct vu_ring *ring)
{
	struct vl_vq *vq = ring->vq;

	if (vq) {
		/* Tell first, while the queue still exists: the embedder drops it, and frees
		 * zero-copy packets, whose chains the completion below then returns. */
		if (ring->ready_told) {
			ring->ready_told = false;
			if (dev->cfg.cb.queue_ready)
				dev->cfg.cb.queue_ready(dev, dev->cfg.opaque, ring_index(dev, ring),
							false);
		}
		vl_vq_complete(vq);
		ring->base_set = true;
		ring->base_avail = vl_vq_last_avail(vq);
		ring->base_used = vl_vq_last_used(vq);
		ring->vq = NULL;
		vl_vq_destroy(vq);
	}
	/* The front end sends new kick and call fds when it starts the ring again. */
	vu_close_fd(&ring->kick_fd);
	vu_close_fd(&ring->call_fd);
	ring->started = false;
}

int vu_set_vring_num(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		     struct vu_reply *reply)
{
	(void)reply;
	const uint32_t num = m->p.state.num;

	/* Split rings are indexed with a mask (power of two); packed positions are 15 bits. */
	if (num == 0 || num > VL_QUEUE_SIZE_MAX ||
	    (vu_layout(dev) == VL_LAYOUT_SPLIT && (num & (num - 1)) != 0))
		return VL_ERR_QUEUE_SIZE;
	if (ring->vq)
		return num == ring->num ? VL_OK : VL_ERR_VU_STATE;
	/* Nothing is allocated for a size (the queue is, when it starts): a repeated
	 * SET_VRING_NUM only overwrites a number. */
	ring->num = num;
	return vu_ring_try_start(dev, ring);
}

int vu_set_vring_addr(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		      struct vu_reply *reply)
{
	(void)reply;
	const struct vu_addr a = m->p.addr;
	const uint64_t ua[3] = {a.desc, a.avail, a.used};
	uint64_t gpa[3];

	if (a.flags & ~VU_VRING_F_LOG)
		return VL_ERR_VU_VALUE;
	/* Addresses are checked against the table and the size they must hold: both first. */
	if (!dev->table.mem || ring->num == 0)
		return VL_ERR_VU_STATE;
	if (ring->vq) {
		if (ua[0] != ring->desc_ua || ua[1] != ring->driver_ua || ua[2] != ring->device_ua)
			return VL_ERR_VU_STATE;
		ring->addr_flags = a.flags;
		return VL_OK;
	}
	/* New addresses replace the old ones even when they are bad: the ring is then not
	 * ready until good ones come. */
	ring->addr_ok = false;
	int rc = vu_ring_translate(&dev->table, vu_layout(dev), ring->num, ua, gpa);

	if (rc != VL_OK)
		return rc;
	ring->desc_ua = ua[0];
	ring->driver_ua = ua[1];
	ring->device_ua = ua[2];
	ring->addr_flags = a.flags;
	ring->addr_ok = true;
	return vu_ring_try_start(dev, ring);
}

int vu_set_vring_base(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		      struct vu_reply *reply)
{
	(void)reply;
	const uint32_t num = m->p.state.num;
	uint16_t avail = (uint16_t)num, used = (uint16_t)(num >> 16);

	if (ring->vq)
		return VL_ERR_VU_STATE;
	if (vu_layout(dev) == VL_LAYOUT_SPLIT) {
		/* A split ring resumes from one 16-bit index; the used index follows it. */
		if (num > UINT16_MAX)
			return VL_ERR_RING_BASE;
		used = avail;
	} else {
		/* QEMU sends the used position in bits 16-31; DPDK sends none (then used ==
		 * avail: nothing was in flight when the ring stopped). */
		if (used == 0)
			used = avail;
		if (ring->num) {
			int rc = check_packed_base(ring->num, avail, used);

			if (rc != VL_OK)
				return rc;
		}
	}
	ring->base_set = true;
	ring->base_avail = avail;
	ring->base_used = used;
	return vu_ring_try_start(dev, ring);
}

int vu_get_vring_base(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		      struct vu_reply *reply)
{
	struct vu_state st = {.index = m->p.state.index};
	uint16_t avail, used;

	vu_ring_stop(dev, ring);
	ring_base(dev, ring, &avail, &used);
	st.num = vu_layout(dev) == VL_LAYOUT_PACKED ? (uint32_t)avail | (uint32_t)used << 16
						    : avail;
	reply->send = true;
	_Static_assert(sizeof(st) == sizeof(reply->payload), "vring state reply");
	memcpy(&reply->payload, &st, sizeof(st));
	return VL_OK;
}

/* KICK/CALL/ERR: the fd the message carries (the dispatcher checked there is exactly one
 * unless NOFD), kept by taking it out of the message. */
static int take_ring_fd(struct vu_msg *m)
{
	if (m->p.u64 & VU_VRING_NOFD)
		return -1;
	int fd = m->fds[0];

	m->fds[0] = -1;
	return fd;
}

int vu_set_vring_kick(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		      struct vu_reply *reply)
{
	(void)reply;
	int fd = take_ring_fd(m);

	vu_close_fd(&ring->kick_fd);
	ring->kick_fd = fd;
	ring->started = true;
	if (!vu_has(dev->features, VL_VU_F_PROTOCOL_FEATURES))
		ring->enabled = true;
	int rc = vu_ring_try_start(dev, ring);

	vu_ring_tell(dev, ring);
	return rc;
}

/* The call fd may change while the ring runs (QEMU switches it when the guest masks the
 * interrupt); the embedder reads it from vl_vu_dev_call_fd at every notification. */
int vu_set_vring_call(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		      struct vu_reply *reply)
{
	(void)dev;
	(void)reply;
	int fd = take_ring_fd(m);

	vu_close_fd(&ring->call_fd);
	ring->call_fd = fd;
	return VL_OK;
}

int vu_set_vring_err(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		     struct vu_reply *reply)
{
	(void)dev;
	(void)reply;
	int fd = take_ring_fd(m);

	vu_close_fd(&ring->err_fd);
	ring->err_fd = fd;
	return VL_OK;
}

int vu_set_vring_enable(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
			struct vu_reply *reply)
{
	(void)reply;
	const uint32_t enable = m->p.state.num;

	if (enable > 1)
		return VL_ERR_VU_VALUE;
	ring->enabled = enable == 1;
	vu_ring_tell(dev, ring);
	return VL_OK;
}

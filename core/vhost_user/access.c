/* SPDX-License-Identifier: MIT */
/* What the embedder's loop uses between messages: the ready queues, their eventfds (kicks
 * consumed, calls signalled, never blocking whatever the front end passed as an "eventfd"),
 * and the negotiated state. */
#include <poll.h>
#include <unistd.h>

#include "vhost_user/vu_internal.h"

static const struct vu_ring *ring_at(const struct vl_vu_dev *dev, uint32_t qidx)
{
	return qidx < dev->nrings ? &dev->rings[qidx] : NULL;
}

uint32_t vl_vu_dev_num_queues(const struct vl_vu_dev *dev)
{
	return dev->nrings;
}

struct vl_vq *vl_vu_dev_queue(const struct vl_vu_dev *dev, uint32_t qidx)
{
	const struct vu_ring *r = ring_at(dev, qidx);

	return r && r->vq && r->enabled ? r->vq : NULL;
}

int vl_vu_dev_kick_fd(const struct vl_vu_dev *dev, uint32_t qidx)
{
	const struct vu_ring *r = ring_at(dev, qidx);

	return r ? r->kick_fd : -1;
}

uint64_t vl_vu_dev_ring_resyncs(const struct vl_vu_dev *dev, uint32_t qidx)
{
	const struct vu_ring *r = ring_at(dev, qidx);

	return r ? r->resyncs : 0;
}

uint32_t vl_vu_dev_ring_resubmitted(const struct vl_vu_dev *dev, uint32_t qidx)
{
	const struct vu_ring *r = ring_at(dev, qidx);

	return r ? r->resubmitted : 0;
}

int vl_vu_dev_call_fd(const struct vl_vu_dev *dev, uint32_t qidx)
{
	const struct vu_ring *r = ring_at(dev, qidx);

	return r ? r->call_fd : -1;
}

/* poll first: the front end may have passed a blocking eventfd, or a pipe (the spec allows
 * one where eventfd is missing), and a read or write must never stall the datapath. */
static bool fd_ready(int fd, short events)
{
	struct pollfd p = {.fd = fd, .events = events};

	return poll(&p, 1, 0) == 1 && (p.revents & events);
}

bool vl_vu_dev_consume_kick(struct vl_vu_dev *dev, uint32_t qidx)
{
	const struct vu_ring *r = ring_at(dev, qidx);
	uint64_t count;

	if (!r || r->kick_fd < 0 || !fd_ready(r->kick_fd, POLLIN))
		return false;
	return read(r->kick_fd, &count, sizeof(count)) > 0;
}

static bool signal_fd(int fd)
{
	const uint64_t one = 1;

	if (fd < 0 || !fd_ready(fd, POLLOUT))
		return false;
	return write(fd, &one, sizeof(one)) == (ssize_t)sizeof(one);
}

bool vl_vu_dev_notify(struct vl_vu_dev *dev, uint32_t qidx)
{
	if (qidx >= dev->nrings || !dev->rings[qidx].vq)
		return false;
	struct vu_ring *r = &dev->rings[qidx];

	/* A queue that broke stops moving; the front end hears it once on the error fd. */
	if (vl_vq_broken(r->vq) && !r->err_told) {
		r->err_told = true;
		(void)signal_fd(r->err_fd);
	}
	return vl_vq_needs_call(r->vq) && signal_fd(r->call_fd);
}

uint64_t vl_vu_dev_features(const struct vl_vu_dev *dev)
{
	return dev->features;
}

uint64_t vl_vu_dev_protocol_features(const struct vl_vu_dev *dev)
{
	return dev->protocol_features;
}

uint8_t vl_vu_dev_status(const struct vl_vu_dev *dev)
{
	return dev->status;
}

uint32_t vl_vu_dev_mtu(const struct vl_vu_dev *dev)
{
	return dev->mtu;
}

const struct vl_mem *vl_vu_dev_mem(const struct vl_vu_dev *dev)
{
	return dev->table.mem;
}

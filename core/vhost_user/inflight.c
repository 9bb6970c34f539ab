/* SPDX-License-Identifier: MIT */
/* Inflight tracking (protocol feature INFLIGHT_SHMFD): GET_INFLIGHT_FD makes the shared area
 * the front end keeps across back-end restarts, SET_INFLIGHT_FD hands it (back) to this back
 * end, and each split ring's queue marks in its part what it takes and returns
 * (vl_vq_set_inflight, ring/inflight.c). QEMU asks for the area once (GET), then sends it
 * with every device start (SET); a back end started after a crash gets the area the crashed
 * one filled, and its rings take first what was in flight.
 *
 * Both messages are refused while a ring runs (its queue writes the area in force), before
 * SET_FEATURES (the layout decides each queue's part), for a queue count outside the
 * device's rings or a queue size a ring cannot have; SET_INFLIGHT_FD also for an area smaller
 * than those queues need or past its file. A refused message leaves the area in force.
 *
 * Packed rings are not tracked (the spec's QueueRegionPacked is not implemented): with
 * VIRTIO_F_RING_PACKED negotiated both messages are refused (VL_ERR_INFLIGHT_PACKED), and a
 * packed ring does not start while an area (set up under split features) is in force. A front
 * end asking for tracking then learns at once that it has none, instead of believing that
 * what is in flight would be resubmitted after a crash. */
#define _GNU_SOURCE /* memfd_create */

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vhost_user/vu_internal.h"

void vu_inflight_unmap(struct vl_vu_dev *dev)
{
	vu_unmap(&dev->infl_map);
	dev->infl = NULL;
	dev->infl_per = 0;
	dev->infl_nqueues = dev->infl_qsize = 0;
}

/* The checks both messages share; *per: the bytes of one queue's part. */
static int check_request(const struct vl_vu_dev *dev, const struct vu_inflight_desc *in,
			 uint64_t *per)
{
	if (!dev->features_set)
		return VL_ERR_VU_STATE;
	if (vu_layout(dev) != VL_LAYOUT_SPLIT)
		return VL_ERR_INFLIGHT_PACKED;
	for (uint32_t i = 0; i < dev->nrings; i++)
		if (dev->rings[i].vq)
			return VL_ERR_VU_STATE;
	if (in->num_queues == 0 || in->num_queues > dev->nrings)
		return VL_ERR_INFLIGHT;
	if (in->queue_size == 0 || in->queue_size > VL_QUEUE_SIZE_MAX)
		return VL_ERR_QUEUE_SIZE;
	*per = vl_inflight_queue_bytes(vu_layout(dev), in->queue_size);
	return VL_OK;
}

static void take_area(struct vl_vu_dev *dev, const struct vu_map *map, void *host,
		      uint64_t per, const struct vu_inflight_desc *in)
{
	vu_inflight_unmap(dev);
	dev->infl_map = *map;
	dev->infl = host;
	dev->infl_per = per;
	dev->infl_nqueues = in->num_queues;
	dev->infl_qsize = in->queue_size;
}

int vu_get_inflight_fd(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		       struct vu_reply *reply)
{
	(void)ring;
	const struct vu_inflight_desc in = m->p.inflight; /* read once */
	uint64_t per;
	int rc = check_request(dev, &in, &per);

	if (rc != VL_OK)
		return rc;
	/* At most 256 queues of at most 32768 descriptors: a little over 256 MiB, no wrap. */
	const uint64_t size = per * in.num_queues;
	int fd = memfd_create("vhostlab-inflight", MFD_CLOEXEC);
	struct vu_map map;
	void *host;

	if (fd < 0)
		return VL_ERR_VU_MAP;
	if (ftruncate(fd, (off_t)size) != 0) {
		close(fd);
		return VL_ERR_VU_MAP;
	}
	rc = vu_map_fd(fd, 0, size, &host, &map);
	if (rc != VL_OK) {
		close(fd);
		return rc;
	}
	/* A new memfd reads as zeros: every queue's part is "never used" (version 0). */
	take_area(dev, &map, host, per, &in);
	struct vu_inflight_desc out = {.mmap_size = size, .mmap_offset = 0,
				       .num_queues = in.num_queues, .queue_size = in.queue_size};

	reply->send = true;
	reply->nbytes = sizeof(out);
	memcpy(reply->bytes, &out, sizeof(out));
	reply->fd_set = true;
	reply->fd = fd; /* sent, then closed by the dispatcher: the mapping keeps the file */
	return VL_OK;
}

int vu_set_inflight_fd(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		       struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	const struct vu_inflight_desc in = m->p.inflight; /* read once */
	uint64_t per;
	int rc = check_request(dev, &in, &per);

	if (rc != VL_OK)
		return rc;
	if (in.mmap_size < per * in.num_queues)
		return VL_ERR_INFLIGHT;
	struct vu_map map;
	void *host;

	rc = vu_map_fd(m->fds[0], in.mmap_offset, in.mmap_size, &host, &map);
	if (rc != VL_OK)
		return rc;
	take_area(dev, &map, host, per, &in);
	return VL_OK;
}

int vu_inflight_attach(struct vl_vu_dev *dev, struct vu_ring *ring, struct vl_vq *vq)
{
	const uint32_t idx = (uint32_t)(ring - dev->rings);

	ring->resubmitted = 0;
	if (!dev->infl || idx >= dev->infl_nqueues)
		return VL_OK;
	/* An area made under split features, the ring now packed: it would not be tracked. */
	if (vu_layout(dev) != VL_LAYOUT_SPLIT)
		return VL_ERR_INFLIGHT_PACKED;
	/* The area was laid out for infl_qsize descriptors per queue. */
	if (ring->num != dev->infl_qsize)
		return VL_ERR_INFLIGHT;
	return vl_vq_set_inflight(vq, dev->infl + (uint64_t)idx * dev->infl_per, dev->infl_per,
				  &ring->resubmitted);
}

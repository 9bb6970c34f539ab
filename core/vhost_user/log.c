/* SPDX-License-Identifier: MIT */
/* Dirty-page logging for live migration: SET_LOG_BASE maps the front end's bitmap, and while
 * VHOST_F_LOG_ALL is negotiated every queue marks the pages it writes in it
 * (vl_vq_set_dirty_log). The front end switches logging with SET_FEATURES mid-traffic. */
#include "vhost_user/vu_internal.h"

void vu_log_apply_vq(const struct vl_vu_dev *dev, struct vl_vq *vq)
{
	bool on = dev->log && vu_has(dev->features, VL_VU_F_LOG_ALL);

	vl_vq_set_dirty_log(vq, on ? dev->log : NULL, on ? dev->log_bytes : 0);
}

void vu_log_apply(struct vl_vu_dev *dev)
{
	for (uint32_t i = 0; i < dev->nrings; i++)
		if (dev->rings[i].vq)
			vu_log_apply_vq(dev, dev->rings[i].vq);
}

void vu_log_unmap(struct vl_vu_dev *dev)
{
	dev->log = NULL;
	dev->log_bytes = 0;
	vu_log_apply(dev);
	vu_unmap(&dev->log_map);
}

/* The payload is the log's size and its offset in the fd (the bitmap for guest address 0
 * starts there). The reply, which QEMU waits for, has no payload. */
int vu_set_log_base(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		    struct vu_reply *reply)
{
	(void)ring;
	const uint64_t size = m->p.log.size, offset = m->p.log.offset;
	struct vu_map map;
	void *host;
	int rc = vu_map_fd(m->fds[0], offset, size, &host, &map);

	if (rc != VL_OK)
		return rc;
	/* Queues move to the new bitmap (flushing their pending marks into the old one)
	 * before the old one is unmapped. */
	struct vu_map old = dev->log_map;

	dev->log_map = map;
	dev->log = host;
	dev->log_bytes = size;
	vu_log_apply(dev);
	vu_unmap(&old);
	reply->send = true;
	reply->empty = true;
	return VL_OK;
}

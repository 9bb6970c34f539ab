/* SPDX-License-Identifier: MIT */
/* Dirty-page logging for live migration: SET_LOG_BASE maps the front end's bitmap, and while
 * VHOST_F_LOG_ALL is negotiated every queue marks the pages it writes in it
 * (vl_vq_set_dirty_log). The front end switches logging with SET_FEATURES mid-traffic. */
#include "mem/dirty_log.h"
#include "vhost_user/vu_internal.h"

bool vu_log_on(const struct vl_vu_dev *dev)
{
	return dev->log && vu_has(dev->features, VL_VU_F_LOG_ALL);
}

bool vu_log_covers(const struct vu_table *t, uint64_t bytes)
{
	for (uint32_t i = 0; i < t->n; i++) {
		/* The regions' ends do not wrap (checked when they came). */
		uint64_t last_page = (t->r[i].gpa + (t->r[i].size - 1)) >> VL_LOG_PAGE_SHIFT;

		if ((last_page >> 3) >= bytes)
			return false;
	}
	return true;
}

void vu_log_apply_vq(const struct vl_vu_dev *dev, struct vl_vq *vq)
{
	bool on = vu_log_on(dev);

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
 * starts there). The reply, which QEMU waits for, has no payload.
 *
 * Refused: a log where the device offers no logging (LOG_ALL not offered), a log before
 * SET_FEATURES (QEMU sends the features first, both when a device starts with logging on and
 * before a migration starts it), a log whose bits do not reach the end of the memory table
 * in force (QEMU sizes it for exactly that, and grows it before it grows the table), and
 * what vu_map_fd refuses. The log in force, if any, stays. */
int vu_set_log_base(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		    struct vu_reply *reply)
{
	(void)ring;
	const uint64_t size = m->p.log.size, offset = m->p.log.offset;
	struct vu_map map;
	void *host;

	if (!vu_has(dev->cfg.features, VL_VU_F_LOG_ALL))
		return VL_ERR_VU_REQUEST;
	if (!dev->features_set)
		return VL_ERR_VU_STATE;
	if (size != 0 && !vu_log_covers(&dev->table, size))
		return VL_ERR_LOG_TOO_SMALL;

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

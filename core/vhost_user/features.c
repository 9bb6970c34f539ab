/* SPDX-License-Identifier: MIT */
/* Session and negotiation messages: owner, features, protocol features, queue count, device
 * status, MTU. The dispatcher (dev.c) has checked size, descriptors and offer already. */
#include "vhost_user/vu_internal.h"

/* Virtio MTU bounds (DPDK and QEMU use the same): an Ethernet minimum and the largest
 * packet the core moves. */
#define VU_MTU_MIN 68u
#define VU_MTU_MAX 65535u

int vu_get_features(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		    struct vu_reply *reply)
{
	(void)m;
	(void)ring;
	reply->send = true;
	reply->payload = dev->cfg.features;
	return VL_OK;
}

int vu_set_features(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		    struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	const uint64_t want = m->p.u64;

	if (want & ~dev->cfg.features)
		return VL_ERR_VU_FEATURES;
	/* Running queues were built for the features they have; only logging may be switched
	 * while they run (live migration starts and stops it with SET_FEATURES). */
	for (uint32_t i = 0; i < dev->nrings; i++)
		if (dev->rings[i].vq && ((want ^ dev->features) & ~VL_FEATURE(VL_VU_F_LOG_ALL)))
			return VL_ERR_VU_STATE;
	/* Logging on with a log mapped: it must cover the memory (vu_log_covers). */
	if (vu_has(want, VL_VU_F_LOG_ALL) && dev->log &&
	    !vu_log_covers(&dev->table, dev->log_bytes))
		return VL_ERR_LOG_TOO_SMALL;
	dev->features = want;
	dev->features_set = true;
	/* Without protocol features there is no SET_VRING_ENABLE: rings are enabled from the
	 * start. SET_FEATURES never disables a ring (it also toggles LOG_ALL mid-traffic). */
	if (!vu_has(want, VL_VU_F_PROTOCOL_FEATURES))
		for (uint32_t i = 0; i < dev->nrings; i++)
			dev->rings[i].enabled = true;
	vu_log_apply(dev);
	for (uint32_t i = 0; i < dev->nrings; i++)
		vu_ring_tell(dev, &dev->rings[i]);
	return VL_OK;
}

int vu_get_protocol_features(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
			     struct vu_reply *reply)
{
	(void)m;
	(void)ring;
	reply->send = true;
	reply->payload = dev->cfg.protocol_features;
	return VL_OK;
}

int vu_set_protocol_features(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
			     struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	const uint64_t want = m->p.u64;

	if (want & ~dev->cfg.protocol_features)
		return VL_ERR_VU_FEATURES;
	dev->protocol_features = want;
	return VL_OK;
}

/* SET_OWNER opens a session; there is nothing to set up that the device does not have. */
int vu_set_owner(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		 struct vu_reply *reply)
{
	(void)dev;
	(void)m;
	(void)ring;
	(void)reply;
	return VL_OK;
}

/* RESET_OWNER is deprecated; the spec recommends ignoring it or disabling every ring, and
 * warns that discarding the rest of the connection's state leads to bugs. Every ring is
 * stopped and disabled; memory, features and fds of other kinds stay. */
int vu_reset_owner(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		   struct vu_reply *reply)
{
	(void)m;
	(void)ring;
	(void)reply;
	for (uint32_t i = 0; i < dev->nrings; i++) {
		vu_ring_stop(dev, &dev->rings[i]);
		dev->rings[i].enabled = false;
	}
	return VL_OK;
}

/* The answer is in queue pairs, as QEMU and DPDK read it. */
int vu_get_queue_num(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		     struct vu_reply *reply)
{
	(void)m;
	(void)ring;
	reply->send = true;
	reply->payload = dev->cfg.max_queue_pairs;
	return VL_OK;
}

/* The virtio status byte. 0 is a reset by the driver (a guest unloading virtio_net; QEMU
 * stopping the device before GET_VRING_BASE): every ring stops where it is, its position
 * kept for GET_VRING_BASE, its queue and fds released; the front end sets each ring up
 * again. DRIVER_OK newly set starts the rings that were waiting for it. */
int vu_set_status(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		  struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	const uint64_t status = m->p.u64;

	if (status > UINT8_MAX)
		return VL_ERR_VU_VALUE;
	const uint8_t prev = dev->status;

	dev->status = (uint8_t)status;
	dev->status_set = true;
	if (status == 0)
		for (uint32_t i = 0; i < dev->nrings; i++)
			vu_ring_stop(dev, &dev->rings[i]);
	if (dev->cfg.cb.status_changed)
		dev->cfg.cb.status_changed(dev, dev->cfg.opaque, dev->status);

	int rc = VL_OK;

	if ((status & VL_STATUS_DRIVER_OK) && !(prev & VL_STATUS_DRIVER_OK))
		for (uint32_t i = 0; i < dev->nrings; i++) {
			int r = vu_ring_try_start(dev, &dev->rings[i]);

			if (rc == VL_OK)
				rc = r;
		}
	return rc;
}

/* RESET_DEVICE: back to the state of a device just connected, but for what belongs to the
 * connection (protocol features, the memory table): every ring stopped and forgotten, the
 * features and status cleared, dirty logging off, the inflight area let go (a reset device
 * has nothing in flight; the front end gets or sets one again). The front end negotiates and sets the
 * rings up again. */
int vu_reset_device(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		    struct vu_reply *reply)
{
	(void)m;
	(void)ring;
	(void)reply;
	for (uint32_t i = 0; i < dev->nrings; i++)
		vu_ring_forget(dev, &dev->rings[i]);
	vu_log_unmap(dev);
	vu_inflight_unmap(dev);
	dev->features = 0;
	dev->features_set = false;
	dev->status = 0;
	dev->status_set = false;
	return VL_OK;
}

int vu_get_status(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		  struct vu_reply *reply)
{
	(void)m;
	(void)ring;
	reply->send = true;
	reply->payload = dev->status;
	return VL_OK;
}

int vu_net_set_mtu(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		   struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	const uint64_t mtu = m->p.u64;

	if (mtu < VU_MTU_MIN || mtu > VU_MTU_MAX)
		return VL_ERR_VU_VALUE;
	dev->mtu = (uint32_t)mtu;
	return VL_OK;
}

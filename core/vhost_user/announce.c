/* SPDX-License-Identifier: MIT */
/* SEND_RARP (protocol feature RARP): after a live migration the front end asks the back end
 * to announce the guest at its new place, by the guest's MAC address. QEMU 7.2 sends it
 * when the guest did not negotiate VIRTIO_NET_F_GUEST_ANNOUNCE (which would let the guest
 * announce itself). The core validates the address and hands it to the embedder
 * (vl_vu_callbacks.announce), which knows the far side the announcement must reach. */
#include <string.h>

#include "vhost_user/vu_internal.h"

/* The payload is a u64 whose first 6 bytes, in memory order, are the MAC (vhost-user.rst,
 * "SEND_RARP"); the last two are padding the front end does not define, so they are not
 * looked at. A multicast or all-zero address names no guest: refused. */
int vu_send_rarp(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
		 struct vu_reply *reply)
{
	(void)ring;
	(void)reply;
	uint8_t mac[6];

	memcpy(mac, &m->p.u64, sizeof(mac));
	const bool zero = (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) == 0;

	if (zero || (mac[0] & 0x01))
		return VL_ERR_VU_VALUE;
	if (dev->cfg.cb.announce)
		dev->cfg.cb.announce(dev, dev->cfg.opaque, mac);
	return VL_OK;
}

/* SPDX-License-Identifier: MIT */
/* The specialised non-mergeable receive path (net/enqueue_nonmergeable.c): the alternative
 * technique 2's unified path is measured against. Same contract as vl_net_enqueue, for a
 * queue without VIRTIO_NET_F_MRG_RXBUF only. */
#ifndef VL_NET_ENQUEUE_NONMERGEABLE_H
#define VL_NET_ENQUEUE_NONMERGEABLE_H

#include <stdint.h>

#include "vhostlab/vl_net.h"

uint16_t vl_net_enqueue_nonmergeable(struct vl_vq *vq, struct vl_pkt *const *pkts,
				     uint16_t count, uint8_t *status);

#endif

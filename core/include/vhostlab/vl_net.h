/* SPDX-License-Identifier: MIT */
/* virtio-net datapath: dequeue (guest TX -> host packets) and enqueue (host packets -> guest RX). */
#ifndef VHOSTLAB_VL_NET_H
#define VHOSTLAB_VL_NET_H

#include <stdint.h>

#include "vl_pkt.h"
#include "vl_vq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest packet (without virtio-net header) either direction accepts: 64 KiB GSO frames. */
#define VL_PKT_MAX_LEN 65535u

/* Dequeue up to `count` packets the guest transmitted on TX queue vq. Packet segments come
 * from pool; the caller owns the returned packets and frees them with vl_pkt_free.
 * Malformed chains are returned to the guest (used length 0), counted, and skipped.
 * If the pool cannot supply a packet, the burst stops before that chain, which stays
 * available for the next burst (counted in alloc_failures).
 * Returns the number of packets stored in pkts. */
uint16_t vl_net_dequeue(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			uint16_t count);

/* Return up to `count` available chains of TX queue vq to the guest without reading their
 * buffers: each chain is walked (descriptors only, checked as vl_net_dequeue checks them)
 * and goes back with used length 0; no packet is made, no header or payload byte is read
 * (so offload fields are not checked). For measuring what a front end can do against a
 * device that does nothing (`vhostlab serve --mode null`), not for forwarding. Malformed
 * chains (and chains no longer than the virtio-net header, or whose packet would be over
 * VL_PKT_MAX_LEN, as vl_net_dequeue drops them) are counted as drops and returned the same
 * way. If bytes is not NULL, the packet bytes (chain length minus the
 * header) of the good chains are added to *bytes. Returns the number of good chains. */
uint16_t vl_net_discard(struct vl_vq *vq, uint16_t count, uint64_t *bytes);

/* vl_net_discard, reading one byte of each good packet: the first after the virtio-net
 * header (in whichever descriptor holds it), added to *first_bytes if that is not NULL.
 * Nothing else of the buffers is read. The least a back end that looks at its packets can
 * do (`vhostlab serve --mode touch`): beside vl_net_discard, it shows what reading the
 * packet's cache line costs the front end by itself. */
uint16_t vl_net_discard_touch(struct vl_vq *vq, uint16_t count, uint64_t *bytes,
			      uint64_t *first_bytes);

/* Per-packet outcome of vl_net_enqueue. */
enum vl_rx_status {
	VL_RX_DELIVERED = 0,
	VL_RX_DROPPED_TOO_BIG = 1,         /* see VL_DROP_RX_TOO_BIG */
	VL_RX_DROPPED_TOO_MANY_PIECES = 2, /* see VL_DROP_RX_TOO_MANY_PIECES */
	VL_RX_DROPPED_OFFLOAD = 3,         /* offloads the driver did not negotiate: one of
					    * VL_DROP_RX_CSUM_NOT_NEGOTIATED, _FLAGS_UNKNOWN,
					    * _GSO_NOT_NEGOTIATED, _GSO_NO_SEGMENT_SIZE */
};

/* Whether RX queue vq's driver can take a packet with these offloads as they are: VL_DROP_NONE,
 * or the reason vl_net_enqueue would drop it. A driver takes NEEDS_CSUM and DATA_VALID only
 * with GUEST_CSUM, no other flag, and a GSO type only with its GUEST_* feature (TCPV4:
 * GUEST_TSO4, TCPV6: GUEST_TSO6, UDP: GUEST_UFO, UDP_L4: GUEST_USO4 and GUEST_USO6, the
 * ECN bit: GUEST_ECN) and a segment size. Other fields (hdr_len, gso_size, csum_start,
 * csum_offset) are passed as they are. vl_sw_fit (vl_sw_offload.h) turns a packet that does
 * not fit into packets that do. */
enum vl_drop vl_net_rx_offload_check(const struct vl_vq *vq, const struct vl_offload *ol);

/* Enqueue packets into the guest's receive buffers on RX queue vq (copying; the caller
 * keeps ownership of every packet). One path for mergeable and non-mergeable buffers.
 * Packets are handled in order. A packet that can never fit, or whose offloads the driver
 * did not negotiate (vl_net_rx_offload_check), is dropped (counted, nothing of it
 * published) and the next one is tried. Each packet's offload metadata becomes its
 * virtio-net header as it is. When the guest has not posted enough buffers for
 * a packet, the call stops there: the return value is the number of packets handled
 * (delivered or dropped) from the front of pkts; the rest were not attempted.
 * If status is not NULL, status[i] receives an enum vl_rx_status for each handled packet. */
uint16_t vl_net_enqueue(struct vl_vq *vq, struct vl_pkt *const *pkts, uint16_t count,
			uint8_t *status);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: MIT */
/* vhost-user back end for virtio-net: the protocol layer a front end (QEMU, DPDK virtio-user)
 * drives over a Unix socket, on top of the datapath core (vl_mem, vl_vq, vl_net).
 *
 * One struct vl_vu_dev is one connection's device. The embedder owns the socket and runs one
 * poll loop: when the connection is readable it calls vl_vu_dev_handle(), which reads, checks
 * and answers exactly one message; between messages it runs bursts (vl_net_dequeue /
 * vl_net_enqueue) on the queues vl_vu_dev_queue() returns. There are no threads and no locks
 * inside: every call on one device -- messages, bursts on its queues, the accessors -- must
 * be serialised by the embedder (one thread, or its own lock), exactly as vl_vq.h requires.
 * An embedder that runs the queues on worker threads handles each message while every
 * worker owning a queue of the device is paused at a burst boundary (vl_vq_gate, vl_vq.h
 * "Queues over threads"); a worker fetches its queues (vl_vu_dev_queue) and ring fds again
 * after every pause.
 *
 * Everything the front end sends is hostile: each message is read whole into private memory
 * (never beyond what arrived), its payload size and file descriptor count are checked against
 * a per-request table before any handler runs, the queue index is checked once, centrally,
 * with a full-width type, and every descriptor that arrived with a message and was not kept
 * is closed on every path. A rejected message leaves the device as it was (the old memory
 * table, the old ring state) and the connection usable.
 *
 * Queue lifecycle (docs/architecture.md, "vhost-user protocol"):
 *  - A ring is *started* by SET_VRING_KICK (with an eventfd, or the NOFD flag for polling)
 *    and *stopped* by GET_VRING_BASE (also RESET_OWNER and disconnection). Implementations
 *    start rings on SET_VRING_KICK rather than on the first kick the spec text mentions;
 *    vhostlab does the same, so a front end need not inject a kick.
 *  - A started ring becomes a datapath queue (a struct vl_vq) once it also has a size
 *    (SET_VRING_NUM), ring addresses (SET_VRING_ADDR) and a memory table; whichever of those
 *    messages completes the set creates it, and an error in creating it is that message's
 *    error (the ring then stays not ready).
 *  - A ring is *enabled* by SET_VRING_ENABLE 1 and disabled by 0. Without
 *    VHOST_USER_F_PROTOCOL_FEATURES negotiated, rings are enabled from the start (SET_FEATURES
 *    without the bit, or SET_VRING_KICK, enables them), as the spec says.
 *  - vl_vu_dev_queue() returns the queue only while it is started, created and enabled
 *    ("ready"); the queue_ready callback reports every change. A disabled ring is not
 *    processed at all: its buffers stay in the ring until it is enabled again (nothing lost).
 *  - GET_VRING_BASE returns where the ring stopped: split, the next avail index; packed, the
 *    avail position with the wrap counter in bit 15 and the used position (same encoding) in
 *    bits 16-31, the form QEMU reads back. SET_VRING_BASE accepts the same forms (the used
 *    half may be absent, as DPDK sends it: then used = avail).
 *
 * Memory: SET_MEM_TABLE maps each region's fd (size + offset, overflow-checked, inside the
 * file) and builds a new vl_mem table; while rings run the new table is complete before any
 * queue moves to it (vl_vq_set_mem), and the old mappings are unmapped only after every queue
 * left them, so traffic continues across the swap without loss. ADD_MEM_REG / REM_MEM_REG
 * (CONFIGURE_MEM_SLOTS) build a new table the same way. Ring addresses are front-end virtual
 * addresses: they are translated to guest-physical through the table's user addresses. */
#ifndef VHOSTLAB_VL_VHOST_USER_H
#define VHOSTLAB_VL_VHOST_USER_H

#include <stdbool.h>
#include <stdint.h>

#include "vl_error.h"
#include "vl_mem.h"
#include "vl_virtio.h"
#include "vl_vq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* vhost feature bits offered in GET_FEATURES next to the virtio ones. */
#define VL_VU_F_LOG_ALL           26 /* dirty-page logging for live migration */
#define VL_VU_F_PROTOCOL_FEATURES 30 /* GET/SET_PROTOCOL_FEATURES exist */

/* vhost-user protocol feature bits (GET/SET_PROTOCOL_FEATURES) this back end implements. */
#define VL_VU_PROTOCOL_F_MQ                  0  /* GET_QUEUE_NUM */
#define VL_VU_PROTOCOL_F_LOG_SHMFD           1  /* SET_LOG_BASE carries the log's fd */
#define VL_VU_PROTOCOL_F_RARP                2  /* SEND_RARP: announce the guest's MAC */
#define VL_VU_PROTOCOL_F_REPLY_ACK           3  /* NEED_REPLY answered with 0 / 1 */
#define VL_VU_PROTOCOL_F_MTU                 4  /* NET_SET_MTU */
#define VL_VU_PROTOCOL_F_INFLIGHT_SHMFD      12 /* GET/SET_INFLIGHT_FD: chains in flight kept
						     * across a back end's restart (split) */
#define VL_VU_PROTOCOL_F_RESET_DEVICE        13 /* RESET_DEVICE */
/* The virtio device status bit SET_STATUS carries that starts the rings (spec 2.1). */
#define VL_STATUS_DRIVER_OK 0x04u
#define VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS 15 /* GET_MAX_MEM_SLOTS, ADD/REM_MEM_REG */
#define VL_VU_PROTOCOL_F_STATUS              16 /* SET/GET_STATUS */

/* Every feature a device may offer: the virtio-net features the core implements (header
 * offload fields, mergeable buffers, both layouts, in-order, indirect, event idx), MTU and
 * multi-queue (the front end handles the control queue), plus the two vhost bits. The
 * offloads: checksum both ways, TCP segmentation (TSO4/6, with ECN) and UDP segmentation
 * (USO, virtio 1.2) both ways -- dequeue checks each GSO header against the HOST_* bits
 * negotiated, enqueue writes a packet's offloads into the header for a driver that took
 * the GUEST_* bits (vl_net.h), and vl_sw_offload.h segments or checksums in software for
 * one that did not. Not UFO (HOST_UFO, GUEST_UFO): it is IPv4 fragmentation, which the
 * software fallback cannot do (vl_sw_segment refuses GSO_UDP), so nothing could take a
 * UFO frame to a place without it. */
#define VL_VU_FEATURES_SUPPORTED                                                              \
	(VL_FEATURE(VL_F_NET_CSUM) | VL_FEATURE(VL_F_NET_GUEST_CSUM) |                         \
	 VL_FEATURE(VL_F_NET_HOST_TSO4) | VL_FEATURE(VL_F_NET_HOST_TSO6) |                     \
	 VL_FEATURE(VL_F_NET_HOST_ECN) | VL_FEATURE(VL_F_NET_HOST_USO) |                       \
	 VL_FEATURE(VL_F_NET_GUEST_TSO4) | VL_FEATURE(VL_F_NET_GUEST_TSO6) |                   \
	 VL_FEATURE(VL_F_NET_GUEST_ECN) | VL_FEATURE(VL_F_NET_GUEST_USO4) |                    \
	 VL_FEATURE(VL_F_NET_GUEST_USO6) |                                                     \
	 VL_FEATURE(VL_F_NET_MTU) | VL_FEATURE(VL_F_NET_MRG_RXBUF) |                           \
	 VL_FEATURE(VL_F_NET_CTRL_VQ) | VL_FEATURE(VL_F_NET_MQ) |                              \
	 VL_FEATURE(VL_F_RING_INDIRECT_DESC) | VL_FEATURE(VL_F_RING_EVENT_IDX) |               \
	 VL_FEATURE(VL_F_VERSION_1) | VL_FEATURE(VL_F_RING_PACKED) | VL_FEATURE(VL_F_IN_ORDER) | \
	 VL_FEATURE(VL_VU_F_LOG_ALL) | VL_FEATURE(VL_VU_F_PROTOCOL_FEATURES))

#define VL_VU_PROTOCOL_FEATURES_SUPPORTED                                                     \
	(VL_FEATURE(VL_VU_PROTOCOL_F_MQ) | VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD) |            \
	 VL_FEATURE(VL_VU_PROTOCOL_F_RARP) |                                                   \
	 VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) | VL_FEATURE(VL_VU_PROTOCOL_F_MTU) |           \
	 VL_FEATURE(VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS) | VL_FEATURE(VL_VU_PROTOCOL_F_STATUS) | \
	 VL_FEATURE(VL_VU_PROTOCOL_F_RESET_DEVICE) |                                            \
	 VL_FEATURE(VL_VU_PROTOCOL_F_INFLIGHT_SHMFD))

/* Queue pairs a device may have: the KICK/CALL/ERR messages carry the ring index in 8 bits,
 * so 256 rings. Ring 2n is pair n's receive queue (the device fills it: vl_net_enqueue),
 * ring 2n + 1 its transmit queue (vl_net_dequeue). */
#define VL_VU_MAX_QUEUE_PAIRS 128u
/* Regions in one table: SET_MEM_TABLE carries at most 8; with CONFIGURE_MEM_SLOTS the
 * front end adds them one by one up to this (the answer to GET_MAX_MEM_SLOTS). QEMU's
 * libvhost-user answers 509 as well: about as many memory slots as KVM gives a guest, so
 * the back end is not what limits DIMM hot-plug. Each slot costs one mapping and 64 bytes
 * of table; translation stays a binary search over the merged ranges. */
#define VL_VU_MAX_MEM_SLOTS 509u
/* How long a message cut short, or a reply the peer does not take, may stall the device
 * before the connection is declared unusable (VL_ERR_VU_IO). */
#define VL_VU_IO_TIMEOUT_MS 1000

struct vl_vu_dev;

/* Told to the embedder from inside vl_vu_dev_handle (and queue_ready false also from
 * vl_vu_dev_reset and _destroy), on the caller's thread. A callback may read the accessors
 * below; it must not call vl_vu_dev_handle, _reset or _destroy. */
struct vl_vu_callbacks {
	/* Ring qidx became ready (vl_vu_dev_queue returns it) or stopped being ready. Called
	 * with ready = false before the queue is destroyed, so the embedder drops its pointer
	 * and frees any zero-copy packet of that queue first. On ready = true, run a burst at
	 * once: the front end may have posted (and kicked) before. */
	void (*queue_ready)(struct vl_vu_dev *dev, void *opaque, uint32_t qidx, bool ready);
	/* The memory table changed: every queue already uses the new one; the old mappings
	 * are unmapped right after this returns (zero-copy packets pointing into them must be
	 * gone by then). */
	void (*mem_changed)(struct vl_vu_dev *dev, void *opaque);
	/* SET_STATUS: the virtio device status byte the front end wrote. Acted on before the
	 * call: 0 stops every ring (queue_ready false first); a front end that writes the
	 * status runs its rings only once DRIVER_OK is in it (docs/lifecycle.md, "Reset and
	 * status"). */
	void (*status_changed)(struct vl_vu_dev *dev, void *opaque, uint8_t status);
	/* SEND_RARP (protocol feature RARP), sent by the front end after a live migration:
	 * announce the guest at its new place to the far side (a switch learns where the MAC
	 * now is; a RARP frame from it is what QEMU itself would send). mac: the guest's,
	 * checked unicast and non-zero. */
	void (*announce)(struct vl_vu_dev *dev, void *opaque, const uint8_t mac[6]);
};

struct vl_vu_config {
	uint64_t features;          /* offered in GET_FEATURES; subset of VL_VU_FEATURES_SUPPORTED */
	uint64_t protocol_features; /* offered; subset of VL_VU_PROTOCOL_FEATURES_SUPPORTED */
	uint32_t max_queue_pairs;   /* 1..VL_VU_MAX_QUEUE_PAIRS (GET_QUEUE_NUM) */
	uint32_t batch_threshold;   /* vl_vq_config.batch_threshold of every queue */
	struct vl_vu_callbacks cb;  /* any may be NULL */
	void *opaque;               /* passed to the callbacks */
};

/* Defaults: every supported feature except MQ/CTRL_VQ (one queue pair), every supported
 * protocol feature, VL_BATCH_THRESHOLD_DEFAULT, no callbacks. The offloads are among them:
 * an embedder whose packets go where partial checksums or 64 KiB GSO frames cannot (a
 * wire, a guest without them) either runs them through vl_sw_fit (vl_sw_offload.h) or
 * clears those bits from features before creating the device. */
void vl_vu_config_init(struct vl_vu_config *cfg);

/* Create a device (no connection yet). NULL and a vl_err code in *err (if not NULL) on a
 * config outside the supported sets or out of memory. Control path (allocates). */
struct vl_vu_dev *vl_vu_dev_create(const struct vl_vu_config *cfg, int *err);
/* Release everything (as vl_vu_dev_reset) and free the device. NULL is ignored. */
void vl_vu_dev_destroy(struct vl_vu_dev *dev);

/* Read, check and answer exactly one message from the connected socket fd (call it when fd is
 * readable; on a blocking socket it waits for the next message). Returns:
 *  - 0: handled (and answered, if the request has a reply or asked for one);
 *  - a vl_err code: the message was rejected, the device is unchanged and the connection
 *    stays usable (a NEED_REPLY message got 1; a request with a reply of its own got none,
 *    so a real front end that sent it will stall: closing is then the sensible choice);
 *  - VL_ERR_VU_CLOSED / VL_ERR_VU_IO (vl_vu_err_fatal): the peer closed, or the connection
 *    can no longer be trusted (socket error, a message cut short, a payload larger than any
 *    request, a reply the peer would not take). The device has already released everything
 *    of that connection (vl_vu_dev_reset): close fd, and the device is ready for the next;
 *  - VL_ERR_VU_AGAIN: fd is non-blocking and no message was waiting.
 * Ring fds may change with any message: re-read vl_vu_dev_kick_fd / _call_fd afterwards. */
int vl_vu_dev_handle(struct vl_vu_dev *dev, int fd);

static inline bool vl_vu_err_fatal(int rc)
{
	return rc == VL_ERR_VU_CLOSED || rc == VL_ERR_VU_IO;
}

/* Forget the connection: stop every ring (queue_ready false first), close every fd the
 * front end gave, unmap the memory table and the log, and go back to the state of a new
 * device (features, protocol features, status, MTU cleared). */
void vl_vu_dev_reset(struct vl_vu_dev *dev);

/* ---- the datapath side ----------------------------------------------------------------- */

/* Rings of the device: 2 x max_queue_pairs. */
uint32_t vl_vu_dev_num_queues(const struct vl_vu_dev *dev);
/* The queue of ring qidx while it is ready (started, created and enabled), else NULL (also
 * for qidx out of range). Valid until the next vl_vu_dev_handle / _reset / _destroy. */
struct vl_vq *vl_vu_dev_queue(const struct vl_vu_dev *dev, uint32_t qidx);
/* The ring's kick / call eventfd as the front end gave it, or -1 (none, or NOFD: poll). */
int vl_vu_dev_kick_fd(const struct vl_vu_dev *dev, uint32_t qidx);
int vl_vu_dev_call_fd(const struct vl_vu_dev *dev, uint32_t qidx);
/* Drain the ring's kick eventfd without blocking. True if a kick was pending. */
bool vl_vu_dev_consume_kick(struct vl_vu_dev *dev, uint32_t qidx);
/* After a burst on ready ring qidx: signal its call eventfd if vl_vq_needs_call says the
 * guest wants it (never blocking). True if a call was signalled. A queue that broke (see
 * vl_vq_broken) is also reported once on the ring's error eventfd (SET_VRING_ERR). */
bool vl_vu_dev_notify(struct vl_vu_dev *dev, uint32_t qidx);

/* How often split ring qidx started at the guest's used->idx instead of the base it was given
 * (SET_VRING_BASE or the last stop) because the two differed: a front end that kept its
 * rings across a back end's restart. Counted per connection (a reset clears it); 0 for qidx
 * out of range. */
uint64_t vl_vu_dev_ring_resyncs(const struct vl_vu_dev *dev, uint32_t qidx);
/* How many chains split ring qidx took again at its last start from the inflight area
 * (INFLIGHT_SHMFD): those a back end before this one had taken and not returned. 0 without
 * an area, on packed rings (not tracked) and for qidx out of range. */
uint32_t vl_vu_dev_ring_resubmitted(const struct vl_vu_dev *dev, uint32_t qidx);

/* ---- negotiated state ------------------------------------------------------------------ */

uint64_t vl_vu_dev_features(const struct vl_vu_dev *dev);          /* SET_FEATURES */
uint64_t vl_vu_dev_protocol_features(const struct vl_vu_dev *dev); /* SET_PROTOCOL_FEATURES */
uint8_t vl_vu_dev_status(const struct vl_vu_dev *dev);             /* SET_STATUS */
uint32_t vl_vu_dev_mtu(const struct vl_vu_dev *dev);               /* NET_SET_MTU, 0 = none */
/* The current memory table, or NULL before the first one. */
const struct vl_mem *vl_vu_dev_mem(const struct vl_vu_dev *dev);
/* The request number of the last message read (for logs), and a request's name
 * ("SET_MEM_TABLE", or "unknown"). */
uint32_t vl_vu_dev_last_request(const struct vl_vu_dev *dev);
const char *vl_vu_request_name(uint32_t request);

/* ---- sockets --------------------------------------------------------------------------- */

/* Server mode: listen on a Unix socket at path (a stale socket file there is replaced; a
 * socket somebody still listens on -- found by connecting to it once -- or any other file is
 * left alone and the call fails: EADDRINUSE, EEXIST). Client mode: connect to path (the embedder
 * retries to reconnect). Return a close-on-exec, blocking fd, or -1 with errno set
 * (ENAMETOOLONG for a path longer than a socket address holds). */
int vl_vu_listen(const char *path);
int vl_vu_accept(int listen_fd);
int vl_vu_connect(const char *path);

#ifdef __cplusplus
}
#endif
#endif

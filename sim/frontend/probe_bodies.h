/* SPDX-License-Identifier: MIT */
/* The case bodies the table of probe_cases.c points at: vhost-user protocol cases in
 * probe_proto.c, virtqueue and virtio-net cases in probe_ring.c, traffic in probe_traffic.c. */
#ifndef LAB_PROBE_BODIES_H
#define LAB_PROBE_BODIES_H

#include "fe_traffic.h"
#include "probe_case.h"

enum probe_verdict probe_version_1(struct probe_ctx *x);
enum probe_verdict probe_feature_deps(struct probe_ctx *x);
enum probe_verdict probe_protocol_first(struct probe_ctx *x);
enum probe_verdict probe_reply_ack(struct probe_ctx *x);
enum probe_verdict probe_unoffered_feature(struct probe_ctx *x);
enum probe_verdict probe_minimal_features(struct probe_ctx *x);
enum probe_verdict probe_get_vring_base(struct probe_ctx *x);
enum probe_verdict probe_vring_enable(struct probe_ctx *x);

enum probe_verdict probe_tx_used_len(struct probe_ctx *x);
enum probe_verdict probe_rx_used_len(struct probe_ctx *x);
enum probe_verdict probe_mergeable(struct probe_ctx *x);
enum probe_verdict probe_in_order(struct probe_ctx *x);
enum probe_verdict probe_calls(struct probe_ctx *x);
enum probe_verdict probe_packed_wrap(struct probe_ctx *x);
enum probe_verdict probe_packed_id_slot(struct probe_ctx *x);
enum probe_verdict probe_spurious_kicks(struct probe_ctx *x);

/* probe_net.c: chain layouts and virtio-net header rules. */
enum probe_verdict probe_no_device_writes(struct probe_ctx *x);
enum probe_verdict probe_chain_shapes(struct probe_ctx *x);
enum probe_verdict probe_indirect_flags(struct probe_ctx *x);
enum probe_verdict probe_tx_hdr_ignored(struct probe_ctx *x);
enum probe_verdict probe_no_partial(struct probe_ctx *x);

/* probe_ring_state.c: notification suppression and what the device may write. */
enum probe_verdict probe_no_calls(struct probe_ctx *x);
enum probe_verdict probe_used_flags(struct probe_ctx *x);
enum probe_verdict probe_used_slot_stable(struct probe_ctx *x);
enum probe_verdict probe_stale_slot(struct probe_ctx *x);

/* probe_lifecycle.c: vhost-user requests during traffic. */
enum probe_verdict probe_unknown_request(struct probe_ctx *x);
enum probe_verdict probe_mem_table_live(struct probe_ctx *x);
enum probe_verdict probe_vring_base_resume(struct probe_ctx *x);

/* probe_dirty_log.c: live migration's dirty log checked against the pages written. */
enum probe_verdict probe_dirty_log(struct probe_ctx *x);

/* probe_hostile_msg.c / probe_hostile_ring.c: the hostile suite (arg: which message, which
 * lab_hostile class). */
enum probe_verdict probe_hostile_msg(struct probe_ctx *x);
enum probe_verdict probe_hostile_ring(struct probe_ctx *x);

/* probe_offload.c: a checksum or GSO frame through an echoing back end against the lab's
 * model (arg: OL_ARG_* | OL_ARG_GUEST when the probe's driver takes it back whole). */
#define OL_ARG_CSUM 0
#define OL_ARG_TSO4 1
#define OL_ARG_TSO6 2
#define OL_ARG_USO 3
#define OL_ARG_GUEST 0x10
enum probe_verdict probe_offload(struct probe_ctx *x);

/* probe_source.c: frames a back end sends of its own (--expect source). */
enum probe_verdict probe_source_frames(struct probe_ctx *x);

enum probe_verdict probe_echo_indirect(struct probe_ctx *x);
enum probe_verdict probe_echo_frames(struct probe_ctx *x);

/* Send one frame of len bytes in `shape` and check it comes back on RX byte for byte behind
 * a 12-byte header with num_buffers 1, the used length 12 + len (probe_traffic.c). */
enum probe_verdict probe_echo_one(struct probe_ctx *x, uint32_t len, uint32_t seq,
				  enum lab_fe_shape shape);

/* Check one received packet spread over nbuf RX buffers (ids, used lengths) against the
 * frame: header flags and gso_type 0, num_buffers = nbuf, the bytes in order. */
enum probe_verdict probe_check_rx(struct probe_ctx *x, const uint8_t *frame, uint32_t flen,
				  const uint32_t *ids, const uint32_t *lens, uint32_t nbuf);

/* An echoing back end sends each frame back and may hold TX while RX has no room (serve's
 * loopback does): before posting n TX frames, post n RX buffers of 2048 bytes (and kick);
 * after, wait for the n echoes and give them back. No-ops unless --expect echo. */
enum lab_fe_rc probe_rx_for_echo(struct probe_ctx *x, uint32_t n);
enum lab_fe_rc probe_rx_drain(struct probe_ctx *x, uint32_t n);

#endif

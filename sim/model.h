/* SPDX-License-Identifier: MIT */
/* The reference model: a deliberately simple virtio-net device datapath, written from the
 * virtio 1.2 specification (split ring 2.7, packed ring 2.8, indirect descriptors, IN_ORDER,
 * the virtio-net header 5.1.6 with num_buffers, mergeable RX buffers) and from the policies
 * docs/architecture.md documents where the spec leaves the device a choice ("Dequeue",
 * "Enqueue", "Hostile inputs"). It shares no code with the core: it reads and writes guest
 * memory through the simulated guest's own view (sim/guest_mem.h) and uses only the public
 * wire structures and constants of vhostlab/vl_virtio.h, vl_vq.h (the queue configuration,
 * the drop reasons) and vl_pkt.h (host packets are read with vl_pkt_read).
 *
 * One struct lab_model is one virtqueue: dequeue on a TX queue, enqueue on an RX queue.
 * Every call handles what is available, writes its used entries and publishes them before
 * returning (split: used->idx; packed: the first used descriptor's flags last).
 *
 * What it is for: fuzz/fuzz_differential.c runs it next to the core on the same guest
 * traffic and compares everything the guest sees. That traffic is well-formed, so the
 * malformed-input paths here are kept simple: a malformed chain is dropped (used length 0,
 * counted under its vl_drop reason) and a queue-level lie breaks the model, as the hostile
 * input table documents, but when a chain has several offences the reason reported may
 * differ from the core's (the model walks a whole chain, then judges it).
 *
 * Not modelled, on purpose: notifications and event suppression (it never writes
 * used->flags, avail_event or the packed device area and never decides a call), batching,
 * zero-copy, allocation policies, dirty logging, and memory ordering (the lab is one thread;
 * stores are still made in the order the spec asks). */
#ifndef LAB_MODEL_H
#define LAB_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"
#include "vhostlab/vl_pkt.h"
#include "vhostlab/vl_virtio.h"
#include "vhostlab/vl_vq.h"

struct lab_model_config {
	/* Layout, size, negotiated features, ring addresses and the resume position, exactly
	 * as a device queue would be configured (lab_ring_device_config fills the addresses
	 * and positions). batch_threshold is ignored. */
	struct vl_vq_config vq;
	/* Guest memory: data is read and written through its guest view; its region table
	 * says which bytes are mapped and where host pieces begin and end. */
	struct lab_gmem *gmem;
};

/* Counters with the core's meaning (struct vl_vq_stats) for what the model does. */
struct lab_model_stats {
	uint64_t packets;     /* delivered (enqueue) or produced (dequeue) */
	uint64_t bytes;       /* packet bytes, headers excluded */
	uint64_t chains;      /* chains consumed from the ring (good and bad) */
	uint64_t rx_no_room;  /* enqueue calls stopped for want of buffers */
	uint64_t drops[VL_DROP__COUNT];
};

/* A packet the model dequeued: the bytes after the header and the header's offload fields.
 * `data` is valid until the next call on the same model. */
struct lab_model_pkt {
	const uint8_t *data;
	uint32_t len;
	struct vl_offload ol;
};

struct lab_model;

/* NULL when the configuration is unusable (size, layout, a ring area not mapped) or memory
 * is short. */
struct lab_model *lab_model_create(const struct lab_model_config *cfg);
void lab_model_destroy(struct lab_model *m);

/* Consume up to `max` available TX chains in ring order. Each good chain becomes out[i]
 * (returns how many); every consumed chain, good or dropped, is returned with used length 0. */
uint32_t lab_model_dequeue(struct lab_model *m, uint32_t max, struct lab_model_pkt *out);

/* Deliver pkts[0..n) into RX buffers (copying) per the documented RX policy; status[i]
 * (enum vl_rx_status, may be NULL) for each packet handled. Returns the packets handled from
 * the front: fewer than n when the guest has not posted enough buffers. */
uint32_t lab_model_enqueue(struct lab_model *m, struct vl_pkt *const *pkts, uint32_t n,
			   uint8_t *status);

const struct lab_model_stats *lab_model_stats(const struct lab_model *m);
/* A queue-level offence stops the model for good; the reason is one of the queue-level
 * vl_drop values (VL_DROP_NONE while working). */
enum vl_drop lab_model_broken(const struct lab_model *m);

/* Which offloads a driver with these negotiated features takes on receive (spec 5.1.3.1,
 * 5.1.6.4; docs/architecture.md, "Enqueue"): VL_DROP_NONE, or the reason an enqueue of a
 * packet with offloads ol is refused. The model's own rule, for oracles outside it. */
enum vl_drop lab_rx_offload_rule(uint64_t features, const struct vl_offload *ol);
/* The frame rules of a transmitted packet with offloads ol (frame: its len bytes after the
 * virtio-net header): VL_DROP_NONE without GSO or when the frame is what the GSO type says,
 * else gso_without_csum, gso_bad_frame, gso_proto_mismatch or gso_csum_mismatch. */
enum vl_drop lab_tx_frame_rule(const struct vl_offload *ol, const uint8_t *frame, uint32_t len);

#endif

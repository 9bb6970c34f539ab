/* SPDX-License-Identifier: MIT */
/* The host's side of the scenario's offloaded traffic, as an application does it with the
 * core's software fallbacks (vl_sw_offload.h), each result compared byte for byte with the
 * reference model's own (model_segment.h):
 *  - TX: every dequeued GSO packet is segmented (vl_sw_segment) and every NEEDS_CSUM packet
 *    completed (vl_sw_csum_complete) -- on a copy where the packet is guest memory (zero
 *    copy) or held for later -- against the model's segmentation or completion of the
 *    frame the guest sent; frames sent complete have their checksums verified;
 *  - RX: the host makes its packets (traffic.h: the far side's traffic) and makes those the
 *    driver does not take fit (vl_sw_fit); the guest checks what arrives against the
 *    model's fit (expect_bytes.h). */
#ifndef LAB_SCENARIO_OFFLOAD_H
#define LAB_SCENARIO_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model_segment.h"
#include "net_driver.h"
#include "scenario.h"
#include "traffic.h"
#include "vhostlab/vl_net.h"

struct sc_offload {
	uint64_t seed;
	struct lab_traffic rx_traffic;
	struct vl_pool *tx_pool;      /* TX segments and copies to complete */
	struct vl_pool *fit_pool;     /* RX packets made to fit, until delivered */
	uint8_t *flat, *cmp, *mbuf;   /* a frame's bytes, the core's result, the model's */
	struct lab_mframe *fr;        /* [LAB_GSO_FRAMES_MAX] */
	struct vl_pkt **out;          /* [LAB_GSO_FRAMES_MAX] */
	/* struct lab_scenario_result's offload counters, for what happens here. */
	uint64_t gso_tx_packets, gso_tx_max, csum_tx_packets, rx_fitted;
	uint64_t segments_checked, csum_completed, csum_verified;
	char err[400];
};

/* Set up for cfg: RX packets of up to max_len bytes (GSO frames excepted), a burst of them
 * and one GSO packet's frames made to fit and waiting for room at once. 0, or -1 (out of
 * memory). */
int sc_ol_init(struct sc_offload *o, const struct lab_scenario_config *cfg, uint32_t max_len);
/* Every pool buffer back? 0, or -1 with the message in o->err. */
int sc_ol_pools_whole(struct sc_offload *o);
void sc_ol_fini(struct sc_offload *o);

/* A TX packet the guest's check passed (e: what it stands for); `keep`: the host holds it
 * on, so it is not written. 0, or -1 with the message in o->err. */
int sc_ol_tx(struct sc_offload *o, struct vl_pkt *pkt, const struct lab_expect *e, bool keep);

/* Host packet `key` of `size` bytes (a GSO frame now and then if gso_ok), allocated from
 * pool, then made fit RX queue rxq's driver: what to enqueue into out[0..n) (at most max),
 * what each stands for into c. Returns n >= 1, or -1 with the message in o->err. */
int sc_ol_rx(struct sc_offload *o, const struct vl_vq *rxq, struct vl_pool *pool, uint64_t key,
	     uint32_t size, bool gso_ok, struct vl_pkt **out, struct lab_content *c, uint32_t max);

#endif

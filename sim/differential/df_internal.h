/* SPDX-License-Identifier: MIT */
/* The differential run (fuzz_differential's input): one deterministic guest, six core
 * variants, the core's two TX ceilings and the reference model, in lockstep.
 *
 * The input describes rounds of well-formed but oddly shaped traffic (TX chains: header alone,
 * shared with data or over three descriptors, 1..8 data descriptors, zero-length descriptors,
 * indirect tables with shuffled entries, misaligned and scattered buffers across region
 * boundaries, valid offloads; RX buffers of 1..4 descriptors, header split, indirect; host
 * packets of any size with offloads; call arming). Each round is replayed on nine
 * independent copies of the guest, driven by the same driver code: eight with their own core
 * queues, and one served by the reference model (sim/model.h), an independent, spec-driven
 * implementation of the device datapath that shares no code with the core:
 *
 *   participant  TX burst        batch threshold  zero-copy  allocation
 *     0          dequeue               0             off      available
 *     1          dequeue             256             off      available
 *     2          dequeue           65536             off      burst
 *     3          dequeue               0             on       available
 *     4          dequeue             256             on       available
 *     5          dequeue           65536             on       burst
 *     6          discard             256              -        -
 *     7          discard (touch)     256              -        -
 *     8 (model)  -                     -              -        -
 *
 * The two ceilings (vl_net_discard, vl_net_discard_touch: `vhostlab serve --mode null/touch`)
 * return TX chains unread; their counts of good chains stand for the packets in every
 * comparison below, their byte totals and touch's sum of first bytes must equal those of the
 * packets the guest posted, round by round, and they belong to the zero-copy-off group. They
 * receive as participant 1 does.
 *
 * Zero-copy packets are freed right after the burst and vl_vq_complete returns their chains
 * (no holding). Batching, the allocation policy and zero-copy are internal techniques, and
 * the model has none of them:
 *  - every participant against variant 0 (log "all"): the packets the host gets (count,
 *    length, offloads, every byte), the enqueue results (count handled, every status), the
 *    RX used entries in order (id, length), the sorted set of TX buffers returned, every byte
 *    of guest RAM below the highest allocation of any participant's guest (RX payloads and
 *    headers written, TX buffers untouched; after the last round the rest must be zero)
 *    and the counters of packets, bytes, chains, no-room stops and drops by reason;
 *  - among the eight cores only: the RX ring area (the model writes no event-suppression
 *    fields); among the six that dequeue, the other datapath counters: bursts, empty
 *    bursts, size classes (log "core");
 *  - within each zero-copy setting (0-2, 6 and 7; 3-5): additionally the TX used entries in
 *    order, the whole ring area, the dirty log, every notification decision and the
 *    zero-copy, used-entry and call counters (log "grp").
 * Variant 0 is also checked against the guest's own record: each packet equals what was
 * posted, RX packets reassemble to what the host sent with untouched bytes past each used
 * length, no drops, no allocation failures. Any difference aborts with the round, the
 * participants ("variant N", "the discard ceiling", ...) and the first differing item. Input
 * format: struct fz_df_header and struct fz_df_round (sim/input/sc_df_format.h), fuzz/README.md.
 *
 * Files: df_setup.c (participants, the run), df_round.c (one round, phase by phase, and
 * the comparisons), df_guest.c (the guest's RAM, posting, checks against its own record),
 * df_log.c (the observation logs compared between participants). */
#ifndef LAB_DF_INTERNAL_H
#define LAB_DF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_format.h"
#include "model.h"
#include "rng.h"
#include "sc_df_format.h"
#include "vring.h"
#include "vhostlab/vhostlab.h"

#define DF_VARIANTS 6u         /* core variants that dequeue: participants 0..5 */
#define DF_DISCARD 6u          /* the core's discard ceiling on TX (vl_net_discard) */
#define DF_TOUCH 7u            /* the touch ceiling (vl_net_discard_touch) */
#define DF_CORES 8u            /* participants with core queues: 0..7 */
#define DF_MODEL DF_CORES      /* the reference model's participant index */
#define DF_PARTS (DF_CORES + 1u)
#define DF_RAM (256u * 1024u)
#define DF_RING_AREA (32u * 1024u)
#define DF_GRANULE 64u
#define DF_MAX_DESCS 16u       /* descriptors of one chain */
#define DF_TX_MAX_LEN 8192u
#define DF_RX_MAX_CAP 9000u
#define DF_RX_MAX_PKT 12000u
#define DF_POOL_BUFS 1280u     /* 256 heads + 4 segments each: never short */
#define DF_POOL_BUF 2048u
#define DF_HOST_BUFS 256u
#define DF_POISON 0xA5u

struct df_seg {
	uint64_t gpa;
	uint32_t len;
};

/* What the guest remembers about a chain it posted, by id. */
struct df_chain {
	bool busy;
	uint32_t serial;
	uint32_t nallocs, nsegs;
	struct df_seg allocs[DF_MAX_DESCS + 1];
	struct df_seg segs[DF_MAX_DESCS];  /* buffer bytes in chain order */
	uint32_t cap;                      /* RX capacity */
	uint32_t pkt_len;                  /* TX payload */
	uint8_t hdr[12];                   /* TX header as written */
};

/* A TX packet the guest expects next. */
struct df_expect {
	uint32_t serial, pkt_len;
	uint8_t hdr[12];
};

/* Observations compared between variants: records appended to a byte log, each named so a
 * difference can be reported by what it is. */
#define DF_LOG_NAMES 1024u
struct df_log {
	struct fz_out b;
	uint32_t nrec;
	size_t off[DF_LOG_NAMES];
	const char *name[DF_LOG_NAMES];
};

/* What a core participant does with the guest's TX chains. */
enum df_tx {
	DF_TX_DEQUEUE,  /* vl_net_dequeue: packets, compared byte for byte */
	DF_TX_DISCARD,  /* vl_net_discard: chains back unread, a count and a byte total */
	DF_TX_TOUCH,    /* vl_net_discard_touch: as discard, plus each packet's first byte */
};

struct df_var {
	unsigned idx;
	uint32_t batch;
	bool zc;
	bool burst_policy;
	enum df_tx tx_mode;
	uint64_t disc_good, disc_bytes;    /* a ceiling's own totals, for the TX counters */
	struct lab_gmem *g;
	struct vl_mem *mem;
	struct lab_ring tx, rx;
	bool tx_ready, rx_ready;
	struct vl_vq *txq, *rxq;
	bool model;                        /* served by the reference model, not the core */
	struct lab_model *mtx, *mrx;
	struct lab_model_pkt mpkts[256];
	struct vl_pool *pool;
	uint8_t *ram, *ring;
	uint64_t ram_gpa, ring_gpa, rx_ring_off;
	uint8_t granule[DF_RAM / DF_GRANULE];
	uint32_t granule_lo;               /* every granule below it is taken (df_alloc) */
	uint32_t ram_hi;                   /* bytes of RAM below the end of every allocation */
	struct df_chain txc[256], rxc[256];
	struct df_expect exp[256];
	uint32_t exp_head, exp_count;
	uint32_t tx_serial, rx_serial;
	uint8_t *log;
	uint64_t log_bytes;
	struct vl_pkt *pkts[256];
	uint16_t npkts;
	/* Bursts a zero-copy variant added under IN_ORDER to go on past a stall at the bound
	 * (phase_dequeue), and how many of them found nothing: left out of the "core" log. */
	uint32_t extra_bursts, extra_empty;
	uint8_t status[FZ_DF_MAX_PKTS];
	uint16_t handled;
	struct df_log all, core, grp;
};

struct df {
	enum vl_layout L;
	uint64_t features;
	uint32_t size, hdr_len;
	bool mergeable, indirect, in_order;
	uint16_t start;
	uint32_t zc_min;
	unsigned round;
	struct vl_pool *hpool;
	struct vl_pkt *hpkts[FZ_DF_MAX_PKTS];
	struct df_var v[DF_PARTS];
};

const char *df_vname(unsigned k);
void df_log32(struct df_log *l, const char *name, uint32_t v);
void df_log_reset(struct df_log *l);
void df_log_compare(struct df *d, const struct df_log *a, const struct df_log *b, unsigned va, unsigned vb, const char *what);
extern struct df df_state;
extern uint8_t df_buf[3][VL_PKT_MAX_LEN + 16];
/* The len bytes of TX packet `serial` whose header is h: the serial's fill, behind the
 * frame headers a GSO type needs (TCP over IPv4, UDP over IPv6). Uses df_buf[2]. */
void df_tx_bytes(uint8_t *dst, uint32_t len, uint32_t serial, const uint8_t *h);
extern const uint32_t df_batch[DF_CORES];
extern uint8_t df_poison[DF_RX_MAX_CAP + 64];
void df_release_chain(struct df_var *v, struct df_chain *c);
uint16_t df_get16(const uint8_t *p);
void df_post_tx(struct df *d, struct df_var *v, const struct fz_df_tx *s);
void df_post_rx(struct df *d, struct df_var *v, const struct fz_df_rx *s);
const struct df_expect *df_next_expected(struct df *d, struct df_var *v, unsigned i);
void df_check_tx_packet(struct df *d, struct df_var *v, const struct vl_pkt *p, unsigned i, bool record);
void df_read_rx(struct df *d, struct df_var *v, const struct df_chain *c, uint32_t len, uint8_t *dst);
void df_peek_rx(struct df_var *v, const struct df_chain *c, uint32_t n, uint8_t *dst);
/* One round; `last`: the input's last, after which all of guest RAM is compared (the rounds
 * before compare the part below every participant's highest allocation, df_var.ram_hi). */
void df_run_round(struct df *d, const struct fz_df_round *rd, bool last);

#endif

/* SPDX-License-Identifier: MIT */
/* The input formats of fuzz_scenario and fuzz_differential: their decoders and the encoders
 * gen_corpus writes seeds with. */
#ifndef LAB_SC_DF_FORMAT_H
#define LAB_SC_DF_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "fz_bytes.h"

/* ---- fuzz_scenario input ------------------------------------------------------------- */

/* flags u8 (FZ_SC_F_*), mode u8 (bits 0-1 faults, 2-3 granularity code: coarse, 4 KiB,
 * 8 KiB, 64 KiB; 4-6 batch code), queue size code u8 (split 2 << (q % 8), packed 2 + q),
 * burst u8 (1 + b % 64), packets u8 (short run: 8 + p % 25; long run: 50 + p % 151),
 * containment u8 (period 1 + c % 16; high nibble 0xf: a long run, fz_sc_is_long), seed u64,
 * nsizes u8 (1 + n % 8), nsizes x size u16 (0 reads as 1). */
#define FZ_SC_F_PACKED (1u << 0)
#define FZ_SC_F_MERGEABLE (1u << 1)
#define FZ_SC_F_INDIRECT (1u << 2)
#define FZ_SC_F_IN_ORDER (1u << 3)
#define FZ_SC_F_EVENT_IDX (1u << 4)
#define FZ_SC_F_MODERN (1u << 5)
#define FZ_SC_F_ZERO_COPY (1u << 6)
#define FZ_SC_F_DIRTY_LOG (1u << 7)
#define FZ_SC_MAX_SIZES 8u

struct fz_sc_input {
	uint8_t flags, mode, qsize, burst, packets, containment;
	uint64_t seed;
	uint8_t nsizes;               /* as stored: 1 + nsizes % 8 sizes follow */
	uint16_t sizes[FZ_SC_MAX_SIZES];
};

void fz_enc_scenario(struct fz_out *o, const struct fz_sc_input *s);
/* Whether a containment byte asks for a long run (sc_run.c: 50..200 packets, 16 MiB). */
bool fz_sc_is_long(uint8_t containment);
void fz_dec_scenario(struct fz_in *in, struct fz_sc_input *s);

/* ---- fuzz_differential input --------------------------------------------------------- */

/* Header: flags u8 (FZ_DF_F_*), queue size code u8 (split 2 << (q % 8), packed
 * 2 + q % 255), start u16 (split: first index; packed: position % size), zero-copy u8
 * (bits 0-1: min_len code, fz_zc_min_len; high nibble 0xf: a long run, fz_df_is_long).
 * Then up to fz_df_max_rounds() rounds, each list of at most fz_df_max_list() entries (n
 * below is the count byte % (that + 1)):
 *   ntx u8 (n), notify u8 (bits 0-1 TX call mode: next, off, later, next; bits 2-3 RX;
 *   bits 4-7 which buffer "later" means), ntx x (len u16: 1 + len % 8192 payload bytes,
 *   shape u8 FZ_DF_TX_*, place u8: misalignment % 64, offload u8: preset % 6),
 *   dequeue count u8, nrx u8 (n), nrx x (cap u16: header + 1 + cap % 9000 bytes,
 *   shape u8 FZ_DF_RX_*, place u8), npkts u8 (n), npkts x (len u16: 1 + len % 12000,
 *   offload u8).
 * A short run (most inputs) is 3 rounds of at most 4 TX chains, 4 RX buffers and 4 host
 * packets: a run costs its rounds times the nine participants, and 12 rounds of 16 each
 * way kept the target near 150 inputs per second. A long run -- the zero-copy byte's high
 * nibble all ones, about one random input in 16 -- is what every input was before: 12
 * rounds of up to 16. */
#define FZ_DF_F_PACKED (1u << 0)
#define FZ_DF_F_MERGEABLE (1u << 1)
#define FZ_DF_F_INDIRECT (1u << 2)
#define FZ_DF_F_IN_ORDER (1u << 3)
#define FZ_DF_F_EVENT_IDX (1u << 4)
#define FZ_DF_F_VERSION_1 (1u << 5)
#define FZ_DF_F_GRAN_4K (1u << 6)
#define FZ_DF_F_DIRTY_LOG (1u << 7)
#define FZ_DF_MAX_ROUNDS 12u
#define FZ_DF_MAX_TX 16u
#define FZ_DF_MAX_RX 16u
#define FZ_DF_MAX_PKTS 16u
#define FZ_DF_SHORT_ROUNDS 3u
#define FZ_DF_SHORT_LIST 4u
/* TX shape: bits 0-2 data descriptors - 1; bit 3 indirect (if negotiated and the table fits
 * the queue); bits 4-5 header: 0 shared with data, 1 alone, 2 over three descriptors (3, 4,
 * rest), 3 alone; bit 6 a zero-length descriptor after the first data one; bit 7 every
 * descriptor in its own allocation. */
#define FZ_DF_TX_INDIRECT 0x08u
#define FZ_DF_TX_HDR_ALONE 0x10u
#define FZ_DF_TX_HDR_3 0x20u
#define FZ_DF_TX_ZERO_LEN 0x40u
#define FZ_DF_TX_SCATTER 0x80u
/* RX shape: bits 0-1 descriptors - 1; bit 2 indirect; bit 3 the header split (first
 * descriptor 2 bytes); bit 4 a zero-length descriptor; bit 5 scattered. */
#define FZ_DF_RX_INDIRECT 0x04u
#define FZ_DF_RX_HDR_SPLIT 0x08u
#define FZ_DF_RX_ZERO_LEN 0x10u
#define FZ_DF_RX_SCATTER 0x20u

struct fz_df_header {
	uint8_t flags, qsize;
	uint16_t start;
	uint8_t zc;
};

struct fz_df_tx {
	uint16_t len;
	uint8_t shape, place, ol;
};

struct fz_df_rx {
	uint16_t cap;
	uint8_t shape, place;
};

struct fz_df_pkt {
	uint16_t len;
	uint8_t ol;
};

struct fz_df_round {
	uint8_t ntx, notify, count, nrx, npkts;  /* counts already reduced (<= 16) */
	struct fz_df_tx tx[FZ_DF_MAX_TX];
	struct fz_df_rx rx[FZ_DF_MAX_RX];
	struct fz_df_pkt pk[FZ_DF_MAX_PKTS];
};

void fz_enc_df_header(struct fz_out *o, const struct fz_df_header *h);
void fz_dec_df_header(struct fz_in *in, struct fz_df_header *h);
/* Whether a header asks for a long run, and that run's bounds. */
bool fz_df_is_long(const struct fz_df_header *h);
uint32_t fz_df_max_rounds(const struct fz_df_header *h);
uint32_t fz_df_max_list(const struct fz_df_header *h);
/* A round of a run with header h: each count stored % (fz_df_max_list(h) + 1), so a round
 * encoded with more entries than a short run takes keeps its byte layout (the counts
 * wrap); encode rounds for short runs with at most that many. */
void fz_enc_df_round(struct fz_out *o, const struct fz_df_header *h,
		     const struct fz_df_round *r);
void fz_dec_df_round(struct fz_in *in, const struct fz_df_header *h, struct fz_df_round *r);

/* Run one fuzz_scenario input (sc_run.c): lab_scenario_run over the configuration decoded
 * from it, every oracle on; a failure calls fz_fail. */
int fz_sc_run(const uint8_t *data, size_t size);

/* Run one fuzz_differential input (sim/differential/): six core variants, the two TX
 * ceilings and the reference model in lockstep; a difference calls fz_fail. */
int fz_df_run(const uint8_t *data, size_t size);

#endif

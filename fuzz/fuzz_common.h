/* SPDX-License-Identifier: MIT */
/* Shared pieces of the libFuzzer targets (see fuzz/README.md):
 *
 *  - the input reader every target decodes with (never fails: an exhausted input reads as
 *    zeros, so every byte string is a valid input) and the writer gen_corpus encodes seeds
 *    with -- both sides use the constants and encoders below, so seeds follow the format
 *    wherever it goes;
 *  - the input format of each target (header layout, opcodes, argument encodings);
 *  - cached simulated guest memory (one lab_gmem per shape, wiped between inputs);
 *  - the hostile-guest datapath engine behind fuzz_{split,packed}_{dequeue,enqueue}.
 *
 * Every check failure prints what was violated and calls abort(): for libFuzzer that is a
 * crash, for the replay driver of normal builds a failed test. */
#ifndef VL_FUZZ_COMMON_H
#define VL_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "rng.h"
#include "vhostlab/vhostlab.h"

/* The libFuzzer entry point each target defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- failing ------------------------------------------------------------------------- */

/* Print "fuzz: <target>: <message>" to stderr and abort(). */
__attribute__((format(printf, 1, 2), noreturn)) void fz_fail(const char *fmt, ...);
/* The name fz_fail prefixes (set by each target before it runs). */
void fz_set_target(const char *name);
/* FZ_VERBOSE set in the environment: targets print a one-line summary per input. */
bool fz_verbose(void);

/* ---- reading inputs ------------------------------------------------------------------ */

struct fz_in {
	const uint8_t *p;
	size_t n, off;
};

static inline struct fz_in fz_in_make(const uint8_t *data, size_t size)
{
	struct fz_in in = {data, size, 0};

	return in;
}

static inline bool fz_more(const struct fz_in *in)
{
	return in->off < in->n;
}

uint8_t fz_u8(struct fz_in *in);
uint16_t fz_u16(struct fz_in *in);   /* little-endian */
uint32_t fz_u32(struct fz_in *in);
uint64_t fz_u64(struct fz_in *in);
/* Copy up to len bytes (zeros past the end of the input). */
void fz_bytes(struct fz_in *in, void *dst, size_t len);

/* ---- writing seeds ------------------------------------------------------------------- */

struct fz_out {
	uint8_t *buf;
	size_t len, cap;
};

void fz_out_init(struct fz_out *o);
void fz_out_free(struct fz_out *o);
void fz_put8(struct fz_out *o, uint8_t v);
void fz_put16(struct fz_out *o, uint16_t v);
void fz_put32(struct fz_out *o, uint32_t v);
void fz_put64(struct fz_out *o, uint64_t v);
void fz_put_bytes(struct fz_out *o, const void *src, size_t len);
/* Write the buffer to dir/name. Returns 0 or -1 (message on stderr). */
int fz_out_save(const struct fz_out *o, const char *dir, const char *name);

/* ---- deterministic helpers ----------------------------------------------------------- */

/* Fill len bytes with the deterministic stream of `seed` (payloads the harnesses can
 * regenerate to compare against). */
void fz_fill(uint8_t *dst, uint32_t len, uint64_t seed);

/* ---- cached guest memory ------------------------------------------------------------- */

/* A lab_gmem of this shape, created on first use and kept for the process (creating guest
 * memory costs a memfd and a mapping per region). `slot` tells apart instances that must
 * coexist (the differential target keeps one per core variant). Every byte of the ring
 * area and RAM is zeroed before it is returned. */
struct lab_gmem *fz_gmem_get(unsigned slot, uint64_t ring_size, uint64_t ram_size,
			     uint64_t granularity);

/* ---- the hostile datapath targets ---------------------------------------------------- */

/* Guest memory of the four datapath targets. */
#define FZ_DP_RING_AREA 0x4000u   /* 16 KiB: the rings, then spare bytes buffers may alias */
#define FZ_DP_RAM 0x10000u        /* 64 KiB of RAM */
#define FZ_DP_MAX_OPS 256u        /* operations decoded per input, at most */
#define FZ_DP_MAX_BURSTS 64u      /* datapath bursts per input, at most */
#define FZ_DP_MAX_HELD 256u       /* dequeued packets the host holds at once */
#define FZ_DP_MAX_RX_PKTS 8u      /* packets offered per enqueue burst */
/* Offsets inside the ring area (split: descriptors, avail, used; packed: descriptors,
 * driver event area, device event area). Queue sizes go up to 256. */
#define FZ_DP_OFF_AVAIL 0x1000u
#define FZ_DP_OFF_USED 0x2000u
#define FZ_DP_OFF_DRIVER_EVENT 0x1000u
#define FZ_DP_OFF_DEVICE_EVENT 0x1040u

/* Header of a datapath input: FZ_DP_HDR_LEN bytes in this order. */
struct fz_dp_setup {
	uint8_t features;    /* FZ_DPF_* */
	uint8_t qsize;       /* split: 1 << (qsize % 9); packed: 1 + qsize */
	uint16_t start;      /* split: first avail/used index; packed: position % size in bits
			      * 0-14, wrap counter in bit 15 */
	uint8_t batch;       /* fz_batch_threshold(batch) */
	uint8_t pool;        /* dequeue pool: 1 + (pool & 63) * 8 buffers of
			      * fz_pool_buf_size(pool >> 6) bytes */
	uint8_t zc;          /* zero-copy: bit 0 on; min_len fz_zc_min_len(zc >> 1 & 3); at most
			      * 1 + (zc >> 3) chains held */
	uint8_t hold;        /* bits 0-1: hold dequeued packets never / always / 1 in 2 / 1 in 4;
			      * bits 6-7: what a TX burst calls (enum fz_tx_host) */
	uint8_t log;         /* dirty-log bitmap: 0 = covers all guest memory, else `log` bytes */
	uint8_t fill;        /* every guest byte starts as this */
};
#define FZ_DP_HDR_LEN 10u

#define FZ_DPF_MERGEABLE (1u << 0)
#define FZ_DPF_INDIRECT (1u << 1)
#define FZ_DPF_IN_ORDER (1u << 2)
#define FZ_DPF_EVENT_IDX (1u << 3)
#define FZ_DPF_VERSION_1 (1u << 4)
#define FZ_DPF_GRAN_4K (1u << 5)
#define FZ_DPF_DIRTY_LOG (1u << 6)
#define FZ_DPF_ALLOC_BURST (1u << 7)

/* What a TX burst calls, from fz_dp_setup.hold bits 6-7 (bits 2-5 are unused; the committed
 * regression inputs have bits 2-7 clear but for one with bit 3 set, so none changed
 * meaning): vl_net_dequeue, vl_net_discard, vl_net_discard_touch, or the three in turn
 * (burst k calls k % 3), so chains a zero-copy packet holds meet the ceilings too. */
enum fz_tx_host {
	FZ_TX_DEQUEUE = 0,
	FZ_TX_DISCARD = 1,
	FZ_TX_TOUCH = 2,
	FZ_TX_ROTATE = 3,
};
#define FZ_TX_HOST_SHIFT 6u

/* Negotiated feature bits of a datapath setup for a layout. */
uint64_t fz_dp_features(uint8_t dpf, enum vl_layout layout);
uint32_t fz_batch_threshold(uint8_t code);
uint32_t fz_pool_buf_size(uint8_t code);
uint32_t fz_zc_min_len(uint8_t code);

/* Operations, one opcode byte (taken modulo FZ_OP__COUNT) then its arguments. Where the
 * layouts differ the meaning is given as split / packed.
 *   WRITE    area u8 (bit 0: RAM, else ring area), off u16, n u8 (% 65), n bytes
 *   FILL     area u8, off u16, len u16, byte u8
 *   DESC     idx u16 (% size), addr, len, flags u16, next / id u16: a raw ring descriptor
 *            (packed: flags stored last, with release)
 *   TABLE    ram off u16, addr, len, flags u16, next / id u16: one raw 16-byte indirect
 *            table entry in the layout's format at any offset in RAM
 *   POST     shape u8, len u16, ram off u16 [, 10 header bytes if FZ_POST_RAW_HDR]: a
 *            well-formed chain (see FZ_POST_*) through the driver cursor, published
 *            (split: descriptors taken in turn from index size / 2 on; packed: at the
 *            driver position, buffer ids taken in turn from 0)
 *   AVAIL    split: head u16 into the next avail slot (not published)
 *            packed: pos u16, mode u8: rewrite the AVAIL/USED bits (fz_flag_mode)
 *   PUBLISH  split: avail->idx = the driver's index / packed: driver position u16 (bit 15
 *            wrap)
 *   FORCE    split: avail->idx = u16 (the driver continues from there) / packed: n u8: the
 *            driver skips n positions
 *   EVENT    split: which u8 (bit 0: used_event, else avail->flags), value u16
 *            packed: off_wrap u16, flags u16 of the driver event area
 *   BURST    dequeue: count u8 (vl_net_dequeue, or discard or touch: fz_dp_setup.hold
 *            bits 6-7) / enqueue: n u8 (1 + n % 8), then n x (len u16, mod u8: bit 0 adds
 *            65000 to len, bits 1-3 pick offload fields)
 *   FREE     mode u8: 0 all held packets, 1 the oldest half, 2 every other, 3 the newest
 *   COMPLETE vl_vq_complete
 *   POOLFAIL after u8 (255: never fail again) for the dequeue pool
 *   KICKS    want u8 (bit 0)
 *   BATCH    code u8 (fz_batch_threshold)
 *   POLICY   bit 0: VL_ALLOC_BURST; bit 1: evict-after-read (vl_vq_set_evict_reads);
 *            bit 2: line wait (vl_vq_set_tx_line_wait)
 *   ZC       u8 as fz_dp_setup.zc
 *   SETMEM   a new memory table over the same regions (vl_vq_set_mem)
 *
 * addr: sel u8, then by sel % 8: 0-2 RAM + u16 (may run past its end), 3 ring area + u16,
 * 4 RAM + page u8 * 4096 - back u8 (region boundaries), 5 hole + u16, 6 raw u64,
 * 7 end of RAM - back u8.
 * len: sel u8, then by sel % 3: 0 u16, 1 raw u32, 2 0xffffffff - u8. */
enum fz_op {
	FZ_OP_WRITE = 0,
	FZ_OP_FILL,
	FZ_OP_DESC,
	FZ_OP_TABLE,
	FZ_OP_POST,
	FZ_OP_AVAIL,
	FZ_OP_PUBLISH,
	FZ_OP_FORCE,
	FZ_OP_EVENT,
	FZ_OP_BURST,
	FZ_OP_FREE,
	FZ_OP_COMPLETE,
	FZ_OP_POOLFAIL,
	FZ_OP_KICKS,
	FZ_OP_BATCH,
	FZ_OP_POLICY,
	FZ_OP_ZC,
	FZ_OP_SETMEM,
	FZ_OP__COUNT
};

/* POST shape bits. */
#define FZ_POST_NSEGS_MASK 0x07u   /* data descriptors - 1 (1..8) */
#define FZ_POST_INDIRECT 0x08u     /* through an indirect table right after the buffer */
#define FZ_POST_HDR_ALONE 0x10u    /* the header in a descriptor of its own */
#define FZ_POST_MISALIGN 0x20u     /* buffer starts one byte further */
#define FZ_POST_ZERO_LEN 0x40u     /* a zero-length descriptor after the first */
#define FZ_POST_RAW_HDR 0x80u      /* 10 header bytes follow (TX; else a zero header) */

/* packed AVAIL modes (low 2 bits; bit 2 toggles NEXT, bit 3 toggles WRITE, bit 4 toggles
 * INDIRECT): 0 available for the driver's wrap counter, 1 looks used (both bits = wrap),
 * 2 available for the other wrap counter, 3 both bits clear. */
#define FZ_PFLAG_AVAIL 0u
#define FZ_PFLAG_USED 1u
#define FZ_PFLAG_OTHER 2u
#define FZ_PFLAG_CLEAR 3u
#define FZ_PFLAG_NEXT 4u
#define FZ_PFLAG_WRITE 8u
#define FZ_PFLAG_INDIRECT 16u

/* Encoders for gen_corpus (one per operation and argument kind). */
void fz_enc_setup(struct fz_out *o, const struct fz_dp_setup *s);
void fz_enc_addr_ram(struct fz_out *o, uint16_t off);
void fz_enc_addr_ring(struct fz_out *o, uint16_t off);
void fz_enc_addr_boundary(struct fz_out *o, uint8_t page, uint8_t back);
void fz_enc_addr_hole(struct fz_out *o, uint16_t off);
void fz_enc_addr_raw(struct fz_out *o, uint64_t gpa);
void fz_enc_addr_ram_end(struct fz_out *o, uint8_t back);
void fz_enc_len(struct fz_out *o, uint32_t len);   /* picks the shortest encoding */
void fz_enc_write(struct fz_out *o, bool ram, uint16_t off, const void *src, uint8_t n);
void fz_enc_fill(struct fz_out *o, bool ram, uint16_t off, uint16_t len, uint8_t byte);
/* DESC and TABLE: the opcode and the index/offset; the caller encodes addr and len, then
 * calls fz_enc_desc_tail. */
void fz_enc_desc_head(struct fz_out *o, uint16_t idx);
void fz_enc_table_head(struct fz_out *o, uint16_t ram_off);
void fz_enc_desc_tail(struct fz_out *o, uint16_t flags, uint16_t next_or_id);
void fz_enc_post(struct fz_out *o, uint8_t shape, uint16_t len, uint16_t ram_off,
		 const uint8_t *hdr10);
void fz_enc_avail(struct fz_out *o, uint16_t head);
void fz_enc_pflags(struct fz_out *o, uint16_t pos, uint8_t mode);
void fz_enc_publish(struct fz_out *o);
void fz_enc_setpos(struct fz_out *o, uint16_t pos_wrap);
void fz_enc_force(struct fz_out *o, uint16_t idx);
void fz_enc_skip(struct fz_out *o, uint8_t n);
void fz_enc_event_split(struct fz_out *o, bool used_event, uint16_t value);
void fz_enc_event_packed(struct fz_out *o, uint16_t off_wrap, uint16_t flags);
void fz_enc_dequeue(struct fz_out *o, uint8_t count);
/* Enqueue n packets (1..8) of lens[i] bytes with modifiers mods[i] (may be NULL: 0). */
void fz_enc_enqueue(struct fz_out *o, uint8_t n, const uint16_t *lens, const uint8_t *mods);
void fz_enc_op1(struct fz_out *o, enum fz_op op, uint8_t arg);  /* FREE POOLFAIL KICKS BATCH
								   * POLICY ZC */
void fz_enc_op0(struct fz_out *o, enum fz_op op);               /* COMPLETE SETMEM */

/* ---- fuzz_scenario input ------------------------------------------------------------- */

/* flags u8 (FZ_SC_F_*), mode u8 (bits 0-1 faults, 2-3 granularity code: coarse, 4 KiB,
 * 8 KiB, 64 KiB; 4-6 batch code), queue size code u8 (split 2 << (q % 8), packed 2 + q),
 * burst u8 (1 + b % 64), packets u8 (50 + p % 151), containment u8 (1 + c % 16), seed u64,
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
void fz_dec_scenario(struct fz_in *in, struct fz_sc_input *s);

/* ---- fuzz_differential input --------------------------------------------------------- */

/* Header: flags u8 (FZ_DF_F_*), queue size code u8 (split 2 << (q % 8), packed
 * 2 + q % 255), start u16 (split: first index; packed: position % size), zero-copy min_len
 * code u8 (fz_zc_min_len). Then up to FZ_DF_MAX_ROUNDS rounds:
 *   ntx u8 (% 17), notify u8 (bits 0-1 TX call mode: next, off, later, next; bits 2-3 RX;
 *   bits 4-7 which buffer "later" means), ntx x (len u16: 1 + len % 8192 payload bytes,
 *   shape u8 FZ_DF_TX_*, place u8: misalignment % 64, offload u8: preset % 6),
 *   dequeue count u8, nrx u8 (% 17), nrx x (cap u16: header + 1 + cap % 9000 bytes,
 *   shape u8 FZ_DF_RX_*, place u8), npkts u8 (% 17), npkts x (len u16: 1 + len % 12000,
 *   offload u8). */
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
void fz_enc_df_round(struct fz_out *o, const struct fz_df_round *r);
void fz_dec_df_round(struct fz_in *in, struct fz_df_round *r);

/* Run one datapath input: layout and direction fixed by the target. */
int fz_dp_run(const uint8_t *data, size_t size, enum vl_layout layout, bool rx);

/* ---- recording ----------------------------------------------------------------------- */

/* Where the run is recorded as a trace (sim/trace/trace_sink.h): set by `vhostlab trace
 * from-fuzz` before it runs an input, NULL while fuzzing. The datapath engine records its
 * setup, every host action and the guest's writes before it; fuzz_scenario has the scenario
 * record itself (lab_scenario_config.record) and hands the trace over; fz_fail reports its
 * message. */
struct lab_trace_sink;
extern const struct lab_trace_sink *fz_sink;

#endif

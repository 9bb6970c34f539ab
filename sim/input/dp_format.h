/* SPDX-License-Identifier: MIT */
/* The input format of the four hostile-guest datapath targets (fuzz_{split,packed}_
 * {dequeue,enqueue}): a setup header, then operations, each decoded into one action of the
 * hostile guest (sim/hostile_guest/hostile_guest.h). The constants and the encoders gen_corpus
 * writes seeds with live here, beside the decoder (dp_decode.c), so seeds follow the format
 * wherever it goes. fuzz/README.md describes the format for users. */
#ifndef LAB_DP_FORMAT_H
#define LAB_DP_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "fz_bytes.h"
#include "vhostlab/vhostlab.h"


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
	uint8_t zc;          /* zero-copy: bit 0 on; min_len fz_zc_min_len(zc >> 1 & 3); the
			      * bound 1 + (zc >> 3) ring descriptors */
	uint8_t hold;        /* bits 0-1: hold dequeued packets never / always / 1 in 2 / 1 in 4;
			      * bit 2: FZ_HOLD_NO_GUEST_CSUM, bit 4: FZ_HOLD_NO_GSO,
			      * bit 5: FZ_HOLD_NO_ECN;
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

/* The TX segmentation features are negotiated unless the setup's hold byte says otherwise
 * (bits that were unused and clear in every committed seed and regression input, so those
 * keep their meaning): bit 4 leaves out HOST_TSO4, HOST_TSO6, HOST_UFO and HOST_USO, bit 5
 * HOST_ECN -- so GSO headers meet gso_not_negotiated and ecn_not_negotiated too. */
#define FZ_HOLD_NO_GSO (1u << 4)
#define FZ_HOLD_NO_ECN (1u << 5)
/* Bit 2 leaves out GUEST_CSUM, so RX packets with checksum flags meet
 * rx_csum_not_negotiated (clear in every committed seed and regression input). */
#define FZ_HOLD_NO_GUEST_CSUM (1u << 2)

/* What a TX burst calls, from fz_dp_setup.hold bits 6-7 (bit 3 is unused; the committed
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

/* Negotiated feature bits of a datapath setup (its features and hold bytes) for a layout. */
uint64_t fz_dp_features(uint8_t dpf, uint8_t hold, enum vl_layout layout);
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

/* The operations' names, for FZ_TRACE. */
extern const char *const fz_op_names[FZ_OP__COUNT];

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


/* Run one datapath input: layout and direction fixed by the target. */
int fz_dp_run(const uint8_t *data, size_t size, enum vl_layout layout, bool rx);

/* Where each operation of a datapath input starts (byte offsets, the opcode's; at most max,
 * as many as fz_dp_run would decode), read the way the decoder reads them: what the
 * structure-aware mutator (fuzz/dp_mutator.c) cuts and splices at. Returns the count. */
size_t fz_dp_op_starts(const uint8_t *data, size_t size, enum vl_layout layout, bool rx,
		       size_t *starts, size_t max);

#endif

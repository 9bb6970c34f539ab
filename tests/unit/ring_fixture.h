/* SPDX-License-Identifier: MIT */
/* Test fixture for the ring and virtio-net unit tests: simulated guest memory (coarse or
 * 4 KiB regions), the core's memory table over its host view, one TX and one RX ring written
 * from the driver side (split: sim/vring_split.h; packed: sim/vring_packed.h, chosen by
 * rf_cfg.layout), a core queue over each, and a packet pool. Helpers write bytes into guest
 * RAM and post chains from (gpa, len, flags) lists; the posting and used-ring helpers work on
 * either layout (a chain's "head" is the split head index or the packed buffer id).
 *
 * Every helper asserts (cmocka) on a fixture failure, so a scenario body reads as the steps
 * a driver takes and the outcomes it must observe. */
#ifndef VL_TEST_RING_FIXTURE_H
#define VL_TEST_RING_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "vhostlab/vhostlab.h"
#include "vring_packed.h"
#include "vring_split.h"

/* Guest RAM layouts the scenarios run over. */
#define RF_COARSE 0u    /* LAB_GMEM_COARSE_REGIONS large RAM regions */
#define RF_4K 4096u     /* one region per page: buffers and tables straddle freely */

/* Most descriptors one posted chain may use (tracked so they return to the free list). */
#define RF_MAX_CHAIN 300u

/* The fixture's pool: room for a full ring of small packets plus a few 64 KiB ones. */
#define RF_POOL_BUFS 1024u
#define RF_POOL_BUF_SIZE 2048u

struct rf_cfg {
	uint64_t granularity;     /* RF_COARSE or RF_4K (any multiple of 4096 works) */
	uint64_t features;        /* negotiated on both queues */
	uint32_t qsize;           /* both queues */
	uint16_t start_idx;       /* split: ring indices and the core's last_avail_idx start
				   * here; packed: the ring position (< qsize) both sides start
				   * at */
	uint32_t batch_threshold; /* both queues */
	uint64_t ram_size;        /* guest RAM bytes */
	uint64_t seed;            /* host placement of the regions */
	enum vl_layout layout;    /* VL_LAYOUT_SPLIT (default) or VL_LAYOUT_PACKED; packed adds
				   * VIRTIO_F_RING_PACKED to features, and qsize may be any size */
	bool start_wrap;          /* packed: both wrap counters at start (default 1). With
				   * VIRTIO_F_IN_ORDER in features the driver reads batches */
};

/* One queue seen from both sides: the driver's ring and the core's queue over it. */
struct rf_q {
	enum vl_layout layout;
	struct lab_vring vr;      /* split */
	struct lab_pring pr;      /* packed */
	struct vl_vq *q;
	bool rx;
	uint16_t *chain_desc;     /* split: [qsize * RF_MAX_CHAIN]: descriptors of the chain at
				   * head */
	uint16_t *chain_n;        /* split: [qsize]: how many (0: nothing to give back) */
};

struct rf {
	struct rf_cfg cfg;
	struct lab_gmem *g;
	struct vl_mem *mem;
	struct rf_q tx, rx;
	struct vl_pool *pool;
	uint32_t hdr_len;
	/* A window of RAM reserved at setup around the boundary between the first two RAM
	 * regions (different host mappings): straddle_gpa = that boundary. */
	uint64_t straddle_gpa;
};

/* A descriptor as a test lists it; rf_post_chain adds NEXT/next itself. */
struct rf_desc {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags;
};

/* A well-formed chain posted by rf_post_good: one descriptor holding (TX) a zero header and
 * len pattern bytes, or (RX) room for a header and len bytes. */
struct rf_good {
	uint16_t head;
	uint64_t gpa;   /* the buffer (header first) */
	uint32_t len;   /* packet bytes (header excluded) */
	uint8_t seed;   /* pattern */
};

/* Defaults: split layout, 256 entries, INDIRECT_DESC + VERSION_1 (12-byte header), index 0
 * (packed: position 0, wrap counter 1), batching at the default threshold, 1 MiB of RAM. */
void rf_cfg_init(struct rf_cfg *cfg, uint64_t granularity);
/* rf_cfg_init, then the packed layout with qsize entries. */
void rf_cfg_init_packed(struct rf_cfg *cfg, uint64_t granularity, uint32_t qsize);
void rf_setup(struct rf *f, const struct rf_cfg *cfg);
/* Releases everything and asserts no packet of the pool is still out. */
void rf_teardown(struct rf *f);
/* rf_cfg_init with the defaults, then rf_setup. */
void rf_setup_gran(struct rf *f, uint64_t granularity);

/* One run of a scenario as a row of a table: cmocka's name for it, the scenario, and the
 * fixture it runs on. Fields left 0 keep rf_cfg_init's defaults (packed: 256 entries). */
struct rf_case {
	const char *name;
	void (*fn)(struct rf *f);
	/* Instead of fn: a scenario on one queue of the fixture, the RX one when rx. */
	void (*side_fn)(struct rf *f, struct rf_q *s);
	bool rx;
	enum vl_layout layout;
	uint64_t granularity;     /* RF_COARSE or RF_4K */
	uint64_t features;        /* added to the defaults */
	uint64_t features_off;    /* then taken off */
	uint32_t qsize;           /* 0: 256 */
	uint16_t start_idx;
	bool wrap0;               /* packed: both wrap counters start at 0 (default 1) */
	bool no_batch;            /* batch_threshold 0: every copy made at once */
	uint64_t ram_size;        /* guest RAM bytes; 0: rf_cfg_init's */
};
/* A fresh fixture for c, the scenario on it, teardown. */
void rf_case_run(const struct rf_case *c);
struct CMUnitTest;
/* Runs one cmocka group, named group: a test per row of cases (each under the row's name),
 * then the n_more ordinary tests of more (a scenario whose fixture is worked out at run
 * time). Returns the number that failed, as cmocka_run_group_tests does. */
int rf_run_cases(const char *group, const struct rf_case *cases, size_t n,
		 const struct CMUnitTest *more, size_t n_more);

#define RF_IN_ORDER VL_FEATURE(VL_F_IN_ORDER)
/* Every TX segmentation offload a device can take: TSO over IPv4 and IPv6, UFO, USO, ECN. */
#define RF_HOST_GSO                                                                          \
	(VL_FEATURE(VL_F_NET_HOST_TSO4) | VL_FEATURE(VL_F_NET_HOST_TSO6) |                   \
	 VL_FEATURE(VL_F_NET_HOST_UFO) | VL_FEATURE(VL_F_NET_HOST_USO) |                     \
	 VL_FEATURE(VL_F_NET_HOST_ECN))
/* A row running scn_SCN, named SCN followed by suffix, with defaults for the rest. */
#define RF_CASE(scn, suffix, lay, gran, feat)                                                \
	{ .name = #scn suffix, .fn = scn_##scn, .layout = lay, .granularity = gran,          \
	  .features = feat }
/* The usual four rows of scn_NAME: split and packed, without and with VIRTIO_F_IN_ORDER,
 * coarse RAM. */
#define RF_CASES4(name)                                                                      \
	RF_CASE(name, "_split", VL_LAYOUT_SPLIT, RF_COARSE, 0),                              \
		RF_CASE(name, "_packed", VL_LAYOUT_PACKED, RF_COARSE, 0),                    \
		RF_CASE(name, "_split_in_order", VL_LAYOUT_SPLIT, RF_COARSE, RF_IN_ORDER),   \
		RF_CASE(name, "_packed_in_order", VL_LAYOUT_PACKED, RF_COARSE, RF_IN_ORDER)
/* Two rows of scn_NAME, split and packed, coarse RAM, with features added. */
#define RF_CASES2(name, features)                                                            \
	RF_CASE(name, "_split", VL_LAYOUT_SPLIT, RF_COARSE, features),                       \
		RF_CASE(name, "_packed", VL_LAYOUT_PACKED, RF_COARSE, features)
/* An array and its length, for rf_run_cases. */
#define RF_LIST(a) (a), sizeof(a) / sizeof((a)[0])

struct rf_q *rf_side(struct rf *f, bool rx);
/* The queue configuration the fixture created s->q with (addresses, features, the start
 * position), so a test can create another queue over the same ring. */
void rf_vq_config(const struct rf *f, const struct rf_q *s, struct vl_vq_config *qc);

/* Guest RAM. */
uint64_t rf_alloc(struct rf *f, uint64_t len);       /* 64-byte aligned, asserts success */
void *rf_ptr(struct rf *f, uint64_t gpa, uint64_t len); /* guest view, asserts mapped */
void rf_write(struct rf *f, uint64_t gpa, const void *src, uint64_t len);
void rf_read(struct rf *f, uint64_t gpa, void *dst, uint64_t len);
uint64_t rf_put_bytes(struct rf *f, const void *src, uint64_t len); /* alloc + write */
void rf_fill(struct rf *f, uint64_t gpa, uint8_t byte, uint64_t len);
/* A gpa `before` bytes ahead of the region boundary at f->straddle_gpa (before <= 2048,
 * the range may run up to 6144 bytes past the boundary). Asserts that the core's table
 * really ends a host mapping there. */
uint64_t rf_straddle(struct rf *f, uint32_t before);

/* Deterministic packet bytes: pattern(seed)[i]. */
uint8_t rf_pattern_byte(uint8_t seed, uint32_t i);
void rf_pattern(uint8_t *dst, uint32_t len, uint8_t seed);
/* Do guest bytes [gpa, gpa+len) equal pattern(seed) starting at offset off? */
void rf_assert_pattern_at(struct rf *f, uint64_t gpa, uint32_t len, uint8_t seed, uint32_t off);

/* Descriptors (split only: rf_desc, rf_set_desc, rf_post_head). */
uint16_t rf_desc(struct rf_q *s);   /* one from the driver's free list, asserts success */
void rf_set_desc(struct rf_q *s, uint16_t idx, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next);
/* Make head available and kick; `descs` (n of them) return to the free list when its used
 * entry is popped with rf_pop_used. head must be < qsize. */
void rf_post_head(struct rf_q *s, uint16_t head, const uint16_t *descs, uint32_t n);
/* Write n descriptors linked with NEXT (flags of each as given, NEXT added on all but the
 * last) and post the chain. Returns the head (packed: the buffer id, which the driver writes
 * into every descriptor of the chain; the chain is visible on return). */
uint16_t rf_post_chain(struct rf_q *s, const struct rf_desc *d, uint32_t n);
/* Write a split-format indirect table of n entries at gpa (linked with NEXT, indices
 * 0..n-1). */
void rf_write_table(struct rf *f, uint64_t gpa, const struct rf_desc *d, uint32_t n);
/* Write a packed-format indirect table of n entries at gpa: flags exactly as given (the
 * entries are consecutive, nothing is added) and buffer id 0xFFFF in each (reserved in a
 * table and ignored by the device, spec 2.8.8: an out-of-range value shows it is). */
void rf_write_ptable(struct rf *f, uint64_t gpa, const struct rf_desc *d, uint32_t n);
/* The table of the n entries in d in the format of s's layout: rf_write_table (split) or
 * rf_write_ptable (packed). */
void rf_write_qtable(struct rf *f, const struct rf_q *s, uint64_t gpa, const struct rf_desc *d,
		     uint32_t n);
/* A valid two-entry indirect table in s's format (TX: a zero header and 40 data bytes; RX:
 * room for a header and 40 bytes), for cases where the table is fine and something around
 * it is not. */
uint64_t rf_valid_table(struct rf *f, const struct rf_q *s);
/* Post a chain made of one INDIRECT descriptor naming [gpa, gpa + len). */
uint16_t rf_post_indirect(struct rf_q *s, uint64_t table_gpa, uint32_t table_len);

/* Writes what a TX buffer at gpa holds for a packet of len pattern(seed) bytes: a zero
 * virtio-net header, then the payload. */
void rf_write_tx_pkt(struct rf *f, uint64_t gpa, uint32_t len, uint8_t seed);
/* Prepares the buffer at g->gpa as rf_good_buf does (TX: the packet; RX: poison). */
void rf_good_fill(struct rf *f, const struct rf_q *s, const struct rf_good *g);
/* The buffer of a well-formed chain, not posted: (TX) a zero header and len pattern bytes,
 * or (RX) room for a header and len bytes, poisoned. The caller posts it as it likes. */
struct rf_good rf_good_buf(struct rf *f, const struct rf_q *s, uint32_t len, uint8_t seed);
/* A well-formed one-descriptor chain on side s (see struct rf_good). */
struct rf_good rf_post_good(struct rf *f, struct rf_q *s, uint32_t len, uint8_t seed);
/* The same buffer described by ndescs (1..8) descriptors over adjacent slices of it. */
struct rf_good rf_post_good_n(struct rf *f, struct rf_q *s, uint32_t len, uint8_t seed,
			      uint32_t ndescs);
/* A well-formed buffer cut into n (>= 1) slices, listed in d[0..n) for the caller to post
 * as a chain or write as a table: TX a zero header entry, then n - 1 four-byte slices of
 * pattern(seed); RX n eight-byte slices of room, poisoned. head is left 0. */
struct rf_good rf_good_slices(struct rf *f, const struct rf_q *s, struct rf_desc *d,
			      uint32_t n, uint8_t seed);
/* The longest legal chain, posted: exactly queue-size descriptors of rf_good_slices (a walk
 * bound one short would refuse it). */
struct rf_good rf_post_longest_chain(struct rf *f, struct rf_q *s, uint8_t seed);
/* Give a posted good chain's buffer back to the guest allocator (after it was used). */
void rf_free_good(struct rf *f, const struct rf_good *g);
/* One burst that must move exactly the packet of g: TX dequeues (up to 512) and gets exactly
 * that packet, byte for byte; RX enqueues one packet of g->len pattern(g->seed) bytes and
 * finds it (zero offloads, num_buffers 1) in g's buffer. */
void rf_burst_expect_good(struct rf *f, struct rf_q *s, const struct rf_good *g);
/* The same for n chains posted in this order (n <= 256), all in one burst. */
void rf_burst_expect_goods(struct rf *f, struct rf_q *s, const struct rf_good *g, uint32_t n);
/* rf_burst_expect_goods, then the guest takes each chain back used, in order and with its
 * length (rf_good_used_len), sees nothing more, and the buffers are freed (rf_free_good). */
void rf_burst_expect_returned(struct rf *f, struct rf_q *s, const struct rf_good *g, uint32_t n);
/* rf_burst_expect_good, then g comes back used with its length, nothing else does, no other
 * drop was counted, and the queue still moves a good chain (rf_expect_still_works). */
void rf_expect_only_good(struct rf *f, struct rf_q *s, const struct rf_good *g);
/* The same with TX asking for exactly tx_count packets (RX still offers n packets). */
void rf_burst_expect_goods_ask(struct rf *f, struct rf_q *s, const struct rf_good *g,
			       uint32_t n, uint16_t tx_count);
/* Used length the guest must see for g: TX 0, RX header + len. */
uint32_t rf_good_used_len(const struct rf *f, const struct rf_q *s, const struct rf_good *g);

/* Packed: the guest view of ring descriptor pos; the driver's next avail position and wrap
 * counter encoded as vl_vq_last_avail encodes the device's (position | wrap << 15). */
struct vl_packed_desc *rf_pdesc(struct rf_q *s, uint16_t pos);
uint16_t rf_pavail_enc(const struct rf_q *s);

/* Next used entry: asserts there is one with this id and length and gives its descriptors
 * back to the free list (packed: an in-order batch is expanded, one id at a time with length
 * 0, as lab_pring_pop_used does). */
void rf_expect_used(struct rf_q *s, uint16_t id, uint32_t len);
/* Asserts that the guest sees no further used entry. */
void rf_expect_no_used(struct rf_q *s);
/* Pop one used entry if there is one (returning descriptors). */
bool rf_pop_used(struct rf_q *s, uint32_t *id, uint32_t *len);

/* Packets for enqueue: pkt_len pattern(seed) bytes in as many pool segments as needed. */
struct vl_pkt *rf_make_pkt(struct rf *f, uint32_t len, uint8_t seed);
/* Does pkt hold exactly len pattern(seed) bytes? */
void rf_assert_pkt_pattern(const struct vl_pkt *pkt, uint32_t len, uint8_t seed);

/* The flag a well-formed descriptor on side s carries: WRITE on RX, none on TX. */
uint16_t rf_dirf(const struct rf_q *s);

/* A fresh well-formed chain (split: one descriptor, packed: two) moves and comes back, no
 * drop counter changes and the queue is not broken; packed: the device's avail and used
 * positions are the driver's next one. */
void rf_expect_still_works(struct rf *f, struct rf_q *s);
/* The chains `bad` (heads, packed: buffer ids) were posted in this order and each must be
 * dropped for `why`: post a good chain behind them, run one burst, and check that the packet
 * moved, each bad chain came back with length 0 before it, exactly nbad drops for `why` and
 * nothing else, one used entry each, and the queue keeps working (rf_expect_still_works). */
void rf_expect_bad_then_good(struct rf *f, struct rf_q *s, const uint16_t *bad, uint32_t nbad,
			     enum vl_drop why);

/* A drop counter of a queue. */
uint64_t rf_drops(const struct rf_q *s, enum vl_drop why);
/* Sum of all drop counters but `except` (so a test can assert "this reason and no other"). */
uint64_t rf_drops_other(const struct rf_q *s, enum vl_drop except);

#endif

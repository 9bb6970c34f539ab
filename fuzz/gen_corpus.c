/* SPDX-License-Identifier: MIT */
/* gen_corpus: write a seed corpus for every fuzz target.
 *
 *   gen_corpus OUTDIR [TARGET...]
 *
 * creates OUTDIR/<target>/ and writes one file per seed: well-formed traffic in several
 * configurations, and one input per hostile-guest class the datapath targets must survive
 * (loop, next out of range, head >= size, avail index jump, nested indirect, bad indirect
 * length, unmapped range, region straddle, header over three descriptors, short chain,
 * zero-length descriptors, length overflow, the TX size limit, wrong direction, bad offload;
 * packed lies: incomplete chain, id out of range, used-looking head). Seeds are built with
 * the encoders of sim/input/ (dp_format.h, sc_df_format.h), so they follow the input formats as those evolve; a ctest
 * test runs this program and replays every seed through every target. The trace parser's
 * seeds are text: copied from fuzz/seeds/fuzz_trace_parse/ (each checked to parse, or for
 * bad-* to fail) and tests/traces/. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dp_format.h"
#include "sc_df_format.h"
#include "fuzz_vhost_user.h"
#include "trace/trace.h"

/* The source tree (fuzz/corpus.cmake, fuzz/build.sh): where hand-written seeds live. */
#ifndef VL_SOURCE_DIR
#error "build gen_corpus with -DVL_SOURCE_DIR=\"<the source tree>\""
#endif

/* ---- output -------------------------------------------------------------------------- */

static const char *out_root;
static int failures;
static unsigned written;

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	fprintf(stderr, "gen_corpus: mkdir %s: %s\n", path, strerror(errno));
	return -1;
}

static void save(const char *target, const char *name, struct fz_out *o)
{
	char dir[4096];

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", out_root, target) >= sizeof(dir) ||
	    make_dir(dir) != 0 || fz_out_save(o, dir, name) != 0)
		failures++;
	else
		written++;
	fz_out_free(o);
}

/* ---- datapath seeds ------------------------------------------------------------------ */

/* A datapath seed under construction: which target it is for decides the encodings that
 * differ (split or packed descriptors, dequeue or enqueue bursts). */
struct seed {
	struct fz_out o;
	bool packed, rx;
	uint32_t hdr_len;
	uint16_t dir;   /* VL_DESC_F_WRITE on RX */
};

/* The base of the hostile seeds. RX ones negotiate mergeable buffers, so a packet walks on
 * past a chain that is too small for it and reaches the hostile chains behind it (the good-*
 * seeds cover RX without mergeable buffers). */
static struct fz_dp_setup base_setup(bool packed, bool rx)
{
	struct fz_dp_setup s = {
		.features = (uint8_t)(FZ_DPF_VERSION_1 | FZ_DPF_INDIRECT | (rx ? FZ_DPF_MERGEABLE : 0)),
		.qsize = packed ? 15 : 4, /* 16 entries either way */
		.start = packed ? 0x8000 : 0,
		.batch = 3,               /* 256 */
		.pool = 63,               /* 505 buffers of 2048 bytes */
	};

	return s;
}

static void seed_begin(struct seed *sd, bool packed, bool rx, const struct fz_dp_setup *s)
{
	fz_out_init(&sd->o);
	sd->packed = packed;
	sd->rx = rx;
	sd->dir = rx ? VL_DESC_F_WRITE : 0;
	sd->hdr_len = vl_net_hdr_len(fz_dp_features(s->features,
						     packed ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT));
	fz_enc_setup(&sd->o, s);
}

/* Save a datapath seed; a TX one also as two variants whose bursts go through the ceilings
 * (fz_dp_setup.hold bits 6-7): "-touch" (vl_net_discard_touch every burst) and "-rotate"
 * (dequeue, discard and touch in turn, so they meet each other's leftovers: chains zero-copy
 * packets hold, a queue another call broke). */
static void save_dp(const char *target, const char *name, struct seed *sd)
{
	static const struct {
		const char *suffix;
		enum fz_tx_host host;
	} variants[] = {{"-touch", FZ_TX_TOUCH}, {"-rotate", FZ_TX_ROTATE}};

	for (size_t v = 0; !sd->rx && v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct fz_out o;
		char vname[256];

		fz_out_init(&o);
		fz_put_bytes(&o, sd->o.buf, sd->o.len);
		/* The setup's hold byte: the 8th (struct fz_dp_setup, FZ_DP_HDR_LEN). */
		o.buf[7] = (uint8_t)((o.buf[7] & 0x3fu) | variants[v].host << FZ_TX_HOST_SHIFT);
		snprintf(vname, sizeof(vname), "%s%s", name, variants[v].suffix);
		save(target, vname, &o);
	}
	save(target, name, &sd->o);
}

/* One burst of the seed's direction: dequeue up to 32, or enqueue a few packets. */
static void burst(struct seed *sd)
{
	static const uint16_t lens[3] = {64, 1500, 300};
	static const uint8_t mods[3] = {0, 2, 6};

	if (sd->rx)
		fz_enc_enqueue(&sd->o, 3, lens, mods);
	else
		fz_enc_dequeue(&sd->o, 32);
}

/* A raw descriptor at ring index/position idx naming guest RAM at off. */
static void desc_ram(struct seed *sd, uint16_t idx, uint16_t off, uint32_t len, uint16_t flags,
		     uint16_t other)
{
	fz_enc_desc_head(&sd->o, idx);
	fz_enc_addr_ram(&sd->o, off);
	fz_enc_len(&sd->o, len);
	fz_enc_desc_tail(&sd->o, flags, other);
}

/* Split: make head available and publish it. */
static void avail(struct seed *sd, uint16_t head)
{
	fz_enc_avail(&sd->o, head);
	fz_enc_publish(&sd->o);
}

/* Packed: flags of an available descriptor for wrap counter 1 (the seeds' start). */
#define PAV VL_PDESC_F_AVAIL

/* Makes the raw chains just written available. Split: the heads listed go into the avail
 * ring, then its index is published. Packed: their flags (PAV) made them available already;
 * the driver's cursor moves past their descs descriptors (from position 0, wrap counter 1,
 * where every seed starts), so chains posted next follow them. */
static void make_avail(struct seed *sd, uint16_t descs, const uint16_t *heads, size_t n)
{
	if (sd->packed) {
		fz_enc_setpos(&sd->o, (uint16_t)(0x8000u | descs));
		return;
	}
	for (size_t i = 0; i < n; i++)
		fz_enc_avail(&sd->o, heads[i]);
	fz_enc_publish(&sd->o);
}
#define MAKE_AVAIL(sd, descs, ...)                                                           \
	make_avail(sd, descs, (const uint16_t[]){ __VA_ARGS__ },                             \
		   sizeof((const uint16_t[]){ __VA_ARGS__ }) / sizeof(uint16_t))

/* A well-formed chain through the driver cursor, then a burst. */
static void good_post(struct seed *sd, uint8_t shape, uint16_t len, uint16_t off)
{
	fz_enc_post(&sd->o, shape, len, off, NULL);
}

static void good_then_burst(struct seed *sd, uint16_t off)
{
	good_post(sd, 0, 100, off);
	burst(sd);
}

static void gen_datapath(const char *target, bool packed, bool rx)
{
	struct seed sd;
	struct fz_dp_setup s;
	const uint16_t W = rx ? VL_DESC_F_WRITE : 0;

	/* Well-formed traffic in several configurations. */
	static const struct {
		const char *name;
		uint8_t features, qsize_split, qsize_packed, zc, hold, batch;
	} goods[] = {
		{"good-basic", FZ_DPF_VERSION_1 | FZ_DPF_INDIRECT, 4, 15, 0, 0, 3},
		{"good-legacy-10byte-header", 0, 8, 255, 0, 0, 0},
		{"good-mergeable-4k", FZ_DPF_MERGEABLE | FZ_DPF_GRAN_4K | FZ_DPF_INDIRECT, 6, 63, 0, 0,
		 3},
		{"good-in-order-event-idx", FZ_DPF_IN_ORDER | FZ_DPF_EVENT_IDX | FZ_DPF_VERSION_1, 3,
		 6, 0, 0, 5},
		{"good-zero-copy-hold", FZ_DPF_VERSION_1 | FZ_DPF_GRAN_4K, 4, 15, 1 | (3 << 3), 2, 3},
		{"good-zero-copy-in-order", FZ_DPF_VERSION_1 | FZ_DPF_IN_ORDER, 4, 15, 1 | (1 << 3),
		 1, 0},
		{"good-dirty-log-alloc-burst", FZ_DPF_VERSION_1 | FZ_DPF_DIRTY_LOG | FZ_DPF_ALLOC_BURST,
		 5, 30, 0, 0, 1},
		{"good-tiny-queue", FZ_DPF_VERSION_1, 0, 0, 0, 0, 3},
	};

	for (size_t g = 0; g < sizeof(goods) / sizeof(goods[0]); g++) {
		s = base_setup(packed, rx);
		s.features = goods[g].features;
		s.qsize = packed ? goods[g].qsize_packed : goods[g].qsize_split;
		s.zc = goods[g].zc;
		s.hold = goods[g].hold;
		s.batch = goods[g].batch;
		seed_begin(&sd, packed, rx, &s);
		for (int round = 0; round < 3; round++) {
			good_post(&sd, 0, 64, 0x0000);
			good_post(&sd, 0x01 | FZ_POST_HDR_ALONE, 1500, 0x1000);
			good_post(&sd, 0x07 | FZ_POST_INDIRECT | FZ_POST_MISALIGN, 3000, 0x3000);
			good_post(&sd, 0x02 | FZ_POST_ZERO_LEN, 700, 0x8000);
			burst(&sd);
			fz_enc_op1(&sd.o, FZ_OP_FREE, 1);
		}
		fz_enc_op1(&sd.o, FZ_OP_FREE, 0);
		fz_enc_op0(&sd.o, FZ_OP_COMPLETE);
		save_dp(target, goods[g].name, &sd);
	}

	/* Pool faults, allocation policy and zero-copy switched while running. */
	s = base_setup(packed, rx);
	s.pool = 2; /* 17 buffers */
	seed_begin(&sd, packed, rx, &s);
	good_post(&sd, 0, 5000, 0x0000);
	good_post(&sd, 0, 100, 0x4000);
	fz_enc_op1(&sd.o, FZ_OP_POOLFAIL, 0);
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_POOLFAIL, 1);
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_POOLFAIL, 255);
	fz_enc_op1(&sd.o, FZ_OP_ZC, 1);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 1);
	fz_enc_op1(&sd.o, FZ_OP_BATCH, 0);
	fz_enc_op1(&sd.o, FZ_OP_KICKS, 0);
	fz_enc_op0(&sd.o, FZ_OP_SETMEM);
	burst(&sd);
	good_post(&sd, 0, 2000, 0x6000);
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_FREE, 3);
	fz_enc_op0(&sd.o, FZ_OP_COMPLETE);
	fz_enc_op1(&sd.o, FZ_OP_KICKS, 1);
	save_dp(target, "faults-and-switches", &sd);

	/* Evict-after-read on (POLICY bit 1) over batched and direct copies, then off. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 2);
	good_post(&sd, 0, 60, 0x0000);
	good_post(&sd, 0, 3000, 0x2000);
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_BATCH, 0);
	good_post(&sd, 0, 60, 0x4000);
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 0);
	good_post(&sd, 0, 60, 0x6000);
	burst(&sd);
	save_dp(target, "evict-after-read", &sd);

	/* Payload prefetch off (POLICY bit 3) over batched and direct copies, then on again. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 8);
	good_post(&sd, 0, 60, 0x0000);
	good_post(&sd, 0, 3000, 0x2000);
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 0);
	good_post(&sd, 0, 60, 0x4000);
	good_post(&sd, 0, 3000, 0x6000);
	burst(&sd);
	save_dp(target, "prefetch-off", &sd);

	/* Line wait on (POLICY bit 2) over the packed ring's lines of four descriptors, from
	 * position 0: chains at 0, 1, 2, one of two descriptors at 3-4 and one at 5 end the
	 * window two into the second line, so the first burst takes four chains and leaves the
	 * one at 5 (the chain at 3-4 starts before the line), the next burst takes it; four more
	 * (6-9) leave 8 and 9 again; with the allocation policy switched as well, two more end
	 * the window on a line boundary (12): all four go; off, the last two go at once. Split
	 * rings keep it off and enqueue ignores it: the same input on those targets checks so. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 4);
	for (uint16_t i = 0; i < 5; i++)
		good_post(&sd, i == 3 ? 0x01 : 0, 60, (uint16_t)(i * 0x400));
	burst(&sd);
	burst(&sd);
	for (uint16_t i = 5; i < 9; i++)
		good_post(&sd, 0, 60, (uint16_t)(i * 0x400));
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 4 | 1);
	for (uint16_t i = 9; i < 11; i++)
		good_post(&sd, 0, 60, (uint16_t)(i * 0x400));
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_POLICY, 0);
	for (uint16_t i = 11; i < 13; i++)
		good_post(&sd, 0, 60, (uint16_t)(i * 0x400));
	burst(&sd);
	fz_enc_op1(&sd.o, FZ_OP_FREE, 0);
	fz_enc_op0(&sd.o, FZ_OP_COMPLETE);
	save_dp(target, "line-wait", &sd);

	/* Notification wishes of the guest. */
	s = base_setup(packed, rx);
	s.features |= FZ_DPF_EVENT_IDX;
	seed_begin(&sd, packed, rx, &s);
	if (packed)
		fz_enc_event_packed(&sd.o, 0x8002, VL_RING_EVENT_DESC);
	else
		fz_enc_event_split(&sd.o, true, 1);
	good_post(&sd, 0, 100, 0);
	good_post(&sd, 0, 100, 0x400);
	good_post(&sd, 0, 100, 0x800);
	burst(&sd);
	if (packed)
		fz_enc_event_packed(&sd.o, 0x7fff, 3);
	else
		fz_enc_event_split(&sd.o, false, VL_AVAIL_F_NO_INTERRUPT);
	good_then_burst(&sd, 0x1000);
	save_dp(target, "notify-wishes", &sd);

	/* ---- hostile classes -------------------------------------------------------- */

	/* loop: a -> b -> a, and c -> c. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	if (packed) {
		/* A packed chain cannot loop through next fields: the nearest thing is a chain
		 * whose NEXT runs around the whole ring. */
		for (uint16_t i = 0; i < 16; i++)
			desc_ram(&sd, i, (uint16_t)(i * 64), 64, (uint16_t)(W | PAV | VL_DESC_F_NEXT),
				 1);
	} else {
		desc_ram(&sd, 0, 0x000, 16, (uint16_t)(W | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x010, 16, (uint16_t)(W | VL_DESC_F_NEXT), 0);
		desc_ram(&sd, 2, 0x020, 16, (uint16_t)(W | VL_DESC_F_NEXT), 2);
		fz_enc_avail(&sd.o, 0);
		avail(&sd, 2);
	}
	good_then_burst(&sd, 0x1000);
	save_dp(target, "hostile-loop", &sd);

	/* loop inside an indirect table. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	for (uint16_t i = 0; i < 3; i++) {
		fz_enc_table_head(&sd.o, (uint16_t)(0x2000 + 16 * i));
		fz_enc_addr_ram(&sd.o, (uint16_t)(0x100 * i));
		fz_enc_len(&sd.o, 32);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | VL_DESC_F_NEXT), (uint16_t)(i == 2 ? 1 : i + 1));
	}
	fz_enc_desc_head(&sd.o, 0);
	fz_enc_addr_ram(&sd.o, 0x2000);
	fz_enc_len(&sd.o, 48);
	fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-loop-indirect", &sd);

	/* next out of range (split) / a NEXT chain into a descriptor never made available
	 * (packed: incomplete chain). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	if (packed) {
		desc_ram(&sd, 0, 0, 200, (uint16_t)(W | PAV | VL_DESC_F_NEXT), 0);
		burst(&sd);
		save_dp(target, "hostile-packed-incomplete-chain", &sd);
	} else {
		desc_ram(&sd, 0, 0, 200, (uint16_t)(W | VL_DESC_F_NEXT), 200);
		avail(&sd, 0);
		good_then_burst(&sd, 0x1000);
		save_dp(target, "hostile-next-out-of-range", &sd);
	}

	/* head >= queue size (split) / buffer id >= queue size (packed). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	good_post(&sd, 0, 100, 0);
	if (packed) {
		desc_ram(&sd, 1, 0x1000, 200, (uint16_t)(W | PAV), 999);
		burst(&sd);
		burst(&sd);
		save_dp(target, "hostile-packed-id-out-of-range", &sd);
	} else {
		avail(&sd, 999);
		burst(&sd);
		burst(&sd);
		save_dp(target, "hostile-head-out-of-range", &sd);
	}

	/* avail index jump (split) / used-looking head (packed). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	if (packed) {
		good_post(&sd, 0, 100, 0);
		fz_enc_pflags(&sd.o, 0, FZ_PFLAG_USED);
		burst(&sd);
		fz_enc_pflags(&sd.o, 0, FZ_PFLAG_AVAIL);
		burst(&sd);
		fz_enc_pflags(&sd.o, 1, FZ_PFLAG_OTHER);
		fz_enc_pflags(&sd.o, 2, FZ_PFLAG_CLEAR | FZ_PFLAG_NEXT);
		burst(&sd);
		save_dp(target, "hostile-packed-used-looking-head", &sd);
	} else {
		good_post(&sd, 0, 100, 0);
		fz_enc_force(&sd.o, 100);
		burst(&sd);
		save_dp(target, "hostile-avail-jump", &sd);
	}

	/* nested indirect. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	fz_enc_table_head(&sd.o, 0x2000);
	fz_enc_addr_ram(&sd.o, 0x2100);
	fz_enc_len(&sd.o, 16);
	fz_enc_desc_tail(&sd.o, VL_DESC_F_INDIRECT, 0);
	fz_enc_desc_head(&sd.o, 0);
	fz_enc_addr_ram(&sd.o, 0x2000);
	fz_enc_len(&sd.o, 16);
	fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-nested-indirect", &sd);

	/* bad indirect lengths: 0, not a multiple of 16, more entries than the queue; and
	 * INDIRECT together with NEXT; and INDIRECT without the feature. */
	static const uint32_t bad_lens[3] = {0, 15, 16 * 17};

	for (int k = 0; k < 5; k++) {
		static const char *const names[5] = {
			"hostile-indirect-len-zero", "hostile-indirect-len-odd",
			"hostile-indirect-len-too-many", "hostile-indirect-with-next",
			"hostile-indirect-not-negotiated",
		};

		s = base_setup(packed, rx);
		if (k == 4)
			s.features &= (uint8_t)~FZ_DPF_INDIRECT;
		seed_begin(&sd, packed, rx, &s);
		uint16_t fl = (uint16_t)(VL_DESC_F_INDIRECT | (packed ? PAV : 0));

		if (k == 3) {
			desc_ram(&sd, 0, 0x2000, 32, (uint16_t)(fl | VL_DESC_F_NEXT), 1);
			desc_ram(&sd, 1, 0x2100, 100, (uint16_t)(W | (packed ? PAV : 0)), 0);
		} else {
			desc_ram(&sd, 0, 0x2000, k < 3 ? bad_lens[k] : 32, fl, 0);
		}
		MAKE_AVAIL(&sd, k == 3 ? 2 : 1, 0);
		good_then_burst(&sd, 0x3000);
		save_dp(target, names[k], &sd);
	}

	/* unmapped ranges: the hole, far away, the end of RAM, and an indirect table in the
	 * hole. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		uint16_t pf = packed ? PAV : 0;

		fz_enc_desc_head(&sd.o, 0);
		fz_enc_addr_hole(&sd.o, 0x100);
		fz_enc_len(&sd.o, 100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 0);
		fz_enc_desc_head(&sd.o, 1);
		fz_enc_addr_raw(&sd.o, 0xdead00000000ull);
		fz_enc_len(&sd.o, 100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 1);
		fz_enc_desc_head(&sd.o, 2);
		fz_enc_addr_ram_end(&sd.o, 10);
		fz_enc_len(&sd.o, 100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 2);
		fz_enc_desc_head(&sd.o, 3);
		fz_enc_addr_raw(&sd.o, 0xfffffffffffffff0ull);
		fz_enc_len(&sd.o, 0x100);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 3);
		fz_enc_desc_head(&sd.o, 4);
		fz_enc_addr_hole(&sd.o, 0);
		fz_enc_len(&sd.o, 32);
		fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | pf), 4);
		MAKE_AVAIL(&sd, 5, 0, 1, 2, 3, 4);
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-unmapped", &sd);

	/* straddles: a buffer over a region boundary (coarse: 16 KiB, 4 KiB regions: every
	 * page), an indirect table over one, and buffers aliasing the rings. */
	for (int gran = 0; gran < 2; gran++) {
		s = base_setup(packed, rx);
		if (gran)
			s.features |= FZ_DPF_GRAN_4K;
		seed_begin(&sd, packed, rx, &s);
		uint16_t pf = packed ? PAV : 0;

		fz_enc_desc_head(&sd.o, 0);
		fz_enc_addr_boundary(&sd.o, 4, 20);
		fz_enc_len(&sd.o, 3000);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 0);
		/* An indirect table straddling a boundary. */
		for (uint16_t i = 0; i < 2; i++) {
			fz_enc_table_head(&sd.o, (uint16_t)(8 * 4096 - 8 + 16 * i));
			fz_enc_addr_ram(&sd.o, (uint16_t)(0x5000 + 0x100 * i));
			fz_enc_len(&sd.o, 100);
			fz_enc_desc_tail(&sd.o, (uint16_t)(W | (packed ? 0 : (i ? 0 : VL_DESC_F_NEXT))),
					 1);
		}
		fz_enc_desc_head(&sd.o, 1);
		fz_enc_addr_boundary(&sd.o, 8, 8);
		fz_enc_len(&sd.o, 32);
		fz_enc_desc_tail(&sd.o, (uint16_t)(VL_DESC_F_INDIRECT | pf), 1);
		/* A buffer over the used ring / the descriptors themselves. */
		fz_enc_desc_head(&sd.o, 2);
		fz_enc_addr_ring(&sd.o, packed ? 0x0 : 0x2000);
		fz_enc_len(&sd.o, 200);
		fz_enc_desc_tail(&sd.o, (uint16_t)(W | pf), 2);
		MAKE_AVAIL(&sd, 3, 0, 1, 2);
		good_then_burst(&sd, 0x3000);
		save_dp(target, gran ? "hostile-straddle-4k" : "hostile-straddle-coarse", &sd);
	}

	/* header over three descriptors (4 + 4 + rest), valid. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		uint16_t pf = packed ? PAV : 0;

		desc_ram(&sd, 0, 0x100, 4, (uint16_t)(W | pf | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x104, 4, (uint16_t)(W | pf | VL_DESC_F_NEXT), 2);
		desc_ram(&sd, 2, 0x108, 4 + 200, (uint16_t)(W | pf), 2);
		MAKE_AVAIL(&sd, 3, 0);
	}
	burst(&sd);
	save_dp(target, "hostile-header-over-3-descs", &sd);

	/* short chain: exactly the header, and less. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, sd.hdr_len, (uint16_t)(W | (packed ? PAV : 0)), 0);
	desc_ram(&sd, 1, 0x200, 3, (uint16_t)(W | (packed ? PAV : 0)), 1);
	MAKE_AVAIL(&sd, 2, 0, 1);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-short-chain", &sd);

	/* zero-length descriptors around data. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		uint16_t pf = packed ? PAV : 0;

		desc_ram(&sd, 0, 0x100, 0, (uint16_t)(W | pf | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x100, 300, (uint16_t)(W | pf | VL_DESC_F_NEXT), 2);
		desc_ram(&sd, 2, 0x000, 0, (uint16_t)(W | pf), 2);
		desc_ram(&sd, 3, 0x400, 0, (uint16_t)(W | pf), 3);
		MAKE_AVAIL(&sd, 4, 0, 3);
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-zero-length", &sd);

	/* lengths summing past 2^32. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, 100, (uint16_t)(W | (packed ? PAV : 0) | VL_DESC_F_NEXT), 1);
	desc_ram(&sd, 1, 0x200, 0xffffffc0u, (uint16_t)(W | (packed ? PAV : 0)), 1);
	MAKE_AVAIL(&sd, 2, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-len-overflow", &sd);

	/* TX packets at the size limit: two descriptors over the same RAM make header + 65536
	 * bytes (too big) and header + 65535 (the largest packet). */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		const uint16_t pf = (uint16_t)(W | (packed ? PAV : 0));

		desc_ram(&sd, 0, 0x000, 0xc000, (uint16_t)(pf | VL_DESC_F_NEXT), 1);
		desc_ram(&sd, 1, 0x000, 0x4000 + sd.hdr_len, pf, 1);
		desc_ram(&sd, 2, 0x000, 0xc000, (uint16_t)(pf | VL_DESC_F_NEXT), 3);
		desc_ram(&sd, 3, 0x000, 0x3fff + sd.hdr_len, pf, 3);
		MAKE_AVAIL(&sd, 4, 0, 2);
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-tx-size-limit", &sd);

	/* wrong direction: a device-writable TX buffer / a read-only RX buffer. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, 200, (uint16_t)((rx ? 0 : VL_DESC_F_WRITE) | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-wrong-direction", &sd);

	/* bogus offload headers (TX): checksum past the end, unknown GSO, ECN alone, GSO
	 * with size 0 or headers past the end. RX gets them as host offloads instead. */
	s = base_setup(packed, rx);
	seed_begin(&sd, packed, rx, &s);
	{
		static const uint8_t hdrs[5][10] = {
			{VL_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 0, 0, 0xf0, 0xff, 0x10, 0},
			{0, 7, 0, 0, 1, 0, 0, 0, 0, 0},
			{0, VL_NET_HDR_GSO_ECN, 0, 0, 0, 0, 0, 0, 0, 0},
			{0, VL_NET_HDR_GSO_TCPV4, 10, 0, 0, 0, 0, 0, 0, 0},
			{0, VL_NET_HDR_GSO_UDP, 0xff, 0xff, 0x40, 0, 0, 0, 0, 0},
		};

		for (int k = 0; k < 5; k++)
			fz_enc_post(&sd.o, 0, 100, (uint16_t)(0x400 * k), hdrs[k]);
		if (rx) {
			static const uint16_t lens[4] = {100, 100, 100, 100};
			static const uint8_t mods[4] = {2, 8, 10, 14};

			fz_enc_enqueue(&sd.o, 4, lens, mods);
		} else {
			burst(&sd);
		}
	}
	good_then_burst(&sd, 0x3000);
	save_dp(target, "hostile-bad-offload", &sd);

	/* RX specifics (run on TX too, harmlessly): buffers smaller than the header, packets
	 * over 64 KiB, a packet no buffer can hold. */
	s = base_setup(packed, rx);
	s.features |= FZ_DPF_MERGEABLE;
	seed_begin(&sd, packed, rx, &s);
	desc_ram(&sd, 0, 0x100, 4, (uint16_t)(W | (packed ? PAV : 0)), 0);
	MAKE_AVAIL(&sd, 1, 0);
	for (int k = 0; k < 6; k++)
		good_post(&sd, 0, 200, (uint16_t)(0x1000 + 0x400 * k));
	if (rx) {
		static const uint16_t lens[4] = {60000, 536, 1000, 2000};
		static const uint8_t mods[4] = {1, 0, 0, 0};

		fz_enc_enqueue(&sd.o, 4, lens, mods);
	} else {
		burst(&sd);
	}
	save_dp(target, "hostile-rx-small-buffers-big-packets", &sd);

	/* Zero-copy with a guest that re-posts what the device holds: split re-publishes the
	 * heads of held chains, packed laps the ring over positions the device still holds. */
	for (int in_order = 0; in_order < 2; in_order++) {
		s = base_setup(packed, rx);
		s.zc = 1 | (15 << 3); /* min_len 0, up to 16 chains held */
		s.hold = 1;
		if (in_order)
			s.features |= FZ_DPF_IN_ORDER;
		seed_begin(&sd, packed, rx, &s);
		for (int k = 0; k < 3; k++) {
			for (int c = 0; c < 4; c++)
				good_post(&sd, FZ_POST_HDR_ALONE, 1000, (uint16_t)(0x2000 * c));
			burst(&sd);
			if (!packed) {
				fz_enc_avail(&sd.o, 8);
				avail(&sd, 10);
				burst(&sd);
			}
		}
		fz_enc_op1(&sd.o, FZ_OP_FREE, 2);
		burst(&sd);
		fz_enc_op1(&sd.o, FZ_OP_FREE, 0);
		fz_enc_op0(&sd.o, FZ_OP_COMPLETE);
		save_dp(target,
			in_order ? "hostile-zero-copy-repost-in-order" : "hostile-zero-copy-repost",
			&sd);
	}

	/* Garbage everywhere: guest memory filled with 0xff, then a burst. */
	s = base_setup(packed, rx);
	s.fill = 0xff;
	seed_begin(&sd, packed, rx, &s);
	burst(&sd);
	fz_enc_fill(&sd.o, false, 0, 0x4000, 0x81);
	burst(&sd);
	save_dp(target, "hostile-garbage-fill", &sd);
}

/* ---- scenario seeds ------------------------------------------------------------------ */

static void gen_scenario(void)
{
	static const struct {
		const char *name;
		uint8_t flags, mode, qsize;
	} cfgs[] = {
		{"split-default", FZ_SC_F_MERGEABLE | FZ_SC_F_INDIRECT | FZ_SC_F_MODERN, 3 << 4, 3},
		{"packed-default", FZ_SC_F_PACKED | FZ_SC_F_MERGEABLE | FZ_SC_F_INDIRECT, 3 << 4, 30},
		{"split-legacy-coarse", 0, 0, 4},
		{"split-in-order-event-idx-4k", FZ_SC_F_IN_ORDER | FZ_SC_F_EVENT_IDX, 1 << 2, 2},
		{"packed-odd-size-event-idx", FZ_SC_F_PACKED | FZ_SC_F_EVENT_IDX | FZ_SC_F_IN_ORDER,
		 1 << 2 | 3 << 4, 5},
		{"split-zero-copy-dirty-log", FZ_SC_F_ZERO_COPY | FZ_SC_F_DIRTY_LOG | FZ_SC_F_MERGEABLE,
		 3 << 4, 4},
		{"packed-zero-copy-in-order", FZ_SC_F_PACKED | FZ_SC_F_ZERO_COPY | FZ_SC_F_IN_ORDER,
		 1 << 2, 14},
		{"split-faults-nth", FZ_SC_F_INDIRECT | FZ_SC_F_MODERN, 1 | 5 << 4, 3},
		{"packed-faults-prob", FZ_SC_F_PACKED | FZ_SC_F_MERGEABLE, 2 | 2 << 2, 62},
		{"split-faults-scarce-zc", FZ_SC_F_ZERO_COPY | FZ_SC_F_MERGEABLE, 3 | 1 << 2, 2},
		{"packed-tiny-queue", FZ_SC_F_PACKED | FZ_SC_F_MERGEABLE | FZ_SC_F_EVENT_IDX, 1 << 2,
		 0},
		{"split-tiny-queue", FZ_SC_F_MERGEABLE | FZ_SC_F_EVENT_IDX, 1 << 2, 0},
		{"split-64k-regions-batch-max", FZ_SC_F_INDIRECT | FZ_SC_F_DIRTY_LOG, 3 << 2 | 6 << 4,
		 5},
		{"packed-everything", 0xff, 3 | 1 << 2 | 3 << 4, 17},
	};
	static const uint16_t sizes[][4] = {
		{64, 1500, 9000, 257}, {1, 255, 256, 4096}, {60000, 64, 0, 0}, {128, 129, 2048, 2049},
	};

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct fz_out o;
		struct fz_sc_input s = {
			.flags = cfgs[i].flags,
			.mode = cfgs[i].mode,
			.qsize = cfgs[i].qsize,
			.burst = (uint8_t)(i % 3 == 0 ? 31 : i % 3 == 1 ? 7 : 0),
			.packets = (uint8_t)(i * 11),
			.containment = (uint8_t)(i % 4),
			.seed = 1000 + i,
			.nsizes = (uint8_t)(i % 4 == 2 ? 1 : 3),
		};

		memcpy(s.sizes, sizes[i % 4], sizeof(sizes[0]));
		fz_out_init(&o);
		fz_enc_scenario(&o, &s);
		save("fuzz_scenario", cfgs[i].name, &o);
	}
}

/* ---- differential seeds -------------------------------------------------------------- */

static void df_round_mix(struct fz_df_round *r, unsigned k)
{
	memset(r, 0, sizeof(*r));
	r->ntx = (uint8_t)(3 + k % 5);
	r->notify = (uint8_t)(k * 37);
	for (uint8_t i = 0; i < r->ntx; i++) {
		r->tx[i].len = (uint16_t)(i % 3 == 0 ? 60u : i % 3 == 1 ? 1500u + k : 4000u + 7u * i);
		r->tx[i].shape = (uint8_t)((i * 0x35 + k) & 0xff);
		r->tx[i].place = (uint8_t)(i * 13);
		r->tx[i].ol = (uint8_t)(i + k);
	}
	r->count = (uint8_t)(k % 4 == 3 ? 2 : 64);
	r->nrx = (uint8_t)(4 + k % 6);
	for (uint8_t i = 0; i < r->nrx; i++) {
		r->rx[i].cap = (uint16_t)(i % 2 ? 1500 : 2000 + 333 * i);
		r->rx[i].shape = (uint8_t)((i * 0x0b + k) & 0x3f);
		r->rx[i].place = (uint8_t)(i * 5);
	}
	r->npkts = (uint8_t)(2 + k % 4);
	for (uint8_t i = 0; i < r->npkts; i++) {
		r->pk[i].len = (uint16_t)(i % 2 ? 64 : 1400 + 1000 * (k % 3));
		r->pk[i].ol = (uint8_t)(i * 29 + k);
	}
}

/* RX policy edges where the core and the reference model must agree exactly (each caught a
 * deliberately broken core that the mixed seeds let through):
 *  - non-mergeable buffers that hold a packet exactly, and one byte too few (delivered vs
 *    dropped too big, the buffer staying for the next packet);
 *  - mergeable buffers of four descriptors on a small ring, for a packet no full ring of
 *    them can hold: dropped as too big, never a stalled queue. */
static void gen_differential_rx_edges(void)
{
	static const struct {
		const char *name;
		uint8_t flags, qsize;
	} cfgs[] = {
		{"split-rx-exact-fit", FZ_DF_F_VERSION_1, 3},
		{"packed-rx-exact-fit", FZ_DF_F_PACKED, 6},
		{"split-rx-full-ring-multidesc", FZ_DF_F_MERGEABLE, 1},
		{"packed-rx-full-ring-multidesc", FZ_DF_F_PACKED | FZ_DF_F_MERGEABLE, 6},
	};

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		bool fit = i < 2;
		struct fz_out o;
		struct fz_df_header h = {cfgs[i].flags, cfgs[i].qsize, 0, 0};
		struct fz_df_round r;

		fz_out_init(&o);
		fz_enc_df_header(&o, &h);
		for (unsigned k = 0; k < 3; k++) {
			memset(&r, 0, sizeof(r));
			r.count = 16;
			r.nrx = fit ? 4 : FZ_DF_MAX_RX;
			for (uint8_t b = 0; b < r.nrx; b++) {
				/* Room for header + 1 + cap bytes; a packet of 1 + len bytes fits
				 * exactly when len == cap (sc_df_format.h). */
				r.rx[b].cap = (uint16_t)(fit ? 700 + 100 * k + 50 * b : 20);
				r.rx[b].shape = (uint8_t)(fit ? 0 : 3);   /* 1 or 4 data descriptors */
				r.rx[b].place = (uint8_t)(b * 7);
			}
			r.npkts = fit ? 4 : 2;
			for (uint8_t p = 0; p < r.npkts; p++) {
				/* Odd packets are one byte too big for the buffer they meet (dropped,
				 * the buffer stays); the next, even one fits that buffer exactly. */
				r.pk[p].len = (uint16_t)(fit ? 700 + 100 * k + 50 * ((p + 1) / 2) + (p & 1)
							     : 11000);
				r.pk[p].ol = (uint8_t)(p * 3 + k);
			}
			fz_enc_df_round(&o, &r);
		}
		save("fuzz_differential", cfgs[i].name, &o);
	}
}

static void gen_differential(void)
{
	static const struct {
		const char *name;
		uint8_t flags, qsize, zc;
		uint16_t start;
	} cfgs[] = {
		{"split-basic", FZ_DF_F_VERSION_1 | FZ_DF_F_INDIRECT, 4, 0, 0},
		{"split-mergeable-4k-wrap", FZ_DF_F_MERGEABLE | FZ_DF_F_INDIRECT | FZ_DF_F_GRAN_4K, 5,
		 3, 0xffe0},
		{"split-in-order-event-idx-log", FZ_DF_F_IN_ORDER | FZ_DF_F_EVENT_IDX |
		 FZ_DF_F_DIRTY_LOG | FZ_DF_F_VERSION_1, 3, 1, 0xfff0},
		{"split-legacy", 0, 6, 2, 7},
		{"packed-basic", FZ_DF_F_PACKED | FZ_DF_F_INDIRECT, 30, 0, 0},
		{"packed-in-order-mergeable-4k", FZ_DF_F_PACKED | FZ_DF_F_IN_ORDER | FZ_DF_F_MERGEABLE |
		 FZ_DF_F_GRAN_4K, 14, 3, 10},
		{"packed-odd-event-idx-log", FZ_DF_F_PACKED | FZ_DF_F_EVENT_IDX | FZ_DF_F_DIRTY_LOG |
		 FZ_DF_F_INDIRECT, 21, 1, 20},
		{"packed-tiny", FZ_DF_F_PACKED | FZ_DF_F_MERGEABLE, 1, 2, 1},
	};

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct fz_out o;
		struct fz_df_header h = {cfgs[i].flags, cfgs[i].qsize, cfgs[i].start, cfgs[i].zc};
		struct fz_df_round r;

		fz_out_init(&o);
		fz_enc_df_header(&o, &h);
		for (unsigned k = 0; k < 4; k++) {
			df_round_mix(&r, (unsigned)(k + 3 * i));
			fz_enc_df_round(&o, &r);
		}
		save("fuzz_differential", cfgs[i].name, &o);
	}
	gen_differential_rx_edges();
}

/* ---- trace parser seeds --------------------------------------------------------------- */

/* Copy every regular file of dir (not hidden; with `suffix` when given) into the target's
 * corpus as prefix-NAME. With `check`, a seed must parse as a trace -- or, named bad-*,
 * must not -- so a seed that rots with the format fails the corpus test instead of
 * quietly seeding nothing. */
static void copy_seeds(const char *target, const char *dir, const char *prefix,
		       const char *suffix, bool check)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	if (n < 0) {
		if (check) {
			fprintf(stderr, "gen_corpus: cannot list %s\n", dir);
			failures++;
		}
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		size_t len = strlen(name), slen = suffix ? strlen(suffix) : 0;
		char path[4096], out[512], err[512];
		struct lab_trace t;
		struct stat st;
		struct fz_out o;
		FILE *f;

		if (name[0] == '.' || len < slen || (suffix && strcmp(name + len - slen, suffix)) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
		    stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
		    (size_t)snprintf(out, sizeof(out), "%s-%s", prefix, name) >= sizeof(out)) {
			free(names[i]);
			continue;
		}
		if (check) {
			bool bad = strncmp(name, "bad-", 4) == 0;

			if (lab_trace_load(&t, path, err, sizeof(err)) == bad) {
				fprintf(stderr, "gen_corpus: %s\n", bad ? "a bad-* seed parses" : err);
				failures++;
			}
			lab_trace_free(&t);
		}
		fz_out_init(&o);
		f = fopen(path, "rb");
		if (f) {
			uint8_t buf[4096];
			size_t k;

			while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
				fz_put_bytes(&o, buf, k);
			fclose(f);
			save(target, out, &o);
		} else {
			fprintf(stderr, "gen_corpus: cannot read %s\n", path);
			fz_out_free(&o);
			failures++;
		}
		free(names[i]);
	}
	free(names);
}

/* fuzz_trace_parse: hand-written traces (fuzz/seeds/fuzz_trace_parse/) and the lab's trace
 * tests (the .trace files of tests/traces/), from the source tree it was built from. */
static void gen_trace_parse(void)
{
	copy_seeds("fuzz_trace_parse", VL_SOURCE_DIR "/fuzz/seeds/fuzz_trace_parse", "seed", NULL,
		   true);
	copy_seeds("fuzz_trace_parse", VL_SOURCE_DIR "/tests/traces", "traces", ".trace", false);
}

/* ---- fuzz_vhost_user seeds ------------------------------------------------------------- */

#define VU_F(bit) VL_FEATURE(bit)
#define VU_NET_FEATURES                                                                      \
	(VU_F(VL_F_VERSION_1) | VU_F(VL_F_NET_MRG_RXBUF) | VU_F(VL_F_IN_ORDER) |               \
	 VU_F(VL_F_RING_EVENT_IDX) | VU_F(VL_F_RING_INDIRECT_DESC) |                           \
	 VU_F(VL_VU_F_PROTOCOL_FEATURES))

/* DPDK virtio-user's start-up sequence (real-front-ends.md) for `nrings` rings of `qsize`. */
static void vu_dpdk(struct fz_out *o, bool packed, uint64_t features, uint32_t nrings,
		    uint32_t qsize)
{
	const uint64_t proto = VL_FEATURE(VL_VU_PROTOCOL_F_MQ) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_STATUS) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_MTU) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS);
	uint64_t st = 0xb;

	if (packed)
		features |= VU_F(VL_F_RING_PACKED);
	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_none(o, FZ_VU_GET_PROTOCOL_FEATURES);
	fzvu_u64(o, FZ_VU_SET_PROTOCOL_FEATURES, proto);
	for (uint32_t q = 0; q < nrings; q++)
		fzvu_ring_fd(o, FZ_VU_SET_VRING_CALL, q, 1);
	fzvu_u64(o, FZ_VU_SET_FEATURES, features);
	fzvu_msg(o, FZ_VU_SET_STATUS, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, &st, 8);
	fzvu_none(o, FZ_VU_GET_STATUS);
	fzvu_none(o, FZ_VU_GET_STATUS);
	fzvu_mem_table(o, 1);
	for (uint32_t q = 0; q < nrings; q++)
		fzvu_ring(o, q, qsize, packed, packed ? 0x8000u : 0u);
	for (uint32_t q = 0; q < nrings; q++)
		fzvu_state(o, FZ_VU_SET_VRING_ENABLE, q, 1);
	st = 0xf;
	fzvu_msg(o, FZ_VU_SET_STATUS, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, &st, 8);
}

/* Guest buffers both ways, then bursts. */
static void vu_traffic(struct fz_out *o, uint32_t nrings)
{
	for (int round = 0; round < 3; round++) {
		for (uint8_t q = 0; q < nrings; q++)
			fzvu_post(o, q, 8, q % 2 ? (uint16_t)(60 + 200 * round) : 1024);
		fzvu_burst(o, 4, (uint16_t)(64 + 300 * round));
	}
}

static void vu_seed(const char *name, bool packed, void (*body)(struct fz_out *o, bool packed))
{
	struct fz_out o;
	char full[64];

	fz_out_init(&o);
	body(&o, packed);
	snprintf(full, sizeof(full), "%s-%s", name, packed ? "packed" : "split");
	save("fuzz_vhost_user", full, &o);
}

static void vu_body_dpdk(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	vu_traffic(o, 2);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0, 0);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 1, 0);
}

static void vu_body_mq(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES | VU_F(VL_F_NET_MQ) | VU_F(VL_F_NET_CTRL_VQ), 4, 32);
	fzvu_none(o, FZ_VU_GET_QUEUE_NUM);
	vu_traffic(o, 4);
}

/* The memory table re-sent while buffers are posted, bracketed by ENABLE 0/1 (DPDK) or not
 * (QEMU), as the guest's memory is announced in more regions. */
static void vu_body_mem_swap(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_post(o, 1, 8, 300);
	fzvu_post(o, 0, 8, 1024);
	fzvu_mem_table(o, 2);
	fzvu_burst(o, 4, 500);
	fzvu_post(o, 1, 8, 400);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 0, 0);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 1, 0);
	fzvu_mem_table(o, 4);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 0, 1);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 1, 1);
	fzvu_burst(o, 4, 700);
}

/* QEMU with CONFIGURE_MEM_SLOTS: memory added and removed region by region; packed base with
 * the used half. */
static void vu_body_mem_slots(struct fz_out *o, bool packed)
{
	const uint64_t proto = VL_FEATURE(VL_VU_PROTOCOL_F_MQ) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS);

	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_none(o, FZ_VU_GET_PROTOCOL_FEATURES);
	fzvu_u64(o, FZ_VU_SET_PROTOCOL_FEATURES, proto);
	fzvu_none(o, FZ_VU_GET_QUEUE_NUM);
	fzvu_none(o, FZ_VU_GET_MAX_MEM_SLOTS);
	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_u64(o, FZ_VU_SET_FEATURES, VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0));
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0, 0x20000);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0x20000, FZ_VU_MEM_SIZE - 0x20000);
	for (uint32_t q = 0; q < 2; q++) {
		fzvu_ring(o, q, 128, packed, packed ? 0x80008000u : 0u);
		fzvu_ring_fd(o, FZ_VU_SET_VRING_CALL, q, 1);
		fzvu_state(o, FZ_VU_SET_VRING_ENABLE, q, 1);
	}
	vu_traffic(o, 2);
	fzvu_mem_reg(o, FZ_VU_REM_MEM_REG, 0x20000, FZ_VU_MEM_SIZE - 0x20000);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0x20000, 0x40000);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0x60000, FZ_VU_MEM_SIZE - 0x60000);
	vu_traffic(o, 2);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 0, 0);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0, 0);
}

/* Migration: a log base, LOG_ALL on mid-traffic (ring addresses re-sent with the LOG flag),
 * then off. */
static void vu_body_log(struct fz_out *o, bool packed)
{
	uint64_t log[2] = {4096, 0};
	uint8_t kind = FZ_VU_FD_LOG;
	uint64_t f = VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0);

	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION, &kind, 1, log, 16);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f | VU_F(VL_VU_F_LOG_ALL));
	vu_traffic(o, 2);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f);
	vu_traffic(o, 2);
}

/* A front end without protocol features: rings enabled at their kick. */
static void vu_body_legacy(struct fz_out *o, bool packed)
{
	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_u64(o, FZ_VU_SET_FEATURES, (VU_NET_FEATURES & ~VU_F(VL_VU_F_PROTOCOL_FEATURES)) |
						(packed ? VU_F(VL_F_RING_PACKED) : 0));
	fzvu_mem_table(o, 1);
	for (uint32_t q = 0; q < 2; q++)
		fzvu_ring(o, q, 256, packed, packed ? 0x8000u : 0u);
	vu_traffic(o, 2);
	fzvu_none(o, FZ_VU_RESET_OWNER);
}

/* One seed per control-path class of hostile-inputs.md, after a working start. */
static void vu_body_hostile(struct fz_out *o, bool packed)
{
	uint8_t kinds[10] = {FZ_VU_FD_EVENT, FZ_VU_FD_EVENT, FZ_VU_FD_GUEST, FZ_VU_FD_SMALL,
			     FZ_VU_FD_LOG, FZ_VU_FD_EVENT, FZ_VU_FD_EVENT, FZ_VU_FD_EVENT,
			     FZ_VU_FD_EVENT, FZ_VU_FD_EVENT};
	uint8_t p[8 + 2 * 32] = {0};
	uint32_t two = 2;
	uint64_t r[8], log[2] = {UINT64_MAX - 10, 4096};

	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_post(o, 1, 4, 100);
	/* ring index beyond the rings, in several messages */
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 9, 64);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0x80000000u, 0);
	fzvu_ring_fd(o, FZ_VU_SET_VRING_KICK, 200, 1);
	fzvu_u64(o, FZ_VU_SET_VRING_CALL, 0x100000001ull);
	/* ring size: 0, not a power of two, too big, changed while running */
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 0);
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 48);
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 40000);
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 128);
	/* ring base beyond the ring / inconsistent wrap; on a stopped ring */
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 1, 0);
	fzvu_state(o, FZ_VU_SET_VRING_BASE, 1, 0x8000u | 500u);
	fzvu_state(o, FZ_VU_SET_VRING_BASE, 1, 0x8005u | 0x8006u << 16);
	/* ring addresses unmapped, misaligned */
	{
		uint64_t base = FZ_VU_UADDR + FZ_VU_RING(1);
		struct {
			uint32_t index, flags;
			uint64_t desc, used, avail, log;
		} a = {1, 0, base + 8, base + FZ_VU_USED_OFF, base + FZ_VU_AVAIL_OFF, 0};

		fzvu_msg(o, FZ_VU_SET_VRING_ADDR, FZ_VU_VERSION, NULL, 0, &a, sizeof(a));
		a.desc = FZ_VU_UADDR + FZ_VU_MEM_SIZE - 64;
		fzvu_msg(o, FZ_VU_SET_VRING_ADDR, FZ_VU_VERSION, NULL, 0, &a, sizeof(a));
	}
	fzvu_ring_fd(o, FZ_VU_SET_VRING_KICK, 1, 1);
	/* fds on messages that take none; too many; unsupported requests carrying fds */
	fzvu_msg(o, FZ_VU_SET_OWNER, FZ_VU_VERSION, kinds, 3, NULL, 0);
	fzvu_msg(o, FZ_VU_SET_OWNER, FZ_VU_VERSION, kinds, 10, NULL, 0);
	fzvu_msg(o, FZ_VU_SET_INFLIGHT_FD, FZ_VU_VERSION, kinds, 1, p, 24);
	/* payload sizes */
	fzvu_msg(o, FZ_VU_SET_FEATURES, FZ_VU_VERSION, NULL, 0, p, 4);
	fzvu_msg(o, FZ_VU_SET_VRING_ADDR, FZ_VU_VERSION, NULL, 0, p, 48);
	/* memory tables: too many regions, fds != regions, overflow, overlap, zero size, a file
	 * too small */
	memcpy(p, &two, 4);
	r[0] = FZ_VU_GPA, r[1] = 0x80000, r[2] = FZ_VU_UADDR, r[3] = 0;
	r[4] = FZ_VU_GPA + 0x40000, r[5] = 0x80000, r[6] = FZ_VU_UADDR + 0x80000, r[7] = 0x80000;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 2, p, sizeof(p)); /* overlap */
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 1, p, sizeof(p)); /* 1 fd */
	r[4] = FZ_VU_GPA + 0x80000, r[7] = UINT64_MAX - 0x1000;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 2, p, sizeof(p)); /* overflow */
	r[7] = 0x80000, r[5] = 0;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 2, p, sizeof(p)); /* zero */
	r[5] = 0x80000;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 3, 2, p, sizeof(p)); /* small */
	two = 9;
	memcpy(p, &two, 4);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds, 9, p, sizeof(p));
	/* the log: overflow, no fd */
	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION, kinds + 4, 1, log, 16);
	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION, NULL, 0, log, 16);
	/* unknown requests, big and small */
	fzvu_none(o, 0);
	fzvu_none(o, 0xdeadbeef);
	fzvu_burst(o, 2, 100);
	/* a payload larger than any request: the connection ends */
	fzvu_msg(o, FZ_VU_SET_OWNER, FZ_VU_VERSION, NULL, 0, NULL, 5000);
}

/* Messages cut short: the front end leaves in the header, in the payload, with fds. */
static void vu_body_cut(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_post(o, 1, 4, 100);
	fzvu_cut(o, 5, 1, FZ_VU_SET_FEATURES, 8);
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_cut(o, 15, 2, FZ_VU_SET_VRING_ADDR, 40);
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	vu_traffic(o, 2);
}

static void gen_vhost_user(void)
{
	for (int packed = 0; packed < 2; packed++) {
		vu_seed("dpdk", packed, vu_body_dpdk);
		vu_seed("multi-queue", packed, vu_body_mq);
		vu_seed("mem-swap", packed, vu_body_mem_swap);
		vu_seed("mem-slots", packed, vu_body_mem_slots);
		vu_seed("log", packed, vu_body_log);
		vu_seed("legacy", packed, vu_body_legacy);
		vu_seed("hostile", packed, vu_body_hostile);
		vu_seed("cut", packed, vu_body_cut);
	}
}

/* ---- main ---------------------------------------------------------------------------- */

static const char *const targets[] = {
	"fuzz_split_dequeue", "fuzz_split_enqueue", "fuzz_packed_dequeue", "fuzz_packed_enqueue",
	"fuzz_scenario", "fuzz_differential", "fuzz_trace_parse", "fuzz_vhost_user",
};

static void gen_target(const char *t)
{
	if (!strcmp(t, "fuzz_split_dequeue"))
		gen_datapath(t, false, false);
	else if (!strcmp(t, "fuzz_split_enqueue"))
		gen_datapath(t, false, true);
	else if (!strcmp(t, "fuzz_packed_dequeue"))
		gen_datapath(t, true, false);
	else if (!strcmp(t, "fuzz_packed_enqueue"))
		gen_datapath(t, true, true);
	else if (!strcmp(t, "fuzz_scenario"))
		gen_scenario();
	else if (!strcmp(t, "fuzz_differential"))
		gen_differential();
	else if (!strcmp(t, "fuzz_trace_parse"))
		gen_trace_parse();
	else if (!strcmp(t, "fuzz_vhost_user"))
		gen_vhost_user();
	else {
		fprintf(stderr, "gen_corpus: unknown target %s\n", t);
		failures++;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: gen_corpus OUTDIR [TARGET...]\n"
				"writes a seed corpus per fuzz target into OUTDIR/<target>/\n"
				"targets:");
		for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
			fprintf(stderr, " %s", targets[i]);
		fprintf(stderr, "\n");
		return argc < 2 ? 2 : 0;
	}
	out_root = argv[1];
	if (make_dir(out_root) != 0)
		return 1;
	if (argc == 2)
		for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
			gen_target(targets[i]);
	for (int i = 2; i < argc; i++)
		gen_target(argv[i]);
	printf("gen_corpus: %u seeds written to %s\n", written, out_root);
	return failures ? 1 : 0;
}

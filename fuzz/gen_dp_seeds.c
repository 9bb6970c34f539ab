/* SPDX-License-Identifier: MIT */
/* Datapath seeds: the seed builder (encodings that differ by layout and direction) and the
 * well-formed seeds; the hostile classes follow in gen_dp_hostile.c. */
#include <stdio.h>
#include <string.h>

#include "gen_corpus.h"

struct fz_dp_setup base_setup(bool packed, bool rx)
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

void seed_begin(struct seed *sd, bool packed, bool rx, const struct fz_dp_setup *s)
{
	fz_out_init(&sd->o);
	sd->packed = packed;
	sd->rx = rx;
	sd->dir = rx ? VL_DESC_F_WRITE : 0;
	sd->hdr_len = vl_net_hdr_len(fz_dp_features(s->features, s->hold,
						     packed ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT));
	fz_enc_setup(&sd->o, s);
}

/* Save a datapath seed; a TX one also as two variants whose bursts go through the ceilings
 * (fz_dp_setup.hold bits 6-7): "-touch" (vl_net_discard_touch every burst) and "-rotate"
 * (dequeue, discard and touch in turn, so they meet each other's leftovers: chains zero-copy
 * packets hold, a queue another call broke). */
void save_dp(const char *target, const char *name, struct seed *sd)
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
void burst(struct seed *sd)
{
	static const uint16_t lens[3] = {64, 1500, 300};
	static const uint8_t mods[3] = {0, 2, 6};

	if (sd->rx)
		fz_enc_enqueue(&sd->o, 3, lens, mods);
	else
		fz_enc_dequeue(&sd->o, 32);
}

/* A raw descriptor at ring index/position idx naming guest RAM at off. */
void desc_ram(struct seed *sd, uint16_t idx, uint16_t off, uint32_t len, uint16_t flags,
		     uint16_t other)
{
	fz_enc_desc_head(&sd->o, idx);
	fz_enc_addr_ram(&sd->o, off);
	fz_enc_len(&sd->o, len);
	fz_enc_desc_tail(&sd->o, flags, other);
}

/* Split: make head available and publish it. */
void avail(struct seed *sd, uint16_t head)
{
	fz_enc_avail(&sd->o, head);
	fz_enc_publish(&sd->o);
}


/* Makes the raw chains just written available. Split: the heads listed go into the avail
 * ring, then its index is published. Packed: their flags (PAV) made them available already;
 * the driver's cursor moves past their descs descriptors (from position 0, wrap counter 1,
 * where every seed starts), so chains posted next follow them. */
void make_avail(struct seed *sd, uint16_t descs, const uint16_t *heads, size_t n)
{
	if (sd->packed) {
		fz_enc_setpos(&sd->o, (uint16_t)(0x8000u | descs));
		return;
	}
	for (size_t i = 0; i < n; i++)
		fz_enc_avail(&sd->o, heads[i]);
	fz_enc_publish(&sd->o);
}

/* A well-formed chain through the driver cursor, then a burst. */
void good_post(struct seed *sd, uint8_t shape, uint16_t len, uint16_t off)
{
	fz_enc_post(&sd->o, shape, len, off, NULL);
}

void good_then_burst(struct seed *sd, uint16_t off)
{
	good_post(sd, 0, 100, off);
	burst(sd);
}


void gen_datapath(const char *target, bool packed, bool rx)
{
	struct seed sd;
	struct fz_dp_setup s;

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
	gen_dp_hostile(target, packed, rx);
}

/* SPDX-License-Identifier: MIT */
/* The packed receive batch (net/rx_batch_packed.h, ring/packed_rx_batch.{h,c}): small packets
 * four at a time into four single descriptors, used descriptors written in place. Each
 * scenario pins what the guest sees (statuses, header and payload bytes, used ids and lengths
 * in order, drops) and, through the rx_batched counter, which packets the batch took: the
 * usual case is taken, and every unusual one -- a long or chained packet, an offload to
 * check, batching off, logging on, a chained, indirect, short, unmapped
 * or out-of-range buffer, the ring's end inside a group, a window shorter than a group --
 * leaves its group to the general path, which delivers or drops it as it always did. The
 * packed ring is the fixture's (256 descriptors unless the row says otherwise). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ring_fixture.h"

#define LEN 64

static const struct vl_vq_stats *st(const struct rf_q *s)
{
	return vl_vq_stats(s->q);
}

static uint64_t batched(const struct rf_q *s)
{
	return st(s)->rx_batched;
}

/* n well-formed receive buffers for LEN-byte packets, seeds from seed on. */
static void post(struct rf *f, struct rf_q *s, struct rf_good *g, uint32_t n, uint8_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		g[i] = rf_post_good(f, s, LEN, (uint8_t)(seed + i));
}

/* Enqueue n packets of pattern bytes (len[i], seed[i]) in one burst; statuses into out. */
static uint16_t enqueue(struct rf *f, struct rf_q *s, const uint32_t *len, const uint8_t *seed,
			uint32_t n, uint8_t *out)
{
	struct vl_pkt *pkts[64];

	assert_true(n <= 64);
	for (uint32_t i = 0; i < n; i++)
		pkts[i] = rf_make_pkt(f, len[i], seed[i]);
	const uint16_t done = vl_net_enqueue(s->q, pkts, (uint16_t)n, out);

	vl_pkt_free_bulk(pkts, n);
	return done;
}

/* The guest finds packet (len, seed) in g's buffer: a zero header with num_buffers 1, then
 * the bytes. */
static void expect_in(struct rf *f, const struct rf_good *g, uint32_t len, uint8_t seed)
{
	uint8_t hdr[12];
	const uint8_t zero[10] = {0};

	rf_read(f, g->gpa, hdr, 12);
	assert_memory_equal(hdr, zero, 10);
	assert_int_equal(hdr[10] | hdr[11] << 8, 1);
	rf_assert_pattern_at(f, g->gpa + 12, len, seed, 0);
}

/* Eight buffers, eight packets: both groups batched; everything counted as the general path
 * counts it (one used entry and one chain per packet, header and payload as batched copies,
 * one call decision for the burst). Then 40 bursts more, around the ring (256) and past its
 * wrap, which a group ends on exactly. */
static void scn_taken(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	for (uint32_t round = 0; round < 41; round++) {
		post(f, s, g, 8, (uint8_t)(round * 8));
		rf_burst_expect_returned(f, s, g, 8);
		assert_int_equal(batched(s), 8 * (round + 1));
	}
	assert_int_equal(st(s)->packets, 41 * 8);
	assert_int_equal(st(s)->bytes, 41 * 8 * LEN);
	assert_int_equal(st(s)->chains, 41 * 8);
	assert_int_equal(st(s)->used_entries, 41 * 8);
	assert_int_equal(st(s)->copies_batched, 41 * 16);
	assert_int_equal(st(s)->copies_direct, 0);
	assert_int_equal(st(s)->size_bins[1], 41 * 8); /* 64 bytes */
	assert_int_equal(st(s)->calls_needed + st(s)->calls_suppressed, 41);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
	rf_expect_still_works(f, s);
}

/* The queue's settings or the packets keep the batch out; the general path delivers. */
static void expect_general(struct rf *f, struct rf_q *s, uint32_t len)
{
	struct rf_good g[8];

	for (uint32_t i = 0; i < 8; i++)
		g[i] = rf_post_good(f, s, len, (uint8_t)(i + 1));
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 0);
	assert_int_equal(st(s)->packets, 8);
}

/* Packets longer than the batching threshold (256) are copied at once: not batched. */
static void scn_long_packets(struct rf *f, struct rf_q *s)
{
	expect_general(f, s, 300);
}

/* Batching off (threshold 0): every copy at once, every header stored unread. */
static void scn_batching_off(struct rf *f, struct rf_q *s)
{
	expect_general(f, s, LEN);
	assert_int_equal(st(s)->copies_batched, 0);
	assert_int_equal(st(s)->rx_hdrs_kept, 0);
}

/* Batching everything (threshold past VL_PKT_MAX_LEN): a 64-byte packet is batched, one of
 * two segments is not. */
static void scn_two_segments(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	vl_vq_set_batch_threshold(s->q, UINT32_MAX);
	for (uint32_t i = 0; i < 8; i++)
		g[i] = rf_post_good(f, s, i == 5 ? 3000u : LEN, (uint8_t)(i + 1));
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 4); /* the second group holds the two-segment packet */
}

/* Dirty logging on: the batch does not log, so it stands aside; every write is logged. */
static void scn_logging(struct rf *f, struct rf_q *s)
{
	uint8_t bitmap[1024] = {0};

	vl_vq_set_dirty_log(s->q, bitmap, sizeof(bitmap));
	expect_general(f, s, LEN);
	assert_true(st(s)->log_pages > 0);
	vl_vq_set_dirty_log(s->q, NULL, 0);
}

/* Four good buffers, then a group holding one odd buffer at index 5 made by make_odd, then
 * good ones: the first group is batched, the rest of the burst is the general path's. The
 * odd buffer is returned as the general path returns it (used length odd_used, drop `why`
 * counted unless VL_DROP_NONE). */
static void odd_in_second_group(struct rf *f, struct rf_q *s,
				uint16_t (*make_odd)(struct rf *f, struct rf_q *s),
				uint32_t odd_used, enum vl_drop why, uint32_t n_pkts)
{
	struct rf_good g[8];
	uint16_t odd = 0;
	uint32_t len[8];
	uint8_t seed[8], status[8];

	for (uint32_t i = 0; i < 8; i++) {
		if (i == 5)
			odd = make_odd(f, s);
		else
			g[i] = rf_post_good(f, s, LEN, (uint8_t)(i + 1));
		len[i] = LEN;
		seed[i] = (uint8_t)(i + 1);
	}
	/* An odd buffer that takes no data leaves its packet to the next buffer. */
	const uint32_t delivered = odd_used ? 8 : 7;

	memset(status, 0xFF, sizeof(status));
	assert_int_equal(enqueue(f, s, len, seed, n_pkts, status), n_pkts);
	for (uint32_t i = 0; i < n_pkts; i++)
		assert_int_equal(status[i], VL_RX_DELIVERED);
	assert_int_equal(batched(s), 4);
	assert_int_equal(st(s)->packets, delivered);
	/* Used descriptors in ring order: the batch's four, then the rest. */
	uint32_t pkt = 0;

	for (uint32_t i = 0; i < 8; i++) {
		if (i == 5) {
			rf_expect_used(s, odd, odd_used);
			if (odd_used)
				pkt++;
			continue;
		}
		if (pkt >= delivered)
			break;
		rf_expect_used(s, g[i].head, 12 + LEN);
		expect_in(f, &g[i], LEN, (uint8_t)(pkt + 1));
		pkt++;
	}
	if (why != VL_DROP_NONE)
		assert_int_equal(rf_drops(s, why), 1);
	assert_int_equal(rf_drops_other(s, why), 0);
}

/* A buffer of two descriptors (header and data apart, as a chain). */
static uint16_t make_chained(struct rf *f, struct rf_q *s)
{
	return rf_post_good_n(f, s, LEN, 6, 2).head;
}

static void scn_chained_buffer(struct rf *f, struct rf_q *s)
{
	odd_in_second_group(f, s, make_chained, 12 + LEN, VL_DROP_NONE, 8);
}

/* A buffer behind an indirect descriptor (its table: room for a header and 40 bytes) takes
 * a 40-byte packet through the general path. */
static uint16_t make_indirect(struct rf *f, struct rf_q *s)
{
	return rf_post_indirect(s, rf_valid_table(f, s), 32);
}

static void scn_indirect_buffer(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];
	uint32_t len[8];
	uint8_t seed[8], status[8];
	uint16_t ind = 0;

	for (uint32_t i = 0; i < 8; i++) {
		len[i] = 40;
		seed[i] = (uint8_t)(i + 1);
		if (i == 5)
			ind = make_indirect(f, s);
		else
			g[i] = rf_post_good(f, s, 40, seed[i]);
	}
	assert_int_equal(enqueue(f, s, len, seed, 8, status), 8);
	assert_int_equal(batched(s), 4);
	for (uint32_t i = 0; i < 8; i++) {
		assert_int_equal(status[i], VL_RX_DELIVERED);
		rf_expect_used(s, i == 5 ? ind : g[i].head, 12 + 40);
		if (i != 5)
			rf_assert_pattern_at(f, g[i].gpa + 12, 40, seed[i], 0);
	}
	rf_expect_no_used(s);
	assert_int_equal(rf_drops_other(s, VL_DROP_NONE), 0);
}

/* A buffer shorter than the header: the general path returns it empty (a drop) and gives
 * its packet to the next buffer; eight packets, nine buffers (the ninth posted here). */
static uint16_t make_tiny(struct rf *f, struct rf_q *s)
{
	const struct rf_desc d = { rf_alloc(f, 64), 8, VL_DESC_F_WRITE };

	return rf_post_chain(s, &d, 1);
}

static void scn_short_buffer(struct rf *f, struct rf_q *s)
{
	odd_in_second_group(f, s, make_tiny, 0, VL_DROP_RX_BUF_TOO_SMALL, 7);
}

/* A buffer at an address no memory region holds: returned empty, dropped. */
static uint16_t make_unmapped(struct rf *f, struct rf_q *s)
{
	(void)f;
	const struct rf_desc d = { 1ull << 40, 12 + LEN, VL_DESC_F_WRITE };

	return rf_post_chain(s, &d, 1);
}

static void scn_unmapped_buffer(struct rf *f, struct rf_q *s)
{
	odd_in_second_group(f, s, make_unmapped, 0, VL_DROP_UNMAPPED, 7);
}

/* A buffer of zero bytes: the batch does not translate it; the general path returns it
 * empty as too small for the header. */
static uint16_t make_empty(struct rf *f, struct rf_q *s)
{
	const struct rf_desc d = { rf_alloc(f, 64), 0, VL_DESC_F_WRITE };

	return rf_post_chain(s, &d, 1);
}

static void scn_empty_buffer(struct rf *f, struct rf_q *s)
{
	odd_in_second_group(f, s, make_empty, 0, VL_DROP_RX_BUF_TOO_SMALL, 7);
}

/* A chained buffer in the first group, behind a good one: the burst begins with groups but
 * takes none; the general path delivers all eight. */
static void scn_chained_in_first_group(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	for (uint32_t i = 0; i < 8; i++)
		g[i] = rf_post_good_n(f, s, LEN, (uint8_t)(i + 1), i == 1 ? 2 : 1);
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 0);
	assert_int_equal(st(s)->bursts, 1);
	assert_int_equal(st(s)->calls_needed + st(s)->calls_suppressed, 1);
}

/* A packet that does not qualify behind one that does, in the first group: no group is
 * begun, the general path takes the burst. One of 0 bytes among them is delivered as a
 * bare header. */
static void scn_odd_packet_in_first_group(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	for (uint32_t i = 0; i < 8; i++)
		g[i] = rf_post_good(f, s, i == 2 ? 300u : i == 6 ? 0u : LEN, (uint8_t)(i + 1));
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 0);
}

/* Without a status array (the caller does not want one) the batch delivers the same. */
static void scn_no_status(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];
	struct vl_pkt *pkts[8];

	post(f, s, g, 8, 1);
	for (uint32_t i = 0; i < 8; i++)
		pkts[i] = rf_make_pkt(f, LEN, (uint8_t)(i + 1));
	assert_int_equal(vl_net_enqueue(s->q, pkts, 8, NULL), 8);
	vl_pkt_free_bulk(pkts, 8);
	assert_int_equal(batched(s), 8);
	for (uint32_t i = 0; i < 8; i++) {
		rf_expect_used(s, g[i].head, 12 + LEN);
		expect_in(f, &g[i], LEN, (uint8_t)(i + 1));
	}
	rf_expect_no_used(s);
}

/* From position 248: one group (248-251), then a chained buffer (252-253) ends the groups
 * and the general path's used descriptors run over the ring's end (254, 255, 0, 1): the
 * flush after the groups wraps too. */
static void scn_general_wraps_after_group(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	for (uint32_t i = 0; i < 8; i++)
		g[i] = rf_post_good_n(f, s, LEN, (uint8_t)(i + 1), i == 4 ? 2 : 1);
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 4);
	rf_expect_still_works(f, s);
}

/* A buffer id out of range in the second group: the general path delivers the four before
 * it and breaks the queue there. */
static void scn_id_out_of_range(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];
	uint32_t len[8];
	uint8_t seed[8], status[8];

	for (uint32_t i = 0; i < 8; i++) {
		len[i] = LEN;
		seed[i] = (uint8_t)(i + 1);
		g[i] = rf_post_good(f, s, LEN, seed[i]);
	}
	/* The driver's id field of the buffer at position 5 (the fixture starts at 0). */
	rf_pdesc(s, 5)->id = 300;
	assert_int_equal(enqueue(f, s, len, seed, 8, status), 5);
	assert_int_equal(batched(s), 4);
	assert_true(vl_vq_broken(s->q));
	assert_int_equal(vl_vq_broken_reason(s->q), VL_DROP_ID_OUT_OF_RANGE);
	for (uint32_t i = 0; i < 5; i++) {
		assert_int_equal(status[i], VL_RX_DELIVERED);
		rf_expect_used(s, g[i].head, 12 + LEN);
		expect_in(f, &g[i], LEN, seed[i]);
	}
	rf_expect_no_used(s);
	/* A broken queue takes nothing more, groups or not. */
	assert_int_equal(enqueue(f, s, len, seed, 4, status), 0);
	assert_int_equal(batched(s), 4);
}

/* Six buffers for eight packets: one group, then two through the general path, which runs
 * out of room. */
static void scn_short_window(struct rf *f, struct rf_q *s)
{
	struct rf_good g[6];
	uint32_t len[8];
	uint8_t seed[8], status[8];

	post(f, s, g, 6, 1);
	for (uint32_t i = 0; i < 8; i++) {
		len[i] = LEN;
		seed[i] = (uint8_t)(i + 1);
	}
	assert_int_equal(enqueue(f, s, len, seed, 8, status), 6);
	assert_int_equal(batched(s), 4);
	assert_int_equal(st(s)->rx_no_room, 1);
	for (uint32_t i = 0; i < 6; i++) {
		rf_expect_used(s, g[i].head, 12 + LEN);
		expect_in(f, &g[i], LEN, seed[i]);
	}
	rf_expect_no_used(s);
}

/* An offload the driver did not negotiate (NEEDS_CSUM without GUEST_CSUM) keeps its group
 * out; the general path drops that packet. One it did negotiate is batched, its header
 * written as the packet's offload says. */
static void scn_offloads(struct rf *f, struct rf_q *s)
{
	const bool csum = vl_vq_features(s->q) & VL_FEATURE(VL_F_NET_GUEST_CSUM);
	struct rf_good g[8];
	struct vl_pkt *pkts[8];
	uint8_t status[8];

	post(f, s, g, 8, 1);
	for (uint32_t i = 0; i < 8; i++) {
		pkts[i] = rf_make_pkt(f, LEN, (uint8_t)(i + 1));
		if (i == 6)
			pkts[i]->ol = (struct vl_offload){ .flags = VL_NET_HDR_F_NEEDS_CSUM,
							   .csum_start = 34, .csum_offset = 16 };
	}
	const uint16_t done = vl_net_enqueue(s->q, pkts, 8, status);

	vl_pkt_free_bulk(pkts, 8);
	assert_int_equal(done, 8);
	assert_int_equal(batched(s), csum ? 8 : 4);
	assert_int_equal(status[6], csum ? VL_RX_DELIVERED : VL_RX_DROPPED_OFFLOAD);
	if (csum) {
		const uint8_t want[12] = { VL_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 0, 0, 34, 0, 16, 0,
					   1, 0 };
		uint8_t hdr[12];

		rf_read(f, g[6].gpa, hdr, 12);
		assert_memory_equal(hdr, want, 12);
	}
	for (uint32_t i = 0; i < (csum ? 8u : 7u); i++)
		rf_expect_used(s, g[i].head, 12 + LEN);
	rf_expect_no_used(s);
}

/* Buffers that come back holding last time's header (a driver recycling them) are not
 * written again: rx_hdrs_kept counts them, and the header is still the right one. */
static void scn_headers_kept(struct rf *f, struct rf_q *s)
{
	struct rf_good g[4];

	post(f, s, g, 4, 1);
	rf_burst_expect_goods(f, s, g, 4);
	for (uint32_t i = 0; i < 4; i++)
		rf_expect_used(s, g[i].head, 12 + LEN);
	assert_int_equal(st(s)->rx_hdrs_kept, 0); /* poisoned buffers */
	for (uint32_t i = 0; i < 4; i++) {
		const struct rf_desc d = { g[i].gpa, 12 + LEN, VL_DESC_F_WRITE };

		g[i].seed = (uint8_t)(20 + i);
		g[i].head = rf_post_chain(s, &d, 1);
	}
	rf_burst_expect_returned(f, s, g, 4);
	assert_int_equal(st(s)->rx_hdrs_kept, 4);
	assert_int_equal(batched(s), 8);
}

/* A header that differs from the one in the buffer only in its last bytes (num_buffers 2,
 * left by a mergeable packet) is stored again, not kept. */
static void scn_header_differs_at_end(struct rf *f, struct rf_q *s)
{
	struct rf_good g[4];
	const uint8_t old[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0 };

	for (uint32_t i = 0; i < 4; i++) {
		g[i] = rf_good_buf(f, s, LEN, (uint8_t)(i + 1));
		rf_write(f, g[i].gpa, old, sizeof(old));
		const struct rf_desc d = { g[i].gpa, 12 + LEN, VL_DESC_F_WRITE };

		g[i].head = rf_post_chain(s, &d, 1);
	}
	rf_burst_expect_returned(f, s, g, 4); /* finds num_buffers 1 */
	assert_int_equal(st(s)->rx_hdrs_kept, 0);
	assert_int_equal(batched(s), 4);
}

/* Started at 250: one group (250-253), then the next would run past the ring's end (254):
 * the general path takes 254, 255, 0, 1. */
static void scn_group_then_ring_end(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	post(f, s, g, 8, 1);
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 4);
	rf_expect_still_works(f, s);
}

/* The ring's end inside a group: started at 254, the burst's first group would wrap, so the
 * whole burst is the general path's; the next burst (from position 6) is batched. */
static void scn_wrap_inside_group(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	post(f, s, g, 8, 1);
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 0);
	post(f, s, g, 8, 9);
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 8);
}

/* Started at 252 with wrap counter 0: the first group ends at the ring's end, the second
 * starts at 0 with the counter flipped; the guest takes all eight in order. */
static void scn_wrap_at_group_end(struct rf *f, struct rf_q *s)
{
	struct rf_good g[8];

	post(f, s, g, 8, 1);
	rf_burst_expect_returned(f, s, g, 8);
	assert_int_equal(batched(s), 8);
	rf_expect_still_works(f, s);
}

/* The call decision covers the batch's used descriptors from the burst's first one: with
 * event idx, an event offset inside the first group asks for a call, one past the burst's
 * eight does not; DISABLE never, ENABLE always. */
static void burst_with_event(struct rf *f, struct rf_q *s, uint16_t flags, uint16_t off,
			     bool call)
{
	struct rf_good g[8];

	s->pr.driver_event->off_wrap = off;
	s->pr.driver_event->flags = flags;
	post(f, s, g, 8, 1);
	rf_burst_expect_returned(f, s, g, 8);
	if (vl_vq_needs_call(s->q) != call)
		fail_msg("flags %u off_wrap 0x%x: needs_call %d, expected %d", flags, off,
			 vl_vq_needs_call(s->q), call);
}

static void scn_call_decision(struct rf *f, struct rf_q *s)
{
	const uint16_t wrap = VL_PACKED_WRAP_BIT; /* the fixture's counter starts at 1 */

	burst_with_event(f, s, VL_RING_EVENT_DESC, wrap | 2, true);   /* used 0..7 */
	burst_with_event(f, s, VL_RING_EVENT_DESC, wrap | 30, false); /* used 8..15 */
	burst_with_event(f, s, VL_RING_EVENT_DESC, wrap | 16, true);  /* 16..23: the head */
	burst_with_event(f, s, VL_RING_EVENT_DISABLE, 0, false);
	burst_with_event(f, s, VL_RING_EVENT_ENABLE, 0, true);
	assert_int_equal(batched(s), 40);
	assert_int_equal(st(s)->calls_needed, 3);
	assert_int_equal(st(s)->calls_suppressed, 2);
}

#define MRG VL_FEATURE(VL_F_NET_MRG_RXBUF)
#define CSUM VL_FEATURE(VL_F_NET_GUEST_CSUM)
#define EVENT_IDX VL_FEATURE(VL_F_RING_EVENT_IDX)

/* A packed RX row of scn_SCN: RAM granularity, queue size, start position and wrap counter,
 * features added and taken off. */
#define RX(scn, sfx, gran, qs, start, wrap, feat, off)                                       \
	{ .name = #scn sfx, .side_fn = scn_##scn, .rx = true, .layout = VL_LAYOUT_PACKED,    \
	  .granularity = gran, .qsize = qs, .start_idx = start, .wrap0 = !(wrap),            \
	  .features = feat, .features_off = off }
#define RX2(scn)                                                                             \
	RX(scn, "", RF_COARSE, 256, 0, true, 0, 0),                                          \
		RX(scn, "_mrg_in_order", RF_COARSE, 256, 0, true, MRG | RF_IN_ORDER, 0)

static const struct rf_case cases[] = {
	RX2(taken),
	RX(taken, "_4k", RF_4K, 256, 0, true, 0, 0),
	RX(taken, "_size_1000_wrap0", RF_COARSE, 1000, 2, false, 0, 0),
	RX2(long_packets),
	{ .name = "batching_off", .side_fn = scn_batching_off, .rx = true,
	  .layout = VL_LAYOUT_PACKED, .granularity = RF_COARSE, .no_batch = true },
	RX2(two_segments),
	RX2(logging),
	RX2(chained_buffer),
	RX2(indirect_buffer),
	RX2(short_buffer),
	RX2(unmapped_buffer),
	RX2(empty_buffer),
	RX2(chained_in_first_group),
	RX2(odd_packet_in_first_group),
	RX2(no_status),
	RX(general_wraps_after_group, "", RF_COARSE, 256, 248, true, 0, 0),
	RX(general_wraps_after_group, "_in_order_wrap0", RF_COARSE, 256, 248, false,
	   RF_IN_ORDER, 0),
	RX2(id_out_of_range),
	RX2(short_window),
	RX(offloads, "_refused", RF_COARSE, 256, 0, true, 0, 0),
	RX(offloads, "_negotiated", RF_COARSE, 256, 0, true, CSUM, 0),
	RX2(headers_kept),
	RX(wrap_inside_group, "", RF_COARSE, 256, 254, true, 0, 0),
	RX(wrap_inside_group, "_in_order", RF_COARSE, 256, 254, false, RF_IN_ORDER, 0),
	RX2(header_differs_at_end),
	RX(group_then_ring_end, "", RF_COARSE, 256, 250, true, 0, 0),
	RX(wrap_at_group_end, "", RF_COARSE, 256, 252, false, 0, 0),
	RX(wrap_at_group_end, "_size_8", RF_COARSE, 8, 4, true, MRG, 0),
	RX(call_decision, "", RF_COARSE, 256, 0, true, EVENT_IDX, 0),
};

int main(void)
{
	return rf_run_cases("rx_batch", RF_LIST(cases), NULL, 0);
}

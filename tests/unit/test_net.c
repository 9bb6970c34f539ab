/* SPDX-License-Identifier: MIT */
/* virtio-net enqueue (host packets -> guest RX buffers) edge cases: non-mergeable and
 * mergeable buffers, the header as the guest sees it (10 or 12 bytes, num_buffers), packets
 * that cannot fit, guests that have not posted enough, bad RX chains around good ones, the
 * header scattered over tiny descriptors, and the copy batch being invisible to the guest.
 * Each case checks the return value, per-packet status, counters and the used entries and
 * bytes the guest sees. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "frame_build.h"
#include "ring_fixture.h"
#include "vhostlab/vl_sw_offload.h"

/* Feature sets the scenarios run with. */
/* The driver takes checksum flags and TCPv4 GSO (OL_TSO): rx_offload rows narrow it. */
#define F_RX_OL (VL_FEATURE(VL_F_NET_GUEST_CSUM) | VL_FEATURE(VL_F_NET_GUEST_TSO4))
#define F_LEGACY F_RX_OL                                               /* 10-byte header */
#define F_MODERN (F_RX_OL | VL_FEATURE(VL_F_VERSION_1) | VL_FEATURE(VL_F_RING_INDIRECT_DESC))
#define F_MRG (F_MODERN | VL_FEATURE(VL_F_NET_MRG_RXBUF))

/* ---- helpers ---------------------------------------------------------------------------- */

static bool mergeable(const struct rf *f)
{
	return (f->cfg.features & VL_FEATURE(VL_F_NET_MRG_RXBUF)) != 0;
}

/* An RX buffer as the test posted it: its bytes are contiguous in guest RAM from gpa even
 * when several descriptors describe it. */
struct rxb {
	uint16_t head;
	uint64_t gpa;
	uint32_t cap;
};

/* One device-writable descriptor of cap bytes, poisoned. */
static struct rxb post_buf(struct rf *f, uint32_t cap)
{
	struct rxb b = { .gpa = rf_alloc(f, cap), .cap = cap };
	struct rf_desc d = { b.gpa, cap, VL_DESC_F_WRITE };

	rf_fill(f, b.gpa, 0xA5, cap);
	b.head = rf_post_chain(&f->rx, &d, 1);
	return b;
}

static struct vl_pkt *make_pkt_ol(struct rf *f, uint32_t len, uint8_t seed,
				  const struct vl_offload *ol)
{
	struct vl_pkt *p = rf_make_pkt(f, len, seed);

	if (ol)
		p->ol = *ol;
	return p;
}

/* The header bytes a guest must find for offloads ol over nbuf buffers (spec 5.1.6). */
static void expected_hdr(const struct rf *f, const struct vl_offload *ol, uint16_t nbuf,
			 uint8_t out[12])
{
	struct vl_offload z = {0};

	if (!ol)
		ol = &z;
	out[0] = ol->flags;
	out[1] = ol->gso_type;
	out[2] = (uint8_t)ol->hdr_len;
	out[3] = (uint8_t)(ol->hdr_len >> 8);
	out[4] = (uint8_t)ol->gso_size;
	out[5] = (uint8_t)(ol->gso_size >> 8);
	out[6] = (uint8_t)ol->csum_start;
	out[7] = (uint8_t)(ol->csum_start >> 8);
	out[8] = (uint8_t)ol->csum_offset;
	out[9] = (uint8_t)(ol->csum_offset >> 8);
	/* Without MRG_RXBUF a 12-byte header still carries num_buffers, and it must be 1. */
	uint16_t nb = mergeable(f) ? nbuf : 1;

	out[10] = (uint8_t)nb;
	out[11] = (uint8_t)(nb >> 8);
}

/* The buffer posted last under head `id` (heads are reused once their entries are popped). */
static const struct rxb *find_buf(const struct rxb *bufs, uint32_t nb, uint32_t id)
{
	for (uint32_t i = nb; i-- > 0;)
		if (bufs[i].head == id)
			return &bufs[i];
	fail_msg("used id %u names no buffer this test posted", id);
	return NULL;
}

/* Pop the used entries of one delivered packet, which must be exactly the buffers `expect`
 * (heads, in order) filled front to back: every entry but the last holds its buffer's full
 * capacity, the lengths add up to header + len, the header is as expected, and the bytes
 * after it are pattern(seed). Bytes past the used length of the last buffer are untouched. */
static void expect_rx_packet(struct rf *f, const struct rxb *bufs, uint32_t nb,
			     const uint16_t *expect, uint32_t nexp, uint32_t len, uint8_t seed,
			     const struct vl_offload *ol)
{
	const uint32_t h = f->hdr_len;
	uint32_t left = h + len, off = 0;
	uint8_t want[12];

	for (uint32_t i = 0; i < nexp; i++) {
		const struct rxb *b = find_buf(bufs, nb, expect[i]);
		uint32_t used = b->cap < left ? b->cap : left;

		rf_expect_used(&f->rx, expect[i], used);
		uint32_t skip = 0;

		if (i == 0) {
			uint8_t hdr[12];

			expected_hdr(f, ol, (uint16_t)nexp, want);
			rf_read(f, b->gpa, hdr, h);
			assert_memory_equal(hdr, want, h);
			skip = h;
		}
		rf_assert_pattern_at(f, b->gpa + skip, used - skip, seed, off);
		off += used - skip;
		left -= used;
		if (used < b->cap) {
			const uint8_t *rest = rf_ptr(f, b->gpa + used, b->cap - used);

			for (uint32_t k = 0; k < b->cap - used; k++)
				assert_int_equal(rest[k], 0xA5);
		}
	}
	assert_int_equal(left, 0);
	assert_int_equal(off, len);
}

static void expect_status(const uint8_t *st, const uint8_t *want, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (st[i] != want[i])
			fail_msg("status[%u] is %u, expected %u", i, st[i], want[i]);
}

/* Enqueue n packets of the given lengths (pattern seeds 0x80 + i), expect `ret` handled and
 * the statuses `want` (entries past ret must stay untouched). */
static void enqueue_lens(struct rf *f, const uint32_t *lens, uint32_t n, uint16_t ret,
			 const uint8_t *want)
{
	struct vl_pkt *pkts[16];
	uint8_t st[16];

	assert_true(n <= 16);
	for (uint32_t i = 0; i < n; i++)
		pkts[i] = rf_make_pkt(f, lens[i], (uint8_t)(0x80 + i));
	memset(st, 0xEE, sizeof(st));
	assert_int_equal(vl_net_enqueue(f->rx.q, pkts, (uint16_t)n, st), ret);
	expect_status(st, want, ret);
	for (uint32_t i = ret; i < n; i++)
		assert_int_equal(st[i], 0xEE);
	vl_pkt_free_bulk(pkts, n);
}

static const struct vl_offload OL_TSO = {
	.flags = VL_NET_HDR_F_NEEDS_CSUM,
	.gso_type = VL_NET_HDR_GSO_TCPV4,
	.hdr_len = 54,
	.gso_size = 1448,
	.csum_start = 34,
	.csum_offset = 16,
};

/* ---- non-mergeable ------------------------------------------------------------------------ */

/* The packet fits one buffer: used length header + packet, the header (10 bytes without
 * VERSION_1, 12 with and num_buffers 1) carries the offloads, the rest of the buffer is
 * untouched. */
static void scn_nonmrg_fits(struct rf *f)
{
	struct rxb b[2] = { post_buf(f, f->hdr_len + 1500), post_buf(f, f->hdr_len + 1000) };
	struct vl_pkt *pkts[2] = {
		make_pkt_ol(f, 1000, 0x31, &OL_TSO),
		make_pkt_ol(f, 1000, 0x32, NULL), /* exactly fills b[1] */
	};
	uint8_t st[2] = { 0xEE, 0xEE };

	assert_int_equal(vl_net_enqueue(f->rx.q, pkts, 2, st), 2);
	assert_int_equal(st[0], VL_RX_DELIVERED);
	assert_int_equal(st[1], VL_RX_DELIVERED);
	vl_pkt_free_bulk(pkts, 2);

	const uint16_t e0[1] = { b[0].head }, e1[1] = { b[1].head };

	expect_rx_packet(f, b, 2, e0, 1, 1000, 0x31, &OL_TSO);
	expect_rx_packet(f, b, 2, e1, 1, 1000, 0x32, NULL);
	rf_expect_no_used(&f->rx);

	const struct vl_vq_stats *st_q = vl_vq_stats(f->rx.q);

	assert_int_equal(st_q->packets, 2);
	assert_int_equal(st_q->bytes, 2000);
	assert_int_equal(st_q->used_entries, 2);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_NONE), 0);
}

/* A packet bigger than the one buffer it could use is dropped (nothing published, the buffer
 * stays available) and the next packet that fits lands in that buffer. */
static void scn_nonmrg_too_big(struct rf *f)
{
	struct rxb b[1] = { post_buf(f, f->hdr_len + 100) };
	const uint32_t big[1] = { 200 };
	const uint8_t want_big[1] = { VL_RX_DROPPED_TOO_BIG };

	enqueue_lens(f, big, 1, 1, want_big);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_TOO_BIG), 1);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_RX_TOO_BIG), 0);
	rf_expect_no_used(&f->rx);
	assert_int_equal(vl_vq_last_avail(f->rx.q), f->cfg.start_idx);
	assert_int_equal(vl_vq_stats(f->rx.q)->chains, 0);
	assert_int_equal(vl_vq_stats(f->rx.q)->packets, 0);
	assert_int_equal(vl_vq_stats(f->rx.q)->rx_no_room, 0);

	/* One byte too many, then an exact fit: the second lands in the same buffer. */
	const uint32_t lens[2] = { 101, 100 };
	const uint8_t want[2] = { VL_RX_DROPPED_TOO_BIG, VL_RX_DELIVERED };

	enqueue_lens(f, lens, 2, 2, want);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_TOO_BIG), 2);
	const uint16_t e[1] = { b[0].head };

	expect_rx_packet(f, b, 1, e, 1, 100, 0x81, NULL);
	rf_expect_no_used(&f->rx);
	assert_int_equal(vl_vq_stats(f->rx.q)->packets, 1);
}

/* ---- mergeable ------------------------------------------------------------------------------ */

/* A packet spread over N small buffers: num_buffers == N, used lengths fill each buffer but
 * the last, bytes in order; the next packet starts in the next buffer. */
static void scn_mrg_spread(struct rf *f)
{
	struct rxb b[5];

	for (int i = 0; i < 5; i++)
		b[i] = post_buf(f, 64);
	struct vl_pkt *pkts[2] = { make_pkt_ol(f, 200, 0x41, &OL_TSO),
				   make_pkt_ol(f, 40, 0x42, NULL) };
	uint8_t st[2];

	assert_int_equal(vl_net_enqueue(f->rx.q, pkts, 2, st), 2);
	assert_int_equal(st[0], VL_RX_DELIVERED);
	assert_int_equal(st[1], VL_RX_DELIVERED);
	vl_pkt_free_bulk(pkts, 2);
	/* 12 + 200 = 212 = 64 + 64 + 64 + 20 */
	const uint16_t e0[4] = { b[0].head, b[1].head, b[2].head, b[3].head };
	const uint16_t e1[1] = { b[4].head };

	expect_rx_packet(f, b, 5, e0, 4, 200, 0x41, &OL_TSO);
	expect_rx_packet(f, b, 5, e1, 1, 40, 0x42, NULL);
	rf_expect_no_used(&f->rx);
	assert_int_equal(vl_vq_stats(f->rx.q)->used_entries, 5);
	assert_int_equal(vl_vq_stats(f->rx.q)->packets, 2);
	assert_int_equal(vl_vq_stats(f->rx.q)->bytes, 240);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_NONE), 0);
}

/* Not enough buffers yet: the packet is not delivered, nothing of it is published, the call
 * returns fewer than asked, rx_no_room counts it; once the guest posts more it is delivered
 * (over the old buffers and the new ones). */
static void scn_mrg_no_room(struct rf *f)
{
	struct rxb b[5];

	b[0] = post_buf(f, 64);
	b[1] = post_buf(f, 64);
	const uint32_t lens[1] = { 200 };
	const uint8_t none[1] = { 0 };

	enqueue_lens(f, lens, 1, 0, none);
	rf_expect_no_used(&f->rx);
	assert_int_equal(vl_vq_stats(f->rx.q)->rx_no_room, 1);
	assert_int_equal(vl_vq_last_avail(f->rx.q), f->cfg.start_idx);
	assert_int_equal(vl_vq_stats(f->rx.q)->chains, 0);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_NONE), 0);
	assert_false(vl_vq_needs_call(f->rx.q));

	b[2] = post_buf(f, 64);
	b[3] = post_buf(f, 64);
	const uint8_t ok[1] = { VL_RX_DELIVERED };

	enqueue_lens(f, lens, 1, 1, ok);
	const uint16_t e[4] = { b[0].head, b[1].head, b[2].head, b[3].head };

	expect_rx_packet(f, b, 4, e, 4, 200, 0x80, NULL);
	rf_expect_no_used(&f->rx);

	/* Two packets, room for the first only: return 1, the second's status untouched. */
	b[4] = post_buf(f, 64);
	const uint32_t lens2[2] = { 30, 200 };
	const uint8_t want2[2] = { VL_RX_DELIVERED, 0 };

	enqueue_lens(f, lens2, 2, 1, want2);
	assert_int_equal(vl_vq_stats(f->rx.q)->rx_no_room, 2);
	const uint16_t e4[1] = { b[4].head };

	expect_rx_packet(f, b, 5, e4, 1, 30, 0x80, NULL);
	rf_expect_no_used(&f->rx);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_NONE), 0);
}

/* A ring full of the guest's buffers that still cannot hold the packet: waiting would stall
 * forever, so it is dropped (too big) with nothing published; a packet exactly as large as
 * the whole ring fits; after a refill a too-big packet is dropped and the next delivered. */
static void scn_mrg_full_ring_too_big(struct rf *f)
{
	const uint32_t n = f->cfg.qsize; /* 16 */
	struct rxb b[32] = {{0}};

	assert_true(n <= 16);

	for (uint32_t i = 0; i < n; i++)
		b[i] = post_buf(f, 64);
	const uint32_t huge[1] = { 2000 };
	const uint8_t tb[1] = { VL_RX_DROPPED_TOO_BIG };

	enqueue_lens(f, huge, 1, 1, tb);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_TOO_BIG), 1);
	assert_int_equal(vl_vq_stats(f->rx.q)->rx_no_room, 0);
	rf_expect_no_used(&f->rx);
	assert_int_equal(vl_vq_last_avail(f->rx.q), f->cfg.start_idx);

	/* 16 * 64 - 12 = 1012 bytes: the whole ring, every buffer full. */
	const uint32_t exact[1] = { 64 * n - f->hdr_len };
	const uint8_t ok[1] = { VL_RX_DELIVERED };
	uint16_t e[32] = {0};

	enqueue_lens(f, exact, 1, 1, ok);
	for (uint32_t i = 0; i < n; i++)
		e[i] = b[i].head;
	expect_rx_packet(f, b, n, e, n, 64 * n - f->hdr_len, 0x80, NULL);
	rf_expect_no_used(&f->rx);

	for (uint32_t i = 0; i < n; i++)
		b[n + i] = post_buf(f, 64);
	const uint32_t lens[2] = { 2000, 100 };
	const uint8_t want[2] = { VL_RX_DROPPED_TOO_BIG, VL_RX_DELIVERED };

	enqueue_lens(f, lens, 2, 2, want);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_TOO_BIG), 2);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_RX_TOO_BIG), 0);
	const uint16_t e2[2] = { b[n].head, b[n + 1].head };

	expect_rx_packet(f, b, 2 * n, e2, 2, 100, 0x81, NULL);
	rf_expect_no_used(&f->rx);
}

/* ---- bad RX chains -------------------------------------------------------------------------- */

/* A buffer smaller than the header is returned with length 0 (spec 5.1.6.3.1) and the packet
 * goes to the next buffer. A buffer of exactly the header is legal: a 0-byte packet fits it
 * without mergeable buffers; with them it takes the header and the data goes on. */
static void scn_rx_buf_too_small(struct rf *f)
{
	const uint32_t h = f->hdr_len;
	struct rxb b[4];

	b[0] = post_buf(f, h - 1);
	b[1] = post_buf(f, h + 100);
	const uint32_t lens[1] = { 100 };
	const uint8_t ok[1] = { VL_RX_DELIVERED };

	enqueue_lens(f, lens, 1, 1, ok);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_BUF_TOO_SMALL), 1);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_RX_BUF_TOO_SMALL), 0);
	rf_expect_used(&f->rx, b[0].head, 0);
	const uint16_t e1[1] = { b[1].head };

	expect_rx_packet(f, b, 2, e1, 1, 100, 0x80, NULL);
	rf_expect_no_used(&f->rx);
	/* The short buffer was not written. */
	for (uint32_t i = 0; i < h - 1; i++)
		assert_int_equal(((uint8_t *)rf_ptr(f, b[0].gpa, h - 1))[i], 0xA5);

	b[2] = post_buf(f, h);
	if (mergeable(f)) {
		b[3] = post_buf(f, 200);
		enqueue_lens(f, lens, 1, 1, ok);
		const uint16_t e[2] = { b[2].head, b[3].head };

		expect_rx_packet(f, b, 4, e, 2, 100, 0x80, NULL);
	} else {
		const uint32_t zero[1] = { 0 };

		enqueue_lens(f, zero, 1, 1, ok);
		const uint16_t e[1] = { b[2].head };

		expect_rx_packet(f, b, 3, e, 1, 0, 0x80, NULL);
	}
	rf_expect_no_used(&f->rx);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_BUF_TOO_SMALL), 1);
}

/* Device-readable descriptors in RX chains (all read-only, or read-only after a writable
 * one): returned with length 0, counted as direction, never written. */
static void scn_rx_readonly(struct rf *f)
{
	const uint32_t h = f->hdr_len;
	uint64_t ro = rf_alloc(f, 200);

	rf_fill(f, ro, 0x3C, 200);
	struct rf_desc d1[1] = { { ro, 200, 0 } };
	struct rf_desc d2[2] = { { ro, h, VL_DESC_F_WRITE }, { ro + h, 100, 0 } };
	uint16_t bad0 = rf_post_chain(&f->rx, d1, 1);
	uint16_t bad1 = rf_post_chain(&f->rx, d2, 2);
	struct rxb b[1] = { post_buf(f, h + 100) };
	const uint32_t lens[1] = { 100 };
	const uint8_t ok[1] = { VL_RX_DELIVERED };

	enqueue_lens(f, lens, 1, 1, ok);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_DIRECTION), 2);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_DIRECTION), 0);
	rf_expect_used(&f->rx, bad0, 0);
	rf_expect_used(&f->rx, bad1, 0);
	const uint16_t e[1] = { b[0].head };

	expect_rx_packet(f, b, 1, e, 1, 100, 0x80, NULL);
	rf_expect_no_used(&f->rx);
	const uint8_t *p = rf_ptr(f, ro, 200);

	for (int i = 0; i < 200; i++)
		assert_int_equal(p[i], 0x3C);
}

/* Mergeable: a bad chain between two good buffers of one packet is returned (length 0)
 * before the packet's entries, which stay consecutive. Also when the packet has to wait for
 * the second good buffer: the bad chain is dropped (and counted) once, when returned. */
static void scn_mrg_bad_between(struct rf *f)
{
	const uint32_t lens[1] = { 100 };
	const uint8_t ok[1] = { VL_RX_DELIVERED };
	const uint8_t none[1] = { 0 };
	struct rxb b[4];

	b[0] = post_buf(f, 64);
	uint64_t ro = rf_alloc(f, 64);
	struct rf_desc d = { ro, 64, 0 };
	uint16_t bad = rf_post_chain(&f->rx, &d, 1);

	b[1] = post_buf(f, 64);
	enqueue_lens(f, lens, 1, 1, ok);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_DIRECTION), 1);
	rf_expect_used(&f->rx, bad, 0);
	/* 12 + 100 = 64 + 48 */
	const uint16_t e[2] = { b[0].head, b[1].head };

	expect_rx_packet(f, b, 2, e, 2, 100, 0x80, NULL);
	rf_expect_no_used(&f->rx);

	/* The second good buffer comes later. */
	b[2] = post_buf(f, 64);
	bad = rf_post_chain(&f->rx, &d, 1);
	enqueue_lens(f, lens, 1, 0, none);
	rf_expect_no_used(&f->rx);
	assert_int_equal(vl_vq_stats(f->rx.q)->rx_no_room, 1);
	/* Not returned yet: still in the ring, to be walked again. */
	assert_int_equal(rf_drops(&f->rx, VL_DROP_DIRECTION), 1);

	b[3] = post_buf(f, 64);
	enqueue_lens(f, lens, 1, 1, ok);
	rf_expect_used(&f->rx, bad, 0);
	const uint16_t e2[2] = { b[2].head, b[3].head };

	expect_rx_packet(f, b, 4, e2, 2, 100, 0x80, NULL);
	rf_expect_no_used(&f->rx);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_DIRECTION), 2);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_DIRECTION), 0);
	assert_int_equal(vl_vq_stats(f->rx.q)->chains, 6);
	assert_int_equal(vl_vq_stats(f->rx.q)->used_entries, 6);
}

/* ---- header pieces -------------------------------------------------------------------------- */

/* The RX header written across tiny descriptors: 3 + 5 + (hdr - 8) bytes, each in its own
 * allocation, then the data (in its own descriptor, or sharing one with the header tail). */
static void scn_rx_header_pieces(struct rf *f)
{
	const uint32_t h = f->hdr_len;
	const uint32_t plen = 200;

	for (int shared = 0; shared < 2; shared++) {
		uint64_t p0 = rf_alloc(f, 3), p1 = rf_alloc(f, 5);
		uint64_t p2 = rf_alloc(f, h - 8 + plen + 16);
		uint8_t seed = (uint8_t)(0x50 + shared);

		rf_fill(f, p0, 0xA5, 3);
		rf_fill(f, p1, 0xA5, 5);
		rf_fill(f, p2, 0xA5, h - 8 + plen + 16);
		/* Data right after the header tail in p2 either way, so it reads back
		 * contiguously; only the descriptor boundaries differ. */
		struct rf_desc sep[4] = {
			{ p0, 3, VL_DESC_F_WRITE }, { p1, 5, VL_DESC_F_WRITE },
			{ p2, h - 8, VL_DESC_F_WRITE }, { p2 + h - 8, plen + 16, VL_DESC_F_WRITE },
		};
		struct rf_desc shr[3] = {
			{ p0, 3, VL_DESC_F_WRITE }, { p1, 5, VL_DESC_F_WRITE },
			{ p2, h - 8 + plen + 16, VL_DESC_F_WRITE },
		};
		uint16_t head = shared ? rf_post_chain(&f->rx, shr, 3)
				       : rf_post_chain(&f->rx, sep, 4);
		struct vl_pkt *pkt = make_pkt_ol(f, plen, seed, &OL_TSO);
		uint8_t st = 0xEE;

		assert_int_equal(vl_net_enqueue(f->rx.q, &pkt, 1, &st), 1);
		assert_int_equal(st, VL_RX_DELIVERED);
		vl_pkt_free(pkt);
		rf_expect_used(&f->rx, head, h + plen);

		uint8_t want[12], got[12];

		expected_hdr(f, &OL_TSO, 1, want);
		rf_read(f, p0, got, 3);
		rf_read(f, p1, got + 3, 5);
		rf_read(f, p2, got + 8, h - 8);
		assert_memory_equal(got, want, h);
		rf_assert_pattern_at(f, p2 + h - 8, plen, seed, 0);
		for (uint32_t i = 0; i < 16; i++)
			assert_int_equal(((uint8_t *)rf_ptr(f, p2 + h - 8 + plen, 16))[i], 0xA5);
	}
	rf_expect_no_used(&f->rx);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_NONE), 0);
}

/* ---- copy batching ----------------------------------------------------------------------- */

/* Post the same RX buffers on f: single buffers of mixed sizes, multi-descriptor buffers and
 * an indirect one, placed identically for identical fixtures. */
static void post_mixed_buffers(struct rf *f)
{
	static const uint32_t caps[] = { 64, 100, 300, 1500, 2048, 64, 256, 257, 9000, 700 };

	for (uint32_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		(void)post_buf(f, caps[i]);
	for (uint32_t k = 0; k < 4; k++) {
		uint64_t a = rf_alloc(f, 1024);
		struct rf_desc d[5] = {
			{ a, 3, VL_DESC_F_WRITE }, { a + 3, 9, VL_DESC_F_WRITE },
			{ a + 12, 1, VL_DESC_F_WRITE }, { a + 13, 500, VL_DESC_F_WRITE },
			{ a + 513, 511, VL_DESC_F_WRITE },
		};

		rf_fill(f, a, 0xA5, 1024);
		(void)rf_post_chain(&f->rx, d, 5);
	}
	uint64_t t = rf_alloc(f, 64 * 16);
	uint64_t a = rf_alloc(f, 64 * 40);
	struct rf_desc e[64];

	rf_fill(f, a, 0xA5, 64 * 40);
	for (uint32_t i = 0; i < 64; i++)
		e[i] = (struct rf_desc){ a + 40 * i, 40, VL_DESC_F_WRITE };
	rf_write_table(f, t, e, 64);
	(void)rf_post_indirect(&f->rx, t, 64 * 16);
	for (uint32_t i = 0; i < 40; i++)
		(void)post_buf(f, 128);
	for (uint32_t i = 0; i < 100; i++)
		(void)post_buf(f, 256);
}

/* The same enqueue into setups that differ only in the batching threshold (0 = off, the
 * default 256, 65536 = everything the batch array holds) leaves identical guest memory: ring
 * area (used entries) and RAM (headers, data, untouched poison). The copy counters differ
 * exactly as batching says, and the number of copies does not. */
static void test_batch_threshold_invisible(void **state)
{
	static const uint32_t thr[3] = { 0, VL_BATCH_THRESHOLD_DEFAULT, 65536 };
	static const uint32_t lens[] = { 1, 60, 255, 256, 257, 1500, 4000, 9000, 0, 100, 3000,
					 777, 64, 65, 1200, 5000 };
	const uint32_t npkt = sizeof(lens) / sizeof(lens[0]);
	struct rf f[3];

	(void)state;
	for (int k = 0; k < 3; k++) {
		struct rf_cfg cfg;

		rf_cfg_init(&cfg, RF_4K);
		cfg.features = F_MRG;
		cfg.batch_threshold = thr[k];
		rf_setup(&f[k], &cfg);
		post_mixed_buffers(&f[k]);

		struct vl_pkt *pkts[16];
		uint8_t st[16];

		for (uint32_t i = 0; i < npkt; i++)
			pkts[i] = make_pkt_ol(&f[k], lens[i], (uint8_t)(0x90 + i),
					      i % 3 == 0 ? &OL_TSO : NULL);
		assert_int_equal(vl_net_enqueue(f[k].rx.q, pkts, (uint16_t)npkt, st), npkt);
		for (uint32_t i = 0; i < npkt; i++)
			assert_int_equal(st[i], VL_RX_DELIVERED);
		vl_pkt_free_bulk(pkts, npkt);
	}
	const struct vl_vq_stats *s0 = vl_vq_stats(f[0].rx.q);
	const struct vl_vq_stats *s1 = vl_vq_stats(f[1].rx.q);
	const struct vl_vq_stats *s2 = vl_vq_stats(f[2].rx.q);

	assert_int_equal(s0->copies_batched, 0);
	assert_true(s0->copies_direct > 0);
	assert_true(s1->copies_batched > 0);
	assert_true(s1->copies_direct > 0); /* the 9000-byte packet has pieces > 256 */
	assert_true(s2->copies_batched > s1->copies_batched);
	assert_int_equal(s0->copies_batched + s0->copies_direct,
			 s1->copies_batched + s1->copies_direct);
	assert_int_equal(s1->copies_batched + s1->copies_direct,
			 s2->copies_batched + s2->copies_direct);
	for (int k = 1; k < 3; k++) {
		const struct vl_vq_stats *a = vl_vq_stats(f[0].rx.q), *b = vl_vq_stats(f[k].rx.q);

		assert_int_equal(a->packets, b->packets);
		assert_int_equal(a->bytes, b->bytes);
		assert_int_equal(a->used_entries, b->used_entries);
		assert_int_equal(a->chains, b->chains);
		assert_memory_equal(a->drops, b->drops, sizeof(a->drops));
	}
	assert_int_equal(s0->packets, npkt);
	assert_int_equal(rf_drops_other(&f[0].rx, VL_DROP_NONE), 0);

	/* Whole guest memory, through the guest view. */
	for (int k = 1; k < 3; k++) {
		uint64_t rg = lab_gmem_ring_gpa(f[0].g), rs = lab_gmem_ring_size(f[0].g);
		uint64_t ag = lab_gmem_ram_gpa(f[0].g), as = lab_gmem_ram_size(f[0].g);

		assert_int_equal(lab_gmem_ram_gpa(f[k].g), ag);
		assert_true(memcmp(rf_ptr(&f[0], rg, rs), rf_ptr(&f[k], rg, rs), rs) == 0);
		assert_true(memcmp(rf_ptr(&f[0], ag, as), rf_ptr(&f[k], ag, as), as) == 0);
	}
	/* And the memory is right, not just equal: the first packet (1 byte) sits in the
	 * first 64-byte buffer with num_buffers 1, the 60-byte one over the next. */
	uint32_t id, len;

	assert_true(rf_pop_used(&f[0].rx, &id, &len));
	assert_int_equal(len, 12 + 1);
	assert_true(rf_pop_used(&f[0].rx, &id, &len));
	assert_int_equal(len, 12 + 60);
	for (int k = 0; k < 3; k++)
		rf_teardown(&f[k]);
}

/* ---- recycled buffers ------------------------------------------------------------------- */

/* One packet into the buffer at gpa (reposted, its header left as the last packet wrote it,
 * the bytes after the header poisoned again), found there with the header `ol` asks for. */
static void recycle_one(struct rf *f, struct rxb *b, uint32_t len, uint8_t seed,
			const struct vl_offload *ol)
{
	const struct rf_desc d = { b->gpa, b->cap, VL_DESC_F_WRITE };
	struct vl_pkt *p = make_pkt_ol(f, len, seed, ol);
	uint8_t st = 0xEE;

	rf_fill(f, b->gpa + f->hdr_len, 0xA5, b->cap - f->hdr_len);
	b->head = rf_post_chain(&f->rx, &d, 1);
	assert_int_equal(vl_net_enqueue(f->rx.q, &p, 1, &st), 1);
	assert_int_equal(st, VL_RX_DELIVERED);
	vl_pkt_free(p);
	expect_rx_packet(f, b, 1, &b->head, 1, len, seed, ol);
}

/* A driver that recycles its RX buffers finds last time's header in them. Where those bytes
 * already are the header this packet needs, the device leaves them (rx_hdrs_kept): the
 * guest reads the right header either way, and every difference -- a poisoned buffer,
 * offloads, num_buffers -- is written. With batching off headers are stored at once,
 * unread. One buffer, packet after packet; mergeable adds a packet over two buffers. */
static void scn_rx_hdr_recycled(struct rf *f)
{
	const bool batching = f->cfg.batch_threshold > 0;
	const struct vl_vq_stats *s = vl_vq_stats(f->rx.q);
	struct rxb b = { .gpa = rf_alloc(f, f->hdr_len + 200), .cap = f->hdr_len + 200 };
	static const struct {
		uint32_t len;
		bool tso;
		uint64_t kept; /* rx_hdrs_kept after it, batching on */
	} step[] = {
		{ 64, false, 0 },  /* poison in the header's place: written */
		{ 100, false, 1 }, /* the same header: kept */
		{ 150, true, 1 },  /* offloads: written */
		{ 64, false, 1 },  /* back to none: written */
		{ 200, false, 2 }, /* kept */
	};

	rf_fill(f, b.gpa, 0xA5, b.cap);
	for (uint32_t i = 0; i < sizeof(step) / sizeof(step[0]); i++) {
		recycle_one(f, &b, step[i].len, (uint8_t)(0x40 + i), step[i].tso ? &OL_TSO : NULL);
		if (s->rx_hdrs_kept != (batching ? step[i].kept : 0))
			fail_msg("step %u: rx_hdrs_kept %llu, expected %llu", i,
				 (unsigned long long)s->rx_hdrs_kept,
				 (unsigned long long)(batching ? step[i].kept : 0));
	}
	if (!mergeable(f)) {
		rf_expect_no_used(&f->rx);
		return;
	}
	/* 250 bytes over b and a second buffer c: num_buffers 2 is written, then kept. */
	struct rxb two[2] = { b, { .gpa = rf_alloc(f, 100), .cap = 100 } };
	const uint64_t before = s->rx_hdrs_kept;

	for (uint32_t round = 0; round < 2; round++) {
		struct vl_pkt *p = rf_make_pkt(f, 250, (uint8_t)(0x60 + round));
		uint8_t st = 0xEE;

		for (uint32_t k = 0; k < 2; k++) {
			const struct rf_desc d = { two[k].gpa, two[k].cap, VL_DESC_F_WRITE };

			rf_fill(f, two[k].gpa + (k ? 0 : f->hdr_len), 0xA5,
				two[k].cap - (k ? 0 : f->hdr_len));
			two[k].head = rf_post_chain(&f->rx, &d, 1);
		}
		assert_int_equal(vl_net_enqueue(f->rx.q, &p, 1, &st), 1);
		assert_int_equal(st, VL_RX_DELIVERED);
		vl_pkt_free(p);
		const uint16_t e[2] = { two[0].head, two[1].head };

		expect_rx_packet(f, two, 2, e, 2, 250, (uint8_t)(0x60 + round), NULL);
		assert_int_equal(s->rx_hdrs_kept, before + (batching ? round : 0));
	}
	rf_expect_no_used(&f->rx);
}

static void test_rx_hdr_recycled(void **state)
{
	static const uint64_t feats[3] = { F_LEGACY, F_MODERN, F_MRG };

	(void)state;
	for (int packed = 0; packed < 2; packed++)
		for (int k = packed; k < 3; k++) /* packed implies VERSION_1 */
			for (int batch = 0; batch < 2; batch++) {
				struct rf_cfg cfg;
				struct rf f;

				if (packed)
					rf_cfg_init_packed(&cfg, RF_COARSE, 256);
				else
					rf_cfg_init(&cfg, RF_COARSE);
				cfg.features = feats[k];
				cfg.batch_threshold = batch ? VL_BATCH_THRESHOLD_DEFAULT : 0;
				rf_setup(&f, &cfg);
				scn_rx_hdr_recycled(&f);
				rf_teardown(&f);
			}
}

/* ---- limits ----------------------------------------------------------------------------- */

/* A packet longer than VL_PKT_MAX_LEN is dropped even where it would fit; exactly
 * VL_PKT_MAX_LEN is delivered. Nothing of the dropped one is consumed or published. */
static void scn_pkt_over_max(struct rf *f)
{
	struct rxb b[1] = { post_buf(f, f->hdr_len + VL_PKT_MAX_LEN + 100) };
	const uint32_t lens[2] = { VL_PKT_MAX_LEN + 1, VL_PKT_MAX_LEN };
	const uint8_t want[2] = { VL_RX_DROPPED_TOO_BIG, VL_RX_DELIVERED };

	enqueue_lens(f, lens, 2, 2, want);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_TOO_BIG), 1);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_RX_TOO_BIG), 0);
	const uint16_t e[1] = { b[0].head };

	expect_rx_packet(f, b, 1, e, 1, VL_PKT_MAX_LEN, 0x81, NULL);
	rf_expect_no_used(&f->rx);
	assert_int_equal(vl_vq_stats(f->rx.q)->chains, 1);
	assert_int_equal(vl_vq_stats(f->rx.q)->bytes, VL_PKT_MAX_LEN);
}

/* Mergeable: a packet that would need more than VL_CHAIN_MAX_PIECES pieces is dropped (the
 * buffers are fine and stay); exactly VL_CHAIN_MAX_PIECES pieces is delivered. Buffers are
 * indirect tables of 256 four-byte entries (256 pieces, 1024 bytes each). */
static void scn_mrg_too_many_pieces(struct rf *f)
{
	struct rxb b[5];
	struct rf_desc e[256];

	for (int k = 0; k < 5; k++) {
		uint64_t t = rf_alloc(f, 256 * 16);

		b[k].gpa = rf_alloc(f, 1024);
		b[k].cap = 1024;
		rf_fill(f, b[k].gpa, 0xA5, 1024);
		for (uint32_t i = 0; i < 256; i++)
			e[i] = (struct rf_desc){ b[k].gpa + 4 * i, 4, VL_DESC_F_WRITE };
		rf_write_table(f, t, e, 256);
		b[k].head = rf_post_indirect(&f->rx, t, 256 * 16);
	}
	/* 4500 + 12 needs 5 buffers = 1280 pieces; 4084 + 12 = 4096 needs exactly 4 = 1024. */
	const uint32_t lens[2] = { 4500, 4096 - f->hdr_len };
	const uint8_t want[2] = { VL_RX_DROPPED_TOO_MANY_PIECES, VL_RX_DELIVERED };

	enqueue_lens(f, lens, 2, 2, want);
	assert_int_equal(rf_drops(&f->rx, VL_DROP_RX_TOO_MANY_PIECES), 1);
	assert_int_equal(rf_drops_other(&f->rx, VL_DROP_RX_TOO_MANY_PIECES), 0);
	const uint16_t e4[4] = { b[0].head, b[1].head, b[2].head, b[3].head };

	expect_rx_packet(f, b, 5, e4, 4, 4096 - f->hdr_len, 0x81, NULL);
	rf_expect_no_used(&f->rx);

	const uint32_t small[1] = { 100 };
	const uint8_t ok[1] = { VL_RX_DELIVERED };

	enqueue_lens(f, small, 1, 1, ok);
	const uint16_t e5[1] = { b[4].head };

	expect_rx_packet(f, b, 5, e5, 1, 100, 0x80, NULL);
	rf_expect_no_used(&f->rx);
}

/* ---- statistics ------------------------------------------------------------------------- */

/* The edges of the size classes (vl_vq.h: <64, 64, 65-127, 128-255, 256-511, 512-1023,
 * 1024-1518, >1518 bytes), each with the class the header comment gives it. */
static const struct {
	uint32_t len, bin;
} SIZE_EDGES[] = {
	{ 1, 0 },      { 63, 0 },     { 64, 1 },     { 65, 2 },     { 127, 2 },   { 128, 3 },
	{ 255, 3 },    { 256, 4 },    { 511, 4 },    { 512, 5 },    { 1023, 5 },  { 1024, 6 },
	{ 1518, 6 },   { 1519, 7 },   { 9000, 7 },   { VL_PKT_MAX_LEN, 7 },
};

/* Only class `bin` moved, by one. */
static void expect_one_in_bin(const uint64_t *before, const uint64_t *after, uint32_t bin,
			      uint32_t len, const char *side)
{
	for (uint32_t b = 0; b < VL_SIZE_BINS; b++)
		if (after[b] - before[b] != (b == bin ? 1u : 0u))
			fail_msg("%s packet of %u bytes: class %u moved by %llu (its class is %u)",
				 side, len, b, (unsigned long long)(after[b] - before[b]), bin);
}

/* One packet of each edge length each way lands in its class. */
static void scn_size_classes(struct rf *f)
{
	for (uint32_t i = 0; i < sizeof(SIZE_EDGES) / sizeof(SIZE_EDGES[0]); i++) {
		const uint32_t len = SIZE_EDGES[i].len, bin = SIZE_EDGES[i].bin;
		uint64_t before[VL_SIZE_BINS];

		memcpy(before, vl_vq_stats(f->tx.q)->size_bins, sizeof(before));
		struct rf_good g = rf_post_good(f, &f->tx, len, (uint8_t)i);

		rf_burst_expect_good(f, &f->tx, &g);
		rf_free_good(f, &g);
		expect_one_in_bin(before, vl_vq_stats(f->tx.q)->size_bins, bin, len, "dequeued");

		memcpy(before, vl_vq_stats(f->rx.q)->size_bins, sizeof(before));
		(void)post_buf(f, f->hdr_len + len);
		const uint8_t want[1] = { VL_RX_DELIVERED };

		enqueue_lens(f, &len, 1, 1, want);
		expect_one_in_bin(before, vl_vq_stats(f->rx.q)->size_bins, bin, len, "enqueued");
	}
}

/* ---- memory table -------------------------------------------------------------------- */

/* The memory table shrinks between bursts (vhost-user SET_MEM_TABLE, vl_vq_set_mem) to one
 * without the region the queue's last buffer lived in. Translation starts from the range the
 * last buffer was found in; that range index belonged to the old table and lies past the end
 * of the new one. A chain into the memory that went is dropped as unmapped (and returned),
 * and a chain into memory the new table kept is served. */
static void scn_mem_table_shrinks(struct rf *f)
{
	uint32_t n = 0;
	const struct vl_mem_region *r = lab_gmem_regions(f->g, &n);
	const uint32_t buf = f->hdr_len + 64;
	struct rf_good b = rf_post_good(f, &f->tx, 64, 0x11); /* early in RAM */

	rf_burst_expect_good(f, &f->tx, &b);
	const uint64_t filler = rf_alloc(f, 256 * 1024); /* a is 64 pages further up */
	struct rf_good a = rf_post_good(f, &f->tx, 64, 0x22);

	rf_burst_expect_good(f, &f->tx, &a);
	rf_expect_used(&f->tx, b.head, 0);
	rf_expect_used(&f->tx, a.head, 0);

	/* The new table: the ring area (region 0) and the pages b's buffer is on. */
	struct vl_mem_region keep[3];
	uint32_t k = 0;

	keep[k++] = r[0];
	for (uint32_t i = 1; i < n; i++)
		if (r[i].gpa < b.gpa + buf && b.gpa < r[i].gpa + r[i].size) {
			assert_true(k < 3);
			keep[k++] = r[i];
		}
	for (uint32_t i = 0; i < k; i++)
		assert_false(keep[i].gpa < a.gpa + buf && a.gpa < keep[i].gpa + keep[i].size);
	int err = 0;
	struct vl_mem *small = vl_mem_create(keep, k, &err);

	assert_non_null(small);
	assert_int_equal(vl_vq_set_mem(f->tx.q, small), VL_OK);

	/* a's bytes are still there in the guest, but no longer in the table. */
	const struct rf_desc da = { a.gpa, buf, 0 };
	const uint16_t head = rf_post_chain(&f->tx, &da, 1);
	struct vl_pkt *pkts[4];

	assert_int_equal(vl_net_dequeue(f->tx.q, f->pool, pkts, 4), 0);
	assert_int_equal(rf_drops(&f->tx, VL_DROP_UNMAPPED), 1);
	assert_int_equal(rf_drops_other(&f->tx, VL_DROP_UNMAPPED), 0);
	rf_expect_used(&f->tx, head, 0);

	const struct rf_desc db = { b.gpa, buf, 0 };

	b.head = rf_post_chain(&f->tx, &db, 1);
	rf_burst_expect_good(f, &f->tx, &b);
	rf_expect_used(&f->tx, b.head, 0);
	rf_expect_no_used(&f->tx);

	assert_int_equal(vl_vq_set_mem(f->tx.q, f->mem), VL_OK);
	vl_mem_destroy(small);
	rf_free_good(f, &a);
	rf_free_good(f, &b);
	lab_gmem_free(f->g, filler, 256 * 1024);
}

/* ---- offloads the driver did not negotiate ---------------------------------------------- */

/* Which offloads a driver with features feat takes on receive, worked out here from the
 * spec's feature rules (5.1.3.1, 5.1.6.4) for the rows below. */
static enum vl_drop rx_rule(uint64_t feat, const struct vl_offload *ol)
{
	const bool csum = feat & VL_FEATURE(VL_F_NET_GUEST_CSUM);
	const uint8_t t = ol->gso_type & 0x7f;
	bool ok;

	if ((ol->flags & 3) && !csum)
		return VL_DROP_RX_CSUM_NOT_NEGOTIATED;
	if (ol->flags & ~3)
		return VL_DROP_RX_FLAGS_UNKNOWN;
	if (ol->gso_type == 0)
		return VL_DROP_NONE;
	ok = (t == VL_NET_HDR_GSO_TCPV4 && (feat & VL_FEATURE(VL_F_NET_GUEST_TSO4))) ||
	     (t == VL_NET_HDR_GSO_TCPV6 && (feat & VL_FEATURE(VL_F_NET_GUEST_TSO6))) ||
	     (t == VL_NET_HDR_GSO_UDP && (feat & VL_FEATURE(VL_F_NET_GUEST_UFO))) ||
	     (t == VL_NET_HDR_GSO_UDP_L4 && (feat & VL_FEATURE(VL_F_NET_GUEST_USO4)) &&
	      (feat & VL_FEATURE(VL_F_NET_GUEST_USO6)));
	if (ok && (ol->gso_type & VL_NET_HDR_GSO_ECN))
		ok = feat & VL_FEATURE(VL_F_NET_GUEST_ECN);
	if (!ok)
		return VL_DROP_RX_GSO_NOT_NEGOTIATED;
	return ol->gso_size ? VL_DROP_NONE : VL_DROP_RX_GSO_NO_SEGMENT_SIZE;
}

/* Every packet whose offloads the driver did not negotiate is dropped under its reason,
 * status VL_RX_DROPPED_OFFLOAD, nothing of it published; the others are delivered with
 * their header as it is. vl_net_rx_offload_check says the same before any enqueue. One body
 * over feature sets from none to every GUEST_* offload. */
static void scn_rx_offload(struct rf *f)
{
	static const struct vl_offload rows[] = {
		{0},
		{ .flags = VL_NET_HDR_F_NEEDS_CSUM, .csum_start = 34, .csum_offset = 16 },
		{ .flags = VL_NET_HDR_F_DATA_VALID },
		{ .flags = 4 },                     /* RSC_INFO: needs GUEST_RSC, never offered */
		{ .flags = VL_NET_HDR_F_NEEDS_CSUM | 0x80, .csum_start = 34, .csum_offset = 16 },
		{ .flags = 1, .gso_type = VL_NET_HDR_GSO_TCPV4, .gso_size = 1448, .csum_start = 34,
		  .csum_offset = 16, .hdr_len = 54 },
		{ .flags = 1, .gso_type = VL_NET_HDR_GSO_TCPV4 | VL_NET_HDR_GSO_ECN,
		  .gso_size = 1448 },
		{ .flags = 1, .gso_type = VL_NET_HDR_GSO_TCPV6, .gso_size = 1440 },
		{ .flags = 1, .gso_type = VL_NET_HDR_GSO_UDP, .gso_size = 1400 },
		{ .flags = 1, .gso_type = VL_NET_HDR_GSO_UDP_L4, .gso_size = 1400 },
		{ .flags = 1, .gso_type = VL_NET_HDR_GSO_TCPV4, .gso_size = 0 },
		{ .gso_type = VL_NET_HDR_GSO_ECN, .gso_size = 10 }, /* ECN without a type */
		{ .gso_type = 2, .gso_size = 10 },                  /* not a type */
		{ .gso_type = VL_NET_HDR_GSO_TCPV6, .gso_size = 1440 }, /* GSO, flags 0 */
	};
	const uint32_t n = sizeof(rows) / sizeof(rows[0]);
	const uint64_t feat = f->cfg.features;
	struct rxb bufs[32];
	struct vl_pkt *pkts[32];
	uint8_t st[32], want_st[32];
	uint64_t want_drops[VL_DROP__COUNT] = {0};
	uint16_t expect_heads[32];
	uint32_t nexp = 0;

	for (uint32_t i = 0; i < n; i++)
		bufs[i] = post_buf(f, 2048);
	for (uint32_t i = 0; i < n; i++) {
		const enum vl_drop why = rx_rule(feat, &rows[i]);

		pkts[i] = make_pkt_ol(f, 300, (uint8_t)(0x40 + i), &rows[i]);
		assert_int_equal(vl_net_rx_offload_check(f->rx.q, &rows[i]), why);
		want_st[i] = why == VL_DROP_NONE ? VL_RX_DELIVERED : VL_RX_DROPPED_OFFLOAD;
		want_drops[why]++;
		if (why == VL_DROP_NONE) {
			expect_heads[nexp] = bufs[nexp].head;
			nexp++;
		}
	}
	assert_int_equal(vl_net_enqueue(f->rx.q, pkts, (uint16_t)n, st), n);
	expect_status(st, want_st, n);
	for (uint32_t i = 0, k = 0; i < n; i++) {
		if (want_st[i] != VL_RX_DELIVERED)
			continue;
		/* Refused packets took no buffer: the k-th delivered one is in the k-th. */
		expect_rx_packet(f, bufs, n, &expect_heads[k], 1, 300, (uint8_t)(0x40 + i),
				 &rows[i]);
		k++;
	}
	rf_expect_no_used(&f->rx);
	for (uint32_t k = 1; k < VL_DROP__COUNT; k++)
		assert_int_equal(rf_drops(&f->rx, k), want_drops[k]);
	assert_int_equal(vl_vq_stats(f->rx.q)->packets, nexp);
	vl_pkt_free_bulk(pkts, n);
}

/* ---- vl_sw_fit: a 64 KiB GSO frame made to fit whatever the driver took ---------------- */

/* The L4 checksum of a flat frame is right when the sum with the pseudo-header folds to
 * 0xffff (complemented: 0). */
static void assert_l4_sum_ok(const uint8_t *fr, uint32_t len, const struct lab_frame_layout *lay,
			     bool ipv6, bool udp)
{
	const uint32_t l4len = len - lay->l4;
	const uint8_t pz[8] = {(uint8_t)(l4len >> 24), (uint8_t)(l4len >> 16), (uint8_t)(l4len >> 8),
			       (uint8_t)l4len, 0, 0, 0, (uint8_t)(udp ? 17 : 6)};
	uint32_t sum = ipv6 ? lab_csum_add(0, fr + lay->l3 + 8, 32)
			    : lab_csum_add(0, fr + lay->l3 + 12, 8);

	sum = lab_csum_add(sum, pz, 8);
	sum = lab_csum_add(sum, fr + lay->l4, l4len);
	assert_int_equal(lab_csum_fold(sum), 0);
}

/* A 64 KiB TCPv4 GSO frame (partial checksum) goes to a driver with the row's features
 * through vl_sw_fit and vl_net_enqueue over 4 KiB mergeable buffers: with GUEST_TSO4 as it
 * is (one packet over 16 buffers, its header's GSO fields intact); without, as frames of at
 * most gso_size payload, each in a buffer of its own, each checksum right, and their
 * payloads in order the original's. A frame with only NEEDS_CSUM to a driver without
 * GUEST_CSUM arrives completed, flags 0. Nothing is refused by the enqueue. */
static void scn_rx_fit(struct rf *f)
{
	enum { BUF = 4096, NBUF = 80, PAY = 65000 - 54, MSS = 1448 };
	static uint8_t fr[65536], got[65536 + 12];
	const struct lab_frame_spec sp = {.seed = 5, .payload = PAY, .tcp_flags = 0x19,
					  .seq = 0xfffff000u};
	struct lab_frame_layout lay;
	const uint32_t len = lab_frame_build(&sp, true, fr, sizeof(fr), &lay);
	const uint64_t feat = f->cfg.features;
	const bool tso = feat & VL_FEATURE(VL_F_NET_GUEST_TSO4);
	const bool csum = feat & VL_FEATURE(VL_F_NET_GUEST_CSUM);
	struct vl_pool *pool = vl_pool_create(256, 2048);
	struct rxb bufs[NBUF];
	struct vl_pkt *out[64];
	uint16_t n = 0;
	uint8_t st[64];

	assert_non_null(pool);
	for (uint32_t i = 0; i < NBUF; i++)
		bufs[i] = post_buf(f, BUF);
	struct vl_pkt *big = vl_pkt_alloc_len(pool, len);

	assert_non_null(big);
	vl_pkt_write(big, 0, fr, len);
	lab_frame_offload(&sp, &lay, MSS, false, &big->ol);

	const enum vl_sw_result r = vl_sw_fit(f->rx.q, big, pool, out, 64, &n);

	if (tso) {
		assert_int_equal(r, VL_SW_NOT_NEEDED);
		assert_int_equal(n, 0);
		assert_int_equal(vl_net_enqueue(f->rx.q, &big, 1, st), 1);
		assert_int_equal(st[0], VL_RX_DELIVERED);
		const uint32_t total = f->hdr_len + len, nb = (total + BUF - 1) / BUF;

		for (uint32_t i = 0; i < nb; i++) {
			uint32_t used = i + 1 < nb ? BUF : total - (nb - 1) * BUF;

			rf_expect_used(&f->rx, bufs[i].head, used);
			rf_read(f, bufs[i].gpa, got + i * BUF, used);
		}
		uint8_t want[12];

		expected_hdr(f, &big->ol, (uint16_t)nb, want);
		assert_memory_equal(got, want, f->hdr_len);
		assert_memory_equal(got + f->hdr_len, fr, len);
	} else {
		const uint32_t frames = (PAY + MSS - 1) / MSS;
		uint32_t off = 0;

		assert_int_equal(r, VL_SW_OK);
		assert_int_equal(n, frames);
		assert_int_equal(vl_net_enqueue(f->rx.q, out, n, st), n);
		for (uint32_t i = 0; i < n; i++) {
			const uint32_t flen = out[i]->pkt_len, pay = flen - lay.hdr_len;

			assert_int_equal(st[i], VL_RX_DELIVERED);
			assert_true(pay <= MSS && pay > 0);
			rf_expect_used(&f->rx, bufs[i].head, f->hdr_len + flen);
			rf_read(f, bufs[i].gpa, got, f->hdr_len + flen);
			/* Segments leave nothing to offload: flags and GSO type 0. */
			assert_int_equal(got[0], 0);
			assert_int_equal(got[1], 0);
			assert_l4_sum_ok(got + f->hdr_len, flen, &lay, false, false);
			assert_memory_equal(got + f->hdr_len + lay.hdr_len, fr + lay.hdr_len + off,
					    pay);
			off += pay;
		}
		assert_int_equal(off, PAY);
		vl_pkt_free_bulk(out, n);
	}
	/* The checksum alone: completed for a driver without GUEST_CSUM, left as it is with. */
	struct vl_pkt *small;
	const struct lab_frame_spec sp2 = {.seed = 6, .payload = 300};

	assert_int_not_equal(lab_frame_build(&sp2, true, fr, sizeof(fr), &lay), 0);
	small = vl_pkt_alloc_len(pool, lay.len);
	assert_non_null(small);
	vl_pkt_write(small, 0, fr, lay.len);
	lab_frame_offload(&sp2, &lay, 0, false, &small->ol);
	assert_int_equal(vl_sw_fit(f->rx.q, small, pool, out, 64, &n),
			 csum ? VL_SW_NOT_NEEDED : VL_SW_OK);
	if (!csum) {
		assert_int_equal(n, 1);
		assert_int_equal(out[0]->ol.flags, 0);
		assert_int_equal(vl_pkt_read(out[0], 0, got, lay.len), lay.len);
		assert_l4_sum_ok(got, lay.len, &lay, false, false);
		vl_pkt_free(out[0]);
	}
	vl_pkt_free(small);
	vl_pkt_free(big);
	assert_int_equal(vl_pool_destroy(pool), 0);
}

/* ---- the runs (rf_run_cases, ring_fixture.h) ---------------------------------------- */

/* A split run of scn over gran RAM with exactly the features feats (the defaults' bits not
 * in feats are taken off) and qs entries. */
#define NET(nm, scn, gran, feats, qs)                                                        \
	{ .name = nm, .fn = scn, .layout = VL_LAYOUT_SPLIT, .granularity = gran,             \
	  .features = feats, .features_off = ~(uint64_t)(feats), .qsize = qs }

#define ALL_GUEST_OL                                                                         \
	(VL_FEATURE(VL_F_NET_GUEST_CSUM) | VL_FEATURE(VL_F_NET_GUEST_TSO4) |                 \
	 VL_FEATURE(VL_F_NET_GUEST_TSO6) | VL_FEATURE(VL_F_NET_GUEST_ECN) |                  \
	 VL_FEATURE(VL_F_NET_GUEST_UFO) | VL_FEATURE(VL_F_NET_GUEST_USO4) |                  \
	 VL_FEATURE(VL_F_NET_GUEST_USO6))

static const struct rf_case cases[] = {
	NET("rx_fit_none", scn_rx_fit, RF_COARSE, F_MRG & ~F_RX_OL, 256),
	NET("rx_fit_csum", scn_rx_fit, RF_4K, F_MRG & ~VL_FEATURE(VL_F_NET_GUEST_TSO4), 256),
	NET("rx_fit_tso4", scn_rx_fit, RF_4K, F_MRG, 256),
	{ .name = "rx_fit_tso4_packed", .fn = scn_rx_fit, .layout = VL_LAYOUT_PACKED,
	  .granularity = RF_4K, .features = F_MRG, .qsize = 256 },
	{ .name = "rx_fit_none_packed", .fn = scn_rx_fit, .layout = VL_LAYOUT_PACKED,
	  .granularity = RF_COARSE, .features = F_MRG, .features_off = F_RX_OL, .qsize = 256 },
	NET("rx_offload_none", scn_rx_offload, RF_COARSE, F_MRG & ~F_RX_OL, 256),
	NET("rx_offload_csum", scn_rx_offload, RF_COARSE,
	    F_MODERN & ~VL_FEATURE(VL_F_NET_GUEST_TSO4), 256),
	NET("rx_offload_tso4", scn_rx_offload, RF_4K, F_MRG, 256),
	NET("rx_offload_uso4_only", scn_rx_offload, RF_COARSE,
	    F_MRG | VL_FEATURE(VL_F_NET_GUEST_USO4) | VL_FEATURE(VL_F_NET_GUEST_ECN), 256),
	NET("rx_offload_all", scn_rx_offload, RF_4K, F_MRG | ALL_GUEST_OL, 256),
	NET("nonmrg_fits_legacy_coarse", scn_nonmrg_fits, RF_COARSE, F_LEGACY, 256),
	NET("nonmrg_fits_legacy_4k", scn_nonmrg_fits, RF_4K, F_LEGACY, 256),
	NET("nonmrg_fits_modern_coarse", scn_nonmrg_fits, RF_COARSE, F_MODERN, 256),
	NET("nonmrg_fits_modern_4k", scn_nonmrg_fits, RF_4K, F_MODERN, 256),
	NET("nonmrg_too_big_legacy", scn_nonmrg_too_big, RF_4K, F_LEGACY, 256),
	NET("nonmrg_too_big_modern", scn_nonmrg_too_big, RF_COARSE, F_MODERN, 256),
	NET("mrg_spread_coarse", scn_mrg_spread, RF_COARSE, F_MRG, 256),
	NET("mrg_spread_4k", scn_mrg_spread, RF_4K, F_MRG, 256),
	NET("mrg_no_room_coarse", scn_mrg_no_room, RF_COARSE, F_MRG, 256),
	NET("mrg_no_room_4k", scn_mrg_no_room, RF_4K, F_MRG, 256),
	NET("mrg_full_ring_too_big_coarse", scn_mrg_full_ring_too_big, RF_COARSE, F_MRG, 16),
	NET("mrg_full_ring_too_big_4k", scn_mrg_full_ring_too_big, RF_4K, F_MRG, 16),
	NET("rx_buf_too_small_nonmrg", scn_rx_buf_too_small, RF_COARSE, F_MODERN, 256),
	NET("rx_buf_too_small_legacy", scn_rx_buf_too_small, RF_4K, F_LEGACY, 256),
	NET("rx_buf_too_small_mrg", scn_rx_buf_too_small, RF_4K, F_MRG, 256),
	NET("rx_readonly_nonmrg", scn_rx_readonly, RF_COARSE, F_MODERN, 256),
	NET("rx_readonly_mrg", scn_rx_readonly, RF_4K, F_MRG, 256),
	NET("mrg_bad_between_coarse", scn_mrg_bad_between, RF_COARSE, F_MRG, 256),
	NET("mrg_bad_between_4k", scn_mrg_bad_between, RF_4K, F_MRG, 256),
	NET("rx_header_pieces_legacy", scn_rx_header_pieces, RF_COARSE, F_LEGACY, 256),
	NET("rx_header_pieces_modern", scn_rx_header_pieces, RF_4K, F_MODERN, 256),
	NET("rx_header_pieces_mrg", scn_rx_header_pieces, RF_4K, F_MRG, 256),
	NET("pkt_over_max_nonmrg", scn_pkt_over_max, RF_4K, F_MODERN, 256),
	NET("pkt_over_max_mrg", scn_pkt_over_max, RF_COARSE, F_MRG, 256),
	NET("mrg_too_many_pieces_coarse", scn_mrg_too_many_pieces, RF_COARSE, F_MRG, 256),
	NET("mrg_too_many_pieces_4k", scn_mrg_too_many_pieces, RF_4K, F_MRG, 256),
	RF_CASE(size_classes, "_split", VL_LAYOUT_SPLIT, RF_COARSE, 0),
	RF_CASE(size_classes, "_packed", VL_LAYOUT_PACKED, RF_COARSE, 0),
	RF_CASE(mem_table_shrinks, "_split", VL_LAYOUT_SPLIT, RF_4K, 0),
	RF_CASE(mem_table_shrinks, "_packed", VL_LAYOUT_PACKED, RF_4K, 0),
};

int main(void)
{
	/* Tests that set up their own fixtures. */
	const struct CMUnitTest more[] = {
		cmocka_unit_test(test_batch_threshold_invisible),
		cmocka_unit_test(test_rx_hdr_recycled),
	};

	return rf_run_cases("net", RF_LIST(cases), RF_LIST(more));
}

/* SPDX-License-Identifier: MIT */
/* The reference model (sim/model.h) on its own, driven by the simulated driver's rings on
 * both layouts. Every expectation here is worked out by hand from the virtio spec and the
 * documented policies (byte positions, used lengths, num_buffers), not taken from the core:
 * the model is what the differential fuzz target judges the core by. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "model.h"
#include "vhostlab/vhostlab.h"
#include "vring.h"

#define POISON 0xA5u

struct mt {
	enum vl_layout L;
	uint32_t qsize, hdr_len;
	struct lab_gmem *g;
	struct lab_ring tx, rx;
	struct lab_model *mtx, *mrx;
	struct vl_pool *pool;
};

/* Two rings over fresh guest memory (4 KiB regions) and a model queue on each. Split
 * indices start just below the 16-bit wrap, packed positions at the ring's last slot, so
 * every test crosses a wrap. features: besides VERSION_1 and INDIRECT_DESC, always there. */
static void mt_setup(struct mt *t, enum vl_layout L, uint32_t qsize, uint64_t features,
		     uint64_t ram)
{
	char msg[200] = "";
	uint64_t area = lab_ring_area_bytes(L, qsize);
	struct lab_gmem_config gc = {.ram_size = ram, .ring_area_size = 2 * area,
				     .granularity = LAB_PAGE_SIZE, .seed = 11};
	struct lab_model_config mc;
	uint16_t start = L == VL_LAYOUT_SPLIT ? 65534 : (uint16_t)(qsize - 1);

	memset(t, 0, sizeof(*t));
	t->L = L;
	t->qsize = qsize;
	t->g = lab_gmem_create(&gc, msg, sizeof(msg));
	assert_non_null(t->g);
	uint64_t ring = lab_gmem_ring_gpa(t->g);

	assert_int_equal(lab_ring_init(&t->tx, L, t->g, ring, qsize, start, false, false), 0);
	assert_int_equal(lab_ring_init(&t->rx, L, t->g, ring + area, qsize, start, false, false),
			 0);
	mc.gmem = t->g;
	vl_vq_config_init(&mc.vq, L, qsize);
	mc.vq.features = features | VL_FEATURE(VL_F_VERSION_1) |
			 VL_FEATURE(VL_F_RING_INDIRECT_DESC) |
			 (L == VL_LAYOUT_PACKED ? VL_FEATURE(VL_F_RING_PACKED) : 0);
	lab_ring_device_config(&t->tx, &mc.vq);
	t->mtx = lab_model_create(&mc);
	lab_ring_device_config(&t->rx, &mc.vq);
	t->mrx = lab_model_create(&mc);
	assert_non_null(t->mtx);
	assert_non_null(t->mrx);
	t->hdr_len = 12; /* VERSION_1 */
	t->pool = vl_pool_create(64, 2048);
	assert_non_null(t->pool);
}

static void mt_teardown(struct mt *t)
{
	lab_model_destroy(t->mtx);
	lab_model_destroy(t->mrx);
	lab_ring_fini(&t->tx);
	lab_ring_fini(&t->rx);
	assert_int_equal(vl_pool_destroy(t->pool), 0);
	lab_gmem_destroy(t->g);
}

static uint8_t *gp(struct mt *t, uint64_t gpa, uint64_t len)
{
	uint8_t *p = lab_gmem_guest_ptr(t->g, gpa, len);

	assert_non_null(p);
	return p;
}

static uint64_t galloc(struct mt *t, uint64_t len, uint64_t align)
{
	uint64_t gpa = lab_gmem_alloc(t->g, len, align);

	assert_true(gpa != 0);
	return gpa;
}

static uint8_t pat(uint32_t i, uint8_t seed)
{
	return (uint8_t)(i * 7u + seed);
}

static struct vl_pkt *mkpkt(struct mt *t, uint32_t len, uint8_t seed)
{
	uint8_t buf[2048];
	struct vl_pkt *p = vl_pkt_alloc_len(t->pool, len);

	assert_non_null(p);
	assert_true(len <= sizeof(buf));
	for (uint32_t i = 0; i < len; i++)
		buf[i] = pat(i, seed);
	assert_int_equal(vl_pkt_write(p, 0, buf, len), len);
	return p;
}

static void expect_used(struct mt *t, struct lab_ring *r, int id, uint32_t len)
{
	uint32_t uid, ulen;

	assert_int_equal(lab_ring_pop_used(r, &uid, &ulen), 1);
	assert_int_equal(uid, id);
	assert_int_equal(ulen, len);
	(void)t;
}

static void expect_no_used(struct lab_ring *r)
{
	uint32_t uid, ulen;

	assert_int_equal(lab_ring_pop_used(r, &uid, &ulen), 0);
}

/* ---- TX ------------------------------------------------------------------------------ */

/* A TX header: NEEDS_CSUM, GSO TCPv4 with ECN, hdr_len 14, gso_size 1400, csum at 4 + 6;
 * the num_buffers bytes are garbage on purpose (the device ignores them on transmit). */
/* Checksum at 4 + 6 and GSO fields that pass through with no GSO type (the packet is a byte
 * pattern, not a frame a GSO type could describe). */
static const uint8_t tx_hdr[12] = {0x01, 0x00, 14, 0, 0x78, 0x05, 4, 0, 6, 0, 0xEE, 0xEE};
/* What tx_hdr needs negotiated: TCPv4 segmentation and ECN. */
#define TX_HDR_FEATURES (VL_FEATURE(VL_F_NET_HOST_TSO4) | VL_FEATURE(VL_F_NET_HOST_ECN))

/* Header over three descriptors (3, 4, 5 bytes, each its own allocation), then 50 payload
 * bytes over two descriptors, the second straddling a 4 KiB region boundary. Direct, or
 * through an indirect table (split: entries shuffled, linked by next; packed: consecutive). */
static int post_tx(struct mt *t, bool indirect, uint8_t seed)
{
	static const uint32_t lens[5] = {3, 4, 5, 20, 30};
	struct lab_pdesc e[5];
	uint32_t hoff = 0, poff = 0;
	uint64_t cross = galloc(t, 2 * LAB_PAGE_SIZE, LAB_PAGE_SIZE) + LAB_PAGE_SIZE - 10;

	for (int i = 0; i < 5; i++) {
		uint64_t gpa = i == 4 ? cross : galloc(t, lens[i], 64);
		uint8_t *p = gp(t, gpa, lens[i]);

		for (uint32_t k = 0; k < lens[i]; k++)
			p[k] = i < 3 ? tx_hdr[hoff++] : pat(poff++, seed);
		e[i] = (struct lab_pdesc){gpa, lens[i], 0};
	}
	if (!indirect)
		return lab_ring_post(&t->tx, e, 5);
	uint64_t table = galloc(t, 5 * 16, 16);
	uint8_t *tp = gp(t, table, 5 * 16);

	if (t->L == VL_LAYOUT_PACKED) {
		for (int i = 0; i < 5; i++) {
			struct vl_packed_desc d = {e[i].addr, e[i].len, 0xFFFF, 0};

			memcpy(tp + 16 * i, &d, 16);
		}
	} else {
		/* Chain order 0 -> 3 -> 1 -> 4 -> 2 in the table. */
		static const uint16_t slot[5] = {0, 3, 1, 4, 2};

		for (int i = 0; i < 5; i++) {
			struct vl_split_desc d = {e[i].addr, e[i].len,
						  (uint16_t)(i < 4 ? VL_DESC_F_NEXT : 0),
						  (uint16_t)(i < 4 ? slot[i + 1] : 0)};

			memcpy(tp + 16 * slot[i], &d, 16);
		}
	}
	struct lab_pdesc ind = {table, 5 * 16, VL_DESC_F_INDIRECT};

	return lab_ring_post(&t->tx, &ind, 1);
}

static void check_tx_pkt(const struct lab_model_pkt *p, uint8_t seed)
{
	assert_int_equal(p->len, 50);
	assert_int_equal(p->ol.flags, 0x01);
	assert_int_equal(p->ol.gso_type, 0);
	assert_int_equal(p->ol.hdr_len, 14);
	assert_int_equal(p->ol.gso_size, 1400);
	assert_int_equal(p->ol.csum_start, 4);
	assert_int_equal(p->ol.csum_offset, 6);
	for (uint32_t i = 0; i < 50; i++)
		assert_int_equal(p->data[i], pat(i, seed));
}

static void test_tx_header_over_three_direct_and_indirect(enum vl_layout L)
{
	struct mt t;
	struct lab_model_pkt out[8];

	mt_setup(&t, L, 16, TX_HDR_FEATURES, 1 << 20);
	int a = post_tx(&t, false, 1), b = post_tx(&t, true, 2);

	assert_true(a >= 0 && b >= 0);
	lab_ring_publish(&t.tx);
	assert_int_equal(lab_model_dequeue(t.mtx, 8, out), 2);
	check_tx_pkt(&out[0], 1);
	check_tx_pkt(&out[1], 2);
	/* Both go back, in ring order, with length 0 (the device wrote nothing). */
	expect_used(&t, &t.tx, a, 0);
	expect_used(&t, &t.tx, b, 0);
	expect_no_used(&t.tx);
	const struct lab_model_stats *s = lab_model_stats(t.mtx);

	assert_int_equal(s->packets, 2);
	assert_int_equal(s->bytes, 100);
	assert_int_equal(s->chains, 2);
	assert_int_equal(lab_model_dequeue(t.mtx, 8, out), 0);
	mt_teardown(&t);
}

/* A device-writable descriptor in a TX chain: that chain comes back empty, counted as
 * `direction`; the good chain behind it is still dequeued. */
static void test_tx_bad_chain_dropped(enum vl_layout L)
{
	struct mt t;
	struct lab_model_pkt out[4];

	mt_setup(&t, L, 8, TX_HDR_FEATURES, 1 << 20);
	uint64_t buf = galloc(&t, 64, 64);
	struct lab_pdesc bad[2] = {{buf, 12, 0}, {buf + 12, 20, VL_DESC_F_WRITE}};
	int a = lab_ring_post(&t.tx, bad, 2), b = post_tx(&t, false, 3);

	lab_ring_publish(&t.tx);
	assert_int_equal(lab_model_dequeue(t.mtx, 4, out), 1);
	check_tx_pkt(&out[0], 3);
	expect_used(&t, &t.tx, a, 0);
	expect_used(&t, &t.tx, b, 0);
	assert_int_equal(lab_model_stats(t.mtx)->drops[VL_DROP_DIRECTION], 1);
	assert_int_equal(lab_model_broken(t.mtx), VL_DROP_NONE);
	mt_teardown(&t);
}

/* ---- RX ------------------------------------------------------------------------------ */

/* An RX buffer of `cap` poisoned bytes in one device-writable descriptor. */
static int post_rx(struct mt *t, uint32_t cap, uint64_t *gpa)
{
	*gpa = galloc(t, cap, 64);
	memset(gp(t, *gpa, cap), POISON, cap);
	struct lab_pdesc e = {*gpa, cap, VL_DESC_F_WRITE};

	return lab_ring_post(&t->rx, &e, 1);
}

static struct vl_pkt *mkpkt_ol(struct mt *t, uint32_t len, uint8_t seed)
{
	struct vl_pkt *p = mkpkt(t, len, seed);

	p->ol = (struct vl_offload){.flags = VL_NET_HDR_F_DATA_VALID, .gso_type = 4,
				    .hdr_len = 0x1234, .gso_size = 0x0506, .csum_start = 7,
				    .csum_offset = 0x0809};
	return p;
}

static void test_rx_mergeable_three_buffers(enum vl_layout L)
{
	struct mt t;
	uint64_t g[3];
	int id[3];
	uint8_t st = 0xEE;

	/* The driver takes the packet's DATA_VALID and TCPv6 GSO. */
	mt_setup(&t, L, 8,
		 VL_FEATURE(VL_F_NET_MRG_RXBUF) | VL_FEATURE(VL_F_NET_GUEST_CSUM) |
			 VL_FEATURE(VL_F_NET_GUEST_TSO6),
		 1 << 20);
	for (int i = 0; i < 3; i++)
		id[i] = post_rx(&t, 100, &g[i]);
	lab_ring_publish(&t.rx);
	struct vl_pkt *p = mkpkt_ol(&t, 250, 9);

	assert_int_equal(lab_model_enqueue(t.mrx, &p, 1, &st), 1);
	assert_int_equal(st, VL_RX_DELIVERED);
	/* 12 + 250 = 262 bytes: 100, 100, 62. */
	expect_used(&t, &t.rx, id[0], 100);
	expect_used(&t, &t.rx, id[1], 100);
	expect_used(&t, &t.rx, id[2], 62);
	expect_no_used(&t.rx);
	const uint8_t want_hdr[12] = {0x02, 4, 0x34, 0x12, 0x06, 0x05, 7, 0, 0x09, 0x08, 3, 0};
	const uint8_t *b0 = gp(&t, g[0], 100), *b1 = gp(&t, g[1], 100), *b2 = gp(&t, g[2], 100);

	assert_memory_equal(b0, want_hdr, 12);
	for (uint32_t i = 0; i < 88; i++)
		assert_int_equal(b0[12 + i], pat(i, 9));
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(b1[i], pat(88 + i, 9));
	for (uint32_t i = 0; i < 62; i++)
		assert_int_equal(b2[i], pat(188 + i, 9));
	for (uint32_t i = 62; i < 100; i++)
		assert_int_equal(b2[i], POISON);
	assert_int_equal(lab_model_stats(t.mrx)->packets, 1);
	assert_int_equal(lab_model_stats(t.mrx)->bytes, 250);
	vl_pkt_free(p);
	mt_teardown(&t);
}

/* Without MRG_RXBUF one buffer must hold it all: a packet too big for the first buffer is
 * dropped and the buffer stays for the next packet, whose header says num_buffers 1. */
static void test_rx_nonmergeable_too_small_keeps_buffer(enum vl_layout L)
{
	struct mt t;
	uint64_t g;
	uint8_t st[2] = {0xEE, 0xEE};

	mt_setup(&t, L, 8, 0, 1 << 20);
	int id = post_rx(&t, 50, &g);

	lab_ring_publish(&t.rx);
	struct vl_pkt *p[2] = {mkpkt(&t, 100, 1), mkpkt(&t, 30, 2)};

	assert_int_equal(lab_model_enqueue(t.mrx, p, 1, st), 1);
	assert_int_equal(st[0], VL_RX_DROPPED_TOO_BIG);
	expect_no_used(&t.rx);
	assert_int_equal(lab_model_stats(t.mrx)->drops[VL_DROP_RX_TOO_BIG], 1);
	assert_int_equal(gp(&t, g, 1)[0], POISON);
	assert_int_equal(lab_model_enqueue(t.mrx, p + 1, 1, st + 1), 1);
	assert_int_equal(st[1], VL_RX_DELIVERED);
	expect_used(&t, &t.rx, id, 42);
	const uint8_t *b = gp(&t, g, 50);

	assert_int_equal(b[10], 1); /* num_buffers: 1 without MRG_RXBUF (spec 5.1.6.4) */
	assert_int_equal(b[11], 0);
	assert_int_equal(b[12], pat(0, 2));
	assert_int_equal(b[42], POISON);
	vl_pkt_free_bulk(p, 2);
	mt_teardown(&t);
}

/* Not enough buffers posted yet: the call stops before the packet, publishes nothing of it,
 * and the same packet goes through once more buffers are there. */
static void test_rx_not_enough_buffers_stops(enum vl_layout L)
{
	struct mt t;
	uint64_t g[6];
	int id[6];
	uint8_t st[3];

	mt_setup(&t, L, 16, VL_FEATURE(VL_F_NET_MRG_RXBUF), 1 << 20);
	id[0] = post_rx(&t, 100, &g[0]);
	id[1] = post_rx(&t, 100, &g[1]);
	lab_ring_publish(&t.rx);
	struct vl_pkt *p[3] = {mkpkt(&t, 50, 1), mkpkt(&t, 300, 2), mkpkt(&t, 20, 3)};

	assert_int_equal(lab_model_enqueue(t.mrx, p, 3, st), 1);
	assert_int_equal(st[0], VL_RX_DELIVERED);
	expect_used(&t, &t.rx, id[0], 62);
	expect_no_used(&t.rx);
	assert_int_equal(lab_model_stats(t.mrx)->rx_no_room, 1);
	assert_int_equal(gp(&t, g[1], 1)[0], POISON);
	for (int i = 2; i < 6; i++)
		id[i] = post_rx(&t, 100, &g[i]);
	lab_ring_publish(&t.rx);
	/* 312 bytes over buffers 1-4 (100, 100, 100, 12); 32 into buffer 5. */
	assert_int_equal(lab_model_enqueue(t.mrx, p + 1, 2, st + 1), 2);
	expect_used(&t, &t.rx, id[1], 100);
	expect_used(&t, &t.rx, id[2], 100);
	expect_used(&t, &t.rx, id[3], 100);
	expect_used(&t, &t.rx, id[4], 12);
	expect_used(&t, &t.rx, id[5], 32);
	assert_int_equal(gp(&t, g[1], 12)[10], 4); /* num_buffers */
	assert_int_equal(lab_model_stats(t.mrx)->packets, 3);
	vl_pkt_free_bulk(p, 3);
	mt_teardown(&t);
}

/* Mergeable, a ring full of buffers that still cannot hold the packet: waiting would stall
 * the queue, so the packet is dropped and the buffers stay. */
static void test_rx_mergeable_full_ring_drops(enum vl_layout L)
{
	struct mt t;
	uint64_t g[4];
	uint8_t st;

	mt_setup(&t, L, 4, VL_FEATURE(VL_F_NET_MRG_RXBUF), 1 << 20);
	for (int i = 0; i < 4; i++)
		post_rx(&t, 30, &g[i]);
	lab_ring_publish(&t.rx);
	struct vl_pkt *p = mkpkt(&t, 200, 1);

	assert_int_equal(lab_model_enqueue(t.mrx, &p, 1, &st), 1);
	assert_int_equal(st, VL_RX_DROPPED_TOO_BIG);
	expect_no_used(&t.rx);
	assert_int_equal(lab_model_stats(t.mrx)->chains, 0);
	vl_pkt_free(p);
	mt_teardown(&t);
}

/* Pieces: each RX chain is an indirect table of 256 two-byte buffers, every one straddling a
 * 4 KiB region boundary (2 pieces and 2 bytes each: 512 of both per chain). A 1100-byte
 * packet (1112 with the header) needs three chains: 1536 pieces > 1024, so it is dropped as
 * too many pieces and nothing is consumed; a 400-byte one fits the first chain alone. */
static void test_rx_too_many_pieces(enum vl_layout L)
{
	struct mt t;
	uint8_t st[2];
	int id[3];
	uint64_t first_buf = 0;

	mt_setup(&t, L, 256, VL_FEATURE(VL_F_NET_MRG_RXBUF), 4u << 20);
	for (int c = 0; c < 3; c++) {
		uint64_t table = galloc(&t, 256 * 16, 16);
		uint64_t pages = galloc(&t, 256 * LAB_PAGE_SIZE, LAB_PAGE_SIZE);
		uint8_t *tp = gp(&t, table, 256 * 16);

		for (uint32_t i = 0; i < 256; i++) {
			uint64_t b = pages + (uint64_t)i * LAB_PAGE_SIZE + LAB_PAGE_SIZE - 1;

			if (t.L == VL_LAYOUT_PACKED) {
				struct vl_packed_desc d = {b, 2, 0, VL_DESC_F_WRITE};

				memcpy(tp + 16 * i, &d, 16);
			} else {
				uint16_t more = i < 255 ? VL_DESC_F_NEXT : 0;
				struct vl_split_desc d = {b, 2, (uint16_t)(VL_DESC_F_WRITE | more),
							  (uint16_t)(more ? i + 1 : 0)};

				memcpy(tp + 16 * i, &d, 16);
			}
		}
		if (c == 0)
			first_buf = pages + LAB_PAGE_SIZE - 1;
		struct lab_pdesc ind = {table, 256 * 16, VL_DESC_F_INDIRECT};

		id[c] = lab_ring_post(&t.rx, &ind, 1);
		assert_true(id[c] >= 0);
	}
	lab_ring_publish(&t.rx);
	struct vl_pkt *p[2] = {mkpkt(&t, 1100, 1), mkpkt(&t, 400, 2)};

	assert_int_equal(lab_model_enqueue(t.mrx, p, 2, st), 2);
	assert_int_equal(st[0], VL_RX_DROPPED_TOO_MANY_PIECES);
	assert_int_equal(st[1], VL_RX_DELIVERED);
	assert_int_equal(lab_model_stats(t.mrx)->drops[VL_DROP_RX_TOO_MANY_PIECES], 1);
	expect_used(&t, &t.rx, id[0], 412);
	expect_no_used(&t.rx);
	/* The header's first two bytes (flags 0, gso_type 0) in the first two-byte buffer. */
	assert_int_equal(gp(&t, first_buf, 2)[0], 0);
	vl_pkt_free_bulk(p, 2);
	mt_teardown(&t);
}

/* ---- queue-level lies ---------------------------------------------------------------- */

/* Split: avail->idx claiming more than a ring of new entries breaks the model for good. */
static void test_split_avail_jump_breaks(void **state)
{
	struct mt t;
	struct lab_model_pkt out[4];

	(void)state;
	mt_setup(&t, VL_LAYOUT_SPLIT, 8, 0, 1 << 20);
	lab_vring_force_avail_idx(&t.tx.s, (uint16_t)(t.tx.s.avail_idx + 9));
	assert_int_equal(lab_model_dequeue(t.mtx, 4, out), 0);
	assert_int_equal(lab_model_broken(t.mtx), VL_DROP_AVAIL_IDX_JUMP);
	lab_vring_force_avail_idx(&t.tx.s, t.tx.s.avail_idx);
	assert_int_equal(lab_model_dequeue(t.mtx, 4, out), 0);
	mt_teardown(&t);
}

/* Each layout-parametrised body as two named tests, so a failure says which layout. */
#define BOTH_LAYOUTS(fn)                                                                   \
	static void fn##_split(void **state)                                               \
	{                                                                                  \
		(void)state;                                                               \
		fn(VL_LAYOUT_SPLIT);                                                       \
	}                                                                                  \
	static void fn##_packed(void **state)                                              \
	{                                                                                  \
		(void)state;                                                               \
		fn(VL_LAYOUT_PACKED);                                                      \
	}
BOTH_LAYOUTS(test_tx_header_over_three_direct_and_indirect)
BOTH_LAYOUTS(test_tx_bad_chain_dropped)
BOTH_LAYOUTS(test_rx_mergeable_three_buffers)
BOTH_LAYOUTS(test_rx_nonmergeable_too_small_keeps_buffer)
BOTH_LAYOUTS(test_rx_not_enough_buffers_stops)
BOTH_LAYOUTS(test_rx_mergeable_full_ring_drops)
BOTH_LAYOUTS(test_rx_too_many_pieces)

#define BOTH(fn) cmocka_unit_test(fn##_split), cmocka_unit_test(fn##_packed)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_tx_header_over_three_direct_and_indirect),
		BOTH(test_tx_bad_chain_dropped),
		BOTH(test_rx_mergeable_three_buffers),
		BOTH(test_rx_nonmergeable_too_small_keeps_buffer),
		BOTH(test_rx_not_enough_buffers_stops),
		BOTH(test_rx_mergeable_full_ring_drops),
		BOTH(test_rx_too_many_pieces),
		cmocka_unit_test(test_split_avail_jump_breaks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

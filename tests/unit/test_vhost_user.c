/* SPDX-License-Identifier: MIT */
/* The vhost-user device (vl_vhost_user.h) driven over a socketpair by a fake front end
 * (vu_fixture.h): the start-up sequences real front ends send, packets moving both ways
 * through the core on rings in the shared memfd memory, ring start/stop/enable rules,
 * negotiation, replies, accessors and sockets. The hostile-input rows of the control path
 * are in test_vhost_user_hostile.c, memory tables and the log in test_vhost_user_mem.c. */
#define _GNU_SOURCE /* eventfd, mkdtemp */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vu_fixture.h"

#define F(bit) VL_FEATURE(bit)
#define DPDK_FEATURES                                                                        \
	(F(VL_F_VERSION_1) | F(VL_F_NET_MRG_RXBUF) | F(VL_F_IN_ORDER) | F(VL_F_RING_EVENT_IDX) | \
	 F(VL_VU_F_PROTOCOL_FEATURES))

/* ---- the DPDK virtio-user sequence, then traffic both ways ------------------------------ */

/* One round of guest TX: post n packets, kick, let the host dequeue them (checking every
 * byte), and harvest the used entries. */
static void tx_round(struct vuf *f, uint32_t n, uint32_t len, uint32_t *seq)
{
	uint32_t seed = *seq, id, ulen, got = 0;
	uint64_t one = 1;

	for (uint32_t i = 0; i < n; i++)
		assert_true(vuf_post_tx(f, 1, len, *seq + i) >= 0);
	assert_int_equal(write(f->kick[1], &one, 8), 8);
	assert_true(vl_vu_dev_consume_kick(f->dev, 1));
	assert_false(vl_vu_dev_consume_kick(f->dev, 1));
	while (got < n) {
		uint32_t moved = vuf_host_tx(f, 1, len, &seed);

		assert_true(moved > 0);
		got += moved;
	}
	assert_int_equal(got, n);
	for (uint32_t i = 0; i < n; i++) {
		assert_true(vuf_pop_used(f, 1, &id, &ulen));
		assert_int_equal(ulen, 0);
	}
	assert_false(vuf_pop_used(f, 1, &id, &ulen));
	*seq += n;
}

/* One round of guest RX: post n buffers, let the host enqueue n packets, check each landed
 * whole (header with num_buffers 1, then the payload) and signal the call eventfd. */
static void rx_round(struct vuf *f, uint32_t n, uint32_t len, uint32_t *seq)
{
	uint32_t id, ulen;
	uint64_t calls = 0;

	for (uint32_t i = 0; i < n; i++)
		assert_true(vuf_post_rx(f, 0, VUF_BUF_SIZE) >= 0);
	assert_int_equal(vuf_host_rx(f, 0, n, len, *seq), n);
	/* The guest never moved used_event off 0 on a fresh ring, and never set NO_INTERRUPT:
	 * the first burst after index 0 passes it wants a call; signalled on the call fd. */
	if (vl_vq_needs_call(vl_vu_dev_queue(f->dev, 0))) {
		assert_true(vl_vu_dev_notify(f->dev, 0));
		assert_int_equal(read(f->call[0], &calls, 8), 8);
		assert_true(calls >= 1);
	}
	for (uint32_t i = 0; i < n; i++) {
		assert_true(vuf_pop_used(f, 0, &id, &ulen));
		assert_int_equal(ulen, VUF_HDR_LEN + len);
		const uint8_t *b = vuf_buf(f, 0, id);
		uint16_t nbufs;

		memcpy(&nbufs, b + 10, 2);
		assert_int_equal(nbufs, 1);
		assert_true(vuf_check(b + VUF_HDR_LEN, len, *seq + i));
	}
	*seq += n;
}

static void scn_dpdk_traffic(enum vl_layout layout, uint64_t features, uint32_t qsize)
{
	struct vuf f;
	uint32_t tx_seq = 1000, rx_seq = 5000, size;
	int fds0 = vuf_count_fds();

	if (layout == VL_LAYOUT_PACKED)
		features |= F(VL_F_RING_PACKED);
	vuf_init(&f, NULL);
	vuf_dpdk_start(&f, features, layout, qsize, 2);
	assert_int_equal(vl_vu_dev_features(f.dev), features);
	assert_int_equal(vl_vq_features(vl_vu_dev_queue(f.dev, 1)),
			 features & ~F(VL_VU_F_PROTOCOL_FEATURES));

	/* More than a ring's worth each way, so indices wrap (packed: the wrap counter flips). */
	for (int round = 0; round < 12; round++) {
		tx_round(&f, 50, 60 + (uint32_t)round * 97, &tx_seq);
		rx_round(&f, 40, 1 + (uint32_t)round * 131, &rx_seq);
	}
	const uint32_t tx_total = 600, rx_total = 480;

	/* Shutdown: GET_VRING_BASE stops each ring and says where it stopped. */
	assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 1, 0), VL_OK);
	uint32_t base = (uint32_t)vuf_reply(&f, VUF_GET_VRING_BASE, &size);

	assert_int_equal(size, 8);
	if (layout == VL_LAYOUT_SPLIT) {
		assert_int_equal(base, tx_total % 65536);
	} else {
		/* Position with the wrap counter in bit 15 (it started at 1 and flips every
		 * lap), used position in the upper half: the same, nothing in flight. */
		uint32_t laps = tx_total / qsize, pos = tx_total % qsize;
		uint32_t half = pos | ((laps % 2) ? 0 : 0x8000u);

		assert_int_equal(base, half | half << 16);
	}
	assert_false(f.ready[1]);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	assert_int_equal(vl_vu_dev_kick_fd(f.dev, 1), -1);
	assert_int_equal(vl_vu_dev_call_fd(f.dev, 1), -1);

	assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 0, 0), VL_OK);
	base = (uint32_t)vuf_reply(&f, VUF_GET_VRING_BASE, NULL);
	if (layout == VL_LAYOUT_SPLIT)
		assert_int_equal(base, rx_total);
	else
		assert_int_equal(base & 0x7fff, rx_total % qsize);
	assert_false(f.ready[0]);
	vuf_fini(&f);
	assert_int_equal(vuf_count_fds(), fds0);
}

static void test_dpdk_split_sequence_moves_packets_both_ways(void **state)
{
	(void)state;
	scn_dpdk_traffic(VL_LAYOUT_SPLIT, DPDK_FEATURES, 256);
}

static void test_dpdk_packed_sequence_moves_packets_both_ways(void **state)
{
	(void)state;
	scn_dpdk_traffic(VL_LAYOUT_PACKED, DPDK_FEATURES, 256);
}

/* Packed ring of a size that is not a power of two (legal for packed), mergeable off. */
static void test_dpdk_packed_odd_size_without_mergeable(void **state)
{
	(void)state;
	scn_dpdk_traffic(VL_LAYOUT_PACKED, DPDK_FEATURES & ~F(VL_F_NET_MRG_RXBUF), 100);
}

static void test_dpdk_split_without_in_order_or_event_idx(void **state)
{
	(void)state;
	scn_dpdk_traffic(VL_LAYOUT_SPLIT,
			 DPDK_FEATURES & ~(F(VL_F_IN_ORDER) | F(VL_F_RING_EVENT_IDX)), 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpdk_split_sequence_moves_packets_both_ways),
		cmocka_unit_test(test_dpdk_packed_sequence_moves_packets_both_ways),
		cmocka_unit_test(test_dpdk_packed_odd_size_without_mergeable),
		cmocka_unit_test(test_dpdk_split_without_in_order_or_event_idx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

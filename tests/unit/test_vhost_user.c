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
#include "vl_lab_control.h"

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


/* ---- ring start, enable and stop -------------------------------------------------------- */

/* A front end that does not negotiate VHOST_USER_F_PROTOCOL_FEATURES has no
 * SET_VRING_ENABLE: its rings are enabled from the start, so a ring is ready at its kick. */
static void test_rings_enabled_at_kick_without_protocol_features(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r;

	vuf_init(&f, NULL);
	r = vuf_region(&f, 0, VUF_MEM_SIZE);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, F(VL_F_VERSION_1)), VL_OK);
	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_OK);
	for (uint32_t q = 0; q < 2; q++) {
		vuf_ring_init(&f, q, VL_LAYOUT_SPLIT, 128, false);
		vuf_ring_setup(&f, q);
		assert_non_null(vl_vu_dev_queue(f.dev, q));
		assert_true(f.ready[q]);
	}
	uint32_t seed = 1;

	assert_true(vuf_post_tx(&f, 1, 64, 1) >= 0);
	assert_int_equal(vuf_host_tx(&f, 1, 64, &seed), 1);
	/* SET_VRING_ENABLE still works if sent anyway. */
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 1, 0), VL_OK);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	assert_false(f.ready[1]);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 1, 2), VL_ERR_VU_VALUE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 1, 1), VL_OK);
	assert_true(f.ready[1]);
	vuf_fini(&f);
}

/* With protocol features, a ring waits for SET_VRING_ENABLE 1; enabling before the ring
 * starts is remembered. SET_FEATURES never disables a ring. */
static void test_rings_wait_for_enable_with_protocol_features(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r;

	vuf_init(&f, NULL);
	r = vuf_region(&f, 0, VUF_MEM_SIZE);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, DPDK_FEATURES), VL_OK);
	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 0, 1), VL_OK);
	vuf_ring_init(&f, 0, VL_LAYOUT_SPLIT, 64, true);
	vuf_ring_init(&f, 1, VL_LAYOUT_SPLIT, 64, true);
	vuf_ring_setup(&f, 0);
	vuf_ring_setup(&f, 1);
	assert_true(f.ready[0]);
	assert_false(f.ready[1]);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 1, 1), VL_OK);
	assert_true(f.ready[1]);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, DPDK_FEATURES), VL_OK);
	assert_true(f.ready[0] && f.ready[1]);
	assert_int_equal(f.ready_events, 2);
	vuf_fini(&f);
}

/* GET_VRING_BASE stops a ring; started again without a new SET_VRING_BASE it resumes where it
 * stopped (the base the device returned), and traffic continues with no buffer lost. */
static void scn_stop_and_resume(enum vl_layout layout)
{
	struct vuf f;
	uint32_t tx_seq = 1, rx_seq = 1, id, len;
	uint64_t feats = DPDK_FEATURES | (layout == VL_LAYOUT_PACKED ? F(VL_F_RING_PACKED) : 0);

	vuf_init(&f, NULL);
	vuf_dpdk_start(&f, feats, layout, 32, 2);
	for (int cycle = 0; cycle < 5; cycle++) {
		tx_round(&f, 20, 100 + (uint32_t)cycle, &tx_seq);
		rx_round(&f, 13, 300, &rx_seq);
		/* Posted before the stop, moved after the restart. */
		assert_true(vuf_post_tx(&f, 1, 77, tx_seq) >= 0);
		for (uint32_t q = 0; q < 2; q++) {
			assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, q, 0), VL_OK);
			assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, q, 0), VL_OK);
			(void)vuf_reply(&f, VUF_GET_VRING_BASE, NULL);
			assert_false(f.ready[q]);
		}
		for (uint32_t q = 0; q < 2; q++) {
			uint64_t d, a, u;

			vuf_ring_uaddrs(&f, q, &d, &a, &u);
			assert_int_equal(vuf_addr(&f, q, 0, d, u, a, 0), VL_OK);
			close(f.kick[q]);
			f.kick[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, q, f.kick[q]), VL_OK);
			close(f.call[q]);
			f.call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_CALL, q, f.call[q]), VL_OK);
			assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
			assert_true(f.ready[q]);
		}
		uint32_t seed = tx_seq;

		assert_int_equal(vuf_host_tx(&f, 1, 77, &seed), 1);
		assert_true(vuf_pop_used(&f, 1, &id, &len));
		tx_seq++;
	}
	vuf_fini(&f);
}

static void test_stop_and_resume_split(void **state)
{
	(void)state;
	scn_stop_and_resume(VL_LAYOUT_SPLIT);
}

static void test_stop_and_resume_packed(void **state)
{
	(void)state;
	scn_stop_and_resume(VL_LAYOUT_PACKED);
}

/* RESET_OWNER (deprecated) stops and disables every ring and keeps the rest. */
static void test_reset_owner_stops_and_disables_rings(void **state)
{
	(void)state;
	struct vuf f;

	vuf_init(&f, NULL);
	vuf_dpdk_start(&f, DPDK_FEATURES, VL_LAYOUT_SPLIT, 64, 2);
	int fds0 = vuf_count_fds();

	assert_int_equal(vuf_none(&f, VUF_RESET_OWNER), VL_OK);
	assert_false(f.ready[0] || f.ready[1]);
	assert_int_equal(vuf_count_fds(), fds0 - 4);
	assert_non_null(vl_vu_dev_mem(f.dev));
	assert_int_equal(vl_vu_dev_features(f.dev), DPDK_FEATURES);
	vuf_ring_setup(&f, 1);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 1, 1), VL_OK);
	assert_non_null(vl_vu_dev_queue(f.dev, 1));
	vuf_fini(&f);
}

/* ---- negotiation and replies ------------------------------------------------------------ */

static void test_reply_ack_answers_need_reply(void **state)
{
	(void)state;
	struct vuf f;
	uint32_t st[2] = {0, 64}, size;

	vuf_init(&f, NULL);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK)), VL_OK);
	vuf_no_reply(&f);
	assert_int_equal(vuf_msg(&f, VUF_SET_VRING_NUM, VUF_F_VERSION | VUF_F_NEED_REPLY, st, 8,
				 NULL, 0), VL_OK);
	assert_int_equal(vuf_reply(&f, VUF_SET_VRING_NUM, &size), 0);
	assert_int_equal(size, 8);
	st[1] = 3;
	assert_int_equal(vuf_msg(&f, VUF_SET_VRING_NUM, VUF_F_VERSION | VUF_F_NEED_REPLY, st, 8,
				 NULL, 0), VL_ERR_QUEUE_SIZE);
	assert_int_equal(vuf_reply(&f, VUF_SET_VRING_NUM, NULL), 1);
	/* A request with a reply of its own gets that reply only. */
	assert_int_equal(vuf_msg(&f, VUF_GET_FEATURES, VUF_F_VERSION | VUF_F_NEED_REPLY, NULL, 0,
				 NULL, 0), VL_OK);
	assert_int_equal(vuf_reply(&f, VUF_GET_FEATURES, NULL), f.cfg.features);
	vuf_no_reply(&f);
	/* A message refused before its handler ran is acknowledged with failure too. */
	assert_int_equal(vuf_msg(&f, 999, VUF_F_VERSION | VUF_F_NEED_REPLY, NULL, 0, NULL, 0),
			 VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_reply(&f, 999, NULL), 1);
	vuf_fini(&f);
}

static void test_status_mtu_and_queue_count(void **state)
{
	(void)state;
	struct vuf f;

	vuf_init(&f, NULL);
	/* Not negotiated yet. */
	assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, 0xf), VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_NET_SET_MTU, 1500), VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 VL_FEATURE(VL_VU_PROTOCOL_F_STATUS) |
					 VL_FEATURE(VL_VU_PROTOCOL_F_MTU)), VL_OK);
	assert_int_equal(vl_vu_dev_protocol_features(f.dev),
			 VL_FEATURE(VL_VU_PROTOCOL_F_STATUS) | VL_FEATURE(VL_VU_PROTOCOL_F_MTU));
	assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, 0x100), VL_ERR_VU_VALUE);
	assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, UINT64_MAX), VL_ERR_VU_VALUE);
	assert_int_equal(f.status_events, 0);
	assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, 0x7), VL_OK);
	assert_int_equal(f.last_status, 7);
	assert_int_equal(vl_vu_dev_status(f.dev), 7);
	assert_int_equal(vuf_get(&f, VUF_GET_STATUS), 7);
	assert_int_equal(vuf_u64(&f, VUF_NET_SET_MTU, 67), VL_ERR_VU_VALUE);
	assert_int_equal(vuf_u64(&f, VUF_NET_SET_MTU, 65536), VL_ERR_VU_VALUE);
	assert_int_equal(vl_vu_dev_mtu(f.dev), 0);
	assert_int_equal(vuf_u64(&f, VUF_NET_SET_MTU, 9000), VL_OK);
	assert_int_equal(vl_vu_dev_mtu(f.dev), 9000);
	assert_int_equal(vuf_get(&f, VUF_GET_QUEUE_NUM), 1);
	assert_int_equal(vuf_get(&f, VUF_GET_MAX_MEM_SLOTS), VL_VU_MAX_MEM_SLOTS);
	assert_int_equal(vuf_none(&f, VUF_SET_OWNER), VL_OK);
	assert_int_equal(vuf_none(&f, VUF_SET_OWNER), VL_OK);
	vuf_fini(&f);
}

/* SEND_RARP after a migration: the MAC in the u64's first 6 bytes goes to the embedder once
 * the RARP protocol feature is negotiated; a zero or multicast address, a short payload, an
 * fd, or the request before negotiation (or never offered) is refused and nothing is told. */
static void test_send_rarp_announces_the_guest_mac(void **state)
{
	(void)state;
	struct vuf f;
	const uint8_t mac[8] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0xaa, 0xbb};
	uint64_t v;

	memcpy(&v, mac, sizeof(v));
	vuf_init(&f, NULL);
	assert_true(vuf_get(&f, VUF_GET_PROTOCOL_FEATURES) & VL_FEATURE(VL_VU_PROTOCOL_F_RARP));
	assert_int_equal(vuf_u64(&f, VUF_SEND_RARP, v), VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 VL_FEATURE(VL_VU_PROTOCOL_F_RARP) |
					 VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK)), VL_OK);
	assert_int_equal(f.announce_events, 0);
	/* Bytes 6-7 are padding the protocol does not define: not looked at. */
	assert_int_equal(vuf_msg(&f, VUF_SEND_RARP, VUF_F_VERSION | VUF_F_NEED_REPLY, &v, 8,
				 NULL, 0), VL_OK);
	assert_int_equal(vuf_reply(&f, VUF_SEND_RARP, NULL), 0);
	assert_int_equal(f.announce_events, 1);
	assert_memory_equal(f.last_mac, mac, 6);
	/* Names no guest: all zero, multicast, broadcast. */
	const uint8_t bad[3][8] = {{0}, {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01},
				   {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};

	for (int i = 0; i < 3; i++) {
		memcpy(&v, bad[i], sizeof(v));
		assert_int_equal(vuf_u64(&f, VUF_SEND_RARP, v), VL_ERR_VU_VALUE);
	}
	assert_int_equal(vuf_msg(&f, VUF_SEND_RARP, VUF_F_VERSION, mac, 6, NULL, 0),
			 VL_ERR_VU_MSG);
	assert_int_equal(f.announce_events, 1);
	vuf_fini(&f);

	/* A device that does not offer RARP does not know the request. */
	struct vl_vu_config cfg;

	vl_vu_config_init(&cfg);
	cfg.protocol_features &= ~VL_FEATURE(VL_VU_PROTOCOL_F_RARP);
	vuf_init(&f, &cfg);
	memcpy(&v, mac, sizeof(v));
	assert_int_equal(vuf_u64(&f, VUF_SEND_RARP, v), VL_ERR_VU_REQUEST);
	assert_int_equal(f.announce_events, 0);
	vuf_fini(&f);
}

/* Status and status-byte writes of a driver that resets its device and comes back (a guest
 * unloading and reloading virtio_net; QEMU 7.2 writes 0 before GET_VRING_BASE when it stops
 * the device): 0 stops every ring, GET_VRING_BASE still answers where each stopped, and the
 * rings set up again wait for DRIVER_OK before they run; nothing leaks. */
static void status_cycle(uint32_t request_reset)
{
	struct vuf f;
	uint64_t st;

	vuf_init(&f, NULL);
	int fds0 = vuf_count_fds();

	vuf_dpdk_start(&f, DPDK_FEATURES, VL_LAYOUT_SPLIT, 64, 2);
	vuf_still_moves(&f, 1);
	vuf_still_moves(&f, 2);
	const int fds_running = vuf_count_fds();

	if (request_reset == VUF_SET_STATUS) {
		assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, 0), VL_OK);
		assert_int_equal(f.last_status, 0);
		/* Released at once, not at the next start: each ring's kick and call fds. */
		assert_int_equal(vuf_count_fds(), fds_running - 4);
	} else {
		/* RESET_DEVICE needs its protocol feature. */
		assert_int_equal(vuf_none(&f, VUF_RESET_DEVICE), VL_ERR_VU_STATE);
		assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
					 VL_FEATURE(VL_VU_PROTOCOL_F_MQ) |
						 VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |
						 VL_FEATURE(VL_VU_PROTOCOL_F_STATUS) |
						 VL_FEATURE(VL_VU_PROTOCOL_F_RESET_DEVICE)), VL_OK);
		assert_int_equal(vuf_none(&f, VUF_RESET_DEVICE), VL_OK);
		assert_int_equal(vuf_count_fds(), fds_running - 4); /* kick and call, each ring */
		/* Back to a device just connected: no features, no status, no ring setup. */
		assert_int_equal(vl_vu_dev_features(f.dev), 0);
		assert_int_equal(vuf_get(&f, VUF_GET_STATUS), 0);
	}
	for (uint32_t q = 0; q < 2; q++) {
		assert_null(vl_vu_dev_queue(f.dev, q));
		assert_false(f.ready[q]);
	}
	if (request_reset == VUF_SET_STATUS) {
		/* Two packets each way: both split rings stopped at index 2. */
		for (uint32_t q = 0; q < 2; q++) {
			assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, q, 0), VL_OK);
			assert_int_equal(vuf_reply(&f, VUF_GET_VRING_BASE, NULL), 2);
		}
	} else {
		/* Nothing is left to stop: a fresh ring's base. */
		assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 0, 0), VL_OK);
		assert_int_equal(vuf_reply(&f, VUF_GET_VRING_BASE, NULL), 0);
		assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, DPDK_FEATURES), VL_OK);
	}
	/* The driver comes back: FEATURES_OK, rings from scratch, enabled, then DRIVER_OK. */
	st = 0xb;
	assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, st), VL_OK);
	for (uint32_t q = 0; q < 2; q++) {
		vuf_ring_init(&f, q, VL_LAYOUT_SPLIT, 64, true);
		vuf_ring_setup(&f, q);
		if (f.call[q] >= 0)
			close(f.call[q]);
		f.call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_CALL, q, f.call[q]), VL_OK);
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
		assert_null(vl_vu_dev_queue(f.dev, q)); /* waits for DRIVER_OK */
	}
	assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, 0xf), VL_OK);
	for (uint32_t q = 0; q < 2; q++)
		assert_true(f.ready[q]);
	vuf_still_moves(&f, 3);
	vuf_fini(&f);
	assert_int_equal(vuf_count_fds(), fds0 - 3 /* the fixture's guest memfd and sockets */);
}

static void test_status_zero_stops_rings_and_driver_ok_restarts_them(void **state)
{
	(void)state;
	status_cycle(VUF_SET_STATUS);
}

static void test_reset_device_forgets_the_rings_and_features(void **state)
{
	(void)state;
	status_cycle(VUF_RESET_DEVICE);
}

/* A request that belongs to something not offered is not supported at all. */
static void test_requests_of_features_not_offered(void **state)
{
	(void)state;
	struct vuf f;
	struct vl_vu_config cfg;

	vl_vu_config_init(&cfg);
	cfg.protocol_features = VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK);
	vuf_init(&f, &cfg);
	assert_int_equal(vuf_none(&f, VUF_GET_QUEUE_NUM), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_none(&f, VUF_GET_STATUS), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_none(&f, VUF_GET_MAX_MEM_SLOTS), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_u64(&f, VUF_SET_STATUS, 1), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 VL_FEATURE(VL_VU_PROTOCOL_F_STATUS)), VL_ERR_VU_FEATURES);
	vuf_fini(&f);

	cfg.features &= ~F(VL_VU_F_PROTOCOL_FEATURES);
	vuf_init(&f, &cfg);
	assert_int_equal(vuf_get(&f, VUF_GET_FEATURES), cfg.features);
	assert_int_equal(vuf_none(&f, VUF_GET_PROTOCOL_FEATURES), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES, 0), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_none(&f, VUF_GET_STATUS), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, F(VL_VU_F_PROTOCOL_FEATURES)),
			 VL_ERR_VU_FEATURES);
	vuf_no_reply(&f);
	vuf_fini(&f);
}

static void test_device_config_checked_and_allocation_failures(void **state)
{
	(void)state;
	struct vl_vu_config cfg;
	int err = 0;

	assert_null(vl_vu_dev_create(NULL, &err));
	assert_int_equal(err, VL_ERR_INVALID_ARG);
	vl_vu_config_init(&cfg);
	assert_int_equal(cfg.features & F(VL_F_NET_MQ), 0);
	cfg.features |= 1ull << 40;
	assert_null(vl_vu_dev_create(&cfg, &err));
	assert_int_equal(err, VL_ERR_INVALID_ARG);
	vl_vu_config_init(&cfg);
	cfg.protocol_features |= 1ull << 5;
	assert_null(vl_vu_dev_create(&cfg, NULL));
	vl_vu_config_init(&cfg);
	cfg.max_queue_pairs = 0;
	assert_null(vl_vu_dev_create(&cfg, &err));
	cfg.max_queue_pairs = VL_VU_MAX_QUEUE_PAIRS + 1;
	assert_null(vl_vu_dev_create(&cfg, &err));
	assert_int_equal(err, VL_ERR_INVALID_ARG);
	cfg.max_queue_pairs = VL_VU_MAX_QUEUE_PAIRS;
	for (uint64_t k = 0; k < 2; k++) {
		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER, &(struct vl_lab_arg){.count = k});
		assert_null(vl_vu_dev_create(&cfg, &err));
		assert_int_equal(err, VL_ERR_NOMEM);
	}
	vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER, &(struct vl_lab_arg){.count = VL_LAB_NEVER});
	struct vl_vu_dev *dev = vl_vu_dev_create(&cfg, &err);

	assert_non_null(dev);
	assert_int_equal(vl_vu_dev_num_queues(dev), 256);
	vl_vu_dev_destroy(dev);
	vl_vu_dev_destroy(NULL);

	/* Every allocation of a table change and of a ring start fails in turn: refused with
	 * VL_ERR_NOMEM, nothing changed, and the next attempt works. */
	struct vuf f;
	struct vuf_region r[2];
	int fds0;

	vuf_init(&f, NULL);
	vuf_dpdk_start(&f, DPDK_FEATURES, VL_LAYOUT_SPLIT, 64, 2);
	r[0] = vuf_region(&f, 0, 2 * 1024 * 1024);
	r[1] = vuf_region(&f, 2 * 1024 * 1024, 2 * 1024 * 1024);
	fds0 = vuf_count_fds();
	const struct vl_mem *old = vl_vu_dev_mem(f.dev);
	int rc;

	for (uint64_t k = 0;; k++) {
		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER, &(struct vl_lab_arg){.count = k});
		rc = vuf_mem_table(&f, r, 2);
		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER,
			       &(struct vl_lab_arg){.count = VL_LAB_NEVER});
		if (rc == VL_OK)
			break;
		assert_int_equal(rc, VL_ERR_NOMEM);
		assert_ptr_equal(vl_vu_dev_mem(f.dev), old);
		assert_int_equal(vuf_count_fds(), fds0);
		assert_true(k < 100);
	}
	assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 1, 0), VL_OK);
	(void)vuf_reply(&f, VUF_GET_VRING_BASE, NULL);
	for (uint64_t k = 0;; k++) {
		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER, &(struct vl_lab_arg){.count = k});
		rc = vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1);
		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER,
			       &(struct vl_lab_arg){.count = VL_LAB_NEVER});
		if (rc == VL_OK)
			break;
		assert_int_equal(rc, VL_ERR_NOMEM);
		assert_null(vl_vu_dev_queue(f.dev, 1));
		assert_true(k < 100);
	}
	assert_non_null(vl_vu_dev_queue(f.dev, 1));
	vuf_fini(&f);
}

/* ---- the datapath helpers --------------------------------------------------------------- */

/* Calls go to the call fd when the guest wants them; a queue that breaks is reported once on
 * the error fd; a kick fd may be a pipe (the spec's fallback) or blocking, and a call fd a
 * full pipe: nothing blocks. */
static void test_notify_kick_and_error_fds(void **state)
{
	(void)state;
	struct vuf f;
	uint64_t v;
	int p[2], e;

	vuf_init(&f, NULL);
	vuf_dpdk_start(&f, DPDK_FEATURES & ~F(VL_F_RING_EVENT_IDX), VL_LAYOUT_SPLIT, 64, 2);
	e = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_ERR, 1, e), VL_OK);

	/* Kick through a pipe; then through a blocking eventfd with nothing in it. */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, p[0]), VL_OK);
	close(p[0]);
	assert_false(vl_vu_dev_consume_kick(f.dev, 1));
	v = 1;
	assert_int_equal(write(p[1], &v, 8), 8);
	assert_true(vl_vu_dev_consume_kick(f.dev, 1));
	assert_false(vl_vu_dev_consume_kick(f.dev, 1));
	close(p[1]);
	int blocking = eventfd(0, EFD_CLOEXEC);

	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, blocking), VL_OK);
	assert_false(vl_vu_dev_consume_kick(f.dev, 1));
	close(blocking);

	/* The call fd a pipe that is full: the call is not made, nothing blocks. */
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_CALL, 1, p[1]), VL_OK);
	while (write(p[1], &v, 8) == 8)
		;
	uint32_t seed = 1;

	assert_true(vuf_post_tx(&f, 1, 50, 1) >= 0);
	assert_int_equal(vuf_host_tx(&f, 1, 50, &seed), 1);
	assert_true(vl_vq_needs_call(vl_vu_dev_queue(f.dev, 1)));
	assert_false(vl_vu_dev_notify(f.dev, 1));
	close(p[0]);
	close(p[1]);
	/* An eventfd again: the call is made. */
	assert_true(vuf_post_tx(&f, 1, 50, 2) >= 0);
	assert_int_equal(vuf_host_tx(&f, 1, 50, &seed), 1);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_CALL, 1, f.call[1]), VL_OK);
	assert_true(vl_vu_dev_notify(f.dev, 1));
	assert_int_equal(read(f.call[1], &v, 8), 8);
	assert_int_equal(v, 1);
	/* No error so far. */
	assert_int_equal(read(e, &v, 8), -1);

	/* The guest breaks its TX queue (avail index jumps by more than the ring): the error fd
	 * hears it once. */
	struct vl_split_avail *av = f.ring[1].driver;

	__atomic_store_n(&av->idx, (uint16_t)(av->idx + 1000), __ATOMIC_RELEASE);
	assert_int_equal(vuf_host_tx(&f, 1, 50, &seed), 0);
	assert_true(vl_vq_broken(vl_vu_dev_queue(f.dev, 1)));
	(void)vl_vu_dev_notify(f.dev, 1);
	(void)vl_vu_dev_notify(f.dev, 1);
	assert_int_equal(read(e, &v, 8), 8);
	assert_int_equal(v, 1);
	/* Not for a stopped ring. */
	assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 1, 0), VL_OK);
	(void)vuf_reply(&f, VUF_GET_VRING_BASE, NULL);
	assert_false(vl_vu_dev_notify(f.dev, 1));
	close(e);
	vuf_fini(&f);
}

/* ---- sockets ---------------------------------------------------------------------------- */

static void test_sockets_listen_accept_connect(void **state)
{
	(void)state;
	char dir[] = "/tmp/vhostlab-vu-XXXXXX", path[256], longp[200];
	struct vl_vu_config cfg;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sock", dir);
	int fds0 = vuf_count_fds();

	/* Nobody there yet. */
	assert_int_equal(vl_vu_connect(path), -1);
	int l = vl_vu_listen(path);

	assert_true(l >= 0);
	int c = vl_vu_connect(path), s = vl_vu_accept(l);

	assert_true(c >= 0 && s >= 0);
	/* A live listener is not replaced (its probe connection is accepted and dropped). */
	assert_int_equal(vl_vu_listen(path), -1);
	assert_int_equal(errno, EADDRINUSE);
	int probe = vl_vu_accept(l);

	assert_true(probe >= 0);
	close(probe);
	assert_true(fcntl(s, F_GETFD) & FD_CLOEXEC);
	/* A message over the real socket. */
	vl_vu_config_init(&cfg);
	struct vl_vu_dev *dev = vl_vu_dev_create(&cfg, NULL);
	uint32_t hdr[3] = {1, 1, 0}, rep[5];

	assert_int_equal(write(c, hdr, 12), 12);
	assert_int_equal(vl_vu_dev_handle(dev, s), VL_OK);
	assert_int_equal(read(c, rep, 20), 20);
	assert_int_equal(rep[0], 1);
	assert_int_equal(rep[1], 1 | 4);
	assert_int_equal(rep[2], 8);
	assert_int_equal(vl_vu_dev_last_request(dev), 1);
	close(c);
	assert_int_equal(vl_vu_dev_handle(dev, s), VL_ERR_VU_CLOSED);
	vl_vu_dev_destroy(dev);
	close(s);
	close(l);
	/* The socket file is left behind: stale, so it is replaced. */
	l = vl_vu_listen(path);
	assert_true(l >= 0);
	close(l);
	assert_int_equal(unlink(path), 0);
	/* Any other file is left alone. */
	int reg = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	assert_true(reg >= 0);
	close(reg);
	assert_int_equal(vl_vu_listen(path), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(unlink(path), 0);
	/* Paths a socket address cannot hold. */
	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	assert_int_equal(vl_vu_listen(longp), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(vl_vu_connect(longp), -1);
	assert_int_equal(vl_vu_listen(""), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(vl_vu_connect(NULL), -1);
	assert_int_equal(vl_vu_accept(-1), -1);
	snprintf(path, sizeof(path), "%s/no/such/dir/sock", dir);
	assert_int_equal(vl_vu_listen(path), -1);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(vuf_count_fds(), fds0);
}

static void test_request_names(void **state)
{
	(void)state;
	assert_string_equal(vl_vu_request_name(5), "SET_MEM_TABLE");
	assert_string_equal(vl_vu_request_name(11), "GET_VRING_BASE");
	assert_string_equal(vl_vu_request_name(40), "GET_STATUS");
	assert_string_equal(vl_vu_request_name(41), "unknown");
	assert_string_equal(vl_vu_request_name(UINT32_MAX), "unknown");
	for (uint32_t r = 0; r <= 40; r++)
		assert_string_not_equal(vl_vu_request_name(r), "unknown");
	assert_string_equal(vl_strerror(VL_ERR_VU_CLOSED), "vhost-user peer closed the connection");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpdk_split_sequence_moves_packets_both_ways),
		cmocka_unit_test(test_dpdk_packed_sequence_moves_packets_both_ways),
		cmocka_unit_test(test_dpdk_packed_odd_size_without_mergeable),
		cmocka_unit_test(test_dpdk_split_without_in_order_or_event_idx),
		cmocka_unit_test(test_rings_enabled_at_kick_without_protocol_features),
		cmocka_unit_test(test_status_zero_stops_rings_and_driver_ok_restarts_them),
		cmocka_unit_test(test_reset_device_forgets_the_rings_and_features),
		cmocka_unit_test(test_rings_wait_for_enable_with_protocol_features),
		cmocka_unit_test(test_stop_and_resume_split),
		cmocka_unit_test(test_stop_and_resume_packed),
		cmocka_unit_test(test_reset_owner_stops_and_disables_rings),
		cmocka_unit_test(test_reply_ack_answers_need_reply),
		cmocka_unit_test(test_status_mtu_and_queue_count),
		cmocka_unit_test(test_requests_of_features_not_offered),
		cmocka_unit_test(test_device_config_checked_and_allocation_failures),
		cmocka_unit_test(test_notify_kick_and_error_fds),
		cmocka_unit_test(test_sockets_listen_accept_connect),
		cmocka_unit_test(test_request_names),
		cmocka_unit_test(test_send_rarp_announces_the_guest_mac),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

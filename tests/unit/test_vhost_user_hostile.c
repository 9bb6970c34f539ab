/* SPDX-License-Identifier: MIT */
/* The control-path rows of hostile-inputs.md ("vhost-user messages"), one named test (or a
 * few) per row: ring index, ring size, ring addresses, ring base, fds, payload sizes and
 * truncated reads, message order, disconnection. Memory tables and the log base are in
 * test_vhost_user_mem.c.
 *
 * Every rejection is checked for its three promises: the named error code, nothing changed
 * (the ring still runs or still is not ready; a later good message works), and every
 * descriptor that came with the message closed (the process's fd count is back where it
 * was, /proc/self/fd). */
#define _GNU_SOURCE /* eventfd */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd_send.h"
#include "vu_fixture.h"
#include "vl_lab_control.h"

#define F(bit) VL_FEATURE(bit)
#define FEATURES                                                                             \
	(F(VL_F_VERSION_1) | F(VL_F_NET_MRG_RXBUF) | F(VL_F_RING_EVENT_IDX) |                  \
	 F(VL_VU_F_PROTOCOL_FEATURES))
#define QSIZE 64u

/* A device with both rings of the first pair running (DPDK sequence). */
static void start(struct vuf *f, enum vl_layout layout)
{
	vuf_init(f, NULL);
	vuf_dpdk_start(f, FEATURES | (layout == VL_LAYOUT_PACKED ? F(VL_F_RING_PACKED) : 0), layout,
		       QSIZE, 2);
}

/* Send a message carrying `nfds` fresh eventfds (the test's copies closed right after). */
static int msg_fds(struct vuf *f, uint32_t req, const void *p, uint32_t size, uint32_t nfds)
{
	int fds[32];

	assert_true(nfds <= 32);
	for (uint32_t i = 0; i < nfds; i++) {
		fds[i] = eventfd(0, EFD_CLOEXEC);
		assert_true(fds[i] >= 0);
	}
	int rc = vuf_msg(f, req, VUF_F_VERSION, p, size, fds, nfds);

	for (uint32_t i = 0; i < nfds; i++)
		close(fds[i]);
	return rc;
}

/* ---- vring index (CVE-2020-10723, CVE-2021-3839) ---------------------------------------- */

/* Every message that names a ring, with indices just past the rings and far beyond, as a
 * 32-bit field (state, address) or in the u64's low byte (KICK/CALL/ERR). */
static void test_vring_index_beyond_the_rings_in_every_vring_message(void **state)
{
	(void)state;
	struct vuf f;
	const uint32_t bad32[] = {2, 3, 255, 256, 0x10000, 0x80000000u, UINT32_MAX};

	start(&f, VL_LAYOUT_SPLIT);
	int fds0 = vuf_count_fds();

	for (size_t i = 0; i < sizeof(bad32) / sizeof(bad32[0]); i++) {
		const uint32_t ix = bad32[i];

		assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, ix, 64), VL_ERR_VU_QUEUE_INDEX);
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, ix, 0), VL_ERR_VU_QUEUE_INDEX);
		assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, ix, 0), VL_ERR_VU_QUEUE_INDEX);
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, ix, 1), VL_ERR_VU_QUEUE_INDEX);
		assert_int_equal(vuf_addr(&f, ix, 0, 0, 0, 0, 0), VL_ERR_VU_QUEUE_INDEX);
		vuf_no_reply(&f);
	}
	/* KICK/CALL/ERR: an index in 8 bits (2..255 are past this device's 2 rings)... */
	for (uint64_t ix = 2; ix < 256; ix += 51) {
		uint64_t v = ix;

		assert_int_equal(msg_fds(&f, VUF_SET_VRING_KICK, &v, 8, 1), VL_ERR_VU_QUEUE_INDEX);
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_CALL, &v, 8, 1), VL_ERR_VU_QUEUE_INDEX);
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_ERR, &v, 8, 1), VL_ERR_VU_QUEUE_INDEX);
		v |= VUF_NOFD;
		assert_int_equal(vuf_msg(&f, VUF_SET_VRING_KICK, 1, &v, 8, NULL, 0),
				 VL_ERR_VU_QUEUE_INDEX);
	}
	/* ...and anything above bit 8 is no index at all: an index that would pass the check
	 * once truncated (0x100000001 -> 1) is refused whole. */
	const uint64_t wide[] = {0x100000001ull, 1ull << 9, 1ull << 63, UINT64_MAX};

	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++) {
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_KICK, &wide[i], 8, 1), VL_ERR_VU_VALUE);
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_CALL, &wide[i], 8, 1), VL_ERR_VU_VALUE);
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_ERR, &wide[i], 8, 1), VL_ERR_VU_VALUE);
	}
	assert_int_equal(vuf_count_fds(), fds0);
	/* Nothing changed: both rings still run. */
	assert_true(f.ready[0] && f.ready[1]);
	vuf_still_moves(&f, 1);
	vuf_fini(&f);
}

/* A device of 4 queue pairs accepts rings 0..7 and refuses 8; the checks use the device's
 * ring count, not a constant. */
static void test_vring_index_checked_against_the_configured_queue_pairs(void **state)
{
	(void)state;
	struct vuf f;
	struct vl_vu_config cfg;

	vl_vu_config_init(&cfg);
	cfg.max_queue_pairs = 4;
	cfg.features |= F(VL_F_NET_MQ) | F(VL_F_NET_CTRL_VQ);
	vuf_init(&f, &cfg);
	assert_int_equal(vl_vu_dev_num_queues(f.dev), 8);
	assert_int_equal(vuf_get(&f, VUF_GET_QUEUE_NUM), 4);
	for (uint32_t q = 0; q < 8; q++)
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, q, 256), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 8, 256), VL_ERR_VU_QUEUE_INDEX);
	assert_null(vl_vu_dev_queue(f.dev, 8));
	assert_null(vl_vu_dev_queue(f.dev, UINT32_MAX));
	assert_int_equal(vl_vu_dev_kick_fd(f.dev, 8), -1);
	assert_int_equal(vl_vu_dev_call_fd(f.dev, UINT32_MAX), -1);
	assert_false(vl_vu_dev_consume_kick(f.dev, 8));
	assert_false(vl_vu_dev_notify(f.dev, 8));
	vuf_fini(&f);
}

/* ---- vring num (CVE-2019-14818) --------------------------------------------------------- */

static void test_vring_num_zero_odd_or_too_large_is_rejected(void **state)
{
	(void)state;
	struct vuf f;
	const uint32_t bad_split[] = {0, 3, 100, 32767, 32769, 65536, UINT32_MAX};

	vuf_init(&f, NULL);
	/* Split (no RING_PACKED negotiated): a power of two up to 32768. */
	for (size_t i = 0; i < sizeof(bad_split) / sizeof(bad_split[0]); i++)
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, bad_split[i]),
				 VL_ERR_QUEUE_SIZE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 1), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 32768), VL_OK);
	/* Packed: any size 1..32768. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, F(VL_F_VERSION_1) | F(VL_F_RING_PACKED)),
			 VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 0), VL_ERR_QUEUE_SIZE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 32769), VL_ERR_QUEUE_SIZE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 3), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 32767), VL_OK);
	vuf_no_reply(&f);
	vuf_fini(&f);
}

static void test_vring_num_changed_while_running_is_rejected(void **state)
{
	(void)state;
	struct vuf f;

	start(&f, VL_LAYOUT_SPLIT);
	struct vl_vq *before = vl_vu_dev_queue(f.dev, 1);

	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 1, 128), VL_ERR_VU_STATE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 1, 32), VL_ERR_VU_STATE);
	/* The same size again is harmless. */
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 1, QSIZE), VL_OK);
	assert_ptr_equal(vl_vu_dev_queue(f.dev, 1), before);
	assert_int_equal(vl_vq_size(before), QSIZE);
	vuf_still_moves(&f, 7);
	vuf_fini(&f);
}

/* Repeated SET_VRING_NUM (and whole ring setups) allocate nothing that could leak: the queue
 * is allocated once, when the ring starts, and freed when it stops (ASan and valgrind watch
 * the rest). */
static void test_vring_num_repeated_does_not_leak(void **state)
{
	(void)state;
	struct vuf f;

	vuf_init(&f, NULL);
	int fds0 = vuf_count_fds();
	struct vl_lab_arg allocs = {0}, allocs_after = {0};

	vl_lab_control(VL_LAB_ALLOC_COUNT, &allocs);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, i % 2, 1u << (i % 16)), VL_OK);
	vl_lab_control(VL_LAB_ALLOC_COUNT, &allocs_after);
	assert_int_equal(allocs_after.count, allocs.count);
	/* Start and stop a ring many times over: each cycle frees what it took. */
	struct vuf_region r = vuf_region(&f, 0, VUF_MEM_SIZE);

	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_OK);
	vuf_ring_init(&f, 1, VL_LAYOUT_SPLIT, QSIZE, false);
	for (int i = 0; i < 50; i++) {
		vuf_ring_setup(&f, 1);
		assert_non_null(vl_vu_dev_queue(f.dev, 1));
		assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 1, 0), VL_OK);
		assert_int_equal(vuf_reply(&f, VUF_GET_VRING_BASE, NULL), 0);
		assert_null(vl_vu_dev_queue(f.dev, 1));
	}
	/* The device closed its kick fd at every stop; the fixture's copy goes too. */
	close(f.kick[1]);
	f.kick[1] = -1;
	assert_int_equal(vuf_count_fds(), fds0);
	vuf_fini(&f);
}

/* ---- vring addr ------------------------------------------------------------------------- */

/* Ring areas outside the table, or running past its end, or misaligned: rejected, and the
 * ring stays not ready even once kicked; good addresses then start it. */
static void scn_vring_addr_rejected(enum vl_layout layout)
{
	struct vuf f;
	struct vuf_region r;
	uint64_t d, a, u;

	vuf_init(&f, NULL);
	r = vuf_region(&f, 0, VUF_MEM_SIZE);
	if (layout == VL_LAYOUT_PACKED)
		assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, F(VL_F_VERSION_1) | F(VL_F_RING_PACKED)),
				 VL_OK);
	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_OK);
	vuf_ring_init(&f, 0, layout, 256, false);
	vuf_ring_uaddrs(&f, 0, &d, &a, &u);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 256), VL_OK);

	const uint64_t lo = r.uaddr, end = r.uaddr + r.size;
	const uint64_t desc_bytes = 16 * 256;
	struct {
		uint64_t d, u, a;
		int want;
	} bad[] = {
		{0, u, a, VL_ERR_RING_UNMAPPED},                       /* desc at no address */
		{lo - 4096, u, a, VL_ERR_RING_UNMAPPED},               /* below the region */
		{end - desc_bytes + 16, u, a, VL_ERR_RING_UNMAPPED},   /* runs past its end */
		{d, end - 2, a, VL_ERR_RING_UNMAPPED},                 /* used area cut short */
		{d, u, end, VL_ERR_RING_UNMAPPED},                     /* avail just past the end */
		{d, u, UINT64_MAX - 1, VL_ERR_RING_UNMAPPED},          /* near 2^64 */
		{d + 8, u, a, VL_ERR_RING_MISALIGNED},                 /* desc: 16 */
		{d, u + 2, a, VL_ERR_RING_MISALIGNED},                 /* used / device: 4 */
		{d, u, a + 1, VL_ERR_RING_MISALIGNED},                 /* avail 2 / driver 4 */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(vuf_addr(&f, 0, 0, bad[i].d, bad[i].u, bad[i].a, 0), bad[i].want);
		assert_null(vl_vu_dev_queue(f.dev, 0));
	}
	/* Kicked with the last (bad) addresses in place: started, but not ready. */
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_OK);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	assert_false(f.ready[0]);
	/* Flags other than LOG are no flags. */
	assert_int_equal(vuf_addr(&f, 0, 2, d, u, a, 0), VL_ERR_VU_VALUE);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	/* Good addresses complete the set: the started ring becomes ready at once (no protocol
	 * features negotiated: enabled from the start). */
	assert_int_equal(vuf_addr(&f, 0, 0, d, u, a, 0), VL_OK);
	assert_non_null(vl_vu_dev_queue(f.dev, 0));
	assert_true(f.ready[0]);
	/* Addresses that held for the old size are translated again for the new one when the
	 * ring starts again: a descriptor table 16 entries from the end of memory holds 16
	 * entries, not 256. */
	assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 0, 0), VL_OK);
	(void)vuf_reply(&f, VUF_GET_VRING_BASE, NULL);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 16), VL_OK);
	assert_int_equal(vuf_addr(&f, 0, 0, end - 16 * 16, u, a, 0), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 256), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_ERR_RING_UNMAPPED);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 16), VL_OK);
	assert_non_null(vl_vu_dev_queue(f.dev, 0));
	vuf_fini(&f);
}

static void test_vring_addr_unmapped_or_misaligned_split(void **state)
{
	(void)state;
	scn_vring_addr_rejected(VL_LAYOUT_SPLIT);
}

static void test_vring_addr_unmapped_or_misaligned_packed(void **state)
{
	(void)state;
	scn_vring_addr_rejected(VL_LAYOUT_PACKED);
}

/* While a ring runs its addresses are frozen; the same addresses again are accepted (QEMU
 * re-sends them with the LOG flag to start and stop migration logging). */
static void test_vring_addr_while_running(void **state)
{
	(void)state;
	struct vuf f;
	uint64_t d, a, u;

	start(&f, VL_LAYOUT_SPLIT);
	vuf_ring_uaddrs(&f, 1, &d, &a, &u);
	assert_int_equal(vuf_addr(&f, 1, 1, d, u, a, 0x1234), VL_OK);
	assert_int_equal(vuf_addr(&f, 1, 0, d, u, a, 0), VL_OK);
	assert_int_equal(vuf_addr(&f, 1, 0, d, u + 4096, a, 0), VL_ERR_VU_STATE);
	assert_int_equal(vuf_addr(&f, 1, 0, d + 4096, u, a, 0), VL_ERR_VU_STATE);
	assert_int_equal(vuf_addr(&f, 1, 0, d, u, a + 4096, 0), VL_ERR_VU_STATE);
	vuf_still_moves(&f, 3);
	vuf_fini(&f);
}

/* Found by fuzz_vhost_user (fuzz/regressions/fuzz_vhost_user/
 * mem-table-misaligns-ring-host-address): a memory table re-sent mid-traffic whose region
 * had an mmap offset that is not a multiple of the ring alignment kept every ring at an
 * aligned guest address but moved it to a misaligned host address; the datapath then did
 * misaligned atomic loads (UBSan: member access within misaligned address for struct
 * vl_split_avail). The core now checks ring alignment in host memory too (ring/ring_queue.c,
 * map_area), and SET_VRING_ADDR checks it before the ring can start. */
static void test_ring_host_address_misaligned_by_a_region(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r;
	uint64_t d, a, u;

	/* Mid-traffic: refused, the old table kept. */
	start(&f, VL_LAYOUT_SPLIT);
	const struct vl_mem *old = vl_vu_dev_mem(f.dev);

	r = vuf_region(&f, 2, VUF_MEM_SIZE - 4096);
	r.gpa = VUF_GPA;
	r.uaddr = (uint64_t)(uintptr_t)f.mem;
	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_ERR_RING_MISALIGNED);
	assert_ptr_equal(vl_vu_dev_mem(f.dev), old);
	vuf_still_moves(&f, 31);
	vuf_fini(&f);

	/* Before the ring starts: refused at SET_VRING_ADDR, so it never starts. */
	vuf_init(&f, NULL);
	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_OK);
	vuf_ring_init(&f, 0, VL_LAYOUT_SPLIT, 64, false);
	vuf_ring_uaddrs(&f, 0, &d, &a, &u);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 64), VL_OK);
	assert_int_equal(vuf_addr(&f, 0, 0, d, u, a, 0), VL_ERR_RING_MISALIGNED);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_OK);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	vuf_fini(&f);

	/* The core itself, as any embedder reaches it: an aligned gpa at a misaligned host
	 * address is refused by vl_vq_create (and by vl_vq_set_mem). */
	static _Alignas(64) uint8_t ram[3 * 4096];
	struct vl_mem_region good = {.gpa = 0x10000, .size = 2 * 4096, .host = ram};
	struct vl_mem_region bad = {.gpa = 0x10000, .size = 2 * 4096, .host = ram + 2};
	struct vl_mem *mg = vl_mem_create(&good, 1, NULL), *mb = vl_mem_create(&bad, 1, NULL);
	struct vl_vq_config cfg;
	int err;

	assert_true(mg && mb);
	vl_vq_config_init(&cfg, VL_LAYOUT_SPLIT, 16);
	cfg.desc_gpa = 0x10000;
	cfg.driver_gpa = 0x10100;
	cfg.device_gpa = 0x10200;
	assert_null(vl_vq_create(mb, &cfg, &err));
	assert_int_equal(err, VL_ERR_RING_MISALIGNED);
	struct vl_vq *vq = vl_vq_create(mg, &cfg, &err);

	assert_non_null(vq);
	assert_int_equal(vl_vq_set_mem(vq, mb), VL_ERR_RING_MISALIGNED);
	vl_vq_destroy(vq);
	vl_mem_destroy(mg);
	vl_mem_destroy(mb);
}

/* ---- vring base ------------------------------------------------------------------------- */

static void test_vring_base_packed_index_beyond_size_or_inconsistent_wrap(void **state)
{
	(void)state;
	struct vuf f;
	const uint32_t n = 100;

	vuf_init(&f, NULL);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, F(VL_F_VERSION_1) | F(VL_F_RING_PACKED)),
			 VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, n), VL_OK);
	const struct {
		uint32_t num;
		int want;
	} cases[] = {
		{0x8000u | n, VL_ERR_RING_BASE},                 /* avail position == size */
		{0x7fffu, VL_ERR_RING_BASE},                     /* position 32767 */
		{0x8000u | (uint32_t)(0x8000u | n) << 16, VL_ERR_RING_BASE}, /* used == size */
		/* used one ahead of avail on the same lap */
		{0x8005u | (uint32_t)0x8006u << 16, VL_ERR_RING_BASE},
		/* used a lap and one behind (wrap counter says one lap, position one more) */
		{0x8005u | (uint32_t)0x0004u << 16, VL_ERR_RING_BASE},
		/* used behind, but on the lap after avail's: that is ahead */
		{0x0005u | (uint32_t)0x8004u << 16, VL_ERR_RING_BASE},
		/* good: fresh, DPDK's avail-only form, used a few behind, used exactly a lap
		 * behind (every descriptor in flight), across the wrap */
		{0x8000u, VL_OK},
		{0x8000u | (uint32_t)0x8000u << 16, VL_OK},
		{0x8040u | (uint32_t)0x8030u << 16, VL_OK},
		{0x8005u | (uint32_t)0x0005u << 16, VL_OK},
		{0x0002u | (uint32_t)0x8062u << 16, VL_OK},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, cases[i].num), cases[i].want);
	vuf_fini(&f);
}

/* A base sent before the size is checked when the ring starts, against the size it has. */
static void test_vring_base_checked_again_at_start(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r;
	uint64_t d, a, u;

	vuf_init(&f, NULL);
	r = vuf_region(&f, 0, VUF_MEM_SIZE);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, F(VL_F_VERSION_1) | F(VL_F_RING_PACKED)),
			 VL_OK);
	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_OK);
	vuf_ring_init(&f, 0, VL_LAYOUT_PACKED, 64, false);
	vuf_ring_uaddrs(&f, 0, &d, &a, &u);
	/* Base at position 80 (valid for no size yet), then a 64-entry ring. */
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, 0x8000u | 80), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 64), VL_OK);
	assert_int_equal(vuf_addr(&f, 0, 0, d, u, a, 0), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_ERR_RING_BASE);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	/* With the size known, SET_VRING_BASE itself is checked: used ahead of avail. */
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, 0x8010u | 0x8011u << 16),
			 VL_ERR_RING_BASE);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	/* A good one completes the started ring. */
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, 0x8010u | 0x8010u << 16), VL_OK);
	assert_non_null(vl_vu_dev_queue(f.dev, 0));
	assert_int_equal(vl_vq_last_avail(vl_vu_dev_queue(f.dev, 0)), 0x8010);
	assert_int_equal(vl_vq_last_used(vl_vu_dev_queue(f.dev, 0)), 0x8010);
	/* Changing the base under a running ring is refused. */
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, 0x8000u), VL_ERR_VU_STATE);
	vuf_fini(&f);
}

/* A 16-entry split ring in a fresh memory table whose guest indices (avail->idx, used->idx
 * and the fixture's own copies) all stand at idx, as a driver that has run before leaves
 * them; its addresses in *d, *a, *u for SET_VRING_ADDR. */
static void split_ring_with_guest_at(struct vuf *f, uint16_t idx, uint64_t *d, uint64_t *a,
				     uint64_t *u)
{
	struct vuf_region r = vuf_region(f, 0, VUF_MEM_SIZE);

	assert_int_equal(vuf_mem_table(f, &r, 1), VL_OK);
	vuf_ring_init(f, 0, VL_LAYOUT_SPLIT, 16, false);
	((struct vl_split_used *)f->ring[0].device)->idx = idx;
	((struct vl_split_avail *)f->ring[0].driver)->idx = idx;
	f->ring[0].avail_idx = f->ring[0].used_idx = idx;
	vuf_ring_uaddrs(f, 0, d, a, u);
}

static void test_vring_base_split_beyond_16_bits(void **state)
{
	(void)state;
	struct vuf f;

	vuf_init(&f, NULL);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, 0x10000u), VL_ERR_RING_BASE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, UINT32_MAX), VL_ERR_RING_BASE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, 0xffffu), VL_OK);
	/* Resuming a split ring from a base: the device continues at that index (the guest's
	 * ring agrees: its used->idx says the device stopped there). */
	uint64_t d, a, u;

	split_ring_with_guest_at(&f, 0xffff, &d, &a, &u);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 16), VL_OK);
	assert_int_equal(vuf_addr(&f, 0, 0, d, u, a, 0), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_OK);
	assert_int_equal(vl_vq_last_avail(vl_vu_dev_queue(f.dev, 0)), 0xffff);
	assert_int_equal(vl_vu_dev_ring_resyncs(f.dev, 0), 0);
	vuf_fini(&f);
}

/* A front end that outlived its back end (DPDK virtio-user as server) hands the next one
 * base 0 while its rings are far ahead. The split ring starts at the guest's used->idx
 * instead (counted), and the buffers it posts after that index are served; without the
 * resync the first burst would see an avail index thousands ahead and break the queue. */
static void test_vring_base_split_resync_to_used(void **state)
{
	(void)state;
	struct vuf f;
	uint64_t d, a, u;

	vuf_init(&f, NULL);
	/* The guest's view after 40000 buffers moved through an earlier back end. */
	split_ring_with_guest_at(&f, 40000, &d, &a, &u);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 0, 16), VL_OK);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, 0, 0), VL_OK);
	assert_int_equal(vuf_addr(&f, 0, 0, d, u, a, 0), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_OK);
	struct vl_vq *vq = vl_vu_dev_queue(f.dev, 0);

	assert_non_null(vq);
	assert_int_equal(vl_vq_last_avail(vq), 40000);
	assert_int_equal(vl_vu_dev_ring_resyncs(f.dev, 0), 1);
	/* RX buffers posted now are filled: the ring works from there. */
	for (int i = 0; i < 3; i++)
		assert_true(vuf_post_rx(&f, 0, 256) >= 0);
	struct vl_pkt *pkts[3];
	uint8_t st[3];

	for (int i = 0; i < 3; i++) {
		pkts[i] = vl_pkt_alloc_len(f.pool, 60);
		assert_non_null(pkts[i]);
	}
	assert_int_equal(vl_net_enqueue(vq, pkts, 3, st), 3);
	vl_pkt_free_bulk(pkts, 3);
	assert_false(vl_vq_broken(vq));
	uint32_t id, len;

	for (int i = 0; i < 3; i++) {
		assert_true(vuf_pop_used(&f, 0, &id, &len));
		assert_int_equal(len, 60 + vl_net_hdr_len(vl_vu_dev_features(f.dev)));
	}
	vuf_fini(&f);
}

/* ---- fds (CVE-2020-10726, CVE-2022-0669) ------------------------------------------------ */

/* Descriptors on messages that take none, too many or too few on those that take one,
 * and on requests this back end does not implement (SET_INFLIGHT_FD, SET_LOG_FD, ...): the
 * message is rejected and every descriptor closed. */
static void test_unexpected_fds_are_closed(void **state)
{
	(void)state;
	struct vuf f;
	uint64_t u64 = 0;
	uint32_t st[2] = {0, 64};
	uint8_t inflight[24] = {0};

	start(&f, VL_LAYOUT_SPLIT);
	int fds0 = vuf_count_fds();

	assert_int_equal(msg_fds(&f, VUF_SET_OWNER, NULL, 0, 1), VL_ERR_VU_FDS);
	assert_int_equal(msg_fds(&f, VUF_GET_FEATURES, NULL, 0, 3), VL_ERR_VU_FDS);
	vuf_no_reply(&f);
	u64 = FEATURES;
	assert_int_equal(msg_fds(&f, VUF_SET_FEATURES, &u64, 8, 2), VL_ERR_VU_FDS);
	assert_int_equal(msg_fds(&f, VUF_SET_VRING_NUM, st, 8, 1), VL_ERR_VU_FDS);
	assert_int_equal(msg_fds(&f, VUF_GET_VRING_BASE, st, 8, 8), VL_ERR_VU_FDS);
	vuf_no_reply(&f);
	/* KICK: NOFD and a descriptor anyway; no NOFD and none; two. */
	u64 = 1 | VUF_NOFD;
	assert_int_equal(msg_fds(&f, VUF_SET_VRING_KICK, &u64, 8, 1), VL_ERR_VU_FDS);
	u64 = 1;
	assert_int_equal(msg_fds(&f, VUF_SET_VRING_KICK, &u64, 8, 0), VL_ERR_VU_FDS);
	assert_int_equal(msg_fds(&f, VUF_SET_VRING_CALL, &u64, 8, 2), VL_ERR_VU_FDS);
	/* More than any message may carry: the excess is closed by the device (or cut by the
	 * kernel), the rest by the device, and the message refused. */
	assert_int_equal(msg_fds(&f, VUF_SET_OWNER, NULL, 0, 9), VL_ERR_VU_FDS);
	assert_int_equal(msg_fds(&f, VUF_SET_OWNER, NULL, 0, 30), VL_ERR_VU_FDS);
	/* SEND_RARP takes none. */
	assert_int_equal(msg_fds(&f, VUF_SEND_RARP, &u64, 8, 1), VL_ERR_VU_FDS);
	/* Inflight tracking not negotiated by this front end (its fd closed all the same); GET
	 * takes no fd. */
	assert_int_equal(msg_fds(&f, VUF_SET_INFLIGHT_FD, inflight, sizeof(inflight), 1),
			 VL_ERR_VU_STATE);
	assert_int_equal(msg_fds(&f, VUF_SET_INFLIGHT_FD, inflight, sizeof(inflight), 1),
			 VL_ERR_VU_STATE);
	assert_int_equal(msg_fds(&f, VUF_GET_INFLIGHT_FD, inflight, sizeof(inflight), 2),
			 VL_ERR_VU_FDS);
	/* Requests not implemented (log fd, slave channel). */
	assert_int_equal(msg_fds(&f, VUF_SET_LOG_FD, NULL, 0, 1), VL_ERR_VU_REQUEST);
	assert_int_equal(msg_fds(&f, 21 /* SET_SLAVE_REQ_FD */, NULL, 0, 1), VL_ERR_VU_REQUEST);
	assert_int_equal(msg_fds(&f, 1000, NULL, 0, 2), VL_ERR_VU_REQUEST);
	vuf_no_reply(&f);
	assert_int_equal(vuf_count_fds(), fds0);
	assert_true(f.ready[0] && f.ready[1]);
	vuf_still_moves(&f, 11);
	vuf_fini(&f);
}

/* A replaced kick / call / err fd is closed; NOFD leaves none. */
static void test_replaced_ring_fds_are_closed(void **state)
{
	(void)state;
	struct vuf f;

	start(&f, VL_LAYOUT_SPLIT);
	int fds0 = vuf_count_fds();

	for (int i = 0; i < 20; i++) {
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_CALL, &(uint64_t){1}, 8, 1), VL_OK);
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_ERR, &(uint64_t){1}, 8, 1), VL_OK);
		assert_int_equal(msg_fds(&f, VUF_SET_VRING_KICK, &(uint64_t){1}, 8, 1), VL_OK);
	}
	/* The device holds one of each on ring 1 now, replacing the ones it had: +1 (err). */
	assert_int_equal(vuf_count_fds(), fds0 + 1);
	assert_true(vl_vu_dev_kick_fd(f.dev, 1) >= 0 && vl_vu_dev_call_fd(f.dev, 1) >= 0);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_CALL, 1, -1), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_ERR, 1, -1), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_OK);
	assert_int_equal(vl_vu_dev_kick_fd(f.dev, 1), -1);
	assert_int_equal(vl_vu_dev_call_fd(f.dev, 1), -1);
	/* The old ones were the device's two; the fixture's kick copy is separate. */
	assert_int_equal(vuf_count_fds(), fds0 - 2);
	/* Polling mode: no kick to consume, no call to signal; the ring still runs. */
	assert_false(vl_vu_dev_consume_kick(f.dev, 1));
	vuf_still_moves(&f, 5);
	assert_false(vl_vu_dev_notify(f.dev, 1));
	vuf_fini(&f);
}

/* ---- payload sizes, framing, truncated reads -------------------------------------------- */

static void test_payload_size_larger_or_smaller_than_needed(void **state)
{
	(void)state;
	struct vuf f;
	uint8_t big[512] = {0};

	start(&f, VL_LAYOUT_SPLIT);
	int fds0 = vuf_count_fds();
	const struct {
		uint32_t req, size;
	} cases[] = {
		{VUF_GET_FEATURES, 8},      {VUF_SET_FEATURES, 0},      {VUF_SET_FEATURES, 4},
		{VUF_SET_FEATURES, 12},     {VUF_SET_OWNER, 1},         {VUF_SET_VRING_NUM, 4},
		{VUF_SET_VRING_NUM, 16},    {VUF_SET_VRING_BASE, 7},    {VUF_GET_VRING_BASE, 4},
		{VUF_SET_VRING_ADDR, 32},   {VUF_SET_VRING_ADDR, 48},   {VUF_SET_VRING_ENABLE, 9},
		{VUF_SET_STATUS, 1},        {VUF_GET_STATUS, 8},        {VUF_GET_QUEUE_NUM, 4},
		{VUF_SET_PROTOCOL_FEATURES, 16}, {VUF_GET_PROTOCOL_FEATURES, 8},
		{VUF_NET_SET_MTU, 2},       {VUF_SET_MEM_TABLE, 0},     {VUF_SET_MEM_TABLE, 4},
		{VUF_SET_MEM_TABLE, 12},    {VUF_SET_MEM_TABLE, 200},   {VUF_SET_MEM_TABLE, 512},
		{VUF_GET_MAX_MEM_SLOTS, 8}, {VUF_ADD_MEM_REG, 32},     {VUF_REM_MEM_REG, 48},
		{VUF_RESET_DEVICE, 8},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(vuf_msg(&f, cases[i].req, VUF_F_VERSION, big, cases[i].size, NULL, 0),
				 VL_ERR_VU_MSG);
		vuf_no_reply(&f);
	}
	/* A table announcing 2 regions but carrying 1 (with its fd). */
	uint32_t two = 2;

	memcpy(big, &two, 4);
	assert_int_equal(msg_fds(&f, VUF_SET_MEM_TABLE, big, 8 + 32, 1), VL_ERR_VU_MSG);
	assert_int_equal(vuf_count_fds(), fds0);
	vuf_still_moves(&f, 2);
	vuf_fini(&f);
}

static void test_bad_version_or_reply_flag_is_rejected(void **state)
{
	(void)state;
	struct vuf f;

	vuf_init(&f, NULL);
	assert_int_equal(vuf_msg(&f, VUF_GET_FEATURES, 0, NULL, 0, NULL, 0), VL_ERR_VU_MSG);
	assert_int_equal(vuf_msg(&f, VUF_GET_FEATURES, 2, NULL, 0, NULL, 0), VL_ERR_VU_MSG);
	assert_int_equal(vuf_msg(&f, VUF_GET_FEATURES, 3, NULL, 0, NULL, 0), VL_ERR_VU_MSG);
	assert_int_equal(vuf_msg(&f, VUF_GET_FEATURES, 1 | VUF_F_REPLY, NULL, 0, NULL, 0),
			 VL_ERR_VU_MSG);
	vuf_no_reply(&f);
	/* Unknown flag bits are not the version: tolerated. */
	assert_int_equal(vuf_msg(&f, VUF_GET_FEATURES, 1 | 0x100, NULL, 0, NULL, 0), VL_OK);
	assert_int_equal(vuf_reply(&f, VUF_GET_FEATURES, NULL), f.cfg.features);
	assert_int_equal(vuf_none(&f, 0), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_none(&f, 41), VL_ERR_VU_REQUEST);
	assert_int_equal(vuf_none(&f, UINT32_MAX), VL_ERR_VU_REQUEST);
	assert_int_equal(vl_vu_dev_last_request(f.dev), UINT32_MAX);
	vuf_no_reply(&f);
	vuf_fini(&f);
}

/* A payload larger than any request cannot be skipped safely: the connection is declared
 * unusable, everything released, descriptors closed. */
static void test_oversized_payload_ends_the_connection(void **state)
{
	(void)state;
	struct vuf f;
	uint32_t hdr[3] = {VUF_SET_OWNER, 1, 5000};

	start(&f, VL_LAYOUT_PACKED);
	int fds0 = vuf_count_fds();
	int ev = eventfd(0, EFD_CLOEXEC);

	assert_int_equal(lab_fd_send(f.fe, hdr, 12, &ev, 1), 12);
	close(ev);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_IO);
	assert_true(vl_vu_err_fatal(VL_ERR_VU_IO));
	/* Reset: both rings reported stopped, the device's kick/call fds and the one that
	 * came with the message closed, the table unmapped. */
	assert_false(f.ready[0] || f.ready[1]);
	assert_null(vl_vu_dev_mem(f.dev));
	assert_int_equal(vl_vu_dev_features(f.dev), 0);
	assert_int_equal(vuf_count_fds(), fds0 - 4);
	vuf_fini(&f);
}

/* Truncated reads: a header cut short, a payload cut short, then end of stream; and a
 * payload that stops arriving (the device gives up after VL_VU_IO_TIMEOUT_MS). */
static void test_truncated_messages(void **state)
{
	(void)state;
	struct vuf f;
	uint32_t hdr[3] = {VUF_SET_FEATURES, 1, 8};

	/* Header cut at 6 bytes, then the front end goes away. */
	start(&f, VL_LAYOUT_SPLIT);
	int fds0 = vuf_count_fds();

	assert_int_equal(send(f.fe, hdr, 6, 0), 6);
	shutdown(f.fe, SHUT_WR);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_CLOSED);
	assert_false(f.ready[0] || f.ready[1]);
	assert_int_equal(vuf_count_fds(), fds0 - 4); /* kick + call of both rings */
	vuf_fini(&f);

	/* Payload cut at 3 of 8 bytes, with a descriptor attached to the header. */
	vuf_init(&f, NULL);
	fds0 = vuf_count_fds();
	uint8_t part[15];

	memcpy(part, hdr, 12);
	memset(part + 12, 0, 3);
	int ev = eventfd(0, EFD_CLOEXEC);

	assert_int_equal(lab_fd_send(f.fe, part, sizeof(part), &ev, 1), (ssize_t)sizeof(part));
	close(ev);
	shutdown(f.fe, SHUT_WR);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_CLOSED);
	assert_int_equal(vuf_count_fds(), fds0);
	vuf_fini(&f);

	/* Payload stalls: the front end keeps the connection open but sends nothing more. */
	vuf_init(&f, NULL);
	fds0 = vuf_count_fds();
	assert_int_equal(send(f.fe, part, sizeof(part), 0), (ssize_t)sizeof(part));
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_IO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

	assert_true(waited >= VL_VU_IO_TIMEOUT_MS / 1000.0 * 0.9 && waited < 10.0);
	assert_int_equal(vuf_count_fds(), fds0);
	vuf_fini(&f);

	/* A non-blocking socket with nothing waiting: no message, not an error. */
	vuf_init(&f, NULL);
	assert_int_equal(fcntl(f.be, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_AGAIN);
	assert_false(vl_vu_err_fatal(VL_ERR_VU_AGAIN));
	/* ... and a message split in two sends is read whole. */
	assert_int_equal(send(f.fe, hdr, 12, 0), 12);
	assert_int_equal(send(f.fe, &(uint64_t){F(VL_F_VERSION_1)}, 8, 0), 8);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_OK);
	assert_int_equal(vl_vu_dev_features(f.dev), F(VL_F_VERSION_1));
	vuf_fini(&f);
}

/* ---- message order ---------------------------------------------------------------------- */

/* Ring messages before a memory table, before the ring's size, before the features; a kick
 * first of all. Refused where they cannot be checked (addresses need a table and a size),
 * remembered otherwise; the ring starts when its set is complete, whatever the order. */
static void test_messages_before_mem_table_or_before_the_ring_exists(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r;
	uint64_t d, a, u;

	vuf_init(&f, NULL);
	r = vuf_region(&f, 0, VUF_MEM_SIZE);
	vuf_ring_init(&f, 1, VL_LAYOUT_SPLIT, 32, false);
	vuf_ring_uaddrs(&f, 1, &d, &a, &u);
	/* GET_VRING_BASE of a ring never configured: a fresh ring's base. */
	assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, 1, 0), VL_OK);
	assert_int_equal(vuf_reply(&f, VUF_GET_VRING_BASE, NULL), 0);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, 1, 1), VL_OK);
	/* The kick first: the ring is started, nothing else. */
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_OK);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	/* Addresses before a table, then before a size. */
	assert_int_equal(vuf_addr(&f, 1, 0, d, u, a, 0), VL_ERR_VU_STATE);
	assert_int_equal(vuf_mem_table(&f, &r, 1), VL_OK);
	assert_int_equal(vuf_addr(&f, 1, 0, d, u, a, 0), VL_ERR_VU_STATE);
	assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, 1, 32), VL_OK);
	assert_null(vl_vu_dev_queue(f.dev, 1));
	/* The last piece: ready at once. */
	assert_int_equal(vuf_addr(&f, 1, 0, d, u, a, 0), VL_OK);
	assert_non_null(vl_vu_dev_queue(f.dev, 1));
	assert_true(f.ready[1]);
	/* Features afterwards may not change what the running ring was built with. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, F(VL_F_RING_PACKED)), VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, 0), VL_OK);
	vuf_fini(&f);
}

/* ---- disconnection ---------------------------------------------------------------------- */

/* The front end goes away in the middle of a message while rings run, with a log, kick,
 * call and err fds: everything is released, no fd is left, and the device serves the next
 * connection from scratch. */
static void scn_disconnect(enum vl_layout layout)
{
	struct vuf f;
	int fds_before = vuf_count_fds();

	start(&f, layout);
	assert_int_equal(msg_fds(&f, VUF_SET_VRING_ERR, &(uint64_t){0}, 8, 1), VL_OK);
	/* Traffic in flight: TX posted, not yet dequeued. */
	assert_true(vuf_post_tx(&f, 1, 300, 9) >= 0);
	uint32_t hdr[3] = {VUF_SET_VRING_ADDR, 1, 40};

	assert_int_equal(send(f.fe, hdr, 12, 0), 12);
	assert_int_equal(send(f.fe, hdr, 10, 0), 10);
	close(f.fe);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_CLOSED);
	assert_false(f.ready[0] || f.ready[1]);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	assert_null(vl_vu_dev_mem(f.dev));
	assert_int_equal(vl_vu_dev_kick_fd(f.dev, 0), -1);
	close(f.be);
	/* Only the fixture's own fds are left: guest memfd, its kick and call copies (4). */
	assert_int_equal(vuf_count_fds(), fds_before + 1 + 4);

	/* The next connection: a new socket, the same device. */
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f.fe = sv[0];
	f.be = sv[1];
	for (int q = 0; q < 2; q++) {
		close(f.kick[q]);
		close(f.call[q]);
		f.kick[q] = f.call[q] = -1;
	}
	vuf_dpdk_start(&f, FEATURES | (layout == VL_LAYOUT_PACKED ? F(VL_F_RING_PACKED) : 0),
		       layout, QSIZE, 2);
	vuf_still_moves(&f, 21);
	vuf_fini(&f);
	assert_int_equal(vuf_count_fds(), fds_before);
}

static void test_disconnect_mid_message_releases_everything_split(void **state)
{
	(void)state;
	scn_disconnect(VL_LAYOUT_SPLIT);
}

static void test_disconnect_mid_message_releases_everything_packed(void **state)
{
	(void)state;
	scn_disconnect(VL_LAYOUT_PACKED);
}

/* Junk written into the device's direction of the connection, without blocking, until the
 * socket takes no more: replies the front end never read. Returns the bytes written. */
static size_t fill_unread_replies(struct vuf *f)
{
	static const uint8_t junk[4096];
	size_t total = 0;

	for (;;) {
		ssize_t n = send(f->be, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0) {
			assert_true(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
			return total;
		}
		total += (size_t)n;
	}
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A front end that does not read its replies: the device waits for room at most
 * VL_VU_IO_TIMEOUT_MS, then gives the connection up (VL_ERR_VU_IO, fatal) and resets;
 * it never blocks for good. One that reads them late, within the time, gets the reply and
 * keeps its device. */
static void test_replies_not_read(void **state)
{
	(void)state;
	struct vuf f;
	struct timespec t0;

	start(&f, VL_LAYOUT_SPLIT);
	int fds0 = vuf_count_fds();

	assert_true(fill_unread_replies(&f) > 0);
	vuf_send(&f, VUF_GET_FEATURES, VUF_F_VERSION, NULL, 0, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_IO);
	const double waited = seconds_since(&t0);

	assert_true(waited >= VL_VU_IO_TIMEOUT_MS / 1000.0 * 0.9 && waited < 10.0);
	assert_true(vl_vu_err_fatal(VL_ERR_VU_IO));
	assert_null(vl_vu_dev_mem(f.dev));
	assert_false(f.ready[0] || f.ready[1]);
	assert_int_equal(vuf_count_fds(), fds0 - 4); /* kick + call of both rings */
	vuf_fini(&f);

	/* Late but alive: a child drains the unread bytes 200 ms from now. */
	start(&f, VL_LAYOUT_SPLIT);
	const size_t unread = fill_unread_replies(&f);
	const pid_t child = fork();

	assert_true(child >= 0);
	if (child == 0) {
		uint8_t buf[4096];
		size_t got = 0;

		usleep(200000);
		while (got < unread) {
			size_t want = unread - got < sizeof(buf) ? unread - got : sizeof(buf);
			ssize_t n = read(f.fe, buf, want);

			if (n <= 0)
				_exit(1);
			got += (size_t)n;
		}
		_exit(0);
	}
	vuf_send(&f, VUF_GET_FEATURES, VUF_F_VERSION, NULL, 0, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_OK);
	assert_true(seconds_since(&t0) >= 0.15);
	int status = 0;

	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	uint32_t size = 0;

	assert_int_equal(vuf_reply(&f, VUF_GET_FEATURES, &size) & FEATURES, FEATURES);
	assert_int_equal(size, 8);
	assert_non_null(vl_vu_dev_mem(f.dev));
	assert_true(f.ready[0] && f.ready[1]);
	vuf_fini(&f);
}

/* The front end closes before reading a reply: the reply fails, the device resets. */
static void test_peer_gone_before_the_reply(void **state)
{
	(void)state;
	struct vuf f;

	start(&f, VL_LAYOUT_SPLIT);
	vuf_send(&f, VUF_GET_FEATURES, VUF_F_VERSION, NULL, 0, NULL, 0);
	close(f.fe);
	f.fe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); /* for vuf_fini */
	assert_int_equal(vl_vu_dev_handle(f.dev, f.be), VL_ERR_VU_CLOSED);
	assert_null(vl_vu_dev_mem(f.dev));
	assert_false(f.ready[0] || f.ready[1]);
	vuf_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vring_index_beyond_the_rings_in_every_vring_message),
		cmocka_unit_test(test_vring_index_checked_against_the_configured_queue_pairs),
		cmocka_unit_test(test_vring_num_zero_odd_or_too_large_is_rejected),
		cmocka_unit_test(test_vring_num_changed_while_running_is_rejected),
		cmocka_unit_test(test_vring_num_repeated_does_not_leak),
		cmocka_unit_test(test_vring_addr_unmapped_or_misaligned_split),
		cmocka_unit_test(test_vring_addr_unmapped_or_misaligned_packed),
		cmocka_unit_test(test_vring_addr_while_running),
		cmocka_unit_test(test_ring_host_address_misaligned_by_a_region),
		cmocka_unit_test(test_vring_base_packed_index_beyond_size_or_inconsistent_wrap),
		cmocka_unit_test(test_vring_base_checked_again_at_start),
		cmocka_unit_test(test_vring_base_split_beyond_16_bits),
		cmocka_unit_test(test_vring_base_split_resync_to_used),
		cmocka_unit_test(test_unexpected_fds_are_closed),
		cmocka_unit_test(test_replaced_ring_fds_are_closed),
		cmocka_unit_test(test_payload_size_larger_or_smaller_than_needed),
		cmocka_unit_test(test_bad_version_or_reply_flag_is_rejected),
		cmocka_unit_test(test_oversized_payload_ends_the_connection),
		cmocka_unit_test(test_truncated_messages),
		cmocka_unit_test(test_messages_before_mem_table_or_before_the_ring_exists),
		cmocka_unit_test(test_disconnect_mid_message_releases_everything_split),
		cmocka_unit_test(test_disconnect_mid_message_releases_everything_packed),
		cmocka_unit_test(test_peer_gone_before_the_reply),
		cmocka_unit_test(test_replies_not_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Memory tables and the dirty log of the vhost-user device: the "memory table" and "log base"
 * rows of hostile-inputs.md (each rejection keeps the old table, closes every received fd and
 * maps nothing more), the table re-sent while traffic runs (DPDK brackets it with
 * SET_VRING_ENABLE 0/1, QEMU does not; the guest's memory grows from one region to several)
 * with every packet checked byte for byte, ADD/REM_MEM_REG as QEMU sends them with
 * CONFIGURE_MEM_SLOTS, and dirty logging switched on and off mid-traffic. */
#define _GNU_SOURCE /* memfd_create, eventfd */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vu_fixture.h"

#define F(bit) VL_FEATURE(bit)
#define FEATURES                                                                             \
	(F(VL_F_VERSION_1) | F(VL_F_NET_MRG_RXBUF) | F(VL_F_RING_EVENT_IDX) |                  \
	 F(VL_VU_F_PROTOCOL_FEATURES))
#define QSIZE 64u
#define MIB (1ull << 20)

static void start(struct vuf *f, enum vl_layout layout)
{
	vuf_init(f, NULL);
	vuf_dpdk_start(f, FEATURES | (layout == VL_LAYOUT_PACKED ? F(VL_F_RING_PACKED) : 0), layout,
		       QSIZE, 2);
}

/* KiB of the fixture's guest memfd mapped in this process (the front end's view and the
 * device's regions). Bytes, not mappings: the kernel merges neighbouring mappings of
 * consecutive file ranges into one. */
static int guest_mappings(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long long lo, hi, kib = 0;

	assert_non_null(m);
	while (fgets(line, sizeof(line), m))
		if (strstr(line, "memfd:vuf-guest") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			kib += (hi - lo) / 1024;
	fclose(m);
	return (int)kib;
}

#define KIB_OF(bytes) ((int)((bytes) / 1024))

/* SET_MEM_TABLE with the given regions and the given fds (the caller's, not closed here). */
static int table_fds(struct vuf *f, const struct vuf_region *r, uint32_t nregions,
		     uint32_t nsent, const int *fds, uint32_t nfds)
{
	uint8_t p[8 + 8 * 32] = {0};

	memcpy(p, &nregions, 4);
	for (uint32_t i = 0; i < nsent; i++)
		memcpy(p + 8 + 32 * i, &r[i], 32);
	return vuf_msg(f, VUF_SET_MEM_TABLE, VUF_F_VERSION, p, 8 + 32 * nsent, fds, nfds);
}

/* The same with n dups of the guest memfd. */
static int table_dups(struct vuf *f, const struct vuf_region *r, uint32_t nregions,
		      uint32_t nsent, uint32_t nfds)
{
	int fds[16];

	for (uint32_t i = 0; i < nfds; i++)
		fds[i] = dup(f->mem_fd);
	int rc = table_fds(f, r, nregions, nsent, fds, nfds);

	for (uint32_t i = 0; i < nfds; i++)
		close(fds[i]);
	return rc;
}

/* What a rejected table must leave: the same table, the same mappings, no new fd. */
struct kept {
	const struct vl_mem *mem;
	int fds, maps;
	uint32_t mem_events;
};

static struct kept kept_now(const struct vuf *f)
{
	struct kept k = {vl_vu_dev_mem(f->dev), vuf_count_fds(), guest_mappings(), f->mem_events};

	return k;
}

static void assert_kept(struct vuf *f, const struct kept *k, uint32_t seed)
{
	assert_ptr_equal(vl_vu_dev_mem(f->dev), k->mem);
	assert_int_equal(vuf_count_fds(), k->fds);
	assert_int_equal(guest_mappings(), k->maps);
	assert_int_equal(f->mem_events, k->mem_events);
	vuf_no_reply(f);
	vuf_still_moves(f, seed);
}

/* ---- memory table rows ------------------------------------------------------------------ */

static void test_mem_table_more_regions_than_allowed(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r[8];

	start(&f, VL_LAYOUT_SPLIT);
	for (uint32_t i = 0; i < 8; i++)
		r[i] = vuf_region(&f, i * 512 * 1024, 512 * 1024);
	struct kept k = kept_now(&f);

	assert_int_equal(table_dups(&f, r, 9, 8, 8), VL_ERR_TOO_MANY_REGIONS);
	assert_int_equal(table_dups(&f, r, UINT32_MAX, 8, 8), VL_ERR_TOO_MANY_REGIONS);
	assert_int_equal(table_dups(&f, r, 0x80000001u, 0, 0), VL_ERR_TOO_MANY_REGIONS);
	assert_kept(&f, &k, 1);
	/* Eight is the most a message carries, and fine. */
	assert_int_equal(table_dups(&f, r, 8, 8, 8), VL_OK);
	/* (Fewer when mappings happen to be adjacent in host memory too: vl_mem merges.) */
	assert_in_range(vl_mem_region_count(vl_vu_dev_mem(f.dev)), 1, 8);
	vuf_still_moves(&f, 2);
	vuf_fini(&f);
}

static void test_mem_table_fd_count_differs_from_region_count(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r[2];

	start(&f, VL_LAYOUT_PACKED);
	r[0] = vuf_region(&f, 0, 2 * MIB);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	struct kept k = kept_now(&f);

	assert_int_equal(table_dups(&f, r, 2, 2, 1), VL_ERR_VU_FDS);
	assert_int_equal(table_dups(&f, r, 2, 2, 3), VL_ERR_VU_FDS);
	assert_int_equal(table_dups(&f, r, 1, 1, 0), VL_ERR_VU_FDS);
	assert_int_equal(table_dups(&f, r, 0, 0, 1), VL_ERR_VU_FDS);
	assert_kept(&f, &k, 3);
	vuf_fini(&f);
}

static void test_mem_table_size_plus_offset_overflow(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r[2];

	start(&f, VL_LAYOUT_SPLIT);
	struct kept k = kept_now(&f);

	r[0] = vuf_region(&f, 0, 2 * MIB);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	r[1].offset = UINT64_MAX - 100;                    /* offset + size wraps */
	assert_int_equal(table_dups(&f, r, 2, 2, 2), VL_ERR_REGION_OVERFLOW);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	r[1].offset = UINT64_MAX - 2 * MIB + 1;            /* ends exactly at 2^64 */
	assert_int_equal(table_dups(&f, r, 2, 2, 2), VL_ERR_REGION_OVERFLOW);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	r[1].gpa = UINT64_MAX - 4095;                      /* guest range wraps */
	assert_int_equal(table_dups(&f, r, 2, 2, 2), VL_ERR_REGION_OVERFLOW);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	r[1].uaddr = UINT64_MAX - MIB;                     /* user range wraps */
	assert_int_equal(table_dups(&f, r, 2, 2, 2), VL_ERR_REGION_OVERFLOW);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	r[1].size = UINT64_MAX;                            /* everything wraps */
	assert_int_equal(table_dups(&f, r, 2, 2, 2), VL_ERR_REGION_OVERFLOW);
	assert_kept(&f, &k, 4);
	vuf_fini(&f);
}

static void test_mem_table_overlapping_regions(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r[3];

	start(&f, VL_LAYOUT_SPLIT);
	struct kept k = kept_now(&f);

	r[0] = vuf_region(&f, 0, 2 * MIB);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	r[2] = vuf_region(&f, 3 * MIB, MIB);
	r[2].gpa = VUF_GPA + 16 * MIB;
	r[2].uaddr += 64 * MIB;
	r[1].gpa = VUF_GPA + 2 * MIB - 4096;               /* guest ranges share a page */
	assert_int_equal(table_dups(&f, r, 3, 3, 3), VL_ERR_REGION_OVERLAP);
	r[1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	r[2].uaddr = r[1].uaddr + 2 * MIB - 1;             /* user ranges share a byte */
	assert_int_equal(table_dups(&f, r, 3, 3, 3), VL_ERR_REGION_OVERLAP);
	r[2] = r[0];                                       /* the same region twice */
	assert_int_equal(table_dups(&f, r, 3, 3, 3), VL_ERR_REGION_OVERLAP);
	assert_kept(&f, &k, 5);
	vuf_fini(&f);
}

static void test_mem_table_zero_size_region(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r[2];

	start(&f, VL_LAYOUT_PACKED);
	struct kept k = kept_now(&f);

	r[0] = vuf_region(&f, 0, 4 * MIB);
	r[1] = vuf_region(&f, 0, 0);
	r[1].gpa = VUF_GPA + 64 * MIB;
	assert_int_equal(table_dups(&f, r, 2, 2, 2), VL_ERR_REGION_ZERO_SIZE);
	assert_int_equal(table_dups(&f, &r[1], 1, 1, 1), VL_ERR_REGION_ZERO_SIZE);
	assert_kept(&f, &k, 6);
	vuf_fini(&f);
}

/* Regions the fd cannot back: past the end of the file (touching it would raise SIGBUS), an
 * fd that is no file (eventfd, pipe), a mapping the address space cannot hold. */
static void test_mem_table_region_the_fd_cannot_back(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r[2];
	int fds[2], p[2];

	start(&f, VL_LAYOUT_SPLIT);
	r[0] = vuf_region(&f, 0, 4 * MIB);
	r[1] = vuf_region(&f, 0, 4 * MIB);
	r[1].gpa += 64 * MIB;
	r[1].uaddr += 64 * MIB;
	struct kept k = kept_now(&f);

	fds[0] = dup(f.mem_fd);
	/* A region one page longer than its file, then one starting at its end. */
	fds[1] = dup(f.mem_fd);
	r[1].size = 4 * MIB + 4096;
	assert_int_equal(table_fds(&f, r, 2, 2, fds, 2), VL_ERR_VU_FILE_SHORT);
	r[1].size = 4096;
	r[1].offset = 4 * MIB;
	assert_int_equal(table_fds(&f, r, 2, 2, fds, 2), VL_ERR_VU_FILE_SHORT);
	close(fds[1]);
	/* Not a regular file. */
	r[1] = r[0];
	r[1].gpa += 64 * MIB;
	r[1].uaddr += 64 * MIB;
	fds[1] = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(table_fds(&f, r, 2, 2, fds, 2), VL_ERR_VU_MAP);
	close(fds[1]);
	assert_int_equal(pipe(p), 0);
	fds[1] = p[0];
	assert_int_equal(table_fds(&f, r, 2, 2, fds, 2), VL_ERR_VU_MAP);
	close(p[0]);
	close(p[1]);
	/* A sparse file as large as the address space: the mapping fails. */
	fds[1] = memfd_create("vuf-huge", MFD_CLOEXEC);
	assert_int_equal(ftruncate(fds[1], (off_t)(1ull << 48)), 0);
	r[1].size = (1ull << 48) - 4096;
	r[1].offset = 0;
	assert_int_equal(table_fds(&f, r, 2, 2, fds, 2), VL_ERR_VU_MAP);
	close(fds[1]);
	close(fds[0]);
	assert_kept(&f, &k, 7);
	vuf_fini(&f);
}

/* A table that leaves a running ring unmapped is refused whole: the queues already moved to
 * it go back, its mappings are undone. */
static void test_mem_table_without_a_running_ring_is_rejected(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region r[2];

	start(&f, VL_LAYOUT_SPLIT);
	struct kept k = kept_now(&f);

	/* Ring 0's areas (the first stride) and the buffers, not ring 1's areas. */
	r[0] = vuf_region(&f, 0, VUF_RING_STRIDE);
	r[1] = vuf_region(&f, VUF_RING_AREA, VUF_MEM_SIZE - VUF_RING_AREA);
	assert_int_equal(table_dups(&f, r, 2, 2, 2), VL_ERR_RING_UNMAPPED);
	/* No ring at all. */
	assert_int_equal(table_dups(&f, &r[1], 1, 1, 1), VL_ERR_RING_UNMAPPED);
	assert_int_equal(table_dups(&f, r, 0, 0, 0), VL_ERR_RING_UNMAPPED);
	assert_kept(&f, &k, 8);
	vuf_fini(&f);
}

/* ---- the table re-sent while traffic runs ----------------------------------------------- */

/* Rounds of traffic with packets posted before each new table and processed after it. The
 * guest's memory is announced as it grows (one region of 2 MiB, then 2, then 4 regions),
 * then cut differently. Every packet must arrive whole, in order, exactly once, and after
 * each swap the device holds only the mappings of the new table. */
static void scn_table_swap_mid_traffic(enum vl_layout layout, bool bracket)
{
	struct vuf f;
	uint32_t tx_seed = 100, rx_seed = 9000, id, len;
	struct vuf_region layouts[4][4];
	const uint32_t nregs[4] = {2, 4, 1, 3};

	start(&f, layout);
	const int kib0 = guest_mappings(); /* the front end's view and the first table */

	/* 1: two halves; 2: four quarters; 3: one region (a fresh fd); 4: thirds of sorts. */
	layouts[0][0] = vuf_region(&f, 0, 2 * MIB);
	layouts[0][1] = vuf_region(&f, 2 * MIB, 2 * MIB);
	for (uint32_t i = 0; i < 4; i++)
		layouts[1][i] = vuf_region(&f, i * MIB, MIB);
	layouts[2][0] = vuf_region(&f, 0, 4 * MIB);
	layouts[3][0] = vuf_region(&f, 0, MIB + 4096);
	layouts[3][1] = vuf_region(&f, MIB + 4096, MIB - 4096);
	layouts[3][2] = vuf_region(&f, 2 * MIB, 2 * MIB);

	for (uint32_t round = 0; round < 16; round++) {
		const uint32_t n = 20 + round, txlen = 64 + round * 61, rxlen = 1500 - round * 37;
		uint32_t tx_first = tx_seed;

		/* The guest posts; nothing is processed yet. */
		for (uint32_t i = 0; i < n; i++) {
			assert_true(vuf_post_tx(&f, 1, txlen, tx_seed + i) >= 0);
			assert_true(vuf_post_rx(&f, 0, VUF_BUF_SIZE) >= 0);
		}
		const struct vl_mem *old = vl_vu_dev_mem(f.dev);
		const uint32_t which = round % 4, events = f.mem_events;

		if (bracket)
			for (uint32_t q = 0; q < 2; q++)
				assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, q, 0), VL_OK);
		assert_int_equal(vuf_mem_table(&f, layouts[which], nregs[which]), VL_OK);
		assert_int_equal(f.mem_events, events + 1);
		assert_ptr_not_equal(vl_vu_dev_mem(f.dev), old);
		/* The old regions are unmapped: the new ones cover the same 4 MiB. */
		assert_int_equal(guest_mappings(), kib0);
		if (bracket) {
			assert_null(vl_vu_dev_queue(f.dev, 0));
			for (uint32_t q = 0; q < 2; q++)
				assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
		}
		/* Everything posted before the swap moves now, through the new mappings. */
		uint32_t got = 0;

		while (got < n)
			got += vuf_host_tx(&f, 1, txlen, &tx_seed);
		assert_int_equal(tx_seed, tx_first + n);
		assert_int_equal(vuf_host_rx(&f, 0, n, rxlen, rx_seed), n);
		for (uint32_t i = 0; i < n; i++) {
			assert_true(vuf_pop_used(&f, 1, &id, &len));
			assert_true(vuf_pop_used(&f, 0, &id, &len));
			assert_int_equal(len, VUF_HDR_LEN + rxlen);
			assert_true(vuf_check(vuf_buf(&f, 0, id) + VUF_HDR_LEN, rxlen, rx_seed + i));
		}
		assert_false(vuf_pop_used(&f, 1, &id, &len));
		assert_false(vuf_pop_used(&f, 0, &id, &len));
		rx_seed += n;
	}
	for (uint32_t q = 0; q < 2; q++)
		for (int r = 0; r < VL_DROP__COUNT; r++)
			assert_int_equal(vl_vq_stats(vl_vu_dev_queue(f.dev, q))->drops[r], 0);
	vuf_fini(&f);
	assert_int_equal(guest_mappings(), kib0 - KIB_OF(2 * VUF_MEM_SIZE));
}

static void test_mem_table_swapped_mid_traffic_dpdk_split(void **state)
{
	(void)state;
	scn_table_swap_mid_traffic(VL_LAYOUT_SPLIT, true);
}

static void test_mem_table_swapped_mid_traffic_dpdk_packed(void **state)
{
	(void)state;
	scn_table_swap_mid_traffic(VL_LAYOUT_PACKED, true);
}

static void test_mem_table_swapped_mid_traffic_unbracketed_split(void **state)
{
	(void)state;
	scn_table_swap_mid_traffic(VL_LAYOUT_SPLIT, false);
}

static void test_mem_table_swapped_mid_traffic_unbracketed_packed(void **state)
{
	(void)state;
	scn_table_swap_mid_traffic(VL_LAYOUT_PACKED, false);
}

/* ---- ADD_MEM_REG / REM_MEM_REG (CONFIGURE_MEM_SLOTS), as QEMU 7.2 sends them ------------ */

/* Post one TX buffer on ring 1 (packed) and point its descriptor at gpa instead of the
 * fixture's slot: the fixture writes descriptors only at its own slots. Rewriting the address
 * after the flags is safe here: nothing runs the queue until the test does. */
static void queue_tx_at(struct vuf *f, uint64_t gpa)
{
	struct vuf_ring *r = &f->ring[1];

	assert_true(vuf_post_tx(f, 1, 100, 99) >= 0);
	uint16_t pos = r->avail_pos ? (uint16_t)(r->avail_pos - 1) : (uint16_t)(r->size - 1);

	((struct vl_packed_desc *)r->desc)[pos].addr = gpa;
}

/* The same for an RX buffer on ring 0 (packed): the guest posts it, then its descriptor is
 * pointed at gpa. */
static void queue_rx_at(struct vuf *f, uint64_t gpa)
{
	struct vuf_ring *r = &f->ring[0];

	assert_true(vuf_post_rx(f, 0, VUF_BUF_SIZE) >= 0);
	uint16_t pos = r->avail_pos ? (uint16_t)(r->avail_pos - 1) : (uint16_t)(r->size - 1);

	((struct vl_packed_desc *)r->desc)[pos].addr = gpa;
}

static int mem_reg(struct vuf *f, uint32_t req, const struct vuf_region *r, int nfds)
{
	uint8_t p[40] = {0};
	int fds[2] = {dup(f->mem_fd), dup(f->mem_fd)};

	memcpy(p + 8, r, 32);
	int rc = vuf_msg(f, req, VUF_F_VERSION | VUF_F_NEED_REPLY, p, 40, fds, (uint32_t)nfds);

	close(fds[0]);
	close(fds[1]);
	assert_int_equal(vuf_reply(f, req, NULL), rc != VL_OK);
	return rc;
}

static void test_add_rem_mem_reg_qemu_sequence_packed(void **state)
{
	(void)state;
	struct vuf f;
	struct vuf_region rings, bufs, extra;
	uint64_t d, a, u;
	uint32_t id, len;
	const uint64_t features = FEATURES | F(VL_F_RING_PACKED);
	const uint64_t proto = VL_FEATURE(VL_VU_PROTOCOL_F_MQ) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD);

	vuf_init(&f, NULL);
	int fds0 = vuf_count_fds();

	rings = vuf_region(&f, 0, VUF_RING_AREA);
	bufs = vuf_region(&f, VUF_RING_AREA, VUF_MEM_SIZE - VUF_RING_AREA);
	/* ADD_MEM_REG before CONFIGURE_MEM_SLOTS was negotiated. */
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &rings, 1), VL_ERR_VU_STATE);
	/* vhost_user_backend_init: features, protocol features, queue count, slots. */
	assert_int_equal(vuf_get(&f, VUF_GET_FEATURES), f.cfg.features);
	assert_int_equal(vuf_get(&f, VUF_GET_PROTOCOL_FEATURES), f.cfg.protocol_features);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES, proto), VL_OK);
	assert_int_equal(vuf_get(&f, VUF_GET_QUEUE_NUM), 1);
	assert_int_equal(vuf_get(&f, VUF_GET_MAX_MEM_SLOTS), 509); /* up to 509 regions */
	assert_int_equal(vuf_none(&f, VUF_SET_OWNER), VL_OK);
	/* vhost_dev_start: features, memory one region at a time, then each ring. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, features), VL_OK);
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &rings, 1), VL_OK);
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &bufs, 1), VL_OK);
	const int kib0 = guest_mappings(); /* the front end's 4 MiB and these two */
	for (uint32_t q = 0; q < 2; q++) {
		vuf_ring_init(&f, q, VL_LAYOUT_PACKED, 256, false);
		vuf_ring_uaddrs(&f, q, &d, &a, &u);
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_NUM, q, 256), VL_OK);
		/* QEMU's packed base: avail | used << 16, both position 0 with wrap 1. */
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_BASE, q, 0x80008000u), VL_OK);
		assert_int_equal(vuf_addr(&f, q, 0, d, u, a, 0), VL_OK);
		f.kick[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		f.call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, q, f.kick[q]), VL_OK);
		assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_CALL, q, f.call[q]), VL_OK);
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
		assert_true(f.ready[q]);
	}
	vuf_still_moves(&f, 1);
	/* Memory hot-plugged and unplugged while traffic runs. */
	extra = vuf_region(&f, 0, MIB);
	extra.gpa = VUF_GPA + 64 * MIB;
	extra.uaddr += 64 * MIB;
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &extra, 1), VL_OK);
	assert_int_equal(guest_mappings(), kib0 + KIB_OF(MIB));
	vuf_still_moves(&f, 2);
	/* Overlapping what is there; without its fd. */
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &extra, 1), VL_ERR_REGION_OVERLAP);
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &extra, 0), VL_ERR_VU_FDS);
	/* Removal names gpa, user address and size; the offset does not matter, a stray fd is
	 * tolerated (and closed), two are not. */
	extra.offset = 12345;
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &extra, 2), VL_ERR_VU_FDS);
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &extra, 1), VL_OK);
	assert_int_equal(guest_mappings(), kib0);
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &extra, 0), VL_ERR_REGION_UNKNOWN);
	/* The region holding the rings cannot go while they run. */
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &rings, 0), VL_ERR_RING_UNMAPPED);
	assert_int_equal(guest_mappings(), kib0);
	vuf_still_moves(&f, 3);
	/* A region removed while a queued buffer still points into it (a guest unplugging
	 * memory it has not drained, or a hostile one): the removal goes through, and the
	 * chain is dropped as unmapped when the queue reaches it -- returned with length 0,
	 * counted, no byte read from the old mapping -- and the queue goes on. */
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &extra, 1), VL_OK);
	queue_tx_at(&f, extra.gpa);
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &extra, 0), VL_OK);
	assert_int_equal(guest_mappings(), kib0);
	uint64_t unmapped0 = vl_vq_stats(vl_vu_dev_queue(f.dev, 1))->drops[VL_DROP_UNMAPPED];
	uint32_t seed = 0;

	assert_int_equal(vuf_host_tx(&f, 1, 100, &seed), 0);
	assert_true(vuf_pop_used(&f, 1, &id, &len));
	assert_int_equal(len, 0);
	assert_int_equal(vl_vq_stats(vl_vu_dev_queue(f.dev, 1))->drops[VL_DROP_UNMAPPED],
			 unmapped0 + 1);
	assert_false(vl_vq_broken(vl_vu_dev_queue(f.dev, 1)));
	/* The same for an RX buffer the guest posted into the region before it went: the
	 * buffer comes back with length 0, counted as unmapped, nothing is written through the
	 * old mapping, and the queue goes on. */
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &extra, 1), VL_OK);
	queue_rx_at(&f, extra.gpa);
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &extra, 0), VL_OK);
	uint64_t rx_unmapped0 = vl_vq_stats(vl_vu_dev_queue(f.dev, 0))->drops[VL_DROP_UNMAPPED];

	assert_int_equal(vuf_host_rx(&f, 0, 1, 200, 77), 0); /* no other buffer: not placed */
	assert_true(vuf_pop_used(&f, 0, &id, &len));
	assert_int_equal(len, 0);
	assert_int_equal(vl_vq_stats(vl_vu_dev_queue(f.dev, 0))->drops[VL_DROP_UNMAPPED],
			 rx_unmapped0 + 1);
	assert_false(vl_vq_broken(vl_vu_dev_queue(f.dev, 0)));
	vuf_still_moves(&f, 5);
	/* Up to VL_VU_MAX_MEM_SLOTS regions, not one more. */
	for (uint32_t i = 2; i < VL_VU_MAX_MEM_SLOTS; i++) {
		struct vuf_region s = vuf_region(&f, 0, 4096);

		s.gpa = VUF_GPA + 128 * MIB + i * MIB;
		s.uaddr += 128 * MIB + i * MIB;
		assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &s, 1), VL_OK);
	}
	extra.gpa += 1024 * MIB; /* past the slots just added (128 MiB + up to 509 MiB) */
	extra.uaddr += 1024 * MIB;
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &extra, 1), VL_ERR_TOO_MANY_REGIONS);
	vuf_still_moves(&f, 4);
	/* vhost_dev_stop: disable, then GET_VRING_BASE: QEMU reads used back from the upper
	 * half. Both positions (wrap 1) count the buffers posted on each ring: five rounds of
	 * vuf_still_moves on both, and the TX chain and the RX buffer dropped as unmapped. */
	const uint32_t posted[2] = {6, 6};

	for (uint32_t q = 0; q < 2; q++) {
		assert_int_equal(vuf_state(&f, VUF_SET_VRING_ENABLE, q, 0), VL_OK);
		assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, q, 0), VL_OK);
		assert_int_equal(vuf_reply(&f, VUF_GET_VRING_BASE, NULL),
				 0x80008000u | posted[q] << 16 | posted[q]);
	}
	vuf_fini(&f);
	assert_int_equal(vuf_count_fds(), fds0 - 3 /* the fixture's guest memfd and sockets */);
}

/* ---- the log (CVE-2020-10722) ----------------------------------------------------------- */

static int log_base(struct vuf *f, uint64_t size, uint64_t offset, const int *fds, uint32_t n)
{
	uint64_t p[2] = {size, offset};

	return vuf_msg(f, VUF_SET_LOG_BASE, VUF_F_VERSION, p, 16, fds, n);
}

static void test_log_base_overflow_or_wrong_fd_count(void **state)
{
	(void)state;
	struct vuf f;
	int lfd[2];

	start(&f, VL_LAYOUT_SPLIT);
	lfd[0] = memfd_create("vuf-log", MFD_CLOEXEC);
	lfd[1] = dup(lfd[0]);
	assert_int_equal(ftruncate(lfd[0], 8192), 0);
	struct kept k = kept_now(&f);

	/* LOG_SHMFD was not negotiated by this front end. */
	assert_int_equal(log_base(&f, 4096, 0, lfd, 1), VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD)), VL_OK);
	assert_int_equal(log_base(&f, 4096, UINT64_MAX - 4000, lfd, 1), VL_ERR_REGION_OVERFLOW);
	assert_int_equal(log_base(&f, UINT64_MAX, 1, lfd, 1), VL_ERR_REGION_OVERFLOW);
	assert_int_equal(log_base(&f, 0, 0, lfd, 1), VL_ERR_REGION_ZERO_SIZE);
	assert_int_equal(log_base(&f, 8192, 4096, lfd, 1), VL_ERR_VU_FILE_SHORT); /* past the file */
	assert_int_equal(log_base(&f, 4096, 0, lfd, 0), VL_ERR_VU_FDS);
	assert_int_equal(log_base(&f, 4096, 0, lfd, 2), VL_ERR_VU_FDS);
	assert_int_equal(vuf_msg(&f, VUF_SET_LOG_BASE, VUF_F_VERSION, &(uint64_t){0}, 8, lfd, 1),
			 VL_ERR_VU_MSG);
	assert_kept(&f, &k, 9);
	close(lfd[0]);
	close(lfd[1]);
	vuf_fini(&f);
}

static bool page_marked(const uint8_t *bm, uint64_t gpa)
{
	uint64_t page = gpa / 4096;

	return (__atomic_load_n(&bm[page / 8], __ATOMIC_RELAXED) >> (page % 8)) & 1;
}

/* Migration as QEMU does it: SET_LOG_BASE (answered with an empty reply), SET_FEATURES with
 * LOG_ALL and the rings' addresses re-sent with the LOG flag, traffic (every page the device
 * writes is marked), then logging off again (nothing more is marked). */
static void test_log_marks_pages_while_log_all(void **state)
{
	(void)state;
	struct vuf f;
	uint32_t size, id, len;
	uint64_t d, a, u;

	start(&f, VL_LAYOUT_SPLIT);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD) |
					 VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK)), VL_OK);
	int lfd = memfd_create("vuf-log", MFD_CLOEXEC), fds0;

	assert_int_equal(ftruncate(lfd, 8192), 0);
	uint8_t *view = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, lfd, 0);
	const uint8_t *bm = view + 4096;

	assert_true(view != MAP_FAILED);
	fds0 = vuf_count_fds();
	assert_int_equal(log_base(&f, 4096, 4096, &lfd, 1), VL_OK);
	assert_int_equal(vuf_reply(&f, VUF_SET_LOG_BASE, &size), 0);
	assert_int_equal(size, 0);
	assert_int_equal(vuf_count_fds(), fds0); /* mapped, the fd not kept */

	/* Not yet LOG_ALL: traffic marks nothing. */
	vuf_still_moves(&f, 1);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(bm[i], 0);
	/* Logging on, mid-traffic, the way QEMU switches it. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, FEATURES | F(VL_VU_F_LOG_ALL)), VL_OK);
	for (uint32_t q = 0; q < 2; q++) {
		vuf_ring_uaddrs(&f, q, &d, &a, &u);
		assert_int_equal(vuf_addr(&f, q, 1, d, u, a, f.ring[q].device_gpa), VL_OK);
	}
	assert_true(vuf_post_rx(&f, 0, VUF_BUF_SIZE) >= 0);
	assert_int_equal(vuf_host_rx(&f, 0, 1, 1000, 77), 1);
	assert_true(vuf_pop_used(&f, 0, &id, &len));
	assert_true(page_marked(bm, f.ring[0].buf_gpa + (uint64_t)id * VUF_BUF_SIZE));
	assert_true(page_marked(bm, f.ring[0].device_gpa));
	assert_false(page_marked(bm, f.ring[1].device_gpa)); /* TX ring untouched so far */
	/* A new log replaces the old (which is unmapped); features off: no more marks. */
	assert_int_equal(log_base(&f, 4096, 0, &lfd, 1), VL_OK);
	assert_int_equal(vuf_reply(&f, VUF_SET_LOG_BASE, NULL), 0);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, FEATURES), VL_OK);
	memset(view, 0, 8192);
	vuf_still_moves(&f, 2);
	for (int i = 0; i < 8192; i++)
		assert_int_equal(view[i], 0);
	/* LOG_ALL again, without a new log base: the one mapped now (offset 0) is used. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, FEATURES | F(VL_F_RING_EVENT_IDX) |
						       F(VL_VU_F_LOG_ALL)), VL_OK);
	vuf_still_moves(&f, 3);
	assert_true(page_marked(view, f.ring[1].device_gpa));
	munmap(view, 8192);
	close(lfd);
	vuf_fini(&f);
}

static void test_features_and_log_all_while_running(void **state)
{
	(void)state;
	struct vuf f;

	start(&f, VL_LAYOUT_PACKED);
	const uint64_t now = vl_vu_dev_features(f.dev);

	/* Not offered. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, now | (1ull << 50)), VL_ERR_VU_FEATURES);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES, 1ull << 5), VL_ERR_VU_FEATURES);
	/* Changing a feature the queues were built with. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, now & ~F(VL_F_RING_PACKED)),
			 VL_ERR_VU_STATE);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, now | F(VL_F_IN_ORDER)), VL_ERR_VU_STATE);
	assert_int_equal(vl_vu_dev_features(f.dev), now);
	/* LOG_ALL on and off is fine. */
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, now | F(VL_VU_F_LOG_ALL)), VL_OK);
	assert_int_equal(vuf_u64(&f, VUF_SET_FEATURES, now), VL_OK);
	vuf_still_moves(&f, 1);
	vuf_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_table_more_regions_than_allowed),
		cmocka_unit_test(test_mem_table_fd_count_differs_from_region_count),
		cmocka_unit_test(test_mem_table_size_plus_offset_overflow),
		cmocka_unit_test(test_mem_table_overlapping_regions),
		cmocka_unit_test(test_mem_table_zero_size_region),
		cmocka_unit_test(test_mem_table_region_the_fd_cannot_back),
		cmocka_unit_test(test_mem_table_without_a_running_ring_is_rejected),
		cmocka_unit_test(test_mem_table_swapped_mid_traffic_dpdk_split),
		cmocka_unit_test(test_mem_table_swapped_mid_traffic_dpdk_packed),
		cmocka_unit_test(test_mem_table_swapped_mid_traffic_unbracketed_split),
		cmocka_unit_test(test_mem_table_swapped_mid_traffic_unbracketed_packed),
		cmocka_unit_test(test_add_rem_mem_reg_qemu_sequence_packed),
		cmocka_unit_test(test_log_base_overflow_or_wrong_fd_count),
		cmocka_unit_test(test_log_marks_pages_while_log_all),
		cmocka_unit_test(test_features_and_log_all_while_running),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

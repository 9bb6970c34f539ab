/* SPDX-License-Identifier: MIT */
/* The bad-input audit of the lifecycle messages (issue 58, "Bad input"): a log that does not
 * fit its file or does not cover guest memory (also when the table changes under a log in
 * use), a log before the features, ADD_MEM_REG overlapping or past the slots, REM_MEM_REG of
 * a region that is not there or that a running ring lies in. Each is refused with its own
 * error code, and the device keeps what it had: the same memory table (the same vl_mem), the
 * same mappings of the guest's and the log's memfds, the same features, no descriptor more
 * (every one that came with a refused message is closed), and traffic still moves. */
#define _GNU_SOURCE /* memfd_create */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vu_fixture.h"

#define F(bit) VL_FEATURE(bit)
#define FEATURES                                                                             \
	(F(VL_F_VERSION_1) | F(VL_F_NET_MRG_RXBUF) | F(VL_F_RING_EVENT_IDX) |                  \
	 F(VL_VU_F_PROTOCOL_FEATURES))
#define PROTO                                                                                \
	(VL_FEATURE(VL_VU_PROTOCOL_F_MQ) | VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |            \
	 VL_FEATURE(VL_VU_PROTOCOL_F_STATUS) | VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD) |        \
	 VL_FEATURE(VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
#define MIB (1ull << 20)

/* A running device (two rings, one region: the fixture's 4 MiB at gpa 1 MiB), then the
 * protocol features of a front end that migrates and hot-plugs. */
static void start(struct vuf *f, enum vl_layout layout)
{
	vuf_init(f, NULL);
	vuf_dpdk_start(f, FEATURES | (layout == VL_LAYOUT_PACKED ? F(VL_F_RING_PACKED) : 0), layout,
		       64, 2);
	assert_int_equal(vuf_u64(f, VUF_SET_PROTOCOL_FEATURES, PROTO), VL_OK);
}

/* KiB of memfds named `name` mapped in this process. */
static int mapped_kib(const char *name)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long long lo, hi, kib = 0;

	assert_non_null(m);
	while (fgets(line, sizeof(line), m))
		if (strstr(line, name) && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			kib += (hi - lo) / 1024;
	fclose(m);
	return (int)kib;
}

/* What a refused message must leave as it was. */
struct kept {
	const struct vl_mem *mem;
	uint64_t features;
	int fds, guest_kib, log_kib;
	uint32_t mem_events;
};

static struct kept kept_now(const struct vuf *f)
{
	struct kept k = {vl_vu_dev_mem(f->dev), vl_vu_dev_features(f->dev), vuf_count_fds(),
			 mapped_kib("memfd:vuf-guest"), mapped_kib("memfd:vuf-log"), f->mem_events};

	return k;
}

static void assert_kept(struct vuf *f, const struct kept *k, uint32_t seed)
{
	assert_ptr_equal(vl_vu_dev_mem(f->dev), k->mem);
	assert_int_equal(vl_vu_dev_features(f->dev), k->features);
	assert_int_equal(vuf_count_fds(), k->fds);
	assert_int_equal(mapped_kib("memfd:vuf-guest"), k->guest_kib);
	assert_int_equal(mapped_kib("memfd:vuf-log"), k->log_kib);
	assert_int_equal(f->mem_events, k->mem_events);
	vuf_still_moves(f, seed);
}

/* SET_LOG_BASE {size, offset} with one dup of fd; the REPLY_ACK-less reply is read on
 * success (it has no payload). */
static int log_base(struct vuf *f, int fd, uint64_t size, uint64_t offset)
{
	uint64_t p[2] = {size, offset};
	int dupfd = dup(fd);
	int rc = vuf_msg(f, VUF_SET_LOG_BASE, VUF_F_VERSION, p, 16, &dupfd, 1);
	uint32_t n;

	close(dupfd);
	if (rc == VL_OK) {
		assert_int_equal(vuf_reply(f, VUF_SET_LOG_BASE, &n), 0);
		assert_int_equal(n, 0);
	}
	vuf_no_reply(f);
	return rc;
}

static int memfd(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

/* ADD_MEM_REG / REM_MEM_REG with REPLY_ACK; the ack must say what the result says. */
static int mem_reg(struct vuf *f, uint32_t req, const struct vuf_region *r)
{
	uint8_t p[40] = {0};
	int fd = dup(f->mem_fd);

	memcpy(p + 8, r, 32);
	int rc = vuf_msg(f, req, VUF_F_VERSION | VUF_F_NEED_REPLY, p, 40, &fd,
			 req == VUF_ADD_MEM_REG ? 1 : 0);

	close(fd);
	assert_int_equal(vuf_reply(f, req, NULL), rc != VL_OK);
	return rc;
}

/* A 1 MiB region of the guest memfd (its first MiB again) at guest and user address + at. */
static struct vuf_region extra_region(const struct vuf *f, uint64_t at)
{
	struct vuf_region r = vuf_region(f, 0, MIB);

	r.gpa += at;
	r.uaddr += at;
	return r;
}

static int set_features(struct vuf *f, uint64_t features)
{
	return vuf_u64(f, VUF_SET_FEATURES, features);
}

/* ---- the log ---------------------------------------------------------------------------- */

static void test_log_past_the_end_of_its_file(void **state)
{
	(void)state;
	struct vuf f;
	int lfd = memfd("vuf-log", 8192);

	start(&f, VL_LAYOUT_SPLIT);
	struct kept k = kept_now(&f);

	assert_int_equal(log_base(&f, lfd, 8192, 4096), VL_ERR_VU_FILE_SHORT); /* size */
	assert_int_equal(log_base(&f, lfd, 4096, 8192), VL_ERR_VU_FILE_SHORT); /* offset */
	assert_int_equal(log_base(&f, lfd, 16384, 0), VL_ERR_VU_FILE_SHORT);
	assert_kept(&f, &k, 1);
	/* The file as it is: accepted, mapped, its fd not kept. */
	assert_int_equal(log_base(&f, lfd, 4096, 4096), VL_OK);
	assert_int_equal(vuf_count_fds(), k.fds);
	assert_int_equal(mapped_kib("memfd:vuf-log"), 4);
	close(lfd);
	vuf_fini(&f);
	assert_int_equal(mapped_kib("memfd:vuf-log"), 0);
}

/* The fixture's memory ends at gpa 5 MiB - 1: page 1279, bit 7 of byte 159 of the log. */
#define LOG_FITS 160u

static void test_log_too_small_for_guest_memory(void **state)
{
	(void)state;
	struct vuf f;
	int lfd = memfd("vuf-log", 8192);

	start(&f, VL_LAYOUT_SPLIT);
	struct kept k = kept_now(&f);

	assert_int_equal(log_base(&f, lfd, LOG_FITS - 1, 0), VL_ERR_LOG_TOO_SMALL);
	assert_kept(&f, &k, 1);
	assert_int_equal(log_base(&f, lfd, LOG_FITS, 0), VL_OK);
	close(lfd);
	vuf_fini(&f);
}

/* While logging is on, the table may not grow past the log (QEMU grows the log first); while
 * it is off, it may, and then logging cannot be switched on over that log. */
static void test_table_growing_past_a_log_in_use(void **state)
{
	(void)state;
	struct vuf f;
	int lfd = memfd("vuf-log", 8192);

	start(&f, VL_LAYOUT_PACKED);
	const uint64_t base = vl_vu_dev_features(f.dev);
	const struct vuf_region far = extra_region(&f, 64 * MIB);

	assert_int_equal(log_base(&f, lfd, LOG_FITS, 0), VL_OK);
	/* Logging off: the table may grow and shrink past the log. */
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &far), VL_OK);
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &far), VL_OK);
	/* Logging on: not by ADD_MEM_REG, not by SET_MEM_TABLE. */
	assert_int_equal(set_features(&f, base | F(VL_VU_F_LOG_ALL)), VL_OK);
	struct kept k = kept_now(&f);

	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &far), VL_ERR_LOG_TOO_SMALL);
	struct vuf_region two[2] = {vuf_region(&f, 0, VUF_MEM_SIZE), far};
	uint8_t p[8 + 2 * 32] = {2};
	int fds[2] = {dup(f.mem_fd), dup(f.mem_fd)};

	memcpy(p + 8, two, sizeof(two));
	assert_int_equal(vuf_msg(&f, VUF_SET_MEM_TABLE, VUF_F_VERSION, p, sizeof(p), fds, 2),
			 VL_ERR_LOG_TOO_SMALL);
	close(fds[0]);
	close(fds[1]);
	assert_kept(&f, &k, 2);
	/* Logging off, the table grows; LOG_ALL over the old log is then refused. */
	assert_int_equal(set_features(&f, base), VL_OK);
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &far), VL_OK);
	k = kept_now(&f);
	assert_int_equal(set_features(&f, base | F(VL_VU_F_LOG_ALL)), VL_ERR_LOG_TOO_SMALL);
	assert_kept(&f, &k, 3);
	/* A log large enough for the new table (8 KiB: 256 MiB): logging on, and the table
	 * may grow inside it but not past it. */
	assert_int_equal(log_base(&f, lfd, 8192, 0), VL_OK);
	assert_int_equal(set_features(&f, base | F(VL_VU_F_LOG_ALL)), VL_OK);
	const struct vuf_region inside = extra_region(&f, 200 * MIB);
	const struct vuf_region past = extra_region(&f, 256 * MIB);

	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &inside), VL_OK);
	k = kept_now(&f);
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &past), VL_ERR_LOG_TOO_SMALL);
	assert_kept(&f, &k, 4);
	close(lfd);
	vuf_fini(&f);
}

/* SET_LOG_BASE before SET_FEATURES, before LOG_SHMFD is negotiated, or to a device that does
 * not offer LOG_ALL. */
static void test_log_before_features_or_not_offered(void **state)
{
	(void)state;
	struct vuf f;
	struct vl_vu_config cfg;
	int lfd = memfd("vuf-log", 8192);

	vuf_init(&f, NULL);
	const int fds0 = vuf_count_fds();

	assert_int_equal(vuf_none(&f, VUF_SET_OWNER), VL_OK);
	assert_int_equal(log_base(&f, lfd, 4096, 0), VL_ERR_VU_STATE); /* no LOG_SHMFD yet */
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES, PROTO), VL_OK);
	assert_int_equal(log_base(&f, lfd, 4096, 0), VL_ERR_VU_STATE); /* no SET_FEATURES yet */
	assert_int_equal(vuf_count_fds(), fds0);
	assert_int_equal(mapped_kib("memfd:vuf-log"), 0);
	assert_int_equal(set_features(&f, FEATURES), VL_OK);
	assert_int_equal(log_base(&f, lfd, 4096, 0), VL_OK);
	/* RESET_DEVICE forgets the features: a log must wait for them again. */
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 PROTO | VL_FEATURE(VL_VU_PROTOCOL_F_RESET_DEVICE)), VL_OK);
	assert_int_equal(vuf_none(&f, VUF_RESET_DEVICE), VL_OK);
	assert_int_equal(mapped_kib("memfd:vuf-log"), 0);
	assert_int_equal(log_base(&f, lfd, 4096, 0), VL_ERR_VU_STATE);
	vuf_fini(&f);

	vl_vu_config_init(&cfg);
	cfg.features &= ~F(VL_VU_F_LOG_ALL);
	vuf_init(&f, &cfg);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES, PROTO), VL_OK);
	assert_int_equal(set_features(&f, FEATURES), VL_OK);
	assert_int_equal(log_base(&f, lfd, 4096, 0), VL_ERR_VU_REQUEST);
	assert_int_equal(mapped_kib("memfd:vuf-log"), 0);
	vuf_fini(&f);
	close(lfd);
}

/* ---- ADD_MEM_REG / REM_MEM_REG ---------------------------------------------------------- */

static void test_add_mem_reg_overlapping_or_past_the_slots(void **state)
{
	(void)state;
	struct vuf f;

	start(&f, VL_LAYOUT_SPLIT);
	struct vuf_region r = extra_region(&f, 64 * MIB);
	struct kept k = kept_now(&f);

	/* Overlapping the table in guest-physical space only, then in user addresses only. */
	r.gpa = VUF_GPA + VUF_MEM_SIZE - 4096;
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &r), VL_ERR_REGION_OVERLAP);
	r = extra_region(&f, 64 * MIB);
	r.uaddr = (uint64_t)(uintptr_t)f.mem + 4096;
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &r), VL_ERR_REGION_OVERLAP);
	assert_kept(&f, &k, 1);
	/* Up to the slots (the fixture's region is one), then one more. */
	for (uint32_t i = 1; i < VL_VU_MAX_MEM_SLOTS; i++) {
		struct vuf_region s = vuf_region(&f, 0, 4096);

		s.gpa += 64 * MIB + i * MIB;
		s.uaddr += 64 * MIB + i * MIB;
		assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &s), VL_OK);
	}
	k = kept_now(&f);
	r = extra_region(&f, 1024 * MIB);
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &r), VL_ERR_TOO_MANY_REGIONS);
	assert_kept(&f, &k, 2);
	vuf_fini(&f);
}

static void test_rem_mem_reg_of_a_region_not_present(void **state)
{
	(void)state;
	struct vuf f;

	start(&f, VL_LAYOUT_SPLIT);
	const struct vuf_region there = extra_region(&f, 64 * MIB);
	struct vuf_region r;

	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &there), VL_OK);
	struct kept k = kept_now(&f);

	/* Each of gpa, user address and size must match; a region that never was. */
	r = there;
	r.gpa += 4096;
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &r), VL_ERR_REGION_UNKNOWN);
	r = there;
	r.uaddr += 4096;
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &r), VL_ERR_REGION_UNKNOWN);
	r = there;
	r.size -= 4096;
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &r), VL_ERR_REGION_UNKNOWN);
	r = extra_region(&f, 512 * MIB);
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &r), VL_ERR_REGION_UNKNOWN);
	assert_kept(&f, &k, 1);
	/* Removed once; the second time it is not there. */
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &there), VL_OK);
	k = kept_now(&f);
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &there), VL_ERR_REGION_UNKNOWN);
	assert_kept(&f, &k, 2);
	vuf_fini(&f);
}

/* The rings lie in the fixture's region: it cannot go while they run. Once they are stopped
 * it can; a ring started again over it then fails at its start (its addresses are translated
 * again there), and the front end's next table brings it back. */
static void test_rem_mem_reg_while_a_ring_points_into_it(void **state)
{
	(void)state;
	struct vuf f;

	start(&f, VL_LAYOUT_PACKED);
	const struct vuf_region all = vuf_region(&f, 0, VUF_MEM_SIZE);
	struct kept k = kept_now(&f);

	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &all), VL_ERR_RING_UNMAPPED);
	assert_kept(&f, &k, 1);
	for (uint32_t q = 0; q < 2; q++) {
		assert_int_equal(vuf_state(&f, VUF_GET_VRING_BASE, q, 0), VL_OK);
		(void)vuf_reply(&f, VUF_GET_VRING_BASE, NULL);
	}
	assert_int_equal(mem_reg(&f, VUF_REM_MEM_REG, &all), VL_OK);
	/* The table is empty (no region), the device's mapping gone: only the fixture's own. */
	assert_int_equal(mapped_kib("memfd:vuf-guest"), (int)(VUF_MEM_SIZE / 1024));
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_ERR_RING_UNMAPPED);
	assert_null(vl_vu_dev_queue(f.dev, 0));
	assert_int_equal(mem_reg(&f, VUF_ADD_MEM_REG, &all), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 0, -1), VL_OK);
	assert_int_equal(vuf_ring_fd(&f, VUF_SET_VRING_KICK, 1, -1), VL_OK);
	assert_non_null(vl_vu_dev_queue(f.dev, 0));
	assert_non_null(vl_vu_dev_queue(f.dev, 1));
	vuf_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_past_the_end_of_its_file),
		cmocka_unit_test(test_log_too_small_for_guest_memory),
		cmocka_unit_test(test_table_growing_past_a_log_in_use),
		cmocka_unit_test(test_log_before_features_or_not_offered),
		cmocka_unit_test(test_add_mem_reg_overlapping_or_past_the_slots),
		cmocka_unit_test(test_rem_mem_reg_of_a_region_not_present),
		cmocka_unit_test(test_rem_mem_reg_while_a_ring_points_into_it),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

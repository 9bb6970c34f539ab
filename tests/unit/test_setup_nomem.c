/* SPDX-License-Identifier: MIT */
/* Every control-path allocation of the core can fail: make each one fail in turn (SQLite's
 * countdown method) and check the call reports it cleanly -- NULL and VL_ERR_NOMEM, nothing
 * leaked (valgrind and LeakSanitizer run this test), and the next attempt succeeds. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "vhostlab/vhostlab.h"
#include "vl_lab_control.h"

static uint8_t guest[1 << 16] __attribute__((aligned(4096)));

static struct vl_mem *make_mem(int *err)
{
	struct vl_mem_region r[2] = {
		{.gpa = 0, .size = sizeof(guest) / 2, .host = guest},
		{.gpa = 0x100000, .size = sizeof(guest) / 2, .host = guest + sizeof(guest) / 2},
	};

	return vl_mem_create(r, 2, err);
}

/* Fails allocation 0, 1, 2, ... of create() until it succeeds; returns how many allocations
 * a successful call makes. */
static uint64_t countdown(void *(*create)(int *err), void (*destroy)(void *))
{
	for (uint64_t n = 0;; n++) {
		int err = VL_OK;

		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER, &(struct vl_lab_arg){.count = n});
		void *obj = create(&err);

		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER,
			       &(struct vl_lab_arg){.count = VL_LAB_NEVER});
		if (obj) {
			assert_int_equal(err, VL_OK);
			destroy(obj);
			return n;
		}
		assert_int_equal(err, VL_ERR_NOMEM);
		assert_true(n < 64); /* a create makes a handful of allocations */
	}
}

static void *mem_create(int *err) { return make_mem(err); }
static void mem_destroy(void *p) { vl_mem_destroy(p); }

static struct vl_mem *shared_mem;

static void *vq_create(int *err, enum vl_layout layout)
{
	struct vl_vq_config cfg;

	vl_vq_config_init(&cfg, layout, 64);
	cfg.desc_gpa = 0;
	cfg.driver_gpa = 0x1000;
	cfg.device_gpa = 0x2000;
	return vl_vq_create(shared_mem, &cfg, err);
}

static void *split_create(int *err) { return vq_create(err, VL_LAYOUT_SPLIT); }
static void *packed_create(int *err) { return vq_create(err, VL_LAYOUT_PACKED); }
static void vq_destroy(void *p) { vl_vq_destroy(p); }

static void *pool_create(int *err)
{
	struct vl_pool *p = vl_pool_create(16, 256);

	*err = p ? VL_OK : VL_ERR_NOMEM;
	return p;
}

static void pool_destroy(void *p) { assert_int_equal(vl_pool_destroy(p), 0); }

static void test_mem_create_nomem(void **state)
{
	(void)state;
	/* The table itself, its sorted copy and its ranges. */
	assert_int_equal(countdown(mem_create, mem_destroy), 3);
}

static void test_vq_create_nomem(void **state)
{
	(void)state;
	int err;

	shared_mem = make_mem(&err);
	assert_non_null(shared_mem);
	uint64_t split = countdown(split_create, vq_destroy);
	uint64_t packed = countdown(packed_create, vq_destroy);

	/* The queue, its shadow used ring, copy batch, piece vector, indirect copy-out buffer,
	 * RX reservation, deferral and header arrays, dequeue heads, the walk's visit stamps
	 * (10), and the four zero-copy lease tables; packed adds the scan's flags and chain
	 * tables. */
	assert_int_equal(split, 14);
	assert_int_equal(packed, split + 2);
	vl_mem_destroy(shared_mem);
}

static void test_pool_create_nomem(void **state)
{
	(void)state;
	/* The pool, its free stack, its descriptors, its storage. */
	assert_int_equal(countdown(pool_create, pool_destroy), 4);
}

static void test_counter_counts(void **state)
{
	(void)state;
	int err;
	struct vl_lab_arg before = {0}, after = {0};

	vl_lab_control(VL_LAB_ALLOC_COUNT, &before);
	struct vl_mem *m = make_mem(&err);

	assert_non_null(m);
	vl_lab_control(VL_LAB_ALLOC_COUNT, &after);
	assert_int_equal(after.count - before.count, 3);
	vl_mem_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_create_nomem),
		cmocka_unit_test(test_vq_create_nomem),
		cmocka_unit_test(test_pool_create_nomem),
		cmocka_unit_test(test_counter_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

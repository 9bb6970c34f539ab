/* SPDX-License-Identifier: MIT */
/* sim/ring_write.h, the one writer of guest-side ring structures, byte by byte: a split chain
 * at chosen indices (NEXT and next links), avail slot and index, used_event; a packed chain
 * across the ring's end (positions, wrap bits, junk ids but in the last, NEXT); indirect
 * tables in both formats at an unaligned pointer; the event area. Order is checked too:
 * ring_write.c is compiled into this test with its atomic stores recorded, so each test
 * sees every publishing store in turn, with the ring as it was just before it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "ring_write.h"

/* ---- the recorded stores -------------------------------------------------------------- */

#define WATCH_BYTES 256u
#define MAX_STORES 32u

struct store {
	size_t off;                    /* from the watched buffer */
	uint16_t value;
	int order;
	uint8_t before[WATCH_BYTES];   /* the watched buffer just before the store */
};

static uint8_t *watch;             /* the buffer whose stores are recorded */
static size_t watch_len;
static struct store stores[MAX_STORES];
static unsigned nstores;

/* Record the stores into buf from now on (NULL: stop recording, keep what was recorded). */
static void watch_buffer(void *buf, size_t len)
{
	watch = buf;
	watch_len = len < WATCH_BYTES ? len : WATCH_BYTES;
	if (buf)
		nstores = 0;
}

/* Every atomic store of ring_write.c comes here: recorded, then done. All are 16-bit. */
static void record_store(uint16_t *p, uint16_t v, int order)
{
	uint8_t *at = (uint8_t *)p;

	if (watch && at >= watch && at < watch + watch_len && nstores < MAX_STORES) {
		struct store *s = &stores[nstores++];

		s->off = (size_t)(at - watch);
		s->value = v;
		s->order = order;
		memcpy(s->before, watch, watch_len);
	}
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

#define __atomic_store_n(p, v, o) record_store((p), (uint16_t)(v), (o))
#include "../../sim/ring_write.c"
#undef __atomic_store_n

/* ---- helpers -------------------------------------------------------------------------- */

static struct vl_split_desc split_at(const void *table, uint32_t i)
{
	struct vl_split_desc d;

	memcpy(&d, (const uint8_t *)table + 16 * i, 16);
	return d;
}

static struct vl_packed_desc packed_at(const void *table, uint32_t i)
{
	struct vl_packed_desc d;

	memcpy(&d, (const uint8_t *)table + 16 * i, 16);
	return d;
}

/* ---- split ---------------------------------------------------------------------------- */

/* A chain at indices 5, 2, 7: each links to the next index listed, NEXT on all but the last,
 * whose next is 0; the element's own flags kept; nothing else in the table touched. */
static void test_split_chain_links_the_given_indices(void **state)
{
	(void)state;
	_Alignas(16) uint8_t table[8 * 16];
	const uint16_t idx[3] = {5, 2, 7};
	const struct lab_pdesc e[3] = {
		{0x1000, 10, 0}, {0x2000, 20, VL_DESC_F_WRITE}, {0x3000, 30, VL_DESC_F_WRITE},
	};

	memset(table, 0xEE, sizeof(table));
	lab_rw_split_chain(table, idx, e, 3);

	struct vl_split_desc d5 = split_at(table, 5), d2 = split_at(table, 2), d7 = split_at(table, 7);

	assert_int_equal(d5.addr, 0x1000);
	assert_int_equal(d5.len, 10);
	assert_int_equal(d5.flags, VL_DESC_F_NEXT);
	assert_int_equal(d5.next, 2);
	assert_int_equal(d2.addr, 0x2000);
	assert_int_equal(d2.flags, VL_DESC_F_NEXT | VL_DESC_F_WRITE);
	assert_int_equal(d2.next, 7);
	assert_int_equal(d7.addr, 0x3000);
	assert_int_equal(d7.len, 30);
	assert_int_equal(d7.flags, VL_DESC_F_WRITE);
	assert_int_equal(d7.next, 0);
	for (uint32_t i = 0; i < 8; i++) {
		if (i == 5 || i == 2 || i == 7)
			continue;
		for (uint32_t b = 0; b < 16; b++)
			assert_int_equal(table[16 * i + b], 0xEE);
	}
}

/* The avail slot is the driver's index modulo the size (a plain store), avail->idx the one
 * release store, used_event sits after the ring and is sequentially consistent. */
static void test_split_avail_publish_and_events(void **state)
{
	(void)state;
	_Alignas(16) uint8_t area[6 + 2 * 8];
	struct vl_split_avail *avail = (struct vl_split_avail *)(void *)area;

	memset(area, 0, sizeof(area));
	watch_buffer(area, sizeof(area));
	lab_rw_split_avail(avail, 8, 0xFFFF, 5);   /* slot 0xFFFF % 8 = 7 */
	lab_rw_split_avail(avail, 8, 0x0000, 6);   /* across the 16-bit wrap: slot 0 */
	assert_int_equal(nstores, 0);
	assert_int_equal(avail->ring[7], 5);
	assert_int_equal(avail->ring[0], 6);

	lab_rw_split_publish(avail, 1);
	assert_int_equal(nstores, 1);
	assert_int_equal(stores[0].off, offsetof(struct vl_split_avail, idx));
	assert_int_equal(stores[0].order, __ATOMIC_RELEASE);
	assert_int_equal(avail->idx, 1);

	lab_rw_split_used_event(avail, 8, 0x1234);
	assert_int_equal(nstores, 2);
	assert_int_equal(stores[1].off, 4 + 2 * 8);
	assert_int_equal(stores[1].order, __ATOMIC_SEQ_CST);
	assert_int_equal(avail->ring[8], 0x1234);

	lab_rw_split_avail_flags(avail, VL_AVAIL_F_NO_INTERRUPT);
	assert_int_equal(stores[2].off, 0);
	assert_int_equal(avail->flags, VL_AVAIL_F_NO_INTERRUPT);
	watch_buffer(NULL, 0);
}

/* ---- packed --------------------------------------------------------------------------- */

/* Four elements from position 6 of an 8-entry ring, wrap counter 1: positions 6, 7, 0, 1;
 * the first two carry AVAIL (counter 1), the last two USED (the counter flipped at the end);
 * NEXT on all but position 1; the id in position 1 only, junk elsewhere; the cursor ends at
 * (2, 0). The head's flags are the last store, after every other descriptor is complete, and
 * no earlier store let the head look available. */
static void test_packed_chain_across_the_ring_end(void **state)
{
	(void)state;
	_Alignas(16) uint8_t ring_bytes[8 * 16];
	struct vl_packed_desc *ring = (struct vl_packed_desc *)(void *)ring_bytes;
	const struct lab_pdesc e[4] = {
		{0x1000, 10, 0}, {0x2000, 20, 0}, {0x3000, 30, VL_DESC_F_WRITE},
		{0x4000, 40, VL_DESC_F_WRITE},
	};
	const uint16_t id = 3, head = 6;
	const uint16_t want_pos[4] = {6, 7, 0, 1};
	uint16_t pos = head;
	bool wrap = true;

	memset(ring_bytes, 0, sizeof(ring_bytes));
	memset(ring_bytes + 16 * 2, 0xEE, 16 * 4);   /* positions 2-5: not ours */
	watch_buffer(ring_bytes, sizeof(ring_bytes));
	lab_rw_packed_chain(ring, 8, &pos, &wrap, id, e, 4);
	watch_buffer(NULL, 0);

	assert_int_equal(pos, 2);
	assert_false(wrap);
	for (uint32_t i = 0; i < 4; i++) {
		struct vl_packed_desc d = packed_at(ring, want_pos[i]);
		uint16_t bits = i < 2 ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED;
		uint16_t next = i < 3 ? VL_DESC_F_NEXT : 0;

		assert_int_equal(d.addr, e[i].addr);
		assert_int_equal(d.len, e[i].len);
		assert_int_equal(d.flags, e[i].flags | bits | next);
		if (i < 3) {
			assert_int_not_equal(d.id, id);
			assert_int_equal(d.id, lab_pring_junk_id(id, want_pos[i]));
		} else {
			assert_int_equal(d.id, id);
		}
	}
	for (uint32_t b = 16 * 2; b < 16 * 6; b++)
		assert_int_equal(ring_bytes[b], 0xEE);

	/* One release store of flags per descriptor, the head's last. */
	assert_int_equal(nstores, 4);
	for (uint32_t k = 0; k < nstores; k++) {
		assert_int_equal(stores[k].order, __ATOMIC_RELEASE);
		assert_int_equal(stores[k].off % 16, offsetof(struct vl_packed_desc, flags));
	}
	const struct store *last = &stores[nstores - 1];

	assert_int_equal(last->off, 16u * head + 14);
	for (uint32_t k = 0; k + 1 < nstores; k++)
		assert_int_equal(packed_at(stores[k].before, head).flags, 0);
	/* Just before the head's flags: everything else is final already. */
	assert_memory_equal(last->before, ring_bytes, 16u * head + 14);
	assert_memory_equal(last->before + 16 * head + 16, ring_bytes + 16 * head + 16, 16);
	/* Each tail descriptor's body was written before its flags. */
	for (uint32_t k = 0; k + 1 < nstores; k++) {
		uint32_t p = (uint32_t)(stores[k].off / 16);

		assert_memory_equal(stores[k].before + 16 * p, ring_bytes + 16 * p, 14);
	}
}

/* A one-descriptor chain carries the real id, no NEXT; the pinned junk value keeps recorded
 * workloads what they were (a change here changes what every lab run writes). */
static void test_packed_single_and_junk_ids(void **state)
{
	(void)state;
	_Alignas(16) uint8_t ring_bytes[4 * 16] = {0};
	struct vl_packed_desc *ring = (struct vl_packed_desc *)(void *)ring_bytes;
	const struct lab_pdesc e = {0x5000, 64, VL_DESC_F_INDIRECT};
	uint16_t pos = 3;
	bool wrap = false;

	lab_rw_packed_chain(ring, 4, &pos, &wrap, 2, &e, 1);
	assert_int_equal(pos, 0);
	assert_true(wrap);
	assert_int_equal(ring[3].id, 2);
	assert_int_equal(ring[3].flags, VL_DESC_F_INDIRECT | VL_PDESC_F_USED);

	assert_int_equal(lab_pring_junk_id(3, 6), 0xF641);
	for (uint32_t id = 0; id < 64; id++)
		for (uint32_t p = 0; p < 64; p++)
			assert_int_not_equal(lab_pring_junk_id((uint16_t)id, (uint16_t)p), id);
}

/* A raw descriptor: body first, then its flags exactly as given with one release store; a
 * flags-only write leaves the body alone. */
static void test_packed_raw_desc_and_flags(void **state)
{
	(void)state;
	_Alignas(16) uint8_t ring_bytes[4 * 16] = {0};
	struct vl_packed_desc *ring = (struct vl_packed_desc *)(void *)ring_bytes;
	const uint16_t lie = VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_NEXT;

	watch_buffer(ring_bytes, sizeof(ring_bytes));
	lab_rw_packed_desc(ring, 2, 0xABCD, 99, 0xFFFF, lie);
	assert_int_equal(nstores, 1);
	assert_int_equal(stores[0].off, 16 * 2 + 14);
	assert_int_equal(stores[0].order, __ATOMIC_RELEASE);
	assert_int_equal(packed_at(stores[0].before, 2).addr, 0xABCD);
	assert_int_equal(packed_at(stores[0].before, 2).id, 0xFFFF);
	assert_int_equal(ring[2].flags, lie);

	lab_rw_packed_flags(ring, 2, VL_PDESC_F_AVAIL);
	assert_int_equal(nstores, 2);
	assert_int_equal(ring[2].flags, VL_PDESC_F_AVAIL);
	assert_int_equal(ring[2].addr, 0xABCD);
	assert_int_equal(ring[2].len, 99);
	watch_buffer(NULL, 0);
}

/* The driver event area: off_wrap before flags, and only when flags asks for DESC. */
static void test_packed_event_area(void **state)
{
	(void)state;
	struct vl_packed_event ev = {0x7777, 0};

	watch_buffer(&ev, sizeof(ev));
	lab_rw_packed_event(&ev, VL_RING_EVENT_DESC, 0x8005);
	assert_int_equal(nstores, 2);
	assert_int_equal(stores[0].off, offsetof(struct vl_packed_event, off_wrap));
	assert_int_equal(stores[1].off, offsetof(struct vl_packed_event, flags));
	assert_int_equal(stores[1].order, __ATOMIC_SEQ_CST);
	assert_int_equal(ev.off_wrap, 0x8005);
	assert_int_equal(ev.flags, VL_RING_EVENT_DESC);

	lab_rw_packed_event(&ev, VL_RING_EVENT_DISABLE, 0x0001);
	assert_int_equal(nstores, 3);
	assert_int_equal(ev.off_wrap, 0x8005);
	assert_int_equal(ev.flags, VL_RING_EVENT_DISABLE);
	watch_buffer(NULL, 0);
}

/* ---- indirect tables ------------------------------------------------------------------ */

/* Tables at an odd address (a fuzzer's may be anywhere): split entries chained 0 -> 1 -> 2;
 * packed entries consecutive, flags as given without NEXT, ids junk; no atomic stores. */
static void test_tables_in_both_formats(void **state)
{
	(void)state;
	uint8_t buf[1 + 3 * 16];
	uint8_t *t = buf + 1;
	const struct lab_pdesc e[3] = {
		{0x100, 12, 0}, {0x200, 0, VL_DESC_F_WRITE}, {0x300, 1500, VL_DESC_F_WRITE},
	};

	watch_buffer(buf, sizeof(buf));
	lab_rw_split_table(t, e, 3);
	for (uint32_t i = 0; i < 3; i++) {
		struct vl_split_desc d = split_at(t, i);

		assert_int_equal(d.addr, e[i].addr);
		assert_int_equal(d.len, e[i].len);
		assert_int_equal(d.flags, e[i].flags | (i < 2 ? VL_DESC_F_NEXT : 0));
		assert_int_equal(d.next, i < 2 ? i + 1 : 0);
	}
	lab_rw_packed_table(t, e, 3);
	for (uint32_t i = 0; i < 3; i++) {
		struct vl_packed_desc d = packed_at(t, i);

		assert_int_equal(d.addr, e[i].addr);
		assert_int_equal(d.len, e[i].len);
		assert_int_equal(d.flags, e[i].flags | lab_pring_table_junk_flags(i));
		assert_int_equal(d.id, lab_pring_junk_id(0, (uint16_t)i));
	}
	/* One raw entry of each format, exactly as given. */
	lab_rw_split_desc(t, 1, 0xAAAA, 7, VL_DESC_F_NEXT, 0xBEEF);
	assert_int_equal(split_at(t, 1).next, 0xBEEF);
	lab_rw_packed_entry(t, 2, 0xBBBB, 8, 0x1234, VL_DESC_F_INDIRECT);
	assert_int_equal(packed_at(t, 2).id, 0x1234);
	assert_int_equal(packed_at(t, 2).flags, VL_DESC_F_INDIRECT);
	assert_int_equal(nstores, 0);
	watch_buffer(NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_chain_links_the_given_indices),
		cmocka_unit_test(test_split_avail_publish_and_events),
		cmocka_unit_test(test_packed_chain_across_the_ring_end),
		cmocka_unit_test(test_packed_single_and_junk_ids),
		cmocka_unit_test(test_packed_raw_desc_and_flags),
		cmocka_unit_test(test_packed_event_area),
		cmocka_unit_test(test_tables_in_both_formats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

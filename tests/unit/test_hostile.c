/* SPDX-License-Identifier: MIT */
/* Every datapath class of hostile-inputs.md (sim/hostile), on split and packed rings, TX and
 * RX, coarse and 4 KiB guest memory: one scenario body checks the documented outcome --
 * dropped (returned with used length 0 under the right reason, neighbours unharmed), queue
 * broken (reason latched, the chain before it served), ignored (not available), or works --
 * by reading the used ring exactly as a guest would. TX runs three host sides over the same
 * chains: vl_net_dequeue, and the ceilings vl_net_discard and vl_net_discard_touch, which
 * walk and check chains as dequeue does but do not read the header (so a bad offload is
 * their packet like any other); touch must read exactly the first payload byte of each
 * packet it returns as good. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "hostile.h"
#include "vhostlab/vhostlab.h"

#define QSIZE 64u
#define PKT 100u

struct env {
	struct lab_gmem *g;
	struct vl_mem *mem;
	struct lab_vring vr;
	struct lab_pring pr;
	struct vl_vq *q;
	struct vl_pool *pool;
	struct lab_hostile_env h;
	uint16_t used_pos;   /* packed: where the guest reads the next used descriptor */
	bool used_wrap;
	uint16_t used_idx;   /* split: used entries read so far */
};

static void setup(struct env *e, enum vl_layout layout, bool rx, uint64_t gran)
{
	char msg[200];
	struct lab_gmem_config gc = {.ram_size = 1 << 20, .ring_area_size = 4 * LAB_PAGE_SIZE,
				     .granularity = gran, .seed = 7};
	uint64_t features = VL_FEATURE(VL_F_VERSION_1) | VL_FEATURE(VL_F_RING_INDIRECT_DESC) |
			    VL_FEATURE(VL_F_NET_MRG_RXBUF) | VL_FEATURE(VL_F_NET_CSUM) |
			    LAB_HOSTILE_OFFLOAD_FEATURES;
	struct vl_vq_config qc;
	uint32_t n;
	int err;

	memset(e, 0, sizeof(*e));
	e->g = lab_gmem_create(&gc, msg, sizeof(msg));
	assert_non_null(e->g);
	const struct vl_mem_region *regs = lab_gmem_regions(e->g, &n);

	e->mem = vl_mem_create(regs, n, &err);
	assert_non_null(e->mem);
	vl_vq_config_init(&qc, layout, QSIZE);
	qc.features |= features;
	if (layout == VL_LAYOUT_SPLIT) {
		assert_int_equal(lab_vring_init(&e->vr, e->g, lab_gmem_ring_gpa(e->g), QSIZE, 0), 0);
		qc.desc_gpa = e->vr.desc_gpa;
		qc.driver_gpa = e->vr.avail_gpa;
		qc.device_gpa = e->vr.used_gpa;
	} else {
		assert_int_equal(lab_pring_init(&e->pr, e->g, lab_gmem_ring_gpa(e->g), QSIZE, 0,
						true, false), 0);
		qc.desc_gpa = e->pr.desc_gpa;
		qc.driver_gpa = e->pr.driver_gpa;
		qc.device_gpa = e->pr.device_gpa;
		e->used_wrap = true;
	}
	e->q = vl_vq_create(e->mem, &qc, &err);
	assert_non_null(e->q);
	e->pool = vl_pool_create(64, 2048);
	assert_non_null(e->pool);
	e->h = (struct lab_hostile_env){.layout = layout, .rx = rx, .hdr_len = 12, .g = e->g,
					.vr = &e->vr, .pr = &e->pr};
}

static void teardown(struct env *e)
{
	vl_vq_destroy(e->q);
	assert_int_equal(vl_pool_destroy(e->pool), 0);
	vl_mem_destroy(e->mem);
	if (e->h.layout == VL_LAYOUT_SPLIT)
		lab_vring_fini(&e->vr);
	else
		lab_pring_fini(&e->pr);
	lab_gmem_destroy(e->g);
}

/* The next used element the guest can see, with the number of descriptors the posted chain
 * of that id occupied (packed readers skip by it). */
static bool next_used(struct env *e, uint16_t ndescs_of_id[], uint32_t *id, uint32_t *len)
{
	if (e->h.layout == VL_LAYOUT_SPLIT) {
		if (__atomic_load_n(&e->vr.used->idx, __ATOMIC_ACQUIRE) == e->used_idx)
			return false;
		const struct vl_split_used_elem *u = &e->vr.used->ring[e->used_idx % QSIZE];

		*id = u->id;
		*len = u->len;
		e->used_idx++;
		return true;
	}
	const struct vl_packed_desc *d = &e->pr.desc[e->used_pos];
	uint16_t f = __atomic_load_n(&d->flags, __ATOMIC_ACQUIRE);

	if (((f & VL_PDESC_F_AVAIL) != 0) != e->used_wrap ||
	    ((f & VL_PDESC_F_USED) != 0) != e->used_wrap)
		return false;
	*id = d->id;
	*len = (f & VL_DESC_F_WRITE) ? d->len : 0;
	assert_true(*id < QSIZE);
	e->used_pos = (uint16_t)(e->used_pos + ndescs_of_id[*id]);
	if (e->used_pos >= QSIZE) {
		e->used_pos -= QSIZE;
		e->used_wrap = !e->used_wrap;
	}
	return true;
}

/* Chains the packed driver wrote occupy descriptors from their id (= start position) to the
 * next chain's start; the test records them as it posts. */
static uint16_t ndescs_since(struct env *e, uint16_t before)
{
	return (uint16_t)((e->pr.next_avail + QSIZE - before) % QSIZE);
}

/* Who takes the guest's TX chains. */
enum host_side { HOST_DEQUEUE, HOST_DISCARD, HOST_TOUCH, HOST__COUNT };

static const char *const host_names[] = {"dequeue", "discard", "touch"};

/* Fill bytes of the payloads: the good chains' own, and every hostile chain's (sim/hostile.c). */
#define FILL_GOOD1 0x11u
#define FILL_GOOD2 0x22u
#define FILL_HOSTILE 0x5au

static void scenario(enum lab_hostile c, enum vl_layout layout, bool rx, uint64_t gran,
		     enum host_side host)
{
	struct env e;
	uint16_t good1, good2, bad = 0, nd[QSIZE] = {0};
	char what[112];
	uint64_t bytes = 0, firsts = 0;

	snprintf(what, sizeof(what), "%s %s %s gran=%llu %s", lab_hostile_name(c),
		 layout == VL_LAYOUT_SPLIT ? "split" : "packed", rx ? "rx" : "tx",
		 (unsigned long long)gran, rx ? "enqueue" : host_names[host]);
	setup(&e, layout, rx, gran);
	uint16_t at = e.pr.next_avail;

	assert_int_equal(lab_hostile_post_good(&e.h, PKT, FILL_GOOD1, &good1), 0);
	if (layout == VL_LAYOUT_PACKED)
		nd[good1] = ndescs_since(&e, at), at = e.pr.next_avail;
	assert_int_equal(lab_hostile_post(&e.h, c, &bad), 0);
	if (layout == VL_LAYOUT_PACKED && bad < QSIZE)
		nd[bad] = ndescs_since(&e, at), at = e.pr.next_avail;
	assert_int_equal(lab_hostile_post_good(&e.h, PKT, FILL_GOOD2, &good2), 0);
	if (layout == VL_LAYOUT_PACKED)
		nd[good2] = ndescs_since(&e, at);

	/* One burst: TX dequeues everything; RX offers three 100-byte packets (the two good
	 * buffers take one each; a third finds no room). */
	struct vl_pkt *pkts[8];
	uint32_t moved;

	if (rx) {
		for (int i = 0; i < 3; i++) {
			pkts[i] = vl_pkt_alloc_len(e.pool, PKT);
			assert_non_null(pkts[i]);
			memset(pkts[i]->data, 0x33, PKT);
		}
		uint8_t status[3];

		moved = vl_net_enqueue(e.q, pkts, 3, status);
		vl_pkt_free_bulk(pkts, 3);
	} else if (host == HOST_DISCARD) {
		moved = vl_net_discard(e.q, 8, &bytes);
	} else if (host == HOST_TOUCH) {
		moved = vl_net_discard_touch(e.q, 8, &bytes, &firsts);
	} else {
		moved = vl_net_dequeue(e.q, e.pool, pkts, 8);
		for (uint32_t i = 0; i < moved; i++) {
			assert_int_equal(pkts[i]->pkt_len, PKT);
			vl_pkt_free(pkts[i]);
		}
	}

	struct lab_hostile_outcome o = lab_hostile_expect(c, layout, rx);

	/* The ceilings never read the header: its checksum fields cannot be wrong to them. */
	if (!rx && host != HOST_DEQUEUE && lab_hostile_is_offload(c))
		o = (struct lab_hostile_outcome){LAB_HK_WORKS, VL_DROP_NONE};
	/* What the ceilings must have counted and read: the good packets' bytes, and (touch)
	 * the first payload byte of each, by outcome. */
	uint32_t served = o.kind == LAB_HK_WORKS		 ? 3
			  : o.kind == LAB_HK_DROPPED	 ? 2
			  : c == LAB_HOSTILE_AVAIL_JUMP ? 0
							 : 1;
	uint64_t want_firsts = served == 3   ? FILL_GOOD1 + FILL_HOSTILE + FILL_GOOD2
			       : served == 2 ? FILL_GOOD1 + FILL_GOOD2
			       : served == 1 ? FILL_GOOD1
					     : 0;

	if (!rx && host != HOST_DEQUEUE) {
		assert_int_equal(moved, served);
		assert_int_equal(bytes, (uint64_t)PKT * served);
		assert_int_equal(firsts, host == HOST_TOUCH ? want_firsts : 0);
		assert_int_equal(vl_vq_stats(e.q)->packets, 0);
		assert_int_equal(vl_vq_stats(e.q)->alloc_calls, 0);
	}
	const struct vl_vq_stats *st = vl_vq_stats(e.q);
	uint64_t drops = 0;
	uint32_t id, len, good_len = rx ? 12 + PKT : 0;

	for (int k = 1; k < VL_DROP__COUNT; k++)
		drops += st->drops[k];
	switch (o.kind) {
	case LAB_HK_DROPPED:
		/* Good, hostile (length 0), good: in ring order, nothing else. */
		assert_false(vl_vq_broken(e.q));
		assert_int_equal(st->drops[o.reason], 1);
		assert_int_equal(drops, 1);
		assert_true(next_used(&e, nd, &id, &len));
		assert_int_equal(id, good1);
		assert_int_equal(len, good_len);
		assert_true(next_used(&e, nd, &id, &len));
		assert_int_equal(id, bad);
		assert_int_equal(len, 0);
		assert_true(next_used(&e, nd, &id, &len));
		assert_int_equal(id, good2);
		assert_int_equal(len, good_len);
		assert_int_equal(moved, 2); /* RX: the third packet finds no room */
		break;
	case LAB_HK_BROKEN:
		/* The queue stops at the lie; a split avail jump is seen before any chain. */
		assert_true(vl_vq_broken(e.q));
		assert_int_equal(vl_vq_broken_reason(e.q), o.reason);
		if (c != LAB_HOSTILE_AVAIL_JUMP) {
			assert_true(next_used(&e, nd, &id, &len));
			assert_int_equal(id, good1);
			assert_int_equal(len, good_len);
		}
		assert_int_equal(vl_net_dequeue(e.q, e.pool, pkts, 8), 0);
		break;
	case LAB_HK_IGNORED:
		/* Not available: the device stops before it, nothing counted. */
		assert_false(vl_vq_broken(e.q));
		assert_int_equal(drops, 0);
		assert_true(next_used(&e, nd, &id, &len));
		assert_int_equal(id, good1);
		/* The device consumed good1 only. (The guest then sees its own lie -- a
		 * descriptor it marked used -- where the next used one would be.) */
		assert_int_equal(st->chains, 1);
		assert_int_equal(st->used_entries, 1);
		teardown(&e);
		print_message("ok %s\n", what);
		return;
	case LAB_HK_WORKS:
		assert_false(vl_vq_broken(e.q));
		assert_int_equal(drops, 0);
		for (int i = 0; i < 3; i++) {
			assert_true(next_used(&e, nd, &id, &len));
			assert_int_equal(len, good_len);
		}
		assert_int_equal(moved, 3);
		break;
	}
	assert_false(next_used(&e, nd, &id, &len));
	print_message("ok %s\n", what);
	teardown(&e);
}

static void test_every_class(void **state)
{
	(void)state;
	unsigned ran = 0;

	for (int c = 0; c < LAB_HOSTILE__COUNT; c++)
		for (int L = 0; L < 2; L++)
			for (int rx = 0; rx < 2; rx++)
				for (int g = 0; g < 2; g++) {
					enum vl_layout layout = L ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;

					if (!lab_hostile_applies((enum lab_hostile)c, layout, rx))
						continue;
					for (int h = 0; h < (rx ? 1 : HOST__COUNT); h++) {
						scenario((enum lab_hostile)c, layout, rx,
							 g ? 4096 : 0, (enum host_side)h);
						ran++;
					}
				}
	/* Every class runs somewhere: at least one layout and direction each. */
	assert_true(ran >= 2 * LAB_HOSTILE__COUNT);
}

static void test_each_class_applies_somewhere(void **state)
{
	(void)state;
	for (int c = 0; c < LAB_HOSTILE__COUNT; c++) {
		bool any = false;

		for (int L = 0; L < 2; L++)
			for (int rx = 0; rx < 2; rx++)
				any |= lab_hostile_applies((enum lab_hostile)c,
							   L ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT, rx);
		assert_true(any);
		assert_string_not_equal(lab_hostile_name((enum lab_hostile)c), "unknown");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_class_applies_somewhere),
		cmocka_unit_test(test_every_class),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
/* Setting the hostile guest up (guest memory, the queue, pools, dirty log) and tearing it
 * down with the end-of-run checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hg_internal.h"
#include "trace_sink.h"
#include "vl_lab_control.h"

uint8_t hg_scratch[HG_PKT_BYTES_MAX];
struct vl_packed_desc hg_psnap[256];

/* Pools are kept from one input to the next (creating megabytes of buffers per input costs
 * more than the input, and under ASan each one is a fresh mmap whose pages fault in): one
 * per shape the setup's pool byte can name, and the host's, all created on the first input
 * and never destroyed; every buffer is back in its pool at the end of each input. That is
 * about 110 MiB of address space, touched only where buffers are used. All at once rather
 * than on first use: an input that creates one allocates without freeing, which makes
 * libFuzzer run it a second time under a leak check -- and an eight-entry cache that
 * recycled its last entry had re-created a pool for most inputs (the committed corpora use
 * some 80 shapes). */
static struct vl_pool *hg_pools[256];
static struct vl_pool *hg_host_pool;

static struct vl_pool *hg_pool_make(uint32_t count, uint32_t buf_size)
{
	struct vl_pool *p = vl_pool_create(count, buf_size);

	if (!p)
		fz_fail("vl_pool_create(%u, %u) failed", count, buf_size);
	return p;
}

static uint32_t hg_pool_count(uint8_t code)
{
	return 1u + (code & 63u) * 8u;
}

/* The dequeue pool the setup's pool byte names (and the host's), ready for an input: every
 * buffer free, no failure injected. */
static struct vl_pool *hg_pool(uint8_t code)
{
	if (!hg_host_pool) {
		for (unsigned c = 0; c < 256; c++)
			hg_pools[c] = hg_pool_make(hg_pool_count((uint8_t)c),
						   fz_pool_buf_size((uint8_t)(c >> 6)));
		hg_host_pool = hg_pool_make(HG_HOST_POOL_BUFS, HG_HOST_BUF_SIZE);
	}
	vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
		       &(struct vl_lab_arg){.pool = hg_pools[code], .count = VL_LAB_NEVER});
	return hg_pools[code];
}

static void hg_setup(struct lab_hg *d, const struct fz_dp_setup *s)
{
	int err = 0;

	d->s = *s;
	d->features = fz_dp_features(s->features, s->hold, d->L);
	d->hdr_len = vl_net_hdr_len(d->features);
	if (d->L == VL_LAYOUT_SPLIT)
		d->size = 1u << (s->qsize % 9);
	else
		d->size = 1u + s->qsize;
	d->g = fz_gmem_get(0, FZ_DP_RING_AREA, FZ_DP_RAM,
			   (s->features & FZ_DPF_GRAN_4K) ? LAB_PAGE_SIZE : 0);
	d->ring_gpa = lab_gmem_ring_gpa(d->g);
	d->ram_gpa = lab_gmem_ram_gpa(d->g);
	d->hole_gpa = lab_gmem_hole_gpa(d->g);
	d->ring = lab_gmem_guest_ptr(d->g, d->ring_gpa, FZ_DP_RING_AREA);
	d->ram = lab_gmem_guest_ptr(d->g, d->ram_gpa, FZ_DP_RAM);
	memset(d->ring, s->fill, FZ_DP_RING_AREA);
	memset(d->ram, s->fill, FZ_DP_RAM);
	d->regs = lab_gmem_regions(d->g, &d->nregs);
	d->mem = vl_mem_create(d->regs, d->nregs, &err);
	if (!d->mem)
		fz_fail("vl_mem_create: %s", vl_strerror(err));

	struct vl_vq_config qc;

	vl_vq_config_init(&qc, d->L, d->size);
	qc.features = d->features;
	qc.batch_threshold = fz_batch_threshold(s->batch);
	if (d->L == VL_LAYOUT_SPLIT) {
		qc.desc_gpa = d->ring_gpa;
		qc.driver_gpa = d->ring_gpa + FZ_DP_OFF_AVAIL;
		qc.device_gpa = d->ring_gpa + FZ_DP_OFF_USED;
		qc.last_avail_idx = s->start;
		d->desc = (struct vl_split_desc *)(void *)d->ring;
		d->avail = (struct vl_split_avail *)(void *)(d->ring + FZ_DP_OFF_AVAIL);
		d->used = (struct vl_split_used *)(void *)(d->ring + FZ_DP_OFF_USED);
		d->avail->flags = 0;
		d->avail->idx = s->start;
		d->used->idx = s->start;
		d->avail_idx = s->start;
		/* POST takes descriptors from the upper half on: raw descriptors written at
		 * low indices survive the well-formed chains posted next to them. */
		d->next_desc = (uint16_t)(d->size / 2);
	} else {
		uint16_t at = (uint16_t)((s->start & 0x7fffu) % d->size |
					 (s->start & VL_PACKED_WRAP_BIT));

		qc.desc_gpa = d->ring_gpa;
		qc.driver_gpa = d->ring_gpa + FZ_DP_OFF_DRIVER_EVENT;
		qc.device_gpa = d->ring_gpa + FZ_DP_OFF_DEVICE_EVENT;
		qc.last_avail_idx = at;
		qc.last_used_idx = at;
		d->pdesc = (struct vl_packed_desc *)(void *)d->ring;
		d->drv_ev = (struct vl_packed_event *)(void *)(d->ring + FZ_DP_OFF_DRIVER_EVENT);
		d->ppos = at & 0x7fffu;
		d->pwrap = (at & VL_PACKED_WRAP_BIT) != 0;
	}
	d->vq = vl_vq_create(d->mem, &qc, &err);
	if (!d->vq)
		fz_fail("vl_vq_create (size %u): %s", d->size, vl_strerror(err));
	uint32_t pool_bufs = hg_pool_count(s->pool), pool_size = fz_pool_buf_size(
		(uint8_t)(s->pool >> 6));

	d->pool = hg_pool(s->pool);
	d->hpool = hg_host_pool;
	if (s->zc & 1)
		vl_vq_set_zero_copy(d->vq, true, fz_zc_min_len((uint8_t)(s->zc >> 1)),
				    1u + (s->zc >> 3));
	if (s->features & FZ_DPF_ALLOC_BURST)
		vl_vq_set_alloc_policy(d->vq, VL_ALLOC_BURST);
	if (s->features & FZ_DPF_DIRTY_LOG) {
		d->log_bytes = s->log ? s->log : ((lab_gmem_end_gpa(d->g) >> 12) + 7) / 8;
		d->log = calloc(d->log_bytes, 1);
		if (!d->log)
			fz_fail("out of memory");
		vl_vq_set_dirty_log(d->vq, d->log, d->log_bytes);
	}
	d->rng = 0x1234567ull ^ s->start;
	if (fz_sink)
		hg_rec_setup(d, &qc, pool_bufs, pool_size);
}

static void hg_teardown(struct lab_hg *d)
{
	if (fz_verbose()) {
		const struct vl_vq_stats *st = vl_vq_stats(d->vq);

		fprintf(stderr, "%s: size %u: %u bursts, %llu packets, %u discarded, %llu chains, "
			"%llu used, zc %llu, broken %s, drops:", fz_target_name(), d->size, d->bursts,
			(unsigned long long)st->packets, d->discarded, (unsigned long long)st->chains,
			(unsigned long long)st->used_entries, (unsigned long long)st->zc_packets,
			vl_vq_broken(d->vq) ? vl_drop_name(vl_vq_broken_reason(d->vq)) : "no");
		for (int k = 1; k < VL_DROP__COUNT; k++)
			if (st->drops[k])
				fprintf(stderr, " %s=%llu", vl_drop_name((enum vl_drop)k),
					(unsigned long long)st->drops[k]);
		fputc('\n', stderr);
	}
	/* Everything the host holds goes back; then every chain a zero-copy packet held can
	 * return (unless the queue broke), and both pools must be full again. */
	hg_free_held(d, 0);
	hg_do_complete(d);
	hg_check_queue(d);
	/* The one check here a trace can state exactly: nothing held at the end. */
	if (fz_sink && !d->rx && !vl_vq_broken(d->vq))
		hg_rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_EXPECT_HELD,
						   .queue = (uint32_t)d->rq});
	if (!vl_vq_broken(d->vq) && vl_vq_zero_copy_held(d->vq) != 0)
		fz_fail("%u chains still held after every packet was freed",
			vl_vq_zero_copy_held(d->vq));
	if (vl_pool_free_count(d->pool) != vl_pool_capacity(d->pool))
		fz_fail("pool accounting: %u of %u dequeue buffers free at the end",
			vl_pool_free_count(d->pool), vl_pool_capacity(d->pool));
	if (vl_pool_free_count(d->hpool) != vl_pool_capacity(d->hpool))
		fz_fail("pool accounting: %u of %u host buffers free at the end",
			vl_pool_free_count(d->hpool), vl_pool_capacity(d->hpool));
	vl_vq_destroy(d->vq);
	vl_mem_destroy(d->mem);
	free(d->log);
}

struct lab_hg *lab_hg_begin(enum vl_layout layout, bool rx, const struct fz_dp_setup *s)
{
	static struct lab_hg d;

	memset(&d, 0, sizeof(d));
	d.L = layout;
	d.rx = rx;
	hg_setup(&d, s);
	hg_check_queue(&d);
	return &d;
}

void lab_hg_end(struct lab_hg *d)
{
	if (fz_sink)
		hg_rec_finish(d);
	hg_teardown(d);
}

uint64_t lab_hg_ram_gpa(const struct lab_hg *d)
{
	return d->ram_gpa;
}

uint64_t lab_hg_ring_gpa(const struct lab_hg *d)
{
	return d->ring_gpa;
}

uint64_t lab_hg_hole_gpa(const struct lab_hg *d)
{
	return d->hole_gpa;
}

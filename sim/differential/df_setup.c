/* SPDX-License-Identifier: MIT */
/* Setting up the participants of a differential run, and the run (fz_df_run). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "df_internal.h"

/* ---- setup --------------------------------------------------------------------------- */

/* The reference model's two queues over participant v's guest, configured as a device
 * queue is (addresses and resume position from the driver's rings). */
static void model_setup(struct df *d, struct df_var *v)
{
	struct lab_model_config mc = {.gmem = v->g};

	vl_vq_config_init(&mc.vq, d->L, d->size);
	mc.vq.features = d->features;
	lab_ring_device_config(&v->tx, &mc.vq);
	v->mtx = lab_model_create(&mc);
	lab_ring_device_config(&v->rx, &mc.vq);
	v->mrx = lab_model_create(&mc);
	if (!v->mtx || !v->mrx)
		fz_fail("lab_model_create (size %u) failed", d->size);
}

/* A participant as zeroed, except its chain records past the queue size, which no chain id
 * reaches: they are most of the participant (3 MiB over the nine), and zeroing them every
 * input cost a short run as much as its traffic. */
static void var_clear(struct df_var *v, uint32_t size)
{
	_Static_assert(offsetof(struct df_var, rxc) ==
			       offsetof(struct df_var, txc) + sizeof(v->txc) &&
		       offsetof(struct df_var, exp) == offsetof(struct df_var, rxc) + sizeof(v->rxc),
		       "txc and rxc lie together, between the rest of df_var");
	memset(v, 0, offsetof(struct df_var, txc));
	memset(v->txc, 0, size * sizeof(v->txc[0]));
	memset(v->rxc, 0, size * sizeof(v->rxc[0]));
	memset(v->exp, 0, sizeof(*v) - offsetof(struct df_var, exp));
}

static void var_setup(struct df *d, struct df_var *v, unsigned k, uint64_t gran, bool dlog)
{
	static struct vl_pool *pools[DF_VARIANTS];
	struct vl_vq_config qc;
	int err = 0;
	uint32_t n;

	v->idx = k;
	v->model = k == DF_MODEL;
	/* Guest memory slots 1..9 (fz_gmem_get keeps FZ_GMEM_SLOTS shapes: 9 per granularity
	 * here, plus the datapath targets' slot 0). */
	v->g = fz_gmem_get(1 + k, DF_RING_AREA, DF_RAM, gran);
	v->ram_gpa = lab_gmem_ram_gpa(v->g);
	v->ring_gpa = lab_gmem_ring_gpa(v->g);
	v->ram = lab_gmem_guest_ptr(v->g, v->ram_gpa, DF_RAM);
	v->ring = lab_gmem_guest_ptr(v->g, v->ring_gpa, DF_RING_AREA);
	v->rx_ring_off = lab_ring_area_bytes(d->L, d->size);
	if (lab_ring_init(&v->tx, d->L, v->g, v->ring_gpa, d->size, d->start, d->in_order,
			  (d->features & VL_FEATURE(VL_F_RING_EVENT_IDX)) != 0) != 0)
		fz_fail("lab_ring_init TX");
	v->tx_ready = true;
	if (lab_ring_init(&v->rx, d->L, v->g, v->ring_gpa + v->rx_ring_off, d->size, d->start,
			  d->in_order, (d->features & VL_FEATURE(VL_F_RING_EVENT_IDX)) != 0) != 0)
		fz_fail("lab_ring_init RX");
	v->rx_ready = true;
	if (v->model) {
		model_setup(d, v);
		return;
	}
	v->batch = df_batch[k];
	v->zc = k >= 3 && k < DF_VARIANTS;
	v->burst_policy = k == 2 || k == 5;
	v->tx_mode = k == DF_DISCARD ? DF_TX_DISCARD : k == DF_TOUCH ? DF_TX_TOUCH : DF_TX_DEQUEUE;
	const struct vl_mem_region *regs = lab_gmem_regions(v->g, &n);

	v->mem = vl_mem_create(regs, n, &err);
	if (!v->mem)
		fz_fail("vl_mem_create: %s", vl_strerror(err));
	vl_vq_config_init(&qc, d->L, d->size);
	qc.features = d->features;
	qc.batch_threshold = v->batch;
	lab_ring_device_config(&v->tx, &qc);
	v->txq = vl_vq_create(v->mem, &qc, &err);
	lab_ring_device_config(&v->rx, &qc);
	v->rxq = v->txq ? vl_vq_create(v->mem, &qc, &err) : NULL;
	if (!v->txq || !v->rxq)
		fz_fail("vl_vq_create (size %u): %s", d->size, vl_strerror(err));
	if (v->zc)
		vl_vq_set_zero_copy(v->txq, true, d->zc_min, d->size);
	if (v->burst_policy)
		vl_vq_set_alloc_policy(v->txq, VL_ALLOC_BURST);
	/* Line wait (vl_vq_set_tx_line_wait) stays off here, on every participant. It is not an
	 * internal technique like the three above: it decides which burst takes a chain, so
	 * the per-round dequeue counts, packets, used entries and ring bytes compared with the
	 * reference model -- a spec-driven device that takes every chain it finds -- would
	 * differ by design on a packed ring whose round ends inside a line of descriptors.
	 * Turning it on everywhere would need the model to copy the core's rule, and so stop
	 * being an independent witness. fuzz_packed_dequeue checks it instead, exactly: what
	 * each burst takes against the harness's reading of the ring and the rule. */
	/* Pools are kept across inputs (each is full again at the end of one). The ceilings
	 * make no packets and have none. */
	if (v->tx_mode == DF_TX_DEQUEUE) {
		if (!pools[k] && !(pools[k] = vl_pool_create(DF_POOL_BUFS, DF_POOL_BUF)))
			fz_fail("vl_pool_create");
		v->pool = pools[k];
	}
	if (dlog) {
		v->log_bytes = ((lab_gmem_end_gpa(v->g) >> 12) + 7) / 8;
		v->log = calloc(v->log_bytes, 1);
		if (!v->log)
			fz_fail("out of memory");
		vl_vq_set_dirty_log(v->txq, v->log, v->log_bytes);
		vl_vq_set_dirty_log(v->rxq, v->log, v->log_bytes);
	}
}

static void var_teardown(struct df_var *v)
{
	if (!v->model)
		vl_pkt_free_bulk(v->pkts, v->npkts);
	v->npkts = 0;
	if (v->txq)
		vl_vq_complete(v->txq);
	if (v->pool && vl_pool_free_count(v->pool) != vl_pool_capacity(v->pool))
		fz_fail("%s: pool accounting: %u of %u buffers free at the end", df_vname(v->idx),
			vl_pool_free_count(v->pool), vl_pool_capacity(v->pool));
	vl_vq_destroy(v->txq);
	vl_vq_destroy(v->rxq);
	if (v->tx_ready)
		lab_ring_fini(&v->tx);
	if (v->rx_ready)
		lab_ring_fini(&v->rx);
	lab_model_destroy(v->mtx);
	lab_model_destroy(v->mrx);
	vl_mem_destroy(v->mem);
	free(v->log);
	fz_out_free(&v->all.b);
	fz_out_free(&v->core.b);
	fz_out_free(&v->grp.b);
}

int fz_df_run(const uint8_t *data, size_t size)
{
	struct fz_in in = fz_in_make(data, size);
	struct df *d = &df_state;
	static struct fz_df_round rd;

	if (size < 5)
		return 0;
	if (df_poison[0] != DF_POISON)
		memset(df_poison, DF_POISON, sizeof(df_poison));
	struct vl_pool *hpool = d->hpool;

	memset(d, 0, offsetof(struct df, v)); /* the participants: var_clear, by queue size */
	d->hpool = hpool;
	struct fz_df_header h;

	fz_dec_df_header(&in, &h);
	uint8_t f = h.flags;

	d->L = (f & FZ_DF_F_PACKED) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
	d->size = d->L == VL_LAYOUT_SPLIT ? 2u << (h.qsize % 8) : 2u + h.qsize % 255u;
	d->start = h.start;
	if (d->L == VL_LAYOUT_PACKED)
		d->start = (uint16_t)(d->start % d->size);
	d->zc_min = fz_zc_min_len(h.zc);
	for (unsigned k = 0; k < DF_PARTS; k++)
		var_clear(&d->v[k], d->size);
	/* Checksum and every TX segmentation offload: the guest's headers use them all; on
	 * receive the host's packets carry checksum flags and TCPv6 GSO. */
	d->features = VL_FEATURE(VL_F_NET_CSUM) | VL_FEATURE(VL_F_NET_HOST_TSO4) |
		      VL_FEATURE(VL_F_NET_HOST_TSO6) | VL_FEATURE(VL_F_NET_HOST_UFO) |
		      VL_FEATURE(VL_F_NET_HOST_USO) | VL_FEATURE(VL_F_NET_HOST_ECN) |
		      VL_FEATURE(VL_F_NET_GUEST_CSUM) | VL_FEATURE(VL_F_NET_GUEST_TSO6);
	if (f & FZ_DF_F_MERGEABLE)
		d->features |= VL_FEATURE(VL_F_NET_MRG_RXBUF);
	if (f & FZ_DF_F_INDIRECT)
		d->features |= VL_FEATURE(VL_F_RING_INDIRECT_DESC);
	if (f & FZ_DF_F_IN_ORDER)
		d->features |= VL_FEATURE(VL_F_IN_ORDER);
	if (f & FZ_DF_F_EVENT_IDX)
		d->features |= VL_FEATURE(VL_F_RING_EVENT_IDX);
	if ((f & FZ_DF_F_VERSION_1) || d->L == VL_LAYOUT_PACKED)
		d->features |= VL_FEATURE(VL_F_VERSION_1);
	if (d->L == VL_LAYOUT_PACKED)
		d->features |= VL_FEATURE(VL_F_RING_PACKED);
	d->hdr_len = vl_net_hdr_len(d->features);
	d->mergeable = (f & FZ_DF_F_MERGEABLE) != 0;
	d->indirect = (f & FZ_DF_F_INDIRECT) != 0;
	d->in_order = (f & FZ_DF_F_IN_ORDER) != 0;
	if (!d->hpool && !(d->hpool = vl_pool_create(DF_HOST_BUFS, DF_POOL_BUF)))
		fz_fail("vl_pool_create");
	for (unsigned k = 0; k < DF_PARTS; k++)
		var_setup(d, &d->v[k], k, (f & FZ_DF_F_GRAN_4K) ? LAB_PAGE_SIZE : 0,
			  (f & FZ_DF_F_DIRTY_LOG) != 0);
	const uint32_t rounds = fz_df_max_rounds(&h);

	for (d->round = 0; d->round < rounds && fz_more(&in); d->round++) {
		fz_dec_df_round(&in, &h, &rd);
		df_run_round(d, &rd, d->round + 1 == rounds || !fz_more(&in));
	}
	if (fz_verbose()) {
		const struct vl_vq_stats *t = vl_vq_stats(d->v[0].txq), *r = vl_vq_stats(d->v[0].rxq);
		const struct vl_vq_stats *z = vl_vq_stats(d->v[3].txq);

		fprintf(stderr, "fuzz_differential: %s %s size %u: %u rounds, TX %llu packets, RX "
			"%llu packets (%llu too big), %llu zero-copied\n",
			fz_df_is_long(&h) ? "long" : "short",
			d->L == VL_LAYOUT_PACKED ? "packed" : "split", d->size, d->round,
			(unsigned long long)t->packets, (unsigned long long)r->packets,
			(unsigned long long)r->drops[VL_DROP_RX_TOO_BIG],
			(unsigned long long)z->zc_packets);
	}
	for (unsigned k = 0; k < DF_PARTS; k++)
		var_teardown(&d->v[k]);
	if (vl_pool_free_count(d->hpool) != vl_pool_capacity(d->hpool))
		fz_fail("host pool: %u of %u buffers free", vl_pool_free_count(d->hpool),
			vl_pool_capacity(d->hpool));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* The public queue (struct vl_vq, vhostlab/vl_vq.h): the ring layer's queue and the net
 * layer's state around it. Creation and teardown (control path: the only allocations), the
 * net settings (batching, zero-copy, eviction, prefetch, allocation policy), and the
 * accessors, which hand the ring's questions to ring/. */
#include <stdlib.h>

#include "alloc.h"
#include "net/evict.h"
#include "net/net_hdr.h"
#include "net/net_queue.h"
#include "net/zero_copy.h"
#include "ring/inflight.h"
#include "ring/ring.h"
#include "vhostlab/vl_error.h"

static void free_net_scratch(struct vl_vq *vq)
{
	free(vq->batch);
	free(vq->rx_bufs);
	free(vq->rx_deferred_bad);
	free(vq->rx_hdrs);
	free(vq->heads);
	vl_zc_teardown(vq);
}

struct vl_vq *vl_vq_create(const struct vl_mem *mem, const struct vl_vq_config *cfg, int *err)
{
	int dummy;

	if (!err)
		err = &dummy;
	if (!mem || !cfg) {
		*err = VL_ERR_INVALID_ARG;
		return NULL;
	}
	/* Refused before anything is allocated. */
	int rc = vl_ring_check_config(cfg);

	if (rc != VL_OK) {
		*err = rc;
		return NULL;
	}
	struct vl_vq *vq = vl_calloc(1, sizeof(*vq));

	if (!vq) {
		*err = VL_ERR_NOMEM;
		return NULL;
	}
	rc = vl_ring_init(&vq->rq, mem, cfg);
	if (rc != VL_OK) {
		free(vq);
		*err = rc;
		return NULL;
	}
	const uint32_t size = vq->rq.size;

	vq->hdr_len = vl_net_hdr_len(cfg->features);
	vq->mergeable = (cfg->features & VL_FEATURE(VL_F_NET_MRG_RXBUF)) != 0;
	vq->tx_offloads = (cfg->features & VL_FEATURE(VL_F_NET_CSUM)) != 0;
	vq->tx_gso_allowed = vl_net_tx_gso_allowed(cfg->features);
	vq->rx_gso_allowed = vl_net_rx_gso_allowed(cfg->features);
	vq->rx_flags_bad = (uint8_t)~vl_net_rx_flags_allowed(cfg->features);
	vq->batch_threshold = cfg->batch_threshold;
	vq->batch = vl_calloc(size, sizeof(*vq->batch));
	vq->rx_bufs = vl_calloc(size, sizeof(*vq->rx_bufs));
	vq->rx_deferred_bad = vl_calloc(size, sizeof(*vq->rx_deferred_bad));
	vq->rx_hdrs = vl_calloc(size, sizeof(*vq->rx_hdrs));
	vq->heads = vl_calloc(size, sizeof(*vq->heads));
	if (!vq->batch || !vq->rx_bufs || !vq->rx_deferred_bad || !vq->rx_hdrs || !vq->heads ||
	    vl_zc_setup(vq) != VL_OK) {
		free_net_scratch(vq);
		vl_ring_fini(&vq->rq);
		free(vq);
		*err = VL_ERR_NOMEM;
		return NULL;
	}
	*err = VL_OK;
	return vq;
}

void vl_vq_destroy(struct vl_vq *vq)
{
	if (!vq)
		return;
	free_net_scratch(vq);
	vl_ring_fini(&vq->rq);
	free(vq);
}

int vl_vq_set_mem(struct vl_vq *vq, const struct vl_mem *mem)
{
	if (!vq || !mem)
		return VL_ERR_INVALID_ARG;
	return vl_ring_set_mem(&vq->rq, mem);
}

void vl_vq_set_batch_threshold(struct vl_vq *vq, uint32_t threshold)
{
	vq->batch_threshold = threshold;
}

uint32_t vl_vq_size(const struct vl_vq *vq) { return vq->rq.size; }
uint64_t vl_vq_features(const struct vl_vq *vq) { return vq->rq.features; }

void vl_vq_get_config(const struct vl_vq *vq, struct vl_vq_config *out)
{
	*out = vq->rq.cfg;
	out->batch_threshold = vq->batch_threshold;
	out->last_avail_idx = vl_ring_last_avail(&vq->rq);
	out->last_used_idx = vl_ring_last_used(&vq->rq);
}

uint16_t vl_vq_last_avail(const struct vl_vq *vq) { return vl_ring_last_avail(&vq->rq); }
uint16_t vl_vq_last_used(const struct vl_vq *vq) { return vl_ring_last_used(&vq->rq); }

void vl_vq_set_dirty_log(struct vl_vq *vq, uint8_t *bitmap, uint64_t bytes)
{
	vl_ring_set_dirty_log(&vq->rq, bitmap, bytes);
}

int vl_vq_set_inflight(struct vl_vq *vq, void *region, uint64_t bytes, uint32_t *resubmit)
{
	uint32_t dummy;

	if (!vq)
		return VL_ERR_INVALID_ARG;
	return vl_inflight_split_attach(&vq->rq, region, bytes, resubmit ? resubmit : &dummy);
}

static const char *const vl_zc_fallback_names[VL_ZC_FALLBACK__COUNT] = {
	[VL_ZC_FALLBACK_SMALL] = "small",
	[VL_ZC_FALLBACK_SCATTERED] = "scattered",
	[VL_ZC_FALLBACK_LIMIT] = "limit",
};

const char *vl_zc_fallback_name(enum vl_zc_fallback reason)
{
	if ((unsigned)reason >= VL_ZC_FALLBACK__COUNT)
		return "unknown";
	return vl_zc_fallback_names[reason];
}

void vl_vq_set_zero_copy(struct vl_vq *vq, bool enable, uint32_t min_len, uint32_t max_inflight)
{
	/* Zero-copy applies to dequeue (TX); the bound, in ring descriptors, keeps at least
	 * one descriptor with the guest. Leases already taken go back normally whatever the
	 * new setting. */
	vq->zc_on = enable;
	vq->zc_min_len = min_len;
	vq->zc_max = vl_zc_clamp_bound(max_inflight, vq->rq.size);
}

uint32_t vl_vq_zero_copy_held(const struct vl_vq *vq)
{
	return vq->rq.size - vq->zc_nfree;
}

uint32_t vl_vq_zero_copy_held_descs(const struct vl_vq *vq)
{
	return vq->zc_held_descs;
}

void vl_vq_complete(struct vl_vq *vq)
{
	if (vq->zc_held_descs == 0 || vq->rq.broken)
		return;
	vl_zc_return(vq);
	if (vq->rq.layout == VL_LAYOUT_PACKED)
		vl_ring_flush_used(&vq->rq, VL_LAYOUT_PACKED);
	else
		vl_ring_flush_used(&vq->rq, VL_LAYOUT_SPLIT);
}

void vl_vq_set_alloc_policy(struct vl_vq *vq, enum vl_alloc_policy policy)
{
	vq->alloc_policy = policy;
}

int vl_vq_set_evict_reads(struct vl_vq *vq, bool enable)
{
	if (enable && !vl_cpu_can_evict())
		return VL_ERR_UNSUPPORTED;
	vq->evict_reads = enable;
	return VL_OK;
}

bool vl_vq_evict_reads(const struct vl_vq *vq) { return vq->evict_reads; }

bool vl_vq_evict_supported(void) { return vl_cpu_can_evict(); }

void vl_vq_set_tx_prefetch(struct vl_vq *vq, bool enable)
{
	vq->tx_prefetch_off = !enable;
	vq->tx_prefetch_skip = 0; /* a burst that asks for nothing sets it again */
}

bool vl_vq_tx_prefetch(const struct vl_vq *vq) { return !vq->tx_prefetch_off; }

void vl_vq_set_tx_line_wait(struct vl_vq *vq, bool enable)
{
	vq->rq.tx_line_wait = enable && vq->rq.layout == VL_LAYOUT_PACKED;
}

bool vl_vq_tx_line_wait(const struct vl_vq *vq) { return vq->rq.tx_line_wait; }

void vl_vq_set_kicks(struct vl_vq *vq, bool want) { vl_ring_set_kicks(&vq->rq, want); }
bool vl_vq_broken(const struct vl_vq *vq) { return vq->rq.broken; }
enum vl_drop vl_vq_broken_reason(const struct vl_vq *vq) { return vq->rq.broken_reason; }
bool vl_vq_needs_call(const struct vl_vq *vq) { return vq->rq.needs_call; }
const struct vl_vq_stats *vl_vq_stats(const struct vl_vq *vq) { return &vq->rq.stats; }

/* SPDX-License-Identifier: MIT */
/* Virtqueue lifecycle: validation of the embedder's configuration, ring translation,
 * scratch allocation (control path only), accessors and drop names. */
#include <stdlib.h>

#include "alloc.h"
#include "net/evict.h"
#include "net/zero_copy.h"
#include "ring/packed.h"
#include "ring/split.h"
#include "vhostlab/vl_error.h"

static const char *const vl_drop_names[VL_DROP__COUNT] = {
	[VL_DROP_NONE] = "none",
	[VL_DROP_CHAIN_LOOP] = "chain_loop",
	[VL_DROP_NEXT_OUT_OF_RANGE] = "next_out_of_range",
	[VL_DROP_NESTED_INDIRECT] = "nested_indirect",
	[VL_DROP_INDIRECT_LEN] = "indirect_len",
	[VL_DROP_INDIRECT_NOT_NEGOTIATED] = "indirect_not_negotiated",
	[VL_DROP_INDIRECT_WITH_NEXT] = "indirect_with_next",
	[VL_DROP_UNMAPPED] = "unmapped",
	[VL_DROP_LEN_OVERFLOW] = "len_overflow",
	[VL_DROP_DIRECTION] = "direction",
	[VL_DROP_TOO_MANY_PIECES] = "too_many_pieces",
	[VL_DROP_SHORT_CHAIN] = "short_chain",
	[VL_DROP_BAD_OFFLOAD] = "bad_offload",
	[VL_DROP_TX_TOO_BIG] = "tx_too_big",
	[VL_DROP_RX_BUF_TOO_SMALL] = "rx_buf_too_small",
	[VL_DROP_RX_TOO_BIG] = "rx_too_big",
	[VL_DROP_RX_TOO_MANY_PIECES] = "rx_too_many_pieces",
	[VL_DROP_AVAIL_IDX_JUMP] = "avail_idx_jump",
	[VL_DROP_HEAD_OUT_OF_RANGE] = "head_out_of_range",
	[VL_DROP_ID_OUT_OF_RANGE] = "id_out_of_range",
	[VL_DROP_CHAIN_INCOMPLETE] = "chain_incomplete",
};

const char *vl_drop_name(enum vl_drop reason)
{
	if ((unsigned)reason >= VL_DROP__COUNT || vl_drop_names[reason] == NULL)
		return "unknown";
	return vl_drop_names[reason];
}

void vl_vq_config_init(struct vl_vq_config *cfg, enum vl_layout layout, uint32_t size)
{
	*cfg = (struct vl_vq_config){0};
	cfg->layout = layout;
	cfg->size_minus_one = (uint16_t)(size - 1);
	cfg->batch_threshold = VL_BATCH_THRESHOLD_DEFAULT;
	if (layout == VL_LAYOUT_PACKED) {
		/* Both wrap counters start at 1 (spec 2.8.1). */
		cfg->features |= VL_FEATURE(VL_F_RING_PACKED);
		cfg->last_avail_idx = VL_PACKED_WRAP_BIT;
		cfg->last_used_idx = VL_PACKED_WRAP_BIT;
	}
}

/* Host pointer for a ring area of `bytes` at gpa, or NULL with *err set: the whole area must
 * lie in one host mapping (the datapath indexes it directly) and be aligned as the spec
 * requires (2.7: descriptors 16, available ring 2, used ring 4) -- in guest-physical space
 * and in host memory too: the ring fields are loaded and stored as aligned atomics, and a
 * region whose guest and host addresses differ modulo the alignment (a vhost-user front end
 * chooses both) would put an aligned gpa at a misaligned host address. */
static void *map_area(const struct vl_mem *mem, uint64_t gpa, uint64_t bytes, uint64_t align,
		      int *err)
{
	if (gpa % align != 0) {
		*err = VL_ERR_RING_MISALIGNED;
		return NULL;
	}
	uint64_t len = bytes;
	void *host = vl_mem_xlate(mem, gpa, &len);

	if (host == NULL || len < bytes) {
		*err = VL_ERR_RING_UNMAPPED;
		return NULL;
	}
	if ((uintptr_t)host % align != 0) {
		*err = VL_ERR_RING_MISALIGNED;
		return NULL;
	}
	return host;
}

static int map_split(struct vl_vq *vq, const struct vl_mem *mem)
{
	int err = VL_OK;
	void *desc = map_area(mem, vq->cfg.desc_gpa, vl_split_desc_bytes(vq->size), 16, &err);
	void *avail = desc ? map_area(mem, vq->cfg.driver_gpa, vl_split_avail_bytes(vq->size), 2,
				      &err) : NULL;
	void *used = avail ? map_area(mem, vq->cfg.device_gpa, vl_split_used_bytes(vq->size), 4,
				      &err) : NULL;

	if (!used)
		return err;
	vq->desc = desc;
	vq->avail = avail;
	vq->used = used;
	vq->mem = mem;
	return VL_OK;
}

static int map_packed(struct vl_vq *vq, const struct vl_mem *mem)
{
	int err = VL_OK;
	void *desc = map_area(mem, vq->cfg.desc_gpa, vl_packed_desc_bytes(vq->size), 16, &err);
	void *drv = desc ? map_area(mem, vq->cfg.driver_gpa, sizeof(struct vl_packed_event), 4,
				    &err) : NULL;
	void *dev = drv ? map_area(mem, vq->cfg.device_gpa, sizeof(struct vl_packed_event), 4,
				   &err) : NULL;

	if (!dev)
		return err;
	vq->pdesc = desc;
	vq->driver_event = drv;
	vq->device_event = dev;
	vq->mem = mem;
	return VL_OK;
}

static int map_rings(struct vl_vq *vq, const struct vl_mem *mem)
{
	/* The cached translation range belongs to the table it came from. */
	vq->xl_size = 0;
	return vq->layout == VL_LAYOUT_PACKED ? map_packed(vq, mem) : map_split(vq, mem);
}

/* Store the kick wish whatever was stored before: at creation (the guest's copy is whatever
 * the ring held) and whenever the embedder turns kicks on or off (the one store a sleeping
 * device relies on must not be skipped because a guest scribbled over the field). */
static void update_kick_wish(struct vl_vq *vq)
{
	if (vq->layout == VL_LAYOUT_PACKED)
		vl_packed_update_kick_wish(vq, true);
	else
		vl_split_update_kick_wish(vq, true);
	vl_log_flush(&vq->log);
}

static void free_scratch(struct vl_vq *vq)
{
	free(vq->shadow);
	free(vq->pflags);
	free(vq->pchains);
	free(vq->batch);
	free(vq->pieces);
	free(vq->indirect_copy);
	free(vq->rx_bufs);
	free(vq->rx_deferred_bad);
	free(vq->rx_hdrs);
	free(vq->heads);
	free(vq->seen);
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
	if (cfg->layout != VL_LAYOUT_SPLIT && cfg->layout != VL_LAYOUT_PACKED) {
		*err = VL_ERR_LAYOUT;
		return NULL;
	}
	uint32_t size = vl_vq_config_size(cfg);
	bool packed = cfg->layout == VL_LAYOUT_PACKED;

	/* Split rings index with a mask: the size must be a power of two (spec 2.7). Packed
	 * rings take any size up to 32768 (spec 2.8). Neither layout goes past 32768 (packed
	 * positions are 15 bits wide). */
	if (size > VL_QUEUE_SIZE_MAX || (!packed && (size & (size - 1)) != 0)) {
		*err = VL_ERR_QUEUE_SIZE;
		return NULL;
	}
	/* A packed resume position must lie inside the ring. */
	if (packed && ((cfg->last_avail_idx & ~VL_PACKED_WRAP_BIT) >= size ||
		       (cfg->last_used_idx & ~VL_PACKED_WRAP_BIT) >= size)) {
		*err = VL_ERR_RING_BASE;
		return NULL;
	}

	struct vl_vq *vq = vl_calloc(1, sizeof(*vq));

	if (!vq) {
		*err = VL_ERR_NOMEM;
		return NULL;
	}
	vq->layout = cfg->layout;
	vq->size = size;
	vq->cfg = *cfg;
	vq->features = cfg->features;
	vq->hdr_len = vl_net_hdr_len(cfg->features);
	vq->mergeable = (cfg->features & VL_FEATURE(VL_F_NET_MRG_RXBUF)) != 0;
	vq->tx_offloads = (cfg->features & VL_FEATURE(VL_F_NET_CSUM)) != 0;
	vq->indirect_ok = (cfg->features & VL_FEATURE(VL_F_RING_INDIRECT_DESC)) != 0;
	vq->in_order = (cfg->features & VL_FEATURE(VL_F_IN_ORDER)) != 0;
	vq->event_idx = (cfg->features & VL_FEATURE(VL_F_RING_EVENT_IDX)) != 0;
	vq->want_kicks = true;
	vq->log.pages_marked = &vq->stats.log_pages;
	vq->log.out_of_range = &vq->stats.log_out_of_range;
	vq->batch_threshold = cfg->batch_threshold;
	vq->last_avail_idx = cfg->last_avail_idx;

	vq->shadow = vl_calloc(size, sizeof(*vq->shadow));
	vq->batch = vl_calloc(size, sizeof(*vq->batch));
	vq->pieces = vl_calloc(VL_CHAIN_MAX_PIECES, sizeof(*vq->pieces));
	vq->indirect_copy = vl_calloc(size, 16);
	vq->rx_bufs = vl_calloc(size, sizeof(*vq->rx_bufs));
	vq->rx_deferred_bad = vl_calloc(size, sizeof(*vq->rx_deferred_bad));
	vq->rx_hdrs = vl_calloc(size, sizeof(*vq->rx_hdrs));
	vq->heads = vl_calloc(size, sizeof(*vq->heads));
	vq->seen = vl_calloc(size, sizeof(*vq->seen));
	if (packed) {
		vq->pflags = vl_calloc(size, sizeof(*vq->pflags));
		vq->pchains = vl_calloc(size, sizeof(*vq->pchains));
	}
	if (!vq->shadow || !vq->batch || !vq->pieces || !vq->indirect_copy || !vq->rx_bufs ||
	    !vq->rx_deferred_bad || !vq->rx_hdrs || !vq->heads || !vq->seen ||
	    (packed && (!vq->pflags || !vq->pchains)) ||
	    vl_zc_setup(vq) != VL_OK) {
		free_scratch(vq);
		free(vq);
		*err = VL_ERR_NOMEM;
		return NULL;
	}
	int rc = map_rings(vq, mem);

	if (rc != VL_OK) {
		free_scratch(vq);
		free(vq);
		*err = rc;
		return NULL;
	}
	/* Resume the used index where the guest expects it: the device has returned exactly
	 * what it consumed when a queue (re)starts. */
	vq->used_idx = vq->last_avail_idx;
	if (packed) {
		vq->avail_pos = cfg->last_avail_idx & (uint16_t)~VL_PACKED_WRAP_BIT;
		vq->avail_wrap = (cfg->last_avail_idx & VL_PACKED_WRAP_BIT) != 0;
		vq->used_pos = cfg->last_used_idx & (uint16_t)~VL_PACKED_WRAP_BIT;
		vq->used_wrap = (cfg->last_used_idx & VL_PACKED_WRAP_BIT) != 0;
	}
	/* Publish the device's initial kick wish: a guest that posts before our first burst
	 * must know whether to kick. */
	update_kick_wish(vq);
	*err = VL_OK;
	return vq;
}

void vl_vq_destroy(struct vl_vq *vq)
{
	if (!vq)
		return;
	free_scratch(vq);
	free(vq);
}

int vl_vq_set_mem(struct vl_vq *vq, const struct vl_mem *mem)
{
	if (!vq || !mem)
		return VL_ERR_INVALID_ARG;
	return map_rings(vq, mem);
}

void vl_vq_set_batch_threshold(struct vl_vq *vq, uint32_t threshold)
{
	vq->batch_threshold = threshold;
}

void vl_vq_break(struct vl_vq *vq, enum vl_drop reason)
{
	/* Latch the first reason: later symptoms of the same corruption add nothing. */
	if (!vq->broken) {
		vq->broken = true;
		vq->broken_reason = reason;
		vq->stats.drops[reason]++;
	}
}

uint32_t vl_vq_size(const struct vl_vq *vq) { return vq->size; }
uint64_t vl_vq_features(const struct vl_vq *vq) { return vq->features; }
void vl_vq_get_config(const struct vl_vq *vq, struct vl_vq_config *out)
{
	*out = vq->cfg;
	out->batch_threshold = vq->batch_threshold;
	out->last_avail_idx = vl_vq_last_avail(vq);
	out->last_used_idx = vl_vq_last_used(vq);
}

uint16_t vl_vq_last_avail(const struct vl_vq *vq)
{
	if (vq->layout == VL_LAYOUT_PACKED)
		return (uint16_t)(vq->avail_pos | (vq->avail_wrap ? VL_PACKED_WRAP_BIT : 0));
	return vq->last_avail_idx;
}

uint16_t vl_vq_last_used(const struct vl_vq *vq)
{
	if (vq->layout == VL_LAYOUT_PACKED)
		return (uint16_t)(vq->used_pos | (vq->used_wrap ? VL_PACKED_WRAP_BIT : 0));
	return vq->used_idx;
}

void vl_vq_set_dirty_log(struct vl_vq *vq, uint8_t *bitmap, uint64_t bytes)
{
	/* Marks cached for the old bitmap go there first. */
	if (vq->log.bitmap)
		vl_log_flush(&vq->log);
	vq->log.ncached = 0;
	vq->log.bitmap = bytes ? bitmap : NULL;
	vq->log.bytes = bitmap ? bytes : 0;
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
	/* Zero-copy applies to dequeue (TX); the bound keeps at least one descriptor chain
	 * with the guest. Leases already taken go back normally whatever the new setting. */
	if (max_inflight == 0)
		max_inflight = 1;
	if (max_inflight > vq->size)
		max_inflight = vq->size;
	vq->zc_on = enable;
	vq->zc_min_len = min_len;
	vq->zc_max = max_inflight;
}

uint32_t vl_vq_zero_copy_held(const struct vl_vq *vq)
{
	return vq->zc_held;
}

void vl_vq_complete(struct vl_vq *vq)
{
	if (vq->zc_held == 0 || vq->broken)
		return;
	vl_zc_return(vq);
	if (vq->layout == VL_LAYOUT_PACKED)
		vl_packed_flush_used(vq);
	else
		vl_split_flush_used(vq);
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
	vq->tx_line_wait = enable && vq->layout == VL_LAYOUT_PACKED;
}

bool vl_vq_tx_line_wait(const struct vl_vq *vq) { return vq->tx_line_wait; }

void vl_vq_set_kicks(struct vl_vq *vq, bool want)
{
	vq->want_kicks = want;
	update_kick_wish(vq);
	/* Turning kicks on is one half of a Dekker handshake: the guest publishes its avail
	 * index, then reads whether to kick; the device publishes that it wants kicks, then
	 * (in the burst the caller runs before sleeping) reads the avail index. Each side
	 * needs a full barrier between its store and its load, or both can miss the other's
	 * store and the ring sleeps with buffers in it (Linux's vhost_enable_notify has the
	 * same smp_mb). */
	if (want)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
bool vl_vq_broken(const struct vl_vq *vq) { return vq->broken; }
enum vl_drop vl_vq_broken_reason(const struct vl_vq *vq) { return vq->broken_reason; }
bool vl_vq_needs_call(const struct vl_vq *vq) { return vq->needs_call; }
const struct vl_vq_stats *vl_vq_stats(const struct vl_vq *vq) { return &vq->stats; }

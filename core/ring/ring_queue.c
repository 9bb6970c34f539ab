/* SPDX-License-Identifier: MIT */
/* The ring layer's queue lifecycle (control path only): validation of the embedder's
 * configuration, ring translation, the ring's scratch, positions, kicks, the dirty log and
 * drop names. The public vl_vq_* calls are the net layer's (net/queue.c), which keeps its own
 * state around this. */
#include <stdlib.h>

#include "alloc.h"
#include "ring/ring.h"
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
	[VL_DROP_CSUM_PAST_FRAME] = "csum_past_frame",
	[VL_DROP_ECN_WITHOUT_GSO] = "ecn_without_gso",
	[VL_DROP_GSO_UNKNOWN_TYPE] = "gso_unknown_type",
	[VL_DROP_GSO_NOT_NEGOTIATED] = "gso_not_negotiated",
	[VL_DROP_ECN_NOT_NEGOTIATED] = "ecn_not_negotiated",
	[VL_DROP_GSO_NO_SEGMENT_SIZE] = "gso_no_segment_size",
	[VL_DROP_GSO_HDR_PAST_FRAME] = "gso_hdr_past_frame",
	[VL_DROP_GSO_WITHOUT_CSUM] = "gso_without_csum",
	[VL_DROP_GSO_BAD_FRAME] = "gso_bad_frame",
	[VL_DROP_GSO_PROTO_MISMATCH] = "gso_proto_mismatch",
	[VL_DROP_GSO_CSUM_MISMATCH] = "gso_csum_mismatch",
	[VL_DROP_TX_TOO_BIG] = "tx_too_big",
	[VL_DROP_RX_BUF_TOO_SMALL] = "rx_buf_too_small",
	[VL_DROP_RX_TOO_BIG] = "rx_too_big",
	[VL_DROP_RX_TOO_MANY_PIECES] = "rx_too_many_pieces",
	[VL_DROP_RX_CSUM_NOT_NEGOTIATED] = "rx_csum_not_negotiated",
	[VL_DROP_RX_FLAGS_UNKNOWN] = "rx_flags_unknown",
	[VL_DROP_RX_GSO_NOT_NEGOTIATED] = "rx_gso_not_negotiated",
	[VL_DROP_RX_GSO_NO_SEGMENT_SIZE] = "rx_gso_no_segment_size",
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
		      unsigned access, int *err)
{
	if (gpa % align != 0) {
		*err = VL_ERR_RING_MISALIGNED;
		return NULL;
	}
	uint64_t len = bytes;
	void *host = vl_mem_xlate(mem, gpa, &len, access);

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

static int map_split(struct vl_ring *rq, const struct vl_mem *mem)
{
	int err = VL_OK;
	/* The device reads the descriptor table and the available ring, and writes the used
	 * ring (reading back only its own fields there). */
	void *desc = map_area(mem, rq->cfg.desc_gpa, vl_split_desc_bytes(rq->size), 16,
			      VL_ACCESS_READ, &err);
	void *avail = desc ? map_area(mem, rq->cfg.driver_gpa, vl_split_avail_bytes(rq->size), 2,
				      VL_ACCESS_READ, &err) : NULL;
	void *used = avail ? map_area(mem, rq->cfg.device_gpa, vl_split_used_bytes(rq->size), 4,
				      VL_ACCESS_WRITE, &err) : NULL;

	if (!used)
		return err;
	rq->desc = desc;
	rq->avail = avail;
	rq->used = used;
	vl_mem_cursor_set(&rq->cur, mem);
	return VL_OK;
}

static int map_packed(struct vl_ring *rq, const struct vl_mem *mem)
{
	int err = VL_OK;
	/* The device reads and writes the descriptor ring (used descriptors go over available
	 * ones), reads the driver's event area and writes its own. */
	void *desc = map_area(mem, rq->cfg.desc_gpa, vl_packed_desc_bytes(rq->size), 16,
			      VL_ACCESS_READ | VL_ACCESS_WRITE, &err);
	void *drv = desc ? map_area(mem, rq->cfg.driver_gpa, sizeof(struct vl_packed_event), 4,
				    VL_ACCESS_READ, &err) : NULL;
	void *dev = drv ? map_area(mem, rq->cfg.device_gpa, sizeof(struct vl_packed_event), 4,
				   VL_ACCESS_WRITE, &err) : NULL;

	if (!dev)
		return err;
	rq->pdesc = desc;
	rq->driver_event = drv;
	rq->device_event = dev;
	vl_mem_cursor_set(&rq->cur, mem);
	return VL_OK;
}

int vl_ring_set_mem(struct vl_ring *rq, const struct vl_mem *mem)
{
	/* The cursor moves to the new table only once its rings are mapped there. */
	return rq->layout == VL_LAYOUT_PACKED ? map_packed(rq, mem) : map_split(rq, mem);
}

int vl_ring_check_config(const struct vl_vq_config *cfg)
{
	if (cfg->layout != VL_LAYOUT_SPLIT && cfg->layout != VL_LAYOUT_PACKED)
		return VL_ERR_LAYOUT;
	uint32_t size = vl_vq_config_size(cfg);
	bool packed = cfg->layout == VL_LAYOUT_PACKED;

	/* Split rings index with a mask: the size must be a power of two (spec 2.7). Packed
	 * rings take any size up to 32768 (spec 2.8). Neither layout goes past 32768 (packed
	 * positions are 15 bits wide). */
	if (size > VL_QUEUE_SIZE_MAX || (!packed && (size & (size - 1)) != 0))
		return VL_ERR_QUEUE_SIZE;
	/* A packed resume position must lie inside the ring. */
	if (packed && ((cfg->last_avail_idx & ~VL_PACKED_WRAP_BIT) >= size ||
		       (cfg->last_used_idx & ~VL_PACKED_WRAP_BIT) >= size))
		return VL_ERR_RING_BASE;
	return VL_OK;
}

void vl_ring_fini(struct vl_ring *rq)
{
	free(rq->shadow);
	free(rq->pflags);
	free(rq->pchains);
	free(rq->pieces);
	free(rq->indirect_copy);
	free(rq->seen);
	free(rq->infl_heads);
	free(rq->resubmit);
	*rq = (struct vl_ring){0};
}

int vl_ring_init(struct vl_ring *rq, const struct vl_mem *mem, const struct vl_vq_config *cfg)
{
	int rc;
	const uint32_t size = vl_vq_config_size(cfg);
	const bool packed = cfg->layout == VL_LAYOUT_PACKED;

	*rq = (struct vl_ring){0};
	rq->layout = cfg->layout;
	rq->size = size;
	rq->cfg = *cfg;
	rq->features = cfg->features;
	rq->indirect_ok = (cfg->features & VL_FEATURE(VL_F_RING_INDIRECT_DESC)) != 0;
	rq->in_order = (cfg->features & VL_FEATURE(VL_F_IN_ORDER)) != 0;
	rq->event_idx = (cfg->features & VL_FEATURE(VL_F_RING_EVENT_IDX)) != 0;
	rq->want_kicks = true;
	rq->log.pages_marked = &rq->stats.log_pages;
	rq->log.out_of_range = &rq->stats.log_out_of_range;
	rq->last_avail_idx = cfg->last_avail_idx;
	rq->head_limit = size;

	rq->shadow = vl_calloc(size, sizeof(*rq->shadow));
	rq->pieces = vl_calloc(VL_CHAIN_MAX_PIECES, sizeof(*rq->pieces));
	rq->indirect_copy = vl_calloc(size, 16);
	rq->seen = vl_calloc(size, sizeof(*rq->seen));
	if (packed) {
		rq->pflags = vl_calloc(size, sizeof(*rq->pflags));
		rq->pchains = vl_calloc(size, sizeof(*rq->pchains));
	}
	if (!rq->shadow || !rq->pieces || !rq->indirect_copy || !rq->seen ||
	    (packed && (!rq->pflags || !rq->pchains))) {
		vl_ring_fini(rq);
		return VL_ERR_NOMEM;
	}
	rc = vl_ring_set_mem(rq, mem);
	if (rc != VL_OK) {
		vl_ring_fini(rq);
		return rc;
	}
	/* Resume the used index where the guest expects it: the device has returned exactly
	 * what it consumed when a queue (re)starts. */
	rq->used_idx = rq->last_avail_idx;
	if (packed) {
		rq->avail_pos = cfg->last_avail_idx & (uint16_t)~VL_PACKED_WRAP_BIT;
		rq->avail_wrap = (cfg->last_avail_idx & VL_PACKED_WRAP_BIT) != 0;
		rq->used_pos = cfg->last_used_idx & (uint16_t)~VL_PACKED_WRAP_BIT;
		rq->used_wrap = (cfg->last_used_idx & VL_PACKED_WRAP_BIT) != 0;
	}
	/* Publish the device's initial kick wish: a guest that posts before our first burst
	 * must know whether to kick. */
	vl_ring_update_kick_wish(rq, true);
	vl_log_flush(&rq->log);
	return VL_OK;
}

void vl_ring_break(struct vl_ring *rq, enum vl_drop reason)
{
	/* Latch the first reason: later symptoms of the same corruption add nothing. */
	if (!rq->broken) {
		rq->broken = true;
		rq->broken_reason = reason;
		rq->stats.drops[reason]++;
	}
}

uint16_t vl_ring_last_avail(const struct vl_ring *rq)
{
	if (rq->layout == VL_LAYOUT_PACKED)
		return (uint16_t)(rq->avail_pos | (rq->avail_wrap ? VL_PACKED_WRAP_BIT : 0));
	return rq->last_avail_idx;
}

uint16_t vl_ring_last_used(const struct vl_ring *rq)
{
	if (rq->layout == VL_LAYOUT_PACKED)
		return (uint16_t)(rq->used_pos | (rq->used_wrap ? VL_PACKED_WRAP_BIT : 0));
	return rq->used_idx;
}

void vl_ring_set_dirty_log(struct vl_ring *rq, uint8_t *bitmap, uint64_t bytes)
{
	/* Marks cached for the old bitmap go there first. */
	if (rq->log.bitmap)
		vl_log_flush(&rq->log);
	rq->log.ncached = 0;
	rq->log.bitmap = bytes ? bitmap : NULL;
	rq->log.bytes = bitmap ? bytes : 0;
}

void vl_ring_set_kicks(struct vl_ring *rq, bool want)
{
	/* Stored whatever was stored before: the one store a sleeping device relies on must not
	 * be skipped because a guest scribbled over the field. */
	rq->want_kicks = want;
	vl_ring_update_kick_wish(rq, true);
	vl_log_flush(&rq->log);
	/* Turning kicks on is one half of a Dekker handshake: the guest publishes its avail
	 * index, then reads whether to kick; the device publishes that it wants kicks, then
	 * (in the burst the caller runs before sleeping) reads the avail index. Each side
	 * needs a full barrier between its store and its load, or both can miss the other's
	 * store and the ring sleeps with buffers in it (Linux's vhost_enable_notify has the
	 * same smp_mb). */
	if (want)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

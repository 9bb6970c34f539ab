/* SPDX-License-Identifier: MIT */
/* One action of the hostile guest (hostile_guest.h), then the invariants. */
#include <stdio.h>
#include <string.h>

#include "hg_internal.h"
#include "ring_write.h"
#include "trace_sink.h"
#include "vl_lab_control.h"

/* Guest writes of raw bytes, descriptors and table entries: anything, anywhere. */
static void raw_write(struct lab_hg *d, const struct lab_hg_action *a)
{
	bool split = d->L == VL_LAYOUT_SPLIT;
	uint32_t area = a->ram ? FZ_DP_RAM : FZ_DP_RING_AREA;
	uint8_t *base = a->ram ? d->ram : d->ring;

	switch (a->kind) {
	case LAB_HG_WRITE: {
		uint32_t off = a->off % area, n = a->n > sizeof(a->bytes) ? sizeof(a->bytes) : a->n;

		if (n > area - off)
			n = area - off;
		memcpy(base + off, a->bytes, n);
		break;
	}
	case LAB_HG_FILL: {
		uint32_t off = a->off % area, n = a->count;

		if (n > area - off)
			n = area - off;
		memset(base + off, a->byte, n);
		break;
	}
	case LAB_HG_DESC: {
		uint16_t i = (uint16_t)(a->value % d->size);

		if (split)
			lab_rw_split_desc(d->desc, i, a->addr, a->len, a->flags, a->other);
		else
			lab_rw_packed_desc(d->pdesc, i, a->addr, a->len, a->other, a->flags);
		break;
	}
	default: { /* LAB_HG_TABLE */
		uint32_t off = a->off % (FZ_DP_RAM - 15u);

		if (split)
			lab_rw_split_desc(d->ram + off, 0, a->addr, a->len, a->flags, a->other);
		else
			lab_rw_packed_entry(d->ram + off, 0, a->addr, a->len, a->other, a->flags);
		break;
	}
	}
}

/* The driver's indices and the notification areas. */
static void driver_state(struct lab_hg *d, const struct lab_hg_action *a)
{
	bool split = d->L == VL_LAYOUT_SPLIT;

	switch (a->kind) {
	case LAB_HG_AVAIL:
		if (split) {
			lab_rw_split_avail(d->avail, d->size, d->avail_idx++, a->value);
		} else {
			hg_do_pflags(d, a->value, a->byte);
		}
		break;
	case LAB_HG_PUBLISH:
		if (split) {
			lab_rw_split_publish(d->avail, d->avail_idx);
		} else {
			d->ppos = (uint16_t)((a->value & 0x7fffu) % d->size);
			d->pwrap = (a->value & VL_PACKED_WRAP_BIT) != 0;
		}
		break;
	case LAB_HG_FORCE:
		if (split) {
			d->avail_idx = a->value;
			lab_rw_split_publish(d->avail, d->avail_idx);
		} else {
			hg_pstep(&d->ppos, &d->pwrap, a->byte, d->size);
		}
		break;
	default: /* LAB_HG_EVENT */
		if (split) {
			if (a->flag)
				lab_rw_split_used_event(d->avail, d->size, a->value);
			else
				lab_rw_split_avail_flags(d->avail, a->value);
		} else {
			lab_rw_packed_event(d->drv_ev, a->other, a->value);
		}
		break;
	}
}

static void burst(struct lab_hg *d, const struct lab_hg_action *a)
{
	if (d->rx) {
		/* Over the budget: nothing runs (the decoder has read the arguments). */
		if (d->bursts++ < FZ_DP_MAX_BURSTS)
			hg_do_enqueue(d, a->npkts, a->lens, a->mods);
		return;
	}
	if (d->bursts < FZ_DP_MAX_BURSTS) {
		enum fz_tx_host h = hg_tx_host(d, d->bursts);

		if (h == FZ_TX_DEQUEUE)
			hg_do_dequeue(d, a->byte);
		else
			hg_do_discard(d, a->byte, h == FZ_TX_TOUCH);
	}
	d->bursts++;
}

/* Run-time switches of the queue and the pool. */
static void host_setting(struct lab_hg *d, const struct lab_hg_action *a)
{
	switch (a->kind) {
	case LAB_HG_POOLFAIL: {
		if (fz_sink)
			hg_rec_fault(d, a->byte);
		struct vl_lab_arg fail = {.pool = d->pool,
					  .count = a->byte == 255 ? VL_LAB_NEVER : a->byte};

		vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &fail);
		break;
	}
	case LAB_HG_KICKS: {
		bool want = a->byte & 1;

		/* The core writes the kick wish (and logs it) at once: a host statement. */
		if (fz_sink)
			hg_rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_KICKS,
							      .queue = (uint32_t)d->rq, .value = want});
		vl_vq_set_kicks(d->vq, want);
		if (fz_sink)
			fz_sink->absorb(fz_sink->ctx);
		break;
	}
	case LAB_HG_BATCH: {
		uint32_t t = fz_batch_threshold(a->byte);

		if (fz_sink)
			hg_rec_batch(d, t);
		vl_vq_set_batch_threshold(d->vq, t);
		break;
	}
	case LAB_HG_POLICY: {
		const uint8_t p = a->byte;
		bool burst_alloc = p & 1;

		d->line_wait = (p & 4) != 0;
		if (fz_sink)
			hg_rec_policy(d, burst_alloc, d->line_wait);
		vl_vq_set_alloc_policy(d->vq, burst_alloc ? VL_ALLOC_BURST : VL_ALLOC_AVAILABLE);
		/* Bit 1: evict-after-read, on any queue (RX must ignore it). Not recorded: it
		 * changes no byte and no counter a trace checks, and a trace replays on any CPU.
		 * Where CLFLUSHOPT is missing it stays off (hg_check_evictions expects none). */
		(void)vl_vq_set_evict_reads(d->vq, (p & 2) != 0);
		/* Bit 2: line wait, on any queue: a split ring keeps it off and enqueue ignores it
		 * (hg_check_tx_take, hg_check_no_line_waits). Recorded on TX (hg_rec_policy). */
		vl_vq_set_tx_line_wait(d->vq, d->line_wait);
		/* Bit 3: payload prefetch off (the core's default is on), on any queue. Not
		 * recorded: a hint, it changes no byte and no counter a trace checks
		 * (hg_check_copy_prefetches holds its count). */
		vl_vq_set_tx_prefetch(d->vq, (p & 8) == 0);
		break;
	}
	default: { /* LAB_HG_ZC */
		uint8_t z = a->byte;
		uint32_t min = fz_zc_min_len((uint8_t)(z >> 1)), max = 1u + (z >> 3);

		if (fz_sink)
			hg_rec_zc(d, z & 1, min, max);
		vl_vq_set_zero_copy(d->vq, z & 1, min, max);
		break;
	}
	}
}

void lab_hg_apply(struct lab_hg *d, const struct lab_hg_action *a)
{
	switch (a->kind) {
	case LAB_HG_WRITE:
	case LAB_HG_FILL:
	case LAB_HG_DESC:
	case LAB_HG_TABLE:
		raw_write(d, a);
		break;
	case LAB_HG_POST:
		hg_do_post(d, a->shape, a->count, a->off, a->hdr);
		break;
	case LAB_HG_AVAIL:
	case LAB_HG_PUBLISH:
	case LAB_HG_FORCE:
	case LAB_HG_EVENT:
		driver_state(d, a);
		break;
	case LAB_HG_BURST:
		burst(d, a);
		break;
	case LAB_HG_FREE:
		hg_free_held(d, a->byte);
		break;
	case LAB_HG_COMPLETE:
		hg_do_complete(d);
		break;
	case LAB_HG_POOLFAIL:
	case LAB_HG_KICKS:
	case LAB_HG_BATCH:
	case LAB_HG_POLICY:
	case LAB_HG_ZC:
		host_setting(d, a);
		break;
	case LAB_HG_SETMEM:
		if (fz_sink)
			hg_rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_REMAP});
		hg_do_setmem(d);
		break;
	}
	hg_check_queue(d);
}

void lab_hg_dump(const struct lab_hg *d)
{
	fprintf(stderr, "    -> last_avail 0x%04x last_used 0x%04x held %u pkts held %u%s%s\n",
		vl_vq_last_avail(d->vq), vl_vq_last_used(d->vq), vl_vq_zero_copy_held(d->vq),
		d->nheld, vl_vq_broken(d->vq) ? " broken: " : "",
		vl_vq_broken(d->vq) ? vl_drop_name(vl_vq_broken_reason(d->vq)) : "");
	if (d->L == VL_LAYOUT_PACKED) {
		fprintf(stderr, "    ring:");
		for (uint32_t i = 0; i < d->size && i < 32; i++)
			fprintf(stderr, " %u:%04x/%u/%u", i, d->pdesc[i].flags, d->pdesc[i].id,
				d->pdesc[i].len);
		fprintf(stderr, "\n");
	}
}

/* SPDX-License-Identifier: MIT */
/* Recording a hostile-guest run as a trace (fz_sink: vhostlab trace from-fuzz). */
#include <stdlib.h>
#include <string.h>

#include "hg_internal.h"
#include "trace_sink.h"

/* The engine reports what it does to the sink in trace terms: the setup once, then before
 * every core call that reads guest memory a sync (the guest's writes so far) and the
 * statement, after it an absorb (the device's writes). Packets are numbered per queue in
 * dequeue order, as the trace numbers them. Run-time switches of queue options are `set`,
 * a new memory table `remap`: every operation of the engine has a statement. */

void hg_rec_stmt(struct lab_hg *d, const struct lab_trace_op *op)
{
	d->rec_started = true;
	fz_sink->sync(fz_sink->ctx);
	fz_sink->op(fz_sink->ctx, op);
}

static struct lab_trace_queue *rec_queue(struct lab_hg *d)
{
	return fz_sink->queue_ref(fz_sink->ctx, d->rq);
}

struct hg_zc {
	bool on;
	uint32_t min, max;
};

/* The core's zero-copy setting after vl_vq_set_zero_copy(on, min, max) (it clamps max to
 * 1..size - 1 ring descriptors). */
static struct hg_zc zc_setting(const struct lab_hg *d, bool on, uint32_t min, uint32_t max)
{
	struct hg_zc z = {on, min, max ? max : 1};

	/* Ring descriptors, never the whole ring (vl_vq.h). */
	if (z.max >= d->size)
		z.max = d->size - 1;
	return z;
}

static void zc_to_trace(struct lab_trace_queue *q, struct hg_zc z)
{
	q->zero_copy = z.on;
	q->zc_min = z.on ? z.min : 0;
	q->zc_max = z.on ? z.max : 0;
}

void hg_rec_setup(struct lab_hg *d, const struct vl_vq_config *qc, uint32_t pool_bufs,
		      uint32_t pool_size)
{
	const struct lab_trace_sink *k = fz_sink;

	k->begin(k->ctx, d->g, d->features);
	d->rq = k->queue(k->ctx, d->rx ? "rx" : "tx", d->rx ? LAB_TRACE_RX : LAB_TRACE_TX, qc);
	/* Zero-copy and the allocation policy are dequeue options: nothing on RX. */
	if (!d->rx) {
		if (d->s.zc & 1)
			zc_to_trace(rec_queue(d),
				    zc_setting(d, true, fz_zc_min_len((uint8_t)(d->s.zc >> 1)),
					       1u + (d->s.zc >> 3)));
		if (d->s.features & FZ_DPF_ALLOC_BURST)
			rec_queue(d)->alloc = LAB_TRACE_ALLOC_BURST;
	}
	k->pool(k->ctx, pool_bufs, pool_size);
	if (d->log)
		k->dirty_log(k->ctx, d->log_bytes * 8);
}

/* Options before the first statement go into the queue line; later ones are `set`. */
static void rec_set(struct lab_hg *d, const struct lab_trace_op *op)
{
	hg_rec_stmt(d, op);
}

void hg_rec_batch(struct lab_hg *d, uint32_t threshold)
{
	struct lab_trace_queue *q = rec_queue(d);

	if (!d->rec_started)
		q->batch = threshold;
	else
		rec_set(d, &(struct lab_trace_op){.kind = LAB_T_SET, .queue = (uint32_t)d->rq,
						  .given = LAB_TA_BATCH, .count = threshold});
}

/* POLICY's allocation policy and line wait (bits 0 and 2), one `set` for both. Nothing on
 * RX, where the format refuses them: enqueue ignores both, and the harness checks it does. */
void hg_rec_policy(struct lab_hg *d, bool burst, bool line_wait)
{
	struct lab_trace_queue *q = rec_queue(d);
	enum lab_trace_alloc a = burst ? LAB_TRACE_ALLOC_BURST : LAB_TRACE_ALLOC_AVAILABLE;

	if (d->rx)
		return;
	if (!d->rec_started) {
		q->alloc = a;
		q->line_wait = line_wait;
	} else {
		rec_set(d, &(struct lab_trace_op){.kind = LAB_T_SET, .queue = (uint32_t)d->rq,
						  .given = LAB_TA_ALLOC | LAB_TA_LINE_WAIT,
						  .value = a, .flags = line_wait});
	}
}

void hg_rec_zc(struct lab_hg *d, bool on, uint32_t min, uint32_t max)
{
	struct lab_trace_queue *q = rec_queue(d);
	struct hg_zc z = zc_setting(d, on, min, max);

	if (d->rx)
		return;
	if (!d->rec_started) {
		zc_to_trace(q, z);
		return;
	}
	/* Off keeps its bound: it still stops in-order bursts behind leases already taken. */
	rec_set(d, &(struct lab_trace_op){.kind = LAB_T_SET, .queue = (uint32_t)d->rq,
					  .given = LAB_TA_ZC | (z.on ? 0 : LAB_TA_OFF),
					  .len = z.on ? z.min : 0, .index = z.max});
}

void hg_rec_fault(struct lab_hg *d, uint8_t after)
{
	struct lab_trace_op op = {.kind = LAB_T_FAULT, .queue = 0};

	op.value = LAB_TRACE_FAULT_POOL;
	if (after == 255)
		op.given = LAB_TA_OFF;
	else
		op.count = after;
	hg_rec_stmt(d, &op);
}

/* `dequeue ... hold` whenever the input may hold packets, each packet it does not hold
 * freed right after the burst: the replay frees them at the same point, in the same
 * order. Without holding nothing is ever held, and freeing at the next host action on the
 * queue (the replay's rule) is the same as freeing at once. */
void hg_rec_dequeue(struct lab_hg *d, uint16_t count)
{
	struct lab_trace_op op = {.kind = LAB_T_DEQUEUE, .queue = (uint32_t)d->rq};

	op.count = count;
	if (count && (d->s.hold & 3))
		op.given = LAB_TA_HOLD;
	hg_rec_stmt(d, &op);
}

void hg_rec_free(struct lab_hg *d, uint64_t *nums, uint32_t n)
{
	struct lab_trace_op op = {.kind = LAB_T_FREE, .queue = (uint32_t)d->rq};

	if (n == 0 || !(d->s.hold & 3))
		return;
	op.nitems = n;
	op.nums = nums;
	hg_rec_stmt(d, &op);
}

/* The host's packets with their exact bytes and offloads (only those that are not 0: the
 * replay zeroes the others). */
void hg_rec_enqueue(struct lab_hg *d, struct vl_pkt *const *pkts, uint32_t n)
{
	struct lab_trace_pkt tp[FZ_DP_MAX_RX_PKTS];
	struct lab_trace_op op = {.kind = LAB_T_ENQUEUE, .queue = (uint32_t)d->rq};

	memset(tp, 0, sizeof(tp));
	for (uint32_t i = 0; i < n; i++) {
		const struct vl_offload *ol = &pkts[i]->ol;
		struct lab_trace_ol *t = &tp[i].ol;

		tp[i].len = pkts[i]->pkt_len;
		tp[i].data.kind = LAB_PAT_ZERO;
		if (tp[i].len) {
			tp[i].data.kind = LAB_PAT_HEX;
			tp[i].data.nbytes = tp[i].len;
			tp[i].data.bytes = malloc(tp[i].len);
			if (!tp[i].data.bytes)
				fz_fail("out of memory recording a %u-byte packet", tp[i].len);
			vl_pkt_read(pkts[i], 0, tp[i].data.bytes, tp[i].len);
		}
		*t = (struct lab_trace_ol){0, ol->flags, ol->gso_type, ol->hdr_len, ol->gso_size,
					   ol->csum_start, ol->csum_offset};
		t->given = (uint8_t)((t->flags ? LAB_OL_FLAGS : 0) |
				     (t->gso_type ? LAB_OL_GSO_TYPE : 0) |
				     (t->hdr_len ? LAB_OL_HDR_LEN : 0) |
				     (t->gso_size ? LAB_OL_GSO_SIZE : 0) |
				     (t->csum_start ? LAB_OL_CSUM_START : 0) |
				     (t->csum_offset ? LAB_OL_CSUM_OFFSET : 0));
	}
	op.nitems = n;
	op.pkts = tp;
	hg_rec_stmt(d, &op);
	for (uint32_t i = 0; i < n; i++)
		free(tp[i].data.bytes);
}

/* The end of the operations: the guest's last writes (the teardown's complete reads them)
 * and what the run observed. */
void hg_rec_finish(struct lab_hg *d)
{
	struct vl_vq *vq = d->vq;

	fz_sink->sync(fz_sink->ctx);
	fz_sink->observe(fz_sink->ctx, &vq, 1, d->log, d->log_bytes);
}


/* SPDX-License-Identifier: MIT */
/* Recording a lab run as a trace by shadow-copy diffs: see trace_record.h. */
#include "trace_record.h"
#include "gpa_ptr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Equal bytes shorter than this between two changed runs are written with them: one
 * statement instead of two. */
#define REC_MERGE_GAP 16u
/* Longest literal `write` statement the recorder emits. */
#define REC_MAX_WRITE 1024u
/* A stretch of one value at least this long inside a changed run is a `fill`. */
#define REC_MIN_FILL 32u
/* Guest bytes the replay's setup writes, per queue (see lab_rec_queue). */
#define REC_MAX_FORCED (3u * LAB_TRACE_MAX_QUEUES)

struct rec_area {
	uint64_t gpa, size;
	uint8_t *guest;     /* guest view */
	uint8_t *shadow;    /* what the trace has written so far */
};

struct lab_recorder {
	struct lab_trace t;
	struct rec_area area[2];  /* ring area, RAM */
	/* Ranges the next sync writes whatever the shadow says: the replay's setup wrote
	 * them, so replay memory there is not what the shadow assumes. */
	struct {
		uint64_t gpa, len;
	} forced[REC_MAX_FORCED];
	uint32_t nforced;
};

/* Consecutive host pieces of equal size form one region with pieces=; the last piece of a
 * run may be shorter, which the format's pieces= also expresses. */
static void add_regions(struct lab_trace *t, const struct vl_mem_region *p, uint32_t n)
{
	for (uint32_t i = 0; i < n && t->nregions < LAB_TRACE_MAX_REGIONS;) {
		uint64_t piece = p[i].size, size = p[i].size;
		uint32_t j = i + 1;

		while (j < n && p[j].gpa == p[j - 1].gpa + p[j - 1].size && p[j - 1].size == piece) {
			size += p[j].size;
			j++;
		}
		t->regions[t->nregions++] = (struct lab_trace_region){
			p[i].gpa, size, j - i > 1 ? piece : 0};
		i = j;
	}
}

struct lab_recorder *lab_rec_create(struct lab_gmem *g, uint64_t features, uint64_t seed)
{
	struct lab_recorder *r = calloc(1, sizeof(*r));
	const struct vl_mem_region *regs;
	uint32_t n;

	if (!r)
		return NULL;
	lab_trace_init(&r->t);
	r->t.features = features;
	r->t.seed = seed;
	/* Not in one call: the order arguments are evaluated in is unspecified, and n must be
	 * read after lab_gmem_regions wrote it. */
	regs = lab_gmem_regions(g, &n);
	add_regions(&r->t, regs, n);
	r->area[0].gpa = lab_gmem_ring_gpa(g);
	r->area[0].size = lab_gmem_ring_size(g);
	r->area[1].gpa = lab_gmem_ram_gpa(g);
	r->area[1].size = lab_gmem_ram_size(g);
	for (unsigned i = 0; i < 2; i++) {
		r->area[i].guest = lab_gmem_guest_ptr(g, r->area[i].gpa, r->area[i].size);
		r->area[i].shadow = calloc(r->area[i].size, 1);   /* replay memory starts zeroed */
		if (!r->area[i].guest || !r->area[i].shadow) {
			lab_rec_destroy(r);
			return NULL;
		}
	}
	return r;
}

void lab_rec_destroy(struct lab_recorder *r)
{
	if (!r)
		return;
	lab_trace_free(&r->t);
	for (unsigned i = 0; i < 2; i++)
		free(r->area[i].shadow);
	free(r);
}

static void force(struct lab_recorder *r, uint64_t gpa, uint64_t len)
{
	if (r->nforced < REC_MAX_FORCED) {
		r->forced[r->nforced].gpa = gpa;
		r->forced[r->nforced++].len = len;
	}
}

int lab_rec_queue(struct lab_recorder *r, const char *name, enum lab_trace_dir dir,
		  const struct vl_vq_config *cfg)
{
	struct lab_trace_queue *q;

	if (r->t.nqueues >= LAB_TRACE_MAX_QUEUES)
		return -1;
	q = &r->t.queues[r->t.nqueues];
	memset(q, 0, sizeof(*q));
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->dir = dir;
	q->size = vl_vq_config_size(cfg);
	q->desc = cfg->desc_gpa;
	q->driver = cfg->driver_gpa;
	q->device = cfg->device_gpa;
	q->batch = cfg->batch_threshold;
	/* The shadow starts zeroed like replay memory, but the replay's setup writes some
	 * guest bytes before the first statement: split avail->idx and used->idx (`start`),
	 * the packed descriptors' flags (a ring resumed at `start`), and the kick wish
	 * vl_vq_create publishes (split used->flags or avail_event, the packed device event
	 * area). A guest byte there equal to the shadow's 0 would never be written, and the
	 * replayed core would read the setup's value instead: the next sync writes these
	 * ranges whatever they hold. */
	if (cfg->layout == VL_LAYOUT_PACKED) {
		q->start = cfg->last_avail_idx & (uint16_t)~VL_PACKED_WRAP_BIT;
		q->wrap = (cfg->last_avail_idx & VL_PACKED_WRAP_BIT) != 0;
		force(r, q->desc, 16ull * q->size);
		force(r, q->device, 4);
	} else {
		q->start = cfg->last_avail_idx;
		q->wrap = true;
		force(r, q->driver + 2, 2);
		force(r, q->device, 4);
		force(r, q->device + 4 + 8ull * q->size, 2);
	}
	return (int)r->t.nqueues++;
}

struct lab_trace_queue *lab_rec_queue_ref(struct lab_recorder *r, int q)
{
	return &r->t.queues[q];
}

void lab_rec_set_pool(struct lab_recorder *r, uint32_t bufs, uint32_t size)
{
	r->t.pool_bufs = bufs;
	r->t.pool_size = size;
}

void lab_rec_set_dirty_log(struct lab_recorder *r, uint64_t pages)
{
	r->t.dirty_pages = pages;
}

static void emit_fill(struct lab_recorder *r, uint64_t gpa, uint8_t v, uint64_t len)
{
	struct lab_trace_op op = {.kind = LAB_T_FILL, .addr = gpa, .len = len};

	op.pat.kind = v ? LAB_PAT_BYTE : LAB_PAT_ZERO;
	op.pat.value = v;
	lab_rec_op(r, &op);
}

static void emit_literal(struct lab_recorder *r, uint64_t gpa, const uint8_t *p, uint64_t len)
{
	for (uint64_t off = 0; off < len; off += REC_MAX_WRITE) {
		uint64_t n = len - off < REC_MAX_WRITE ? len - off : REC_MAX_WRITE;
		struct lab_trace_op op = {.kind = LAB_T_WRITE, .addr = gpa + off};

		op.pat.kind = LAB_PAT_HEX;
		op.pat.bytes = (uint8_t *)(p + off);  /* copied by lab_rec_op */
		op.pat.nbytes = (uint32_t)n;
		lab_rec_op(r, &op);
	}
}

/* A changed run: a run of one value is one `fill`; inside a mixed run, stretches of one
 * value of REC_MIN_FILL bytes or more are fills too (a guest that memsets a buffer must not
 * cost a kilobyte of hex per kilobyte), the rest literal writes. */
static void emit_run(struct lab_recorder *r, uint64_t gpa, const uint8_t *p, uint64_t len)
{
	uint64_t lit = 0;   /* first byte not yet emitted */

	for (uint64_t i = 0; i < len;) {
		uint64_t j = i + 1;

		while (j < len && p[j] == p[i])
			j++;
		if (j - i >= REC_MIN_FILL || (i == 0 && j == len)) {
			emit_literal(r, gpa + lit, p + lit, i - lit);
			emit_fill(r, gpa + i, p[i], j - i);
			lit = j;
		}
		i = j;
	}
	emit_literal(r, gpa + lit, p + lit, len - lit);
}

/* The forced ranges (see lab_rec_queue), where they lie inside the recorded areas. */
static void sync_forced(struct lab_recorder *r)
{
	for (uint32_t f = 0; f < r->nforced; f++)
		for (unsigned a = 0; a < 2; a++) {
			struct rec_area *ar = &r->area[a];
			const struct vl_mem_region view = {.gpa = ar->gpa, .size = ar->size,
							   .host = ar->guest};
			uint64_t gpa = r->forced[f].gpa, len = r->forced[f].len;
			uint8_t *p = lab_gpa_ptr(&view, 1, gpa, len);

			if (!p)
				continue;
			emit_run(r, gpa, p, len);
			memcpy(ar->shadow + (p - ar->guest), p, len);
		}
	r->nforced = 0;
}

void lab_rec_sync(struct lab_recorder *r)
{
	sync_forced(r);
	for (unsigned a = 0; a < 2; a++) {
		struct rec_area *ar = &r->area[a];
		uint64_t i = 0;

		while (i < ar->size) {
			/* Skip equal bytes fast, 64 at a time. */
			if (i + 64 <= ar->size && !memcmp(ar->guest + i, ar->shadow + i, 64)) {
				i += 64;
				continue;
			}
			if (ar->guest[i] == ar->shadow[i]) {
				i++;
				continue;
			}
			uint64_t start = i, end = i + 1, gap = 0;

			for (uint64_t k = end; k < ar->size && gap < REC_MERGE_GAP; k++) {
				if (ar->guest[k] != ar->shadow[k]) {
					end = k + 1;
					gap = 0;
				} else {
					gap++;
				}
			}
			emit_run(r, ar->gpa + start, ar->guest + start, end - start);
			memcpy(ar->shadow + start, ar->guest + start, end - start);
			i = end;
		}
	}
}

void lab_rec_absorb(struct lab_recorder *r)
{
	for (unsigned a = 0; a < 2; a++)
		memcpy(r->area[a].shadow, r->area[a].guest, r->area[a].size);
}

static void *dup_array(const void *src, size_t n, size_t size)
{
	void *p;

	if (!src || !n)
		return NULL;
	p = malloc(n * size);
	if (p)
		memcpy(p, src, n * size);
	return p;
}

bool lab_rec_op(struct lab_recorder *r, const struct lab_trace_op *op)
{
	struct lab_trace_op c = *op;

	c.pat.bytes = dup_array(op->pat.bytes, op->pat.nbytes, 1);
	c.bufs = dup_array(op->bufs, op->nitems, sizeof(*op->bufs));
	c.pkts = dup_array(op->pkts, op->nitems, sizeof(*op->pkts));
	c.nums = dup_array(op->nums, op->nitems, sizeof(*op->nums));
	if (c.pkts)
		for (uint32_t i = 0; i < c.nitems; i++) {
			c.pkts[i].data.bytes = dup_array(op->pkts[i].data.bytes,
							 op->pkts[i].data.nbytes, 1);
		}
	return lab_trace_append(&r->t, &c) != NULL;
}

struct lab_trace *lab_rec_trace(struct lab_recorder *r)
{
	return &r->t;
}

/* SPDX-License-Identifier: MIT */
/* The session recorder (session_rec.h): setup, the memory layout, queues, the observer of
 * the core's guest loads, and the closing expectations. One burst becomes statements in
 * session_rec_burst.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_fetch.h"
#include "session_rec_internal.h"
#include "trace_names.h"
#include "vhostlab/vl_error.h"
#include "vhostlab/vl_virtio.h"

#define PAGE 4096ull

struct lab_srec *lab_srec_create(uint64_t max_packets)
{
	struct lab_srec *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	lab_trace_init(&r->t);
	r->max_packets = max_packets;
	for (uint32_t i = 0; i < LAB_SREC_MAX_RINGS; i++)
		r->ring_q[i] = -1;
	return r;
}

static void queue_free(struct srec_q *q)
{
	free(q->slot_head);
	free(q->slot_set);
	free(q->snap);
	free(q->snap_stamp);
	free(q->walk_stamp);
	free(q->slot_val);
	free(q->slot_stamp);
	free(q->touched);
}

void lab_srec_destroy(struct lab_srec *r)
{
	if (!r)
		return;
	lab_df_set_observer(NULL, NULL);
	for (uint32_t i = 0; i < r->nq; i++)
		queue_free(&r->q[i]);
	lab_trace_free(&r->t);
	free(r->regs);
	free(r->caps);
	free(r->arena);
	free(r);
}

const char *lab_srec_stopped(const struct lab_srec *r)
{
	return r->stopped ? r->why : NULL;
}

void lab_srec_stop(struct lab_srec *r, const char *fmt, ...)
{
	va_list ap;

	if (r->stopped)
		return;
	r->stopped = true;
	r->cur = NULL;
	lab_df_set_observer(NULL, NULL);
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

bool srec_append(struct lab_srec *r, const struct lab_trace_op *op)
{
	if (lab_trace_append(&r->t, op))
		return true;
	struct lab_trace_op tmp = *op;

	lab_trace_op_free(&tmp);
	lab_srec_stop(r, "the trace cannot take more statements (%u; out of memory, or the "
		      "format's limit of %u)", r->t.nops, LAB_TRACE_MAX_OPS);
	return false;
}

bool srec_keep(struct lab_srec *r, uint64_t gpa, const void *src, uint32_t n)
{
	if (r->ncaps == r->cap_caps) {
		uint32_t cap = r->cap_caps ? 2 * r->cap_caps : 256;
		struct srec_cap *c = realloc(r->caps, (size_t)cap * sizeof(*c));

		if (!c)
			return false;
		r->caps = c;
		r->cap_caps = cap;
	}
	if (r->arena_len + n > r->arena_cap) {
		size_t cap = r->arena_cap ? 2 * r->arena_cap : 65536;

		while (cap < r->arena_len + n)
			cap *= 2;
		/* Offsets are 32-bit: a burst never reads anywhere near 4 GiB. */
		if (cap > UINT32_MAX)
			return false;
		uint8_t *a = realloc(r->arena, cap);

		if (!a)
			return false;
		r->arena = a;
		r->arena_cap = cap;
	}
	memcpy(r->arena + r->arena_len, src, n);
	r->caps[r->ncaps] = (struct srec_cap){gpa, n, (uint32_t)r->arena_len, r->ncaps};
	r->ncaps++;
	r->arena_len += n;
	return true;
}

void srec_note_stats(struct srec_q *q, const struct vl_vq *vq, const struct vl_vq_stats *before)
{
	const struct vl_vq_stats *s = vl_vq_stats(vq);

	q->sum_packets += s->packets - before->packets;
	q->sum_bytes += s->bytes - before->bytes;
	q->sum_chains += s->chains - before->chains;
	q->sum_used += s->used_entries - before->used_entries;
	for (uint32_t d = 0; d < VL_DROP__COUNT; d++)
		q->sum_drops[d] += s->drops[d] - before->drops[d];
}

/* ---- memory ------------------------------------------------------------------------- */

static int cmp_host(const void *a, const void *b)
{
	const struct srec_region *x = a, *y = b;

	return x->host < y->host ? -1 : x->host > y->host;
}

/* Add the region (rounded out to whole pages, as the format wants) to the trace's layout,
 * unless it is there already. False (and the reason in msg) when it cannot be added. */
static bool layout_add(struct lab_trace *t, uint64_t gpa, uint64_t size, char *msg, size_t n)
{
	uint64_t start = gpa & ~(PAGE - 1), total = 0;
	uint64_t end = gpa + size; /* the core refused tables whose regions wrap */

	if (end > UINT64_MAX - (PAGE - 1)) {
		snprintf(msg, n, "region 0x%llx ends at the top of the address space",
			 (unsigned long long)gpa);
		return false;
	}
	end = (end + PAGE - 1) & ~(PAGE - 1);
	for (uint32_t i = 0; i < t->nregions; i++) {
		const struct lab_trace_region *o = &t->regions[i];

		total += o->size;
		if (o->gpa <= start && end <= o->gpa + o->size)
			return true; /* inside a region the trace has: the same memory again */
		if (start < o->gpa + o->size && o->gpa < end) {
			snprintf(msg, n, "region 0x%llx+0x%llx overlaps the trace's region "
				 "0x%llx+0x%llx (a trace has one memory layout)",
				 (unsigned long long)gpa, (unsigned long long)size,
				 (unsigned long long)o->gpa, (unsigned long long)o->size);
			return false;
		}
	}
	if (t->nregions == LAB_TRACE_MAX_REGIONS || end - start > LAB_TRACE_MAX_MEM - total) {
		snprintf(msg, n, "the memory needs more than %u regions or %llu MiB, the format's "
			 "limits", LAB_TRACE_MAX_REGIONS,
			 (unsigned long long)(LAB_TRACE_MAX_MEM >> 20));
		return false;
	}
	t->regions[t->nregions++] = (struct lab_trace_region){start, end - start, 0};
	return true;
}

bool lab_srec_memory(struct lab_srec *r, const struct vl_mem *mem)
{
	char msg[200];

	if (r->stopped)
		return false;
	if (!mem) {
		lab_srec_stop(r, "no memory table");
		return false;
	}
	uint32_t n = vl_mem_table_size(mem);
	struct srec_region *regs = calloc(n ? n : 1, sizeof(*regs));

	if (!regs) {
		lab_srec_stop(r, "out of memory");
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct vl_mem_region g;

		if (vl_mem_table_region(mem, i, &g) != VL_OK ||
		    !layout_add(&r->t, g.gpa, g.size, msg, sizeof(msg))) {
			free(regs);
			lab_srec_stop(r, "the memory table cannot be recorded: %s",
				      i < n ? msg : "?");
			return false;
		}
		regs[i] = (struct srec_region){(uintptr_t)g.host, g.gpa, g.size};
	}
	qsort(regs, n, sizeof(*regs), cmp_host);
	free(r->regs);
	r->regs = regs;
	r->nregs = n;
	/* Queues already in the trace move to a new table between bursts, as they did here. */
	if (r->mem && r->nq > 0)
		srec_append(r, &(struct lab_trace_op){.kind = LAB_T_REMAP});
	r->mem = mem;
	return !r->stopped;
}

/* The guest address of n host bytes at p, if they lie in one region of the table. */
static bool host_to_gpa(const struct lab_srec *r, const void *p, size_t n, uint64_t *gpa)
{
	uintptr_t a = (uintptr_t)p;
	uint32_t lo = 0, hi = r->nregs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct srec_region *g = &r->regs[mid];

		if (a < g->host) {
			hi = mid;
		} else if (a - g->host >= g->size) {
			lo = mid + 1;
		} else {
			if (n > g->size - (a - g->host))
				return false;
			*gpa = g->gpa + (a - g->host);
			return true;
		}
	}
	return false;
}

/* ---- queues ------------------------------------------------------------------------- */

/* The feature bits the trace format names: all the datapath looks at. */
static uint64_t datapath_features(uint64_t f)
{
	uint64_t mask = 0;

	for (uint32_t i = 0; i < LAB_TN_NFEATURES; i++)
		mask |= lab_tn_features[i].mask;
	return f & mask;
}

static bool queue_alloc(struct srec_q *q)
{
	uint32_t n = q->size;

	q->slot_head = calloc(n, sizeof(*q->slot_head));
	q->slot_set = calloc(n, sizeof(*q->slot_set));
	q->snap = calloc(n, sizeof(*q->snap));
	q->snap_stamp = calloc(n, sizeof(*q->snap_stamp));
	q->walk_stamp = calloc(n, sizeof(*q->walk_stamp));
	q->slot_val = calloc(n, sizeof(*q->slot_val));
	q->slot_stamp = calloc(n, sizeof(*q->slot_stamp));
	q->touched = calloc(n, sizeof(*q->touched));
	return q->slot_head && q->slot_set && q->snap && q->snap_stamp && q->walk_stamp &&
	       q->slot_val && q->slot_stamp && q->touched;
}

/* A ring enabled again: the same queue, where we left it. */
static bool queue_again(struct lab_srec *r, uint32_t ring, struct srec_q *q,
			const struct vl_vq *vq)
{
	struct vl_vq_config c;

	vl_vq_get_config(vq, &c);
	if (c.desc_gpa != q->desc || c.driver_gpa != q->drv || c.device_gpa != q->dev ||
	    vl_vq_config_size(&c) != q->size || vl_vq_last_avail(vq) != q->last_avail ||
	    vl_vq_last_used(vq) != q->last_used) {
		lab_srec_stop(r, "ring %u was set up again (new addresses or positions): a trace "
			      "cannot restart a queue", ring);
		return false;
	}
	return true;
}

bool lab_srec_queue(struct lab_srec *r, uint32_t ring, const char *name, enum lab_trace_dir dir,
		    struct vl_vq *vq)
{
	if (r->stopped)
		return false;
	if (ring >= LAB_SREC_MAX_RINGS) {
		lab_srec_stop(r, "ring %u is beyond what the recorder tracks", ring);
		return false;
	}
	if (r->ring_q[ring] >= 0)
		return queue_again(r, ring, &r->q[r->ring_q[ring]], vq);
	if (r->nq == LAB_TRACE_MAX_QUEUES) {
		lab_srec_stop(r, "more than %u rings: a trace holds at most %u queues", r->nq,
			      LAB_TRACE_MAX_QUEUES);
		return false;
	}
	struct vl_vq_config c;
	uint64_t f = vl_vq_features(vq);

	vl_vq_get_config(vq, &c);
	if (r->nq == 0) {
		r->features_raw = f;
		r->t.features = datapath_features(f);
	} else if (f != r->features_raw) {
		lab_srec_stop(r, "ring %u runs with features 0x%llx, the others with 0x%llx", ring,
			      (unsigned long long)f, (unsigned long long)r->features_raw);
		return false;
	}
	uint16_t la = vl_vq_last_avail(vq), lu = vl_vq_last_used(vq);

	/* The format starts both sides of a queue at one index: every chain the device took
	 * was returned (no zero-copy lease, no chain in flight). */
	if (la != lu) {
		lab_srec_stop(r, "ring %u has chains in flight (avail %u, used %u): a trace "
			      "starts a queue with none", ring, la, lu);
		return false;
	}
	struct srec_q *q = &r->q[r->nq];
	struct lab_trace_queue *tq = &r->t.queues[r->nq];

	memset(q, 0, sizeof(*q));
	q->tq = r->nq;
	q->dir = dir;
	q->packed = c.layout == VL_LAYOUT_PACKED;
	q->size = vl_vq_config_size(&c);
	q->desc = c.desc_gpa;
	q->drv = c.driver_gpa;
	q->dev = c.device_gpa;
	q->last_avail = la;
	q->last_used = lu;
	q->kicks_trace = q->kicks_want = true;
	q->used_known = true;
	if (q->packed) {
		q->pub = la & 0x7fffu;
		q->pub_wrap = (la & VL_PACKED_WRAP_BIT) != 0;
	} else {
		q->pub = la;
	}
	if (!queue_alloc(q)) {
		queue_free(q);
		lab_srec_stop(r, "out of memory");
		return false;
	}
	snprintf(tq->name, sizeof(tq->name), "%s", name);
	tq->dir = dir;
	tq->size = q->size;
	tq->at_given = false;
	tq->desc = q->desc;
	tq->driver = q->drv;
	tq->device = q->dev;
	tq->start = q->packed ? (uint16_t)(la & 0x7fffu) : la;
	tq->wrap = q->packed ? (la & VL_PACKED_WRAP_BIT) != 0 : true;
	tq->batch = c.batch_threshold;
	r->ring_q[ring] = (int)r->nq;
	r->nq++;
	r->t.nqueues = r->nq;
	return true;
}

void lab_srec_kicks(struct lab_srec *r, uint32_t ring, bool want)
{
	if (!r->stopped && ring < LAB_SREC_MAX_RINGS && r->ring_q[ring] >= 0)
		r->q[r->ring_q[ring]].kicks_want = want;
}

/* ---- the observer ------------------------------------------------------------------- */

static void fault(struct lab_srec *r, const char *what)
{
	if (!r->fault)
		snprintf(r->fault_msg, sizeof(r->fault_msg), "%s", what);
	r->fault = true;
}

/* A descriptor ring entry: keep all 16 bytes at the first load of any of its fields. A
 * packed entry's flags word is copied first, then (after an acquire) the rest: what the
 * driver wrote before making it available is then what we keep. */
static void load_desc(struct lab_srec *r, struct srec_q *q, const uint8_t *p, uint64_t off)
{
	uint32_t i = (uint32_t)(off / 16), field = (uint32_t)(off % 16);
	const uint8_t *d = p - field;

	if (q->snap_stamp[i] != r->stamp) {
		if (q->packed) {
			uint16_t fl = __atomic_load_n((const uint16_t *)(const void *)(d + 14),
						      __ATOMIC_ACQUIRE);

			memcpy(q->snap[i], d, 14);
			memcpy(q->snap[i] + 14, &fl, 2);
		} else {
			memcpy(q->snap[i], d, 16);
		}
		q->snap_stamp[i] = r->stamp;
		q->touched[q->ntouched++] = i; /* once per entry per burst: <= size */
	}
	/* Packed: the scan reads flags; only a chain the core walks has its address and
	 * length read. */
	if (field < 12)
		q->walk_stamp[i] = r->stamp;
}

static void on_load(void *ctx, const void *addr, size_t len)
{
	struct lab_srec *r = ctx;
	struct srec_q *q = r->cur;
	uint64_t gpa;

	if (!q || r->fault)
		return;
	if (len > UINT32_MAX || !host_to_gpa(r, addr, len, &gpa)) {
		fault(r, "the core read guest memory outside the memory table it was given");
		return;
	}
	if (r->race)
		r->race(r->race_ctx, gpa, len);
	if (gpa >= q->desc && gpa - q->desc < 16ull * q->size) {
		load_desc(r, q, addr, gpa - q->desc);
		return;
	}
	if (!q->packed && gpa >= q->drv && gpa - q->drv < 6 + 2ull * q->size) {
		uint64_t off = gpa - q->drv;
		uint16_t v;

		if (len != 2 || off % 2)
			return;
		memcpy(&v, addr, 2);
		if (off == 2) {
			r->idx_read = v;
			r->idx_seen = true;
		} else if (off >= 4 && off < 4 + 2ull * q->size) {
			uint32_t slot = (uint32_t)((off - 4) / 2);
			uint32_t rel = (slot + q->size - r->b_avail % q->size) % q->size;

			if (q->slot_stamp[slot] != r->stamp) {
				q->slot_val[slot] = v;
				q->slot_stamp[slot] = r->stamp;
			}
			if (rel + 1 > r->slots_read)
				r->slots_read = rel + 1;
		}
		/* avail->flags and used_event decide calls only: not needed to replay. */
		return;
	}
	if (q->packed && gpa >= q->drv && gpa - q->drv < 4)
		return; /* the driver event area: calls only */
	if (!srec_keep(r, gpa, addr, (uint32_t)len))
		fault(r, "out of memory");
}

/* ---- bursts ------------------------------------------------------------------------- */

void lab_srec_begin(struct lab_srec *r, uint32_t ring, struct vl_vq *vq)
{
	r->cur = NULL;
	if (r->stopped || ring >= LAB_SREC_MAX_RINGS || r->ring_q[ring] < 0)
		return;
	struct srec_q *q = &r->q[r->ring_q[ring]];

	if (++r->stamp == 0) {
		/* Once every 2^32 bursts: forget every old stamp. */
		for (uint32_t i = 0; i < r->nq; i++) {
			memset(r->q[i].snap_stamp, 0, r->q[i].size * sizeof(uint32_t));
			memset(r->q[i].walk_stamp, 0, r->q[i].size * sizeof(uint32_t));
			memset(r->q[i].slot_stamp, 0, r->q[i].size * sizeof(uint32_t));
		}
		r->stamp = 1;
	}
	r->b_avail = vl_vq_last_avail(vq);
	r->b_used = vl_vq_last_used(vq);
	if (r->b_avail != q->last_avail || r->b_used != q->last_used) {
		lab_srec_stop(r, "ring %u moved outside a recorded burst", ring);
		return;
	}
	r->b_broken = vl_vq_broken(vq);
	r->b_stats = *vl_vq_stats(vq);
	r->cur = q;
	r->cur_vq = vq;
	r->slots_read = 0;
	r->idx_seen = false;
	r->ncaps = 0;
	r->nsorted = 0;
	r->arena_len = 0;
	r->fault = false;
	q->ntouched = 0;
	lab_df_set_observer(on_load, r);
}

static void burst_end(struct lab_srec *r, enum srec_call call, uint16_t max,
		      struct vl_pkt *const *pkts, uint16_t count, uint16_t done,
		      const uint8_t *status)
{
	lab_df_set_observer(NULL, NULL);
	if (!r->cur)
		return;
	srec_burst_done(r, call, max, pkts, count, done, status);
	r->cur = NULL;
	if (!r->stopped && r->max_packets && r->packets >= r->max_packets)
		lab_srec_stop(r, "recorded %llu packets (the bound)",
			      (unsigned long long)r->packets);
}

void lab_srec_dequeued(struct lab_srec *r, uint16_t max, struct vl_pkt *const *pkts,
		       uint16_t n)
{
	burst_end(r, SREC_DEQUEUE, max, pkts, n, n, NULL);
}

void lab_srec_discarded(struct lab_srec *r, uint16_t max, uint16_t n, bool touch)
{
	burst_end(r, touch ? SREC_DISCARD_TOUCH : SREC_DISCARD, max, NULL, n, n, NULL);
}

void lab_srec_enqueued(struct lab_srec *r, struct vl_pkt *const *pkts, uint16_t count,
		       uint16_t done, const uint8_t *status)
{
	burst_end(r, SREC_ENQUEUE, count, pkts, count, done, status);
}

/* ---- the end ------------------------------------------------------------------------ */

static void expect_stat(struct lab_srec *r, const struct srec_q *q, const char *name,
			uint64_t v)
{
	struct lab_trace_op op = {.kind = LAB_T_EXPECT_STAT, .queue = q->tq, .count = v};

	snprintf(op.name, sizeof(op.name), "%s", name);
	lab_trace_append(&r->t, &op); /* a closing expectation lost to memory is no error */
}

const struct lab_trace *lab_srec_finish(struct lab_srec *r)
{
	if (r->finished)
		return &r->t;
	lab_srec_stop(r, "the session ended");
	r->finished = true;
	/* The counters a replay reproduces: what moved and what was dropped. (Bursts that
	 * changed nothing are not recorded, so burst and no-room counts differ; calls depend on
	 * the guest's event fields, which are not recorded.) */
	for (uint32_t i = 0; i < r->nq; i++) {
		const struct srec_q *q = &r->q[i];

		expect_stat(r, q, "packets", q->sum_packets);
		expect_stat(r, q, "bytes", q->sum_bytes);
		expect_stat(r, q, "chains", q->sum_chains);
		expect_stat(r, q, "used_entries", q->sum_used);
		for (uint32_t d = 1; d < VL_DROP__COUNT; d++) {
			uint64_t v = q->sum_drops[d];
			char name[40];

			if (v == 0)
				continue;
			snprintf(name, sizeof(name), "drops.%s", vl_drop_name((enum vl_drop)d));
			expect_stat(r, q, name, v);
		}
	}
	/* Packets are freed before the next burst on their queue, so one burst's worth of
	 * buffers is what a replay needs at most. */
	uint64_t segs = (r->max_pkt_len + 2047) / 2048 + 1;
	uint64_t bufs = (uint64_t)r->max_burst * segs + 64;

	r->t.pool_bufs = bufs > 1024 ? (uint32_t)bufs : 1024;
	r->t.pool_size = 2048;
	return &r->t;
}

void lab_srec_set_race(struct lab_srec *r, lab_srec_race_fn fn, void *ctx)
{
	r->race = fn;
	r->race_ctx = ctx;
}

void lab_srec_counts(const struct lab_srec *r, struct lab_srec_counts *c)
{
	c->packets = r->packets;
	c->bursts = r->bursts;
	c->statements = r->t.nops;
	c->queues = r->nq;
	c->regions = r->t.nregions;
}

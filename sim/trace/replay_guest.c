/* SPDX-License-Identifier: MIT */
/* Replay, the guest side: every guest statement of a trace as the driver writes it, and the
 * driver's reading of used elements (docs/trace-format.md, "Guest actions"). The rings are
 * written through the guest view by ring_write.h, the writer every lab driver shares (split
 * avail->idx and packed flags words with release stores, a packed chain's head last); used
 * index and flags are read with acquire. */
#include <stdlib.h>
#include <string.h>

#include "double_fetch.h"
#include "replay_internal.h"
#include "ring_write.h"
#include "vl_lab_control.h"

static uint16_t load16_acquire(const uint8_t *p)
{
	return __atomic_load_n((const uint16_t *)(const void *)p, __ATOMIC_ACQUIRE);
}

/* The guest views of a queue's areas, as ring_write.h takes them. */
static struct vl_packed_desc *pring(struct rp_queue *q)
{
	return (struct vl_packed_desc *)(void *)q->desc;
}

static struct vl_split_avail *avail_ring(struct rp_queue *q)
{
	return (struct vl_split_avail *)(void *)q->drv;
}

/* ---- setup -------------------------------------------------------------------------- */

bool rp_queue_driver_init(struct rp *r, struct rp_queue *q)
{
	const struct lab_trace_queue *tq = q->tq;
	uint32_t n = q->size;
	uint64_t dlen = 16ull * n;
	uint64_t alen = q->packed ? 4 : 6 + 2ull * n, ulen = q->packed ? 4 : 6 + 8ull * n;

	if (!(q->desc = rp_guest(r, tq->desc, dlen, "the descriptor ring")) ||
	    !(q->drv = rp_guest(r, tq->driver, alen, q->packed ? "the driver event area"
							      : "the avail ring")) ||
	    !(q->dev = rp_guest(r, tq->device, ulen, q->packed ? "the device event area"
							       : "the used ring")))
		return false;
	q->desc_busy = calloc(n, sizeof(bool));
	q->chain_next = calloc(n, sizeof(uint16_t));
	q->chain_len = calloc(n, sizeof(uint16_t));
	q->head_out = calloc(n, sizeof(uint32_t));
	q->fresh = calloc(n, sizeof(bool));
	q->pos_id = calloc(n, sizeof(uint16_t));
	q->pos_next = calloc(n, sizeof(bool));
	q->id_busy = calloc(n, sizeof(bool));
	q->id_ndescs = calloc(n, sizeof(uint16_t));
	q->order = calloc(n, sizeof(uint16_t));
	if (!q->desc_busy || !q->chain_next || !q->chain_len || !q->head_out || !q->fresh || !q->pos_id ||
	    !q->pos_next || !q->id_busy || !q->id_ndescs || !q->order)
		return rp_error(r, "error:memory", "out of memory for queue %s", tq->name);
	q->free_descs = n;
	if (q->packed) {
		q->next_avail = q->next_used = q->scan_pos = tq->start;
		q->avail_wrap = q->used_wrap = q->scan_wrap = tq->wrap;
		/* A ring resumed at (start, wrap) looks as a driver left it: positions before
		 * start were used in this lap (AVAIL = USED = wrap), the rest in the previous one
		 * (AVAIL = USED = !wrap), so none reads as available or as newly used. */
		for (uint32_t i = 0; i < n; i++) {
			bool w = i < tq->start ? tq->wrap : !tq->wrap;

			lab_rw_packed_flags(pring(q), (uint16_t)i,
					    (uint16_t)(w ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0));
		}
	} else {
		/* Both indices start at `start`: the avail index is the driver's, the used index
		 * is where a device that consumed everything before it left it. */
		q->avail_idx = q->last_used = tq->start;
		lab_rw_split_publish(avail_ring(q), tq->start);
		lab_rw_split_used_idx((struct vl_split_used *)(void *)q->dev, tq->start);
	}
	return true;
}

void rp_queue_driver_fini(struct rp_queue *q)
{
	free(q->desc_busy);
	free(q->chain_next);
	free(q->chain_len);
	free(q->head_out);
	free(q->fresh);
	free(q->pos_id);
	free(q->pos_next);
	free(q->id_busy);
	free(q->id_ndescs);
	free(q->order);
}

/* ---- packed bookkeeping ------------------------------------------------------------- */

static void packed_advance(struct rp_queue *q, uint16_t *pos, bool *wrap, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (++*pos == q->size) {
			*pos = 0;
			*wrap = !*wrap;
		}
}

static void packed_in_flight(struct rp_queue *q, uint16_t id, uint16_t ndescs)
{
	q->id_busy[id] = true;
	q->id_ndescs[id] = ndescs;
	q->order[(q->order_head + q->order_count++) % q->size] = id;
	q->free_descs -= ndescs < q->free_descs ? ndescs : q->free_descs;
}

/* Group the descriptors `pdesc` wrote since the last kick into chains (a chain ends at a
 * descriptor without NEXT; its id is that descriptor's), so the driver knows how many
 * descriptors each buffer occupies when its used element comes back. */
static void packed_group(struct rp_queue *q)
{
	for (;;) {
		uint16_t pos = q->scan_pos, n = 0;
		bool wrap = q->scan_wrap, done = false;

		while (n < q->size && q->fresh[pos]) {
			n++;
			if (!q->pos_next[pos]) {
				done = true;
				break;
			}
			packed_advance(q, &pos, &wrap, 1);
		}
		if (!done)
			return;
		uint16_t id = q->pos_id[pos];

		for (uint16_t i = 0, p = q->scan_pos; i < n; i++, p = (uint16_t)((p + 1) % q->size))
			q->fresh[p] = false;
		packed_advance(q, &q->scan_pos, &q->scan_wrap, n);
		q->next_avail = q->scan_pos;
		q->avail_wrap = q->scan_wrap;
		if (id < q->size && q->order_count < q->size)
			packed_in_flight(q, id, n);
	}
}

/* ---- statements --------------------------------------------------------------------- */

static struct rp_queue *queue_of(struct rp *r, const struct lab_trace_op *op)
{
	return &r->q[op->queue];
}

static bool op_desc(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_queue *q = queue_of(r, op);

	if (op->index >= q->size)
		return rp_error(r, "error:index", "descriptor %llu is outside queue %s of size %u",
				(unsigned long long)op->index, q->tq->name, q->size);
	lab_rw_split_desc(q->desc, (uint32_t)op->index, op->addr, (uint32_t)op->len, op->flags,
			  op->next);
	return true;
}

static bool op_pdesc(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_queue *q = queue_of(r, op);

	if (op->index >= q->size)
		return rp_error(r, "error:index", "position %llu is outside queue %s of size %u",
				(unsigned long long)op->index, q->tq->name, q->size);
	lab_rw_packed_desc(pring(q), (uint16_t)op->index, op->addr, (uint32_t)op->len, op->id,
			   op->flags);
	q->fresh[op->index] = true;
	q->pos_id[op->index] = op->id;
	q->pos_next[op->index] = (op->flags & LAB_TRACE_DESC_NEXT) != 0;
	return true;
}

static bool op_idesc(struct rp *r, const struct lab_trace_op *op)
{
	bool packed = (r->t->features >> VL_F_RING_PACKED) & 1u;
	uint8_t *at;

	/* The parser bounds these; a trace built by a tool may not have been parsed. */
	if (op->index > UINT32_MAX || 16 * op->index > UINT64_MAX - op->addr2)
		return rp_error(r, "error:index", "table entry %llu at 0x%llx",
				(unsigned long long)op->index, (unsigned long long)op->addr2);
	if (!(at = rp_guest(r, op->addr2 + 16 * op->index, 16, "the indirect table entry")))
		return false;
	if (packed)
		lab_rw_packed_entry(at, 0, op->addr, (uint32_t)op->len, op->id, op->flags);
	else
		lab_rw_split_desc(at, 0, op->addr, (uint32_t)op->len, op->flags, op->next);
	return true;
}

static bool op_avail(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_queue *q = queue_of(r, op);
	uint16_t head = (uint16_t)op->index;

	/* Only a split ring has an avail ring (the packed driver area is 4 bytes). */
	if (q->packed)
		return rp_error(r, "error:layout", "avail on packed queue %s", q->tq->name);
	lab_rw_split_avail(avail_ring(q), q->size, q->avail_idx++, head);
	if (head < q->size && q->head_out[head] < UINT32_MAX)
		q->head_out[head]++;
	return true;
}

static bool op_kick(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_queue *q = queue_of(r, op);

	if (q->packed) {
		packed_group(q);
		return true;
	}
	if (op->given & LAB_TA_IDX)
		q->avail_idx = (uint16_t)op->value;
	lab_rw_split_publish(avail_ring(q), q->avail_idx);
	return true;
}

/* post, split: the lowest free descriptors, linked in order; head = the first. */
static bool post_split(struct rp *r, struct rp_queue *q, const struct lab_pdesc *elems,
		       uint32_t ndescs)
{
	uint16_t idx[LAB_TRACE_MAX_ITEMS];
	uint32_t got = 0;

	for (uint32_t i = 0; i < q->size && got < ndescs; i++)
		if (!q->desc_busy[i])
			idx[got++] = (uint16_t)i;
	/* (got == 0 cannot pass ndescs >= 1; said so, gcc knows idx[0] is written) */
	if (got == 0 || got < ndescs)
		return rp_error(r, "error:post", "post: queue %s has %u free descriptors, the chain "
				"needs %u", q->tq->name, got, ndescs);
	lab_rw_split_chain(q->desc, idx, elems, got);
	for (uint32_t i = 0; i < ndescs; i++) {
		q->desc_busy[idx[i]] = true;
		q->chain_next[idx[i]] = i + 1 < ndescs ? idx[i + 1] : 0;
	}
	q->chain_len[idx[0]] = (uint16_t)ndescs;
	lab_rw_split_avail(avail_ring(q), q->size, q->avail_idx++, idx[0]);
	if (q->head_out[idx[0]] < UINT32_MAX)
		q->head_out[idx[0]]++;
	rp_narrate(r, "  posted head %u (%u descriptors)\n", idx[0], ndescs);
	return true;
}

/* post, packed: the next positions, id = the lowest free id (in the last descriptor, junk
 * in the others), the head's flags last. */
static bool post_packed(struct rp *r, struct rp_queue *q, const struct lab_pdesc *elems,
			uint32_t ndescs)
{
	uint32_t id = 0;

	packed_group(q);
	while (id < q->size && q->id_busy[id])
		id++;
	if (id == q->size || ndescs > q->free_descs)
		return rp_error(r, "error:post", "post: queue %s has %u free descriptors and %s "
				"free id; the chain needs %u", q->tq->name, q->free_descs,
				id == q->size ? "no" : "a", ndescs);
	uint16_t pos = q->next_avail;
	bool wrap = q->avail_wrap;

	lab_rw_packed_chain(pring(q), q->size, &pos, &wrap, (uint16_t)id, elems, ndescs);
	packed_in_flight(q, (uint16_t)id, (uint16_t)ndescs);
	rp_narrate(r, "  posted id %u at position %u (%u descriptors)\n", id, q->next_avail, ndescs);
	q->next_avail = q->scan_pos = pos;
	q->avail_wrap = q->scan_wrap = wrap;
	return true;
}

/* The buffers of a post, as ring_write.h takes them (n: the op's buffer count). */
static struct lab_pdesc *post_elems(const struct lab_trace_op *op)
{
	struct lab_pdesc *e = malloc(op->nitems * sizeof(*e));

	for (uint32_t i = 0; e && i < op->nitems; i++)
		e[i] = (struct lab_pdesc){
			.addr = op->bufs[i].gpa, .len = op->bufs[i].len,
			.flags = (uint16_t)(op->bufs[i].write ? VL_DESC_F_WRITE : 0),
		};
	return e;
}

static bool op_post(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_queue *q = queue_of(r, op);
	struct lab_pdesc *elems, ind;
	bool ok;

	if (op->nitems == 0)
		return rp_error(r, "error:post", "post without buffers");
	if (!(op->given & LAB_TA_INDIRECT) && op->nitems > q->size)
		return rp_error(r, "error:post", "post: %u buffers in a queue of size %u",
				op->nitems, q->size);
	if (!(elems = post_elems(op)))
		return rp_error(r, "error:memory", "out of memory");
	if (op->given & LAB_TA_INDIRECT) {
		/* The buffers go into a table at addr2; one INDIRECT descriptor names it. */
		uint8_t *tab = rp_guest(r, op->addr2, 16ull * op->nitems, "the indirect table");

		if (tab) {
			if (q->packed)
				lab_rw_packed_table(tab, elems, op->nitems);
			else
				lab_rw_split_table(tab, elems, op->nitems);
		}
		free(elems);
		if (!tab)
			return false;
		ind = (struct lab_pdesc){
			.addr = op->addr2, .len = 16u * op->nitems, .flags = VL_DESC_F_INDIRECT,
		};
		return q->packed ? post_packed(r, q, &ind, 1) : post_split(r, q, &ind, 1);
	}
	ok = q->packed ? post_packed(r, q, elems, op->nitems) : post_split(r, q, elems, op->nitems);
	free(elems);
	return ok;
}

/* The mutate observer: count reads covering the target byte; at the N-th, overwrite. */
static void on_guest_load(void *ctx, const void *addr, size_t len)
{
	struct rp *r = ctx;
	const uint8_t *a = addr;

	for (uint32_t i = 0; i < r->nmuts; i++) {
		struct rp_mutation *m = &r->muts[i];

		if (m->fired || m->target < a || m->target >= a + len || --m->reads_left)
			continue;
		uint8_t *g = lab_tmem_ptr(r->mem, m->gpa, m->op->pat.nbytes);

		if (g)
			memcpy(g, m->op->pat.bytes, m->op->pat.nbytes);
		m->fired = true;
		rp_narrate(r, "  mutate of line %u fired: 0x%llx overwritten after a read\n",
			   m->op->line, (unsigned long long)m->gpa);
	}
}

static bool op_mutate(struct rp *r, const struct lab_trace_op *op)
{
	if (!r->o->hooks)
		return rp_error(r, "error:no-hooks", "mutate needs a core built with lab hooks "
				"(the vhostlab command has one)");
	if (!rp_guest(r, op->addr, op->pat.nbytes, "the mutated bytes"))
		return false;
	if (r->nmuts == r->cap_muts) {
		uint32_t cap = r->cap_muts ? 2 * r->cap_muts : 8;
		struct rp_mutation *m = realloc(r->muts, cap * sizeof(*m));

		if (!m)
			return rp_error(r, "error:memory", "out of memory");
		r->muts = m;
		r->cap_muts = cap;
	}
	r->muts[r->nmuts++] = (struct rp_mutation){
		.gpa = op->addr, .op = op, .target = lab_tmem_host_ptr(r->mem, op->addr),
		.reads_left = (op->given & LAB_TA_ON_READ) ? op->value : 1,
	};
	lab_df_set_observer(on_guest_load, r);
	return true;
}

static bool op_double_fetch(struct rp *r, const struct lab_trace_op *op)
{
	static const enum lab_df_mode modes[] = {LAB_DF_OFF, LAB_DF_DETECT, LAB_DF_ADVERSARIAL};

	if (!r->o->hooks)
		return rp_error(r, "error:no-hooks", "double-fetch needs a core built with lab "
				"hooks (the vhostlab command has one)");
	if (op->given & LAB_TA_SEED)
		lab_df_set_seed(op->seed);
	lab_df_set_mode(modes[op->value]);
	r->df_on = op->value != LAB_TRACE_DF_OFF;
	r->df_violations = lab_df_violations();
	return true;
}

/* fail-at: the pool asks before every allocation call; refuse the listed ones. */
static bool fail_at_hook(void *ctx)
{
	struct rp *r = ctx;
	const struct lab_trace_op *f = r->fail_at;
	bool fail = r->fail_next < f->nitems && f->nums[r->fail_next] == r->fail_calls;

	r->fail_next += fail;
	r->fail_calls++;
	return fail;
}

/* `fault off` ends both kinds of injection. */
static bool op_fault(struct rp *r, const struct lab_trace_op *op)
{
	vl_lab_control(VL_LAB_POOL_FAULT_HOOK, &(struct vl_lab_arg){.pool = r->pool});
	if (op->given & LAB_TA_OFF) {
		vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
			       &(struct vl_lab_arg){.pool = r->pool, .count = VL_LAB_NEVER});
		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER,
			       &(struct vl_lab_arg){.count = VL_LAB_NEVER});
	} else if (op->given & LAB_TA_FAIL_AT) {
		r->fail_at = op;
		r->fail_calls = 0;
		r->fail_next = 0;
		vl_lab_control(VL_LAB_POOL_FAULT_HOOK,
			&(struct vl_lab_arg){.pool = r->pool, .fail = fail_at_hook, .ctx = r});
	} else if (op->value == LAB_TRACE_FAULT_POOL) {
		vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
			       &(struct vl_lab_arg){.pool = r->pool, .count = op->count});
	} else {
		vl_lab_control(VL_LAB_ALLOC_FAIL_AFTER, &(struct vl_lab_arg){.count = op->count});
	}
	return true;
}

bool rp_guest_op(struct rp *r, const struct lab_trace_op *op)
{
	uint8_t *g;

	switch (op->kind) {
	case LAB_T_WRITE:
		if (!(g = rp_guest(r, op->addr, op->pat.nbytes, "the written bytes")))
			return false;
		memcpy(g, op->pat.bytes, op->pat.nbytes);
		return true;
	case LAB_T_FILL:
		if (!(g = rp_guest(r, op->addr, op->len, "the filled bytes")))
			return false;
		lab_trace_pat_fill(&op->pat, 0, g, op->len);
		return true;
	case LAB_T_DESC:
		return op_desc(r, op);
	case LAB_T_PDESC:
		return op_pdesc(r, op);
	case LAB_T_IDESC:
		return op_idesc(r, op);
	case LAB_T_AVAIL:
		return op_avail(r, op);
	case LAB_T_KICK:
		return op_kick(r, op);
	case LAB_T_POST:
		return op_post(r, op);
	case LAB_T_MUTATE:
		return op_mutate(r, op);
	case LAB_T_DOUBLE_FETCH:
		return op_double_fetch(r, op);
	case LAB_T_FAULT:
		return op_fault(r, op);
	default:
		return rp_error(r, "error:internal", "not a guest statement");
	}
}

/* ---- reading used elements ---------------------------------------------------------- */

static int pop_split(struct rp *r, struct rp_queue *q, uint32_t *id, uint32_t *len)
{
	uint16_t used_idx = load16_acquire(q->dev + 2);
	const uint8_t *e;

	if (used_idx == q->last_used)
		return 0;
	e = q->dev + 4 + 8 * (q->last_used % q->size);
	memcpy(id, e, 4);
	memcpy(len, e + 4, 4);
	q->last_used++;
	/* Remember whether it was outstanding, then count it back (rp_id_was_outstanding). */
	q->last_pop_outstanding = *id < q->size && q->head_out[*id] > 0;
	if (q->last_pop_outstanding)
		q->head_out[*id]--;
	if (*id < q->size && q->chain_len[*id]) {
		/* A chain `post` made: its descriptors are free again. */
		uint16_t d = (uint16_t)*id;

		for (uint16_t i = 0, n = q->chain_len[*id]; i < n; i++) {
			q->desc_busy[d] = false;
			d = q->chain_next[d];
		}
		q->chain_len[*id] = 0;
	} else if (*id >= q->size) {
		rp_diverge(r, "used:out-of-range", "a used id below the queue size",
			   "used id %u in queue %s of size %u", *id, q->tq->name, q->size);
		return -1;
	}
	return 1;
}

/* The next buffer of a folded in-order batch: the oldest in posting order, length 0 but
 * for the batch's last, the one the device named, which gets the descriptor's length. */
static int batch_next(struct rp_queue *q, uint32_t *id, uint32_t *len)
{
	uint16_t x = q->order[q->order_head];

	q->order_head = (q->order_head + 1) % q->size;
	q->order_count--;
	q->id_busy[x] = false;
	q->batch_left--;
	*id = x;
	*len = q->batch_left ? 0 : q->batch_len;
	return 1;
}

static int pop_packed(struct rp *r, struct rp_queue *q, uint32_t *id, uint32_t *len)
{
	if (q->batch_left)
		return batch_next(q, id, len);
	uint8_t *at = q->desc + 16u * q->next_used;
	uint16_t flags = load16_acquire(at + 14), id16;
	bool a = (flags & LAB_TRACE_DESC_AVAIL) != 0, u = (flags & LAB_TRACE_DESC_USED) != 0;
	uint32_t skip = 0;

	if (a != u || a != q->used_wrap)
		return 0;
	memcpy(&id16, at + 12, 2);
	memcpy(len, at + 8, 4);
	*id = id16;
	if (id16 >= q->size || !q->id_busy[id16]) {
		rp_diverge(r, "used:not-in-flight", "a used id the driver has in flight",
			   "used id %u at position %u of queue %s is not in flight", id16,
			   q->next_used, q->tq->name);
		return -1;
	}
	if (q->in_order) {
		/* Every buffer posted before it is used too (spec 2.8.11: in-order batches): each
		 * is read as an element of its own, in posting order, so what a trace expects
		 * does not depend on how the device folded its batches. The descriptors of all of
		 * them are passed now. */
		uint32_t n = 0;
		uint16_t x;

		do {
			x = q->order[(q->order_head + n) % q->size];
			skip += q->id_ndescs[x];
			n++;
		} while (x != id16 && n < q->order_count);
		q->batch_left = n;
		q->batch_len = *len;
		q->free_descs += skip;
		packed_advance(q, &q->next_used, &q->used_wrap, skip);
		return batch_next(q, id, len);
	} else {
		/* Remove id from the posting order (it matters only under in-order). */
		for (uint32_t i = 0; i < q->order_count; i++) {
			uint32_t at_i = (q->order_head + i) % q->size;

			if (q->order[at_i] != id16)
				continue;
			for (uint32_t j = i; j + 1 < q->order_count; j++)
				q->order[(q->order_head + j) % q->size] =
					q->order[(q->order_head + j + 1) % q->size];
			q->order_count--;
			break;
		}
		q->id_busy[id16] = false;
		skip = q->id_ndescs[id16];
	}
	q->free_descs += skip;
	packed_advance(q, &q->next_used, &q->used_wrap, skip);
	return 1;
}

int rp_pop_used(struct rp *r, struct rp_queue *q, uint32_t *id, uint32_t *len)
{
	return q->packed ? pop_packed(r, q, id, len) : pop_split(r, q, id, len);
}

bool rp_id_was_outstanding(const struct rp_queue *q, uint32_t id)
{
	/* pop_packed refuses ids not in flight, so a packed pop is always outstanding. */
	return q->packed ? id < q->size : q->last_pop_outstanding;
}

/* ---- undoing reads of used elements (either) ----------------------------------------- */

struct rp_used_snap {
	uint16_t last_used, next_used;
	bool used_wrap;
	uint32_t order_head, order_count, free_descs, batch_left, batch_len;
	bool *desc_busy, *id_busy;       /* [size] each */
	uint16_t *chain_len, *order;
	uint32_t *head_out;
};

void rp_used_snap_free(struct rp_used_snap *s)
{
	if (!s)
		return;
	free(s->desc_busy);
	free(s->id_busy);
	free(s->chain_len);
	free(s->order);
	free(s->head_out);
	free(s);
}

struct rp_used_snap *rp_used_save(const struct rp_queue *q)
{
	struct rp_used_snap *s = calloc(1, sizeof(*s));
	size_t n = q->size;

	if (!s)
		return NULL;
	s->desc_busy = malloc(n * sizeof(bool));
	s->id_busy = malloc(n * sizeof(bool));
	s->chain_len = malloc(n * sizeof(uint16_t));
	s->order = malloc(n * sizeof(uint16_t));
	s->head_out = malloc(n * sizeof(uint32_t));
	if (!s->desc_busy || !s->id_busy || !s->chain_len || !s->order || !s->head_out) {
		rp_used_snap_free(s);
		return NULL;
	}
	s->last_used = q->last_used;
	s->next_used = q->next_used;
	s->used_wrap = q->used_wrap;
	s->order_head = q->order_head;
	s->order_count = q->order_count;
	s->free_descs = q->free_descs;
	s->batch_left = q->batch_left;
	s->batch_len = q->batch_len;
	memcpy(s->desc_busy, q->desc_busy, n * sizeof(bool));
	memcpy(s->id_busy, q->id_busy, n * sizeof(bool));
	memcpy(s->chain_len, q->chain_len, n * sizeof(uint16_t));
	memcpy(s->order, q->order, n * sizeof(uint16_t));
	memcpy(s->head_out, q->head_out, n * sizeof(uint32_t));
	return s;
}

void rp_used_restore(struct rp_queue *q, const struct rp_used_snap *s)
{
	size_t n = q->size;

	q->last_used = s->last_used;
	q->next_used = s->next_used;
	q->used_wrap = s->used_wrap;
	q->order_head = s->order_head;
	q->order_count = s->order_count;
	q->free_descs = s->free_descs;
	q->batch_left = s->batch_left;
	q->batch_len = s->batch_len;
	memcpy(q->desc_busy, s->desc_busy, n * sizeof(bool));
	memcpy(q->id_busy, s->id_busy, n * sizeof(bool));
	memcpy(q->chain_len, s->chain_len, n * sizeof(uint16_t));
	memcpy(q->order, s->order, n * sizeof(uint16_t));
	memcpy(q->head_out, s->head_out, n * sizeof(uint32_t));
}

/* SPDX-License-Identifier: MIT */
/* The in-memory trace (trace.h): defaults, ownership of its arrays, the standard ring
 * placement of `at=`, and deep comparison. */
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "vhostlab/vl_virtio.h"

static void queue_defaults(struct lab_trace_queue *q)
{
	memset(q, 0, sizeof(*q));
	q->wrap = true;
	q->batch = 256;
	q->alloc = LAB_TRACE_ALLOC_AVAILABLE;
	q->line_wait = false;
}

void lab_trace_init(struct lab_trace *t)
{
	memset(t, 0, sizeof(*t));
	t->version = LAB_TRACE_VERSION;
	t->pool_bufs = 1024;
	t->pool_size = 2048;
	t->seed = 1;
	for (unsigned i = 0; i < LAB_TRACE_MAX_QUEUES; i++)
		queue_defaults(&t->queues[i]);
}

void lab_trace_op_free(struct lab_trace_op *op)
{
	free(op->pat.bytes);
	free(op->bufs);
	if (op->pkts)
		for (uint32_t i = 0; i < op->nitems; i++)
			free(op->pkts[i].data.bytes);
	free(op->pkts);
	free(op->nums);
	free(op->used);
}

void lab_trace_free(struct lab_trace *t)
{
	for (uint32_t i = 0; i < t->nops; i++)
		lab_trace_op_free(&t->ops[i]);
	free(t->ops);
	lab_trace_init(t);
}

struct lab_trace_op *lab_trace_append(struct lab_trace *t, const struct lab_trace_op *op)
{
	if (t->nops >= LAB_TRACE_MAX_OPS)
		return NULL;
	if (t->nops == t->cap_ops) {
		uint32_t cap = t->cap_ops ? 2 * t->cap_ops : 64;
		struct lab_trace_op *ops;

		if (cap > LAB_TRACE_MAX_OPS)
			cap = LAB_TRACE_MAX_OPS;
		ops = realloc(t->ops, (size_t)cap * sizeof(*ops));
		if (!ops)
			return NULL;
		t->ops = ops;
		t->cap_ops = cap;
	}
	t->ops[t->nops] = *op;
	return &t->ops[t->nops++];
}

bool lab_trace_packed(const struct lab_trace *t)
{
	return (t->features >> VL_F_RING_PACKED) & 1u;
}

/* [gpa, gpa+len) stays below 2^64. */
static bool area_fits(uint64_t gpa, uint64_t len)
{
	return len == 0 || gpa <= UINT64_MAX - (len - 1);
}

bool lab_trace_queue_at(struct lab_trace_queue *q, bool packed, uint64_t gpa)
{
	uint64_t size = q->size, driver, device;

	/* Each area starts where the one before it ends, so that end must be an address. */
	if (16 * size > UINT64_MAX - gpa)
		return false;
	driver = gpa + 16 * size;
	if (packed) {
		/* Two 4-byte event areas back to back. */
		if (!area_fits(driver, 8))
			return false;
		device = driver + 4;
	} else {
		/* avail: flags, idx, ring[size], used_event; used at the next 4-byte boundary:
		 * flags, idx, ring[size] of 8-byte elements, avail_event. */
		if (driver > UINT64_MAX - 3 || 6 + 2 * size > UINT64_MAX - 3 - driver)
			return false;
		device = (driver + 6 + 2 * size + 3) & ~3ull;
		if (!area_fits(device, 6 + 8 * size))
			return false;
	}
	q->desc = gpa;
	q->driver = driver;
	q->device = device;
	q->at_given = true;
	return true;
}

/* ---- comparison ------------------------------------------------------------------------ */

static bool pat_equal(const struct lab_trace_pat *a, const struct lab_trace_pat *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case LAB_PAT_HEX:
		return a->nbytes == b->nbytes &&
		       (a->nbytes == 0 || memcmp(a->bytes, b->bytes, a->nbytes) == 0);
	case LAB_PAT_BYTE:
	case LAB_PAT_SEQ:
	case LAB_PAT_STREAM:
	case LAB_PAT_FNV1A:
		return a->value == b->value;
	default:
		return true;
	}
}

/* Offload fields: only those given count. */
static bool ol_equal(const struct lab_trace_ol *a, const struct lab_trace_ol *b)
{
	uint8_t g = a->given;

	return a->given == b->given &&
	       (!(g & LAB_OL_FLAGS) || a->flags == b->flags) &&
	       (!(g & LAB_OL_GSO_TYPE) || a->gso_type == b->gso_type) &&
	       (!(g & LAB_OL_HDR_LEN) || a->hdr_len == b->hdr_len) &&
	       (!(g & LAB_OL_GSO_SIZE) || a->gso_size == b->gso_size) &&
	       (!(g & LAB_OL_CSUM_START) || a->csum_start == b->csum_start) &&
	       (!(g & LAB_OL_CSUM_OFFSET) || a->csum_offset == b->csum_offset);
}

static bool queue_equal(const struct lab_trace_queue *a, const struct lab_trace_queue *b,
			bool packed)
{
	return strncmp(a->name, b->name, sizeof(a->name)) == 0 && a->dir == b->dir &&
	       a->size == b->size && a->at_given == b->at_given && a->desc == b->desc &&
	       a->driver == b->driver && a->device == b->device && a->start == b->start &&
	       (!packed || a->wrap == b->wrap) && a->batch == b->batch &&
	       a->zero_copy == b->zero_copy && (!a->zero_copy || a->zc_min == b->zc_min) &&
	       a->zc_max == b->zc_max && a->alloc == b->alloc && a->line_wait == b->line_wait;
}

/* The fields of struct lab_trace_op a statement uses (trace.h documents them per kind);
 * the others are whatever a tool left there and do not make two traces differ. */
enum {
	F_QUEUE = 1u << 0, F_ADDR = 1u << 1, F_ADDR2 = 1u << 2, F_INDEX = 1u << 3,
	F_LEN = 1u << 4, F_COUNT = 1u << 5, F_VALUE = 1u << 6, F_SEED = 1u << 7,
	F_FLAGS = 1u << 8, F_NEXT = 1u << 9, F_ID = 1u << 10, F_NAME = 1u << 11,
	F_PAT = 1u << 12, F_OL = 1u << 13, F_BUFS = 1u << 14, F_PKTS = 1u << 15,
	F_NUMS = 1u << 16, F_USED = 1u << 17,
};

static uint32_t op_fields(const struct lab_trace_op *op)
{
	uint32_t g = op->given;

	switch (op->kind) {
	case LAB_T_WRITE:
		return F_ADDR | F_PAT;
	case LAB_T_FILL:
		return F_ADDR | F_LEN | F_PAT;
	case LAB_T_DESC:
		return F_QUEUE | F_INDEX | F_ADDR | F_LEN | (g & LAB_TA_FLAGS ? F_FLAGS : 0) |
		       (g & LAB_TA_NEXT ? F_NEXT : 0);
	case LAB_T_PDESC:
		return F_QUEUE | F_INDEX | F_ADDR | F_LEN | F_ID | F_FLAGS;
	case LAB_T_IDESC:
		return F_ADDR2 | F_INDEX | F_ADDR | F_LEN | (g & LAB_TA_FLAGS ? F_FLAGS : 0) |
		       (g & LAB_TA_NEXT ? F_NEXT : 0);
	case LAB_T_AVAIL:
		return F_QUEUE | F_INDEX;
	case LAB_T_KICK:
		return F_QUEUE | (g & LAB_TA_IDX ? F_VALUE : 0);
	case LAB_T_POST:
		return F_QUEUE | F_BUFS | (g & LAB_TA_INDIRECT ? F_ADDR2 : 0);
	case LAB_T_MUTATE:
		return F_ADDR | F_PAT | (g & LAB_TA_ON_READ ? F_VALUE : 0);
	case LAB_T_DOUBLE_FETCH:
		return F_VALUE | (g & LAB_TA_SEED ? F_SEED : 0);
	case LAB_T_FAULT:
		return g & LAB_TA_OFF ? 0 : g & LAB_TA_FAIL_AT ? F_VALUE | F_NUMS : F_VALUE | F_COUNT;
	case LAB_T_DEQUEUE:
	case LAB_T_DISCARD:
	case LAB_T_EXPECT_DEQUEUED:
	case LAB_T_EXPECT_ENQUEUED:
	case LAB_T_EXPECT_HELD:
		return F_QUEUE | F_COUNT;
	case LAB_T_FREE:
		return F_QUEUE | F_NUMS;
	case LAB_T_COMPLETE:
		return F_QUEUE;
	case LAB_T_KICKS:
		return F_QUEUE | F_VALUE;
	case LAB_T_SET:
		return F_QUEUE | (g & LAB_TA_BATCH ? F_COUNT : 0) | (g & LAB_TA_ALLOC ? F_VALUE : 0) |
		       (g & LAB_TA_ZC ? F_INDEX : 0) |
		       ((g & LAB_TA_ZC) && !(g & LAB_TA_OFF) ? F_LEN : 0) |
		       (g & LAB_TA_LINE_WAIT ? F_FLAGS : 0);
	case LAB_T_REMAP:
		return 0;
	case LAB_T_MESSAGE:
		if (op->value == LAB_TRACE_MSG_GET_FEATURES)   /* expect=deps is in `given` */
			return F_VALUE;
		if (op->value == LAB_TRACE_MSG_LOG_START)
			return F_VALUE | F_COUNT;
		return F_QUEUE | F_VALUE |
		       (op->value != LAB_TRACE_MSG_GET_VRING_BASE || (g & LAB_TA_EXPECT) ? F_COUNT : 0);
	case LAB_T_ENQUEUE:
		return F_QUEUE | F_PKTS;
	case LAB_T_EXPECT_PACKET:
		return F_QUEUE | F_INDEX | F_LEN | F_PAT | F_OL;
	case LAB_T_EXPECT_STATUS:
		return F_QUEUE | F_INDEX | F_VALUE;
	case LAB_T_EXPECT_USED:
		return F_QUEUE | (g & LAB_TA_ID ? F_ID : 0) | (g & LAB_TA_LEN ? F_LEN : 0);
	case LAB_T_EXPECT_USED_SET:
		return F_QUEUE | F_USED;
	case LAB_T_REPEAT:
		return F_COUNT;
	case LAB_T_EXPECT_MEM:
		return F_ADDR | F_LEN | F_PAT;
	case LAB_T_EXPECT_STAT:
		return F_QUEUE | F_NAME | F_COUNT;
	case LAB_T_EXPECT_BROKEN:
		return F_QUEUE | (g & (LAB_TA_NONE | LAB_TA_ANY) ? 0 : F_NAME);
	case LAB_T_EXPECT_CALL:
		return F_QUEUE | F_VALUE;
	case LAB_T_EXPECT_DIRTY:
		return F_ADDR | F_VALUE;
	case LAB_T_EXPECT_LOGGED:
		return F_ADDR | F_LEN;
	default:
		return 0;
	}
}

static bool items_equal(const struct lab_trace_op *a, const struct lab_trace_op *b, uint32_t f)
{
	if (!(f & (F_BUFS | F_PKTS | F_NUMS | F_USED)))
		return true;
	if (a->nitems != b->nitems)
		return false;
	for (uint32_t i = 0; i < a->nitems; i++) {
		if (f & F_BUFS) {
			const struct lab_trace_buf *x = &a->bufs[i], *y = &b->bufs[i];

			if (x->gpa != y->gpa || x->len != y->len || x->write != y->write)
				return false;
		} else if (f & F_PKTS) {
			const struct lab_trace_pkt *x = &a->pkts[i], *y = &b->pkts[i];

			if (x->len != y->len || !pat_equal(&x->data, &y->data) ||
			    !ol_equal(&x->ol, &y->ol))
				return false;
		} else if (f & F_USED) {
			const struct lab_trace_used *x = &a->used[i], *y = &b->used[i];

			if (x->id != y->id || x->has_len != y->has_len ||
			    (x->has_len && x->len != y->len))
				return false;
		} else if (a->nums[i] != b->nums[i]) {
			return false;
		}
	}
	return true;
}

static bool op_equal(const struct lab_trace_op *a, const struct lab_trace_op *b)
{
	uint32_t f;

	if (a->kind != b->kind || a->given != b->given)
		return false;
	f = op_fields(a);
	return (!(f & F_QUEUE) || a->queue == b->queue) && (!(f & F_ADDR) || a->addr == b->addr) &&
	       (!(f & F_ADDR2) || a->addr2 == b->addr2) &&
	       (!(f & F_INDEX) || a->index == b->index) && (!(f & F_LEN) || a->len == b->len) &&
	       (!(f & F_COUNT) || a->count == b->count) &&
	       (!(f & F_VALUE) || a->value == b->value) && (!(f & F_SEED) || a->seed == b->seed) &&
	       (!(f & F_FLAGS) || a->flags == b->flags) && (!(f & F_NEXT) || a->next == b->next) &&
	       (!(f & F_ID) || a->id == b->id) &&
	       (!(f & F_NAME) || strncmp(a->name, b->name, sizeof(a->name)) == 0) &&
	       (!(f & F_PAT) || pat_equal(&a->pat, &b->pat)) &&
	       (!(f & F_OL) || ol_equal(&a->ol, &b->ol)) && items_equal(a, b, f);
}

bool lab_trace_equal(const struct lab_trace *a, const struct lab_trace *b)
{
	bool packed = lab_trace_packed(a);

	if (a->version != b->version || a->features != b->features ||
	    a->nregions != b->nregions || a->nqueues != b->nqueues ||
	    a->pool_bufs != b->pool_bufs || a->pool_size != b->pool_size ||
	    a->dirty_pages != b->dirty_pages || a->seed != b->seed || a->nops != b->nops ||
	    a->nregions > LAB_TRACE_MAX_REGIONS || a->nqueues > LAB_TRACE_MAX_QUEUES)
		return false;
	for (uint32_t i = 0; i < a->nregions; i++)
		if (a->regions[i].gpa != b->regions[i].gpa ||
		    a->regions[i].size != b->regions[i].size ||
		    a->regions[i].pieces != b->regions[i].pieces)
			return false;
	for (uint32_t i = 0; i < a->nqueues; i++)
		if (!queue_equal(&a->queues[i], &b->queues[i], packed))
			return false;
	for (uint32_t i = 0; i < a->nops; i++)
		if (!op_equal(&a->ops[i], &b->ops[i]))
			return false;
	return true;
}

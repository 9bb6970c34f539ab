/* SPDX-License-Identifier: MIT */
/* struct lab_trace to canonical text (docs/trace-format.md, "Round trip"): the header, the
 * setup block (features always -- queues need it before them --, then regions, queues, and
 * pool, dirty-log and seed where they differ from the defaults), then one line per
 * statement with its arguments in the documented order. Addresses, sizes of regions,
 * byte:V and flags that have no names are hex; counts, lengths, indices and seeds decimal.
 * Parsing this text gives back an equal trace (lab_trace_equal), and formatting that trace
 * gives this text again. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_names.h"

/* Text being written: into a caller's fixed buffer (cut short, but `len` counts everything)
 * or a growing heap buffer (`oom` once an allocation failed). */
struct out {
	char *buf;
	size_t cap, len;
	bool grow, oom;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->grow) {
		if (o->oom)
			return;
		if (o->len + n + 1 > o->cap) {
			size_t cap = o->cap ? o->cap : 4096;
			char *b;

			while (cap < o->len + n + 1)
				cap *= 2;
			b = realloc(o->buf, cap);
			if (!b) {
				o->oom = true;
				return;
			}
			o->buf = b;
			o->cap = cap;
		}
		memcpy(o->buf + o->len, s, n);
	} else if (o->cap && o->len < o->cap - 1) {
		size_t room = o->cap - 1 - o->len;

		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void putf(struct out *o, const char *fmt, ...)
{
	char tmp[96];   /* one number or a short word at a time */
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void put_hex_bytes(struct out *o, const uint8_t *b, uint32_t n)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[256];

	for (uint32_t i = 0; i < n;) {
		size_t k = 0;

		for (; i < n && k + 2 <= sizeof(tmp); i++) {
			tmp[k++] = digits[b[i] >> 4];
			tmp[k++] = digits[b[i] & 15];
		}
		put(o, tmp, k);
	}
}

static void put_pat(struct out *o, const struct lab_trace_pat *p)
{
	switch (p->kind) {
	case LAB_PAT_HEX:
		puts_(o, "hex:");
		put_hex_bytes(o, p->bytes, p->nbytes);
		break;
	case LAB_PAT_BYTE:
		putf(o, "byte:0x%02" PRIx64, p->value);
		break;
	case LAB_PAT_ZERO:
		puts_(o, "zero");
		break;
	case LAB_PAT_SEQ:
		putf(o, "seq:%" PRIu64, p->value);
		break;
	case LAB_PAT_STREAM:
		putf(o, "stream:0x%016" PRIx64, p->value);
		break;
	case LAB_PAT_FNV1A:
		putf(o, "fnv1a:%016" PRIx64, p->value);
		break;
	default:
		break;
	}
}

/* Bits by name, joined by `sep` (features: ' ', flags: '|'), when every set bit has one;
 * else the number in hex. */
static void put_bits(struct out *o, uint64_t v, const struct lab_tn_bit *names, unsigned n,
		     const char *sep)
{
	uint64_t named = 0;
	bool first = true;

	for (unsigned i = 0; i < n; i++)
		named |= names[i].mask;
	if (v == 0 || (v & ~named)) {
		putf(o, v ? "0x%" PRIx64 : "%" PRIu64, v);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (v & names[i].mask) {
			puts_(o, first ? "" : sep);
			puts_(o, names[i].name);
			first = false;
		}
}

static void put_flags(struct out *o, uint16_t v, bool packed)
{
	put_bits(o, v, lab_tn_desc_flags, lab_tn_desc_flag_count(packed), "|");
}

static const char *word(const char *const *words, unsigned n, uint64_t i)
{
	return i < n ? words[i] : "?";
}

static void put_queue_ref(struct out *o, const struct lab_trace *t, uint32_t qi)
{
	puts_(o, " ");
	if (qi < t->nqueues && qi < LAB_TRACE_MAX_QUEUES)
		put(o, t->queues[qi].name, strnlen(t->queues[qi].name, sizeof(t->queues[qi].name)));
	else
		puts_(o, "?");
}

/* Offload fields given, as " name=N" (expect packet) or ",name=N" (enqueue). */
static void put_ol(struct out *o, const struct lab_trace_ol *ol, char sep)
{
	const uint64_t v[LAB_TN_NOL] = {ol->flags, ol->gso_type, ol->hdr_len, ol->gso_size,
					ol->csum_start, ol->csum_offset};

	for (unsigned k = 0; k < LAB_TN_NOL; k++)
		if (ol->given & (1u << k))
			putf(o, "%c%s=%" PRIu64, sep, lab_tn_ol[k], v[k]);
}

/* ---- statements --------------------------------------------------------------------- */

/* desc and idesc: addr= len= [flags=] [next=] */
static void put_desc_fields(struct out *o, const struct lab_trace_op *op, bool packed)
{
	putf(o, " addr=0x%" PRIx64 " len=%" PRIu64, op->addr, op->len);
	if (op->given & LAB_TA_FLAGS) {
		puts_(o, " flags=");
		put_flags(o, op->flags, packed);
	}
	if (op->given & LAB_TA_NEXT)
		putf(o, " next=%u", op->next);
}

static void put_items(struct out *o, const struct lab_trace_op *op)
{
	/* A tool's op that lost its array prints none (the text then fails to parse). */
	if (!(op->kind == LAB_T_POST ? (const void *)op->bufs : op->kind == LAB_T_FREE ?
	      (const void *)op->nums : (const void *)op->pkts))
		return;
	for (uint32_t i = 0; i < op->nitems; i++)
		switch (op->kind) {
		case LAB_T_POST:
			putf(o, " 0x%" PRIx64 "+%" PRIu32 "%s", op->bufs[i].gpa, op->bufs[i].len,
			     op->bufs[i].write ? ":w" : "");
			break;
		case LAB_T_FREE:
			putf(o, " %" PRIu64, op->nums[i]);
			break;
		default:   /* ENQUEUE */
			putf(o, " len=%" PRIu32 ",data=", op->pkts[i].len);
			put_pat(o, &op->pkts[i].data);
			put_ol(o, &op->pkts[i].ol, ',');
			break;
		}
}

static void put_guest_op(struct out *o, const struct lab_trace *t, const struct lab_trace_op *op)
{
	switch (op->kind) {
	case LAB_T_WRITE:
	case LAB_T_MUTATE:
		putf(o, " 0x%" PRIx64 " ", op->addr);
		put_hex_bytes(o, op->pat.bytes, op->pat.kind == LAB_PAT_HEX ? op->pat.nbytes : 0);
		if (op->given & LAB_TA_ON_READ)
			putf(o, " on-read=%" PRIu64, op->value);
		break;
	case LAB_T_FILL:
		putf(o, " 0x%" PRIx64 " %" PRIu64 " ", op->addr, op->len);
		put_pat(o, &op->pat);
		break;
	case LAB_T_DESC:
		put_queue_ref(o, t, op->queue);
		putf(o, " %" PRIu64, op->index);
		put_desc_fields(o, op, false);
		break;
	case LAB_T_PDESC:
		put_queue_ref(o, t, op->queue);
		putf(o, " %" PRIu64 " addr=0x%" PRIx64 " len=%" PRIu64 " id=%u flags=", op->index,
		     op->addr, op->len, op->id);
		put_flags(o, op->flags, true);
		break;
	case LAB_T_IDESC:
		putf(o, " 0x%" PRIx64 " %" PRIu64, op->addr2, op->index);
		put_desc_fields(o, op, lab_trace_packed(t));
		break;
	case LAB_T_AVAIL:
		put_queue_ref(o, t, op->queue);
		putf(o, " %" PRIu64, op->index);
		break;
	case LAB_T_KICK:
		put_queue_ref(o, t, op->queue);
		if (op->given & LAB_TA_IDX)
			putf(o, " idx=%" PRIu64, op->value);
		break;
	case LAB_T_POST:
		put_queue_ref(o, t, op->queue);
		if (op->given & LAB_TA_INDIRECT)
			putf(o, " indirect=0x%" PRIx64, op->addr2);
		put_items(o, op);
		break;
	case LAB_T_DOUBLE_FETCH:
		putf(o, " %s", word(lab_tn_df_modes, 3, op->value));
		if (op->given & LAB_TA_SEED)
			putf(o, " seed=%" PRIu64, op->seed);
		break;
	default:   /* FAULT */
		if (op->given & LAB_TA_OFF) {
			puts_(o, " off");
		} else if (op->given & LAB_TA_FAIL_AT) {
			puts_(o, " pool fail-at=");
			for (uint32_t i = 0; i < op->nitems; i++)
				putf(o, "%s%" PRIu64, i ? "," : "", op->nums[i]);
		} else
			putf(o, " %s fail-after=%" PRIu64, word(lab_tn_faults, 2, op->value),
			     op->count);
		break;
	}
}

static void put_set(struct out *o, const struct lab_trace_op *op)
{
	if (op->given & LAB_TA_BATCH)
		putf(o, " batch=%" PRIu64, op->count);
	if (op->given & LAB_TA_ALLOC)
		putf(o, " alloc=%s", word(lab_tn_allocs, 2, op->value));
	if ((op->given & LAB_TA_ZC) && (op->given & LAB_TA_OFF))
		puts_(o, " zero-copy=off");
	else if (op->given & LAB_TA_ZC)
		putf(o, " zero-copy=%" PRIu64, op->len);
	if ((op->given & LAB_TA_ZC) && op->index)
		putf(o, " zc-max=%" PRIu64, op->index);
	if (op->given & LAB_TA_LINE_WAIT)
		putf(o, " line-wait=%s", word(lab_tn_switch, 2, op->flags));
}

static void put_host_op(struct out *o, const struct lab_trace *t, const struct lab_trace_op *op)
{
	if (op->kind == LAB_T_REMAP)
		return;
	put_queue_ref(o, t, op->queue);
	switch (op->kind) {
	case LAB_T_DEQUEUE:
		putf(o, " %" PRIu64 "%s", op->count, op->given & LAB_TA_HOLD ? " hold" : "");
		break;
	case LAB_T_DISCARD:
		putf(o, " %" PRIu64 "%s", op->count, op->given & LAB_TA_TOUCH ? " touch" : "");
		break;
	case LAB_T_COMPLETE:
		break;
	case LAB_T_KICKS:
		putf(o, " %s", lab_tn_switch[op->value != 0]);
		break;
	case LAB_T_SET:
		put_set(o, op);
		break;
	default:   /* FREE, ENQUEUE */
		put_items(o, op);
		break;
	}
}

static void put_expect(struct out *o, const struct lab_trace *t, const struct lab_trace_op *op)
{
	static const char *const yes_no[2] = {"no", "yes"};

	if (op->kind == LAB_T_EXPECT_MEM) {
		putf(o, " 0x%" PRIx64 " %" PRIu64 " ", op->addr, op->len);
		if (op->pat.kind == LAB_PAT_FNV1A)
			putf(o, "fnv1a=%016" PRIx64, op->pat.value);
		else
			put_pat(o, &op->pat);
		return;
	}
	if (op->kind == LAB_T_EXPECT_DIRTY) {
		putf(o, " 0x%" PRIx64 " %s", op->addr, word(yes_no, 2, op->value));
		return;
	}
	if (op->kind == LAB_T_EXPECT_LOGGED) {
		putf(o, " 0x%" PRIx64 " 0x%" PRIx64, op->addr, op->len);
		return;
	}
	put_queue_ref(o, t, op->queue);
	switch (op->kind) {
	case LAB_T_EXPECT_PACKET:
		putf(o, " %" PRIu64 " len=%" PRIu64, op->index, op->len);
		if (op->pat.kind == LAB_PAT_FNV1A) {
			putf(o, " fnv1a=%016" PRIx64, op->pat.value);
		} else if (op->pat.kind != LAB_PAT_NONE) {
			puts_(o, " data=");
			put_pat(o, &op->pat);
		}
		put_ol(o, &op->ol, ' ');
		break;
	case LAB_T_EXPECT_STATUS:
		putf(o, " %" PRIu64 " %s", op->index, word(lab_tn_statuses, 4, op->value));
		break;
	case LAB_T_EXPECT_USED:
		if (op->given & LAB_TA_NONE)
			puts_(o, " none");
		if (op->given & LAB_TA_ID)
			putf(o, " id=%u", op->id);
		if (op->given & LAB_TA_LEN)
			putf(o, " len=%" PRIu64, op->len);
		break;
	case LAB_T_EXPECT_USED_SET:
		for (uint32_t i = 0; i < op->nitems; i++) {
			putf(o, " id=%u", op->used[i].id);
			if (op->used[i].has_len)
				putf(o, ",len=%" PRIu32, op->used[i].len);
		}
		break;
	case LAB_T_EXPECT_STAT:
		puts_(o, " ");
		put(o, op->name, strnlen(op->name, sizeof(op->name)));
		putf(o, " %" PRIu64, op->count);
		break;
	case LAB_T_EXPECT_BROKEN:
		puts_(o, " ");
		if (op->given & LAB_TA_NONE)
			puts_(o, "no");
		else if (op->given & LAB_TA_ANY)
			puts_(o, "any");
		else
			put(o, op->name, strnlen(op->name, sizeof(op->name)));
		break;
	case LAB_T_EXPECT_CALL:
		putf(o, " %s", word(yes_no, 2, op->value));
		break;
	default:   /* DEQUEUED, ENQUEUED, HELD */
		putf(o, " %" PRIu64, op->count);
		break;
	}
}

/* message WORD QUEUE, then what the message carries: expect=N, 0|1, base=N; get-features
 * and log-start name no queue. */
static void put_message(struct out *o, const struct lab_trace *t, const struct lab_trace_op *op)
{
	putf(o, " %s", word(lab_tn_messages, LAB_TRACE_NMSGS, op->value));
	if (op->value == LAB_TRACE_MSG_GET_FEATURES) {
		if (op->given & LAB_TA_EXPECT)
			puts_(o, " expect=deps");
		return;
	}
	if (op->value == LAB_TRACE_MSG_LOG_START) {
		putf(o, " pages=%" PRIu64, op->count);
		return;
	}
	put_queue_ref(o, t, op->queue);
	switch (op->value) {
	case LAB_TRACE_MSG_GET_VRING_BASE:
		if (op->given & LAB_TA_EXPECT)
			putf(o, " expect=0x%" PRIx64, op->count);
		break;
	case LAB_TRACE_MSG_VRING_ENABLE:
		putf(o, " %" PRIu64, op->count);
		break;
	default:
		putf(o, " base=0x%" PRIx64, op->count);
		break;
	}
}

static void put_op(struct out *o, const struct lab_trace *t, const struct lab_trace_op *op)
{
	switch (op->kind) {   /* version 2's blocks */
	case LAB_T_REPEAT:
		putf(o, "repeat %" PRIu64 " {", op->count);
		return;
	case LAB_T_EITHER:
		puts_(o, "either {");
		return;
	case LAB_T_OR:
		puts_(o, "} or {");
		return;
	case LAB_T_END:
		puts_(o, "}");
		return;
	default:
		break;
	}
	puts_(o, lab_trace_kind_name(op->kind));
	if (op->kind == LAB_T_MESSAGE) {
		put_message(o, t, op);
		return;
	}
	if (op->kind >= LAB_T_EXPECT_DEQUEUED)   /* the expectations, used-set last */
		put_expect(o, t, op);
	else if (op->kind >= LAB_T_DEQUEUE)
		put_host_op(o, t, op);
	else
		put_guest_op(o, t, op);
}

size_t lab_trace_format_op(const struct lab_trace *t, const struct lab_trace_op *op, char *buf,
			   size_t n)
{
	struct out o = {buf, n, 0, false, false};

	put_op(&o, t, op);
	if (n)
		buf[o.len < n ? o.len : n - 1] = '\0';
	return o.len;
}

/* ---- the whole trace ---------------------------------------------------------------- */

static void put_queue(struct out *o, const struct lab_trace_queue *q, bool packed)
{
	puts_(o, "queue ");
	put(o, q->name, strnlen(q->name, sizeof(q->name)));
	putf(o, " %s size=%" PRIu32, word(lab_tn_dirs, 2, q->dir), q->size);
	if (q->at_given)
		putf(o, " at=0x%" PRIx64, q->desc);
	else
		putf(o, packed ? " desc=0x%" PRIx64 " driver=0x%" PRIx64 " device=0x%" PRIx64
		     : " desc=0x%" PRIx64 " avail=0x%" PRIx64 " used=0x%" PRIx64, q->desc,
		     q->driver, q->device);
	if (q->start)
		putf(o, " start=%u", q->start);
	if (packed && !q->wrap)
		puts_(o, " wrap=0");
	if (q->batch != 256)
		putf(o, " batch=%" PRIu32, q->batch);
	if (q->zero_copy)
		putf(o, " zero-copy=%" PRIu32, q->zc_min);
	if (q->zc_max)
		putf(o, " zc-max=%" PRIu32, q->zc_max);
	if (q->alloc != LAB_TRACE_ALLOC_AVAILABLE)
		putf(o, " alloc=%s", word(lab_tn_allocs, 2, q->alloc));
	if (q->line_wait)
		puts_(o, " line-wait=on");
	puts_(o, "\n");
}

static void put_setup(struct out *o, const struct lab_trace *t)
{
	bool packed = lab_trace_packed(t);

	putf(o, "vhostlab-trace %" PRIu32 "\nfeatures ", t->version);
	put_bits(o, t->features, lab_tn_features, LAB_TN_NFEATURES, " ");
	puts_(o, "\n");
	for (uint32_t i = 0; i < t->nregions && i < LAB_TRACE_MAX_REGIONS; i++) {
		const struct lab_trace_region *r = &t->regions[i];

		putf(o, "region 0x%" PRIx64 " 0x%" PRIx64, r->gpa, r->size);
		if (r->pieces)
			putf(o, " pieces=%" PRIu64, r->pieces);
		puts_(o, "\n");
	}
	for (uint32_t i = 0; i < t->nqueues && i < LAB_TRACE_MAX_QUEUES; i++)
		put_queue(o, &t->queues[i], packed);
	if (t->pool_bufs != 1024 || t->pool_size != 2048)
		putf(o, "pool bufs=%" PRIu32 " size=%" PRIu32 "\n", t->pool_bufs, t->pool_size);
	if (t->dirty_pages)
		putf(o, "dirty-log pages=%" PRIu64 "\n", t->dirty_pages);
	if (t->seed != 1)
		putf(o, "seed %" PRIu64 "\n", t->seed);
}

char *lab_trace_format(const struct lab_trace *t, size_t *len)
{
	struct out o = {NULL, 0, 0, true, false};

	put_setup(&o, t);
	for (uint32_t i = 0, depth = 0; i < t->nops; i++) {
		enum lab_trace_kind k = t->ops[i].kind;

		/* Block bodies are indented two spaces a level; `} or {` and `}` stand at the
		 * level of the line that opened the block. */
		if ((k == LAB_T_END || k == LAB_T_OR) && depth)
			depth--;
		for (uint32_t d = 0; d < depth; d++)
			puts_(&o, "  ");
		put_op(&o, t, &t->ops[i]);
		puts_(&o, "\n");
		if (k == LAB_T_REPEAT || k == LAB_T_EITHER || k == LAB_T_OR)
			depth++;
	}
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	o.buf[o.len] = '\0';   /* the setup wrote something, so buf exists */
	if (len)
		*len = o.len;
	return o.buf;
}

bool lab_trace_save(const struct lab_trace *t, const char *path, char *err, size_t errlen)
{
	size_t len;
	char *text = lab_trace_format(t, &len);
	FILE *f;
	bool ok;

	if (!text) {
		snprintf(err, errlen, "%s: out of memory", path);
		return false;
	}
	f = fopen(path, "wb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(text);
		return false;
	}
	ok = fwrite(text, 1, len, f) == len;
	ok = (fclose(f) == 0) && ok;
	if (!ok)
		snprintf(err, errlen, "%s: write error", path);
	free(text);
	return ok;
}

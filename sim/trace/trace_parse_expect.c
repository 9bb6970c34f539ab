/* SPDX-License-Identifier: MIT */
/* Trace text, the `expect` statements (docs/trace-format.md, "Expectations"). What can be
 * known from the text alone is checked here -- the queue's direction, lengths of literal
 * bytes, that a dirty expectation has a dirty log to look at -- so that replay only ever
 * reports what the core did. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace_lex.h"
#include "trace_names.h"
#include "vhostlab/vl_vq.h"

static bool ex_count(struct tl *p, struct lab_trace_op *op, const char *what, enum lab_trace_dir d)
{
	static const char *const keys[] = {NULL};

	return tl_stmt(p, 2, what, d == LAB_TRACE_TX ? "expect dequeued QUEUE N"
		       : "expect enqueued QUEUE N", keys, 2, 2, false) &&
	       tl_queue_dir(p, tl_pos(p, 0), d, &op->queue) &&
	       tl_range(p, tl_pos(p, 1), 0, LAB_TRACE_MAX_ITEMS, &op->count);
}

static bool ex_dequeued(struct tl *p, struct lab_trace_op *op)
{
	return ex_count(p, op, "expect dequeued", LAB_TRACE_TX);
}

static bool ex_enqueued(struct tl *p, struct lab_trace_op *op)
{
	return ex_count(p, op, "expect enqueued", LAB_TRACE_RX);
}

static bool ex_packet(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {
		"len", "data", "fnv1a", "flags", "gso_type", "hdr_len", "gso_size", "csum_start",
		"csum_offset", NULL,
	};

	if (!tl_stmt(p, 2, "expect packet", "expect packet QUEUE K len=N [data=PATTERN | "
		     "fnv1a=HEX16] [flags=N] [gso_type=N] [hdr_len=N] [gso_size=N] [csum_start=N] "
		     "[csum_offset=N]", keys, 2, 2, false) ||
	    !tl_queue_dir(p, tl_pos(p, 0), LAB_TRACE_TX, &op->queue) ||
	    !tl_u64(p, tl_pos(p, 1), &op->index) || !tl_need(p, 0) ||
	    !tl_range(p, p->arg[0], 0, UINT32_MAX, &op->len))
		return false;
	if (p->arg[1] && p->arg[2])
		return tl_error(p, p->arg[2], "give data= or fnv1a=, not both");
	if (p->arg[1] && (!tl_pattern(p, p->arg[1], true, &op->pat) ||
			  !tl_pat_len(p, p->arg[1], &op->pat, op->len)))
		return false;
	if (p->arg[2]) {
		if (!tl_fnv(p, p->arg[2], &op->pat.value))
			return false;
		op->pat.kind = LAB_PAT_FNV1A;
	}
	for (unsigned k = 0; k < LAB_TN_NOL; k++)
		if (p->arg[3 + k] && !tl_offload(p, p->arg[3 + k], k, &op->ol))
			return false;
	return true;
}

static bool ex_status(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};
	unsigned k;

	if (!tl_stmt(p, 2, "expect status", "expect status QUEUE I "
		     "delivered|too_big|too_many_pieces|offload", keys, 3, 3, false) ||
	    !tl_queue_dir(p, tl_pos(p, 0), LAB_TRACE_RX, &op->queue) ||
	    !tl_range(p, tl_pos(p, 1), 0, LAB_TRACE_MAX_ITEMS - 1, &op->index) ||
	    !tl_word(p, tl_pos(p, 2), lab_tn_statuses, 4, &k))
		return false;
	op->value = k;
	return true;
}

static bool ex_used(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"id", "len", NULL};
	static const char *const none[] = {"none"};
	bool v2 = p->t->version >= 2;
	unsigned k;
	uint64_t id;

	if (!tl_stmt(p, 2, "expect used", v2 ? "expect used QUEUE [id=ID] [len=N], or expect "
		     "used QUEUE none" : "expect used QUEUE id=ID len=N, or expect used QUEUE none",
		     keys, 1, 2, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue))
		return false;
	if (p->npos == 2) {
		if (!tl_word(p, tl_pos(p, 1), none, 1, &k))
			return false;
		if (p->arg[0] || p->arg[1])
			return tl_error(p, p->arg[0] ? p->arg[0] : p->arg[1], "not with none");
		op->given |= LAB_TA_NONE;
		return true;
	}
	/* Version 1 names the element exactly; version 2 may leave either out (any id the
	 * guest has outstanding, any length). */
	for (unsigned i = 0; i < 2 && !v2; i++)
		if (!p->arg[i])
			return tl_error_stmt(p, "missing %s= (optional only in version 2); expected: "
					     "%s", keys[i], p->usage);
	if (p->arg[0]) {
		if (!tl_range(p, p->arg[0], 0, 0xffff, &id))
			return false;
		op->id = (uint16_t)id;
		op->given |= LAB_TA_ID;
	}
	if (p->arg[1]) {
		if (!tl_range(p, p->arg[1], 0, UINT32_MAX, &op->len))
			return false;
		op->given |= LAB_TA_LEN;
	}
	return true;
}

/* One item of used-set: id=ID[,len=N], the fields in either order. */
static bool used_item(struct tl *p, const struct tl_tok *tk, struct lab_trace_used *u)
{
	static const char *const names[2] = {"id", "len"};
	const char *s = tk->s, *end = tk->s + tk->len;
	unsigned seen = 0;
	uint64_t v;

	for (;;) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *fend = comma ? comma : end;
		const char *eq = memchr(s, '=', (size_t)(fend - s));
		struct tl_tok f = {s, (uint32_t)(fend - s), tk->col + (uint32_t)(s - tk->s),
				   eq ? eq + 1 : s, eq ? (uint32_t)(fend - eq - 1) : 0};
		size_t klen = eq ? (size_t)(eq - s) : 0;
		unsigned k = 0;

		while (eq && k < 2 && !(klen == strlen(names[k]) && memcmp(s, names[k], klen) == 0))
			k++;
		if (!eq || k == 2)
			return tl_error(p, &f, "not a used-set field; expected id=ID[,len=N]");
		if (seen & (1u << k))
			return tl_error(p, &f, "%s= given twice", names[k]);
		seen |= 1u << k;
		if (k == 0) {
			if (!tl_range(p, &f, 0, 0xffff, &v))
				return false;
			u->id = (uint16_t)v;
		} else {
			if (!tl_range(p, &f, 0, UINT32_MAX, &v))
				return false;
			u->len = (uint32_t)v;
			u->has_len = true;
		}
		if (!comma)
			break;
		s = comma + 1;
	}
	if (!(seen & 1u))
		return tl_error(p, tk, "an item needs id=ID (len= is optional)");
	return true;
}

static bool ex_used_set(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	if (p->t->version < 2)
		return tl_needs_v2(p, &p->tok[1]);
	if (!tl_stmt(p, 2, "expect used-set", "expect used-set QUEUE ITEM... (ITEM: "
		     "id=ID[,len=N]; 1 to 4096 items)", keys, 2, TL_MAX_TOKENS, true) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue))
		return false;
	if (p->npos - 1 > LAB_TRACE_MAX_ITEMS)
		return tl_error(p, tl_pos(p, 1 + LAB_TRACE_MAX_ITEMS), "more than %u items",
				LAB_TRACE_MAX_ITEMS);
	op->nitems = p->npos - 1;
	op->used = calloc(op->nitems, sizeof(*op->used));
	if (!op->used)
		return tl_error_stmt(p, "out of memory");
	for (uint32_t i = 0; i < op->nitems; i++)
		if (!used_item(p, tl_pos(p, 1 + i), &op->used[i]))
			return false;
	return true;
}

static bool ex_mem(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"fnv1a", NULL};

	if (!tl_stmt(p, 2, "expect mem", "expect mem GPA LEN PATTERN, or expect mem GPA LEN "
		     "fnv1a=HEX16", keys, 2, 3, false) ||
	    !tl_u64(p, tl_pos(p, 0), &op->addr) ||
	    !tl_range(p, tl_pos(p, 1), 1, LAB_TRACE_MAX_MEM, &op->len))
		return false;
	if (p->npos == 3 && p->arg[0])
		return tl_error(p, p->arg[0], "give a pattern or fnv1a=, not both");
	if (p->npos == 2 && !p->arg[0])
		return tl_error_stmt(p, "missing the pattern; expected: %s", p->usage);
	if (p->arg[0]) {
		if (!tl_fnv(p, p->arg[0], &op->pat.value))
			return false;
		op->pat.kind = LAB_PAT_FNV1A;
	} else if (!tl_pattern(p, tl_pos(p, 2), true, &op->pat) ||
		   !tl_pat_len(p, tl_pos(p, 2), &op->pat, op->len)) {
		return false;
	}
	return tl_in_mem(p, tl_pos(p, 0), op->addr, op->len, "the expected bytes");
}

/* A drop reason of the core by name (vl_drop_name), "none" excluded. */
static bool drop_reason(const char *s, size_t n)
{
	for (unsigned k = VL_DROP_NONE + 1; k < VL_DROP__COUNT; k++) {
		const char *name = vl_drop_name((enum vl_drop)k);

		if (strlen(name) == n && memcmp(name, s, n) == 0)
			return true;
	}
	return false;
}

static bool ex_stat(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};
	const struct tl_tok *tk;

	if (!tl_stmt(p, 2, "expect stat", "expect stat QUEUE NAME VALUE (NAME: a counter of "
		     "vl_vq_stats or drops.REASON)", keys, 3, 3, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue))
		return false;
	/* Counter names are the replay's to know; here: the shape, and drops.REASON against the
	 * core's own reason names. */
	tk = tl_pos(p, 1);
	if (tk->len > 6 && memcmp(tk->s, "drops.", 6) == 0) {
		if (!drop_reason(tk->s + 6, tk->len - 6))
			return tl_error(p, tk, "no such drop reason (vl_drop_name)");
	} else {
		for (uint32_t i = 0; i < tk->len; i++)
			if (!((tk->s[i] >= 'a' && tk->s[i] <= 'z') || tk->s[i] == '_' ||
			      (i && tk->s[i] >= '0' && tk->s[i] <= '9')))
				return tl_error(p, tk, "not a counter name (a field of vl_vq_stats "
						"or drops.REASON)");
	}
	if (tk->len >= sizeof(op->name))
		return tl_error(p, tk, "name longer than %zu characters", sizeof(op->name) - 1);
	memcpy(op->name, tk->s, tk->len);
	op->name[tk->len] = '\0';
	return tl_u64(p, tl_pos(p, 2), &op->count);
}

static bool ex_broken(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};
	const struct tl_tok *tk;

	if (!tl_stmt(p, 2, "expect broken", p->t->version >= 2 ? "expect broken QUEUE "
		     "REASON|any|no" : "expect broken QUEUE REASON|no", keys, 2, 2, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue))
		return false;
	tk = tl_pos(p, 1);
	if (tl_is(tk, "no")) {
		op->given |= LAB_TA_NONE;
		return true;
	}
	if (tl_is(tk, "any")) {
		/* Broken for whatever reason: what any back end can be seen to do. */
		if (p->t->version < 2)
			return tl_needs_v2(p, tk);
		op->given |= LAB_TA_ANY;
		return true;
	}
	if (!drop_reason(tk->s, tk->len))
		return tl_error(p, tk, "expected no or a drop reason (vl_drop_name, e.g. "
				"avail_idx_jump)");
	memcpy(op->name, tk->s, tk->len);   /* reason names are far shorter than name[] */
	op->name[tk->len] = '\0';
	return true;
}

static const char *const yes_no[2] = {"no", "yes"};

static bool ex_call(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};
	unsigned k;

	if (!tl_stmt(p, 2, "expect call", "expect call QUEUE yes|no", keys, 2, 2, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue) || !tl_word(p, tl_pos(p, 1), yes_no, 2, &k))
		return false;
	op->value = k;
	return true;
}

static bool ex_held(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	return tl_stmt(p, 2, "expect held", "expect held QUEUE N", keys, 2, 2, false) &&
	       tl_queue_dir(p, tl_pos(p, 0), LAB_TRACE_TX, &op->queue) &&
	       tl_range(p, tl_pos(p, 1), 0, p->t->queues[op->queue].size, &op->count);
}

static bool ex_dirty(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};
	unsigned k;

	if (!tl_stmt(p, 2, "expect dirty", "expect dirty GPA yes|no", keys, 2, 2, false))
		return false;
	if (!p->t->dirty_pages)
		return tl_error_stmt(p, "needs 'dirty-log pages=N' in the setup");
	if (!tl_u64(p, tl_pos(p, 0), &op->addr) || !tl_word(p, tl_pos(p, 1), yes_no, 2, &k))
		return false;
	if (op->addr / 4096 >= p->t->dirty_pages)
		return tl_error(p, tl_pos(p, 0), "beyond the %" PRIu64 " pages the dirty log covers",
				p->t->dirty_pages);
	op->value = k;
	return true;
}

/* The pages of the last `message log-start` above (0: none). */
static uint64_t log_pages(const struct lab_trace *t)
{
	for (uint32_t i = t->nops; i-- > 0;)
		if (t->ops[i].kind == LAB_T_MESSAGE && t->ops[i].value == LAB_TRACE_MSG_LOG_START)
			return t->ops[i].count;
	return 0;
}

/* expect logged GPA LEN (v2): the pages of the range are marked in the shared log. */
static bool ex_logged(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};
	uint64_t pages;

	if (p->t->version < 2)
		return tl_needs_v2(p, &p->tok[0]);
	if (!tl_stmt(p, 2, "expect logged", "expect logged GPA LEN", keys, 2, 2, false))
		return false;
	if (!(pages = log_pages(p->t)))
		return tl_error_stmt(p, "needs a 'message log-start pages=N' above it");
	if (!tl_u64(p, tl_pos(p, 0), &op->addr) ||
	    !tl_range(p, tl_pos(p, 1), 1, LAB_TRACE_MAX_MEM, &op->len))
		return false;
	if (op->addr > UINT64_MAX - op->len || (op->addr + op->len - 1) / 4096 >= pages)
		return tl_error(p, tl_pos(p, 0), "the range runs beyond the %" PRIu64 " pages the "
				"log covers", pages);
	return true;
}

static const struct {
	const char *word;
	enum lab_trace_kind kind;
	bool (*read)(struct tl *p, struct lab_trace_op *op);
} expects[] = {
	{"dequeued", LAB_T_EXPECT_DEQUEUED, ex_dequeued},
	{"packet", LAB_T_EXPECT_PACKET, ex_packet},
	{"enqueued", LAB_T_EXPECT_ENQUEUED, ex_enqueued},
	{"status", LAB_T_EXPECT_STATUS, ex_status},
	{"used", LAB_T_EXPECT_USED, ex_used},
	{"used-set", LAB_T_EXPECT_USED_SET, ex_used_set},
	{"mem", LAB_T_EXPECT_MEM, ex_mem},
	{"stat", LAB_T_EXPECT_STAT, ex_stat},
	{"broken", LAB_T_EXPECT_BROKEN, ex_broken},
	{"call", LAB_T_EXPECT_CALL, ex_call},
	{"held", LAB_T_EXPECT_HELD, ex_held},
	{"dirty", LAB_T_EXPECT_DIRTY, ex_dirty},
	{"logged", LAB_T_EXPECT_LOGGED, ex_logged},
};

bool tl_expect(struct tl *p, struct lab_trace_op *op)
{
	p->what = "expect";
	if (p->ntok < 2)
		return tl_error_stmt(p, "expect what? dequeued, packet, enqueued, status, used, "
				     "used-set, mem, stat, broken, call, held, dirty or logged");
	for (size_t i = 0; i < sizeof(expects) / sizeof(expects[0]); i++)
		if (tl_is(&p->tok[1], expects[i].word)) {
			op->kind = expects[i].kind;
			p->what = lab_trace_kind_name(op->kind);
			return expects[i].read(p, op);
		}
	return tl_error(p, &p->tok[1], "unknown expectation; expected dequeued, packet, "
			"enqueued, status, used, used-set, mem, stat, broken, call, held, dirty "
			"or logged");
}

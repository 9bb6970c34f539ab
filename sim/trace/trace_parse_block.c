/* SPDX-License-Identifier: MIT */
/* Trace text, version 2's blocks (docs/trace-format.md, "Blocks"): `repeat N {`,
 * `either {`, `} or {` and `}`. Each becomes a statement of its own in the flat array
 * (LAB_T_REPEAT, LAB_T_EITHER, LAB_T_OR, LAB_T_END); what is checked here is everything the
 * engines rely on without checking again: braces balance, blocks nest at most
 * LAB_TRACE_MAX_DEPTH deep, an either has two branches or more, none empty, holding only
 * expectations and no block. */
#include <inttypes.h>
#include <string.h>

#include "trace_lex.h"

bool tl_needs_v2(struct tl *p, const struct tl_tok *tk)
{
	return tl_error(p, tk, "needs version 2 (this trace says 'vhostlab-trace %" PRIu32 "'; "
			"'vhostlab trace upgrade' converts it)", p->t->version);
}

bool tl_is_block(const struct tl *p)
{
	const struct tl_tok *kw = &p->tok[0];

	return tl_is(kw, "repeat") || tl_is(kw, "either") || tl_is(kw, "}");
}

static struct tl_block *innermost(struct tl *p)
{
	return p->depth ? &p->blk[p->depth - 1] : NULL;
}

static bool append(struct tl *p, enum lab_trace_kind kind, uint64_t count)
{
	struct lab_trace_op op;

	memset(&op, 0, sizeof(op));
	op.kind = kind;
	op.line = p->line;
	op.count = count;
	if (!lab_trace_append(p->t, &op))
		return tl_error_stmt(p, p->t->nops == LAB_TRACE_MAX_OPS ? "more than %u statements"
				     : "out of memory (%u statements)", LAB_TRACE_MAX_OPS);
	return true;
}

/* A block may open here: room for one more level, and not inside an either branch. */
static bool may_open(struct tl *p)
{
	struct tl_block *in = innermost(p);

	if (p->depth == LAB_TRACE_MAX_DEPTH)
		return tl_error_stmt(p, "blocks nest at most %u deep (the outermost open one is "
				     "on line %" PRIu32 ")", LAB_TRACE_MAX_DEPTH, p->blk[0].line);
	if (in && in->either)
		return tl_error_stmt(p, "an either branch holds only expectations (the either of "
				     "line %" PRIu32 ")", in->line);
	if (in)
		in->items++;
	return true;
}

static bool open_repeat(struct tl *p)
{
	uint64_t n;

	p->what = "repeat";
	if (p->ntok != 3 || !tl_is(&p->tok[2], "{"))
		return tl_error_stmt(p, "expected: repeat N {   (N from 1 to %u, the brace on the "
				     "same line)", LAB_TRACE_MAX_REPEAT);
	if (!tl_range(p, &p->tok[1], 1, LAB_TRACE_MAX_REPEAT, &n) || !may_open(p) ||
	    !append(p, LAB_T_REPEAT, n))
		return false;
	p->blk[p->depth++] = (struct tl_block){false, p->line, 0, 0};
	return true;
}

static bool open_either(struct tl *p)
{
	p->what = "either";
	if (p->ntok != 2 || !tl_is(&p->tok[1], "{"))
		return tl_error_stmt(p, "expected: either {");
	if (!may_open(p) || !append(p, LAB_T_EITHER, 0))
		return false;
	p->blk[p->depth++] = (struct tl_block){true, p->line, 1, 0};
	return true;
}

/* `}` or `} or {`. */
static bool close_block(struct tl *p)
{
	struct tl_block *in = innermost(p);
	bool or = p->ntok > 1;

	p->what = or ? "} or {" : "}";
	if (or && (p->ntok != 3 || !tl_is(&p->tok[1], "or") || !tl_is(&p->tok[2], "{")))
		return tl_error(p, &p->tok[1], "after '}' only 'or {' may follow on the line");
	if (!in)
		return tl_error(p, &p->tok[0], "closes no block (no repeat or either is open)");
	if (or && !in->either)
		return tl_error(p, &p->tok[1], "'or' continues an either block; the open block is "
				"the repeat of line %" PRIu32, in->line);
	if (in->either && in->items == 0)
		return tl_error(p, &p->tok[0], "an empty branch (each branch of the either of line "
				"%" PRIu32 " holds at least one expectation)", in->line);
	if (or) {
		in->branches++;
		in->items = 0;
		return append(p, LAB_T_OR, 0);
	}
	if (in->either && in->branches < 2)
		return tl_error(p, &p->tok[0], "the either of line %" PRIu32 " has one branch; "
				"give two or more ('} or {')", in->line);
	p->depth--;
	return append(p, LAB_T_END, 0);
}

bool tl_block(struct tl *p)
{
	if (p->t->version < 2)
		return tl_needs_v2(p, &p->tok[0]);
	if (tl_is(&p->tok[0], "repeat"))
		return open_repeat(p);
	if (tl_is(&p->tok[0], "either"))
		return open_either(p);
	return close_block(p);
}

bool tl_in_block(struct tl *p)
{
	struct tl_block *in = innermost(p);

	if (!in)
		return true;
	if (in->either && !tl_is(&p->tok[0], "expect"))
		return tl_error(p, &p->tok[0], "an either branch holds only expectations (the "
				"either of line %" PRIu32 ")", in->line);
	in->items++;
	return true;
}

bool tl_blocks_closed(struct tl *p)
{
	struct tl_block *in = innermost(p);

	if (!in)
		return true;
	p->line = in->line;
	return tl_error_at(p, 1, "the %s block opened on this line is never closed (a '}' on "
			   "its own line closes it)", in->either ? "either" : "repeat");
}

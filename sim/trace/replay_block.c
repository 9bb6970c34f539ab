/* SPDX-License-Identifier: MIT */
/* Replay, the statement loop with version 2's blocks (docs/trace-format.md, "Blocks"):
 * `repeat N { ... }` runs its body N times (a stack of open repeats, the AST is never
 * unrolled); `either { ... } or { ... }` tries its branches in order and holds at the first
 * branch whose expectations all hold. A branch that fails is undone before the next one:
 * the driver's reading position and the descriptors and ids the used elements it read gave
 * back (rp_used_save), so every branch sees the same rings. Nothing else can change under
 * an expectation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"
#include "trace_blocks.h"

/* Counts of what ran: a repeat can run more statements than 32 bits count; they stop at the
 * top rather than wrap. */
static void count_op(struct rp *r)
{
	if (r->res->ops_run < UINT32_MAX)
		r->res->ops_run++;
}

static void narrate_op(struct rp *r, const struct lab_trace_op *op)
{
	char text[256];

	if (!r->o->narrate)
		return;
	lab_trace_format_op(r->t, op, text, sizeof(text));
	rp_narrate(r, "%4u: %s\n", op->line, text);
}

/* Queues need a queue index; the rest (expect mem, dirty, logged) touch no driver state. */
static bool names_queue(enum lab_trace_kind k)
{
	return k != LAB_T_EXPECT_MEM && k != LAB_T_EXPECT_DIRTY && k != LAB_T_EXPECT_LOGGED;
}

static void free_snaps(struct rp_used_snap **snaps)
{
	for (uint32_t q = 0; q < LAB_TRACE_MAX_QUEUES; q++) {
		rp_used_snap_free(snaps[q]);
		snaps[q] = NULL;
	}
}

/* The either at ops[at], closed at ops[end]. */
static bool run_either(struct rp *r, rp_run_fn run, uint32_t at, uint32_t end)
{
	const struct lab_trace *t = r->t;
	struct rp_used_snap *snaps[LAB_TRACE_MAX_QUEUES] = {NULL};
	char why[sizeof(r->res->observed)];
	size_t wl = 0;
	uint32_t branch = 1, i = at + 1;

	why[0] = '\0';
	/* Save every queue a branch reads (an out-of-range queue is rp_check_op's error). */
	for (uint32_t j = at + 1; j < end; j++) {
		const struct lab_trace_op *op = &t->ops[j];

		if (op->kind == LAB_T_OR || !names_queue(op->kind) || op->queue >= t->nqueues ||
		    snaps[op->queue])
			continue;
		if (!(snaps[op->queue] = rp_used_save(&r->q[op->queue]))) {
			free_snaps(snaps);
			return rp_error(r, "error:memory", "out of memory");
		}
	}
	for (;;) {
		bool held = true;

		for (; i < end && t->ops[i].kind != LAB_T_OR; i++) {
			r->op = &t->ops[i];
			narrate_op(r, r->op);
			count_op(r);
			if (run(r, r->op))
				continue;
			if (r->res->status == LAB_REPLAY_ERROR) {   /* the trace cannot run */
				free_snaps(snaps);
				return false;
			}
			if (wl < sizeof(why))
				wl += (size_t)snprintf(why + wl, sizeof(why) - wl,
						       "%sbranch %u: line %u '%s': %s",
						       branch > 1 ? "; " : "", branch, r->op->line,
						       r->res->statement, r->res->observed);
			rp_narrate(r, "  -> branch %u does not hold: %s\n", branch,
				   r->res->observed);
			held = false;
			break;
		}
		if (held) {
			free_snaps(snaps);
			return true;
		}
		for (uint32_t q = 0; q < LAB_TRACE_MAX_QUEUES; q++)
			if (snaps[q])
				rp_used_restore(&r->q[q], snaps[q]);
		r->res->status = LAB_REPLAY_PASS;
		while (i < end && t->ops[i].kind != LAB_T_OR)
			i++;
		if (i == end)
			break;
		i++;        /* past `} or {` */
		branch++;
	}
	free_snaps(snaps);
	r->op = &t->ops[at];
	return rp_diverge(r, "either", "one branch to hold", "%s", why);
}

bool rp_run_ops(struct rp *r, rp_run_fn run)
{
	const struct lab_trace *t = r->t;
	struct {
		uint32_t body;     /* first statement of the body */
		uint32_t left;     /* runs still to start after this one */
	} loops[LAB_TRACE_MAX_DEPTH];
	uint32_t depth = 0, bad;
	const char *why;

	/* The parser guarantees this for text; a tool-built trace is checked once, here. */
	if (!lab_trace_blocks_check(t, &bad, &why)) {
		r->op = bad < t->nops ? &t->ops[bad] : NULL;
		return rp_error(r, "error:blocks", "%s", why);
	}
	for (uint32_t i = 0; i < t->nops;) {
		const struct lab_trace_op *op = &t->ops[i];

		r->op = op;
		narrate_op(r, op);
		count_op(r);
		switch (op->kind) {
		case LAB_T_REPEAT:
			/* Checked: count >= 1, depth < LAB_TRACE_MAX_DEPTH. */
			loops[depth].body = i + 1;
			loops[depth].left = (uint32_t)op->count - 1;
			depth++;
			i++;
			break;
		case LAB_T_END:   /* either blocks end inside run_either: a repeat's end */
			if (loops[depth - 1].left) {
				loops[depth - 1].left--;
				i = loops[depth - 1].body;
			} else {
				depth--;
				i++;
			}
			break;
		case LAB_T_EITHER: {
			uint32_t end = lab_trace_block_end(t, i);

			if (!run_either(r, run, i, end))
				return false;
			i = end + 1;
			break;
		}
		default:
			if (!run(r, op))
				return false;
			i++;
			break;
		}
	}
	return true;
}

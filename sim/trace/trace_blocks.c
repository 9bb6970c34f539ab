/* SPDX-License-Identifier: MIT */
/* The block structure of a trace's statements (trace_blocks.h). */
#include "trace_blocks.h"

bool lab_trace_kind_expect(enum lab_trace_kind k)
{
	return (k >= LAB_T_EXPECT_DEQUEUED && k <= LAB_T_EXPECT_DIRTY) ||
	       k == LAB_T_EXPECT_USED_SET || k == LAB_T_EXPECT_LOGGED;
}

static bool bad_at(uint32_t i, const char *msg, uint32_t *bad, const char **why)
{
	*bad = i;
	*why = msg;
	return false;
}

bool lab_trace_blocks_check(const struct lab_trace *t, uint32_t *bad, const char **why)
{
	struct {
		bool either;
		uint32_t branches, items;
	} open[LAB_TRACE_MAX_DEPTH];
	uint32_t depth = 0;

	for (uint32_t i = 0; i < t->nops; i++) {
		enum lab_trace_kind k = t->ops[i].kind;
		bool in_either = depth && open[depth - 1].either;

		switch (k) {
		case LAB_T_REPEAT:
		case LAB_T_EITHER:
			if (depth == LAB_TRACE_MAX_DEPTH)
				return bad_at(i, "blocks nest more than 8 deep", bad, why);
			if (in_either)
				return bad_at(i, "a block inside an either branch", bad, why);
			if (k == LAB_T_REPEAT &&
			    (t->ops[i].count < 1 || t->ops[i].count > LAB_TRACE_MAX_REPEAT))
				return bad_at(i, "a repeat count outside 1..1000000", bad, why);
			if (depth)
				open[depth - 1].items++;
			open[depth].either = k == LAB_T_EITHER;
			open[depth].branches = 1;
			open[depth].items = 0;
			depth++;
			break;
		case LAB_T_OR:
			if (!in_either)
				return bad_at(i, "'} or {' outside an either block", bad, why);
			if (open[depth - 1].items == 0)
				return bad_at(i, "an empty either branch", bad, why);
			open[depth - 1].branches++;
			open[depth - 1].items = 0;
			break;
		case LAB_T_END:
			if (!depth)
				return bad_at(i, "'}' closes no block", bad, why);
			if (in_either && open[depth - 1].items == 0)
				return bad_at(i, "an empty either branch", bad, why);
			if (in_either && open[depth - 1].branches < 2)
				return bad_at(i, "an either with one branch", bad, why);
			depth--;
			break;
		default:
			if (in_either && !lab_trace_kind_expect(k))
				return bad_at(i, "an either branch holds only expectations", bad, why);
			if (depth)
				open[depth - 1].items++;
			break;
		}
	}
	if (depth)
		return bad_at(t->nops, "a block is never closed", bad, why);
	return true;
}

uint32_t lab_trace_block_end(const struct lab_trace *t, uint32_t open)
{
	uint32_t depth = 0;

	for (uint32_t i = open; i < t->nops; i++) {
		enum lab_trace_kind k = t->ops[i].kind;

		if (k == LAB_T_REPEAT || k == LAB_T_EITHER)
			depth++;
		else if (k == LAB_T_END && --depth == 0)
			return i;
	}
	return t->nops;
}

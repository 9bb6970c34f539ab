/* SPDX-License-Identifier: MIT */
/* Unit tests for version 2 of the trace format (docs/trace-format.md): the block and
 * used-set errors with their line and column, v2 statements refused in a v1 trace, the
 * round trip of every v2 statement, and what replay makes of them: a repeat runs its body
 * N times, used-set matches in any order and as a multiset, a failed either branch is
 * undone before the next, `expect used` without id= wants an outstanding id, and
 * `expect broken QUEUE any`. Replays run in process against the lab core. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "trace/trace_blocks.h"
#include "trace/trace_replay.h"
#include "trace/trace_upgrade.h"

/* Five lines: statements after them start on line 6. One tx queue of 8 split descriptors;
 * a 12-byte zero header at 0x1000 and 100 payload bytes at 0x1100. */
#define V2 "vhostlab-trace 2\n"
#define SETUP_AFTER_HDR                      \
	"features version_1\n"               \
	"region 0x0 0x10000\n"               \
	"queue tx tx size=8 at=0x0\n"        \
	"fill 0x1000 12 zero\n"
#define SETUP V2 SETUP_AFTER_HDR
#define SETUP_V1 "vhostlab-trace 1\n" SETUP_AFTER_HDR
/* One chain of two descriptors (the header, then 100 bytes). */
#define POST "post tx 0x1000+12 0x1100+100\n"

static struct lab_trace T;

static void parse_ok(const char *text)
{
	char err[512] = "";

	if (!lab_trace_parse(&T, text, strlen(text), "t", err, sizeof(err)))
		fail_msg("unexpected parse error: %s", err);
}

static void parse_err(const char *text, unsigned line, unsigned col, const char *what)
{
	char err[512] = "", prefix[32];
	struct lab_trace t;

	if (lab_trace_parse(&t, text, strlen(text), "t", err, sizeof(err)))
		fail_msg("parsed, expected an error at %u:%u (%s):\n%s", line, col, what, text);
	snprintf(prefix, sizeof(prefix), "t:%u:%u: ", line, col);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, what))
		fail_msg("expected \"%s...%s...\", got \"%s\"", prefix, what, err);
	assert_int_equal(t.nops, 0);
	lab_trace_free(&t);
}

static int teardown(void **state)
{
	(void)state;
	lab_trace_free(&T);
	return 0;
}

/* Replay `text`; the status, and the result for the caller to look at. */
static enum lab_replay_status replay(const char *text, struct lab_replay_result *res)
{
	struct lab_replay_opts o = {.hooks = true};

	lab_trace_free(&T);
	parse_ok(text);
	return lab_replay_run(&T, &o, res);
}

static void replay_pass(const char *text)
{
	struct lab_replay_result res;

	if (replay(text, &res) != LAB_REPLAY_PASS)
		fail_msg("line %u '%s': expected %s, observed %s (%s)", res.line, res.statement,
			 res.expected, res.observed, res.signature);
}

/* The replay diverges at `line` with signature `sig`; returns the observed text. */
static const char *replay_diverge(const char *text, unsigned line, const char *sig)
{
	static struct lab_replay_result res;

	if (replay(text, &res) != LAB_REPLAY_DIVERGED)
		fail_msg("expected a divergence at line %u (%s), got status %d: %s", line, sig,
			 (int)res.status, res.observed);
	if (res.line != line || strcmp(res.signature, sig) != 0)
		fail_msg("expected line %u %s, got line %u %s: %s", line, sig, res.line,
			 res.signature, res.observed);
	return res.observed;
}

/* ---- parse errors ------------------------------------------------------------------- */

static void test_errors_blocks(void **state)
{
	(void)state;
	/* Unbalanced: the error names the line of the open block (the innermost). */
	parse_err(SETUP "repeat 2 {\n" POST "repeat 3 {\nkick tx\n}\n", 6, 1,
		  "repeat block opened on this line is never closed");
	parse_err(SETUP "either {\nexpect used tx none\n} or {\nexpect broken tx any\n", 6, 1,
		  "either block opened on this line is never closed");
	parse_err(SETUP "kick tx\n}\n", 7, 1, "closes no block");
	/* An action inside an either branch, in the first and in a later branch. */
	parse_err(SETUP "either {\n" POST "} or {\nexpect used tx none\n}\n", 7, 1,
		  "holds only expectations (the either of line 6)");
	parse_err(SETUP "either {\nexpect used tx none\n} or {\ndequeue tx 1\n}\n", 9, 1,
		  "holds only expectations");
	/* No block inside an either; one branch; an empty branch; or after a repeat. */
	parse_err(SETUP "either {\nexpect used tx none\n} or {\neither {\n", 9, 1,
		  "holds only expectations");
	parse_err(SETUP "either {\nexpect used tx none\n}\n", 8, 1, "has one branch");
	parse_err(SETUP "either {\n} or {\nexpect used tx none\n}\n", 7, 1, "an empty branch");
	parse_err(SETUP "repeat 2 {\n} or {\n", 7, 3, "the open block is the repeat of line 6");
	/* repeat's count: 1 to 1000000, and the brace on its line. */
	parse_err(SETUP "repeat 0 {\n}\n", 6, 8, "out of range");
	parse_err(SETUP "repeat 1000001 {\n}\n", 6, 8, "out of range");
	parse_err(SETUP "repeat 2\n{\n", 6, 1, "expected: repeat N {");
	parse_err(SETUP "} else {\n", 6, 3, "only 'or {' may follow");
	/* Nine open blocks: the ninth is refused, naming the outermost. */
	parse_err(SETUP "repeat 2 {\nrepeat 2 {\nrepeat 2 {\nrepeat 2 {\nrepeat 2 {\n"
		  "repeat 2 {\nrepeat 2 {\nrepeat 2 {\nrepeat 2 {\n", 14, 1,
		  "nest at most 8 deep (the outermost open one is on line 6)");
	/* A setup statement after a block (a block is where the statements start). */
	parse_err(SETUP "repeat 2 {\nseed 3\n}\n", 7, 1, "setup statements come before");
}

static void test_errors_used_set(void **state)
{
	(void)state;
	parse_err(SETUP "expect used-set tx\n", 6, 1, "missing argument");
	parse_err(SETUP "expect used-set tx len=3\n", 6, 20, "an item needs id=ID");
	parse_err(SETUP "expect used-set tx id=1,id=2\n", 6, 25, "id= given twice");
	parse_err(SETUP "expect used-set tx id=1,ln=2\n", 6, 25, "not a used-set field");
	parse_err(SETUP "expect used-set tx id=65536\n", 6, 20, "out of range");
	parse_err(SETUP "expect used-set tx id=1 7\n", 6, 25, "not a used-set field");
	parse_err(SETUP "expect used-set nq id=1\n", 6, 17, "");
	parse_err(SETUP "expect broken tx anything\n", 6, 18, "expected no or a drop reason");
}

static void test_errors_v2_in_v1(void **state)
{
	(void)state;
	parse_err(SETUP_V1 "repeat 2 {\n}\n", 6, 1, "'repeat': needs version 2");
	parse_err(SETUP_V1 "either {\n", 6, 1, "'either': needs version 2");
	parse_err(SETUP_V1 "}\n", 6, 1, "'}': needs version 2");
	parse_err(SETUP_V1 "expect used-set tx id=1\n", 6, 8, "'used-set': needs version 2");
	parse_err(SETUP_V1 "expect broken tx any\n", 6, 18, "'any': needs version 2");
	parse_err(SETUP_V1 "expect used tx id=1\n", 6, 1, "missing len= (optional only in "
		  "version 2)");
	parse_err(SETUP_V1 "expect used tx\n", 6, 1, "missing id=");
	parse_err("vhostlab-trace 3\n", 1, 16, "reads versions 1 to 2");
	parse_err("vhostlab-trace 0\n", 1, 16, "reads versions 1 to 2");
}

/* ---- round trip ---------------------------------------------------------------------- */

static const char rich_v2[] =
	SETUP
	"repeat 1000000 {\n"
	"  post tx 0x1000+12 0x1100+100\n"
	"  repeat 1 {\n"
	"    kick tx\n"
	"    either {\n"
	"      expect used tx id=0 len=0\n"
	"      expect mem 0x1000 12 zero\n"
	"    } or {\n"
	"      expect broken tx any\n"
	"    } or {\n"
	"      expect used tx\n"
	"    }\n"
	"  }\n"
	"  dequeue tx 1\n"
	"}\n"
	"message get-vring-base tx\n"
	"message get-vring-base tx expect=0x40004\n"
	"message vring-enable tx 0\n"
	"message vring-setup tx base=0xfffe\n"
	"message get-features\n"
	"message get-features expect=deps\n"
	"message log-start pages=16\n"
	"expect logged 0x1000 0x2001\n"
	"expect used tx id=7\n"
	"expect used tx len=3\n"
	"expect used tx none\n"
	"expect used-set tx id=0 id=1,len=0 id=1,len=0 id=65535,len=4294967295\n"
	"expect broken tx no\n";

static void test_round_trip(void **state)
{
	bool seen[LAB_T__KIND_COUNT] = {false};
	struct lab_trace u;
	char err[512] = "";
	size_t n;
	char *out;

	(void)state;
	parse_ok(rich_v2);
	assert_int_equal(T.version, 2);
	out = lab_trace_format(&T, &n);
	assert_non_null(out);
	assert_string_equal(out, rich_v2);   /* canonical: indentation, field order */
	assert_true(lab_trace_parse(&u, out, n, "fmt", err, sizeof(err)));
	assert_true(lab_trace_equal(&T, &u));
	free(out);
	/* The fields of the new statements take part in the comparison. */
	for (uint32_t i = 0; i < u.nops; i++) {
		struct lab_trace_op *op = &u.ops[i];

		seen[op->kind] = true;
		if (op->kind == LAB_T_REPEAT) {
			op->count--;
			assert_false(lab_trace_equal(&T, &u));
			op->count++;
		} else if (op->kind == LAB_T_EXPECT_USED_SET) {
			op->used[2].len++;
			assert_false(lab_trace_equal(&T, &u));
			op->used[2].len--;
			op->used[0].has_len = true;
			assert_false(lab_trace_equal(&T, &u));
			op->used[0].has_len = false;
		} else if (op->kind == LAB_T_MESSAGE) {
			/* The number is a field where the message carries one; expect= is. */
			bool counts = op->value == LAB_TRACE_MSG_VRING_ENABLE ||
				      op->value == LAB_TRACE_MSG_VRING_SETUP ||
				      op->value == LAB_TRACE_MSG_LOG_START ||
				      (op->value == LAB_TRACE_MSG_GET_VRING_BASE &&
				       (op->given & LAB_TA_EXPECT));

			op->count++;
			assert_int_equal(lab_trace_equal(&T, &u), !counts);
			op->count--;
			op->given ^= LAB_TA_EXPECT;
			assert_false(lab_trace_equal(&T, &u));
			op->given ^= LAB_TA_EXPECT;
			op->value = (op->value + 1) % LAB_TRACE_NMSGS;
			assert_false(lab_trace_equal(&T, &u));
			op->value = (op->value + LAB_TRACE_NMSGS - 1) % LAB_TRACE_NMSGS;
		} else if (op->kind == LAB_T_EXPECT_LOGGED) {
			/* Both the address and the length are fields. */
			op->len++;
			assert_false(lab_trace_equal(&T, &u));
			op->len--;
			op->addr++;
			assert_false(lab_trace_equal(&T, &u));
			op->addr--;
		} else if (op->kind == LAB_T_EXPECT_USED && (op->given & LAB_TA_LEN) &&
			   (op->given & LAB_TA_ID)) {
			op->given &= ~(uint32_t)LAB_TA_LEN;
			assert_false(lab_trace_equal(&T, &u));
			op->given |= LAB_TA_LEN;
		}
	}
	assert_true(lab_trace_equal(&T, &u));
	lab_trace_free(&u);
	for (unsigned k = LAB_T_REPEAT; k < LAB_T__KIND_COUNT; k++)
		if (!seen[k])
			fail_msg("no %s in rich_v2", lab_trace_kind_name(k));
	/* The fields parsed. */
	assert_int_equal(T.ops[1].kind, LAB_T_REPEAT);
	assert_int_equal(T.ops[1].count, 1000000);
	{
		const struct lab_trace_op *us = &T.ops[T.nops - 2];

		assert_int_equal(us->kind, LAB_T_EXPECT_USED_SET);
		assert_int_equal(us->nitems, 4);
		assert_true(us->used[0].id == 0 && !us->used[0].has_len);
		assert_true(us->used[3].id == 65535 && us->used[3].has_len &&
			    us->used[3].len == 4294967295u);
	}
}

/* A v1 trace stays v1 when written back (the writer writes the trace's version). */
static void test_v1_kept(void **state)
{
	char *out;

	(void)state;
	parse_ok(SETUP_V1 "expect used tx id=1 len=2\n");
	assert_int_equal(T.version, 1);
	out = lab_trace_format(&T, NULL);
	assert_non_null(out);
	assert_string_equal(out, SETUP_V1 "expect used tx id=1 len=2\n");
	free(out);
}

/* ---- structure of tool-built traces ------------------------------------------------- */

static void test_blocks_check(void **state)
{
	struct lab_trace t;
	struct lab_trace_op op;
	uint32_t bad;
	const char *why;

	(void)state;
	lab_trace_init(&t);
	memset(&op, 0, sizeof(op));
	op.kind = LAB_T_REPEAT;
	op.count = 2;
	assert_non_null(lab_trace_append(&t, &op));
	assert_false(lab_trace_blocks_check(&t, &bad, &why));
	assert_int_equal(bad, 1);
	assert_string_equal(why, "a block is never closed");
	op.kind = LAB_T_END;
	assert_non_null(lab_trace_append(&t, &op));
	assert_true(lab_trace_blocks_check(&t, &bad, &why));
	assert_int_equal(lab_trace_block_end(&t, 0), 1);
	t.ops[0].count = 0;
	assert_false(lab_trace_blocks_check(&t, &bad, &why));
	assert_int_equal(bad, 0);
	/* A tool-built trace with a bad block is a replay error, not a crash. */
	{
		struct lab_replay_result res;
		struct lab_replay_opts o = {.hooks = true};

		t.regions[t.nregions++] = (struct lab_trace_region){0, 0x10000, 0};
		assert_int_equal(lab_replay_run(&t, &o, &res), LAB_REPLAY_ERROR);
		assert_string_equal(res.signature, "error:blocks");
	}
	lab_trace_free(&t);
}

/* ---- replay ------------------------------------------------------------------------ */

/* The body runs exactly N times: counted by packets, the used ring, and statements. */
static void test_replay_repeat(void **state)
{
	struct lab_replay_result res;

	(void)state;
	replay_pass(SETUP "repeat 5 {\n  repeat 3 {\n    " POST "    kick tx\n"
		    "    dequeue tx 4\n    expect dequeued tx 1\n    expect used tx id=0 len=0\n"
		    "  }\n}\nexpect stat tx packets 15\nexpect used tx none\n");
	assert_int_equal(replay(SETUP "repeat 5 {\n  " POST "  kick tx\n  dequeue tx 4\n"
				"  expect used tx id=0 len=0\n}\n", &res), LAB_REPLAY_PASS);
	assert_int_equal(res.packets_dequeued, 5);
	/* Statements run: the fill, `repeat` once, and five passes of the four-statement body
	 * and its `}`; one expectation a pass. */
	assert_int_equal(res.ops_run, 1 + 1 + 5 * 5);
	assert_int_equal(res.expectations, 5);
	/* One more packet than the repeat makes is a divergence after the block. */
	replay_diverge(SETUP "repeat 4 {\n  " POST "  kick tx\n  dequeue tx 4\n"
		       "  expect used tx id=0 len=0\n}\nexpect stat tx packets 5\n", 12,
		       "expect stat");
	/* A divergence inside the body stops the run at that line, in the iteration it
	 * happened: the ring has 8 descriptors, so the fifth post without reading used
	 * elements runs out of them (an error at the post line). */
	assert_int_equal(replay(SETUP "repeat 5 {\n  " POST "  kick tx\n  dequeue tx 4\n}\n",
				&res), LAB_REPLAY_ERROR);
	assert_int_equal(res.line, 7);
	assert_string_equal(res.signature, "error:post");
	assert_int_equal(res.packets_dequeued, 4);
}

/* Three chains at heads 0, 2, 4 (two descriptors each), dequeued together. */
#define THREE POST POST POST "kick tx\ndequeue tx 8\nexpect dequeued tx 3\n"

static void test_replay_used_set(void **state)
{
	const char *obs;

	(void)state;
	replay_pass(SETUP THREE "expect used-set tx id=4 id=0,len=0 id=2\nexpect used tx none\n");
	replay_pass(SETUP THREE "expect used-set tx id=2,len=0 id=4 id=0\n");
	/* Only the first K: the third stays for the next expectation. */
	replay_pass(SETUP THREE "expect used-set tx id=2 id=0\nexpect used tx id=4 len=0\n");
	/* Multiset: the same id twice needs two elements with it. */
	obs = replay_diverge(SETUP THREE "expect used-set tx id=0 id=0 id=2\n", 12,
			     "expect used-set:unexpected");
	assert_non_null(strstr(obs, "element 3 of the set is not in it: id 0 len 0, id 2 len 0, "
			       "id 4 len 0"));
	/* A len that differs; more items than used elements. */
	replay_diverge(SETUP THREE "expect used-set tx id=0 id=2,len=1 id=4\n", 12,
		       "expect used-set:unexpected");
	obs = replay_diverge(SETUP THREE "expect used-set tx id=0 id=2 id=4 id=6\n", 12,
			     "expect used-set:missing");
	assert_non_null(strstr(obs, "3 of 4 used elements"));
	/* Multiset, and an item without len= kept for last: the used ring is written by hand
	 * (the used ring of this queue is at 0x98: flags, idx, then 8-byte elements) with two
	 * elements of id 1, lengths 5 then 0. (1, 5) takes the exact item first, so the item
	 * without a length is left for (1, 0); taking it for (1, 5) would leave id=1,len=5
	 * unmatched. */
	replay_pass(SETUP "write 0x98 0000020001000000050000000100000000000000\n"
		    "expect used-set tx id=1 id=1,len=5\nexpect used tx none\n");
	replay_diverge(SETUP "write 0x98 0000020001000000050000000100000000000000\n"
		       "expect used-set tx id=1,len=5 id=1,len=5\n", 7,
		       "expect used-set:unexpected");
}

static void test_replay_either(void **state)
{
	const char *obs;

	(void)state;
	/* The first branch reads two elements and fails on the second: undone, so the second
	 * branch reads from the first element again. */
	replay_pass(SETUP THREE "either {\n  expect used tx id=0 len=0\n  expect used tx id=4\n"
		    "} or {\n  expect used tx id=0\n  expect used tx id=2\n  expect used tx id=4\n"
		    "}\nexpect used tx none\n");
	/* The same, the descriptors the failed branch gave back are busy again: a post after
	 * the either takes the lowest free descriptors, 6 and 7, as without the either. */
	replay_pass(SETUP THREE "either {\n  expect used-set tx id=0 id=2 id=4\n"
		    "  expect broken tx any\n} or {\n  expect broken tx no\n}\n" POST
		    "kick tx\ndequeue tx 8\nexpect used tx id=0\nexpect used tx id=2\n"
		    "expect used tx id=4\nexpect used tx id=6\n");
	/* The first branch that holds wins; the later ones are not run. */
	replay_pass(SETUP THREE "either {\n  expect used tx id=0\n} or {\n  expect used tx id=2\n"
		    "}\nexpect used tx id=2\n");
	/* No branch holds: the divergence is at the either and names each branch. */
	obs = replay_diverge(SETUP THREE "either {\n  expect used tx id=2\n} or {\n"
			     "  expect broken tx any\n} or {\n  expect used tx id=0 len=9\n}\n",
			     12, "either");
	assert_non_null(strstr(obs, "branch 1: line 13 'expect used tx id=2': id 0 len 0; "));
	assert_non_null(strstr(obs, "branch 2: line 15 'expect broken tx any': not broken; "));
	assert_non_null(strstr(obs, "branch 3: line 17 'expect used tx id=0 len=9': id 0 len 0"));
	/* Inside a repeat, each iteration chooses again. */
	replay_pass(SETUP "repeat 6 {\n  " POST "  kick tx\n  dequeue tx 4\n  either {\n"
		    "    expect used tx id=2\n  } or {\n    expect used tx id=0 len=0\n  }\n}\n");
}

static void test_replay_used_without_id(void **state)
{
	const char *obs;

	(void)state;
	replay_pass(SETUP THREE "expect used tx\nexpect used tx len=0\nexpect used tx\n"
		    "expect used tx none\n");
	replay_diverge(SETUP THREE "expect used tx len=5\n", 12, "expect used:len");
	/* A used element whose id the guest never made available: the guest writes the used
	 * ring itself (at 0x98, as a device would) with one element of head 3, never posted.
	 * With id= it is what was asked for; without, it is not outstanding. */
	replay_pass(SETUP "write 0x98 000001000300000000000000\nexpect used tx id=3 len=0\n");
	obs = replay_diverge(SETUP "write 0x98 000001000300000000000000\nexpect used tx\n", 7,
			     "expect used:id");
	assert_non_null(strstr(obs, "id 3 len 0 (not an id the guest has outstanding)"));
	/* A head given back twice: outstanding once only. */
	replay_diverge(SETUP POST "kick tx\ndequeue tx 8\nexpect used tx\n"
		       "write 0x9a 0200\nexpect used tx\n", 11, "expect used:id");
}

static void test_replay_broken_any(void **state)
{
	(void)state;
	/* An avail index 100 ahead of the ring: broken (avail_idx_jump). */
	replay_pass(SETUP "kick tx idx=100\ndequeue tx 8\nexpect broken tx any\n"
		    "expect broken tx avail_idx_jump\n");
	replay_diverge(SETUP THREE "expect broken tx any\n", 12, "expect broken");
	/* either: what the spec leaves to the device, one form of the trace for both. */
	replay_pass(SETUP "kick tx idx=100\ndequeue tx 8\neither {\n  expect used tx id=0\n"
		    "} or {\n  expect broken tx any\n}\n");
}

/* Which statements mean the same over a socket (docs/trace-format.md, "Portability"). */
static void test_portable(void **state)
{
	static const struct {
		enum lab_trace_kind kind;
		uint32_t given;
		bool portable;
	} cases[] = {
		{LAB_T_WRITE, 0, true}, {LAB_T_FILL, 0, true}, {LAB_T_DESC, 0, true},
		{LAB_T_PDESC, 0, true}, {LAB_T_IDESC, 0, true}, {LAB_T_AVAIL, 0, true},
		{LAB_T_KICK, 0, true}, {LAB_T_POST, 0, true}, {LAB_T_MUTATE, 0, false},
		{LAB_T_DOUBLE_FETCH, 0, false}, {LAB_T_FAULT, 0, false}, {LAB_T_DEQUEUE, 0, true},
		{LAB_T_DISCARD, 0, true}, {LAB_T_FREE, 0, false}, {LAB_T_COMPLETE, 0, false},
		{LAB_T_ENQUEUE, 0, false}, {LAB_T_KICKS, 0, false}, {LAB_T_SET, 0, false},
		{LAB_T_REMAP, 0, true}, {LAB_T_EXPECT_DEQUEUED, 0, false},
		{LAB_T_EXPECT_PACKET, 0, false}, {LAB_T_EXPECT_ENQUEUED, 0, false},
		{LAB_T_EXPECT_STATUS, 0, false}, {LAB_T_EXPECT_USED, 0, true},
		{LAB_T_EXPECT_USED, LAB_TA_NONE, true}, {LAB_T_EXPECT_MEM, 0, true},
		{LAB_T_EXPECT_STAT, 0, false}, {LAB_T_EXPECT_BROKEN, 0, false},
		{LAB_T_EXPECT_BROKEN, LAB_TA_ANY, true}, {LAB_T_EXPECT_BROKEN, LAB_TA_NONE, true},
		{LAB_T_EXPECT_CALL, 0, false}, {LAB_T_EXPECT_HELD, 0, false},
		{LAB_T_EXPECT_DIRTY, 0, false}, {LAB_T_REPEAT, 0, true}, {LAB_T_END, 0, true},
		{LAB_T_EITHER, 0, true}, {LAB_T_OR, 0, true}, {LAB_T_EXPECT_USED_SET, 0, true},
		{LAB_T_MESSAGE, 0, true}, {LAB_T_EXPECT_LOGGED, 0, true},
	};
	bool seen[LAB_T__KIND_COUNT] = {false};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lab_trace_op op = {.kind = cases[i].kind, .given = cases[i].given};

		if (lab_trace_op_portable(&op) != cases[i].portable)
			fail_msg("%s (given 0x%x): portable should be %d",
				 lab_trace_kind_name(op.kind), cases[i].given, cases[i].portable);
		seen[op.kind] = true;
	}
	for (unsigned k = 0; k < LAB_T__KIND_COUNT; k++)
		if (!seen[k])
			fail_msg("%s not classified here", lab_trace_kind_name(k));
}

/* trace upgrade's folding: nested groups, and no fold where it would not be shorter. */
static void test_upgrade_folds(void **state)
{
	struct lab_trace_upgrade_stats st;
	char *out;

	(void)state;
	/* (post, 4 kicks, dequeue) three times: the six-statement group saves 2 * 6 - 2 lines;
	 * inside it the four kicks save 3 - 2. Three kicks in a row would save 2 - 2: kept. */
	parse_ok(SETUP_V1 "post tx 0x1000+12\nkick tx\nkick tx\nkick tx\nkick tx\ndequeue tx 8\n"
		 "post tx 0x1000+12\nkick tx\nkick tx\nkick tx\nkick tx\ndequeue tx 8\n"
		 "post tx 0x1000+12\nkick tx\nkick tx\nkick tx\nkick tx\ndequeue tx 8\n"
		 "kick tx\nkick tx\nkick tx\n");
	assert_true(lab_trace_upgrade(&T, &st));
	assert_int_equal(st.ops_before, 22);
	assert_int_equal(st.repeats, 2);
	out = lab_trace_format(&T, NULL);
	assert_non_null(out);
	assert_string_equal(out, SETUP "repeat 3 {\n  post tx 0x1000+12\n  repeat 4 {\n"
			    "    kick tx\n  }\n  dequeue tx 8\n}\nkick tx\nkick tx\nkick tx\n");
	assert_int_equal(st.ops_after, T.nops);
	assert_int_equal(T.nops, 11);
	free(out);
	/* A flat version 2 trace (a recording) folds too; one with a block keeps its
	 * statements. */
	lab_trace_free(&T);
	parse_ok(SETUP "kick tx\nkick tx\nkick tx\nkick tx\n");
	assert_true(lab_trace_upgrade(&T, &st));
	assert_int_equal(st.repeats, 1);
	assert_int_equal(T.nops, 4);
	lab_trace_free(&T);
	parse_ok(SETUP "repeat 1 {\n}\nkick tx\nkick tx\nkick tx\nkick tx\n");
	assert_true(lab_trace_upgrade(&T, &st));
	assert_int_equal(st.repeats, 0);
	assert_int_equal(T.nops, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors_blocks),
		cmocka_unit_test(test_errors_used_set),
		cmocka_unit_test(test_errors_v2_in_v1),
		cmocka_unit_test_teardown(test_round_trip, teardown),
		cmocka_unit_test_teardown(test_v1_kept, teardown),
		cmocka_unit_test(test_blocks_check),
		cmocka_unit_test_teardown(test_replay_repeat, teardown),
		cmocka_unit_test_teardown(test_replay_used_set, teardown),
		cmocka_unit_test_teardown(test_replay_either, teardown),
		cmocka_unit_test_teardown(test_replay_used_without_id, teardown),
		cmocka_unit_test_teardown(test_replay_broken_any, teardown),
		cmocka_unit_test(test_portable),
		cmocka_unit_test_teardown(test_upgrade_folds, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

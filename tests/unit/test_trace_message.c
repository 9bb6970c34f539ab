/* SPDX-License-Identifier: MIT */
/* Unit tests for what `vhostlab probe --record` added to version 2 of the trace format
 * (docs/trace-format.md): the `message` statements (parse errors with line and column,
 * a trace of messages alone without any queue,
 * refused in version 1 and inside an either branch; carried out in process through the
 * core's own vhost-user device), and the packed in-order reading of a used descriptor that
 * folds a batch: every buffer of the batch is an element of its own, in posting order, the
 * last with the descriptor's length, however the device folded it (an either branch that
 * read part of a batch is undone). The round trip of the messages is test_trace_v2's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace.h"
#include "trace/trace_replay.h"

/* Four lines: statements after them start on line 5. */
#define SETUP_AFTER_HDR                      \
	"features version_1\n"               \
	"region 0x0 0x10000\n"               \
	"queue tx tx size=8 at=0x0\n"
#define SETUP "vhostlab-trace 2\n" SETUP_AFTER_HDR
#define SETUP_V1 "vhostlab-trace 1\n" SETUP_AFTER_HDR

static struct lab_trace T;

static void parse_err(const char *text, unsigned line, unsigned col, const char *what)
{
	char err[512] = "", prefix[32];
	struct lab_trace t;

	if (lab_trace_parse(&t, text, strlen(text), "t", err, sizeof(err)))
		fail_msg("parsed, expected an error at %u:%u (%s):\n%s", line, col, what, text);
	snprintf(prefix, sizeof(prefix), "t:%u:%u: ", line, col);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, what))
		fail_msg("expected \"%s...%s...\", got \"%s\"", prefix, what, err);
	lab_trace_free(&t);
}

static enum lab_replay_status replay(const char *text, struct lab_replay_result *res)
{
	struct lab_replay_opts o = {.hooks = true};
	char err[512] = "";

	lab_trace_free(&T);
	if (!lab_trace_parse(&T, text, strlen(text), "t", err, sizeof(err)))
		fail_msg("unexpected parse error: %s", err);
	return lab_replay_run(&T, &o, res);
}

static int teardown(void **state)
{
	(void)state;
	lab_trace_free(&T);
	return 0;
}

/* ---- message: parsing --------------------------------------------------------------- */

static void test_message_errors(void **state)
{
	(void)state;
	parse_err(SETUP_V1 "message vring-enable tx 0\n", 5, 1, "'message': needs version 2");
	parse_err(SETUP "message\n", 5, 1, "missing the message");
	parse_err(SETUP "message get-status tx\n", 5, 9, "get-status");
	parse_err(SETUP "message vring-enable tx 2\n", 5, 25, "2");
	parse_err(SETUP "message vring-enable tx\n", 5, 1, "message vring-enable QUEUE 0|1");
	parse_err(SETUP "message vring-enable rx 1\n", 5, 22, "rx");
	parse_err(SETUP "message vring-setup tx\n", 5, 1, "base=");
	parse_err(SETUP "message get-vring-base tx expect=0x100000000\n", 5, 27, "0x100000000");
	parse_err(SETUP "message get-vring-base tx base=1\n", 5, 27, "base");
	/* get-features names no queue; its one expectation is the dependency rule. */
	parse_err(SETUP "message get-features tx\n", 5, 22, "message get-features [expect=deps]");
	parse_err(SETUP "message get-features expect=all\n", 5, 22, "all");
	/* A message is an action: not inside an either branch (expectations only). */
	parse_err(SETUP "either {\nmessage vring-enable tx 1\n} or {\nexpect used tx none\n}\n",
		  6, 1, "message");
}

/* ---- message: in process, through the core's vhost-user device -------------------------- */

static void test_message_in_process(void **state)
{
	struct lab_replay_result res;

	(void)state;
	/* GET_VRING_BASE stops the core's ring and answers where it stopped (split: the next
	 * avail index); a chain posted then stays unused until the ring is set up again at
	 * that base; a disabled ring is not run either. Nothing is skipped. */
	enum lab_replay_status st = replay(SETUP "fill 0x1000 12 zero\n"
					   "post tx 0x1000+12 0x1100+100\n"
					   "kick tx\ndequeue tx 8\nexpect dequeued tx 1\n"
					   "message get-vring-base tx expect=0x1\n"
					   "post tx 0x1000+12 0x1100+100\nkick tx\n"
					   "dequeue tx 8\nexpect dequeued tx 0\n"
					   "expect used tx id=0 len=0\nexpect used tx none\n"
					   "message vring-setup tx base=1\n"
					   "dequeue tx 8\nexpect dequeued tx 1\n"
					   "expect used tx id=2 len=0\n"
					   "message vring-enable tx 0\n"
					   "post tx 0x1000+12 0x1100+100\nkick tx\n"
					   "dequeue tx 8\nexpect used tx none\n"
					   "message vring-enable tx 1\n"
					   "dequeue tx 8\nexpect used tx id=0 len=0\n", &res);

	assert_int_equal(st, LAB_REPLAY_PASS);
	assert_int_equal(res.skipped, 0);
	assert_int_equal(res.expectations, 9);   /* expect=0x1 among them */
	assert_int_equal(res.packets_dequeued, 3);
	/* The core's answer is what expect= is checked against. */
	st = replay(SETUP "message get-vring-base tx expect=0x5\n", &res);
	assert_int_equal(st, LAB_REPLAY_DIVERGED);
	assert_int_equal(res.line, 5);
	assert_string_equal(res.signature, "message get-vring-base");
	assert_non_null(strstr(res.observed, "returned 0x0"));
	/* What `probe --record` writes for a case without rings: no queue at all. */
	st = replay("vhostlab-trace 2\nfeatures version_1\nregion 0x0 0x1000\n"
		    "message get-features expect=deps\n", &res);
	assert_int_equal(st, LAB_REPLAY_PASS);
	assert_int_equal(T.nqueues, 0);
	assert_int_equal(res.skipped, 0);
	assert_int_equal(res.expectations, 1);
}

/* ---- the dirty log: log-start and expect logged ---------------------------------------- */

static void test_log_parse_errors(void **state)
{
	(void)state;
	parse_err(SETUP "message log-start\n", 5, 1, "pages=");
	parse_err(SETUP "message log-start pages=0\n", 5, 19, "0");
	parse_err(SETUP "message log-start tx pages=1\n", 5, 19, "message log-start pages=N");
	parse_err(SETUP "expect logged 0x0 1\n", 5, 1, "needs a 'message log-start pages=N'");
	parse_err(SETUP "message log-start pages=2\nexpect logged 0x1000 0x1001\n", 6, 15,
		  "beyond the 2 pages");
	parse_err(SETUP "message log-start pages=2\nexpect logged 0x0 0\n", 6, 19, "0");
	parse_err(SETUP "message log-start pages=2\nexpect logged 0x0\n", 6, 1,
		  "expect logged GPA LEN");
	parse_err(SETUP_V1 "expect logged 0x0 1\n", 5, 1, "needs version 2");
	parse_err(SETUP "dirty-log pages=2\nmessage log-start pages=2\n", 6, 1,
		  "the setup has 'dirty-log' already");
}

/* The used ring of `queue tx tx size=8 at=0x0` is at 0x80, page 0; the buffers on page 1. */
#define LOG_TRAFFIC                                  \
	"message log-start pages=16\n"               \
	"fill 0x1000 12 zero\n"                      \
	"post tx 0x1000+12 0x1100+100\n"             \
	"kick tx\ndequeue tx 8\nexpect used tx id=0 len=0\n"

static void test_log_in_process(void **state)
{
	struct lab_replay_result res;

	(void)state;
	/* The core marks the page of the used element it wrote, in the log the trace shared. */
	assert_int_equal(replay(SETUP LOG_TRAFFIC "expect logged 0x80 8\n", &res),
			 LAB_REPLAY_PASS);
	assert_int_equal(res.expectations, 2);
	assert_int_equal(res.skipped, 0);
	/* A page nobody wrote: the divergence names it and how many are marked. */
	assert_int_equal(replay(SETUP LOG_TRAFFIC "expect logged 0x80 0x5000\n", &res),
			 LAB_REPLAY_DIVERGED);
	assert_int_equal(res.line, 11);
	assert_string_equal(res.signature, "expect logged");
	assert_non_null(strstr(res.observed, "guest page 1 (gpa 0x1000) is not marked"));
	assert_non_null(strstr(res.observed, "1 of its 16 pages are"));
	/* A second log-start shares a fresh, empty log. */
	assert_int_equal(replay(SETUP LOG_TRAFFIC "message log-start pages=16\n"
				"expect logged 0x80 8\n", &res), LAB_REPLAY_DIVERGED);
	assert_int_equal(res.line, 12);
}

/* A statement built by a tool is not parsed: the replay checks what the parser would. */
static void test_log_tool_built(void **state)
{
	struct lab_replay_opts o = {.hooks = true};
	struct lab_replay_result res;
	char err[512] = "";
	const char *text = SETUP LOG_TRAFFIC "expect logged 0x80 8\n";

	(void)state;
	lab_trace_free(&T);
	assert_true(lab_trace_parse(&T, text, strlen(text), "t", err, sizeof(err)));
	/* Beyond the log: a divergence, not a read past the bitmap. */
	T.ops[T.nops - 1].addr = 16 * 4096;
	assert_int_equal(lab_replay_run(&T, &o, &res), LAB_REPLAY_DIVERGED);
	assert_string_equal(res.signature, "expect logged:range");
	assert_non_null(strstr(res.observed, "beyond the 16 pages"));
	/* A range that wraps the address space. */
	T.ops[T.nops - 1].addr = UINT64_MAX;
	assert_int_equal(lab_replay_run(&T, &o, &res), LAB_REPLAY_ERROR);
	assert_string_equal(res.signature, "error:log");
	/* No log-start before it (the first statement made something else). */
	T.ops[T.nops - 1].addr = 0x80;
	T.ops[0].value = LAB_TRACE_MSG_VRING_ENABLE;
	T.ops[0].count = 1;
	assert_int_equal(lab_replay_run(&T, &o, &res), LAB_REPLAY_ERROR);
	assert_string_equal(res.signature, "error:log");
	/* A message kind past the table, and a queue the trace does not have. */
	T.ops[0].value = LAB_TRACE_NMSGS;
	assert_int_equal(lab_replay_run(&T, &o, &res), LAB_REPLAY_ERROR);
	assert_string_equal(res.signature, "error:internal");
	T.ops[0].value = LAB_TRACE_MSG_VRING_ENABLE;
	T.ops[0].queue = 1;
	assert_int_equal(lab_replay_run(&T, &o, &res), LAB_REPLAY_ERROR);
	assert_string_equal(res.signature, "error:queue");
}

/* ---- a session's refusals and limits ---------------------------------------------------- */

static void test_session_errors(void **state)
{
	struct lab_replay_result res;

	(void)state;
	/* A feature the core's vhost-user device does not offer (UFO: it never does). */
	assert_int_equal(replay("vhostlab-trace 2\nfeatures version_1 host_ufo\n"
				"region 0x0 0x10000\nqueue tx tx size=8 at=0x0\n"
				"message get-features\n", &res), LAB_REPLAY_ERROR);
	assert_string_equal(res.signature, "error:session");
	assert_non_null(strstr(res.observed, "does not offer host_ufo"));
	/* Setting up a ring that runs: the device refuses SET_VRING_BASE (REPLY_ACK 1). */
	assert_int_equal(replay(SETUP "message vring-setup tx base=0\n", &res),
			 LAB_REPLAY_DIVERGED);
	assert_string_equal(res.signature, "nack");
	assert_int_equal(res.line, 5);
	/* The core's reads of the replay's own mapping cannot be watched in a session. */
	assert_int_equal(replay(SETUP "message vring-enable tx 1\nmutate 0x0 00\n", &res),
			 LAB_REPLAY_ERROR);
	assert_string_equal(res.signature, "error:session");
	/* A stopped ring has no queue: bursts run nothing, reading its state is an error. */
	assert_int_equal(replay(SETUP "message get-vring-base tx\nfill 0x1000 12 zero\n"
				"post tx 0x1000+12\nkick tx\ndiscard tx 8\nexpect used tx none\n"
				"complete tx\nkicks tx off\nset tx batch=64\nexpect held tx 0\n",
				&res), LAB_REPLAY_ERROR);
	assert_string_equal(res.signature, "error:not-ready");
	assert_int_equal(res.line, 14);
	assert_int_equal(replay("vhostlab-trace 2\nfeatures version_1\nregion 0x0 0x10000\n"
				"queue rx rx size=8 at=0x0\nmessage get-vring-base rx expect=0\n"
				"post rx 0x1000+2048:w\nkick rx\nenqueue rx len=100,data=seq:1\n"
				"expect enqueued rx 0\nexpect used rx none\n"
				"message vring-setup rx base=0\nenqueue rx len=100,data=seq:1\n"
				"expect enqueued rx 1\nexpect status rx 0 delivered\n"
				"expect used rx id=0 len=112\n", &res), LAB_REPLAY_PASS);
	assert_int_equal(res.packets_enqueued, 1);
}

static void test_session_options(void **state)
{
	struct lab_replay_result res;

	(void)state;
	/* Two pairs (the device then offers MQ), queue options applied again to the queue a
	 * vring-setup makes, a remap through SET_MEM_TABLE, and a log-start on a trace whose
	 * rx partner is missing (its vring is not set up, so gets no SET_VRING_ADDR). */
	assert_int_equal(replay("vhostlab-trace 2\nfeatures version_1\nregion 0x0 0x10000\n"
				"queue a tx size=8 at=0x0 batch=64 alloc=burst\n"
				"queue b tx size=8 at=0x1000 zero-copy=64 zc-max=4\n"
				"message log-start pages=16\n"
				"fill 0x2000 12 zero\npost b 0x2000+12 0x2100+100\nkick b\n"
				"dequeue b 8\nexpect dequeued b 1\nexpect held b 1\nfree b 0\n"
				"complete b\nexpect held b 0\n"
				"message get-vring-base b expect=1\nmessage vring-setup b base=1\n"
				"post b 0x2000+12 0x2100+1000\nkick b\ndequeue b 8 hold\n"
				"expect held b 1\nfree b 1\ncomplete b\nexpect held b 0\nremap\n"
				"post a 0x2000+12 0x2100+100\nkick a\ndequeue a 8\n"
				"expect used a id=0 len=0\nexpect logged 0x80 8\n",
				&res), LAB_REPLAY_PASS);
	assert_int_equal(res.packets_dequeued, 3);
	/* The setup's in-process dirty log on the device's queue. */
	assert_int_equal(replay("vhostlab-trace 2\nfeatures version_1\nregion 0x0 0x10000\n"
				"queue tx tx size=8 at=0x0\ndirty-log pages=16\n"
				"message get-features\n" "fill 0x1000 12 zero\n"
				"post tx 0x1000+12 0x1100+100\nkick tx\ndequeue tx 8\n"
				"expect dirty 0x80 yes\nexpect dirty 0x3000 no\n", &res),
			 LAB_REPLAY_PASS);
}

/* ---- packed, in order: a folded batch ------------------------------------------------ */

/* Three chains on a packed in-order ring: id 0 at position 0, id 1 at 1-2, id 2 at 3. The
 * trace then writes, as a device that folds the batch would, ONE used descriptor at
 * position 0 naming id 2 with length 7 (0x8: len, id, flags AVAIL|USED for wrap 1). */
#define PACKED_BATCH                                         \
	"vhostlab-trace 2\n"                                 \
	"features version_1 ring_packed in_order\n"          \
	"region 0x0 0x10000\n"                               \
	"queue tx tx size=8 at=0x0\n"                        \
	"fill 0x1000 12 zero\n"                              \
	"post tx 0x1000+112\n"                               \
	"post tx 0x1000+12 0x1100+100\n"                     \
	"post tx 0x1000+112\n"                               \
	"kick tx\n"                                          \
	"write 0x8 0700000002008080\n"

static void test_in_order_batch_read_one_by_one(void **state)
{
	struct lab_replay_result res;

	(void)state;
	/* Each buffer is an element, in posting order; the named one last, with the length.
	 * All four descriptors are passed: the next chain (id 0 again, position 4) is read at
	 * position 4. */
	assert_int_equal(replay(PACKED_BATCH
				"expect used tx id=0 len=0\n"
				"expect used tx id=1 len=0\n"
				"expect used tx id=2 len=7\n"
				"expect used tx none\n"
				"post tx 0x1000+112\n"
				"kick tx\n"
				"write 0x48 0000000000008080\n"
				"expect used tx id=0 len=0\n"
				"expect used tx none\n", &res),
			 LAB_REPLAY_PASS);
	/* Reading the batch as one element (the named id first) is a divergence. */
	assert_int_equal(replay(PACKED_BATCH "expect used tx id=2 len=7\n", &res),
			 LAB_REPLAY_DIVERGED);
	assert_int_equal(res.line, 11);
	assert_string_equal(res.signature, "expect used:id");
	/* An either branch that read into the batch is undone: the next branch reads it from
	 * its first buffer again. */
	assert_int_equal(replay(PACKED_BATCH
				"either {\n"
				"  expect used tx id=0 len=0\n"
				"  expect used tx id=2\n"
				"} or {\n"
				"  expect used-set tx id=1 id=0\n"
				"}\n"
				"expect used tx id=2 len=7\n"
				"expect used tx none\n", &res),
			 LAB_REPLAY_PASS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_message_errors),
		cmocka_unit_test_teardown(test_message_in_process, teardown),
		cmocka_unit_test(test_log_parse_errors),
		cmocka_unit_test_teardown(test_log_in_process, teardown),
		cmocka_unit_test_teardown(test_log_tool_built, teardown),
		cmocka_unit_test_teardown(test_session_errors, teardown),
		cmocka_unit_test_teardown(test_session_options, teardown),
		cmocka_unit_test_teardown(test_in_order_batch_read_one_by_one, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

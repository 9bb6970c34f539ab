/* SPDX-License-Identifier: MIT */
/* Unit tests for the trace format (docs/trace-format.md, sim/trace): payload patterns
 * against published and independently computed values, every statement parsed with its
 * fields checked, the round trip parse -> format -> parse on rich and tool-built traces,
 * and every class of error with its exact line and column. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkstemp, unlink */
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rng.h"
#include "trace/trace.h"

/* ---- helpers --------------------------------------------------------------------------- */

#define HDR "vhostlab-trace 1\n"
/* Six lines: statements after them are on line 7. */
#define SPLIT_SETUP HDR                                \
	"features version_1 indirect_desc\n"           \
	"region 0x0 0x10000\n"                         \
	"region 0x10000 0x10000 pieces=4096\n"         \
	"queue tx tx size=8 at=0x0\n"                  \
	"queue rx rx size=8 at=0x1000\n"
#define PACKED_SETUP HDR                               \
	"features version_1 ring_packed\n"             \
	"region 0x0 0x10000\n"                         \
	"region 0x10000 0x10000\n"                     \
	"queue tx tx size=8 at=0x0\n"                  \
	"queue rx rx size=8 at=0x1000\n"

static struct lab_trace T;

static void parse_ok(const char *text)
{
	char err[512] = "";
	bool ok = lab_trace_parse(&T, text, strlen(text), "t", err, sizeof(err));

	if (!ok)
		fail_msg("unexpected parse error: %s", err);
}

/* The parse fails at line:col and the message says `what`. */
static void parse_err(const char *text, unsigned line, unsigned col, const char *what)
{
	char err[512] = "", prefix[32];
	struct lab_trace t;

	if (lab_trace_parse(&t, text, strlen(text), "t", err, sizeof(err)))
		fail_msg("parsed, expected an error at %u:%u (%s):\n%s", line, col, what, text);
	snprintf(prefix, sizeof(prefix), "t:%u:%u: ", line, col);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, what))
		fail_msg("expected \"%s...%s...\", got \"%s\"", prefix, what, err);
	/* A failed parse leaves an empty trace behind. */
	assert_int_equal(t.nops, 0);
	assert_int_equal(t.nqueues, 0);
	lab_trace_free(&t);
}

static const struct lab_trace_op *last_op(void)
{
	assert_true(T.nops > 0);
	return &T.ops[T.nops - 1];
}

static int teardown(void **state)
{
	(void)state;
	lab_trace_free(&T);
	return 0;
}

/* ---- patterns -------------------------------------------------------------------------- */

/* splitmix64 written out again from the format's definition, not shared with the lab. */
static uint64_t ref_splitmix64(uint64_t x)
{
	uint64_t z = x + 0x9E3779B97F4A7C15ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint8_t ref_seq_byte(uint64_t seed, uint64_t i)
{
	return (uint8_t)(ref_splitmix64(seed + i / 8) >> (8 * (i % 8)));
}

static void test_fnv1a_vectors(void **state)
{
	(void)state;
	/* The published FNV-1a 64-bit test vectors. */
	assert_true(lab_trace_fnv1a(LAB_FNV1A_INIT, (const uint8_t *)"", 0) ==
		    0xcbf29ce484222325ull);
	assert_true(lab_trace_fnv1a(LAB_FNV1A_INIT, (const uint8_t *)"a", 1) ==
		    0xaf63dc4c8601ec8cull);
	assert_true(lab_trace_fnv1a(LAB_FNV1A_INIT, (const uint8_t *)"foobar", 6) ==
		    0x85944171f73967e8ull);
	/* Continuing from a partial hash is hashing the concatenation. */
	assert_true(lab_trace_fnv1a(lab_trace_fnv1a(LAB_FNV1A_INIT, (const uint8_t *)"foo", 3),
				    (const uint8_t *)"bar", 3) == 0x85944171f73967e8ull);
}

static void test_seq_pattern(void **state)
{
	struct lab_trace_pat p = {.kind = LAB_PAT_SEQ, .value = 0};
	uint8_t got[64];
	/* The first output of SplitMix64 seeded with 0 is the published 0xe220a8397b1dcdaf:
	 * seq:0's first 8 bytes, little end first. */
	static const uint8_t first8[8] = {0xaf, 0xcd, 0x1d, 0x7b, 0x39, 0xa8, 0x20, 0xe2};

	(void)state;
	lab_trace_pat_fill(&p, 0, got, 8);
	assert_memory_equal(got, first8, 8);
	/* Any window of any seed, against the test's own implementation. */
	for (uint64_t seed = 0; seed < 4; seed++) {
		p.value = seed * 0x123456789ull;
		for (uint64_t off = 0; off < 20; off += 3) {
			lab_trace_pat_fill(&p, off, got, 37);
			for (unsigned i = 0; i < 37; i++)
				assert_int_equal(got[i], ref_seq_byte(p.value, off + i));
		}
	}
	/* A seed near 2^64 wraps in 64-bit arithmetic. */
	p.value = UINT64_MAX;
	lab_trace_pat_fill(&p, 8, got, 8);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(got[i], (uint8_t)(ref_splitmix64(0) >> (8 * i)));
}

/* stream: is the lab's payload generator (sim/rng.h lab_fill_pattern), whatever the offset
 * a window starts at. */
static void test_pattern_stream(void **state)
{
	uint8_t want[777], got[777];

	(void)state;
	for (uint64_t key = 0; key < 50; key++) {
		struct lab_rng r = lab_rng_make(12345, key * 7919);
		struct lab_trace_pat p = {.kind = LAB_PAT_STREAM, .value = r.s};
		uint32_t len = 1 + (uint32_t)(key * 37 % 776);

		lab_fill_pattern(want, len, 12345, key * 7919);
		lab_trace_pat_fill(&p, 0, got, len);
		assert_memory_equal(got, want, len);
		for (uint32_t off = 0; off < len; off += 13)
			lab_trace_pat_fill(&p, off, got + off, len - off < 13 ? len - off : 13);
		assert_memory_equal(got, want, len);
		assert_true(lab_trace_pat_match(&p, want, len));
		want[len / 2] ^= 1;
		assert_false(lab_trace_pat_match(&p, want, len));
	}
	parse_ok(SPLIT_SETUP "fill 0x1000 10 stream:0x00000000000000ff\n");
	assert_true(last_op()->pat.kind == LAB_PAT_STREAM && last_op()->pat.value == 255);
}

static void test_pattern_fill_and_match(void **state)
{
	uint8_t hex[5] = {1, 2, 3, 4, 5}, buf[600], want[600];
	struct lab_trace_pat ph = {.kind = LAB_PAT_HEX, .bytes = hex, .nbytes = 5};
	struct lab_trace_pat pb = {.kind = LAB_PAT_BYTE, .value = 0xab};
	struct lab_trace_pat pz = {.kind = LAB_PAT_ZERO};
	struct lab_trace_pat ps = {.kind = LAB_PAT_SEQ, .value = 9};
	struct lab_trace_pat pf = {.kind = LAB_PAT_FNV1A, .value = 0xaf63dc4c8601ec8cull};
	struct lab_trace_pat pn = {.kind = LAB_PAT_NONE};

	(void)state;
	/* HEX: a window, and past the literal bytes zeros rather than a read out of bounds. */
	memset(buf, 0xee, 8);
	lab_trace_pat_fill(&ph, 3, buf, 4);
	assert_int_equal(buf[0], 4);
	assert_int_equal(buf[1], 5);
	assert_int_equal(buf[2], 0);
	assert_int_equal(buf[3], 0);
	assert_true(lab_trace_pat_match(&ph, hex, 5));
	assert_false(lab_trace_pat_match(&ph, hex, 4));
	buf[0] = 1, buf[1] = 2, buf[2] = 3, buf[3] = 4, buf[4] = 6;
	assert_false(lab_trace_pat_match(&ph, buf, 5));

	lab_trace_pat_fill(&pb, 0, buf, 600);
	for (unsigned i = 0; i < 600; i++)
		assert_int_equal(buf[i], 0xab);
	assert_true(lab_trace_pat_match(&pb, buf, 600));
	buf[599] = 0xac;
	assert_false(lab_trace_pat_match(&pb, buf, 600));

	memset(buf, 0x11, sizeof(buf));
	lab_trace_pat_fill(&pz, 0, buf, 300);
	assert_int_equal(buf[299], 0);
	assert_int_equal(buf[300], 0x11);
	assert_true(lab_trace_pat_match(&pz, buf, 300));
	assert_false(lab_trace_pat_match(&pz, buf, 301));

	/* seq over more than one 256-byte chunk of the matcher, mismatch in the last byte. */
	for (unsigned i = 0; i < 600; i++)
		want[i] = ref_seq_byte(9, i);
	assert_true(lab_trace_pat_match(&ps, want, 600));
	want[599] ^= 1;
	assert_false(lab_trace_pat_match(&ps, want, 600));

	assert_true(lab_trace_pat_match(&pf, (const uint8_t *)"a", 1));
	assert_false(lab_trace_pat_match(&pf, (const uint8_t *)"b", 1));
	assert_true(lab_trace_pat_match(&pn, (const uint8_t *)"x", 1));
}

/* ---- setup ------------------------------------------------------------------------------ */

static void test_setup_defaults(void **state)
{
	(void)state;
	parse_ok(HDR);
	assert_int_equal(T.version, 1);
	assert_true(T.features == 0);
	assert_int_equal(T.nregions, 0);
	assert_int_equal(T.nqueues, 0);
	assert_int_equal(T.pool_bufs, 1024);
	assert_int_equal(T.pool_size, 2048);
	assert_true(T.dirty_pages == 0);
	assert_true(T.seed == 1);
	assert_int_equal(T.nops, 0);
	/* Queue slots carry the queue defaults for tools that fill them. */
	assert_int_equal(T.queues[0].batch, 256);
	assert_true(T.queues[0].wrap);
	assert_int_equal(T.queues[0].alloc, LAB_TRACE_ALLOC_AVAILABLE);
	assert_false(T.queues[0].line_wait);
}

static void test_setup_split(void **state)
{
	const struct lab_trace_queue *q;

	(void)state;
	parse_ok(HDR
		 "features csum guest_csum mrg_rxbuf indirect_desc event_idx version_1 in_order\n"
		 "region 0x0 0x10000\n"
		 "region 65536 0x20000 pieces=8192\n"
		 "queue a tx size=8 at=0x0\n"
		 "queue b-2 rx size=256 at=0x4000 start=65535 batch=0\n"
		 "queue c tx size=4 desc=0x8000 avail=0x8100 used=0x8200 zero-copy=512 zc-max=3 "
		 "alloc=burst line-wait=on\n"
		 "pool bufs=16 size=65536\n"
		 "dirty-log pages=48\n"
		 "seed 0xfffffffffffffffe\n");
	assert_true(T.features == ((1ull << 0) | (1ull << 1) | (1ull << 15) | (1ull << 28) |
				   (1ull << 29) | (1ull << 32) | (1ull << 35)));
	assert_int_equal(T.nregions, 2);
	assert_true(T.regions[0].gpa == 0 && T.regions[0].size == 0x10000 &&
		    T.regions[0].pieces == 0);
	assert_true(T.regions[1].gpa == 0x10000 && T.regions[1].size == 0x20000 &&
		    T.regions[1].pieces == 8192);
	assert_int_equal(T.nqueues, 3);

	q = &T.queues[0];
	assert_string_equal(q->name, "a");
	assert_int_equal(q->dir, LAB_TRACE_TX);
	assert_int_equal(q->size, 8);
	assert_true(q->at_given);
	/* avail right after 8 x 16 bytes; used at round_up(0x80 + 6 + 2 * 8, 4). */
	assert_true(q->desc == 0x0 && q->driver == 0x80 && q->device == 0x98);
	assert_int_equal(q->start, 0);
	assert_int_equal(q->batch, 256);
	assert_false(q->zero_copy);
	assert_int_equal(q->zc_max, 0);
	assert_int_equal(q->alloc, LAB_TRACE_ALLOC_AVAILABLE);
	assert_false(q->line_wait);

	q = &T.queues[1];
	assert_string_equal(q->name, "b-2");
	assert_int_equal(q->dir, LAB_TRACE_RX);
	assert_int_equal(q->size, 256);
	/* 0x4000 + 4096 = 0x5000; 0x5000 + 6 + 512 = 0x5206, up to 0x5208. */
	assert_true(q->desc == 0x4000 && q->driver == 0x5000 && q->device == 0x5208);
	assert_int_equal(q->start, 65535);
	assert_int_equal(q->batch, 0);

	q = &T.queues[2];
	assert_false(q->at_given);
	assert_true(q->desc == 0x8000 && q->driver == 0x8100 && q->device == 0x8200);
	assert_true(q->zero_copy);
	assert_int_equal(q->zc_min, 512);
	assert_int_equal(q->zc_max, 3);
	assert_int_equal(q->alloc, LAB_TRACE_ALLOC_BURST);
	/* Accepted on a split tx queue: the core ignores it there (vl_vq_set_tx_line_wait). */
	assert_true(q->line_wait);

	assert_int_equal(T.pool_bufs, 16);
	assert_int_equal(T.pool_size, 65536);
	assert_true(T.dirty_pages == 48);
	assert_true(T.seed == 0xfffffffffffffffeull);
}

static void test_setup_packed(void **state)
{
	const struct lab_trace_queue *q;

	(void)state;
	parse_ok(HDR "features 0x500000000\n"
		 "region 0x0 0x10000\n"
		 "queue p tx size=5 at=0x100 start=4 wrap=0 line-wait=on\n"
		 "queue q tx size=8 at=0x200 line-wait=off\n"
		 "queue r rx size=32768 desc=0x2000 driver=0x3000 device=0x3004\n");
	assert_true(T.features == ((1ull << 32) | (1ull << 34)));
	q = &T.queues[0];
	assert_int_equal(q->size, 5);
	/* Packed: driver area right after 5 x 16 bytes, device area 4 bytes later. */
	assert_true(q->desc == 0x100 && q->driver == 0x150 && q->device == 0x154);
	assert_int_equal(q->start, 4);
	assert_false(q->wrap);
	assert_true(q->line_wait);
	assert_false(T.queues[1].line_wait);
	q = &T.queues[2];
	assert_false(q->line_wait);
	assert_int_equal(q->size, 32768);
	assert_false(q->at_given);
	assert_true(q->desc == 0x2000 && q->driver == 0x3000 && q->device == 0x3004);
	assert_true(q->wrap);
}

/* ---- actions ---------------------------------------------------------------------------- */

static void test_guest_actions_split(void **state)
{
	const struct lab_trace_op *op;

	(void)state;
	parse_ok(SPLIT_SETUP
		 "write 0x10000 00ff10Ab\n"                                 /* 7 */
		 "fill 0x10010 4 hex:01020304\n"                            /* 8 */
		 "fill 0x10020 100 byte:0xAB\n"                             /* 9 */
		 "fill 0x10100 7 zero\n"                                    /* 10 */
		 "fill 0x10200 9000 seq:18446744073709551615\n"             /* 11 */
		 "desc tx 7 addr=0x10000 len=4294967295 flags=next|write|indirect next=65535\n"
		 "desc tx 0 len=0 addr=0\n"                                 /* 13 */
		 "desc rx 1 addr=0x1 len=2 flags=0x80\n"                    /* 14 */
		 "idesc 0x10000 3 addr=0x20 len=16 flags=write next=2\n"   /* 15 */
		 "avail tx 65535\n"                                         /* 16 */
		 "kick tx\n"                                                /* 17 */
		 "kick rx idx=0xffff\n"                                     /* 18 */
		 "post tx 0x10000+12 0x10100+0 0xffffffffffffffff+4294967295\n"
		 "post rx indirect=0x11000 0x10000+1500:w 0x12000+2:w\n"   /* 20 */
		 "mutate 0x10002 aa\n"                                      /* 21 */
		 "mutate 0x10003 bbcc on-read=3\n"                          /* 22 */
		 "double-fetch detect\n"                                    /* 23 */
		 "double-fetch adversarial seed=77\n"                       /* 24 */
		 "double-fetch off\n"                                       /* 25 */
		 "fault pool fail-after=2\n"                                /* 26 */
		 "fault alloc fail-after=0\n"                               /* 27 */
		 "fault off\n");                                            /* 28 */
	assert_int_equal(T.nops, 22);

	op = &T.ops[0];
	assert_int_equal(op->kind, LAB_T_WRITE);
	assert_int_equal(op->line, 7);
	assert_true(op->addr == 0x10000);
	assert_int_equal(op->pat.kind, LAB_PAT_HEX);
	assert_int_equal(op->pat.nbytes, 4);
	assert_memory_equal(op->pat.bytes, "\x00\xff\x10\xab", 4);

	op = &T.ops[1];
	assert_int_equal(op->kind, LAB_T_FILL);
	assert_true(op->addr == 0x10010 && op->len == 4);
	assert_int_equal(op->pat.kind, LAB_PAT_HEX);
	assert_memory_equal(op->pat.bytes, "\x01\x02\x03\x04", 4);
	op = &T.ops[2];
	assert_true(op->len == 100 && op->pat.kind == LAB_PAT_BYTE && op->pat.value == 0xab);
	op = &T.ops[3];
	assert_true(op->len == 7 && op->pat.kind == LAB_PAT_ZERO);
	op = &T.ops[4];
	assert_true(op->len == 9000 && op->pat.kind == LAB_PAT_SEQ &&
		    op->pat.value == UINT64_MAX);

	op = &T.ops[5];
	assert_int_equal(op->kind, LAB_T_DESC);
	assert_int_equal(op->queue, 0);
	assert_true(op->index == 7 && op->addr == 0x10000 && op->len == 0xffffffffull);
	assert_int_equal(op->given, LAB_TA_FLAGS | LAB_TA_NEXT);
	assert_int_equal(op->flags, 7);
	assert_int_equal(op->next, 65535);
	op = &T.ops[6];
	assert_true(op->index == 0 && op->addr == 0 && op->len == 0);
	assert_int_equal(op->given, 0);
	op = &T.ops[7];
	assert_int_equal(op->queue, 1);
	assert_int_equal(op->flags, 0x80);   /* a number: hostile bits the layout has no name for */

	op = &T.ops[8];
	assert_int_equal(op->kind, LAB_T_IDESC);
	assert_true(op->addr2 == 0x10000 && op->index == 3 && op->addr == 0x20 && op->len == 16);
	assert_int_equal(op->flags, 2);
	assert_int_equal(op->next, 2);
	assert_int_equal(op->given, LAB_TA_FLAGS | LAB_TA_NEXT);

	op = &T.ops[9];
	assert_int_equal(op->kind, LAB_T_AVAIL);
	assert_true(op->queue == 0 && op->index == 65535);
	op = &T.ops[10];
	assert_int_equal(op->kind, LAB_T_KICK);
	assert_int_equal(op->given, 0);
	op = &T.ops[11];
	assert_true(op->queue == 1 && op->given == LAB_TA_IDX && op->value == 0xffff);

	op = &T.ops[12];
	assert_int_equal(op->kind, LAB_T_POST);
	assert_int_equal(op->given, 0);
	assert_int_equal(op->nitems, 3);
	assert_true(op->bufs[0].gpa == 0x10000 && op->bufs[0].len == 12 && !op->bufs[0].write);
	assert_true(op->bufs[1].gpa == 0x10100 && op->bufs[1].len == 0);
	assert_true(op->bufs[2].gpa == UINT64_MAX && op->bufs[2].len == UINT32_MAX);
	op = &T.ops[13];
	assert_true(op->queue == 1 && op->given == LAB_TA_INDIRECT && op->addr2 == 0x11000);
	assert_int_equal(op->nitems, 2);
	assert_true(op->bufs[0].len == 1500 && op->bufs[0].write);
	assert_true(op->bufs[1].gpa == 0x12000 && op->bufs[1].write);

	op = &T.ops[14];
	assert_int_equal(op->kind, LAB_T_MUTATE);
	assert_true(op->addr == 0x10002 && op->pat.nbytes == 1 && op->pat.bytes[0] == 0xaa);
	assert_true(op->given == 0 && op->value == 1);
	op = &T.ops[15];
	assert_true(op->given == LAB_TA_ON_READ && op->value == 3 && op->pat.nbytes == 2);

	op = &T.ops[16];
	assert_int_equal(op->kind, LAB_T_DOUBLE_FETCH);
	assert_true(op->value == LAB_TRACE_DF_DETECT && op->given == 0);
	op = &T.ops[17];
	assert_true(op->value == LAB_TRACE_DF_ADVERSARIAL && op->given == LAB_TA_SEED &&
		    op->seed == 77);
	op = &T.ops[18];
	assert_true(op->value == LAB_TRACE_DF_OFF);

	op = &T.ops[19];
	assert_int_equal(op->kind, LAB_T_FAULT);
	assert_true(op->value == LAB_TRACE_FAULT_POOL && op->count == 2 && op->given == 0);
	op = &T.ops[20];
	assert_true(op->value == LAB_TRACE_FAULT_ALLOC && op->count == 0);
	op = last_op();
	assert_true(op->kind == LAB_T_FAULT && op->given == LAB_TA_OFF);
	assert_int_equal(op->line, 28);
}

static void test_guest_actions_packed(void **state)
{
	const struct lab_trace_op *op;

	(void)state;
	parse_ok(PACKED_SETUP
		 "pdesc tx 7 addr=0x10000 len=60 id=65535 flags=next|write|indirect|avail|used\n"
		 "pdesc rx 0 flags=avail id=0 len=1 addr=0x1\n"
		 "idesc 0x10000 1 addr=0x5 len=6 flags=avail|write\n"
		 "kick tx\n"
		 "post tx 0x10000+100\n");
	assert_int_equal(T.nops, 5);
	op = &T.ops[0];
	assert_int_equal(op->kind, LAB_T_PDESC);
	assert_true(op->queue == 0 && op->index == 7 && op->addr == 0x10000 && op->len == 60);
	assert_int_equal(op->id, 65535);
	assert_int_equal(op->flags, 0x8087);
	op = &T.ops[1];
	assert_true(op->queue == 1 && op->flags == 0x80 && op->id == 0 && op->addr == 1);
	op = &T.ops[2];
	assert_int_equal(op->kind, LAB_T_IDESC);
	assert_int_equal(op->flags, 0x82);
	assert_int_equal(op->given, LAB_TA_FLAGS);
	assert_int_equal(T.ops[3].kind, LAB_T_KICK);
	assert_int_equal(T.ops[4].kind, LAB_T_POST);
}

static void test_host_actions(void **state)
{
	const struct lab_trace_op *op;

	(void)state;
	parse_ok(SPLIT_SETUP
		 "dequeue tx 32\n"
		 "dequeue tx 4096 hold\n"
		 "free tx 0 5 0x10\n"
		 "complete tx\n"
		 "kicks rx on\n"
		 "enqueue rx len=60,data=seq:3 len=2,data=hex:0a0b,flags=1,gso_type=255,hdr_len=3,"
		 "gso_size=65535,csum_start=34,csum_offset=16 len=0,data=zero,csum_offset=1\n"
		 "enqueue rx\n"
		 "discard tx 0\n"
		 "discard tx 4096 touch\n"
		 "set tx line-wait=on\n"
		 "set tx batch=0 line-wait=off\n"
		 "set tx alloc=burst\n");
	op = &T.ops[9];
	assert_int_equal(op->kind, LAB_T_SET);
	assert_true(op->queue == 0 && op->given == LAB_TA_LINE_WAIT && op->flags == 1);
	op = &T.ops[10];
	assert_true(op->given == (LAB_TA_BATCH | LAB_TA_LINE_WAIT) && op->flags == 0);
	assert_true(op->count == 0);
	op = &T.ops[11];
	assert_true(op->given == LAB_TA_ALLOC && op->value == LAB_TRACE_ALLOC_BURST);
	op = &T.ops[6];
	assert_true(op->kind == LAB_T_ENQUEUE && op->nitems == 0 && op->pkts == NULL);
	op = &T.ops[7];
	assert_int_equal(op->kind, LAB_T_DISCARD);
	assert_true(op->queue == 0 && op->count == 0 && op->given == 0);
	op = &T.ops[8];
	assert_true(op->kind == LAB_T_DISCARD && op->count == 4096 && op->given == LAB_TA_TOUCH);
	op = &T.ops[0];
	assert_int_equal(op->kind, LAB_T_DEQUEUE);
	assert_true(op->queue == 0 && op->count == 32 && op->given == 0);
	op = &T.ops[1];
	assert_true(op->count == 4096 && op->given == LAB_TA_HOLD);
	op = &T.ops[2];
	assert_int_equal(op->kind, LAB_T_FREE);
	assert_int_equal(op->nitems, 3);
	assert_true(op->nums[0] == 0 && op->nums[1] == 5 && op->nums[2] == 16);
	op = &T.ops[3];
	assert_true(op->kind == LAB_T_COMPLETE && op->queue == 0);
	op = &T.ops[4];
	assert_true(op->kind == LAB_T_KICKS && op->queue == 1 && op->value == 1);
	op = &T.ops[5];
	assert_int_equal(op->kind, LAB_T_ENQUEUE);
	assert_int_equal(op->queue, 1);
	assert_int_equal(op->nitems, 3);
	assert_int_equal(op->pkts[0].len, 60);
	assert_true(op->pkts[0].data.kind == LAB_PAT_SEQ && op->pkts[0].data.value == 3);
	assert_int_equal(op->pkts[0].ol.given, 0);
	assert_int_equal(op->pkts[1].len, 2);
	assert_int_equal(op->pkts[1].data.kind, LAB_PAT_HEX);
	assert_memory_equal(op->pkts[1].data.bytes, "\x0a\x0b", 2);
	assert_int_equal(op->pkts[1].ol.given, 0x3f);
	assert_int_equal(op->pkts[1].ol.flags, 1);
	assert_int_equal(op->pkts[1].ol.gso_type, 255);
	assert_int_equal(op->pkts[1].ol.hdr_len, 3);
	assert_int_equal(op->pkts[1].ol.gso_size, 65535);
	assert_int_equal(op->pkts[1].ol.csum_start, 34);
	assert_int_equal(op->pkts[1].ol.csum_offset, 16);
	assert_int_equal(op->pkts[2].len, 0);
	assert_int_equal(op->pkts[2].data.kind, LAB_PAT_ZERO);
	assert_int_equal(op->pkts[2].ol.given, LAB_OL_CSUM_OFFSET);
	assert_int_equal(op->pkts[2].ol.csum_offset, 1);
}

static void test_expectations(void **state)
{
	const struct lab_trace_op *op;

	(void)state;
	parse_ok(SPLIT_SETUP "dirty-log pages=32\n"    /* line 7: still setup */
		 "expect dequeued tx 3\n"
		 "expect packet tx 2 len=4 data=hex:01020304 flags=1 csum_offset=6\n"
		 "expect packet tx 3 len=100 fnv1a=AF63DC4C8601EC8C\n"
		 "expect packet tx 4 len=8 data=fnv1a:0000000000000001\n"
		 "expect packet tx 5 len=9\n"
		 "expect enqueued rx 4096\n"
		 "expect status rx 0 delivered\n"
		 "expect status rx 4095 too_many_pieces\n"
		 "expect status rx 1 too_big\n"
		 "expect used tx id=3 len=0\n"
		 "expect used rx none\n"
		 "expect mem 0x10000 12 zero\n"
		 "expect mem 0x10000 2 hex:abcd\n"
		 "expect mem 0x1ffe0 0x20 fnv1a=0123456789abcdef\n"
		 "expect stat tx packets 18446744073709551615\n"
		 "expect stat rx drops.chain_loop 0\n"
		 "expect broken tx avail_idx_jump\n"
		 "expect broken rx no\n"
		 "expect call rx yes\n"
		 "expect call tx no\n"
		 "expect held tx 8\n"
		 "expect dirty 0x1f000 yes\n"
		 "expect dirty 0 no\n");
	op = &T.ops[0];
	assert_int_equal(op->kind, LAB_T_EXPECT_DEQUEUED);
	assert_true(op->queue == 0 && op->count == 3);
	assert_int_equal(op->line, 8);
	op = &T.ops[1];
	assert_int_equal(op->kind, LAB_T_EXPECT_PACKET);
	assert_true(op->index == 2 && op->len == 4 && op->pat.kind == LAB_PAT_HEX);
	assert_int_equal(op->ol.given, LAB_OL_FLAGS | LAB_OL_CSUM_OFFSET);
	assert_true(op->ol.flags == 1 && op->ol.csum_offset == 6);
	op = &T.ops[2];
	assert_true(op->pat.kind == LAB_PAT_FNV1A && op->pat.value == 0xaf63dc4c8601ec8cull);
	op = &T.ops[3];
	assert_true(op->pat.kind == LAB_PAT_FNV1A && op->pat.value == 1);
	op = &T.ops[4];
	assert_true(op->pat.kind == LAB_PAT_NONE && op->len == 9 && op->ol.given == 0);
	op = &T.ops[5];
	assert_true(op->kind == LAB_T_EXPECT_ENQUEUED && op->queue == 1 && op->count == 4096);
	op = &T.ops[6];
	assert_true(op->kind == LAB_T_EXPECT_STATUS && op->index == 0 &&
		    op->value == LAB_TRACE_DELIVERED);
	op = &T.ops[7];
	assert_true(op->index == 4095 && op->value == LAB_TRACE_TOO_MANY_PIECES);
	assert_true(T.ops[8].value == LAB_TRACE_TOO_BIG);
	op = &T.ops[9];
	assert_true(op->kind == LAB_T_EXPECT_USED && op->id == 3 && op->len == 0 &&
		    op->given == (LAB_TA_ID | LAB_TA_LEN));
	op = &T.ops[10];
	assert_true(op->queue == 1 && op->given == LAB_TA_NONE);
	op = &T.ops[11];
	assert_true(op->kind == LAB_T_EXPECT_MEM && op->addr == 0x10000 && op->len == 12 &&
		    op->pat.kind == LAB_PAT_ZERO);
	op = &T.ops[12];
	assert_true(op->pat.kind == LAB_PAT_HEX && op->pat.nbytes == 2);
	op = &T.ops[13];
	assert_true(op->addr == 0x1ffe0 && op->len == 32 && op->pat.kind == LAB_PAT_FNV1A &&
		    op->pat.value == 0x0123456789abcdefull);
	op = &T.ops[14];
	assert_int_equal(op->kind, LAB_T_EXPECT_STAT);
	assert_string_equal(op->name, "packets");
	assert_true(op->count == UINT64_MAX);
	assert_string_equal(T.ops[15].name, "drops.chain_loop");
	op = &T.ops[16];
	assert_true(op->kind == LAB_T_EXPECT_BROKEN && op->given == 0);
	assert_string_equal(op->name, "avail_idx_jump");
	assert_true(T.ops[17].given == LAB_TA_NONE && T.ops[17].queue == 1);
	assert_true(T.ops[18].kind == LAB_T_EXPECT_CALL && T.ops[18].value == 1);
	assert_true(T.ops[19].value == 0);
	assert_true(T.ops[20].kind == LAB_T_EXPECT_HELD && T.ops[20].count == 8);
	op = &T.ops[21];
	assert_true(op->kind == LAB_T_EXPECT_DIRTY && op->addr == 0x1f000 && op->value == 1);
	assert_true(T.ops[22].value == 0);
}

/* ---- lexical ---------------------------------------------------------------------------- */

static void test_lexical(void **state)
{
	static const char crlf[] =
		"# a comment before the header\r\n"
		"\r\n"
		"vhostlab-trace 0x1\t# version in hex\r\n"
		"features\tversion_1   # tabs and spaces\r\n"
		"region 0x0 0x1000\r\n"
		"queue q tx size=1 at=0x0\r\n"
		"   \t  \r\n"
		"kick q#no space before the comment\r\n"
		"kick q";   /* the last line has no newline */

	(void)state;
	parse_ok(crlf);
	assert_int_equal(T.nops, 2);
	assert_int_equal(T.ops[0].line, 8);
	assert_int_equal(T.ops[1].line, 9);
	assert_int_equal(T.ops[1].kind, LAB_T_KICK);
	lab_trace_free(&T);
	/* A final line with only a CR. */
	parse_ok("vhostlab-trace 1\r");
	assert_int_equal(T.nops, 0);
}

/* ---- round trip ------------------------------------------------------------------------- */

/* Canonical text (what lab_trace_format writes) covering every statement and option. */
static const char rich_split[] =
	"vhostlab-trace 1\n"
	"features csum mrg_rxbuf indirect_desc event_idx version_1 in_order\n"
	"region 0x0 0x10000\n"
	"region 0x10000 0x10000 pieces=4096\n"
	"region 0x100000 0x2000\n"
	"queue tx tx size=8 at=0x0\n"
	"queue rx rx size=16 desc=0x1000 avail=0x1100 used=0x1200 start=9 batch=0\n"
	"queue zc tx size=256 at=0x4000 start=65535 batch=65536 zero-copy=0 zc-max=256 "
	"alloc=burst line-wait=on\n"
	"pool bufs=64 size=4096\n"
	"dirty-log pages=300\n"
	"seed 18446744073709551615\n"
	"write 0x10000 0001feff\n"
	"fill 0x10010 3 hex:aabbcc\n"
	"fill 0x10020 64 byte:0x7f\n"
	"fill 0x10100 1500 seq:42\n"
	"fill 0x10800 2048 zero\n"
	"fill 0x11000 9 stream:0x9e3779b97f4a7c15\n"
	"desc tx 0 addr=0x10000 len=12 flags=next next=1\n"
	"desc tx 1 addr=0x10100 len=1500\n"
	"desc tx 2 addr=0xffffffffffffffff len=4294967295 flags=0x8\n"
	"desc tx 3 addr=0x0 len=0 flags=0\n"
	"desc tx 4 addr=0x0 len=0 flags=next|write|indirect\n"
	"idesc 0x11000 0 addr=0x12000 len=4096 flags=write next=65535\n"
	"avail tx 0\n"
	"kick tx\n"
	"kick tx idx=7\n"
	"post tx 0x10000+12 0x10100+1500\n"
	"post rx indirect=0x13000 0x14000+12:w 0x14100+1514:w\n"
	"mutate 0x10000 ff\n"
	"mutate 0x10001 0102 on-read=2\n"
	"double-fetch detect\n"
	"double-fetch adversarial seed=9\n"
	"double-fetch adversarial\n"
	"double-fetch off\n"
	"fault pool fail-after=0\n"
	"fault alloc fail-after=18446744073709551615\n"
	"fault pool fail-at=0,3,16\n"
	"fault off\n"
	"dequeue tx 32\n"
	"dequeue zc 1 hold\n"
	"discard tx 8 touch\n"
	"discard zc 0\n"
	"free zc 0 1 2\n"
	"complete zc\n"
	"kicks zc on\n"
	"kicks rx off\n"
	"set zc batch=0 alloc=burst zero-copy=512 zc-max=4 line-wait=on\n"
	"set zc zero-copy=off zc-max=8 line-wait=off\n"
	"set rx batch=64\n"
	"remap\n"
	"dequeue tx 0\n"
	"enqueue rx len=60,data=seq:1 len=3,data=hex:010203,flags=1,gso_type=4,hdr_len=54,"
	"gso_size=1448,csum_start=34,csum_offset=16 len=70000,data=byte:0x00\n"
	"expect dequeued tx 1\n"
	"expect packet tx 0 len=1500 data=seq:42\n"
	"expect packet tx 1 len=3 data=hex:aabbcc flags=0 csum_start=0\n"
	"expect packet zc 0 len=9000 fnv1a=0123456789abcdef gso_type=1 hdr_len=2 gso_size=3 "
	"csum_offset=5\n"
	"expect packet zc 1 len=5\n"
	"expect packet zc 2 len=5 data=zero\n"
	"expect packet zc 3 len=5 data=byte:0xab\n"
	"expect enqueued rx 2\n"
	"expect status rx 0 delivered\n"
	"expect status rx 1 too_big\n"
	"expect status rx 2 too_many_pieces\n"
	"expect used tx id=0 len=0\n"
	"expect used rx none\n"
	"expect mem 0x10000 4 hex:0001feff\n"
	"expect mem 0x10100 1500 seq:42\n"
	"expect mem 0x10000 16 fnv1a=cbf29ce484222325\n"
	"expect stat tx packets 1\n"
	"expect stat rx drops.rx_too_big 1\n"
	"expect broken tx no\n"
	"expect broken rx head_out_of_range\n"
	"expect call rx yes\n"
	"expect call tx no\n"
	"expect held zc 0\n"
	"expect dirty 0x12b000 yes\n"
	"expect dirty 0x0 no\n";

static const char rich_packed[] =
	"vhostlab-trace 1\n"
	"features version_1 ring_packed\n"
	"region 0x0 0x10000\n"
	"queue tx tx size=5 at=0x0 start=4 wrap=0 line-wait=on\n"
	"queue rx rx size=32768 desc=0x8000 driver=0x100 device=0x104\n"
	"pdesc tx 4 addr=0x1000 len=100 id=0 flags=avail\n"
	"pdesc tx 0 addr=0x1000 len=100 id=65535 flags=next|write|indirect|avail|used\n"
	"pdesc rx 1 addr=0x1000 len=100 id=1 flags=0x40\n"
	"pdesc rx 2 addr=0x1000 len=100 id=1 flags=0\n"
	"idesc 0x2000 7 addr=0x3000 len=8 flags=write|used\n"
	"kick tx\n"
	"post tx 0x1000+100\n"
	"post rx indirect=0x2000 0x3000+100:w\n"
	"set tx line-wait=off\n";

/* text parses, formats back to exactly itself, and the second parse is equal. */
static void round_trip_canonical(const char *text)
{
	struct lab_trace u;
	char err[512] = "";
	size_t n;
	char *out;

	parse_ok(text);
	out = lab_trace_format(&T, &n);
	assert_non_null(out);
	assert_int_equal(n, strlen(out));
	assert_string_equal(out, text);
	assert_true(lab_trace_parse(&u, out, n, "fmt", err, sizeof(err)));
	assert_true(lab_trace_equal(&T, &u));
	free(out);
	lab_trace_free(&u);
}

static void test_round_trip_rich_split(void **state)
{
	(void)state;
	round_trip_canonical(rich_split);
	/* Every statement kind is in one of the two rich traces. */
	{
		bool seen[LAB_T__KIND_COUNT] = {false};

		for (uint32_t i = 0; i < T.nops; i++)
			seen[T.ops[i].kind] = true;
		lab_trace_free(&T);
		parse_ok(rich_packed);
		for (uint32_t i = 0; i < T.nops; i++)
			seen[T.ops[i].kind] = true;
		/* Version 2's statements: test_trace_v2.c's rich_v2 has each of them. */
		for (unsigned k = 0; k < LAB_T_REPEAT; k++)
			if (!seen[k])
				fail_msg("no %s in the rich traces", lab_trace_kind_name(k));
	}
}

static void test_round_trip_rich_packed(void **state)
{
	(void)state;
	round_trip_canonical(rich_packed);
}

/* Non-canonical text: comments, decimal addresses, arguments in another order, defaults
 * spelled out, features as a number with names for every bit. */
static void test_round_trip_normalises(void **state)
{
	static const char in[] =
		"# header comment\n"
		"vhostlab-trace 1\n"
		"features 0x100000000 # version_1\n"
		"seed 1\n"
		"pool size=2048 bufs=1024\n"
		"region 0 4096\n"
		"queue q tx at=0 size=1 batch=256 alloc=available start=0\n"
		"desc q 0 next=0 len=0x10 addr=16 flags=3\n"
		"post q 0+0x10\n"
		"fill 0 0x10 byte:7  # trailing comment\n";
	static const char want[] =
		"vhostlab-trace 1\n"
		"features version_1\n"
		"region 0x0 0x1000\n"
		"queue q tx size=1 at=0x0\n"
		"desc q 0 addr=0x10 len=16 flags=next|write next=0\n"
		"post q 0x0+16\n"
		"fill 0x0 16 byte:0x07\n";
	char *out;
	size_t n;

	(void)state;
	parse_ok(in);
	out = lab_trace_format(&T, &n);
	assert_non_null(out);
	assert_string_equal(out, want);
	free(out);
	lab_trace_free(&T);
	round_trip_canonical(want);
}

/* A trace built by a tool through the API, not from text. */
static void test_round_trip_tool_built(void **state)
{
	struct lab_trace t, u;
	struct lab_trace_op op;
	struct lab_trace_queue *q;
	char err[256], *text;
	size_t n;
	uint8_t *bytes = malloc(3);

	(void)state;
	lab_trace_init(&t);
	t.features = (1ull << 32) | (1ull << 40);   /* bit 40 has no name: written as a number */
	t.regions[t.nregions++] = (struct lab_trace_region){0, 0x10000, 0};
	q = &t.queues[t.nqueues++];
	strcpy(q->name, "tx");
	q->size = 64;
	assert_true(lab_trace_queue_at(q, false, 0x2000));
	assert_true(q->desc == 0x2000 && q->driver == 0x2400 && q->device == 0x2488);

	memset(&op, 0, sizeof(op));
	op.kind = LAB_T_WRITE;
	op.addr = 0x100;
	op.pat.kind = LAB_PAT_HEX;
	op.pat.bytes = bytes;
	op.pat.nbytes = 3;
	memcpy(bytes, "\x01\x02\x03", 3);
	op.line = 0;
	op.index = 12345;   /* not a field of write: a tool's leftover that must not matter */
	assert_non_null(lab_trace_append(&t, &op));
	memset(&op, 0, sizeof(op));
	op.kind = LAB_T_EXPECT_BROKEN;
	op.given = LAB_TA_NONE;
	strcpy(op.name, "leftover");
	assert_non_null(lab_trace_append(&t, &op));

	text = lab_trace_format(&t, &n);
	assert_non_null(text);
	assert_string_equal(text, "vhostlab-trace 2\n"
				  "features 0x10100000000\n"
				  "region 0x0 0x10000\n"
				  "queue tx tx size=64 at=0x2000\n"
				  "write 0x100 010203\n"
				  "expect broken tx no\n");
	assert_true(lab_trace_parse(&u, text, n, "fmt", err, sizeof(err)));
	assert_true(lab_trace_equal(&t, &u));
	assert_true(lab_trace_equal(&u, &t));
	free(text);
	lab_trace_free(&u);
	lab_trace_free(&t);
	lab_trace_free(&t);   /* freeing twice is safe: free leaves an empty trace */
}

static void test_queue_at_overflow(void **state)
{
	struct lab_trace_queue q = {.size = 16};

	(void)state;
	assert_false(lab_trace_queue_at(&q, false, UINT64_MAX - 255));
	assert_false(q.at_given);
	assert_false(lab_trace_queue_at(&q, true, UINT64_MAX - 16 * 16 - 6));
	/* The last packed placement that fits: the device area ends exactly at 2^64 - 1. */
	assert_true(lab_trace_queue_at(&q, true, UINT64_MAX - 16 * 16 - 7));
	assert_true(q.device == UINT64_MAX - 3);
}

static void test_equal(void **state)
{
	struct lab_trace u;
	char err[256];

	(void)state;
	parse_ok(rich_split);
	assert_true(lab_trace_parse(&u, rich_split, strlen(rich_split), "u", err, sizeof(err)));
	assert_true(lab_trace_equal(&T, &u));
	/* Line numbers do not count. */
	u.ops[3].line += 100;
	assert_true(lab_trace_equal(&T, &u));
	/* Everything else does. */
	u.ops[0].pat.bytes[3] ^= 1;
	assert_false(lab_trace_equal(&T, &u));
	u.ops[0].pat.bytes[3] ^= 1;
	u.queues[2].zc_min = 1;
	assert_false(lab_trace_equal(&T, &u));
	u.queues[2].zc_min = 0;
	u.ops[T.nops - 1].value = 1;
	assert_false(lab_trace_equal(&T, &u));
	u.ops[T.nops - 1].value = 0;
	u.ops[40].pkts[1].ol.gso_size++;   /* enqueue rx ... gso_size=1448 */
	assert_int_equal(u.ops[40].kind, LAB_T_ENQUEUE);
	assert_false(lab_trace_equal(&T, &u));
	u.ops[40].pkts[1].ol.gso_size--;
	u.ops[29].given ^= LAB_TA_TOUCH;   /* discard tx 8 touch */
	assert_int_equal(u.ops[29].kind, LAB_T_DISCARD);
	assert_false(lab_trace_equal(&T, &u));
	u.ops[29].given ^= LAB_TA_TOUCH;
	u.regions[1].pieces = 0;
	assert_false(lab_trace_equal(&T, &u));
	u.regions[1].pieces = 4096;
	u.queues[2].line_wait = false;     /* queue zc ... line-wait=on */
	assert_false(lab_trace_equal(&T, &u));
	u.queues[2].line_wait = true;
	u.ops[35].flags = 0;               /* set zc ... line-wait=on */
	assert_true(u.ops[35].kind == LAB_T_SET && (u.ops[35].given & LAB_TA_LINE_WAIT));
	assert_false(lab_trace_equal(&T, &u));
	u.ops[35].flags = 1;
	assert_true(lab_trace_equal(&T, &u));
	u.ops[37].flags = 7;               /* set rx batch=64: no line-wait, flags unused */
	assert_true(lab_trace_equal(&T, &u));
	/* A field the statement does not use does not count. */
	u.ops[1].next = 99;   /* fill */
	assert_true(lab_trace_equal(&T, &u));
	u.nops--;
	assert_false(lab_trace_equal(&T, &u));
	u.nops++;
	lab_trace_free(&u);
}

static void test_format_op(void **state)
{
	char buf[64];
	size_t n;

	(void)state;
	parse_ok(SPLIT_SETUP "desc tx 1 addr=0x10000 len=12 flags=next|write next=2\n");
	n = lab_trace_format_op(&T, last_op(), NULL, 0);
	assert_int_equal(n, strlen("desc tx 1 addr=0x10000 len=12 flags=next|write next=2"));
	assert_int_equal(lab_trace_format_op(&T, last_op(), buf, sizeof(buf)), n);
	assert_string_equal(buf, "desc tx 1 addr=0x10000 len=12 flags=next|write next=2");
	/* Cut short: still terminated, still the length it needed. */
	assert_int_equal(lab_trace_format_op(&T, last_op(), buf, 10), n);
	assert_string_equal(buf, "desc tx 1");
	assert_int_equal(lab_trace_format_op(&T, last_op(), buf, 1), n);
	assert_string_equal(buf, "");
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(lab_trace_kind_name(LAB_T_WRITE), "write");
	assert_string_equal(lab_trace_kind_name(LAB_T_DOUBLE_FETCH), "double-fetch");
	assert_string_equal(lab_trace_kind_name(LAB_T_EXPECT_PACKET), "expect packet");
	assert_string_equal(lab_trace_kind_name(LAB_T_EXPECT_DIRTY), "expect dirty");
	assert_string_equal(lab_trace_kind_name(LAB_T__KIND_COUNT), "unknown");
	assert_string_equal(lab_trace_status_name(LAB_TRACE_DELIVERED), "delivered");
	assert_string_equal(lab_trace_status_name(LAB_TRACE_TOO_BIG), "too_big");
	assert_string_equal(lab_trace_status_name(LAB_TRACE_TOO_MANY_PIECES), "too_many_pieces");
}

static void test_load_save(void **state)
{
	char path[] = "/tmp/test_trace_parse_XXXXXX";
	char err[512];
	struct lab_trace u;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	parse_ok(rich_split);
	assert_true(lab_trace_save(&T, path, err, sizeof(err)));
	assert_true(lab_trace_load(&u, path, err, sizeof(err)));
	assert_true(lab_trace_equal(&T, &u));
	lab_trace_free(&u);
	/* Errors name the file. */
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs("vhostlab-trace 1\nkick\n", f);
		fclose(f);
	}
	assert_false(lab_trace_load(&u, path, err, sizeof(err)));
	assert_true(strncmp(err, path, strlen(path)) == 0);
	assert_non_null(strstr(err, ":2:1: 'kick': missing argument"));
	unlink(path);
	assert_false(lab_trace_load(&u, path, err, sizeof(err)));
	assert_non_null(strstr(err, "No such file"));
	assert_false(lab_trace_save(&T, "/nonexistent-dir/x.trace", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent-dir/x.trace: "));
}

/* ---- errors ----------------------------------------------------------------------------- */

static void test_error_message_shape(void **state)
{
	char err[512];
	struct lab_trace t;
	static const char text[] = HDR "features version_1\nregion 0x0 0x1000\n"
				       "queue q tx size=1 at=0x0\n"
				       "desc q 0 addr=0x0 len=0x1g\n";

	(void)state;
	assert_false(lab_trace_parse(&t, text, strlen(text), "bug.trace", err, sizeof(err)));
	assert_string_equal(err, "bug.trace:5:19: 'len=0x1g': not a number (decimal, or hex "
				 "after 0x)");
	/* Bytes that cannot be printed are escaped; the token is cut short when long. */
	assert_false(lab_trace_parse(&t, HDR "ki\x01\xffk\n", strlen(HDR) + 6, "x", err,
				     sizeof(err)));
	assert_string_equal(err, "x:2:1: 'ki\\x01\\xffk': unknown statement; expected write, "
				 "fill, desc, pdesc, idesc, avail, kick, post, mutate, "
				 "double-fetch, fault, dequeue, discard, free, complete, enqueue, "
				 "kicks, set, remap or expect");
	/* A NUL byte is only a byte. */
	assert_false(lab_trace_parse(&t, HDR "seed 1\0002\n", strlen(HDR) + 9, "x", err,
				     sizeof(err)));
	assert_string_equal(err, "x:2:6: '1\\x002': not a number (decimal, or hex after 0x)");
	/* No room for a message is fine too. */
	assert_false(lab_trace_parse(&t, "x", 1, "x", NULL, 0));
	assert_false(lab_trace_parse(&t, "x", 1, "x", err, 1));
	assert_string_equal(err, "");
}

static void test_errors_header(void **state)
{
	(void)state;
	parse_err("", 1, 1, "empty trace");
	parse_err("# only a comment\n\n", 1, 1, "empty trace");
	parse_err("features version_1\n", 1, 1, "starts with the header 'vhostlab-trace 2'");
	parse_err("  vhostlab-trace 3\n", 1, 18, "unsupported version");
	parse_err("vhostlab-trace\n", 1, 1, "missing argument");
	parse_err("vhostlab-trace 1 1\n", 1, 18, "unexpected argument");
	parse_err("vhostlab-trace v1\n", 1, 16, "not a number");
	parse_err(HDR "vhostlab-trace 1\n", 2, 1, "the header is given twice");
}

static void test_errors_lexical(void **state)
{
	(void)state;
	/* Unknown keyword, argument; repeated key. */
	parse_err(HDR "kik q\n", 2, 1, "unknown statement");
	parse_err(SPLIT_SETUP "expect nothing\n", 7, 8, "unknown expectation");
	parse_err(SPLIT_SETUP "expect\n", 7, 1, "expect what?");
	parse_err(HDR "features version_1\nregion 0x0 0x1000 piece=4096\n", 3, 19,
		  "unknown argument for region");
	parse_err(HDR "features version_1\nqueue q tx size=8 size=8 at=0x0\n", 3, 19,
		  "size= given twice");
	/* Missing arguments name the statement at its first token. */
	parse_err(SPLIT_SETUP "  desc tx 0 addr=0x0\n", 7, 3, "'desc': missing len=");
	parse_err(SPLIT_SETUP "expect packet tx 0\n", 7, 1, "'expect packet': missing len=");
	parse_err(SPLIT_SETUP "fill 0x10000 4\n", 7, 1, "'fill': missing argument");
	parse_err(HDR "features version_1\nqueue q tx at=0x0\n", 3, 1, "missing size=");
	parse_err(HDR "pool bufs=1\n", 2, 1, "missing size=");
	/* Numbers: syntax and overflow, decimal and hex. */
	parse_err(HDR "seed 18446744073709551616\n", 2, 6, "too large");
	parse_err(HDR "seed 0x10000000000000000\n", 2, 6, "too large");
	parse_err(HDR "seed 0x\n", 2, 6, "not a number");
	parse_err(HDR "seed 0X10\n", 2, 6, "not a number");
	parse_err(HDR "seed -1\n", 2, 6, "not a number");
	parse_err(HDR "seed 1 2\n", 2, 8, "unexpected argument");
	parse_err(SPLIT_SETUP "desc tx 0 addr=0x0 len=\n", 7, 20, "not a number");
	/* Out of range for the field. */
	parse_err(SPLIT_SETUP "desc tx 0 addr=0x0 len=0 next=65536\n", 7, 26,
		  "must be 0 to 65535");
	parse_err(SPLIT_SETUP "desc tx 0 addr=0x0 len=4294967296\n", 7, 20,
		  "must be 0 to 4294967295");
	parse_err(SPLIT_SETUP "desc tx 8 addr=0x0 len=0\n", 7, 9, "must be 0 to 7");
	parse_err(SPLIT_SETUP "avail tx 65536\n", 7, 10, "must be 0 to 65535");
	parse_err(SPLIT_SETUP "fill 0x10000 1 byte:256\n", 7, 16, "must be 0 to 255");
	parse_err(SPLIT_SETUP "enqueue rx len=1,data=zero,gso_type=256\n", 7, 28,
		  "must be 0 to 255");
	parse_err(SPLIT_SETUP "enqueue rx len=1,data=zero,hdr_len=65536\n", 7, 28,
		  "must be 0 to 65535");
	parse_err(SPLIT_SETUP "expect packet tx 0 len=1 csum_start=65536\n", 7, 26,
		  "must be 0 to 65535");
	parse_err(SPLIT_SETUP "dequeue tx 4097\n", 7, 12, "must be 0 to 4096");
	parse_err(SPLIT_SETUP "set tx\n", 7, 5, "changes nothing");
	parse_err(SPLIT_SETUP "set tx\n", 7, 5, "or line-wait=");
	parse_err(SPLIT_SETUP "set rx line-wait=on\n", 7, 8, "line-wait is a dequeue option: tx "
		  "queues only");
	parse_err(PACKED_SETUP "set rx batch=0 line-wait=off\n", 7, 16, "tx queues only");
	parse_err(PACKED_SETUP "set tx line-wait=yes\n", 7, 8, "expected off or on");
	parse_err(PACKED_SETUP "set tx line-wait=on line-wait=on\n", 7, 21, "given twice");
	parse_err(SPLIT_SETUP "set rx alloc=burst\n", 7, 8, "tx queues only");
	parse_err(SPLIT_SETUP "set tx zc-max=3\n", 7, 8, "needs zero-copy");
	parse_err(SPLIT_SETUP "set tx zero-copy=1 zc-max=9\n", 7, 20, "must be 1 to 8");
	parse_err(SPLIT_SETUP "remap tx\n", 7, 7, "");
	parse_err(SPLIT_SETUP "dequeue tx 4097\n", 7, 12, "must be 0 to 4096");
	parse_err(SPLIT_SETUP "expect status rx 4096 delivered\n", 7, 18, "must be 0 to 4095");
	parse_err(SPLIT_SETUP "expect held tx 9\n", 7, 16, "must be 0 to 8");
	parse_err(SPLIT_SETUP "mutate 0x10000 00 on-read=0\n", 7, 19, "must be 1 to");
	/* Hex bytes, patterns, digests. */
	parse_err(SPLIT_SETUP "write 0x10000 abc\n", 7, 15, "odd number of hex digits");
	parse_err(SPLIT_SETUP "write 0x10000 0xab\n", 7, 15, "not hex bytes");
	parse_err(SPLIT_SETUP "fill 0x10000 3 hex:abcdef0\n", 7, 16, "odd number of hex digits");
	parse_err(SPLIT_SETUP "fill 0x10000 3 hex:\n", 7, 16, "no hex bytes");
	parse_err(SPLIT_SETUP "fill 0x10000 3 random\n", 7, 16, "not a pattern");
	parse_err(SPLIT_SETUP "fill 0x10000 8 fnv1a:0123456789abcdef\n", 7, 16,
		  "a digest only stands in expectations");
	parse_err(SPLIT_SETUP "fill 0x10000 3 hex:abcd\n", 7, 16, "2 bytes given for a length of 3");
	parse_err(SPLIT_SETUP "expect packet tx 0 len=3 data=hex:abcdef01\n", 7, 26,
		  "4 bytes given for a length of 3");
	parse_err(SPLIT_SETUP "enqueue rx len=1,data=zero len=2,data=hex:00\n", 7, 34,
		  "1 bytes given for a length of 2");
	parse_err(SPLIT_SETUP "expect mem 0x10000 1 hex:0000\n", 7, 22,
		  "2 bytes given for a length of 1");
	parse_err(SPLIT_SETUP "expect packet tx 0 len=3 fnv1a=0123456789abcde\n", 7, 26,
		  "a digest is 16 hex digits, 15 given");
	parse_err(SPLIT_SETUP "expect packet tx 0 len=3 fnv1a=0123456789abcdef0\n", 7, 26,
		  "16 hex digits, 17 given");
	parse_err(SPLIT_SETUP "expect mem 0x10000 3 fnv1a=0123456789abcdeg\n", 7, 22,
		  "a digest is 16 hex digits");
	parse_err(SPLIT_SETUP "expect packet tx 0 len=3 data=fnv1a:01\n", 7, 26,
		  "16 hex digits, 2 given");
	parse_err(SPLIT_SETUP "expect packet tx 0 len=3 data=zero fnv1a=0123456789abcdef\n", 7,
		  36, "data= or fnv1a=, not both");
	parse_err(SPLIT_SETUP "expect mem 0x10000 3 zero fnv1a=0123456789abcdef\n", 7, 27,
		  "not both");
	parse_err(SPLIT_SETUP "expect mem 0x10000 3\n", 7, 1, "missing the pattern");
	/* Flags. */
	parse_err(SPLIT_SETUP "desc tx 0 addr=0 len=0 flags=next|avail\n", 7, 24,
		  "next write indirect");
	parse_err(SPLIT_SETUP "desc tx 0 addr=0 len=0 flags=next|next\n", 7, 24,
		  "flag next given twice");
	parse_err(SPLIT_SETUP "desc tx 0 addr=0 len=0 flags=next|\n", 7, 24, "not descriptor flags");
	parse_err(SPLIT_SETUP "desc tx 0 addr=0 len=0 flags=0x10000\n", 7, 24, "must be 0 to 65535");
	/* Names and words. */
	parse_err(HDR "features version_1\nqueue 9q tx size=1 at=0\n", 3, 7,
		  "a name starts with a letter");
	parse_err(HDR "features version_1\nqueue q.1 tx size=1 at=0\n", 3, 7,
		  "letters, digits");
	parse_err(HDR "features version_1\nqueue q0123456789012345678901234567890 tx size=1 "
		  "at=0\n", 3, 7, "longer than 31");
	parse_err(HDR "features version_1\nqueue q both size=1 at=0\n", 3, 9,
		  "expected tx or rx");
	parse_err(SPLIT_SETUP "double-fetch on\n", 7, 14, "expected off, detect or adversarial");
	parse_err(SPLIT_SETUP "dequeue tx 1 keep\n", 7, 14, "expected hold");
	parse_err(SPLIT_SETUP "expect call tx maybe\n", 7, 16, "expected no or yes");
	parse_err(SPLIT_SETUP "expect status rx 0 lost\n", 7, 20,
		  "expected delivered, too_big, too_many_pieces or offload");
	parse_err(SPLIT_SETUP "expect used tx nothing\n", 7, 16, "expected none");
	parse_err(SPLIT_SETUP "expect broken tx yes\n", 7, 18, "a drop reason");
	parse_err(SPLIT_SETUP "expect stat tx drops.bogus 1\n", 7, 16, "no such drop reason");
	parse_err(SPLIT_SETUP "expect stat tx Packets 1\n", 7, 16, "not a counter name");
	parse_err(HDR "features version_1 in-order\n", 2, 20, "expected csum, guest_csum");
	parse_err(HDR "features version_1 version_1\n", 2, 20, "feature given twice");
	parse_err(HDR "features 0x1 version_1\n", 2, 14, "names or one number");
	/* Packets and buffers. */
	parse_err(SPLIT_SETUP "enqueue rx len=1\n", 7, 12, "needs len=N and data=PATTERN");
	parse_err(SPLIT_SETUP "enqueue rx len=1,data=zero,,\n", 7, 28, "not a packet field");
	parse_err(SPLIT_SETUP "enqueue rx len=1,data=zero,mtu=5\n", 7, 28, "not a packet field");
	parse_err(SPLIT_SETUP "enqueue rx data=zero,len=1,data=zero\n", 7, 28,
		  "data= given twice");
	parse_err(SPLIT_SETUP "enqueue rx len=1048577,data=zero\n", 7, 12, "must be 0 to 1048576");
	parse_err(SPLIT_SETUP "enqueue\n", 7, 1, "missing argument");
	parse_err(SPLIT_SETUP "post tx 0x10000\n", 7, 9, "a buffer is GPA+LEN");
	parse_err(SPLIT_SETUP "post tx 0x10000+4:r\n", 7, 9, "a buffer is GPA+LEN");
	parse_err(SPLIT_SETUP "post tx 0x10000+\n", 7, 9, "not a number");
	parse_err(SPLIT_SETUP "post tx 0x10000+4294967296\n", 7, 9, "must be 0 to 4294967295");
	parse_err(SPLIT_SETUP "free tx 1 x\n", 7, 11, "not a number");
}

static void test_errors_setup(void **state)
{
	(void)state;
	/* Regions. */
	parse_err(HDR "region 0x800 0x1000\n", 2, 8, "multiple of 4096");
	parse_err(HDR "region 0x0 0x1800\n", 2, 12, "multiple of 4096");
	parse_err(HDR "region 0x0 0\n", 2, 12, "not 0");
	parse_err(HDR "region 0xfffffffffffff000 0x2000\n", 2, 27, "past the end of the 64-bit");
	parse_err(HDR "region 0x0 0x40000000\nregion 0x40000000 0x1000\n", 3, 19,
		  "more than 1073741824 bytes");
	parse_err(HDR "region 0x0 0x4000\nregion 0x10000 0x1000\nregion 0x3000 0x1000\n", 4, 8,
		  "overlaps the region at 0x0");
	parse_err(HDR "region 0x0 0x4000 pieces=6144\n", 2, 19, "multiple of 4096");
	parse_err(HDR "region 0x0 0x4000 pieces=0\n", 2, 19, "must be 4096 to 16384");
	parse_err(HDR "region 0x0 0x4000 pieces=0x8000\n", 2, 19, "must be 4096 to 16384");
	{
		/* 64 regions are fine, the 65th is not. */
		char text[4096];
		size_t o = (size_t)snprintf(text, sizeof(text), "%s", HDR);

		for (unsigned i = 0; i < 65; i++)
			o += (size_t)snprintf(text + o, sizeof(text) - o, "region 0x%x 0x1000\n",
					      i * 0x2000);
		parse_err(text, 66, 1, "more than 64 regions");
		text[strlen(text) - strlen("region 0x80000 0x1000\n")] = '\0';
		parse_ok(text);
		assert_int_equal(T.nregions, 64);
	}
	/* Queues: sizes, layouts, addresses, options. */
	parse_err(HDR "features version_1\nqueue q tx size=12 at=0\n", 3, 12, "power of two");
	parse_err(HDR "features version_1\nqueue q tx size=65536 at=0\n", 3, 12,
		  "must be 1 to 32768");
	parse_err(HDR "features version_1\nqueue q tx size=0 at=0\n", 3, 12, "must be 1 to 32768");
	parse_err(HDR "features ring_packed\nqueue q tx size=32769 at=0\n", 3, 12,
		  "must be 1 to 32768");
	parse_err(HDR "features version_1\nqueue q tx size=1\n", 3, 1, "missing at=GPA");
	parse_err(HDR "features version_1\nqueue q tx size=1 desc=0 avail=0x10\n", 3, 1,
		  "missing used=");
	parse_err(HDR "features version_1\nqueue q tx size=1 at=0 used=0x10\n", 3, 24,
		  "either at= or every ring address");
	parse_err(HDR "features version_1\nqueue q tx size=1 at=0xfffffffffffffff0\n", 3, 19,
		  "the rings run past the end");
	parse_err(HDR "features version_1\nqueue q tx size=1 desc=0xfffffffffffffff8 avail=0 "
		  "used=0\n", 3, 19, "the ring area runs past the end");
	parse_err(HDR "features version_1\nqueue q tx size=1 at=0 driver=0\n", 3, 24,
		  "packed rings only");
	parse_err(HDR "features version_1\nqueue q tx size=1 at=0 wrap=0\n", 3, 24,
		  "packed rings only");
	parse_err(HDR "features ring_packed\nqueue q tx size=1 desc=0 avail=0x10 used=0x20\n", 3,
		  26, "split rings only");
	parse_err(HDR "features ring_packed\nqueue q tx size=4 at=0 start=4\n", 3, 24,
		  "must be 0 to 3");
	parse_err(HDR "features ring_packed\nqueue q tx size=4 at=0 wrap=2\n", 3, 24,
		  "must be 0 to 1");
	parse_err(HDR "features version_1\nqueue q tx size=4 at=0 start=65536\n", 3, 24,
		  "must be 0 to 65535");
	parse_err(HDR "features version_1\nqueue q tx size=4 at=0 zc-max=2\n", 3, 24,
		  "needs zero-copy=MINLEN");
	parse_err(HDR "features version_1\nqueue q tx size=4 at=0 zero-copy=1 zc-max=5\n", 3, 36,
		  "must be 1 to 4");
	parse_err(HDR "features version_1\nqueue q tx size=4 at=0 zero-copy=1 zc-max=0\n", 3, 36,
		  "must be 1 to 4");
	parse_err(HDR "features version_1\nqueue q rx size=4 at=0 zero-copy=1\n", 3, 24,
		  "tx queues only");
	parse_err(HDR "features version_1\nqueue q rx size=4 at=0 alloc=burst\n", 3, 24,
		  "tx queues only");
	parse_err(HDR "features version_1\nqueue q tx size=4 at=0 alloc=lazy\n", 3, 24,
		  "expected available or burst");
	parse_err(HDR "features ring_packed\nqueue q rx size=4 at=0 line-wait=on\n", 3, 24,
		  "line-wait is a dequeue option: tx queues only");
	parse_err(HDR "features ring_packed\nqueue q rx size=4 at=0 line-wait=off\n", 3, 24,
		  "tx queues only");
	parse_err(HDR "features ring_packed\nqueue q tx size=4 at=0 line-wait=1\n", 3, 24,
		  "expected off or on");
	parse_err(HDR "queue q tx size=4 at=0\n", 2, 1, "needs 'features' before it");
	parse_err(HDR "features version_1\nqueue q tx size=4 at=0\nfeatures version_1\n", 4, 1,
		  "given twice (first on line 2)");
	parse_err(HDR "features version_1\nqueue q tx size=4 at=0\nqueue q rx size=4 at=0x100\n", 4,
		  7, "queue declared twice (first on line 3)");
	{
		char text[2048];
		size_t o = (size_t)snprintf(text, sizeof(text), "%sfeatures version_1\n", HDR);

		for (unsigned i = 0; i < 17; i++)
			o += (size_t)snprintf(text + o, sizeof(text) - o,
					      "queue q%u tx size=1 at=0x%x\n", i, i * 0x100);
		parse_err(text, 19, 1, "more than 16 queues");
	}
	/* Pool, dirty log, seed. */
	parse_err(HDR "pool bufs=0 size=1\n", 2, 6, "must be 1 to 4294967295");
	parse_err(HDR "pool bufs=65536 size=16385\n", 2, 17, "more than 1073741824 bytes");
	parse_err(HDR "pool bufs=1 size=1\npool bufs=1 size=1\n", 3, 1, "given twice (first on line 2)");
	parse_err(HDR "dirty-log pages=0\n", 2, 11, "must be 1 to 268435456");
	parse_err(HDR "dirty-log pages=268435457\n", 2, 11, "must be 1 to 268435456");
	parse_err(HDR "seed 1\nseed 2\n", 3, 1, "given twice (first on line 2)");
	/* Setup after the first action. */
	parse_err(SPLIT_SETUP "kick tx\nregion 0x20000 0x1000\n", 8, 1,
		  "setup statements come before the first action (line 7)");
	parse_err(SPLIT_SETUP "expect used tx none\nseed 5\n", 8, 1, "before the first action");
}

static void test_errors_statements(void **state)
{
	(void)state;
	/* Queues used before they are declared. */
	parse_err(SPLIT_SETUP "kick nope\n", 7, 6, "no queue of that name");
	parse_err(SPLIT_SETUP "expect held tx2 0\n", 7, 13, "no queue of that name");
	/* Statements of the other layout. */
	parse_err(SPLIT_SETUP "pdesc tx 0 addr=0 len=0 id=0 flags=avail\n", 7, 1,
		  "'pdesc': packed rings only (this trace does not negotiate ring_packed)");
	parse_err(PACKED_SETUP "desc tx 0 addr=0 len=0\n", 7, 1,
		  "'desc': split rings only (this trace negotiates ring_packed)");
	parse_err(PACKED_SETUP "avail tx 0\n", 7, 1, "'avail': split rings only");
	parse_err(PACKED_SETUP "kick tx idx=3\n", 7, 9, "split rings only");
	parse_err(PACKED_SETUP "idesc 0x10000 0 addr=0 len=0 next=1\n", 7, 30, "split rings only");
	parse_err(PACKED_SETUP "pdesc tx 0 addr=0 len=0 flags=avail\n", 7, 1, "missing id=");
	parse_err(PACKED_SETUP "pdesc tx 8 addr=0 len=0 id=0 flags=avail\n", 7, 10,
		  "must be 0 to 7");
	/* Directions. */
	parse_err(SPLIT_SETUP "dequeue rx 1\n", 7, 9, "an rx queue; dequeue needs a tx queue");
	parse_err(SPLIT_SETUP "discard rx 1\n", 7, 9, "an rx queue; discard needs a tx queue");
	parse_err(SPLIT_SETUP "discard tx 1 hold\n", 7, 14, "hold");
	parse_err(SPLIT_SETUP "discard tx 4097\n", 7, 12, "must be 0 to 4096");
	parse_err(SPLIT_SETUP "enqueue tx len=1,data=zero\n", 7, 9,
		  "a tx queue; enqueue needs an rx queue");
	parse_err(SPLIT_SETUP "free rx 0\n", 7, 6, "needs a tx queue");
	parse_err(SPLIT_SETUP "complete rx\n", 7, 10, "needs a tx queue");
	parse_err(SPLIT_SETUP "kicks rx maybe\n", 7, 10, "maybe");
	parse_err(SPLIT_SETUP "fault pool fail-at=1,3,3\n", 7, 24, "ascend");
	parse_err(SPLIT_SETUP "fault pool fail-at=1,x\n", 7, 22, "not a number");
	parse_err(SPLIT_SETUP "fault alloc fail-at=1\n", 7, 13, "pool only");
	parse_err(SPLIT_SETUP "fault pool fail-at=1 fail-after=2\n", 7, 12, "not both");
	parse_err(SPLIT_SETUP "expect packet rx 0 len=1\n", 7, 15, "needs a tx queue");
	parse_err(SPLIT_SETUP "expect dequeued rx 0\n", 7, 17, "needs a tx queue");
	parse_err(SPLIT_SETUP "expect enqueued tx 0\n", 7, 17, "needs an rx queue");
	parse_err(SPLIT_SETUP "expect status tx 0 delivered\n", 7, 15, "needs an rx queue");
	parse_err(SPLIT_SETUP "expect held rx 0\n", 7, 13, "needs a tx queue");
	/* Guest memory that no region holds. */
	parse_err(SPLIT_SETUP "write 0x20000 00\n", 7, 7, "no region holds");
	parse_err(SPLIT_SETUP "fill 0x1ffff 2 zero\n", 7, 6, "reach 0x20000, which no region");
	parse_err(SPLIT_SETUP "mutate 0x30000 00\n", 7, 8, "no region holds");
	parse_err(SPLIT_SETUP "expect mem 0xffffffffffffffff 2 zero\n", 7, 12,
		  "past the end of the 64-bit");
	parse_err(SPLIT_SETUP "idesc 0x1fff8 0 addr=0 len=0\n", 7, 15, "no region holds");
	parse_err(SPLIT_SETUP "post rx indirect=0x1fff0 0x0+1 0x0+1\n", 7, 9, "no region holds");
	/* Across adjacent regions is inside guest memory. */
	parse_ok(SPLIT_SETUP "fill 0xfff0 0x20 zero\n");
	lab_trace_free(&T);
	/* Arguments that only make sense with others. */
	parse_err(SPLIT_SETUP "double-fetch detect seed=1\n", 7, 21, "only with adversarial");
	parse_err(SPLIT_SETUP "fault off fail-after=1\n", 7, 11, "not with off");
	parse_err(SPLIT_SETUP "fault pool\n", 7, 1, "missing fail-after=");
	parse_err(SPLIT_SETUP "expect used tx none id=1\n", 7, 21, "not with none");
	parse_err(SPLIT_SETUP "expect used tx id=1\n", 7, 1, "missing len=");
	parse_err(SPLIT_SETUP "expect dirty 0x0 yes\n", 7, 1, "needs 'dirty-log pages=N'");
	parse_err(SPLIT_SETUP "dirty-log pages=16\nexpect dirty 0x10000 no\n", 8, 14,
		  "beyond the 16 pages the dirty log covers");
	parse_err(SPLIT_SETUP "fill 0x10000 0 zero\n", 7, 14, "must be 1 to 1073741824");
}

static void test_errors_limits(void **state)
{
	/* A post of LAB_TRACE_MAX_ITEMS buffers parses; one more does not. */
	size_t cap = 64 + 16 * (LAB_TRACE_MAX_ITEMS + 1) + sizeof(SPLIT_SETUP);
	char *text = malloc(cap);
	size_t o, col;

	(void)state;
	assert_non_null(text);
	/* The indirect table of 4096 entries fits the 128 KiB of the setup's regions. */
	o = (size_t)snprintf(text, cap, "%spost rx indirect=0x8000", SPLIT_SETUP);
	for (unsigned i = 0; i < LAB_TRACE_MAX_ITEMS; i++)
		o += (size_t)snprintf(text + o, cap - o, " 0x10000+1");
	snprintf(text + o, cap - o, "\n");
	parse_ok(text);
	assert_int_equal(last_op()->nitems, LAB_TRACE_MAX_ITEMS);
	lab_trace_free(&T);
	/* "post rx indirect=0x8000", then 10 characters per buffer with its space. */
	col = strlen("post rx indirect=0x8000") + 10 * LAB_TRACE_MAX_ITEMS + 2;
	snprintf(text + o, cap - o, " 0x10000+1\n");
	{
		char where[32];
		char err[512];
		struct lab_trace t;

		assert_false(lab_trace_parse(&t, text, strlen(text), "t", err, sizeof(err)));
		snprintf(where, sizeof(where), "t:7:%zu: ", col);
		if (strncmp(err, where, strlen(where)) != 0)
			fail_msg("expected %s..., got %s", where, err);
		assert_non_null(strstr(err, "more than 4096 buffers"));
	}
	/* Too many tokens for one line at all. */
	o = (size_t)snprintf(text, cap, "%sfree tx", SPLIT_SETUP);
	for (unsigned i = 0; i < LAB_TRACE_MAX_ITEMS + 7; i++)
		o += (size_t)snprintf(text + o, cap - o, " 1");
	snprintf(text + o, cap - o, "\n");
	parse_err(text, 7, (unsigned)(7 + 2 * (LAB_TRACE_MAX_ITEMS + 6) + 2),
		  "too many tokens on one line");
	free(text);
	/* Hex bytes beyond LAB_TRACE_MAX_BYTES in one statement. */
	cap = 2 * LAB_TRACE_MAX_BYTES + 64 + sizeof(SPLIT_SETUP);
	text = malloc(cap);
	assert_non_null(text);
	o = (size_t)snprintf(text, cap, "%swrite 0x0 ", SPLIT_SETUP);
	memset(text + o, 'a', 2 * LAB_TRACE_MAX_BYTES + 2);
	text[o + 2 * LAB_TRACE_MAX_BYTES + 2] = '\0';
	parse_err(text, 7, 11, "more than 1048576 bytes");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_vectors),
		cmocka_unit_test(test_seq_pattern),
		cmocka_unit_test(test_pattern_fill_and_match),
		cmocka_unit_test_teardown(test_pattern_stream, teardown),
		cmocka_unit_test_teardown(test_setup_defaults, teardown),
		cmocka_unit_test_teardown(test_setup_split, teardown),
		cmocka_unit_test_teardown(test_setup_packed, teardown),
		cmocka_unit_test_teardown(test_guest_actions_split, teardown),
		cmocka_unit_test_teardown(test_guest_actions_packed, teardown),
		cmocka_unit_test_teardown(test_host_actions, teardown),
		cmocka_unit_test_teardown(test_expectations, teardown),
		cmocka_unit_test_teardown(test_lexical, teardown),
		cmocka_unit_test_teardown(test_round_trip_rich_split, teardown),
		cmocka_unit_test_teardown(test_round_trip_rich_packed, teardown),
		cmocka_unit_test_teardown(test_round_trip_normalises, teardown),
		cmocka_unit_test(test_round_trip_tool_built),
		cmocka_unit_test(test_queue_at_overflow),
		cmocka_unit_test_teardown(test_equal, teardown),
		cmocka_unit_test_teardown(test_format_op, teardown),
		cmocka_unit_test(test_names),
		cmocka_unit_test_teardown(test_load_save, teardown),
		cmocka_unit_test(test_error_message_shape),
		cmocka_unit_test(test_errors_header),
		cmocka_unit_test(test_errors_lexical),
		cmocka_unit_test_teardown(test_errors_setup, teardown),
		cmocka_unit_test_teardown(test_errors_statements, teardown),
		cmocka_unit_test_teardown(test_errors_limits, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

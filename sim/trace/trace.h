/* SPDX-License-Identifier: MIT */
/* A trace in memory: the parsed form of the text format of docs/trace-format.md (versions 1
 * and 2).
 *
 * One struct lab_trace holds the setup (features, regions, queues, pool, dirty log, seed) and
 * the statements after it (struct lab_trace_op), in file order. Version 2's blocks
 * (`repeat N {`, `either {`, `} or {`, `}`) stay in that flat array as their own statements
 * (LAB_T_REPEAT, LAB_T_EITHER, LAB_T_OR, LAB_T_END), not unrolled: the writer round-trips
 * them and the engines run them with a stack of open blocks. The parser guarantees they are
 * balanced and nest as docs/trace-format.md says. The parser
 * (trace_parse.c) fills it from text, the writer (trace_write.c) prints it in canonical
 * form, tools (recorders, converters, the minimiser) build it with the lab_trace_add_*
 * calls, and the replay engine (trace_replay.c) runs it. Every array is owned by the trace
 * and freed by lab_trace_free. */
#ifndef LAB_TRACE_H
#define LAB_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LAB_TRACE_VERSION 2u                /* what tools write; the parser reads 1 and 2 */
#define LAB_TRACE_MIN_VERSION 1u
#define LAB_TRACE_MAX_DEPTH 8u             /* open blocks (repeat / either) at once */
#define LAB_TRACE_MAX_REPEAT 1000000u      /* repeat N: 1..this */
#define LAB_TRACE_MAX_REGIONS 64u
#define LAB_TRACE_MAX_QUEUES 16u
#define LAB_TRACE_MAX_MEM (1ull << 30)     /* total bytes of all regions */
#define LAB_TRACE_MAX_ITEMS 4096u          /* buffers of a post, packets of a burst, ... */
#define LAB_TRACE_MAX_BYTES (1u << 20)     /* literal hex bytes in one statement */
#define LAB_TRACE_MAX_OPS (1u << 20)       /* statements after the setup */
#define LAB_TRACE_MAX_PKT_LEN (1u << 20)   /* an enqueue packet's length */
#define LAB_TRACE_MAX_DIRTY_PAGES (1u << 28) /* dirty-log bitmap: 32 MiB, 1 TiB of guest */
#define LAB_TRACE_MAX_TEXT (1u << 28)      /* bytes of text lab_trace_load reads */

/* ---- payload patterns ------------------------------------------------------------------ */

enum lab_trace_pat_kind {
	LAB_PAT_NONE = 0,  /* not given */
	LAB_PAT_HEX,       /* hex:BYTES -- bytes/nbytes */
	LAB_PAT_BYTE,      /* byte:V -- value */
	LAB_PAT_ZERO,      /* zero */
	LAB_PAT_SEQ,       /* seq:SEED -- value */
	LAB_PAT_STREAM,    /* stream:STATE -- value */
	LAB_PAT_FNV1A,     /* fnv1a:HEX16 -- value (a digest, only where expectations allow) */
};

struct lab_trace_pat {
	enum lab_trace_pat_kind kind;
	uint64_t value;
	uint8_t *bytes;    /* HEX: owned */
	uint32_t nbytes;
};

/* Bytes [off, off+n) of the pattern's stream into dst (HEX: caller keeps off+n <= nbytes;
 * FNV1A has no bytes). */
void lab_trace_pat_fill(const struct lab_trace_pat *p, uint64_t off, uint8_t *dst, size_t n);
/* 64-bit FNV-1a of n bytes, continuing from h (start with LAB_FNV1A_INIT). */
#define LAB_FNV1A_INIT 0xcbf29ce484222325ull
uint64_t lab_trace_fnv1a(uint64_t h, const uint8_t *p, size_t n);
/* Does the n-byte buffer match the pattern (FNV1A: its digest)? */
bool lab_trace_pat_match(const struct lab_trace_pat *p, const uint8_t *buf, size_t n);

/* ---- offload fields of a packet (struct vl_offload) with which of them are given ------- */

enum {
	LAB_OL_FLAGS = 1u << 0,
	LAB_OL_GSO_TYPE = 1u << 1,
	LAB_OL_HDR_LEN = 1u << 2,
	LAB_OL_GSO_SIZE = 1u << 3,
	LAB_OL_CSUM_START = 1u << 4,
	LAB_OL_CSUM_OFFSET = 1u << 5,
};

struct lab_trace_ol {
	uint8_t given;     /* LAB_OL_* bits */
	uint8_t flags, gso_type;
	uint16_t hdr_len, gso_size, csum_start, csum_offset;
};

/* ---- setup ------------------------------------------------------------------------------- */

struct lab_trace_region {
	uint64_t gpa, size;
	uint64_t pieces;   /* host piece size; 0 = the region is one piece */
};

enum lab_trace_dir { LAB_TRACE_TX = 0, LAB_TRACE_RX = 1 };
enum lab_trace_alloc { LAB_TRACE_ALLOC_AVAILABLE = 0, LAB_TRACE_ALLOC_BURST = 1 };

struct lab_trace_queue {
	char name[32];
	enum lab_trace_dir dir;
	uint32_t size;
	bool at_given;           /* written as at=GPA (desc holds it); else desc/driver/device */
	uint64_t desc, driver, device;   /* split: desc, avail, used; packed: desc, driver, device */
	uint16_t start;          /* split: 16-bit index; packed: position */
	bool wrap;               /* packed: starting wrap counter (default 1) */
	uint32_t batch;          /* default 256 */
	bool zero_copy;
	uint32_t zc_min;         /* zero-copy=MINLEN */
	uint32_t zc_max;         /* 0 = not given (queue size) */
	enum lab_trace_alloc alloc;
	bool line_wait;          /* line-wait=on (vl_vq_set_tx_line_wait): tx queues only */
};

/* ---- statements ------------------------------------------------------------------------ */

enum lab_trace_kind {
	/* guest */
	LAB_T_WRITE,        /* addr, pat (HEX) */
	LAB_T_FILL,         /* addr, len, pat */
	LAB_T_DESC,         /* queue, index, addr, len, flags, next (opt: LAB_TA_FLAGS/NEXT) */
	LAB_T_PDESC,        /* queue, index (position), addr, len, id, flags */
	LAB_T_IDESC,        /* table (addr2), index, addr, len, flags, next (opt) */
	LAB_T_AVAIL,        /* queue, index (head) */
	LAB_T_KICK,         /* queue, value (idx, opt: LAB_TA_IDX) */
	LAB_T_POST,         /* queue, addr2 (indirect table, opt: LAB_TA_INDIRECT), bufs */
	LAB_T_MUTATE,       /* addr, pat (HEX), value (on-read N, default 1) */
	LAB_T_DOUBLE_FETCH, /* value (enum lab_trace_df), seed (opt: LAB_TA_SEED) */
	LAB_T_FAULT,        /* value (enum lab_trace_fault), count (fail-after; off: LAB_TA_OFF)
			     * or nums (fail-at: LAB_TA_FAIL_AT, pool only) */
	/* host */
	LAB_T_DEQUEUE,      /* queue, count (max), hold */
	LAB_T_DISCARD,      /* queue, count (max), touch (LAB_TA_TOUCH): vl_net_discard(_touch) */
	LAB_T_FREE,         /* queue, nums */
	LAB_T_COMPLETE,     /* queue */
	LAB_T_ENQUEUE,      /* queue, pkts */
	LAB_T_KICKS,        /* queue, value (1: the device wants kicks, 0: it polls) */
	LAB_T_SET,          /* queue; given LAB_TA_BATCH: count; LAB_TA_ALLOC: value;
			     * LAB_TA_ZC: len = min length (LAB_TA_OFF: zero-copy off) and
			     * index = zc-max (0: the queue size); LAB_TA_LINE_WAIT: flags
			     * (1 on, 0 off) */
	LAB_T_REMAP,        /* (none): a new memory table over the same regions */
	/* expectations */
	LAB_T_EXPECT_DEQUEUED,  /* queue, count */
	LAB_T_EXPECT_PACKET,    /* queue, index (K), len, pat (opt, may be FNV1A), ol */
	LAB_T_EXPECT_ENQUEUED,  /* queue, count */
	LAB_T_EXPECT_STATUS,    /* queue, index (I), value (enum lab_trace_status) */
	LAB_T_EXPECT_USED,      /* queue; id if LAB_TA_ID, len if LAB_TA_LEN (v1: both always);
				 * or LAB_TA_NONE */
	LAB_T_EXPECT_MEM,       /* addr, len, pat (may be FNV1A) */
	LAB_T_EXPECT_STAT,      /* queue, name, count */
	LAB_T_EXPECT_BROKEN,    /* queue, name (reason); LAB_TA_NONE for "no"; LAB_TA_ANY for
				 * "any" (broken, whatever the reason; v2) */
	LAB_T_EXPECT_CALL,      /* queue, value (1 yes, 0 no) */
	LAB_T_EXPECT_HELD,      /* queue, count */
	LAB_T_EXPECT_DIRTY,     /* addr, value (1 yes, 0 no) */
	/* version 2 */
	LAB_T_REPEAT,           /* count (1..LAB_TRACE_MAX_REPEAT): `repeat N {` opens a block */
	LAB_T_END,              /* (none): `}` closes the innermost repeat or either block */
	LAB_T_EITHER,           /* (none): `either {` opens the first branch */
	LAB_T_OR,               /* (none): `} or {` ends one branch and opens the next */
	LAB_T_EXPECT_USED_SET,  /* queue, used (nitems): the next nitems used elements in any order */
	LAB_T_MESSAGE,          /* queue (not for get-features, log-start), value (enum
				 * lab_trace_msg), count: a vhost-user message (v2; see below) */
	LAB_T_EXPECT_LOGGED,    /* addr, len: every page of [addr, addr+len) marked in the log
				 * `message log-start` shared (v2) */
	LAB_T__KIND_COUNT
};

/* `message` statements (version 2): what a front end says about a vring after the setup.
 * GET_VRING_BASE: stop the ring; count = the reply's num it must be (LAB_TA_EXPECT), or any.
 * VRING_ENABLE: SET_VRING_ENABLE with count 0 or 1. VRING_SETUP: the ring set up again on
 * the areas it has (SET_VRING_NUM, SET_VRING_BASE with count, ADDR, KICK, CALL, ENABLE 1),
 * as a front end resumes one GET_VRING_BASE stopped. GET_FEATURES (no queue): with
 * LAB_TA_EXPECT, the offered bits must keep virtio 5.1.3.1's dependencies (`expect=deps`).
 * LOG_START (no queue): dirty-page logging turned on as QEMU does when a migration starts,
 * on a shared bitmap of count 4 KiB pages (SET_LOG_BASE with its memfd, SET_FEATURES with
 * LOG_ALL, SET_VRING_ADDR again with the log flag for every vring); `expect logged` reads
 * it. */
enum lab_trace_msg {
	LAB_TRACE_MSG_GET_VRING_BASE, LAB_TRACE_MSG_VRING_ENABLE, LAB_TRACE_MSG_VRING_SETUP,
	LAB_TRACE_MSG_GET_FEATURES, LAB_TRACE_MSG_LOG_START
};
#define LAB_TRACE_NMSGS 5u
/* Does the message name no queue? */
static inline bool lab_trace_msg_queueless(uint64_t m)
{
	return m == LAB_TRACE_MSG_GET_FEATURES || m == LAB_TRACE_MSG_LOG_START;
}

enum lab_trace_df { LAB_TRACE_DF_OFF, LAB_TRACE_DF_DETECT, LAB_TRACE_DF_ADVERSARIAL };
enum lab_trace_fault { LAB_TRACE_FAULT_POOL, LAB_TRACE_FAULT_ALLOC };
/* Same order and meaning as enum vl_rx_status (vl_net.h). */
enum lab_trace_status {
	LAB_TRACE_DELIVERED, LAB_TRACE_TOO_BIG, LAB_TRACE_TOO_MANY_PIECES, LAB_TRACE_OFFLOAD
};

/* Optional arguments present (op->given). */
enum {
	LAB_TA_FLAGS = 1u << 0,
	LAB_TA_NEXT = 1u << 1,
	LAB_TA_IDX = 1u << 2,
	LAB_TA_INDIRECT = 1u << 3,
	LAB_TA_SEED = 1u << 4,
	LAB_TA_OFF = 1u << 5,
	LAB_TA_NONE = 1u << 6,
	LAB_TA_HOLD = 1u << 7,
	LAB_TA_ON_READ = 1u << 8,
	LAB_TA_FAIL_AT = 1u << 9,
	LAB_TA_BATCH = 1u << 10,
	LAB_TA_ALLOC = 1u << 11,
	LAB_TA_ZC = 1u << 12,
	LAB_TA_TOUCH = 1u << 13,
	LAB_TA_LINE_WAIT = 1u << 14,
	LAB_TA_ID = 1u << 15,       /* expect used: id= given */
	LAB_TA_LEN = 1u << 16,      /* expect used: len= given */
	LAB_TA_ANY = 1u << 17,      /* expect broken QUEUE any */
	LAB_TA_EXPECT = 1u << 18,   /* message get-vring-base: expect= given */
};

struct lab_trace_buf {      /* a post buffer: GPA+LEN[:w] */
	uint64_t gpa;
	uint32_t len;
	bool write;
};

struct lab_trace_pkt {      /* an enqueue packet: len=,data=,offloads */
	uint32_t len;
	struct lab_trace_pat data;
	struct lab_trace_ol ol;
};

struct lab_trace_used {     /* an item of expect used-set: id=ID[,len=N] */
	uint16_t id;
	uint32_t len;
	bool has_len;
};

struct lab_trace_op {
	enum lab_trace_kind kind;
	uint32_t line;           /* source line (0 when built by a tool) */
	uint32_t given;          /* LAB_TA_* */
	uint32_t queue;          /* index into lab_trace.queues */
	uint64_t addr, addr2;
	uint64_t index;          /* descriptor index / position / packet number / head */
	uint64_t len;
	uint64_t count;
	uint64_t value;
	uint64_t seed;
	uint16_t flags, next, id;
	char name[40];           /* stat name or broken reason */
	struct lab_trace_pat pat;
	struct lab_trace_ol ol;
	uint32_t nitems;
	struct lab_trace_buf *bufs;   /* POST */
	struct lab_trace_pkt *pkts;   /* ENQUEUE */
	uint64_t *nums;               /* FREE; FAULT fail-at (ascending call numbers) */
	struct lab_trace_used *used;  /* EXPECT_USED_SET */
};

struct lab_trace {
	uint32_t version;
	uint64_t features;
	uint32_t nregions;
	struct lab_trace_region regions[LAB_TRACE_MAX_REGIONS];
	uint32_t nqueues;
	struct lab_trace_queue queues[LAB_TRACE_MAX_QUEUES];
	uint32_t pool_bufs, pool_size;   /* defaults 1024, 2048 */
	uint64_t dirty_pages;            /* 0 = no dirty log */
	uint64_t seed;                   /* default 1 */
	uint32_t nops, cap_ops;
	struct lab_trace_op *ops;
};

/* Descriptor flag names of the format (split and packed share the bit values). */
#define LAB_TRACE_DESC_NEXT 1u
#define LAB_TRACE_DESC_WRITE 2u
#define LAB_TRACE_DESC_INDIRECT 4u
#define LAB_TRACE_DESC_AVAIL (1u << 7)
#define LAB_TRACE_DESC_USED (1u << 15)

/* An empty trace with every default set (every queues[] slot holds the queue defaults). */
void lab_trace_init(struct lab_trace *t);
void lab_trace_free(struct lab_trace *t);
/* Append a statement (copied; the trace takes ownership of its arrays). Returns the stored
 * op, or NULL when out of memory. */
struct lab_trace_op *lab_trace_append(struct lab_trace *t, const struct lab_trace_op *op);
/* Free what one statement owns (its arrays and literal bytes). */
void lab_trace_op_free(struct lab_trace_op *op);
/* Does the trace negotiate ring_packed (every queue packed)? */
bool lab_trace_packed(const struct lab_trace *t);
/* Place a queue's rings the standard way from `gpa` (what `at=GPA` means): split: desc=GPA,
 * avail=GPA+16*size, used=round_up(avail+6+2*size, 4); packed: desc=GPA, driver=GPA+16*size,
 * device=driver+4. Sets at_given. Needs q->size; false (nothing changed) when an area
 * would run past 2^64. */
bool lab_trace_queue_at(struct lab_trace_queue *q, bool packed, uint64_t gpa);

/* ---- text ------------------------------------------------------------------------------ */

/* Parse `len` bytes of text. On error returns false and writes "NAME:LINE:COL: message" into
 * err (NAME is how the text is named in messages, e.g. its file name). The call initialises
 * *t; on failure *t is left empty (lab_trace_free is still safe). */
bool lab_trace_parse(struct lab_trace *t, const char *text, size_t len, const char *name,
		     char *err, size_t errlen);
/* Read and parse a file. */
bool lab_trace_load(struct lab_trace *t, const char *path, char *err, size_t errlen);

/* Canonical text of the trace into a malloc'd NUL-terminated string (NULL: out of memory). */
char *lab_trace_format(const struct lab_trace *t, size_t *len);
/* One statement's canonical text (no newline) into buf; returns the length it needed. */
size_t lab_trace_format_op(const struct lab_trace *t, const struct lab_trace_op *op, char *buf,
			   size_t n);
bool lab_trace_save(const struct lab_trace *t, const char *path, char *err, size_t errlen);

/* Same trace (setup and every statement, line numbers ignored)? */
bool lab_trace_equal(const struct lab_trace *a, const struct lab_trace *b);

/* Does the statement mean the same against any back end, e.g. one replayed over a vhost-user
 * socket (docs/trace-format.md, "Portability")? False for what only the in-process engine can
 * do or observe: mutate, double-fetch, fault, free, complete, enqueue, kicks, set, and the
 * expectations of the core's internals (dequeued, packet, enqueued, status, stat, call,
 * held, dirty, broken with a named reason). */
bool lab_trace_op_portable(const struct lab_trace_op *op);

/* Names of the format. */
const char *lab_trace_kind_name(enum lab_trace_kind k);   /* "write", "expect packet", ... */
const char *lab_trace_status_name(enum lab_trace_status s);

#endif

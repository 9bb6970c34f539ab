/* SPDX-License-Identifier: MIT */
/* The trace parser's shared state and its lexical layer (docs/trace-format.md, "Lexical
 * rules"): a line cut into tokens, a statement's tokens split into positional ones and
 * key=value arguments, and the readers of every value form (numbers, hex bytes, patterns,
 * flags, names, keyword choices). Every reader that fails has already written the error
 * "NAME:LINE:COL: 'TOKEN': message" and returns false, so statements read as chains of
 * `&&`. Internal to sim/trace: trace_parse.c (header, setup, the loop) and
 * trace_parse_ops.c (actions and expectations) use it. */
#ifndef LAB_TRACE_LEX_H
#define LAB_TRACE_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* Tokens a line may hold: the longest statements are a keyword, a queue, one argument and
 * LAB_TRACE_MAX_ITEMS buffers, packets or packet numbers; a few more so that the item
 * limit, with its clearer message, is what such a line runs into first. */
#define TL_MAX_TOKENS (LAB_TRACE_MAX_ITEMS + 8u)
/* Keys one statement accepts, at most (queue has thirteen). */
#define TL_MAX_KEYS 16u

/* A token: bytes s[0, len) starting at 1-based column col. v/vlen is the value it carries:
 * the whole token, or what follows '=' for an argument. */
struct tl_tok {
	const char *s;
	uint32_t len, col;
	const char *v;
	uint32_t vlen;
};

struct tl {
	struct lab_trace *t;
	const char *name;            /* the text's name in messages */
	char *err;
	size_t errlen;
	uint32_t line;
	struct tl_tok *tok;          /* [TL_MAX_TOKENS]: the line's tokens */
	uint32_t ntok;
	/* The statement being read (tl_stmt). */
	const char *what;            /* its name ("desc", "expect packet") */
	const char *usage;           /* its syntax, quoted in messages */
	uint32_t *pos;               /* [TL_MAX_TOKENS]: indices of positional tokens */
	uint32_t npos;
	const struct tl_tok *arg[TL_MAX_KEYS];   /* by index into the statement's keys */
	const char *const *keys;
	/* Setup bookkeeping: the line each setup statement was given on (0: not yet). */
	bool header_seen;
	uint32_t first_action_line;
	uint32_t features_line, pool_line, dirty_line, seed_line;
	uint32_t queue_line[LAB_TRACE_MAX_QUEUES];
	/* Version 2 blocks open at this line (trace_parse_block.c), innermost last. */
	uint32_t depth;
	struct tl_block {
		bool either;             /* an either block (else repeat) */
		uint32_t line;           /* where it was opened, for "never closed" */
		uint32_t branches;       /* either: branches opened so far */
		uint32_t items;          /* statements in the current branch / the body */
	} blk[LAB_TRACE_MAX_DEPTH];
};

/* ---- errors ------------------------------------------------------------------------- */

/* "NAME:LINE:COL: 'TOKEN': message" (the token quoted, escaped and shortened). */
bool tl_error(struct tl *p, const struct tl_tok *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "NAME:LINE:COL: 'WHAT': message" naming the statement at its first token. */
bool tl_error_stmt(struct tl *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "NAME:LINE:COL: message" with no token to name. */
bool tl_error_at(struct tl *p, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- lines and statements ------------------------------------------------------------ */

/* Cut one line (no newline; a trailing CR is dropped; '#' starts a comment) into p->tok. */
bool tl_tokenize(struct tl *p, const char *line, size_t n);
/* Does token tk spell word (whole token)? */
bool tl_is(const struct tl_tok *tk, const char *word);

/* Read the statement whose arguments start at token `first`: tokens holding '=' are
 * arguments and must be among `keys` (NULL-terminated), each at most once (p->arg[i] is
 * the token of keys[i] or NULL); the others are positional, between min_pos and max_pos of
 * them. `what` names the statement and `usage` is its syntax, for messages. With
 * `eq_positional`, every token is positional (enqueue's packets contain '='). */
bool tl_stmt(struct tl *p, uint32_t first, const char *what, const char *usage,
	     const char *const *keys, uint32_t min_pos, uint32_t max_pos, bool eq_positional);
/* Positional token i of the statement. */
static inline const struct tl_tok *tl_pos(const struct tl *p, uint32_t i)
{
	return &p->tok[p->pos[i]];
}
/* Argument keys[i] is present, else "missing KEY=" naming the statement. */
bool tl_need(struct tl *p, unsigned i);

/* ---- values (each reads tk->v/vlen and names tk on error) ------------------------------ */

/* A number: decimal or 0x hex, 64-bit unsigned. */
bool tl_u64(struct tl *p, const struct tl_tok *tk, uint64_t *v);
/* A number in [lo, hi]. */
bool tl_range(struct tl *p, const struct tl_tok *tk, uint64_t lo, uint64_t hi, uint64_t *v);
/* Hex bytes (an even number of hex digits, no 0x), at most LAB_TRACE_MAX_BYTES, into a
 * HEX pattern that owns them. */
bool tl_hex(struct tl *p, const struct tl_tok *tk, struct lab_trace_pat *pat);
/* A payload pattern: hex:BYTES byte:V zero seq:SEED, and fnv1a:HEX16 when `digest_ok`. */
bool tl_pattern(struct tl *p, const struct tl_tok *tk, bool digest_ok,
		struct lab_trace_pat *pat);
/* A digest value: exactly 16 hex digits. */
bool tl_fnv(struct tl *p, const struct tl_tok *tk, uint64_t *v);
/* Descriptor flags: names of the layout joined by '|', or a 16-bit number. */
bool tl_flags(struct tl *p, const struct tl_tok *tk, bool packed, uint16_t *v);
/* One of n words; *idx its index (the message lists them). */
bool tl_word(struct tl *p, const struct tl_tok *tk, const char *const *words, unsigned n,
	     unsigned *idx);
/* tl_word for a dequeue option (alloc=, line-wait=) of a queue of direction dir: on an rx
 * queue the error "WHAT is a dequeue option: tx queues only". */
bool tl_tx_word(struct tl *p, const struct tl_tok *tk, enum lab_trace_dir dir, const char *what,
		const char *const *words, unsigned n, unsigned *idx);
/* A declared queue by name; tl_find_queue only looks (no error). */
bool tl_find_queue(const struct tl *p, const struct tl_tok *tk, uint32_t *qi);
bool tl_queue(struct tl *p, const struct tl_tok *tk, uint32_t *qi);
/* A name: a letter, then letters, digits, '_' or '-'; shorter than `size`. */
bool tl_name(struct tl *p, const struct tl_tok *tk, char *out, size_t size);

/* [gpa, gpa+len) lies in the trace's regions (len >= 1; adjacent regions count as one). */
bool tl_in_mem(struct tl *p, const struct tl_tok *tk, uint64_t gpa, uint64_t len,
	       const char *what);

/* ---- statement checks shared by actions and expectations ------------------------------ */

/* The statement needs the trace's layout to be packed (or split); else an error naming it. */
bool tl_layout(struct tl *p, bool packed);
/* The queue named by tk, which the statement needs to carry `dir` traffic. */
bool tl_queue_dir(struct tl *p, const struct tl_tok *tk, enum lab_trace_dir dir, uint32_t *qi);
/* A HEX pattern must hold exactly `len` bytes (tk names it). */
bool tl_pat_len(struct tl *p, const struct tl_tok *tk, const struct lab_trace_pat *pat,
		uint64_t len);
/* Offload field k (lab_tn_ol order, LAB_OL_* bit k) of a packet from tk. */
bool tl_offload(struct tl *p, const struct tl_tok *tk, unsigned k, struct lab_trace_ol *ol);

/* trace_parse_ops.c: read one action or expectation (p->tok holds it; p->what names it)
 * into op. trace_parse_expect.c: the expectations (tokens from index 2). */
bool tl_action(struct tl *p);
bool tl_expect(struct tl *p, struct lab_trace_op *op);

/* trace_parse_block.c: version 2's blocks. tl_is_block: does the line open or close one
 * (`repeat`, `either`, `}`)? tl_block reads it; tl_in_block checks that a statement
 * (its keyword at tok[0]) may stand where it is and counts it in the open block;
 * tl_blocks_closed is the end-of-text check naming the line of a block left open. */
bool tl_is_block(const struct tl *p);
bool tl_block(struct tl *p);
bool tl_in_block(struct tl *p);
bool tl_blocks_closed(struct tl *p);
/* A version 2 statement or form in a version 1 trace: the error naming it. */
bool tl_needs_v2(struct tl *p, const struct tl_tok *tk);

#endif

/* SPDX-License-Identifier: MIT */
/* Version 2's blocks in a trace's flat statement array (trace.h): the structure check every
 * consumer of a tool-built trace needs (the parser enforces the same rules on text), and
 * the matching `}` of a block. Shared by the replay engines and the minimiser. */
#ifndef LAB_TRACE_BLOCKS_H
#define LAB_TRACE_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "trace.h"

/* Is op an expectation (what an either branch may hold)? */
bool lab_trace_kind_expect(enum lab_trace_kind k);
/* Do the blocks of t follow docs/trace-format.md ("Blocks")? repeat counts 1..
 * LAB_TRACE_MAX_REPEAT, every block closed, nesting at most LAB_TRACE_MAX_DEPTH, or only in
 * either blocks, each either two or more non-empty branches of expectations only. On false
 * *bad is the index of the offending statement (nops: the end) and *why says what is wrong. */
bool lab_trace_blocks_check(const struct lab_trace *t, uint32_t *bad, const char **why);
/* Index of the LAB_T_END that closes the block opened at ops[open] (a checked trace). */
uint32_t lab_trace_block_end(const struct lab_trace *t, uint32_t open);

#endif

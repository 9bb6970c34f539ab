/* SPDX-License-Identifier: MIT */
/* Trace text, the statements after the setup (docs/trace-format.md, "Guest actions" and
 * "Host actions"), and the dispatch that also sends `expect` lines to trace_parse_expect.c.
 * Each reader fills one struct lab_trace_op the way trace.h documents per kind. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace_lex.h"
#include "trace_names.h"

/* Indirect table entries the format can name: a table is at most 2^32 bytes. */
#define MAX_TABLE_INDEX 0x0fffffffu

/* ---- guest actions ------------------------------------------------------------------ */

static bool st_write(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	return tl_stmt(p, 1, "write", "write GPA HEXBYTES", keys, 2, 2, false) &&
	       tl_u64(p, tl_pos(p, 0), &op->addr) && tl_hex(p, tl_pos(p, 1), &op->pat) &&
	       tl_in_mem(p, tl_pos(p, 0), op->addr, op->pat.nbytes, "the bytes");
}

static bool st_fill(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	return tl_stmt(p, 1, "fill", "fill GPA LEN PATTERN", keys, 3, 3, false) &&
	       tl_u64(p, tl_pos(p, 0), &op->addr) &&
	       tl_range(p, tl_pos(p, 1), 1, LAB_TRACE_MAX_MEM, &op->len) &&
	       tl_pattern(p, tl_pos(p, 2), false, &op->pat) &&
	       tl_pat_len(p, tl_pos(p, 2), &op->pat, op->len) &&
	       tl_in_mem(p, tl_pos(p, 0), op->addr, op->len, "the bytes");
}

/* addr= len= [flags=] [next=] of desc and idesc (keys in that order). */
static bool desc_fields(struct tl *p, struct lab_trace_op *op, bool packed)
{
	uint64_t v;

	if (!tl_need(p, 0) || !tl_need(p, 1) || !tl_u64(p, p->arg[0], &op->addr) ||
	    !tl_range(p, p->arg[1], 0, UINT32_MAX, &op->len))
		return false;
	if (p->arg[2]) {
		if (!tl_flags(p, p->arg[2], packed, &op->flags))
			return false;
		op->given |= LAB_TA_FLAGS;
	}
	if (p->arg[3]) {
		if (!tl_range(p, p->arg[3], 0, 0xffff, &v))
			return false;
		op->next = (uint16_t)v;
		op->given |= LAB_TA_NEXT;
	}
	return true;
}

static bool st_desc(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"addr", "len", "flags", "next", NULL};

	return tl_layout(p, false) &&
	       tl_stmt(p, 1, "desc", "desc QUEUE INDEX addr=GPA len=N [flags=FLAGS] "
		       "[next=INDEX]", keys, 2, 2, false) &&
	       tl_queue(p, tl_pos(p, 0), &op->queue) &&
	       tl_range(p, tl_pos(p, 1), 0, p->t->queues[op->queue].size - 1, &op->index) &&
	       desc_fields(p, op, false);
}

static bool st_pdesc(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"addr", "len", "id", "flags", NULL};
	uint64_t id;

	if (!tl_layout(p, true) ||
	    !tl_stmt(p, 1, "pdesc", "pdesc QUEUE POS addr=GPA len=N id=ID flags=FLAGS", keys,
		     2, 2, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue) ||
	    !tl_range(p, tl_pos(p, 1), 0, p->t->queues[op->queue].size - 1, &op->index) ||
	    !tl_need(p, 0) || !tl_need(p, 1) || !tl_need(p, 2) || !tl_need(p, 3) ||
	    !tl_u64(p, p->arg[0], &op->addr) || !tl_range(p, p->arg[1], 0, UINT32_MAX, &op->len) ||
	    !tl_range(p, p->arg[2], 0, 0xffff, &id))
		return false;
	op->id = (uint16_t)id;
	return tl_flags(p, p->arg[3], true, &op->flags);
}

static bool st_idesc(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"addr", "len", "flags", "next", NULL};
	bool packed = lab_trace_packed(p->t);

	if (!tl_stmt(p, 1, "idesc", packed ? "idesc TABLE_GPA INDEX addr=GPA len=N [flags=FLAGS]"
		     : "idesc TABLE_GPA INDEX addr=GPA len=N [flags=FLAGS] [next=INDEX]", keys,
		     2, 2, false) ||
	    !tl_u64(p, tl_pos(p, 0), &op->addr2) ||
	    !tl_range(p, tl_pos(p, 1), 0, MAX_TABLE_INDEX, &op->index))
		return false;
	/* A packed table entry has no next field: saying one would be a trace that lies. */
	if (packed && p->arg[3])
		return tl_error(p, p->arg[3], "split rings only (packed table entries have no "
				"next; this trace negotiates ring_packed)");
	if (16 * op->index > UINT64_MAX - op->addr2)
		return tl_error(p, tl_pos(p, 1), "the entry lies past the end of the 64-bit "
				"address space");
	return tl_in_mem(p, tl_pos(p, 1), op->addr2 + 16 * op->index, 16, "the table entry") &&
	       desc_fields(p, op, packed);
}

static bool st_avail(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	return tl_layout(p, false) &&
	       tl_stmt(p, 1, "avail", "avail QUEUE HEAD", keys, 2, 2, false) &&
	       tl_queue(p, tl_pos(p, 0), &op->queue) &&
	       tl_range(p, tl_pos(p, 1), 0, 0xffff, &op->index);
}

static bool st_kick(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"idx", NULL};

	if (!tl_stmt(p, 1, "kick", "kick QUEUE [idx=N]", keys, 1, 1, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue))
		return false;
	if (!p->arg[0])
		return true;
	if (lab_trace_packed(p->t))
		return tl_error(p, p->arg[0], "split rings only (a packed kick only notifies; "
				"this trace negotiates ring_packed)");
	op->given |= LAB_TA_IDX;
	return tl_range(p, p->arg[0], 0, 0xffff, &op->value);
}

/* GPA+LEN or GPA+LEN:w. */
static bool post_buf(struct tl *p, const struct tl_tok *tk, struct lab_trace_buf *b)
{
	const char *plus = memchr(tk->s, '+', tk->len), *end = tk->s + tk->len;
	struct tl_tok gpa = *tk, len = *tk;
	uint64_t v;

	if (!plus)
		return tl_error(p, tk, "a buffer is GPA+LEN, or GPA+LEN:w when device-writable");
	if (end - plus >= 3 && end[-2] == ':') {
		if (end[-1] != 'w')
			return tl_error(p, tk, "a buffer is GPA+LEN, or GPA+LEN:w when "
					"device-writable");
		b->write = true;
		end -= 2;
	}
	gpa.vlen = (uint32_t)(plus - tk->s);
	len.v = plus + 1;
	len.vlen = (uint32_t)(end - len.v);
	if (!tl_u64(p, &gpa, &b->gpa) || !tl_range(p, &len, 0, UINT32_MAX, &v))
		return false;
	b->len = (uint32_t)v;
	return true;
}

static bool st_post(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"indirect", NULL};

	if (!tl_stmt(p, 1, "post", "post QUEUE [indirect=GPA] BUFFER... (BUFFER: GPA+LEN or "
		     "GPA+LEN:w)", keys, 2, TL_MAX_TOKENS, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue))
		return false;
	if (p->npos - 1 > LAB_TRACE_MAX_ITEMS)
		return tl_error(p, tl_pos(p, 1 + LAB_TRACE_MAX_ITEMS), "more than %u buffers",
				LAB_TRACE_MAX_ITEMS);
	op->nitems = p->npos - 1;
	op->bufs = calloc(op->nitems, sizeof(*op->bufs));
	if (!op->bufs)
		return tl_error_stmt(p, "out of memory");
	for (uint32_t i = 0; i < op->nitems; i++)
		if (!post_buf(p, tl_pos(p, 1 + i), &op->bufs[i]))
			return false;
	if (!p->arg[0])
		return true;
	op->given |= LAB_TA_INDIRECT;
	return tl_u64(p, p->arg[0], &op->addr2) &&
	       tl_in_mem(p, p->arg[0], op->addr2, 16ull * op->nitems, "the indirect table");
}

static bool st_mutate(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"on-read", NULL};

	if (!tl_stmt(p, 1, "mutate", "mutate GPA HEXBYTES [on-read=N]", keys, 2, 2, false) ||
	    !tl_u64(p, tl_pos(p, 0), &op->addr) || !tl_hex(p, tl_pos(p, 1), &op->pat) ||
	    !tl_in_mem(p, tl_pos(p, 0), op->addr, op->pat.nbytes, "the bytes"))
		return false;
	op->value = 1;
	if (!p->arg[0])
		return true;
	op->given |= LAB_TA_ON_READ;
	return tl_range(p, p->arg[0], 1, UINT64_MAX, &op->value);
}

static bool st_double_fetch(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"seed", NULL};
	unsigned mode;

	if (!tl_stmt(p, 1, "double-fetch", "double-fetch off|detect|adversarial [seed=N]", keys,
		     1, 1, false) ||
	    !tl_word(p, tl_pos(p, 0), lab_tn_df_modes, 3, &mode))
		return false;
	op->value = mode;
	if (!p->arg[0])
		return true;
	/* The seed drives the bytes the adversarial mode writes; nothing else reads it. */
	if (mode != LAB_TRACE_DF_ADVERSARIAL)
		return tl_error(p, p->arg[0], "only with adversarial");
	op->given |= LAB_TA_SEED;
	return tl_u64(p, p->arg[0], &op->seed);
}

/* fail-at=N[,N...]: call numbers (from this statement on, 0-based, ascending) that fail. */
static bool fail_at_list(struct tl *p, const struct tl_tok *tk, struct lab_trace_op *op)
{
	const char *s = tk->v, *end = tk->v + tk->vlen;
	uint64_t prev = 0;

	op->nums = calloc(LAB_TRACE_MAX_ITEMS, sizeof(*op->nums));
	if (!op->nums)
		return tl_error(p, tk, "out of memory");
	for (;;) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		uint32_t flen = (uint32_t)((comma ? comma : end) - s);
		struct tl_tok f = {s, flen, tk->col + (uint32_t)(s - tk->s), s, flen};
		uint64_t v;

		if (op->nitems == LAB_TRACE_MAX_ITEMS)
			return tl_error(p, &f, "more than %u call numbers", LAB_TRACE_MAX_ITEMS);
		if (!tl_u64(p, &f, &v))
			return false;
		if (op->nitems && v <= prev)
			return tl_error(p, &f, "call numbers must ascend");
		op->nums[op->nitems++] = prev = v;
		if (!comma)
			return true;
		s = comma + 1;
	}
}

static bool st_fault(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"fail-after", "fail-at", NULL};
	static const char *const words[] = {"pool", "alloc", "off"};
	unsigned k;

	if (!tl_stmt(p, 1, "fault", "fault pool|alloc fail-after=N, fault pool fail-at=N[,N...], "
		     "or fault off", keys, 1, 1, false) ||
	    !tl_word(p, tl_pos(p, 0), words, 3, &k))
		return false;
	if (k == 2) {
		op->given |= LAB_TA_OFF;
		if (p->arg[0] || p->arg[1])
			return tl_error(p, p->arg[0] ? p->arg[0] : p->arg[1], "not with off");
		return true;
	}
	op->value = k == 0 ? LAB_TRACE_FAULT_POOL : LAB_TRACE_FAULT_ALLOC;
	if (p->arg[1]) {
		if (p->arg[0])
			return tl_error(p, p->arg[1], "fail-after or fail-at, not both");
		if (k != 0)
			return tl_error(p, p->arg[1], "fail-at is for the pool only");
		op->given |= LAB_TA_FAIL_AT;
		return fail_at_list(p, p->arg[1], op);
	}
	return tl_need(p, 0) && tl_u64(p, p->arg[0], &op->count);
}

/* ---- host actions ------------------------------------------------------------------- */

/* dequeue and discard: QUEUE MAX, then one optional word that sets a flag. */
static bool st_tx_burst(struct tl *p, struct lab_trace_op *op, const char *usage,
			const char *word, uint32_t flag)
{
	static const char *const keys[] = {NULL};
	const char *const words[] = {word};
	unsigned k;

	if (!tl_stmt(p, 1, p->what, usage, keys, 2, 3, false) ||
	    !tl_queue_dir(p, tl_pos(p, 0), LAB_TRACE_TX, &op->queue) ||
	    !tl_range(p, tl_pos(p, 1), 0, LAB_TRACE_MAX_ITEMS, &op->count))
		return false;
	if (p->npos == 3) {
		if (!tl_word(p, tl_pos(p, 2), words, 1, &k))
			return false;
		op->given |= flag;
	}
	return true;
}

static bool st_dequeue(struct tl *p, struct lab_trace_op *op)
{
	return st_tx_burst(p, op, "dequeue QUEUE MAX [hold]", "hold", LAB_TA_HOLD);
}

/* The ceilings of `vhostlab serve --mode null|touch`: chains back unread (or with one byte
 * of each packet read), no packet made. */
static bool st_discard(struct tl *p, struct lab_trace_op *op)
{
	return st_tx_burst(p, op, "discard QUEUE MAX [touch]", "touch", LAB_TA_TOUCH);
}

static bool st_free(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	if (!tl_stmt(p, 1, "free", "free QUEUE PACKET...", keys, 2, TL_MAX_TOKENS, false) ||
	    !tl_queue_dir(p, tl_pos(p, 0), LAB_TRACE_TX, &op->queue))
		return false;
	if (p->npos - 1 > LAB_TRACE_MAX_ITEMS)
		return tl_error(p, tl_pos(p, 1 + LAB_TRACE_MAX_ITEMS), "more than %u packets",
				LAB_TRACE_MAX_ITEMS);
	op->nitems = p->npos - 1;
	op->nums = calloc(op->nitems, sizeof(*op->nums));
	if (!op->nums)
		return tl_error_stmt(p, "out of memory");
	for (uint32_t i = 0; i < op->nitems; i++)
		if (!tl_u64(p, tl_pos(p, 1 + i), &op->nums[i]))
			return false;
	return true;
}

static bool st_complete(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	return tl_stmt(p, 1, "complete", "complete QUEUE", keys, 1, 1, false) &&
	       tl_queue_dir(p, tl_pos(p, 0), LAB_TRACE_TX, &op->queue);
}

/* The device's wish for kicks (vl_vq_set_kicks): it writes the ring's suppression field. */
static bool st_kicks(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};
	unsigned k;

	if (!tl_stmt(p, 1, "kicks", "kicks QUEUE on|off", keys, 2, 2, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue) ||
	    !tl_word(p, tl_pos(p, 1), lab_tn_switch, 2, &k))
		return false;
	op->value = k;
	return true;
}

/* Device options changed between bursts: set QUEUE [batch=N] [alloc=available|burst]
 * [zero-copy=MINLEN|off] [zc-max=N] [line-wait=on|off]. */
static bool st_set(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {"batch", "alloc", "zero-copy", "zc-max", "line-wait",
					   NULL};
	const struct lab_trace_queue *q;
	uint64_t v;
	unsigned k;

	if (!tl_stmt(p, 1, "set", "set QUEUE [batch=BYTES] [alloc=available|burst] "
		     "[zero-copy=MINLEN|off] [zc-max=N] [line-wait=on|off]", keys, 1, 1, false) ||
	    !tl_queue(p, tl_pos(p, 0), &op->queue))
		return false;
	q = &p->t->queues[op->queue];
	if (!p->arg[0] && !p->arg[1] && !p->arg[2] && !p->arg[3] && !p->arg[4])
		return tl_error(p, tl_pos(p, 0), "set changes nothing: give batch=, alloc=, "
				"zero-copy=, zc-max= or line-wait=");
	if (p->arg[0]) {
		if (!tl_range(p, p->arg[0], 0, UINT32_MAX, &op->count))
			return false;
		op->given |= LAB_TA_BATCH;
	}
	if (p->arg[1]) {
		if (!tl_tx_word(p, p->arg[1], q->dir, "the allocation policy", lab_tn_allocs, 2, &k))
			return false;
		op->value = k;
		op->given |= LAB_TA_ALLOC;
	}
	if (p->arg[3] && !p->arg[2])
		return tl_error(p, p->arg[3], "needs zero-copy=MINLEN");
	if (p->arg[2]) {
		if (q->dir != LAB_TRACE_TX)
			return tl_error(p, p->arg[2], "zero-copy is a dequeue option: tx queues only");
		op->given |= LAB_TA_ZC;
		/* Off keeps a bound too: it still stops in-order bursts behind leases taken. */
		if (p->arg[2]->vlen == 3 && !memcmp(p->arg[2]->v, "off", 3))
			op->given |= LAB_TA_OFF;
		else if (!tl_range(p, p->arg[2], 0, UINT32_MAX, &op->len))
			return false;
		if (p->arg[3]) {
			if (!tl_range(p, p->arg[3], 1, q->size, &v))
				return false;
			op->index = v;
		}
	}
	if (p->arg[4]) {
		/* As on the queue line: accepted on a split tx queue (the core ignores it). */
		if (!tl_tx_word(p, p->arg[4], q->dir, "line-wait", lab_tn_switch, 2, &k))
			return false;
		op->flags = (uint16_t)k;
		op->given |= LAB_TA_LINE_WAIT;
	}
	return true;
}

/* The memory table replaced by a new one over the same regions (vl_vq_set_mem). */
static bool st_remap(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	(void)op;
	return tl_stmt(p, 1, "remap", "remap", keys, 0, 0, false);
}

/* One enqueue packet: comma-separated fields len=N,data=PATTERN[,OFFLOAD=N]... Each field
 * is reported as a token of its own, at its own column. */
static bool enqueue_pkt(struct tl *p, const struct tl_tok *tk, struct lab_trace_pkt *pk)
{
	static const char *const names[2 + LAB_TN_NOL] = {
		"len", "data", "flags", "gso_type", "hdr_len", "gso_size", "csum_start",
		"csum_offset",
	};
	const char *s = tk->s, *end = tk->s + tk->len;
	struct tl_tok len_tok, data_tok;
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

		while (eq && k < 2 + LAB_TN_NOL &&
		       !(klen == strlen(names[k]) && memcmp(s, names[k], klen) == 0))
			k++;
		if (!eq || k == 2 + LAB_TN_NOL)
			return tl_error(p, &f, "not a packet field; expected len=N,data=PATTERN, then "
					"any of flags= gso_type= hdr_len= gso_size= csum_start= "
					"csum_offset=");
		if (seen & (1u << k))
			return tl_error(p, &f, "%s= given twice", names[k]);
		seen |= 1u << k;
		if (k == 0)
			len_tok = f;
		else if (k == 1)
			data_tok = f;
		else if (!tl_offload(p, &f, k - 2, &pk->ol))
			return false;
		if (!comma)
			break;
		s = comma + 1;
	}
	if ((seen & 3u) != 3u)
		return tl_error(p, tk, "a packet needs len=N and data=PATTERN");
	if (!tl_range(p, &len_tok, 0, LAB_TRACE_MAX_PKT_LEN, &v) ||
	    !tl_pattern(p, &data_tok, false, &pk->data) ||
	    !tl_pat_len(p, &data_tok, &pk->data, v))
		return false;
	pk->len = (uint32_t)v;
	return true;
}

static bool st_enqueue(struct tl *p, struct lab_trace_op *op)
{
	static const char *const keys[] = {NULL};

	if (!tl_stmt(p, 1, "enqueue", "enqueue QUEUE PACKET... (PACKET: len=N,data=PATTERN"
		     "[,flags=N][,gso_type=N][,hdr_len=N][,gso_size=N][,csum_start=N]"
		     "[,csum_offset=N])", keys, 1, TL_MAX_TOKENS, true) ||
	    !tl_queue_dir(p, tl_pos(p, 0), LAB_TRACE_RX, &op->queue))
		return false;
	if (p->npos - 1 > LAB_TRACE_MAX_ITEMS)
		return tl_error(p, tl_pos(p, 1 + LAB_TRACE_MAX_ITEMS), "more than %u packets",
				LAB_TRACE_MAX_ITEMS);
	/* A burst with nothing to send still runs (and counts as an empty burst). */
	op->nitems = p->npos - 1;
	if (op->nitems == 0)
		return true;
	op->pkts = calloc(op->nitems, sizeof(*op->pkts));
	if (!op->pkts)
		return tl_error_stmt(p, "out of memory");
	for (uint32_t i = 0; i < op->nitems; i++)
		if (!enqueue_pkt(p, tl_pos(p, 1 + i), &op->pkts[i]))
			return false;
	return true;
}

/* ---- vhost-user messages (version 2) ------------------------------------------------- */

/* message get-vring-base QUEUE [expect=N] | vring-enable QUEUE 0|1 | vring-setup QUEUE
 * base=N | get-features [expect=deps] | log-start pages=N. The vring's number is the queue's
 * (replay_socket.c); N is the message's 32-bit num (packed: position and wrap counter of
 * avail in bits 0-15, of used in 16-31). */
static bool st_message(struct tl *p, struct lab_trace_op *op)
{
	static const char *const usage = "message get-vring-base QUEUE [expect=N] | "
					 "message vring-enable QUEUE 0|1 | "
					 "message vring-setup QUEUE base=N | "
					 "message get-features [expect=deps] | "
					 "message log-start pages=N";
	static const char *const deps[] = {"deps"};
	static const char *const keys_base[] = {"expect", NULL};
	static const char *const keys_enable[] = {NULL};
	static const char *const keys_setup[] = {"base", NULL};
	static const char *const keys_log[] = {"pages", NULL};
	unsigned k;

	if (p->t->version < 2)
		return tl_needs_v2(p, &p->tok[0]);
	if (p->ntok < 2)
		return tl_error_stmt(p, "missing the message; expected: %s", usage);
	if (!tl_word(p, &p->tok[1], lab_tn_messages, LAB_TRACE_NMSGS, &k))
		return false;
	op->value = k;
	switch (k) {
	case LAB_TRACE_MSG_GET_FEATURES:
		if (!tl_stmt(p, 2, "message get-features", "message get-features [expect=deps]",
			     keys_base, 0, 0, false))
			return false;
		if (p->arg[0]) {
			if (!tl_word(p, p->arg[0], deps, 1, &k))
				return false;
			op->given |= LAB_TA_EXPECT;
		}
		return true;
	case LAB_TRACE_MSG_GET_VRING_BASE:
		if (!tl_stmt(p, 2, "message get-vring-base", "message get-vring-base QUEUE "
			     "[expect=N]", keys_base, 1, 1, false) ||
		    !tl_queue(p, tl_pos(p, 0), &op->queue))
			return false;
		if (p->arg[0]) {
			if (!tl_range(p, p->arg[0], 0, UINT32_MAX, &op->count))
				return false;
			op->given |= LAB_TA_EXPECT;
		}
		return true;
	case LAB_TRACE_MSG_LOG_START:
		/* The bitmap: one bit per 4 KiB page from guest address 0, as QEMU sizes it. */
		if (!tl_stmt(p, 2, "message log-start", "message log-start pages=N", keys_log, 0,
			     0, false) || !tl_need(p, 0))
			return false;
		/* The core keeps one log per queue: the one SET_LOG_BASE gives replaces the
		 * setup's, so a trace says which it means. */
		if (p->t->dirty_pages)
			return tl_error_stmt(p, "the setup has 'dirty-log' already: a trace has one "
					     "dirty log, the setup's (in process only) or this one");
		return tl_range(p, p->arg[0], 1, LAB_TRACE_MAX_DIRTY_PAGES, &op->count);
	case LAB_TRACE_MSG_VRING_ENABLE:
		return tl_stmt(p, 2, "message vring-enable", "message vring-enable QUEUE 0|1",
			       keys_enable, 2, 2, false) &&
		       tl_queue(p, tl_pos(p, 0), &op->queue) &&
		       tl_range(p, tl_pos(p, 1), 0, 1, &op->count);
	default:
		if (!tl_stmt(p, 2, "message vring-setup", "message vring-setup QUEUE base=N",
			     keys_setup, 1, 1, false) ||
		    !tl_queue(p, tl_pos(p, 0), &op->queue) || !tl_need(p, 0))
			return false;
		return tl_range(p, p->arg[0], 0, UINT32_MAX, &op->count);
	}
}

/* ---- dispatch ----------------------------------------------------------------------- */

static const struct {
	const char *word;
	enum lab_trace_kind kind;
	bool (*read)(struct tl *p, struct lab_trace_op *op);
} actions[] = {
	{"write", LAB_T_WRITE, st_write},
	{"fill", LAB_T_FILL, st_fill},
	{"desc", LAB_T_DESC, st_desc},
	{"pdesc", LAB_T_PDESC, st_pdesc},
	{"idesc", LAB_T_IDESC, st_idesc},
	{"avail", LAB_T_AVAIL, st_avail},
	{"kick", LAB_T_KICK, st_kick},
	{"post", LAB_T_POST, st_post},
	{"mutate", LAB_T_MUTATE, st_mutate},
	{"double-fetch", LAB_T_DOUBLE_FETCH, st_double_fetch},
	{"fault", LAB_T_FAULT, st_fault},
	{"dequeue", LAB_T_DEQUEUE, st_dequeue},
	{"discard", LAB_T_DISCARD, st_discard},
	{"free", LAB_T_FREE, st_free},
	{"complete", LAB_T_COMPLETE, st_complete},
	{"enqueue", LAB_T_ENQUEUE, st_enqueue},
	{"kicks", LAB_T_KICKS, st_kicks},
	{"set", LAB_T_SET, st_set},
	{"remap", LAB_T_REMAP, st_remap},
	{"message", LAB_T_MESSAGE, st_message},
};

bool tl_action(struct tl *p)
{
	const struct tl_tok *kw = &p->tok[0];
	struct lab_trace_op op;
	bool ok = false;
	size_t i;

	memset(&op, 0, sizeof(op));
	op.line = p->line;
	if (p->t->nops == LAB_TRACE_MAX_OPS)
		return tl_error(p, kw, "more than %u statements", LAB_TRACE_MAX_OPS);
	if (!tl_in_block(p))
		return false;
	if (tl_is(kw, "expect")) {
		ok = tl_expect(p, &op);
	} else {
		for (i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
			if (tl_is(kw, actions[i].word))
				break;
		if (i == sizeof(actions) / sizeof(actions[0]))
			return tl_error(p, kw, "unknown statement; expected write, fill, desc, pdesc, "
					"idesc, avail, kick, post, mutate, double-fetch, fault, "
					"dequeue, discard, free, complete, enqueue, kicks, "
					"set, remap or expect%s", p->t->version >= 2 ?
					" (or message, repeat, either, })" : "");
		op.kind = actions[i].kind;
		p->what = actions[i].word;
		ok = actions[i].read(p, &op);
	}
	if (ok && !lab_trace_append(p->t, &op))
		ok = tl_error_stmt(p, "out of memory");
	if (!ok)
		lab_trace_op_free(&op);
	return ok;
}

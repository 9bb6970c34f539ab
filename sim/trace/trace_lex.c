/* SPDX-License-Identifier: MIT */
/* The trace parser's lexical layer (trace_lex.h). Everything here reads bytes the parser
 * was handed: any length, any byte value, no NUL terminator. */
#include "trace_lex.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_names.h"

/* ---- errors ------------------------------------------------------------------------- */

/* The token as messages quote it: printable ASCII as is, other bytes as \xHH, and long
 * tokens (a megabyte of hex) cut short. */
static void quote(char *out, size_t size, const char *s, uint32_t len)
{
	size_t o = 0;

	for (uint32_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == 40 && len > 48) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

__attribute__((format(printf, 4, 0))) static bool verror(struct tl *p, uint32_t col,
							 const char *label, const char *fmt,
							 va_list ap)
{
	char msg[256];

	if (!p->err || p->errlen == 0)
		return false;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (label)
		snprintf(p->err, p->errlen, "%s:%" PRIu32 ":%" PRIu32 ": '%s': %s", p->name,
			 p->line, col, label, msg);
	else
		snprintf(p->err, p->errlen, "%s:%" PRIu32 ":%" PRIu32 ": %s", p->name, p->line,
			 col, msg);
	return false;
}

bool tl_error(struct tl *p, const struct tl_tok *at, const char *fmt, ...)
{
	char q[64];
	va_list ap;

	quote(q, sizeof(q), at->s, at->len);
	va_start(ap, fmt);
	verror(p, at->col, q, fmt, ap);
	va_end(ap);
	return false;
}

bool tl_error_stmt(struct tl *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(p, p->tok[0].col, p->what, fmt, ap);
	va_end(ap);
	return false;
}

bool tl_error_at(struct tl *p, uint32_t col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(p, col, NULL, fmt, ap);
	va_end(ap);
	return false;
}

/* ---- lines and statements ------------------------------------------------------------ */

bool tl_tokenize(struct tl *p, const char *line, size_t n)
{
	size_t i = 0;

	if (n && line[n - 1] == '\r')
		n--;
	p->ntok = 0;
	while (i < n) {
		size_t start;

		if (line[i] == ' ' || line[i] == '\t') {
			i++;
			continue;
		}
		if (line[i] == '#')
			break;
		start = i;
		while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '#')
			i++;
		if (p->ntok == TL_MAX_TOKENS) {
			struct tl_tok extra = {line + start, (uint32_t)(i - start),
					       (uint32_t)(start + 1), NULL, 0};

			return tl_error(p, &extra, "too many tokens on one line (at most %u)",
					TL_MAX_TOKENS);
		}
		/* Lines are shorter than LAB_TRACE_MAX_TEXT, so columns and lengths fit. */
		p->tok[p->ntok++] = (struct tl_tok){line + start, (uint32_t)(i - start),
						    (uint32_t)(start + 1), line + start,
						    (uint32_t)(i - start)};
	}
	return true;
}

bool tl_is(const struct tl_tok *tk, const char *word)
{
	size_t n = strlen(word);

	return tk->len == n && memcmp(tk->s, word, n) == 0;
}

bool tl_stmt(struct tl *p, uint32_t first, const char *what, const char *usage,
	     const char *const *keys, uint32_t min_pos, uint32_t max_pos, bool eq_positional)
{
	p->what = what;
	p->usage = usage;
	p->keys = keys;
	p->npos = 0;
	memset(p->arg, 0, sizeof(p->arg));
	for (uint32_t i = first; i < p->ntok; i++) {
		struct tl_tok *tk = &p->tok[i];
		const char *eq = eq_positional ? NULL : memchr(tk->s, '=', tk->len);
		unsigned k;

		if (!eq) {
			if (p->npos == max_pos)
				return tl_error(p, tk, "unexpected argument; expected: %s", usage);
			p->pos[p->npos++] = i;
			continue;
		}
		for (k = 0; k < TL_MAX_KEYS && keys[k]; k++)
			if ((size_t)(eq - tk->s) == strlen(keys[k]) &&
			    memcmp(tk->s, keys[k], (size_t)(eq - tk->s)) == 0)
				break;
		if (k == TL_MAX_KEYS || !keys[k])
			return tl_error(p, tk, "unknown argument for %s; expected: %s", what, usage);
		if (p->arg[k])
			return tl_error(p, tk, "%s= given twice", keys[k]);
		tk->v = eq + 1;
		tk->vlen = (uint32_t)(tk->len - (uint32_t)(eq + 1 - tk->s));
		p->arg[k] = tk;
	}
	if (p->npos < min_pos)
		return tl_error_stmt(p, "missing argument; expected: %s", usage);
	return true;
}

bool tl_need(struct tl *p, unsigned i)
{
	return p->arg[i] ||
	       tl_error_stmt(p, "missing %s=; expected: %s", p->keys[i], p->usage);
}

/* ---- values ------------------------------------------------------------------------- */

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool tl_u64(struct tl *p, const struct tl_tok *tk, uint64_t *v)
{
	const char *s = tk->v;
	uint32_t n = tk->vlen;
	uint64_t x = 0;

	if (n > 2 && s[0] == '0' && s[1] == 'x') {
		for (uint32_t i = 2; i < n; i++) {
			int d = hex_digit(s[i]);

			if (d < 0)
				return tl_error(p, tk, "not a number (decimal, or hex after 0x)");
			if (x >> 60)
				return tl_error(p, tk, "number too large (more than 64 bits)");
			x = x << 4 | (uint64_t)d;
		}
	} else {
		if (n == 0)
			return tl_error(p, tk, "not a number (decimal, or hex after 0x)");
		for (uint32_t i = 0; i < n; i++) {
			unsigned d = (unsigned)(s[i] - '0');

			if (s[i] < '0' || s[i] > '9')
				return tl_error(p, tk, "not a number (decimal, or hex after 0x)");
			if (x > (UINT64_MAX - d) / 10)
				return tl_error(p, tk, "number too large (more than 64 bits)");
			x = x * 10 + d;
		}
	}
	*v = x;
	return true;
}

bool tl_range(struct tl *p, const struct tl_tok *tk, uint64_t lo, uint64_t hi, uint64_t *v)
{
	if (!tl_u64(p, tk, v))
		return false;
	if (*v < lo || *v > hi)
		return tl_error(p, tk, "out of range: must be %" PRIu64 " to %" PRIu64, lo, hi);
	return true;
}

/* n hex digits at s (n even, validated) into bytes. */
static void unhex(const char *s, uint32_t n, uint8_t *out)
{
	for (uint32_t i = 0; i < n / 2; i++)
		out[i] = (uint8_t)(hex_digit(s[2 * i]) << 4 | hex_digit(s[2 * i + 1]));
}

/* Hex bytes in s[0, n), reported as tk. */
static bool hex_bytes(struct tl *p, const struct tl_tok *tk, const char *s, uint32_t n,
		      struct lab_trace_pat *pat)
{
	if (n == 0)
		return tl_error(p, tk, "no hex bytes");
	if (n / 2 > LAB_TRACE_MAX_BYTES)
		return tl_error(p, tk, "more than %u bytes in one statement", LAB_TRACE_MAX_BYTES);
	for (uint32_t i = 0; i < n; i++)
		if (hex_digit(s[i]) < 0)
			return tl_error(p, tk, "not hex bytes (two hex digits per byte, no 0x)");
	if (n % 2)
		return tl_error(p, tk, "odd number of hex digits (two per byte)");
	pat->bytes = malloc(n / 2);
	if (!pat->bytes)
		return tl_error(p, tk, "out of memory");
	unhex(s, n, pat->bytes);
	pat->kind = LAB_PAT_HEX;
	pat->nbytes = n / 2;
	return true;
}

bool tl_hex(struct tl *p, const struct tl_tok *tk, struct lab_trace_pat *pat)
{
	return hex_bytes(p, tk, tk->v, tk->vlen, pat);
}

static bool has_prefix(const char *s, uint32_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && memcmp(s, prefix, k) == 0;
}

/* 16 hex digits in s[0, n). */
static bool fnv_digits(struct tl *p, const struct tl_tok *tk, const char *s, uint32_t n,
		       uint64_t *v)
{
	uint64_t x = 0;

	if (n != 16)
		return tl_error(p, tk, "a digest is 16 hex digits, %" PRIu32 " given", n);
	for (uint32_t i = 0; i < 16; i++) {
		int d = hex_digit(s[i]);

		if (d < 0)
			return tl_error(p, tk, "a digest is 16 hex digits");
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return true;
}

bool tl_fnv(struct tl *p, const struct tl_tok *tk, uint64_t *v)
{
	return fnv_digits(p, tk, tk->v, tk->vlen, v);
}

bool tl_pattern(struct tl *p, const struct tl_tok *tk, bool digest_ok,
		struct lab_trace_pat *pat)
{
	const char *s = tk->v;
	uint32_t n = tk->vlen;

	memset(pat, 0, sizeof(*pat));
	if (n == 4 && memcmp(s, "zero", 4) == 0) {
		pat->kind = LAB_PAT_ZERO;
		return true;
	}
	if (has_prefix(s, n, "hex:"))
		return hex_bytes(p, tk, s + 4, n - 4, pat);
	if (has_prefix(s, n, "byte:") || has_prefix(s, n, "seq:") || has_prefix(s, n, "stream:")) {
		uint32_t skip = s[0] == 'b' ? 5 : s[1] == 'e' ? 4 : 7;
		struct tl_tok num = *tk;

		num.v = s + skip;
		num.vlen = n - skip;
		if (!tl_range(p, &num, 0, skip == 5 ? 0xff : UINT64_MAX, &pat->value))
			return false;
		pat->kind = skip == 5 ? LAB_PAT_BYTE : skip == 4 ? LAB_PAT_SEQ : LAB_PAT_STREAM;
		return true;
	}
	if (has_prefix(s, n, "fnv1a:")) {
		if (!digest_ok)
			return tl_error(p, tk, "a digest only stands in expectations");
		if (!fnv_digits(p, tk, s + 6, n - 6, &pat->value))
			return false;
		pat->kind = LAB_PAT_FNV1A;
		return true;
	}
	return tl_error(p, tk, "not a pattern; expected hex:BYTES, byte:V, zero, seq:SEED or "
			"stream:STATE%s",
			digest_ok ? " (or fnv1a:HEX16)" : "");
}

bool tl_flags(struct tl *p, const struct tl_tok *tk, bool packed, uint16_t *v)
{
	unsigned nnames = lab_tn_desc_flag_count(packed);
	const char *s = tk->v, *end = tk->v + tk->vlen;
	uint16_t x = 0;

	if (tk->vlen && s[0] >= '0' && s[0] <= '9') {
		uint64_t n;

		if (!tl_range(p, tk, 0, 0xffff, &n))
			return false;
		*v = (uint16_t)n;
		return true;
	}
	for (;;) {
		const char *bar = memchr(s, '|', (size_t)(end - s));
		size_t len = (size_t)((bar ? bar : end) - s);
		unsigned k;

		for (k = 0; k < nnames; k++)
			if (len == strlen(lab_tn_desc_flags[k].name) &&
			    memcmp(s, lab_tn_desc_flags[k].name, len) == 0)
				break;
		if (k == nnames)
			return tl_error(p, tk, "not descriptor flags; expected a number or names "
					"joined by '|' of: %s", packed ? "next write indirect avail used"
								       : "next write indirect");
		if (x & lab_tn_desc_flags[k].mask)
			return tl_error(p, tk, "flag %s given twice", lab_tn_desc_flags[k].name);
		x |= (uint16_t)lab_tn_desc_flags[k].mask;
		if (!bar)
			break;
		s = bar + 1;
	}
	*v = x;
	return true;
}

bool tl_word(struct tl *p, const struct tl_tok *tk, const char *const *words, unsigned n,
	     unsigned *idx)
{
	char list[160];
	size_t o = 0;

	for (unsigned i = 0; i < n; i++)
		if (tk->vlen == strlen(words[i]) && memcmp(tk->v, words[i], tk->vlen) == 0) {
			*idx = i;
			return true;
		}
	list[0] = '\0';
	for (unsigned i = 0; i < n && o < sizeof(list); i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
				      i == 0 ? "" : i + 1 == n ? " or " : ", ", words[i]);
	return tl_error(p, tk, "expected %s", list);
}

bool tl_tx_word(struct tl *p, const struct tl_tok *tk, enum lab_trace_dir dir, const char *what,
		const char *const *words, unsigned n, unsigned *idx)
{
	if (dir != LAB_TRACE_TX)
		return tl_error(p, tk, "%s is a dequeue option: tx queues only", what);
	return tl_word(p, tk, words, n, idx);
}

bool tl_find_queue(const struct tl *p, const struct tl_tok *tk, uint32_t *qi)
{
	for (uint32_t i = 0; i < p->t->nqueues; i++) {
		const char *name = p->t->queues[i].name;

		if (strlen(name) == tk->vlen && memcmp(name, tk->v, tk->vlen) == 0) {
			*qi = i;
			return true;
		}
	}
	return false;
}

bool tl_queue(struct tl *p, const struct tl_tok *tk, uint32_t *qi)
{
	return tl_find_queue(p, tk, qi) || tl_error(p, tk, "no queue of that name (declare it with 'queue' in the setup)");
}

bool tl_name(struct tl *p, const struct tl_tok *tk, char *out, size_t size)
{
	const char *s = tk->v;
	uint32_t n = tk->vlen;

	if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return tl_error(p, tk, "a name starts with a letter");
	for (uint32_t i = 1; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return tl_error(p, tk, "a name holds letters, digits, '_' and '-'");
	}
	if (n >= size)
		return tl_error(p, tk, "name longer than %zu characters", size - 1);
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

bool tl_in_mem(struct tl *p, const struct tl_tok *tk, uint64_t gpa, uint64_t len,
	       const char *what)
{
	const struct lab_trace *t = p->t;
	uint64_t cur = gpa, last;

	if (len - 1 > UINT64_MAX - gpa)
		return tl_error(p, tk, "%s run past the end of the 64-bit address space", what);
	last = gpa + (len - 1);
	/* Walk region by region; each step leaves a region behind, so at most nregions. */
	for (;;) {
		uint32_t i;

		for (i = 0; i < t->nregions; i++)
			if (cur >= t->regions[i].gpa && cur - t->regions[i].gpa < t->regions[i].size)
				break;
		if (i == t->nregions)
			return tl_error(p, tk, "%s [0x%" PRIx64 ", 0x%" PRIx64 "] reach 0x%" PRIx64
					", which no region holds", what, gpa, last, cur);
		if (last - t->regions[i].gpa < t->regions[i].size)
			return true;
		cur = t->regions[i].gpa + t->regions[i].size;
	}
}

/* ---- statement checks --------------------------------------------------------------- */

bool tl_layout(struct tl *p, bool packed)
{
	if (lab_trace_packed(p->t) == packed)
		return true;
	return tl_error_stmt(p, "%s rings only (this trace %s ring_packed)",
			     packed ? "packed" : "split",
			     packed ? "does not negotiate" : "negotiates");
}

bool tl_queue_dir(struct tl *p, const struct tl_tok *tk, enum lab_trace_dir dir, uint32_t *qi)
{
	if (!tl_queue(p, tk, qi))
		return false;
	if (p->t->queues[*qi].dir != dir)
		return tl_error(p, tk, "%s queue; %s needs %s queue",
				dir == LAB_TRACE_TX ? "an rx" : "a tx", p->what,
				dir == LAB_TRACE_TX ? "a tx" : "an rx");
	return true;
}

bool tl_pat_len(struct tl *p, const struct tl_tok *tk, const struct lab_trace_pat *pat,
		uint64_t len)
{
	if (pat->kind != LAB_PAT_HEX || pat->nbytes == len)
		return true;
	return tl_error(p, tk, "%" PRIu32 " bytes given for a length of %" PRIu64, pat->nbytes,
			len);
}

bool tl_offload(struct tl *p, const struct tl_tok *tk, unsigned k, struct lab_trace_ol *ol)
{
	uint64_t v;

	/* flags and gso_type are bytes of the virtio-net header, the rest 16-bit fields. */
	if (!tl_range(p, tk, 0, k < 2 ? 0xff : 0xffff, &v))
		return false;
	ol->given |= (uint8_t)(1u << k);
	switch (k) {
	case 0: ol->flags = (uint8_t)v; break;
	case 1: ol->gso_type = (uint8_t)v; break;
	case 2: ol->hdr_len = (uint16_t)v; break;
	case 3: ol->gso_size = (uint16_t)v; break;
	case 4: ol->csum_start = (uint16_t)v; break;
	default: ol->csum_offset = (uint16_t)v; break;
	}
	return true;
}

/* SPDX-License-Identifier: MIT */
/* Folding repeated statement groups into repeat blocks (trace_upgrade.h).
 *
 * Greedy, left to right: at each statement, the group length L (1..MAX_GROUP) whose run of
 * identical copies saves the most lines ((copies - 1) * L body lines gone, 2 block lines
 * added) wins; the group's body is folded again the same way (nested repeats, up to the
 * format's depth). Statements are compared by canonical text (hash first, then bytes). */
#include "trace_upgrade.h"

#include <stdlib.h>
#include <string.h>

#define MAX_GROUP 256u

struct fold {
	struct lab_trace_op *in;     /* the v1 statements (owned arrays move to out) */
	char **text;                 /* canonical text of each */
	size_t *len;
	uint64_t *hash;
	struct lab_trace_op *out;
	uint32_t nout, cap;
	uint32_t repeats;
};

static bool same(const struct fold *f, uint32_t a, uint32_t b)
{
	return f->hash[a] == f->hash[b] && f->len[a] == f->len[b] &&
	       memcmp(f->text[a], f->text[b], f->len[a]) == 0;
}

static bool emit(struct fold *f, const struct lab_trace_op *op)
{
	if (f->nout == f->cap) {
		uint32_t cap = f->cap ? 2 * f->cap : 64;
		struct lab_trace_op *o;

		if (cap > LAB_TRACE_MAX_OPS)
			return false;
		o = realloc(f->out, (size_t)cap * sizeof(*o));
		if (!o)
			return false;
		f->out = o;
		f->cap = cap;
	}
	f->out[f->nout++] = *op;
	return true;
}

/* Copies of ops[i, i+L) that follow one another from i, within [i, end). */
static uint32_t copies(const struct fold *f, uint32_t i, uint32_t L, uint32_t end)
{
	uint32_t k = 1;

	while (i + (uint64_t)(k + 1) * L <= end && k < LAB_TRACE_MAX_REPEAT) {
		uint32_t at = i + k * L;
		uint32_t j = 0;

		while (j < L && same(f, i + j, at + j))
			j++;
		if (j < L)
			break;
		k++;
	}
	return k;
}

/* Fold ops[from, end) into out at block depth `depth`. */
static bool fold_range(struct fold *f, uint32_t from, uint32_t end, uint32_t depth)
{
	for (uint32_t i = from; i < end;) {
		uint32_t best_L = 0, best_k = 1;
		uint64_t best_save = 0;

		for (uint32_t L = 1; depth < LAB_TRACE_MAX_DEPTH && L <= MAX_GROUP &&
				     i + 2 * L <= end; L++) {
			uint32_t k;
			uint64_t save;

			if (!same(f, i, i + L))
				continue;
			k = copies(f, i, L, end);
			save = (uint64_t)(k - 1) * L;
			if (k >= 2 && save > 2 && save - 2 > best_save) {
				best_save = save - 2;
				best_L = L;
				best_k = k;
			}
		}
		if (!best_L) {
			if (!emit(f, &f->in[i]))
				return false;
			i++;
			continue;
		}
		struct lab_trace_op blk = {.kind = LAB_T_REPEAT, .count = best_k};

		if (!emit(f, &blk) || !fold_range(f, i, i + best_L, depth + 1))
			return false;
		blk = (struct lab_trace_op){.kind = LAB_T_END};
		if (!emit(f, &blk))
			return false;
		/* The other copies are gone: what they own is freed. */
		for (uint32_t j = i + best_L; j < i + best_k * best_L; j++)
			lab_trace_op_free(&f->in[j]);
		f->repeats++;
		i += best_k * best_L;
	}
	return true;
}

static void fold_free(struct fold *f, uint32_t n)
{
	if (f->text)
		for (uint32_t i = 0; i < n; i++)
			free(f->text[i]);
	free(f->text);
	free(f->len);
	free(f->hash);
}

bool lab_trace_upgrade(struct lab_trace *t, struct lab_trace_upgrade_stats *st)
{
	struct fold f = {.in = t->ops};
	uint32_t n = t->nops;

	memset(st, 0, sizeof(*st));
	st->ops_before = st->ops_after = n;
	for (uint32_t i = 0; i < n; i++)
		if (t->ops[i].kind == LAB_T_REPEAT || t->ops[i].kind == LAB_T_EITHER) {
			t->version = LAB_TRACE_VERSION;
			return true;
		}
	f.text = calloc(n ? n : 1, sizeof(*f.text));
	f.len = calloc(n ? n : 1, sizeof(*f.len));
	f.hash = calloc(n ? n : 1, sizeof(*f.hash));
	if (!f.text || !f.len || !f.hash)
		goto oom;
	for (uint32_t i = 0; i < n; i++) {
		size_t need = lab_trace_format_op(t, &t->ops[i], NULL, 0);

		f.text[i] = malloc(need + 1);
		if (!f.text[i])
			goto oom;
		lab_trace_format_op(t, &t->ops[i], f.text[i], need + 1);
		f.len[i] = need;
		f.hash[i] = lab_trace_fnv1a(LAB_FNV1A_INIT, (const uint8_t *)f.text[i], need);
	}
	/* From here the statements' arrays move or are freed, so emit must not fail. A block
	 * is made only where it saves lines, so the output never has more statements than
	 * the input: reserving that many up front means emit never reallocates. */
	f.cap = n + 1;
	f.out = malloc((size_t)f.cap * sizeof(*f.out));
	if (!f.out || !fold_range(&f, 0, n, 0))
		goto oom;
	fold_free(&f, n);
	free(t->ops);
	t->ops = f.out;
	t->nops = t->cap_ops = f.nout;
	t->version = LAB_TRACE_VERSION;
	st->ops_after = f.nout;
	st->repeats = f.repeats;
	return true;
oom:
	fold_free(&f, n);
	free(f.out);
	return false;
}

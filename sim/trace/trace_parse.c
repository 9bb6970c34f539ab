/* SPDX-License-Identifier: MIT */
/* Trace text to struct lab_trace (docs/trace-format.md): the line loop, the header and the
 * setup statements. Actions and expectations are in trace_parse_ops.c, the lexical layer in
 * trace_lex.c. Strict by design: the first thing that is not exactly the format stops the
 * parse with "NAME:LINE:COL: 'TOKEN': message", because a trace that half-works would
 * replay something other than what its author meant. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_lex.h"
#include "trace_names.h"

#define PAGE 4096u

/* ---- header ------------------------------------------------------------------------- */

static bool st_header(struct tl *p)
{
	static const char *const keys[] = {NULL};
	uint64_t v;

	if (p->header_seen)
		return tl_error(p, &p->tok[0], "the header is given twice");
	if (!tl_stmt(p, 1, "vhostlab-trace", "vhostlab-trace 1|2", keys, 1, 1, false) ||
	    !tl_u64(p, tl_pos(p, 0), &v))
		return false;
	if (v < LAB_TRACE_MIN_VERSION || v > LAB_TRACE_VERSION)
		return tl_error(p, tl_pos(p, 0), "unsupported version (this reader reads versions "
				"%u to %u)", LAB_TRACE_MIN_VERSION, LAB_TRACE_VERSION);
	/* Kept as written: the writer writes it back, and v1 keeps v1's stricter rules. */
	p->t->version = (uint32_t)v;
	p->header_seen = true;
	return true;
}

/* ---- setup -------------------------------------------------------------------------- */

/* A setup statement given for the second time (`*line` is where it was first). */
static bool once(struct tl *p, uint32_t *line)
{
	if (*line)
		return tl_error(p, &p->tok[0], "given twice (first on line %" PRIu32 ")", *line);
	*line = p->line;
	return true;
}

static bool st_features(struct tl *p)
{
	static const char *const keys[] = {NULL};
	struct lab_trace *t = p->t;
	const struct tl_tok *first;

	/* Queues need features before them (st_queue), and features come once: so they never
	 * change under a declared queue's layout. */
	if (!once(p, &p->features_line) ||
	    !tl_stmt(p, 1, "features", "features NAME... (or one number)", keys, 1,
		     TL_MAX_TOKENS, false))
		return false;
	first = tl_pos(p, 0);
	if (first->len && first->s[0] >= '0' && first->s[0] <= '9') {
		if (p->npos > 1)
			return tl_error(p, tl_pos(p, 1), "features are names or one number, not both");
		return tl_u64(p, first, &t->features);
	}
	for (uint32_t i = 0; i < p->npos; i++) {
		const struct tl_tok *tk = tl_pos(p, i);
		const char *names[LAB_TN_NFEATURES];
		unsigned k;

		for (k = 0; k < LAB_TN_NFEATURES; k++)
			names[k] = lab_tn_features[k].name;
		if (!tl_word(p, tk, names, LAB_TN_NFEATURES, &k))
			return false;
		if (t->features & lab_tn_features[k].mask)
			return tl_error(p, tk, "feature given twice");
		t->features |= lab_tn_features[k].mask;
	}
	return true;
}

static bool st_region(struct tl *p)
{
	static const char *const keys[] = {"pieces", NULL};
	struct lab_trace *t = p->t;
	struct lab_trace_region r = {0, 0, 0};
	uint64_t total = 0;

	if (t->nregions == LAB_TRACE_MAX_REGIONS)
		return tl_error(p, &p->tok[0], "more than %u regions", LAB_TRACE_MAX_REGIONS);
	if (!tl_stmt(p, 1, "region", "region GPA SIZE [pieces=BYTES]", keys, 2, 2, false) ||
	    !tl_u64(p, tl_pos(p, 0), &r.gpa) || !tl_u64(p, tl_pos(p, 1), &r.size))
		return false;
	if (r.gpa % PAGE)
		return tl_error(p, tl_pos(p, 0), "a region starts at a multiple of 4096");
	if (r.size == 0 || r.size % PAGE)
		return tl_error(p, tl_pos(p, 1), "a region's size is a multiple of 4096, not 0");
	if (r.size > UINT64_MAX - r.gpa)
		return tl_error(p, tl_pos(p, 1), "the region runs past the end of the 64-bit "
				"address space");
	for (uint32_t i = 0; i < t->nregions; i++)
		total += t->regions[i].size;
	if (r.size > LAB_TRACE_MAX_MEM - total)
		return tl_error(p, tl_pos(p, 1), "regions total more than %llu bytes (1 GiB)",
				(unsigned long long)LAB_TRACE_MAX_MEM);
	for (uint32_t i = 0; i < t->nregions; i++) {
		const struct lab_trace_region *o = &t->regions[i];

		if (r.gpa < o->gpa + o->size && o->gpa < r.gpa + r.size)
			return tl_error(p, tl_pos(p, 0), "overlaps the region at 0x%" PRIx64
					" of 0x%" PRIx64 " bytes", o->gpa, o->size);
	}
	if (p->arg[0]) {
		if (!tl_range(p, p->arg[0], PAGE, r.size, &r.pieces))
			return false;
		if (r.pieces % PAGE)
			return tl_error(p, p->arg[0], "pieces are a multiple of 4096");
	}
	t->regions[t->nregions++] = r;
	return true;
}

enum {
	QK_SIZE, QK_AT, QK_DESC, QK_AVAIL, QK_USED, QK_DRIVER, QK_DEVICE, QK_START, QK_WRAP,
	QK_BATCH, QK_ZC, QK_ZC_MAX, QK_ALLOC, QK_LINE_WAIT,
};

/* An explicit ring address: its area must not run past 2^64. */
static bool ring_addr(struct tl *p, unsigned k, uint64_t len, uint64_t *gpa)
{
	if (!tl_need(p, k) || !tl_u64(p, p->arg[k], gpa))
		return false;
	if (len - 1 > UINT64_MAX - *gpa)
		return tl_error(p, p->arg[k], "the ring area runs past the end of the 64-bit "
				"address space");
	return true;
}

/* Where the rings are: at=GPA or every address of the layout. */
static bool queue_rings(struct tl *p, struct lab_trace_queue *q, bool packed)
{
	uint64_t at, n = q->size;

	if (p->arg[QK_AT]) {
		for (unsigned k = QK_DESC; k <= QK_DEVICE; k++)
			if (p->arg[k])
				return tl_error(p, p->arg[k], "give either at= or every ring address, "
						"not both");
		if (!tl_u64(p, p->arg[QK_AT], &at))
			return false;
		if (!lab_trace_queue_at(q, packed, at))
			return tl_error(p, p->arg[QK_AT], "the rings run past the end of the 64-bit "
					"address space");
		return true;
	}
	if (!p->arg[QK_DESC])
		return tl_error_stmt(p, "missing at=GPA (or %s); expected: %s",
				     packed ? "desc= driver= device=" : "desc= avail= used=", p->usage);
	if (packed)
		return ring_addr(p, QK_DESC, 16 * n, &q->desc) &&
		       ring_addr(p, QK_DRIVER, 4, &q->driver) &&
		       ring_addr(p, QK_DEVICE, 4, &q->device);
	return ring_addr(p, QK_DESC, 16 * n, &q->desc) &&
	       ring_addr(p, QK_AVAIL, 6 + 2 * n, &q->driver) &&
	       ring_addr(p, QK_USED, 6 + 8 * n, &q->device);
}

/* Device options: start, wrap, batch, zero-copy, zc-max, alloc, line-wait. */
static bool queue_options(struct tl *p, struct lab_trace_queue *q, bool packed)
{
	uint64_t v;
	unsigned k;

	if (p->arg[QK_START]) {
		if (!tl_range(p, p->arg[QK_START], 0, packed ? q->size - 1 : 0xffff, &v))
			return false;
		q->start = (uint16_t)v;
	}
	if (p->arg[QK_WRAP]) {
		if (!tl_range(p, p->arg[QK_WRAP], 0, 1, &v))
			return false;
		q->wrap = v != 0;
	}
	if (p->arg[QK_BATCH]) {
		if (!tl_range(p, p->arg[QK_BATCH], 0, UINT32_MAX, &v))
			return false;
		q->batch = (uint32_t)v;
	}
	if (p->arg[QK_ZC]) {
		if (q->dir != LAB_TRACE_TX)
			return tl_error(p, p->arg[QK_ZC], "zero-copy is a dequeue option: tx queues "
					"only");
		if (!tl_range(p, p->arg[QK_ZC], 0, UINT32_MAX, &v))
			return false;
		q->zero_copy = true;
		q->zc_min = (uint32_t)v;
	}
	if (p->arg[QK_ZC_MAX]) {
		if (!q->zero_copy)
			return tl_error(p, p->arg[QK_ZC_MAX], "needs zero-copy=MINLEN");
		if (!tl_range(p, p->arg[QK_ZC_MAX], 1, q->size, &v))
			return false;
		q->zc_max = (uint32_t)v;
	}
	if (p->arg[QK_ALLOC]) {
		if (!tl_tx_word(p, p->arg[QK_ALLOC], q->dir, "the allocation policy",
				lab_tn_allocs, 2, &k))
			return false;
		q->alloc = (enum lab_trace_alloc)k;
	}
	/* On a split tx queue it is accepted and the core ignores it (a packed ring's option,
	 * vl_vq_set_tx_line_wait); enqueue never looks at it, so on rx it could only mislead. */
	if (p->arg[QK_LINE_WAIT]) {
		if (!tl_tx_word(p, p->arg[QK_LINE_WAIT], q->dir, "line-wait", lab_tn_switch, 2, &k))
			return false;
		q->line_wait = k != 0;
	}
	return true;
}

static bool st_queue(struct tl *p)
{
	static const char *const keys[] = {
		[QK_SIZE] = "size", [QK_AT] = "at", [QK_DESC] = "desc", [QK_AVAIL] = "avail",
		[QK_USED] = "used", [QK_DRIVER] = "driver", [QK_DEVICE] = "device",
		[QK_START] = "start", [QK_WRAP] = "wrap", [QK_BATCH] = "batch",
		[QK_ZC] = "zero-copy", [QK_ZC_MAX] = "zc-max", [QK_ALLOC] = "alloc",
		[QK_LINE_WAIT] = "line-wait", NULL,
	};
	struct lab_trace *t = p->t;
	bool packed = lab_trace_packed(t);
	struct lab_trace_queue q = t->queues[t->nqueues < LAB_TRACE_MAX_QUEUES ? t->nqueues : 0];
	uint32_t qi;
	unsigned dir;
	uint64_t size;

	if (!p->features_line)
		return tl_error(p, &p->tok[0], "needs 'features' before it (a queue's layout "
				"depends on ring_packed)");
	if (t->nqueues == LAB_TRACE_MAX_QUEUES)
		return tl_error(p, &p->tok[0], "more than %u queues", LAB_TRACE_MAX_QUEUES);
	if (!tl_stmt(p, 1, "queue", packed ?
		     "queue NAME tx|rx size=N (at=GPA | desc=GPA driver=GPA device=GPA) "
		     "[start=POS] [wrap=0|1] [batch=BYTES] [zero-copy=MINLEN] [zc-max=N] "
		     "[alloc=available|burst] [line-wait=on|off]" :
		     "queue NAME tx|rx size=N (at=GPA | desc=GPA avail=GPA used=GPA) "
		     "[start=IDX] [batch=BYTES] [zero-copy=MINLEN] [zc-max=N] "
		     "[alloc=available|burst] [line-wait=on|off]", keys, 2, 2, false) ||
	    !tl_name(p, tl_pos(p, 0), q.name, sizeof(q.name)))
		return false;
	if (tl_find_queue(p, tl_pos(p, 0), &qi))
		return tl_error(p, tl_pos(p, 0), "queue declared twice (first on line %" PRIu32 ")",
				p->queue_line[qi]);
	if (!tl_word(p, tl_pos(p, 1), lab_tn_dirs, 2, &dir))
		return false;
	q.dir = (enum lab_trace_dir)dir;
	/* Arguments of the other layout: a trace must not say what cannot happen. */
	for (unsigned k = QK_AVAIL; k <= QK_WRAP; k++) {
		bool split_only = k == QK_AVAIL || k == QK_USED;

		if (p->arg[k] && k != QK_START && split_only == packed)
			return tl_error(p, p->arg[k], "%s rings only (this trace %s ring_packed)",
					packed ? "split" : "packed",
					packed ? "negotiates" : "does not negotiate");
	}
	if (!tl_need(p, QK_SIZE) || !tl_range(p, p->arg[QK_SIZE], 1, 32768, &size))
		return false;
	if (!packed && (size & (size - 1)))
		return tl_error(p, p->arg[QK_SIZE], "a split queue's size is a power of two "
				"(1 to 32768)");
	q.size = (uint32_t)size;
	if (!queue_rings(p, &q, packed) || !queue_options(p, &q, packed))
		return false;
	p->queue_line[t->nqueues] = p->line;
	t->queues[t->nqueues++] = q;
	return true;
}

static bool st_pool(struct tl *p)
{
	static const char *const keys[] = {"bufs", "size", NULL};
	uint64_t bufs, size;

	if (!once(p, &p->pool_line) ||
	    !tl_stmt(p, 1, "pool", "pool bufs=N size=BYTES", keys, 0, 0, false) ||
	    !tl_need(p, 0) || !tl_need(p, 1) ||
	    !tl_range(p, p->arg[0], 1, UINT32_MAX, &bufs) ||
	    !tl_range(p, p->arg[1], 1, UINT32_MAX, &size))
		return false;
	if (bufs * size > LAB_TRACE_MAX_MEM)
		return tl_error(p, p->arg[1], "the pool would hold more than %llu bytes (1 GiB)",
				(unsigned long long)LAB_TRACE_MAX_MEM);
	p->t->pool_bufs = (uint32_t)bufs;
	p->t->pool_size = (uint32_t)size;
	return true;
}

static bool st_dirty_log(struct tl *p)
{
	static const char *const keys[] = {"pages", NULL};

	return once(p, &p->dirty_line) &&
	       tl_stmt(p, 1, "dirty-log", "dirty-log pages=N", keys, 0, 0, false) &&
	       tl_need(p, 0) &&
	       tl_range(p, p->arg[0], 1, LAB_TRACE_MAX_DIRTY_PAGES, &p->t->dirty_pages);
}

static bool st_seed(struct tl *p)
{
	static const char *const keys[] = {NULL};

	return once(p, &p->seed_line) && tl_stmt(p, 1, "seed", "seed N", keys, 1, 1, false) &&
	       tl_u64(p, tl_pos(p, 0), &p->t->seed);
}

static const struct {
	const char *word;
	bool (*read)(struct tl *p);
} setup[] = {
	{"features", st_features}, {"region", st_region}, {"queue", st_queue},
	{"pool", st_pool}, {"dirty-log", st_dirty_log}, {"seed", st_seed},
};

/* ---- the loop ----------------------------------------------------------------------- */

static bool statement(struct tl *p)
{
	const struct tl_tok *kw = &p->tok[0];

	if (!p->header_seen && !tl_is(kw, "vhostlab-trace"))
		return tl_error(p, kw, "a trace starts with the header 'vhostlab-trace %u'",
				LAB_TRACE_VERSION);
	if (tl_is(kw, "vhostlab-trace"))
		return st_header(p);
	if (tl_is_block(p)) {
		/* A block is where the statements start: setup cannot follow it. */
		if (!p->first_action_line)
			p->first_action_line = p->line;
		return tl_block(p);
	}
	for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++)
		if (tl_is(kw, setup[i].word)) {
			if (p->first_action_line)
				return tl_error(p, kw, "setup statements come before the first action "
						"(line %" PRIu32 ")", p->first_action_line);
			p->what = setup[i].word;
			return setup[i].read(p);
		}
	if (!p->first_action_line)
		p->first_action_line = p->line;
	return tl_action(p);
}

bool lab_trace_parse(struct lab_trace *t, const char *text, size_t len, const char *name,
		     char *err, size_t errlen)
{
	struct tl p = {.t = t, .name = name ? name : "trace", .err = err, .errlen = errlen};
	bool ok = true;
	size_t at = 0;

	lab_trace_init(t);
	if (err && errlen)
		err[0] = '\0';
	p.line = 1;
	if (len > LAB_TRACE_MAX_TEXT)
		return tl_error_at(&p, 1, "more than %u bytes of text", LAB_TRACE_MAX_TEXT);
	p.tok = malloc(TL_MAX_TOKENS * sizeof(*p.tok));
	p.pos = malloc(TL_MAX_TOKENS * sizeof(*p.pos));
	if (!p.tok || !p.pos) {
		ok = tl_error_at(&p, 1, "out of memory");
		goto out;
	}
	while (ok && at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len;

		ok = tl_tokenize(&p, text + at, end - at) && (p.ntok == 0 || statement(&p));
		at = end + 1;
		if (ok && nl)
			p.line++;
	}
	if (ok && p.header_seen)
		ok = tl_blocks_closed(&p);
	if (ok && !p.header_seen) {
		p.line = 1;
		ok = tl_error_at(&p, 1, "empty trace: a trace starts with the header "
				 "'vhostlab-trace %u'", LAB_TRACE_VERSION);
	}
out:
	free(p.tok);
	free(p.pos);
	if (!ok)
		lab_trace_free(t);
	return ok;
}

bool lab_trace_load(struct lab_trace *t, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	bool ok;

	lab_trace_init(t);
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return false;
	}
	do {
		if (len == cap) {
			char *b;

			cap = cap ? 2 * cap : 65536;
			if (cap > (size_t)LAB_TRACE_MAX_TEXT + 1)
				cap = (size_t)LAB_TRACE_MAX_TEXT + 1;
			b = len < cap ? realloc(buf, cap) : NULL;
			if (!b) {
				snprintf(err, errlen, "%s: %s", path, len < cap ? "out of memory" :
					 "larger than the 256 MiB a trace may have");
				free(buf);
				fclose(f);
				return false;
			}
			buf = b;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		free(buf);
		fclose(f);
		return false;
	}
	fclose(f);
	ok = lab_trace_parse(t, buf, len, path, err, errlen);
	free(buf);
	return ok;
}

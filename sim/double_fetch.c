/* SPDX-License-Identifier: MIT */
/* The double-fetch detector: see double_fetch.h. Strong definitions of the core's lab hooks
 * (core/lab/vl_lab_hooks.h). */
#include "double_fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vl_lab_hooks.h"

/* ---- byte sets: the guest bytes a unit has read ------------------------------------------
 * Open addressing over byte addresses, cleared in O(1) by bumping a generation: a slot
 * belongs to the set only when it carries the current generation. Within a generation
 * nothing is deleted, so a probe may stop at the first slot that is not current. */

struct byteset {
	uintptr_t *addr;
	uint32_t *gen;
	size_t cap;   /* power of two, or 0 before first use */
	size_t live;  /* slots of the current generation */
	uint32_t cur; /* current generation (>= 1) */
};

static size_t bs_hash(uintptr_t a, size_t cap)
{
	uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull;

	return (size_t)(h >> 20) & (cap - 1);
}

static void bs_free(struct byteset *s)
{
	free(s->addr);
	free(s->gen);
	memset(s, 0, sizeof(*s));
}

static void bs_clear(struct byteset *s)
{
	s->live = 0;
	if (++s->cur == 0) {
		/* Generations wrapped: forget every stamp. */
		if (s->gen)
			memset(s->gen, 0, s->cap * sizeof(*s->gen));
		s->cur = 1;
	}
}

static bool bs_contains(const struct byteset *s, uintptr_t a)
{
	if (s->cap == 0 || s->live == 0)
		return false;
	for (size_t i = bs_hash(a, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (s->gen[i] != s->cur)
			return false;
		if (s->addr[i] == a)
			return true;
	}
}

static void bs_put(struct byteset *s, uintptr_t a);

static void bs_grow(struct byteset *s)
{
	struct byteset old = *s;
	size_t cap = old.cap ? old.cap * 2 : 1024;

	s->addr = calloc(cap, sizeof(*s->addr));
	s->gen = calloc(cap, sizeof(*s->gen));
	if (!s->addr || !s->gen) {
		fprintf(stderr, "double_fetch: out of memory\n");
		abort();
	}
	s->cap = cap;
	s->live = 0;
	s->cur = 1;
	for (size_t i = 0; i < old.cap; i++)
		if (old.gen[i] == old.cur)
			bs_put(s, old.addr[i]);
	free(old.addr);
	free(old.gen);
}

/* Insert a (the caller checked it is absent or does not care). */
static void bs_put(struct byteset *s, uintptr_t a)
{
	if ((s->live + 1) * 2 > s->cap)
		bs_grow(s);
	for (size_t i = bs_hash(a, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (s->gen[i] != s->cur) {
			s->gen[i] = s->cur;
			s->addr[i] = a;
			s->live++;
			return;
		}
		if (s->addr[i] == a)
			return;
	}
}

/* ---- state ------------------------------------------------------------------------------ */

enum scope { SCOPE_NONE, SCOPE_BURST, SCOPE_CHAIN };

/* One flip the adversarial mode made: the bytes at addr were orig, now flipped. */
struct flip {
	uint8_t *addr;
	size_t len;
	size_t off;        /* into the byte pool: orig at off, flipped at off + len */
	enum scope scope;
};

static struct {
	enum lab_df_mode mode;
	bool log;                    /* print every violation (VL_LAB_DOUBLE_FETCH_LOG) */
	bool in_burst, in_chain;
	uint64_t chain_no, burst_no; /* numbers of the current units (1-based) */
	struct byteset chain_set, burst_set;
	struct lab_df_stats st;
	char last[512];
	uint64_t rng;
	struct flip *flips;
	size_t nflips, flips_cap;
	uint8_t *pool;
	size_t pool_len, pool_cap;
	lab_df_observer observer;    /* sees every load, in every mode (trace `mutate`) */
	void *observer_ctx;
} df = { .rng = 1 };

static uint64_t rng_next(void)
{
	/* xorshift64* */
	uint64_t x = df.rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	df.rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t n = *cap ? *cap : 64;

	while (n < need)
		n *= 2;
	void *q = realloc(p, n * elem);

	if (!q) {
		fprintf(stderr, "double_fetch: out of memory\n");
		abort();
	}
	*cap = n;
	return q;
}

/* XOR every byte with a random non-zero byte: each byte read changes. */
static void flip_bytes(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t r = (uint8_t)(rng_next() >> 56);

		p[i] ^= (uint8_t)(r ? r : 0x5A);
	}
}

static void flip_and_log(uint8_t *p, size_t len, enum scope scope)
{
	df.pool = grow(df.pool, &df.pool_cap, df.pool_len + 2 * len, 1);
	df.flips = grow(df.flips, &df.flips_cap, df.nflips + 1, sizeof(*df.flips));

	struct flip *f = &df.flips[df.nflips++];

	f->addr = p;
	f->len = len;
	f->off = df.pool_len;
	f->scope = scope;
	memcpy(df.pool + f->off, p, len);
	flip_bytes(p, len);
	memcpy(df.pool + f->off + len, p, len);
	df.pool_len += 2 * len;
	df.st.mutations++;
}

/* Put back the flips of `scope` and narrower ones (newest first, so bytes flipped twice end
 * as they were), byte by byte where memory still holds what the flip wrote. */
static void restore(enum scope scope)
{
	while (df.nflips > 0 && df.flips[df.nflips - 1].scope >= scope) {
		const struct flip *f = &df.flips[--df.nflips];
		const uint8_t *orig = df.pool + f->off, *flipped = orig + f->len;
		bool all = true;

		for (size_t i = 0; i < f->len; i++) {
			if (f->addr[i] == flipped[i])
				f->addr[i] = orig[i];
			else
				all = false;
		}
		if (all)
			df.st.restored++;
		else
			df.st.kept++;
		df.pool_len = f->off;
	}
}

static void violation(const uint8_t *p, size_t len, const uint8_t *first, const void *from)
{
	df.st.violations++;
	snprintf(df.last, sizeof(df.last),
		 "double fetch #%llu: %zu byte(s) at %p (byte %p read before) in %s unit #%llu "
		 "(burst #%llu), load reported from %p",
		 (unsigned long long)df.st.violations, len, (const void *)p, (const void *)first,
		 df.in_chain ? "chain" : "burst-window",
		 (unsigned long long)(df.in_chain ? df.chain_no : df.burst_no),
		 (unsigned long long)df.burst_no, from);
	if (df.log)
		fprintf(stderr, "%s\n", df.last);
}

/* ---- the hooks -------------------------------------------------------------------------- */

static void on_load(const void *addr, size_t len, const void *from)
{
	uint8_t *p = (uint8_t *)(uintptr_t)addr;

	df.st.loads++;
	df.st.bytes += len;
	if (!df.in_chain && !df.in_burst) {
		df.st.unscoped++;
		if (df.mode == LAB_DF_ADVERSARIAL_PERSIST) {
			flip_bytes(p, len);
			df.st.mutations++;
		}
		return;
	}
	struct byteset *own = df.in_chain ? &df.chain_set : &df.burst_set;
	/* A chain's loads must not repeat its burst's window loads either. */
	const struct byteset *outer = df.in_chain && df.in_burst ? &df.burst_set : NULL;
	const uint8_t *first = NULL;

	for (size_t i = 0; i < len && !first; i++) {
		uintptr_t a = (uintptr_t)(p + i);

		if (bs_contains(own, a) || (outer && bs_contains(outer, a)))
			first = p + i;
	}
	if (first)
		violation(p, len, first, from);
	for (size_t i = 0; i < len; i++)
		bs_put(own, (uintptr_t)(p + i));

	if (df.mode == LAB_DF_ADVERSARIAL)
		flip_and_log(p, len, df.in_chain ? SCOPE_CHAIN : SCOPE_BURST);
	else if (df.mode == LAB_DF_ADVERSARIAL_PERSIST) {
		flip_bytes(p, len);
		df.st.mutations++;
	}
}

void vl_lab_guest_load(const void *addr, size_t len)
{
	if (len == 0)
		return;
	if (df.mode != LAB_DF_OFF)
		on_load(addr, len, __builtin_return_address(0));
	if (df.observer)
		df.observer(df.observer_ctx, addr, len);
}

void lab_df_set_observer(lab_df_observer fn, void *ctx)
{
	df.observer = fn;
	df.observer_ctx = ctx;
}

void vl_lab_chain_begin(void)
{
	if (df.mode == LAB_DF_OFF)
		return;
	if (df.in_chain) {
		df.st.unbalanced++;
		restore(SCOPE_CHAIN);
	}
	df.in_chain = true;
	df.chain_no++;
	df.st.chains++;
	bs_clear(&df.chain_set);
}

void vl_lab_chain_end(void)
{
	if (df.mode == LAB_DF_OFF)
		return;
	if (!df.in_chain)
		df.st.unbalanced++;
	restore(SCOPE_CHAIN);
	df.in_chain = false;
}

void vl_lab_burst_begin(void)
{
	if (df.mode == LAB_DF_OFF)
		return;
	if (df.in_burst || df.in_chain) {
		df.st.unbalanced++;
		restore(SCOPE_BURST);
		df.in_chain = false;
	}
	df.in_burst = true;
	df.burst_no++;
	df.st.bursts++;
	bs_clear(&df.burst_set);
}

void vl_lab_burst_end(void)
{
	if (df.mode == LAB_DF_OFF)
		return;
	if (!df.in_burst || df.in_chain)
		df.st.unbalanced++;
	restore(SCOPE_BURST);
	df.in_burst = false;
	df.in_chain = false;
}

/* ---- control ---------------------------------------------------------------------------- */

/* VL_LAB_DOUBLE_FETCH=detect|adversarial|adversarial-persist in the environment turns the
 * detector on for a whole program (any program linked with the lab core, e.g. the unit
 * tests) and reports at exit; violations or unbalanced units make the program exit with
 * status 1. */
static void env_report(void)
{
	struct lab_df_stats st = df.st;

	fprintf(stderr,
		"double_fetch (%s): %llu loads, %llu chains, %llu bursts, %llu unscoped, "
		"%llu unbalanced, %llu flips (%llu put back, %llu overwritten by the core), "
		"%llu violations%s%s\n",
		lab_df_mode_name(df.mode), (unsigned long long)st.loads,
		(unsigned long long)st.chains, (unsigned long long)st.bursts,
		(unsigned long long)st.unscoped, (unsigned long long)st.unbalanced,
		(unsigned long long)st.mutations, (unsigned long long)st.restored,
		(unsigned long long)st.kept, (unsigned long long)st.violations,
		st.violations ? "; last: " : "", st.violations ? df.last : "");
	if (st.violations || st.unbalanced)
		_exit(1);
}

__attribute__((constructor)) static void env_init(void)
{
	const char *v = getenv("VL_LAB_DOUBLE_FETCH");
	enum lab_df_mode m;

	if (!v || !*v || strcmp(v, "off") == 0)
		return;
	if (strcmp(v, "detect") == 0)
		m = LAB_DF_DETECT;
	else if (strcmp(v, "adversarial") == 0)
		m = LAB_DF_ADVERSARIAL;
	else if (strcmp(v, "adversarial-persist") == 0)
		m = LAB_DF_ADVERSARIAL_PERSIST;
	else {
		fprintf(stderr, "VL_LAB_DOUBLE_FETCH=%s: expected detect, adversarial, "
				"adversarial-persist or off\n", v);
		_exit(2);
	}
	df.mode = m;
	df.log = getenv("VL_LAB_DOUBLE_FETCH_LOG") != NULL;
	atexit(env_report);
}

static void close_units(void)
{
	restore(SCOPE_BURST);
	df.in_burst = false;
	df.in_chain = false;
	bs_clear(&df.chain_set);
	bs_clear(&df.burst_set);
}

void lab_df_set_mode(enum lab_df_mode mode)
{
	if (df.mode == LAB_DF_ADVERSARIAL && mode != LAB_DF_ADVERSARIAL)
		restore(SCOPE_BURST);
	df.mode = mode;
	if (mode == LAB_DF_OFF) {
		close_units();
		bs_free(&df.chain_set);
		bs_free(&df.burst_set);
		free(df.flips);
		free(df.pool);
		df.flips = NULL;
		df.pool = NULL;
		df.nflips = df.flips_cap = df.pool_len = df.pool_cap = 0;
	}
}

enum lab_df_mode lab_df_get_mode(void)
{
	return df.mode;
}

void lab_df_set_seed(uint64_t seed)
{
	df.rng = seed ? seed : 1;
}

void lab_df_reset(void)
{
	close_units();
	memset(&df.st, 0, sizeof(df.st));
	df.last[0] = '\0';
	df.chain_no = df.burst_no = 0;
}

uint64_t lab_df_violations(void)
{
	return df.st.violations;
}

bool lab_df_last_violation(char *buf, size_t n)
{
	if (buf && n > 0)
		snprintf(buf, n, "%s", df.last);
	return df.st.violations > 0;
}

void lab_df_get_stats(struct lab_df_stats *st)
{
	*st = df.st;
}

const char *lab_df_mode_name(enum lab_df_mode mode)
{
	switch (mode) {
	case LAB_DF_OFF:
		return "off";
	case LAB_DF_DETECT:
		return "detect";
	case LAB_DF_ADVERSARIAL:
		return "adversarial";
	case LAB_DF_ADVERSARIAL_PERSIST:
		return "adversarial-persist";
	}
	return "unknown";
}

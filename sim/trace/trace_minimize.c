/* SPDX-License-Identifier: MIT */
/* Minimise a failing trace (see trace_minimize.h).
 *
 * The minimiser works on a view of the trace: shallow copies of its statements, so removing
 * one is dropping it from an array, and shortening one is changing a length in the copy.
 * Arrays it rewrites (a post's buffers, an enqueue's packets, a free's numbers) are new
 * allocations tracked in an arena and freed at the end; the input trace is never changed.
 * Passes, repeated until none makes progress:
 *  1. cut everything after the failing statement (after the outermost block holding it);
 *  2. delta debugging: remove chunks of statements (halves, quarters, ... single ones);
 *  3. whole blocks: remove each repeat or either block with its body, as a unit;
 *  4. per statement: drop list items (buffers, packets, freed numbers), halve lengths and
 *     repeat counts.
 * A candidate whose blocks do not balance (a chunk that takes a `repeat {` without its
 * `}`) is never replayed: only traces that could be written as text are tried. */
#include "trace_minimize.h"
#include "trace_blocks.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIN_TIMEOUT_S 10u

/* ---- isolated replay ---------------------------------------------------------------- */

static bool read_all(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = read(fd, p, n);

		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

void lab_replay_isolated(const struct lab_trace *t, const struct lab_replay_opts *o,
			 unsigned timeout_s, struct lab_replay_result *res)
{
	int fds[2], status = 0;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	fflush(NULL);
	if (pipe(fds) != 0 || (pid = fork()) < 0) {
		res->status = LAB_REPLAY_ERROR;
		snprintf(res->signature, sizeof(res->signature), "error:fork");
		return;
	}
	if (pid == 0) {
		struct lab_replay_result r;

		close(fds[0]);
		alarm(timeout_s);
		lab_replay_run(t, o, &r);
		if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	bool got = read_all(fds[0], res, sizeof(*res));

	close(fds[0]);
	waitpid(pid, &status, 0);
	if (got && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	memset(res, 0, sizeof(*res));
	res->status = LAB_REPLAY_DIVERGED;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		snprintf(res->signature, sizeof(res->signature), "hang");
	else if (WIFSIGNALED(status))
		snprintf(res->signature, sizeof(res->signature), "crash:%s",
			 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
	else
		snprintf(res->signature, sizeof(res->signature), "crash:exit%d",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	snprintf(res->observed, sizeof(res->observed), "the replay process died (%s)",
		 res->signature);
}

/* ---- the view ----------------------------------------------------------------------- */

struct mz {
	struct lab_trace view;          /* setup copied; ops = the current candidate */
	const struct lab_replay_opts *o;
	struct lab_replay_result want;
	uint32_t pin;                   /* view index of the failing statement (never removed),
					 * UINT32_MAX when the failure is at the end or a crash */
	void **arena;
	size_t narena, cap_arena;
	uint32_t replays;
	struct lab_trace_op *scratch;   /* candidate ops */
};

static void *arena_alloc(struct mz *m, size_t n)
{
	void *p;

	if (m->narena == m->cap_arena) {
		size_t cap = m->cap_arena ? 2 * m->cap_arena : 64;
		void **a = realloc(m->arena, cap * sizeof(*a));

		if (!a)
			return NULL;
		m->arena = a;
		m->cap_arena = cap;
	}
	p = malloc(n ? n : 1);
	if (p)
		m->arena[m->narena++] = p;
	return p;
}

static bool same_failure(struct mz *m, const struct lab_trace_op *ops, uint32_t n)
{
	struct lab_trace cand = m->view;
	struct lab_replay_result r;
	const char *why;
	uint32_t bad;

	cand.ops = (struct lab_trace_op *)ops;
	cand.nops = cand.cap_ops = n;
	if (!lab_trace_blocks_check(&cand, &bad, &why))
		return false;
	lab_replay_isolated(&cand, m->o, MIN_TIMEOUT_S, &r);
	m->replays++;
	/* The same failure: same kind, at the same statement, observing the same thing. The
	 * kind alone is not enough: with the statements that wrote an RX buffer removed, an
	 * `expect mem` of it still fails as "expect mem:data" -- on untouched memory. */
	return r.status == m->want.status && !strcmp(r.signature, m->want.signature) &&
	       !strcmp(r.statement, m->want.statement) && !strcmp(r.observed, m->want.observed);
}

/* Try the view without ops [from, from+len); keep it if the failure stays. */
static bool try_remove(struct mz *m, uint32_t from, uint32_t len)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->view.nops; i++) {
		if (i >= from && i < from + len) {
			if (i == m->pin)
				return false;  /* never remove the failing statement */
			continue;
		}
		m->scratch[n++] = m->view.ops[i];
	}
	if (!same_failure(m, m->scratch, n))
		return false;
	memcpy(m->view.ops, m->scratch, n * sizeof(*m->scratch));
	m->view.nops = n;
	if (m->pin != UINT32_MAX && m->pin >= from + len)
		m->pin -= len;
	return true;
}

static bool pass_ddmin(struct mz *m)
{
	bool progress = false;

	for (uint32_t chunk = m->view.nops / 2; chunk >= 1; chunk /= 2) {
		for (uint32_t from = 0; from < m->view.nops;) {
			if (try_remove(m, from, chunk))
				progress = true;
			else
				from += chunk;
		}
		if (chunk == 1)
			break;
	}
	return progress;
}

/* Try op i replaced by `cand`; keep it if the failure stays. */
static bool try_replace(struct mz *m, uint32_t i, const struct lab_trace_op *cand)
{
	memcpy(m->scratch, m->view.ops, m->view.nops * sizeof(*m->scratch));
	m->scratch[i] = *cand;
	if (!same_failure(m, m->scratch, m->view.nops))
		return false;
	m->view.ops[i] = *cand;
	return true;
}

/* Drop list items one at a time (from the end, so indices stay meaningful). */
static bool shrink_items(struct mz *m, uint32_t i)
{
	struct lab_trace_op *op = &m->view.ops[i];
	size_t isz = op->kind == LAB_T_POST ? sizeof(*op->bufs)
		     : op->kind == LAB_T_ENQUEUE ? sizeof(*op->pkts) : sizeof(*op->nums);
	bool progress = false;

	for (uint32_t k = op->nitems; k-- > 0 && op->nitems > 1;) {
		struct lab_trace_op c = *op;
		const uint8_t *src = op->kind == LAB_T_POST ? (const void *)op->bufs
				     : op->kind == LAB_T_ENQUEUE ? (const void *)op->pkts
								 : (const void *)op->nums;
		uint8_t *dst = arena_alloc(m, (op->nitems - 1) * isz);

		if (!dst)
			return progress;
		memcpy(dst, src, k * isz);
		memcpy(dst + k * isz, src + (k + 1) * isz, (op->nitems - k - 1) * isz);
		c.nitems--;
		if (op->kind == LAB_T_POST)
			c.bufs = (void *)dst;
		else if (op->kind == LAB_T_ENQUEUE)
			c.pkts = (void *)dst;
		else
			c.nums = (void *)dst;
		if (try_replace(m, i, &c)) {
			progress = true;
			op = &m->view.ops[i];
		}
	}
	return progress;
}

/* Halve lengths while the failure stays: fill lengths, packet lengths. */
static bool shrink_lengths(struct mz *m, uint32_t i)
{
	struct lab_trace_op *op = &m->view.ops[i];
	bool progress = false;

	if (op->kind == LAB_T_FILL) {
		while (op->len > 1) {
			struct lab_trace_op c = *op;

			c.len = op->len / 2;
			if (!try_replace(m, i, &c))
				break;
			progress = true;
			op = &m->view.ops[i];
		}
	}
	if (op->kind == LAB_T_ENQUEUE)
		for (uint32_t k = 0; k < op->nitems; k++) {
			while (op->pkts[k].len > 1 && op->pkts[k].data.kind != LAB_PAT_HEX) {
				struct lab_trace_op c = *op;
				struct lab_trace_pkt *p = arena_alloc(m, op->nitems * sizeof(*p));

				if (!p)
					return progress;
				memcpy(p, op->pkts, op->nitems * sizeof(*p));
				p[k].len /= 2;
				c.pkts = p;
				if (!try_replace(m, i, &c))
					break;
				progress = true;
				op = &m->view.ops[i];
			}
		}
	return progress;
}

/* Each block with its body, as a unit (delta debugging's chunks rarely line up with one). */
static bool pass_blocks(struct mz *m)
{
	bool progress = false;

	for (uint32_t i = 0; i < m->view.nops;) {
		enum lab_trace_kind k = m->view.ops[i].kind;
		uint32_t end;

		if (k != LAB_T_REPEAT && k != LAB_T_EITHER) {
			i++;
			continue;
		}
		end = lab_trace_block_end(&m->view, i);
		if (end < m->view.nops && try_remove(m, i, end - i + 1))
			progress = true;
		else
			i++;
	}
	return progress;
}

/* Halve a repeat's count while the failure stays. */
static bool shrink_repeat(struct mz *m, uint32_t i)
{
	bool progress = false;

	while (m->view.ops[i].kind == LAB_T_REPEAT && m->view.ops[i].count > 1) {
		struct lab_trace_op c = m->view.ops[i];

		c.count /= 2;
		if (!try_replace(m, i, &c))
			break;
		progress = true;
	}
	return progress;
}

static bool pass_statements(struct mz *m)
{
	bool progress = false;

	for (uint32_t i = 0; i < m->view.nops; i++) {
		enum lab_trace_kind k = m->view.ops[i].kind;

		if (k == LAB_T_POST || k == LAB_T_ENQUEUE || k == LAB_T_FREE)
			progress |= shrink_items(m, i);
		progress |= shrink_lengths(m, i);
		progress |= shrink_repeat(m, i);
	}
	return progress;
}

/* How many statements to keep so that the one at `pin` runs and every block is closed:
 * through the end of the outermost block that holds it (or that it opens). */
static uint32_t cut_after(const struct lab_trace *t, uint32_t pin)
{
	uint32_t depth = 0, outer = pin;

	for (uint32_t i = 0; i < pin; i++) {
		enum lab_trace_kind k = t->ops[i].kind;

		if (k == LAB_T_REPEAT || k == LAB_T_EITHER) {
			if (depth++ == 0)
				outer = i;
		} else if (k == LAB_T_END && depth) {
			depth--;
		}
	}
	if (depth == 0 && t->ops[pin].kind != LAB_T_REPEAT && t->ops[pin].kind != LAB_T_EITHER)
		return pin + 1;
	return lab_trace_block_end(t, depth ? outer : pin) + 1;
}

static void report(struct mz *m, struct lab_minimize_report *rep)
{
	char *text = lab_trace_format(&m->view, &rep->bytes_after);

	free(text);
	rep->ops_after = m->view.nops;
	rep->replays = m->replays;
}

bool lab_trace_minimize(const struct lab_trace *t, const struct lab_replay_opts *o,
			char **out, struct lab_minimize_report *rep,
			void (*progress)(void *ctx, const struct lab_minimize_report *rep),
			void *ctx, char *err, size_t errlen)
{
	struct mz m = {.view = *t, .o = o};
	bool ok = false;
	char *text;

	memset(rep, 0, sizeof(*rep));
	*out = NULL;
	m.view.ops = malloc((t->nops ? t->nops : 1) * sizeof(*t->ops));
	m.scratch = malloc((t->nops ? t->nops : 1) * sizeof(*t->ops));
	text = lab_trace_format(t, &rep->bytes_before);
	free(text);
	if (!m.view.ops || !m.scratch) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy(m.view.ops, t->ops, t->nops * sizeof(*t->ops));
	/* Tools write version 2, a superset of 1: the result may be a version 1 input's. */
	m.view.version = LAB_TRACE_VERSION;
	rep->ops_before = t->nops;
	lab_replay_isolated(t, o, MIN_TIMEOUT_S, &m.want);
	m.replays = 1;
	if (m.want.status == LAB_REPLAY_PASS) {
		snprintf(err, errlen, "the trace passes: there is no failure to keep");
		goto out;
	}
	if (!strncmp(m.want.signature, "error:", 6)) {
		snprintf(err, errlen, "the trace does not run (%s: %s); fix it first",
			 m.want.signature, m.want.observed);
		goto out;
	}
	snprintf(rep->signature, sizeof(rep->signature), "%s", m.want.signature);
	/* Crashes and end-of-run failures have no failing statement to pin: the end is. */
	if (m.want.op < t->nops && strncmp(m.want.signature, "crash:", 6) &&
	    strcmp(m.want.signature, "hang")) {
		uint32_t cut = cut_after(t, m.want.op);

		m.pin = m.want.op;
		if (cut < m.view.nops && same_failure(&m, m.view.ops, cut))
			m.view.nops = cut;
	} else {
		m.pin = UINT32_MAX;
	}
	for (int round = 0; round < 4; round++) {
		bool moved = pass_ddmin(&m);

		moved |= pass_blocks(&m);
		moved |= pass_statements(&m);
		report(&m, rep);
		if (progress)
			progress(ctx, rep);
		if (!moved)
			break;
	}
	*out = lab_trace_format(&m.view, &rep->bytes_after);
	ok = *out != NULL;
	if (!ok)
		snprintf(err, errlen, "out of memory");
out:
	for (size_t i = 0; i < m.narena; i++)
		free(m.arena[i]);
	free(m.arena);
	free(m.view.ops);
	free(m.scratch);
	return ok;
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab trace from-fuzz`: see from_fuzz.h. The child runs the target with fz_sink set
 * to a sink that forwards to the shadow-diff recorder (sim/trace/trace_record.h) and writes
 * each statement, canonical, down a pipe before the core runs it; lines starting with "#!"
 * carry what is not a statement (lossy notes, the harness's failure, the end). */
#include "from_fuzz.h"
#include "trace_stats.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "double_fetch.h"
#include "dp_format.h"
#include "sc_df_format.h"
#include "trace.h"
#include "trace_record.h"
#include "trace_sink.h"
#include "vhostlab/vhostlab.h"

/* ---- targets ------------------------------------------------------------------------ */

/* The fuzz targets' runs, from the lab's decoders (sim/input/): the target files in fuzz/ are
 * only these calls under libFuzzer's entry point. */
static int one_split_dequeue(const uint8_t *data, size_t size)
{
	return fz_dp_run(data, size, VL_LAYOUT_SPLIT, false);
}

static int one_split_enqueue(const uint8_t *data, size_t size)
{
	return fz_dp_run(data, size, VL_LAYOUT_SPLIT, true);
}

static int one_packed_dequeue(const uint8_t *data, size_t size)
{
	return fz_dp_run(data, size, VL_LAYOUT_PACKED, false);
}

static int one_packed_enqueue(const uint8_t *data, size_t size)
{
	return fz_dp_run(data, size, VL_LAYOUT_PACKED, true);
}

static const struct ff_tgt {
	const char *name;
	int (*run)(const uint8_t *data, size_t size);
} ff_targets[] = {
	{"fuzz_split_dequeue", one_split_dequeue},
	{"fuzz_split_enqueue", one_split_enqueue},
	{"fuzz_packed_dequeue", one_packed_dequeue},
	{"fuzz_packed_enqueue", one_packed_enqueue},
	{"fuzz_scenario", fz_sc_run},
};

static const struct {
	const char *name, *why;
} ff_refused[] = {
	{"fuzz_differential",
	 "fuzz_differential runs one guest through six core variants in lockstep (batching "
	 "threshold, zero-copy, allocation policy), the two TX ceilings and a reference "
	 "model, and fails when they differ; a trace drives "
	 "one core, so a difference between cores has no trace. Reproduce the input with "
	 "fuzz/replay: <build>/fuzz/fuzz_differential_replay INPUT (or the libFuzzer binary of "
	 "a VL_FUZZ build)"},
	{"fuzz_trace_parse",
	 "fuzz_trace_parse's inputs are trace text already: run `vhostlab trace fmt INPUT` or "
	 "`vhostlab replay INPUT`"},
};

static const char *full_name(const char *name, char *buf, size_t n)
{
	if (strncmp(name, "fuzz_", 5) == 0)
		return name;
	snprintf(buf, n, "fuzz_%s", name);
	return buf;
}

const char *ff_target(const char *name, const char **why)
{
	char buf[128];
	const char *full = full_name(name, buf, sizeof(buf));

	*why = NULL;
	for (size_t i = 0; i < sizeof(ff_targets) / sizeof(ff_targets[0]); i++)
		if (!strcmp(full, ff_targets[i].name))
			return ff_targets[i].name;
	for (size_t i = 0; i < sizeof(ff_refused) / sizeof(ff_refused[0]); i++)
		if (!strcmp(full, ff_refused[i].name))
			*why = ff_refused[i].why;
	return NULL;
}

/* ---- the child: the sink ------------------------------------------------------------ */

struct ff_rec {
	FILE *out;
	bool observed;
	struct lab_recorder *rec;
	struct lab_gmem *g;
	bool started;            /* the first sync happened: the setup is final */
	bool header_sent;
	uint32_t sent;           /* statements written */
	char *buf;               /* one statement's text */
	size_t cap;
};

/* The child cannot go on without its recorder: say why and stop (the parent reports it). */
__attribute__((noreturn)) static void child_die(struct ff_rec *r, const char *what)
{
	fprintf(r->out, "#!error %s\n", what);
	fflush(r->out);
	_exit(3);
}

static void put_op(struct ff_rec *r, const struct lab_trace *t, const struct lab_trace_op *op)
{
	size_t need = lab_trace_format_op(t, op, r->buf, r->cap);

	if (need + 1 > r->cap) {
		char *b = realloc(r->buf, need + 1);

		if (!b)
			child_die(r, "out of memory formatting a statement");
		r->buf = b;
		r->cap = need + 1;
		lab_trace_format_op(t, op, r->buf, r->cap);
	}
	fwrite(r->buf, 1, need, r->out);
	fputc('\n', r->out);
}

/* Everything recorded and not yet written: the setup block the first time, then the new
 * statements. Flushed, so a crash right after loses nothing. */
static void flush(struct ff_rec *r, const struct lab_trace *t)
{
	if (!r->header_sent) {
		struct lab_trace setup = *t;   /* a view without statements */
		size_t len;
		char *text;

		setup.nops = 0;
		text = lab_trace_format(&setup, &len);
		if (!text)
			child_die(r, "out of memory formatting the setup");
		fwrite(text, 1, len, r->out);
		free(text);
		r->header_sent = true;
	}
	for (; r->sent < t->nops; r->sent++)
		put_op(r, t, &t->ops[r->sent]);
	fflush(r->out);
}

static void add(struct ff_rec *r, const struct lab_trace_op *op)
{
	if (!lab_rec_op(r->rec, op))
		child_die(r, "out of memory recording a statement");
}

static void s_begin(void *ctx, struct lab_gmem *g, uint64_t features)
{
	struct ff_rec *r = ctx;

	r->rec = lab_rec_create(g, features, 1);
	if (!r->rec)
		child_die(r, "out of memory for the recorder");
	r->g = g;
}

static int s_queue(void *ctx, const char *name, enum lab_trace_dir dir,
		   const struct vl_vq_config *cfg)
{
	struct ff_rec *r = ctx;
	int q = lab_rec_queue(r->rec, name, dir, cfg);

	if (q < 0)
		child_die(r, "too many queues for a trace");
	return q;
}

static struct lab_trace_queue *s_queue_ref(void *ctx, int q)
{
	return lab_rec_queue_ref(((struct ff_rec *)ctx)->rec, q);
}

static void s_pool(void *ctx, uint32_t bufs, uint32_t size)
{
	lab_rec_set_pool(((struct ff_rec *)ctx)->rec, bufs, size);
}

static void s_dirty_log(void *ctx, uint64_t pages)
{
	lab_rec_set_dirty_log(((struct ff_rec *)ctx)->rec, pages);
}

static void s_lossy(void *ctx, const char *what)
{
	struct ff_rec *r = ctx;

	fprintf(r->out, "#!lossy %s\n", what);
	fflush(r->out);
}

/* The double-fetch detector's mode comes from the environment (VL_LAB_DOUBLE_FETCH, the
 * command's hooked core): the trace runs under the same one from its first statement. */
static void record_df_mode(struct ff_rec *r)
{
	struct lab_trace_op op = {.kind = LAB_T_DOUBLE_FETCH};

	switch (lab_df_get_mode()) {
	case LAB_DF_OFF:
		return;
	case LAB_DF_DETECT:
		op.value = LAB_TRACE_DF_DETECT;
		break;
	case LAB_DF_ADVERSARIAL:
		/* Same seed both sides: the adversary flips the same bytes. */
		lab_df_set_seed(1);
		op.value = LAB_TRACE_DF_ADVERSARIAL;
		op.given = LAB_TA_SEED;
		op.seed = 1;
		break;
	default:
		s_lossy(r, "VL_LAB_DOUBLE_FETCH=adversarial-persist: the trace format's "
			"double-fetch modes are off, detect and adversarial; the flips of the "
			"persistent mode are not in the trace");
		return;
	}
	add(r, &op);
}

static void s_sync(void *ctx)
{
	struct ff_rec *r = ctx;

	if (!r->started) {
		r->started = true;
		record_df_mode(r);
	}
	lab_rec_sync(r->rec);
}

static void s_op(void *ctx, const struct lab_trace_op *op)
{
	struct ff_rec *r = ctx;

	add(r, op);
	flush(r, lab_rec_trace(r->rec));
}

static void s_absorb(void *ctx)
{
	lab_rec_absorb(((struct ff_rec *)ctx)->rec);
}

static void s_failed(void *ctx, const char *message)
{
	struct ff_rec *r = ctx;

	fprintf(r->out, "#!fail %s\n", message);
	fflush(r->out);
}

/* ---- the child: what the run observed ----------------------------------------------- */


static void expect_stat(struct ff_rec *r, uint32_t q, const char *name, uint64_t v)
{
	struct lab_trace_op op = {.kind = LAB_T_EXPECT_STAT, .queue = q, .count = v};

	snprintf(op.name, sizeof(op.name), "%s", name);
	add(r, &op);
}

static void observe_queue(struct ff_rec *r, uint32_t q, const struct vl_vq *vq)
{
	const struct vl_vq_stats *st = vl_vq_stats(vq);
	struct lab_trace_op op;
	char name[40];

	for (uint32_t i = 0; i < lab_trace_stat_count(); i++) {
		uint64_t v = lab_trace_stat_get(st, i, name, sizeof(name));

		expect_stat(r, q, name, v);
	}
	op = (struct lab_trace_op){.kind = LAB_T_EXPECT_BROKEN, .queue = q};
	if (vl_vq_broken(vq))
		snprintf(op.name, sizeof(op.name), "%s", vl_drop_name(vl_vq_broken_reason(vq)));
	else
		op.given = LAB_TA_NONE;
	add(r, &op);
	if (lab_rec_trace(r->rec)->queues[q].dir == LAB_TRACE_TX)   /* only TX holds chains */
		add(r, &(struct lab_trace_op){.kind = LAB_T_EXPECT_HELD, .queue = q,
					      .count = vl_vq_zero_copy_held(vq)});
	add(r, &(struct lab_trace_op){.kind = LAB_T_EXPECT_CALL, .queue = q,
				      .value = vl_vq_needs_call(vq)});
}

/* Every guest region's bytes as a digest, and every page of them in the dirty log. */
static void observe_memory(struct ff_rec *r, const uint8_t *log, uint64_t log_bytes)
{
	const struct lab_trace *t = lab_rec_trace(r->rec);

	for (uint32_t i = 0; i < t->nregions; i++) {
		const struct lab_trace_region *reg = &t->regions[i];
		const uint8_t *g = lab_gmem_guest_ptr(r->g, reg->gpa, reg->size);
		struct lab_trace_op op = {.kind = LAB_T_EXPECT_MEM, .addr = reg->gpa,
					  .len = reg->size};

		if (!g)
			continue;
		op.pat.kind = LAB_PAT_FNV1A;
		op.pat.value = lab_trace_fnv1a(LAB_FNV1A_INIT, g, reg->size);
		add(r, &op);
		for (uint64_t pg = reg->gpa / 4096; log && pg < (reg->gpa + reg->size) / 4096 &&
						      pg / 8 < log_bytes; pg++)
			add(r, &(struct lab_trace_op){.kind = LAB_T_EXPECT_DIRTY, .addr = pg * 4096,
						      .value = (log[pg / 8] >> (pg % 8)) & 1u});
	}
}

static void s_observe(void *ctx, struct vl_vq *const *vqs, uint32_t n, const uint8_t *log,
		      uint64_t log_bytes)
{
	struct ff_rec *r = ctx;

	if (!r->observed)
		return;
	lab_rec_sync(r->rec);
	for (uint32_t q = 0; q < n; q++)
		observe_queue(r, q, vqs[q]);
	observe_memory(r, log, log_bytes);
	flush(r, lab_rec_trace(r->rec));
}

static void s_recorded(void *ctx, const struct lab_trace *t)
{
	struct ff_rec *r = ctx;

	r->sent = 0;
	flush(r, t);
}

__attribute__((noreturn)) static void child(const struct ff_tgt *tg, const uint8_t *data,
					    size_t size, const struct ff_opts *o, int fd)
{
	struct ff_rec r = {.observed = o->observed};
	struct lab_trace_sink sink = {
		.ctx = &r, .begin = s_begin, .queue = s_queue, .queue_ref = s_queue_ref,
		.pool = s_pool, .dirty_log = s_dirty_log, .sync = s_sync, .op = s_op,
		.absorb = s_absorb, .lossy = s_lossy, .failed = s_failed, .observe = s_observe,
		.recorded = s_recorded,
	};
	/* An input that crashes the harness is what this command is for: no core file. */
	struct rlimit no_core = {0, 0};

	setrlimit(RLIMIT_CORE, &no_core);
	r.out = fdopen(fd, "w");
	if (!r.out)
		_exit(3);
	fz_sink = &sink;
	fz_set_target(tg->name);
	tg->run(data, size);
	if (r.rec)
		flush(&r, lab_rec_trace(r.rec));
	fputs("#!done\n", r.out);
	fflush(r.out);
	_exit(0);
}

/* ---- the parent ----------------------------------------------------------------------- */

struct buf {
	char *p;
	size_t len, cap;
};

static bool buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return false;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static bool read_all(int fd, struct buf *b)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0;
		if (!buf_put(b, chunk, (size_t)n))
			return false;
	}
}

/* Sort the child's lines: statements into the trace, "#!" lines into the result. A last line
 * without its newline was cut off by a crash: dropped. */
static int split_stream(const struct buf *in, struct ff_result *res, bool *done, char *err,
			size_t errlen)
{
	struct buf text = {0};
	const char *p = in->p ? in->p : "", *end = p + in->len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : 0;

		if (!nl)
			break;
		if (n >= 2 && p[0] == '#' && p[1] == '!') {
			char *line = strndup(p + 2, n - 2);
			char **l;

			if (!line)
				goto oom;
			if (!strncmp(line, "lossy ", 6)) {
				l = realloc(res->lossy, (res->nlossy + 1) * sizeof(*l));
				if (!l) {
					free(line);
					goto oom;
				}
				res->lossy = l;
				res->lossy[res->nlossy++] = strdup(line + 6);
			} else if (!strncmp(line, "fail ", 5)) {
				res->failed = true;
				snprintf(res->failure, sizeof(res->failure), "the harness's check "
					 "failed: %s", line + 5);
			} else if (!strncmp(line, "error ", 6)) {
				snprintf(err, errlen, "%s", line + 6);
				free(line);
				free(text.p);
				return -1;
			} else if (!strcmp(line, "done")) {
				*done = true;
			}
			free(line);
		} else if (!buf_put(&text, p, n + 1)) {
			goto oom;
		}
		p = nl + 1;
	}
	res->text = text.p;
	res->len = text.len;
	return 0;
oom:
	free(text.p);
	snprintf(err, errlen, "out of memory");
	return -1;
}

static void describe_end(int status, bool done, struct ff_result *res)
{
	char how[128];

	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && done)
		return;
	if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "the run was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(how, sizeof(how), "the run exited with status %d (a sanitizer report?)",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (res->failed) {
		size_t n = strlen(res->failure);

		snprintf(res->failure + n, sizeof(res->failure) - n, "; %s", how);
	} else {
		snprintf(res->failure, sizeof(res->failure), "%s", how);
	}
	res->failed = true;
}

int ff_convert(const char *target, const uint8_t *data, size_t size, const struct ff_opts *o,
	       struct ff_result *res, char *err, size_t errlen)
{
	const struct ff_tgt *tg = NULL;
	struct buf stream = {0};
	bool done = false, read_ok;
	int fds[2], status = 0, rc;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < sizeof(ff_targets) / sizeof(ff_targets[0]); i++)
		if (!strcmp(target, ff_targets[i].name))
			tg = &ff_targets[i];
	if (!tg) {
		snprintf(err, errlen, "unknown target '%s'", target);
		return -1;
	}
	if (pipe(fds) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		child(tg, data, size, o, fds[1]);
	}
	close(fds[1]);
	read_ok = read_all(fds[0], &stream);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!read_ok) {
		free(stream.p);
		snprintf(err, errlen, "reading the run's trace: %s", strerror(errno));
		return -1;
	}
	rc = split_stream(&stream, res, &done, err, errlen);
	free(stream.p);
	if (rc != 0)
		return -1;
	describe_end(status, done, res);
	if (res->len == 0) {
		if (res->failed)
			snprintf(err, errlen, "the run failed before its setup was recorded: %s",
				 res->failure);
		else if (!strcmp(target, "fuzz_scenario"))
			snprintf(err, errlen, "the scenario recorded nothing for this input (its "
				 "recorder did not start)");
		else
			snprintf(err, errlen, "%s ran nothing for this input (a datapath input "
				 "starts with a %u-byte header)", target, FZ_DP_HDR_LEN);
		return -1;
	}
	return 0;
}

void ff_result_free(struct ff_result *res)
{
	for (uint32_t i = 0; i < res->nlossy; i++)
		free(res->lossy[i]);
	free(res->lossy);
	free(res->text);
	memset(res, 0, sizeof(*res));
}

/* SPDX-License-Identifier: MIT */
/* vhostlab trace upgrade: version 1 traces to version 2 (trace_upgrade.h), and --check, a
 * CI's question "is every trace version 2?". Folding into repeat blocks is exact by
 * construction (identical text runs the same); each upgraded trace is still replayed next
 * to its original, in a child process, and written folded only when both replays end the
 * same way -- otherwise with the new header alone, said on stderr.
 *
 * A trace that does not fold (or --no-fold) keeps its text: only the header's number
 * changes, so hand-written traces keep their comments. A folded one is written in
 * canonical form, which has none (as `trace fmt`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace.h"
#include "trace_minimize.h"
#include "trace_upgrade.h"

#define UPGRADE_TIMEOUT_S 600u

/* The file's text (NUL-terminated; NULL when unreadable: lab_trace_load has read it just
 * before, so that is a race or out of memory). */
static char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n;

	*len = 0;
	if (!f)
		return NULL;
	do {
		if (*len + 1 >= cap) {
			char *b = cap > LAB_TRACE_MAX_TEXT ? NULL : realloc(buf, cap = cap ? 2 * cap
									   : 65536);

			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		n = fread(buf + *len, 1, cap - 1 - *len, f);
		*len += n;
	} while (n > 0);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

/* The text with the header's version number replaced by LAB_TRACE_VERSION (malloc'd), and
 * checked: it parses to the trace `want`. NULL if anything is off. */
static char *rewrite_header(const char *path, const struct lab_trace *want, size_t *outlen)
{
	size_t len, at = 0;
	char *text = read_text(path, &len), *out = NULL, err[512];
	struct lab_trace check;

	lab_trace_init(&check);
	if (!text)
		return NULL;
	/* The parser took the first statement as the header: skip blank and comment lines. */
	while (at < len) {
		size_t i = at;

		while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r'))
			i++;
		if (i < len && text[i] != '\n' && text[i] != '#') {
			at = i;
			break;
		}
		while (i < len && text[i] != '\n')
			i++;
		at = i + 1;
	}
	if (at < len && !strncmp(text + at, "vhostlab-trace", 14)) {
		size_t num = at + 14, end;

		while (num < len && (text[num] == ' ' || text[num] == '\t'))
			num++;
		end = num;
		while (end < len && text[end] != ' ' && text[end] != '\t' && text[end] != '\n' &&
		       text[end] != '\r' && text[end] != '#')
			end++;
		out = malloc(len + 16);
		if (out && end > num) {
			int k = snprintf(out, len + 16, "%.*s%u%s", (int)num, text, LAB_TRACE_VERSION,
					 text + end);

			*outlen = (size_t)k;
		}
	}
	free(text);
	if (out && (!lab_trace_parse(&check, out, *outlen, path, err, sizeof(err)) ||
		    !lab_trace_equal(&check, want))) {
		free(out);
		out = NULL;
	}
	lab_trace_free(&check);
	return out;
}

static bool same_run(const struct lab_replay_result *a, const struct lab_replay_result *b)
{
	return a->status == b->status && !strcmp(a->signature, b->signature) &&
	       !strcmp(a->statement, b->statement) && !strcmp(a->observed, b->observed) &&
	       a->expectations == b->expectations && a->packets_dequeued == b->packets_dequeued &&
	       a->packets_enqueued == b->packets_enqueued &&
	       a->packets_discarded == b->packets_discarded;
}

static const char *status_word(enum lab_replay_status s)
{
	return s == LAB_REPLAY_PASS ? "pass" : s == LAB_REPLAY_DIVERGED ? "diverged" : "error";
}

/* Upgrade one file: *text (malloc'd, *len bytes) is the version 2 trace. 0, or an exit
 * status. */
static int upgrade_one(const char *path, bool no_fold, char **text, size_t *len)
{
	struct lab_trace tr, *t = &tr;
	int rc = CLI_EXIT_OK;
	struct lab_replay_opts o = {.hooks = true};
	struct lab_replay_result before, after;
	struct lab_trace_upgrade_stats st;
	uint32_t from;
	char err[512];

	*text = NULL;
	if (!lab_trace_load(t, path, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		lab_trace_free(t);
		return CLI_EXIT_USAGE;
	}
	from = t->version;
	lab_replay_isolated(t, &o, UPGRADE_TIMEOUT_S, &before);
	if (no_fold) {
		/* Version 1's statements are version 2's: only the header changes. */
		t->version = LAB_TRACE_VERSION;
		st = (struct lab_trace_upgrade_stats){t->nops, t->nops, 0};
	} else if (!lab_trace_upgrade(t, &st)) {
		fprintf(stderr, "vhostlab trace upgrade: %s: out of memory\n", path);
		lab_trace_free(t);
		return CLI_EXIT_FAIL;
	}
	lab_replay_isolated(t, &o, UPGRADE_TIMEOUT_S, &after);
	if (st.repeats && !same_run(&before, &after)) {
		/* Cannot happen if folding is right; if it does, the folded form is not used. */
		fprintf(stderr, "vhostlab trace upgrade: %s: the folded trace replays differently "
			"(%s %s, was %s %s); writing it unfolded\n", path, status_word(after.status),
			after.signature, status_word(before.status), before.signature);
		lab_trace_free(t);
		if (!lab_trace_load(t, path, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			lab_trace_free(t);
			return CLI_EXIT_FAIL;
		}
		t->version = LAB_TRACE_VERSION;
		st.repeats = 0;
		st.ops_after = st.ops_before;
	}
	*text = st.repeats ? lab_trace_format(t, len) : rewrite_header(path, t, len);
	if (!*text) {
		fprintf(stderr, "vhostlab trace upgrade: %s: out of memory, or the file changed "
			"while it was read\n", path);
		rc = CLI_EXIT_FAIL;
	} else {
		fprintf(stderr, "%s: version %u -> %u, %u -> %u statements (%u repeat blocks%s); "
			"replays: %s\n", path, from, t->version, st.ops_before, st.ops_after,
			st.repeats, st.repeats ? ", canonical text" : ", text kept",
			status_word(before.status));
	}
	lab_trace_free(t);
	return rc;
}

static int check_versions(int nfiles, char **files)
{
	int rc = CLI_EXIT_OK;

	for (int i = 0; i < nfiles; i++) {
		struct lab_trace t;
		char err[512];

		if (!lab_trace_load(&t, files[i], err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			lab_trace_free(&t);
			return CLI_EXIT_USAGE;
		}
		if (t.version != LAB_TRACE_VERSION) {
			printf("%s: version %u (not %u)\n", files[i], t.version, LAB_TRACE_VERSION);
			rc = CLI_EXIT_FAIL;
		}
		lab_trace_free(&t);
	}
	return rc;
}

int trace_upgrade(int argc, char **argv)
{
	const char *out = NULL;
	bool in_place = false, check = false, no_fold = false;
	char **files = calloc((size_t)argc + 1, sizeof(*files));
	int nfiles = 0, rc = CLI_EXIT_OK;

	if (!files)
		return CLI_EXIT_FAIL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--in-place")) {
			in_place = true;
		} else if (!strcmp(argv[i], "--check")) {
			check = true;
		} else if (!strcmp(argv[i], "--no-fold")) {
			no_fold = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			free(files);
			cli_trace_usage(stdout);
			return CLI_EXIT_OK;
		} else if (argv[i][0] != '-') {
			files[nfiles++] = argv[i];
		} else {
			cli_usage_error("trace upgrade", "unexpected argument '%s'", argv[i]);
			free(files);
			return CLI_EXIT_USAGE;
		}
	}
	if (!nfiles || (out && in_place) || (check && (out || in_place || no_fold)) ||
	    (!check && !in_place && nfiles > 1)) {
		cli_usage_error("trace upgrade", "%s (usage: vhostlab trace upgrade FILE... "
				"[--in-place | -o OUT] [--no-fold] | --check FILE...)", !nfiles ?
				"no trace file given" : out && in_place ? "-o and --in-place exclude "
				"each other" : check ? "--check writes nothing: no -o, --in-place or --no-fold" :
				"several files need --in-place");
		free(files);
		return CLI_EXIT_USAGE;
	}
	if (check) {
		rc = check_versions(nfiles, files);
		free(files);
		return rc;
	}
	for (int i = 0; i < nfiles && rc == CLI_EXIT_OK; i++) {
		const char *dest = in_place ? files[i] : out;
		char *text;
		size_t len;
		FILE *f;

		rc = upgrade_one(files[i], no_fold, &text, &len);
		if (rc != CLI_EXIT_OK)
			break;
		f = dest ? fopen(dest, "wb") : stdout;
		if (!f || fwrite(text, 1, len, f) != len || (dest ? fclose(f) : fflush(f)) != 0) {
			fprintf(stderr, "vhostlab trace upgrade: cannot write %s\n",
				dest ? dest : "the trace");
			rc = CLI_EXIT_FAIL;
		}
		free(text);
	}
	free(files);
	return rc;
}

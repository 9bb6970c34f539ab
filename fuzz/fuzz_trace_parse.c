/* SPDX-License-Identifier: MIT */
/* fuzz_trace_parse: the trace parser and writer (sim/trace, docs/trace-format.md).
 *
 * The input is trace text. Traces come from bug reports, tools and hands, so the parser
 * must survive anything: every input either parses or fails with "input:LINE:COL: ..."
 * where LINE and COL point into the input. What parses must round-trip: its canonical text
 * (lab_trace_format) parses again, gives an equal trace (lab_trace_equal) and formats to
 * the same text; each statement's own text (lab_trace_format_op) is its line of the whole
 * (after the two spaces a level that indent a version 2 block body),
 * and cut short it stays a terminated prefix. Any violation prints what broke and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "fz_bytes.h"
#include "trace/trace.h"

/* Show a piece of text in a failure message (the formatted trace can be long). */
static void dump(const char *what, const char *s, size_t n)
{
	fprintf(stderr, "---- %s (%zu bytes) ----\n%.*s%s\n----\n", what, n,
		(int)(n < 4000 ? n : 4000), s, n < 4000 ? "" : "\n[...]");
}

/* "input:LINE:COL: " with LINE among the input's lines and COL at most one past the end
 * of that line. */
static void check_error(const uint8_t *data, size_t size, const char *err)
{
	unsigned long line, col;
	size_t start = 0, len;
	int used = 0;

	if (sscanf(err, "input:%lu:%lu: %n", &line, &col, &used) != 2 || used == 0 ||
	    line == 0 || col == 0)
		fz_fail("error message without input:LINE:COL: \"%s\"", err);
	for (unsigned long l = 1; l < line; l++) {
		const uint8_t *nl = start < size ? memchr(data + start, '\n', size - start) : NULL;

		if (!nl)
			fz_fail("error names line %lu of an input with %lu lines: \"%s\"", line, l,
				err);
		start = (size_t)(nl - data) + 1;
	}
	len = 0;
	while (start + len < size && data[start + len] != '\n')
		len++;
	if (col > len + 1)
		fz_fail("error names column %lu of a %zu-byte line: \"%s\"", col, len, err);
}

/* Each statement's own text is its line in the whole text (after the setup block), and
 * lab_trace_format_op keeps the snprintf contract when the buffer is short. */
static void check_ops(const struct lab_trace *t, const char *text, size_t n)
{
	const char *p = text, *end = text + n;
	char small[24];

	/* The statements are the last nops lines: back up to where the first one starts. */
	p = end;
	for (uint32_t i = 0; i < t->nops; i++) {
		p--;   /* onto the newline that ends the line before p */
		while (p > text && p[-1] != '\n')
			p--;
	}
	for (uint32_t i = 0; i < t->nops; i++) {
		const struct lab_trace_op *op = &t->ops[i];
		size_t need = lab_trace_format_op(t, op, NULL, 0), got;
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *s = p;
		char *line;

		/* Block bodies are indented (two spaces a level): the statement starts after. */
		while (nl && s < nl && *s == ' ')
			s++;
		if (!nl || (size_t)(nl - s) != need || !(line = malloc(need + 1)))
			fz_fail("statement %u: format_op needs %zu bytes, its line has %zu", i, need,
				nl ? (size_t)(nl - s) : 0);
		got = lab_trace_format_op(t, op, line, need + 1);
		if (got != need || memcmp(line, s, need) != 0 || line[need] != '\0')
			fz_fail("statement %u: format_op differs from its line in the trace", i);
		free(line);
		got = lab_trace_format_op(t, op, small, sizeof(small));
		if (got != need || strlen(small) != (need < sizeof(small) ? need : sizeof(small) - 1) ||
		    memcmp(small, s, strlen(small)) != 0)
			fz_fail("statement %u: format_op into %zu bytes is not a terminated prefix", i,
				sizeof(small));
		p = nl + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lab_trace a, b;
	char err[512];
	char *text1, *text2;
	size_t n1 = 0, n2 = 0;

	fz_set_target("fuzz_trace_parse");
	if (!lab_trace_parse(&a, (const char *)data, size, "input", err, sizeof(err))) {
		check_error(data, size, err);
		if (a.nops || a.nqueues || a.nregions)
			fz_fail("a failed parse left statements, queues or regions behind");
		lab_trace_free(&a);
		return 0;
	}
	text1 = lab_trace_format(&a, &n1);
	if (!text1)
		fz_fail("lab_trace_format: out of memory");
	if (strlen(text1) != n1)
		fz_fail("formatted text has a NUL inside or a wrong length (%zu, strlen %zu)", n1,
			strlen(text1));
	if (!lab_trace_parse(&b, text1, n1, "formatted", err, sizeof(err))) {
		dump("formatted", text1, n1);
		fz_fail("the formatted trace does not parse: %s", err);
	}
	if (!lab_trace_equal(&a, &b)) {
		dump("formatted", text1, n1);
		fz_fail("parse(format(trace)) differs from the trace");
	}
	text2 = lab_trace_format(&b, &n2);
	if (!text2)
		fz_fail("lab_trace_format: out of memory");
	if (n1 != n2 || memcmp(text1, text2, n1) != 0) {
		dump("first", text1, n1);
		dump("second", text2, n2);
		fz_fail("format(parse(format(trace))) differs from format(trace)");
	}
	check_ops(&a, text1, n1);
	if (fz_verbose())
		fprintf(stderr, "fuzz_trace_parse: %u statements, %zu bytes formatted\n", a.nops,
			n1);
	free(text1);
	free(text2);
	lab_trace_free(&a);
	lab_trace_free(&b);
	return 0;
}

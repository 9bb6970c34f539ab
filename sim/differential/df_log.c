/* SPDX-License-Identifier: MIT */
/* The observation logs the participants of a differential run are compared by. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "df_internal.h"

struct df df_state;
uint8_t df_buf[3][VL_PKT_MAX_LEN + 16];

const uint32_t df_batch[DF_CORES] = {0, 256, 65536, 0, 256, 65536, 256, 256};
uint8_t df_poison[DF_RX_MAX_CAP + 64]; /* DF_POISON bytes, to compare with */

/* A participant as failure messages name it. */
const char *df_vname(unsigned k)
{
	static const char *const names[DF_PARTS] = {"variant 0", "variant 1", "variant 2",
						    "variant 3", "variant 4", "variant 5",
						    "the discard ceiling", "the touch ceiling",
						    "the reference model"};

	return k < DF_PARTS ? names[k] : "?";
}

/* ---- logs ---------------------------------------------------------------------------- */

static void log_rec(struct df_log *l, const char *name)
{
	if (l->nrec < DF_LOG_NAMES) {
		l->off[l->nrec] = l->b.len;
		l->name[l->nrec] = name;
	}
	l->nrec++;
}

void df_log32(struct df_log *l, const char *name, uint32_t v)
{
	log_rec(l, name);
	fz_put32(&l->b, v);
}

void df_log_reset(struct df_log *l)
{
	l->b.len = 0;
	l->nrec = 0;
}

static const char *log_name_at(const struct df_log *l, size_t off)
{
	const char *name = "?";
	uint32_t n = l->nrec < DF_LOG_NAMES ? l->nrec : DF_LOG_NAMES;

	for (uint32_t i = 0; i < n && l->off[i] <= off; i++)
		name = l->name[i];
	return name;
}

void df_log_compare(struct df *d, const struct df_log *a, const struct df_log *b,
			unsigned va, unsigned vb, const char *what)
{
	size_t n = a->b.len < b->b.len ? a->b.len : b->b.len, i = 0;

	if (a->b.len == b->b.len && (n == 0 || !memcmp(a->b.buf, b->b.buf, n)))
		return;
	while (i < n && a->b.buf[i] == b->b.buf[i])
		i++;
	fz_fail("round %u: %s observations differ between %s and %s at byte %zu "
		"(record \"%s\" vs \"%s\"; %zu vs %zu bytes logged)", d->round, what, df_vname(va),
		df_vname(vb), i,
		log_name_at(a, i), log_name_at(b, i), a->b.len, b->b.len);
}


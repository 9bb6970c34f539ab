/* SPDX-License-Identifier: MIT */
#include "grants.h"

#include <stdlib.h>

struct lab_grants {
	uint64_t gpa, size;
	uint64_t ngranules;
	uint16_t *reads;  /* [ngranules] read grants in flight */
	uint16_t *writes; /* [ngranules] write grants in flight */
};

struct lab_grants *lab_grants_create(uint64_t gpa, uint64_t size)
{
	if (size == 0 || gpa > UINT64_MAX - (size - 1))
		return NULL;
	struct lab_grants *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->gpa = gpa;
	g->size = size;
	g->ngranules = size / LAB_GRANT_GRANULE + (size % LAB_GRANT_GRANULE != 0);
	g->reads = calloc(g->ngranules, sizeof(*g->reads));
	g->writes = calloc(g->ngranules, sizeof(*g->writes));
	if (!g->reads || !g->writes) {
		lab_grants_destroy(g);
		return NULL;
	}
	return g;
}

void lab_grants_destroy(struct lab_grants *g)
{
	if (!g)
		return;
	free(g->reads);
	free(g->writes);
	free(g);
}

/* The granules [*first, *end) that [gpa, gpa + len) touches inside the area; false when it
 * touches none. Nothing wraps: offsets are taken inside the area only. */
static bool granules(const struct lab_grants *g, uint64_t gpa, uint64_t len, uint64_t *first,
		     uint64_t *end)
{
	if (len == 0)
		return false;
	const uint64_t lo = gpa < g->gpa ? g->gpa : gpa;
	/* The range's last byte, saturated at the top of the address space. */
	const uint64_t last = len - 1 > UINT64_MAX - gpa ? UINT64_MAX : gpa + (len - 1);
	const uint64_t area_last = g->gpa + (g->size - 1);
	const uint64_t hi = last > area_last ? area_last : last;

	if (lo > hi)
		return false;
	*first = (lo - g->gpa) / LAB_GRANT_GRANULE;
	*end = (hi - g->gpa) / LAB_GRANT_GRANULE + 1;
	return true;
}

void lab_grants_change(struct lab_grants *g, uint64_t gpa, uint64_t len, bool device_writes,
		       int delta)
{
	uint64_t i, end;

	if (!granules(g, gpa, len, &i, &end))
		return;
	uint16_t *count = device_writes ? g->writes : g->reads;

	for (; i < end; i++) {
		if (delta > 0 && count[i] < UINT16_MAX)
			count[i]++;
		else if (delta < 0 && count[i] > 0)
			count[i]--;
	}
}

bool lab_grants_read_only(const struct lab_grants *g, uint64_t gpa, uint64_t len)
{
	uint64_t i, end;

	if (!granules(g, gpa, len, &i, &end))
		return false;
	for (; i < end; i++)
		if (g->reads[i] > 0 && g->writes[i] == 0)
			return true;
	return false;
}

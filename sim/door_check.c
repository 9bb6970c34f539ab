/* SPDX-License-Identifier: MIT */
/* The strong definition of the door's lab hook (the lab core's own is a weak no-op). */
#include "door_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vl_lab_hooks.h"
#include "vhostlab/vl_mem.h"

static const struct lab_grants *watched;
static uint64_t checks, violations;
static char first[256];

void lab_door_watch(const struct lab_grants *g)
{
	watched = g;
}

void lab_door_reset(void)
{
	checks = violations = 0;
	first[0] = '\0';
}

uint64_t lab_door_checks(void) { return checks; }
uint64_t lab_door_violations(void) { return violations; }

bool lab_door_first_violation(char *buf, size_t n)
{
	if (violations == 0)
		return false;
	if (n > 0)
		snprintf(buf, n, "%s", first);
	return true;
}

void vl_lab_guest_access(const void *host, uint64_t gpa, uint64_t len, unsigned access)
{
	if (!watched)
		return;
	checks++;
	if (!(access & VL_ACCESS_WRITE) || !lab_grants_read_only(watched, gpa, len))
		return;
	if (violations++ == 0)
		snprintf(first, sizeof(first),
			 "the core translated guest range [0x%" PRIx64 ", +%" PRIu64 ") (host %p) "
			 "for writing, and the driver granted bytes of it only for reading",
			 gpa, len, host);
}

/* SPDX-License-Identifier: MIT */
/* The strong definition of the door's lab hook (the lab core's own is a weak no-op). */
#include "door_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vl_lab_hooks.h"
#include "vhostlab/vl_mem.h"

static lab_door_rule rule;
static const void *rule_ctx;
static uint64_t checks, violations;
static char first[256];

void lab_door_watch(lab_door_rule r, const void *ctx)
{
	rule = r;
	rule_ctx = ctx;
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
	if (!rule)
		return;
	checks++;
	if (!(access & VL_ACCESS_WRITE) || rule(rule_ctx, gpa, len))
		return;
	if (violations++ == 0)
		snprintf(first, sizeof(first),
			 "the core translated guest range [0x%" PRIx64 ", +%" PRIu64 ") (host %p) "
			 "for writing, and the driver did not grant it for writing",
			 gpa, len, host);
}

/* SPDX-License-Identifier: MIT */
/* The memory door's containment check (lab build of the core only): every translation the
 * core makes reaches vl_lab_guest_access (core/lab/vl_lab_hooks.h) with the kind of access it
 * is for. While a grant table is watched, a translation for writing that touches bytes the
 * driver granted only for reading (grants.h) is a violation: counted, and the first one kept
 * as a message. Catching it at the door names the core's mistake where it is made; the
 * snapshot diff of the scenario runner would only see the bytes change later, if they do.
 * One table at a time, process-wide, on the thread running the datapath (as the hooks). */
#ifndef LAB_DOOR_CHECK_H
#define LAB_DOOR_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grants.h"

/* Watch g from now on (NULL: stop). Counters are not reset. */
void lab_door_watch(const struct lab_grants *g);
/* Forget the counters and the kept message. */
void lab_door_reset(void);
/* Translations checked (any kind) and violations found since the last reset. */
uint64_t lab_door_checks(void);
uint64_t lab_door_violations(void);
/* The first violation since the reset, as text, into buf; false when there was none. */
bool lab_door_first_violation(char *buf, size_t n);

#endif

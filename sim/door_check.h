/* SPDX-License-Identifier: MIT */
/* The memory door's containment check (lab build of the core only): every translation the
 * core makes reaches vl_lab_guest_access (core/lab/vl_lab_hooks.h) with the kind of access it
 * is for. While a rule is watched, a translation for writing of a range the rule does not
 * allow the device to write is a violation: counted, and the first one kept as a message.
 * The scenario runner's rule is its driver's own (lab_drv_write_allowed: the used rings and
 * the RX buffers posted now), the one its snapshot diff applies after bursts; at the door it
 * names the translation that would make a stray write possible, even where the write itself
 * changes no byte. One rule at a time, process-wide, on the thread running the datapath (as
 * the hooks are called). */
#ifndef LAB_DOOR_CHECK_H
#define LAB_DOOR_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* May the device write [gpa, gpa + len)? */
typedef bool (*lab_door_rule)(const void *ctx, uint64_t gpa, uint64_t len);

/* Check every translation for writing against rule(ctx, ...) from now on (rule NULL: stop).
 * Counters are not reset. */
void lab_door_watch(lab_door_rule rule, const void *ctx);
/* Forget the counters and the kept message. */
void lab_door_reset(void);
/* Translations checked (any kind) and violations found since the last reset. */
uint64_t lab_door_checks(void);
uint64_t lab_door_violations(void);
/* The first violation since the reset, as text, into buf; false when there was none. */
bool lab_door_first_violation(char *buf, size_t n);

#endif

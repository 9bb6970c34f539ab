/* SPDX-License-Identifier: MIT */
/* vhostlab command-line tool: shared helpers of the subcommands. */
#ifndef VL_CLI_H
#define VL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes every subcommand uses. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1   /* the job ran and found a failure */
#define CLI_EXIT_USAGE 2  /* bad command line */

int cmd_run(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_trace(int argc, char **argv);
/* `vhostlab trace upgrade` (cmd_trace_upgrade.c) and the help of `vhostlab trace`. */
int trace_upgrade(int argc, char **argv);
void cli_trace_usage(FILE *out);
int cmd_minimize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_probe(int argc, char **argv); /* the lab program only */

/* "production" (the core as libvhostlab ships it) or "lab-hooks" (guest loads reported to the
 * lab's hooks): which core this program runs. cli/core_build.c. */
const char *cli_core_build(void);

/* The build variant this program was configured as, named as scripts/seed_claims.py names
 * its builds: "default", or what differs from it joined by '+' ("noinline": built with
 * -DVL_FORCE_INLINE=OFF, "lto": -DVL_LTO=ON, "twopath": -DVL_RX_TWO_PATHS=ON).
 * cli/core_build.c. */
const char *cli_build_variant(void);

/* In the lab build (vhostlab), the note serve and bench print on stderr after their command
 * name: they run on the lab build of the core, and vhostlab-fast is the production program.
 * NULL in the production build (vhostlab-fast). cli/core_build.c. */
const char *cli_lab_core_note(void);

/* Parse an unsigned decimal in [min, max]; on error print "vhostlab CMD: OPT: ..." naming
 * the value and return false. */
bool cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
		   uint64_t max, uint64_t *out);

/* Print "vhostlab CMD: message" to stderr. */
void cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A JSON string literal of s (quotes and escapes included). */
void cli_json_string(FILE *out, const char *s);

#endif

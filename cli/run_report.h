/* SPDX-License-Identifier: MIT */
/* `vhostlab run` output: the human table and the JSON document. */
#ifndef VL_CLI_RUN_REPORT_H
#define VL_CLI_RUN_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "run_record.h"
#include "scenario.h"

struct config_result {
	struct lab_scenario_config cfg;
	struct lab_scenario_result res;
	struct run_recording rec;   /* --record / --record-failures */
};

/* "packed mrg=on  ind=off ord=on  evt=off batch=256  gran=4096   q=256" */
void run_config_name(const struct lab_scenario_config *c, char *buf, size_t len);

void run_print_table(FILE *out, const struct config_result *r, uint32_t n, double wall);
/* --stats: each configuration's TX and RX queue statistics, as text. */
void run_print_stats(FILE *out, const struct config_result *r, uint32_t n);
/* with_stats adds a "stats": {"tx": {...}, "rx": {...}} object to each configuration. */
void run_print_json(FILE *out, uint64_t seed, const struct config_result *r, uint32_t n, bool ok,
		    double wall, bool with_stats);

#endif

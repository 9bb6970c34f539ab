/* SPDX-License-Identifier: MIT */
/* fuzz_scenario: valid-but-odd configurations of the whole lab. The input picks a
 * lab_scenario_config -- ring layout, mergeable, indirect, in-order, event idx, VERSION_1,
 * zero-copy, dirty log, fault mode, batching threshold, guest RAM granularity, queue size,
 * burst, containment scan period, seed, 50..200 packets each way and up to 8 packet sizes --
 * and runs lab_scenario_run, which applies every oracle of the lab (byte equality both ways,
 * accounting, containment, pool hygiene, liveness, notifications, order, dirty log,
 * zero-copy rechecks). Any oracle failure is a crash: the message is printed and abort()
 * called. The run and its input format: sim/input/sc_run.c, struct fz_sc_input (sim/input/sc_df_format.h), fuzz/README.md. */
#include "fuzz_target.h"
#include "sc_df_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_set_target("fuzz_scenario");
	return fz_sc_run(data, size);
}

/* SPDX-License-Identifier: MIT */
/* fuzz_differential: one deterministic guest, six core variants, the core's two TX ceilings
 * (discard, touch) and the reference model (sim/model.h), in lockstep; everything the guest
 * sees is compared, and any difference is a crash. The run and what it compares:
 * sim/differential/df_internal.h; the input format: struct fz_df_header and struct
 * fz_df_round (sim/input/sc_df_format.h), fuzz/README.md. */
#include "fuzz_target.h"
#include "sc_df_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_set_target("fuzz_differential");
	return fz_df_run(data, size);
}

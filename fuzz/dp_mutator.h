/* SPDX-License-Identifier: MIT */
/* The datapath targets' structure-aware mutator (struct_mutator.h): the 10-byte setup, then
 * the operations as dp_decode.c reads them for this layout and direction. A target defines
 * it with FZ_DP_MUTATOR(layout, rx) in libFuzzer builds (VL_FUZZ_MUTATOR). */
#ifndef VL_FUZZ_DP_MUTATOR_H
#define VL_FUZZ_DP_MUTATOR_H

#include "dp_format.h"
#include "struct_mutator.h"

#define FZ_DP_MUTATOR(layout, rx)                                                            \
	static size_t dp_starts(const uint8_t *d, size_t n, size_t *st, size_t max)           \
	{                                                                                     \
		return fz_dp_op_starts(d, n, (layout), (rx), st, max);                        \
	}                                                                                     \
	size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,           \
				       unsigned int seed)                                     \
	{                                                                                     \
		static const struct fz_seq_shape shape = {FZ_DP_HDR_LEN, dp_starts,           \
							  FZ_OP__COUNT};                      \
		return fz_seq_mutate(&shape, data, size, max_size, seed);                     \
	}

#endif

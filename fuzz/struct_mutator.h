/* SPDX-License-Identifier: MIT */
/* Structure-aware mutation for inputs that are a fixed header and then a sequence of
 * variable-length elements (the datapath targets' operations, fuzz_vhost_user's messages
 * and actions): the input is cut at its elements, as the target's decoder reads them, and
 * one element is mutated, inserted (a copy of another), deleted, swapped or given another
 * opcode, or the header is mutated; otherwise libFuzzer's own mutation runs. Mutations then
 * mostly keep every later element where the decoder expects it, so a sequence that reached
 * a deep state stays a sequence, instead of one inserted byte re-framing everything after
 * it. FZ_NO_MUTATOR=1 in the environment hands every call to libFuzzer's mutation (for
 * measuring the difference). libFuzzer builds only: it calls LLVMFuzzerMutate. */
#ifndef VL_FUZZ_STRUCT_MUTATOR_H
#define VL_FUZZ_STRUCT_MUTATOR_H

#include <stddef.h>
#include <stdint.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* Where each element starts (offsets of their first byte, ascending, all >= hdr_len), at
 * most max of them; returns how many. */
typedef size_t (*fz_starts_fn)(const uint8_t *data, size_t size, size_t *starts, size_t max);

struct fz_seq_shape {
	size_t hdr_len;    /* bytes before the first element */
	fz_starts_fn starts;
	uint8_t opcodes;   /* an element's first byte picks one of this many kinds (mod) */
};

size_t fz_seq_mutate(const struct fz_seq_shape *sh, uint8_t *data, size_t size,
		     size_t max_size, unsigned int seed);

#endif

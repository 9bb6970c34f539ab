/* SPDX-License-Identifier: MIT */
/* The libFuzzer entry point every target in fuzz/ defines. The targets are thin: each
 * decodes its input into actions of the lab (sim/input/, sim/hostile_guest/), where
 * `vhostlab trace from-fuzz` runs the same decoders. */
#ifndef VL_FUZZ_TARGET_H
#define VL_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif

/* SPDX-License-Identifier: MIT */
/* fuzz_split_enqueue: a hostile guest on a split virtqueue.
 *
 * The input is guest memory written operation by operation -- raw descriptors, indirect
 * tables, avail entries and indices, flag flips, anything anywhere: the unmapped hole, past
 * the end of RAM, across region boundaries, over the rings themselves -- interleaved with
 * host actions (bursts, frees, pool failures, feature switches).
 * The host side is vl_net_enqueue (guest RX): statuses valid, packets over 65535 bytes
 * dropped, the used lengths published add up to exactly the bytes of the packets delivered
 * (header included), every used id below the queue size.
 * After every operation the queue is working or broken for a queue-level reason; at the end
 * every packet is freed and both pools must be full again. The engine: sim/hostile_guest/; the decoder, the input format and its
 * limits: sim/input/dp_decode.c, dp_format.h (struct fz_dp_setup, enum fz_op), fuzz/README.md. */
#include "dp_format.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_set_target("fuzz_split_enqueue");
	return fz_dp_run(data, size, VL_LAYOUT_SPLIT, true);
}

#ifdef VL_FUZZ_MUTATOR
/* Mutations cut and splice at the operations (fuzz/struct_mutator.h). */
#include "dp_mutator.h"
FZ_DP_MUTATOR(VL_LAYOUT_SPLIT, true)
#endif

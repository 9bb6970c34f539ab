/* SPDX-License-Identifier: MIT */
/* fuzz_packed_dequeue: a hostile guest on a packed virtqueue.
 *
 * The input is guest memory written operation by operation -- raw descriptors, indirect
 * tables, avail entries and indices, flag flips, anything anywhere: the unmapped hole, past
 * the end of RAM, across region boundaries, over the rings themselves -- interleaved with
 * host actions (bursts, frees, pool failures, feature switches).
 * The host side is vl_net_dequeue (guest TX): every packet dequeued is checked (1..65535
 * bytes, segments consistent, offloads within the packet, every byte readable, zero-copy data
 * inside one guest region), then held or freed as the input says; every used entry published
 * names an id below the queue size, with length 0.
 * After every operation the queue is working or broken for a queue-level reason; at the end
 * every packet is freed and both pools must be full again. The engine: sim/hostile_guest/; the decoder, the input format and its
 * limits: sim/input/dp_decode.c, dp_format.h (struct fz_dp_setup, enum fz_op), fuzz/README.md. */
#include "dp_format.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_set_target("fuzz_packed_dequeue");
	return fz_dp_run(data, size, VL_LAYOUT_PACKED, false);
}

#ifdef VL_FUZZ_MUTATOR
/* Mutations cut and splice at the operations (fuzz/struct_mutator.h). */
#include "dp_mutator.h"
FZ_DP_MUTATOR(VL_LAYOUT_PACKED, false)
#endif

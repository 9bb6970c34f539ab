/* SPDX-License-Identifier: MIT */
/* LAB ONLY: the hooks a lab build of the core calls around its loads of guest-owned ring
 * fields. Not part of the production API, and not installed (it sits beside
 * vl_lab_control.h, the lab's other door into the core).
 *
 * The core references these symbols only when it is compiled with VL_LAB_BUILD defined (the
 * lab core, CMake target vhostlab_lab_core). A production build compiles the hook points in
 * core/ring/guest_load.h to nothing: no call, no symbol reference, the same code as without
 * them.
 *
 * The lab core provides weak no-op definitions of all six functions (core/lab/lab_hooks.c),
 * so any program linking it links; the lab's double-fetch detector (sim/double_fetch.c) gives the
 * strong definitions of the first five, the door check (sim/door_check.c) of the sixth. All
 * calls happen on the thread running the datapath call.
 *
 * What the core reports:
 *  - vl_lab_guest_load(addr, len): after every load of a guest-owned field (split and packed
 *    descriptors, avail idx and ring entries, packed flags and ids, indirect table entries
 *    and their copy-out, virtio-net headers, event suppression fields), with the host address
 *    the bytes were read from. The value has already been copied into a local: a hook may
 *    change the bytes at addr (a guest writing concurrently) and the core must not notice.
 *    Packet payload copies are data, not fields, and are not reported.
 *  - vl_lab_burst_begin() / vl_lab_burst_end(): bracket the reads that define a burst's
 *    window (split: avail->idx; packed: the availability scan, which may run lazily between
 *    chains). Those reads form one unit per burst.
 *  - vl_lab_chain_begin() / vl_lab_chain_end(): bracket the processing of one descriptor
 *    chain (fetch: head, descriptors, indirect table; use: the TX header), or one
 *    notification decision (used_event / avail->flags / the packed driver event area). Chain
 *    units nest inside a burst or stand alone; they never nest in each other.
 *
 * Within a unit the core reads each guest byte at most once; a chain's loads also never
 * overlap the window loads of the burst it belongs to.
 *
 *  - vl_lab_guest_access(host, gpa, len, access): after every translation of guest memory
 *    (the memory door, core/mem/mem_internal.h and cursor.h), with what it found: len bytes
 *    at host for guest address gpa, and the access the device will make (VL_ACCESS_READ,
 *    VL_ACCESS_WRITE, or both for a ring area it reads and writes). */
#ifndef VHOSTLAB_VL_LAB_HOOKS_H
#define VHOSTLAB_VL_LAB_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void vl_lab_guest_load(const void *addr, size_t len);
void vl_lab_chain_begin(void);
void vl_lab_chain_end(void);
void vl_lab_burst_begin(void);
void vl_lab_burst_end(void);
void vl_lab_guest_access(const void *host, uint64_t gpa, uint64_t len, unsigned access);

#ifdef __cplusplus
}
#endif

#endif

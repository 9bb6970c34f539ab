/* SPDX-License-Identifier: MIT */
/* What the simulated driver granted the device, for the door check (door_check.h): which
 * guest bytes the device may only read (TX buffers, indirect tables) and which it may write
 * (RX buffers), counted per 64-byte granule of an area of guest memory while the chains that
 * grant them are in flight. The lab's allocator hands out whole granules (guest_mem.h), so a
 * granule belongs to one buffer; a hostile driver that posts overlapping ranges adds a write
 * grant where a read grant was, and the granule counts as writable. Ranges outside the area
 * (the ring area, the hole) are never granted here. */
#ifndef LAB_GRANTS_H
#define LAB_GRANTS_H

#include <stdbool.h>
#include <stdint.h>

#define LAB_GRANT_GRANULE 64u

struct lab_grants;

/* Grants over [gpa, gpa + size). NULL when out of memory or the area is empty or wraps. */
struct lab_grants *lab_grants_create(uint64_t gpa, uint64_t size);
void lab_grants_destroy(struct lab_grants *g);

/* Grant (delta +1) or take back (delta -1) [gpa, gpa + len) for the device to read
 * (device_writes false) or to write. The part outside the area is ignored; a take-back
 * never takes more than was granted. */
void lab_grants_change(struct lab_grants *g, uint64_t gpa, uint64_t len, bool device_writes,
		       int delta);

/* Does [gpa, gpa + len) touch a granule granted for reading and not for writing? */
bool lab_grants_read_only(const struct lab_grants *g, uint64_t gpa, uint64_t len);

#endif

/* SPDX-License-Identifier: MIT */
/* The simulated driver's view of one virtqueue, whatever its layout: post a chain, publish,
 * harvest used buffers, arm used-buffer notifications, and decide -- independently of the
 * core -- whether a notification was due in either direction. Split rings are handled by
 * vring_split, packed rings by vring_packed. */
#ifndef LAB_VRING_H
#define LAB_VRING_H

#include <stdbool.h>
#include <stdint.h>

#include "vhostlab/vl_vq.h"
#include "vring_packed.h"
#include "vring_split.h"

/* How the driver asks for used-buffer notifications before a host burst. */
enum lab_call_mode {
	LAB_CALLS_OFF,      /* no notifications (NO_INTERRUPT / DISABLE / stale used_event) */
	LAB_CALLS_NEXT,     /* notify on the next used buffer */
	LAB_CALLS_LATER,    /* event idx only: notify when the used pointer reaches the start of
			     * the later-th buffer in flight (0 = the oldest) */
};

struct lab_ring {
	enum vl_layout layout;
	bool event_idx;
	uint32_t size;
	struct lab_vring s;
	bool *head_busy;         /* split: [size] heads in flight */
	uint32_t outstanding;    /* split: chains in flight */
	struct lab_pring p;
	/* Where the device's used position was when the driver last looked, as a count of
	 * descriptors (packed) or entries (split) modulo 2^32: the notification oracle's ruler. */
	uint32_t used_mark;
	/* State when calls were armed / posting began, to replay the positions passed. */
	enum lab_call_mode call_mode;
	uint32_t armed_mark;
	uint16_t armed_pos;      /* split: used idx; packed: next used position */
	bool armed_wrap;
	uint16_t avail_pos;      /* split: avail idx; packed: next avail position */
	bool avail_wrap;
};

uint64_t lab_ring_area_bytes(enum vl_layout layout, uint32_t size);

/* start: split, the starting 16-bit index; packed, the starting position (wrap 1). */
int lab_ring_init(struct lab_ring *r, enum vl_layout layout, struct lab_gmem *g,
		  uint64_t ring_gpa, uint32_t size, uint16_t start, bool in_order, bool event_idx);
void lab_ring_fini(struct lab_ring *r);

/* The addresses and resume indices to configure the device's queue with. */
void lab_ring_device_config(const struct lab_ring *r, struct vl_vq_config *cfg);

/* Descriptors free for a chain of direct descriptors. */
uint32_t lab_ring_free_descs(const struct lab_ring *r);

/* Post a chain (the elements as lab_pdesc: flags WRITE or INDIRECT). Returns the id the
 * device must return, or -1 when out of descriptors or ids. */
int lab_ring_post(struct lab_ring *r, const struct lab_pdesc *elems, uint32_t n);
/* Make everything posted visible (split: store avail->idx). */
void lab_ring_publish(struct lab_ring *r);

/* Next used buffer: 1 with id/len, 0 when none, -1 when the device returned something not
 * in flight (message in err). */
int lab_ring_pop_used(struct lab_ring *r, uint32_t *id, uint32_t *len);

/* Chains in flight (posted, not yet returned). */
uint32_t lab_ring_in_flight(const struct lab_ring *r);
/* Arm used-buffer notifications for the next host burst (after harvesting everything and
 * posting). LATER: `later` < lab_ring_in_flight. */
void lab_ring_arm_calls(struct lab_ring *r, enum lab_call_mode mode, uint32_t later);
/* After the burst and a full harvest: was a call due, by the driver's own reckoning? Walks
 * every position the device's used pointer passed. Updates used_mark. */
bool lab_ring_call_due(struct lab_ring *r);

/* Before posting: note where the avail side is. After posting and publishing: does the
 * device's suppression structure ask for a kick for what was just posted? */
void lab_ring_mark_avail(struct lab_ring *r);
bool lab_ring_kick_due(const struct lab_ring *r);
/* Was anything posted since lab_ring_mark_avail? */
bool lab_ring_posted(const struct lab_ring *r);
/* The avail position at the mark, encoded as vl_vq_last_avail encodes the device's. */
uint16_t lab_ring_marked_avail(const struct lab_ring *r);

#endif

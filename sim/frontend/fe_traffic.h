/* SPDX-License-Identifier: MIT */
/* The guest's side of traffic through a probed back end: TX frames posted in the chain
 * shapes the conformance cases need, RX buffers poisoned before they are posted (so bytes
 * the device did not write are seen), and the wait for a used buffer, bounded, whose timeout
 * describes the ring as it was (a wedge's evidence). Written on the lab's ring drivers
 * (sim/vring.h) and guest RAM allocator (sim/guest_mem.h). */
#ifndef LAB_FE_TRAFFIC_H
#define LAB_FE_TRAFFIC_H

#include <stdint.h>

#include "fe_session.h"

#define LAB_FE_NET_HDR 12u     /* virtio 1.x: num_buffers is always there (5.1.6) */
#define LAB_FE_POISON 0xEEu    /* what RX buffers hold before the device writes them */

/* How a TX frame is laid out in descriptors. */
enum lab_fe_shape {
	LAB_FE_ONE,       /* header and frame in one descriptor */
	LAB_FE_HDR_DATA,  /* the header, then the frame */
	LAB_FE_FOUR,      /* the header, then the frame in three pieces (packed: ids junk) */
	LAB_FE_INDIRECT,  /* split: the header, then an INDIRECT table of two frame pieces
			   * (2.7.5.3.2); packed: one INDIRECT descriptor of header + two pieces */
};

/* Post a TX frame (a zero header, then frame[0, len)) and publish it. Returns its id, or -1
 * when the ring or guest RAM is full (then `what` says so). */
int lab_fe_post_tx(struct lab_fe_session *s, const uint8_t *frame, uint32_t len,
		   enum lab_fe_shape shape);
/* Post elems as one chain on qidx and publish it, the chain holding allocs (guest RAM freed
 * when it comes back, or at once when the ring has no room). For chains the shapes above do
 * not make: a case lays out its own descriptors. Returns the id or -1 (`what` says why). */
int lab_fe_post_chain(struct lab_fe_session *s, uint32_t qidx, const struct lab_pdesc *elems,
		      uint32_t n, const struct lab_fe_alloc *allocs, uint32_t nallocs);
/* Post one writable RX buffer of cap bytes filled with LAB_FE_POISON, and publish it. */
int lab_fe_post_rx(struct lab_fe_session *s, uint32_t cap);
/* Guest view of the first buffer of chain id on queue qidx (its data, header first). */
uint8_t *lab_fe_buffer(struct lab_fe_session *s, uint32_t qidx, uint32_t id, uint32_t *cap);

/* Wait (the connection's timeout) for the next used buffer on qidx and give its guest RAM
 * back after the caller looked (lab_fe_release). LAB_FE_TIMEOUT: a wedge, with the last
 * message, the ring's indices and the chains in flight in `what`; LAB_FE_CLOSED when the
 * back end went away meanwhile; LAB_FE_BAD_REPLY when it returned an id not in flight. */
enum lab_fe_rc lab_fe_wait_used(struct lab_fe_session *s, uint32_t qidx, uint32_t *id,
				uint32_t *len);
/* Does a used buffer show up on qidx within wait_ms? (For "nothing may happen" checks: 1
 * with its id and length when one did, 0 when none, -1 for an id not in flight.) */
int lab_fe_used_within(struct lab_fe_session *s, uint32_t qidx, int wait_ms, uint32_t *id,
		       uint32_t *len);
void lab_fe_release(struct lab_fe_session *s, uint32_t qidx, uint32_t id);

/* The ring's indices and what is in flight, for evidence. */
void lab_fe_describe_ring(const struct lab_fe_session *s, uint32_t qidx, char *buf,
			  size_t len);

#endif

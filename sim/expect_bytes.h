/* SPDX-License-Identifier: MIT */
/* What a packet must hold when it reaches the guest: its bytes, length and header, rebuilt
 * from what it stands for (struct lab_content, traffic.h) -- a pattern or frame from its key
 * -- or, for a frame the host made fit the driver (vl_sw_fit), taken from the reference
 * model's own fit (lab_model_fit) of the packet it came from. The model's frames of the last
 * packet fitted are kept, since that packet's frames arrive one after the other. */
#ifndef LAB_EXPECT_BYTES_H
#define LAB_EXPECT_BYTES_H

#include <stdbool.h>
#include <stdint.h>

#include "model_segment.h"
#include "traffic.h"

struct lab_want {
	bool valid;
	uint64_t key;              /* the packet whose fit is kept */
	uint8_t *orig;             /* its bytes */
	uint8_t *buf;              /* the model's frames, back to back */
	struct lab_mframe fr[LAB_GSO_FRAMES_MAX];
	uint32_t n;
};

/* 0, or -1 when memory is short. */
int lab_want_init(struct lab_want *w);
void lab_want_fini(struct lab_want *w);

/* Packet `key`, standing for c, as a driver that negotiated `features` must receive it: its
 * bytes into out (room for VL_PKT_MAX_LEN), its length and header fields. NULL, or what makes
 * c impossible: the model takes the packet as it is, cannot fit it, or fits it into another
 * number of frames than c->nseg. */
const char *lab_want_packet(struct lab_want *w, uint64_t seed, uint64_t features, uint64_t key,
			    const struct lab_content *c, uint8_t *out, uint32_t *len,
			    struct vl_offload *ol);

#endif

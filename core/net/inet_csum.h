/* SPDX-License-Identifier: MIT */
/* The Internet checksum (RFC 1071): a ones'-complement sum of 16-bit big-endian words, over
 * bytes that may be spread across a packet's segments at any parity. Used by the software
 * offload fallbacks (sw_offload.c), never on the datapath. */
#ifndef VL_NET_INET_CSUM_H
#define VL_NET_INET_CSUM_H

#include <stdbool.h>
#include <stdint.h>

#include "vhostlab/vl_pkt.h"

struct vl_csum {
	uint64_t sum;   /* not yet folded: 2^48 bytes before it could overflow */
	bool odd;       /* an odd number of bytes so far: the next byte is a word's low byte */
};

static inline void vl_csum_bytes(struct vl_csum *c, const uint8_t *p, uint32_t n)
{
	uint32_t i = 0;

	if (c->odd && n) {
		c->sum += p[0];
		c->odd = false;
		i = 1;
	}
	for (; i + 1 < n; i += 2)
		c->sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < n) {
		c->sum += (uint32_t)p[i] << 8;
		c->odd = true;
	}
}

/* Add len bytes of pkt from offset off (across segments; bytes past the end are not
 * there and add nothing). */
static inline void vl_csum_pkt(struct vl_csum *c, const struct vl_pkt *pkt, uint32_t off,
			       uint32_t len)
{
	for (const struct vl_pkt *s = pkt; s && len; s = s->next) {
		if (off >= s->data_len) {
			off -= s->data_len;
			continue;
		}
		uint32_t n = s->data_len - off < len ? s->data_len - off : len;

		vl_csum_bytes(c, s->data + off, n);
		len -= n;
		off = 0;
	}
}

/* Fold to 16 bits and complement: the value a checksum field carries. */
static inline uint16_t vl_csum_final(const struct vl_csum *c)
{
	uint64_t s = c->sum;

	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

#endif

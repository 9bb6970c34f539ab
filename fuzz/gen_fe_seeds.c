/* SPDX-License-Identifier: MIT */
/* fuzz_fe_replies' seeds: a back end that answers the probe's start-up as a well-behaved
 * one would -- without protocol features (no replies but the GETs), and with REPLY_ACK (an
 * ack for every request) -- then both queues started, buffers posted both ways and used
 * entries looked for; and replies that break the protocol (a reply to another request, no
 * REPLY flag, a wrong size, a NACK, a short payload). Format: the comment at the top of
 * fuzz/fuzz_fe_replies.c. */
#include <stdio.h>

#include "gen_corpus.h"
#include "vhostlab/vl_virtio.h"

enum { FR_REPLY, FR_STEP, FR_RING, FR_POST, FR_USED };

#define FR_OFFER                                                                             \
	(VL_FEATURE(VL_F_VERSION_1) | VL_FEATURE(VL_F_NET_MRG_RXBUF) |                        \
	 VL_FEATURE(VL_F_RING_EVENT_IDX) | VL_FEATURE(VL_F_RING_INDIRECT_DESC) |              \
	 VL_FEATURE(VL_F_RING_PACKED))

/* A reply: request, flags (version 1 | REPLY unless told), size, a u64 payload. */
static void reply(struct fz_out *o, uint32_t req, uint32_t flags, uint32_t size, uint64_t v)
{
	fz_put8(o, FR_REPLY);
	fz_put16(o, (uint16_t)(12 + (size > 8 ? 8 : size)));
	fz_put32(o, req);
	fz_put32(o, flags);
	fz_put32(o, size);
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	fz_put_bytes(o, b, size > 8 ? 8 : size);
}

static void step(struct fz_out *o, uint8_t which, uint8_t arg)
{
	fz_put8(o, FR_STEP);
	fz_put8(o, which);
	fz_put8(o, arg);
}

static void traffic(struct fz_out *o)
{
	for (int i = 0; i < 4; i++) {
		fz_put8(o, FR_POST);
		fz_put8(o, (uint8_t)(i & 1));
		fz_put16(o, (uint16_t)(60 + 300 * i));
	}
	/* A used entry the back end writes somewhere in the ring area, then looks. */
	fz_put8(o, FR_RING);
	fz_put16(o, 0x1000);
	fz_put8(o, 8);
	fz_put32(o, 0);
	fz_put32(o, 60);
	for (int q = 0; q < 2; q++) {
		fz_put8(o, FR_USED);
		fz_put8(o, (uint8_t)q);
	}
}

/* flags 5: version 1 | REPLY. */
static void start_plain(struct fz_out *o, uint64_t offer)
{
	reply(o, 1, 5, 8, offer);
	step(o, 0, 0);         /* negotiate: GET_FEATURES, SET_OWNER, SET_FEATURES */
	step(o, 1, 0);         /* the memory table */
	step(o, 2, 5);         /* RX, 64 entries */
	step(o, 3, 5);         /* TX */
}

static void start_ack(struct fz_out *o)
{
	const uint64_t offer = FR_OFFER | VL_FEATURE(30);

	reply(o, 1, 5, 8, offer);
	reply(o, 15, 5, 8, 1u << 3);      /* protocol features: REPLY_ACK */
	reply(o, 3, 5, 8, 0);             /* SET_OWNER, acked */
	reply(o, 2, 5, 8, 0);             /* SET_FEATURES */
	step(o, 0, 0);
	reply(o, 5, 5, 8, 0);             /* SET_MEM_TABLE */
	step(o, 1, 0);
	for (int q = 0; q < 2; q++) {
		/* NUM, BASE, ADDR, KICK, CALL, ENABLE */
		static const uint32_t reqs[] = {8, 10, 9, 12, 13, 18};

		for (unsigned i = 0; i < 6; i++)
			reply(o, reqs[i], 5, 8, 0);
		step(o, (uint8_t)(2 + q), 4);
	}
}

static void seed(const char *name, bool packed, void (*body)(struct fz_out *o))
{
	struct fz_out o;
	char full[64];

	fz_out_init(&o);
	fz_put8(&o, packed ? 1 : 0);
	body(&o);
	snprintf(full, sizeof(full), "%s-%s", name, packed ? "packed" : "split");
	save("fuzz_fe_replies", full, &o);
}

static void body_plain(struct fz_out *o)
{
	start_plain(o, FR_OFFER);
	traffic(o);
	reply(o, 11, 5, 8, 3);            /* GET_VRING_BASE: num 3 */
	step(o, 4, 0);
}

static void body_ack(struct fz_out *o)
{
	start_ack(o);
	traffic(o);
	reply(o, 18, 5, 8, 0);
	step(o, 5, 0);                    /* ENABLE RX off */
	reply(o, 18, 5, 8, 0);
	step(o, 5, 2);                    /* and on again */
}

/* One broken reply to GET_FEATURES each (the probe gives up on the back end at the first). */
static const struct {
	const char *name;
	uint32_t req, flags, size;
	uint64_t v;
} bad[] = {
	{"bad-other-request", 2, 5, 8, FR_OFFER},
	{"bad-no-reply-flag", 1, 1, 8, FR_OFFER},
	{"bad-short-payload", 1, 5, 4, FR_OFFER},
	{"bad-huge-size", 1, 5, 4000, 0},
	{"bad-no-version-1", 1, 5, 8, VL_FEATURE(30)},
};
static unsigned bad_i;

static void body_bad(struct fz_out *o)
{
	reply(o, bad[bad_i].req, bad[bad_i].flags, bad[bad_i].size, bad[bad_i].v);
	step(o, 0, 0);
	traffic(o);
}

/* A NACK of SET_OWNER once REPLY_ACK is on. */
static void body_nack(struct fz_out *o)
{
	reply(o, 1, 5, 8, FR_OFFER | VL_FEATURE(30));
	reply(o, 15, 5, 8, 1u << 3);
	reply(o, 3, 5, 8, 1);
	step(o, 0, 0);
}

void gen_fe_replies(void)
{
	for (int packed = 0; packed < 2; packed++) {
		seed("plain", packed, body_plain);
		seed("reply-ack", packed, body_ack);
		seed("nack", packed, body_nack);
		for (bad_i = 0; bad_i < sizeof(bad) / sizeof(bad[0]); bad_i++)
			seed(bad[bad_i].name, packed, body_bad);
	}
}

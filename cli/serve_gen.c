/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --mode txonly`: the frames it sends. Each is a valid Ethernet frame a
 * guest stack accepts and ignores: IPv4/UDP broadcast to the discard port (9), from a
 * locally administered MAC and an address of the benchmarking range 198.18.0.0/15 (RFC
 * 2544), so it can never be mistaken for real traffic; the UDP payload starts with a
 * 64-bit big-endian sequence number. */
#include <stdlib.h>
#include <string.h>

#include "serve.h"

#define ETH_LEN 14u
#define IP_LEN 20u
#define UDP_LEN 8u
#define SEQ_OFF (ETH_LEN + IP_LEN + UDP_LEN)

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The IPv4 header checksum (RFC 791): one's complement of the one's complement sum. */
static uint16_t ip_checksum(const uint8_t *h, uint32_t len)
{
	uint32_t sum = 0;

	for (uint32_t i = 0; i < len; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void build_frame(uint8_t *f, uint32_t size, uint32_t port, uint32_t pair)
{
	uint8_t *ip = f + ETH_LEN, *udp = ip + IP_LEN;

	memset(f, 0xff, 6);                       /* broadcast */
	f[6] = 0x02;                              /* locally administered, unicast */
	f[7] = 'v';
	f[8] = 'l';
	f[9] = (uint8_t)port;
	put16(f + 10, pair);
	put16(f + 12, 0x0800);                    /* IPv4 */
	ip[0] = 0x45;                             /* version 4, 20-byte header */
	ip[1] = 0;
	put16(ip + 2, size - ETH_LEN);
	put16(ip + 4, 0);
	put16(ip + 6, 0x4000);                    /* don't fragment */
	ip[8] = 64;
	ip[9] = 17;                               /* UDP */
	put16(ip + 10, 0);
	ip[12] = 198;
	ip[13] = 18;
	ip[14] = 0;
	ip[15] = (uint8_t)(1 + port);
	memset(ip + 16, 0xff, 4);                 /* limited broadcast */
	put16(ip + 10, ip_checksum(ip, IP_LEN));
	put16(udp, 9);
	put16(udp + 2, 9);
	put16(udp + 4, size - ETH_LEN - IP_LEN);
	put16(udp + 6, 0);                        /* no checksum (allowed over IPv4) */
	for (uint32_t i = SEQ_OFF; i < size; i++)
		f[i] = (uint8_t)i;
}

bool serve_gen_init(struct serve_port *p, uint32_t pair, uint32_t size, uint32_t burst)
{
	struct serve_pair *sp = &p->pairs[pair];
	uint8_t *frame = malloc(size);
	bool ok = frame != NULL;

	sp->gen = calloc(burst, sizeof(*sp->gen));
	if (!sp->gen)
		ok = false;
	if (ok)
		build_frame(frame, size, p->index, pair);
	for (uint32_t i = 0; ok && i < burst; i++) {
		sp->gen[i] = vl_pkt_alloc_len(sp->pool, size);
		if (!sp->gen[i])
			ok = false;
		else
			vl_pkt_write(sp->gen[i], 0, frame, size);
	}
	free(frame);
	if (ok)
		serve_gen_stamp(sp->gen, burst, 0);
	return ok;
}

/* Once per frame per burst, so the usual case is a plain 8-byte store: the frame's first
 * segment holds the sequence number (every size serve sends but the largest jumbo frames). */
void serve_gen_stamp(struct vl_pkt **frames, uint32_t n, uint64_t seq)
{
	for (uint32_t i = 0; i < n; i++) {
		uint8_t be[8];
		uint64_t v = seq + i;

		/* One byte swap instead of a loop of eight shifts and stores (which gcc 12 at
		 * -O2 keeps as a loop: about 60 instructions a frame). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		v = __builtin_bswap64(v);
#endif
		memcpy(be, &v, sizeof(be));
		if (frames[i]->data_len >= SEQ_OFF + sizeof(be))
			memcpy(frames[i]->data + SEQ_OFF, be, sizeof(be));
		else
			vl_pkt_write(frames[i], SEQ_OFF, be, sizeof(be));
	}
}

void serve_gen_free(struct serve_port *p, uint32_t pair)
{
	struct serve_pair *sp = &p->pairs[pair];

	if (!sp->gen)
		return;
	for (uint32_t i = 0; i < p->s->o.burst; i++)
		vl_pkt_free(sp->gen[i]);
	free(sp->gen);
	sp->gen = NULL;
}

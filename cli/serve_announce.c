/* SPDX-License-Identifier: MIT */
/* The guest announce (SEND_RARP, vl_vu_callbacks.announce): after a live migration the front
 * end names the guest's MAC, and serve tells the far side the guest is now behind it, with
 * the frame QEMU's own NICs send for that: a broadcast RARP "reverse request" from the MAC.
 * A switch or bridge on the far side learns the MAC's new port from its source address.
 * tap mode writes it to the TAP device (queue pair 0's fd); the other modes have no far side
 * that learns addresses (loopback echoes to the same guest, pair joins two guests directly,
 * the rest drop or generate), so the event says it was not sent. */
#include <stdio.h>
#include <string.h>

#include "serve.h"

#define ETH_P_RARP 0x8035

void serve_rarp_frame(uint8_t frame[SERVE_RARP_LEN], const uint8_t mac[6])
{
	uint8_t *p = frame;

	memset(frame, 0, SERVE_RARP_LEN);
	memset(p, 0xff, 6);                      /* destination: broadcast */
	memcpy(p + 6, mac, 6);                   /* source: the guest */
	p[12] = ETH_P_RARP >> 8, p[13] = ETH_P_RARP & 0xff;
	p += 14;
	p[0] = 0, p[1] = 1;                      /* hardware type: Ethernet */
	p[2] = 0x08, p[3] = 0x00;                /* protocol type: IPv4 */
	p[4] = 6, p[5] = 4;                      /* address lengths */
	p[6] = 0, p[7] = 3;                      /* operation: reverse request */
	memcpy(p + 8, mac, 6);                   /* sender hardware address; IP 0 */
	memcpy(p + 18, mac, 6);                  /* target hardware address; IP 0 */
}

void serve_announce(struct serve_port *p, const uint8_t mac[6])
{
	struct serve *s = p->s;
	char m[18];

	snprintf(m, sizeof(m), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
		 mac[4], mac[5]);
	p->announces++;
	if (s->o.mode != SERVE_TAP) {
		serve_event(s, "announce", p, "SEND_RARP for %s: not sent, mode %s has no far side "
			    "that learns addresses", m, serve_mode_name(s->o.mode));
		return;
	}
	uint8_t frame[SERVE_RARP_LEN];

	serve_rarp_frame(frame, mac);
	if (!serve_tap_write_raw(s->tap_fds[0], frame, SERVE_RARP_LEN)) {
		serve_event(s, "error", p, "SEND_RARP for %s: the RARP frame could not be written "
			    "to tap %s", m, s->o.tap_name);
		return;
	}
	serve_event(s, "announce", p, "SEND_RARP for %s: RARP broadcast on tap %s", m,
		    s->o.tap_name);
}

/* SPDX-License-Identifier: MIT */
/* The shapes Linux's virtio-net driver (drivers/net/virtio_net.c) gives its buffers, for the
 * lab's driver to post its offloaded traffic the way a Linux guest does:
 *
 *  - transmit (xmit_skb, skb_to_sgvec): the virtio-net header, alone or pushed in front of
 *    the skb's linear part when the device takes any header layout; the linear part (the
 *    frame's Ethernet/IP/L4 headers and maybe some data); then the page fragments, each
 *    inside one 4 KiB page, at most MAX_SKB_FRAGS (17) of them;
 *  - receive without mergeable buffers but with guest GSO ("big packets", add_recvbuf_big):
 *    the header, the rest of its page from a padded header's length on, then MAX_SKB_FRAGS
 *    whole pages: room for a 64 KiB frame in every buffer.
 *
 * A ring (or indirect table) that allows fewer descriptors gets fewer, longer pieces. */
#ifndef LAB_LINUX_SHAPE_H
#define LAB_LINUX_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "rng.h"

#define LAB_PAGE 4096u
#define LAB_LINUX_FRAGS 17u                      /* MAX_SKB_FRAGS */
#define LAB_LINUX_PIECES (LAB_LINUX_FRAGS + 2u)  /* header, linear part, fragments */
/* Where the data of a big receive buffer starts in the header's page (Linux: the size of
 * struct padded_vnet_hdr, which keeps the data 16-byte aligned). */
#define LAB_LINUX_PAD_HDR 32u
/* Bytes of frame a big receive buffer holds. */
#define LAB_LINUX_BIG_DATA (LAB_PAGE - LAB_LINUX_PAD_HDR + LAB_LINUX_FRAGS * LAB_PAGE)

/* Where a piece goes in guest RAM. */
enum lab_place {
	LAB_PLACE_ANY = 0,   /* anywhere (the driver's usual placement) */
	LAB_PLACE_PAGE,      /* in a fresh 4 KiB page, `off` bytes in */
	LAB_PLACE_SAME_PAGE, /* in the previous piece's page, `off` bytes in */
};

struct lab_cut {
	uint32_t n;
	uint32_t len[LAB_LINUX_PIECES];
	uint8_t place[LAB_LINUX_PIECES];   /* enum lab_place */
	uint16_t off[LAB_LINUX_PIECES];
};

/* A transmit chain of vhdr header bytes and frame_len frame bytes, linear of them in the
 * linear part; the header alone unless push_hdr; at most max descriptors (>= 1). */
void lab_linux_tx_cut(struct lab_rng *rng, uint32_t vhdr, bool push_hdr, uint32_t linear,
		      uint32_t frame_len, uint32_t max, struct lab_cut *cut);

/* A big receive buffer for a vhdr-byte header (vhdr + LAB_LINUX_BIG_DATA bytes), at most
 * max descriptors (>= 1). */
void lab_linux_big_rx_cut(uint32_t vhdr, uint32_t max, struct lab_cut *cut);

#endif

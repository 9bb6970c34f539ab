/* SPDX-License-Identifier: MIT */
#include "linux_shape.h"

#include <string.h>

static void add(struct lab_cut *cut, uint32_t len, enum lab_place place, uint32_t off)
{
	cut->len[cut->n] = len;
	cut->place[cut->n] = (uint8_t)place;
	cut->off[cut->n] = (uint16_t)off;
	cut->n++;
}

/* `bytes` over k pieces placed anywhere, as evenly as they go (a ring too small for one
 * piece a page: the lab's stand-in for the compound pages Linux would use). */
static void even(struct lab_cut *cut, uint32_t bytes, uint32_t k)
{
	for (uint32_t i = 0; i < k; i++)
		add(cut, bytes / k + (i < bytes % k), LAB_PLACE_ANY, 0);
}

void lab_linux_tx_cut(struct lab_rng *rng, uint32_t vhdr, bool push_hdr, uint32_t linear,
		      uint32_t frame_len, uint32_t max, struct lab_cut *cut)
{
	uint32_t rest = frame_len - linear;

	memset(cut, 0, sizeof(*cut));
	if (max < 2) {
		add(cut, vhdr + frame_len, LAB_PLACE_ANY, 0);
		return;
	}
	if (push_hdr) {
		add(cut, vhdr + linear, LAB_PLACE_ANY, 0);
	} else {
		add(cut, vhdr, LAB_PLACE_ANY, 0);
		add(cut, linear, LAB_PLACE_ANY, 0);
	}
	if (rest == 0)
		return;
	/* The first fragment often starts where a page fragment allocator left off; the rest
	 * fill whole pages. */
	const uint32_t off0 = lab_rng_chance(rng, 1, 2) ? lab_rng_below(rng, LAB_PAGE) : 0;
	const uint32_t first = rest < LAB_PAGE - off0 ? rest : LAB_PAGE - off0;
	const uint32_t pages = (rest - first + LAB_PAGE - 1) / LAB_PAGE;
	uint32_t room = max - cut->n;

	if (room > LAB_LINUX_FRAGS)
		room = LAB_LINUX_FRAGS;
	if (room == 0) {
		/* The last descriptor takes the rest too. */
		cut->len[cut->n - 1] += rest;
		return;
	}
	if (1 + pages > room) {
		even(cut, rest, room);
		return;
	}
	add(cut, first, LAB_PLACE_PAGE, off0);
	for (rest -= first; rest; rest -= cut->len[cut->n - 1])
		add(cut, rest < LAB_PAGE ? rest : LAB_PAGE, LAB_PLACE_PAGE, 0);
}

void lab_linux_big_rx_cut(uint32_t vhdr, uint32_t max, struct lab_cut *cut)
{
	const uint32_t data0 = LAB_PAGE - LAB_LINUX_PAD_HDR;

	memset(cut, 0, sizeof(*cut));
	if (max < 2) {
		add(cut, vhdr + LAB_LINUX_BIG_DATA, LAB_PLACE_ANY, 0);
		return;
	}
	add(cut, vhdr, LAB_PLACE_PAGE, 0);
	if (max == 2) {
		add(cut, LAB_LINUX_BIG_DATA, LAB_PLACE_ANY, 0);
		return;
	}
	add(cut, data0, LAB_PLACE_SAME_PAGE, LAB_LINUX_PAD_HDR);
	if (max - 2 < LAB_LINUX_FRAGS) {
		even(cut, LAB_LINUX_FRAGS * LAB_PAGE, max - 2);
		return;
	}
	for (uint32_t i = 0; i < LAB_LINUX_FRAGS; i++)
		add(cut, LAB_PAGE, LAB_PLACE_PAGE, 0);
}

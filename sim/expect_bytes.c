/* SPDX-License-Identifier: MIT */
#include "expect_bytes.h"

#include <stdlib.h>
#include <string.h>

#include "vhostlab/vl_net.h"

/* The model's frames of one packet: its payload once, and a copy of the headers per frame. */
#define WANT_BUF (VL_PKT_MAX_LEN + LAB_GSO_FRAMES_MAX * LAB_FRAME_HDR_MAX)

int lab_want_init(struct lab_want *w)
{
	memset(w, 0, sizeof(*w));
	w->orig = malloc(VL_PKT_MAX_LEN);
	w->buf = malloc(WANT_BUF);
	return w->orig && w->buf ? 0 : -1;
}

void lab_want_fini(struct lab_want *w)
{
	free(w->orig);
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

const char *lab_want_packet(struct lab_want *w, uint64_t seed, uint64_t features, uint64_t key,
			    const struct lab_content *c, uint8_t *out, uint32_t *len,
			    struct vl_offload *ol)
{
	if (!c->fit) {
		lab_traffic_bytes(seed, key, c, out);
		*len = c->len;
		*ol = c->ol;
		return NULL;
	}
	if (!w->valid || w->key != key) {
		w->valid = false;
		lab_traffic_bytes(seed, key, c, w->orig);
		switch (lab_model_fit(features, w->orig, c->len, &c->ol, w->buf, WANT_BUF, w->fr,
				      LAB_GSO_FRAMES_MAX, &w->n)) {
		case LAB_MSEG_OK:
			break;
		case LAB_MSEG_AS_IS:
			return "the host made it fit, but the model's driver takes it as it is";
		default:
			return "the host made it fit, but the model cannot";
		}
		w->valid = true;
		w->key = key;
	}
	if (w->n != c->nseg || c->seg >= w->n)
		return "the host made it fit in another number of frames than the model";
	const struct lab_mframe *f = &w->fr[c->seg];

	memcpy(out, w->buf + f->off, f->len);
	*len = f->len;
	*ol = f->ol;
	return NULL;
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: packets whose offloads their destination's driver did not negotiate.
 * A guest with TSO sends 64 KiB TCP frames with a partial checksum; in pair or loopback mode
 * they go as they are to a guest that negotiated the same (GUEST_TSO4, GUEST_CSUM, ...),
 * and through the core's software fallback (vl_sw_fit: segmented into MTU-sized frames, or
 * the checksum completed) to one that did not, which vl_net_enqueue would otherwise drop.
 * TAP mode needs it only for frames the kernel queued under an earlier TUNSETOFFLOAD. */
#include "serve.h"

uint32_t serve_fit_prefix(const struct vl_vq *vq, struct vl_pkt *const *pkts, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct vl_offload *ol = &pkts[i]->ol;

		/* Most packets carry no offload at all: one test, no call. */
		if (__builtin_expect((ol->flags | ol->gso_type) != 0, 0) &&
		    vl_net_rx_offload_check(vq, ol) != VL_DROP_NONE)
			return i;
	}
	return n;
}

void serve_fit_packet(struct serve_port *dst, struct serve_pair *sp, const struct vl_vq *vq,
		      struct vl_pkt *pkt)
{
	struct serve_pending *pd = &sp->pend;
	uint16_t n = 0;
	/* The frames come from the destination pair's pool: it frees them once delivered. */
	(void)dst;
	enum vl_sw_result r = vl_sw_fit(vq, pkt, sp->pool, pd->fit, SERVE_FIT_MAX, &n);

	pd->fit_head = 0;
	switch (r) {
	case VL_SW_OK:
		if (pkt->ol.gso_type != VL_NET_HDR_GSO_NONE) {
			sp->st.sw_segmented++;
			sp->st.sw_frames += n;
		} else {
			sp->st.sw_checksummed++;
		}
		pd->fit_n = n;
		vl_pkt_free(pkt);
		return;
	case VL_SW_NOT_NEEDED:
		/* The driver takes it after all (serve_fit_prefix said otherwise only if the
		 * two disagree): it goes as it is, and enqueue has the last word. */
		pd->fit[0] = pkt;
		pd->fit_n = 1;
		return;
	default:
		/* A frame the fallback cannot make fit (not the protocols its GSO type names,
		 * UFO, more frames than SERVE_FIT_MAX, the pool short): lost, counted. */
		sp->st.sw_refused[r < VL_SW__COUNT ? r : VL_SW_BAD_FRAME]++;
		sp->st.drops[SERVE_DROP_OFFLOAD]++;
		pd->fit_n = 0;
		vl_pkt_free(pkt);
		return;
	}
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --mode null` and `--mode touch`: the ceilings a front end allows, not
 * forwarders.
 *
 * Every chain the front end makes available on its transmit ring goes back to it at once,
 * with used length 0, through vl_net_discard: the descriptors are walked and checked, the
 * buffers are never read, no packet buffer is allocated, nothing is copied. What the front
 * end then reaches is its own limit (plus the ring's), the figure docs/serve.md and
 * reports/vs-dpdk.md set beside the real back ends.
 *
 * The front end's receive ring is left alone: its buffers stay posted and nothing is used.
 * A host->guest ceiling would need a used length the front end accepts as a packet, which
 * means a virtio-net header written into its buffer (DPDK's virtio driver drops, as an error,
 * any used length shorter than the header plus an Ethernet header, and with mergeable
 * buffers it reads num_buffers from that header) -- no longer "nothing", so not done.
 *
 * --mode touch does the same through vl_net_discard_touch, which also reads each packet's
 * first byte: a back end that reads its packets (every real one) cannot beat that rate, and
 * the gap to null is what moving that one cache line from the front end's CPU costs. */
#include "serve.h"

bool serve_null_pair(struct serve *s, struct serve_port *p, uint32_t pair)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct vl_vq *vq = sp->vq[SERVE_RING_TX];

	if (!vq)
		return false;
	uint16_t n;

	serve_rec_begin(p, 2 * pair + SERVE_RING_TX, vq);
	if (s->o.mode == SERVE_TOUCH)
		n = vl_net_discard_touch(vq, (uint16_t)s->o.burst, &sp->st.rx_bytes,
					 &sp->touched);
	else
		n = vl_net_discard(vq, (uint16_t)s->o.burst, &sp->st.rx_bytes);
	serve_rec_discarded(p, (uint16_t)s->o.burst, n, s->o.mode == SERVE_TOUCH);

	/* Chains the core refused are counted by the core; serve_stats_fold makes them
	 * `malformed` drops, as for a dequeue. */
	sp->st.rx_packets += n;
	serve_fwd_notify(p, pair, SERVE_RING_TX);
	serve_fwd_check_broken(p, pair, SERVE_RING_TX);
	return n > 0;
}

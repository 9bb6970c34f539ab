/* SPDX-License-Identifier: MIT */
/* The host side of the hostile guest: its calls into the core (dequeue, discard, touch,
 * enqueue, complete) and the packets it holds, each call checked. */
#include <string.h>

#include "hg_internal.h"
#include "model.h"
#include "trace_sink.h"

void hg_free_held(struct lab_hg *d, uint8_t mode)
{
	uint64_t freed[FZ_DP_MAX_HELD];
	uint32_t keep = 0, nfreed = 0;

	for (uint32_t i = 0; i < d->nheld; i++) {
		bool go;

		switch (mode % 4) {
		case 0:
			go = true;
			break;
		case 1:
			go = i < d->nheld / 2 + 1;
			break;
		case 2:
			go = (i & 1) == 0;
			break;
		default:
			go = i + 1 == d->nheld;
			break;
		}
		if (go) {
			vl_pkt_free(d->held[i]);
			freed[nfreed++] = d->held_no[i];
		} else {
			d->held_no[keep] = d->held_no[i];
			d->held[keep++] = d->held[i];
		}
	}
	d->nheld = keep;
	if (fz_sink)
		hg_rec_free(d, freed, nfreed);
}

static bool hold_this(struct lab_hg *d)
{
	switch (d->s.hold & 3) {
	case 0:
		return false;
	case 1:
		return true;
	case 2:
		return (lab_rng_step(&d->rng) & 1) != 0;
	default:
		return (lab_rng_step(&d->rng) & 3) == 0;
	}
}

/* Hold packet number `no`; when the host holds all it can, the oldest is freed (its number
 * goes to freed[]). */
static void hold(struct lab_hg *d, struct vl_pkt *p, uint32_t no, uint64_t *freed,
		 uint32_t *nfreed)
{
	if (d->nheld == FZ_DP_MAX_HELD) {
		vl_pkt_free(d->held[0]);
		freed[(*nfreed)++] = d->held_no[0];
		memmove(d->held, d->held + 1, (FZ_DP_MAX_HELD - 1) * sizeof(d->held[0]));
		memmove(d->held_no, d->held_no + 1, (FZ_DP_MAX_HELD - 1) * sizeof(d->held_no[0]));
		d->nheld--;
	}
	d->held_no[d->nheld] = no;
	d->held[d->nheld++] = p;
}

void hg_do_dequeue(struct lab_hg *d, uint16_t count)
{
	struct vl_pkt *pkts[256];
	uint64_t freed[256];
	uint32_t nfreed = 0;
	struct burst_mark m;
	struct tx_window w;
	uint64_t packets = vl_vq_stats(d->vq)->packets;
	bool was_broken = vl_vq_broken(d->vq);

	hg_mark_before(d, &m);
	hg_tx_window_before(d, &m, count, &w);
	if (fz_sink)
		hg_rec_dequeue(d, count);
	uint16_t n = vl_net_dequeue(d->vq, d->pool, pkts, count);

	if (fz_sink && count)
		fz_sink->absorb(fz_sink->ctx);

	if (n > count)
		fz_fail("dequeue returned %u packets, asked for %u", n, count);
	if (was_broken && n)
		fz_fail("a broken queue dequeued %u packets", n);
	if (vl_vq_stats(d->vq)->packets - packets != n)
		fz_fail("dequeue returned %u packets, stats counted %llu", n,
			(unsigned long long)(vl_vq_stats(d->vq)->packets - packets));
	hg_check_after_flush(d, &m, 0);
	hg_check_tx_take(d, &m, &w, count, "dequeue");
	hg_check_evictions(d, &m, hg_copies_made(vl_vq_stats(d->vq)) - m.copies);
	hg_check_copy_prefetches(d, &m, true);
	for (uint16_t i = 0; i < n; i++) {
		hg_check_tx_pkt(d, pkts[i]);
		if (hold_this(d)) {
			hold(d, pkts[i], d->dequeued + i, freed, &nfreed);
		} else {
			vl_pkt_free(pkts[i]);
			freed[nfreed++] = d->dequeued + i;
		}
	}
	d->dequeued += n;
	if (fz_sink)
		hg_rec_free(d, freed, nfreed);
}

/* A TX burst through the ceilings of `vhostlab serve --mode null|touch`: every chain goes
 * back with used length 0 (hg_check_after_flush), no packet is made and no buffer taken, the
 * byte count is that of at least one byte and at most VL_PKT_MAX_LEN per good chain, and
 * touch's first bytes one byte each. Only bounds here: this guest's chains may be hostile and
 * the harness keeps no model of which are good; fuzz_differential, whose chains are all well
 * formed, checks both totals exactly against what its guest posted. Out of bounds reads are
 * the sanitizers' and the guard pages' to catch. Recorded as `discard Q MAX [touch]`. */
void hg_do_discard(struct lab_hg *d, uint16_t count, bool touch)
{
	const char *what = touch ? "vl_net_discard_touch" : "vl_net_discard";
	const struct vl_vq_stats *st = vl_vq_stats(d->vq);
	const uint64_t packets = st->packets;
	const uint32_t free_before = vl_pool_free_count(d->pool);
	const bool was_broken = vl_vq_broken(d->vq);
	uint64_t bytes = 0, firsts = 0;
	struct burst_mark m;
	struct tx_window w;

	hg_mark_before(d, &m);
	hg_tx_window_before(d, &m, count, &w);
	if (fz_sink)
		hg_rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_DISCARD, .queue = (uint32_t)d->rq,
						   .count = count,
						   .given = touch ? LAB_TA_TOUCH : 0});
	uint16_t n = touch ? vl_net_discard_touch(d->vq, count, &bytes, &firsts)
			   : vl_net_discard(d->vq, count, &bytes);

	if (fz_sink && count)
		fz_sink->absorb(fz_sink->ctx);

	if (n > count)
		fz_fail("%s returned %u chains, asked for %u", what, n, count);
	if (was_broken && n)
		fz_fail("a broken queue: %s returned %u chains", what, n);
	if (st->packets != packets)
		fz_fail("%s counted %llu packets", what,
			(unsigned long long)(st->packets - packets));
	if (vl_pool_free_count(d->pool) != free_before)
		fz_fail("%s took %d pool buffers", what,
			(int)free_before - (int)vl_pool_free_count(d->pool));
	if (bytes < n || bytes > (uint64_t)n * VL_PKT_MAX_LEN)
		fz_fail("%s: %u good chains of %llu bytes (each must be 1..%u)", what, n,
			(unsigned long long)bytes, VL_PKT_MAX_LEN);
	if (firsts > 255ull * n)
		fz_fail("%s: first bytes add up to %llu over %u chains", what,
			(unsigned long long)firsts, n);
	hg_check_after_flush(d, &m, 0);
	hg_check_tx_take(d, &m, &w, count, what);
	hg_check_evictions(d, &m, touch ? n : 0);
	hg_check_copy_prefetches(d, &m, false);
	d->discarded += n;
}

/* What TX burst number k calls (fz_dp_setup.hold bits 6-7). */
enum fz_tx_host hg_tx_host(const struct lab_hg *d, uint32_t k)
{
	enum fz_tx_host h = (enum fz_tx_host)(d->s.hold >> FZ_TX_HOST_SHIFT & 3u);

	return h == FZ_TX_ROTATE ? (enum fz_tx_host)(k % 3u) : h;
}

static void set_rx_offload(struct lab_hg *d, struct vl_offload *ol, uint8_t preset)
{
	memset(ol, 0, sizeof(*ol));
	switch (preset % 8) {
	case 1:
		ol->flags = VL_NET_HDR_F_NEEDS_CSUM;
		ol->csum_start = 14;
		ol->csum_offset = 16;
		break;
	case 2:
		ol->flags = VL_NET_HDR_F_DATA_VALID;
		break;
	case 3:
		ol->gso_type = VL_NET_HDR_GSO_TCPV4;
		ol->hdr_len = 54;
		ol->gso_size = 1448;
		break;
	case 4:
		memset(ol, 0xff, sizeof(*ol));
		break;
	case 5:
		ol->gso_type = VL_NET_HDR_GSO_UDP_L4 | VL_NET_HDR_GSO_ECN;
		ol->gso_size = 1;
		break;
	case 6:
		ol->flags = VL_NET_HDR_F_RSC_INFO;
		break;
	case 7: {
		uint64_t r = lab_rng_step(&d->rng);

		memcpy(ol, &r, sizeof(*ol) < sizeof(r) ? sizeof(*ol) : sizeof(r));
		break;
	}
	default:
		break;
	}
}

void hg_do_enqueue(struct lab_hg *d, uint32_t n, const uint16_t *lens, const uint8_t *mods)
{
	struct vl_pkt *pkts[FZ_DP_MAX_RX_PKTS];
	uint8_t st[FZ_DP_MAX_RX_PKTS];
	uint32_t built = 0;
	bool was_broken = vl_vq_broken(d->vq);

	if (n > FZ_DP_MAX_RX_PKTS)
		n = FZ_DP_MAX_RX_PKTS;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = lens[i];
		uint8_t mod = mods[i];

		if (mod & 1)
			len += 65000u;
		struct vl_pkt *p = vl_pkt_alloc_len(d->hpool, len);

		if (!p)
			fz_fail("host pool could not build a %u-byte packet", len);
		if (len <= VL_PKT_MAX_LEN) {
			fz_fill(hg_scratch, len, (uint64_t)d->posts << 8 | i);
			vl_pkt_write(p, 0, hg_scratch, len);
		} else {
			/* Too big for any guest: the core must drop it unread (checked below),
			 * so its bytes are zeros, not the stream -- 65,536..130,535 bytes of
			 * the stream per such packet, half the packets of a random input,
			 * were most of the enqueue targets' time. Zeros, not whatever the
			 * segments held: an input's run must not depend on the one before. */
			for (struct vl_pkt *s = p; s; s = s->next)
				memset(s->data, 0, s->data_len);
		}
		set_rx_offload(d, &p->ol, (uint8_t)(mod >> 1));
		pkts[built] = p;
		st[built] = 0xEE;
		built++;
	}
	const struct vl_vq_stats *stats = vl_vq_stats(d->vq);
	uint64_t packets = stats->packets, bytes = stats->bytes;
	struct burst_mark m;

	hg_mark_before(d, &m);
	if (fz_sink)
		hg_rec_enqueue(d, pkts, built);
	uint16_t h = vl_net_enqueue(d->vq, pkts, (uint16_t)built, st);

	if (fz_sink)
		fz_sink->absorb(fz_sink->ctx);
	uint64_t delivered = 0, dbytes = 0, rx_sum = 0;

	if (h > built)
		fz_fail("enqueue handled %u of %u packets", h, built);
	if (was_broken && h)
		fz_fail("a broken queue handled %u packets", h);
	for (uint16_t i = 0; i < h; i++) {
		if (st[i] != VL_RX_DELIVERED && st[i] != VL_RX_DROPPED_TOO_BIG &&
		    st[i] != VL_RX_DROPPED_TOO_MANY_PIECES && st[i] != VL_RX_DROPPED_OFFLOAD)
			fz_fail("enqueue status[%u] = %u", i, st[i]);
		/* Offloads the driver did not negotiate are refused, the others never (the
		 * model's rule, lab_rx_offload_rule, decides; a packet too big for any buffer
		 * is checked first). */
		const enum vl_drop ol_why = lab_rx_offload_rule(d->features, &pkts[i]->ol);

		if (pkts[i]->pkt_len <= VL_PKT_MAX_LEN &&
		    (ol_why != VL_DROP_NONE) != (st[i] == VL_RX_DROPPED_OFFLOAD))
			fz_fail("enqueue status[%u] = %u, but the offloads (flags 0x%x, gso_type "
				"0x%x) are %s for this driver", i, st[i], pkts[i]->ol.flags,
				pkts[i]->ol.gso_type, ol_why == VL_DROP_NONE ? "taken" : "refused");
		if (pkts[i]->pkt_len > VL_PKT_MAX_LEN && st[i] != VL_RX_DROPPED_TOO_BIG)
			fz_fail("a %u-byte packet was not dropped as too big", pkts[i]->pkt_len);
		if (st[i] == VL_RX_DELIVERED) {
			delivered++;
			dbytes += pkts[i]->pkt_len;
			rx_sum += d->hdr_len + pkts[i]->pkt_len;
		}
	}
	if (stats->packets - packets != delivered || stats->bytes - bytes != dbytes)
		fz_fail("enqueue delivered %llu packets / %llu bytes, stats say %llu / %llu",
			(unsigned long long)delivered, (unsigned long long)dbytes,
			(unsigned long long)(stats->packets - packets),
			(unsigned long long)(stats->bytes - bytes));
	hg_check_after_flush(d, &m, rx_sum);
	hg_check_evictions(d, &m, 0);
	hg_check_copy_prefetches(d, &m, false);
	hg_check_no_line_waits(d, &m, "enqueue");
	for (uint32_t i = 0; i < built; i++)
		vl_pkt_free(pkts[i]);
}

void hg_do_complete(struct lab_hg *d)
{
	struct burst_mark m;
	/* An RX queue never holds chains: vl_vq_complete does nothing there, and a trace's
	 * complete is for tx queues. */
	bool rec = fz_sink && !d->rx;

	hg_mark_before(d, &m);
	if (rec) {
		struct lab_trace_op op = {.kind = LAB_T_COMPLETE, .queue = (uint32_t)d->rq};

		hg_rec_stmt(d, &op);
	}
	vl_vq_complete(d->vq);
	if (rec)
		fz_sink->absorb(fz_sink->ctx);
	hg_check_after_flush(d, &m, 0);
	hg_check_evictions(d, &m, 0);
	hg_check_copy_prefetches(d, &m, false);
	hg_check_no_line_waits(d, &m, "vl_vq_complete");
}


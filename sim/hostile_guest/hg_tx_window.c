/* SPDX-License-Identifier: MIT */
/* How many chains a TX burst must take, read from the ring as spec 2.8 and line wait's
 * rule say (struct tx_window, hg_internal.h), and the check that it took them. */
#include <string.h>

#include "hg_internal.h"

static bool pdesc_avail(uint16_t flags, bool wrap)
{
	return (flags & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED)) == lab_pring_avail_flags(wrap);
}

static void packed_window(const struct lab_hg *d, uint16_t from, uint32_t want, struct tx_window *w)
{
	uint16_t pos = from & 0x7fffu;
	bool wrap = (from & VL_PACKED_WRAP_BIT) != 0;
	uint32_t descs = 0;
	bool bad = false;

	memset(w, 0, sizeof(*w));
	while (w->n < want) {
		w->at[w->n] = (uint16_t)(pos | (wrap ? VL_PACKED_WRAP_BIT : 0));
		if (descs == d->size) {
			w->end = w->whole_ring = true;
			break;
		}
		uint16_t flags = hg_psnap[pos].flags, last = pos;
		uint32_t len = 1;

		if (!pdesc_avail(flags, wrap)) {
			w->end = true;
			break;
		}
		hg_pstep(&pos, &wrap, 1, d->size);
		while (flags & VL_DESC_F_NEXT) {
			/* A chain longer than what is left of the ring, or a tail not available:
			 * a driver makes a chain's head available last (spec 2.8.6). */
			if (descs + len >= d->size || !pdesc_avail(hg_psnap[pos].flags, wrap)) {
				w->end = w->lie = true;
				goto out;
			}
			flags = hg_psnap[pos].flags;
			last = pos;
			len++;
			hg_pstep(&pos, &wrap, 1, d->size);
		}
		if (!bad && hg_psnap[last].id >= d->size) {
			bad = true;
			w->bad_id = w->n;
		}
		descs += len;
		w->n++;
	}
	w->at[w->n] = (uint16_t)(pos | (wrap ? VL_PACKED_WRAP_BIT : 0));
out:
	if (!bad)
		w->bad_id = w->n;
}

/* Line wait's rule on the window: when the scan stopped inside a 64-byte line of descriptors,
 * the chains that start in that line wait for the next burst, unless they are all it found.
 * The lines are the guest addresses' (guest memory is mapped a page at a time, so the core's
 * host view puts every descriptor at the same place in its line). Only a scan that stopped
 * at a descriptor that is not available: a window holding the whole ring (every descriptor
 * available, none the driver could be writing) is taken whole. */
static void line_wait_rule(const struct lab_hg *d, struct tx_window *w)
{
	w->take = w->n;
	w->waits = false;
	if (!d->line_wait || !w->end || w->whole_ring || w->lie)
		return;
	const uint32_t end = w->at[w->n] & 0x7fffu;
	const uint32_t into = (uint32_t)((d->ring_gpa + 16u * end) & 63u) >> 4;

	if (into == 0 || into > end)
		return; /* no line open, or one that would start before position 0 */
	uint32_t k = w->n;

	while (k > 0 && (w->at[k - 1] & 0x7fffu) >= end - into && (w->at[k - 1] & 0x7fffu) < end)
		k--;
	if (k > 0 && k < w->n) {
		w->take = k;
		w->waits = true;
	}
}

/* The window a TX burst of `count` will find (packed; nothing to predict on split). */
void hg_tx_window_before(const struct lab_hg *d, const struct burst_mark *m, uint16_t count,
			     struct tx_window *w)
{
	memset(w, 0, sizeof(*w));
	if (d->L != VL_LAYOUT_PACKED || m->broken)
		return;
	packed_window(d, m->last_avail, count, w);
	line_wait_rule(d, w);
}

/* Enqueue ignores line wait, and vl_vq_complete scans nothing. */
void hg_check_no_line_waits(struct lab_hg *d, const struct burst_mark *m, const char *what)
{
	const uint64_t waits = vl_vq_stats(d->vq)->tx_line_waits - m->line_waits;

	if (waits)
		fz_fail("%s: tx_line_waits moved by %llu", what, (unsigned long long)waits);
}

/* A TX burst took exactly what the window and line wait's rule give, stopping sooner only
 * where it must: at the chain whose id is out of range (the queue breaks), or -- counted --
 * at an allocation failure or a zero-copy stall. Checked: the chains consumed, where the
 * device position ends, tx_line_waits, and a queue broken by a lie or a bad id. The one thing
 * the harness cannot know: a burst is bounded by count less the used entries of freed
 * zero-copy packets it returns first (vl_tx_burst_start), at most the chains held before it.
 * That bound reaches into the window only when count + held > size and the window holds
 * size - held chains or more -- a guest re-posting descriptors a lease holds -- and then the
 * burst either found the window whole (and took what the rule says) or took one chain per
 * bound, between size - held and the window, waiting for nothing. Split rings and a queue
 * broken before: line wait does nothing. */
void hg_check_tx_take(struct lab_hg *d, const struct burst_mark *m, const struct tx_window *w,
			  uint16_t count, const char *what)
{
	const struct vl_vq_stats *st = vl_vq_stats(d->vq);
	const uint64_t waits = st->tx_line_waits - m->line_waits;
	const uint64_t took = st->chains - m->chains;
	const bool stopped = st->alloc_failures != m->alloc_failures ||
			     st->zc_stalls != m->zc_stalls;
	const bool bounded = (uint32_t)count + m->held > d->size && w->n + m->held >= d->size;
	/* Taken whole: the window and the rule; else the bound cut the window itself. */
	const bool whole = !bounded || waits != 0;
	const uint64_t lo = whole ? w->take : d->size - m->held, hi = whole ? w->take : w->n;
	const uint64_t lim_lo = lo < w->bad_id ? lo : w->bad_id;
	const uint64_t lim_hi = hi < w->bad_id ? hi : w->bad_id;

	if (vl_vq_tx_line_wait(d->vq) != (d->line_wait && d->L == VL_LAYOUT_PACKED))
		fz_fail("line wait reads %s, set %s on a %s ring",
			vl_vq_tx_line_wait(d->vq) ? "on" : "off", d->line_wait ? "on" : "off",
			d->L == VL_LAYOUT_PACKED ? "packed" : "split");
	if (d->L != VL_LAYOUT_PACKED || m->broken) {
		if (waits)
			fz_fail("%s: tx_line_waits moved by %llu on a %s", what,
				(unsigned long long)waits,
				m->broken ? "broken queue" : "split ring");
		return;
	}
	if (waits > 1 || (waits && !w->waits) || (!waits && w->waits && !bounded))
		fz_fail("%s of %u: tx_line_waits moved by %llu; line wait %s, the window %u "
			"chains, %u in the open line", what, count, (unsigned long long)waits,
			d->line_wait ? "on" : "off", w->n, w->n - w->take);
	if (stopped ? took >= lim_hi : took < lim_lo || took > lim_hi)
		fz_fail("%s of %u: %llu chains taken; the window %u chains, line wait leaves "
			"%u, id out of range at %u, %s; expected %s%llu..%llu", what, count,
			(unsigned long long)took, w->n, w->n - w->take, w->bad_id,
			stopped ? "stopped by the pool or a stall" : "not stopped",
			stopped ? "fewer than " : "", (unsigned long long)lim_lo,
			(unsigned long long)lim_hi);
	if (vl_vq_last_avail(d->vq) != w->at[took])
		fz_fail("%s: %llu chains taken, the device position is 0x%04x, not 0x%04x", what,
			(unsigned long long)took, vl_vq_last_avail(d->vq), w->at[took]);
	/* What breaks the queue: the lie, found by the scan; else the bad id, when the walk got
	 * to it. A window the bound cut is scanned short of the lie, and the bad id is reached
	 * or not by where the bound fell. */
	const enum vl_drop why = vl_vq_broken_reason(d->vq);
	const enum vl_drop want = w->lie ? VL_DROP_CHAIN_INCOMPLETE
				  : w->bad_id < w->take && !stopped ? VL_DROP_ID_OUT_OF_RANGE
								     : VL_DROP_NONE;
	const bool cut = !whole && (why == VL_DROP_NONE || (why == VL_DROP_ID_OUT_OF_RANGE &&
							    took == w->bad_id && !stopped));

	if (why != want && !cut)
		fz_fail("%s: the queue is %s after taking %llu chains, expected %s", what,
			vl_vq_broken(d->vq) ? vl_drop_name(why) : "working",
			(unsigned long long)took, vl_drop_name(want));
}


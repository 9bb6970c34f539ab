/* SPDX-License-Identifier: MIT */
/* The host's side of the scenario's offloaded traffic: see scenario_offload.h. */
#include "scenario_offload.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_build.h"
#include "rng.h"
#include "vhostlab/vl_sw_offload.h"

/* The fallbacks' pools: buffers of an odd size, so their frames and copies are chained at
 * boundaries that fall anywhere in a header or a payload. */
#define OL_BUF 1000u
#define OL_BUFS(len) (((len) + OL_BUF - 1) / OL_BUF)
/* The model's frames of one GSO packet: its payload once, a copy of its headers per frame. */
#define MBUF (VL_PKT_MAX_LEN + LAB_GSO_FRAMES_MAX * LAB_FRAME_HDR_MAX)

__attribute__((format(printf, 2, 3))) static int ol_fail(struct sc_offload *o, const char *fmt,
							  ...)
{
	if (o->err[0] == '\0') {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(o->err, sizeof(o->err), fmt, ap);
		va_end(ap);
	}
	return -1;
}

int sc_ol_init(struct sc_offload *o, const struct lab_scenario_config *cfg, uint32_t max_len)
{
	const uint32_t frame = max_len > LAB_SEGMENT_MAX ? max_len : LAB_SEGMENT_MAX;

	memset(o, 0, sizeof(*o));
	o->seed = cfg->seed;
	lab_traffic_for(cfg->offload, true, cfg->seed, &o->rx_traffic);
	/* TX: one packet's segments or one copy at a time. RX: the frames waiting for room, a
	 * burst of copies or segments, and one GSO packet's segments on top. */
	o->tx_pool = vl_pool_create(LAB_GSO_FRAMES_MAX * OL_BUFS(LAB_SEGMENT_MAX) +
					    OL_BUFS(VL_PKT_MAX_LEN),
				    OL_BUF);
	o->fit_pool = vl_pool_create(cfg->burst * OL_BUFS(frame) +
					     LAB_GSO_FRAMES_MAX * OL_BUFS(LAB_SEGMENT_MAX),
				     OL_BUF);
	o->flat = malloc(VL_PKT_MAX_LEN);
	o->cmp = malloc(VL_PKT_MAX_LEN);
	o->mbuf = malloc(MBUF);
	o->fr = calloc(LAB_GSO_FRAMES_MAX, sizeof(*o->fr));
	o->out = calloc(LAB_GSO_FRAMES_MAX, sizeof(*o->out));
	return o->tx_pool && o->fit_pool && o->flat && o->cmp && o->mbuf && o->fr && o->out ? 0
												: -1;
}

int sc_ol_pools_whole(struct sc_offload *o)
{
	for (int i = 0; i < 2; i++) {
		struct vl_pool *p = i ? o->fit_pool : o->tx_pool;

		if (p && vl_pool_free_count(p) != vl_pool_capacity(p))
			return ol_fail(o, "pool hygiene: %u of %u buffers of the %s pool free at the "
				       "end", vl_pool_free_count(p), vl_pool_capacity(p),
				       i ? "RX fit" : "TX segment");
	}
	return 0;
}

void sc_ol_fini(struct sc_offload *o)
{
	if (o->tx_pool)
		vl_pool_destroy(o->tx_pool);
	if (o->fit_pool)
		vl_pool_destroy(o->fit_pool);
	free(o->flat);
	free(o->cmp);
	free(o->mbuf);
	free(o->fr);
	free(o->out);
	memset(o, 0, sizeof(*o));
}

static bool no_offloads(const struct vl_offload *ol)
{
	return ol->flags == 0 && ol->gso_type == 0 && ol->hdr_len == 0 && ol->gso_size == 0 &&
	       ol->csum_start == 0 && ol->csum_offset == 0;
}

/* First byte where a and b differ, or len. */
static uint32_t first_diff(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	uint32_t i = 0;

	if (memcmp(a, b, len) == 0)
		return len;
	while (a[i] == b[i])
		i++;
	return i;
}

/* Compare the core's frames o->out[0..n) with the model's (o->mbuf, o->fr[0..mn)). */
static int compare_frames(struct sc_offload *o, uint64_t key, uint32_t n, uint32_t mn)
{
	if (n != mn)
		return ol_fail(o, "TX GSO packet %" PRIu64 ": vl_sw_segment made %u frames, the "
			       "model %u", key, n, mn);
	for (uint32_t i = 0; i < n; i++) {
		const struct lab_mframe *f = &o->fr[i];
		const uint8_t *want = o->mbuf + f->off;

		if (o->out[i]->pkt_len != f->len)
			return ol_fail(o, "TX GSO packet %" PRIu64 ": frame %u of %u is %u bytes, "
				       "the model's %u", key, i, n, o->out[i]->pkt_len, f->len);
		if (!no_offloads(&o->out[i]->ol))
			return ol_fail(o, "TX GSO packet %" PRIu64 ": frame %u of %u still has "
				       "offloads (flags %u, gso_type %u)", key, i, n,
				       o->out[i]->ol.flags, o->out[i]->ol.gso_type);
		vl_pkt_read(o->out[i], 0, o->cmp, f->len);
		const uint32_t at = first_diff(o->cmp, want, f->len);

		if (at != f->len)
			return ol_fail(o, "TX GSO packet %" PRIu64 ": frame %u of %u (%u bytes): "
				       "byte %u is 0x%02x, the model's 0x%02x", key, i, n, f->len,
				       at, o->cmp[at], want[at]);
		/* The model's frames are what a receiving stack accepts. */
		if (lab_frame_csum_check(want, f->len) != 1)
			return ol_fail(o, "TX GSO packet %" PRIu64 ": the model's frame %u of %u "
				       "has wrong checksums", key, i, n);
	}
	return 0;
}

/* The frame the guest sent, flat: the packet's own bytes, which the guest's check has just
 * found equal to what it wrote (cheaper than rebuilding a 64 KiB frame once more). */
static void sent_bytes(struct sc_offload *o, const struct vl_pkt *pkt, const struct lab_expect *e)
{
	vl_pkt_read(pkt, 0, o->flat, e->pkt_len);
}

static int tx_segment(struct sc_offload *o, const struct vl_pkt *pkt, const struct lab_expect *e)
{
	uint16_t n = 0;
	uint32_t mn = 0;
	const enum vl_sw_result r = vl_sw_segment(pkt, o->tx_pool, o->out, LAB_GSO_FRAMES_MAX, &n);

	if (r != VL_SW_OK)
		return ol_fail(o, "TX GSO packet %" PRIu64 " (%u bytes, gso_type %u, gso_size %u): "
			       "vl_sw_segment refused it: %s", e->key, e->pkt_len, e->ol.gso_type,
			       e->ol.gso_size, vl_sw_result_name(r));
	sent_bytes(o, pkt, e);
	int rc = lab_model_segment(o->flat, e->pkt_len, &e->ol, o->mbuf, MBUF, o->fr,
				   LAB_GSO_FRAMES_MAX, &mn) == LAB_MSEG_OK
			 ? compare_frames(o, e->key, n, mn)
			 : ol_fail(o, "TX GSO packet %" PRIu64 ": the model cannot segment it",
				   e->key);

	vl_pkt_free_bulk(o->out, n);
	o->gso_tx_packets++;
	o->segments_checked += n;
	if (e->pkt_len > o->gso_tx_max)
		o->gso_tx_max = e->pkt_len;
	return rc;
}

/* A checksum left to the host: completed on the packet itself, or on a copy where the
 * packet is the guest's memory (which vl_sw_csum_complete must refuse) or is kept. */
static int tx_complete(struct sc_offload *o, struct vl_pkt *pkt, const struct lab_expect *e,
		       bool keep)
{
	const uint32_t len = pkt->pkt_len;
	struct vl_pkt *t = pkt;
	enum vl_sw_result r;

	sent_bytes(o, pkt, e); /* before anything is completed in place */
	if (pkt->release && (r = vl_sw_csum_complete(pkt)) != VL_SW_READ_ONLY)
		return ol_fail(o, "TX packet %" PRIu64 ": vl_sw_csum_complete on a zero-copy "
			       "packet gave %s, not read_only", e->key, vl_sw_result_name(r));
	if (pkt->release || keep) {
		t = vl_pkt_alloc_len(o->tx_pool, len);
		if (!t)
			return ol_fail(o, "TX packet %" PRIu64 ": no room to copy it", e->key);
		vl_pkt_read(pkt, 0, o->cmp, len);
		vl_pkt_write(t, 0, o->cmp, len);
		t->ol = pkt->ol;
	}
	r = vl_sw_csum_complete(t);

	struct vl_offload want_ol = e->ol;

	want_ol.flags &= (uint8_t)~VL_NET_HDR_F_NEEDS_CSUM;
	int rc = 0;

	if (r != VL_SW_OK)
		rc = ol_fail(o, "TX packet %" PRIu64 ": vl_sw_csum_complete refused it: %s", e->key,
			     vl_sw_result_name(r));
	else if (memcmp(&t->ol, &want_ol, sizeof(want_ol)) != 0)
		rc = ol_fail(o, "TX packet %" PRIu64 ": after vl_sw_csum_complete its flags are "
			     "%u, want %u, or another offload field changed", e->key, t->ol.flags,
			     want_ol.flags);
	else if (lab_model_csum_complete(o->flat, len, &e->ol) != LAB_MSEG_OK)
		rc = ol_fail(o, "TX packet %" PRIu64 ": the model cannot complete its checksum",
			     e->key);
	if (rc == 0) {
		vl_pkt_read(t, 0, o->cmp, len);
		const uint32_t at = first_diff(o->cmp, o->flat, len);

		if (at != len)
			rc = ol_fail(o, "TX packet %" PRIu64 " (%u bytes, csum_start %u, "
				     "csum_offset %u): completed, byte %u is 0x%02x, the model's "
				     "0x%02x", e->key, len, e->ol.csum_start, e->ol.csum_offset, at,
				     o->cmp[at], o->flat[at]);
	}
	if (rc == 0 && e->c.kind == LAB_CONTENT_FRAME) {
		if (lab_frame_csum_check(o->flat, len) != 1)
			rc = ol_fail(o, "TX packet %" PRIu64 ": completed, its checksums are wrong",
				     e->key);
		o->csum_verified += rc == 0;
	}
	if (t != pkt)
		vl_pkt_free(t);
	o->csum_completed++;
	return rc;
}

int sc_ol_tx(struct sc_offload *o, struct vl_pkt *pkt, const struct lab_expect *e, bool keep)
{
	if (e->ol.flags & VL_NET_HDR_F_NEEDS_CSUM)
		o->csum_tx_packets++;
	if (e->ol.gso_type != VL_NET_HDR_GSO_NONE)
		return tx_segment(o, pkt, e);
	if (e->ol.flags & VL_NET_HDR_F_NEEDS_CSUM)
		return tx_complete(o, pkt, e, keep);
	if (e->c.kind != LAB_CONTENT_FRAME)
		return 0;
	/* Sent complete: what a receiving stack checks. */
	sent_bytes(o, pkt, e);
	if (lab_frame_csum_check(o->flat, e->pkt_len) != 1)
		return ol_fail(o, "TX packet %" PRIu64 ": the guest's frame has wrong checksums",
			       e->key);
	o->csum_verified++;
	return 0;
}

/* A pattern packet's header: random flags and fields, passed through as they are (the
 * device reads nothing into them); NEEDS_CSUM's field inside the packet, as a sender's is.
 * One packet in four has no offloads, as most real traffic: its header is the one the
 * driver leaves in every other buffer (lab_drv_post_rx), which the device may keep. */
static void rx_pattern_offloads(const struct sc_offload *o, uint64_t key, uint32_t len,
				struct vl_offload *ol)
{
	struct lab_rng rng = lab_rng_make(o->seed, key);
	static const uint8_t flag_choices[] = {0, VL_NET_HDR_F_DATA_VALID,
					       VL_NET_HDR_F_NEEDS_CSUM};

	ol->flags = flag_choices[lab_rng_below(&rng, 3)];
	ol->gso_type = VL_NET_HDR_GSO_NONE;
	ol->hdr_len = (uint16_t)lab_rng_below(&rng, 128);
	ol->gso_size = (uint16_t)lab_rng_below(&rng, 1500);
	ol->csum_start = (uint16_t)lab_rng_below(&rng, len);
	ol->csum_offset = (uint16_t)lab_rng_below(&rng, 64);
	if ((ol->flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)ol->csum_start + ol->csum_offset + 2 > len) {
		ol->csum_offset = 0;
		if (len < 2)
			ol->flags = 0;
		else if (ol->csum_start + 2u > len)
			ol->csum_start = (uint16_t)(len - 2);
	}
	if ((key & 3) == 0 || !o->rx_traffic.csum)
		*ol = (struct vl_offload){0};
}

int sc_ol_rx(struct sc_offload *o, const struct vl_vq *rxq, struct vl_pool *pool, uint64_t key,
	     uint32_t size, bool gso_ok, struct vl_pkt **out, struct lab_content *c, uint32_t max)
{
	struct lab_content pc;
	uint16_t n = 0;

	lab_traffic_pick(&o->rx_traffic, key, size, gso_ok, &pc);
	struct vl_pkt *pkt = vl_pkt_alloc_len(pool, pc.len);

	if (!pkt)
		return ol_fail(o, "pool exhausted building RX packet %" PRIu64 " (%u bytes)", key,
			       pc.len);
	if (pc.kind == LAB_CONTENT_PATTERN)
		rx_pattern_offloads(o, key, pc.len, &pc.ol);
	lab_traffic_bytes(o->seed, key, &pc, o->flat);
	vl_pkt_write(pkt, 0, o->flat, pc.len);
	pkt->ol = pc.ol;

	const enum vl_sw_result r = vl_sw_fit(rxq, pkt, o->fit_pool, o->out,
					      (uint16_t)(max < LAB_GSO_FRAMES_MAX ? max
										  : LAB_GSO_FRAMES_MAX),
					      &n);

	if (r == VL_SW_NOT_NEEDED) {
		out[0] = pkt;
		c[0] = pc;
		return 1;
	}
	vl_pkt_free(pkt);
	if (r != VL_SW_OK)
		return ol_fail(o, "RX packet %" PRIu64 " (%u bytes, flags %u, gso_type %u, gso_size "
			       "%u): vl_sw_fit refused it: %s", key, pc.len, pc.ol.flags,
			       pc.ol.gso_type, pc.ol.gso_size, vl_sw_result_name(r));
	for (uint16_t i = 0; i < n; i++) {
		out[i] = o->out[i];
		c[i] = pc;
		c[i].fit = true;
		c[i].seg = i;
		c[i].nseg = n;
	}
	o->rx_fitted++;
	return n;
}

/* SPDX-License-Identifier: MIT */
/* Recording a scenario run as a trace: see scenario_record.h. */
#include "scenario_record.h"

#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "vhostlab/vhostlab.h"

static void op(struct sc_rec *s, const struct lab_trace_op *o)
{
	lab_rec_op(s->rec, o);
}

void sc_rec_before(struct sc_rec *s)
{
	lab_rec_sync(s->rec);
}

void sc_rec_after(struct sc_rec *s)
{
	lab_rec_absorb(s->rec);
}

void sc_rec_kicks(struct sc_rec *s, int q, bool on)
{
	op(s, &(struct lab_trace_op){.kind = LAB_T_KICKS, .queue = (uint32_t)q, .value = on});
}

uint64_t sc_rec_dequeue(struct sc_rec *s, uint32_t max, const uint64_t *fails, uint32_t nfails)
{
	if (nfails)
		op(s, &(struct lab_trace_op){.kind = LAB_T_FAULT, .value = LAB_TRACE_FAULT_POOL,
					      .given = LAB_TA_FAIL_AT, .nitems = nfails,
					      .nums = (uint64_t *)fails});
	op(s, &(struct lab_trace_op){.kind = LAB_T_DEQUEUE, .queue = SC_TX, .count = max,
				      .given = LAB_TA_HOLD});
	if (nfails)
		op(s, &(struct lab_trace_op){.kind = LAB_T_FAULT, .given = LAB_TA_OFF});
	return s->dequeued;
}

void sc_rec_expect_packet(struct sc_rec *s, uint64_t num, const struct lab_expect *e)
{
	uint8_t *buf = malloc(e->pkt_len ? e->pkt_len : 1);
	struct lab_trace_op o = {.kind = LAB_T_EXPECT_PACKET, .queue = SC_TX, .index = num,
				 .len = e->pkt_len};

	if (!buf)
		return;
	lab_traffic_bytes(s->seed, e->key, &e->c, buf);
	o.pat.kind = LAB_PAT_FNV1A;
	o.pat.value = lab_trace_fnv1a(LAB_FNV1A_INIT, buf, e->pkt_len);
	o.ol = (struct lab_trace_ol){
		.given = LAB_OL_FLAGS | LAB_OL_GSO_TYPE | LAB_OL_HDR_LEN | LAB_OL_GSO_SIZE |
			 LAB_OL_CSUM_START | LAB_OL_CSUM_OFFSET,
		.flags = e->ol.flags, .gso_type = e->ol.gso_type, .hdr_len = e->ol.hdr_len,
		.gso_size = e->ol.gso_size, .csum_start = e->ol.csum_start,
		.csum_offset = e->ol.csum_offset,
	};
	op(s, &o);
	free(buf);
}

void sc_rec_free(struct sc_rec *s, uint64_t num)
{
	op(s, &(struct lab_trace_op){.kind = LAB_T_FREE, .queue = SC_TX, .nitems = 1,
				      .nums = &num});
}

void sc_rec_complete(struct sc_rec *s)
{
	op(s, &(struct lab_trace_op){.kind = LAB_T_COMPLETE, .queue = SC_TX});
}

/* The lab's payload for `key` (lab_fill_pattern) as a trace pattern: the splitmix64 stream
 * from the generator's state after lab_rng_make. */
static struct lab_trace_pat payload_pattern(uint64_t seed, uint64_t key)
{
	struct lab_rng r = lab_rng_make(seed, key);

	return (struct lab_trace_pat){.kind = LAB_PAT_STREAM, .value = r.s};
}

void sc_rec_enqueue(struct sc_rec *s, struct vl_pkt *const *pkts, const uint64_t *keys,
		    uint32_t n)
{
	struct lab_trace_pkt *tp = calloc(n ? n : 1, sizeof(*tp));
	uint8_t *bytes = NULL;
	uint64_t total = 0;

	for (uint32_t i = 0; i < n; i++)
		total += pkts[i]->pkt_len;
	bytes = malloc(total ? total : 1);
	if (!tp || !bytes)
		goto out;
	for (uint32_t i = 0, off = 0; i < n; i++) {
		const struct vl_pkt *p = pkts[i];

		vl_pkt_read(p, 0, bytes + off, p->pkt_len);
		tp[i].len = p->pkt_len;
		tp[i].data = payload_pattern(s->seed, keys[i]);
		/* The packet is what the generator made (it always is); else its bytes. */
		if (!lab_trace_pat_match(&tp[i].data, bytes + off, p->pkt_len))
			tp[i].data = (struct lab_trace_pat){.kind = LAB_PAT_HEX, .bytes = bytes + off,
							    .nbytes = p->pkt_len};
		tp[i].ol = (struct lab_trace_ol){
			.given = LAB_OL_FLAGS | LAB_OL_GSO_TYPE | LAB_OL_HDR_LEN | LAB_OL_GSO_SIZE |
				 LAB_OL_CSUM_START | LAB_OL_CSUM_OFFSET,
			.flags = p->ol.flags, .gso_type = p->ol.gso_type, .hdr_len = p->ol.hdr_len,
			.gso_size = p->ol.gso_size, .csum_start = p->ol.csum_start,
			.csum_offset = p->ol.csum_offset,
		};
		off += p->pkt_len;
	}
	op(s, &(struct lab_trace_op){.kind = LAB_T_ENQUEUE, .queue = SC_RX, .nitems = n,
				      .pkts = tp});
out:
	free(tp);
	free(bytes);
}

void sc_rec_expect_delivered(struct sc_rec *s, uint32_t i)
{
	op(s, &(struct lab_trace_op){.kind = LAB_T_EXPECT_STATUS, .queue = SC_RX, .index = i,
				      .value = LAB_TRACE_DELIVERED});
}

void sc_rec_expect_call(struct sc_rec *s, int q)
{
	op(s, &(struct lab_trace_op){.kind = LAB_T_EXPECT_CALL, .queue = (uint32_t)q, .value = 1});
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* The packet as the guest must find it: the header its offloads make (num_buffers = buffers
 * taken with mergeable buffers, 1 in a 12-byte header without), then its bytes -- what the
 * host generated for that key, or the model's frame of it where the host made it fit; one
 * `expect mem` per guest range. */
void sc_rec_rx_landing(void *ctx, const struct lab_rx_landing *l)
{
	struct sc_rec *s = ctx;
	uint32_t total = s->hdr_len + l->want_len;
	uint8_t *want = malloc(total);

	if (!want)
		return;
	memset(want, 0, s->hdr_len);
	want[0] = l->want_ol.flags;
	want[1] = l->want_ol.gso_type;
	put16(want + 2, l->want_ol.hdr_len);
	put16(want + 4, l->want_ol.gso_size);
	put16(want + 6, l->want_ol.csum_start);
	put16(want + 8, l->want_ol.csum_offset);
	if (s->hdr_len == 12)
		put16(want + 10, s->mergeable ? l->nbufs : 1);
	memcpy(want + s->hdr_len, l->want, l->want_len);
	for (uint32_t i = 0, off = 0; i < l->nranges && off < total; i++) {
		uint32_t n = l->ranges[i].len < total - off ? l->ranges[i].len : total - off;
		struct lab_trace_op o = {.kind = LAB_T_EXPECT_MEM, .addr = l->ranges[i].gpa,
					 .len = n};

		o.pat.kind = LAB_PAT_FNV1A;
		o.pat.value = lab_trace_fnv1a(LAB_FNV1A_INIT, want + off, n);
		op(s, &o);
		off += n;
	}
	free(want);
}

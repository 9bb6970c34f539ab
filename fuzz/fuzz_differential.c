/* SPDX-License-Identifier: MIT */
/* fuzz_differential: one deterministic guest, six core variants, the core's two TX ceilings
 * and the reference model, in lockstep.
 *
 * The input describes rounds of well-formed but oddly shaped traffic (TX chains: header alone,
 * shared with data or over three descriptors, 1..8 data descriptors, zero-length descriptors,
 * indirect tables with shuffled entries, misaligned and scattered buffers across region
 * boundaries, valid offloads; RX buffers of 1..4 descriptors, header split, indirect; host
 * packets of any size with offloads; call arming). Each round is replayed on nine
 * independent copies of the guest, driven by the same driver code: eight with their own core
 * queues, and one served by the reference model (sim/model.h), an independent, spec-driven
 * implementation of the device datapath that shares no code with the core:
 *
 *   participant  TX burst        batch threshold  zero-copy  allocation
 *     0          dequeue               0             off      available
 *     1          dequeue             256             off      available
 *     2          dequeue           65536             off      burst
 *     3          dequeue               0             on       available
 *     4          dequeue             256             on       available
 *     5          dequeue           65536             on       burst
 *     6          discard             256              -        -
 *     7          discard (touch)     256              -        -
 *     8 (model)  -                     -              -        -
 *
 * The two ceilings (vl_net_discard, vl_net_discard_touch: `vhostlab serve --mode null/touch`)
 * return TX chains unread; their counts of good chains stand for the packets in every
 * comparison below, their byte totals and touch's sum of first bytes must equal those of the
 * packets the guest posted, round by round, and they belong to the zero-copy-off group. They
 * receive as participant 1 does.
 *
 * Zero-copy packets are freed right after the burst and vl_vq_complete returns their chains
 * (no holding). Batching, the allocation policy and zero-copy are internal techniques, and
 * the model has none of them:
 *  - every participant against variant 0 (log "all"): the packets the host gets (count,
 *    length, offloads, every byte), the enqueue results (count handled, every status), the
 *    RX used entries in order (id, length), the sorted set of TX buffers returned, every byte
 *    of guest RAM (RX payloads and headers written, TX buffers untouched) and the counters
 *    of packets, bytes, chains, no-room stops and drops by reason;
 *  - among the eight cores only: the RX ring area (the model writes no event-suppression
 *    fields); among the six that dequeue, the other datapath counters: bursts, empty
 *    bursts, size classes (log "core");
 *  - within each zero-copy setting (0-2, 6 and 7; 3-5): additionally the TX used entries in
 *    order, the whole ring area, the dirty log, every notification decision and the
 *    zero-copy, used-entry and call counters (log "grp").
 * Variant 0 is also checked against the guest's own record: each packet equals what was
 * posted, RX packets reassemble to what the host sent with untouched bytes past each used
 * length, no drops, no allocation failures. Any difference aborts with the round, the
 * participants ("variant N", "the discard ceiling", ...) and the first differing item. Input
 * format: struct fz_df_header and struct fz_df_round (sim/input/sc_df_format.h), fuzz/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_format.h"
#include "fuzz_target.h"
#include "rng.h"
#include "sc_df_format.h"
#include "model.h"
#include "vring.h"

#define DF_VARIANTS 6u         /* core variants that dequeue: participants 0..5 */
#define DF_DISCARD 6u          /* the core's discard ceiling on TX (vl_net_discard) */
#define DF_TOUCH 7u            /* the touch ceiling (vl_net_discard_touch) */
#define DF_CORES 8u            /* participants with core queues: 0..7 */
#define DF_MODEL DF_CORES      /* the reference model's participant index */
#define DF_PARTS (DF_CORES + 1u)
#define DF_RAM (256u * 1024u)
#define DF_RING_AREA (32u * 1024u)
#define DF_GRANULE 64u
#define DF_MAX_DESCS 16u       /* descriptors of one chain */
#define DF_TX_MAX_LEN 8192u
#define DF_RX_MAX_CAP 9000u
#define DF_RX_MAX_PKT 12000u
#define DF_POOL_BUFS 1280u     /* 256 heads + 4 segments each: never short */
#define DF_POOL_BUF 2048u
#define DF_HOST_BUFS 256u
#define DF_POISON 0xA5u

struct df_seg {
	uint64_t gpa;
	uint32_t len;
};

/* What the guest remembers about a chain it posted, by id. */
struct df_chain {
	bool busy;
	uint32_t serial;
	uint32_t nallocs, nsegs;
	struct df_seg allocs[DF_MAX_DESCS + 1];
	struct df_seg segs[DF_MAX_DESCS];  /* buffer bytes in chain order */
	uint32_t cap;                      /* RX capacity */
	uint32_t pkt_len;                  /* TX payload */
	uint8_t hdr[12];                   /* TX header as written */
};

/* A TX packet the guest expects next. */
struct df_expect {
	uint32_t serial, pkt_len;
	uint8_t hdr[12];
};

/* Observations compared between variants: records appended to a byte log, each named so a
 * difference can be reported by what it is. */
#define DF_LOG_NAMES 1024u
struct df_log {
	struct fz_out b;
	uint32_t nrec;
	size_t off[DF_LOG_NAMES];
	const char *name[DF_LOG_NAMES];
};

/* What a core participant does with the guest's TX chains. */
enum df_tx {
	DF_TX_DEQUEUE,  /* vl_net_dequeue: packets, compared byte for byte */
	DF_TX_DISCARD,  /* vl_net_discard: chains back unread, a count and a byte total */
	DF_TX_TOUCH,    /* vl_net_discard_touch: as discard, plus each packet's first byte */
};

struct df_var {
	unsigned idx;
	uint32_t batch;
	bool zc;
	bool burst_policy;
	enum df_tx tx_mode;
	uint64_t disc_good, disc_bytes;    /* a ceiling's own totals, for the TX counters */
	struct lab_gmem *g;
	struct vl_mem *mem;
	struct lab_ring tx, rx;
	bool tx_ready, rx_ready;
	struct vl_vq *txq, *rxq;
	bool model;                        /* served by the reference model, not the core */
	struct lab_model *mtx, *mrx;
	struct lab_model_pkt mpkts[256];
	struct vl_pool *pool;
	uint8_t *ram, *ring;
	uint64_t ram_gpa, ring_gpa, rx_ring_off;
	uint8_t granule[DF_RAM / DF_GRANULE];
	struct df_chain txc[256], rxc[256];
	struct df_expect exp[256];
	uint32_t exp_head, exp_count;
	uint32_t tx_serial, rx_serial;
	uint8_t *log;
	uint64_t log_bytes;
	struct vl_pkt *pkts[256];
	uint16_t npkts;
	uint8_t status[FZ_DF_MAX_PKTS];
	uint16_t handled;
	struct df_log all, core, grp;
};

struct df {
	enum vl_layout L;
	uint64_t features;
	uint32_t size, hdr_len;
	bool mergeable, indirect, in_order;
	uint16_t start;
	uint32_t zc_min;
	unsigned round;
	struct vl_pool *hpool;
	struct vl_pkt *hpkts[FZ_DF_MAX_PKTS];
	struct df_var v[DF_PARTS];
};

static struct df df_state;
static uint8_t df_buf[2][VL_PKT_MAX_LEN + 16];

static const uint32_t df_batch[DF_CORES] = {0, 256, 65536, 0, 256, 65536, 256, 256};
static uint8_t df_poison[DF_RX_MAX_CAP + 64]; /* DF_POISON bytes, to compare with */

/* A participant as failure messages name it. */
static const char *vname(unsigned k)
{
	static const char *const names[DF_PARTS] = {"variant 0", "variant 1", "variant 2",
						    "variant 3", "variant 4", "variant 5",
						    "the discard ceiling", "the touch ceiling",
						    "the reference model"};

	return k < DF_PARTS ? names[k] : "?";
}

/* ---- logs ---------------------------------------------------------------------------- */

static void log_rec(struct df_log *l, const char *name)
{
	if (l->nrec < DF_LOG_NAMES) {
		l->off[l->nrec] = l->b.len;
		l->name[l->nrec] = name;
	}
	l->nrec++;
}

static void log32(struct df_log *l, const char *name, uint32_t v)
{
	log_rec(l, name);
	fz_put32(&l->b, v);
}

static void log_reset(struct df_log *l)
{
	l->b.len = 0;
	l->nrec = 0;
}

static const char *log_name_at(const struct df_log *l, size_t off)
{
	const char *name = "?";
	uint32_t n = l->nrec < DF_LOG_NAMES ? l->nrec : DF_LOG_NAMES;

	for (uint32_t i = 0; i < n && l->off[i] <= off; i++)
		name = l->name[i];
	return name;
}

static void log_compare(struct df *d, const struct df_log *a, const struct df_log *b,
			unsigned va, unsigned vb, const char *what)
{
	size_t n = a->b.len < b->b.len ? a->b.len : b->b.len, i = 0;

	if (a->b.len == b->b.len && (n == 0 || !memcmp(a->b.buf, b->b.buf, n)))
		return;
	while (i < n && a->b.buf[i] == b->b.buf[i])
		i++;
	fz_fail("round %u: %s observations differ between %s and %s at byte %zu "
		"(record \"%s\" vs \"%s\"; %zu vs %zu bytes logged)", d->round, what, vname(va),
		vname(vb), i,
		log_name_at(a, i), log_name_at(b, i), a->b.len, b->b.len);
}

/* ---- guest RAM allocator (deterministic, per variant) -------------------------------- */

static uint64_t df_alloc(struct df_var *v, uint32_t len)
{
	uint32_t need = (len + DF_GRANULE - 1) / DF_GRANULE, run = 0;

	if (need == 0)
		need = 1;
	for (uint32_t i = 0; i < DF_RAM / DF_GRANULE; i++) {
		run = v->granule[i] ? 0 : run + 1;
		if (run == need) {
			uint32_t first = i + 1 - need;

			memset(v->granule + first, 1, need);
			return v->ram_gpa + (uint64_t)first * DF_GRANULE;
		}
	}
	return 0;
}

static void df_free(struct df_var *v, uint64_t gpa, uint32_t len)
{
	uint32_t first = (uint32_t)((gpa - v->ram_gpa) / DF_GRANULE);
	uint32_t need = (len + DF_GRANULE - 1) / DF_GRANULE;

	memset(v->granule + first, 0, need ? need : 1);
}

static uint8_t *gptr(struct df_var *v, uint64_t gpa)
{
	return v->ram + (gpa - v->ram_gpa);
}

static void release_chain(struct df_var *v, struct df_chain *c)
{
	for (uint32_t i = 0; i < c->nallocs; i++)
		df_free(v, c->allocs[i].gpa, c->allocs[i].len);
	c->nallocs = 0;
	c->busy = false;
}

/* Room for n bytes at a misalignment of pad; the data starts at the returned gpa. */
static uint64_t place(struct df_var *v, struct df_chain *c, uint32_t n, uint32_t pad)
{
	uint64_t a = df_alloc(v, n + pad);

	if (!a)
		return 0;
	c->allocs[c->nallocs++] = (struct df_seg){a, n + pad};
	return a + pad;
}

/* ---- posting ------------------------------------------------------------------------- */

/* Cut a buffer of `total` bytes into descriptor lengths: `lead` lengths first (header
 * pieces), then `ndata` near-equal data pieces, a zero-length one after the first if asked. */
static uint32_t cut(uint32_t total, const uint32_t *lead, uint32_t nlead, uint32_t ndata,
		    bool zero, uint32_t *lens)
{
	uint32_t n = 0, used = 0;

	for (uint32_t i = 0; i < nlead && used + lead[i] < total; i++) {
		lens[n++] = lead[i];
		used += lead[i];
	}
	uint32_t rest = total - used;

	if (ndata > rest)
		ndata = rest ? rest : 1;
	for (uint32_t i = 0; i < ndata; i++) {
		lens[n++] = i + 1 < ndata ? rest / ndata : rest - rest / ndata * (ndata - 1);
		if (zero && i == 0)
			lens[n++] = 0;
	}
	return n;
}

/* Lay out `total` bytes of src (or poison) into the chain's segments and post them, through
 * an indirect table if asked. Returns the id or -1 (no descriptors or no RAM). */
static int post_chain(struct df *d, struct df_var *v, struct lab_ring *r, struct df_chain *c,
		      const uint8_t *src, uint32_t total, const uint32_t *lens, uint32_t n,
		      bool scatter, bool indirect, uint32_t pad, uint16_t dir)
{
	struct lab_pdesc e[DF_MAX_DESCS];
	uint64_t base = 0;

	c->nallocs = c->nsegs = 0;
	if (!scatter && (base = place(v, c, total ? total : 1, pad)) == 0)
		return -1;
	for (uint32_t i = 0, off = 0; i < n; i++) {
		uint64_t gpa = base + off;

		if (scatter && (gpa = place(v, c, lens[i] ? lens[i] : 1, (pad + i * 7) % 64)) == 0)
			goto fail;
		if (src)
			memcpy(gptr(v, gpa), src + off, lens[i]);
		else
			memset(gptr(v, gpa), DF_POISON, lens[i]);
		e[i] = (struct lab_pdesc){gpa, lens[i], dir};
		c->segs[c->nsegs++] = (struct df_seg){gpa, lens[i]};
		off += lens[i];
	}
	int id;

	if (indirect) {
		/* Split tables: entry 0 first, the others shuffled and linked by next. Packed
		 * tables: consecutive entries. */
		uint8_t slot[DF_MAX_DESCS];
		uint64_t t = place(v, c, 16 * n, 0);
		uint64_t rng = (uint64_t)c->serial * 977u + n;

		if (!t)
			goto fail;
		for (uint32_t i = 0; i < n; i++)
			slot[i] = (uint8_t)i;
		for (uint32_t i = n; i > 2; i--) {
			uint32_t j = 1 + (uint32_t)(lab_rng_step(&rng) % (i - 1));
			uint8_t tmp = slot[i - 1];

			slot[i - 1] = slot[j];
			slot[j] = tmp;
		}
		for (uint32_t i = 0; i < n; i++) {
			bool more = i + 1 < n;

			if (d->L == VL_LAYOUT_PACKED) {
				struct vl_packed_desc p = {e[i].addr, e[i].len, 0, dir};

				memcpy(gptr(v, t) + 16 * i, &p, 16);
			} else {
				struct vl_split_desc s = {
					e[i].addr, e[i].len,
					(uint16_t)(dir | (more ? VL_DESC_F_NEXT : 0)),
					more ? slot[i + 1] : 0,
				};

				memcpy(gptr(v, t) + 16 * slot[i], &s, 16);
			}
		}
		struct lab_pdesc ind = {t, 16 * n, VL_DESC_F_INDIRECT};

		id = lab_ring_post(r, &ind, 1);
	} else {
		id = lab_ring_post(r, e, n);
	}
	if (id < 0)
		goto fail;
	c->busy = true;
	return id;
fail:
	release_chain(v, c);
	return -1;
}

static void put16(uint8_t *p, uint16_t x)
{
	memcpy(p, &x, 2);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t x;

	memcpy(&x, p, 2);
	return x;
}

/* A valid virtio-net header for a TX packet of len bytes (offload fields inside it). */
static void tx_header(uint8_t *h, uint32_t len, uint8_t ol)
{
	memset(h, 0, 12);
	switch (ol % 6) {
	case 1:
		if (len >= 2) {
			h[0] = VL_NET_HDR_F_NEEDS_CSUM;
			put16(h + 6, (uint16_t)((len - 2) / 3));
			put16(h + 8, (uint16_t)((len - 2) / 3));
		}
		break;
	case 2:
		h[0] = VL_NET_HDR_F_DATA_VALID;
		break;
	case 3:
		h[1] = VL_NET_HDR_GSO_TCPV4;
		put16(h + 2, (uint16_t)(len < 54 ? len : 54));
		put16(h + 4, 1448);
		break;
	case 4:
		h[1] = VL_NET_HDR_GSO_UDP_L4 | VL_NET_HDR_GSO_ECN;
		put16(h + 2, (uint16_t)(len / 2));
		put16(h + 4, 1);
		break;
	case 5:
		/* Fields without meaning for GSO_NONE pass through unchecked. */
		put16(h + 2, (uint16_t)(ol * 37u));
		put16(h + 4, (uint16_t)(ol * 101u));
		break;
	default:
		break;
	}
}

static void post_tx(struct df *d, struct df_var *v, const struct fz_df_tx *s)
{
	uint32_t len = 1u + s->len % DF_TX_MAX_LEN, total = d->hdr_len + len;
	uint32_t lead[3], nlead = 0, lens[DF_MAX_DESCS];
	uint32_t mode = (s->shape >> 4) & 3u;
	struct df_chain c = {0};

	c.serial = v->tx_serial++;
	c.pkt_len = len;
	tx_header(c.hdr, len, s->ol);
	if (mode == 1 || mode == 3) {
		lead[nlead++] = d->hdr_len;
	} else if (mode == 2) {
		lead[nlead++] = 3;
		lead[nlead++] = 4;
		lead[nlead++] = d->hdr_len - 7;
	}
	uint32_t n = cut(total, lead, nlead, 1u + (s->shape & 7u), (s->shape & FZ_DF_TX_ZERO_LEN) != 0,
			 lens);
	uint8_t *src = df_buf[0];

	memcpy(src, c.hdr, d->hdr_len);
	fz_fill(src + d->hdr_len, len, c.serial);
	/* A table of more entries than the queue size is malformed (the core drops it). */
	bool ind = d->indirect && (s->shape & FZ_DF_TX_INDIRECT) && n <= d->size;
	int id = post_chain(d, v, &v->tx, &c, src, total, lens, n, (s->shape & FZ_DF_TX_SCATTER) != 0,
			    ind, s->place % 64u, 0);

	log32(&v->all, "tx post", id < 0 ? 0xffffffffu : c.serial);
	log32(&v->grp, "tx post id", (uint32_t)id);
	if (id < 0)
		return;
	if (v->txc[id].busy)
		fz_fail("%s: the driver reused busy TX id %d", vname(v->idx), id);
	v->txc[id] = c;
	struct df_expect *x = &v->exp[(v->exp_head + v->exp_count++) % 256];

	x->serial = c.serial;
	x->pkt_len = len;
	memcpy(x->hdr, c.hdr, sizeof(x->hdr));
}

static void post_rx(struct df *d, struct df_var *v, const struct fz_df_rx *s)
{
	uint32_t cap = d->hdr_len + 1u + s->cap % DF_RX_MAX_CAP;
	uint32_t lead[1] = {2}, lens[DF_MAX_DESCS];
	struct df_chain c = {0};

	c.serial = v->rx_serial++;
	c.cap = cap;
	uint32_t n = cut(cap, lead, (s->shape & FZ_DF_RX_HDR_SPLIT) ? 1 : 0, 1u + (s->shape & 3u),
			 (s->shape & FZ_DF_RX_ZERO_LEN) != 0, lens);
	bool ind = d->indirect && (s->shape & FZ_DF_RX_INDIRECT) && n <= d->size;
	int id = post_chain(d, v, &v->rx, &c, NULL, cap, lens, n, (s->shape & FZ_DF_RX_SCATTER) != 0,
			    ind, s->place % 64u, VL_DESC_F_WRITE);

	log32(&v->all, "rx post", id < 0 ? 0xffffffffu : (uint32_t)id);
	if (id < 0)
		return;
	if (v->rxc[id].busy)
		fz_fail("%s: the driver reused busy RX id %d", vname(v->idx), id);
	v->rxc[id] = c;
}

/* ---- checks against the guest's own record ------------------------------------------- */

/* The next expected TX packet; with `record`, the packet must equal it byte for byte (the
 * other participants are compared with variant 0 instead). */
static const struct df_expect *next_expected(struct df *d, struct df_var *v, unsigned i)
{
	if (v->exp_count == 0)
		fz_fail("round %u, %s: packet %u dequeued, nothing was posted", d->round,
			vname(v->idx), i);
	const struct df_expect *x = &v->exp[v->exp_head];

	v->exp_head = (v->exp_head + 1) % 256;
	v->exp_count--;
	return x;
}

static void check_tx_packet(struct df *d, struct df_var *v, const struct vl_pkt *p, unsigned i,
			    bool record)
{
	const struct df_expect *x = next_expected(d, v, i);
	const uint8_t *h = x->hdr;

	if (!record)
		return;
	if (p->pkt_len != x->pkt_len)
		fz_fail("round %u, %s: TX packet %u (serial %u) has %u bytes, posted %u",
			d->round, vname(v->idx), i, x->serial, p->pkt_len, x->pkt_len);
	if (p->ol.flags != h[0] || p->ol.gso_type != h[1] || p->ol.hdr_len != get16(h + 2) ||
	    p->ol.gso_size != get16(h + 4) || p->ol.csum_start != get16(h + 6) ||
	    p->ol.csum_offset != get16(h + 8))
		fz_fail("round %u, %s: TX packet %u (serial %u): offloads differ from the "
			"header posted", d->round, vname(v->idx), i, x->serial);
	vl_pkt_read(p, 0, df_buf[0], p->pkt_len);
	fz_fill(df_buf[1], p->pkt_len, x->serial);
	for (uint32_t k = 0; memcmp(df_buf[0], df_buf[1], p->pkt_len) && k < p->pkt_len; k++)
		if (df_buf[0][k] != df_buf[1][k])
			fz_fail("round %u, %s: TX packet %u (serial %u) byte %u is 0x%02x, "
				"posted 0x%02x", d->round, vname(v->idx), i, x->serial, k,
				df_buf[0][k], df_buf[1][k]);
}

/* Read `len` bytes of chain c's buffer into dst; check the bytes after them are untouched. */
static void read_rx(struct df *d, struct df_var *v, const struct df_chain *c, uint32_t len,
		    uint8_t *dst)
{
	uint32_t got = 0;

	for (uint32_t i = 0; i < c->nsegs; i++) {
		const uint8_t *p = gptr(v, c->segs[i].gpa);
		uint32_t n = c->segs[i].len, take = got < len ? len - got : 0;

		if (take > n)
			take = n;
		memcpy(dst + got, p, take);
		for (uint32_t k = take; k < n && memcmp(p + take, df_poison, n - take); k++)
			if (p[k] != DF_POISON)
				fz_fail("round %u, %s: RX buffer (serial %u) byte %u written "
					"past the used length %u", d->round, vname(v->idx),
					c->serial, got + k, len);
		got += n;
	}
}

/* The first n bytes of chain c's buffer (n <= its capacity). */
static void peek_rx(struct df_var *v, const struct df_chain *c, uint32_t n, uint8_t *dst)
{
	for (uint32_t i = 0, got = 0; i < c->nsegs && got < n; i++) {
		uint32_t take = c->segs[i].len < n - got ? c->segs[i].len : n - got;

		memcpy(dst + got, gptr(v, c->segs[i].gpa), take);
		got += take;
	}
}

/* ---- one round, phase by phase ------------------------------------------------------- */

/* The guest's wish for used-buffer notifications (the decisions are compared, exactly). */
static void arm(struct lab_ring *r, uint8_t mode, uint8_t later)
{
	static const enum lab_call_mode modes[4] = {LAB_CALLS_NEXT, LAB_CALLS_OFF,
						    LAB_CALLS_LATER, LAB_CALLS_NEXT};
	uint32_t n = lab_ring_in_flight(r);

	lab_ring_arm_calls(r, modes[mode & 3], n ? later % n : 0);
}

static void phase_tx_post(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	for (uint32_t i = 0; i < rd->ntx; i++)
		post_tx(d, v, &rd->tx[i]);
	lab_ring_publish(&v->tx);
	arm(&v->tx, rd->notify, (uint8_t)(rd->notify >> 4));
}

/* A ceiling's TX burst. Its count of good chains joins the dequeue counts compared with
 * variant 0's; its byte total, and touch's sum of first bytes, must be exactly those of the
 * packets the guest posted in that order (every chain here is well formed, none is dropped). */
static void phase_discard(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	const bool touch = v->tx_mode == DF_TX_TOUCH;
	uint64_t bytes = 0, firsts = 0, want_bytes = 0, want_firsts = 0;
	uint16_t n = touch ? vl_net_discard_touch(v->txq, rd->count, &bytes, &firsts)
			   : vl_net_discard(v->txq, rd->count, &bytes);

	v->npkts = 0;
	log32(&v->all, "dequeue count", n);
	log32(&v->grp, "dequeue needs_call", vl_vq_needs_call(v->txq));
	for (uint16_t i = 0; i < n; i++) {
		const struct df_expect *x = next_expected(d, v, i);
		uint8_t first;

		want_bytes += x->pkt_len;
		fz_fill(&first, 1, x->serial); /* the posted payload's first byte (pkt_len >= 1) */
		want_firsts += first;
	}
	if (bytes != want_bytes)
		fz_fail("round %u, %s: %u chains of %llu bytes, the guest posted %llu", d->round,
			vname(v->idx), n, (unsigned long long)bytes, (unsigned long long)want_bytes);
	if (touch && firsts != want_firsts)
		fz_fail("round %u, %s: the first bytes of %u packets add up to %llu, posted %llu",
			d->round, vname(v->idx), n, (unsigned long long)firsts,
			(unsigned long long)want_firsts);
	v->disc_good += n;
	v->disc_bytes += bytes;
}

static void phase_dequeue(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	if (v->model) {
		/* Its packets are compared with variant 0's (compare_packets). */
		v->npkts = (uint16_t)lab_model_dequeue(v->mtx, rd->count, v->mpkts);
		log32(&v->all, "dequeue count", v->npkts);
		for (uint16_t i = 0; i < v->npkts; i++)
			check_tx_packet(d, v, NULL, i, false);
		return;
	}
	if (v->tx_mode != DF_TX_DEQUEUE) {
		phase_discard(d, v, rd);
		return;
	}
	v->npkts = vl_net_dequeue(v->txq, v->pool, v->pkts, rd->count);
	log32(&v->all, "dequeue count", v->npkts);
	log32(&v->grp, "dequeue needs_call", vl_vq_needs_call(v->txq));
	for (uint16_t i = 0; i < v->npkts; i++)
		check_tx_packet(d, v, v->pkts[i], i, v->idx == 0);
}

/* Participant v's dequeued packet i: length, offloads, and its bytes copied to dst. */
static uint32_t packet_of(const struct df_var *v, uint16_t i, struct vl_offload *ol,
			  uint8_t *dst)
{
	if (v->model) {
		const struct lab_model_pkt *p = &v->mpkts[i];

		*ol = p->ol;
		memcpy(dst, p->data, p->len);
		return p->len;
	}
	*ol = v->pkts[i]->ol;
	return vl_pkt_read(v->pkts[i], 0, dst, v->pkts[i]->pkt_len);
}

/* Every participant's packets equal variant 0's, byte for byte. */
static void compare_packets(struct df *d)
{
	const struct df_var *r = &d->v[0];

	for (unsigned k = 1; k < DF_PARTS; k++) {
		const struct df_var *v = &d->v[k];

		if (v->tx_mode != DF_TX_DEQUEUE)
			continue; /* no packets: its count is in the logs, its bytes checked */
		if (v->npkts != r->npkts)
			fz_fail("round %u: %s dequeued %u packets, variant 0 %u", d->round, vname(k),
				v->npkts, r->npkts);
		for (uint16_t i = 0; i < v->npkts; i++) {
			struct vl_offload oa, ob;
			uint32_t la = packet_of(r, i, &oa, df_buf[0]);
			uint32_t lb = packet_of(v, i, &ob, df_buf[1]);

			if (la != lb || memcmp(&oa, &ob, sizeof(oa)))
				fz_fail("round %u: packet %u: %s has %u bytes, variant 0 %u (or "
					"offloads differ)", d->round, i, vname(k), lb, la);
			if (memcmp(df_buf[0], df_buf[1], la))
				fz_fail("round %u: packet %u bytes differ between variant 0 and %s",
					d->round, i, vname(k));
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void phase_tx_return(struct df *d, struct df_var *v)
{
	uint32_t serials[256], n = 0, id, len;
	int rc;

	/* No holding: every packet goes back at once, and with it its chain. (The model
	 * returned its chains when it dequeued them.) */
	if (!v->model) {
		vl_pkt_free_bulk(v->pkts, v->npkts);
		vl_vq_complete(v->txq);
		log32(&v->grp, "complete needs_call", vl_vq_needs_call(v->txq));
		if (vl_vq_zero_copy_held(v->txq))
			fz_fail("round %u, %s: %u chains held after every packet was freed",
				d->round, vname(v->idx), vl_vq_zero_copy_held(v->txq));
	}
	v->npkts = 0;
	while ((rc = lab_ring_pop_used(&v->tx, &id, &len)) == 1) {
		if (id >= d->size || !v->txc[id].busy)
			fz_fail("round %u, %s: TX used id %u not in flight", d->round,
				vname(v->idx), id);
		if (len != 0)
			fz_fail("round %u, %s: TX used id %u with length %u", d->round,
				vname(v->idx), id, len);
		log32(&v->grp, "tx used id", id);
		if (n < 256)
			serials[n++] = v->txc[id].serial;
		release_chain(v, &v->txc[id]);
	}
	if (rc < 0)
		fz_fail("round %u, %s: the TX used ring names a buffer not in flight",
			d->round, vname(v->idx));
	qsort(serials, n, sizeof(serials[0]), cmp_u32);
	log32(&v->all, "tx returned", n);
	for (uint32_t i = 0; i < n; i++)
		log32(&v->all, "tx returned serial", serials[i]);
}

static void phase_rx_post(struct df *d, struct df_var *v, const struct fz_df_round *rd)
{
	for (uint32_t i = 0; i < rd->nrx; i++)
		post_rx(d, v, &rd->rx[i]);
	lab_ring_publish(&v->rx);
	arm(&v->rx, (uint8_t)(rd->notify >> 2), (uint8_t)(rd->notify >> 4));
}

static void phase_enqueue(struct df *d, struct df_var *v, uint32_t npkts)
{
	memset(v->status, 0xEE, sizeof(v->status));
	if (v->model)
		v->handled = (uint16_t)lab_model_enqueue(v->mrx, d->hpkts, npkts, v->status);
	else
		v->handled = vl_net_enqueue(v->rxq, d->hpkts, (uint16_t)npkts, v->status);
	log32(&v->all, "enqueue handled", v->handled);
	for (uint16_t i = 0; i < v->handled; i++)
		log32(&v->all, "enqueue status", v->status[i]);
	if (!v->model)
		log32(&v->grp, "enqueue needs_call", vl_vq_needs_call(v->rxq));
}

/* Harvest RX used entries: each delivered packet, in order, takes num_buffers entries (one
 * without mergeable buffers); with `record` it must also reassemble from its buffers to what
 * the host sent (header fields, num_buffers, payload; untouched bytes past each used
 * length). The other variants are compared with variant 0 through guest RAM. */
static void phase_rx_harvest(struct df *d, struct df_var *v, bool record)
{
	uint32_t id, len;
	int rc;

	for (uint16_t i = 0; i < v->handled; i++) {
		if (v->status[i] != VL_RX_DELIVERED)
			continue;
		const struct vl_pkt *p = d->hpkts[i];
		uint32_t want = d->hdr_len + p->pkt_len, got = 0, nbufs = 0, expect_bufs = 1;
		uint8_t *asm_buf = df_buf[0];

		do {
			rc = lab_ring_pop_used(&v->rx, &id, &len);
			if (rc != 1)
				fz_fail("round %u, %s: RX packet %u delivered, its used entry "
					"%u is missing", d->round, vname(v->idx), i, nbufs);
			if (id >= d->size || !v->rxc[id].busy)
				fz_fail("round %u, %s: RX used id %u not in flight", d->round,
					vname(v->idx), id);
			struct df_chain *c = &v->rxc[id];

			if (len > c->cap || len > want - got || len == 0)
				fz_fail("round %u, %s: RX used length %u (buffer %u, %u bytes "
					"left of the packet)", d->round, vname(v->idx), len, c->cap,
					want - got);
			log32(&v->all, "rx used id", id);
			log32(&v->all, "rx used len", len);
			if (record)
				read_rx(d, v, c, len, asm_buf + got);
			else if (nbufs == 0)
				peek_rx(v, c, len < 12 ? len : 12, asm_buf); /* num_buffers */
			got += len;
			nbufs++;
			if (nbufs == 1 && d->hdr_len == 12 && d->mergeable) {
				if (got < 12)
					fz_fail("round %u, %s: first RX buffer holds %u bytes",
						d->round, vname(v->idx), got);
				expect_bufs = get16(asm_buf + 10);
			}
			release_chain(v, c);
		} while (nbufs < expect_bufs);
		if (got != want)
			fz_fail("round %u, %s: RX packet %u: %u bytes in %u buffers, sent %u",
				d->round, vname(v->idx), i, got, nbufs, want);
		if (!record)
			continue; /* compared with variant 0 through guest RAM */
		const uint8_t *h = asm_buf;

		if (h[0] != p->ol.flags || h[1] != p->ol.gso_type || get16(h + 2) != p->ol.hdr_len ||
		    get16(h + 4) != p->ol.gso_size || get16(h + 6) != p->ol.csum_start ||
		    get16(h + 8) != p->ol.csum_offset)
			fz_fail("round %u, %s: RX packet %u header fields differ from the "
				"packet's offloads", d->round, vname(v->idx), i);
		if (d->hdr_len == 12 && get16(h + 10) != (d->mergeable ? nbufs : 1u))
			fz_fail("round %u, %s: RX packet %u num_buffers %u, used %u buffers",
				d->round, vname(v->idx), i, get16(h + 10), nbufs);
		vl_pkt_read(p, 0, df_buf[1], p->pkt_len);
		if (memcmp(asm_buf + d->hdr_len, df_buf[1], p->pkt_len))
			fz_fail("round %u, %s: RX packet %u payload differs from what the "
				"host sent", d->round, vname(v->idx), i);
	}
	rc = lab_ring_pop_used(&v->rx, &id, &len);
	if (rc != 0)
		fz_fail("round %u, %s: an RX used entry (id %u len %u) no delivered packet "
			"explains", d->round, vname(v->idx), id, len);
}

/* The counters every participant keeps, the model included: guest-visible outcomes. */
static void log_counters(struct df_log *l, uint64_t packets, uint64_t bytes, uint64_t chains,
			 uint64_t rx_no_room, const uint64_t *drops)
{
	log32(l, "stats packets", (uint32_t)packets);
	log32(l, "stats bytes", (uint32_t)bytes);
	log32(l, "stats chains", (uint32_t)chains);
	log32(l, "stats rx_no_room", (uint32_t)rx_no_room);
	for (unsigned k = 0; k < VL_DROP__COUNT; k++)
		log32(l, "stats drops", (uint32_t)drops[k]);
}

static void log_stats(struct df_var *v, const struct vl_vq *q)
{
	const struct vl_vq_stats *s = vl_vq_stats(q);
	/* A ceiling counts no packets in the queue; what it returned stands in for them. */
	const bool ceiling = q == v->txq && v->tx_mode != DF_TX_DEQUEUE;

	log_counters(&v->all, ceiling ? v->disc_good : s->packets,
		     ceiling ? v->disc_bytes : s->bytes, s->chains, s->rx_no_room, s->drops);
	/* How the core got there: the same for every core variant, not a model matter. */
	log32(&v->core, "stats bursts", (uint32_t)s->bursts);
	log32(&v->core, "stats empty bursts", (uint32_t)s->empty_bursts);
	for (unsigned k = 0; k < VL_SIZE_BINS; k++)
		log32(&v->core, "stats size bins", (uint32_t)s->size_bins[k]);
	log32(&v->grp, "stats used entries", (uint32_t)s->used_entries);
	log32(&v->grp, "stats calls needed", (uint32_t)s->calls_needed);
	log32(&v->grp, "stats calls suppressed", (uint32_t)s->calls_suppressed);
	log32(&v->grp, "stats zc packets", (uint32_t)s->zc_packets);
	log32(&v->grp, "stats zc returned", (uint32_t)s->zc_returned);
	log32(&v->grp, "stats zc stalls", (uint32_t)s->zc_stalls);
	for (unsigned k = 0; k < VL_ZC_FALLBACK__COUNT; k++)
		log32(&v->grp, "stats zc fallbacks", (uint32_t)s->zc_fallbacks[k]);
	log32(&v->grp, "stats rx bufs wasted", (uint32_t)s->rx_bufs_wasted);
	log32(&v->grp, "stats log out of range", (uint32_t)s->log_out_of_range);
}

static void log_model_stats(struct df_var *v, const struct lab_model *m)
{
	const struct lab_model_stats *s = lab_model_stats(m);

	log_counters(&v->all, s->packets, s->bytes, s->chains, s->rx_no_room, s->drops);
}

/* Well-formed traffic: a packet no buffer could hold is the one legitimate drop, and no
 * queue breaks. */
static void check_queue(struct df *d, unsigned k, bool rx, const uint64_t *drops, bool broken)
{
	for (unsigned r = 1; r < VL_DROP__COUNT; r++)
		if (drops[r] && r != VL_DROP_RX_TOO_BIG)
			fz_fail("round %u, %s: %s queue dropped %llu well-formed chains/packets as %s",
				d->round, vname(k), rx ? "RX" : "TX", (unsigned long long)drops[r],
				vl_drop_name((enum vl_drop)r));
	if (broken)
		fz_fail("round %u, %s: %s queue broken", d->round, vname(k), rx ? "RX" : "TX");
}

static void check_stats(struct df *d, unsigned k)
{
	struct df_var *v = &d->v[k];

	if (v->model) {
		log_model_stats(v, v->mtx);
		log_model_stats(v, v->mrx);
		check_queue(d, k, false, lab_model_stats(v->mtx)->drops,
			    lab_model_broken(v->mtx) != VL_DROP_NONE);
		check_queue(d, k, true, lab_model_stats(v->mrx)->drops,
			    lab_model_broken(v->mrx) != VL_DROP_NONE);
		return;
	}
	log_stats(v, v->txq);
	log_stats(v, v->rxq);
	for (unsigned s = 0; s < 2; s++) {
		const struct vl_vq *q = s ? v->rxq : v->txq;
		const struct vl_vq_stats *st = vl_vq_stats(q);

		check_queue(d, k, s != 0, st->drops, vl_vq_broken(q));
		if (st->alloc_failures)
			fz_fail("round %u, %s: %llu allocation failures", d->round, vname(k),
				(unsigned long long)st->alloc_failures);
	}
}

/* memcmp first: a byte loop would cost a coverage callback per byte in fuzzing builds. */
static void first_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *at)
{
	size_t i = 0;

	if (!memcmp(a, b, n)) {
		*at = n;
		return;
	}
	while (i < n && a[i] == b[i])
		i++;
	*at = i;
}

/* After a round: the logs, guest RAM, the rings and the dirty log, as the table at the top
 * says. */
static void compare_round(struct df *d)
{
	uint64_t rx_ring_len = lab_ring_area_bytes(d->L, d->size);
	size_t at;

	for (unsigned k = 0; k < DF_PARTS; k++)
		check_stats(d, k);
	for (unsigned k = 1; k < DF_PARTS; k++) {
		struct df_var *v = &d->v[k];
		unsigned lead = v->zc ? 3 : 0;

		log_compare(d, &d->v[0].all, &v->all, 0, k, "guest-visible");
		first_diff(d->v[0].ram, v->ram, DF_RAM, &at);
		if (at != DF_RAM)
			fz_fail("round %u: guest RAM differs between variant 0 and %s at gpa 0x%llx "
				"(0x%02x vs 0x%02x)", d->round, vname(k),
				(unsigned long long)(v->ram_gpa + at), d->v[0].ram[at], v->ram[at]);
		if (v->model)
			continue; /* the rest is how the core does it, not what the guest sees */
		/* The ceilings fill no size classes: how they work is their own. */
		if (v->tx_mode == DF_TX_DEQUEUE)
			log_compare(d, &d->v[0].core, &v->core, 0, k, "core");
		if (k != lead)
			log_compare(d, &d->v[lead].grp, &v->grp, lead, k, "exact");
		first_diff(d->v[0].ring + v->rx_ring_off, v->ring + v->rx_ring_off, rx_ring_len,
			   &at);
		if (at != rx_ring_len)
			fz_fail("round %u: the RX ring differs between variant 0 and %u at offset "
				"0x%zx", d->round, k, at);
		if (k != lead) {
			first_diff(d->v[lead].ring, v->ring, DF_RING_AREA, &at);
			if (at != DF_RING_AREA)
				fz_fail("round %u: the ring area differs between variant %u and %u at "
					"offset 0x%zx", d->round, lead, k, at);
			if (v->log && memcmp(d->v[lead].log, v->log, v->log_bytes))
				fz_fail("round %u: the dirty log differs between variant %u and %u",
					d->round, lead, k);
		}
	}
	for (unsigned k = 0; k < DF_PARTS; k++) {
		log_reset(&d->v[k].all);
		log_reset(&d->v[k].core);
		log_reset(&d->v[k].grp);
	}
}

static void build_host_packets(struct df *d, const struct fz_df_round *rd)
{
	for (uint32_t i = 0; i < rd->npkts; i++) {
		uint32_t len = 1u + rd->pk[i].len % DF_RX_MAX_PKT;
		struct vl_pkt *p = vl_pkt_alloc_len(d->hpool, len);
		uint8_t ol = rd->pk[i].ol;

		if (!p)
			fz_fail("host pool exhausted");
		fz_fill(df_buf[0], len, 0x80000000u + d->round * 64u + i);
		vl_pkt_write(p, 0, df_buf[0], len);
		p->ol.flags = (uint8_t)(ol & 7u);
		p->ol.gso_type = (uint8_t)(ol >> 3 & 1u ? VL_NET_HDR_GSO_TCPV6 : 0);
		p->ol.hdr_len = (uint16_t)(ol * 3u);
		p->ol.gso_size = (uint16_t)(ol * 11u);
		p->ol.csum_start = (uint16_t)(len / 2);
		p->ol.csum_offset = (uint16_t)(ol >> 4);
		d->hpkts[i] = p;
	}
}

static void run_round(struct df *d, const struct fz_df_round *rd)
{
	for (unsigned k = 0; k < DF_PARTS; k++)
		phase_tx_post(d, &d->v[k], rd);
	for (unsigned k = 0; k < DF_PARTS; k++)
		phase_dequeue(d, &d->v[k], rd);
	compare_packets(d);
	for (unsigned k = 0; k < DF_PARTS; k++)
		phase_tx_return(d, &d->v[k]);
	build_host_packets(d, rd);
	for (unsigned k = 0; k < DF_PARTS; k++) {
		phase_rx_post(d, &d->v[k], rd);
		phase_enqueue(d, &d->v[k], rd->npkts);
		phase_rx_harvest(d, &d->v[k], k == 0);
	}
	vl_pkt_free_bulk(d->hpkts, rd->npkts);
	compare_round(d);
}

/* ---- setup --------------------------------------------------------------------------- */

/* The reference model's two queues over participant v's guest, configured as a device
 * queue is (addresses and resume position from the driver's rings). */
static void model_setup(struct df *d, struct df_var *v)
{
	struct lab_model_config mc = {.gmem = v->g};

	vl_vq_config_init(&mc.vq, d->L, d->size);
	mc.vq.features = d->features;
	lab_ring_device_config(&v->tx, &mc.vq);
	v->mtx = lab_model_create(&mc);
	lab_ring_device_config(&v->rx, &mc.vq);
	v->mrx = lab_model_create(&mc);
	if (!v->mtx || !v->mrx)
		fz_fail("lab_model_create (size %u) failed", d->size);
}

static void var_setup(struct df *d, struct df_var *v, unsigned k, uint64_t gran, bool dlog)
{
	static struct vl_pool *pools[DF_VARIANTS];
	struct vl_vq_config qc;
	int err = 0;
	uint32_t n;

	v->idx = k;
	v->model = k == DF_MODEL;
	/* Guest memory slots 1..9 (fz_gmem_get keeps FZ_GMEM_SLOTS shapes: 9 per granularity
	 * here, plus the datapath targets' slot 0). */
	v->g = fz_gmem_get(1 + k, DF_RING_AREA, DF_RAM, gran);
	v->ram_gpa = lab_gmem_ram_gpa(v->g);
	v->ring_gpa = lab_gmem_ring_gpa(v->g);
	v->ram = lab_gmem_guest_ptr(v->g, v->ram_gpa, DF_RAM);
	v->ring = lab_gmem_guest_ptr(v->g, v->ring_gpa, DF_RING_AREA);
	v->rx_ring_off = lab_ring_area_bytes(d->L, d->size);
	if (lab_ring_init(&v->tx, d->L, v->g, v->ring_gpa, d->size, d->start, d->in_order,
			  (d->features & VL_FEATURE(VL_F_RING_EVENT_IDX)) != 0) != 0)
		fz_fail("lab_ring_init TX");
	v->tx_ready = true;
	if (lab_ring_init(&v->rx, d->L, v->g, v->ring_gpa + v->rx_ring_off, d->size, d->start,
			  d->in_order, (d->features & VL_FEATURE(VL_F_RING_EVENT_IDX)) != 0) != 0)
		fz_fail("lab_ring_init RX");
	v->rx_ready = true;
	if (v->model) {
		model_setup(d, v);
		return;
	}
	v->batch = df_batch[k];
	v->zc = k >= 3 && k < DF_VARIANTS;
	v->burst_policy = k == 2 || k == 5;
	v->tx_mode = k == DF_DISCARD ? DF_TX_DISCARD : k == DF_TOUCH ? DF_TX_TOUCH : DF_TX_DEQUEUE;
	const struct vl_mem_region *regs = lab_gmem_regions(v->g, &n);

	v->mem = vl_mem_create(regs, n, &err);
	if (!v->mem)
		fz_fail("vl_mem_create: %s", vl_strerror(err));
	vl_vq_config_init(&qc, d->L, d->size);
	qc.features = d->features;
	qc.batch_threshold = v->batch;
	lab_ring_device_config(&v->tx, &qc);
	v->txq = vl_vq_create(v->mem, &qc, &err);
	lab_ring_device_config(&v->rx, &qc);
	v->rxq = v->txq ? vl_vq_create(v->mem, &qc, &err) : NULL;
	if (!v->txq || !v->rxq)
		fz_fail("vl_vq_create (size %u): %s", d->size, vl_strerror(err));
	if (v->zc)
		vl_vq_set_zero_copy(v->txq, true, d->zc_min, d->size);
	if (v->burst_policy)
		vl_vq_set_alloc_policy(v->txq, VL_ALLOC_BURST);
	/* Line wait (vl_vq_set_tx_line_wait) stays off here, on every participant. It is not an
	 * internal technique like the three above: it decides which burst takes a chain, so
	 * the per-round dequeue counts, packets, used entries and ring bytes compared with the
	 * reference model -- a spec-driven device that takes every chain it finds -- would
	 * differ by design on a packed ring whose round ends inside a line of descriptors.
	 * Turning it on everywhere would need the model to copy the core's rule, and so stop
	 * being an independent witness. fuzz_packed_dequeue checks it instead, exactly: what
	 * each burst takes against the harness's reading of the ring and the rule. */
	/* Pools are kept across inputs (each is full again at the end of one). The ceilings
	 * make no packets and have none. */
	if (v->tx_mode == DF_TX_DEQUEUE) {
		if (!pools[k] && !(pools[k] = vl_pool_create(DF_POOL_BUFS, DF_POOL_BUF)))
			fz_fail("vl_pool_create");
		v->pool = pools[k];
	}
	if (dlog) {
		v->log_bytes = ((lab_gmem_end_gpa(v->g) >> 12) + 7) / 8;
		v->log = calloc(v->log_bytes, 1);
		if (!v->log)
			fz_fail("out of memory");
		vl_vq_set_dirty_log(v->txq, v->log, v->log_bytes);
		vl_vq_set_dirty_log(v->rxq, v->log, v->log_bytes);
	}
}

static void var_teardown(struct df_var *v)
{
	if (!v->model)
		vl_pkt_free_bulk(v->pkts, v->npkts);
	v->npkts = 0;
	if (v->txq)
		vl_vq_complete(v->txq);
	if (v->pool && vl_pool_free_count(v->pool) != vl_pool_capacity(v->pool))
		fz_fail("%s: pool accounting: %u of %u buffers free at the end", vname(v->idx),
			vl_pool_free_count(v->pool), vl_pool_capacity(v->pool));
	vl_vq_destroy(v->txq);
	vl_vq_destroy(v->rxq);
	if (v->tx_ready)
		lab_ring_fini(&v->tx);
	if (v->rx_ready)
		lab_ring_fini(&v->rx);
	lab_model_destroy(v->mtx);
	lab_model_destroy(v->mrx);
	vl_mem_destroy(v->mem);
	free(v->log);
	fz_out_free(&v->all.b);
	fz_out_free(&v->core.b);
	fz_out_free(&v->grp.b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = fz_in_make(data, size);
	struct df *d = &df_state;
	static struct fz_df_round rd;

	fz_set_target("fuzz_differential");
	if (size < 5)
		return 0;
	if (df_poison[0] != DF_POISON)
		memset(df_poison, DF_POISON, sizeof(df_poison));
	struct vl_pool *hpool = d->hpool;

	memset(d, 0, sizeof(*d));
	d->hpool = hpool;
	struct fz_df_header h;

	fz_dec_df_header(&in, &h);
	uint8_t f = h.flags;

	d->L = (f & FZ_DF_F_PACKED) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
	d->size = d->L == VL_LAYOUT_SPLIT ? 2u << (h.qsize % 8) : 2u + h.qsize % 255u;
	d->start = h.start;
	if (d->L == VL_LAYOUT_PACKED)
		d->start = (uint16_t)(d->start % d->size);
	d->zc_min = fz_zc_min_len(h.zc);
	d->features = VL_FEATURE(VL_F_NET_CSUM);
	if (f & FZ_DF_F_MERGEABLE)
		d->features |= VL_FEATURE(VL_F_NET_MRG_RXBUF);
	if (f & FZ_DF_F_INDIRECT)
		d->features |= VL_FEATURE(VL_F_RING_INDIRECT_DESC);
	if (f & FZ_DF_F_IN_ORDER)
		d->features |= VL_FEATURE(VL_F_IN_ORDER);
	if (f & FZ_DF_F_EVENT_IDX)
		d->features |= VL_FEATURE(VL_F_RING_EVENT_IDX);
	if ((f & FZ_DF_F_VERSION_1) || d->L == VL_LAYOUT_PACKED)
		d->features |= VL_FEATURE(VL_F_VERSION_1);
	if (d->L == VL_LAYOUT_PACKED)
		d->features |= VL_FEATURE(VL_F_RING_PACKED);
	d->hdr_len = vl_net_hdr_len(d->features);
	d->mergeable = (f & FZ_DF_F_MERGEABLE) != 0;
	d->indirect = (f & FZ_DF_F_INDIRECT) != 0;
	d->in_order = (f & FZ_DF_F_IN_ORDER) != 0;
	if (!d->hpool && !(d->hpool = vl_pool_create(DF_HOST_BUFS, DF_POOL_BUF)))
		fz_fail("vl_pool_create");
	for (unsigned k = 0; k < DF_PARTS; k++)
		var_setup(d, &d->v[k], k, (f & FZ_DF_F_GRAN_4K) ? LAB_PAGE_SIZE : 0,
			  (f & FZ_DF_F_DIRTY_LOG) != 0);
	for (d->round = 0; d->round < FZ_DF_MAX_ROUNDS && fz_more(&in); d->round++) {
		fz_dec_df_round(&in, &rd);
		run_round(d, &rd);
	}
	if (fz_verbose()) {
		const struct vl_vq_stats *t = vl_vq_stats(d->v[0].txq), *r = vl_vq_stats(d->v[0].rxq);
		const struct vl_vq_stats *z = vl_vq_stats(d->v[3].txq);

		fprintf(stderr, "fuzz_differential: %s size %u: %u rounds, TX %llu packets, RX %llu "
			"packets (%llu too big), %llu zero-copied\n",
			d->L == VL_LAYOUT_PACKED ? "packed" : "split", d->size, d->round,
			(unsigned long long)t->packets, (unsigned long long)r->packets,
			(unsigned long long)r->drops[VL_DROP_RX_TOO_BIG],
			(unsigned long long)z->zc_packets);
	}
	for (unsigned k = 0; k < DF_PARTS; k++)
		var_teardown(&d->v[k]);
	if (vl_pool_free_count(d->hpool) != vl_pool_capacity(d->hpool))
		fz_fail("host pool: %u of %u buffers free", vl_pool_free_count(d->hpool),
			vl_pool_capacity(d->hpool));
	return 0;
}

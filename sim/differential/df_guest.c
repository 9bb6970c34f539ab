/* SPDX-License-Identifier: MIT */
/* The guest of a differential run: its RAM allocator, posting TX and RX chains, and the
 * checks of what the host got against the guest's own record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "df_internal.h"
#include "frame_build.h"

/* ---- guest RAM allocator (deterministic, per variant) -------------------------------- */

/* First fit over the granule map. Every granule below granule_lo is taken (the search
 * starts there) and memchr jumps over taken runs: the same first fit as a scan from 0, which
 * the addresses of every input depend on, at a fraction of the cost (this search was a fifth
 * of fuzz_differential's time). */
static uint64_t df_alloc(struct df_var *v, uint32_t len)
{
	const uint32_t total = DF_RAM / DF_GRANULE;
	uint32_t need = (len + DF_GRANULE - 1) / DF_GRANULE;
	uint32_t i = v->granule_lo;

	if (need == 0)
		need = 1;
	while (i < total && need <= total - i) {
		const uint8_t *z = memchr(v->granule + i, 0, total - i);

		if (!z)
			return 0;
		i = (uint32_t)(z - v->granule);
		uint32_t run = 0;

		while (run < need && i + run < total && !v->granule[i + run])
			run++;
		if (run == need) {
			memset(v->granule + i, 1, need);
			if ((i + need) * DF_GRANULE > v->ram_hi)
				v->ram_hi = (i + need) * DF_GRANULE;
			if (i == v->granule_lo)
				while (v->granule_lo < total && v->granule[v->granule_lo])
					v->granule_lo++;
			return v->ram_gpa + (uint64_t)i * DF_GRANULE;
		}
		i += run + 1; /* granule i + run is taken (or the end) */
	}
	return 0;
}

static void df_free(struct df_var *v, uint64_t gpa, uint32_t len)
{
	uint32_t first = (uint32_t)((gpa - v->ram_gpa) / DF_GRANULE);
	uint32_t need = (len + DF_GRANULE - 1) / DF_GRANULE;

	memset(v->granule + first, 0, need ? need : 1);
	if (first < v->granule_lo)
		v->granule_lo = first;
}

static uint8_t *gptr(struct df_var *v, uint64_t gpa)
{
	return v->ram + (gpa - v->ram_gpa);
}

void df_release_chain(struct df_var *v, struct df_chain *c)
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
	df_release_chain(v, c);
	return -1;
}

static void put16(uint8_t *p, uint16_t x)
{
	memcpy(p, &x, 2);
}

uint16_t df_get16(const uint8_t *p)
{
	uint16_t x;

	memcpy(&x, p, 2);
	return x;
}

/* A valid virtio-net header for a TX packet of len bytes (offload fields inside it). GSO
 * goes only on packets long enough for the headers its type needs (df_tx_bytes writes
 * them), with the L4 checksum asked for, as the frame rules want. */
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
		if (len < 54)
			break;
		h[0] = VL_NET_HDR_F_NEEDS_CSUM;
		h[1] = VL_NET_HDR_GSO_TCPV4;
		put16(h + 2, 54);
		put16(h + 4, 1448);
		put16(h + 6, 34);
		put16(h + 8, 16);
		break;
	case 4:
		if (len < 62)
			break;
		h[0] = VL_NET_HDR_F_NEEDS_CSUM;
		h[1] = VL_NET_HDR_GSO_UDP_L4 | VL_NET_HDR_GSO_ECN;
		put16(h + 2, (uint16_t)(len / 2));
		put16(h + 4, 1);
		put16(h + 6, 54);
		put16(h + 8, 6);
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

void df_tx_bytes(uint8_t *dst, uint32_t len, uint32_t serial, const uint8_t *h)
{
	fz_fill(dst, len, serial);
	if (h[1] == VL_NET_HDR_GSO_NONE)
		return;
	/* A GSO packet starts with the frame headers its type names (TCP over IPv4, or UDP
	 * over IPv6); the bytes after them stay the serial's fill. */
	const bool udp = (h[1] & 0x7f) == VL_NET_HDR_GSO_UDP_L4;
	const struct lab_frame_spec sp = {.ipv6 = udp, .udp = udp, .seed = serial,
					  .tcp_flags = 0x10, .payload = len - (udp ? 62 : 54)};
	struct lab_frame_layout lay;

	lab_frame_layout_of(&sp, &lay);
	uint8_t *tmp = df_buf[2];

	if (lab_frame_build(&sp, true, tmp, DF_TX_MAX_LEN, &lay) == len)
		memcpy(dst, tmp, lay.hdr_len);
}

void df_post_tx(struct df *d, struct df_var *v, const struct fz_df_tx *s)
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
	df_tx_bytes(src + d->hdr_len, len, c.serial, c.hdr);
	/* A table of more entries than the queue size is malformed (the core drops it). */
	bool ind = d->indirect && (s->shape & FZ_DF_TX_INDIRECT) && n <= d->size;
	int id = post_chain(d, v, &v->tx, &c, src, total, lens, n, (s->shape & FZ_DF_TX_SCATTER) != 0,
			    ind, s->place % 64u, 0);

	df_log32(&v->all, "tx post", id < 0 ? 0xffffffffu : c.serial);
	df_log32(&v->grp, "tx post id", (uint32_t)id);
	if (id < 0)
		return;
	if (v->txc[id].busy)
		fz_fail("%s: the driver reused busy TX id %d", df_vname(v->idx), id);
	v->txc[id] = c;
	struct df_expect *x = &v->exp[(v->exp_head + v->exp_count++) % 256];

	x->serial = c.serial;
	x->pkt_len = len;
	memcpy(x->hdr, c.hdr, sizeof(x->hdr));
}

void df_post_rx(struct df *d, struct df_var *v, const struct fz_df_rx *s)
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

	df_log32(&v->all, "rx post", id < 0 ? 0xffffffffu : (uint32_t)id);
	if (id < 0)
		return;
	if (v->rxc[id].busy)
		fz_fail("%s: the driver reused busy RX id %d", df_vname(v->idx), id);
	v->rxc[id] = c;
}

/* ---- checks against the guest's own record ------------------------------------------- */

/* The next expected TX packet; with `record`, the packet must equal it byte for byte (the
 * other participants are compared with variant 0 instead). */
const struct df_expect *df_next_expected(struct df *d, struct df_var *v, unsigned i)
{
	if (v->exp_count == 0)
		fz_fail("round %u, %s: packet %u dequeued, nothing was posted", d->round,
			df_vname(v->idx), i);
	const struct df_expect *x = &v->exp[v->exp_head];

	v->exp_head = (v->exp_head + 1) % 256;
	v->exp_count--;
	return x;
}

void df_check_tx_packet(struct df *d, struct df_var *v, const struct vl_pkt *p, unsigned i,
			    bool record)
{
	const struct df_expect *x = df_next_expected(d, v, i);
	const uint8_t *h = x->hdr;

	if (!record)
		return;
	if (p->pkt_len != x->pkt_len)
		fz_fail("round %u, %s: TX packet %u (serial %u) has %u bytes, posted %u",
			d->round, df_vname(v->idx), i, x->serial, p->pkt_len, x->pkt_len);
	if (p->ol.flags != (h[0] & VL_NET_HDR_F_NEEDS_CSUM) || p->ol.gso_type != h[1] || p->ol.hdr_len != df_get16(h + 2) ||
	    p->ol.gso_size != df_get16(h + 4) || p->ol.csum_start != df_get16(h + 6) ||
	    p->ol.csum_offset != df_get16(h + 8))
		fz_fail("round %u, %s: TX packet %u (serial %u): offloads differ from the "
			"header posted", d->round, df_vname(v->idx), i, x->serial);
	vl_pkt_read(p, 0, df_buf[0], p->pkt_len);
	df_tx_bytes(df_buf[1], p->pkt_len, x->serial, h);
	for (uint32_t k = 0; memcmp(df_buf[0], df_buf[1], p->pkt_len) && k < p->pkt_len; k++)
		if (df_buf[0][k] != df_buf[1][k])
			fz_fail("round %u, %s: TX packet %u (serial %u) byte %u is 0x%02x, "
				"posted 0x%02x", d->round, df_vname(v->idx), i, x->serial, k,
				df_buf[0][k], df_buf[1][k]);
}

/* Read `len` bytes of chain c's buffer into dst; check the bytes after them are untouched. */
void df_read_rx(struct df *d, struct df_var *v, const struct df_chain *c, uint32_t len,
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
					"past the used length %u", d->round, df_vname(v->idx),
					c->serial, got + k, len);
		got += n;
	}
}

/* The first n bytes of chain c's buffer (n <= its capacity). */
void df_peek_rx(struct df_var *v, const struct df_chain *c, uint32_t n, uint8_t *dst)
{
	for (uint32_t i = 0, got = 0; i < c->nsegs && got < n; i++) {
		uint32_t take = c->segs[i].len < n - got ? c->segs[i].len : n - got;

		memcpy(dst + got, gptr(v, c->segs[i].gpa), take);
		got += take;
	}
}


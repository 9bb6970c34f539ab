/* SPDX-License-Identifier: MIT */
/* The scenario and differential input formats (sc_df_format.h). */
#include "sc_df_format.h"

#include <string.h>

/* ---- scenario and differential formats ----------------------------------------------- */

void fz_enc_scenario(struct fz_out *o, const struct fz_sc_input *s)
{
	uint32_t n = 1u + s->nsizes % FZ_SC_MAX_SIZES;

	fz_put8(o, s->flags);
	fz_put8(o, s->mode);
	fz_put8(o, s->qsize);
	fz_put8(o, s->burst);
	fz_put8(o, s->packets);
	fz_put8(o, s->containment);
	fz_put64(o, s->seed);
	fz_put8(o, s->nsizes);
	for (uint32_t i = 0; i < n; i++)
		fz_put16(o, s->sizes[i]);
}

void fz_dec_scenario(struct fz_in *in, struct fz_sc_input *s)
{
	memset(s, 0, sizeof(*s));
	s->flags = fz_u8(in);
	s->mode = fz_u8(in);
	s->qsize = fz_u8(in);
	s->burst = fz_u8(in);
	s->packets = fz_u8(in);
	s->containment = fz_u8(in);
	s->seed = fz_u64(in);
	s->nsizes = fz_u8(in);
	for (uint32_t i = 0; i < 1u + s->nsizes % FZ_SC_MAX_SIZES; i++)
		s->sizes[i] = fz_u16(in);
}

void fz_enc_df_header(struct fz_out *o, const struct fz_df_header *h)
{
	fz_put8(o, h->flags);
	fz_put8(o, h->qsize);
	fz_put16(o, h->start);
	fz_put8(o, h->zc);
}

void fz_dec_df_header(struct fz_in *in, struct fz_df_header *h)
{
	h->flags = fz_u8(in);
	h->qsize = fz_u8(in);
	h->start = fz_u16(in);
	h->zc = fz_u8(in);
}

bool fz_df_is_long(const struct fz_df_header *h)
{
	return (h->zc & 0xf0u) == 0xf0u;
}

uint32_t fz_df_max_rounds(const struct fz_df_header *h)
{
	return fz_df_is_long(h) ? FZ_DF_MAX_ROUNDS : FZ_DF_SHORT_ROUNDS;
}

/* The three lists share one bound (FZ_DF_MAX_TX == _RX == _PKTS). */
uint32_t fz_df_max_list(const struct fz_df_header *h)
{
	return fz_df_is_long(h) ? FZ_DF_MAX_TX : FZ_DF_SHORT_LIST;
}

void fz_enc_df_round(struct fz_out *o, const struct fz_df_header *h,
		     const struct fz_df_round *r)
{
	const uint32_t m = fz_df_max_list(h) + 1;
	uint8_t ntx = (uint8_t)(r->ntx % m), nrx = (uint8_t)(r->nrx % m);
	uint8_t npkts = (uint8_t)(r->npkts % m);

	fz_put8(o, ntx);
	fz_put8(o, r->notify);
	for (uint8_t i = 0; i < ntx; i++) {
		fz_put16(o, r->tx[i].len);
		fz_put8(o, r->tx[i].shape);
		fz_put8(o, r->tx[i].place);
		fz_put8(o, r->tx[i].ol);
	}
	fz_put8(o, r->count);
	fz_put8(o, nrx);
	for (uint8_t i = 0; i < nrx; i++) {
		fz_put16(o, r->rx[i].cap);
		fz_put8(o, r->rx[i].shape);
		fz_put8(o, r->rx[i].place);
	}
	fz_put8(o, npkts);
	for (uint8_t i = 0; i < npkts; i++) {
		fz_put16(o, r->pk[i].len);
		fz_put8(o, r->pk[i].ol);
	}
}

void fz_dec_df_round(struct fz_in *in, const struct fz_df_header *h, struct fz_df_round *r)
{
	const uint32_t m = fz_df_max_list(h) + 1;

	r->ntx = (uint8_t)(fz_u8(in) % m);
	r->notify = fz_u8(in);
	for (uint8_t i = 0; i < r->ntx; i++) {
		r->tx[i].len = fz_u16(in);
		r->tx[i].shape = fz_u8(in);
		r->tx[i].place = fz_u8(in);
		r->tx[i].ol = fz_u8(in);
	}
	r->count = fz_u8(in);
	r->nrx = (uint8_t)(fz_u8(in) % m);
	for (uint8_t i = 0; i < r->nrx; i++) {
		r->rx[i].cap = fz_u16(in);
		r->rx[i].shape = fz_u8(in);
		r->rx[i].place = fz_u8(in);
	}
	r->npkts = (uint8_t)(fz_u8(in) % m);
	for (uint8_t i = 0; i < r->npkts; i++) {
		r->pk[i].len = fz_u16(in);
		r->pk[i].ol = fz_u8(in);
	}
}


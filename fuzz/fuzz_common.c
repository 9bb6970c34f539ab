/* SPDX-License-Identifier: MIT */
/* Shared pieces of the fuzz targets: input reader, seed writer, guest memory cache, the
 * encoders of the datapath input format and the hostile-guest datapath engine. */
#include "fuzz_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_sink.h"
#include "vl_lab_control.h"

/* ---- failing ------------------------------------------------------------------------- */

static const char *fz_target = "fuzz";

void fz_set_target(const char *name)
{
	fz_target = name;
}

bool fz_verbose(void)
{
	static int v = -1;

	if (v < 0)
		v = getenv("FZ_VERBOSE") != NULL;
	return v != 0;
}

void fz_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fuzz: %s: %s\n", fz_target, msg);
	fflush(stderr);
	/* A recorded run: the trace names the check that failed. */
	if (fz_sink)
		fz_sink->failed(fz_sink->ctx, msg);
	abort();
}

/* ---- reading inputs ------------------------------------------------------------------ */

uint8_t fz_u8(struct fz_in *in)
{
	return in->off < in->n ? in->p[in->off++] : 0;
}

uint16_t fz_u16(struct fz_in *in)
{
	uint16_t lo = fz_u8(in);

	return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

uint32_t fz_u32(struct fz_in *in)
{
	uint32_t lo = fz_u16(in);

	return lo | (uint32_t)fz_u16(in) << 16;
}

uint64_t fz_u64(struct fz_in *in)
{
	uint64_t lo = fz_u32(in);

	return lo | (uint64_t)fz_u32(in) << 32;
}

void fz_bytes(struct fz_in *in, void *dst, size_t len)
{
	uint8_t *d = dst;

	for (size_t i = 0; i < len; i++)
		d[i] = fz_u8(in);
}

/* ---- writing seeds ------------------------------------------------------------------- */

void fz_out_init(struct fz_out *o)
{
	o->buf = NULL;
	o->len = o->cap = 0;
}

void fz_out_free(struct fz_out *o)
{
	free(o->buf);
	fz_out_init(o);
}

void fz_put_bytes(struct fz_out *o, const void *src, size_t len)
{
	if (o->len + len > o->cap) {
		size_t cap = o->cap ? o->cap : 256;

		while (cap < o->len + len)
			cap *= 2;
		uint8_t *p = realloc(o->buf, cap);

		if (!p) {
			fprintf(stderr, "fuzz: out of memory building a seed\n");
			abort();
		}
		o->buf = p;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, src, len);
	o->len += len;
}

void fz_put8(struct fz_out *o, uint8_t v)
{
	fz_put_bytes(o, &v, 1);
}

void fz_put16(struct fz_out *o, uint16_t v)
{
	fz_put8(o, (uint8_t)v);
	fz_put8(o, (uint8_t)(v >> 8));
}

void fz_put32(struct fz_out *o, uint32_t v)
{
	fz_put16(o, (uint16_t)v);
	fz_put16(o, (uint16_t)(v >> 16));
}

void fz_put64(struct fz_out *o, uint64_t v)
{
	fz_put32(o, (uint32_t)v);
	fz_put32(o, (uint32_t)(v >> 32));
}

int fz_out_save(const struct fz_out *o, const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		fprintf(stderr, "fuzz: path too long: %s/%s\n", dir, name);
		return -1;
	}
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (o->len && fwrite(o->buf, 1, o->len, f) != o->len) {
		fprintf(stderr, "fuzz: short write to %s\n", path);
		fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

void fz_fill(uint8_t *dst, uint32_t len, uint64_t seed)
{
	struct lab_rng r = {seed * 0xd1b54a32d192ed03ull + 1};

	lab_rng_fill(&r, dst, len);
}

/* ---- cached guest memory ------------------------------------------------------------- */

#define FZ_GMEM_SLOTS 24u

static struct fz_gmem_entry {
	struct lab_gmem *g;
	unsigned slot;
	uint64_t ring, ram, gran;
} fz_gmem_cache[FZ_GMEM_SLOTS];

static void fz_gmem_wipe(struct lab_gmem *g)
{
	memset(lab_gmem_guest_ptr(g, lab_gmem_ring_gpa(g), lab_gmem_ring_size(g)), 0,
	       lab_gmem_ring_size(g));
	memset(lab_gmem_guest_ptr(g, lab_gmem_ram_gpa(g), lab_gmem_ram_size(g)), 0,
	       lab_gmem_ram_size(g));
}

struct lab_gmem *fz_gmem_get(unsigned slot, uint64_t ring_size, uint64_t ram_size,
			     uint64_t granularity)
{
	struct fz_gmem_entry *e = NULL;

	for (unsigned i = 0; i < FZ_GMEM_SLOTS; i++) {
		struct fz_gmem_entry *c = &fz_gmem_cache[i];

		if (c->g && c->slot == slot && c->ring == ring_size && c->ram == ram_size &&
		    c->gran == granularity) {
			fz_gmem_wipe(c->g);
			return c->g;
		}
		if (!c->g && !e)
			e = c;
	}
	if (!e) {
		/* Full: recycle the last entry. */
		e = &fz_gmem_cache[FZ_GMEM_SLOTS - 1];
		lab_gmem_destroy(e->g);
		e->g = NULL;
	}
	char msg[256] = "";
	struct lab_gmem_config gc = {
		.ram_size = ram_size,
		.ring_area_size = ring_size,
		.granularity = granularity,
		.seed = 0x5eed + slot,
	};

	e->g = lab_gmem_create(&gc, msg, sizeof(msg));
	if (!e->g)
		fz_fail("lab_gmem_create: %s", msg);
	e->slot = slot;
	e->ring = ring_size;
	e->ram = ram_size;
	e->gran = granularity;
	return e->g;
}

/* ---- datapath format: setup and codes ------------------------------------------------ */

uint64_t fz_dp_features(uint8_t dpf, enum vl_layout layout)
{
	uint64_t f = VL_FEATURE(VL_F_NET_CSUM);

	if (dpf & FZ_DPF_MERGEABLE)
		f |= VL_FEATURE(VL_F_NET_MRG_RXBUF);
	if (dpf & FZ_DPF_INDIRECT)
		f |= VL_FEATURE(VL_F_RING_INDIRECT_DESC);
	if (dpf & FZ_DPF_IN_ORDER)
		f |= VL_FEATURE(VL_F_IN_ORDER);
	if (dpf & FZ_DPF_EVENT_IDX)
		f |= VL_FEATURE(VL_F_RING_EVENT_IDX);
	if ((dpf & FZ_DPF_VERSION_1) || layout == VL_LAYOUT_PACKED)
		f |= VL_FEATURE(VL_F_VERSION_1);
	if (layout == VL_LAYOUT_PACKED)
		f |= VL_FEATURE(VL_F_RING_PACKED);
	return f;
}

uint32_t fz_batch_threshold(uint8_t code)
{
	static const uint32_t t[8] = {0, 1, 16, 256, 1024, 65536, UINT32_MAX, 64};

	return t[code % 8];
}

uint32_t fz_pool_buf_size(uint8_t code)
{
	static const uint32_t s[4] = {2048, 512, 128, 4096};

	return s[code % 4];
}

uint32_t fz_zc_min_len(uint8_t code)
{
	static const uint32_t m[4] = {0, 1, 64, 512};

	return m[code % 4];
}

/* ---- datapath format: encoders ------------------------------------------------------- */

void fz_enc_setup(struct fz_out *o, const struct fz_dp_setup *s)
{
	fz_put8(o, s->features);
	fz_put8(o, s->qsize);
	fz_put16(o, s->start);
	fz_put8(o, s->batch);
	fz_put8(o, s->pool);
	fz_put8(o, s->zc);
	fz_put8(o, s->hold);
	fz_put8(o, s->log);
	fz_put8(o, s->fill);
}

void fz_enc_addr_ram(struct fz_out *o, uint16_t off)
{
	fz_put8(o, 0);
	fz_put16(o, off);
}

void fz_enc_addr_ring(struct fz_out *o, uint16_t off)
{
	fz_put8(o, 3);
	fz_put16(o, off);
}

void fz_enc_addr_boundary(struct fz_out *o, uint8_t page, uint8_t back)
{
	fz_put8(o, 4);
	fz_put8(o, page);
	fz_put8(o, back);
}

void fz_enc_addr_hole(struct fz_out *o, uint16_t off)
{
	fz_put8(o, 5);
	fz_put16(o, off);
}

void fz_enc_addr_raw(struct fz_out *o, uint64_t gpa)
{
	fz_put8(o, 6);
	fz_put64(o, gpa);
}

void fz_enc_addr_ram_end(struct fz_out *o, uint8_t back)
{
	fz_put8(o, 7);
	fz_put8(o, back);
}

void fz_enc_len(struct fz_out *o, uint32_t len)
{
	if (len <= 0xffffu) {
		fz_put8(o, 0);
		fz_put16(o, (uint16_t)len);
	} else if (len >= 0xffffff00u) {
		fz_put8(o, 2);
		fz_put8(o, (uint8_t)(0xffffffffu - len));
	} else {
		fz_put8(o, 1);
		fz_put32(o, len);
	}
}

void fz_enc_write(struct fz_out *o, bool ram, uint16_t off, const void *src, uint8_t n)
{
	if (n > 64)
		n = 64;
	fz_put8(o, FZ_OP_WRITE);
	fz_put8(o, ram ? 1 : 0);
	fz_put16(o, off);
	fz_put8(o, n);
	fz_put_bytes(o, src, n);
}

void fz_enc_fill(struct fz_out *o, bool ram, uint16_t off, uint16_t len, uint8_t byte)
{
	fz_put8(o, FZ_OP_FILL);
	fz_put8(o, ram ? 1 : 0);
	fz_put16(o, off);
	fz_put16(o, len);
	fz_put8(o, byte);
}

void fz_enc_desc_head(struct fz_out *o, uint16_t idx)
{
	fz_put8(o, FZ_OP_DESC);
	fz_put16(o, idx);
}

void fz_enc_table_head(struct fz_out *o, uint16_t ram_off)
{
	fz_put8(o, FZ_OP_TABLE);
	fz_put16(o, ram_off);
}

void fz_enc_desc_tail(struct fz_out *o, uint16_t flags, uint16_t next_or_id)
{
	fz_put16(o, flags);
	fz_put16(o, next_or_id);
}

void fz_enc_post(struct fz_out *o, uint8_t shape, uint16_t len, uint16_t ram_off,
		 const uint8_t *hdr10)
{
	static const uint8_t zero[10];

	if (hdr10)
		shape |= FZ_POST_RAW_HDR;
	fz_put8(o, FZ_OP_POST);
	fz_put8(o, shape);
	fz_put16(o, len);
	fz_put16(o, ram_off);
	if (shape & FZ_POST_RAW_HDR)
		fz_put_bytes(o, hdr10 ? hdr10 : zero, 10);
}

void fz_enc_avail(struct fz_out *o, uint16_t head)
{
	fz_put8(o, FZ_OP_AVAIL);
	fz_put16(o, head);
}

void fz_enc_pflags(struct fz_out *o, uint16_t pos, uint8_t mode)
{
	fz_put8(o, FZ_OP_AVAIL);
	fz_put16(o, pos);
	fz_put8(o, mode);
}

void fz_enc_publish(struct fz_out *o)
{
	fz_put8(o, FZ_OP_PUBLISH);
}

void fz_enc_setpos(struct fz_out *o, uint16_t pos_wrap)
{
	fz_put8(o, FZ_OP_PUBLISH);
	fz_put16(o, pos_wrap);
}

void fz_enc_force(struct fz_out *o, uint16_t idx)
{
	fz_put8(o, FZ_OP_FORCE);
	fz_put16(o, idx);
}

void fz_enc_skip(struct fz_out *o, uint8_t n)
{
	fz_put8(o, FZ_OP_FORCE);
	fz_put8(o, n);
}

void fz_enc_event_split(struct fz_out *o, bool used_event, uint16_t value)
{
	fz_put8(o, FZ_OP_EVENT);
	fz_put8(o, used_event ? 1 : 0);
	fz_put16(o, value);
}

void fz_enc_event_packed(struct fz_out *o, uint16_t off_wrap, uint16_t flags)
{
	fz_put8(o, FZ_OP_EVENT);
	fz_put16(o, off_wrap);
	fz_put16(o, flags);
}

void fz_enc_dequeue(struct fz_out *o, uint8_t count)
{
	fz_put8(o, FZ_OP_BURST);
	fz_put8(o, count);
}

void fz_enc_enqueue(struct fz_out *o, uint8_t n, const uint16_t *lens, const uint8_t *mods)
{
	if (n == 0)
		n = 1;
	if (n > FZ_DP_MAX_RX_PKTS)
		n = FZ_DP_MAX_RX_PKTS;
	fz_put8(o, FZ_OP_BURST);
	fz_put8(o, (uint8_t)(n - 1));
	for (uint8_t i = 0; i < n; i++) {
		fz_put16(o, lens[i]);
		fz_put8(o, mods ? mods[i] : 0);
	}
}

void fz_enc_op1(struct fz_out *o, enum fz_op op, uint8_t arg)
{
	fz_put8(o, (uint8_t)op);
	fz_put8(o, arg);
}

void fz_enc_op0(struct fz_out *o, enum fz_op op)
{
	fz_put8(o, (uint8_t)op);
}

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

void fz_enc_df_round(struct fz_out *o, const struct fz_df_round *r)
{
	uint8_t ntx = r->ntx % (FZ_DF_MAX_TX + 1), nrx = r->nrx % (FZ_DF_MAX_RX + 1);
	uint8_t npkts = r->npkts % (FZ_DF_MAX_PKTS + 1);

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

void fz_dec_df_round(struct fz_in *in, struct fz_df_round *r)
{
	r->ntx = fz_u8(in) % (FZ_DF_MAX_TX + 1);
	r->notify = fz_u8(in);
	for (uint8_t i = 0; i < r->ntx; i++) {
		r->tx[i].len = fz_u16(in);
		r->tx[i].shape = fz_u8(in);
		r->tx[i].place = fz_u8(in);
		r->tx[i].ol = fz_u8(in);
	}
	r->count = fz_u8(in);
	r->nrx = fz_u8(in) % (FZ_DF_MAX_RX + 1);
	for (uint8_t i = 0; i < r->nrx; i++) {
		r->rx[i].cap = fz_u16(in);
		r->rx[i].shape = fz_u8(in);
		r->rx[i].place = fz_u8(in);
	}
	r->npkts = fz_u8(in) % (FZ_DF_MAX_PKTS + 1);
	for (uint8_t i = 0; i < r->npkts; i++) {
		r->pk[i].len = fz_u16(in);
		r->pk[i].ol = fz_u8(in);
	}
}

/* ---- the datapath engine ------------------------------------------------------------- */

#define FZ_HOST_POOL_BUFS 640u   /* the host's RX packets: 8 x 64 segments and room */
#define FZ_HOST_BUF_SIZE 2048u
#define FZ_PKT_BYTES_MAX (VL_PKT_MAX_LEN + 65000u + 16u)

struct dp {
	enum vl_layout L;
	bool rx;
	struct fz_dp_setup s;
	uint64_t features;
	uint32_t size, hdr_len;
	struct lab_gmem *g;
	struct vl_mem *mem;
	struct vl_vq *vq;
	struct vl_pool *pool;     /* dequeue allocates here */
	struct vl_pool *hpool;    /* the host builds RX packets here */
	const struct vl_mem_region *regs;
	uint32_t nregs;
	uint8_t *ring;            /* guest view of the ring area */
	uint64_t ring_gpa;
	uint8_t *ram;             /* guest view of RAM */
	uint64_t ram_gpa, hole_gpa;
	/* split driver */
	struct vl_split_desc *desc;
	struct vl_split_avail *avail;
	struct vl_split_used *used;
	uint16_t avail_idx;
	uint16_t next_desc;
	/* packed driver */
	struct vl_packed_desc *pdesc;
	struct vl_packed_event *drv_ev;
	uint16_t ppos;
	bool pwrap;
	uint16_t next_id;
	/* host */
	struct vl_pkt *held[FZ_DP_MAX_HELD];
	uint32_t held_no[FZ_DP_MAX_HELD];  /* packet number of held[i]: dequeue order */
	uint32_t nheld;
	uint32_t dequeued;                 /* packets so far: the next one's number */
	uint32_t discarded;                /* good chains vl_net_discard(_touch) returned */
	uint64_t rng;
	uint8_t *log;
	uint64_t log_bytes;
	uint32_t bursts, posts;
	bool line_wait;                    /* POLICY bit 2 as last given (off at the start) */
	/* recording (fz_sink only): the trace's queue, and whether a statement was recorded
	 * (the setup is final from then on) */
	int rq;
	bool rec_started;
};

static uint8_t fz_scratch[FZ_PKT_BYTES_MAX];
static struct vl_packed_desc fz_psnap[256];

static bool queue_level(enum vl_drop why)
{
	return why == VL_DROP_AVAIL_IDX_JUMP || why == VL_DROP_HEAD_OUT_OF_RANGE ||
	       why == VL_DROP_ID_OUT_OF_RANGE || why == VL_DROP_CHAIN_INCOMPLETE;
}

static uint64_t dec_addr(struct dp *d, struct fz_in *in)
{
	switch (fz_u8(in) % 8) {
	case 0:
	case 1:
	case 2:
		return d->ram_gpa + fz_u16(in) % (FZ_DP_RAM + 0x100u);
	case 3:
		return d->ring_gpa + fz_u16(in) % FZ_DP_RING_AREA;
	case 4: {
		uint64_t page = fz_u8(in) % 17u;

		return d->ram_gpa + page * LAB_PAGE_SIZE - fz_u8(in);
	}
	case 5:
		return d->hole_gpa + fz_u16(in);
	case 6:
		return fz_u64(in);
	default:
		return d->ram_gpa + FZ_DP_RAM - fz_u8(in);
	}
}

static uint32_t dec_len(struct fz_in *in)
{
	switch (fz_u8(in) % 3) {
	case 0:
		return fz_u16(in);
	case 1:
		return fz_u32(in);
	default:
		return 0xffffffffu - fz_u8(in);
	}
}

static void pstep(uint16_t *pos, bool *wrap, uint32_t n, uint32_t size)
{
	uint32_t p = *pos + n % (2 * size);

	while (p >= size) {
		p -= size;
		*wrap = !*wrap;
	}
	*pos = (uint16_t)p;
}

static uint16_t pavail_bits(bool wrap)
{
	return (uint16_t)(wrap ? VL_PDESC_F_AVAIL : VL_PDESC_F_USED);
}

/* ---- invariants ---------------------------------------------------------------------- */

/* Must hold between any two calls into the core, whatever the guest wrote. */
static void check_queue(struct dp *d)
{
	const struct vl_vq *vq = d->vq;
	const struct vl_vq_stats *st = vl_vq_stats(vq);
	enum vl_drop why = vl_vq_broken_reason(vq);
	uint32_t held = vl_vq_zero_copy_held(vq);

	if (vl_vq_broken(vq)) {
		if (!queue_level(why))
			fz_fail("queue broken with reason %d (%s), not a queue-level reason",
				(int)why, vl_drop_name(why));
		if (st->drops[why] == 0)
			fz_fail("queue broken as %s but drops[%s] is 0", vl_drop_name(why),
				vl_drop_name(why));
	} else if (why != VL_DROP_NONE) {
		fz_fail("queue not broken but has broken reason %s", vl_drop_name(why));
	}
	if (held > d->size)
		fz_fail("zero-copy holds %u chains on a queue of %u", held, d->size);
	if (d->rx && held)
		fz_fail("RX queue holds %u zero-copy chains", held);
	uint16_t la = vl_vq_last_avail(vq), lu = vl_vq_last_used(vq);

	if (d->L == VL_LAYOUT_SPLIT) {
		/* Every chain consumed was returned or is held by a zero-copy lease. */
		if ((uint16_t)(la - lu) != held)
			fz_fail("split: last_avail %u - last_used %u != %u chains held", la, lu,
				held);
		return;
	}
	if ((la & 0x7fffu) >= d->size || (lu & 0x7fffu) >= d->size)
		fz_fail("packed: position outside the ring: last_avail 0x%04x last_used 0x%04x "
			"size %u", la, lu, d->size);
	if (held == 0 && la != lu)
		fz_fail("packed: nothing held but last_avail 0x%04x != last_used 0x%04x", la, lu);
}

/* A dequeued packet: bounded, consistent segments, offloads that passed the checks, and
 * every byte readable (each zero-copy segment must lie inside one guest region). */
static void check_tx_pkt(struct dp *d, const struct vl_pkt *p)
{
	if (!p)
		fz_fail("dequeue returned a NULL packet");
	if (p->pkt_len > VL_PKT_MAX_LEN || p->pkt_len == 0)
		fz_fail("dequeued packet of %u bytes (must be 1..%u)", p->pkt_len, VL_PKT_MAX_LEN);
	if (p->refcnt != 1)
		fz_fail("dequeued packet with refcnt %u", p->refcnt);
	uint32_t sum = 0, nseg = 0;

	for (const struct vl_pkt *s = p; s; s = s->next) {
		nseg++;
		if (nseg > 65535)
			fz_fail("dequeued packet segment list does not end");
		/* A zero-copy packet's segments all point into guest memory. */
		if (p->release) {
			bool inside = false;

			for (uint32_t i = 0; i < d->nregs && !inside; i++) {
				const uint8_t *h = d->regs[i].host;

				inside = s->data >= h && s->data_len <= d->regs[i].size &&
					 (uint64_t)(s->data - h) <= d->regs[i].size - s->data_len;
			}
			if (!inside)
				fz_fail("zero-copy packet segment %u (%u bytes) outside every "
					"guest region", nseg, s->data_len);
		} else if (s->data < s->buf || s->data_len > s->buf_len ||
			   (uint64_t)(s->data - s->buf) > s->buf_len - s->data_len) {
			fz_fail("packet segment data outside its buffer");
		}
		sum += s->data_len;
	}
	if (sum != p->pkt_len || nseg != p->nb_segs)
		fz_fail("packet of %u bytes / %u segments has segments summing to %u / %u",
			p->pkt_len, p->nb_segs, sum, nseg);
	const struct vl_offload *ol = &p->ol;

	if ((ol->flags & VL_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)ol->csum_start + ol->csum_offset + 2u > p->pkt_len)
		fz_fail("checksum at %u+%u outside a %u-byte packet", ol->csum_start,
			ol->csum_offset, p->pkt_len);
	uint8_t gso = ol->gso_type & (uint8_t)~VL_NET_HDR_GSO_ECN;

	if (gso == VL_NET_HDR_GSO_NONE) {
		if (ol->gso_type & VL_NET_HDR_GSO_ECN)
			fz_fail("ECN without a GSO type passed");
	} else if (gso == VL_NET_HDR_GSO_TCPV4 || gso == VL_NET_HDR_GSO_UDP ||
		   gso == VL_NET_HDR_GSO_TCPV6 || gso == VL_NET_HDR_GSO_UDP_L4) {
		if (ol->gso_size == 0 || ol->hdr_len > p->pkt_len)
			fz_fail("GSO packet with gso_size %u hdr_len %u (len %u) passed",
				ol->gso_size, ol->hdr_len, p->pkt_len);
	} else {
		fz_fail("unknown GSO type 0x%02x passed", ol->gso_type);
	}
	if (vl_pkt_read(p, 0, fz_scratch, p->pkt_len) != p->pkt_len)
		fz_fail("packet of %u bytes could not be read whole", p->pkt_len);
}

/* What a burst (or vl_vq_complete) published. rx_sum: bytes every delivered packet put in
 * the guest (header + payload), which the used lengths must add up to. */
struct burst_mark {
	uint16_t last_used, last_avail;
	uint64_t used_entries;
	bool pdiff;               /* packed TX: descriptors snapshot taken */
	uint64_t evicted, copies; /* lines_evicted, copies_batched + copies_direct */
	uint64_t batched, copy_pf; /* copies_batched, copy_prefetches */
	uint64_t chains, line_waits, alloc_failures, zc_stalls;
	uint32_t held;            /* chains zero-copy leases held before the call */
	bool broken;
};

static uint64_t copies_made(const struct vl_vq_stats *st)
{
	return st->copies_batched + st->copies_direct;
}

static void mark_before(struct dp *d, struct burst_mark *m)
{
	const struct vl_vq_stats *st = vl_vq_stats(d->vq);

	m->last_used = vl_vq_last_used(d->vq);
	m->last_avail = vl_vq_last_avail(d->vq);
	m->used_entries = st->used_entries;
	m->evicted = st->lines_evicted;
	m->copies = copies_made(st);
	m->batched = st->copies_batched;
	m->copy_pf = st->copy_prefetches;
	m->chains = st->chains;
	m->line_waits = st->tx_line_waits;
	m->alloc_failures = st->alloc_failures;
	m->zc_stalls = st->zc_stalls;
	m->held = vl_vq_zero_copy_held(d->vq);
	m->broken = vl_vq_broken(d->vq);
	m->pdiff = d->L == VL_LAYOUT_PACKED && !d->rx;
	if (m->pdiff)
		memcpy(fz_psnap, d->pdesc, (size_t)d->size * sizeof(*fz_psnap));
}

/* Evict-after-read (FZ_OP_POLICY bit 1) evicts exactly `want_on` lines in the call since m
 * while on -- dequeue one per copy it made, touch one per good chain it read, the rest none
 * -- and none while off (or where the CPU lacks CLFLUSHOPT and it stayed off). Where: the
 * lines the copies read, which ASan and the guard pages check; CLFLUSHOPT of an address in
 * no mapping would fault like a read, so a stray one ends the run too. */
static void check_evictions(struct dp *d, const struct burst_mark *m, uint64_t want_on)
{
	const uint64_t got = vl_vq_stats(d->vq)->lines_evicted - m->evicted;
	const uint64_t want = vl_vq_evict_reads(d->vq) ? want_on : 0;

	if (got != want)
		fz_fail("evict-after-read %s: %llu lines evicted, %llu expected",
			vl_vq_evict_reads(d->vq) ? "on" : "off", (unsigned long long)got,
			(unsigned long long)want);
}

/* A copy dequeue's batch deferred asks for its source's first line as it is queued, while
 * payload prefetch is on (FZ_OP_POLICY bit 3 turns it off): exactly one per batched copy of
 * a dequeue call, none in any other call (enqueue's copies go to the guest). */
static void check_copy_prefetches(struct dp *d, const struct burst_mark *m, bool dequeue)
{
	const struct vl_vq_stats *st = vl_vq_stats(d->vq);
	const uint64_t got = st->copy_prefetches - m->copy_pf;
	const uint64_t want =
		dequeue && vl_vq_tx_prefetch(d->vq) ? st->copies_batched - m->batched : 0;

	if (got != want)
		fz_fail("copy prefetch %s: %llu source lines asked for, %llu expected",
			vl_vq_tx_prefetch(d->vq) ? "on" : "off", (unsigned long long)got,
			(unsigned long long)want);
}

static void check_split_used(struct dp *d, const struct burst_mark *m, uint64_t n,
			     uint64_t rx_sum)
{
	uint16_t after = vl_vq_last_used(d->vq);

	if ((uint16_t)(after - m->last_used) != (uint16_t)n)
		fz_fail("split: used index moved %u, %llu entries published",
			(uint16_t)(after - m->last_used), (unsigned long long)n);
	if (n == 0)
		return;
	uint16_t gidx = __atomic_load_n(&d->used->idx, __ATOMIC_ACQUIRE);

	if (gidx != after)
		fz_fail("split: used->idx in guest memory %u, device says %u", gidx, after);
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		const struct vl_split_used_elem *e =
			&d->used->ring[(uint16_t)(m->last_used + i) & (d->size - 1)];

		if (e->id >= d->size)
			fz_fail("split: used entry %llu has id %u >= queue size %u",
				(unsigned long long)i, e->id, d->size);
		if (!d->rx && e->len != 0)
			fz_fail("split: TX used entry (id %u) with length %u", e->id, e->len);
		sum += e->len;
	}
	if (d->rx && sum != rx_sum)
		fz_fail("split: RX used lengths add up to %llu, delivered packets wrote %llu",
			(unsigned long long)sum, (unsigned long long)rx_sum);
}

static bool pused_flags_ok(uint16_t flags, uint32_t len)
{
	bool a = (flags & VL_PDESC_F_AVAIL) != 0, u = (flags & VL_PDESC_F_USED) != 0;

	if (flags & ~(uint16_t)(VL_PDESC_F_AVAIL | VL_PDESC_F_USED | VL_DESC_F_WRITE))
		return false;
	return a == u && ((flags & VL_DESC_F_WRITE) != 0) == (len != 0);
}

static void check_packed_used(struct dp *d, const struct burst_mark *m, uint64_t n,
			      uint64_t rx_sum)
{
	uint16_t after = vl_vq_last_used(d->vq);

	if (n == 0) {
		if (after != m->last_used)
			fz_fail("packed: used position moved 0x%04x -> 0x%04x, nothing published",
				m->last_used, after);
		return;
	}
	if (n > d->size)
		fz_fail("packed: %llu used descriptors in one flush (size %u)",
			(unsigned long long)n, d->size);
	/* The first used descriptor is written last: it must be intact whatever the burst
	 * wrote into guest buffers. */
	uint16_t pos = m->last_used & 0x7fffu;
	bool wrap = (m->last_used & VL_PACKED_WRAP_BIT) != 0;
	struct vl_packed_desc h = d->pdesc[pos];

	if (!pused_flags_ok(h.flags, h.len) || ((h.flags & VL_PDESC_F_AVAIL) != 0) != wrap)
		fz_fail("packed: first used descriptor at %u has flags 0x%04x len %u (device "
			"wrap %d)", pos, h.flags, h.len, wrap);
	if (h.id >= d->size)
		fz_fail("packed: used descriptor at %u names id %u >= size %u", pos, h.id, d->size);
	if (d->rx && h.len > rx_sum)
		fz_fail("packed: RX used length %u > %llu bytes delivered", h.len,
			(unsigned long long)rx_sum);
	if (!m->pdiff)
		return;
	/* TX writes nothing into guest memory but used descriptors: every descriptor that
	 * changed must be one, and no more than were published. */
	uint64_t changed = 0;

	for (uint32_t i = 0; i < d->size; i++) {
		const struct vl_packed_desc *b = &fz_psnap[i], *a = &d->pdesc[i];

		if (!memcmp(a, b, sizeof(*a)))
			continue;
		changed++;
		if (a->addr != b->addr)
			fz_fail("packed: the device rewrote the address of descriptor %u", i);
		if (!pused_flags_ok(a->flags, a->len) || a->len != 0 || a->id >= d->size)
			fz_fail("packed: TX descriptor %u rewritten as flags 0x%04x len %u id %u",
				i, a->flags, a->len, a->id);
	}
	if (changed > n)
		fz_fail("packed: %llu descriptors changed, %llu used descriptors published",
			(unsigned long long)changed, (unsigned long long)n);
}

static void check_after_flush(struct dp *d, const struct burst_mark *m, uint64_t rx_sum)
{
	uint64_t n = vl_vq_stats(d->vq)->used_entries - m->used_entries;

	if (d->L == VL_LAYOUT_SPLIT) {
		if (n > d->size)
			fz_fail("split: %llu used entries in one flush (size %u)",
				(unsigned long long)n, d->size);
		check_split_used(d, m, n, rx_sum);
	} else {
		check_packed_used(d, m, n, rx_sum);
	}
}

/* ---- how many chains a TX burst takes -------------------------------------------------- */

/* A packed TX burst's window as the harness reads it from the descriptors the burst found
 * (fz_psnap: a TX burst writes nothing into the ring before its flush), by spec 2.8: from the
 * device's position on, a descriptor is available when AVAIL equals the driver's wrap
 * counter there and USED does not, a chain runs on while NEXT is set, and its buffer id is in
 * its last descriptor. What the burst must take follows from this and line wait's rule
 * (docs/architecture.md, "Line wait"), not from the core's state. */
struct tx_window {
	uint32_t n;             /* chains found, at most the burst's count */
	bool end;               /* found fewer than asked for: the scan stopped there */
	bool whole_ring;        /* ... because the n chains hold every descriptor of the ring */
	bool lie;               /* ... at a head whose tail is not available: the queue breaks */
	uint32_t bad_id;        /* the first chain whose id is >= size (the walk stops there), n
				 * when none is */
	uint32_t take;          /* what the burst takes: n, or fewer by line wait */
	bool waits;             /* line wait left chains (take < n): one tx_line_waits */
	uint16_t at[UINT8_MAX + 2]; /* chain i's first position, wrap counter in bit 15; at[n]
				     * where the window ends (a burst's count is a u8) */
};

static bool pdesc_avail(uint16_t flags, bool wrap)
{
	return (flags & (VL_PDESC_F_AVAIL | VL_PDESC_F_USED)) == pavail_bits(wrap);
}

static void packed_window(const struct dp *d, uint16_t from, uint32_t want, struct tx_window *w)
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
		uint16_t flags = fz_psnap[pos].flags, last = pos;
		uint32_t len = 1;

		if (!pdesc_avail(flags, wrap)) {
			w->end = true;
			break;
		}
		pstep(&pos, &wrap, 1, d->size);
		while (flags & VL_DESC_F_NEXT) {
			/* A chain longer than what is left of the ring, or a tail not available:
			 * a driver makes a chain's head available last (spec 2.8.6). */
			if (descs + len >= d->size || !pdesc_avail(fz_psnap[pos].flags, wrap)) {
				w->end = w->lie = true;
				goto out;
			}
			flags = fz_psnap[pos].flags;
			last = pos;
			len++;
			pstep(&pos, &wrap, 1, d->size);
		}
		if (!bad && fz_psnap[last].id >= d->size) {
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
static void line_wait_rule(const struct dp *d, struct tx_window *w)
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
static void tx_window_before(const struct dp *d, const struct burst_mark *m, uint16_t count,
			     struct tx_window *w)
{
	memset(w, 0, sizeof(*w));
	if (d->L != VL_LAYOUT_PACKED || m->broken)
		return;
	packed_window(d, m->last_avail, count, w);
	line_wait_rule(d, w);
}

/* Enqueue ignores line wait, and vl_vq_complete scans nothing. */
static void check_no_line_waits(struct dp *d, const struct burst_mark *m, const char *what)
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
static void check_tx_take(struct dp *d, const struct burst_mark *m, const struct tx_window *w,
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

/* ---- recording (fz_sink: vhostlab trace from-fuzz) ------------------------------------- */

/* The engine reports what it does to the sink in trace terms: the setup once, then before
 * every core call that reads guest memory a sync (the guest's writes so far) and the
 * statement, after it an absorb (the device's writes). Packets are numbered per queue in
 * dequeue order, as the trace numbers them. Run-time switches of queue options are `set`,
 * a new memory table `remap`: every operation of the engine has a statement. */

const struct lab_trace_sink *fz_sink;

static const char *const fz_op_names[FZ_OP__COUNT] = {
	"WRITE", "FILL", "DESC", "TABLE", "POST", "AVAIL", "PUBLISH", "FORCE", "EVENT",
	"BURST", "FREE", "COMPLETE", "POOLFAIL", "KICKS", "BATCH", "POLICY", "ZC", "SETMEM",
};

static void rec_stmt(struct dp *d, const struct lab_trace_op *op)
{
	d->rec_started = true;
	fz_sink->sync(fz_sink->ctx);
	fz_sink->op(fz_sink->ctx, op);
}

static struct lab_trace_queue *rec_queue(struct dp *d)
{
	return fz_sink->queue_ref(fz_sink->ctx, d->rq);
}

struct dp_zc {
	bool on;
	uint32_t min, max;
};

/* The core's zero-copy setting after vl_vq_set_zero_copy(on, min, max) (it clamps max). */
static struct dp_zc zc_setting(const struct dp *d, bool on, uint32_t min, uint32_t max)
{
	struct dp_zc z = {on, min, max ? max : 1};

	if (z.max > d->size)
		z.max = d->size;
	return z;
}

static void zc_to_trace(struct lab_trace_queue *q, struct dp_zc z)
{
	q->zero_copy = z.on;
	q->zc_min = z.on ? z.min : 0;
	q->zc_max = z.on ? z.max : 0;
}

static void rec_setup(struct dp *d, const struct vl_vq_config *qc, uint32_t pool_bufs,
		      uint32_t pool_size)
{
	const struct lab_trace_sink *k = fz_sink;

	k->begin(k->ctx, d->g, d->features);
	d->rq = k->queue(k->ctx, d->rx ? "rx" : "tx", d->rx ? LAB_TRACE_RX : LAB_TRACE_TX, qc);
	/* Zero-copy and the allocation policy are dequeue options: nothing on RX. */
	if (!d->rx) {
		if (d->s.zc & 1)
			zc_to_trace(rec_queue(d),
				    zc_setting(d, true, fz_zc_min_len((uint8_t)(d->s.zc >> 1)),
					       1u + (d->s.zc >> 3)));
		if (d->s.features & FZ_DPF_ALLOC_BURST)
			rec_queue(d)->alloc = LAB_TRACE_ALLOC_BURST;
	}
	k->pool(k->ctx, pool_bufs, pool_size);
	if (d->log)
		k->dirty_log(k->ctx, d->log_bytes * 8);
}

/* Options before the first statement go into the queue line; later ones are `set`. */
static void rec_set(struct dp *d, const struct lab_trace_op *op)
{
	rec_stmt(d, op);
}

static void rec_batch(struct dp *d, uint32_t threshold)
{
	struct lab_trace_queue *q = rec_queue(d);

	if (!d->rec_started)
		q->batch = threshold;
	else
		rec_set(d, &(struct lab_trace_op){.kind = LAB_T_SET, .queue = (uint32_t)d->rq,
						  .given = LAB_TA_BATCH, .count = threshold});
}

/* POLICY's allocation policy and line wait (bits 0 and 2), one `set` for both. Nothing on
 * RX, where the format refuses them: enqueue ignores both, and the harness checks it does. */
static void rec_policy(struct dp *d, bool burst, bool line_wait)
{
	struct lab_trace_queue *q = rec_queue(d);
	enum lab_trace_alloc a = burst ? LAB_TRACE_ALLOC_BURST : LAB_TRACE_ALLOC_AVAILABLE;

	if (d->rx)
		return;
	if (!d->rec_started) {
		q->alloc = a;
		q->line_wait = line_wait;
	} else {
		rec_set(d, &(struct lab_trace_op){.kind = LAB_T_SET, .queue = (uint32_t)d->rq,
						  .given = LAB_TA_ALLOC | LAB_TA_LINE_WAIT,
						  .value = a, .flags = line_wait});
	}
}

static void rec_zc(struct dp *d, bool on, uint32_t min, uint32_t max)
{
	struct lab_trace_queue *q = rec_queue(d);
	struct dp_zc z = zc_setting(d, on, min, max);

	if (d->rx)
		return;
	if (!d->rec_started) {
		zc_to_trace(q, z);
		return;
	}
	/* Off keeps its bound: it still stops in-order bursts behind leases already taken. */
	rec_set(d, &(struct lab_trace_op){.kind = LAB_T_SET, .queue = (uint32_t)d->rq,
					  .given = LAB_TA_ZC | (z.on ? 0 : LAB_TA_OFF),
					  .len = z.on ? z.min : 0, .index = z.max});
}

static void rec_fault(struct dp *d, uint8_t after)
{
	struct lab_trace_op op = {.kind = LAB_T_FAULT, .queue = 0};

	op.value = LAB_TRACE_FAULT_POOL;
	if (after == 255)
		op.given = LAB_TA_OFF;
	else
		op.count = after;
	rec_stmt(d, &op);
}

/* `dequeue ... hold` whenever the input may hold packets, each packet it does not hold
 * freed right after the burst: the replay frees them at the same point, in the same
 * order. Without holding nothing is ever held, and freeing at the next host action on the
 * queue (the replay's rule) is the same as freeing at once. */
static void rec_dequeue(struct dp *d, uint16_t count)
{
	struct lab_trace_op op = {.kind = LAB_T_DEQUEUE, .queue = (uint32_t)d->rq};

	op.count = count;
	if (count && (d->s.hold & 3))
		op.given = LAB_TA_HOLD;
	rec_stmt(d, &op);
}

static void rec_free(struct dp *d, uint64_t *nums, uint32_t n)
{
	struct lab_trace_op op = {.kind = LAB_T_FREE, .queue = (uint32_t)d->rq};

	if (n == 0 || !(d->s.hold & 3))
		return;
	op.nitems = n;
	op.nums = nums;
	rec_stmt(d, &op);
}

/* The host's packets with their exact bytes and offloads (only those that are not 0: the
 * replay zeroes the others). */
static void rec_enqueue(struct dp *d, struct vl_pkt *const *pkts, uint32_t n)
{
	struct lab_trace_pkt tp[FZ_DP_MAX_RX_PKTS];
	struct lab_trace_op op = {.kind = LAB_T_ENQUEUE, .queue = (uint32_t)d->rq};

	memset(tp, 0, sizeof(tp));
	for (uint32_t i = 0; i < n; i++) {
		const struct vl_offload *ol = &pkts[i]->ol;
		struct lab_trace_ol *t = &tp[i].ol;

		tp[i].len = pkts[i]->pkt_len;
		tp[i].data.kind = LAB_PAT_ZERO;
		if (tp[i].len) {
			tp[i].data.kind = LAB_PAT_HEX;
			tp[i].data.nbytes = tp[i].len;
			tp[i].data.bytes = malloc(tp[i].len);
			if (!tp[i].data.bytes)
				fz_fail("out of memory recording a %u-byte packet", tp[i].len);
			vl_pkt_read(pkts[i], 0, tp[i].data.bytes, tp[i].len);
		}
		*t = (struct lab_trace_ol){0, ol->flags, ol->gso_type, ol->hdr_len, ol->gso_size,
					   ol->csum_start, ol->csum_offset};
		t->given = (uint8_t)((t->flags ? LAB_OL_FLAGS : 0) |
				     (t->gso_type ? LAB_OL_GSO_TYPE : 0) |
				     (t->hdr_len ? LAB_OL_HDR_LEN : 0) |
				     (t->gso_size ? LAB_OL_GSO_SIZE : 0) |
				     (t->csum_start ? LAB_OL_CSUM_START : 0) |
				     (t->csum_offset ? LAB_OL_CSUM_OFFSET : 0));
	}
	op.nitems = n;
	op.pkts = tp;
	rec_stmt(d, &op);
	for (uint32_t i = 0; i < n; i++)
		free(tp[i].data.bytes);
}

/* The end of the operations: the guest's last writes (the teardown's complete reads them)
 * and what the run observed. */
static void rec_finish(struct dp *d)
{
	struct vl_vq *vq = d->vq;

	fz_sink->sync(fz_sink->ctx);
	fz_sink->observe(fz_sink->ctx, &vq, 1, d->log, d->log_bytes);
}

/* ---- host actions -------------------------------------------------------------------- */

static void free_held(struct dp *d, uint8_t mode)
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
		rec_free(d, freed, nfreed);
}

static bool hold_this(struct dp *d)
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
static void hold(struct dp *d, struct vl_pkt *p, uint32_t no, uint64_t *freed,
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

static void do_dequeue(struct dp *d, uint16_t count)
{
	struct vl_pkt *pkts[256];
	uint64_t freed[256];
	uint32_t nfreed = 0;
	struct burst_mark m;
	struct tx_window w;
	uint64_t packets = vl_vq_stats(d->vq)->packets;
	bool was_broken = vl_vq_broken(d->vq);

	mark_before(d, &m);
	tx_window_before(d, &m, count, &w);
	if (fz_sink)
		rec_dequeue(d, count);
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
	check_after_flush(d, &m, 0);
	check_tx_take(d, &m, &w, count, "dequeue");
	check_evictions(d, &m, copies_made(vl_vq_stats(d->vq)) - m.copies);
	check_copy_prefetches(d, &m, true);
	for (uint16_t i = 0; i < n; i++) {
		check_tx_pkt(d, pkts[i]);
		if (hold_this(d)) {
			hold(d, pkts[i], d->dequeued + i, freed, &nfreed);
		} else {
			vl_pkt_free(pkts[i]);
			freed[nfreed++] = d->dequeued + i;
		}
	}
	d->dequeued += n;
	if (fz_sink)
		rec_free(d, freed, nfreed);
}

/* A TX burst through the ceilings of `vhostlab serve --mode null|touch`: every chain goes
 * back with used length 0 (check_after_flush), no packet is made and no buffer taken, the
 * byte count is that of at least one byte and at most VL_PKT_MAX_LEN per good chain, and
 * touch's first bytes one byte each. Only bounds here: this guest's chains may be hostile and
 * the harness keeps no model of which are good; fuzz_differential, whose chains are all well
 * formed, checks both totals exactly against what its guest posted. Out of bounds reads are
 * the sanitizers' and the guard pages' to catch. Recorded as `discard Q MAX [touch]`. */
static void do_discard(struct dp *d, uint16_t count, bool touch)
{
	const char *what = touch ? "vl_net_discard_touch" : "vl_net_discard";
	const struct vl_vq_stats *st = vl_vq_stats(d->vq);
	const uint64_t packets = st->packets;
	const uint32_t free_before = vl_pool_free_count(d->pool);
	const bool was_broken = vl_vq_broken(d->vq);
	uint64_t bytes = 0, firsts = 0;
	struct burst_mark m;
	struct tx_window w;

	mark_before(d, &m);
	tx_window_before(d, &m, count, &w);
	if (fz_sink)
		rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_DISCARD, .queue = (uint32_t)d->rq,
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
	check_after_flush(d, &m, 0);
	check_tx_take(d, &m, &w, count, what);
	check_evictions(d, &m, touch ? n : 0);
	check_copy_prefetches(d, &m, false);
	d->discarded += n;
}

/* What TX burst number k calls (fz_dp_setup.hold bits 6-7). */
static enum fz_tx_host tx_host(const struct dp *d, uint32_t k)
{
	enum fz_tx_host h = (enum fz_tx_host)(d->s.hold >> FZ_TX_HOST_SHIFT & 3u);

	return h == FZ_TX_ROTATE ? (enum fz_tx_host)(k % 3u) : h;
}

static void set_rx_offload(struct dp *d, struct vl_offload *ol, uint8_t preset)
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

static void do_enqueue(struct dp *d, struct fz_in *in)
{
	struct vl_pkt *pkts[FZ_DP_MAX_RX_PKTS];
	uint8_t st[FZ_DP_MAX_RX_PKTS];
	uint32_t n = 1u + fz_u8(in) % FZ_DP_MAX_RX_PKTS, built = 0;
	bool was_broken = vl_vq_broken(d->vq);

	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = fz_u16(in);
		uint8_t mod = fz_u8(in);

		if (mod & 1)
			len += 65000u;
		struct vl_pkt *p = vl_pkt_alloc_len(d->hpool, len);

		if (!p)
			fz_fail("host pool could not build a %u-byte packet", len);
		fz_fill(fz_scratch, len, (uint64_t)d->posts << 8 | i);
		vl_pkt_write(p, 0, fz_scratch, len);
		set_rx_offload(d, &p->ol, (uint8_t)(mod >> 1));
		pkts[built] = p;
		st[built] = 0xEE;
		built++;
	}
	const struct vl_vq_stats *stats = vl_vq_stats(d->vq);
	uint64_t packets = stats->packets, bytes = stats->bytes;
	struct burst_mark m;

	mark_before(d, &m);
	if (fz_sink)
		rec_enqueue(d, pkts, built);
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
		    st[i] != VL_RX_DROPPED_TOO_MANY_PIECES)
			fz_fail("enqueue status[%u] = %u", i, st[i]);
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
	check_after_flush(d, &m, rx_sum);
	check_evictions(d, &m, 0);
	check_copy_prefetches(d, &m, false);
	check_no_line_waits(d, &m, "enqueue");
	for (uint32_t i = 0; i < built; i++)
		vl_pkt_free(pkts[i]);
}

static void do_complete(struct dp *d)
{
	struct burst_mark m;
	/* An RX queue never holds chains: vl_vq_complete does nothing there, and a trace's
	 * complete is for tx queues. */
	bool rec = fz_sink && !d->rx;

	mark_before(d, &m);
	if (rec) {
		struct lab_trace_op op = {.kind = LAB_T_COMPLETE, .queue = (uint32_t)d->rq};

		rec_stmt(d, &op);
	}
	vl_vq_complete(d->vq);
	if (rec)
		fz_sink->absorb(fz_sink->ctx);
	check_after_flush(d, &m, 0);
	check_evictions(d, &m, 0);
	check_copy_prefetches(d, &m, false);
	check_no_line_waits(d, &m, "vl_vq_complete");
}

/* ---- driver actions ------------------------------------------------------------------ */

struct dp_desc {
	uint64_t gpa;
	uint32_t len;
	uint16_t flags;
};

static void write_desc(struct dp *d, uint16_t i, const struct dp_desc *e, bool more,
		       uint16_t next)
{
	struct vl_split_desc *s = &d->desc[i];

	s->addr = e->gpa;
	s->len = e->len;
	s->flags = (uint16_t)(e->flags | (more ? VL_DESC_F_NEXT : 0));
	s->next = next;
}

/* A well-formed chain of the shape asked for, through the driver cursor. */
static void do_post(struct dp *d, struct fz_in *in)
{
	uint8_t shape = fz_u8(in);
	uint32_t len = fz_u16(in);
	uint32_t off = fz_u16(in) % FZ_DP_RAM;
	uint8_t hdr[12] = {0};
	uint16_t dir = d->rx ? VL_DESC_F_WRITE : 0;

	if (shape & FZ_POST_RAW_HDR)
		fz_bytes(in, hdr, 10);
	uint32_t total = d->hdr_len + len;
	uint32_t nsegs = 1 + (shape & FZ_POST_NSEGS_MASK);
	bool indirect = (shape & FZ_POST_INDIRECT) != 0;
	uint32_t table_room = indirect ? 16u * 12u + 16u : 0;

	if (total + table_room + 1 > FZ_DP_RAM)
		total = FZ_DP_RAM - table_room - 1;
	if (shape & FZ_POST_MISALIGN)
		off++;
	if (off + total + table_room > FZ_DP_RAM)
		off = FZ_DP_RAM - total - table_room;
	uint64_t gpa = d->ram_gpa + off;
	uint8_t *buf = d->ram + off;

	d->posts++;
	if (d->rx) {
		memset(buf, 0xA5, total);
	} else {
		memcpy(buf, hdr, d->hdr_len);
		fz_fill(buf + d->hdr_len, total - d->hdr_len, d->posts);
	}
	struct dp_desc e[12];
	uint32_t ne = 0, at = 0, rest = total;

	if ((shape & FZ_POST_HDR_ALONE) && total > d->hdr_len) {
		e[ne++] = (struct dp_desc){gpa, d->hdr_len, dir};
		at = d->hdr_len;
		rest = total - d->hdr_len;
	}
	for (uint32_t i = 0; i < nsegs; i++) {
		uint32_t l = i + 1 < nsegs ? rest / nsegs : rest - rest / nsegs * (nsegs - 1);

		e[ne++] = (struct dp_desc){gpa + at, l, dir};
		at += l;
		if (i == 0 && (shape & FZ_POST_ZERO_LEN))
			e[ne++] = (struct dp_desc){gpa, 0, dir};
	}
	if (indirect) {
		uint32_t toff = (off + total + 15u) & ~15u;
		uint8_t *t = d->ram + toff;

		for (uint32_t i = 0; i < ne; i++) {
			if (d->L == VL_LAYOUT_SPLIT) {
				struct vl_split_desc s = {
					e[i].gpa, e[i].len,
					(uint16_t)(e[i].flags | (i + 1 < ne ? VL_DESC_F_NEXT : 0)),
					(uint16_t)(i + 1 < ne ? i + 1 : 0),
				};

				memcpy(t + 16 * i, &s, 16);
			} else {
				struct vl_packed_desc p = {e[i].gpa, e[i].len, 0, e[i].flags};

				memcpy(t + 16 * i, &p, 16);
			}
		}
		e[0] = (struct dp_desc){d->ram_gpa + toff, 16u * ne, VL_DESC_F_INDIRECT};
		ne = 1;
	}
	if (d->L == VL_LAYOUT_SPLIT) {
		uint16_t idx[12];

		for (uint32_t i = 0; i < ne; i++)
			idx[i] = (uint16_t)(d->next_desc++ % d->size);
		for (uint32_t i = 0; i < ne; i++)
			write_desc(d, idx[i], &e[i], i + 1 < ne, i + 1 < ne ? idx[i + 1] : 0);
		d->avail->ring[d->avail_idx & (d->size - 1)] = idx[0];
		d->avail_idx++;
		__atomic_store_n(&d->avail->idx, d->avail_idx, __ATOMIC_RELEASE);
		return;
	}
	uint16_t id = (uint16_t)(d->next_id++ % d->size), head = d->ppos, head_flags = 0;

	for (uint32_t i = 0; i < ne; i++) {
		struct vl_packed_desc *p = &d->pdesc[d->ppos];
		uint16_t flags = (uint16_t)(e[i].flags | pavail_bits(d->pwrap) |
					    (i + 1 < ne ? VL_DESC_F_NEXT : 0));

		p->addr = e[i].gpa;
		p->len = e[i].len;
		p->id = id;
		if (i == 0)
			head_flags = flags;
		else
			__atomic_store_n(&p->flags, flags, __ATOMIC_RELEASE);
		pstep(&d->ppos, &d->pwrap, 1, d->size);
	}
	__atomic_store_n(&d->pdesc[head].flags, head_flags, __ATOMIC_RELEASE);
}

static void do_pflags(struct dp *d, uint16_t pos, uint8_t mode)
{
	struct vl_packed_desc *p = &d->pdesc[pos % d->size];
	uint16_t f = (uint16_t)(p->flags & ~(VL_PDESC_F_AVAIL | VL_PDESC_F_USED));
	bool w = d->pwrap;

	switch (mode & 3) {
	case FZ_PFLAG_AVAIL:
		f |= pavail_bits(w);
		break;
	case FZ_PFLAG_USED:
		f |= (uint16_t)(w ? VL_PDESC_F_AVAIL | VL_PDESC_F_USED : 0);
		break;
	case FZ_PFLAG_OTHER:
		f |= pavail_bits(!w);
		break;
	default:
		break;
	}
	if (mode & FZ_PFLAG_NEXT)
		f ^= VL_DESC_F_NEXT;
	if (mode & FZ_PFLAG_WRITE)
		f ^= VL_DESC_F_WRITE;
	if (mode & FZ_PFLAG_INDIRECT)
		f ^= VL_DESC_F_INDIRECT;
	__atomic_store_n(&p->flags, f, __ATOMIC_RELEASE);
}

static void do_setmem(struct dp *d)
{
	int err = 0;
	struct vl_mem *m = vl_mem_create(d->regs, d->nregs, &err);

	if (!m)
		fz_fail("vl_mem_create: %s", vl_strerror(err));
	if (vl_vq_set_mem(d->vq, m) != VL_OK) {
		vl_mem_destroy(m);
		fz_fail("vl_vq_set_mem refused the same regions");
	}
	vl_mem_destroy(d->mem);
	d->mem = m;
}

static bool fz_trace(void)
{
	static int t = -1;

	if (t < 0)
		t = getenv("FZ_TRACE") != NULL;
	return t != 0;
}

static void trace_op(struct dp *d, enum fz_op op, const struct fz_in *in, size_t at)
{
	fprintf(stderr, "op %-8s @%-5zu", fz_op_names[op], at);
	for (size_t i = at + 1; i < in->off && i < at + 24; i++)
		fprintf(stderr, " %02x", in->p[i]);
	fprintf(stderr, "\n    -> last_avail 0x%04x last_used 0x%04x held %u pkts held %u%s%s\n",
		vl_vq_last_avail(d->vq), vl_vq_last_used(d->vq), vl_vq_zero_copy_held(d->vq),
		d->nheld, vl_vq_broken(d->vq) ? " broken: " : "",
		vl_vq_broken(d->vq) ? vl_drop_name(vl_vq_broken_reason(d->vq)) : "");
	if (d->L == VL_LAYOUT_PACKED) {
		fprintf(stderr, "    ring:");
		for (uint32_t i = 0; i < d->size && i < 32; i++)
			fprintf(stderr, " %u:%04x/%u/%u", i, d->pdesc[i].flags, d->pdesc[i].id,
				d->pdesc[i].len);
		fprintf(stderr, "\n");
	}
}

static void do_op1(struct dp *d, struct fz_in *in, enum fz_op op);

static void do_op(struct dp *d, struct fz_in *in)
{
	size_t at = in->off;
	enum fz_op op = (enum fz_op)(fz_u8(in) % FZ_OP__COUNT);

	do_op1(d, in, op);
	if (fz_trace())
		trace_op(d, op, in, at);
}

static void do_op1(struct dp *d, struct fz_in *in, enum fz_op op)
{
	bool split = d->L == VL_LAYOUT_SPLIT;

	switch (op) {
	case FZ_OP_WRITE: {
		bool ram = fz_u8(in) & 1;
		uint32_t area = ram ? FZ_DP_RAM : FZ_DP_RING_AREA;
		uint32_t off = fz_u16(in) % area, n = fz_u8(in) % 65u;
		uint8_t tmp[64];

		fz_bytes(in, tmp, n);
		if (n > area - off)
			n = area - off;
		memcpy((ram ? d->ram : d->ring) + off, tmp, n);
		break;
	}
	case FZ_OP_FILL: {
		bool ram = fz_u8(in) & 1;
		uint32_t area = ram ? FZ_DP_RAM : FZ_DP_RING_AREA;
		uint32_t off = fz_u16(in) % area, n = fz_u16(in);
		uint8_t b = fz_u8(in);

		if (n > area - off)
			n = area - off;
		memset((ram ? d->ram : d->ring) + off, b, n);
		break;
	}
	case FZ_OP_DESC: {
		uint16_t i = (uint16_t)(fz_u16(in) % d->size);
		uint64_t addr = dec_addr(d, in);
		uint32_t len = dec_len(in);
		uint16_t flags = fz_u16(in), other = fz_u16(in);

		if (split) {
			d->desc[i] = (struct vl_split_desc){addr, len, flags, other};
		} else {
			d->pdesc[i].addr = addr;
			d->pdesc[i].len = len;
			d->pdesc[i].id = other;
			__atomic_store_n(&d->pdesc[i].flags, flags, __ATOMIC_RELEASE);
		}
		break;
	}
	case FZ_OP_TABLE: {
		uint32_t off = fz_u16(in) % (FZ_DP_RAM - 15u);
		uint64_t addr = dec_addr(d, in);
		uint32_t len = dec_len(in);
		uint16_t flags = fz_u16(in), other = fz_u16(in);

		if (split) {
			struct vl_split_desc s = {addr, len, flags, other};

			memcpy(d->ram + off, &s, 16);
		} else {
			struct vl_packed_desc p = {addr, len, other, flags};

			memcpy(d->ram + off, &p, 16);
		}
		break;
	}
	case FZ_OP_POST:
		do_post(d, in);
		break;
	case FZ_OP_AVAIL:
		if (split) {
			d->avail->ring[d->avail_idx & (d->size - 1)] = fz_u16(in);
			d->avail_idx++;
		} else {
			uint16_t pos = fz_u16(in);

			do_pflags(d, pos, fz_u8(in));
		}
		break;
	case FZ_OP_PUBLISH:
		if (split) {
			__atomic_store_n(&d->avail->idx, d->avail_idx, __ATOMIC_RELEASE);
		} else {
			uint16_t v = fz_u16(in);

			d->ppos = (uint16_t)((v & 0x7fffu) % d->size);
			d->pwrap = (v & VL_PACKED_WRAP_BIT) != 0;
		}
		break;
	case FZ_OP_FORCE:
		if (split) {
			d->avail_idx = fz_u16(in);
			__atomic_store_n(&d->avail->idx, d->avail_idx, __ATOMIC_RELEASE);
		} else {
			pstep(&d->ppos, &d->pwrap, fz_u8(in), d->size);
		}
		break;
	case FZ_OP_EVENT:
		if (split) {
			bool ue = fz_u8(in) & 1;
			uint16_t v = fz_u16(in);

			if (ue)
				d->avail->ring[d->size] = v; /* used_event */
			else
				d->avail->flags = v;
		} else {
			uint16_t ow = fz_u16(in), fl = fz_u16(in);

			d->drv_ev->off_wrap = ow;
			__atomic_store_n(&d->drv_ev->flags, fl, __ATOMIC_RELEASE);
		}
		break;
	case FZ_OP_BURST:
		if (d->rx) {
			if (d->bursts++ < FZ_DP_MAX_BURSTS) {
				do_enqueue(d, in);
			} else {
				/* Over the budget: decode the arguments, run nothing. */
				uint32_t n = 1u + fz_u8(in) % FZ_DP_MAX_RX_PKTS;

				for (uint32_t i = 0; i < n; i++) {
					(void)fz_u16(in);
					(void)fz_u8(in);
				}
			}
		} else {
			uint8_t c = fz_u8(in);

			if (d->bursts < FZ_DP_MAX_BURSTS) {
				enum fz_tx_host h = tx_host(d, d->bursts);

				if (h == FZ_TX_DEQUEUE)
					do_dequeue(d, c);
				else
					do_discard(d, c, h == FZ_TX_TOUCH);
			}
			d->bursts++;
		}
		break;
	case FZ_OP_FREE:
		free_held(d, fz_u8(in));
		break;
	case FZ_OP_COMPLETE:
		do_complete(d);
		break;
	case FZ_OP_POOLFAIL: {
		uint8_t a = fz_u8(in);

		if (fz_sink)
			rec_fault(d, a);
		struct vl_lab_arg fail = {.pool = d->pool, .count = a == 255 ? VL_LAB_NEVER : a};

		vl_lab_control(VL_LAB_POOL_FAIL_AFTER, &fail);
		break;
	}
	case FZ_OP_KICKS: {
		bool want = fz_u8(in) & 1;

		/* The core writes the kick wish (and logs it) at once: a host statement. */
		if (fz_sink)
			rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_KICKS,
							   .queue = (uint32_t)d->rq, .value = want});
		vl_vq_set_kicks(d->vq, want);
		if (fz_sink)
			fz_sink->absorb(fz_sink->ctx);
		break;
	}
	case FZ_OP_BATCH: {
		uint32_t t = fz_batch_threshold(fz_u8(in));

		if (fz_sink)
			rec_batch(d, t);
		vl_vq_set_batch_threshold(d->vq, t);
		break;
	}
	case FZ_OP_POLICY: {
		const uint8_t p = fz_u8(in);
		bool burst = p & 1;

		d->line_wait = (p & 4) != 0;
		if (fz_sink)
			rec_policy(d, burst, d->line_wait);
		vl_vq_set_alloc_policy(d->vq, burst ? VL_ALLOC_BURST : VL_ALLOC_AVAILABLE);
		/* Bit 1: evict-after-read, on any queue (RX must ignore it). Not recorded: it
		 * changes no byte and no counter a trace checks, and a trace replays on any CPU.
		 * Where CLFLUSHOPT is missing it stays off (check_evictions expects none). */
		(void)vl_vq_set_evict_reads(d->vq, (p & 2) != 0);
		/* Bit 2: line wait, on any queue: a split ring keeps it off and enqueue ignores it
		 * (check_tx_take, check_no_line_waits). Recorded on TX (rec_policy). */
		vl_vq_set_tx_line_wait(d->vq, d->line_wait);
		/* Bit 3: payload prefetch off (the core's default is on), on any queue. Not
		 * recorded: a hint, it changes no byte and no counter a trace checks
		 * (check_copy_prefetches holds its count). */
		vl_vq_set_tx_prefetch(d->vq, (p & 8) == 0);
		break;
	}
	case FZ_OP_ZC: {
		uint8_t z = fz_u8(in);
		uint32_t min = fz_zc_min_len((uint8_t)(z >> 1)), max = 1u + (z >> 3);

		if (fz_sink)
			rec_zc(d, z & 1, min, max);
		vl_vq_set_zero_copy(d->vq, z & 1, min, max);
		break;
	}
	case FZ_OP_SETMEM:
		if (fz_sink)
			rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_REMAP});
		do_setmem(d);
		break;
	default:
		break;
	}
}

/* ---- setup and teardown -------------------------------------------------------------- */

/* Pools are kept from one input to the next (creating megabytes of buffers per input costs
 * more than the input): one per shape, every buffer back in it at the end of each input. */
static struct vl_pool *dp_pool(uint32_t count, uint32_t buf_size)
{
	static struct {
		struct vl_pool *p;
		uint32_t count, size;
	} cache[8];

	for (unsigned i = 0; i < 8; i++)
		if (cache[i].p && cache[i].count == count && cache[i].size == buf_size) {
			vl_lab_control(VL_LAB_POOL_FAIL_AFTER,
				&(struct vl_lab_arg){.pool = cache[i].p, .count = VL_LAB_NEVER});
			return cache[i].p;
		}
	unsigned i = 0;

	while (i < 7 && cache[i].p)
		i++;
	vl_pool_destroy(cache[i].p); /* all 8 in use: recycle the last */
	cache[i].p = vl_pool_create(count, buf_size);
	if (!cache[i].p)
		fz_fail("vl_pool_create(%u, %u) failed", count, buf_size);
	cache[i].count = count;
	cache[i].size = buf_size;
	return cache[i].p;
}

static void dp_setup(struct dp *d, const struct fz_dp_setup *s)
{
	int err = 0;

	d->s = *s;
	d->features = fz_dp_features(s->features, d->L);
	d->hdr_len = vl_net_hdr_len(d->features);
	if (d->L == VL_LAYOUT_SPLIT)
		d->size = 1u << (s->qsize % 9);
	else
		d->size = 1u + s->qsize;
	d->g = fz_gmem_get(0, FZ_DP_RING_AREA, FZ_DP_RAM,
			   (s->features & FZ_DPF_GRAN_4K) ? LAB_PAGE_SIZE : 0);
	d->ring_gpa = lab_gmem_ring_gpa(d->g);
	d->ram_gpa = lab_gmem_ram_gpa(d->g);
	d->hole_gpa = lab_gmem_hole_gpa(d->g);
	d->ring = lab_gmem_guest_ptr(d->g, d->ring_gpa, FZ_DP_RING_AREA);
	d->ram = lab_gmem_guest_ptr(d->g, d->ram_gpa, FZ_DP_RAM);
	memset(d->ring, s->fill, FZ_DP_RING_AREA);
	memset(d->ram, s->fill, FZ_DP_RAM);
	d->regs = lab_gmem_regions(d->g, &d->nregs);
	d->mem = vl_mem_create(d->regs, d->nregs, &err);
	if (!d->mem)
		fz_fail("vl_mem_create: %s", vl_strerror(err));

	struct vl_vq_config qc;

	vl_vq_config_init(&qc, d->L, d->size);
	qc.features = d->features;
	qc.batch_threshold = fz_batch_threshold(s->batch);
	if (d->L == VL_LAYOUT_SPLIT) {
		qc.desc_gpa = d->ring_gpa;
		qc.driver_gpa = d->ring_gpa + FZ_DP_OFF_AVAIL;
		qc.device_gpa = d->ring_gpa + FZ_DP_OFF_USED;
		qc.last_avail_idx = s->start;
		d->desc = (struct vl_split_desc *)(void *)d->ring;
		d->avail = (struct vl_split_avail *)(void *)(d->ring + FZ_DP_OFF_AVAIL);
		d->used = (struct vl_split_used *)(void *)(d->ring + FZ_DP_OFF_USED);
		d->avail->flags = 0;
		d->avail->idx = s->start;
		d->used->idx = s->start;
		d->avail_idx = s->start;
		/* POST takes descriptors from the upper half on: raw descriptors written at
		 * low indices survive the well-formed chains posted next to them. */
		d->next_desc = (uint16_t)(d->size / 2);
	} else {
		uint16_t at = (uint16_t)((s->start & 0x7fffu) % d->size |
					 (s->start & VL_PACKED_WRAP_BIT));

		qc.desc_gpa = d->ring_gpa;
		qc.driver_gpa = d->ring_gpa + FZ_DP_OFF_DRIVER_EVENT;
		qc.device_gpa = d->ring_gpa + FZ_DP_OFF_DEVICE_EVENT;
		qc.last_avail_idx = at;
		qc.last_used_idx = at;
		d->pdesc = (struct vl_packed_desc *)(void *)d->ring;
		d->drv_ev = (struct vl_packed_event *)(void *)(d->ring + FZ_DP_OFF_DRIVER_EVENT);
		d->ppos = at & 0x7fffu;
		d->pwrap = (at & VL_PACKED_WRAP_BIT) != 0;
	}
	d->vq = vl_vq_create(d->mem, &qc, &err);
	if (!d->vq)
		fz_fail("vl_vq_create (size %u): %s", d->size, vl_strerror(err));
	uint32_t pool_bufs = 1u + (s->pool & 63u) * 8u, pool_size = fz_pool_buf_size(
		(uint8_t)(s->pool >> 6));

	d->pool = dp_pool(pool_bufs, pool_size);
	d->hpool = dp_pool(FZ_HOST_POOL_BUFS, FZ_HOST_BUF_SIZE);
	if (s->zc & 1)
		vl_vq_set_zero_copy(d->vq, true, fz_zc_min_len((uint8_t)(s->zc >> 1)),
				    1u + (s->zc >> 3));
	if (s->features & FZ_DPF_ALLOC_BURST)
		vl_vq_set_alloc_policy(d->vq, VL_ALLOC_BURST);
	if (s->features & FZ_DPF_DIRTY_LOG) {
		d->log_bytes = s->log ? s->log : ((lab_gmem_end_gpa(d->g) >> 12) + 7) / 8;
		d->log = calloc(d->log_bytes, 1);
		if (!d->log)
			fz_fail("out of memory");
		vl_vq_set_dirty_log(d->vq, d->log, d->log_bytes);
	}
	d->rng = 0x1234567ull ^ s->start;
	if (fz_sink)
		rec_setup(d, &qc, pool_bufs, pool_size);
}

static void dp_teardown(struct dp *d)
{
	if (fz_verbose()) {
		const struct vl_vq_stats *st = vl_vq_stats(d->vq);

		fprintf(stderr, "%s: size %u: %u bursts, %llu packets, %u discarded, %llu chains, "
			"%llu used, zc %llu, broken %s, drops:", fz_target, d->size, d->bursts,
			(unsigned long long)st->packets, d->discarded, (unsigned long long)st->chains,
			(unsigned long long)st->used_entries, (unsigned long long)st->zc_packets,
			vl_vq_broken(d->vq) ? vl_drop_name(vl_vq_broken_reason(d->vq)) : "no");
		for (int k = 1; k < VL_DROP__COUNT; k++)
			if (st->drops[k])
				fprintf(stderr, " %s=%llu", vl_drop_name((enum vl_drop)k),
					(unsigned long long)st->drops[k]);
		fputc('\n', stderr);
	}
	/* Everything the host holds goes back; then every chain a zero-copy packet held can
	 * return (unless the queue broke), and both pools must be full again. */
	free_held(d, 0);
	do_complete(d);
	check_queue(d);
	/* The one check here a trace can state exactly: nothing held at the end. */
	if (fz_sink && !d->rx && !vl_vq_broken(d->vq))
		rec_stmt(d, &(struct lab_trace_op){.kind = LAB_T_EXPECT_HELD,
						   .queue = (uint32_t)d->rq});
	if (!vl_vq_broken(d->vq) && vl_vq_zero_copy_held(d->vq) != 0)
		fz_fail("%u chains still held after every packet was freed",
			vl_vq_zero_copy_held(d->vq));
	if (vl_pool_free_count(d->pool) != vl_pool_capacity(d->pool))
		fz_fail("pool accounting: %u of %u dequeue buffers free at the end",
			vl_pool_free_count(d->pool), vl_pool_capacity(d->pool));
	if (vl_pool_free_count(d->hpool) != vl_pool_capacity(d->hpool))
		fz_fail("pool accounting: %u of %u host buffers free at the end",
			vl_pool_free_count(d->hpool), vl_pool_capacity(d->hpool));
	vl_vq_destroy(d->vq);
	vl_mem_destroy(d->mem);
	free(d->log);
}

int fz_dp_run(const uint8_t *data, size_t size, enum vl_layout layout, bool rx)
{
	struct fz_in in = fz_in_make(data, size);
	struct fz_dp_setup s;
	static struct dp d;

	if (size < FZ_DP_HDR_LEN)
		return 0;
	s.features = fz_u8(&in);
	s.qsize = fz_u8(&in);
	s.start = fz_u16(&in);
	s.batch = fz_u8(&in);
	s.pool = fz_u8(&in);
	s.zc = fz_u8(&in);
	s.hold = fz_u8(&in);
	s.log = fz_u8(&in);
	s.fill = fz_u8(&in);
	memset(&d, 0, sizeof(d));
	d.L = layout;
	d.rx = rx;
	dp_setup(&d, &s);
	check_queue(&d);
	for (uint32_t ops = 0; ops < FZ_DP_MAX_OPS && fz_more(&in); ops++) {
		do_op(&d, &in);
		check_queue(&d);
	}
	if (fz_sink)
		rec_finish(&d);
	dp_teardown(&d);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* vhostlab bench: one repetition of one cell.
 *
 * The guest here is deliberately lean (not sim/net_driver.c, whose oracles cost more than
 * the core): fixed buffer slots in guest RAM written once, one descriptor per TX chain
 * (header and payload together, as Linux sends with VERSION_1), one RX buffer per chain.
 * Per packet it writes and checks only the length and a sequence number at both ends of the
 * payload; every 16th packet gets a payload of its own (so that bytes an earlier packet
 * left in a reused buffer cannot pass for it) and is compared byte for byte. That catches a
 * datapath that loses, repeats, reorders, truncates or corrupts packets, at a cost small
 * next to the core's.
 *
 * Only the core's calls are timed: each burst call, and (dequeue) the vl_pkt_free_bulk of
 * the packets it returned -- allocation and free of packet buffers are both the core's
 * pool work (technique 4 counts them together). The rest of the wall time is the driver's. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "guest_mem.h"
#include "vring.h"

#define POOL_BUF 2048u           /* host packet segment, like a DPDK mbuf */
#define RX_MRG_BUF 1536u         /* a mergeable RX buffer, header included (Linux-like) */
#define SAMPLE_EVERY 16u         /* every 16th packet is compared byte for byte */
#define WARMUP_CALLS 256u

/* Out of line on purpose: callgrind collects inside these names only (bench.h). */
__attribute__((noinline)) uint16_t bench_core_dequeue(struct vl_vq *vq, struct vl_pool *pool,
						      struct vl_pkt **pkts, uint16_t count)
{
	return vl_net_dequeue(vq, pool, pkts, count);
}

__attribute__((noinline)) uint16_t bench_core_enqueue(struct vl_vq *vq,
						      struct vl_pkt *const *pkts, uint16_t count,
						      uint8_t *status)
{
	return vl_net_enqueue(vq, pkts, count, status);
}

__attribute__((noinline)) void bench_core_free(struct vl_pkt **pkts, uint32_t n)
{
	vl_pkt_free_bulk(pkts, n);
}

double bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The least time between two clock reads over many tries: what one timed section adds.
 * The least, not the median, so that the correction never exceeds the real overhead. */
double bench_timer_overhead_ns(void)
{
	static double cached = -1;

	if (cached >= 0)
		return cached;
	double best = 1e9;

	for (int i = 0; i < 2000; i++) {
		double a = bench_now_ns(), z = bench_now_ns();

		if (z - a < best)
			best = z - a;
	}
	cached = best;
	return cached;
}

/* One guest queue: its ring, the core's queue, and buffer slots by chain id. */
struct gq {
	struct lab_ring ring;
	struct vl_vq *vq;
	uint64_t slot_gpa0;
	uint64_t table_gpa0;         /* --indirect on: a table of BENCH_MAX_PIECES entries per slot */
	uint32_t stride, buf_len, nslots;
	/* --regions > 1: slot s is buffer number slot_base + s of the guest (TX first, then
	 * RX), placed in region (number % nregions) of region_bytes each from ram_gpa, so
	 * consecutive buffers never share a region. */
	uint32_t nregions, slot_base;
	uint64_t ram_gpa, region_bytes;
	uint32_t *free_slots, nfree;
	uint32_t *slot_of_id;
	uint32_t posted_unused;      /* chains posted that the core has not consumed */
};

struct bench {
	const struct bench_opts *o;
	const struct bench_cell *c;
	struct lab_gmem *g;
	struct vl_mem *mem;
	uint32_t hdr_len;
	uint32_t seq_bytes;          /* min(8, size): the sequence number at payload start */
	bool tail_mark;              /* size >= 16: the sequence number also ends the payload */
	uint8_t *expect;             /* [size]: a sampled packet's payload (make_payload) */
	uint8_t tail[8];             /* RX: the last bytes received of the current packet */
	uint8_t *scratch;            /* [hdr + size]: gathered packet of a sampled check */
	struct gq tx, rx;
	bool has_tx, has_rx;
	uint32_t rx_per_pkt;         /* RX chains one packet needs */
	struct vl_pool *pool;        /* dequeue's packets (and, for enqueue, the host's) */
	struct vl_pkt **pend;        /* [burst] packets waiting for enqueue */
	uint32_t npend;
	uint8_t *status;
	uint64_t tx_seq_post, tx_seq_next; /* TX: next to post / next expected from the core */
	uint64_t rx_seq_send, rx_seq_recv; /* RX: next host packet / next expected in the guest */
	/* RX packet being reassembled from used buffers. */
	uint32_t rx_left, rx_got;
	bool rx_sample;
	char *err;
	size_t errlen;
	bool failed;
};

__attribute__((format(printf, 2, 3))) static int fail(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	if (!b->failed) {
		va_start(ap, fmt);
		vsnprintf(b->err, b->errlen, fmt, ap);
		va_end(ap);
	}
	b->failed = true;
	return -1;
}

static uint64_t features_of(const struct bench_cell *c)
{
	uint64_t f = VL_FEATURE(VL_F_VERSION_1);

	if (c->mergeable)
		f |= VL_FEATURE(VL_F_NET_MRG_RXBUF);
	if (c->layout == VL_LAYOUT_PACKED)
		f |= VL_FEATURE(VL_F_RING_PACKED);
	if (c->in_order)
		f |= VL_FEATURE(VL_F_IN_ORDER);
	if (c->csum)
		f |= VL_FEATURE(VL_F_NET_CSUM);
	if (c->indirect)
		f |= VL_FEATURE(VL_F_RING_INDIRECT_DESC);
	return f;
}

static uint32_t pow2_up(uint32_t v)
{
	uint32_t p = 64;

	while (p < v)
		p <<= 1;
	return p;
}

static uint8_t *gptr(const struct bench *b, uint64_t gpa, uint64_t len)
{
	return lab_gmem_guest_ptr(b->g, gpa, len);
}

static void put_seq(uint8_t *dst, uint64_t seq, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = (uint8_t)(seq >> (8 * i));
}

static bool seq_matches(const uint8_t *src, uint64_t seq, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (src[i] != (uint8_t)(seq >> (8 * i)))
			return false;
	return true;
}

static uint64_t get_seq(const uint8_t *src, uint32_t n)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < n; i++)
		v |= (uint64_t)src[i] << (8 * i);
	return v;
}

static bool sampled(uint64_t seq)
{
	return seq % SAMPLE_EVERY == 0;
}

/* The whole payload of packet seq as a sampled packet carries it: bytes that depend on seq,
 * with the sequence number at both ends. */
static void make_payload(const struct bench *b, uint64_t seq, uint8_t *out)
{
	uint32_t size = b->c->size;

	for (uint32_t i = 0; i < size; i++)
		out[i] = (uint8_t)(i * 131u + 7u + (uint32_t)seq * 29u);
	put_seq(out, seq, b->seq_bytes);
	if (b->tail_mark)
		put_seq(out + size - 8, seq, 8);
}

/* The sender's side for packet seq in a contiguous payload (a TX slot). */
static void mark_buf(const struct bench *b, uint8_t *payload, uint64_t seq)
{
	if (sampled(seq)) {
		make_payload(b, seq, payload);
		return;
	}
	put_seq(payload, seq, b->seq_bytes);
	if (b->tail_mark)
		put_seq(payload + b->c->size - 8, seq, 8);
}

/* The same in a host packet (segments). */
static void mark_pkt(struct bench *b, struct vl_pkt *p, uint64_t seq)
{
	uint8_t m[8];

	if (sampled(seq)) {
		make_payload(b, seq, b->expect);
		vl_pkt_write(p, 0, b->expect, b->c->size);
		return;
	}
	put_seq(m, seq, 8);
	vl_pkt_write(p, 0, m, b->seq_bytes);
	if (b->tail_mark)
		vl_pkt_write(p, b->c->size - 8, m, 8);
}

static uint64_t slot_gpa(const struct gq *q, uint32_t slot)
{
	if (q->nregions > 1) {
		uint64_t k = (uint64_t)q->slot_base + slot;

		return q->ram_gpa + (k % q->nregions) * q->region_bytes +
		       (k / q->nregions) * q->stride;
	}
	return q->slot_gpa0 + (uint64_t)slot * q->stride;
}

static int gq_init(struct bench *b, struct gq *q, uint64_t ring_gpa, uint64_t slot_gpa0,
		   uint32_t buf_len)
{
	const struct bench_cell *c = b->c;
	uint32_t n = b->o->queue_size;
	int err = 0;

	q->buf_len = buf_len;
	q->stride = pow2_up(buf_len);
	q->nslots = n;
	q->slot_gpa0 = slot_gpa0;
	q->free_slots = calloc(n, sizeof(*q->free_slots));
	q->slot_of_id = calloc(n, sizeof(*q->slot_of_id));
	if (!q->free_slots || !q->slot_of_id)
		return fail(b, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		q->free_slots[i] = n - 1 - i;
	q->nfree = n;
	if (lab_ring_init(&q->ring, c->layout, b->g, ring_gpa, n, 0, c->in_order, false) != 0)
		return fail(b, "cannot lay out a %s ring of %u entries", bench_layout_name(c->layout),
			    n);

	struct vl_vq_config cfg;

	vl_vq_config_init(&cfg, c->layout, n);
	lab_ring_device_config(&q->ring, &cfg);
	cfg.features = features_of(c);
	cfg.batch_threshold = c->batch;
	q->vq = vl_vq_create(b->mem, &cfg, &err);
	if (!q->vq)
		return fail(b, "vl_vq_create: %s", vl_strerror(err));
	/* A polling back end, as DPDK's: the guest need not kick. */
	vl_vq_set_kicks(q->vq, false);
	return 0;
}

static void gq_fini(struct gq *q)
{
	if (q->vq) {
		vl_vq_destroy(q->vq);
		lab_ring_fini(&q->ring);
	}
	free(q->free_slots);
	free(q->slot_of_id);
}

static int setup(struct bench *b)
{
	const struct bench_cell *c = b->c;
	uint32_t n = b->o->queue_size;
	char msg[256];

	b->has_tx = c->dir != BENCH_ENQUEUE;
	b->has_rx = c->dir != BENCH_DEQUEUE;
	b->hdr_len = vl_net_hdr_len(features_of(c));
	b->seq_bytes = c->size < 8 ? c->size : 8;
	b->tail_mark = c->size >= 16;

	uint32_t tx_buf = b->hdr_len + c->size;
	uint32_t rx_buf = c->mergeable ? RX_MRG_BUF : (b->hdr_len + c->size > RX_MRG_BUF ?
						       b->hdr_len + c->size : RX_MRG_BUF);

	b->rx_per_pkt = (b->hdr_len + c->size + rx_buf - 1) / rx_buf;
	if (b->rx_per_pkt * b->o->burst > n && c->fill == BENCH_FILL_FULL && b->has_rx)
		return fail(b, "a burst of %u packets of %u bytes needs %u RX buffers; "
			    "--queue-size %u is smaller", b->o->burst, c->size,
			    b->rx_per_pkt * b->o->burst, n);

	uint64_t ring_bytes = lab_ring_area_bytes(c->layout, n);
	uint64_t tx_bytes = (uint64_t)pow2_up(tx_buf) * n, rx_bytes = (uint64_t)pow2_up(rx_buf) * n;
	/* Indirect tables after the buffers, only when used: the other cells keep their layout. */
	uint64_t table_bytes = c->indirect && b->has_tx ? (uint64_t)n * BENCH_TABLE_BYTES : 0;
	struct lab_gmem_config gc = {
		.ram_size = tx_bytes + rx_bytes + table_bytes,
		.ring_area_size = 2 * ring_bytes,
		.seed = 1,
	};

	/* One RAM region: every buffer is contiguous in host memory (zero-copy applies). */
	gc.granularity = (gc.ram_size + LAB_PAGE_SIZE - 1) / LAB_PAGE_SIZE * LAB_PAGE_SIZE;
	/* --regions R: R equal regions, each holding whole buffers of one stride (the larger
	 * of the two directions'), so a buffer never straddles two and zero-copy still
	 * applies. check_combinations keeps indirect tables out of this layout. */
	uint32_t spread_stride = 0;
	uint64_t region_bytes = 0;

	if (c->regions > 1) {
		uint32_t per = (2 * n + c->regions - 1) / c->regions;

		spread_stride = pow2_up(tx_buf) > pow2_up(rx_buf) ? pow2_up(tx_buf) : pow2_up(rx_buf);
		region_bytes = ((uint64_t)per * spread_stride + LAB_PAGE_SIZE - 1) / LAB_PAGE_SIZE *
			       LAB_PAGE_SIZE;
		gc.ram_size = region_bytes * c->regions;
		gc.granularity = region_bytes;
	}
	b->g = lab_gmem_create(&gc, msg, sizeof(msg));
	if (!b->g)
		return fail(b, "%s", msg);

	uint32_t nreg;
	const struct vl_mem_region *reg = lab_gmem_regions(b->g, &nreg);
	int err = 0;

	b->mem = vl_mem_create(reg, nreg, &err);
	if (!b->mem)
		return fail(b, "vl_mem_create: %s", vl_strerror(err));

	b->expect = malloc(c->size);
	b->scratch = malloc(b->hdr_len + c->size + RX_MRG_BUF);
	b->pend = calloc(b->o->burst, sizeof(*b->pend));
	b->status = calloc(b->o->burst, sizeof(*b->status));
	if (!b->expect || !b->scratch || !b->pend || !b->status)
		return fail(b, "out of memory");

	uint64_t ram = lab_gmem_ram_gpa(b->g), rings = lab_gmem_ring_gpa(b->g);

	if (c->regions > 1) {
		b->tx = (struct gq){.nregions = c->regions, .slot_base = 0, .ram_gpa = ram,
				    .region_bytes = region_bytes};
		b->rx = (struct gq){.nregions = c->regions, .slot_base = n, .ram_gpa = ram,
				    .region_bytes = region_bytes};
	}
	if (b->has_tx) {
		if (gq_init(b, &b->tx, rings, ram, tx_buf) != 0)
			return -1;
		if (spread_stride)
			b->tx.stride = spread_stride;
		b->tx.table_gpa0 = ram + tx_bytes + rx_bytes;
		vl_vq_set_alloc_policy(b->tx.vq, c->alloc);
		if (c->zero_copy)
			vl_vq_set_zero_copy(b->tx.vq, true, 0, n);
		/* Every slot carries the header (no offloads) and the payload, written once. */
		for (uint32_t s = 0; s < n; s++) {
			uint8_t *p = gptr(b, slot_gpa(&b->tx, s), tx_buf);

			memset(p, 0, b->hdr_len);
			make_payload(b, UINT64_MAX, p + b->hdr_len);
		}
	}
	if (b->has_rx && gq_init(b, &b->rx, rings + ring_bytes, ram + tx_bytes, rx_buf) != 0)
		return -1;
	if (b->has_rx && spread_stride)
		b->rx.stride = spread_stride;

	/* Dequeue's pool: what the ring can hold, twice (zero-copy packets live until the
	 * next burst), in 2 KiB segments; for enqueue alone, the host's burst of packets. */
	uint32_t segs = (c->size + POOL_BUF - 1) / POOL_BUF;
	uint32_t count = (2 * n + 2 * b->o->burst) * segs;

	b->pool = vl_pool_create(count, POOL_BUF);
	if (!b->pool)
		return fail(b, "vl_pool_create(%u, %u) failed", count, POOL_BUF);
	if (c->dir == BENCH_ENQUEUE) {
		for (uint32_t i = 0; i < b->o->burst; i++) {
			struct vl_pkt *p = vl_pkt_alloc_len(b->pool, c->size);

			if (!p)
				return fail(b, "cannot allocate the host's packets");
			mark_pkt(b, p, b->rx_seq_send++);
			b->pend[b->npend++] = p;
		}
	}
	return 0;
}

static void teardown(struct bench *b)
{
	if (b->has_tx && b->tx.vq)
		vl_vq_complete(b->tx.vq);
	for (uint32_t i = 0; i < b->npend; i++)
		vl_pkt_free(b->pend[i]);
	b->npend = 0;
	gq_fini(&b->tx);
	gq_fini(&b->rx);
	if (b->pool) {
		uint32_t out = vl_pool_destroy(b->pool);

		if (out)
			fail(b, "%u packet buffers never came back to the pool", out);
	}
	vl_mem_destroy(b->mem);
	lab_gmem_destroy(b->g);
	free(b->expect);
	free(b->scratch);
	free(b->pend);
	free(b->status);
}

/* ---- the guest's side ------------------------------------------------------------------ */

/* --indirect on: write the chain's pieces into the slot's table, as a driver does each time
 * it posts, and post one INDIRECT descriptor for it. Split entries are linked with NEXT;
 * packed ones are consecutive (their NEXT is ignored, spec 2.8.8). */
static int post_tx_table(struct bench *b, uint32_t slot, const struct lab_pdesc *d,
			 uint32_t pieces)
{
	struct gq *q = &b->tx;
	const uint64_t table = q->table_gpa0 + (uint64_t)slot * BENCH_TABLE_BYTES;
	uint8_t *t = gptr(b, table, pieces * 16u);

	for (uint32_t i = 0; i < pieces; i++) {
		if (b->c->layout == VL_LAYOUT_PACKED) {
			const struct vl_packed_desc e = {d[i].addr, d[i].len, 0, 0};

			memcpy(t + 16u * i, &e, sizeof(e));
		} else {
			const bool more = i + 1 < pieces;
			const struct vl_split_desc e = {d[i].addr, d[i].len,
							(uint16_t)(more ? VL_DESC_F_NEXT : 0),
							(uint16_t)(more ? i + 1 : 0)};

			memcpy(t + 16u * i, &e, sizeof(e));
		}
	}
	const struct lab_pdesc one = {table, pieces * 16u, VL_DESC_F_INDIRECT};

	return lab_ring_post(&q->ring, &one, 1);
}

/* Make chains available until `want` are waiting for the core (or the ring is full). */
static int post_tx(struct bench *b, uint32_t want)
{
	struct gq *q = &b->tx;

	const uint32_t pieces = b->c->pieces, share = b->c->size / pieces;

	while (q->posted_unused < want && q->nfree > 0) {
		uint32_t slot = q->free_slots[q->nfree - 1];
		uint64_t gpa = slot_gpa(q, slot);
		struct lab_pdesc d[BENCH_MAX_PIECES];

		/* --pieces: the payload cut into equal shares (the last takes the rest), the
		 * header in front of the first; the bytes stay where one descriptor puts them. */
		for (uint32_t i = 0, off = 0; i < pieces; i++) {
			uint32_t len = i + 1 < pieces ? share + (i == 0 ? b->hdr_len : 0)
						      : q->buf_len - off;

			d[i] = (struct lab_pdesc){gpa + off, len, 0};
			off += len;
		}
		mark_buf(b, gptr(b, gpa + b->hdr_len, b->c->size), b->tx_seq_post);
		int id = b->c->indirect ? post_tx_table(b, slot, d, pieces)
					: lab_ring_post(&q->ring, d, pieces);

		if (id < 0)
			break;
		q->nfree--;
		q->slot_of_id[id] = slot;
		q->posted_unused++;
		b->tx_seq_post++;
	}
	lab_ring_publish(&q->ring);
	return 0;
}

static int post_rx(struct bench *b, uint32_t want)
{
	struct gq *q = &b->rx;

	while (q->posted_unused < want && q->nfree > 0) {
		uint32_t slot = q->free_slots[q->nfree - 1];
		struct lab_pdesc d = {slot_gpa(q, slot), q->buf_len, VL_DESC_F_WRITE};
		int id = lab_ring_post(&q->ring, &d, 1);

		if (id < 0)
			break;
		q->nfree--;
		q->slot_of_id[id] = slot;
		q->posted_unused++;
	}
	lab_ring_publish(&q->ring);
	return 0;
}

/* Chains the driver wants waiting before a core call, per the cell's fill. */
static uint32_t fill_target(const struct bench *b, uint32_t per_pkt)
{
	switch (b->c->fill) {
	case BENCH_FILL_FULL: return b->o->burst * per_pkt;
	case BENCH_FILL_ONE: return per_pkt;
	default: return 0;
	}
}

/* A packet the core dequeued must be the next one the guest posted, whole. */
static int check_dequeued(struct bench *b, const struct vl_pkt *p)
{
	uint64_t seq = b->tx_seq_next++;
	uint8_t head[8];

	if (p->pkt_len != b->c->size)
		return fail(b, "dequeue: packet %" PRIu64 " is %u bytes, the guest sent %u", seq,
			    p->pkt_len, b->c->size);
	vl_pkt_read(p, 0, head, b->seq_bytes);
	if (!seq_matches(head, seq, b->seq_bytes))
		return fail(b, "dequeue: expected packet %" PRIu64 ", got packet %" PRIu64
			    " (lost, repeated or reordered)", seq, get_seq(head, b->seq_bytes));
	if (b->tail_mark) {
		vl_pkt_read(p, b->c->size - 8, head, 8);
		if (!seq_matches(head, seq, 8))
			return fail(b, "dequeue: packet %" PRIu64 " ends with packet %" PRIu64
				    "'s sequence number", seq, get_seq(head, 8));
	}
	if (sampled(seq)) {
		vl_pkt_read(p, 0, b->scratch, b->c->size);
		make_payload(b, seq, b->expect);
		if (memcmp(b->scratch, b->expect, b->c->size) != 0)
			return fail(b, "dequeue: packet %" PRIu64 "'s bytes differ from what the "
				    "guest sent", seq);
	}
	return 0;
}

/* TX chains the core returned go back to the free slots. */
static int harvest_tx(struct bench *b)
{
	struct gq *q = &b->tx;
	uint32_t id, len;
	int r;

	while ((r = lab_ring_pop_used(&q->ring, &id, &len)) == 1)
		q->free_slots[q->nfree++] = q->slot_of_id[id];
	if (r < 0)
		return fail(b, "dequeue: the core returned TX chain %u, which was not in flight",
			    id);
	return 0;
}

/* One used RX buffer: part of the packet being reassembled. */
static int rx_buffer(struct bench *b, const uint8_t *buf, uint32_t len)
{
	if (len > b->rx.buf_len)
		return fail(b, "enqueue: used length %u exceeds the %u-byte buffer", len,
			    b->rx.buf_len);
	if (b->rx_left == 0) {
		struct vl_net_hdr h;

		if (len < b->hdr_len + b->seq_bytes)
			return fail(b, "enqueue: first buffer of packet %" PRIu64 " holds %u bytes",
				    b->rx_seq_recv, len);
		memcpy(&h, buf, b->hdr_len);
		b->rx_left = b->c->mergeable ? h.num_buffers : 1;
		if (b->rx_left == 0 || b->rx_left > b->rx.nslots)
			return fail(b, "enqueue: num_buffers %u in packet %" PRIu64, b->rx_left,
				    b->rx_seq_recv);
		if (!seq_matches(buf + b->hdr_len, b->rx_seq_recv, b->seq_bytes))
			return fail(b, "enqueue: expected packet %" PRIu64 ", got packet %" PRIu64
				    " (lost, repeated or reordered)", b->rx_seq_recv,
				    get_seq(buf + b->hdr_len, b->seq_bytes));
		b->rx_got = 0;
		b->rx_sample = sampled(b->rx_seq_recv);
	}
	if (b->rx_got + len > b->hdr_len + b->c->size)
		return fail(b, "enqueue: packet %" PRIu64 " is longer than %u bytes",
			    b->rx_seq_recv, b->hdr_len + b->c->size);
	if (b->rx_sample)
		memcpy(b->scratch + b->rx_got, buf, len);
	/* Keep the last 8 bytes of the packet so far (a buffer may hold fewer). */
	if (len >= 8) {
		memcpy(b->tail, buf + len - 8, 8);
	} else {
		memmove(b->tail, b->tail + len, 8 - len);
		memcpy(b->tail + 8 - len, buf, len);
	}
	b->rx_got += len;
	if (--b->rx_left > 0)
		return 0;
	uint64_t seq = b->rx_seq_recv++;

	if (b->rx_got != b->hdr_len + b->c->size)
		return fail(b, "enqueue: packet %" PRIu64 " arrived with %u bytes, the host sent %u",
			    seq, b->rx_got - b->hdr_len, b->c->size);
	if (b->tail_mark && !seq_matches(b->tail, seq, 8))
		return fail(b, "enqueue: packet %" PRIu64 " ends with packet %" PRIu64
			    "'s sequence number", seq, get_seq(b->tail, 8));
	if (b->rx_sample)
		make_payload(b, seq, b->expect);
	if (b->rx_sample && memcmp(b->scratch + b->hdr_len, b->expect, b->c->size) != 0)
		return fail(b, "enqueue: packet %" PRIu64 "'s bytes differ from what the host sent",
			    seq);
	return 0;
}

static int harvest_rx(struct bench *b)
{
	struct gq *q = &b->rx;
	uint32_t id, len;
	int r;

	while ((r = lab_ring_pop_used(&q->ring, &id, &len)) == 1) {
		uint32_t slot = q->slot_of_id[id];

		q->free_slots[q->nfree++] = slot;
		if (rx_buffer(b, gptr(b, slot_gpa(q, slot), q->buf_len), len) != 0)
			return -1;
	}
	if (r < 0)
		return fail(b, "enqueue: the core returned RX chain %u, which was not in flight",
			    id);
	return 0;
}

/* ---- one iteration ---------------------------------------------------------------------- */

struct timing {
	bool timed;      /* measured loop: call through bench_core_* and read the clock */
	double core_ns;
	uint64_t sections;
};

/* stmt is a core call: time it (measured loop only). */
#define TIMED(t, stmt)                                                                        \
	do {                                                                                  \
		double t0_ = bench_now_ns();                                                  \
		stmt;                                                                         \
		(t)->core_ns += bench_now_ns() - t0_;                                         \
		(t)->sections++;                                                              \
	} while (0)

/* Consumed chains: the core took them off the ring (returned or, zero-copy, held). */
static void note_consumed(struct gq *q)
{
	uint32_t in_flight = lab_ring_in_flight(&q->ring);
	uint32_t held = vl_vq_zero_copy_held(q->vq);

	q->posted_unused = in_flight > held ? in_flight - held : 0;
}

/* Dequeue one burst; returns packets moved or -1. */
static int iter_dequeue(struct bench *b, struct timing *t, uint32_t *calls)
{
	struct vl_pkt *pkts[256];
	uint16_t n;

	post_tx(b, fill_target(b, 1));
	if (t->timed)
		TIMED(t, n = bench_core_dequeue(b->tx.vq, b->pool, pkts, (uint16_t)b->o->burst));
	else
		n = vl_net_dequeue(b->tx.vq, b->pool, pkts, (uint16_t)b->o->burst);
	(*calls)++;
	for (uint16_t i = 0; i < n; i++)
		if (check_dequeued(b, pkts[i]) != 0) {
			vl_pkt_free_bulk(pkts, n);
			return -1;
		}
	/* Zero-copy packets are released at once, so their chains return at the next burst. */
	if (t->timed)
		TIMED(t, bench_core_free(pkts, n));
	else
		vl_pkt_free_bulk(pkts, n);
	if (harvest_tx(b) != 0)
		return -1;
	note_consumed(&b->tx);
	return n;
}

/* Enqueue the pending packets; the handled ones are recycled with new sequence numbers
 * (host packets, enqueue alone) or freed (forwarded packets, both). */
static int iter_enqueue(struct bench *b, struct timing *t, uint32_t *calls, bool forward)
{
	uint16_t n;

	post_rx(b, fill_target(b, b->rx_per_pkt));
	if (t->timed)
		TIMED(t, n = bench_core_enqueue(b->rx.vq, b->pend, (uint16_t)b->npend, b->status));
	else
		n = vl_net_enqueue(b->rx.vq, b->pend, (uint16_t)b->npend, b->status);
	(*calls)++;
	for (uint16_t i = 0; i < n; i++)
		if (b->status[i] != VL_RX_DELIVERED)
			return fail(b, "enqueue: packet %" PRIu64 " of %u bytes was dropped (status "
				    "%u) though the guest's buffers fit it",
				    b->rx_seq_recv + i, b->c->size, b->status[i]);
	struct vl_pkt *done[256];

	memcpy(done, b->pend, n * sizeof(*done));
	memmove(b->pend, b->pend + n, (b->npend - n) * sizeof(*b->pend));
	b->npend -= n;
	if (forward) {
		if (t->timed)
			TIMED(t, bench_core_free(done, n));
		else
			vl_pkt_free_bulk(done, n);
	} else {
		for (uint16_t i = 0; i < n; i++) {
			mark_pkt(b, done[i], b->rx_seq_send++);
			b->pend[b->npend++] = done[i];
		}
	}
	if (harvest_rx(b) != 0)
		return -1;
	note_consumed(&b->rx);
	return n;
}

/* both: dequeue into the pending packets (after what enqueue left), enqueue them. */
static int iter_forward(struct bench *b, struct timing *t, uint32_t *calls)
{
	uint16_t room = (uint16_t)(b->o->burst - b->npend);
	uint16_t n = 0;

	post_tx(b, fill_target(b, 1));
	if (room > 0) {
		if (t->timed)
			TIMED(t, n = bench_core_dequeue(b->tx.vq, b->pool, b->pend + b->npend,
							room));
		else
			n = vl_net_dequeue(b->tx.vq, b->pool, b->pend + b->npend, room);
	}
	for (uint16_t i = 0; i < n; i++)
		if (check_dequeued(b, b->pend[b->npend + i]) != 0) {
			b->npend += n;
			return -1;
		}
	b->npend += n;
	if (harvest_tx(b) != 0)
		return -1;
	note_consumed(&b->tx);
	return iter_enqueue(b, t, calls, true);
}

static int iterate(struct bench *b, struct timing *t, uint32_t *calls)
{
	switch (b->c->dir) {
	case BENCH_DEQUEUE: return iter_dequeue(b, t, calls);
	case BENCH_ENQUEUE: return iter_enqueue(b, t, calls, false);
	default: return iter_forward(b, t, calls);
	}
}

/* At the end every packet the guest posted was dequeued or is still waiting, and every
 * packet the host handed over arrived. */
static int check_accounting(struct bench *b)
{
	if (b->has_tx && b->tx_seq_post - b->tx_seq_next != b->tx.posted_unused)
		return fail(b, "dequeue: the guest posted %" PRIu64 " packets, the core returned %"
			    PRIu64 " and %u are still available", b->tx_seq_post, b->tx_seq_next,
			    b->tx.posted_unused);
	if (b->has_rx && b->rx_left != 0)
		return fail(b, "enqueue: packet %" PRIu64 " is incomplete (%u buffers missing)",
			    b->rx_seq_recv, b->rx_left);
	uint64_t handed = b->c->dir == BENCH_ENQUEUE ? b->rx_seq_send - b->npend :
			  b->c->dir == BENCH_BOTH ? b->tx_seq_next - b->npend : 0;

	if (b->has_rx && handed != b->rx_seq_recv)
		return fail(b, "enqueue: the core took %" PRIu64 " packets, the guest received %"
			    PRIu64, handed, b->rx_seq_recv);
	return 0;
}

/* The guest posts only sound chains: a drop or a broken queue means the core misbehaved.
 * Checked while measuring too, or a run by packet count would wait forever for packets the
 * core keeps dropping; the messages come after the loop. */
static bool core_went_wrong(const struct bench *b, const struct vl_vq_stats *s0)
{
	if (b->has_tx) {
		const struct vl_vq_stats *s = vl_vq_stats(b->tx.vq);

		for (int d = 1; d < VL_DROP__COUNT; d++)
			if (s->drops[d] != s0->drops[d])
				return true;
		if (vl_vq_broken(b->tx.vq))
			return true;
	}
	return b->has_rx && vl_vq_broken(b->rx.vq);
}

int bench_run_rep(const struct bench_opts *o, const struct bench_cell *c, struct bench_rep *r,
		  char *err, size_t errlen)
{
	struct bench b = {.o = o, .c = c, .err = err, .errlen = errlen};
	struct timing warm = {0}, meas = {.timed = true};
	uint32_t calls = 0;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (setup(&b) != 0)
		goto out;
	for (uint32_t i = 0; i < WARMUP_CALLS && rc >= 0; i++)
		rc = iterate(&b, &warm, &calls);
	if (rc < 0)
		goto out;

	struct vl_vq_stats s0 = {0};

	if (b.has_tx)
		s0 = *vl_vq_stats(b.tx.vq);
	/* Empty fill moves nothing: its length is counted in calls (packets / burst). */
	uint64_t want_calls = c->fill == BENCH_FILL_EMPTY ?
				      (o->packets ? (o->packets + o->burst - 1) / o->burst : 0) : 0;
	double start = bench_now_ns(), deadline = start + o->seconds * 1e9;
	uint64_t moved = 0;

	calls = 0;
	for (uint64_t k = 0;; k++) {
		rc = iterate(&b, &meas, &calls);
		if (rc < 0)
			goto out;
		moved += (uint64_t)rc;
		if ((k & 1023) == 1023 && core_went_wrong(&b, &s0))
			break;
		if (o->packets) {
			if (c->fill == BENCH_FILL_EMPTY ? calls >= want_calls : moved >= o->packets)
				break;
		} else if ((k & 15) == 15 && bench_now_ns() >= deadline) {
			break;
		}
	}
	double wall = bench_now_ns() - start;

	r->packets = moved;
	r->calls = calls;
	r->wall_ns = wall;
	r->threads = 1;
	r->thread_wall_mpps[0] = wall > 0 ? (double)moved * 1e3 / wall : 0;
	r->core_ns = meas.core_ns;
	r->driver_ns = wall - meas.core_ns;
	r->checked_bytes = moved / SAMPLE_EVERY * c->size;
	/* The clock reads inside each timed section are not the core's work. */
	double tick = bench_timer_overhead_ns();

	r->core_ns -= tick * (double)meas.sections;
	if (r->core_ns < 0)
		r->core_ns = 0;
	if (b.has_tx) {
		const struct vl_vq_stats *s = vl_vq_stats(b.tx.vq);

		r->alloc_calls = s->alloc_calls - s0.alloc_calls;
		r->alloc_bufs = s->alloc_bufs - s0.alloc_bufs;
		r->zc_packets = s->zc_packets - s0.zc_packets;
		for (int d = 1; d < VL_DROP__COUNT; d++)
			if (s->drops[d] != s0.drops[d])
				fail(&b, "dequeue: the core dropped %" PRIu64 " chains (%s)",
				     s->drops[d] - s0.drops[d], vl_drop_name((enum vl_drop)d));
		if (vl_vq_broken(b.tx.vq))
			fail(&b, "dequeue: the core broke the queue (%s)",
			     vl_drop_name(vl_vq_broken_reason(b.tx.vq)));
	}
	if (b.has_rx && vl_vq_broken(b.rx.vq))
		fail(&b, "enqueue: the core broke the queue (%s)",
		     vl_drop_name(vl_vq_broken_reason(b.rx.vq)));
	check_accounting(&b);
out:
	teardown(&b);
	return b.failed ? -1 : 0;
}

/* SPDX-License-Identifier: MIT */
#include "scenario.h"
#include "scenario_offload.h"
#include "scenario_record.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "door_check.h"
#include "guest_mem.h"
#include "net_driver.h"
#include "vhostlab/vhostlab.h"
#include "vl_lab_control.h"

#define RX_KEY_BASE ((uint64_t)1 << 62)  /* RX packet keys never collide with TX keys */
#define POOL_BUF_SIZE 2048u
#define STALL_ROUNDS 1000u        /* rounds without progress before declaring a hang */
#define HOLD_MAX 8u               /* zero-copy runs: packets the host holds at once */
#define HOLD_ROUNDS 20u           /* ... for at most this many rounds */
#define ZC_MIN_LEN 512u           /* zero-copy threshold in the lab */

/* The zero-copy bound, in ring descriptors (vl_vq.h): the core's default, half the ring. */
static uint32_t zc_bound(const struct lab_scenario_config *cfg)
{
	return cfg->queue_size / 2 ? cfg->queue_size / 2 : 1;
}

const char *lab_faults_name(enum lab_faults f)
{
	static const char *const names[LAB_FAULTS__COUNT] = {"none", "nth", "prob", "scarce"};

	return (unsigned)f < LAB_FAULTS__COUNT ? names[f] : "unknown";
}

void lab_scenario_defaults(struct lab_scenario_config *cfg)
{
	static const uint32_t sizes[] = {64, 128, 256, 257, 1500, 9000};

	memset(cfg, 0, sizeof(*cfg));
	cfg->mergeable = true;
	cfg->indirect = true;
	cfg->modern = true;
	cfg->batch_threshold = VL_BATCH_THRESHOLD_DEFAULT;
	cfg->queue_size = 256;
	cfg->burst = 32;
	cfg->packets = 100000;
	memcpy(cfg->sizes, sizes, sizeof(sizes));
	cfg->nsizes = sizeof(sizes) / sizeof(sizes[0]);
	cfg->seed = 1;
	cfg->containment_every = 16;
	cfg->offload = LAB_OFFLOAD_CSUM;
}

void lab_scenario_describe(const struct lab_scenario_config *cfg, char *buf, size_t len)
{
	char gran[32];

	if (cfg->granularity)
		snprintf(gran, sizeof(gran), "%" PRIu64, cfg->granularity);
	else
		snprintf(gran, sizeof(gran), "coarse");
	snprintf(buf, len, "ring=%s mergeable=%s indirect=%s in_order=%s event_idx=%s batch=%u "
		 "granularity=%s version_1=%s queue=%u zero_copy=%s dirty_log=%s evict=%s "
		 "faults=%s offload=%s seed=%" PRIu64,
		 cfg->layout == VL_LAYOUT_PACKED ? "packed" : "split", cfg->mergeable ? "on" : "off",
		 cfg->indirect ? "on" : "off", cfg->in_order ? "on" : "off",
		 cfg->event_idx ? "on" : "off", cfg->batch_threshold, gran,
		 cfg->modern ? "on" : "off", cfg->queue_size, cfg->zero_copy ? "on" : "off",
		 cfg->dirty_log ? "on" : "off", cfg->evict ? "on" : "off",
		 lab_faults_name(cfg->faults), lab_offload_name(cfg->offload), cfg->seed);
}

/* Everything one run owns, so teardown is one function whatever failed. */
struct run {
	const struct lab_scenario_config *cfg;
	struct lab_scenario_result *res;
	struct lab_gmem *gmem;
	struct vl_mem *mem;
	struct lab_net_driver drv;
	bool drv_ready;
	struct vl_vq *txq, *rxq;
	struct vl_pool *pool;        /* dequeue allocates here (faults are injected here) */
	struct vl_pool *rx_pool;     /* the host builds its RX packets here */
	struct lab_rng fault_rng;
	uint64_t fault_calls;
	/* Zero-copy runs: packets the host holds, and the round each is freed in. */
	struct vl_pkt *held[HOLD_MAX];
	struct lab_expect held_e[HOLD_MAX];
	uint64_t held_until[HOLD_MAX];
	uint32_t nheld;
	/* Dirty log: the device's bitmap and the pages a burst changed, one bit per page. */
	uint8_t *log, *changed;
	uint64_t log_bytes;
	struct vl_pkt **burst;       /* [cfg->burst] dequeued packets */
	struct vl_pkt **pending;     /* [pending_cap] host packets waiting for RX room */
	uint64_t *pending_key;
	struct lab_content *pending_c; /* what each stands for */
	uint32_t pending_cap;        /* a burst, and the frames a GSO packet may be made into */
	struct sc_offload ol;        /* the host's offload work (scenario_offload.h) */
	bool ol_ready;
	uint8_t *status;
	uint32_t npending;
	uint64_t host_bursts;
	uint64_t bursts_since_scan, moved_since_scan; /* host bursts and packets since a scan */
	uint64_t rx_key;
	char drv_err[400];
	/* Recording (cfg->record): the helpers, and per burst the pool's call count and its
	 * first refusal, so the trace can refuse the same call. */
	struct sc_rec *rec;
	struct sc_rec rec_state;
	uint64_t burst_calls;
	uint64_t burst_fails[SC_MAX_FAILS];   /* pool calls refused in this burst */
	uint32_t nburst_fails;
	uint64_t held_num[HOLD_MAX];
};

__attribute__((format(printf, 2, 3))) static int run_fail(struct run *r, const char *fmt, ...)
{
	if (r->res->error[0] == '\0') {
		char where[200], what[600];
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		lab_scenario_describe(r->cfg, where, sizeof(where));
		snprintf(r->res->error, sizeof(r->res->error), "[%s] %s", where, what);
	}
	r->res->ok = false;
	return -1;
}

static int driver_failed(struct run *r)
{
	return run_fail(r, "%s", r->drv_err[0] ? r->drv_err : "simulated driver failure");
}

static uint32_t max_size(const struct lab_scenario_config *cfg)
{
	uint32_t m = 1;

	for (uint32_t i = 0; i < cfg->nsizes; i++)
		if (cfg->sizes[i] > m)
			m = cfg->sizes[i];
	return m;
}

/* The longest packet the guest sends: GSO frames run to 64 KiB (with TSO: traffic.h). */
static uint32_t tx_max_len(const struct lab_scenario_config *cfg)
{
	return cfg->offload >= LAB_OFFLOAD_TSO ? VL_PKT_MAX_LEN : max_size(cfg);
}

/* The longest packet the guest receives: the host's GSO frames whole where it takes them
 * (tso, all), else the frames the host cuts them into (csum). */
static uint32_t rx_max_len(const struct lab_scenario_config *cfg)
{
	if (cfg->offload >= LAB_OFFLOAD_TSO)
		return VL_PKT_MAX_LEN;
	if (cfg->offload == LAB_OFFLOAD_CSUM && max_size(cfg) < LAB_SEGMENT_MAX)
		return LAB_SEGMENT_MAX;
	return max_size(cfg);
}

/* Receive buffers in Linux's "big packets" shape (net_driver.h): guest GSO negotiated
 * without mergeable buffers. */
static bool rx_big(const struct lab_scenario_config *cfg)
{
	return !cfg->mergeable && cfg->offload >= LAB_OFFLOAD_TSO;
}

/* Guest RAM for the worst case in flight: a TX burst of the largest packets and a full RX
 * ring, each allocation padded for misalignment and indirect tables; doubled for
 * fragmentation. Chains at the core's limits need no more: a granule a descriptor and the
 * table, some 80 bytes a descriptor, where a chain of random shape is padded for 3200. GSO
 * frames are few: room for 8 of the longest in flight on TX (a page per fragment), which
 * the driver waits for when it runs short; big receive buffers are LAB_BIG_RX_MAX at most,
 * 18 pages each (or, at the limits, 65 KiB in small pieces). */
static uint64_t ram_needed(const struct lab_scenario_config *cfg, uint32_t hdr_len)
{
	uint64_t pad = (uint64_t)(LAB_SHAPED_SEGS + 1) * 128;
	uint64_t tx = (uint64_t)cfg->burst * (max_size(cfg) + hdr_len + pad);
	uint64_t rx_buf = cfg->mergeable ? 2048 + 64 + pad : rx_max_len(cfg) + hdr_len + 64 + pad;
	uint64_t rx = (uint64_t)cfg->queue_size * rx_buf;

	if (cfg->offload >= LAB_OFFLOAD_TSO)
		tx += 8 * (VL_PKT_MAX_LEN + 4 * 4096 + pad);
	if (rx_big(cfg)) {
		const uint64_t at_limits = (uint64_t)VL_PKT_MAX_LEN + hdr_len +
					   64 * (uint64_t)(cfg->queue_size < LAB_MAX_SEGS
								   ? cfg->queue_size
								   : LAB_MAX_SEGS);

		rx = LAB_BIG_RX_MAX * (at_limits > 19 * 4096 ? at_limits : 19 * 4096);
	}
	uint64_t ram = 2 * (tx + rx) + (1u << 20);
	uint64_t unit = cfg->granularity ? cfg->granularity : LAB_PAGE_SIZE;

	return (ram + unit - 1) / unit * unit;
}

void lab_scenario_gmem_config(const struct lab_scenario_config *cfg, struct lab_gmem_config *gc)
{
	uint64_t features = cfg->mergeable ? VL_FEATURE(VL_F_NET_MRG_RXBUF) : 0;

	/* The header length is all setup's features change here (ram_needed). */
	if (cfg->modern || cfg->layout == VL_LAYOUT_PACKED)
		features |= VL_FEATURE(VL_F_VERSION_1);
	*gc = (struct lab_gmem_config){
		.ram_size = ram_needed(cfg, vl_net_hdr_len(features)),
		.ring_area_size = 2 * lab_ring_area_bytes(cfg->layout, cfg->queue_size),
		.granularity = cfg->granularity,
		.seed = cfg->seed,
	};
}

/* ---- containment ------------------------------------------------------------------- */

struct diff_ctx {
	struct run *r;
	const char *burst_kind;
	int bad;
};

static void on_diff(void *p, uint64_t gpa, uint64_t len)
{
	struct diff_ctx *c = p;

	if (c->r->changed)
		for (uint64_t pg = gpa >> 12; pg <= (gpa + len - 1) >> 12; pg++)
			c->r->changed[pg >> 3] |= (uint8_t)(1u << (pg & 7));
	if (c->bad || lab_drv_write_allowed(&c->r->drv, gpa, len))
		return;
	c->bad = 1;
	run_fail(c->r, "containment: the %s burst changed guest bytes [0x%" PRIx64 ", +%" PRIu64
		 ") the driver never granted for writing", c->burst_kind, gpa, len);
}

static bool scan_due(const struct run *r)
{
	/* The first bursts always; then after containment_every half-full bursts' worth of
	 * packets, or after 4 times as many bursts when they move less. Counting bursts alone,
	 * zero-copy runs under IN_ORDER (which stall at the lease bound for many small bursts
	 * while a packet is held) scanned the whole of guest memory about 13 times as often
	 * per packet and took about 5 times as long, without looking at more traffic. */
	const uint64_t every = r->cfg->containment_every;

	if (r->cfg->containment_max && r->res->containment_scans >= r->cfg->containment_max)
		return false;
	return every && (r->host_bursts < 4 || 2 * r->moved_since_scan >= every * r->cfg->burst ||
			 r->bursts_since_scan >= 4 * every);
}

/* After each host burst: what it moved, towards the next scan. */
static void scan_count(struct run *r, bool scanned, uint32_t moved)
{
	r->host_bursts++;
	if (scanned) {
		r->bursts_since_scan = 0;
		r->moved_since_scan = 0;
	}
	r->bursts_since_scan++;
	r->moved_since_scan += moved;
}

/* Before a scanned burst: remember every guest byte, and start the dirty log afresh so it
 * holds exactly what this burst marks. */
static void scan_begin(struct run *r)
{
	lab_gmem_snapshot(r->gmem);
	if (r->log) {
		memset(r->log, 0, r->log_bytes);
		memset(r->changed, 0, r->log_bytes);
	}
}

/* Every page whose bytes the burst changed must be marked in the dirty log (a migration
 * would otherwise copy a stale page); marks on pages that did not change are counted. */
static int dirty_log_check(struct run *r, const char *kind)
{
	for (uint64_t i = 0; i < r->log_bytes; i++) {
		uint8_t missing = r->changed[i] & (uint8_t)~r->log[i];
		uint8_t clean = r->log[i] & (uint8_t)~r->changed[i];

		if (missing) {
			uint64_t page = i * 8 + (uint64_t)__builtin_ctz(missing);

			return run_fail(r, "dirty log: the %s burst changed guest page %" PRIu64
					" (gpa 0x%" PRIx64 ") but did not mark it", kind, page,
					page << 12);
		}
		r->res->log_pages_checked += (uint64_t)__builtin_popcount(r->changed[i]);
		r->res->log_clean_marks += (uint64_t)__builtin_popcount(clean);
	}
	r->res->checks++;
	return 0;
}

static bool door_rule(const void *ctx, uint64_t gpa, uint64_t len)
{
	return lab_drv_write_allowed(ctx, gpa, len);
}

/* The door check's verdict so far (door_check.h): a violation fails the run, naming the
 * burst kind after which it was seen. */
static int door_check(struct run *r, const char *kind)
{
	char msg[256];

	if (!lab_door_first_violation(msg, sizeof(msg)))
		return 0;
	return run_fail(r, "door: by the end of a %s burst, %s (%" PRIu64 " such translations)",
			kind, msg, lab_door_violations());
}

static int containment_check(struct run *r, const char *kind)
{
	if (door_check(r, kind) != 0)
		return -1;
	struct diff_ctx c = {.r = r, .burst_kind = kind};

	lab_gmem_diff(r->gmem, on_diff, &c);
	r->res->containment_scans++;
	if (c.bad)
		return -1;
	return r->log ? dirty_log_check(r, kind) : 0;
}

/* Pool faults for dequeue: every 7th call, or 1 in 10. */
static bool pool_fault(void *ctx)
{
	struct run *r = ctx;

	bool fail;

	r->fault_calls++;
	if (r->cfg->faults == LAB_FAULTS_NTH)
		fail = r->fault_calls % 7 == 0;
	else
		fail = lab_rng_chance(&r->fault_rng, 1, 10);
	if (fail && r->nburst_fails < SC_MAX_FAILS)
		r->burst_fails[r->nburst_fails++] = r->burst_calls;
	r->burst_calls++;
	return fail;
}

/* Recording: the trace's setup block from the run's guest and queues. */
static int record_setup(struct run *r, uint64_t features, const struct vl_vq_config *txc,
			const struct vl_vq_config *rxc, uint32_t pool_bufs)
{
	struct sc_rec *s = &r->rec_state;

	s->rec = lab_rec_create(r->gmem, features, r->cfg->seed);
	if (!s->rec)
		return run_fail(r, "out of memory for the recorder");
	s->seed = r->cfg->seed;
	s->hdr_len = vl_net_hdr_len(features);
	s->mergeable = r->cfg->mergeable;
	lab_rec_queue(s->rec, "tx", LAB_TRACE_TX, txc);
	lab_rec_queue(s->rec, "rx", LAB_TRACE_RX, rxc);
	if (r->cfg->zero_copy) {
		struct lab_trace_queue *q = lab_rec_queue_ref(s->rec, SC_TX);

		q->zero_copy = true;
		q->zc_min = ZC_MIN_LEN;
		q->zc_max = zc_bound(r->cfg);
	}
	lab_rec_set_pool(s->rec, pool_bufs, POOL_BUF_SIZE);
	if (r->log_bytes)
		lab_rec_set_dirty_log(s->rec, r->log_bytes * 8);
	r->drv.rx_observer = sc_rec_rx_landing;
	r->drv.rx_observer_ctx = s;
	r->rec = s;
	r->res->recorder = s->rec;
	return 0;
}

/* ---- setup and teardown ------------------------------------------------------------ */

static int setup(struct run *r)
{
	const struct lab_scenario_config *cfg = r->cfg;
	/* The offloads the configuration's driver takes (traffic.h). */
	uint64_t features = lab_offload_features(cfg->offload);
	char msg[256] = "";
	int err = 0;

	if (cfg->mergeable)
		features |= VL_FEATURE(VL_F_NET_MRG_RXBUF);
	/* The packed ring exists only for modern (VERSION_1) devices. */
	if (cfg->modern || cfg->layout == VL_LAYOUT_PACKED)
		features |= VL_FEATURE(VL_F_VERSION_1);
	if (cfg->layout == VL_LAYOUT_PACKED)
		features |= VL_FEATURE(VL_F_RING_PACKED);
	if (cfg->in_order)
		features |= VL_FEATURE(VL_F_IN_ORDER);
	if (cfg->event_idx)
		features |= VL_FEATURE(VL_F_RING_EVENT_IDX);
	if (cfg->indirect)
		features |= VL_FEATURE(VL_F_RING_INDIRECT_DESC);
	uint32_t hdr_len = vl_net_hdr_len(features);

	r->res->hdr_len = hdr_len;
	r->res->features = features;
	struct lab_gmem_config gc;

	lab_scenario_gmem_config(cfg, &gc);
	if (cfg->gmem) {
		r->gmem = cfg->gmem;
		if (lab_gmem_ram_size(r->gmem) < gc.ram_size ||
		    lab_gmem_ring_size(r->gmem) < gc.ring_area_size)
			return run_fail(r, "guest memory: the caller's has %" PRIu64 " bytes of RAM "
					"and a %" PRIu64 "-byte ring area, the run needs %" PRIu64
					" and %" PRIu64, lab_gmem_ram_size(r->gmem),
					lab_gmem_ring_size(r->gmem), gc.ram_size, gc.ring_area_size);
	} else {
		r->gmem = lab_gmem_create(&gc, msg, sizeof(msg));
		if (!r->gmem)
			return run_fail(r, "guest memory: %s", msg);
	}
	uint32_t n;
	const struct vl_mem_region *regs = lab_gmem_regions(r->gmem, &n);

	r->mem = vl_mem_create(regs, n, &err);
	if (!r->mem)
		return run_fail(r, "vl_mem_create: %s", vl_strerror(err));

	struct lab_net_driver_config dc = {
		.layout = cfg->layout,
		.queue_size = cfg->queue_size,
		.features = features,
		.use_indirect = cfg->indirect,
		.sizes = cfg->sizes,
		.nsizes = cfg->nsizes,
		.rx_buf_max = rx_max_len(cfg) + hdr_len,
		.rx_big = rx_big(cfg),
		.seed = cfg->seed,
		/* Split: start near the top of the 16-bit index space so every run crosses the
		 * wrap. Packed: start near the end of the ring so the wrap counters flip at
		 * once. */
		.start_idx = cfg->layout == VL_LAYOUT_PACKED
				     ? (uint16_t)(cfg->queue_size > 3 ? cfg->queue_size - 3 : 0)
				     : (uint16_t)(0x10000u - 3u * (cfg->queue_size % 0x8000u) - 7u),
	};

	lab_traffic_for(cfg->offload, false, cfg->seed, &dc.tx_traffic);
	if (lab_drv_init(&r->drv, r->gmem, &dc, r->drv_err, sizeof(r->drv_err)) != 0)
		return driver_failed(r);
	r->drv_ready = true;
	/* The door check: the core's every translation for writing must be of something the
	 * driver lets the device write (door_check.h), the rule the snapshot diff applies. */
	lab_door_reset();
	lab_door_watch(door_rule, &r->drv);

	struct vl_vq_config qc;

	vl_vq_config_init(&qc, cfg->layout, cfg->queue_size);
	qc.features = features;
	qc.batch_threshold = cfg->batch_threshold;
	lab_ring_device_config(&r->drv.tx, &qc);
	r->txq = vl_vq_create(r->mem, &qc, &err);
	if (!r->txq)
		return run_fail(r, "TX queue: %s", vl_strerror(err));
	lab_ring_device_config(&r->drv.rx, &qc);
	r->rxq = vl_vq_create(r->mem, &qc, &err);
	if (!r->rxq)
		return run_fail(r, "RX queue: %s", vl_strerror(err));

	/* Dequeue's pool: a burst of the largest packets plus the ones the host holds; when
	 * scarce, only a couple of large packets' worth of the configured sizes, and room for
	 * one GSO frame where the guest sends them (they are one packet in 48: sized for the
	 * 64 KiB ones, the pool would seldom run short). The host's RX packets come from a
	 * pool of their own, so faults hit the core alone. */
	const uint32_t segs_per_pkt = tx_max_len(cfg) / POOL_BUF_SIZE + 1;
	const uint32_t sized_segs = max_size(cfg) / POOL_BUF_SIZE + 1;
	/* A held zero-copy packet has a segment per piece of its payload, up to VL_ZC_MAX_SEGS
	 * (a scarce pool stays scarce: running short is what that run is about). */
	uint32_t held_per_pkt = cfg->faults == LAB_FAULTS_SCARCE ? sized_segs : segs_per_pkt;

	if (cfg->faults != LAB_FAULTS_SCARCE && held_per_pkt < VL_ZC_MAX_SEGS)
		held_per_pkt = VL_ZC_MAX_SEGS;
	uint32_t held_segs = cfg->zero_copy ? HOLD_MAX * held_per_pkt : 0;
	uint32_t tx_bufs = cfg->faults == LAB_FAULTS_SCARCE
				   ? 2 * sized_segs + 2 + (segs_per_pkt > sized_segs ? segs_per_pkt : 0) +
					     held_segs
				   : cfg->burst * segs_per_pkt + 64 + held_segs;

	r->pool = vl_pool_create(tx_bufs, POOL_BUF_SIZE);
	/* The host's packets: a burst waiting for room, 64 KiB each where the driver takes GSO
	 * frames whole (rx_max_len), and one GSO packet being made to fit (its far side sends
	 * them from csum on: traffic.h). */
	r->pending_cap = cfg->burst + LAB_GSO_FRAMES_MAX;
	r->rx_pool = vl_pool_create(cfg->burst * (rx_max_len(cfg) / POOL_BUF_SIZE + 1) +
					    (cfg->offload >= LAB_OFFLOAD_CSUM
						     ? VL_PKT_MAX_LEN / POOL_BUF_SIZE + 1
						     : 0) +
					    16,
				    POOL_BUF_SIZE);
	if (!r->pool || !r->rx_pool)
		return run_fail(r, "out of memory");
	r->fault_rng = lab_rng_make(cfg->seed, 0xfa17);
	if (cfg->faults == LAB_FAULTS_NTH || cfg->faults == LAB_FAULTS_PROB)
		vl_lab_control(VL_LAB_POOL_FAULT_HOOK,
			       &(struct vl_lab_arg){.pool = r->pool, .fail = pool_fault, .ctx = r});
	if (cfg->zero_copy)
		vl_vq_set_zero_copy(r->txq, true, ZC_MIN_LEN, zc_bound(cfg));
	if (cfg->evict) {
		int e = vl_vq_set_evict_reads(r->txq, true);

		if (e != VL_OK)
			return run_fail(r, "evict-after-read: %s", vl_strerror(e));
	}
	if (cfg->dirty_log) {
		/* One bit per 4 KiB page of all guest-physical memory. */
		r->log_bytes = ((lab_gmem_end_gpa(r->gmem) >> 12) + 7) / 8;
		r->log = calloc(r->log_bytes, 1);
		r->changed = calloc(r->log_bytes, 1);
		if (!r->log || !r->changed)
			return run_fail(r, "out of memory");
		vl_vq_set_dirty_log(r->txq, r->log, r->log_bytes);
		vl_vq_set_dirty_log(r->rxq, r->log, r->log_bytes);
	}
	r->burst = calloc(cfg->burst, sizeof(*r->burst));
	r->pending = calloc(r->pending_cap, sizeof(*r->pending));
	r->pending_key = calloc(r->pending_cap, sizeof(*r->pending_key));
	r->pending_c = calloc(r->pending_cap, sizeof(*r->pending_c));
	r->status = calloc(cfg->burst, 1);
	if (!r->pool || !r->burst || !r->pending || !r->pending_key || !r->pending_c ||
	    !r->status)
		return run_fail(r, "out of memory");
	r->ol_ready = true;
	if (sc_ol_init(&r->ol, cfg, max_size(cfg)) != 0)
		return run_fail(r, "out of memory");
	r->rx_key = RX_KEY_BASE;
	if (cfg->record) {
		struct vl_vq_config txc, rxc;

		vl_vq_config_init(&txc, cfg->layout, cfg->queue_size);
		txc.features = features;
		txc.batch_threshold = cfg->batch_threshold;
		rxc = txc;
		lab_ring_device_config(&r->drv.tx, &txc);
		lab_ring_device_config(&r->drv.rx, &rxc);
		return record_setup(r, features, &txc, &rxc, tx_bufs);
	}
	return 0;
}

static void teardown(struct run *r)
{
	for (uint32_t i = 0; i < r->npending; i++)
		vl_pkt_free(r->pending[i]);
	r->npending = 0;
	if (r->ol_ready)
		sc_ol_fini(&r->ol);
	/* Packets still held (a run that failed): freed while their queue exists. */
	for (uint32_t i = 0; i < r->nheld; i++)
		vl_pkt_free(r->held[i]);
	r->nheld = 0;
	if (r->pool) {
		uint32_t out = vl_pool_destroy(r->pool);

		if (out != 0)
			run_fail(r, "pool hygiene: %u buffers never came back", out);
	}
	if (r->rx_pool) {
		uint32_t out = vl_pool_destroy(r->rx_pool);

		if (out != 0)
			run_fail(r, "pool hygiene: %u RX buffers never came back", out);
	}
	free(r->log);
	free(r->changed);
	vl_vq_destroy(r->txq);
	vl_vq_destroy(r->rxq);
	vl_mem_destroy(r->mem);
	lab_door_watch(NULL, NULL);
	if (r->drv_ready)
		lab_drv_fini(&r->drv);
	if (r->gmem != r->cfg->gmem)
		lab_gmem_destroy(r->gmem);
	free(r->burst);
	free(r->pending);
	free(r->pending_key);
	free(r->pending_c);
	free(r->status);
}

/* ---- notifications ----------------------------------------------------------------- */

/* The driver's used-notification wish before a burst: a mix of off, next, and "a few
 * buffers later" (event idx), as a real driver switches between interrupt and polling. */
static void arm_calls(struct run *r, struct lab_ring *ring)
{
	uint32_t pick = lab_rng_below(&r->drv.rng, 4);
	enum lab_call_mode mode = pick == 0 ? LAB_CALLS_OFF : pick == 3 ? LAB_CALLS_LATER
									: LAB_CALLS_NEXT;
	uint32_t n = lab_ring_in_flight(ring);
	/* Often the very last buffer in flight: the boundary a wrap-around slip would miss. */
	uint32_t later = n == 0 ? 0 : lab_rng_chance(&r->drv.rng, 1, 2) ? n - 1
								       : lab_rng_below(&r->drv.rng, n);

	lab_ring_arm_calls(ring, mode, later);
}

/* After the burst and a full harvest: a call the guest's reckoning says was due and the core
 * did not signal is a lost wake-up (the guest would sleep forever); the reverse is counted. */
static int check_call(struct run *r, struct lab_ring *ring, const struct vl_vq *vq,
		      const char *q)
{
	bool due = lab_ring_call_due(ring), signalled = vl_vq_needs_call(vq);

	if (r->rec && due)
		sc_rec_expect_call(r->rec, ring == &r->drv.tx ? SC_TX : SC_RX);
	r->res->calls_due += due;
	if (due && !signalled)
		return run_fail(r, "notifications: %s used buffers passed the guest's event "
				"(mode %d) but the core signalled no call: lost wake-up", q,
				(int)ring->call_mode);
	if (!due && signalled)
		r->res->calls_spurious++;
	r->res->checks++;
	return 0;
}

/* The device polls in some phases (kicks off) and sleeps on kicks in others. */
static bool kicks_wanted(uint64_t round)
{
	return (round / 32) % 2 == 0;
}

/* After posting: when the device wants kicks and had drained the ring at its last burst, it
 * may be asleep, so the guest's reckoning (from the device's suppression structure) must call
 * for a kick, or the device would never learn of the new buffers. */
static int check_kick(struct run *r, struct lab_ring *ring, const struct vl_vq *vq,
		      bool drained, const char *q)
{
	bool due = lab_ring_kick_due(ring);
	/* set_kicks(true) writes the wish at once; a device coming back from polling runs a
	 * burst before sleeping, so only rounds after a burst in kick mode are judged. */
	bool wanted = kicks_wanted(r->drv.round) && kicks_wanted(r->drv.round - 1);

	r->res->kicks_sent += due;
	if (!due && lab_ring_posted(ring))
		r->res->kicks_skipped++;
	if (wanted && drained && lab_ring_posted(ring) && !due)
		return run_fail(r, "notifications: the device wants kicks and had drained the %s "
				"ring, but its suppression structure lets the guest skip the kick "
				"(last_avail %u): lost kick", q, vl_vq_last_avail(vq));
	r->res->checks++;
	return 0;
}

/* ---- one round: a TX burst and an RX burst ----------------------------------------- */

/* Zero-copy runs: the host keeps some packets (zero-copied or not) for a while, as an
 * application queueing them would, and frees them later in random order. */
static bool hold_maybe(struct run *r, struct vl_pkt *pkt, const struct lab_expect *e,
		       uint64_t num)
{
	if (!r->cfg->zero_copy || r->nheld == HOLD_MAX || !lab_rng_chance(&r->drv.rng, 1, 4))
		return false;
	r->held[r->nheld] = pkt;
	r->held_e[r->nheld] = *e;
	r->held_num[r->nheld] = num;
	r->held_until[r->nheld] = r->drv.round + 1 + lab_rng_below(&r->drv.rng, HOLD_ROUNDS);
	r->nheld++;
	if (r->nheld > r->res->held_max)
		r->res->held_max = r->nheld;
	return true;
}

/* Free the held packets that are due (all of them when `all`), in random order, each checked
 * once more: a chain the guest has not got back still holds what it sent. */
static int release_held(struct run *r, bool all)
{
	while (r->nheld > 0) {
		uint32_t due[HOLD_MAX], ndue = 0;

		for (uint32_t i = 0; i < r->nheld; i++)
			if (all || r->held_until[i] <= r->drv.round)
				due[ndue++] = i;
		if (ndue == 0)
			return 0;
		uint32_t k = due[lab_rng_below(&r->drv.rng, ndue)];

		if (lab_drv_recheck(&r->drv, r->held[k], &r->held_e[k]) != 0)
			return driver_failed(r);
		vl_pkt_free(r->held[k]);
		if (r->rec)
			sc_rec_free(r->rec, r->held_num[k]);
		r->held[k] = r->held[r->nheld - 1];
		r->held_e[k] = r->held_e[r->nheld - 1];
		r->held_num[k] = r->held_num[r->nheld - 1];
		r->held_until[k] = r->held_until[r->nheld - 1];
		r->nheld--;
	}
	return 0;
}

/* Rounds a TX chain may wait before the accounting oracle calls it lost: one normally; a
 * held packet's rounds (plus the in-order queue behind it) with zero-copy; the pool's
 * refusals or scarcity with faults. */
static uint64_t tx_age_bound(const struct run *r)
{
	uint64_t bound = 1;

	/* Zero-copy: a chain may be held for HOLD_ROUNDS. Under IN_ORDER every chain behind a
	 * held one takes a lease, bursts stop at the lease bound (zc_bound ring descriptors),
	 * and a posted chain may wait for the whole ring ahead of it to pass through the
	 * leases, each group waiting up to HOLD_ROUNDS. A group passes at least the bound less
	 * one chain's descriptors (the driver's chains have at most LAB_MAX_SEGS; one larger
	 * than the bound passes alone, copied, once nothing is held): one wait per that many
	 * descriptors of the ring. */
	if (r->cfg->zero_copy && r->cfg->in_order) {
		uint32_t b = r->cfg->queue_size - 1 < zc_bound(r->cfg) ? r->cfg->queue_size - 1
								      : zc_bound(r->cfg);
		uint32_t per = b > LAB_MAX_SEGS ? b - LAB_MAX_SEGS + 1 : 1;

		bound += (r->cfg->queue_size / per + 2) * HOLD_ROUNDS;
	}
	else if (r->cfg->zero_copy)
		bound += 2 * HOLD_ROUNDS + 4;
	if (r->cfg->faults != LAB_FAULTS_NONE)
		bound += 200;
	return bound;
}

static int tx_round(struct run *r, uint64_t *posted)
{
	if (release_held(r, false) != 0)
		return -1;
	const struct lab_scenario_config *cfg = r->cfg;
	struct lab_scenario_result *res = r->res;
	struct lab_ring *ring = &r->drv.tx;

	if (r->rec) {
		sc_rec_before(r->rec);
		sc_rec_kicks(r->rec, SC_TX, kicks_wanted(r->drv.round));
	}
	vl_vq_set_kicks(r->txq, kicks_wanted(r->drv.round));
	if (r->rec)
		sc_rec_after(r->rec);
	lab_ring_mark_avail(ring);
	bool drained = vl_vq_last_avail(r->txq) == lab_ring_marked_avail(ring);
	/* Now and then a single packet: a kick wish off by one only shows then. */
	uint32_t want = lab_rng_chance(&r->drv.rng, 1, 8) ? 1 : cfg->burst;

	for (uint32_t i = 0; i < want && *posted < cfg->packets; i++) {
		int p = lab_drv_post_tx(&r->drv);

		if (p < 0)
			return driver_failed(r);
		if (p == 0)
			break;
		(*posted)++;
	}
	lab_ring_publish(ring);
	if (check_kick(r, ring, r->txq, drained, "TX") != 0)
		return -1;
	arm_calls(r, ring);

	bool scan = scan_due(r);

	if (scan)
		scan_begin(r);
	if (r->rec)
		sc_rec_before(r->rec);
	r->burst_calls = 0;
	r->nburst_fails = 0;
	uint16_t n = vl_net_dequeue(r->txq, r->pool, r->burst, (uint16_t)cfg->burst);
	uint64_t first_num = 0;

	if (r->rec) {
		first_num = sc_rec_dequeue(r->rec, cfg->burst, r->burst_fails, r->nburst_fails);
		r->rec->dequeued += n;
		sc_rec_after(r->rec);
	}
	scan_count(r, scan, n);
	if (scan && containment_check(r, "dequeue") != 0)
		return -1;
	int rc = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct lab_expect e;

		bool checked = rc == 0;

		e.key = UINT64_MAX;  /* stays when the guest posted nothing for this packet */
		if (checked && lab_drv_check_dequeued(&r->drv, r->burst[i], &e) != 0)
			rc = driver_failed(r);
		/* The guest's record of this packet, whether or not the core's matched it. */
		if (r->rec && checked && e.key != UINT64_MAX)
			sc_rec_expect_packet(r->rec, first_num + i, &e);
		res->tx_bytes += r->burst[i]->pkt_len;
		const bool held = rc == 0 && hold_maybe(r, r->burst[i], &e, first_num + i);

		/* What an application does with an offloaded packet, checked against the
		 * model (scenario_offload.h). */
		if (rc == 0 && sc_ol_tx(&r->ol, r->burst[i], &e, held) != 0)
			rc = run_fail(r, "%s", r->ol.err);
		if (held)
			continue;
		vl_pkt_free(r->burst[i]);
		if (r->rec)
			sc_rec_free(r->rec, first_num + i);
	}
	res->tx_packets += n;
	if (rc != 0)
		return rc;
	if (lab_drv_harvest_tx(&r->drv) != 0 || lab_drv_check_tx_age(&r->drv, tx_age_bound(r)) != 0)
		return driver_failed(r);
	return check_call(r, ring, r->txq, "TX");
}

static int rx_round(struct run *r, uint64_t *generated)
{
	const struct lab_scenario_config *cfg = r->cfg;
	struct lab_scenario_result *res = r->res;
	struct lab_ring *ring = &r->drv.rx;

	if (lab_drv_harvest_rx(&r->drv) != 0)
		return driver_failed(r);
	if (r->rec) {
		sc_rec_before(r->rec);
		sc_rec_kicks(r->rec, SC_RX, kicks_wanted(r->drv.round));
	}
	vl_vq_set_kicks(r->rxq, kicks_wanted(r->drv.round));
	if (r->rec)
		sc_rec_after(r->rec);
	lab_ring_mark_avail(ring);
	bool drained = vl_vq_last_avail(r->rxq) == lab_ring_marked_avail(ring);
	/* Usually top the ring up; now and then post a single buffer. */
	uint32_t room = cfg->queue_size - r->drv.rx_in_flight;

	if (room > 1 && lab_rng_chance(&r->drv.rng, 1, 8))
		room = 1;
	for (uint32_t posted = 0; posted < room; posted++) {
		int p = lab_drv_post_rx(&r->drv);

		if (p < 0)
			return driver_failed(r);
		if (p == 0)
			break;
	}
	lab_ring_publish(ring);
	if (check_kick(r, ring, r->rxq, drained, "RX") != 0)
		return -1;
	arm_calls(r, ring);

	/* The host's packets, made fit the driver where they must be (scenario_offload.h):
	 * each may become several, all of which count towards the packets to deliver; so a GSO
	 * packet is sent only while that many are still to come. */
	while (r->npending < cfg->burst && *generated < cfg->packets) {
		struct lab_rng rng = lab_rng_make(cfg->seed, r->rx_key ^ 0x1234);
		uint32_t len = cfg->sizes[lab_rng_below(&rng, cfg->nsizes)];
		const uint64_t left = cfg->packets - *generated;
		const uint32_t space = r->pending_cap - r->npending < left
					       ? r->pending_cap - r->npending
					       : (uint32_t)left;
		int n = sc_ol_rx(&r->ol, r->rxq, r->rx_pool, r->rx_key, len,
				 space >= LAB_GSO_FRAMES_MAX, r->pending + r->npending,
				 r->pending_c + r->npending, space);

		if (n < 0)
			return run_fail(r, "%s", r->ol.err);
		for (int k = 0; k < n; k++)
			r->pending_key[r->npending + (uint32_t)k] = r->rx_key;
		r->rx_key++;
		r->npending += (uint32_t)n;
		*generated += (uint64_t)n;
	}
	/* A burst at most (a packet made into many frames waits for the next). */
	const uint32_t count = r->npending < cfg->burst ? r->npending : cfg->burst;

	bool scan = scan_due(r);

	if (scan)
		scan_begin(r);
	if (r->rec) {
		sc_rec_before(r->rec);
		sc_rec_enqueue(r->rec, r->pending, r->pending_key, count);
	}
	uint16_t h = vl_net_enqueue(r->rxq, r->pending, (uint16_t)count, r->status);

	if (r->rec) {
		sc_rec_after(r->rec);
		for (uint16_t i = 0; i < h; i++)
			sc_rec_expect_delivered(r->rec, i);
	}
	scan_count(r, scan, h);
	if (scan && containment_check(r, "enqueue") != 0)
		return -1;
	for (uint16_t i = 0; i < h; i++) {
		struct vl_pkt *pkt = r->pending[i];

		if (r->status[i] != VL_RX_DELIVERED)
			return run_fail(r, "RX packet %" PRIu64 " (%u bytes) dropped (status %u) "
					"although the guest's buffers could hold it",
					r->pending_key[i] - RX_KEY_BASE, pkt->pkt_len, r->status[i]);
		if (lab_drv_expect_rx(&r->drv, r->pending_key[i], pkt->pkt_len, &pkt->ol,
				      &r->pending_c[i]) != 0)
			return driver_failed(r);
		res->rx_packets++;
		res->rx_bytes += pkt->pkt_len;
		vl_pkt_free(pkt);
	}
	memmove(r->pending, r->pending + h, (r->npending - h) * sizeof(*r->pending));
	memmove(r->pending_key, r->pending_key + h, (r->npending - h) * sizeof(*r->pending_key));
	memmove(r->pending_c, r->pending_c + h, (r->npending - h) * sizeof(*r->pending_c));
	r->npending -= h;
	if (lab_drv_harvest_rx(&r->drv) != 0)
		return driver_failed(r);
	return check_call(r, ring, r->rxq, "RX");
}

/* ---- end-of-run oracles ------------------------------------------------------------ */

static int final_checks(struct run *r)
{
	struct lab_net_driver *d = &r->drv;
	const struct vl_vq_stats *ts = vl_vq_stats(r->txq), *rs = vl_vq_stats(r->rxq);

	/* Let go of every held packet; their chains go back without another burst. */
	if (release_held(r, true) != 0)
		return -1;
	if (r->rec) {
		sc_rec_before(r->rec);
		sc_rec_complete(r->rec);
	}
	vl_vq_complete(r->txq);
	if (r->rec)
		sc_rec_after(r->rec);
	if (vl_vq_zero_copy_held(r->txq) != 0)
		return run_fail(r, "zero-copy: %u chains still held after every packet was freed",
				vl_vq_zero_copy_held(r->txq));

	if (lab_drv_harvest_tx(d) != 0 || lab_drv_harvest_rx(d) != 0)
		return driver_failed(r);
	if (d->tx_in_flight != 0)
		return run_fail(r, "accounting: %u TX chains never returned", d->tx_in_flight);
	if (d->tx_expect.count != 0)
		return run_fail(r, "accounting: %u posted TX packets never dequeued",
				d->tx_expect.count);
	if (d->rx_expect.count != 0)
		return run_fail(r, "accounting: %u delivered RX packets never seen by the guest",
				d->rx_expect.count);
	/* Every RX buffer the device consumed came back: those still out are exactly the
	 * ones it has not consumed yet. */
	/* Every chain the device consumed came back: consumed == posted - still out. */
	uint64_t rx_returned = d->rx_buf_key - d->rx_in_flight;

	if (rs->chains != rx_returned)
		return run_fail(r, "accounting: the device consumed %" PRIu64 " RX buffers but the "
				"guest got %" PRIu64 " back", rs->chains, rx_returned);
	if (ts->chains != d->tx_key)
		return run_fail(r, "accounting: the guest posted %" PRIu64 " TX chains, the device "
				"consumed %" PRIu64, d->tx_key, ts->chains);
	for (int q = 0; q < 2; q++) {
		const struct vl_vq_stats *s = q ? rs : ts;
		const struct vl_vq *vq = q ? r->rxq : r->txq;

		if (vl_vq_broken(vq))
			return run_fail(r, "%s queue broken: %s", q ? "RX" : "TX",
					vl_drop_name(vl_vq_broken_reason(vq)));
		for (int k = 1; k < VL_DROP__COUNT; k++)
			if (s->drops[k])
				return run_fail(r, "%s queue dropped %" PRIu64 " well-formed "
						"chains/packets as %s", q ? "RX" : "TX",
						s->drops[k], vl_drop_name((enum vl_drop)k));
	}
	/* Every host packet was freed after checking, and all RX packets were handled. */
	if (r->npending != 0 || vl_pool_free_count(r->pool) != vl_pool_capacity(r->pool) ||
	    vl_pool_free_count(r->rx_pool) != vl_pool_capacity(r->rx_pool))
		return run_fail(r, "pool hygiene: %u of %u buffers free at the end (RX %u of %u)",
				vl_pool_free_count(r->pool), vl_pool_capacity(r->pool),
				vl_pool_free_count(r->rx_pool), vl_pool_capacity(r->rx_pool));
	/* Evict-after-read: one line per copy dequeue made (every TX copy is one: the RX
	 * queue's copies are enqueue's), whichever engine path took it; none without it. It
	 * changes no byte, so the byte oracles above hold it to that. */
	const uint64_t tx_copies = ts->copies_batched + ts->copies_direct;

	if (ts->lines_evicted != (r->cfg->evict ? tx_copies : 0) || rs->lines_evicted != 0)
		return run_fail(r, "evict-after-read %s: %" PRIu64 " TX lines evicted for %" PRIu64
				" copies, %" PRIu64 " RX lines", r->cfg->evict ? "on" : "off",
				ts->lines_evicted, tx_copies, rs->lines_evicted);
	/* Payload prefetch is on (the core's default): every copy dequeue deferred asked for
	 * its source's first line as it was queued; enqueue's copies (guest destinations)
	 * never do. */
	if (ts->copy_prefetches != ts->copies_batched || rs->copy_prefetches != 0)
		return run_fail(r, "copy prefetch: %" PRIu64 " TX copies prefetched of %" PRIu64
				" batched, %" PRIu64 " RX", ts->copy_prefetches,
				ts->copies_batched, rs->copy_prefetches);
	if (sc_ol_pools_whole(&r->ol) != 0)
		return run_fail(r, "%s", r->ol.err);
	/* Every GSO frame the guest posted was dequeued, segmented and checked. */
	if (r->ol.gso_tx_packets != d->gso_tx_posted)
		return run_fail(r, "offloads: the guest posted %" PRIu64 " GSO frames, the host "
				"segmented %" PRIu64, d->gso_tx_posted, r->ol.gso_tx_packets);
	if (door_check(r, "final") != 0)
		return -1;
	r->res->door_checks = lab_door_checks();
	r->res->tx_stats = *ts;
	r->res->rx_stats = *rs;
	return 0;
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int lab_scenario_run(const struct lab_scenario_config *cfg, struct lab_scenario_result *res)
{
	struct run r = {.cfg = cfg, .res = res};
	double t0 = now_seconds();
	uint64_t tx_posted = 0, rx_generated = 0, stall = 0;
	uint64_t last_progress = 0, step = cfg->packets / 20 + 1;

	memset(res, 0, sizeof(*res));
	res->ok = true;
	if (cfg->nsizes == 0 || cfg->burst == 0 || cfg->queue_size == 0) {
		run_fail(&r, "invalid scenario configuration");
		return -1;
	}
	int rc = setup(&r);

	while (rc == 0 && (res->tx_packets < cfg->packets || res->rx_packets < cfg->packets)) {
		uint64_t before = res->tx_packets + res->rx_packets;

		r.drv.round++;
		rc = tx_round(&r, &tx_posted);
		if (rc == 0)
			rc = rx_round(&r, &rx_generated);
		if (rc != 0)
			break;
		if (res->tx_packets + res->rx_packets == before) {
			if (++stall > STALL_ROUNDS)
				rc = run_fail(&r, "liveness: no packet moved for %u rounds "
					      "(tx %" PRIu64 ", rx %" PRIu64 ")", STALL_ROUNDS,
					      res->tx_packets, res->rx_packets);
		} else {
			stall = 0;
		}
		uint64_t done = res->tx_packets + res->rx_packets;

		if (cfg->progress && done - last_progress >= step) {
			last_progress = done;
			cfg->progress(cfg->progress_ctx, res->tx_packets, res->rx_packets,
				      cfg->packets);
		}
	}
	if (rc == 0)
		rc = final_checks(&r);
	res->checks += r.drv.checks + res->containment_scans;
	res->limit_chains = r.drv.limit_chains;
	res->limit_chains_indirect = r.drv.limit_chains_indirect;
	res->region_end_buffers = r.drv.region_end_buffers;
	res->region_start_buffers = r.drv.region_start_buffers;
	res->gso_tx_packets = r.ol.gso_tx_packets;
	res->gso_tx_max = r.ol.gso_tx_max;
	res->csum_tx_packets = r.ol.csum_tx_packets;
	res->linux_chains = r.drv.linux_chains;
	res->gso_rx_packets = r.drv.gso_rx_packets;
	res->gso_rx_max = r.drv.gso_rx_max;
	res->csum_rx_packets = r.drv.csum_rx_packets;
	res->rx_fitted = r.ol.rx_fitted;
	res->big_rx_buffers = r.drv.big_rx_buffers;
	res->segments_checked = r.ol.segments_checked + r.drv.fit_segments_checked;
	res->csum_completed = r.ol.csum_completed + r.drv.fit_csum_completed;
	res->csum_verified = r.ol.csum_verified + r.drv.csum_verified;
	teardown(&r);
	res->seconds = now_seconds() - t0;
	return res->ok ? 0 : -1;
}

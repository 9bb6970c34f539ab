/* SPDX-License-Identifier: MIT */
/* The fuzz_scenario input run: the bytes decoded into a valid-but-odd lab_scenario_config --
 * ring layout, mergeable, indirect, in-order, event idx, VERSION_1, zero-copy, dirty log,
 * fault mode, batching threshold, guest RAM granularity, queue size, burst, containment scan
 * period, seed, 8..32 packets each way (a long run: 50..200) and up to 8 packet sizes -- and
 * lab_scenario_run,
 * which applies every oracle of the lab. Any oracle failure calls fz_fail. Format: struct
 * fz_sc_input (sc_df_format.h) and fuzz/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_format.h"
#include "sc_df_format.h"
#include "scenario.h"
#include "trace_record.h"
#include "trace_sink.h"

/* Guest RAM a run may ask for (the lab sizes it from queue size, burst and packet sizes);
 * beyond it the queue, then the burst, then the sizes are scaled down so every input stays
 * fast. 4 KiB regions cost two mappings each: less there. A short run (below) gets a
 * quarter of it, less the megabyte every run has (ram_estimate's last term). */
#define FZ_SC_RAM_MAX (16ull << 20)
#define FZ_SC_RAM_MAX_4K (4ull << 20)
#define FZ_SC_RAM_SHORT (2ull << 20)
#define FZ_SC_RAM_SHORT_4K (2ull << 20)

/* Short and long runs. A run's time is set up plus packets times their size, and the long
 * runs (50..200 packets each way, up to 16 MiB of guest RAM) took 10..500 ms each: about 10
 * executions per second. Most inputs are short runs of 2..8 packets each way in at most
 * 2 MiB of RAM, on guest memory kept between inputs (short_gmem); an input is a long run,
 * exactly as before, only when the high nibble of its containment byte (unused: the period
 * is 1 + c % 16) is all ones, so about one random input in 16 is long and the depth the
 * earlier findings needed (a hundred and more packets behind zero-copy leases, 58 KiB
 * packets against a full RX ring) stays reachable. The regression inputs carry that
 * nibble. (Before this, short runs were 8..32 packets in up to 4 MiB of their own.) */
#define FZ_SC_LONG_NIBBLE 0xf0u
#define FZ_SC_SHORT_MIN 2u
#define FZ_SC_SHORT_SPAN 7u /* 2..8 packets */
#define FZ_SC_SHORT_SCANS 2u

bool fz_sc_is_long(uint8_t containment)
{
	return (containment & FZ_SC_LONG_NIBBLE) == FZ_SC_LONG_NIBBLE;
}

/* The lab's own estimate (sim/scenario.c, ram_needed), kept in step by hand: a mismatch
 * only changes which inputs get scaled down. */
static uint64_t ram_estimate(const struct lab_scenario_config *c, uint32_t hdr_len)
{
	uint32_t max = 1;

	for (uint32_t i = 0; i < c->nsizes; i++)
		if (c->sizes[i] > max)
			max = c->sizes[i];
	uint64_t pad = 25ull * 128;
	uint64_t tx = (uint64_t)c->burst * (max + hdr_len + pad);
	uint64_t rx_buf = c->mergeable ? 2048 + 64 + pad : max + hdr_len + 64 + pad;

	return 2 * (tx + (uint64_t)c->queue_size * rx_buf) + (1u << 20);
}

/* The configuration an input asks for; whether it is a long run. */
static bool decode(const uint8_t *data, size_t size, struct lab_scenario_config *c)
{
	static const uint64_t grans[4] = {0, 4096, 8192, 65536};
	struct fz_in in = fz_in_make(data, size);
	struct fz_sc_input s;
	uint8_t f;

	fz_dec_scenario(&in, &s);
	f = s.flags;
	lab_scenario_defaults(c);
	c->layout = (f & FZ_SC_F_PACKED) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
	c->mergeable = (f & FZ_SC_F_MERGEABLE) != 0;
	c->indirect = (f & FZ_SC_F_INDIRECT) != 0;
	c->in_order = (f & FZ_SC_F_IN_ORDER) != 0;
	c->event_idx = (f & FZ_SC_F_EVENT_IDX) != 0;
	c->modern = (f & FZ_SC_F_MODERN) != 0;
	c->zero_copy = (f & FZ_SC_F_ZERO_COPY) != 0;
	c->dirty_log = (f & FZ_SC_F_DIRTY_LOG) != 0;
	c->faults = (enum lab_faults)(s.mode & 3);
	c->granularity = grans[(s.mode >> 2) & 3];
	c->batch_threshold = fz_batch_threshold((uint8_t)(s.mode >> 4));
	/* Split sizes are powers of two (2..256); packed any size 2..257. */
	c->queue_size = c->layout == VL_LAYOUT_SPLIT ? 2u << (s.qsize % 8) : 2u + s.qsize;
	c->burst = 1u + s.burst % 64u;
	const bool long_run = fz_sc_is_long(s.containment);

	c->packets = long_run ? 50u + s.packets % 151u
			      : FZ_SC_SHORT_MIN + s.packets % FZ_SC_SHORT_SPAN;
	/* A short run's burst is at most its packets: a longer one moves nothing more and
	 * only sizes the pools and guest memory for packets that never come. */
	if (!long_run && c->burst > c->packets)
		c->burst = (uint32_t)c->packets;
	c->containment_every = 1u + s.containment % 16u;
	/* A short run scans at most twice (the first two scanned bursts, where the first
	 * writes of each kind land): a scan copies and compares all guest memory in use,
	 * which cost more than the rest of a short run. */
	c->containment_max = long_run ? 0 : FZ_SC_SHORT_SCANS;
	c->seed = s.seed;
	c->nsizes = 1u + s.nsizes % FZ_SC_MAX_SIZES;
	for (uint32_t i = 0; i < c->nsizes; i++)
		c->sizes[i] = s.sizes[i] ? s.sizes[i] : 1;
	c->progress = NULL;

	uint32_t hdr_len = (c->mergeable || c->modern || c->layout == VL_LAYOUT_PACKED) ? 12 : 10;
	const bool g4k = c->granularity == 4096;
	const uint64_t limit = long_run ? (g4k ? FZ_SC_RAM_MAX_4K : FZ_SC_RAM_MAX)
					: (g4k ? FZ_SC_RAM_SHORT_4K : FZ_SC_RAM_SHORT);

	/* Each step shrinks something until queue 8, burst 4 and every size 2, whose estimate
	 * (about 1.1 MiB) is below every limit: the loop ends. */
	while (ram_estimate(c, hdr_len) > limit) {
		if (c->queue_size > 8) {
			c->queue_size /= 2; /* a power of two stays one */
		} else if (c->burst > 4) {
			c->burst /= 2;
		} else {
			for (uint32_t i = 0; i < c->nsizes; i++)
				c->sizes[i] = c->sizes[i] / 2 + 1;
		}
	}
	return long_run;
}

/* Known, reported issues -- a lab oracle that is too strict, or a core limitation the fuzzer
 * found that needs a design decision -- matched narrowly (the configuration they need and
 * the exact oracle message), so fuzzing goes on past them. Each has an input under
 * fuzz/regressions/fuzz_scenario/; FZ_STRICT=1 in the environment turns this table off (run
 * that regression with it once the issue is fixed, then drop the entry). The three issues the
 * first campaigns found are fixed (core: split RX "full" now counts descriptors; lab: RX
 * buffer sizing and the zero-copy age bound); their inputs stay as regressions. */
static const struct known_issue {
	bool (*applies)(const struct lab_scenario_config *c);
	const char *message;
	const char *why;
} known_issues[] = {
	/* None known. Each entry: the configurations it applies to, the oracle message, why. */
	{NULL, NULL, NULL},
};

static const struct known_issue *known(const struct lab_scenario_config *c, const char *error)
{
	if (getenv("FZ_STRICT"))
		return NULL;
	for (size_t i = 0; i < sizeof(known_issues) / sizeof(known_issues[0]); i++)
		if (known_issues[i].applies && known_issues[i].applies(c) &&
		    strstr(error, known_issues[i].message))
			return &known_issues[i];
	return NULL;
}

/* `vhostlab trace from-fuzz` (fz_sink): the scenario recorded itself with the lab's oracles as
 * expectations; after a run that passed them, this target's own checks below join them where
 * the format has words for them (the counts come from the configuration, never from the
 * core), and the trace goes to the sink. */
static void expect_stat(struct lab_recorder *rec, const char *q, const char *name, uint64_t v)
{
	const struct lab_trace *t = lab_rec_trace(rec);
	struct lab_trace_op op = {.kind = LAB_T_EXPECT_STAT, .count = v};

	while (op.queue < t->nqueues && strcmp(t->queues[op.queue].name, q))
		op.queue++;
	snprintf(op.name, sizeof(op.name), "%s", name);
	lab_rec_op(rec, &op);
}

static void hand_over(const struct lab_scenario_config *c, struct lab_scenario_result *res,
		      bool passed)
{
	struct lab_recorder *rec = res->recorder;

	if (!rec)
		return;
	if (passed) {
		expect_stat(rec, "tx", "packets", c->packets);
		expect_stat(rec, "rx", "packets", c->packets);
		expect_stat(rec, "tx", "bytes", res->tx_bytes);
		expect_stat(rec, "rx", "bytes", res->rx_bytes);
		if (c->batch_threshold == 0) {
			expect_stat(rec, "tx", "copies_batched", 0);
			expect_stat(rec, "rx", "copies_batched", 0);
		}
		if (!c->zero_copy)
			expect_stat(rec, "tx", "zc_packets", 0);
		if (c->faults == LAB_FAULTS_NONE)
			expect_stat(rec, "tx", "alloc_failures", 0);
		if (!c->dirty_log) {
			expect_stat(rec, "tx", "log_pages", 0);
			expect_stat(rec, "rx", "log_pages", 0);
		}
	}
	fz_sink->recorded(fz_sink->ctx, lab_rec_trace(rec));
	lab_rec_destroy(rec);
	res->recorder = NULL;
}

/* Guest memory for short runs, kept between inputs: creating, mapping and tearing down a
 * guest's memory cost more than a short run's traffic. The run's size is rounded up to a
 * power of two (RAM from 1 MiB, the ring area from a page), so few shapes serve every input;
 * the host placement's seed is the shape's, so an input gets the same memory whichever
 * inputs ran before it, and lab_gmem_reset makes it fresh. Long runs create their own, as
 * they always did. */
#define FZ_SC_GMEM_KEEP 12u

static uint64_t pow2_at_least(uint64_t v, uint64_t floor)
{
	uint64_t p = floor;

	while (p < v)
		p *= 2;
	return p;
}

static struct lab_gmem *short_gmem(const struct lab_scenario_config *c)
{
	static struct kept {
		struct lab_gmem *g;
		uint64_t ram, ring, gran;
	} kept[FZ_SC_GMEM_KEEP];
	static unsigned next_out;
	struct lab_gmem_config gc;
	char msg[256] = "";

	lab_scenario_gmem_config(c, &gc);
	gc.ram_size = pow2_at_least(gc.ram_size, 1u << 20);
	gc.ring_area_size = pow2_at_least(gc.ring_area_size, 4096);
	gc.seed = gc.ram_size ^ gc.ring_area_size ^ gc.granularity;
	for (unsigned i = 0; i < FZ_SC_GMEM_KEEP; i++)
		if (kept[i].g && kept[i].ram == gc.ram_size && kept[i].ring == gc.ring_area_size &&
		    kept[i].gran == gc.granularity) {
			lab_gmem_reset(kept[i].g);
			return kept[i].g;
		}
	struct kept *k = &kept[next_out];

	next_out = (next_out + 1) % FZ_SC_GMEM_KEEP;
	lab_gmem_destroy(k->g);
	k->g = lab_gmem_create(&gc, msg, sizeof(msg));
	if (!k->g)
		fz_fail("lab_gmem_create: %s", msg);
	k->ram = gc.ram_size;
	k->ring = gc.ring_area_size;
	k->gran = gc.granularity;
	return k->g;
}

int fz_sc_run(const uint8_t *data, size_t size)
{
	struct lab_scenario_config cfg;
	static struct lab_scenario_result res;
	char desc[512];
	int rc;

	const bool long_run = decode(data, size, &cfg);

	cfg.record = fz_sink != NULL;
	if (!long_run)
		cfg.gmem = short_gmem(&cfg);
	lab_scenario_describe(&cfg, desc, sizeof(desc));
	rc = lab_scenario_run(&cfg, &res);
	if (fz_sink)
		hand_over(&cfg, &res, rc == 0 && res.ok);
	if (rc != 0 || !res.ok) {
		const struct known_issue *k = known(&cfg, res.error);

		if (!k)
			fz_fail("oracle failure: %s", res.error);
		if (fz_verbose())
			fprintf(stderr, "fuzz_scenario: known issue (known_issues[]), input "
				"accepted: %s (%s)\n", res.error, k->why);
		return 0;
	}
	if (fz_verbose())
		fprintf(stderr, "fuzz_scenario: [%s] %llu/%llu packets, %llu checks, %llu scans, "
			"%.3f s\n", desc, (unsigned long long)res.tx_packets,
			(unsigned long long)res.rx_packets, (unsigned long long)res.checks,
			(unsigned long long)res.containment_scans, res.seconds);
	/* What every passing run must also show (as tests/scenario/test_scenario_matrix.c
	 * asserts): everything moved, the statistics agree with what the guest saw, and an
	 * extra dimension leaves no trace when it is off. */
	if (res.tx_packets != cfg.packets || res.rx_packets != cfg.packets)
		fz_fail("[%s] moved %llu TX / %llu RX packets of %llu", desc,
			(unsigned long long)res.tx_packets, (unsigned long long)res.rx_packets,
			(unsigned long long)cfg.packets);
	if (res.tx_stats.packets != cfg.packets || res.rx_stats.packets != cfg.packets ||
	    res.tx_stats.bytes != res.tx_bytes || res.rx_stats.bytes != res.rx_bytes)
		fz_fail("[%s] statistics disagree with the guest: TX %llu pkts %llu bytes (guest "
			"%llu), RX %llu pkts %llu bytes (guest %llu)", desc,
			(unsigned long long)res.tx_stats.packets,
			(unsigned long long)res.tx_stats.bytes, (unsigned long long)res.tx_bytes,
			(unsigned long long)res.rx_stats.packets,
			(unsigned long long)res.rx_stats.bytes, (unsigned long long)res.rx_bytes);
	if (cfg.batch_threshold == 0 && res.tx_stats.copies_batched + res.rx_stats.copies_batched)
		fz_fail("[%s] batching off but copies were batched", desc);
	if (!cfg.zero_copy && res.tx_stats.zc_packets)
		fz_fail("[%s] zero-copy off but %llu packets were zero-copied", desc,
			(unsigned long long)res.tx_stats.zc_packets);
	if (cfg.faults == LAB_FAULTS_NONE && res.tx_stats.alloc_failures)
		fz_fail("[%s] no faults injected but %llu allocation failures", desc,
			(unsigned long long)res.tx_stats.alloc_failures);
	if (!cfg.dirty_log && res.tx_stats.log_pages + res.rx_stats.log_pages)
		fz_fail("[%s] dirty log off but pages were marked", desc);
	if (res.calls_spurious)
		fz_fail("[%s] %llu spurious calls (the core's notifications are exact)", desc,
			(unsigned long long)res.calls_spurious);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* The scenario matrix as tests: one scenario body (lab_scenario_run, every oracle) over
 * every configuration, plus edge variants (tiny and large queues, single sizes, many seeds).
 * Packet counts are small so the suite stays fast under sanitizers; `vhostlab run` runs the
 * full counts. VL_SCENARIO_PACKETS in the environment overrides the count. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

static uint64_t packets(uint64_t dflt)
{
	const char *env = getenv("VL_SCENARIO_PACKETS");

	return env ? strtoull(env, NULL, 10) : dflt;
}

/* Does the configuration send packets of at most 1500 bytes, which fit one RX buffer? */
static bool has_one_buffer_size(const struct lab_scenario_config *cfg)
{
	for (uint32_t i = 0; i < cfg->nsizes; i++)
		if (cfg->sizes[i] <= 1500)
			return true;
	return false;
}

/* Does the configuration send packets long enough to be Ethernet/IP/TCP frames? */
static bool holds_frames(const struct lab_scenario_config *cfg)
{
	for (uint32_t i = 0; i < cfg->nsizes; i++)
		if (cfg->sizes[i] >= 64)
			return true;
	return false;
}

static void run_ok(const struct lab_scenario_config *cfg)
{
	struct lab_scenario_result res;
	int rc = lab_scenario_run(cfg, &res);

	if (rc != 0)
		print_error("%s\n", res.error);
	assert_int_equal(rc, 0);
	assert_true(res.ok);
	assert_int_equal(res.tx_packets, cfg->packets);
	assert_int_equal(res.rx_packets, cfg->packets);
	/* Every packet was checked twice on TX (content, then buffer untouched on return)
	 * and once on RX, plus the containment scans and two notification checks (call and
	 * kick) per queue per round. */
	assert_true(res.checks >= 3 * cfg->packets + res.containment_scans);
	assert_true(res.containment_scans > 0);
	/* The core's notifications are exact: every call the guest needed was signalled (else
	 * the run failed above) and none it did not need. */
	assert_int_equal(res.calls_spurious, 0);
	assert_true(res.calls_due > 0);
	assert_int_equal(res.tx_stats.packets, cfg->packets);
	assert_int_equal(res.rx_stats.packets, cfg->packets);
	assert_int_equal(res.tx_stats.bytes, res.tx_bytes);
	assert_int_equal(res.rx_stats.bytes, res.rx_bytes);
	if (cfg->batch_threshold == 0)
		assert_int_equal(res.tx_stats.copies_batched + res.rx_stats.copies_batched, 0);
	else
		assert_true(res.tx_stats.copies_batched + res.rx_stats.copies_batched > 0);
	/* The driver leaves the usual header (no offloads, one buffer) in half its RX buffers
	 * and one packet in four has no offloads: with batching the core keeps some of those
	 * headers (the guest's checks above found every header right) -- given packets small
	 * enough to fit one buffer; without batching it stores them all unread. */
	if (cfg->batch_threshold == 0)
		assert_int_equal(res.rx_stats.rx_hdrs_kept, 0);
	else if (cfg->packets >= 500 && has_one_buffer_size(cfg))
		assert_true(res.rx_stats.rx_hdrs_kept > 0);
	/* Each extra dimension really happened: packets went out without a copy, the pool
	 * refused, the log was checked page by page. And not otherwise. */
	if (cfg->zero_copy && cfg->packets >= 500)
		assert_true(res.tx_stats.zc_packets > 0);
	if (!cfg->zero_copy)
		assert_int_equal(res.tx_stats.zc_packets, 0);
	/* Except a scarce pool with zero-copy under in-order: the packets the host holds stall
	 * the ring (it completes in order) before the pool runs dry, and a refusal is rare
	 * (packed, seed 1: 1 in 1500 packets, 0 in 5000, 4 in 20000; with the driver's chains
	 * at the limits 0, 2 and 7): whether one falls in a short run is chance. */
	if (cfg->faults != LAB_FAULTS_NONE && cfg->packets >= 500 &&
	    !(cfg->faults == LAB_FAULTS_SCARCE && cfg->zero_copy && cfg->in_order))
		assert_true(res.tx_stats.alloc_failures > 0);
	if (cfg->faults == LAB_FAULTS_NONE)
		assert_int_equal(res.tx_stats.alloc_failures, 0);
	if (cfg->dirty_log)
		assert_true(res.log_pages_checked > 0);
	else
		assert_int_equal(res.tx_stats.log_pages + res.rx_stats.log_pages, 0);
	/* Offloads (traffic.h): GSO both ways only with tso and all, checksum offload only
	 * from csum on; the host makes fit what the driver does not take, except under all,
	 * where it takes everything. */
	if (cfg->offload < LAB_OFFLOAD_TSO)
		assert_int_equal(res.gso_tx_packets + res.gso_rx_packets, 0);
	else if (cfg->packets >= 500)
		assert_true(res.gso_tx_packets > 0 && res.gso_rx_packets > 0 &&
			    res.segments_checked > res.gso_tx_packets);
	if (cfg->offload == LAB_OFFLOAD_NONE)
		assert_int_equal(res.csum_tx_packets + res.csum_rx_packets, 0);
	else if (cfg->packets >= 500 && holds_frames(cfg))
		assert_true(res.csum_tx_packets > 0 && res.csum_completed > 0);
	if (cfg->offload == LAB_OFFLOAD_ALL)
		assert_int_equal(res.rx_fitted, 0);
	else if (cfg->packets >= 500 && holds_frames(cfg))
		assert_true(res.rx_fitted > 0);
	if (cfg->packets >= 500 && holds_frames(cfg))
		assert_true(res.csum_verified > 0 && res.linux_chains > 0);
}

/* The four offload modes by two bits of a configuration's number. */
static enum lab_offload offload_of(unsigned k)
{
	return (enum lab_offload)(k % LAB_OFFLOAD__COUNT);
}

static unsigned parity(unsigned v)
{
	return (unsigned)__builtin_popcount(v) & 1u;
}

/* The default matrix of `vhostlab run`: 128 configurations, the bits of k choosing ring
 * layout, mergeable, indirect, in-order, event idx, batching and granularity. */
static void test_full_matrix(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 128; k++) {
		struct lab_scenario_config cfg;

		lab_scenario_defaults(&cfg);
		cfg.packets = packets(2000);
		cfg.layout = (k & 1) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
		cfg.mergeable = (k >> 1) & 1;
		cfg.indirect = (k >> 2) & 1;
		cfg.in_order = (k >> 3) & 1;
		cfg.event_idx = (k >> 4) & 1;
		cfg.batch_threshold = (k >> 5) & 1 ? 256 : 0;
		cfg.granularity = (k >> 6) & 1 ? 4096 : 0;
		cfg.modern = cfg.mergeable || cfg.indirect;
		/* The extra dimensions spread over the matrix as `vhostlab run` spreads them. */
		cfg.zero_copy = parity(k & 0x5a);
		cfg.dirty_log = parity(k & 0x33);
		cfg.faults = (enum lab_faults)(parity(k & 0x55) << 1 | parity(k & 0x0f));
		cfg.offload = (enum lab_offload)(parity(k & 0x7c) << 1 | parity(k & 0x0e));
		run_ok(&cfg);
	}
}

/* Zero-copy x dirty log x every fault mode, on both layouts with and without in-order: the
 * product the default matrix only samples. */
static void test_extras_product(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 64; k++) {
		struct lab_scenario_config cfg;

		lab_scenario_defaults(&cfg);
		cfg.packets = packets(1500);
		cfg.layout = (k & 1) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
		cfg.in_order = (k >> 1) & 1;
		cfg.zero_copy = (k >> 2) & 1;
		cfg.dirty_log = (k >> 3) & 1;
		cfg.faults = (enum lab_faults)(k >> 4);
		cfg.mergeable = parity(k);
		cfg.event_idx = parity(k & 0x15);
		cfg.granularity = parity(k & 0x29) ? 4096 : 0;
		run_ok(&cfg);
	}
}

/* Packed rings of sizes that are not powers of two, tiny ones included, with every
 * notification mode; many laps flip the wrap counters many times. */
static void test_packed_odd_sizes(void **state)
{
	(void)state;
	static const uint32_t qs[] = {3, 7, 300, 1000};

	for (unsigned q = 0; q < sizeof(qs) / sizeof(qs[0]); q++)
		for (unsigned k = 0; k < 8; k++) {
			struct lab_scenario_config cfg;

			lab_scenario_defaults(&cfg);
			cfg.packets = packets(1500);
			cfg.layout = VL_LAYOUT_PACKED;
			cfg.queue_size = qs[q];
			cfg.burst = qs[q] < 32 ? qs[q] : 32;
			cfg.mergeable = k & 1;
			cfg.in_order = (k >> 1) & 1;
			cfg.event_idx = (k >> 2) & 1;
			cfg.granularity = 4096;
			cfg.offload = offload_of(k + q);
			run_ok(&cfg);
		}
}

/* Small queues make "ring full" and "not enough RX buffers" the common case. */
static void test_small_queues(void **state)
{
	(void)state;
	static const uint32_t qs[] = {2, 4, 16};

	for (unsigned q = 0; q < sizeof(qs) / sizeof(qs[0]); q++)
		for (int m = 0; m < 2; m++)
			for (int L = 0; L < 2; L++) {
				struct lab_scenario_config cfg;

				lab_scenario_defaults(&cfg);
				cfg.packets = packets(1500);
				cfg.layout = L ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
				cfg.queue_size = qs[q];
				cfg.burst = 8;
				cfg.mergeable = m;
				cfg.event_idx = true;
				cfg.granularity = 4096;
				/* Linux's shapes cut to the few descriptors a small ring has. */
				cfg.offload = offload_of(q + 2u * (unsigned)m + (unsigned)L);
				run_ok(&cfg);
			}
}

/* A large queue and bursts bigger than the default, both layouts. */
static void test_large_queue(void **state)
{
	(void)state;
	for (int L = 0; L < 2; L++) {
		struct lab_scenario_config cfg;

		lab_scenario_defaults(&cfg);
		cfg.packets = packets(3000);
		cfg.layout = L ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
		cfg.queue_size = 1024;
		cfg.burst = 128;
		cfg.in_order = true;
		cfg.event_idx = true;
		run_ok(&cfg);
	}
}

/* Single sizes at the edges: 1 byte, the 256-byte batching threshold and one past it, and
 * a 64 KiB-ish jumbo frame that needs many pool segments and many mergeable buffers. */
static void test_edge_sizes(void **state)
{
	(void)state;
	static const uint32_t sizes[] = {1, 255, 256, 257, 4096, 65000};

	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int m = 0; m < 4; m++) {
			struct lab_scenario_config cfg;

			lab_scenario_defaults(&cfg);
			cfg.packets = packets(sizes[s] > 10000 ? 200 : 1000);
			cfg.sizes[0] = sizes[s];
			cfg.nsizes = 1;
			cfg.mergeable = m & 1;
			cfg.layout = (m >> 1) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
			cfg.granularity = 4096;
			run_ok(&cfg);
		}
}

/* Different seeds draw different shapes; all must pass. */
static void test_many_seeds(void **state)
{
	(void)state;
	for (uint64_t seed = 2; seed < 18; seed++) {
		struct lab_scenario_config cfg;

		lab_scenario_defaults(&cfg);
		cfg.packets = packets(500);
		cfg.seed = seed;
		cfg.mergeable = seed & 1;
		cfg.indirect = (seed >> 1) & 1;
		cfg.granularity = (seed >> 2) & 1 ? 4096 : 0;
		cfg.layout = (seed >> 3) & 1 ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
		cfg.event_idx = seed % 3 == 0;
		cfg.in_order = seed % 5 < 2;
		run_ok(&cfg);
	}
}

static void assert_same_run(const struct lab_scenario_result *a,
			    const struct lab_scenario_result *b)
{
	assert_true(a->ok && b->ok);
	assert_int_equal(a->tx_packets, b->tx_packets);
	assert_int_equal(a->rx_packets, b->rx_packets);
	assert_int_equal(a->tx_bytes, b->tx_bytes);
	assert_int_equal(a->rx_bytes, b->rx_bytes);
	assert_int_equal(a->checks, b->checks);
	assert_int_equal(a->containment_scans, b->containment_scans);
	assert_int_equal(a->log_pages_checked, b->log_pages_checked);
	assert_int_equal(a->calls_due, b->calls_due);
	assert_int_equal(a->kicks_sent, b->kicks_sent);
	assert_int_equal(a->held_max, b->held_max);
}

/* Guest memory the caller keeps (cfg.gmem, what fuzz_scenario's short runs use): created
 * from lab_scenario_gmem_config it gives the run its own memory would, and after
 * lab_gmem_reset the same again; the run leaves it alive. containment_max bounds the
 * scans; memory smaller than the run needs is refused with both sizes named. */
static void test_borrowed_guest_memory(void **state)
{
	(void)state;
	static const uint32_t sizes[] = {64, 1500, 9000};
	struct lab_scenario_config cfg;
	struct lab_scenario_result own, res;
	struct lab_gmem_config gc;
	char msg[256];

	lab_scenario_defaults(&cfg);
	cfg.packets = packets(40);
	cfg.queue_size = 64;
	cfg.burst = 8;
	cfg.zero_copy = true;
	cfg.dirty_log = true;
	cfg.seed = 5;
	cfg.containment_every = 1;
	memcpy(cfg.sizes, sizes, sizeof(sizes));
	cfg.nsizes = 3;
	assert_int_equal(lab_scenario_run(&cfg, &own), 0);
	assert_true(own.containment_scans > 1);

	lab_scenario_gmem_config(&cfg, &gc);
	struct lab_gmem *g = lab_gmem_create(&gc, msg, sizeof(msg));

	assert_non_null(g);
	cfg.gmem = g;
	assert_int_equal(lab_scenario_run(&cfg, &res), 0);
	assert_same_run(&own, &res);
	assert_true(lab_gmem_bytes_allocated(g) > 0); /* used, and still alive */
	lab_gmem_reset(g);
	assert_int_equal(lab_scenario_run(&cfg, &res), 0);
	assert_same_run(&own, &res);

	lab_gmem_reset(g);
	cfg.containment_max = 1;
	assert_int_equal(lab_scenario_run(&cfg, &res), 0);
	assert_int_equal(res.containment_scans, 1);
	assert_int_equal(res.tx_packets, own.tx_packets);
	lab_gmem_destroy(g);

	/* A guest too small for the run: refused before any traffic. */
	gc.ram_size = 1u << 20;
	gc.ring_area_size = 4096;
	g = lab_gmem_create(&gc, msg, sizeof(msg));
	assert_non_null(g);
	cfg.gmem = g;
	cfg.queue_size = 256;
	assert_int_equal(lab_scenario_run(&cfg, &res), -1);
	assert_false(res.ok);
	assert_non_null(strstr(res.error, "the caller's has 1048576 bytes of RAM"));
	lab_gmem_destroy(g);
}

/* The scenario must notice a broken configuration rather than pass vacuously. */
static void test_rejects_empty_size_list(void **state)
{
	(void)state;
	struct lab_scenario_config cfg;
	struct lab_scenario_result res;

	lab_scenario_defaults(&cfg);
	cfg.nsizes = 0;
	assert_int_equal(lab_scenario_run(&cfg, &res), -1);
	assert_false(res.ok);
	assert_non_null(strstr(res.error, "invalid"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_matrix),
		cmocka_unit_test(test_extras_product),
		cmocka_unit_test(test_small_queues),
		cmocka_unit_test(test_packed_odd_sizes),
		cmocka_unit_test(test_large_queue),
		cmocka_unit_test(test_edge_sizes),
		cmocka_unit_test(test_many_seeds),
		cmocka_unit_test(test_rejects_empty_size_list),
		cmocka_unit_test(test_borrowed_guest_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

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
	 * and once on RX, plus the containment scans. */
	assert_int_equal(res.checks, 3 * cfg->packets + res.containment_scans);
	assert_true(res.containment_scans > 0);
	assert_int_equal(res.tx_stats.packets, cfg->packets);
	assert_int_equal(res.rx_stats.packets, cfg->packets);
	assert_int_equal(res.tx_stats.bytes, res.tx_bytes);
	assert_int_equal(res.rx_stats.bytes, res.rx_bytes);
	if (cfg->batch_threshold == 0)
		assert_int_equal(res.tx_stats.copies_batched + res.rx_stats.copies_batched, 0);
	else
		assert_true(res.tx_stats.copies_batched + res.rx_stats.copies_batched > 0);
}

/* The default matrix of `vhostlab run`: 16 configurations. */
static void test_full_matrix(void **state)
{
	(void)state;
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < 2; i++)
			for (int b = 0; b < 2; b++)
				for (int g = 0; g < 2; g++) {
					struct lab_scenario_config cfg;

					lab_scenario_defaults(&cfg);
					cfg.packets = packets(3000);
					cfg.mergeable = m;
					cfg.indirect = i;
					cfg.modern = m || i;
					cfg.batch_threshold = b ? 256 : 0;
					cfg.granularity = g ? 4096 : 0;
					run_ok(&cfg);
				}
}

/* Small queues make "ring full" and "not enough RX buffers" the common case. */
static void test_small_queues(void **state)
{
	(void)state;
	static const uint32_t qs[] = {2, 4, 16};

	for (unsigned q = 0; q < sizeof(qs) / sizeof(qs[0]); q++)
		for (int m = 0; m < 2; m++) {
			struct lab_scenario_config cfg;

			lab_scenario_defaults(&cfg);
			cfg.packets = packets(1500);
			cfg.queue_size = qs[q];
			cfg.burst = 8;
			cfg.mergeable = m;
			cfg.granularity = 4096;
			run_ok(&cfg);
		}
}

/* A large queue and bursts bigger than the default. */
static void test_large_queue(void **state)
{
	(void)state;
	struct lab_scenario_config cfg;

	lab_scenario_defaults(&cfg);
	cfg.packets = packets(3000);
	cfg.queue_size = 1024;
	cfg.burst = 128;
	run_ok(&cfg);
}

/* Single sizes at the edges: 1 byte, the 256-byte batching threshold and one past it, and
 * a 64 KiB-ish jumbo frame that needs many pool segments and many mergeable buffers. */
static void test_edge_sizes(void **state)
{
	(void)state;
	static const uint32_t sizes[] = {1, 255, 256, 257, 4096, 65000};

	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int m = 0; m < 2; m++) {
			struct lab_scenario_config cfg;

			lab_scenario_defaults(&cfg);
			cfg.packets = packets(sizes[s] > 10000 ? 200 : 1000);
			cfg.sizes[0] = sizes[s];
			cfg.nsizes = 1;
			cfg.mergeable = m;
			cfg.granularity = 4096;
			run_ok(&cfg);
		}
}

/* Different seeds draw different shapes; all must pass. */
static void test_many_seeds(void **state)
{
	(void)state;
	for (uint64_t seed = 2; seed < 12; seed++) {
		struct lab_scenario_config cfg;

		lab_scenario_defaults(&cfg);
		cfg.packets = packets(500);
		cfg.seed = seed;
		cfg.mergeable = seed & 1;
		cfg.indirect = (seed >> 1) & 1;
		cfg.granularity = (seed >> 2) & 1 ? 4096 : 0;
		run_ok(&cfg);
	}
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
		cmocka_unit_test(test_small_queues),
		cmocka_unit_test(test_large_queue),
		cmocka_unit_test(test_edge_sizes),
		cmocka_unit_test(test_many_seeds),
		cmocka_unit_test(test_rejects_empty_size_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: MIT */
#include "run_report.h"
#include "cli.h"

#include <inttypes.h>

#include "vhostlab/vhostlab.h"

static const char *onoff(bool v)
{
	return v ? "on" : "off";
}

static const char *tf(bool v)
{
	return v ? "true" : "false";
}

void run_config_name(const struct lab_scenario_config *c, char *buf, size_t len)
{
	char gran[24];

	if (c->granularity)
		snprintf(gran, sizeof(gran), "%" PRIu64, c->granularity);
	else
		snprintf(gran, sizeof(gran), "coarse");
	snprintf(buf, len, "%-6s mrg=%-3s ind=%-3s ord=%-3s evt=%-3s batch=%-4u gran=%-6s q=%-4u "
		 "zc=%-3s log=%-3s ev=%-3s flt=%-6s ol=%-4s",
		 c->layout == VL_LAYOUT_PACKED ? "packed" : "split", onoff(c->mergeable),
		 onoff(c->indirect), onoff(c->in_order), onoff(c->event_idx), c->batch_threshold,
		 gran, c->queue_size, onoff(c->zero_copy), onoff(c->dirty_log), onoff(c->evict),
		 lab_faults_name(c->faults), lab_offload_name(c->offload));
}

static double pps(const struct lab_scenario_result *s)
{
	return s->seconds > 0 ? (double)(s->tx_packets + s->rx_packets) / s->seconds : 0.0;
}

void run_print_table(FILE *out, const struct config_result *r, uint32_t n, double wall)
{
	uint32_t passed = 0;
	uint64_t pkts = 0, spurious = 0;

	fprintf(out, "%-116s %3s %9s %12s %9s %12s %9s %6s %7s %9s  %s\n", "configuration", "hdr",
		"tx_pkts", "tx_bytes", "rx_pkts", "rx_bytes", "checks", "spur", "secs", "pkts/s",
		"result");
	for (uint32_t i = 0; i < n; i++) {
		const struct lab_scenario_result *s = &r[i].res;
		char name[160];

		run_config_name(&r[i].cfg, name, sizeof(name));
		fprintf(out, "%-116s %3u %9" PRIu64 " %12" PRIu64 " %9" PRIu64 " %12" PRIu64
			" %9" PRIu64 " %6" PRIu64 " %7.2f %9.0f  %s\n", name, s->hdr_len,
			s->tx_packets, s->tx_bytes, s->rx_packets, s->rx_bytes, s->checks,
			s->calls_spurious, s->seconds, pps(s), s->ok ? "ok" : "FAIL");
		passed += s->ok;
		pkts += s->tx_packets + s->rx_packets;
		spurious += s->calls_spurious;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!r[i].res.ok)
			fprintf(out, "FAIL %s\n", r[i].res.error);
	fprintf(out, "%u/%u configurations passed; %" PRIu64 " packets verified in %.1f s (%.0f "
		"packets/s); %" PRIu64 " spurious calls\n", passed, n, pkts, wall,
		wall > 0 ? (double)pkts / wall : 0.0, spurious);
}

static const char *const bin_names[VL_SIZE_BINS] = {
	"lt64", "64", "65_127", "128_255", "256_511", "512_1023", "1024_1518", "gt1518",
};

static void stats_text(FILE *out, const char *q, const struct vl_vq_stats *st)
{
	fprintf(out, "  %s packets %" PRIu64 " bytes %" PRIu64 " chains %" PRIu64 " used %" PRIu64
		" bursts %" PRIu64 " (empty %" PRIu64 ")\n", q, st->packets, st->bytes, st->chains,
		st->used_entries, st->bursts, st->empty_bursts);
	fprintf(out, "     sizes");
	for (uint32_t b = 0; b < VL_SIZE_BINS; b++)
		fprintf(out, " %s:%" PRIu64, bin_names[b], st->size_bins[b]);
	fprintf(out, "\n     drops");
	uint64_t drops = 0;

	for (int k = 1; k < VL_DROP__COUNT; k++) {
		if (st->drops[k])
			fprintf(out, " %s:%" PRIu64, vl_drop_name((enum vl_drop)k), st->drops[k]);
		drops += st->drops[k];
	}
	fprintf(out, "%s\n", drops ? "" : " none");
	fprintf(out, "     alloc calls %" PRIu64 " bufs %" PRIu64 " unused %" PRIu64 " failures %" PRIu64
		"; rx no room %" PRIu64 " bufs wasted %" PRIu64 "\n", st->alloc_calls,
		st->alloc_bufs, st->alloc_unused, st->alloc_failures, st->rx_no_room,
		st->rx_bufs_wasted);
	fprintf(out, "     zero-copy %" PRIu64 " returned %" PRIu64 " stalls %" PRIu64 " fallbacks",
		st->zc_packets, st->zc_returned, st->zc_stalls);
	for (int k = 0; k < VL_ZC_FALLBACK__COUNT; k++)
		fprintf(out, " %s:%" PRIu64, vl_zc_fallback_name((enum vl_zc_fallback)k),
			st->zc_fallbacks[k]);
	fprintf(out, "\n     copies batched %" PRIu64 " direct %" PRIu64 "; calls needed %" PRIu64
		" suppressed %" PRIu64 "; log pages %" PRIu64 " out of range %" PRIu64
		"; lines evicted %" PRIu64 "; payloads prefetched %" PRIu64 ", copies %" PRIu64
		"\n",
		st->copies_batched, st->copies_direct, st->calls_needed, st->calls_suppressed,
		st->log_pages, st->log_out_of_range, st->lines_evicted, st->payload_prefetches,
		st->copy_prefetches);
}

void run_print_stats(FILE *out, const struct config_result *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		char name[160];

		run_config_name(&r[i].cfg, name, sizeof(name));
		fprintf(out, "\n%s\n", name);
		stats_text(out, "TX", &r[i].res.tx_stats);
		stats_text(out, "RX", &r[i].res.rx_stats);
	}
}

static void stats_json(FILE *out, const struct vl_vq_stats *st)
{
	fprintf(out, "{\"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"chains\": %" PRIu64
		", \"used_entries\": %" PRIu64 ", \"bursts\": %" PRIu64 ", \"empty_bursts\": %"
		PRIu64 ", \"size_bins\": {", st->packets, st->bytes, st->chains, st->used_entries,
		st->bursts, st->empty_bursts);
	for (uint32_t b = 0; b < VL_SIZE_BINS; b++)
		fprintf(out, "%s\"%s\": %" PRIu64, b ? ", " : "", bin_names[b], st->size_bins[b]);
	fprintf(out, "}, \"drops\": {");
	for (int k = 1; k < VL_DROP__COUNT; k++)
		fprintf(out, "%s\"%s\": %" PRIu64, k > 1 ? ", " : "", vl_drop_name((enum vl_drop)k),
			st->drops[k]);
	fprintf(out, "}, \"alloc_calls\": %" PRIu64 ", \"alloc_bufs\": %" PRIu64
		", \"alloc_unused\": %" PRIu64 ", \"alloc_failures\": %" PRIu64
		", \"rx_no_room\": %" PRIu64 ", \"rx_bufs_wasted\": %" PRIu64
		", \"zc_packets\": %" PRIu64 ", \"zc_returned\": %" PRIu64 ", \"zc_stalls\": %"
		PRIu64 ", \"zc_fallbacks\": {", st->alloc_calls, st->alloc_bufs, st->alloc_unused,
		st->alloc_failures, st->rx_no_room, st->rx_bufs_wasted, st->zc_packets,
		st->zc_returned, st->zc_stalls);
	for (int k = 0; k < VL_ZC_FALLBACK__COUNT; k++)
		fprintf(out, "%s\"%s\": %" PRIu64, k ? ", " : "",
			vl_zc_fallback_name((enum vl_zc_fallback)k), st->zc_fallbacks[k]);
	fprintf(out, "}, \"copies_batched\": %" PRIu64 ", \"copies_direct\": %" PRIu64
		", \"calls_needed\": %" PRIu64 ", \"calls_suppressed\": %" PRIu64
		", \"log_pages\": %" PRIu64 ", \"log_out_of_range\": %" PRIu64
		", \"lines_evicted\": %" PRIu64 ", \"payload_prefetches\": %" PRIu64
		", \"copy_prefetches\": %" PRIu64 "}",
		st->copies_batched, st->copies_direct, st->calls_needed, st->calls_suppressed,
		st->log_pages, st->log_out_of_range, st->lines_evicted, st->payload_prefetches,
		st->copy_prefetches);
}

void run_print_json(FILE *out, uint64_t seed, const struct config_result *r, uint32_t n, bool ok,
		    double wall, bool with_stats)
{
	fprintf(out, "{\"ok\": %s, \"seed\": %" PRIu64 ", \"wall_seconds\": %.3f, \"configs\": [",
		tf(ok), seed, wall);
	for (uint32_t i = 0; i < n; i++) {
		const struct lab_scenario_config *c = &r[i].cfg;
		const struct lab_scenario_result *s = &r[i].res;

		fprintf(out, "%s\n  {\"ring\": \"%s\", \"mergeable\": %s, \"indirect\": %s, "
			"\"in_order\": %s, \"event_idx\": %s, \"batch_threshold\": %u, "
			"\"granularity\": %" PRIu64 ", \"version_1\": %s, \"hdr_len\": %u, "
			"\"queue_size\": %u, \"burst\": %u, \"zero_copy\": %s, \"dirty_log\": %s, "
			"\"evict\": %s, \"faults\": \"%s\", \"offload\": \"%s\", ",
			i ? "," : "", c->layout == VL_LAYOUT_PACKED ? "packed" : "split",
			tf(c->mergeable), tf(c->indirect), tf(c->in_order), tf(c->event_idx),
			c->batch_threshold, c->granularity,
			tf(c->modern || c->layout == VL_LAYOUT_PACKED), s->hdr_len, c->queue_size,
			c->burst, tf(c->zero_copy), tf(c->dirty_log), tf(c->evict),
			lab_faults_name(c->faults), lab_offload_name(c->offload));
		fprintf(out, "\"offload_features\": [");
		for (unsigned b = 0, named = 0; b < 64; b++) {
			const char *name = lab_offload_feature_name(b);

			if (name && (s->features >> b & 1))
				fprintf(out, "%s\"%s\"", named++ ? ", " : "", name);
		}
		fprintf(out, "], ");
		fprintf(out, "\"gso_tx_packets\": %" PRIu64 ", \"gso_tx_max\": %" PRIu64
			", \"csum_tx_packets\": %" PRIu64 ", \"linux_chains\": %" PRIu64
			", \"gso_rx_packets\": %" PRIu64 ", \"gso_rx_max\": %" PRIu64
			", \"csum_rx_packets\": %" PRIu64 ", \"rx_fitted\": %" PRIu64
			", \"big_rx_buffers\": %" PRIu64 ", \"segments_checked\": %" PRIu64
			", \"csum_completed\": %" PRIu64 ", \"csum_verified\": %" PRIu64 ", ",
			s->gso_tx_packets, s->gso_tx_max, s->csum_tx_packets, s->linux_chains,
			s->gso_rx_packets, s->gso_rx_max, s->csum_rx_packets, s->rx_fitted,
			s->big_rx_buffers, s->segments_checked, s->csum_completed, s->csum_verified);
		fprintf(out, "\"zc_packets\": %" PRIu64 ", \"zc_fallbacks\": %" PRIu64
			", \"held_max\": %" PRIu64 ", \"alloc_failures\": %" PRIu64
			", \"log_pages_checked\": %" PRIu64 ", \"log_clean_marks\": %" PRIu64
			", \"lines_evicted\": %" PRIu64 ", \"limit_chains\": %" PRIu64
			", \"limit_chains_indirect\": %" PRIu64 ", \"region_end_buffers\": %" PRIu64
			", \"region_start_buffers\": %" PRIu64 ", ",
			s->tx_stats.zc_packets,
			s->tx_stats.zc_fallbacks[0] + s->tx_stats.zc_fallbacks[1] +
				s->tx_stats.zc_fallbacks[2],
			s->held_max, s->tx_stats.alloc_failures, s->log_pages_checked,
			s->log_clean_marks, s->tx_stats.lines_evicted, s->limit_chains,
			s->limit_chains_indirect, s->region_end_buffers, s->region_start_buffers);
		if (with_stats) {
			fprintf(out, "\"stats\": {\"tx\": ");
			stats_json(out, &s->tx_stats);
			fprintf(out, ", \"rx\": ");
			stats_json(out, &s->rx_stats);
			fprintf(out, "}, ");
		}
		fprintf(out, "\"tx_packets\": %" PRIu64 ", \"rx_packets\": %" PRIu64 ", "
			"\"tx_bytes\": %" PRIu64 ", \"rx_bytes\": %" PRIu64 ", \"checks\": %" PRIu64
			", \"containment_scans\": %" PRIu64 ", \"door_checks\": %" PRIu64
			", \"calls_due\": %" PRIu64
			", \"calls_spurious\": %" PRIu64 ", \"kicks_sent\": %" PRIu64
			", \"kicks_skipped\": %" PRIu64 ", \"seconds\": %.3f, \"pps\": %.0f, "
			"\"copies_batched\": %" PRIu64 ", \"copies_direct\": %" PRIu64 ", "
			"\"rx_hdrs_kept\": %" PRIu64 ", \"ok\": %s, \"error\": ",
			s->tx_packets, s->rx_packets, s->tx_bytes, s->rx_bytes, s->checks,
			s->containment_scans, s->door_checks, s->calls_due, s->calls_spurious, s->kicks_sent,
			s->kicks_skipped, s->seconds, pps(s),
			s->tx_stats.copies_batched + s->rx_stats.copies_batched,
			s->tx_stats.copies_direct + s->rx_stats.copies_direct,
			s->rx_stats.rx_hdrs_kept, tf(s->ok));
		if (s->ok)
			fprintf(out, "null");
		else
			cli_json_string(out, s->error);
		if (r[i].rec.path[0] || r[i].rec.error[0]) {
			fprintf(out, ", \"trace\": {\"path\": ");
			cli_json_string(out, r[i].rec.path);
			fprintf(out, ", \"statements\": %u, \"replay\": \"%s\", \"replay_line\": %u, "
				"\"signature\": ", r[i].rec.statements, r[i].rec.replay,
				r[i].rec.replay_line);
			cli_json_string(out, r[i].rec.signature);
			fprintf(out, ", \"error\": ");
			cli_json_string(out, r[i].rec.error);
			fputc('}', out);
		}
		fputc('}', out);
	}
	fprintf(out, "\n]}\n");
}

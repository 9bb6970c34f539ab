/* SPDX-License-Identifier: MIT */
#include "run_report.h"

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
	snprintf(buf, len, "%-6s mrg=%-3s ind=%-3s ord=%-3s evt=%-3s batch=%-4u gran=%-6s q=%u",
		 c->layout == VL_LAYOUT_PACKED ? "packed" : "split", onoff(c->mergeable),
		 onoff(c->indirect), onoff(c->in_order), onoff(c->event_idx), c->batch_threshold,
		 gran, c->queue_size);
}

static double pps(const struct lab_scenario_result *s)
{
	return s->seconds > 0 ? (double)(s->tx_packets + s->rx_packets) / s->seconds : 0.0;
}

void run_print_table(FILE *out, const struct config_result *r, uint32_t n, double wall)
{
	uint32_t passed = 0;
	uint64_t pkts = 0, spurious = 0;

	fprintf(out, "%-74s %3s %9s %12s %9s %12s %9s %6s %7s %9s  %s\n", "configuration", "hdr",
		"tx_pkts", "tx_bytes", "rx_pkts", "rx_bytes", "checks", "spur", "secs", "pkts/s",
		"result");
	for (uint32_t i = 0; i < n; i++) {
		const struct lab_scenario_result *s = &r[i].res;
		char name[128];

		run_config_name(&r[i].cfg, name, sizeof(name));
		fprintf(out, "%-74s %3u %9" PRIu64 " %12" PRIu64 " %9" PRIu64 " %12" PRIu64
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

/* JSON strings: our error texts are ASCII, but escape what JSON requires anyway. */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

void run_print_json(FILE *out, uint64_t seed, const struct config_result *r, uint32_t n, bool ok,
		    double wall)
{
	fprintf(out, "{\"ok\": %s, \"seed\": %" PRIu64 ", \"wall_seconds\": %.3f, \"configs\": [",
		tf(ok), seed, wall);
	for (uint32_t i = 0; i < n; i++) {
		const struct lab_scenario_config *c = &r[i].cfg;
		const struct lab_scenario_result *s = &r[i].res;

		fprintf(out, "%s\n  {\"ring\": \"%s\", \"mergeable\": %s, \"indirect\": %s, "
			"\"in_order\": %s, \"event_idx\": %s, \"batch_threshold\": %u, "
			"\"granularity\": %" PRIu64 ", \"version_1\": %s, \"hdr_len\": %u, "
			"\"queue_size\": %u, \"burst\": %u, ",
			i ? "," : "", c->layout == VL_LAYOUT_PACKED ? "packed" : "split",
			tf(c->mergeable), tf(c->indirect), tf(c->in_order), tf(c->event_idx),
			c->batch_threshold, c->granularity,
			tf(c->modern || c->layout == VL_LAYOUT_PACKED), s->hdr_len, c->queue_size,
			c->burst);
		fprintf(out, "\"tx_packets\": %" PRIu64 ", \"rx_packets\": %" PRIu64 ", "
			"\"tx_bytes\": %" PRIu64 ", \"rx_bytes\": %" PRIu64 ", \"checks\": %" PRIu64
			", \"containment_scans\": %" PRIu64 ", \"calls_due\": %" PRIu64
			", \"calls_spurious\": %" PRIu64 ", \"kicks_sent\": %" PRIu64
			", \"kicks_skipped\": %" PRIu64 ", \"seconds\": %.3f, \"pps\": %.0f, "
			"\"copies_batched\": %" PRIu64 ", \"copies_direct\": %" PRIu64 ", "
			"\"ok\": %s, \"error\": ",
			s->tx_packets, s->rx_packets, s->tx_bytes, s->rx_bytes, s->checks,
			s->containment_scans, s->calls_due, s->calls_spurious, s->kicks_sent,
			s->kicks_skipped, s->seconds, pps(s),
			s->tx_stats.copies_batched + s->rx_stats.copies_batched,
			s->tx_stats.copies_direct + s->rx_stats.copies_direct, tf(s->ok));
		if (s->ok) {
			fprintf(out, "null}");
		} else {
			json_string(out, s->error);
			fputc('}', out);
		}
	}
	fprintf(out, "\n]}\n");
}

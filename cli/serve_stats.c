/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: event lines, live statistics (stderr) and the final report (stdout),
 * as text or, with --json, JSON lines and one JSON document. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "serve.h"

static const char *const drop_names[SERVE_DROP__COUNT] = {
	[SERVE_DROP_MALFORMED] = "malformed",
	[SERVE_DROP_TOO_BIG] = "too_big",
	[SERVE_DROP_NO_PEER] = "no_peer",
	[SERVE_DROP_TAP] = "tap",
	[SERVE_DROP_NO_MEMORY] = "no_memory",
	[SERVE_DROP_OFFLOAD] = "offload",
};

static const char *const mode_names[] = {
	[SERVE_LOOPBACK] = "loopback",
	[SERVE_RXONLY] = "rxonly",
	[SERVE_TXONLY] = "txonly",
	[SERVE_TAP] = "tap",
	[SERVE_PAIR] = "pair",
	[SERVE_NULL] = "null",
	[SERVE_TOUCH] = "touch",
};

const char *serve_mode_name(enum serve_mode mode)
{
	return mode_names[mode];
}

/* As `vhostlab run --stats` names them (run_report.c). */
static const char *const bin_names[VL_SIZE_BINS] = {
	"lt64", "64", "65_127", "128_255", "256_511", "512_1023", "1024_1518", "gt1518",
};

static const char *const evict_names[] = {
	[SERVE_EVICT_AUTO] = "auto",
	[SERVE_EVICT_OFF] = "off",
	[SERVE_EVICT_ON] = "on",
};

const char *serve_drop_name(enum serve_drop d)
{
	return d < SERVE_DROP__COUNT ? drop_names[d] : "unknown";
}

static uint64_t drops_of(const struct serve_qstats *st)
{
	uint64_t sum = 0;

	for (unsigned d = 0; d < SERVE_DROP__COUNT; d++)
		sum += st->drops[d];
	return sum;
}

/* The port's counters summed over its queue pairs. */
static void port_totals(const struct serve *s, const struct serve_port *p,
			struct serve_qstats *tot)
{
	for (uint32_t q = 0; q < s->o.queues; q++) {
		const struct serve_qstats *st = &p->pairs[q].st;

		tot->rx_packets += st->rx_packets;
		tot->rx_bytes += st->rx_bytes;
		tot->tx_packets += st->tx_packets;
		tot->tx_bytes += st->tx_bytes;
		for (unsigned d = 0; d < SERVE_DROP__COUNT; d++)
			tot->drops[d] += st->drops[d];
	}
}

void serve_event(const struct serve *s, const char *event, const struct serve_port *p,
		 const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	bool error = event[0] == 'e' && event[1] == 'r'; /* "error" */

	/* Errors, and the lab program's note on its core, are printed even with --quiet. */
	if (s->o.quiet && !error && strcmp(event, "core") != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A connection's end carries the port's counters so far: a test that restarts its
	 * front end reads what each connection moved from the difference. */
	bool counts = p && p->pairs && !strcmp(event, "disconnected");
	struct serve_qstats tot = {0};

	if (counts)
		port_totals(s, p, &tot);
	/* One line whole: with --threads, workers tell events (a broken queue, the evict
	 * tuner's verdict) while the loop tells its own. */
	flockfile(stderr);
	if (!s->o.json) {
		if (p)
			fprintf(stderr, "vhostlab serve: %s: %s", p->path, msg);
		else
			fprintf(stderr, "vhostlab serve: %s", msg);
		if (counts)
			fprintf(stderr, "; rx %" PRIu64 " tx %" PRIu64 " packets so far",
				tot.rx_packets, tot.tx_packets);
		fprintf(stderr, "\n");
		funlockfile(stderr);
		return;
	}
	fprintf(stderr, "{\"event\": ");
	cli_json_string(stderr, event);
	fprintf(stderr, ", \"time\": %.3f", serve_now() - s->start);
	if (p) {
		fprintf(stderr, ", \"socket\": ");
		cli_json_string(stderr, p->path);
	}
	if (counts)
		fprintf(stderr, ", \"rx_packets\": %" PRIu64 ", \"tx_packets\": %" PRIu64
			", \"drops\": %" PRIu64, tot.rx_packets, tot.tx_packets, drops_of(&tot));
	fprintf(stderr, ", \"message\": ");
	cli_json_string(stderr, msg);
	fprintf(stderr, "}\n");
	funlockfile(stderr);
}

uint64_t serve_stats_core_drops(const struct vl_vq *vq)
{
	const struct vl_vq_stats *st = vl_vq_stats(vq);
	uint64_t sum = 0;

	for (unsigned d = 0; d < VL_DROP__COUNT; d++)
		sum += st->drops[d];
	return sum;
}

uint64_t serve_stats_core_prefetches(const struct vl_vq *vq)
{
	const struct vl_vq_stats *st = vl_vq_stats(vq);

	return st->payload_prefetches + st->copy_prefetches;
}

void serve_stats_fold_bursts(struct serve_port *p, uint32_t pair, uint32_t ring)
{
	struct serve_pair *sp = &p->pairs[pair];
	const struct vl_vq *vq = sp->vq[ring];

	if (!vq)
		return;
	const struct vl_vq_stats *st = vl_vq_stats(vq);

	sp->st.bursts[ring] += st->bursts - sp->folded_bursts[ring];
	sp->folded_bursts[ring] = st->bursts;
	sp->st.idle_bursts[ring] += st->empty_bursts - sp->folded_idle[ring];
	sp->folded_idle[ring] = st->empty_bursts;
	for (unsigned b = 0; b < VL_SIZE_BINS; b++) {
		sp->st.size_bins[ring][b] += st->size_bins[b] - sp->folded_bins[ring][b];
		sp->folded_bins[ring][b] = st->size_bins[b];
	}
	if (ring == SERVE_RING_RX) {
		sp->st.hdrs_kept += st->rx_hdrs_kept - sp->folded_kept;
		sp->folded_kept = st->rx_hdrs_kept;
	}
}

void serve_stats_fold(struct serve_port *p, uint32_t pair)
{
	struct serve_pair *sp = &p->pairs[pair];
	struct vl_vq *vq = sp->vq[SERVE_RING_TX];

	serve_stats_fold_bursts(p, pair, SERVE_RING_RX);
	serve_stats_fold_bursts(p, pair, SERVE_RING_TX);
	if (!vq)
		return;
	uint64_t now = serve_stats_core_drops(vq);

	sp->st.drops[SERVE_DROP_MALFORMED] += now - sp->folded_drops;
	sp->folded_drops = now;
	now = vl_vq_stats(vq)->zc_packets;
	sp->st.zero_copied += now - sp->folded_zc;
	sp->folded_zc = now;
	for (unsigned k = 0; k < VL_ZC_FALLBACK__COUNT; k++) {
		now = vl_vq_stats(vq)->zc_fallbacks[k];
		sp->st.zc_fallbacks[k] += now - sp->folded_zcf[k];
		sp->folded_zcf[k] = now;
	}
	now = vl_vq_stats(vq)->tx_write_ignored;
	sp->st.write_flag_read += now - sp->folded_wr;
	sp->folded_wr = now;
	now = vl_vq_stats(vq)->lines_evicted;
	sp->st.lines_evicted += now - sp->folded_evicted;
	sp->folded_evicted = now;
	now = serve_stats_core_prefetches(vq);
	sp->st.payload_prefetches += now - sp->folded_prefetched;
	sp->folded_prefetched = now;
	now = vl_vq_stats(vq)->tx_line_waits;
	sp->st.line_waits += now - sp->folded_line_waits;
	sp->folded_line_waits = now;
}

void serve_stats_live(struct serve *s, double now)
{
	double dt = now - s->last_stats;

	if (dt <= 0)
		dt = 1e-9;
	/* The loop's, not a queue's: one thread serves every ring. */
	double idle_share = (s->idle - s->last_idle) / dt;

	if (idle_share > 1)
		idle_share = 1;
	s->last_idle = s->idle;
	for (uint32_t i = 0; i < s->nports; i++) {
		struct serve_port *p = &s->port[i];

		for (uint32_t q = 0; q < s->o.queues; q++) {
			struct serve_pair *sp = &p->pairs[q];

			serve_stats_fold(p, q);
			double rx_pps = (double)(sp->st.rx_packets - sp->last_rx) / dt;
			double tx_pps = (double)(sp->st.tx_packets - sp->last_tx) / dt;

			sp->last_rx = sp->st.rx_packets;
			sp->last_tx = sp->st.tx_packets;
			if (s->o.json) {
				fprintf(stderr, "{\"event\": \"stats\", \"time\": %.3f, \"socket\": ",
					now - s->start);
				cli_json_string(stderr, p->path);
				fprintf(stderr,
					", \"queue\": %" PRIu32 ", \"connected\": %s, "
					"\"rx_packets\": %" PRIu64 ", \"rx_pps\": %.0f, "
					"\"tx_packets\": %" PRIu64 ", \"tx_pps\": %.0f, "
					"\"drops\": %" PRIu64 ", \"idle_share\": %.3f}\n",
					q, serve_port_connected(p) ? "true" : "false",
					sp->st.rx_packets, rx_pps, sp->st.tx_packets, tx_pps,
					drops_of(&sp->st), idle_share);
			} else {
				fprintf(stderr,
					"[%8.1fs] %s q%" PRIu32 ": rx %" PRIu64 " (%.0f pps)  tx %" PRIu64
					" (%.0f pps)  drops %" PRIu64 "  idle %.0f%%%s\n",
					now - s->start, p->path, q, sp->st.rx_packets, rx_pps,
					sp->st.tx_packets, tx_pps, drops_of(&sp->st), 100.0 * idle_share,
					serve_port_connected(p) ? "" : "  (not connected)");
			}
		}
	}
	fflush(stderr);
	s->last_stats = now;
}

static void final_json(const struct serve *s, double secs, const char *stopped_by,
		       uint32_t leaked)
{
	struct serve_qstats tot = {0};

	printf("{\n  \"core\": \"%s\",\n"
	       "  \"mode\": \"%s\",\n  \"queues\": %" PRIu32 ",\n  \"client\": %s,\n"
	       "  \"zero_copy\": %s,\n  \"evict\": \"%s\",\n  \"prefetch\": \"%s\",\n"
	       "  \"line_wait\": \"%s\",\n  \"offloads\": \"%s\",\n  \"busy_poll\": %s,\n"
	       "  \"seconds\": %.3f,\n  \"idle_seconds\": %.3f,\n"
	       "  \"stopped_by\": \"%s\",\n  \"leaked_packets\": %" PRIu32 ",\n"
	       "  \"ok\": %s,\n  \"ports\": [",
	       cli_core_build(), mode_names[s->o.mode], s->o.queues,
	       s->o.client ? "true" : "false",
	       s->o.zero_copy ? "true" : "false", evict_names[s->o.evict],
	       evict_names[s->o.prefetch], s->o.line_wait_off ? "off" : "on",
	       s->o.offloads_off ? "off" : "on", s->o.busy_poll ? "true" : "false", secs,
	       s->idle, stopped_by, leaked, leaked == 0 ? "true" : "false");
	for (uint32_t i = 0; i < s->nports; i++) {
		const struct serve_port *p = &s->port[i];

		printf("%s\n    {\"socket\": ", i ? "," : "");
		cli_json_string(stdout, p->path);
		printf(", \"connections\": %" PRIu64 ", \"disconnects\": %" PRIu64
		       ", \"messages\": %" PRIu64 ", \"rejected\": %" PRIu64
		       ", \"features\": \"0x%" PRIx64 "\",\n     \"queues\": [",
		       p->connections, p->disconnects, p->messages, p->rejected, p->features);
		for (uint32_t q = 0; q < s->o.queues; q++) {
			const struct serve_qstats *st = &p->pairs[q].st;

			printf("%s\n       {\"queue\": %" PRIu32 ", \"rx_packets\": %" PRIu64
			       ", \"rx_bytes\": %" PRIu64 ", \"tx_packets\": %" PRIu64
			       ", \"tx_bytes\": %" PRIu64 ", \"drops\": %" PRIu64
			       ", \"zero_copied\": %" PRIu64 ", \"kicks\": %" PRIu64
			       ", \"calls\": %" PRIu64 ", \"rx_polls\": %" PRIu64
			       ", \"rx_idle_polls\": %" PRIu64 ", \"tx_bursts\": %" PRIu64
			       ", \"tx_no_room_bursts\": %" PRIu64 ", \"tx_hdrs_kept\": %" PRIu64
			       ", \"tx_write_ignored\": %" PRIu64 ", \"lines_evicted\": %" PRIu64
			       ", \"evict_trials\": %" PRIu64 ", \"evict_trials_on\": %" PRIu64
			       ", \"evict_trials_idle\": %" PRIu64 ", \"evict_shifts\": %" PRIu64
			       ", \"evict_retries\": %" PRIu64
			       ", \"payload_prefetches\": %" PRIu64 ", \"line_waits\": %" PRIu64
			       ", \"drops_by_reason\": {",
			       q ? "," : "", q, st->rx_packets, st->rx_bytes, st->tx_packets,
			       st->tx_bytes, drops_of(st), st->zero_copied, st->kicks, st->calls,
			       st->bursts[SERVE_RING_TX], st->idle_bursts[SERVE_RING_TX],
			       st->bursts[SERVE_RING_RX], st->idle_bursts[SERVE_RING_RX],
			       st->hdrs_kept, st->write_flag_read, st->lines_evicted,
			       p->pairs[q].evict.trials, p->pairs[q].evict.trials_on,
			       p->pairs[q].evict.trials_idle, p->pairs[q].evict.shifts,
			       p->pairs[q].evict.retries, st->payload_prefetches, st->line_waits);
			for (unsigned d = 0; d < SERVE_DROP__COUNT; d++) {
				printf("%s\"%s\": %" PRIu64, d ? ", " : "", drop_names[d],
				       st->drops[d]);
				tot.drops[d] += st->drops[d];
			}
			/* Why packets were copied although zero-copy is on. */
			printf("}, \"zc_fallbacks\": {");
			for (unsigned k = 0; k < VL_ZC_FALLBACK__COUNT; k++)
				printf("%s\"%s\": %" PRIu64, k ? ", " : "",
				       vl_zc_fallback_name((enum vl_zc_fallback)k), st->zc_fallbacks[k]);
			/* Sizes from the front end (its TX ring), to it (its RX ring). */
			for (unsigned r = 0; r < 2; r++) {
				const unsigned ring = r == 0 ? SERVE_RING_TX : SERVE_RING_RX;

				printf("}, \"%s_size_bins\": {", r == 0 ? "rx" : "tx");
				for (unsigned b = 0; b < VL_SIZE_BINS; b++)
					printf("%s\"%s\": %" PRIu64, b ? ", " : "", bin_names[b],
					       st->size_bins[ring][b]);
			}
			/* Offloads this pair's guest did not take, done in software. */
			printf("}, \"offload_fallbacks\": {\"segmented\": %" PRIu64
			       ", \"frames\": %" PRIu64 ", \"checksummed\": %" PRIu64
			       ", \"refused\": {",
			       st->sw_segmented, st->sw_frames, st->sw_checksummed);
			for (unsigned r = VL_SW_NOT_NEEDED + 1, k = 0; r < VL_SW__COUNT; r++, k++)
				printf("%s\"%s\": %" PRIu64, k ? ", " : "",
				       vl_sw_result_name((enum vl_sw_result)r), st->sw_refused[r]);
			printf("}}}");
			tot.rx_packets += st->rx_packets;
			tot.rx_bytes += st->rx_bytes;
			tot.tx_packets += st->tx_packets;
			tot.tx_bytes += st->tx_bytes;
		}
		printf("\n     ]}");
	}
	printf("\n  ],\n");
	serve_rec_final_json(s);
	printf("  \"totals\": {\"rx_packets\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
	       ", \"tx_packets\": %" PRIu64 ", \"tx_bytes\": %" PRIu64 ", \"drops\": %" PRIu64
	       "}\n}\n",
	       tot.rx_packets, tot.rx_bytes, tot.tx_packets, tot.tx_bytes, drops_of(&tot));
}

/* One port's per-queue counters summed for the text summary; the evict tuner's trials
 * are shared by --evict and --prefetch auto, so both lines print the same ones. */
struct port_sum {
	uint64_t zero_copied, lines_evicted, payload_prefetches;
	uint64_t trials, trials_on, shifts;
	uint64_t sw_segmented, sw_frames, sw_checksummed, sw_refused;
};

static void port_sums(const struct serve_port *p, uint32_t queues, struct port_sum *sum)
{
	*sum = (struct port_sum){0};
	for (uint32_t q = 0; q < queues; q++) {
		const struct serve_pair *pair = &p->pairs[q];

		sum->zero_copied += pair->st.zero_copied;
		sum->lines_evicted += pair->st.lines_evicted;
		sum->payload_prefetches += pair->st.payload_prefetches;
		sum->trials += pair->evict.trials;
		sum->trials_on += pair->evict.trials_on;
		sum->shifts += pair->evict.shifts;
		sum->sw_segmented += pair->st.sw_segmented;
		sum->sw_frames += pair->st.sw_frames;
		sum->sw_checksummed += pair->st.sw_checksummed;
		for (unsigned r = 0; r < VL_SW__COUNT; r++)
			sum->sw_refused += pair->st.sw_refused[r];
	}
}

static void final_text(const struct serve *s, double secs, const char *stopped_by,
		       uint32_t leaked)
{
	struct serve_qstats tot = {0};
	struct port_sum sum;

	printf("vhostlab serve: mode %s, %" PRIu32 " queue pair%s, %.2f s (idle %.2f s), "
	       "stopped by %s\n",
	       mode_names[s->o.mode], s->o.queues, s->o.queues == 1 ? "" : "s", secs, s->idle,
	       stopped_by);
	printf("%-28s %5s %12s %14s %12s %14s %8s %10s %10s\n", "socket", "queue", "rx_packets",
	       "rx_bytes", "tx_packets", "tx_bytes", "drops", "kicks", "calls");
	for (uint32_t i = 0; i < s->nports; i++) {
		const struct serve_port *p = &s->port[i];

		for (uint32_t q = 0; q < s->o.queues; q++) {
			const struct serve_qstats *st = &p->pairs[q].st;

			printf("%-28s %5" PRIu32 " %12" PRIu64 " %14" PRIu64 " %12" PRIu64
			       " %14" PRIu64 " %8" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
			       p->path, q, st->rx_packets, st->rx_bytes, st->tx_packets,
			       st->tx_bytes, drops_of(st), st->kicks, st->calls);
			for (unsigned d = 0; d < SERVE_DROP__COUNT; d++)
				tot.drops[d] += st->drops[d];
			tot.rx_packets += st->rx_packets;
			tot.tx_packets += st->tx_packets;
		}
		printf("%s: %" PRIu64 " connection%s, %" PRIu64 " messages (%" PRIu64
		       " rejected), last features 0x%" PRIx64 "\n",
		       p->path, p->connections, p->connections == 1 ? "" : "s", p->messages,
		       p->rejected, p->features);
		port_sums(p, s->o.queues, &sum);
		if (s->o.zero_copy)
			printf("%s: %" PRIu64 " packets received without copying\n", p->path,
			       sum.zero_copied);
		if (sum.sw_segmented || sum.sw_checksummed || sum.sw_refused)
			printf("%s: offloads its guest did not negotiate, done in software: %" PRIu64
			       " packets segmented into %" PRIu64 " frames, %" PRIu64
			       " checksums completed, %" PRIu64 " packets refused\n",
			       p->path, sum.sw_segmented, sum.sw_frames, sum.sw_checksummed,
			       sum.sw_refused);
		if (s->o.evict != SERVE_EVICT_OFF) {
			printf("%s: %" PRIu64 " guest lines evicted after their copy (--evict %s",
			       p->path, sum.lines_evicted, evict_names[s->o.evict]);
			if (s->o.evict == SERVE_EVICT_AUTO)
				printf(": %" PRIu64 " trials, %" PRIu64 " turned it on, %" PRIu64
				       " after the rate moved", sum.trials, sum.trials_on, sum.shifts);
			printf(")\n");
		}
		if (s->o.prefetch != SERVE_EVICT_OFF) {
			printf("%s: %" PRIu64 " packets' first lines prefetched (--prefetch %s",
			       p->path, sum.payload_prefetches, evict_names[s->o.prefetch]);
			if (s->o.prefetch == SERVE_EVICT_AUTO)
				printf(": %" PRIu64 " trials, %" PRIu64 " turned it on", sum.trials,
				       sum.trials_on);
			printf(")\n");
		}
	}
	printf("total: rx %" PRIu64 " packets (%.0f pps), tx %" PRIu64 " packets (%.0f pps), "
	       "drops %" PRIu64,
	       tot.rx_packets, secs > 0 ? (double)tot.rx_packets / secs : 0.0, tot.tx_packets,
	       secs > 0 ? (double)tot.tx_packets / secs : 0.0, drops_of(&tot));
	for (unsigned d = 0; d < SERVE_DROP__COUNT; d++) {
		if (tot.drops[d])
			printf(" %s=%" PRIu64, drop_names[d], tot.drops[d]);
	}
	printf("\n");
	serve_rec_final_text(s);
	if (leaked)
		printf("FAIL: %" PRIu32 " packet buffers were not returned to their pools\n", leaked);
}

void serve_stats_final(struct serve *s, double now, const char *stopped_by, uint32_t leaked)
{
	double secs = now - s->start;

	if (s->o.json)
		final_json(s, secs, stopped_by, leaked);
	else
		final_text(s, secs, stopped_by, leaked);
	fflush(stdout);
}

/* SPDX-License-Identifier: MIT */
/* vhostlab bench: statistics over the repetitions, the table and the JSON. */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

struct mmm {
	double median, min, max;
	bool valid;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median (mean of the middle two for an even count), min and max of the values that are
 * defined (a repetition that moved no packet has no time per packet). */
static struct mmm summarize(const double *v, const bool *ok, uint32_t n)
{
	double s[BENCH_MAX_REPS];
	uint32_t k = 0;
	struct mmm m = {0};

	for (uint32_t i = 0; i < n; i++)
		if (ok[i])
			s[k++] = v[i];
	if (k == 0)
		return m;
	qsort(s, k, sizeof(s[0]), cmp_double);
	m.valid = true;
	m.min = s[0];
	m.max = s[k - 1];
	m.median = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
	return m;
}

struct cell_stats {
	struct mmm mpps, ns_pkt, ns_call, driver_ns_pkt, packets, calls;
	/* Packets per second of all threads together, guest work included (the sum of each
	 * thread's packets over its own wall time), and per thread. */
	struct mmm wall_mpps;
	struct mmm thread_wall_mpps[BENCH_MAX_THREADS];
	uint32_t threads;
	double alloc_calls_per_call, alloc_bufs_per_call;
	uint64_t checked_bytes, zc_packets;
};

static void cell_stats(const struct bench_result *r, struct cell_stats *s)
{
	double mpps[BENCH_MAX_REPS] = {0}, nsp[BENCH_MAX_REPS] = {0}, nsc[BENCH_MAX_REPS] = {0};
	double drv[BENCH_MAX_REPS] = {0}, pk[BENCH_MAX_REPS] = {0}, ca[BENCH_MAX_REPS] = {0};
	double wall[BENCH_MAX_REPS] = {0}, per[BENCH_MAX_THREADS][BENCH_MAX_REPS];
	bool has_pkts[BENCH_MAX_REPS] = {0}, has_calls[BENCH_MAX_REPS] = {0};
	bool all[BENCH_MAX_REPS] = {0};
	uint64_t calls = 0, acalls = 0, abufs = 0;

	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < r->nreps; i++) {
		const struct bench_rep *p = &r->reps[i];

		has_pkts[i] = p->packets > 0 && p->core_ns > 0;
		has_calls[i] = p->calls > 0;
		all[i] = true;
		mpps[i] = p->core_ns > 0 ? (double)p->packets * 1e3 / p->core_ns : 0;
		nsp[i] = p->packets ? p->core_ns / (double)p->packets : 0;
		nsc[i] = p->calls ? p->core_ns / (double)p->calls : 0;
		drv[i] = p->packets ? p->driver_ns / (double)p->packets : 0;
		pk[i] = (double)p->packets;
		ca[i] = (double)p->calls;
		s->threads = p->threads ? p->threads : 1;
		for (uint32_t t = 0; t < s->threads && t < BENCH_MAX_THREADS; t++) {
			per[t][i] = p->thread_wall_mpps[t];
			wall[i] += p->thread_wall_mpps[t];
		}
		calls += p->calls;
		acalls += p->alloc_calls;
		abufs += p->alloc_bufs;
		s->checked_bytes += p->checked_bytes;
		s->zc_packets += p->zc_packets;
	}
	s->mpps = summarize(mpps, all, r->nreps);
	s->ns_pkt = summarize(nsp, has_pkts, r->nreps);
	s->ns_call = summarize(nsc, has_calls, r->nreps);
	s->driver_ns_pkt = summarize(drv, has_pkts, r->nreps);
	s->packets = summarize(pk, all, r->nreps);
	s->wall_mpps = summarize(wall, all, r->nreps);
	for (uint32_t t = 0; t < s->threads && t < BENCH_MAX_THREADS; t++)
		s->thread_wall_mpps[t] = summarize(per[t], all, r->nreps);
	s->calls = summarize(ca, all, r->nreps);
	s->alloc_calls_per_call = calls ? (double)acalls / (double)calls : 0;
	s->alloc_bufs_per_call = calls ? (double)abufs / (double)calls : 0;
}

void bench_cpu_name(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) != 0)
			continue;
		char *colon = strchr(line, ':');

		if (!colon)
			break;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

static void fmt_mmm(char *buf, size_t len, const struct mmm *m, int prec)
{
	if (!m->valid)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.*f [%.*f-%.*f]", prec, m->median, prec, m->min, prec, m->max);
}

void bench_print_table(FILE *out, const struct bench_opts *o, const struct bench_result *res,
		       uint32_t n)
{
	char cpu[128];

	bench_cpu_name(cpu, sizeof(cpu));
	fprintf(out, "core: %s (build %s)   cpu: %s   burst %u, queue size %u, %u interleaved "
		     "reps of ", cli_core_build(), cli_build_variant(), cpu, o->burst,
		o->queue_size, o->reps);
	if (o->packets)
		fprintf(out, "%" PRIu64 " packets\n", o->packets);
	else
		fprintf(out, "%.3g s\n", o->seconds);
	fprintf(out, "times are the core's alone: median [min-max] over the reps; driver = the "
		     "simulated guest's own ns/pkt\n");
	if (o->threads > 1)
		fprintf(out, "%u threads at once, each its own guest: counts and times summed over "
			     "them; wall Mpps = their packets per second together, guest included\n",
			o->threads);
	fputc('\n', out);
	fprintf(out, "%-78s %-22s %-22s %-22s %8s %10s %9s", "cell", "Mpps", "ns/pkt",
		"ns/call", "driver", "alloc/call", "calls/rep");
	if (o->threads > 1)
		fprintf(out, " %-22s", "wall Mpps");
	if (o->instructions)
		fprintf(out, " %10s", "instr/pkt");
	fputc('\n', out);
	for (uint32_t i = 0; i < n; i++) {
		struct cell_stats s;
		char name[160], a[48], b[48], c[48], d[16];

		cell_stats(&res[i], &s);
		bench_cell_name(&res[i].cell, name, sizeof(name));
		fmt_mmm(a, sizeof(a), &s.mpps, 2);
		fmt_mmm(b, sizeof(b), &s.ns_pkt, 1);
		fmt_mmm(c, sizeof(c), &s.ns_call, 0);
		if (s.driver_ns_pkt.valid)
			snprintf(d, sizeof(d), "%.1f", s.driver_ns_pkt.median);
		else
			snprintf(d, sizeof(d), "-");
		fprintf(out, "%-78s %-22s %-22s %-22s %8s %10.2f %9.0f", name, a, b, c, d,
			s.alloc_calls_per_call, s.calls.median);
		if (o->threads > 1) {
			fmt_mmm(a, sizeof(a), &s.wall_mpps, 2);
			fprintf(out, " %-22s", a);
		}
		if (o->instructions) {
			if (res[i].have_instr && res[i].instr_packets)
				fprintf(out, " %10.1f", res[i].instr_per_pkt);
			else
				fprintf(out, " %10s", "-");
		}
		fputc('\n', out);
	}
}

static void json_mmm(FILE *out, const char *key, const struct mmm *m, bool last)
{
	fprintf(out, "      \"%s\": ", key);
	if (m->valid)
		fprintf(out, "{\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}", m->median, m->min,
			m->max);
	else
		fprintf(out, "null");
	fprintf(out, "%s\n", last ? "" : ",");
}

static void json_cell(FILE *out, const struct bench_opts *o, const struct bench_result *r)
{
	const struct bench_cell *c = &r->cell;
	struct cell_stats s;
	char name[160];

	cell_stats(r, &s);
	bench_cell_name(c, name, sizeof(name));
	fprintf(out, "    {\n      \"name\": ");
	cli_json_string(out, name);
	fprintf(out, ",\n      \"direction\": \"%s\",\n      \"layout\": \"%s\",\n"
		     "      \"size\": %u,\n      \"mergeable\": %s,\n      \"in_order\": %s,\n",
		bench_dir_name(c->dir), bench_layout_name(c->layout), c->size,
		c->mergeable ? "true" : "false", c->in_order ? "true" : "false");
	if (c->batch == BENCH_BATCH_ALL)
		fprintf(out, "      \"batch\": \"all\",\n");
	else
		fprintf(out, "      \"batch\": %u,\n", c->batch);
	fprintf(out, "      \"zero_copy\": %s,\n      \"alloc\": \"%s\",\n      \"fill\": \"%s\",\n"
		     "      \"csum\": %s,\n      \"pieces\": %u,\n      \"indirect\": %s,\n"
		     "      \"regions\": %u,\n",
		c->zero_copy ? "true" : "false", bench_alloc_name(c->alloc),
		bench_fill_name(c->fill), c->csum ? "true" : "false", c->pieces,
		c->indirect ? "true" : "false", c->regions);
	json_mmm(out, "mpps", &s.mpps, false);
	json_mmm(out, "ns_per_pkt", &s.ns_pkt, false);
	json_mmm(out, "ns_per_call", &s.ns_call, false);
	json_mmm(out, "wall_mpps", &s.wall_mpps, false);
	fprintf(out, "      \"thread_wall_mpps\": [");
	for (uint32_t t = 0; t < s.threads; t++)
		fprintf(out, "%s%.4f", t ? ", " : "", s.thread_wall_mpps[t].median);
	fprintf(out, "],\n");
	if (s.driver_ns_pkt.valid)
		fprintf(out, "      \"driver_ns_per_pkt\": %.4f,\n", s.driver_ns_pkt.median);
	else
		fprintf(out, "      \"driver_ns_per_pkt\": null,\n");
	fprintf(out, "      \"packets_per_rep\": %.0f,\n      \"calls_per_rep\": %.0f,\n",
		s.packets.median, s.calls.median);
	fprintf(out, "      \"alloc_calls_per_call\": %.4f,\n      \"alloc_bufs_per_call\": %.4f,\n",
		s.alloc_calls_per_call, s.alloc_bufs_per_call);
	fprintf(out, "      \"zc_packets\": %" PRIu64 ",\n      \"checked_bytes\": %" PRIu64 ",\n",
		s.zc_packets, s.checked_bytes);
	fprintf(out, "      \"reps\": [");
	for (uint32_t i = 0; i < r->nreps; i++) {
		const struct bench_rep *p = &r->reps[i];

		fprintf(out, "%s{\"packets\": %" PRIu64 ", \"calls\": %" PRIu64
			     ", \"core_ns\": %.0f, \"driver_ns\": %.0f, \"wall_ns\": %.0f}",
			i ? ", " : "", p->packets, p->calls, p->core_ns, p->driver_ns, p->wall_ns);
	}
	fprintf(out, "]");
	if (o->instructions) {
		if (r->have_instr && r->instr_packets == 0)
			fprintf(out, ",\n      \"instr_per_pkt\": null,\n      \"instr_per_call\": %.2f,\n"
				     "      \"instr_total\": %" PRIu64 ",\n      \"instr_packets\": 0,\n"
				     "      \"instr_calls\": %" PRIu64,
				r->instr_per_call, r->instr_total, r->instr_calls);
		else if (r->have_instr)
			fprintf(out, ",\n      \"instr_per_pkt\": %.2f,\n      \"instr_per_call\": %.2f,\n"
				     "      \"instr_total\": %" PRIu64 ",\n      \"instr_packets\": %"
				     PRIu64 ",\n      \"instr_calls\": %" PRIu64,
				r->instr_per_pkt, r->instr_per_call, r->instr_total, r->instr_packets,
				r->instr_calls);
		else
			fprintf(out, ",\n      \"instr_per_pkt\": null");
	}
	char path[PATH_MAX];

	if (o->profile_dir && r->have_instr && bench_profile_path(o, &r->cell, path, sizeof(path))) {
		fprintf(out, ",\n      \"profile\": ");
		cli_json_string(out, path);
	}
	fprintf(out, "\n    }");
}

void bench_print_json(FILE *out, const struct bench_opts *o, const struct bench_result *res,
		      uint32_t n, double timer_ns)
{
	char cpu[128];

	bench_cpu_name(cpu, sizeof(cpu));
	fprintf(out, "{\n  \"core\": \"%s\",\n  \"build\": \"%s\",\n  \"cpu\": ",
		cli_core_build(), cli_build_variant());
	cli_json_string(out, cpu);
	fprintf(out, ",\n  \"compiler\": ");
	cli_json_string(out, __VERSION__);
	fprintf(out, ",\n  \"reps\": %u,\n  \"burst\": %u,\n  \"queue_size\": %u,\n"
		     "  \"threads\": %u,\n", o->reps, o->burst, o->queue_size, o->threads);
	if (o->packets)
		fprintf(out, "  \"packets_per_rep\": %" PRIu64 ",\n  \"seconds_per_rep\": null,\n",
			o->packets);
	else
		fprintf(out, "  \"packets_per_rep\": null,\n  \"seconds_per_rep\": %.6g,\n",
			o->seconds);
	fprintf(out, "  \"timer_ns\": %.2f,\n  \"instructions\": %s,\n  \"cells\": [\n", timer_ns,
		o->instructions ? "true" : "false");
	for (uint32_t i = 0; i < n; i++) {
		json_cell(out, o, &res[i]);
		fprintf(out, "%s\n", i + 1 < n ? "," : "");
	}
	fprintf(out, "  ]\n}\n");
}

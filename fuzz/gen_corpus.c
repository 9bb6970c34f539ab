/* SPDX-License-Identifier: MIT */
/* gen_corpus: write a seed corpus for every fuzz target.
 *
 *   gen_corpus OUTDIR [TARGET...]
 *
 * creates OUTDIR/<target>/ and writes one file per seed: well-formed traffic in several
 * configurations, and one input per hostile-guest class the datapath targets must survive
 * (loop, next out of range, head >= size, avail index jump, nested indirect, bad indirect
 * length, unmapped range, region straddle, header over three descriptors, short chain,
 * zero-length descriptors, length overflow, the TX size limit, wrong direction, bad offload;
 * packed lies: incomplete chain, id out of range, used-looking head). Seeds are built with
 * the encoders of sim/input/ (dp_format.h, sc_df_format.h), so they follow the input formats as those evolve; a ctest
 * test runs this program and replays every seed through every target. The trace parser's
 * seeds are text: copied from fuzz/seeds/fuzz_trace_parse/ (each checked to parse, or for
 * bad-* to fail) and tests/traces/. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_corpus.h"
#include "trace/trace.h"

/* The source tree (fuzz/corpus.cmake, fuzz/build.sh): where hand-written seeds live. */
#ifndef VL_SOURCE_DIR
#error "build gen_corpus with -DVL_SOURCE_DIR=\"<the source tree>\""
#endif


/* ---- output -------------------------------------------------------------------------- */

static const char *out_root;
static int failures;
static unsigned written;

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	fprintf(stderr, "gen_corpus: mkdir %s: %s\n", path, strerror(errno));
	return -1;
}

void save(const char *target, const char *name, struct fz_out *o)
{
	char dir[4096];

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", out_root, target) >= sizeof(dir) ||
	    make_dir(dir) != 0 || fz_out_save(o, dir, name) != 0)
		failures++;
	else
		written++;
	fz_out_free(o);
}


/* ---- scenario seeds ------------------------------------------------------------------ */

static void gen_scenario(void)
{
	static const struct {
		const char *name;
		uint8_t flags, mode, qsize;
	} cfgs[] = {
		{"split-default", FZ_SC_F_MERGEABLE | FZ_SC_F_INDIRECT | FZ_SC_F_MODERN, 3 << 4, 3},
		{"packed-default", FZ_SC_F_PACKED | FZ_SC_F_MERGEABLE | FZ_SC_F_INDIRECT, 3 << 4, 30},
		{"split-legacy-coarse", 0, 0, 4},
		{"split-in-order-event-idx-4k", FZ_SC_F_IN_ORDER | FZ_SC_F_EVENT_IDX, 1 << 2, 2},
		{"packed-odd-size-event-idx", FZ_SC_F_PACKED | FZ_SC_F_EVENT_IDX | FZ_SC_F_IN_ORDER,
		 1 << 2 | 3 << 4, 5},
		{"split-zero-copy-dirty-log", FZ_SC_F_ZERO_COPY | FZ_SC_F_DIRTY_LOG | FZ_SC_F_MERGEABLE,
		 3 << 4, 4},
		{"packed-zero-copy-in-order", FZ_SC_F_PACKED | FZ_SC_F_ZERO_COPY | FZ_SC_F_IN_ORDER,
		 1 << 2, 14},
		{"split-faults-nth", FZ_SC_F_INDIRECT | FZ_SC_F_MODERN, 1 | 5 << 4, 3},
		{"packed-faults-prob", FZ_SC_F_PACKED | FZ_SC_F_MERGEABLE, 2 | 2 << 2, 62},
		{"split-faults-scarce-zc", FZ_SC_F_ZERO_COPY | FZ_SC_F_MERGEABLE, 3 | 1 << 2, 2},
		{"packed-tiny-queue", FZ_SC_F_PACKED | FZ_SC_F_MERGEABLE | FZ_SC_F_EVENT_IDX, 1 << 2,
		 0},
		{"split-tiny-queue", FZ_SC_F_MERGEABLE | FZ_SC_F_EVENT_IDX, 1 << 2, 0},
		{"split-64k-regions-batch-max", FZ_SC_F_INDIRECT | FZ_SC_F_DIRTY_LOG, 3 << 2 | 6 << 4,
		 5},
		{"packed-everything", 0xff, 3 | 1 << 2 | 3 << 4, 17},
	};
	static const uint16_t sizes[][4] = {
		{64, 1500, 9000, 257}, {1, 255, 256, 4096}, {60000, 64, 0, 0}, {128, 129, 2048, 2049},
	};

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct fz_out o;
		struct fz_sc_input s = {
			.flags = cfgs[i].flags,
			.mode = cfgs[i].mode,
			.qsize = cfgs[i].qsize,
			.burst = (uint8_t)(i % 3 == 0 ? 31 : i % 3 == 1 ? 7 : 0),
			.packets = (uint8_t)(i * 11),
			/* Every third seed a long run (sc_run.c: 50..200 packets each way). */
			.containment = (uint8_t)(i % 4 | (i % 3 == 0 ? 0xf0u : 0u)),
			.seed = 1000 + i,
			.nsizes = (uint8_t)(i % 4 == 2 ? 1 : 3),
		};

		memcpy(s.sizes, sizes[i % 4], sizeof(sizes[0]));
		fz_out_init(&o);
		fz_enc_scenario(&o, &s);
		save("fuzz_scenario", cfgs[i].name, &o);
	}
}

/* ---- differential seeds -------------------------------------------------------------- */

static void df_round_mix(struct fz_df_round *r, unsigned k)
{
	memset(r, 0, sizeof(*r));
	r->ntx = (uint8_t)(3 + k % 5);
	r->notify = (uint8_t)(k * 37);
	for (uint8_t i = 0; i < r->ntx; i++) {
		r->tx[i].len = (uint16_t)(i % 3 == 0 ? 60u : i % 3 == 1 ? 1500u + k : 4000u + 7u * i);
		r->tx[i].shape = (uint8_t)((i * 0x35 + k) & 0xff);
		r->tx[i].place = (uint8_t)(i * 13);
		r->tx[i].ol = (uint8_t)(i + k);
	}
	r->count = (uint8_t)(k % 4 == 3 ? 2 : 64);
	r->nrx = (uint8_t)(4 + k % 6);
	for (uint8_t i = 0; i < r->nrx; i++) {
		r->rx[i].cap = (uint16_t)(i % 2 ? 1500 : 2000 + 333 * i);
		r->rx[i].shape = (uint8_t)((i * 0x0b + k) & 0x3f);
		r->rx[i].place = (uint8_t)(i * 5);
	}
	r->npkts = (uint8_t)(2 + k % 4);
	for (uint8_t i = 0; i < r->npkts; i++) {
		r->pk[i].len = (uint16_t)(i % 2 ? 64 : 1400 + 1000 * (k % 3));
		r->pk[i].ol = (uint8_t)(i * 29 + k);
	}
}

/* RX policy edges where the core and the reference model must agree exactly (each caught a
 * deliberately broken core that the mixed seeds let through):
 *  - non-mergeable buffers that hold a packet exactly, and one byte too few (delivered vs
 *    dropped too big, the buffer staying for the next packet);
 *  - mergeable buffers of four descriptors on a small ring, for a packet no full ring of
 *    them can hold: dropped as too big, never a stalled queue. */
static void gen_differential_rx_edges(void)
{
	static const struct {
		const char *name;
		uint8_t flags, qsize;
	} cfgs[] = {
		{"split-rx-exact-fit", FZ_DF_F_VERSION_1, 3},
		{"packed-rx-exact-fit", FZ_DF_F_PACKED, 6},
		{"split-rx-full-ring-multidesc", FZ_DF_F_MERGEABLE, 1},
		{"packed-rx-full-ring-multidesc", FZ_DF_F_PACKED | FZ_DF_F_MERGEABLE, 6},
	};

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		bool fit = i < 2;
		struct fz_out o;
		/* A full ring of 16 buffers needs a long run's lists. */
		struct fz_df_header h = {cfgs[i].flags, cfgs[i].qsize, 0, fit ? 0 : 0xf0};
		struct fz_df_round r;

		fz_out_init(&o);
		fz_enc_df_header(&o, &h);
		for (unsigned k = 0; k < 3; k++) {
			memset(&r, 0, sizeof(r));
			r.count = 16;
			r.nrx = fit ? 4 : FZ_DF_MAX_RX;
			for (uint8_t b = 0; b < r.nrx; b++) {
				/* Room for header + 1 + cap bytes; a packet of 1 + len bytes fits
				 * exactly when len == cap (sc_df_format.h). */
				r.rx[b].cap = (uint16_t)(fit ? 700 + 100 * k + 50 * b : 20);
				r.rx[b].shape = (uint8_t)(fit ? 0 : 3);   /* 1 or 4 data descriptors */
				r.rx[b].place = (uint8_t)(b * 7);
			}
			r.npkts = fit ? 4 : 2;
			for (uint8_t p = 0; p < r.npkts; p++) {
				/* Odd packets are one byte too big for the buffer they meet (dropped,
				 * the buffer stays); the next, even one fits that buffer exactly. */
				r.pk[p].len = (uint16_t)(fit ? 700 + 100 * k + 50 * ((p + 1) / 2) + (p & 1)
							     : 11000);
				r.pk[p].ol = (uint8_t)(p * 3 + k);
			}
			fz_enc_df_round(&o, &h, &r);
		}
		save("fuzz_differential", cfgs[i].name, &o);
	}
}

static void gen_differential(void)
{
	static const struct {
		const char *name;
		uint8_t flags, qsize, zc;
		uint16_t start;
	} cfgs[] = {
		{"split-basic", FZ_DF_F_VERSION_1 | FZ_DF_F_INDIRECT, 4, 0, 0},
		{"split-mergeable-4k-wrap", FZ_DF_F_MERGEABLE | FZ_DF_F_INDIRECT | FZ_DF_F_GRAN_4K, 5,
		 3, 0xffe0},
		{"split-in-order-event-idx-log", FZ_DF_F_IN_ORDER | FZ_DF_F_EVENT_IDX |
		 FZ_DF_F_DIRTY_LOG | FZ_DF_F_VERSION_1, 3, 1, 0xfff0},
		{"split-legacy", 0, 6, 2, 7},
		{"packed-basic", FZ_DF_F_PACKED | FZ_DF_F_INDIRECT, 30, 0, 0},
		{"packed-in-order-mergeable-4k", FZ_DF_F_PACKED | FZ_DF_F_IN_ORDER | FZ_DF_F_MERGEABLE |
		 FZ_DF_F_GRAN_4K, 14, 3, 10},
		{"packed-odd-event-idx-log", FZ_DF_F_PACKED | FZ_DF_F_EVENT_IDX | FZ_DF_F_DIRTY_LOG |
		 FZ_DF_F_INDIRECT, 21, 1, 20},
		{"packed-tiny", FZ_DF_F_PACKED | FZ_DF_F_MERGEABLE, 1, 2, 1},
	};

	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct fz_out o;
		/* Every third a long run (4 rounds of the full mix), the rest short runs: the
		 * mix cut to the short run's lists, in its 3 rounds. */
		const bool long_run = i % 3 == 0;
		struct fz_df_header h = {cfgs[i].flags, cfgs[i].qsize, cfgs[i].start,
					 (uint8_t)(cfgs[i].zc | (long_run ? 0xf0u : 0u))};
		struct fz_df_round r;
		const uint8_t cap = (uint8_t)fz_df_max_list(&h);

		fz_out_init(&o);
		fz_enc_df_header(&o, &h);
		for (unsigned k = 0; k < (long_run ? 4u : fz_df_max_rounds(&h)); k++) {
			df_round_mix(&r, (unsigned)(k + 3 * i));
			r.ntx = r.ntx < cap ? r.ntx : cap;
			r.nrx = r.nrx < cap ? r.nrx : cap;
			r.npkts = r.npkts < cap ? r.npkts : cap;
			fz_enc_df_round(&o, &h, &r);
		}
		save("fuzz_differential", cfgs[i].name, &o);
	}
	gen_differential_rx_edges();
}

/* ---- trace parser seeds --------------------------------------------------------------- */

/* Copy every regular file of dir (not hidden; with `suffix` when given) into the target's
 * corpus as prefix-NAME. With `check`, a seed must parse as a trace -- or, named bad-*,
 * must not -- so a seed that rots with the format fails the corpus test instead of
 * quietly seeding nothing. */
static void copy_seeds(const char *target, const char *dir, const char *prefix,
		       const char *suffix, bool check)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	if (n < 0) {
		if (check) {
			fprintf(stderr, "gen_corpus: cannot list %s\n", dir);
			failures++;
		}
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		size_t len = strlen(name), slen = suffix ? strlen(suffix) : 0;
		char path[4096], out[512], err[512];
		struct lab_trace t;
		struct stat st;
		struct fz_out o;
		FILE *f;

		if (name[0] == '.' || len < slen || (suffix && strcmp(name + len - slen, suffix)) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
		    stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
		    (size_t)snprintf(out, sizeof(out), "%s-%s", prefix, name) >= sizeof(out)) {
			free(names[i]);
			continue;
		}
		if (check) {
			bool bad = strncmp(name, "bad-", 4) == 0;

			if (lab_trace_load(&t, path, err, sizeof(err)) == bad) {
				fprintf(stderr, "gen_corpus: %s\n", bad ? "a bad-* seed parses" : err);
				failures++;
			}
			lab_trace_free(&t);
		}
		fz_out_init(&o);
		f = fopen(path, "rb");
		if (f) {
			uint8_t buf[4096];
			size_t k;

			while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
				fz_put_bytes(&o, buf, k);
			fclose(f);
			save(target, out, &o);
		} else {
			fprintf(stderr, "gen_corpus: cannot read %s\n", path);
			fz_out_free(&o);
			failures++;
		}
		free(names[i]);
	}
	free(names);
}

/* fuzz_trace_parse: hand-written traces (fuzz/seeds/fuzz_trace_parse/) and the lab's trace
 * tests (the .trace files of tests/traces/), from the source tree it was built from. */
static void gen_trace_parse(void)
{
	copy_seeds("fuzz_trace_parse", VL_SOURCE_DIR "/fuzz/seeds/fuzz_trace_parse", "seed", NULL,
		   true);
	copy_seeds("fuzz_trace_parse", VL_SOURCE_DIR "/tests/traces", "traces", ".trace", false);
}


/* ---- main ---------------------------------------------------------------------------- */

static const char *const targets[] = {
	"fuzz_split_dequeue", "fuzz_split_enqueue", "fuzz_packed_dequeue", "fuzz_packed_enqueue",
	"fuzz_scenario", "fuzz_differential", "fuzz_trace_parse", "fuzz_vhost_user",
	"fuzz_offload", "fuzz_fe_replies",
};

static void gen_target(const char *t)
{
	if (!strcmp(t, "fuzz_split_dequeue"))
		gen_datapath(t, false, false);
	else if (!strcmp(t, "fuzz_split_enqueue"))
		gen_datapath(t, false, true);
	else if (!strcmp(t, "fuzz_packed_dequeue"))
		gen_datapath(t, true, false);
	else if (!strcmp(t, "fuzz_packed_enqueue"))
		gen_datapath(t, true, true);
	else if (!strcmp(t, "fuzz_scenario"))
		gen_scenario();
	else if (!strcmp(t, "fuzz_differential"))
		gen_differential();
	else if (!strcmp(t, "fuzz_trace_parse"))
		gen_trace_parse();
	else if (!strcmp(t, "fuzz_vhost_user"))
		gen_vhost_user();
	else if (!strcmp(t, "fuzz_offload"))
		gen_offload();
	else if (!strcmp(t, "fuzz_fe_replies"))
		gen_fe_replies();
	else {
		fprintf(stderr, "gen_corpus: unknown target %s\n", t);
		failures++;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: gen_corpus OUTDIR [TARGET...]\n"
				"writes a seed corpus per fuzz target into OUTDIR/<target>/\n"
				"targets:");
		for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
			fprintf(stderr, " %s", targets[i]);
		fprintf(stderr, "\n");
		return argc < 2 ? 2 : 0;
	}
	out_root = argv[1];
	if (make_dir(out_root) != 0)
		return 1;
	if (argc == 2)
		for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
			gen_target(targets[i]);
	for (int i = 2; i < argc; i++)
		gen_target(argv[i]);
	printf("gen_corpus: %u seeds written to %s\n", written, out_root);
	return failures ? 1 : 0;
}

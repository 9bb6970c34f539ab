/* SPDX-License-Identifier: MIT */
/* vhostlab bench: the in-process benchmark of the core against a lean simulated guest.
 *
 * Files, one job each:
 *   cmd_bench.c        the command: interleaved repetitions over the cells, progress
 *   bench_opts.c       options, value lists, the cartesian product of cells, --help
 *   bench_loop.c       one repetition of one cell: guest setup, the timed core loop, checks
 *   bench_report.c     statistics (median/min/max), the table and the JSON
 *   bench_callgrind.c  --instructions: re-run a cell under callgrind, core functions only
 *   bench_threads.c    --threads N: one repetition on N threads at once, each its own guest */
#ifndef VL_BENCH_H
#define VL_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vhostlab/vhostlab.h"

#define BENCH_MAX_LIST 16u
#define BENCH_MAX_REPS 64u
/* --threads: repetitions run on this many threads at once at most. */
#define BENCH_MAX_THREADS 16u
#define BENCH_MAX_CELLS 1024u
/* --pieces: descriptors per TX chain (zero-copy takes up to VL_ZC_MAX_SEGS of them). */
#define BENCH_MAX_PIECES 8u
/* --indirect on: the guest's table for one chain, room for BENCH_MAX_PIECES 16-byte entries. */
#define BENCH_TABLE_BYTES (16u * BENCH_MAX_PIECES)
/* --regions: guest RAM regions; with the rings' region the table holds one more, up to the
 * 509 slots vhost-user front ends may fill (VL_VU_MAX_MEM_SLOTS). */
#define BENCH_MAX_REGIONS (VL_VU_MAX_MEM_SLOTS - 1u)
/* --batch all: every copy goes through the batch, whatever its size. */
#define BENCH_BATCH_ALL UINT32_MAX

enum bench_dir { BENCH_DEQUEUE, BENCH_ENQUEUE, BENCH_BOTH, BENCH_DIR__COUNT };
enum bench_fill { BENCH_FILL_FULL, BENCH_FILL_ONE, BENCH_FILL_EMPTY, BENCH_FILL__COUNT };

const char *bench_dir_name(enum bench_dir d);
const char *bench_fill_name(enum bench_fill f);
const char *bench_layout_name(enum vl_layout l);
const char *bench_alloc_name(enum vl_alloc_policy a);

/* One point of the measured product. */
struct bench_cell {
	enum bench_dir dir;
	enum vl_layout layout;
	uint32_t size;          /* packet bytes, virtio-net header excluded */
	bool mergeable;
	bool in_order;
	uint32_t batch;         /* batch threshold in bytes; 0 off; BENCH_BATCH_ALL */
	bool zero_copy;         /* dequeue only */
	enum vl_alloc_policy alloc;
	enum bench_fill fill;
	bool csum;              /* VIRTIO_NET_F_CSUM: dequeue reads and checks every TX header */
	uint32_t pieces;        /* descriptors per TX chain, its buffer cut into that many
				 * (1..BENCH_MAX_PIECES; dequeue; a Linux guest sends 2+) */
	bool indirect;          /* TX chains as an indirect table of those pieces, one ring
				 * descriptor each (VIRTIO_RING_F_INDIRECT_DESC; dequeue) */
	uint32_t regions;       /* guest RAM regions the buffers are spread over (1..
				 * BENCH_MAX_REGIONS); the memory table holds one more, the
				 * rings' own. > 1: consecutive buffers lie in different regions,
				 * so every translation searches the table */
};

/* "dequeue/split/64/mrg=off/io=off/batch=256/zc=off/alloc=available/fill=full": the cell's
 * stable name (the instruction-count baseline is keyed by it); "/csum=on" is appended only
 * when VIRTIO_NET_F_CSUM is negotiated, "/pieces=N" only when N > 1 and "/indirect=on" only
 * for indirect TX chains and "/regions=N" only when N > 1, so the names of cells without
 * them never change. */
void bench_cell_name(const struct bench_cell *c, char *buf, size_t len);

struct bench_opts {
	struct bench_cell cells[BENCH_MAX_CELLS];
	uint32_t ncells;
	uint32_t burst;
	uint32_t queue_size;
	uint32_t reps;
	double seconds;          /* per repetition, when packets == 0 */
	uint64_t packets;        /* per repetition (0: run for `seconds`) */
	bool quick;
	bool instructions;
	const char *profile_dir; /* --profile DIR: keep each cell's callgrind output there */
	bool json;
	bool quiet;
	bool callgrind_child;    /* internal: we are the program callgrind runs */
	uint32_t threads;        /* --threads: each repetition on this many threads at once,
				  * each with its own guest, queues and pool (default 1) */
};

/* Parse the command line. Returns 0, or CLI_EXIT_USAGE after printing what was wrong
 * (or -1 after --help was printed: exit 0). */
int bench_parse(int argc, char **argv, struct bench_opts *o);

/* What one repetition of one cell measured. Times are of the core alone. */
struct bench_rep {
	uint64_t packets;        /* moved by the core (per direction, summed for both) */
	uint64_t calls;          /* core burst calls */
	double core_ns;          /* inside the core's calls */
	double driver_ns;        /* the guest's own work: posting, harvesting, checking */
	uint64_t alloc_calls, alloc_bufs; /* dequeue queue's counters over the rep */
	uint64_t checked_bytes;  /* payload bytes compared with what was sent */
	uint64_t zc_packets;
	/* Wall time of the measured loop (core and guest). With --threads N the counts and
	 * times above are summed over the threads, wall_ns is the longest thread's, and
	 * thread_wall_mpps[t] is thread t's packets over its own wall time. */
	double wall_ns;
	uint32_t threads;
	double thread_wall_mpps[BENCH_MAX_THREADS];
};

/* Run one repetition of cell c. Returns 0, or -1 with a message in err when the core
 * misbehaved (a packet lost, duplicated, of the wrong length or with the wrong bytes) or
 * the setup failed. `warmup` calls run first, untimed. */
int bench_run_rep(const struct bench_opts *o, const struct bench_cell *c, struct bench_rep *r,
		  char *err, size_t errlen);
/* One repetition of cell c on o->threads threads at once (bench_run_rep when 1), started
 * together; r sums them (struct bench_rep). -1 when any thread's run failed (its message,
 * naming the thread, in err) or a thread could not be started. */
int bench_run_threads(const struct bench_opts *o, const struct bench_cell *c,
		      struct bench_rep *r, char *err, size_t errlen);

/* The core entry points as the bench calls them in the measured loop: out of line and under
 * names of their own, so that callgrind can collect exactly these (--toggle-collect) and
 * nothing of the guest's side. Never nested in each other. */
uint16_t bench_core_dequeue(struct vl_vq *vq, struct vl_pool *pool, struct vl_pkt **pkts,
			    uint16_t count);
uint16_t bench_core_enqueue(struct vl_vq *vq, struct vl_pkt *const *pkts, uint16_t count,
			    uint8_t *status);
void bench_core_free(struct vl_pkt **pkts, uint32_t n);
#define BENCH_CORE_SYMBOLS "bench_core_*"

/* Per-cell aggregate over the repetitions. */
struct bench_result {
	struct bench_cell cell;
	struct bench_rep reps[BENCH_MAX_REPS];
	uint32_t nreps;
	bool have_instr;
	double instr_per_pkt;    /* core alone, from callgrind */
	double instr_per_call;
	uint64_t instr_total, instr_packets, instr_calls;
};

void bench_print_table(FILE *out, const struct bench_opts *o, const struct bench_result *res,
		       uint32_t n);
void bench_print_json(FILE *out, const struct bench_opts *o, const struct bench_result *res,
		      uint32_t n, double timer_ns);

/* The cost of reading the clock once (ns), measured here: what each timed section carries
 * on top of the core's work and is subtracted. */
double bench_timer_overhead_ns(void);
double bench_now_ns(void);

/* --instructions: instruction count of the core alone for cell c, from a run of this same
 * program under callgrind. Returns 0, or -1 with a message. */
int bench_callgrind_cell(const struct bench_opts *o, const struct bench_cell *c,
			 struct bench_result *res, char *err, size_t errlen);

/* --profile DIR: the file that keeps cell c's callgrind output, DIR/NAME.callgrind with the
 * cell's name's '/' as '_'. false when it does not fit in len bytes. */
bool bench_profile_path(const struct bench_opts *o, const struct bench_cell *c, char *buf,
			size_t len);

/* --profile DIR: DIR made if missing (one level, as mkdir(1) without -p). Returns 0, or -1
 * with a message naming DIR. */
int bench_profile_prepare(const struct bench_opts *o, char *err, size_t errlen);

/* The CPU model (from /proc/cpuinfo) or "unknown". */
void bench_cpu_name(char *buf, size_t len);

#endif

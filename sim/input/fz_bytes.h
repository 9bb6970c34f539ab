/* SPDX-License-Identifier: MIT */
/* Byte-string inputs of the lab (the fuzz targets' inputs, also run by `vhostlab trace
 * from-fuzz`): the reader every decoder reads with (never fails: an exhausted input reads as
 * zeros, so every byte string is a valid input), the writer seeds are encoded with, the
 * failure every check of a byte-driven run ends in, and cached guest memory.
 *
 * Every check failure prints what was violated and calls abort(): for libFuzzer that is a
 * crash, for the replay drivers of normal builds a failed test, for from-fuzz a trace that
 * ends in the failure. */
#ifndef LAB_FZ_BYTES_H
#define LAB_FZ_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"

/* ---- failing ------------------------------------------------------------------------- */

/* Print "fuzz: <target>: <message>" to stderr and abort(). */
__attribute__((format(printf, 1, 2), noreturn)) void fz_fail(const char *fmt, ...);
/* The name fz_fail prefixes (set by each target before it runs). */
void fz_set_target(const char *name);
const char *fz_target_name(void);
/* FZ_VERBOSE set in the environment: targets print a one-line summary per input. */
bool fz_verbose(void);

/* ---- reading inputs ------------------------------------------------------------------ */

struct fz_in {
	const uint8_t *p;
	size_t n, off;
};

static inline struct fz_in fz_in_make(const uint8_t *data, size_t size)
{
	struct fz_in in = {data, size, 0};

	return in;
}

static inline bool fz_more(const struct fz_in *in)
{
	return in->off < in->n;
}

uint8_t fz_u8(struct fz_in *in);
uint16_t fz_u16(struct fz_in *in);   /* little-endian */
uint32_t fz_u32(struct fz_in *in);
uint64_t fz_u64(struct fz_in *in);
/* Copy up to len bytes (zeros past the end of the input). */
void fz_bytes(struct fz_in *in, void *dst, size_t len);

/* ---- writing seeds ------------------------------------------------------------------- */

struct fz_out {
	uint8_t *buf;
	size_t len, cap;
};

void fz_out_init(struct fz_out *o);
void fz_out_free(struct fz_out *o);
void fz_put8(struct fz_out *o, uint8_t v);
void fz_put16(struct fz_out *o, uint16_t v);
void fz_put32(struct fz_out *o, uint32_t v);
void fz_put64(struct fz_out *o, uint64_t v);
void fz_put_bytes(struct fz_out *o, const void *src, size_t len);
/* Write the buffer to dir/name. Returns 0 or -1 (message on stderr). */
int fz_out_save(const struct fz_out *o, const char *dir, const char *name);

/* ---- deterministic helpers ----------------------------------------------------------- */

/* Fill len bytes with the deterministic stream of `seed` (payloads the harnesses can
 * regenerate to compare against). */
void fz_fill(uint8_t *dst, uint32_t len, uint64_t seed);

/* ---- cached guest memory ------------------------------------------------------------- */

/* A lab_gmem of this shape, created on first use and kept for the process (creating guest
 * memory costs a memfd and a mapping per region). `slot` tells apart instances that must
 * coexist (the differential target keeps one per core variant). Every byte of the ring
 * area and RAM is zeroed before it is returned. */
struct lab_gmem *fz_gmem_get(unsigned slot, uint64_t ring_size, uint64_t ram_size,
			     uint64_t granularity);


/* ---- recording ----------------------------------------------------------------------- */

/* Where the run is recorded as a trace (sim/trace/trace_sink.h): set by `vhostlab trace
 * from-fuzz` before it runs an input, NULL while fuzzing. The hostile guest records its
 * setup, every host action and the guest's writes before it; the scenario input has the
 * scenario record itself (lab_scenario_config.record) and hands the trace over; fz_fail
 * reports its message. */
struct lab_trace_sink;
extern const struct lab_trace_sink *fz_sink;

#endif

/* SPDX-License-Identifier: MIT */
/* Byte-string inputs: reader, writer, failing, fills, cached guest memory (fz_bytes.h). */
#include "fz_bytes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "trace_sink.h"

const struct lab_trace_sink *fz_sink;

/* ---- failing ------------------------------------------------------------------------- */

static const char *fz_target = "fuzz";

void fz_set_target(const char *name)
{
	fz_target = name;
}

const char *fz_target_name(void)
{
	return fz_target;
}

bool fz_verbose(void)
{
	static int v = -1;

	if (v < 0)
		v = getenv("FZ_VERBOSE") != NULL;
	return v != 0;
}

void fz_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fuzz: %s: %s\n", fz_target, msg);
	fflush(stderr);
	/* A recorded run: the trace names the check that failed. */
	if (fz_sink)
		fz_sink->failed(fz_sink->ctx, msg);
	abort();
}

/* ---- reading inputs ------------------------------------------------------------------ */

uint8_t fz_u8(struct fz_in *in)
{
	return in->off < in->n ? in->p[in->off++] : 0;
}

uint16_t fz_u16(struct fz_in *in)
{
	uint16_t lo = fz_u8(in);

	return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

uint32_t fz_u32(struct fz_in *in)
{
	uint32_t lo = fz_u16(in);

	return lo | (uint32_t)fz_u16(in) << 16;
}

uint64_t fz_u64(struct fz_in *in)
{
	uint64_t lo = fz_u32(in);

	return lo | (uint64_t)fz_u32(in) << 32;
}

void fz_bytes(struct fz_in *in, void *dst, size_t len)
{
	uint8_t *d = dst;

	for (size_t i = 0; i < len; i++)
		d[i] = fz_u8(in);
}

/* ---- writing seeds ------------------------------------------------------------------- */

void fz_out_init(struct fz_out *o)
{
	o->buf = NULL;
	o->len = o->cap = 0;
}

void fz_out_free(struct fz_out *o)
{
	free(o->buf);
	fz_out_init(o);
}

void fz_put_bytes(struct fz_out *o, const void *src, size_t len)
{
	if (o->len + len > o->cap) {
		size_t cap = o->cap ? o->cap : 256;

		while (cap < o->len + len)
			cap *= 2;
		uint8_t *p = realloc(o->buf, cap);

		if (!p) {
			fprintf(stderr, "fuzz: out of memory building a seed\n");
			abort();
		}
		o->buf = p;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, src, len);
	o->len += len;
}

void fz_put8(struct fz_out *o, uint8_t v)
{
	fz_put_bytes(o, &v, 1);
}

/* Multi-byte values go in with one fz_put_bytes each: the differential target logs every
 * record through these, and four calls (capacity check and copy) per 32-bit value were a
 * tenth of its time. */
static void put_le(struct fz_out *o, uint64_t v, size_t n)
{
	uint8_t b[8];

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	fz_put_bytes(o, b, n);
}

void fz_put16(struct fz_out *o, uint16_t v)
{
	put_le(o, v, 2);
}

void fz_put32(struct fz_out *o, uint32_t v)
{
	put_le(o, v, 4);
}

void fz_put64(struct fz_out *o, uint64_t v)
{
	put_le(o, v, 8);
}

int fz_out_save(const struct fz_out *o, const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		fprintf(stderr, "fuzz: path too long: %s/%s\n", dir, name);
		return -1;
	}
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (o->len && fwrite(o->buf, 1, o->len, f) != o->len) {
		fprintf(stderr, "fuzz: short write to %s\n", path);
		fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

/* Not instrumented for coverage: its loop is the same for every input (the fuzzer learns
 * nothing from it), and under -fsanitize=fuzzer-no-link its compare callbacks made filling
 * the enqueue targets' packets (up to 130,535 bytes each, eight a burst) a third of their
 * time. */
#if defined(__clang__)
__attribute__((no_sanitize("coverage")))
#endif
void fz_fill(uint8_t *dst, uint32_t len, uint64_t seed)
{
	struct lab_rng r = {seed * 0xd1b54a32d192ed03ull + 1};

	lab_rng_fill(&r, dst, len);
}

/* ---- cached guest memory ------------------------------------------------------------- */

#define FZ_GMEM_SLOTS 24u

static struct fz_gmem_entry {
	struct lab_gmem *g;
	unsigned slot;
	uint64_t ring, ram, gran;
} fz_gmem_cache[FZ_GMEM_SLOTS];

/* Back to fresh (lab_gmem_reset): only the pages the last input filled are cleared, where
 * a memset of everything cost each input a pass over all of it. */
static void fz_gmem_wipe(struct lab_gmem *g)
{
	lab_gmem_reset(g);
}

struct lab_gmem *fz_gmem_get(unsigned slot, uint64_t ring_size, uint64_t ram_size,
			     uint64_t granularity)
{
	struct fz_gmem_entry *e = NULL;

	for (unsigned i = 0; i < FZ_GMEM_SLOTS; i++) {
		struct fz_gmem_entry *c = &fz_gmem_cache[i];

		if (c->g && c->slot == slot && c->ring == ring_size && c->ram == ram_size &&
		    c->gran == granularity) {
			fz_gmem_wipe(c->g);
			return c->g;
		}
		if (!c->g && !e)
			e = c;
	}
	if (!e) {
		/* Full: recycle the last entry. */
		e = &fz_gmem_cache[FZ_GMEM_SLOTS - 1];
		lab_gmem_destroy(e->g);
		e->g = NULL;
	}
	char msg[256] = "";
	struct lab_gmem_config gc = {
		.ram_size = ram_size,
		.ring_area_size = ring_size,
		.granularity = granularity,
		.seed = 0x5eed + slot,
	};

	e->g = lab_gmem_create(&gc, msg, sizeof(msg));
	if (!e->g)
		fz_fail("lab_gmem_create: %s", msg);
	e->slot = slot;
	e->ring = ring_size;
	e->ram = ram_size;
	e->gran = granularity;
	return e->g;
}


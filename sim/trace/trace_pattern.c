/* SPDX-License-Identifier: MIT */
/* Payload patterns of the trace format (docs/trace-format.md, "Payload patterns"): the bytes
 * a pattern stands for, its FNV-1a digest, and matching a buffer against it. */
#include <string.h>

#include "rng.h"
#include "trace.h"

/* The format defines seq: with exactly this function (one splitmix64 output from state x);
 * changing it changes every trace. */
static uint64_t splitmix64(uint64_t x)
{
	return lab_rng_mix(x + LAB_RNG_GAMMA);
}

/* seq: byte i is byte i % 8 (little end first) of splitmix64(seed + i / 8). Works a word
 * at a time so long payloads cost one hash per 8 bytes. */
static void seq_fill(uint64_t seed, uint64_t off, uint8_t *dst, size_t n)
{
	size_t done = 0;

	while (done < n) {
		uint64_t i = off + done;
		uint64_t w = splitmix64(seed + i / 8);
		unsigned b = (unsigned)(i % 8);

		for (; b < 8 && done < n; b++, done++)
			dst[done] = (uint8_t)(w >> (8 * b));
	}
}

/* stream: the output of the splitmix64 generator whose state starts at `state`: word k is
 * mix(state + (k + 1) * 0x9e3779b97f4a7c15), i.e. splitmix64(state + k * gamma). It is how
 * the lab's own packet payloads are made (sim/rng.h), so a recorded run names each payload
 * in one token. */
static void stream_fill(uint64_t state, uint64_t off, uint8_t *dst, size_t n)
{
	size_t done = 0;

	while (done < n) {
		uint64_t i = off + done;
		uint64_t w = splitmix64(state + (i / 8) * LAB_RNG_GAMMA);
		unsigned b = (unsigned)(i % 8);

		for (; b < 8 && done < n; b++, done++)
			dst[done] = (uint8_t)(w >> (8 * b));
	}
}

void lab_trace_pat_fill(const struct lab_trace_pat *p, uint64_t off, uint8_t *dst, size_t n)
{
	switch (p->kind) {
	case LAB_PAT_HEX: {
		/* Past the literal bytes (a caller's slip) reads as zeros, never out of bounds. */
		size_t have = off < p->nbytes ? (size_t)(p->nbytes - off) : 0;
		size_t k = have < n ? have : n;

		if (k)
			memcpy(dst, p->bytes + off, k);
		memset(dst + k, 0, n - k);
		break;
	}
	case LAB_PAT_BYTE:
		memset(dst, (int)(uint8_t)p->value, n);
		break;
	case LAB_PAT_SEQ:
		seq_fill(p->value, off, dst, n);
		break;
	case LAB_PAT_STREAM:
		stream_fill(p->value, off, dst, n);
		break;
	default:   /* ZERO; NONE and FNV1A have no bytes of their own */
		memset(dst, 0, n);
		break;
	}
}

uint64_t lab_trace_fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

bool lab_trace_pat_match(const struct lab_trace_pat *p, const uint8_t *buf, size_t n)
{
	uint8_t want[256];

	switch (p->kind) {
	case LAB_PAT_NONE:
		return true;
	case LAB_PAT_FNV1A:
		return lab_trace_fnv1a(LAB_FNV1A_INIT, buf, n) == p->value;
	case LAB_PAT_HEX:
		return n == p->nbytes && (n == 0 || memcmp(buf, p->bytes, n) == 0);
	default:
		/* Generated patterns have no length of their own: compare in chunks. */
		for (size_t off = 0; off < n; off += sizeof(want)) {
			size_t k = n - off < sizeof(want) ? n - off : sizeof(want);

			lab_trace_pat_fill(p, off, want, k);
			if (memcmp(want, buf + off, k) != 0)
				return false;
		}
		return true;
	}
}

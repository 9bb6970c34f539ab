/* SPDX-License-Identifier: MIT */
/* Deterministic pseudo-random numbers for the lab (splitmix64): same seed, same run. */
#ifndef LAB_RNG_H
#define LAB_RNG_H

#include <stdint.h>
#include <string.h>

struct lab_rng {
	uint64_t s;
};

/* splitmix64's step: the generator adds this to its state before each output. */
#define LAB_RNG_GAMMA 0x9e3779b97f4a7c15ull

/* splitmix64's output function on a state that already took its step. The trace format's
 * payload patterns are defined with it (sim/trace/trace_pattern.c): changing it changes
 * every recorded trace. */
static inline uint64_t lab_rng_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The generator on a bare state word, for callers that keep their state as a uint64_t. */
static inline uint64_t lab_rng_step(uint64_t *state)
{
	return lab_rng_mix(*state += LAB_RNG_GAMMA);
}

static inline uint64_t lab_rng_next(struct lab_rng *r)
{
	return lab_rng_step(&r->s);
}

static inline struct lab_rng lab_rng_make(uint64_t seed, uint64_t stream)
{
	struct lab_rng r = {seed ^ (stream * 0xd1b54a32d192ed03ull)};

	lab_rng_next(&r);
	return r;
}

/* Uniform in [0, n) (n > 0); the modulo bias is irrelevant for test shapes. */
static inline uint32_t lab_rng_below(struct lab_rng *r, uint32_t n)
{
	return (uint32_t)(lab_rng_next(r) % n);
}

/* True with probability num/den. */
static inline int lab_rng_chance(struct lab_rng *r, uint32_t num, uint32_t den)
{
	return lab_rng_below(r, den) < num;
}

/* Fill len bytes with the generator's next outputs, 8 bytes each (the last one cut short),
 * in the host's byte order. */
static inline void lab_rng_fill(struct lab_rng *r, uint8_t *dst, uint32_t len)
{
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = lab_rng_next(r);

		memcpy(dst + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = lab_rng_next(r);

		memcpy(dst + i, &v, len - i);
	}
}

/* Fill len bytes with the stream of (seed, key): a packet's contents are a function of its
 * key, so the checker regenerates them instead of storing them. */
static inline void lab_fill_pattern(uint8_t *dst, uint32_t len, uint64_t seed, uint64_t key)
{
	struct lab_rng r = lab_rng_make(seed, key);

	lab_rng_fill(&r, dst, len);
}

#endif

/* SPDX-License-Identifier: MIT */
/* Structure-aware mutation of header + element sequences (struct_mutator.h). */
#include "struct_mutator.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SM_MAX_ELEMS 512u
#define SM_BODY_SLACK 64u /* an element's body may grow by this much in one mutation */

static bool mutator_off(void)
{
	static int off = -1;

	if (off < 0)
		off = getenv("FZ_NO_MUTATOR") != NULL;
	return off != 0;
}

/* xorshift32: libFuzzer hands each call a seed; everything after derives from it, so a
 * mutation is reproducible from the seed. */
static uint32_t next(uint32_t *s)
{
	uint32_t x = *s ? *s : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

/* Replace bytes [at, at + old_len) of data (size bytes) with new_len bytes of src. Returns
 * the new size, or 0 when it would exceed max_size (nothing changed then). */
static size_t splice(uint8_t *data, size_t size, size_t max_size, size_t at, size_t old_len,
		     const uint8_t *src, size_t new_len)
{
	if (size - old_len + new_len > max_size)
		return 0;
	memmove(data + at + new_len, data + at + old_len, size - at - old_len);
	memcpy(data + at, src, new_len);
	return size - old_len + new_len;
}

size_t fz_seq_mutate(const struct fz_seq_shape *sh, uint8_t *data, size_t size,
		     size_t max_size, unsigned int seed)
{
	static size_t st[SM_MAX_ELEMS + 1];
	static uint8_t tmp[1u << 16];
	uint32_t r = seed;

	if (mutator_off() || size <= sh->hdr_len)
		return LLVMFuzzerMutate(data, size, max_size);
	const size_t n = sh->starts(data, size, st, SM_MAX_ELEMS);

	st[n] = size; /* element i is [st[i], st[i + 1]) */
	const uint32_t pick = next(&r) % 16u;

	if (n == 0 || pick >= 13u) /* 3 in 16, and whenever there is no element: plain */
		return LLVMFuzzerMutate(data, size, max_size);
	const size_t i = next(&r) % n, j = next(&r) % n;
	const size_t ilen = st[i + 1] - st[i], jlen = st[j + 1] - st[j];
	size_t out = 0;

	switch (pick) {
	case 0: /* the header */
	case 1: {
		if (sh->hdr_len == 0)
			break;
		memcpy(tmp, data, sh->hdr_len);
		size_t h = LLVMFuzzerMutate(tmp, sh->hdr_len, sh->hdr_len);

		memset(tmp + h, 0, sh->hdr_len - h); /* keep the header's length */
		memcpy(data, tmp, sh->hdr_len);
		return size;
	}
	case 2: /* an element's arguments, its opcode kept */
	case 3:
	case 4:
	case 5: {
		size_t body = ilen - 1;

		if (body == 0 || body + SM_BODY_SLACK > sizeof(tmp))
			break;
		memcpy(tmp, data + st[i] + 1, body);
		size_t nb = LLVMFuzzerMutate(tmp, body, body + SM_BODY_SLACK);

		out = splice(data, size, max_size, st[i] + 1, body, tmp, nb);
		break;
	}
	case 6: /* another opcode, the same argument bytes */
		if (sh->opcodes)
			data[st[i]] = (uint8_t)(data[st[i]] + 1u + next(&r) % (sh->opcodes - 1u));
		return size;
	case 7: /* insert a copy of element j before element i */
	case 8:
		if (jlen <= sizeof(tmp)) {
			memcpy(tmp, data + st[j], jlen);
			out = splice(data, size, max_size, st[i], 0, tmp, jlen);
		}
		break;
	case 9: /* delete element i */
	case 10:
		memmove(data + st[i], data + st[i + 1], size - st[i + 1]);
		return size - ilen;
	case 11: { /* swap elements i < j */
		size_t a = i < j ? i : j, b = i < j ? j : i;
		size_t alen = st[a + 1] - st[a], blen = st[b + 1] - st[b];
		size_t mid = st[b] - st[a + 1];

		if (a == b || alen + mid + blen > sizeof(tmp))
			break;
		memcpy(tmp, data + st[b], blen);
		memcpy(tmp + blen, data + st[a + 1], mid);
		memcpy(tmp + blen + mid, data + st[a], alen);
		memcpy(data + st[a], tmp, alen + mid + blen);
		return size;
	}
	default: { /* repeat a run of up to 4 elements from i (a post and its burst, again) */
		size_t e = i + 1 + next(&r) % 4u;

		if (e > n)
			e = n;
		size_t len = st[e] - st[i];

		if (len <= sizeof(tmp)) {
			memcpy(tmp, data + st[i], len);
			out = splice(data, size, max_size, st[e], 0, tmp, len);
		}
		break;
	}
	}
	return out ? out : LLVMFuzzerMutate(data, size, max_size);
}

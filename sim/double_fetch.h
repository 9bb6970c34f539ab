/* SPDX-License-Identifier: MIT */
/* The double-fetch detector: the lab's side of the core's guest-load hooks
 * (core/lab/vl_lab_hooks.h). It defines the hook functions; they only see traffic when the
 * core linked into the program is the lab build (VL_LAB_BUILD, CMake target
 * vhostlab_lab_core: every lab program). With the production core (vhostlab-fast) nothing
 * calls them and every counter stays 0 (lab_df_stats().loads tells).
 *
 * Units. The core brackets its work: a burst's window reads (split avail->idx, the packed
 * availability scan) form one unit per burst; each chain (its descriptors, indirect table,
 * TX header) and each notification decision forms one unit. A load inside a chain unit is
 * checked against the bytes that chain read and the bytes its burst's window reads read; a
 * window load against the burst's window reads. A load outside every unit is counted as
 * unscoped (a missing bracket in the core) and not checked.
 *
 * Modes:
 *  - LAB_DF_OFF: the hooks return at once.
 *  - LAB_DF_DETECT: a load whose bytes overlap bytes already read in its unit is a violation
 *    (counted, the last one described by lab_df_last_violation).
 *  - LAB_DF_ADVERSARIAL: DETECT, and after every scoped load the bytes just read are
 *    overwritten in guest memory with different ones (each byte XORed with a non-zero random
 *    byte), as a guest racing the device would: a second read would see another value. When
 *    the unit ends the original bytes are put back wherever they still hold the value written
 *    (never over a write the core made since), so the guest's own view of its rings stays
 *    what it posted and every oracle keeps working: the flip lives exactly in the window
 *    where a second read would be a double fetch.
 *  - LAB_DF_ADVERSARIAL_PERSIST: the flips stay (every load, scoped or not): a guest
 *    scribbling over its rings. The core must stay memory-safe and return only ids in range;
 *    the driver's bookkeeping no longer matches the ring.
 *
 * Whole programs: VL_LAB_DOUBLE_FETCH=detect|adversarial|adversarial-persist in the environment
 * sets the mode at start-up and prints a summary at exit (status 1 on a violation or an
 * unbalanced unit), e.g. `VL_LAB_DOUBLE_FETCH=detect ctest` in any build;
 * VL_LAB_DOUBLE_FETCH_LOG=1 also prints every violation as it happens.
 *
 * Single-threaded: the state is global; the hooks must run on one thread at a time. */
#ifndef LAB_DOUBLE_FETCH_H
#define LAB_DOUBLE_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lab_df_mode {
	LAB_DF_OFF = 0,
	LAB_DF_DETECT,
	LAB_DF_ADVERSARIAL,
	LAB_DF_ADVERSARIAL_PERSIST,
};

struct lab_df_stats {
	uint64_t loads;       /* hook calls seen (any mode but OFF) */
	uint64_t bytes;       /* bytes they covered */
	uint64_t chains;      /* chain units begun */
	uint64_t bursts;      /* burst units begun */
	uint64_t unscoped;    /* loads outside every unit */
	uint64_t unbalanced;  /* begin inside an open unit of its kind, end of none, a burst
			       * ending with a chain open */
	uint64_t violations;  /* loads overlapping bytes already read in their unit */
	uint64_t mutations;   /* loads whose bytes were overwritten (adversarial modes) */
	uint64_t restored;    /* of those, put back when their unit ended */
	uint64_t kept;        /* not put back: the core had written there since */
};

/* Set the mode. Leaving an adversarial mode puts back pending flips first; OFF also frees
 * the detector's tables. Counters are kept (lab_df_reset clears them). */
void lab_df_set_mode(enum lab_df_mode mode);
enum lab_df_mode lab_df_get_mode(void);
/* Seed of the random bytes the adversarial modes write (default 1). */
void lab_df_set_seed(uint64_t seed);
/* Put back pending flips, close open units, clear every counter and the last violation.
 * The mode stays. */
void lab_df_reset(void);
uint64_t lab_df_violations(void);
/* Copies a description of the last violation into buf (always NUL-terminated when n > 0;
 * "" when there was none). Returns true when there was one. */
bool lab_df_last_violation(char *buf, size_t n);
void lab_df_get_stats(struct lab_df_stats *st);
const char *lab_df_mode_name(enum lab_df_mode mode);

/* An observer of every guest load the core reports, in every mode, called after the
 * detector saw it (trace replay's `mutate` uses it to race the core at an exact read). It may
 * change the guest bytes at addr. NULL removes it. */
typedef void (*lab_df_observer)(void *ctx, const void *addr, size_t len);
void lab_df_set_observer(lab_df_observer fn, void *ctx);

#endif

/* SPDX-License-Identifier: MIT */
/* What the files of gen_corpus share: the output (save), the datapath seed builder and the
 * generator of each target. gen_corpus.c: output, scenario, differential and trace-parser
 * seeds, main; gen_dp_seeds.c: the datapath seed builder and the well-formed seeds;
 * gen_dp_hostile.c: one datapath seed per hostile class; gen_vu_seeds.c: fuzz_vhost_user;
 * gen_offload_seeds.c: fuzz_offload; gen_fe_seeds.c: fuzz_fe_replies. */
#ifndef VL_GEN_CORPUS_H
#define VL_GEN_CORPUS_H

#include <stdbool.h>
#include <stdint.h>

#include "dp_format.h"
#include "sc_df_format.h"

/* Write a seed to OUTDIR/target/name and free the writer (failures are counted). */
void save(const char *target, const char *name, struct fz_out *o);

/* A datapath seed under construction: which target it is for decides the encodings that
 * differ (split or packed descriptors, dequeue or enqueue bursts). */
struct seed {
	struct fz_out o;
	bool packed, rx;
	uint32_t hdr_len;
	uint16_t dir;   /* VL_DESC_F_WRITE on RX */
};

/* The base of the hostile seeds. RX ones negotiate mergeable buffers, so a packet walks on
 * past a chain that is too small for it and reaches the hostile chains behind it (the good-*
 * seeds cover RX without mergeable buffers). */

/* Packed: flags of an available descriptor for wrap counter 1 (the seeds' start). */
#define PAV VL_PDESC_F_AVAIL

struct fz_dp_setup base_setup(bool packed, bool rx);
void seed_begin(struct seed *sd, bool packed, bool rx, const struct fz_dp_setup *s);
void save_dp(const char *target, const char *name, struct seed *sd);
void burst(struct seed *sd);
void desc_ram(struct seed *sd, uint16_t idx, uint16_t off, uint32_t len, uint16_t flags,
	      uint16_t next_or_id);
void avail(struct seed *sd, uint16_t head);
void make_avail(struct seed *sd, uint16_t descs, const uint16_t *heads, size_t n);
#define MAKE_AVAIL(sd, descs, ...)                                                           \
	make_avail(sd, descs, (const uint16_t[]){ __VA_ARGS__ },                             \
		   sizeof((const uint16_t[]){ __VA_ARGS__ }) / sizeof(uint16_t))
void good_post(struct seed *sd, uint8_t shape, uint16_t len, uint16_t off);
void good_then_burst(struct seed *sd, uint16_t off);

/* The generators. */
void gen_datapath(const char *target, bool packed, bool rx);
void gen_dp_hostile(const char *target, bool packed, bool rx);
void gen_vhost_user(void);
void gen_offload(void); /* gen_offload_seeds.c */
void gen_fe_replies(void); /* gen_fe_seeds.c */

#endif

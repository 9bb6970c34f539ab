/* SPDX-License-Identifier: MIT */
/* Recording a probe case's session as a trace (`vhostlab probe --record DIR`) that
 * `vhostlab replay --socket` plays back against any back end (docs/cli.md, "probe").
 *
 * What is recorded: the setup once the rings are up (the negotiated features, the guest
 * RAM's regions, both queues' rings and start index), then the guest's actions as the
 * memory they changed -- at every post (before the avail index is published) and every
 * kick the RAM is compared with a copy of it, and what the driver changed becomes `write` /
 * `fill` statements, new avail entries `avail` statements and a publication `kick` -- and
 * the waits for used elements as expectations: a wait that got one `expect used Q id=I`, a
 * wait that failed (the case's wedge, crash or bad id) `expect used Q` (one must come), a
 * "nothing may come" look `expect used Q none`; a check of received bytes (the header's
 * fields, the frame) `expect mem` with the bytes the case wanted. Memory the device owns is never taken for
 * the guest's writes: the used rings, and the buffers of chains in flight (taken into the
 * copy as they are).
 *
 * Packed rings: the descriptor ring is written by both sides, so the driver's descriptors
 * are not taken from it but from the driver's own writes (lab_fe_rec_packed_chain, redone
 * on a scratch ring), as `pdesc` statements with a chain's head last, then a `kick`; the
 * queue starts at the driver's position and wrap counter. Descriptors written raw (hostile
 * cases) make the case unrecordable (lab_fe_rec_unrecordable). A case whose failure
 * is not on the rings -- a message exchange, a message sent after the rings are up, a
 * check the recorder has no expectation for (calls, bytes other than a received frame's)
 * -- gets no trace and a note saying why.
 *
 * Messages after the rings are up that a trace can say (GET_VRING_BASE, SET_VRING_ENABLE,
 * a vring set up again: lab_fe_rec_message) become `message` statements; a wait for the
 * reply that failed, or a GET_VRING_BASE answer the case refused, is the case's failure at
 * that statement. Any other message after the rings are up leaves the case without a
 * trace, naming it. */
#ifndef LAB_FE_RECORD_H
#define LAB_FE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fe_msg.h"
#include "trace.h"

struct lab_fe_session;
struct lab_fe_rec;

struct lab_fe_rec *lab_fe_rec_create(void);
void lab_fe_rec_destroy(struct lab_fe_rec *rec);

/* Hooks the session and traffic layers call when s->rec is set. */
void lab_fe_rec_up(struct lab_fe_session *s);                  /* both rings are up */
void lab_fe_rec_flush(struct lab_fe_session *s);               /* guest writes so far */
void lab_fe_rec_kick(struct lab_fe_session *s, uint32_t qidx);
/* A wait for a used element on qidx: must_come (lab_fe_wait_used) or a "nothing may
 * come" look (lab_fe_used_within); got 1 with id, 0 none, < 0 the wait failed. */
void lab_fe_rec_used(struct lab_fe_session *s, uint32_t qidx, bool must_come, int got,
		     uint32_t id);
/* A check of n bytes at offset off of chain id's first buffer on qidx against want, and
 * whether it held: `expect mem` (a failed one is the case's failure when it is the last). */
void lab_fe_rec_expect_bytes(struct lab_fe_session *s, uint32_t qidx, uint32_t id,
			     uint32_t off, const uint8_t *want, uint32_t n, bool held);
/* Packed: the driver just posted chain id of n elements from position pos with wrap
 * counter wrap (before lab_fe_rec_flush). */
struct lab_pdesc;
void lab_fe_rec_packed_chain(struct lab_fe_session *s, uint32_t qidx, uint16_t pos, bool wrap,
			     uint16_t id, const struct lab_pdesc *elems, uint32_t n);
/* The case wrote something the recorder cannot follow (raw packed descriptors): no trace,
 * and why. */
void lab_fe_rec_unrecordable(struct lab_fe_session *s, const char *why);
/* Chain id of qidx came back: its buffers hold what the device wrote. */
void lab_fe_rec_absorb(struct lab_fe_session *s, uint32_t qidx, uint32_t id);

/* A message about vring qidx was exchanged after the rings were up (sent: how many
 * messages it took, rc: how the exchange ended): a `message KIND` statement carrying count
 * (vring-enable: 0|1; vring-setup: the base). */
void lab_fe_rec_message(struct lab_fe_session *s, enum lab_trace_msg kind, uint32_t qidx,
			uint32_t count, uint32_t sent, enum lab_fe_rc rc);
/* The case's check of the last GET_VRING_BASE reply: it had to be want, and was or not. */
void lab_fe_rec_expect_base(struct lab_fe_session *s, uint32_t want, bool held);

/* The case checked the GET_FEATURES answer it just got against virtio 5.1.3.1's
 * dependencies (fe_feature_deps.h), and it held or not: `message get-features expect=deps`.
 * Before the rings are up (the feature-deps case sets none up) the trace is this message
 * alone, on a setup of one page of RAM and no queue. */
void lab_fe_rec_feature_deps(struct lab_fe_session *s, bool held);

/* The case turned a dirty log of `pages` 4 KiB pages on (SET_LOG_BASE, SET_FEATURES with
 * LOG_ALL, SET_VRING_ADDR with the log flag: `sent` messages, ending with rc):
 * `message log-start pages=N`. */
void lab_fe_rec_log_start(struct lab_fe_session *s, uint64_t pages, uint32_t sent,
			  enum lab_fe_rc rc);
/* The case checked that every page of [gpa, gpa+len) is marked in the log, and it held or
 * not: `expect logged GPA LEN`. */
void lab_fe_rec_expect_logged(struct lab_fe_session *s, uint64_t gpa, uint64_t len,
			      bool held);

/* The case ended with `failed` (fail, wedge or crash) or not: write the trace to path and
 * return true, or return false with why not in note ("" when the case did not fail). */
bool lab_fe_rec_finish(struct lab_fe_session *s, bool failed,
		       const char *path, char *note, size_t notelen);

#endif

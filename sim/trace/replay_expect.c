/* SPDX-License-Identifier: MIT */
/* Replay, expectations: each `expect` statement checked against the state after the
 * statements above it (docs/trace-format.md, "Expectations"). A failed one names what was
 * expected and what was observed, with the first differing byte for data. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"
#include "replay_msg.h"
#include "trace_stats.h"

/* Compare n observed bytes with a pattern; on a mismatch describe the first difference. */
static bool check_bytes(struct rp *r, const struct lab_trace_pat *p, const uint8_t *got,
			size_t n, const char *what, const char *expected)
{
	uint8_t want[256];

	if (lab_trace_pat_match(p, got, n))
		return true;
	if (p->kind == LAB_PAT_FNV1A)
		return rp_diverge(r, "expect:data", expected, "%s: %zu bytes with fnv1a %016llx",
				  what, n, (unsigned long long)lab_trace_fnv1a(LAB_FNV1A_INIT, got,
									       n));
	for (size_t off = 0; off < n; off += sizeof(want)) {
		size_t k = n - off < sizeof(want) ? n - off : sizeof(want);

		lab_trace_pat_fill(p, off, want, k);
		for (size_t i = 0; i < k; i++)
			if (want[i] != got[off + i])
				return rp_diverge(r, "expect:data", expected,
						  "%s: byte %zu is 0x%02x, expected 0x%02x", what,
						  off + i, got[off + i], want[i]);
	}
	return rp_diverge(r, "expect:data", expected, "%s differ", what);
}

static bool expect_packet(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q,
			  const char *expected)
{
	const struct lab_trace_ol *w = &op->ol;
	const struct vl_pkt *p;
	char what[64];

	if (op->index >= q->npkts)
		return rp_diverge(r, "expect packet:missing", expected,
				  "queue %s has dequeued %u packets", q->tq->name, q->npkts);
	if (!(p = q->pkts[op->index].p))
		return rp_error(r, "error:freed", "packet %llu of queue %s was freed after line %u "
				"(`dequeue ... hold` keeps it)", (unsigned long long)op->index,
				q->tq->name, q->pkts[op->index].freed_line);
	if (p->pkt_len != op->len)
		return rp_diverge(r, "expect packet:len", expected, "the packet has %u bytes",
				  p->pkt_len);
#define OL_CHECK(bit, field)                                                                  \
	if ((w->given & (bit)) && p->ol.field != w->field)                                     \
		return rp_diverge(r, "expect packet:" #field, expected, "%s is %u", #field,     \
				  (unsigned)p->ol.field);
	OL_CHECK(LAB_OL_FLAGS, flags)
	OL_CHECK(LAB_OL_GSO_TYPE, gso_type)
	OL_CHECK(LAB_OL_HDR_LEN, hdr_len)
	OL_CHECK(LAB_OL_GSO_SIZE, gso_size)
	OL_CHECK(LAB_OL_CSUM_START, csum_start)
	OL_CHECK(LAB_OL_CSUM_OFFSET, csum_offset)
#undef OL_CHECK
	if (op->pat.kind == LAB_PAT_NONE)
		return true;
	uint8_t *buf = malloc(p->pkt_len ? p->pkt_len : 1);

	if (!buf)
		return rp_error(r, "error:memory", "out of memory");
	vl_pkt_read(p, 0, buf, p->pkt_len);
	snprintf(what, sizeof(what), "packet %llu", (unsigned long long)op->index);
	bool ok = check_bytes(r, &op->pat, buf, p->pkt_len, what, expected);

	if (!ok)
		memcpy(r->res->signature, "expect packet:data", sizeof("expect packet:data"));
	free(buf);
	return ok;
}

/* The next used element: over a socket (r->pop) the wait for it, in process at once. */
static int pop(struct rp *r, struct rp_queue *q, uint32_t *id, uint32_t *len)
{
	return r->pop ? r->pop(r, q, id, len) : rp_pop_used(r, q, id, len);
}

static bool expect_used(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q,
			const char *expected)
{
	uint32_t id = 0, len = 0;
	int rc = pop(r, q, &id, &len);

	if (rc < 0)
		return false;
	if (op->given & LAB_TA_NONE)
		return rc == 0 || rp_diverge(r, "expect used:extra", expected,
					     "a used element: id %u len %u", id, len);
	if (rc == 0)
		return rp_diverge(r, "expect used:missing", expected, "no used element%s",
				  r->pop ? " within the timeout" : "");
	if ((op->given & LAB_TA_ID) ? id != op->id : !rp_id_was_outstanding(q, id))
		return rp_diverge(r, "expect used:id", expected, "id %u len %u%s", id, len,
				  (op->given & LAB_TA_ID) ? "" : " (not an id the guest has "
				  "outstanding)");
	if ((op->given & LAB_TA_LEN) && len != op->len)
		return rp_diverge(r, "expect used:len", expected, "id %u len %u", id, len);
	return true;
}

/* used-set: the next nitems used elements match the items as a multiset. An element takes
 * an unmatched item with its id and exactly its length first, else one with its id and no
 * len=: items without len= accept any length, so keeping them for last never loses a
 * matching that exists. */
static bool expect_used_set(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q,
			    const char *expected)
{
	bool *taken = calloc(op->nitems ? op->nitems : 1, sizeof(bool));
	char seen[400];
	size_t at = 0;
	bool ok = true;

	if (!taken)
		return rp_error(r, "error:memory", "out of memory");
	seen[0] = '\0';
	for (uint32_t k = 0; ok && k < op->nitems; k++) {
		uint32_t id, len, pick = op->nitems;
		int rc = pop(r, q, &id, &len);

		if (rc < 0) {
			ok = false;
			break;
		}
		if (rc == 0) {
			ok = rp_diverge(r, "expect used-set:missing", expected, "%u of %u used "
					"elements%s%s", k, op->nitems, k ? ": " : "", seen);
			break;
		}
		if (at < sizeof(seen))
			at += (size_t)snprintf(seen + at, sizeof(seen) - at, "%sid %u len %u",
					       k ? ", " : "", id, len);
		for (uint32_t i = 0; i < op->nitems && pick == op->nitems; i++)
			if (!taken[i] && op->used[i].id == id && op->used[i].has_len &&
			    op->used[i].len == len)
				pick = i;
		for (uint32_t i = 0; i < op->nitems && pick == op->nitems; i++)
			if (!taken[i] && op->used[i].id == id && !op->used[i].has_len)
				pick = i;
		if (pick == op->nitems)
			ok = rp_diverge(r, "expect used-set:unexpected", expected, "element %u of "
					"the set is not in it: %s", k + 1, seen);
		else
			taken[pick] = true;
	}
	free(taken);
	return ok;
}

static bool expect_count(struct rp *r, const struct lab_trace_op *op, struct rp_queue *q,
			 bool ran, const char *expected)
{
	if (!ran)
		return rp_error(r, "error:no-burst", "no such burst on queue %s yet", q->tq->name);
	return q->last_count == op->count ||
	       rp_diverge(r, op->kind == LAB_T_EXPECT_DEQUEUED ? "expect dequeued"
							       : "expect enqueued",
			  expected, "%u", q->last_count);
}

bool rp_expect_op(struct rp *r, const struct lab_trace_op *op)
{
	struct rp_queue *q = &r->q[op->queue];
	char expected[256];
	uint64_t v;

	lab_trace_format_op(r->t, op, expected, sizeof(expected));
	/* What reads the core's queue needs one: with `message` statements the core's
	 * vhost-user device has none while the ring is stopped or disabled. */
	if ((op->kind == LAB_T_EXPECT_STAT || op->kind == LAB_T_EXPECT_BROKEN ||
	     op->kind == LAB_T_EXPECT_CALL || op->kind == LAB_T_EXPECT_HELD) && !q->vq)
		return rp_error(r, "error:not-ready", "queue %s is not ready in the core (a "
				"message stopped or disabled its ring): there is no queue to read",
				q->tq->name);
	switch (op->kind) {
	case LAB_T_EXPECT_LOGGED:
		return rp_expect_logged(r, op);
	case LAB_T_EXPECT_DEQUEUED:
		return expect_count(r, op, q, q->dequeued, expected);
	case LAB_T_EXPECT_ENQUEUED:
		return expect_count(r, op, q, q->enqueued, expected);
	case LAB_T_EXPECT_PACKET:
		return expect_packet(r, op, q, expected);
	case LAB_T_EXPECT_STATUS:
		if (!q->enqueued || op->index >= q->nstatus)
			return rp_diverge(r, "expect status:missing", expected,
					  "the last enqueue handled %u packets", q->nstatus);
		return q->status[op->index] == op->value ||
		       rp_diverge(r, "expect status", expected, "%s",
				  lab_trace_status_name((enum lab_trace_status)
								q->status[op->index]));
	case LAB_T_EXPECT_USED:
		return expect_used(r, op, q, expected);
	case LAB_T_EXPECT_USED_SET:
		return expect_used_set(r, op, q, expected);
	case LAB_T_EXPECT_MEM: {
		const uint8_t *g = rp_guest(r, op->addr, op->len, "the expected bytes");

		if (!g)
			return false;
		if (!check_bytes(r, &op->pat, g, op->len, "guest memory", expected)) {
			memcpy(r->res->signature, "expect mem:data", sizeof("expect mem:data"));
			return false;
		}
		return true;
	}
	case LAB_T_EXPECT_STAT:
		if (!lab_trace_stat_value(vl_vq_stats(q->vq), op->name, &v))
			return rp_error(r, "error:stat", "no counter named '%s' (see vl_vq_stats)",
					op->name);
		return v == op->count || rp_diverge(r, "expect stat", expected, "%s is %llu",
						    op->name, (unsigned long long)v);
	case LAB_T_EXPECT_BROKEN: {
		bool broken = vl_vq_broken(q->vq);
		const char *why = broken ? vl_drop_name(vl_vq_broken_reason(q->vq)) : "no";

		if (op->given & LAB_TA_NONE)
			return !broken || rp_diverge(r, "expect broken", expected, "broken: %s", why);
		if (op->given & LAB_TA_ANY)
			return broken || rp_diverge(r, "expect broken", expected, "not broken");
		return (broken && !strcmp(why, op->name)) ||
		       rp_diverge(r, "expect broken", expected, "broken: %s", why);
	}
	case LAB_T_EXPECT_CALL:
		return vl_vq_needs_call(q->vq) == (op->value != 0) ||
		       rp_diverge(r, "expect call", expected, "call %s",
				  vl_vq_needs_call(q->vq) ? "yes" : "no");
	case LAB_T_EXPECT_HELD:
		v = vl_vq_zero_copy_held(q->vq);
		return v == op->count || rp_diverge(r, "expect held", expected, "%llu held",
						    (unsigned long long)v);
	case LAB_T_EXPECT_DIRTY: {
		uint64_t page = op->addr / 4096;
		bool dirty;

		if (!r->log || page / 8 >= r->log_bytes)
			return rp_error(r, "error:dirty", "page 0x%llx is outside the dirty log",
					(unsigned long long)page);
		dirty = (r->log[page / 8] >> (page % 8)) & 1u;
		return dirty == (op->value != 0) ||
		       rp_diverge(r, "expect dirty", expected, "page 0x%llx is %s",
				  (unsigned long long)page, dirty ? "dirty" : "clean");
	}
	default:
		return rp_error(r, "error:internal", "not an expectation");
	}
}

/* SPDX-License-Identifier: MIT */
/* Recording a probe case's session as a trace (fe_record.h). */
#include "fe_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_session.h"
#include "trace.h"

/* What ends the recording early (no trace): said in the note. */
#define REC_WHY 200

struct lab_fe_rec {
	struct lab_trace t;
	bool up;
	char na[REC_WHY];          /* the session cannot be a trace (packed, ...) */
	uint32_t sent_at_up;       /* messages sent when the rings came up */
	uint32_t nregions;
	struct vl_mem_region regions[LAB_FE_MAX_REGIONS];
	uint8_t *copy[LAB_FE_MAX_REGIONS];   /* the RAM as the trace has it so far */
	uint16_t avail_idx[LAB_FE_QUEUES];   /* split: published indices the trace has */
	/* Packed: the descriptors the driver wrote since the last flush, as `pdesc`
	 * statements in the order the replay must write them (a chain's head last). They are
	 * taken from the driver's own write (lab_fe_rec_packed_chain), never from the ring,
	 * which the device writes too. */
	struct lab_trace_op pend[LAB_FE_QUEUES][LAB_FE_MAX_QUEUE_SIZE];
	uint32_t npend[LAB_FE_QUEUES];
	struct vl_packed_desc scratch[LAB_FE_MAX_QUEUE_SIZE]; /* where the writes are redone */
	int32_t last_failed;       /* op index of the last expectation the case saw fail */
	int32_t last_within;       /* op index of a "nothing may come" look that got one */
	int32_t last_base;         /* op index of the last `message get-vring-base` */
	uint32_t msgs;             /* messages after the rings were up that the trace says */
};

struct lab_fe_rec *lab_fe_rec_create(void)
{
	struct lab_fe_rec *rec = calloc(1, sizeof(*rec));

	if (rec)
		lab_trace_init(&rec->t);
	return rec;
}

void lab_fe_rec_destroy(struct lab_fe_rec *rec)
{
	if (!rec)
		return;
	for (uint32_t i = 0; i < rec->nregions; i++)
		free(rec->copy[i]);
	lab_trace_free(&rec->t);
	free(rec);
}

static void no_trace(struct lab_fe_rec *rec, const char *why)
{
	if (!rec->na[0])
		snprintf(rec->na, sizeof(rec->na), "%s", why);
}

static void add(struct lab_fe_rec *rec, const struct lab_trace_op *op)
{
	/* A trace begun without rings (lab_fe_rec_feature_deps) has no queue to name. */
	if (rec->t.nqueues == 0 &&
	    !(op->kind == LAB_T_MESSAGE && op->value == LAB_TRACE_MSG_GET_FEATURES))
		no_trace(rec, "the case set rings up after a message the trace holds without them");
	if (!rec->na[0] && !lab_trace_append(&rec->t, op))
		no_trace(rec, "out of memory recording the trace");
}

void lab_fe_rec_up(struct lab_fe_session *s)
{
	struct lab_fe_rec *rec = s->rec;
	uint32_t n;
	const struct vl_mem_region *r = lab_gmem_regions(s->g, &n);

	if (n > LAB_FE_MAX_REGIONS || n > LAB_TRACE_MAX_REGIONS)
		no_trace(rec, "more guest RAM regions than a trace holds");
	if (rec->na[0])
		return;
	rec->up = true;
	rec->sent_at_up = s->c.sent;
	rec->last_within = -1;
	rec->last_failed = -1;
	rec->last_base = -1;
	rec->t.features = s->acked & ~VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES);
	rec->nregions = n;
	rec->t.nregions = n;
	for (uint32_t i = 0; i < n; i++) {
		rec->regions[i] = r[i];
		rec->t.regions[i] = (struct lab_trace_region){.gpa = r[i].gpa, .size = r[i].size};
		rec->copy[i] = malloc(r[i].size);
		if (!rec->copy[i]) {
			no_trace(rec, "out of memory for the copy of guest RAM");
			return;
		}
		memcpy(rec->copy[i], lab_gmem_guest_ptr(s->g, r[i].gpa, r[i].size), r[i].size);
	}
	static const char *const names[LAB_FE_QUEUES] = {"rx", "tx"};

	rec->t.nqueues = LAB_FE_QUEUES;
	for (uint32_t qi = 0; qi < LAB_FE_QUEUES; qi++) {
		const struct lab_vring *v = &s->q[qi].ring.s;
		const struct lab_pring *p = &s->q[qi].ring.p;
		struct lab_trace_queue *tq = &rec->t.queues[qi];

		snprintf(tq->name, sizeof(tq->name), "%s", names[qi]);
		tq->dir = qi == LAB_FE_RX ? LAB_TRACE_RX : LAB_TRACE_TX;
		if (s->layout == VL_LAYOUT_PACKED) {
			/* Nothing is posted yet: the driver's position and wrap counter are where
			 * both sides start (SET_VRING_BASE in the replay over a socket). */
			tq->size = p->size;
			tq->desc = p->desc_gpa;
			tq->driver = p->driver_gpa;
			tq->device = p->device_gpa;
			tq->start = p->next_avail;
			tq->wrap = p->avail_wrap;
			continue;
		}
		tq->size = v->size;
		tq->desc = v->desc_gpa;
		tq->driver = v->avail_gpa;
		tq->device = v->used_gpa;
		/* The published index is where both the driver and the device start. */
		rec->avail_idx[qi] = __atomic_load_n(&v->avail->idx, __ATOMIC_ACQUIRE);
		tq->start = rec->avail_idx[qi];
	}
}

/* Is [gpa, gpa+len) inside [a, a+n)? Overlap is enough to own a byte. */
static bool overlaps(uint64_t gpa, uint64_t a, uint64_t n)
{
	return gpa >= a && gpa < a + n;
}

/* Bytes the trace must not write as the guest's. Split: the used rings, the avail index
 * (the `kick` publishes it) and the avail entries (`avail` statements write them). Packed:
 * the descriptor ring (both sides write it; the driver's descriptors are `pdesc`
 * statements) and the device event area. The driver event area is the guest's. */
static bool device_or_kick_byte(const struct lab_fe_session *s, uint64_t gpa)
{
	for (uint32_t qi = 0; qi < LAB_FE_QUEUES; qi++) {
		const struct lab_vring *v = &s->q[qi].ring.s;
		const struct lab_pring *p = &s->q[qi].ring.p;

		if (s->layout == VL_LAYOUT_PACKED) {
			if (overlaps(gpa, p->desc_gpa, 16ull * p->size) ||
			    overlaps(gpa, p->device_gpa, sizeof(struct vl_packed_event)))
				return true;
			continue;
		}

		if (overlaps(gpa, v->used_gpa, 6 + 8ull * v->size) ||
		    overlaps(gpa, v->avail_gpa + 2, 2 + 2ull * v->size))
			return true;
	}
	return false;
}

/* Buffers of chains in flight are the device's: take them into the copy as they are. */
static void absorb_range(struct lab_fe_rec *rec, const struct lab_fe_session *s, uint64_t gpa,
			 uint64_t len)
{
	for (uint32_t i = 0; i < rec->nregions && len; i++) {
		const struct vl_mem_region *r = &rec->regions[i];

		if (gpa < r->gpa || gpa - r->gpa >= r->size || len > r->size - (gpa - r->gpa))
			continue;
		memcpy(rec->copy[i] + (gpa - r->gpa), lab_gmem_guest_ptr(s->g, gpa, len), len);
	}
}

void lab_fe_rec_absorb(struct lab_fe_session *s, uint32_t qidx, uint32_t id)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || !rec->up || id >= LAB_FE_MAX_QUEUE_SIZE)
		return;
	for (uint32_t k = 0; k < LAB_FE_CHAIN_ALLOCS; k++)
		if (s->q[qidx].alloc[id][k].gpa)
			absorb_range(rec, s, s->q[qidx].alloc[id][k].gpa, s->q[qidx].alloc[id][k].len);
}

/* One run of changed bytes as `fill` (all one value) or `write`. */
static void emit_run(struct lab_fe_rec *rec, uint64_t gpa, const uint8_t *b, uint32_t n)
{
	struct lab_trace_op op = {.kind = LAB_T_WRITE, .addr = gpa};
	uint32_t same = 1;

	while (same < n && b[same] == b[0])
		same++;
	if (same == n && n > 8) {
		op.kind = LAB_T_FILL;
		op.len = n;
		op.pat = (struct lab_trace_pat){.kind = LAB_PAT_BYTE, .value = b[0]};
		add(rec, &op);
		return;
	}
	op.pat.kind = LAB_PAT_HEX;
	op.pat.nbytes = n;
	op.pat.bytes = malloc(n);
	if (!op.pat.bytes) {
		no_trace(rec, "out of memory recording the trace");
		return;
	}
	memcpy(op.pat.bytes, b, n);
	add(rec, &op);
	if (rec->na[0])
		free(op.pat.bytes);
}

/* The guest's writes since the last flush, region by region, in runs (changes less than
 * 16 bytes apart join one run). */
static void emit_writes(struct lab_fe_rec *rec, const struct lab_fe_session *s)
{
	for (uint32_t i = 0; i < rec->nregions; i++) {
		const struct vl_mem_region *r = &rec->regions[i];
		const uint8_t *now = lab_gmem_guest_ptr(s->g, r->gpa, r->size);
		uint8_t *was = rec->copy[i];
		uint64_t at = 0;

		while (at < r->size) {
			if (now[at] == was[at] || device_or_kick_byte(s, r->gpa + at)) {
				at++;
				continue;
			}
			uint64_t end = at + 1, gap = 0;

			while (end + gap < r->size && gap < 16 && end - at < 4096) {
				uint64_t k = end + gap;

				if (now[k] != was[k] && !device_or_kick_byte(s, r->gpa + k)) {
					end = k + 1;
					gap = 0;
				} else {
					gap++;
				}
			}
			emit_run(rec, r->gpa + at, now + at, (uint32_t)(end - at));
			memcpy(was + at, now + at, end - at);
			at = end;
		}
	}
}

/* Avail entries published since the last flush, as `avail`, then a `kick` that publishes
 * them in the replay (and signals the back end, which a spurious kick never hurts). */
static void emit_avail(struct lab_fe_rec *rec, const struct lab_fe_session *s, uint32_t qi)
{
	const struct lab_vring *v = &s->q[qi].ring.s;
	uint16_t idx = __atomic_load_n(&v->avail->idx, __ATOMIC_ACQUIRE);

	if (idx == rec->avail_idx[qi])
		return;
	for (uint16_t i = rec->avail_idx[qi]; i != idx; i++) {
		uint16_t head = v->avail->ring[i % v->size];

		add(rec, &(struct lab_trace_op){.kind = LAB_T_AVAIL, .queue = qi, .index = head});
	}
	rec->avail_idx[qi] = idx;
	add(rec, &(struct lab_trace_op){.kind = LAB_T_KICK, .queue = qi});
}

/* Packed: the descriptors written since the last flush, then a `kick` that lets the
 * in-process replay group them into chains (and signals the back end). */
static void emit_pdescs(struct lab_fe_rec *rec, uint32_t qi)
{
	if (rec->npend[qi] == 0)
		return;
	for (uint32_t i = 0; i < rec->npend[qi]; i++)
		add(rec, &rec->pend[qi][i]);
	rec->npend[qi] = 0;
	add(rec, &(struct lab_trace_op){.kind = LAB_T_KICK, .queue = qi});
}

void lab_fe_rec_packed_chain(struct lab_fe_session *s, uint32_t qidx, uint16_t pos, bool wrap,
			     uint16_t id, const struct lab_pdesc *elems, uint32_t n)
{
	struct lab_fe_rec *rec = s->rec;
	uint32_t size = s->q[qidx].ring.p.size;

	if (!rec || !rec->up || rec->na[0])
		return;
	if (size > LAB_FE_MAX_QUEUE_SIZE || n == 0 || n > size ||
	    rec->npend[qidx] + n > LAB_FE_MAX_QUEUE_SIZE) {
		no_trace(rec, "more packed descriptors between two flushes than the recorder holds");
		return;
	}
	/* Redo the driver's write on a scratch ring: the same bytes, flags included, without
	 * reading the shared ring, where the device may already have written its used entry. */
	uint16_t at = pos;
	bool w = wrap;

	lab_rw_packed_chain(rec->scratch, size, &at, &w, id, elems, n);
	/* The chain's other descriptors first, its head last, as a driver makes it available:
	 * the replay writes each `pdesc` whole, flags included, so the device must not see the
	 * head before the rest. */
	for (uint32_t k = 0; k < n; k++) {
		uint32_t p = (pos + (k + 1) % n) % size;
		const struct vl_packed_desc *d = &rec->scratch[p];
		uint64_t addr;
		uint32_t len;
		uint16_t did, flags;

		memcpy(&addr, &d->addr, sizeof(addr));
		memcpy(&len, &d->len, sizeof(len));
		memcpy(&did, &d->id, sizeof(did));
		memcpy(&flags, &d->flags, sizeof(flags));
		rec->pend[qidx][rec->npend[qidx]++] = (struct lab_trace_op){
			.kind = LAB_T_PDESC, .queue = qidx, .index = p, .addr = addr, .len = len,
			.id = did, .flags = flags};
	}
}

void lab_fe_rec_unrecordable(struct lab_fe_session *s, const char *why)
{
	if (s->rec)
		no_trace(s->rec, why);
}

void lab_fe_rec_flush(struct lab_fe_session *s)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || !rec->up || rec->na[0] || rec->t.nqueues == 0)
		return;
	for (uint32_t qi = 0; qi < LAB_FE_QUEUES; qi++)
		for (uint32_t id = 0; id < s->q[qi].ring.size && id < LAB_FE_MAX_QUEUE_SIZE; id++)
			lab_fe_rec_absorb(s, qi, id);
	emit_writes(rec, s);
	for (uint32_t qi = 0; qi < LAB_FE_QUEUES; qi++) {
		if (s->layout == VL_LAYOUT_PACKED)
			emit_pdescs(rec, qi);
		else
			emit_avail(rec, s, qi);
	}
}

void lab_fe_rec_kick(struct lab_fe_session *s, uint32_t qidx)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || !rec->up)
		return;
	lab_fe_rec_flush(s);
	/* The flush kicked the queue if it published something; else this kick is its own. */
	uint32_t n = rec->t.nops;

	if (n && rec->t.ops[n - 1].kind == LAB_T_KICK && rec->t.ops[n - 1].queue == qidx)
		return;
	add(rec, &(struct lab_trace_op){.kind = LAB_T_KICK, .queue = qidx});
}

void lab_fe_rec_used(struct lab_fe_session *s, uint32_t qidx, bool must_come, int got,
		     uint32_t id)
{
	struct lab_fe_rec *rec = s->rec;
	struct lab_trace_op op = {.kind = LAB_T_EXPECT_USED, .queue = qidx};

	if (!rec || !rec->up || rec->na[0])
		return;
	lab_fe_rec_flush(s);
	rec->last_within = -1;
	if (got == 1) {
		op.given = LAB_TA_ID;
		op.id = (uint16_t)id;
		if (!must_come)
			rec->last_within = (int32_t)rec->t.nops;
	} else if (got == 0 && !must_come) {
		op.given = LAB_TA_NONE;
	} else {
		/* One must come: any id the guest has outstanding. */
		rec->last_failed = (int32_t)rec->t.nops;
	}
	add(rec, &op);
}

void lab_fe_rec_expect_bytes(struct lab_fe_session *s, uint32_t qidx, uint32_t id,
			     uint32_t off, const uint8_t *want, uint32_t n, bool held)
{
	struct lab_fe_rec *rec = s->rec;
	struct lab_trace_op op = {.kind = LAB_T_EXPECT_MEM};

	if (!rec || !rec->up || rec->na[0] || id >= LAB_FE_MAX_QUEUE_SIZE || n == 0)
		return;
	lab_fe_rec_flush(s);
	rec->last_within = -1;
	op.addr = s->q[qidx].alloc[id][0].gpa + off;
	op.len = n;
	op.pat = (struct lab_trace_pat){.kind = LAB_PAT_HEX, .nbytes = n, .bytes = malloc(n)};
	if (!op.pat.bytes) {
		no_trace(rec, "out of memory recording the trace");
		return;
	}
	memcpy(op.pat.bytes, want, n);
	if (!held)
		rec->last_failed = (int32_t)rec->t.nops;
	add(rec, &op);
	if (rec->na[0])
		free(op.pat.bytes);
}

void lab_fe_rec_message(struct lab_fe_session *s, enum lab_trace_msg kind, uint32_t qidx,
			uint32_t count, uint32_t sent, enum lab_fe_rc rc)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || !rec->up || rec->na[0])
		return;
	/* The guest's writes before the message come before it in the trace. */
	lab_fe_rec_flush(s);
	rec->last_within = -1;
	rec->msgs += sent;
	if (kind == LAB_TRACE_MSG_GET_VRING_BASE)
		rec->last_base = (int32_t)rec->t.nops;
	if (rc != LAB_FE_OK)
		rec->last_failed = (int32_t)rec->t.nops;
	add(rec, &(struct lab_trace_op){.kind = LAB_T_MESSAGE, .queue = qidx, .value = kind,
					.count = count});
}

void lab_fe_rec_expect_base(struct lab_fe_session *s, uint32_t want, bool held)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || !rec->up || rec->na[0] || rec->last_base < 0)
		return;
	struct lab_trace_op *op = &rec->t.ops[rec->last_base];

	op->given |= LAB_TA_EXPECT;
	op->count = want;
	if (!held)
		rec->last_failed = rec->last_base;
}

void lab_fe_rec_feature_deps(struct lab_fe_session *s, bool held)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || rec->na[0])
		return;
	if (!rec->up) {
		/* No rings: the smallest setup a trace has. The GET_FEATURES just sent is the
		 * trace's, so the messages count from before it. */
		rec->up = true;
		rec->sent_at_up = s->c.sent - 1;
		rec->last_within = rec->last_failed = rec->last_base = -1;
		rec->t.features = VL_FEATURE(VL_F_VERSION_1);
		rec->t.nregions = 1;
		rec->t.regions[0] = (struct lab_trace_region){.gpa = 0, .size = 4096};
		rec->t.nqueues = 0;
	} else {
		lab_fe_rec_flush(s);
	}
	rec->last_within = -1;
	rec->msgs++;
	if (!held)
		rec->last_failed = (int32_t)rec->t.nops;
	add(rec, &(struct lab_trace_op){.kind = LAB_T_MESSAGE, .value = LAB_TRACE_MSG_GET_FEATURES,
					.given = LAB_TA_EXPECT});
}

void lab_fe_rec_log_start(struct lab_fe_session *s, uint64_t pages, uint32_t sent,
			  enum lab_fe_rc rc)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || !rec->up || rec->na[0])
		return;
	lab_fe_rec_flush(s);
	rec->last_within = -1;
	rec->msgs += sent;
	if (rc != LAB_FE_OK)
		rec->last_failed = (int32_t)rec->t.nops;
	add(rec, &(struct lab_trace_op){.kind = LAB_T_MESSAGE, .value = LAB_TRACE_MSG_LOG_START,
					.count = pages});
}

void lab_fe_rec_expect_logged(struct lab_fe_session *s, uint64_t gpa, uint64_t len, bool held)
{
	struct lab_fe_rec *rec = s->rec;

	if (!rec || !rec->up || rec->na[0])
		return;
	lab_fe_rec_flush(s);
	rec->last_within = -1;
	if (!held)
		rec->last_failed = (int32_t)rec->t.nops;
	add(rec, &(struct lab_trace_op){.kind = LAB_T_EXPECT_LOGGED, .addr = gpa, .len = len});
}

bool lab_fe_rec_finish(struct lab_fe_session *s, bool failed, const char *path, char *note,
		       size_t notelen)
{
	struct lab_fe_rec *rec = s->rec;
	char err[256];

	note[0] = '\0';
	if (!failed)
		return false;
	if (rec->na[0]) {
		snprintf(note, notelen, "%s", rec->na);
		return false;
	}
	if (!rec->up) {
		snprintf(note, notelen, "the failure is in the vhost-user messages before both rings "
			 "were up: a trace holds what happens on the rings");
		return false;
	}
	if (s->c.sent - rec->sent_at_up != rec->msgs) {
		snprintf(note, notelen, "the case sends vhost-user messages after the rings are up "
			 "that no trace statement says (the last: %s)",
			 lab_fe_request_name(s->c.last_sent));
		return false;
	}
	if (rec->last_within >= 0 && (uint32_t)rec->last_within == rec->t.nops - 1) {
		/* The case failed on the used element its "nothing may come" look got. */
		struct lab_trace_op *op = &rec->t.ops[rec->last_within];

		op->given = LAB_TA_NONE;
	} else if (rec->last_failed < 0 || (uint32_t)rec->last_failed != rec->t.nops - 1) {
		snprintf(note, notelen, "the failed check is one the recorder has no expectation "
			 "for (calls, lengths, bytes other than a received frame's) yet");
		return false;
	}
	if (!lab_trace_save(&rec->t, path, err, sizeof(err))) {
		snprintf(note, notelen, "writing %s: %s", path, err);
		return false;
	}
	return true;
}

/* SPDX-License-Identifier: MIT */
/* Traffic through a probed back end, on the lab's ring drivers (fe_traffic.h). */
#include "fe_traffic.h"
#include "fe_record.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Guest RAM for n bytes, written from src (or poisoned when src is NULL). */
static uint64_t put(struct lab_fe_session *s, const uint8_t *src, uint32_t n)
{
	uint64_t gpa = lab_gmem_alloc(s->g, n, 16);

	if (gpa == 0)
		return 0;
	uint8_t *p = lab_gmem_guest_ptr(s->g, gpa, n);

	if (src)
		memcpy(p, src, n);
	else
		memset(p, LAB_FE_POISON, n);
	return gpa;
}

int lab_fe_post_chain(struct lab_fe_session *s, uint32_t qidx, const struct lab_pdesc *elems,
		uint32_t n, const struct lab_fe_alloc *allocs, uint32_t nallocs)
{
	struct lab_fe_queue *q = &s->q[qidx];
	const uint16_t ppos = q->ring.p.next_avail;
	const bool pwrap = q->ring.p.avail_wrap;
	int id = nallocs <= LAB_FE_CHAIN_ALLOCS ? lab_ring_post(&q->ring, elems, n) : -1;

	if (id < 0) {
		for (uint32_t i = 0; i < nallocs; i++)
			lab_gmem_free(s->g, allocs[i].gpa, allocs[i].len);
		snprintf(s->c.what, sizeof(s->c.what), "queue %u: no room for a chain of %u "
			 "descriptors (%u in flight)", qidx, n, lab_ring_in_flight(&q->ring));
		return -1;
	}
	/* Recording: the chain's buffers and descriptors are written, the avail index not yet
	 * published (and the chain's buffers not yet counted as the device's). */
	if (s->rec && s->layout == VL_LAYOUT_PACKED)
		lab_fe_rec_packed_chain(s, qidx, ppos, pwrap, (uint16_t)id, elems, n);
	if (s->rec)
		lab_fe_rec_flush(s);
	memset(q->alloc[id], 0, sizeof(q->alloc[id]));
	memcpy(q->alloc[id], allocs, nallocs * sizeof(*allocs));
	lab_ring_publish(&q->ring);
	return id;
}

int lab_fe_post_tx(struct lab_fe_session *s, const uint8_t *frame, uint32_t len,
		   enum lab_fe_shape shape)
{
	uint8_t whole[LAB_FE_NET_HDR + 65536];
	const uint8_t zero_hdr[LAB_FE_NET_HDR] = {0};

	if (len > 65536 || len < 3) {
		snprintf(s->c.what, sizeof(s->c.what), "TX frame of %u bytes: the probe posts 3 "
			 "to 65536", len);
		return -1;
	}
	memset(whole, 0, LAB_FE_NET_HDR);
	memcpy(whole + LAB_FE_NET_HDR, frame, len);
	struct lab_fe_alloc a[LAB_FE_CHAIN_ALLOCS] = {{0, 0}};
	struct lab_pdesc e[4];
	uint32_t n = 0, na = 0, third = len / 3;

	if (shape == LAB_FE_ONE) {
		a[na] = (struct lab_fe_alloc){put(s, whole, LAB_FE_NET_HDR + len),
					      LAB_FE_NET_HDR + len};
		e[n++] = (struct lab_pdesc){a[na++].gpa, LAB_FE_NET_HDR + len, 0};
	} else {
		a[na] = (struct lab_fe_alloc){put(s, zero_hdr, LAB_FE_NET_HDR), LAB_FE_NET_HDR};
		e[n++] = (struct lab_pdesc){a[na++].gpa, LAB_FE_NET_HDR, 0};
		a[na] = (struct lab_fe_alloc){put(s, frame, len), len};
		na++;
	}
	if (shape == LAB_FE_HDR_DATA)
		e[n++] = (struct lab_pdesc){a[1].gpa, len, 0};
	if (shape == LAB_FE_FOUR) {
		e[n++] = (struct lab_pdesc){a[1].gpa, third, 0};
		e[n++] = (struct lab_pdesc){a[1].gpa + third, third, 0};
		e[n++] = (struct lab_pdesc){a[1].gpa + 2 * third, len - 2 * third, 0};
	}
	if (shape == LAB_FE_INDIRECT) {
		/* The table: split keeps the header direct before it; packed puts it inside
		 * (a packed driver may not chain a direct descriptor to an INDIRECT one, 2.8.19). */
		struct lab_pdesc t[3];
		uint32_t nt = 0;

		if (s->layout == VL_LAYOUT_PACKED)
			t[nt++] = e[--n];
		t[nt++] = (struct lab_pdesc){a[1].gpa, third, 0};
		t[nt++] = (struct lab_pdesc){a[1].gpa + third, len - third, 0};
		a[na] = (struct lab_fe_alloc){lab_gmem_alloc(s->g, 16 * nt, 16), 16 * nt};
		if (a[na].gpa) {
			void *tp = lab_gmem_guest_ptr(s->g, a[na].gpa, a[na].len);

			if (s->layout == VL_LAYOUT_PACKED)
				lab_rw_packed_table(tp, t, nt);
			else
				lab_rw_split_table(tp, t, nt);
		}
		e[n++] = (struct lab_pdesc){a[na].gpa, a[na].len, VL_DESC_F_INDIRECT};
		na++;
	}
	for (uint32_t i = 0; i < na; i++) {
		if (a[i].gpa == 0) {
			for (uint32_t j = 0; j < na; j++)
				if (a[j].gpa)
					lab_gmem_free(s->g, a[j].gpa, a[j].len);
			snprintf(s->c.what, sizeof(s->c.what), "guest RAM full");
			return -1;
		}
	}
	return lab_fe_post_chain(s, LAB_FE_TX, e, n, a, na);
}

int lab_fe_post_rx(struct lab_fe_session *s, uint32_t cap)
{
	struct lab_fe_alloc a = {put(s, NULL, cap), cap};

	if (a.gpa == 0) {
		snprintf(s->c.what, sizeof(s->c.what), "guest RAM full");
		return -1;
	}
	struct lab_pdesc e = {a.gpa, cap, VL_DESC_F_WRITE};

	return lab_fe_post_chain(s, LAB_FE_RX, &e, 1, &a, 1);
}

uint8_t *lab_fe_buffer(struct lab_fe_session *s, uint32_t qidx, uint32_t id, uint32_t *cap)
{
	const struct lab_fe_alloc *a = &s->q[qidx].alloc[id][0];

	*cap = a->len;
	return lab_gmem_guest_ptr(s->g, a->gpa, a->len);
}

void lab_fe_release(struct lab_fe_session *s, uint32_t qidx, uint32_t id)
{
	struct lab_fe_alloc *a = s->q[qidx].alloc[id];

	if (s->rec)
		lab_fe_rec_absorb(s, qidx, id);
	for (uint32_t i = 0; i < LAB_FE_CHAIN_ALLOCS; i++)
		if (a[i].gpa)
			lab_gmem_free(s->g, a[i].gpa, a[i].len);
	memset(a, 0, sizeof(s->q[qidx].alloc[id]));
}

void lab_fe_describe_ring(const struct lab_fe_session *s, uint32_t qidx, char *buf, size_t len)
{
	const struct lab_ring *r = &s->q[qidx].ring;

	if (r->layout == VL_LAYOUT_PACKED)
		snprintf(buf, len, "packed ring %u (size %u): next avail %u wrap %d, next used %u "
			 "wrap %d, %u chains in flight", qidx, r->size, r->p.next_avail,
			 r->p.avail_wrap, r->p.next_used, r->p.used_wrap, lab_ring_in_flight(r));
	else
		snprintf(buf, len, "split ring %u (size %u): avail idx %u, used idx in memory %u, "
			 "used read %u, %u chains in flight", qidx, r->size, r->s.avail_idx,
			 __atomic_load_n(&r->s.used->idx, __ATOMIC_ACQUIRE), r->s.last_used,
			 lab_ring_in_flight(r));
}

static int used_within(struct lab_fe_session *s, uint32_t qidx, int wait_ms, uint32_t *id,
		       uint32_t *len)
{
	int64_t deadline = now_ms() + wait_ms;

	for (;;) {
		int got = lab_ring_pop_used(&s->q[qidx].ring, id, len);

		if (got != 0 || now_ms() >= deadline)
			return got;
		struct pollfd p = {.fd = s->q[qidx].call, .events = POLLIN};

		poll(&p, 1, 1);
	}
}

int lab_fe_used_within(struct lab_fe_session *s, uint32_t qidx, int wait_ms, uint32_t *id,
		       uint32_t *len)
{
	int got = used_within(s, qidx, wait_ms, id, len);

	if (s->rec)
		lab_fe_rec_used(s, qidx, false, got, got == 1 ? *id : 0);
	return got;
}

static enum lab_fe_rc wait_used(struct lab_fe_session *s, uint32_t qidx, uint32_t *id,
				uint32_t *len);

enum lab_fe_rc lab_fe_wait_used(struct lab_fe_session *s, uint32_t qidx, uint32_t *id,
				uint32_t *len)
{
	enum lab_fe_rc rc = wait_used(s, qidx, id, len);

	if (s->rec)
		lab_fe_rec_used(s, qidx, true, rc == LAB_FE_OK ? 1 : -1, rc == LAB_FE_OK ? *id : 0);
	return rc;
}

static enum lab_fe_rc wait_used(struct lab_fe_session *s, uint32_t qidx, uint32_t *id,
				uint32_t *len)
{
	int64_t deadline = now_ms() + s->c.timeout_ms;
	char ring[200];

	for (;;) {
		int got = used_within(s, qidx, 20, id, len);

		if (got == 1)
			return LAB_FE_OK;
		lab_fe_describe_ring(s, qidx, ring, sizeof(ring));
		if (got < 0) {
			snprintf(s->c.what, sizeof(s->c.what), "used buffer with id %u, not in "
				 "flight (%s)", *id, ring);
			return LAB_FE_BAD_REPLY;
		}
		if (lab_fe_peer_gone(s)) {
			snprintf(s->c.what, sizeof(s->c.what), "the back end closed the connection "
				 "while %s", ring);
			return LAB_FE_CLOSED;
		}
		if (now_ms() >= deadline) {
			snprintf(s->c.what, sizeof(s->c.what), "no used buffer within %d ms; last "
				 "message %s; %s", s->c.timeout_ms,
				 lab_fe_request_name(s->c.last_sent), ring);
			return LAB_FE_TIMEOUT;
		}
	}
}

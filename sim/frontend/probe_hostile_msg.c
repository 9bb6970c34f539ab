/* SPDX-License-Identifier: MIT */
/* The hostile suite's message cases (probe_bodies.h): the control-path classes of
 * hostile-inputs.md, one malformed or out-of-range vhost-user message each, sent into a
 * session that has its features and memory table. What the back end should answer differs
 * by message; the verdict is robustness: it answers (any status), stays silent, or closes
 * the connection, but on the same connection it still answers GET_FEATURES (unless it
 * closed, or the message's framing made the rest of the stream its payload) and a fresh
 * connection is served. Crash: the process is gone; wedge: it stops answering. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fe_traffic.h"
#include "probe_bodies.h"

enum hmsg {
	HM_SIZE_PAST_PAYLOAD, /* header size 64, 8 bytes follow */
	HM_SIZE_SHORT,        /* SET_FEATURES with a 4-byte payload */
	HM_SIZE_HUGE,         /* size 0xfffffff0 */
	HM_KICK_NO_FD,        /* SET_VRING_KICK without an fd or the NOFD bit */
	HM_OWNER_EXTRA_FDS,   /* SET_OWNER with two fds */
	HM_MEM_FDS_SHORT,     /* SET_MEM_TABLE of 2 regions with 1 fd */
	HM_MEM_OVERLAP,       /* SET_MEM_TABLE of 2 overlapping regions */
	HM_MEM_TOO_MANY,      /* SET_MEM_TABLE claiming 9 regions */
	HM_NUM_ZERO,          /* SET_VRING_NUM 0 */
	HM_NUM_NOT_POW2,      /* SET_VRING_NUM 3 (split) */
	HM_NUM_HUGE,          /* SET_VRING_NUM 65536 (> 32768) */
	HM_ADDR_UNMAPPED,     /* SET_VRING_ADDR at 1 TiB, in no region */
	HM_INDEX_RANGE,       /* SET_VRING_NUM for ring 255 */
	HM_BASE_PACKED,       /* packed SET_VRING_BASE with an index past the size */
	HM_REQUEST_ZERO,      /* request 0 (VHOST_USER_NONE) */
	HM_REQUEST_HIGH,      /* request 0x7fff */
};

/* Send m's hostile message with NEED_REPLY when REPLY_ACK is on. *framed: whether the
 * stream is still in step after it (the payload size matched what was sent). */
static enum lab_fe_rc send_hostile(struct probe_ctx *x, enum hmsg m, bool *framed)
{
	uint32_t flags = LAB_FE_F_VERSION | (x->s.reply_ack ? LAB_FE_F_NEED_REPLY : 0);
	struct lab_fe_conn *c = &x->s.c;
	uint32_t n;
	const struct vl_mem_region *r = lab_gmem_regions(x->s.g, &n);
	uint8_t p[8 + 9 * 32] = {0};
	uint32_t st[2] = {LAB_FE_TX, 0};
	int fds[9], efd[2];

	*framed = true;
	for (int i = 0; i < 9; i++)
		fds[i] = lab_gmem_memfd(x->s.g);
	switch (m) {
	case HM_SIZE_PAST_PAYLOAD: {
		/* A raw header: size 64, then only 8 bytes. */
		uint32_t h[3] = {LAB_FE_SET_FEATURES, flags, 64};
		uint64_t f = VL_FEATURE(VL_F_VERSION_1);

		*framed = false;
		memcpy(p, h, 12);
		memcpy(p + 12, &f, 8);
		return write(c->sock, p, 20) == 20 ? LAB_FE_OK : LAB_FE_CLOSED;
	}
	case HM_SIZE_SHORT:
		return lab_fe_send(c, LAB_FE_SET_FEATURES, flags, p, 4, NULL, 0);
	case HM_SIZE_HUGE: {
		uint32_t h[3] = {LAB_FE_GET_FEATURES, LAB_FE_F_VERSION, 0xfffffff0u};

		*framed = false;
		return write(c->sock, h, 12) == 12 ? LAB_FE_OK : LAB_FE_CLOSED;
	}
	case HM_KICK_NO_FD: {
		uint64_t v = LAB_FE_TX;

		return lab_fe_send(c, LAB_FE_SET_VRING_KICK, flags, &v, 8, NULL, 0);
	}
	case HM_OWNER_EXTRA_FDS: {
		efd[0] = eventfd(0, EFD_CLOEXEC);
		efd[1] = eventfd(0, EFD_CLOEXEC);
		enum lab_fe_rc rc = efd[0] < 0 || efd[1] < 0 ? LAB_FE_ERROR :
				    lab_fe_send(c, LAB_FE_SET_OWNER, flags, NULL, 0, efd, 2);

		for (int i = 0; i < 2; i++)
			if (efd[i] >= 0)
				close(efd[i]);
		return rc;
	}
	case HM_MEM_FDS_SHORT:
	case HM_MEM_OVERLAP:
	case HM_MEM_TOO_MANY: {
		uint32_t k = m == HM_MEM_TOO_MANY ? 9 : 2, nfd = m == HM_MEM_FDS_SHORT ? 1 : k;

		memcpy(p, &k, 4);
		for (uint32_t i = 0; i < k; i++) {
			/* Every region the first of the real table; overlap: the second starts in
			 * its middle; the others at distinct addresses past the table. */
			uint64_t gpa = r[n - 1].gpa, size = r[n - 1].size;

			if (i > 0)
				gpa = m == HM_MEM_OVERLAP ? gpa + size / 2 : gpa + i * size;
			uint64_t f[4] = {gpa, size / 2 + (m == HM_MEM_OVERLAP ? size / 4 : 0),
					 r[n - 1].uaddr, lab_gmem_region_memfd_offset(x->s.g, n - 1)};

			memcpy(p + 8 + 32 * i, f, 32);
		}
		return lab_fe_send(c, LAB_FE_SET_MEM_TABLE, flags, p, 8 + 32 * k, fds, nfd);
	}
	case HM_NUM_ZERO:
	case HM_NUM_NOT_POW2:
	case HM_NUM_HUGE:
	case HM_INDEX_RANGE:
		st[1] = m == HM_NUM_ZERO ? 0 : m == HM_NUM_NOT_POW2 ? 3 : m == HM_NUM_HUGE ? 65536 : 64;
		st[0] = m == HM_INDEX_RANGE ? 255 : LAB_FE_TX;
		return lab_fe_send(c, LAB_FE_SET_VRING_NUM, flags, st, 8, NULL, 0);
	case HM_ADDR_UNMAPPED: {
		uint64_t a[4] = {1ull << 40, (1ull << 40) + 0x10000, (1ull << 40) + 0x20000, 0};

		memcpy(p, st, 8);
		memcpy(p + 8, a, 32);
		return lab_fe_send(c, LAB_FE_SET_VRING_ADDR, flags, p, 40, NULL, 0);
	}
	case HM_BASE_PACKED:
		st[1] = 200u | 200u << 16; /* position 200 of a 64-entry ring, both halves */
		return lab_fe_send(c, LAB_FE_SET_VRING_BASE, flags, st, 8, NULL, 0);
	case HM_REQUEST_ZERO:
	case HM_REQUEST_HIGH:
		return lab_fe_send(c, m == HM_REQUEST_ZERO ? 0 : 0x7fff, flags, NULL, 0, NULL, 0);
	}
	return LAB_FE_ERROR;
}

enum probe_verdict probe_hostile_msg(struct probe_ctx *x)
{
	const enum hmsg m = (enum hmsg)x->arg;
	enum lab_fe_rc rc = lab_fe_negotiate(&x->s, x->mask);

	if (rc == LAB_FE_OK)
		rc = lab_fe_set_mem_table(&x->s);
	/* The vring messages meet a ring that has its size: SET_VRING_NUM 64 first. */
	if (rc == LAB_FE_OK && (m == HM_ADDR_UNMAPPED || m == HM_BASE_PACKED || m == HM_KICK_NO_FD))
		rc = lab_fe_set(&x->s, LAB_FE_SET_VRING_NUM, (uint32_t[2]){LAB_FE_TX, 64}, 8, NULL,
				0);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	bool framed;

	rc = send_hostile(x, m, &framed);
	if (rc != LAB_FE_OK && rc != LAB_FE_CLOSED)
		return probe_from_rc(x, rc);
	char seen[160] = "no answer";
	bool closed = rc == LAB_FE_CLOSED;

	/* What came back within 300 ms: a reply (its status), a close, or nothing. */
	if (!closed && lab_fe_readable(&x->s.c, 300)) {
		struct lab_fe_msg r;

		rc = lab_fe_recv(&x->s.c, &r);
		if (rc == LAB_FE_CLOSED) {
			closed = true;
		} else if (rc == LAB_FE_OK) {
			uint64_t st = 0;

			memcpy(&st, r.payload, r.size < 8 ? r.size : 8);
			snprintf(seen, sizeof(seen), "answered (request %u, %u bytes, status %" PRIu64
				 ")", r.request, r.size, st);
		} else {
			snprintf(seen, sizeof(seen), "answered out of protocol (%s)",
				 lab_fe_rc_name(rc));
		}
	}
	if (closed)
		snprintf(seen, sizeof(seen), "closed the connection");
	if (!closed && framed) {
		uint64_t f;

		rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &f);
		if (rc == LAB_FE_TIMEOUT)
			return probe_from_rc(x, rc);
		if (rc == LAB_FE_CLOSED)
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
				 ", then closed at the next request");
	}
	char now[sizeof(seen)];

	memcpy(now, seen, sizeof(now));
	rc = x->fresh(x);
	if (rc != LAB_FE_OK) {
		enum probe_verdict v = probe_from_rc(x, rc);
		char why[sizeof(x->detail)];

		memcpy(why, x->detail, sizeof(why));
		snprintf(x->detail, sizeof(x->detail), "%s; then a fresh connection: %.300s", now,
			 why);
		return v;
	}
	return probe_pass(x, "%s; a fresh connection served", now);
}

/* SPDX-License-Identifier: MIT */
/* fuzz_fe_replies: the lab's vhost-user front end (sim/frontend, what `vhostlab probe` runs)
 * reading a hostile back end. The probe is pointed at back ends nobody vouches for, so its
 * own parsing of what comes back -- reply messages and the used rings a back end writes
 * into guest memory -- is an input surface too.
 *
 * The input: flags u8 (bit 0 packed rings), then up to FR_MAX_OPS operations, an opcode byte
 * (mod FR_OP__COUNT) and its arguments:
 *   REPLY  len u16 (% 600), then len bytes the back end writes to the socket (queued: the
 *          front end reads them as the replies of its next requests)
 *   STEP   which u8, arg u8: the front-end step that runs next against those bytes:
 *          negotiate, the memory table, start queue RX or TX (2 << arg % 8 entries),
 *          GET_VRING_BASE (queue arg & 1), ENABLE (queue arg & 1, on: arg & 2),
 *          GET_FEATURES, GET_PROTOCOL_FEATURES
 *   RING   off u16, n u8 (% 65), n bytes: the back end writes the ring area (used rings,
 *          packed descriptors and event areas of both queues)
 *   POST   u8: bit 0 queue (RX, TX), then len u16: a TX frame or an RX buffer posted
 *   USED   u8 queue: the front end looks for a used buffer (no waiting)
 * The front end does not wait for a reply (a timeout of 0): what the input queued is there
 * at once and nothing else can come. After FR_MAX_TIMEOUTS steps that timed out the input
 * ends.
 *
 * Checked: every step returns a lab_fe_rc; after a negotiation that succeeded the features
 * acknowledged are among those offered and those the probe's driver implements, the protocol
 * features among those offered; a used buffer the front end accepts names a chain it posted
 * and has not had back (it must refuse any other id), and never twice; every request the
 * front end sends has version 1 and a payload of at most 4 KiB. ASan and UBSan watch the
 * rest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fe_session.h"
#include "fe_traffic.h"
#include "fuzz_target.h"
#include "fz_bytes.h"

#define FR_MAX_OPS 64u
#define FR_MAX_REPLY 600u
#define FR_MAX_TIMEOUTS 4u

enum fr_op { FR_REPLY, FR_STEP, FR_RING, FR_POST, FR_USED, FR_OP__COUNT };

/* Chains in flight per queue, by id, as the front end posted them. */
static bool in_flight[LAB_FE_QUEUES][LAB_FE_MAX_QUEUE_SIZE];
/* The back end wrote into a split ring's descriptor table, which is the driver's alone
 * (virtio 2.7.5): the lab driver frees a chain by the links it reads there (sim/vring.c,
 * split_release), so from then on its books may hand out a descriptor still in flight.
 * The probe's promise to such a back end is no crash and no hang, not right books: the
 * in-flight check of posted ids stops for that queue; memory safety stays checked. */
static bool desc_table_written[LAB_FE_QUEUES];
static uint32_t timeouts;

/* Read and check what the front end sent: headers of version 1 and sane sizes. The stream
 * is drained whole after each step, so each header is read where a message starts. */
static void drain_requests(int be)
{
	uint8_t buf[12 + 4096];

	for (;;) {
		ssize_t n = recv(be, buf, 12, MSG_DONTWAIT);

		if (n <= 0)
			return;
		if (n != 12)
			fz_fail("the front end sent a %zd-byte fragment of a header", n);
		uint32_t hdr[3];

		memcpy(hdr, buf, 12);
		if ((hdr[1] & LAB_FE_F_VERSION_MASK) != LAB_FE_F_VERSION || hdr[2] > 4096)
			fz_fail("the front end sent request %u with flags %#x and size %u", hdr[0],
				hdr[1], hdr[2]);
		if (hdr[2] && recv(be, buf + 12, hdr[2], MSG_DONTWAIT) != (ssize_t)hdr[2])
			fz_fail("request %u: payload cut short", hdr[0]);
	}
}

static void check_rc(enum lab_fe_rc rc, const char *step)
{
	if ((unsigned)rc > LAB_FE_ERROR)
		fz_fail("%s returned %d", step, (int)rc);
	timeouts += rc == LAB_FE_TIMEOUT;
}

static void step(struct lab_fe_session *s, struct fz_in *in)
{
	uint8_t which = fz_u8(in) % 8u, arg = fz_u8(in);
	enum lab_fe_rc rc = LAB_FE_OK;
	uint64_t v;
	uint32_t num;

	switch (which) {
	case 0:
		rc = lab_fe_negotiate(s, ~0ull);
		check_rc(rc, "negotiate");
		if (rc == LAB_FE_OK) {
			if (s->acked & ~s->offered)
				fz_fail("acknowledged %#llx of offered %#llx",
					(unsigned long long)s->acked, (unsigned long long)s->offered);
			if (s->acked & ~(uint64_t)LAB_FE_DRIVER_FEATURES)
				fz_fail("acknowledged %#llx beyond the driver's features",
					(unsigned long long)s->acked);
			if (s->proto_acked & ~s->proto_offered)
				fz_fail("protocol features %#llx acknowledged of %#llx offered",
					(unsigned long long)s->proto_acked,
					(unsigned long long)s->proto_offered);
		}
		return;
	case 1:
		check_rc(lab_fe_set_mem_table(s), "set_mem_table");
		return;
	case 2:
	case 3: {
		const uint32_t q = which - 2u;
		uint32_t size = 1u << (1u + arg % 8u); /* 2..256 */

		if (s->q[q].started)
			return; /* started once per input: the ring keeps its layout */
		rc = lab_fe_queue_start(s, q, size, 0);
		check_rc(rc, "queue_start");
		return;
	}
	case 4:
		rc = lab_fe_get_vring_base(s, arg & 1u, &num);
		check_rc(rc, "get_vring_base");
		return;
	case 5:
		check_rc(lab_fe_enable(s, arg & 1u, (arg & 2u) != 0), "enable");
		return;
	case 6:
		check_rc(lab_fe_get_u64(s, LAB_FE_GET_FEATURES, &v), "get_features");
		return;
	default:
		check_rc(lab_fe_get_u64(s, LAB_FE_GET_PROTOCOL_FEATURES, &v), "get_protocol");
		return;
	}
}

static void ring_write(struct lab_fe_session *s, struct fz_in *in)
{
	const uint64_t area = lab_gmem_ring_size(s->g);
	uint32_t off = fz_u16(in) % (uint32_t)area, n = fz_u8(in) % 65u;
	uint8_t bytes[64];

	fz_bytes(in, bytes, n);
	if (n > area - off)
		n = (uint32_t)(area - off);
	memcpy(lab_gmem_guest_ptr(s->g, lab_gmem_ring_gpa(s->g) + off, n), bytes, n);
	const uint64_t at = lab_gmem_ring_gpa(s->g) + off;

	for (uint32_t q = 0; q < LAB_FE_QUEUES; q++) {
		const struct lab_ring *r = &s->q[q].ring;

		if (s->q[q].started && r->layout == VL_LAYOUT_SPLIT && n &&
		    at < r->s.desc_gpa + 16ull * r->size && r->s.desc_gpa < at + n)
			desc_table_written[q] = true;
	}
}

static void post(struct lab_fe_session *s, struct fz_in *in)
{
	static uint8_t frame[2048];
	const uint32_t q = fz_u8(in) & 1u;
	const uint32_t len = 14u + fz_u16(in) % 1500u;
	int id;

	if (!s->q[q].started)
		return;
	if (q == LAB_FE_TX) {
		memset(frame, 0x5a, len);
		id = lab_fe_post_tx(s, frame, len, LAB_FE_HDR_DATA);
	} else {
		id = lab_fe_post_rx(s, len);
	}
	if (id < 0)
		return;
	if ((uint32_t)id >= LAB_FE_MAX_QUEUE_SIZE)
		fz_fail("queue %u: posted id %d, out of range", q, id);
	if (in_flight[q][id] && !desc_table_written[q])
		fz_fail("queue %u: posted id %d, already in flight", q, id);
	in_flight[q][id] = true;
}

static void used(struct lab_fe_session *s, struct fz_in *in)
{
	const uint32_t q = fz_u8(in) & 1u;
	uint32_t id = 0, len = 0;

	if (!s->q[q].started)
		return;
	int got = lab_fe_used_within(s, q, 0, &id, &len);

	if (got < -1 || got > 1)
		fz_fail("lab_fe_used_within returned %d", got);
	if (got != 1)
		return;
	if (id >= LAB_FE_MAX_QUEUE_SIZE || !in_flight[q][id])
		fz_fail("queue %u: accepted used id %u, which is not in flight", q, id);
	in_flight[q][id] = false;
	lab_fe_release(s, q, id);
}

/* The session's guest memory, one per layout, created on first use and reset between inputs
 * (lab_gmem_reset: allocations dropped, touched pages zeroed), so each input starts from the
 * memory a fresh session would have; creating 4 MiB of it per input was most of this
 * target's time. */
static struct lab_gmem *session_gmem(enum vl_layout layout)
{
	static struct lab_gmem *kept[2];
	struct lab_gmem **g = &kept[layout == VL_LAYOUT_PACKED];

	if (*g) {
		lab_gmem_reset(*g);
		return *g;
	}
	struct lab_gmem_config cfg;
	char err[256] = "";

	lab_fe_session_gmem_config(layout, &cfg);
	*g = lab_gmem_create(&cfg, err, sizeof(err));
	if (!*g)
		fz_fail("lab_gmem_create: %s", err);
	return *g;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = fz_in_make(data, size);
	struct lab_fe_session s;
	int sv[2];

	fz_set_target("fuzz_fe_replies");
	if (size == 0)
		return 0;
	memset(in_flight, 0, sizeof(in_flight));
	memset(desc_table_written, 0, sizeof(desc_table_written));
	timeouts = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		fz_fail("socketpair: %s", strerror(errno));
	const enum vl_layout layout = (fz_u8(&in) & 1u) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;

	/* A timeout of 0: every reply this input gives is queued on the socket before the
	 * step that reads it, so waiting could never bring more (fe_msg.c still reads what is
	 * there); before, each step that found nothing slept 1 ms. */
	lab_fe_session_init_on(&s, sv[0], layout, 0, session_gmem(layout));
	for (uint32_t ops = 0; ops < FR_MAX_OPS && fz_more(&in) && timeouts < FR_MAX_TIMEOUTS;
	     ops++) {
		switch (fz_u8(&in) % FR_OP__COUNT) {
		case FR_REPLY: {
			uint8_t buf[FR_MAX_REPLY];
			uint32_t n = fz_u16(&in) % FR_MAX_REPLY;

			fz_bytes(&in, buf, n);
			if (n && send(sv[1], buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n)
				fz_fail("queueing %u reply bytes: %s", n, strerror(errno));
			break;
		}
		case FR_STEP:
			step(&s, &in);
			drain_requests(sv[1]);
			break;
		case FR_RING:
			ring_write(&s, &in);
			break;
		case FR_POST:
			post(&s, &in);
			break;
		default:
			used(&s, &in);
			break;
		}
	}
	if (fz_verbose())
		fprintf(stderr, "fuzz_fe_replies: acked %#llx (protocol %#llx), queues started %d %d, "
			"%u requests sent (%s)\n", (unsigned long long)s.acked,
			(unsigned long long)s.proto_acked, s.q[0].started, s.q[1].started, s.c.sent,
			s.c.what);
	lab_fe_session_fini(&s);
	close(sv[1]);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Conformance case "dirty-log" (vhost-user "Migration", VHOST_F_LOG_ALL, LOG_SHMFD,
 * SET_LOG_BASE): the probe turns logging on the way QEMU does when a migration starts
 * (SET_LOG_BASE with a memfd bitmap, SET_FEATURES with LOG_ALL, SET_VRING_ADDR again with
 * the log flag), moves frames both ways, stops the rings with GET_VRING_BASE (QEMU reads
 * the final log after that), and then checks the shared bitmap against every guest page the
 * back end is known to have written: RX buffers that came back used with a length, the used
 * ring entries and index (split) or the used descriptors (packed). A page written and not
 * marked is a page a migration would copy stale. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fe_record.h"
#include "fe_traffic.h"
#include "probe_bodies.h"

#define LOG_ALL_BIT 26            /* VHOST_F_LOG_ALL */
#define PROTOCOL_F_LOG_SHMFD 1    /* SET_LOG_BASE carries the bitmap's fd */
#define VRING_F_LOG 1u            /* SET_VRING_ADDR flags: log used ring writes */
#define ROUNDS 8u
#define FRAMES 8u                 /* per round, each way */
#define PAGE_SHIFT 12
#define MAX_FRAME 9000u

/* Why the probe knows the back end wrote a page (the first reason seen). */
enum wrote { WROTE_NONE, WROTE_RX_DATA, WROTE_USED_RING, WROTE_PACKED_DESC };

static const char *wrote_name(enum wrote w)
{
	switch (w) {
	case WROTE_RX_DATA: return "an RX buffer it filled";
	case WROTE_USED_RING: return "a used ring entry or index";
	case WROTE_PACKED_DESC: return "a used packed descriptor";
	default: return "nothing";
	}
}

struct dl_state {
	struct probe_ctx *x;
	uint8_t *written;     /* [npages]: enum wrote */
	uint64_t npages;
	uint8_t *log;         /* the shared bitmap, mapped from the memfd */
	uint64_t log_bytes;
	int log_fd;
	uint64_t rx_bytes;    /* RX bytes the back end reported used */
};

static void note(struct dl_state *d, uint64_t gpa, uint64_t len, enum wrote why)
{
	if (len == 0)
		return;
	for (uint64_t p = gpa >> PAGE_SHIFT; p <= (gpa + len - 1) >> PAGE_SHIFT; p++)
		if (p < d->npages && d->written[p] == WROTE_NONE)
			d->written[p] = (uint8_t)why;
}

/* The used ring slot the device writes next on qidx, noted before the probe reads it (the
 * ring driver moves past it when it pops the entry). */
static void note_used_slot(struct dl_state *d, uint32_t qidx)
{
	const struct lab_ring *r = &d->x->s.q[qidx].ring;

	if (r->layout == VL_LAYOUT_PACKED) {
		note(d, r->p.desc_gpa + 16ull * r->p.next_used, 16, WROTE_PACKED_DESC);
		return;
	}
	/* struct vring_used: u16 flags, u16 idx, then 8-byte elements. */
	note(d, r->s.used_gpa + 2, 2, WROTE_USED_RING);
	note(d, r->s.used_gpa + 4 + 8ull * (r->s.last_used % r->size), 8, WROTE_USED_RING);
}

static enum lab_fe_rc wait_noted(struct dl_state *d, uint32_t qidx, uint32_t *id,
				 uint32_t *len)
{
	note_used_slot(d, qidx);
	enum lab_fe_rc rc = lab_fe_wait_used(&d->x->s, qidx, id, len);

	if (rc != LAB_FE_OK)
		return rc;
	if (qidx == LAB_FE_RX) {
		const struct lab_fe_alloc *a = &d->x->s.q[LAB_FE_RX].alloc[*id][0];
		const uint32_t used = *len;

		/* A used length past the buffer is another case's failure; note only the
		 * buffer's bytes. */
		note(d, a->gpa, used < a->len ? used : a->len, WROTE_RX_DATA);
		d->rx_bytes += used;
	}
	lab_fe_release(&d->x->s, qidx, *id);
	return LAB_FE_OK;
}

/* SET_LOG_BASE {mmap_size, mmap_offset} with the memfd; the back end answers with an empty
 * reply (vhost-user.rst: with LOG_SHMFD the front end waits for it), never NEED_REPLY. */
static enum lab_fe_rc set_log_base(struct dl_state *d)
{
	uint64_t p[2] = {d->log_bytes, 0};
	uint8_t none = 0;
	enum lab_fe_rc rc = lab_fe_send(&d->x->s.c, LAB_FE_SET_LOG_BASE, LAB_FE_F_VERSION, p,
					sizeof(p), &d->log_fd, 1);

	return rc != LAB_FE_OK ? rc : lab_fe_reply(&d->x->s.c, LAB_FE_SET_LOG_BASE, &none, 0);
}

/* SET_VRING_ADDR again, as QEMU sends it once logging is on: flags VRING_F_LOG and the used
 * ring's (packed: device area's) guest address as log_guest_addr. */
static enum lab_fe_rc send_addr_logged(struct lab_fe_session *s, uint32_t qidx)
{
	struct vl_vq_config cfg;

	lab_ring_device_config(&s->q[qidx].ring, &cfg);
	uint8_t p[40];
	uint32_t head[2] = {qidx, VRING_F_LOG};
	uint64_t a[4] = {cfg.desc_gpa, cfg.device_gpa, cfg.driver_gpa, cfg.device_gpa};

	memcpy(p, head, sizeof(head));
	memcpy(p + 8, a, sizeof(a));
	return lab_fe_set(s, LAB_FE_SET_VRING_ADDR, p, sizeof(p), NULL, 0);
}

static enum lab_fe_rc start_logging(struct dl_state *d)
{
	struct lab_fe_session *s = &d->x->s;
	const uint32_t sent = s->c.sent;
	enum lab_fe_rc rc = set_log_base(d);
	uint64_t f = s->acked | VL_FEATURE(LOG_ALL_BIT);

	if (rc == LAB_FE_OK)
		rc = lab_fe_set(s, LAB_FE_SET_FEATURES, &f, sizeof(f), NULL, 0);
	if (rc == LAB_FE_OK)
		s->acked = f;
	for (uint32_t q = 0; q < LAB_FE_QUEUES && rc == LAB_FE_OK; q++)
		rc = send_addr_logged(s, q);
	lab_fe_rec_log_start(s, d->npages, s->c.sent - sent, rc);
	return rc;
}

/* One round: FRAMES frames of up to 9000 bytes out, their echoes in. The frames span pages,
 * so some pages hold only payload (no header, whose separate small copy would mark the page
 * too): a back end that logs headers and rings but not payload is caught. With MRG_RXBUF a
 * frame spreads over up to three page-sized buffers. */
static enum lab_fe_rc round_trip(struct dl_state *d, uint32_t round)
{
	struct lab_fe_session *s = &d->x->s;
	bool mrg = s->acked & VL_FEATURE(VL_F_NET_MRG_RXBUF);
	uint32_t cap = mrg ? 4096 : LAB_FE_NET_HDR + MAX_FRAME;
	uint32_t nrx = mrg ? 3 * FRAMES : FRAMES;
	uint8_t frame[MAX_FRAME];
	uint64_t want = d->rx_bytes;
	uint32_t id, len;

	/* Buffers the last round's echoes did not need are still posted: top up to nrx. */
	while (lab_ring_in_flight(&s->q[LAB_FE_RX].ring) < nrx)
		if (lab_fe_post_rx(s, cap) < 0)
			return LAB_FE_ERROR;
	for (uint32_t i = 0; i < FRAMES; i++) {
		uint32_t flen = 1000 + (round * FRAMES + i) * 1777 % (MAX_FRAME - 1000 + 1);

		probe_frame(frame, flen, round * FRAMES + i);
		if (lab_fe_post_tx(s, frame, flen, LAB_FE_HDR_DATA) < 0)
			return LAB_FE_ERROR;
		want += LAB_FE_NET_HDR + flen;
	}
	lab_fe_kick(s, LAB_FE_RX);
	lab_fe_kick(s, LAB_FE_TX);
	for (uint32_t i = 0; i < FRAMES; i++) {
		enum lab_fe_rc rc = wait_noted(d, LAB_FE_TX, &id, &len);

		if (rc != LAB_FE_OK)
			return rc;
	}
	while (d->rx_bytes < want) {
		enum lab_fe_rc rc = wait_noted(d, LAB_FE_RX, &id, &len);

		if (rc != LAB_FE_OK)
			return rc;
	}
	return LAB_FE_OK;
}

static bool marked(const struct dl_state *d, uint64_t p)
{
	return (d->log[p / 8] >> (p % 8)) & 1u;
}

/* For probe --record: each run of consecutive written pages as `expect logged`, in page
 * order, up to the one that holds the first page not marked (the case's failure). */
static void record_runs(struct dl_state *d)
{
	for (uint64_t p = 0; p < d->npages;) {
		if (d->written[p] == WROTE_NONE) {
			p++;
			continue;
		}
		uint64_t end = p;
		bool held = true;

		while (end < d->npages && d->written[end] != WROTE_NONE) {
			held = held && marked(d, end);
			end++;
		}
		lab_fe_rec_expect_logged(&d->x->s, p << PAGE_SHIFT, (end - p) << PAGE_SHIFT, held);
		if (!held)
			return;
		p = end;
	}
}

static enum probe_verdict compare(struct dl_state *d, const uint32_t base[LAB_FE_QUEUES])
{
	uint64_t checked = 0, extra = 0;

	record_runs(d);
	for (uint64_t p = 0; p < d->npages; p++) {
		if (d->written[p] == WROTE_NONE) {
			extra += marked(d, p);
			continue;
		}
		if (!marked(d, p))
			return probe_fail(d->x, "guest page %" PRIu64 " (gpa 0x%" PRIx64 "), %s, "
					  "was written during logging but its bit in the shared log "
					  "is clear after GET_VRING_BASE", p, p << PAGE_SHIFT,
					  wrote_name((enum wrote)d->written[p]));
		checked++;
	}
	return probe_pass(d->x, "%u frames each way with LOG_ALL on: all %" PRIu64 " guest pages "
			  "written (RX data, used entries) marked in the shared log; %" PRIu64
			  " other pages marked; stopped at bases 0x%x/0x%x", ROUNDS * FRAMES,
			  checked, extra, base[LAB_FE_RX], base[LAB_FE_TX]);
}

static enum probe_verdict run(struct dl_state *d)
{
	struct probe_ctx *x = d->x;
	struct lab_fe_session *s = &x->s;
	uint32_t size = PROBE_QUEUE_SIZE;
	uint16_t start = s->layout == VL_LAYOUT_SPLIT ? 65531 : (uint16_t)(size - 2);
	enum lab_fe_rc rc = lab_fe_set_mem_table(s);

	for (uint32_t q = 0; q < LAB_FE_QUEUES && rc == LAB_FE_OK; q++)
		rc = lab_fe_queue_start(s, q, size, start);
	/* The rings are up as lab_fe_bring_up leaves them (which this case does not use: it
	 * asks for LOG_SHMFD): where a recording starts. */
	if (rc == LAB_FE_OK && s->rec)
		lab_fe_rec_up(s);
	if (rc == LAB_FE_OK)
		rc = start_logging(d);
	for (uint32_t r = 0; r < ROUNDS && rc == LAB_FE_OK; r++)
		rc = round_trip(d, r);
	uint32_t base[LAB_FE_QUEUES] = {0, 0};

	for (uint32_t q = 0; q < LAB_FE_QUEUES && rc == LAB_FE_OK; q++)
		rc = lab_fe_get_vring_base(s, q, &base[q]);
	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	return compare(d, base);
}

enum probe_verdict probe_dirty_log(struct probe_ctx *x)
{
	struct lab_fe_session *s = &x->s;

	s->proto_want = VL_FEATURE(PROTOCOL_F_LOG_SHMFD);
	enum lab_fe_rc rc = lab_fe_negotiate(s, x->mask);

	if (rc != LAB_FE_OK)
		return probe_from_rc(x, rc);
	if (!(s->offered & x->mask & VL_FEATURE(LOG_ALL_BIT)) ||
	    !(s->proto_acked & VL_FEATURE(PROTOCOL_F_LOG_SHMFD))) {
		snprintf(x->detail, sizeof(x->detail), "needs VHOST_F_LOG_ALL (bit 26, offered: "
			 "%s) and protocol feature LOG_SHMFD (bit 1, offered: %s)",
			 s->offered & VL_FEATURE(LOG_ALL_BIT) ? "yes" : "no",
			 s->proto_offered & VL_FEATURE(PROTOCOL_F_LOG_SHMFD) ? "yes" : "no");
		return PROBE_NA;
	}
	struct dl_state d = {.x = x, .log_fd = -1};

	/* One bit per 4 KiB page of all guest-physical memory, in whole pages of bitmap. */
	d.npages = lab_gmem_end_gpa(s->g) >> PAGE_SHIFT;
	d.log_bytes = ((d.npages + 7) / 8 + 4095) / 4096 * 4096;
	d.written = calloc(d.npages, 1);
	d.log_fd = memfd_create("vhostlab-probe-log", MFD_CLOEXEC);
	enum probe_verdict v;

	if (!d.written || d.log_fd < 0 || ftruncate(d.log_fd, (off_t)d.log_bytes) != 0 ||
	    (d.log = mmap(NULL, d.log_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, d.log_fd, 0)) ==
		    MAP_FAILED) {
		d.log = NULL;
		v = probe_fail(x, "probe: no memory or memfd for a %" PRIu64 "-byte log",
			       d.log_bytes);
	} else {
		v = run(&d);
	}
	if (d.log)
		munmap(d.log, d.log_bytes);
	if (d.log_fd >= 0)
		close(d.log_fd);
	free(d.written);
	return v;
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --record FILE`: the front end's session as a trace (docs/serve.md,
 * "Recording"). The recorder itself is sim/trace/session_rec.h; this file ties it to
 * serve: which rings and memory table it sees, around which bursts, and when and how the
 * file is written.
 *
 * One connection is recorded: the first one whose rings run. Recording stops at the
 * bound (--record-max-packets), when the front end leaves, when something happens that a
 * trace cannot express (a ring set up anew, a memory layout it cannot hold: the reason is
 * reported), or when serve stops. The file is written as soon as it stops -- to a
 * temporary name beside FILE, then renamed over it, so FILE is never half a trace -- and
 * serve goes on serving. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"
#include "session_rec.h"

struct serve_rec {
	struct lab_srec *srec;
	const char *path;
	struct serve_port *port;      /* the connection being recorded (its device) */
	bool mem_given;
	bool written;                 /* recording is over (the file written, or not needed) */
	bool file_written;
	bool write_failed;
	char error[256];
	struct lab_srec_counts counts;
	char stopped[256];
};

bool serve_rec_open(struct serve *s)
{
	struct serve_rec *rec = calloc(1, sizeof(*rec));

	if (!rec || !(rec->srec = lab_srec_create(s->o.record_max_packets))) {
		free(rec);
		serve_event(s, "error", NULL, "--record: out of memory");
		return false;
	}
	rec->path = s->o.record;
	s->rec = rec;
	return true;
}

/* FILE.tmp.PID, then rename: a reader sees the old file or the whole new one. */
static bool write_atomic(const char *path, const char *text, size_t len, char *err, size_t n)
{
	char tmp[4096];
	int w = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());

	if (w < 0 || (size_t)w >= sizeof(tmp)) {
		snprintf(err, n, "%s: path too long", path);
		return false;
	}
	FILE *f = fopen(tmp, "wb");

	if (!f) {
		snprintf(err, n, "%.200s: %s", tmp, strerror(errno));
		return false;
	}
	bool ok = fwrite(text, 1, len, f) == len;

	ok = fflush(f) == 0 && ok;
	ok = fsync(fileno(f)) == 0 && ok;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		snprintf(err, n, "%s: %s", path, strerror(errno ? errno : EIO));
		unlink(tmp);
		return false;
	}
	return true;
}

/* Once recording stopped: close the trace and write it. */
static void flush(struct serve *s)
{
	struct serve_rec *rec = s->rec;

	if (!rec || rec->written || !lab_srec_stopped(rec->srec))
		return;
	rec->written = true;
	snprintf(rec->stopped, sizeof(rec->stopped), "%s", lab_srec_stopped(rec->srec));
	const struct lab_trace *t = lab_srec_finish(rec->srec);
	size_t len = 0;

	lab_srec_counts(rec->srec, &rec->counts);
	if (rec->counts.queues == 0) {
		/* No ring ever ran: a trace without memory or queues would not even replay. */
		serve_event(s, "recorded", rec->port, "%s not written: nothing was recorded (%s)",
			    rec->path, rec->stopped);
		return;
	}
	char *text = lab_trace_format(t, &len);

	rec->file_written = text != NULL;
	if (!text)
		snprintf(rec->error, sizeof(rec->error), "%s: out of memory", rec->path);
	rec->write_failed = !text || !write_atomic(rec->path, text, len, rec->error,
						   sizeof(rec->error));
	free(text);
	if (rec->write_failed) {
		serve_event(s, "error", rec->port, "--record: cannot write the trace: %s",
			    rec->error);
		return;
	}
	serve_event(s, "recorded", rec->port,
		    "%s: %" PRIu64 " packets in %" PRIu64 " bursts, %" PRIu32
		    " statements (recording stopped: %s)",
		    rec->path, rec->counts.packets, rec->counts.bursts, rec->counts.statements,
		    rec->stopped);
	/* The trace is out: nothing of it is needed any more. */
	lab_srec_destroy(rec->srec);
	rec->srec = NULL;
}

/* The recorder, if port p is the one being recorded and recording goes on. */
static struct lab_srec *active(struct serve_port *p)
{
	struct serve_rec *rec = p->s->rec;

	if (!rec || rec->written || rec->port != p)
		return NULL;
	return rec->srec;
}

void serve_rec_ring_ready(struct serve_port *p, uint32_t qidx, struct vl_vq *vq)
{
	struct serve_rec *rec = p->s->rec;
	char name[16];

	if (!rec || rec->written)
		return;
	if (!rec->port)
		rec->port = p; /* the first connection whose rings run */
	if (rec->port != p)
		return;
	if (!rec->mem_given) {
		rec->mem_given = true;
		lab_srec_memory(rec->srec, vl_vu_dev_mem(p->dev));
	}
	snprintf(name, sizeof(name), "%s%u", qidx % 2 == SERVE_RING_RX ? "rx" : "tx", qidx / 2);
	lab_srec_queue(rec->srec, qidx, name,
		       qidx % 2 == SERVE_RING_RX ? LAB_TRACE_RX : LAB_TRACE_TX, vq);
	lab_srec_kicks(rec->srec, qidx, !p->s->o.busy_poll);
	flush(p->s);
}

void serve_rec_mem_changed(struct serve_port *p)
{
	struct lab_srec *r = active(p);

	if (!r || !p->s->rec->mem_given)
		return;
	lab_srec_memory(r, vl_vu_dev_mem(p->dev));
	flush(p->s);
}

void serve_rec_disconnected(struct serve_port *p)
{
	struct lab_srec *r = active(p);

	if (!r)
		return;
	lab_srec_stop(r, "the front end disconnected");
	flush(p->s);
}

void serve_rec_kicks(struct serve_port *p, uint32_t qidx, bool want)
{
	struct lab_srec *r = active(p);

	if (r)
		lab_srec_kicks(r, qidx, want);
}

void serve_rec_begin(struct serve_port *p, uint32_t qidx, struct vl_vq *vq)
{
	struct lab_srec *r = active(p);

	if (r)
		lab_srec_begin(r, qidx, vq);
}

void serve_rec_dequeued(struct serve_port *p, uint16_t max, struct vl_pkt *const *pkts,
			uint16_t n)
{
	struct lab_srec *r = active(p);

	if (!r)
		return;
	lab_srec_dequeued(r, max, pkts, n);
	flush(p->s);
}

void serve_rec_discarded(struct serve_port *p, uint16_t max, uint16_t n, bool touch)
{
	struct lab_srec *r = active(p);

	if (!r)
		return;
	lab_srec_discarded(r, max, n, touch);
	flush(p->s);
}

void serve_rec_enqueued(struct serve_port *p, struct vl_pkt *const *pkts, uint16_t count,
			uint16_t done, const uint8_t *status)
{
	struct lab_srec *r = active(p);

	if (!r)
		return;
	lab_srec_enqueued(r, pkts, count, done, status);
	flush(p->s);
}

void serve_rec_close(struct serve *s, const char *stopped_by)
{
	struct serve_rec *rec = s->rec;

	if (!rec)
		return;
	if (rec->srec && !rec->written) {
		if (!rec->port)
			lab_srec_stop(rec->srec, "serve stopped (%s) before a front end's rings ran",
				      stopped_by);
		else
			lab_srec_stop(rec->srec, "serve stopped (%s)", stopped_by);
		flush(s);
	}
}

void serve_rec_free(struct serve *s)
{
	if (!s->rec)
		return;
	lab_srec_destroy(s->rec->srec);
	free(s->rec);
	s->rec = NULL;
}

bool serve_rec_failed(const struct serve *s)
{
	return s->rec && s->rec->write_failed;
}

void serve_rec_final_json(const struct serve *s)
{
	const struct serve_rec *rec = s->rec;

	if (!rec)
		return;
	printf("  \"record\": {\"file\": ");
	cli_json_string(stdout, rec->path);
	printf(", \"written\": %s, \"packets\": %" PRIu64 ", \"bursts\": %" PRIu64
	       ", \"statements\": %" PRIu32 ", \"queues\": %" PRIu32 ", \"regions\": %" PRIu32
	       ", \"stopped\": ",
	       rec->file_written && !rec->write_failed ? "true" : "false", rec->counts.packets,
	       rec->counts.bursts, rec->counts.statements, rec->counts.queues,
	       rec->counts.regions);
	cli_json_string(stdout, rec->stopped);
	printf(", \"error\": ");
	cli_json_string(stdout, rec->error);
	printf("},\n");
}

void serve_rec_final_text(const struct serve *s)
{
	const struct serve_rec *rec = s->rec;

	if (!rec)
		return;
	if (rec->write_failed) {
		printf("record: FAIL: %s\n", rec->error);
		return;
	}
	if (!rec->file_written) {
		printf("record: %s not written (%s)\n", rec->path, rec->stopped);
		return;
	}
	printf("record: %s: %" PRIu64 " packets in %" PRIu64 " bursts, %" PRIu32
	       " statements, %" PRIu32 " queues, %" PRIu32 " regions (stopped: %s)\n",
	       rec->path, rec->counts.packets, rec->counts.bursts, rec->counts.statements,
	       rec->counts.queues, rec->counts.regions, rec->stopped);
}

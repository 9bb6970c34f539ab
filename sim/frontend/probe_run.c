/* SPDX-License-Identifier: MIT */
/* Running the probe's cases against one back end (probe_run.h). */
#include "probe_run.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fe_record.h"
#include "fe_traffic.h"

const char *probe_verdict_name(enum probe_verdict v)
{
	switch (v) {
	case PROBE_PASS: return "pass";
	case PROBE_FAIL: return "fail";
	case PROBE_WEDGE: return "wedge";
	case PROBE_CRASH: return "crash";
	case PROBE_NA: return "n/a";
	}
	return "?";
}

/* A connected socket to the back end: connect, or accept the next one on listen_fd. A back
 * end that serves one front end at a time may still hold the previous case's connection
 * when the next one arrives, and close the newcomer at once (vhostlab serve does): such a
 * connection is retried within the timeout, so one case's session never costs the next. */
static int reach(const struct probe_opts *o, int listen_fd, char *err, size_t errlen)
{
	if (o->server)
		return lab_fe_accept(listen_fd, o->timeout_ms + 2000, err, errlen);
	return lab_fe_connect_served(o->socket, o->timeout_ms, err, errlen);
}

static const char *feature_name(uint64_t bits)
{
	switch (bits) {
	case VL_FEATURE(VL_F_NET_MRG_RXBUF): return "MRG_RXBUF";
	case VL_FEATURE(VL_F_RING_INDIRECT_DESC): return "INDIRECT_DESC";
	case VL_FEATURE(VL_F_RING_EVENT_IDX): return "EVENT_IDX";
	case VL_FEATURE(VL_F_RING_PACKED): return "RING_PACKED";
	case VL_FEATURE(VL_F_IN_ORDER): return "IN_ORDER";
	case VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES): return "PROTOCOL_FEATURES";
	case VL_FEATURE(VL_F_NET_CSUM): return "CSUM";
	case VL_FEATURE(VL_F_NET_GUEST_CSUM): return "GUEST_CSUM";
	case VL_FEATURE(VL_F_NET_GUEST_TSO4): return "GUEST_TSO4";
	case VL_FEATURE(VL_F_NET_GUEST_TSO6): return "GUEST_TSO6";
	case VL_FEATURE(VL_F_NET_HOST_TSO4): return "HOST_TSO4";
	case VL_FEATURE(VL_F_NET_HOST_TSO6): return "HOST_TSO6";
	case VL_FEATURE(VL_F_NET_GUEST_USO4): return "GUEST_USO4";
	case VL_FEATURE(VL_F_NET_GUEST_USO6): return "GUEST_USO6";
	case VL_FEATURE(VL_F_NET_HOST_USO): return "HOST_USO";
	default: return "a feature";
	}
}

/* n/a before connecting: the layout or a feature the case needs is not offered or was
 * narrowed away, or it needs an echoing back end. */
static bool not_applicable(const struct probe_opts *o, const struct probe_report *rep,
			   const struct probe_case *c, enum vl_layout layout, char *why,
			   size_t len)
{
	uint64_t usable = rep->offered & o->mask;
	uint64_t needs = c->needs;

	if (layout == VL_LAYOUT_PACKED)
		needs |= VL_FEATURE(VL_F_RING_PACKED);
	for (unsigned b = 0; b < 64; b++) {
		if ((needs & VL_FEATURE(b)) && !(usable & VL_FEATURE(b))) {
			snprintf(why, len, "%s (bit %u) %s", feature_name(VL_FEATURE(b)), b,
				 rep->offered & VL_FEATURE(b) ? "left out by --features" :
								"not offered");
			return true;
		}
	}
	if (c->needs_echo == 1 && !probe_expect_returns(o->expect)) {
		snprintf(why, len, "needs a back end that echoes (--expect echo or macswap)");
		return true;
	}
	if (c->needs_echo == PROBE_NEEDS_SOURCE && o->expect != PROBE_EXPECT_SOURCE) {
		snprintf(why, len, "needs a back end that sends frames of its own (--expect "
			 "source)");
		return true;
	}
	return false;
}

/* probe_ctx.fresh: a new connection in place of the case's, asked GET_FEATURES. */
static enum lab_fe_rc fresh(struct probe_ctx *x)
{
	char err[256];

	if (x->s.c.sock >= 0)
		close(x->s.c.sock);
	x->s.c.sock = reach(x->run_opts, x->listen_fd, err, sizeof(err));
	if (x->s.c.sock < 0) {
		snprintf(x->s.c.what, sizeof(x->s.c.what), "back end unreachable: %s", err);
		return LAB_FE_CLOSED;
	}
	/* A back end may still be tearing the last connection down (DPDK destroys the device
	 * first): three timeouts before the silence counts as a wedge. */
	uint64_t f;
	int t = x->s.c.timeout_ms;

	x->s.c.timeout_ms = 3 * t;
	enum lab_fe_rc rc = lab_fe_get_u64(&x->s, LAB_FE_GET_FEATURES, &f);

	x->s.c.timeout_ms = t;
	return rc;
}

/* Is id one of the comma-separated ids of `only` (NULL: every id)? */
static bool selected(const char *only, const char *id)
{
	size_t n = strlen(id);

	for (const char *p = only; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, id, n) && (p[n] == ',' || p[n] == '\0'))
			return true;
	return !only;
}

static void run_case(const struct probe_opts *o, int listen_fd, const struct probe_case *c,
		     enum vl_layout layout, struct probe_result *r)
{
	struct probe_ctx x;
	char err[256];
	int sock = reach(o, listen_fd, err, sizeof(err));

	memset(&x, 0, sizeof(x));
	if (sock < 0) {
		r->verdict = PROBE_CRASH;
		snprintf(r->detail, sizeof(r->detail), "back end unreachable: %s", err);
		return;
	}
	if (lab_fe_session_init(&x.s, sock, layout, o->timeout_ms, err, sizeof(err)) != 0) {
		close(sock);
		r->verdict = PROBE_FAIL;
		snprintf(r->detail, sizeof(r->detail), "probe: %s", err);
		return;
	}
	if (o->record_dir && !(x.s.rec = lab_fe_rec_create()))
		snprintf(r->trace_note, sizeof(r->trace_note), "out of memory for the recorder");
	x.expect = o->expect;
	x.mask = o->mask & ~c->drops;
	x.arg = c->arg;
	x.fresh = fresh;
	x.run_opts = o;
	x.listen_fd = listen_fd;
	enum probe_verdict v = PROBE_PASS;

	if (c->bring_up) {
		uint32_t size = c->queue_size ? c->queue_size : PROBE_QUEUE_SIZE;
		/* Start near the end of the index space, so the 16-bit index (split) and the
		 * wrap counter (packed) turn over inside the case. */
		uint16_t start = layout == VL_LAYOUT_SPLIT ? 65531 : (uint16_t)(size - 2);
		enum lab_fe_rc rc = lab_fe_bring_up(&x.s, x.mask, size, start);

		if (rc != LAB_FE_OK)
			v = probe_from_rc(&x, rc);
	}
	if (v == PROBE_PASS)
		v = c->run(&x);
	r->verdict = v;
	memcpy(r->detail, x.detail, sizeof(r->detail));
	if (x.s.rec) {
		bool failed = v == PROBE_FAIL || v == PROBE_WEDGE || v == PROBE_CRASH;

		snprintf(r->trace, sizeof(r->trace), "%s/%s-%s.trace", o->record_dir, c->id,
			 layout == VL_LAYOUT_PACKED ? "packed" : "split");
		if (!lab_fe_rec_finish(&x.s, failed, r->trace, r->trace_note,
				       sizeof(r->trace_note)))
			r->trace[0] = '\0';
		lab_fe_rec_destroy(x.s.rec);
		x.s.rec = NULL;
	}
	lab_fe_session_fini(&x.s);
}

/* The first session: what the back end offers. */
static int learn(const struct probe_opts *o, int listen_fd, struct probe_report *rep)
{
	struct lab_fe_session s;
	char err[256];
	int sock = reach(o, listen_fd, err, sizeof(err));

	if (sock < 0 || lab_fe_session_init(&s, sock, VL_LAYOUT_SPLIT, o->timeout_ms, err,
					    sizeof(err)) != 0) {
		if (sock >= 0)
			close(sock);
		snprintf(rep->err, sizeof(rep->err), "%s", err);
		return -1;
	}
	enum lab_fe_rc rc = lab_fe_get_u64(&s, LAB_FE_GET_FEATURES, &rep->offered);

	if (rc == LAB_FE_OK && (rep->offered & VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES)))
		rc = lab_fe_get_u64(&s, LAB_FE_GET_PROTOCOL_FEATURES, &rep->proto_offered);
	if (rc != LAB_FE_OK)
		snprintf(rep->err, sizeof(rep->err), "%s: %s", lab_fe_rc_name(rc), s.c.what);
	lab_fe_session_fini(&s);
	return rc == LAB_FE_OK ? 0 : -1;
}

int probe_run(const struct probe_opts *o, struct probe_report *rep)
{
	int listen_fd = -1;

	memset(rep, 0, sizeof(*rep));
	if (o->server) {
		listen_fd = lab_fe_listen(o->socket, rep->err, sizeof(rep->err));
		if (listen_fd < 0)
			return -1;
	}
	/* A back end whose features could not be learnt still gets the cases that need no
	 * feature: each meets the misbehaviour again and gives it a verdict with evidence. */
	int ret = learn(o, listen_fd, rep);

	rep->results = calloc(2 * probe_ncases, sizeof(*rep->results));
	if (!rep->results) {
		snprintf(rep->err, sizeof(rep->err), "out of memory");
		ret = -1;
	}
	static const enum vl_layout layouts[] = {VL_LAYOUT_SPLIT, VL_LAYOUT_PACKED};

	for (unsigned l = 0; l < 2 && rep->results; l++) {
		for (unsigned i = 0; i < probe_ncases; i++) {
			const struct probe_case *c = &probe_cases[i];
			unsigned lbit = l == 0 ? PROBE_SPLIT : PROBE_PACKED;
			unsigned sbit = !strcmp(c->suite, "traffic")   ? PROBE_SUITE_TRAFFIC :
					!strcmp(c->suite, "hostile") ? PROBE_SUITE_HOSTILE :
								       PROBE_SUITE_CONFORMANCE;
			struct probe_result *r = &rep->results[rep->n];

			unsigned first = o->layouts & PROBE_SPLIT ? PROBE_SPLIT : PROBE_PACKED;
			bool here = c->layouts & PROBE_ANY ? lbit == first : (c->layouts & lbit);

			if (!here || !(o->layouts & lbit) || !(o->suites & sbit) ||
			    !selected(o->only, c->id))
				continue;
			rep->n++;
			r->c = c;
			r->layout = layouts[l];
			if (not_applicable(o, rep, c, layouts[l], r->detail, sizeof(r->detail)))
				r->verdict = PROBE_NA;
			else
				run_case(o, listen_fd, c, layouts[l], r);
		}
	}
	if (listen_fd >= 0) {
		close(listen_fd);
		unlink(o->socket);
	}
	return ret;
}

void probe_report_free(struct probe_report *rep)
{
	free(rep->results);
	rep->results = NULL;
}

/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: one vhost-user device -- its socket (listening, or connecting with
 * back-off), its messages, and what the protocol layer tells it through the callbacks. */
#include <inttypes.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"

/* Packet buffers are cut into segments of this size (a jumbo frame takes several). */
#define SERVE_SEG_SIZE 2048u
/* Segments of the largest packet the core moves (VL_PKT_MAX_LEN). */
#define SERVE_MAX_PKT_SEGS ((VL_PKT_MAX_LEN + SERVE_SEG_SIZE - 1) / SERVE_SEG_SIZE)
/* Client mode: first retry after this, doubling up to the cap. Short enough that a test
 * restarting its front end does not wait, long enough not to spin on a missing socket. */
#define SERVE_BACKOFF_MIN 0.02
/* Connections in a row that end before any ring ran, each told in full; after that one
 * summary a second (struct serve_port, early_closes). */
#define SERVE_EARLY_TOLD 3u
#define SERVE_EARLY_SUMMARY_SECS 1.0
#define SERVE_BACKOFF_MAX 0.5

/* Buffers a device's pool needs: per pair, a burst being received plus a burst waiting for
 * room (each packet up to the largest size), and txonly's frames. Capped so 128 queue
 * pairs do not reserve gigabytes of address space; a pool that runs short only slows a
 * burst down (the core leaves the chain in the ring for the next one). */
static uint32_t pool_count(const struct serve_opts *o, uint32_t pairs)
{
	uint64_t gen_segs = (o->size + SERVE_SEG_SIZE - 1) / SERVE_SEG_SIZE;
	/* ... and the frames the software fallback makes of one packet (serve_fit.c): at most
	 * SERVE_FIT_MAX of them, holding one packet's bytes plus a header each. */
	uint64_t per_pair = 2ull * o->burst * (SERVE_MAX_PKT_SEGS + 1) + SERVE_FIT_MAX +
			    SERVE_MAX_PKT_SEGS;

	if (o->mode == SERVE_TXONLY)
		per_pair += o->burst * gen_segs;
	uint64_t n = per_pair * pairs + 64;

	return n > (1u << 18) ? (1u << 18) : (uint32_t)n;
}

static void on_queue_ready(struct vl_vu_dev *dev, void *opaque, uint32_t qidx, bool ready)
{
	struct serve_port *p = opaque;
	struct serve *s = p->s;
	uint32_t pair = qidx / 2, ring = qidx % 2;

	if (pair >= s->o.queues)
		return;
	struct serve_pair *sp = &p->pairs[pair];

	if (!ready) {
		if (!sp->vq[ring])
			return;
		if (ring == SERVE_RING_TX) {
			/* The queue is destroyed after this returns: count what it dropped, and
			 * no zero-copy packet of it may outlive it. */
			serve_stats_fold(p, pair);
			serve_fwd_unshare(s, p, pair, false);
		} else {
			serve_stats_fold_bursts(p, pair, ring);
		}
		sp->vq[ring] = NULL;
		p->rings_ready--;
		return;
	}
	struct vl_vq *vq = vl_vu_dev_queue(dev, qidx);

	if (!vq || sp->vq[ring])
		return;
	sp->vq[ring] = vq;
	sp->broken_told[ring] = false;
	uint64_t resyncs = vl_vu_dev_ring_resyncs(dev, qidx);

	if (resyncs != sp->resyncs_told[ring]) {
		sp->resyncs_told[ring] = resyncs;
		serve_event(s, "resync", p,
			    "queue pair %u %s ring resumes at the guest's used index %u, not at "
			    "the base it was given (a front end that outlived its back end)",
			    qidx / 2, ring == SERVE_RING_RX ? "RX" : "TX",
			    (unsigned)vl_vq_last_avail(vq));
	}
	/* Inflight tracking (INFLIGHT_SHMFD): chains a serve before this one had taken and not
	 * returned, which this queue takes first. */
	uint32_t resubmitted = vl_vu_dev_ring_resubmitted(dev, qidx);

	if (resubmitted)
		serve_event(s, "resubmit", p,
			    "queue pair %u %s ring takes again %u chains a back end before this one "
			    "had taken and not returned (the front end's inflight area)",
			    qidx / 2, ring == SERVE_RING_RX ? "RX" : "TX", (unsigned)resubmitted);
	/* A queue may come back with its counters: fold only what it does from now on. */
	sp->folded_bursts[ring] = vl_vq_stats(vq)->bursts;
	sp->folded_idle[ring] = vl_vq_stats(vq)->empty_bursts;
	memcpy(sp->folded_bins[ring], vl_vq_stats(vq)->size_bins, sizeof(sp->folded_bins[ring]));
	if (ring == SERVE_RING_RX)
		sp->folded_kept = vl_vq_stats(vq)->rx_hdrs_kept;
	if (ring == SERVE_RING_TX) {
		/* A queue may come back (enable 0/1 around a new memory table) with counters it
		 * already had: count only what it drops from now on. */
		sp->folded_drops = serve_stats_core_drops(vq);
		sp->folded_zc = vl_vq_stats(vq)->zc_packets;
		memcpy(sp->folded_zcf, vl_vq_stats(vq)->zc_fallbacks, sizeof(sp->folded_zcf));
		sp->folded_wr = vl_vq_stats(vq)->tx_write_ignored;
		sp->folded_evicted = vl_vq_stats(vq)->lines_evicted;
		sp->folded_prefetched = serve_stats_core_prefetches(vq);
		sp->folded_line_waits = vl_vq_stats(vq)->tx_line_waits;
		if (s->o.zero_copy)
			vl_vq_set_zero_copy(vq, true, SERVE_ZC_MIN_LEN, vl_vq_size(vq));
		vl_vq_set_tx_line_wait(vq, !s->o.line_wait_off);
		serve_evict_start(s, p, pair, serve_now());
	}
	/* Busy polling reads the rings anyway: tell the guest it need not kick. Otherwise
	 * kicks are wanted until the loop finds the ring busy (serve_loop.c). A queue that
	 * comes back keeps what it was told, so say it again. */
	vl_vq_set_kicks(vq, !s->o.busy_poll);
	sp->kicks_off[ring] = s->o.busy_poll;
	/* The kernel may hand over what this guest takes: checked on every ring that comes
	 * up, since a guest that negotiates again (a driver reload) keeps its connection. */
	if (s->o.mode == SERVE_TAP)
		serve_tap_offloads(s, vl_vu_dev_features(dev));
	serve_rec_ring_ready(p, qidx, vq);
	/* Announced once per connection: rings also stop and start inside one (virtio-user
	 * disables them around every new memory table). */
	if (p->rings_ready++ == 0 && !p->running_told) {
		uint64_t f = vl_vu_dev_features(dev);
		char offloads[160];

		/* Its connected event was held back among early closes: tell it now. */
		if (p->early_closes >= SERVE_EARLY_TOLD)
			serve_event(s, "connected", p, "front end connected (connection %llu, "
				    "after %llu in a row that closed before any ring ran)",
				    (unsigned long long)p->connections,
				    (unsigned long long)p->early_closes);
		p->early_closes = 0;
		p->early_untold = 0;

		p->running_told = true;
		p->features = f;
		serve_features_offload_names(f, offloads, sizeof(offloads));
		serve_event(s, "running", p,
			    "features 0x%llx: %s ring, mergeable %s, in-order %s, event idx %s, "
			    "indirect %s, offloads %s",
			    (unsigned long long)f,
			    (f & VL_FEATURE(VL_F_RING_PACKED)) ? "packed" : "split",
			    (f & VL_FEATURE(VL_F_NET_MRG_RXBUF)) ? "on" : "off",
			    (f & VL_FEATURE(VL_F_IN_ORDER)) ? "on" : "off",
			    (f & VL_FEATURE(VL_F_RING_EVENT_IDX)) ? "on" : "off",
			    (f & VL_FEATURE(VL_F_RING_INDIRECT_DESC)) ? "on" : "off", offloads);
	}
}

/* The virtio status byte the front end wrote (SET_STATUS): the driver's progress, and a
 * reset when it goes to 0 (a guest unloading its driver). */
static void on_status_changed(struct vl_vu_dev *dev, void *opaque, uint8_t status)
{
	struct serve_port *p = opaque;

	(void)dev;
	if (status == 0) {
		serve_event(p->s, "status", p, "status 0x00: the driver reset the device");
		return;
	}
	serve_event(p->s, "status", p, "status 0x%02x:%s%s%s%s%s%s", status,
		    (status & 0x01) ? " acknowledge" : "", (status & 0x02) ? " driver" : "",
		    (status & 0x08) ? " features_ok" : "", (status & 0x04) ? " driver_ok" : "",
		    (status & 0x40) ? " needs_reset" : "", (status & 0x80) ? " failed" : "");
}

static void on_announce(struct vl_vu_dev *dev, void *opaque, const uint8_t mac[6])
{
	(void)dev;
	serve_announce(opaque, mac);
}

static void on_mem_changed(struct vl_vu_dev *dev, void *opaque)
{
	struct serve_port *p = opaque;

	/* The old mappings go right after this: zero-copy packets still waiting for room
	 * point into them. */
	serve_fwd_unshare(p->s, p, 0, true);
	serve_rec_mem_changed(p);

	/* Every table change is announced (SET_MEM_TABLE, each ADD_MEM_REG / REM_MEM_REG of a
	 * hot-plug): what an operator checks after plugging a DIMM. */
	const struct vl_mem *mem = vl_vu_dev_mem(dev);
	const uint32_t n = mem ? vl_mem_table_size(mem) : 0;
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct vl_mem_region r;

		if (vl_mem_table_region(mem, i, &r) == VL_OK)
			bytes += r.size;
	}
	serve_event(p->s, "memory", p, "memory table: %" PRIu32 " region%s, %" PRIu64 " MiB",
		    n, n == 1 ? "" : "s", bytes >> 20);
}

int serve_port_open(struct serve *s, struct serve_port *p, uint32_t index, const char *path)
{
	const struct serve_opts *o = &s->o;
	struct vl_vu_config cfg;
	int err;

	*p = (struct serve_port){.s = s, .index = index, .path = path, .listen_fd = -1,
				 .conn_fd = -1, .backoff = SERVE_BACKOFF_MIN};
	vl_vu_config_init(&cfg);
	cfg.features = o->features;
	cfg.max_queue_pairs = o->queues;
	cfg.batch_threshold = o->batch_threshold;
	cfg.cb.queue_ready = on_queue_ready;
	cfg.cb.mem_changed = on_mem_changed;
	cfg.cb.status_changed = on_status_changed;
	cfg.cb.announce = on_announce;
	cfg.opaque = p;

	p->pairs = calloc(o->queues, sizeof(*p->pairs));
	p->dev = vl_vu_dev_create(&cfg, &err);
	p->pool = vl_pool_create(pool_count(o, o->queues), SERVE_SEG_SIZE);
	bool pools = p->pool != NULL;

	/* --threads: each pair its own pool (pools are not thread-safe; a pair has one
	 * owner, and its packets are freed by it), else all share the port's. */
	for (uint32_t q = 0; p->pairs && pools && q < o->queues; q++) {
		p->pairs[q].pool = o->threads ? vl_pool_create(pool_count(o, 1), SERVE_SEG_SIZE)
					      : p->pool;
		pools = p->pairs[q].pool != NULL;
	}
	if (!p->pairs || !p->dev || !pools) {
		serve_event(s, "error", p, "cannot create the device: %s",
			    !p->dev ? vl_strerror(err) : "out of memory");
		return -1;
	}
	if (o->mode == SERVE_TXONLY) {
		for (uint32_t q = 0; q < o->queues; q++) {
			if (!serve_gen_init(p, q, o->size, o->burst)) {
				serve_event(s, "error", p, "cannot build %u frames of %u bytes",
					    o->burst, o->size);
				return -1;
			}
		}
	}
	if (o->client)
		return 0;
	p->listen_fd = vl_vu_listen(path);
	if (p->listen_fd < 0) {
		serve_event(s, "error", p, "cannot listen on '%s': %s", path, strerror(errno));
		return -1;
	}
	p->own_socket = true;
	serve_event(s, "listening", p, "waiting for a front end");
	return 0;
}

bool serve_port_connected(const struct serve_port *p)
{
	return p->conn_fd >= 0;
}

bool serve_port_owns_pool(const struct serve_port *p, const struct vl_pool *pool)
{
	if (pool == p->pool)
		return true;
	for (uint32_t q = 0; p->pairs && q < p->s->o.queues; q++)
		if (pool == p->pairs[q].pool)
			return true;
	return false;
}

uint32_t serve_port_close(struct serve_port *p)
{
	uint32_t leaked = 0;

	if (!p->s)
		return 0; /* never opened */
	if (p->dev)
		vl_vu_dev_destroy(p->dev); /* stops the rings: queue_ready(false) for each */
	p->dev = NULL;
	if (p->conn_fd >= 0)
		close(p->conn_fd);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	p->conn_fd = p->listen_fd = -1;
	if (p->own_socket)
		unlink(p->path);
	if (p->pairs) {
		for (uint32_t q = 0; q < p->s->o.queues; q++) {
			serve_gen_free(p, q);
			if (p->pairs[q].pool && p->pairs[q].pool != p->pool)
				leaked += vl_pool_destroy(p->pairs[q].pool);
			p->pairs[q].pool = NULL;
		}
	}
	if (p->pool)
		leaked += vl_pool_destroy(p->pool);
	p->pool = NULL;
	return leaked;
}

void serve_port_free(struct serve_port *p)
{
	free(p->pairs);
	p->pairs = NULL;
}

static void connected(struct serve_port *p, int fd)
{
	p->conn_fd = fd;
	p->running_told = false;
	p->connections++;
	p->waiting_told = false;
	if (p->early_closes < SERVE_EARLY_TOLD)
		serve_event(p->s, "connected", p, "front end connected (connection %llu)",
			    (unsigned long long)p->connections);
}

/* The connection is gone (the device already forgot it). */
static void disconnected(struct serve_port *p, int rc)
{
	uint32_t last = vl_vu_dev_last_request(p->dev);

	close(p->conn_fd);
	p->conn_fd = -1;
	p->disconnects++;
	serve_rec_disconnected(p);
	serve_fwd_disconnected(p->s, p);
	/* Nobody to take offloaded frames: the kernel completes them until the next guest. */
	if (p->s->o.mode == SERVE_TAP)
		serve_tap_offloads(p->s, 0);
	/* The device's per-ring counts start again with the next connection. */
	for (uint32_t q = 0; q < p->s->o.queues; q++)
		memset(p->pairs[q].resyncs_told, 0, sizeof(p->pairs[q].resyncs_told));
	/* Before any ring ran: the front end gave up during negotiation, usually because it
	 * refuses something serve offers (and QEMU then says what on its side). */
	const bool early = !p->running_told;
	const double now = serve_now();

	if (!early) {
		p->early_closes = 0;
		p->early_untold = 0;
		serve_event(p->s, "disconnected", p, "%s (last request %s)", vl_strerror(rc),
			    vl_vu_request_name(last));
	} else if (++p->early_closes <= SERVE_EARLY_TOLD) {
		serve_event(p->s, "disconnected", p, "%s before any ring ran (last request %s)",
			    vl_strerror(rc), vl_vu_request_name(last));
		p->early_told_at = now;
	} else if (++p->early_untold, now - p->early_told_at >= SERVE_EARLY_SUMMARY_SECS) {
		serve_event(p->s, "disconnected", p,
			    "the front end keeps closing its connection before any ring runs: "
			    "%llu more times (%llu in a row; last request %s, %s); told once a "
			    "second", (unsigned long long)p->early_untold,
			    (unsigned long long)p->early_closes, vl_vu_request_name(last),
			    vl_strerror(rc));
		p->early_untold = 0;
		p->early_told_at = now;
	}
	/* A client retries soon: a front end that restarts comes back within moments. */
	p->backoff = SERVE_BACKOFF_MIN;
	p->next_connect = serve_now() + p->backoff;
}

void serve_port_tick(struct serve_port *p, double now)
{
	if (!p->s->o.client || p->conn_fd >= 0 || now < p->next_connect)
		return;
	int fd = vl_vu_connect(p->path);

	if (fd >= 0) {
		connected(p, fd);
		p->backoff = SERVE_BACKOFF_MIN;
		return;
	}
	if (!p->waiting_told) {
		serve_event(p->s, "waiting", p, "cannot connect yet (%s); retrying", strerror(errno));
		p->waiting_told = true;
	}
	p->next_connect = now + p->backoff;
	p->backoff = p->backoff * 2 > SERVE_BACKOFF_MAX ? SERVE_BACKOFF_MAX : p->backoff * 2;
}

double serve_port_wait(const struct serve_port *p, double now)
{
	if (!p->s->o.client || p->conn_fd >= 0)
		return 1e9;
	return p->next_connect > now ? p->next_connect - now : 0;
}

/* Has the front end of fd hung up (its remaining bytes may still wait to be read)? */
static bool peer_hung_up(int fd)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN | POLLRDHUP};

	return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

/* Messages read from a front end that hung up before its successor is let in: at most this
 * many (then the successor is refused as any second front end would be). */
#define SERVE_DRAIN_MAX 4096u

void serve_port_accept(struct serve_port *p)
{
	int fd = vl_vu_accept(p->listen_fd);

	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			serve_event(p->s, "error", p, "accept: %s", strerror(errno));
		return;
	}
	/* The front end before may have hung up in the same poll round as this one connected
	 * (a front end that reconnects at once; the probe's fresh connection after a case):
	 * finish the old connection first -- what it sent, then its end -- rather than refuse
	 * its successor. Accepting comes before messages in a round (serve_loop.c). */
	for (uint32_t i = 0; i < SERVE_DRAIN_MAX && p->conn_fd >= 0 && peer_hung_up(p->conn_fd);
	     i++)
		serve_port_message(p);
	if (p->conn_fd >= 0) {
		/* One front end per device: a second one is told so by the closed socket
		 * rather than left waiting in the backlog. */
		close(fd);
		const double now = serve_now();

		if (++p->refusals <= SERVE_EARLY_TOLD) {
			serve_event(p->s, "refused", p, "a second front end connected: closed it");
			p->refused_told_at = now;
		} else if (++p->refused_untold, now - p->refused_told_at >= SERVE_EARLY_SUMMARY_SECS) {
			serve_event(p->s, "refused", p, "%llu more front ends connected while one "
				    "was connected: closed them (%llu in all); told once a second",
				    (unsigned long long)p->refused_untold,
				    (unsigned long long)p->refusals);
			p->refused_untold = 0;
			p->refused_told_at = now;
		}
		return;
	}
	connected(p, fd);
}

void serve_port_message(struct serve_port *p)
{
	int rc = vl_vu_dev_handle(p->dev, p->conn_fd);

	if (rc == VL_ERR_VU_AGAIN)
		return;
	if (vl_vu_err_fatal(rc)) {
		disconnected(p, rc);
		return;
	}
	p->messages++;
	if (rc != VL_OK) {
		p->rejected++;
		serve_event(p->s, "rejected", p, "%s: %s",
			    vl_vu_request_name(vl_vu_dev_last_request(p->dev)), vl_strerror(rc));
	}
}

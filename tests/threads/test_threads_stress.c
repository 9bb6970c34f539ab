/* SPDX-License-Identifier: MIT */
/* Queues over threads under fire (vl_vq.h, "Queues over threads"; the tsan part of ./lab
 * test runs it under ThreadSanitizer). One vhost-user device with two queue pairs; each
 * worker thread owns one pair and plays both of its sides in turn: the guest (posting
 * transmit packets and receive buffers, checking every byte that comes back) and the back end
 * (dequeue from the pair's TX ring, enqueue into its RX ring: loopback). Meanwhile the main
 * thread, the control thread, sends the front end's control messages the way they reach a
 * running device: new memory tables, rings stopped with GET_VRING_BASE and restarted,
 * SET_VRING_ENABLE 0 / 1, a dirty log started and stopped, SET_STATUS 0 (every ring stopped
 * where it is, then restarted from GET_VRING_BASE with DRIVER_OK) and RESET_DEVICE (every
 * ring forgotten: the guest sets its rings up anew, and what was in flight is given up,
 * the one place the byte oracle's count starts over). Before each message it pauses
 * every worker at a burst boundary (vl_vq_gate_pause), lets the device handle it, and
 * resumes them; the workers fetch their queues again after a pause.
 *
 * Oracles, per pair: every packet the guest sent comes back once, in order, with its length
 * and every byte (vuf_check); while the log is on, the page of every receive buffer filled
 * and of the used ring is marked; nothing the core counts as dropped; and at the end, after
 * the workers are joined, what is still in flight is drained and must arrive too.
 *
 * VL_STRESS_SECONDS (default 4) sets each layout's run; the tsan part sets more. */
#define _GNU_SOURCE /* memfd_create, eventfd */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vu_fixture.h"

#define F(bit) VL_FEATURE(bit)
#define FEATURES (F(VL_F_VERSION_1) | F(VL_F_NET_MQ) | F(VL_VU_F_PROTOCOL_FEATURES))
#define PAIRS 2u
#define QSIZE 128u
#define BURST 32u
#define LOG_BYTES 4096u          /* one bit per 4 KiB page: 128 MiB of guest, more than needed */
#define MIN_LEN 60u
#define LEN_SPREAD 1400u

/* The length of the packet with sequence number seq (also its fill seed). */
static uint32_t pkt_len(uint32_t seq)
{
	return MIN_LEN + (seq * 2654435761u) % LEN_SPREAD;
}

struct worker {
	struct vuf *f;
	uint32_t pair;
	pthread_t thread;
	struct vl_vq_gate *gate;
	struct vl_pool *pool;
	/* Written by the control thread only while this worker is paused (the gate orders
	 * it): whether the log is on, and where the bitmap is. */
	bool log_on;
	const uint8_t *log;
	/* The worker's own. */
	struct vl_vq *rx, *tx;           /* fetched again after every pause */
	struct vl_pkt *pend[BURST];      /* dequeued, waiting for RX room (in order) */
	uint32_t npend;
	uint32_t seq_sent, seq_recv;     /* guest side: next to post / next expected */
	uint64_t pauses, bursts, log_checked;
	char err[256];
};

static atomic_bool stop_workers;
static atomic_bool failed;

__attribute__((format(printf, 2, 3))) static void wfail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	if (w->err[0] == 0) {
		va_start(ap, fmt);
		vsnprintf(w->err, sizeof(w->err), fmt, ap);
		va_end(ap);
	}
	atomic_store(&failed, true);
}

static bool page_marked(const uint8_t *bm, uint64_t gpa)
{
	uint64_t page = gpa / 4096;

	return (__atomic_load_n(&bm[page / 8], __ATOMIC_RELAXED) >> (page % 8)) & 1;
}

static void fetch_queues(struct worker *w)
{
	w->rx = vl_vu_dev_queue(w->f->dev, 2 * w->pair);
	w->tx = vl_vu_dev_queue(w->f->dev, 2 * w->pair + 1);
}

/* The guest: keep the TX ring fed and the RX ring full of buffers. */
static void guest_post(struct worker *w)
{
	uint32_t rxq = 2 * w->pair, txq = rxq + 1;

	for (uint32_t i = 0; i < BURST; i++) {
		if (vuf_post_tx(w->f, txq, pkt_len(w->seq_sent), w->seq_sent) < 0)
			break;
		w->seq_sent++;
	}
	while (vuf_post_rx(w->f, rxq, VUF_BUF_SIZE) >= 0)
		;
}

/* The guest: take back transmitted buffers; check each received one against the next
 * sequence number. */
static void guest_harvest(struct worker *w)
{
	uint32_t rxq = 2 * w->pair, txq = rxq + 1, id, len;

	while (vuf_pop_used(w->f, txq, &id, &len))
		;
	while (vuf_pop_used(w->f, rxq, &id, &len)) {
		uint32_t want = pkt_len(w->seq_recv);
		const struct vuf_ring *r = &w->f->ring[rxq];

		if (len != VUF_HDR_LEN + want)
			return wfail(w, "pair %u: packet %u came back with %u bytes, sent %u",
				     w->pair, w->seq_recv, len, VUF_HDR_LEN + want);
		if (!vuf_check(vuf_buf(w->f, rxq, id) + VUF_HDR_LEN, want, w->seq_recv))
			return wfail(w, "pair %u: packet %u came back with other bytes", w->pair,
				     w->seq_recv);
		if (w->log_on) {
			/* The buffer, and where the used entry went: split, the used ring;
			 * packed, the descriptor ring itself. */
			uint64_t gpa = r->buf_gpa + (uint64_t)id * VUF_BUF_SIZE;
			uint64_t used = r->layout == VL_LAYOUT_PACKED ? r->desc_gpa : r->device_gpa;

			if (!page_marked(w->log, gpa))
				return wfail(w, "pair %u: packet %u written with the log on, its "
					     "buffer's page (gpa 0x%llx) not marked", w->pair,
					     w->seq_recv, (unsigned long long)gpa);
			if (!page_marked(w->log, used))
				return wfail(w, "pair %u: packet %u returned with the log on, the "
					     "used entry's page (gpa 0x%llx) not marked", w->pair,
					     w->seq_recv, (unsigned long long)used);
			w->log_checked++;
		}
		w->seq_recv++;
	}
}

/* The back end: loopback on the pair, in order; what the RX ring has no room for waits. */
static void device_burst(struct worker *w)
{
	if (w->tx && w->npend == 0) {
		w->npend = vl_net_dequeue(w->tx, w->pool, w->pend, BURST);
		w->bursts++;
	}
	if (w->rx && w->npend) {
		uint8_t st[BURST];
		uint16_t done = vl_net_enqueue(w->rx, w->pend, (uint16_t)w->npend, st);

		for (uint16_t i = 0; i < done; i++)
			if (st[i] != VL_RX_DELIVERED)
				wfail(w, "pair %u: enqueue refused a packet (status %u)", w->pair,
				      st[i]);
		vl_pkt_free_bulk(w->pend, done);
		memmove(w->pend, w->pend + done, (w->npend - done) * sizeof(w->pend[0]));
		w->npend -= done;
	}
}

static void round_trip(struct worker *w)
{
	guest_post(w);
	device_burst(w);
	guest_harvest(w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	fetch_queues(w);
	while (!atomic_load_explicit(&stop_workers, memory_order_acquire) &&
	       !atomic_load_explicit(&failed, memory_order_relaxed)) {
		round_trip(w);
		/* The burst boundary: the only place the control thread may come in. */
		if (vl_vq_gate_poll(w->gate)) {
			w->pauses++;
			fetch_queues(w);
		}
	}
	vl_vq_gate_leave(w->gate);
	return NULL;
}

/* ---- the control thread's messages ------------------------------------------------------ */

enum op { OP_MEM_TABLE, OP_RING, OP_ENABLE, OP_LOG, OP_STATUS, OP_RESET, OP__COUNT };

static const char *const op_names[OP__COUNT] = {
	"table swaps", "ring stops/starts", "enable toggles", "log toggles",
	"status 0 / restarts", "device resets",
};

struct control {
	struct vuf *f;
	struct worker w[PAIRS];
	uint32_t pause_no[PAIRS];
	int log_fd;
	uint8_t *log;                    /* the control thread's view of the log */
	bool log_on;
	bool stopped[2 * PAIRS];         /* ring stopped by GET_VRING_BASE */
	bool disabled[2 * PAIRS];        /* ring disabled by SET_VRING_ENABLE 0 */
	uint16_t base[2 * PAIRS];
	uint32_t base_hi[2 * PAIRS];
	uint64_t features;               /* negotiated at the start (LOG_ALL toggled) */
	enum vl_layout layout;
	bool status_off;                 /* SET_STATUS 0 sent, rings not restarted yet */
	uint64_t ops[OP__COUNT];
};

static void pause_all(struct control *c)
{
	/* Ask every owner first, then wait: they stop in parallel. */
	for (uint32_t i = 0; i < PAIRS; i++)
		c->pause_no[i] = vl_vq_gate_request(c->w[i].gate);
	for (uint32_t i = 0; i < PAIRS; i++)
		vl_vq_gate_wait(c->w[i].gate, c->pause_no[i]);
}

static void resume_all(struct control *c)
{
	for (uint32_t i = 0; i < PAIRS; i++)
		vl_vq_gate_resume(c->w[i].gate, c->pause_no[i]);
}

/* SET_MEM_TABLE: one region, or two cut at a place that splits no ring and no buffer. */
static void op_mem_table(struct control *c, uint32_t k)
{
	struct vuf_region r[2];
	uint32_t n = 1;
	const uint64_t cut = 2ull << 20;

	if (k % 2) {
		r[0] = vuf_region(c->f, 0, cut);
		r[1] = vuf_region(c->f, cut, VUF_MEM_SIZE - cut);
		n = 2;
	} else {
		r[0] = vuf_region(c->f, 0, VUF_MEM_SIZE);
	}
	assert_int_equal(vuf_mem_table(c->f, r, n), VL_OK);
}

/* Ring q restarts where it stopped: NUM, BASE, ADDR, a new KICK, ENABLE; its queue is back
 * at once unless the status still waits for DRIVER_OK (expect_ready false). */
static void ring_restart(struct control *c, uint32_t q, bool expect_ready);

/* GET_VRING_BASE stops a ring (its queue is destroyed); the next time, it restarts. One ring
 * at a time is stopped, so traffic keeps moving on most rings. */
static void op_ring(struct control *c, uint32_t k)
{
	struct vuf *f = c->f;

	for (uint32_t r = 0; r < 2 * PAIRS; r++) {
		if (c->stopped[r]) {
			ring_restart(c, r, true);
			return;
		}
	}
	uint32_t q = k % (2 * PAIRS);

	if (!c->disabled[q]) {
		uint32_t size;
		uint64_t v;

		assert_int_equal(vuf_state(f, VUF_GET_VRING_BASE, q, 0), VL_OK);
		v = vuf_reply(f, VUF_GET_VRING_BASE, &size);
		c->base[q] = (uint16_t)v;
		c->base_hi[q] = (uint32_t)v;
		assert_null(vl_vu_dev_queue(f->dev, q));
		c->stopped[q] = true;
	}
}

static void ring_restart(struct control *c, uint32_t q, bool expect_ready)
{
	struct vuf *f = c->f;
	uint64_t d, a, u;

	assert_int_equal(vuf_state(f, VUF_SET_VRING_NUM, q, f->ring[q].size), VL_OK);
	assert_int_equal(vuf_state(f, VUF_SET_VRING_BASE, q, c->base_hi[q]), VL_OK);
	vuf_ring_uaddrs(f, q, &d, &a, &u);
	assert_int_equal(vuf_addr(f, q, c->log_on ? 1 : 0, d, u, a,
				  c->log_on ? f->ring[q].device_gpa : 0), VL_OK);
	if (f->kick[q] >= 0)
		close(f->kick[q]);
	f->kick[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(f->kick[q] >= 0);
	assert_int_equal(vuf_ring_fd(f, VUF_SET_VRING_KICK, q, f->kick[q]), VL_OK);
	assert_int_equal(vuf_state(f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
	if (expect_ready)
		assert_non_null(vl_vu_dev_queue(f->dev, q));
	c->stopped[q] = false;
	c->disabled[q] = false;
}

static void set_enable(struct control *c, uint32_t q, bool on)
{
	c->disabled[q] = !on;
	assert_int_equal(vuf_state(c->f, VUF_SET_VRING_ENABLE, q, on ? 1 : 0), VL_OK);
	if (on)
		assert_non_null(vl_vu_dev_queue(c->f->dev, q));
	else
		assert_null(vl_vu_dev_queue(c->f->dev, q));
}

/* SET_VRING_ENABLE 0, and 1 the next time (DPDK brackets a table change with them); one
 * ring at a time. */
static void op_enable(struct control *c, uint32_t k)
{
	for (uint32_t r = 0; r < 2 * PAIRS; r++) {
		if (c->disabled[r]) {
			set_enable(c, r, true);
			return;
		}
	}
	uint32_t q = (k + 1) % (2 * PAIRS);

	if (!c->stopped[q])
		set_enable(c, q, false);
}

/* The dirty log: SET_LOG_BASE and LOG_ALL on (the bitmap cleared first, so a mark the
 * workers check was made after), or LOG_ALL off. The workers learn it during the pause. */
static void op_log(struct control *c)
{
	uint64_t feat = c->features;

	c->log_on = !c->log_on;
	if (c->log_on) {
		uint64_t p[2] = {LOG_BYTES, 0};
		uint32_t size;

		memset(c->log, 0, LOG_BYTES);
		assert_int_equal(vuf_msg(c->f, VUF_SET_LOG_BASE, VUF_F_VERSION, p, 16, &c->log_fd, 1),
				 VL_OK);
		vuf_reply(c->f, VUF_SET_LOG_BASE, &size);
		feat |= F(VL_VU_F_LOG_ALL);
	}
	assert_int_equal(vuf_u64(c->f, VUF_SET_FEATURES, feat), VL_OK);
	for (uint32_t i = 0; i < PAIRS; i++) {
		c->w[i].log_on = c->log_on;
		c->w[i].log = c->log;
	}
}

static void set_status(struct control *c, uint64_t status)
{
	assert_int_equal(vuf_msg(c->f, VUF_SET_STATUS, VUF_F_VERSION | VUF_F_NEED_REPLY, &status, 8,
				 NULL, 0), VL_OK);
	assert_int_equal(vuf_reply(c->f, VUF_SET_STATUS, NULL), 0);
}

/* Every ring running and enabled again (before a status 0 or a reset, so that each ring
 * is in the one state those start from). */
static void all_running(struct control *c)
{
	for (uint32_t q = 0; q < 2 * PAIRS; q++) {
		if (c->disabled[q])
			set_enable(c, q, true);
		if (c->stopped[q])
			ring_restart(c, q, true);
	}
}

/* SET_STATUS 0: every ring stops where it is (QEMU stopping the device); the next time,
 * GET_VRING_BASE of each and its restart from there, then DRIVER_OK starts them all. */
static void op_status(struct control *c)
{
	struct vuf *f = c->f;

	if (!c->status_off) {
		all_running(c);
		set_status(c, 0);
		for (uint32_t q = 0; q < 2 * PAIRS; q++)
			assert_null(vl_vu_dev_queue(f->dev, q));
		c->status_off = true;
		return;
	}
	for (uint32_t q = 0; q < 2 * PAIRS; q++) {
		uint32_t size;
		uint64_t v;

		assert_int_equal(vuf_state(f, VUF_GET_VRING_BASE, q, 0), VL_OK);
		v = vuf_reply(f, VUF_GET_VRING_BASE, &size);
		c->base_hi[q] = (uint32_t)v;
		ring_restart(c, q, false);
	}
	set_status(c, 0xf);
	for (uint32_t q = 0; q < 2 * PAIRS; q++)
		assert_non_null(vl_vu_dev_queue(f->dev, q));
	c->status_off = false;
}

/* RESET_DEVICE: the device forgets its rings and features (and the log). The guest sets its
 * rings up from scratch, as a driver reloading would; what was in flight is gone, so each
 * worker's guest expects the packets it sends from now on, and the back end's packets
 * waiting for room are freed (the workers are paused: their state is ours to change). */
static void op_reset(struct control *c)
{
	struct vuf *f = c->f;

	all_running(c);
	assert_int_equal(vuf_none(f, VUF_RESET_DEVICE), VL_OK);
	for (uint32_t q = 0; q < 2 * PAIRS; q++)
		assert_null(vl_vu_dev_queue(f->dev, q));
	assert_int_equal(vuf_u64(f, VUF_SET_FEATURES, c->features), VL_OK);
	c->log_on = false;
	for (uint32_t q = 0; q < 2 * PAIRS; q++) {
		vuf_ring_init(f, q, c->layout, QSIZE, false);
		vuf_ring_setup(f, q);
		assert_int_equal(vuf_state(f, VUF_SET_VRING_ENABLE, q, 1), VL_OK);
		assert_non_null(vl_vu_dev_queue(f->dev, q));
	}
	for (uint32_t i = 0; i < PAIRS; i++) {
		struct worker *w = &c->w[i];

		vl_pkt_free_bulk(w->pend, w->npend);
		w->npend = 0;
		w->seq_recv = w->seq_sent;
		w->log_on = false;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double stress_seconds(void)
{
	const char *s = getenv("VL_STRESS_SECONDS");
	double v = s ? atof(s) : 4.0;

	return v > 0 ? v : 4.0;
}

/* After the workers are joined: every ring running again, then the pairs drained on this
 * thread until every packet sent came back. */
static void drain(struct control *c)
{
	if (c->status_off)
		op_status(c);
	for (uint32_t q = 0; q < 2 * PAIRS; q++) {
		if (c->disabled[q])
			set_enable(c, q, true);
		if (c->stopped[q])
			ring_restart(c, q, true);
	}
	for (uint32_t i = 0; i < PAIRS; i++) {
		struct worker *w = &c->w[i];

		fetch_queues(w);
		for (int n = 0; n < 10000 && (w->seq_recv != w->seq_sent || w->npend); n++) {
			device_burst(w);
			guest_harvest(w);
			uint32_t id, len;

			while (vuf_pop_used(w->f, 2 * i + 1, &id, &len))
				;
			while (vuf_post_rx(w->f, 2 * i, VUF_BUF_SIZE) >= 0)
				;
		}
		assert_int_equal(w->seq_recv, w->seq_sent);
	}
}

static void run(enum vl_layout layout)
{
	struct vuf f;
	struct vl_vu_config cfg;
	static struct control c;

	memset(&c, 0, sizeof(c));
	atomic_store(&stop_workers, false);
	atomic_store(&failed, false);
	vl_vu_config_init(&cfg);
	cfg.features |= F(VL_F_NET_MQ) | F(VL_F_NET_CTRL_VQ);
	cfg.max_queue_pairs = PAIRS;
	vuf_init(&f, &cfg);
	c.f = &f;
	uint64_t feat = FEATURES | (layout == VL_LAYOUT_PACKED ? F(VL_F_RING_PACKED) : 0);

	c.features = feat;
	c.layout = layout;
	vuf_dpdk_start(&f, feat, layout, QSIZE, 2 * PAIRS);
	assert_int_equal(vuf_u64(&f, VUF_SET_PROTOCOL_FEATURES,
				 F(VL_VU_PROTOCOL_F_MQ) | F(VL_VU_PROTOCOL_F_LOG_SHMFD) |
					 F(VL_VU_PROTOCOL_F_REPLY_ACK) | F(VL_VU_PROTOCOL_F_STATUS) |
					 F(VL_VU_PROTOCOL_F_RESET_DEVICE)),
			 VL_OK);
	c.log_fd = memfd_create("stress-log", MFD_CLOEXEC);
	assert_true(c.log_fd >= 0);
	assert_int_equal(ftruncate(c.log_fd, LOG_BYTES), 0);
	c.log = mmap(NULL, LOG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, c.log_fd, 0);
	assert_true(c.log != MAP_FAILED);

	for (uint32_t i = 0; i < PAIRS; i++) {
		struct worker *w = &c.w[i];

		w->f = &f;
		w->pair = i;
		w->gate = vl_vq_gate_create();
		w->pool = vl_pool_create(4 * BURST, 2048);
		assert_non_null(w->gate);
		assert_non_null(w->pool);
	}
	for (uint32_t i = 0; i < PAIRS; i++)
		assert_int_equal(pthread_create(&c.w[i].thread, NULL, worker_main, &c.w[i]), 0);

	double end = now_s() + stress_seconds();
	uint32_t k = 0, turn = 0;   /* messages sent; turns of the rotation */
	unsigned rng = 12345;

	while (now_s() < end && !atomic_load(&failed)) {
		/* Let traffic run a little between messages (0-500 us). */
		rng = rng * 1103515245u + 12345u;
		usleep((rng >> 16) % 500);
		pause_all(&c);
		/* Mostly the messages of a running device, in turn; every 16th a status 0,
		 * every 32nd a reset. A ring stopped, a ring disabled or a status 0 is undone
		 * by the next message, so the workers run with it for one gap between two
		 * messages and traffic keeps flowing most of the time. */
		bool stopped = false, disabled = false;

		for (uint32_t q = 0; q < 2 * PAIRS; q++) {
			stopped |= c.stopped[q];
			disabled |= c.disabled[q];
		}
		enum op op;

		if (c.status_off || stopped || disabled) {
			op = c.status_off ? OP_STATUS : stopped ? OP_RING : OP_ENABLE;
		} else {
			op = turn % 32 == 31 ? OP_RESET : turn % 16 == 15 ? OP_STATUS :
			     (enum op)(turn % 4);
			turn++;
		}

		switch (op) {
		case OP_MEM_TABLE: op_mem_table(&c, turn / 4); break;
		case OP_RING: op_ring(&c, turn / 4); break;
		case OP_ENABLE: op_enable(&c, turn / 4); break;
		case OP_LOG: op_log(&c); break;
		case OP_STATUS: op_status(&c); break;
		default: op_reset(&c); break;
		}
		c.ops[op]++;
		resume_all(&c);
		k++;
	}
	atomic_store_explicit(&stop_workers, true, memory_order_release);
	for (uint32_t i = 0; i < PAIRS; i++)
		assert_int_equal(pthread_join(c.w[i].thread, NULL), 0);
	for (uint32_t i = 0; i < PAIRS; i++)
		if (c.w[i].err[0])
			fail_msg("%s", c.w[i].err);
	drain(&c);

	uint64_t log_checked = 0;

	for (uint32_t i = 0; i < PAIRS; i++) {
		struct worker *w = &c.w[i];

		printf("pair %u: %u packets checked, %" PRIu64 " bursts, %" PRIu64 " pauses, %"
		       PRIu64 " received with the log on\n", i, w->seq_recv, w->bursts, w->pauses,
		       w->log_checked);
		/* Traffic moved between the messages, on every pair, and each pause reached it. */
		assert_true(w->seq_recv > 100);
		assert_true(w->pauses > 0);
		log_checked += w->log_checked;
		for (uint32_t r = 0; r < 2; r++) {
			struct vl_vq *vq = vl_vu_dev_queue(f.dev, 2 * i + r);

			assert_non_null(vq);
			for (int d = 1; d < VL_DROP__COUNT; d++)
				assert_int_equal(vl_vq_stats(vq)->drops[d], 0);
		}
		vl_vq_gate_destroy(w->gate);
		while (w->npend)
			vl_pkt_free(w->pend[--w->npend]);
	}
	printf("%s: %u messages:", layout == VL_LAYOUT_PACKED ? "packed" : "split", k);
	for (int op = 0; op < OP__COUNT; op++)
		printf("%s %" PRIu64 " %s", op ? "," : "", c.ops[op], op_names[op]);
	printf("\n");
	for (int op = 0; op < OP__COUNT; op++)
		assert_true(c.ops[op] > 0);
	assert_true(log_checked > 0);
	vuf_fini(&f);
	for (uint32_t i = 0; i < PAIRS; i++)
		assert_int_equal(vl_pool_destroy(c.w[i].pool), 0);
	munmap(c.log, LOG_BYTES);
	close(c.log_fd);
}

static void test_split_pairs_on_two_threads_under_control_messages(void **state)
{
	(void)state;
	run(VL_LAYOUT_SPLIT);
}

static void test_packed_pairs_on_two_threads_under_control_messages(void **state)
{
	(void)state;
	run(VL_LAYOUT_PACKED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_pairs_on_two_threads_under_control_messages),
		cmocka_unit_test(test_packed_pairs_on_two_threads_under_control_messages),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

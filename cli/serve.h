/* SPDX-License-Identifier: MIT */
/* `vhostlab serve`: a vhost-user virtio-net back end around the core, for real front ends
 * (DPDK virtio-user, QEMU). State shared by its files, one concern each:
 *   cmd_serve.c    options and usage, start and shutdown
 *   serve_port.c   one vhost-user device: socket (server or client), messages, callbacks
 *   serve_loop.c   the poll loop: wakeups, signals, deadlines
 *   serve_threads.c --threads N: queue pairs on worker threads, paused around messages
 *   serve_fwd.c    the forwarding modes, and the packets waiting for room
 *   serve_gen.c    txonly's frames
 *   serve_tap.c    the TAP device
 *   serve_null.c   the null mode: chains back unread (a ceiling, not a forwarder)
 *   serve_stats.c  counters, live lines and the final report
 *   serve_record.c --record: the session as a trace (sim/trace/session_rec.h)
 *   serve_features.c  the offload features offered (--offloads) and their dependencies
 *   serve_fit.c    packets whose offloads their destination did not negotiate (vl_sw_fit)
 *
 * Direction words follow the switch-port convention (DPDK's vhost PMD does the same): "rx"
 * is what serve receives from a front end (the guest's TX ring, the core's dequeue), "tx"
 * what serve sends to it (the guest's RX ring, the core's enqueue). */
#ifndef VL_CLI_SERVE_H
#define VL_CLI_SERVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhostlab/vhostlab.h"

#define SERVE_BURST_MAX 256u
/* Frames the software fallback may cut one packet into (serve_fit.c): 64 KiB of payload at
 * a segment size down to 256 bytes. A Linux guest's TSO frames at MTU 1500 make 45. */
#define SERVE_FIT_MAX 256u
#define SERVE_IDLE_PAUSE_DEFAULT_NS 1500u
#define SERVE_BURST_DEFAULT 32u
/* Ring 2n of a pair is the guest's receive queue (serve sends there), 2n + 1 its transmit
 * queue (serve receives from it): vl_vhost_user.h. */
#define SERVE_RING_RX 0u
#define SERVE_RING_TX 1u
/* Zero-copy dequeue: packets of at least this many bytes reference guest memory (the
 * smaller ones cost less to copy than to lease). */
#define SERVE_ZC_MIN_LEN 512u

/* The offloads serve offers unless --offloads off: checksum both ways, TCP segmentation
 * (with ECN) and UDP segmentation both ways. Not UFO: nothing in serve could segment it for
 * a guest or device without it (vl_sw_segment refuses it, vl_vhost_user.h). */
#define SERVE_OFFLOAD_FEATURES                                                                  \
	(VL_FEATURE(VL_F_NET_CSUM) | VL_FEATURE(VL_F_NET_GUEST_CSUM) |                           \
	 VL_FEATURE(VL_F_NET_HOST_TSO4) | VL_FEATURE(VL_F_NET_HOST_TSO6) |                       \
	 VL_FEATURE(VL_F_NET_HOST_ECN) | VL_FEATURE(VL_F_NET_HOST_USO) |                         \
	 VL_FEATURE(VL_F_NET_GUEST_TSO4) | VL_FEATURE(VL_F_NET_GUEST_TSO6) |                     \
	 VL_FEATURE(VL_F_NET_GUEST_ECN) | VL_FEATURE(VL_F_NET_GUEST_USO4) |                      \
	 VL_FEATURE(VL_F_NET_GUEST_USO6))
/* The UDP segmentation part of it, which a TAP device takes only from Linux 6.2 on. */
#define SERVE_USO_FEATURES                                                                      \
	(VL_FEATURE(VL_F_NET_HOST_USO) | VL_FEATURE(VL_F_NET_GUEST_USO4) |                       \
	 VL_FEATURE(VL_F_NET_GUEST_USO6))

enum serve_mode {
	SERVE_LOOPBACK, /* what a front end sends comes back to it on the same pair */
	SERVE_RXONLY,   /* count and drop */
	SERVE_TXONLY,   /* generate frames towards the front end */
	SERVE_TAP,      /* bridge to a TAP device */
	SERVE_PAIR,     /* two devices, each one's traffic goes to the other */
	SERVE_NULL,     /* return the guest's TX chains unread, leave its RX ring alone */
	SERVE_TOUCH,    /* null, reading each packet's first byte */
};

/* --evict: evict-after-read on the TX rings (vl_vq_set_evict_reads); --prefetch: payload
 * prefetch on them (vl_vq_set_tx_prefetch). The two measures pay when the front end's CPU is
 * far from serve's and cost when close; those set to auto follow one tuner per TX ring. */
enum serve_evict {
	SERVE_EVICT_AUTO, /* vl_evict_tuner decides per TX ring, from the packet rate */
	SERVE_EVICT_OFF,
	SERVE_EVICT_ON,
};

struct serve_opts {
	const char *socket;       /* --socket PATH */
	const char *socket2;      /* pair:SOCKET2 */
	const char *tap_name;     /* tap:IFNAME */
	enum serve_mode mode;
	bool client;              /* --client: connect (and reconnect) instead of listening */
	uint32_t queues;          /* queue pairs per device */
	uint32_t size;            /* txonly frame bytes */
	uint32_t burst;           /* packets per burst */
	bool zero_copy;
	enum serve_evict evict;
	enum serve_evict prefetch;
	bool line_wait_off;       /* --line-wait off (vl_vq_set_tx_line_wait) */
	bool offloads_off;        /* --offloads off: none of SERVE_OFFLOAD_FEATURES offered */
	uint32_t batch_threshold;
	bool busy_poll;           /* --poll: never sleep, ignore kicks */
	/* --idle-pause: under --poll, a round that moved nothing is followed by this much
	 * spinning before the next one polls. testpmd txonly on virtio-user into serve rxonly,
	 * packed 64 B, the two on different CPUs: 1500 ns against 0 gave 36.18 -> 38.98 Mpps
	 * with the CPUs close (paired 1.078); a spin of 60 pause instructions (about 1450 ns)
	 * gave 16.68 -> 16.95 with them far apart (8 pairs); host->guest did not move. 3000 ns
	 * against 1500 gained 1.5-3.5 % close together on 1-3 pairs a cell and spread 0.89-1.08
	 * paired far apart: not a measured gain (reports/README.md). */
	uint32_t idle_pause_ns;
	double stats_interval;    /* seconds, 0 = no live lines */
	double duration;          /* seconds, 0 = until SIGINT/SIGTERM */
	bool json;
	bool quiet;               /* no event lines */
	uint32_t threads;         /* --threads: worker threads owning the queue pairs (0: the
				   * poll loop runs them itself, as without the option) */
	uint64_t features;        /* offered in GET_FEATURES */
	const char *record;       /* --record FILE, or NULL */
	uint64_t record_max_packets;
};

/* Why a packet died inside serve. Counted on the queue pair where it died: a malformed chain
 * at the pair it came from, everything else at the pair it was going to. */
enum serve_drop {
	SERVE_DROP_MALFORMED, /* a guest TX chain the core refused (vl_vq_stats drops) */
	SERVE_DROP_TOO_BIG,   /* the guest's RX buffers cannot hold it (vl_rx_status) */
	SERVE_DROP_NO_PEER,   /* its destination was not connected, or went away */
	SERVE_DROP_TAP,       /* the TAP device did not take it */
	SERVE_DROP_NO_MEMORY, /* a packet buffer could not be had (zero-copy unsharing) */
	SERVE_DROP_OFFLOAD,   /* offloads its destination did not negotiate, and the software
			       * fallback could not make it fit (sw_refused says why) */
	SERVE_DROP__COUNT
};

const char *serve_drop_name(enum serve_drop d);

struct serve_qstats {
	uint64_t rx_packets, rx_bytes; /* from the front end */
	uint64_t tx_packets, tx_bytes; /* to the front end */
	uint64_t drops[SERVE_DROP__COUNT];
	uint64_t zero_copied;          /* received without copying (--zero-copy) */
	uint64_t zc_fallbacks[VL_ZC_FALLBACK__COUNT]; /* copied anyway, by reason */
	uint64_t write_flag_read;      /* TX indirect entries marked device-writable, read anyway
					* (vl_vq_stats.tx_write_ignored: DPDK virtio-user, packed) */
	uint64_t lines_evicted;        /* TX ring: guest lines evicted after their copy */
	uint64_t payload_prefetches;   /* TX ring: packets whose first line was prefetched */
	uint64_t line_waits;           /* TX ring: bursts that left a line's chains (--line-wait) */
	uint64_t hdrs_kept;            /* RX ring: virtio-net headers the front end's buffer
					* held already, not stored again (vl_vq_stats.rx_hdrs_kept) */
	uint64_t kicks;                /* kick eventfd wakeups consumed (both rings) */
	uint64_t calls;                /* call eventfd signals (both rings) */
	/* Burst calls per ring (SERVE_RING_RX / _TX) and those that moved nothing: on the TX
	 * ring a poll that found no packet, on the RX ring a burst that found no room. Their
	 * ratio says which side waits for the other. */
	uint64_t bursts[2], idle_bursts[2];
	/* Packets per size class (VL_SIZE_BINS: ... 1024-1518, >1518 bytes) per ring: on the TX
	 * ring what the front end sent, on the RX ring what it was given. Frames past 1518
	 * bytes are segmentation offload at work (TSO/USO). */
	uint64_t size_bins[2][VL_SIZE_BINS];
	/* Packets for this pair's RX ring with offloads its driver did not negotiate
	 * (serve_fit.c): segmented in software (and the frames that made), checksums completed
	 * in software, refused by the fallback (by vl_sw_result; also drops[OFFLOAD]). */
	uint64_t sw_segmented, sw_frames, sw_checksummed;
	uint64_t sw_refused[VL_SW__COUNT];
};

/* Packets waiting for room in one RX ring, in order: first fit[fit_head .. + fit_n), the
 * frames software made of the packet that was next (serve_fit.c), then pkts[head .. head +
 * n). Filled only when both are empty, so a burst always fits. */
struct serve_pending {
	struct vl_pkt *pkts[SERVE_BURST_MAX];
	uint32_t head, n;
	struct vl_pkt *fit[SERVE_FIT_MAX];
	uint32_t fit_head, fit_n;
};

/* One queue pair of one device. */
struct serve_pair {
	struct serve_qstats st;
	struct vl_pool *pool;          /* packets received here come from it: the port's pool,
					* or with --threads the pair's own (pools are not
					* thread-safe, and each pair has one owner) */
	struct serve_pending pend;     /* waiting for this pair's RX ring */
	struct vl_vq *vq[2];           /* SERVE_RING_RX / _TX while ready, else NULL */
	bool broken_told[2];
	bool kicks_off[2];             /* told the guest not to kick (busy, or --poll) */
	uint64_t folded_drops;         /* TX ring drops already counted as MALFORMED */
	uint64_t folded_zc;            /* TX ring zero-copy packets already counted */
	uint64_t folded_zcf[VL_ZC_FALLBACK__COUNT]; /* ... and zero-copy fallbacks */
	uint64_t folded_wr;            /* ... and tx_write_ignored */
	uint64_t folded_evicted;       /* ... and lines_evicted */
	uint64_t folded_prefetched;    /* ... and payload_prefetches */
	uint64_t folded_line_waits;    /* ... and tx_line_waits */
	struct vl_evict_tuner evict;   /* --evict or --prefetch auto: this pair's TX ring */
	uint64_t evict_trials_seen;    /* ... trials already looked at */
	bool evict_told;               /* ... the decision last announced (starts off) */
	uint64_t folded_bursts[2], folded_idle[2]; /* per ring, the core's burst counters */
	uint64_t folded_kept;          /* RX ring rx_hdrs_kept already counted */
	uint64_t folded_bins[2][VL_SIZE_BINS]; /* per ring, size_bins already counted */
	struct vl_pkt **gen;           /* txonly: a burst of prebuilt frames */
	uint64_t gen_seq;
	uint32_t txonly_skip;          /* txonly: busy rounds left that do not poll the TX ring */
	uint32_t txonly_backoff;       /* ... and the skip the last empty poll set (1, 3, 7) */
	uint64_t resyncs_told[2];      /* vl_vu_dev_ring_resyncs already announced */
	uint64_t last_rx, last_tx;     /* at the previous live line, for pps */
	uint64_t touched;              /* touch: the first bytes read, summed (a sink) */
};

struct serve;

/* One vhost-user device and its connection. */
struct serve_port {
	struct serve *s;
	uint32_t index;
	const char *path;
	int listen_fd, conn_fd;
	bool own_socket;               /* serve created the socket file: remove it at exit */
	struct vl_vu_dev *dev;
	struct vl_pool *pool;
	struct serve_pair *pairs;      /* opts.queues of them */
	uint32_t rings_ready;
	bool running_told;             /* this connection's "running" event was printed */
	/* A front end that keeps closing its connection before any ring runs (QEMU 7.2 retries
	 * in a tight loop when it refuses what serve offers, e.g. fewer queue pairs than it
	 * wants): after SERVE_EARLY_TOLD such connections in a row, their connected and
	 * disconnected events give way to one summary a second (serve_port.c). */
	uint64_t early_closes;         /* in a row, ended before any ring ran */
	uint64_t early_untold;         /* of those, not yet in an event */
	double early_told_at;          /* when the last summary was printed */
	/* Second front ends closed at once, told the same way: SERVE_EARLY_TOLD in full,
	 * then once a second (QEMU's retry loop reconnects before its last try is closed). */
	uint64_t refusals, refused_untold;
	double refused_told_at;
	double next_connect, backoff;  /* client mode */
	bool waiting_told;
	uint64_t connections, disconnects, messages, rejected;
	uint64_t features;             /* negotiated, last connection that ran */
	uint64_t announces;            /* SEND_RARP messages (serve_announce.c) */
};

struct serve_rec;

struct serve {
	struct serve_opts o;
	struct serve_rec *rec;         /* --record, else NULL */
	struct serve_port port[2];
	uint32_t nports;
	int *tap_fds;                  /* tap mode: one per queue pair */
	uint8_t *tap_buf;              /* one frame read from the TAP device */
	unsigned tap_offloads;         /* TUN_F_* the kernel may hand over now (TUNSETOFFLOAD) */
	bool tap_uso;                  /* the kernel's TAP takes UDP segmentation (Linux 6.2) */
	double start, last_stats;
	/* Seconds spent in loop rounds that moved nothing (waiting, spinning or asleep): the
	 * share of serve's time the front end kept it waiting. last_idle: at the last live
	 * statistics line. */
	double idle, last_idle;
	/* --evict: the CPU cannot, said once (atomic: with --threads, every worker's evict
	 * tuner may find it out at once). */
	atomic_bool evict_unsupported_told;
	struct serve_worker *workers;  /* --threads: nworkers of them, else NULL */
	uint32_t nworkers;
	uint32_t pause_depth;          /* serve_threads_pause calls not yet resumed */
};

/* serve_announce.c: the guest announce after a live migration (SEND_RARP). The frame is a
 * broadcast RARP reverse request from mac, padded to the 60-byte Ethernet minimum. */
#define SERVE_RARP_LEN 60u
void serve_rarp_frame(uint8_t frame[SERVE_RARP_LEN], const uint8_t mac[6]);
void serve_announce(struct serve_port *p, const uint8_t mac[6]);
/* "loopback", "tap", ... as --mode spells them. */
const char *serve_mode_name(enum serve_mode mode);

/* Monotonic seconds. */
double serve_now(void);

/* Event and error lines on stderr: text, or JSON lines with --json (serve_stats.c). */
void serve_event(const struct serve *s, const char *event, const struct serve_port *p,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* serve_port.c */
int serve_port_open(struct serve *s, struct serve_port *p, uint32_t index, const char *path);
/* Stop the device, close its fds, remove its socket file, free its packets and pool.
 * Returns the packets still out of the pool (0 when clean). The counters stay. */
uint32_t serve_port_close(struct serve_port *p);
/* Free what serve_port_close left: the counters. */
void serve_port_free(struct serve_port *p);
bool serve_port_connected(const struct serve_port *p);
/* pool is p's: its own, or (--threads) one of its pairs'. */
bool serve_port_owns_pool(const struct serve_port *p, const struct vl_pool *pool);
/* Client mode: connect when the back-off allows. */
void serve_port_tick(struct serve_port *p, double now);
/* Seconds until serve_port_tick has something to do (a large number when nothing). */
double serve_port_wait(const struct serve_port *p, double now);
void serve_port_accept(struct serve_port *p);
/* The connection is readable: handle one message. */
void serve_port_message(struct serve_port *p);

/* serve_evict.c: --evict on the TX ring of (p, pair), which just became ready. */
void serve_evict_start(struct serve *s, struct serve_port *p, uint32_t pair, double now);
/* --evict auto: feed every ready TX ring's tuner the time and its packet count. */
void serve_evict_tick(struct serve *s, double now);
/* The same for queue pair `pair` of every port. */
void serve_evict_tick_pair(struct serve *s, uint32_t pair, double now);

/* serve_fwd.c */
/* Run one round of the mode on queue pair `pair`. True if any packet moved. */
bool serve_fwd_pair(struct serve *s, uint32_t pair);
/* Would a kick on ring (pair, ring) of p lead anywhere now? (A TX ring whose destination is
 * still full waits for room, not for kicks.) */
bool serve_fwd_wants_kick(const struct serve *s, const struct serve_port *p, uint32_t pair,
			  uint32_t ring);
bool serve_fwd_wants_tap(const struct serve *s, uint32_t pair);
/* Signal the guest for ring (pair, ring) of p if it asked to be (counts the call). */
void serve_fwd_notify(struct serve_port *p, uint32_t pair, uint32_t ring);
/* Report once that ring (pair, ring) of p broke. */
void serve_fwd_check_broken(struct serve_port *p, uint32_t pair, uint32_t ring);
/* Zero-copy packets that came from p (all pairs, or one pair's TX ring) are about to lose
 * their guest memory: replace each waiting one with a copy. */
void serve_fwd_unshare(struct serve *s, struct serve_port *p, uint32_t pair, bool all_pairs);
/* p's connection is gone: drop what waits for its RX rings. */
void serve_fwd_disconnected(struct serve *s, struct serve_port *p);
/* Shutdown: free every waiting packet (counted as NO_PEER drops). */
void serve_fwd_flush_all(struct serve *s);

/* serve_fit.c */
/* How many of pkts[0..n), from the first, RX queue vq's driver takes as they are (their
 * offloads negotiated): the first it does not take ends the count. */
uint32_t serve_fit_prefix(const struct vl_vq *vq, struct vl_pkt *const *pkts, uint32_t n);
/* pkt (taken: freed or passed on) cannot go to vq's driver as it is: the frames software
 * makes of it become sp's pend.fit, or it is dropped and counted. pend.fit must be empty. */
void serve_fit_packet(struct serve_port *dst, struct serve_pair *sp, const struct vl_vq *vq,
		      struct vl_pkt *pkt);

/* serve_gen.c */
#define SERVE_GEN_MIN_SIZE 60u
/* Build txonly's frames for pair `pair` of p from p's pool (false when the pool is short). */
bool serve_gen_init(struct serve_port *p, uint32_t pair, uint32_t size, uint32_t burst);
/* Write consecutive sequence numbers from seq into the first n frames. */
void serve_gen_stamp(struct vl_pkt **frames, uint32_t n, uint64_t seq);
void serve_gen_free(struct serve_port *p, uint32_t pair);

/* serve_null.c */
/* One round of --mode null on queue pair `pair` of p. True if any chain went back. */
bool serve_null_pair(struct serve *s, struct serve_port *p, uint32_t pair);

/* serve_tap.c */
/* Open (and bring up) TAP device name with one fd per queue; false and a message on
 * failure. */
bool serve_tap_open(struct serve *s, const char *name, uint32_t queues);
void serve_tap_close(struct serve *s);
/* Tell the kernel which offloads it may hand over: those a guest with these negotiated
 * features takes (0: none, no guest). Only when they change. */
void serve_tap_offloads(struct serve *s, uint64_t guest_features);
/* Send pkt to the TAP queue; false if the device did not take it. */
bool serve_tap_write(int fd, const struct vl_pkt *pkt);
/* A frame the device makes itself (the RARP announce), with a header asking for nothing. */
bool serve_tap_write_raw(int fd, const uint8_t *frame, uint32_t len);
/* Read one frame into a packet of pool: NULL when nothing is waiting (*err false) or on an
 * error (*err true: the frame is lost). */
struct vl_pkt *serve_tap_read(struct serve *s, int fd, struct vl_pool *pool, bool *err);

/* serve_stats.c */
/* Chains the core dropped on vq so far (every reason). */
uint64_t serve_stats_core_drops(const struct vl_vq *vq);
/* Payload lines the core asked for ahead on vq so far: payload_prefetches (a few chains
 * ahead) and copy_prefetches (as a deferred copy was queued), one or the other a packet. */
uint64_t serve_stats_core_prefetches(const struct vl_vq *vq);
/* Count the core's TX-ring drops and zero-copy packets of (p, pair) not counted yet. */
void serve_stats_fold(struct serve_port *p, uint32_t pair);
/* Fold the burst counters of one ring of (p, pair) into its serve_qstats (the RX ring: and
 * its headers kept). */
void serve_stats_fold_bursts(struct serve_port *p, uint32_t pair, uint32_t ring);
void serve_stats_live(struct serve *s, double now);
/* The final report on stdout. */
void serve_stats_final(struct serve *s, double now, const char *stopped_by, uint32_t leaked);

/* serve_record.c: each call does nothing without --record, or once recording stopped. */
#define SERVE_RECORD_MAX_PACKETS_DEFAULT 10000u
/* Record at most this many queue pairs: a trace holds 16 queues. */
#define SERVE_RECORD_MAX_PAIRS 8u
bool serve_rec_open(struct serve *s);
/* Ring qidx of p is ready with queue vq (after serve told it whether to kick). */
void serve_rec_ring_ready(struct serve_port *p, uint32_t qidx, struct vl_vq *vq);
void serve_rec_mem_changed(struct serve_port *p);
void serve_rec_disconnected(struct serve_port *p);
void serve_rec_kicks(struct serve_port *p, uint32_t qidx, bool want);
/* Around each burst: begin before vl_net_dequeue / vl_net_enqueue / vl_net_discard(_touch),
 * then what it did. */
void serve_rec_begin(struct serve_port *p, uint32_t qidx, struct vl_vq *vq);
void serve_rec_dequeued(struct serve_port *p, uint16_t max, struct vl_pkt *const *pkts,
			uint16_t n);
void serve_rec_discarded(struct serve_port *p, uint16_t max, uint16_t n, bool touch);
void serve_rec_enqueued(struct serve_port *p, struct vl_pkt *const *pkts, uint16_t count,
			uint16_t done, const uint8_t *status);
/* Shutdown: stop recording (if it goes on) and write the file. */
void serve_rec_close(struct serve *s, const char *stopped_by);
void serve_rec_free(struct serve *s);
/* The trace could not be written. */
bool serve_rec_failed(const struct serve *s);
/* The final report's part (JSON: one "record" member with its trailing comma). */
void serve_rec_final_json(const struct serve *s);
void serve_rec_final_text(const struct serve *s);

/* serve_features.c */
/* f without the offload features whose requirements f lacks (TSO without CSUM, ...). */
uint64_t serve_features_prune(uint64_t f);
/* Whether f offers an offload without what it requires; if so, msg names both. */
bool serve_features_unmet(uint64_t f, char *msg, size_t n);
/* The offload features of f by name, space-separated ("none" when there are none). */
void serve_features_offload_names(uint64_t f, char *buf, size_t n);

/* serve_loop.c */
/* Tell the guest on every ready ring whether to kick; true if any ring changed. */
bool serve_set_kicks(struct serve *s, bool want);
/* The same for the rings of queue pair `pair` (of every port). */
bool serve_set_kicks_pair(struct serve *s, uint32_t pair, bool want);
/* --idle-pause: spin until `until` (monotonic seconds). */
void serve_idle_pause(double until);

/* serve_threads.c: --threads N. Pair q is owned by worker q % N, which runs its forwarding,
 * kicks and evict tuner; the poll loop keeps the sockets. Every control-thread action that
 * may touch a pair -- a message, a connection made or lost, the live statistics -- runs
 * between serve_threads_pause and _resume: every worker stopped at a round's end
 * (vl_vq_gate, vl_vq.h). Both are no-ops without workers; pauses nest. */
bool serve_threads_start(struct serve *s);
void serve_threads_stop(struct serve *s);
void serve_threads_pause(struct serve *s);
void serve_threads_resume(struct serve *s);
/* --threads: the workers run the pairs, their kicks and evict tuners (the loop does not). */
static inline bool serve_threaded(const struct serve *s)
{
	return s->workers != NULL;
}
/* Run until a signal or the duration; returns what stopped it ("signal", "duration") or
 * NULL on a fatal error (already reported). */
const char *serve_loop(struct serve *s);

#endif

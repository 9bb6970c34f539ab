/* SPDX-License-Identifier: MIT */
/* A simulated virtio-net driver on split rings: posts TX chains of seeded random shape and
 * RX buffers, harvests used entries, and checks what it gets back against its own record of
 * what it posted (byte equality, header fields, used lengths, accounting). */
#ifndef LAB_NET_DRIVER_H
#define LAB_NET_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "expect_bytes.h"
#include "guest_mem.h"
#include "linux_shape.h"
#include "rng.h"
#include "traffic.h"
#include "vhostlab/vl_pkt.h"
#include "vring.h"

/* Descriptors one posted chain may use: a chain at the core's limits (LAB_LIMIT_EVERY) has
 * as many as the core accepts, the queue size up to VL_CHAIN_MAX_PIECES (the core's cap on a
 * chain's host pieces). */
#define LAB_MAX_SEGS VL_CHAIN_MAX_PIECES
#define LAB_SHAPED_SEGS 24u     /* descriptors of a chain of random shape */
#define LAB_MAX_TX_DATA_SEGS 8u /* payload segments of a TX chain (header pieces extra) */
/* One chain in LAB_LIMIT_EVERY (by its key, not drawn) has the most descriptors the core
 * accepts: through an indirect table when indirect descriptors are negotiated, except one in
 * LAB_LIMIT_DIRECT_EVERY, which is direct and so takes the whole ring (it waits until the
 * ring is empty, at most LAB_LIMIT_PATIENCE rounds, then goes out as an ordinary chain). */
#define LAB_LIMIT_EVERY 32u
#define LAB_LIMIT_DIRECT_EVERY 128u
#define LAB_LIMIT_PATIENCE 16u
/* One buffer placement in LAB_EDGE_EVERY (counted, not drawn) sits against a RAM region's
 * edge, alternately ending on its last byte and starting on its first. */
#define LAB_EDGE_EVERY 16u

struct lab_seg {
	uint64_t gpa;
	uint32_t len;
};

/* The shape a chain at the core's limits takes (LAB_LIMIT_EVERY). */
enum lab_limit {
	LAB_LIMIT_NONE,
	LAB_LIMIT_DIRECT,        /* the most descriptors, direct: the whole ring */
	LAB_LIMIT_INDIRECT,      /* the most entries an indirect table may have */
};

/* What the driver remembers about one posted chain, indexed by head. segs and allocs point
 * at the slot's own room for LAB_SHAPED_SEGS (+1) entries, or, for a chain at the limits, at
 * arrays of its own (wide). */
struct lab_chain_rec {
	bool in_flight;
	bool wide;               /* segs and allocs were allocated for this chain */
	bool big;                /* RX: a big buffer (lab_net_driver.big_kept) ... */
	uint32_t big_allocs;     /* ... whose first big_allocs allocations are its pages (an
				  * indirect table's come after) */
	enum lab_limit limit;
	uint64_t key;            /* TX: packet key; RX: buffer serial */
	uint64_t posted_round;
	uint32_t nsegs;
	struct lab_seg *segs;    /* buffer bytes in chain order */
	uint32_t nallocs;
	struct lab_seg *allocs;  /* guest RAM to give back */
	uint32_t edge_end, edge_start; /* placements against a region's edge (LAB_EDGE_EVERY) */
	uint32_t total;          /* TX: header + payload bytes; RX: capacity */
	uint32_t pkt_len;        /* TX */
	uint8_t hdr[12];         /* TX: header as written */
	struct lab_content c;    /* TX: what the packet's bytes are */
};

/* A packet the checker expects to see next, in order: its key, its length and offloads as
 * the core reports them (TX) or the host handed them to enqueue (RX), and what its bytes
 * are (traffic.h). */
struct lab_expect {
	uint64_t key;
	uint32_t pkt_len;
	struct vl_offload ol;
	struct lab_content c;
};

struct lab_fifo {
	struct lab_expect *e;
	uint32_t cap, head, count;
};

struct lab_net_driver_config {
	enum vl_layout layout;
	uint32_t queue_size;
	uint64_t features;
	bool use_indirect;         /* post some chains through indirect tables */
	const uint32_t *sizes;     /* TX packet sizes to pick from */
	uint32_t nsizes;
	uint32_t rx_buf_max;       /* non-mergeable RX buffer capacity (header included) */
	/* The guest's own traffic (traffic.h): patterns, frames, checksum offload, GSO as its
	 * features allow; frames go out in the shape Linux gives them (linux_shape.h). */
	struct lab_traffic tx_traffic;
	/* Receive buffers as Linux posts them with guest GSO but no mergeable buffers: "big
	 * packets" of a header and 18 pages, at most LAB_BIG_RX_MAX of them out at a time. */
	bool rx_big;
	uint64_t seed;
	uint16_t start_idx;        /* split: first avail/used index; packed: first position */
};

/* Big receive buffers (lab_net_driver_config.rx_big) out at a time: a Linux guest without
 * indirect descriptors has 13 of them on a 256-entry ring (19 descriptors each); the lab
 * keeps guest RAM, which every containment scan reads, to a few MiB. */
#define LAB_BIG_RX_MAX 32u

/* Where a delivered RX packet landed, in stream order (header, then payload): filled by the
 * harvest for an observer (the trace recorder turns it into expectations). */
struct lab_rx_landing {
	const struct lab_expect *e;    /* what the host sent */
	/* What the guest must find: the packet's bytes, length and header fields (the host's
	 * packet, or the model's frame of it when the host made it fit, lab_want_packet). */
	const uint8_t *want;
	uint32_t want_len;
	struct vl_offload want_ol;
	uint16_t nbufs;                /* buffers it took */
	uint32_t nranges;
	struct lab_seg *ranges;        /* guest bytes, header first */
};

struct lab_net_driver {
	struct lab_gmem *g;
	struct lab_net_driver_config cfg;
	uint32_t hdr_len;
	bool mergeable;
	struct lab_ring tx, rx;
	struct lab_chain_rec *tx_rec, *rx_rec; /* [queue_size], by id (split: head) */
	bool in_order;
	uint16_t *tx_order, *rx_order;         /* in-order: ids in posting order */
	uint32_t tx_order_head, tx_order_count, rx_order_head, rx_order_count;
	struct lab_rng rng;
	uint64_t tx_key, rx_buf_key;
	uint64_t round;
	struct lab_fifo tx_expect;    /* posted TX packets, in avail order */
	struct lab_fifo rx_expect;    /* packets the host delivered, in delivery order */
	uint8_t *scratch, *scratch2;  /* VL_PKT_MAX_LEN + 12 bytes each */
	uint8_t *grant;               /* one bit per RAM byte: granted for device writes */
	uint32_t tx_in_flight, rx_in_flight;
	uint64_t checks;
	char *err;                    /* first failure, written once */
	size_t errlen;
	/* Optional: told where each delivered RX packet landed (and what it had to be), before
	 * its checks run. */
	void (*rx_observer)(void *ctx, const struct lab_rx_landing *l);
	void *rx_observer_ctx;
	struct lab_seg *landing;      /* [nlanding_cap], allocated on first use, grown */
	uint32_t nlanding, nlanding_cap;
	/* Record room: each slot's LAB_SHAPED_SEGS segs and LAB_SHAPED_SEGS + 1 allocs, by id;
	 * a chain is built in stage (LAB_MAX_SEGS + 1 of each) and kept in its slot once posted. */
	struct lab_seg *tx_room, *rx_room, *stage;
	uint64_t placements;          /* buffer placements so far (LAB_EDGE_EVERY) */
	uint64_t tx_limit_wait, rx_limit_wait; /* round a direct limit chain began to wait, +1 */
	/* What ran (scenario results, `vhostlab run --json`): chains posted with the most
	 * descriptors the core accepts (of them through an indirect table), and buffers, headers
	 * and tables posted ending on a region's last byte / starting on its first. */
	uint64_t limit_chains, limit_chains_indirect, region_end_buffers, region_start_buffers;
	/* Offloaded traffic: TX chains posted in Linux's shape and GSO frames among them (the
	 * longest), big RX buffers posted; RX: GSO frames received whole (the longest), frames
	 * received with NEEDS_CSUM, frames the host made fit and the guest checked against the
	 * model's -- segments of GSO packets, copies whose checksum the host completed -- and
	 * frames whose checksums the guest verified as a receiving stack does. */
	uint64_t linux_chains, gso_tx_posted, gso_tx_max, big_rx_buffers;
	uint64_t gso_rx_packets, gso_rx_max, csum_rx_packets, fit_segments_checked;
	uint64_t fit_csum_completed, csum_verified;
	struct lab_want want;         /* the model's frames of the last packet the host fitted */
	/* Big receive buffers given back, kept for the next ones, as Linux's driver recycles
	 * its pages: their pieces, and how many of their bytes the device wrote -- all that
	 * must be poisoned again (the rest still is). */
	struct lab_big_rx {
		struct lab_seg segs[LAB_LINUX_PIECES], allocs[LAB_LINUX_PIECES];
		uint32_t nsegs, nallocs, written;
	} *big_kept;                  /* [LAB_BIG_RX_MAX] */
	uint32_t nbig_kept;
};

int lab_drv_init(struct lab_net_driver *d, struct lab_gmem *g,
		 const struct lab_net_driver_config *cfg, char *err, size_t errlen);
void lab_drv_fini(struct lab_net_driver *d);

/* Post one TX packet (random size and shape). Returns 1 if posted, 0 if out of descriptors
 * or guest memory, -1 on a driver failure (message in err). */
int lab_drv_post_tx(struct lab_net_driver *d);
/* Post one RX buffer. Same return convention. */
int lab_drv_post_rx(struct lab_net_driver *d);

/* Check a packet the host dequeued against the oldest posted TX packet. 0 ok, -1 failure.
 * If seen is not NULL it receives what the packet had to be (to check it again later). */
int lab_drv_check_dequeued(struct lab_net_driver *d, const struct vl_pkt *pkt,
			   struct lab_expect *seen);
/* Check a packet again against what it had to be (a zero-copy packet held for a while must
 * still show the guest's bytes: the guest cannot have reused a buffer it did not get back). */
int lab_drv_recheck(struct lab_net_driver *d, const struct vl_pkt *pkt,
		    const struct lab_expect *e);
/* Record that the host delivered a packet (key, length, offloads, what it stands for). */
int lab_drv_expect_rx(struct lab_net_driver *d, uint64_t key, uint32_t pkt_len,
		      const struct vl_offload *ol, const struct lab_content *c);

/* Harvest used entries: TX (buffers unchanged, each head once) and RX (reassemble, compare
 * with what the host delivered). Return 0 or -1 on failure. */
int lab_drv_harvest_tx(struct lab_net_driver *d);
int lab_drv_harvest_rx(struct lab_net_driver *d);

/* Accounting: fail if a TX chain posted max_age rounds ago is still not returned. */
int lab_drv_check_tx_age(struct lab_net_driver *d, uint64_t max_age);

/* Containment: may the device have written the byte run [gpa, gpa+len)? */
bool lab_drv_write_allowed(const struct lab_net_driver *d, uint64_t gpa, uint64_t len);

/* Fill a packet's payload and offloads the way the checker will expect them for `key`. */
void lab_make_payload(uint8_t *dst, uint32_t len, uint64_t seed, uint64_t key);

/* The bytes a TX packet the guest posted holds (what e stands for), e->pkt_len of them. */
void lab_drv_tx_bytes(const struct lab_net_driver *d, const struct lab_expect *e, uint8_t *out);

#endif

/* SPDX-License-Identifier: MIT */
/* One vhost-user session of the lab's front end: feature and protocol-feature negotiation,
 * SET_OWNER, the memory table (the simulated guest's RAM, sim/guest_mem: one memfd, every
 * region at its offset in it), and the two queues of one virtio-net pair (RX 0, TX 1) set up
 * on the lab's own ring drivers (sim/vring.h), with a kick and a call eventfd each.
 *
 * Requests without a reply of their own carry NEED_REPLY when REPLY_ACK was negotiated
 * (vhost-user.rst, "REPLY_ACK"), so a back end that refuses one says so, and the probe
 * knows where. Every wait is bounded by the connection's timeout. */
#ifndef LAB_FE_SESSION_H
#define LAB_FE_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "fe_msg.h"
#include "guest_mem.h"
#include "vring.h"

struct lab_fe_rec;

#define LAB_FE_RX 0u /* the guest's receive queue: the back end writes into it */
#define LAB_FE_TX 1u /* the guest's transmit queue: the back end reads it */
#define LAB_FE_QUEUES 2u
#define LAB_FE_MAX_QUEUE_SIZE 256u
/* Regions one SET_MEM_TABLE carries (VHOST_MEMORY_BASELINE_NREGIONS). */
#define LAB_FE_MAX_REGIONS 8u
/* Guest allocations one posted chain keeps (header, data, an indirect table). */
#define LAB_FE_CHAIN_ALLOCS 4u

/* vhost-user feature bits outside virtio (vhost-user.rst, "Feature bits"). */
#define LAB_FE_F_PROTOCOL_FEATURES 30
#define LAB_FE_PROTOCOL_F_REPLY_ACK 3

/* The virtio feature bits the probe's driver implements: any other offered bit is left
 * unacknowledged, so the back end never sends what the lab's checker cannot read. */
#define LAB_FE_DRIVER_FEATURES                                                               \
	(VL_FEATURE(VL_F_VERSION_1) | VL_FEATURE(VL_F_NET_MRG_RXBUF) |                        \
	 VL_FEATURE(VL_F_RING_INDIRECT_DESC) | VL_FEATURE(VL_F_RING_EVENT_IDX) |              \
	 VL_FEATURE(VL_F_RING_PACKED) | VL_FEATURE(VL_F_IN_ORDER) |                           \
	 VL_FEATURE(LAB_FE_F_PROTOCOL_FEATURES))

struct lab_fe_alloc {
	uint64_t gpa;
	uint32_t len;
};

struct lab_fe_queue {
	bool started;
	struct lab_ring ring;
	int kick, call;         /* the probe's eventfds, sent with SET_VRING_KICK/CALL */
	uint64_t calls;         /* calls counted by lab_fe_take_calls */
	/* Guest RAM held by each chain in flight, by id, freed when it comes back. */
	struct lab_fe_alloc alloc[LAB_FE_MAX_QUEUE_SIZE][LAB_FE_CHAIN_ALLOCS];
};

struct lab_fe_session {
	struct lab_fe_conn c;
	enum vl_layout layout;
	uint64_t offered, acked;             /* virtio + vhost-user feature bits */
	uint64_t proto_offered, proto_acked; /* protocol features (0 without bit 30) */
	uint64_t proto_want;                 /* acked besides REPLY_ACK when offered (set
					      * before lab_fe_negotiate; e.g. LOG_SHMFD) */
	uint64_t features_extra;             /* virtio bits acked besides
					      * LAB_FE_DRIVER_FEATURES when offered and wanted:
					      * offloads a case reads itself (probe_offload.c) */
	bool reply_ack;
	struct lab_gmem *g;
	bool g_borrowed;                     /* g is the caller's: fini leaves it alone */
	struct lab_fe_queue q[LAB_FE_QUEUES];
	struct lab_fe_rec *rec;              /* probe --record: set by the caller, or NULL */
};

/* A session over a connected socket (the session owns it from here on) with fresh guest
 * RAM. Returns 0, or -1 with a message in err. */
int lab_fe_session_init(struct lab_fe_session *s, int sock, enum vl_layout layout,
			int timeout_ms, char *err, size_t errlen);
/* The guest RAM lab_fe_session_init creates for a layout, for a caller that keeps one
 * across sessions (lab_fe_session_init_on). */
void lab_fe_session_gmem_config(enum vl_layout layout, struct lab_gmem_config *cfg);
/* lab_fe_session_init on guest RAM the caller created from lab_fe_session_gmem_config and
 * keeps: the same session as a fresh one when g is new or was reset (lab_gmem_reset) since
 * its last session. fuzz_fe_replies runs thousands of sessions a second; creating 4 MiB of
 * guest memory for each was most of its time. lab_fe_session_fini does not destroy g. */
void lab_fe_session_init_on(struct lab_fe_session *s, int sock, enum vl_layout layout,
			    int timeout_ms, struct lab_gmem *g);
/* A session without guest RAM of its own, for a caller that brings its memory and rings
 * (trace replay over a socket): only the connection and negotiation state. */
void lab_fe_session_open(struct lab_fe_session *s, int sock, enum vl_layout layout,
			 int timeout_ms);
void lab_fe_session_fini(struct lab_fe_session *s);

/* A GET request whose reply is one u64 (GET_FEATURES, GET_PROTOCOL_FEATURES, ...). */
enum lab_fe_rc lab_fe_get_u64(struct lab_fe_session *s, uint32_t request, uint64_t *v);
/* A request without a reply of its own; with REPLY_ACK negotiated it carries NEED_REPLY and
 * a non-zero ack is LAB_FE_NACK. */
enum lab_fe_rc lab_fe_set(struct lab_fe_session *s, uint32_t request, const void *payload,
			  uint32_t size, const int *fds, size_t nfds);

/* GET_FEATURES (and, with bit 30, GET/SET_PROTOCOL_FEATURES taking REPLY_ACK only),
 * SET_OWNER, SET_FEATURES with offered & want & LAB_FE_DRIVER_FEATURES, RING_PACKED added or
 * left out by the session's layout. VERSION_1 must be offered: without it a BAD_REPLY-like
 * refusal is LAB_FE_ERROR with the reason in `what`. */
enum lab_fe_rc lab_fe_negotiate(struct lab_fe_session *s, uint64_t want);
/* After GET_FEATURES filled s->offered: GET/SET_PROTOCOL_FEATURES (REPLY_ACK only) when ack
 * has bit 30, SET_OWNER, SET_FEATURES with exactly ack. */
enum lab_fe_rc lab_fe_ack_features(struct lab_fe_session *s, uint64_t ack);
/* SET_MEM_TABLE: every region of the guest's RAM, each with the memfd. */
enum lab_fe_rc lab_fe_set_mem_table(struct lab_fe_session *s);
/* SET_MEM_TABLE of n regions (gpa, size, uaddr, mmap_offset into memfd `fd`). */
enum lab_fe_rc lab_fe_send_mem_table(struct lab_fe_session *s, const struct vl_mem_region *r,
				     uint32_t n, int fd);
/* Set vring `index` up on rings the caller laid out: SET_VRING_NUM, BASE, ADDR (desc, used,
 * avail as user addresses), KICK, CALL, and ENABLE when bit 30 was negotiated. */
struct lab_fe_vring {
	uint32_t index, size, base;
	uint64_t desc, avail, used;   /* user addresses: split avail/used, packed driver/device */
	int kick, call;
};
enum lab_fe_rc lab_fe_vring_setup(struct lab_fe_session *s, const struct lab_fe_vring *v);
/* Lay out queue qidx (size entries, first index `start`) in the ring area and send
 * SET_VRING_NUM, BASE, ADDR, KICK, CALL, and ENABLE when bit 30 was negotiated. */
enum lab_fe_rc lab_fe_queue_start(struct lab_fe_session *s, uint32_t qidx, uint32_t size,
				  uint16_t start);
/* Set queue qidx up again on the ring it already has (after GET_VRING_BASE stopped it):
 * SET_VRING_NUM, SET_VRING_BASE with `base`, ADDR, KICK, CALL (the same eventfds), ENABLE. */
enum lab_fe_rc lab_fe_queue_resume(struct lab_fe_session *s, uint32_t qidx, uint32_t base);
/* All of the above for both queues: what every traffic case starts from. */
enum lab_fe_rc lab_fe_bring_up(struct lab_fe_session *s, uint64_t want, uint32_t size,
			       uint16_t start);

/* SET_VRING_ENABLE {qidx, on}. */
enum lab_fe_rc lab_fe_enable(struct lab_fe_session *s, uint32_t qidx, bool on);
/* GET_VRING_BASE: stops the ring; *num is the reply's num. */
enum lab_fe_rc lab_fe_get_vring_base(struct lab_fe_session *s, uint32_t qidx, uint32_t *num);

/* Signal the queue's kick eventfd. */
void lab_fe_kick(struct lab_fe_session *s, uint32_t qidx);
/* Has the back end closed the socket? (Only for when no reply is due: a message waiting
 * counts as not gone.) */
bool lab_fe_peer_gone(const struct lab_fe_session *s);
/* Add the calls that arrived on the queue's call eventfd to its count; returns the count. */
uint64_t lab_fe_take_calls(struct lab_fe_session *s, uint32_t qidx);

#endif

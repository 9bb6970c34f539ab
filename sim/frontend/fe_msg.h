/* SPDX-License-Identifier: MIT */
/* The message layer of the lab's vhost-user front end (`vhostlab probe`): the Unix socket
 * (connect as a client, or listen for a back end in client mode), one message out with its
 * fds (SCM_RIGHTS, sim/fd_send.h), one message in, and a reply checked against what it must
 * be. The back end at the other end is anybody's: every wait is bounded by the connection's
 * timeout, and every reply is validated before a byte of it is used. When something is
 * wrong the connection's `what` says what was seen (the evidence of a probe verdict).
 *
 * Message layout, request numbers and flags: QEMU docs/interop/vhost-user.rst, "Message
 * Specification". */
#ifndef LAB_FE_MSG_H
#define LAB_FE_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LAB_FE_HDR_SIZE 12u
/* The largest reply payload the probe takes: every reply it asks for is a u64 or a vring
 * state (8 bytes); anything much bigger is a broken back end, not a message to buffer. */
#define LAB_FE_MAX_PAYLOAD 512u

/* Header flags (vhost-user.rst, "Header"): version 1 in bits 0-1, REPLY, NEED_REPLY. */
#define LAB_FE_F_VERSION 0x1u
#define LAB_FE_F_VERSION_MASK 0x3u
#define LAB_FE_F_REPLY 0x4u
#define LAB_FE_F_NEED_REPLY 0x8u
/* SET_VRING_KICK/CALL payload: no fd follows (polling), bit 8 of the u64. */
#define LAB_FE_VRING_NOFD 0x100ull

/* Front-end requests the probe sends (vhost-user.rst, "Front-end message types"). */
enum lab_fe_request {
	LAB_FE_GET_FEATURES = 1,
	LAB_FE_SET_FEATURES = 2,
	LAB_FE_SET_OWNER = 3,
	LAB_FE_SET_MEM_TABLE = 5,
	LAB_FE_SET_LOG_BASE = 6,
	LAB_FE_SET_VRING_NUM = 8,
	LAB_FE_SET_VRING_ADDR = 9,
	LAB_FE_SET_VRING_BASE = 10,
	LAB_FE_GET_VRING_BASE = 11,
	LAB_FE_SET_VRING_KICK = 12,
	LAB_FE_SET_VRING_CALL = 13,
	LAB_FE_GET_PROTOCOL_FEATURES = 15,
	LAB_FE_SET_PROTOCOL_FEATURES = 16,
	LAB_FE_GET_QUEUE_NUM = 17,
	LAB_FE_SET_VRING_ENABLE = 18,
};

/* Outcome of a message exchange. */
enum lab_fe_rc {
	LAB_FE_OK = 0,
	LAB_FE_BAD_REPLY, /* a reply came and broke the protocol (evidence in `what`) */
	LAB_FE_NACK,      /* REPLY_ACK answered with a non-zero status */
	LAB_FE_TIMEOUT,   /* nothing, or not all of it, within the timeout */
	LAB_FE_CLOSED,    /* the peer closed or reset the socket */
	LAB_FE_ERROR,     /* a failure on the probe's side (errno in `what`) */
};

struct lab_fe_msg {
	uint32_t request, flags, size;
	uint8_t payload[LAB_FE_MAX_PAYLOAD];
};

struct lab_fe_conn {
	int sock;
	int timeout_ms;     /* bound of every wait for a message */
	uint32_t last_sent; /* request of the last message sent: a wedge names it */
	uint32_t sent;      /* messages sent */
	char what[384];     /* the last failure, as seen */
	/* Called after every message sent whole (NULL: nothing): a back end in this process
	 * and thread (the in-process trace replay, replay_session.c) handles what is waiting
	 * on its end of a socketpair, so the reply is there before the front end reads. */
	void (*pump)(void *ctx);
	void *pump_ctx;
};

/* Connect to a back end listening at path, retrying a missing or refusing socket until
 * timeout_ms has passed. Returns the socket, or -1 with a message in err. */
int lab_fe_connect(const char *path, int timeout_ms, char *err, size_t errlen);
/* lab_fe_connect, but a connection the back end closes at once (within 50 ms, before it
 * said anything) is retried until timeout_ms: a back end that serves one front end at a
 * time may still hold the previous connection and refuse the next (vhostlab serve does). */
int lab_fe_connect_served(const char *path, int timeout_ms, char *err, size_t errlen);
/* Listen at path (a stale socket file is replaced), for back ends in client mode. */
int lab_fe_listen(const char *path, char *err, size_t errlen);
/* Take the next back end on a listening socket, waiting at most timeout_ms. */
int lab_fe_accept(int listen_fd, int timeout_ms, char *err, size_t errlen);

/* Send one message with fds attached to its first byte. */
enum lab_fe_rc lab_fe_send(struct lab_fe_conn *c, uint32_t request, uint32_t flags,
			   const void *payload, uint32_t size, const int *fds, size_t nfds);
/* Receive one whole message within the timeout. Fds that come with it are closed (the probe
 * asks for none) and make it a BAD_REPLY; so does a size over LAB_FE_MAX_PAYLOAD. */
enum lab_fe_rc lab_fe_recv(struct lab_fe_conn *c, struct lab_fe_msg *m);
/* Receive the reply to `request` and check its header (version 1, REPLY set, the same
 * request, exactly `size` payload bytes) before copying the payload to out. */
enum lab_fe_rc lab_fe_reply(struct lab_fe_conn *c, uint32_t request, void *out, uint32_t size);
/* Is a message waiting (or the socket closed) within wait_ms? For "no second reply" checks. */
bool lab_fe_readable(const struct lab_fe_conn *c, int wait_ms);

const char *lab_fe_request_name(uint32_t request);
const char *lab_fe_rc_name(enum lab_fe_rc rc);

#endif

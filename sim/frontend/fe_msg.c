/* SPDX-License-Identifier: MIT */
/* The vhost-user message layer of the lab's front end (fe_msg.h). */
#include "fe_msg.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fd_send.h"

__attribute__((format(printf, 3, 4)))
static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *lab_fe_request_name(uint32_t request)
{
	switch (request) {
	case LAB_FE_GET_FEATURES: return "GET_FEATURES";
	case LAB_FE_SET_FEATURES: return "SET_FEATURES";
	case LAB_FE_SET_OWNER: return "SET_OWNER";
	case LAB_FE_SET_MEM_TABLE: return "SET_MEM_TABLE";
	case LAB_FE_SET_LOG_BASE: return "SET_LOG_BASE";
	case LAB_FE_SET_VRING_NUM: return "SET_VRING_NUM";
	case LAB_FE_SET_VRING_ADDR: return "SET_VRING_ADDR";
	case LAB_FE_SET_VRING_BASE: return "SET_VRING_BASE";
	case LAB_FE_GET_VRING_BASE: return "GET_VRING_BASE";
	case LAB_FE_SET_VRING_KICK: return "SET_VRING_KICK";
	case LAB_FE_SET_VRING_CALL: return "SET_VRING_CALL";
	case LAB_FE_GET_PROTOCOL_FEATURES: return "GET_PROTOCOL_FEATURES";
	case LAB_FE_SET_PROTOCOL_FEATURES: return "SET_PROTOCOL_FEATURES";
	case LAB_FE_GET_QUEUE_NUM: return "GET_QUEUE_NUM";
	case LAB_FE_SET_VRING_ENABLE: return "SET_VRING_ENABLE";
	default: return "request";
	}
}

const char *lab_fe_rc_name(enum lab_fe_rc rc)
{
	switch (rc) {
	case LAB_FE_OK: return "ok";
	case LAB_FE_BAD_REPLY: return "bad reply";
	case LAB_FE_NACK: return "nack";
	case LAB_FE_TIMEOUT: return "timeout";
	case LAB_FE_CLOSED: return "closed";
	case LAB_FE_ERROR: return "error";
	}
	return "?";
}

static bool set_path(struct sockaddr_un *sa, const char *path, char *err, size_t errlen)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path)) {
		say(err, errlen, "socket path '%s' is longer than %zu bytes", path,
		    sizeof(sa->sun_path) - 1);
		return false;
	}
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return true;
}

int lab_fe_connect(const char *path, int timeout_ms, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	int64_t deadline = now_ms() + timeout_ms;

	if (!set_path(&sa, path, err, errlen))
		return -1;
	for (;;) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0) {
			say(err, errlen, "socket: %s", strerror(errno));
			return -1;
		}
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return s;
		int e = errno;

		close(s);
		/* A back end that is still starting has no socket yet, or no listener on it. */
		bool retry = e == ENOENT || e == ECONNREFUSED || e == EAGAIN;

		if (!retry || now_ms() >= deadline) {
			say(err, errlen, "connect to '%s': %s", path, strerror(e));
			return -1;
		}
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}

/* Closed by the peer within wait_ms, before it said anything? */
static bool closed_at_once(int sock, int wait_ms)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	uint8_t b;

	return poll(&p, 1, wait_ms) > 0 && recv(sock, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

int lab_fe_connect_served(const char *path, int timeout_ms, char *err, size_t errlen)
{
	for (int waited = 0;; waited += 60) {
		int sock = lab_fe_connect(path, timeout_ms, err, errlen);

		if (sock < 0 || !closed_at_once(sock, 50))
			return sock;
		close(sock);
		if (waited >= timeout_ms) {
			say(err, errlen, "the back end closed every connection at once for %d ms",
			    waited);
			return -1;
		}
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}

int lab_fe_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa;

	if (!set_path(&sa, path, err, errlen))
		return -1;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0) {
		say(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	unlink(path);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(s, 1) != 0) {
		say(err, errlen, "listen on '%s': %s", path, strerror(errno));
		close(s);
		return -1;
	}
	return s;
}

int lab_fe_accept(int listen_fd, int timeout_ms, char *err, size_t errlen)
{
	struct pollfd p = {.fd = listen_fd, .events = POLLIN};
	int n = poll(&p, 1, timeout_ms);

	if (n == 0) {
		say(err, errlen, "no back end connected within %d ms", timeout_ms);
		return -1;
	}
	int s = n > 0 ? accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC) : -1;

	if (s < 0)
		say(err, errlen, "accept: %s", strerror(errno));
	return s;
}

enum lab_fe_rc lab_fe_send(struct lab_fe_conn *c, uint32_t request, uint32_t flags,
			   const void *payload, uint32_t size, const int *fds, size_t nfds)
{
	uint8_t buf[LAB_FE_HDR_SIZE + 1024];

	if (size > sizeof(buf) - LAB_FE_HDR_SIZE) {
		say(c->what, sizeof(c->what), "%s: payload of %u bytes too big to send",
		    lab_fe_request_name(request), size);
		return LAB_FE_ERROR;
	}
	memcpy(buf, &request, 4);
	memcpy(buf + 4, &flags, 4);
	memcpy(buf + 8, &size, 4);
	if (size)
		memcpy(buf + LAB_FE_HDR_SIZE, payload, size);
	c->last_sent = request;
	c->sent++;
	size_t len = LAB_FE_HDR_SIZE + size;
	ssize_t n = lab_fd_send(c->sock, buf, len, fds, nfds);

	if (n == (ssize_t)len) {
		if (c->pump)
			c->pump(c->pump_ctx);
		return LAB_FE_OK;
	}
	/* The socket is blocking: a short send means the peer stopped reading mid-message. */
	if (n == -EPIPE || n == -ECONNRESET) {
		say(c->what, sizeof(c->what), "sending %s: the back end closed the connection",
		    lab_fe_request_name(request));
		return LAB_FE_CLOSED;
	}
	say(c->what, sizeof(c->what), "sending %s: %s", lab_fe_request_name(request),
	    n < 0 ? strerror((int)-n) : "short send");
	return LAB_FE_ERROR;
}

/* Read exactly len bytes by the deadline; fds that ride along are closed and counted. */
static enum lab_fe_rc read_full(struct lab_fe_conn *c, uint8_t *dst, size_t len,
				int64_t deadline, size_t *got, uint32_t *nfds)
{
	*got = 0;
	while (*got < len) {
		int64_t left = deadline - now_ms();
		struct pollfd p = {.fd = c->sock, .events = POLLIN};

		/* Past the deadline the socket is still looked at once, without waiting: bytes
		 * that are already there count. A caller that queued every reply before asking
		 * (fuzz_fe_replies) can then use a timeout of 0 and never sleep. */
		if (poll(&p, 1, left > 0 ? (int)left : 0) == 0)
			return LAB_FE_TIMEOUT;
		union {
			struct cmsghdr h;
			uint8_t room[CMSG_SPACE(sizeof(int) * LAB_FD_SEND_MAX_FDS)];
		} ctl;
		struct iovec iov = {.iov_base = dst + *got, .iov_len = len - *got};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
				    .msg_controllen = sizeof(ctl)};
		ssize_t n = recvmsg(c->sock, &mh, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		for (struct cmsghdr *h = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; h;
		     h = CMSG_NXTHDR(&mh, h)) {
			if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
				close(fd);
			}
			*nfds += (uint32_t)k;
		}
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return LAB_FE_CLOSED;
		if (n < 0) {
			say(c->what, sizeof(c->what), "recvmsg: %s", strerror(errno));
			return LAB_FE_ERROR;
		}
		*got += (size_t)n;
	}
	return LAB_FE_OK;
}

enum lab_fe_rc lab_fe_recv(struct lab_fe_conn *c, struct lab_fe_msg *m)
{
	uint8_t hdr[LAB_FE_HDR_SIZE];
	int64_t deadline = now_ms() + c->timeout_ms;
	size_t got;
	uint32_t nfds = 0;
	enum lab_fe_rc rc = read_full(c, hdr, sizeof(hdr), deadline, &got, &nfds);
	const char *after = lab_fe_request_name(c->last_sent);

	if (rc == LAB_FE_TIMEOUT) {
		say(c->what, sizeof(c->what), "no reply to %s within %d ms (%zu of 12 header bytes)",
		    after, c->timeout_ms, got);
		return rc;
	}
	if (rc == LAB_FE_CLOSED) {
		say(c->what, sizeof(c->what), "the back end closed the connection after %s "
		    "(%zu of 12 header bytes)", after, got);
		return rc;
	}
	if (rc != LAB_FE_OK)
		return rc;
	memcpy(&m->request, hdr, 4);
	memcpy(&m->flags, hdr + 4, 4);
	memcpy(&m->size, hdr + 8, 4);
	const uint32_t size = m->size;

	if (size > LAB_FE_MAX_PAYLOAD) {
		say(c->what, sizeof(c->what), "reply after %s: request %u, flags 0x%x, size %u "
		    "(over the %u bytes any reply the probe asks for may have)", after, m->request,
		    m->flags, size, LAB_FE_MAX_PAYLOAD);
		return LAB_FE_BAD_REPLY;
	}
	rc = read_full(c, m->payload, size, deadline, &got, &nfds);
	if (rc == LAB_FE_TIMEOUT || rc == LAB_FE_CLOSED) {
		say(c->what, sizeof(c->what), "reply after %s: header says %u payload bytes, %zu "
		    "came (%s)", after, size, got, rc == LAB_FE_TIMEOUT ? "then nothing" :
		    "then the connection closed");
		return rc;
	}
	if (rc != LAB_FE_OK)
		return rc;
	if (nfds) {
		say(c->what, sizeof(c->what), "reply after %s (request %u) carried %u fds where "
		    "none are due (closed them)", after, m->request, nfds);
		return LAB_FE_BAD_REPLY;
	}
	return LAB_FE_OK;
}

enum lab_fe_rc lab_fe_reply(struct lab_fe_conn *c, uint32_t request, void *out, uint32_t size)
{
	struct lab_fe_msg m;
	enum lab_fe_rc rc = lab_fe_recv(c, &m);

	if (rc != LAB_FE_OK)
		return rc;
	const char *name = lab_fe_request_name(request);
	uint64_t first = 0;

	memcpy(&first, m.payload, m.size < 8 ? m.size : 8);
	if (m.request != request || (m.flags & LAB_FE_F_VERSION_MASK) != LAB_FE_F_VERSION ||
	    !(m.flags & LAB_FE_F_REPLY) || m.size != size) {
		say(c->what, sizeof(c->what), "reply to %s (request %u): got request %u, flags 0x%x, "
		    "size %u, first payload bytes 0x%" PRIx64 "; expected request %u, version 1 "
		    "with REPLY (0x5), size %u", name, request, m.request, m.flags, m.size, first,
		    request, size);
		return LAB_FE_BAD_REPLY;
	}
	memcpy(out, m.payload, size);
	return LAB_FE_OK;
}

bool lab_fe_readable(const struct lab_fe_conn *c, int wait_ms)
{
	struct pollfd p = {.fd = c->sock, .events = POLLIN};

	return poll(&p, 1, wait_ms) > 0;
}

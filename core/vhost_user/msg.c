/* SPDX-License-Identifier: MIT */
/* vhost-user message framing: read one whole message (header, payload, descriptors) into
 * private memory, send a reply. Nothing here interprets a payload. */
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC */

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vhost_user/msg.h"
#include "vhostlab/vl_error.h"
#include "vhostlab/vl_vhost_user.h"

/* Ancillary room for more descriptors than a message may carry: an excess then arrives and
 * is closed here (and counted), rather than being cut by the kernel unseen. Either way the
 * message is rejected. */
#define CMSG_FDS (VU_MAX_FDS + 8u)

void vu_msg_close_fds(struct vu_msg *m)
{
	for (uint32_t i = 0; i < m->nfds; i++) {
		if (m->fds[i] >= 0)
			close(m->fds[i]);
		m->fds[i] = -1;
	}
	m->nfds = 0;
}

static void take_fds(struct vu_msg *m, struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		const unsigned char *data = CMSG_DATA(c);

		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, data + i * sizeof(int), sizeof(fd));
			if (m->nfds < VU_MAX_FDS) {
				m->fds[m->nfds++] = fd;
			} else {
				close(fd);
				m->fds_dropped++;
			}
		}
	}
	if (mh->msg_flags & MSG_CTRUNC)
		m->fds_dropped++;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until sock is ready for `events` or the deadline passes (VL_ERR_VU_IO). A hang-up
 * or error counts as ready: the next call on the socket reports it. */
static int wait_ready(int sock, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return VL_ERR_VU_IO;
		struct pollfd p = {.fd = sock, .events = events};
		int n = poll(&p, 1, (int)left);

		if (n > 0)
			return VL_OK;
		if (n < 0 && errno != EINTR)
			return VL_ERR_VU_IO;
	}
}

/* Read exactly len bytes into buf, collecting descriptors. The very first read of a message
 * (*deadline == 0) is a plain read: the embedder called us because the socket is readable,
 * or wants to block. Once a message has begun, each further read waits at most until the
 * deadline: a peer that stops half-way must not stall the device's loop. */
static int read_exact(int sock, void *buf, size_t len, struct vu_msg *m, int64_t *deadline)
{
	size_t done = 0;

	while (done < len) {
		if (*deadline != 0) {
			int rc = wait_ready(sock, POLLIN, *deadline);

			if (rc != VL_OK)
				return rc;
		}
		union {
			char buf[CMSG_SPACE(CMSG_FDS * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = (char *)buf + done, .iov_len = len - done};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf)};
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

		if (n > 0) {
			take_fds(m, &mh);
			done += (size_t)n;
			if (*deadline == 0)
				*deadline = now_ms() + VL_VU_IO_TIMEOUT_MS;
			continue;
		}
		if (n == 0)
			return VL_ERR_VU_CLOSED;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (*deadline == 0)
				return VL_ERR_VU_AGAIN;
			continue;
		}
		return errno == ECONNRESET ? VL_ERR_VU_CLOSED : VL_ERR_VU_IO;
	}
	return VL_OK;
}

int vu_msg_recv(int sock, struct vu_msg *m)
{
	int64_t deadline = 0;
	int rc;

	m->nfds = 0;
	m->fds_dropped = 0;
	rc = read_exact(sock, &m->hdr, sizeof(m->hdr), m, &deadline);
	if (rc != VL_OK)
		goto fail;
	/* Read once into a local: the size decides how much more to read. */
	uint32_t size = m->hdr.size;

	if (size > VU_PAYLOAD_MAX) {
		rc = VL_ERR_VU_IO;
		goto fail;
	}
	rc = read_exact(sock, m->p.bytes, size, m, &deadline);
	if (rc != VL_OK)
		goto fail;
	/* Handlers check the size before reading a field, so stale bytes of an earlier message
	 * past this one's payload are never read; zero them anyway, it costs nothing here. */
	memset(m->p.bytes + size, 0, VU_PAYLOAD_MAX - size);
	return VL_OK;
fail:
	vu_msg_close_fds(m);
	return rc;
}

int vu_msg_reply(int sock, uint32_t request, const uint64_t *payload)
{
	return vu_msg_reply_fd(sock, request, payload, payload ? (uint32_t)sizeof(*payload) : 0, -1);
}

int vu_msg_reply_fd(int sock, uint32_t request, const void *payload, uint32_t size, int fd)
{
	unsigned char buf[sizeof(struct vu_hdr) + VU_SIZE_INFLIGHT];
	struct vu_hdr hdr = {.request = request, .flags = VU_VERSION | VU_FLAG_REPLY, .size = size};
	size_t len = sizeof(hdr) + size;
	size_t done = 0;
	int64_t deadline = now_ms() + VL_VU_IO_TIMEOUT_MS;

	if (size > VU_SIZE_INFLIGHT)
		return VL_ERR_VU_IO;
	memcpy(buf, &hdr, sizeof(hdr));
	if (size)
		memcpy(buf + sizeof(hdr), payload, size);
	while (done < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = buf + done, .iov_len = len - done};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

		/* The descriptor goes with the first byte sent, and only then. */
		if (fd >= 0 && done == 0) {
			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = sizeof(ctl.buf);
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &fd, sizeof(fd));
		}
		/* Never block: a peer that does not read its replies must not stall the loop. */
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n >= 0) {
			done += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = wait_ready(sock, POLLOUT, deadline);

			if (rc != VL_OK)
				return rc;
			continue;
		}
		return (errno == EPIPE || errno == ECONNRESET) ? VL_ERR_VU_CLOSED : VL_ERR_VU_IO;
	}
	return VL_OK;
}

/* SPDX-License-Identifier: MIT */
/* Bytes plus SCM_RIGHTS descriptors in one sendmsg: see fd_send.h for the contract. */
#include "fd_send.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>

/* One sendmsg of buf[0, len), fds attached when nfds > 0, retried while interrupted (EINTR
 * means nothing went, so the retry cannot send anything twice). */
static ssize_t send_once(int sock, const char *buf, size_t len, const int *fds, size_t nfds)
{
	union {
		char b[CMSG_SPACE(LAB_FD_SEND_MAX_FDS * sizeof(int))];
		struct cmsghdr align; /* CMSG_FIRSTHDR needs a cmsghdr-aligned buffer */
	} ctl;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

ssize_t lab_fd_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	const char *p = buf;
	size_t sent = 0;

	if (nfds > LAB_FD_SEND_MAX_FDS)
		return -E2BIG;
	if ((nfds > 0 && (len == 0 || !fds)) || (len > 0 && !buf))
		return -EINVAL;
	if (len == 0)
		return 0;
	/* ssize_t cannot report more; the kernel would cut the send there anyway. */
	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX;
	/* The fds go with the first call only: the kernel attached them to its first byte. */
	ssize_t n = send_once(sock, p, len, fds, nfds);

	if (n < 0)
		return n;
	for (sent = (size_t)n; sent < len; sent += (size_t)n) {
		n = send_once(sock, p + sent, len - sent, NULL, 0);
		if (n <= 0)
			break; /* the error, if any, shows on the caller's next send */
	}
	return (ssize_t)sent;
}

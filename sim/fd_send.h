/* SPDX-License-Identifier: MIT */
/* Sending bytes with file descriptors attached (SCM_RIGHTS), for every lab program that plays
 * a vhost-user front end: the unit-test fixture, the vhost-user fuzzer, hostile tests that
 * hand-craft a message, and a front end probing a real back end.
 *
 * The descriptors ride on the first byte sent: the peer's recvmsg that reads that byte gets
 * them all, which is how vhost-user ties a message's fds to its header. */
#ifndef LAB_FD_SEND_H
#define LAB_FD_SEND_H

#include <stddef.h>
#include <sys/types.h>

/* The most descriptors one call attaches. A vhost-user message carries at most 8; the room up
 * to 32 lets a hostile front end send more than any back end accepts, so the back end's
 * handling of an excess can be tested. Far below the kernel's own limit (SCM_MAX_FD, 253). */
#define LAB_FD_SEND_MAX_FDS 32u

/* Send buf[0, len) on the connected stream socket sock, with fds[0, nfds) attached to the
 * first byte. The caller keeps its own copies of the fds (close them when it wants to).
 *
 * Returns:
 *   len      everything was sent (and the fds with it);
 *   n        0 < n < len: the first n bytes and the fds went, then the socket refused more
 *            (a non-blocking socket that filled up, or an error after some bytes: that error
 *            shows on the next send, as with write(2)). The caller sends the rest, without
 *            fds, or gives up;
 *   0        len == 0 and nfds == 0: nothing to do, no system call made;
 *   -E2BIG   nfds > LAB_FD_SEND_MAX_FDS; nothing sent;
 *   -EINVAL  nfds > 0 but len == 0 (a stream socket carries fds only along with data: a
 *            zero-byte send would drop them silently), or buf or fds NULL where needed;
 *            nothing sent;
 *   -errno   sendmsg failed before a byte went (e.g. -EPIPE when the peer is gone: the call
 *            uses MSG_NOSIGNAL, so a vanished peer is an error, not a SIGPIPE; -EBADF for a
 *            bad fd in fds; -EAGAIN on a full non-blocking socket). Nothing sent.
 * An interrupted sendmsg (EINTR) is retried. */
ssize_t lab_fd_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds);

#endif

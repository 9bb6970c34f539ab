/* SPDX-License-Identifier: MIT */
/* lab_fd_send (sim/fd_send.h), the lab's one SCM_RIGHTS sender, over a socketpair: bytes
 * with 0, 1 and LAB_FD_SEND_MAX_FDS descriptors arrive, and each received descriptor is the
 * same open file as the one sent (same device and inode); every input the header refuses is
 * refused with its documented error and nothing reaches the peer; a short send reports how
 * much went, with the fds on the first byte. */
#define _GNU_SOURCE /* memfd_create: every memfd is its own inode */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_send.h"

/* Room for one descriptor more than the sender may attach, so an excess would be seen here
 * rather than cut by the kernel (MSG_CTRUNC). */
#define RECV_FDS (LAB_FD_SEND_MAX_FDS + 1u)

struct pair {
	int tx, rx;
};

static struct pair pair_open(void)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	return (struct pair){sv[0], sv[1]};
}

static void pair_close(struct pair *p)
{
	if (p->tx >= 0)
		close(p->tx);
	if (p->rx >= 0)
		close(p->rx);
}

/* n fresh memfds (distinct inodes). */
static void make_fds(int *fds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		fds[i] = memfd_create("test-fd-send", MFD_CLOEXEC);
		assert_true(fds[i] >= 0);
	}
}

static void close_fds(const int *fds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		close(fds[i]);
}

/* One recvmsg of up to cap bytes, without waiting: returns the bytes read and the
 * descriptors that came with them in fds[0, *nfds). Asserts the control data was not cut. */
static ssize_t recv_fds(int sock, void *buf, size_t cap, int *fds, uint32_t *nfds)
{
	union {
		char b[CMSG_SPACE(RECV_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			    .msg_controllen = sizeof(ctl.b)};
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*nfds = 0;
	if (n < 0)
		return -errno;
	assert_false(mh.msg_flags & MSG_CTRUNC);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		assert_int_equal(c->cmsg_level, SOL_SOCKET);
		assert_int_equal(c->cmsg_type, SCM_RIGHTS);
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		assert_true(*nfds + k <= RECV_FDS);
		memcpy(fds + *nfds, CMSG_DATA(c), k * sizeof(int));
		*nfds += (uint32_t)k;
	}
	return n;
}

/* got[i] is a new descriptor for the open file sent[i]. */
static void assert_same_files(const int *sent, const int *got, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct stat a, b;

		assert_int_not_equal(got[i], sent[i]);
		assert_int_equal(fstat(sent[i], &a), 0);
		assert_int_equal(fstat(got[i], &b), 0);
		assert_int_equal(a.st_dev, b.st_dev);
		assert_int_equal(a.st_ino, b.st_ino);
	}
}

/* Nothing is waiting on the receiving end. */
static void assert_nothing_arrived(int sock)
{
	char b;
	int fds[RECV_FDS];
	uint32_t nfds;

	assert_int_equal(recv_fds(sock, &b, 1, fds, &nfds), -EAGAIN);
}

/* Send `nfds` memfds with a 12-byte message and check what the peer receives. */
static void send_and_check(uint32_t nfds)
{
	struct pair p = pair_open();
	const char msg[12] = "vhost-user!";
	char got[sizeof(msg)];
	int fds[LAB_FD_SEND_MAX_FDS], in[RECV_FDS];
	uint32_t nin;

	make_fds(fds, nfds);
	assert_int_equal(lab_fd_send(p.tx, msg, sizeof(msg), nfds ? fds : NULL, nfds),
			 (ssize_t)sizeof(msg));
	assert_int_equal(recv_fds(p.rx, got, sizeof(got), in, &nin), (ssize_t)sizeof(msg));
	assert_memory_equal(got, msg, sizeof(msg));
	assert_int_equal(nin, nfds);
	assert_same_files(fds, in, nfds);
	close_fds(in, nin);
	close_fds(fds, nfds);
	assert_nothing_arrived(p.rx);
	pair_close(&p);
}

static void test_bytes_without_fds_arrive(void **state)
{
	(void)state;
	send_and_check(0);
}

static void test_one_fd_arrives_as_the_same_file(void **state)
{
	(void)state;
	send_and_check(1);
}

static void test_max_fds_arrive_in_order(void **state)
{
	(void)state;
	send_and_check(LAB_FD_SEND_MAX_FDS);
}

static void test_too_many_fds_are_refused(void **state)
{
	(void)state;
	struct pair p = pair_open();
	int fds[LAB_FD_SEND_MAX_FDS + 1];

	make_fds(fds, LAB_FD_SEND_MAX_FDS + 1);
	assert_int_equal(lab_fd_send(p.tx, "x", 1, fds, LAB_FD_SEND_MAX_FDS + 1), -E2BIG);
	assert_nothing_arrived(p.rx);
	close_fds(fds, LAB_FD_SEND_MAX_FDS + 1);
	pair_close(&p);
}

/* fds need a byte to ride on; NULL pointers where bytes or fds are promised. */
static void test_bad_arguments_are_refused(void **state)
{
	(void)state;
	struct pair p = pair_open();
	int fd;

	make_fds(&fd, 1);
	assert_int_equal(lab_fd_send(p.tx, "x", 0, &fd, 1), -EINVAL);
	assert_int_equal(lab_fd_send(p.tx, "x", 1, NULL, 1), -EINVAL);
	assert_int_equal(lab_fd_send(p.tx, NULL, 1, NULL, 0), -EINVAL);
	assert_int_equal(lab_fd_send(p.tx, NULL, 0, NULL, 0), 0);
	/* A descriptor that is not open: the kernel's EBADF, nothing sent. */
	int bad = -1;

	assert_int_equal(lab_fd_send(p.tx, "x", 1, &bad, 1), -EBADF);
	assert_nothing_arrived(p.rx);
	close(fd);
	pair_close(&p);
}

/* MSG_NOSIGNAL: a peer that went away is -EPIPE, and this process lives on. */
static void test_gone_peer_is_epipe_not_sigpipe(void **state)
{
	(void)state;
	struct pair p = pair_open();
	int fd;

	make_fds(&fd, 1);
	close(p.rx);
	p.rx = -1;
	assert_int_equal(lab_fd_send(p.tx, "x", 1, &fd, 1), -EPIPE);
	close(fd);
	pair_close(&p);
}

/* A non-blocking socket that fills up mid-buffer: the count of bytes that went, the fd with
 * the first of them; then -EAGAIN while the socket stays full. */
static void test_short_send_reports_the_bytes_sent(void **state)
{
	(void)state;
	struct pair p = pair_open();
	const size_t len = 4u << 20;
	char *big = calloc(len, 1);
	int fd, in[RECV_FDS];
	uint32_t nin;

	assert_non_null(big);
	assert_int_equal(fcntl(p.tx, F_SETFL, O_NONBLOCK), 0);
	make_fds(&fd, 1);
	ssize_t n = lab_fd_send(p.tx, big, len, &fd, 1);

	assert_true(n > 0 && (size_t)n < len);
	assert_int_equal(lab_fd_send(p.tx, big, 1, NULL, 0), -EAGAIN);
	assert_true(recv_fds(p.rx, big, len, in, &nin) > 0);
	assert_int_equal(nin, 1);
	assert_same_files(&fd, in, 1);
	close(in[0]);
	close(fd);
	free(big);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_without_fds_arrive),
		cmocka_unit_test(test_one_fd_arrives_as_the_same_file),
		cmocka_unit_test(test_max_fds_arrive_in_order),
		cmocka_unit_test(test_too_many_fds_are_refused),
		cmocka_unit_test(test_bad_arguments_are_refused),
		cmocka_unit_test(test_gone_peer_is_epipe_not_sigpipe),
		cmocka_unit_test(test_short_send_reports_the_bytes_sent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

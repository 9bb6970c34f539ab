/* SPDX-License-Identifier: MIT */
/* Unix socket helpers for both connection modes: the back end listens (server) or connects
 * to a front end that listens (client; the embedder retries to reconnect). */
#define _GNU_SOURCE /* accept4, SOCK_CLOEXEC */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "vhostlab/vl_vhost_user.h"

static int make_addr(const char *path, struct sockaddr_un *sa)
{
	if (!path) {
		errno = EINVAL;
		return -1;
	}
	size_t len = strlen(path);

	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	if (len == 0 || len >= sizeof(sa->sun_path)) {
		errno = len ? ENAMETOOLONG : EINVAL;
		return -1;
	}
	memcpy(sa->sun_path, path, len + 1);
	return 0;
}

static int close_keep_errno(int fd)
{
	int e = errno;

	close(fd);
	errno = e;
	return -1;
}

/* A socket file left by a back end that is gone can be replaced; one somebody still listens
 * on, or any other kind of file, cannot. */
static int clear_stale(const struct sockaddr_un *sa)
{
	struct stat st;

	if (lstat(sa->sun_path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		errno = EEXIST;
		return -1;
	}
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (probe < 0)
		return -1;
	if (connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0) {
		close(probe);
		errno = EADDRINUSE;
		return -1;
	}
	close(probe);
	return unlink(sa->sun_path);
}

int vl_vu_listen(const char *path)
{
	struct sockaddr_un sa;

	if (make_addr(path, &sa) != 0 || clear_stale(&sa) != 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0)
		return close_keep_errno(fd);
	return fd;
}

int vl_vu_accept(int listen_fd)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0 || errno != EINTR)
			return fd;
	}
}

int vl_vu_connect(const char *path)
{
	struct sockaddr_un sa;

	if (make_addr(path, &sa) != 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0)
		return close_keep_errno(fd);
	return fd;
}

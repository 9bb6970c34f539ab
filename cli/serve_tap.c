/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --mode tap:IFNAME`: a Linux TAP device, so the guest talks to the host's
 * network stack. One file descriptor per queue pair (IFF_MULTI_QUEUE when there are
 * several). The device carries a virtio-net header (IFF_VNET_HDR): a guest that asks for
 * checksum offload (VIRTIO_NET_F_CSUM) sends packets whose checksum the kernel must still
 * complete, and only the header can say so. No offloads are enabled towards serve
 * (TUNSETOFFLOAD is left alone), so the kernel hands over complete packets. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "serve.h"

/* struct virtio_net_hdr as the TAP device reads and writes it (no num_buffers). */
#define TAP_HDR_LEN 10
#define TAP_FRAME_MAX (TAP_HDR_LEN + VL_PKT_MAX_LEN)
/* A packet's segments are written with one writev. */
#define TAP_IOV_MAX 64

static int tap_open_one(struct serve *s, const char *name, bool multi)
{
	struct ifreq ifr;
	int hdr_len = TAP_HDR_LEN;
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		serve_event(s, "error", NULL, "cannot open /dev/net/tun: %s", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (multi ? IFF_MULTI_QUEUE : 0);
	memcpy(ifr.ifr_name, name, strlen(name)); /* length checked against IFNAMSIZ */
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		serve_event(s, "error", NULL, "TAP device '%s': %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr_len) < 0) {
		serve_event(s, "error", NULL, "TAP device '%s': header size: %s", name,
			    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static bool tap_up(struct serve *s, const char *name)
{
	struct ifreq ifr;
	int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok = false;

	if (sk < 0) {
		serve_event(s, "error", NULL, "socket: %s", strerror(errno));
		return false;
	}
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(sk, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		ok = ioctl(sk, SIOCSIFFLAGS, &ifr) == 0;
	}
	if (!ok)
		serve_event(s, "error", NULL, "cannot bring '%s' up: %s", name, strerror(errno));
	close(sk);
	return ok;
}

bool serve_tap_open(struct serve *s, const char *name, uint32_t queues)
{
	s->tap_fds = malloc(queues * sizeof(*s->tap_fds));
	s->tap_buf = malloc(TAP_FRAME_MAX);
	if (!s->tap_fds || !s->tap_buf) {
		serve_event(s, "error", NULL, "out of memory");
		return false;
	}
	for (uint32_t q = 0; q < queues; q++)
		s->tap_fds[q] = -1;
	for (uint32_t q = 0; q < queues; q++) {
		s->tap_fds[q] = tap_open_one(s, name, queues > 1);
		if (s->tap_fds[q] < 0)
			return false;
	}
	return tap_up(s, name);
}

void serve_tap_close(struct serve *s)
{
	if (s->tap_fds) {
		for (uint32_t q = 0; q < s->o.queues; q++) {
			if (s->tap_fds[q] >= 0)
				close(s->tap_fds[q]);
		}
	}
	free(s->tap_fds);
	free(s->tap_buf);
	s->tap_fds = NULL;
	s->tap_buf = NULL;
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

bool serve_tap_write(int fd, const struct vl_pkt *pkt)
{
	uint8_t hdr[TAP_HDR_LEN];
	struct iovec iov[TAP_IOV_MAX];
	int n = 1;

	/* The guest's offload request, passed on as it came (the core checked its bounds). */
	hdr[0] = pkt->ol.flags;
	hdr[1] = pkt->ol.gso_type;
	put_le16(hdr + 2, pkt->ol.hdr_len);
	put_le16(hdr + 4, pkt->ol.gso_size);
	put_le16(hdr + 6, pkt->ol.csum_start);
	put_le16(hdr + 8, pkt->ol.csum_offset);
	iov[0] = (struct iovec){.iov_base = hdr, .iov_len = sizeof(hdr)};
	for (const struct vl_pkt *seg = pkt; seg; seg = seg->next) {
		if (n == TAP_IOV_MAX)
			return false;
		iov[n++] = (struct iovec){.iov_base = seg->data, .iov_len = seg->data_len};
	}
	ssize_t w = writev(fd, iov, n);

	return w == (ssize_t)(sizeof(hdr) + pkt->pkt_len);
}

struct vl_pkt *serve_tap_read(struct serve *s, int fd, struct vl_pool *pool, bool *err)
{
	ssize_t r = read(fd, s->tap_buf, TAP_FRAME_MAX);

	*err = false;
	if (r < 0) {
		*err = errno != EAGAIN && errno != EINTR;
		return NULL;
	}
	if (r <= TAP_HDR_LEN) {
		*err = true;
		return NULL;
	}
	uint32_t len = (uint32_t)r - TAP_HDR_LEN;
	struct vl_pkt *pkt = vl_pkt_alloc_len(pool, len);

	if (!pkt) {
		*err = true;
		return NULL;
	}
	/* The kernel completed every checksum (no offloads were enabled): the header says
	 * nothing the guest needs. */
	vl_pkt_write(pkt, 0, s->tap_buf + TAP_HDR_LEN, len);
	return pkt;
}

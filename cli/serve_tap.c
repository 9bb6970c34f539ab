/* SPDX-License-Identifier: MIT */
/* `vhostlab serve --mode tap:IFNAME`: a Linux TAP device, so the guest talks to the host's
 * network stack. One file descriptor per queue pair (IFF_MULTI_QUEUE when there are
 * several). Frames cross it with a virtio-net header (IFF_VNET_HDR), the same offload
 * fields as the guest's:
 *  - guest to TAP: what the guest asked for (NEEDS_CSUM, a GSO type under HOST_TSO4/6 or
 *    HOST_USO) goes to the kernel as it came, which completes or segments it where the
 *    frame goes next. The kernel takes a GSO frame from any TAP writer.
 *  - TAP to guest: the kernel hands over partial checksums and GSO frames only as far as
 *    TUNSETOFFLOAD allows, so serve allows exactly what the guest negotiated (GUEST_CSUM,
 *    GUEST_TSO4/6, GUEST_ECN, GUEST_USO4+6), anew whenever the guest negotiates again, and
 *    nothing while no guest is there. Frames the kernel queued under an earlier setting
 *    are made to fit by the forwarding path's software fallback (serve_fwd.c).
 * UDP segmentation through a TAP device needs Linux 6.2 (TUN_F_USO4/6, and the write side
 * taking GSO_UDP_L4 came with it): serve probes for it at open and does not offer the USO
 * features where it is missing (cmd_serve.c). */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "serve.h"

/* The kernel's UDP segmentation offload bits (linux/if_tun.h from 6.2; Debian 12's headers
 * are 6.1's). Their values are ABI; a kernel that does not know them refuses them with
 * EINVAL, which is how serve finds out. */
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif

/* struct virtio_net_hdr as the TAP device reads and writes it (no num_buffers). */
#define TAP_HDR_LEN 10
/* One byte more than the longest frame serve can move: a read that fills it was longer
 * (a GSO frame just past 64 KiB with its Ethernet header), and is dropped, not passed on
 * cut short. */
#define TAP_FRAME_MAX (TAP_HDR_LEN + VL_PKT_MAX_LEN + 1)
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

/* Which offloads this kernel's TAP takes: all of TSO and checksum (Linux 2.6.27), USO
 * since 6.2. Left with none set: the guest is not there yet. */
static bool tap_probe(struct serve *s, const char *name)
{
	const unsigned tso = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
	int fd = s->tap_fds[0];

	s->tap_uso = ioctl(fd, TUNSETOFFLOAD, tso | TUN_F_USO4 | TUN_F_USO6) == 0;
	if (!s->tap_uso && ioctl(fd, TUNSETOFFLOAD, tso) < 0) {
		serve_event(s, "error", NULL, "TAP device '%s': TUNSETOFFLOAD 0x%x: %s", name, tso,
			    strerror(errno));
		return false;
	}
	if (ioctl(fd, TUNSETOFFLOAD, 0u) < 0) {
		serve_event(s, "error", NULL, "TAP device '%s': TUNSETOFFLOAD 0: %s", name,
			    strerror(errno));
		return false;
	}
	s->tap_offloads = 0;
	return true;
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
	return tap_probe(s, name) && tap_up(s, name);
}

/* The TUNSETOFFLOAD bits for a guest that negotiated features: what it takes on receive.
 * USO only with both of its features (the kernel has one GSO type for UDP over IPv4 and
 * IPv6, and refuses one bit without the other). */
static unsigned tap_offloads_for(const struct serve *s, uint64_t f)
{
	unsigned t = 0;

	if (!(f & VL_FEATURE(VL_F_NET_GUEST_CSUM)))
		return 0; /* every offload towards the guest needs its checksum offload */
	t |= TUN_F_CSUM;
	if (f & VL_FEATURE(VL_F_NET_GUEST_TSO4))
		t |= TUN_F_TSO4;
	if (f & VL_FEATURE(VL_F_NET_GUEST_TSO6))
		t |= TUN_F_TSO6;
	if ((t & (TUN_F_TSO4 | TUN_F_TSO6)) && (f & VL_FEATURE(VL_F_NET_GUEST_ECN)))
		t |= TUN_F_TSO_ECN;
	if (s->tap_uso && (f & VL_FEATURE(VL_F_NET_GUEST_USO4)) &&
	    (f & VL_FEATURE(VL_F_NET_GUEST_USO6)))
		t |= TUN_F_USO4 | TUN_F_USO6;
	return t;
}

static void tap_offload_names(unsigned t, char *buf, size_t n)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {{TUN_F_CSUM, "csum"}, {TUN_F_TSO4, "tso4"}, {TUN_F_TSO6, "tso6"},
		     {TUN_F_TSO_ECN, "tso_ecn"}, {TUN_F_USO4, "uso4"}, {TUN_F_USO6, "uso6"}};
	size_t used = 0;

	snprintf(buf, n, "none");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(t & names[i].bit))
			continue;
		int w = snprintf(buf + used, n - used, "%s%s", used ? " " : "", names[i].name);

		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
	}
}

void serve_tap_offloads(struct serve *s, uint64_t guest_features)
{
	unsigned t = tap_offloads_for(s, guest_features);
	char names[64];

	if (!s->tap_fds || t == s->tap_offloads)
		return;
	tap_offload_names(t, names, sizeof(names));
	/* One call sets the device's features, whichever of its queues it is made on. */
	if (ioctl(s->tap_fds[0], TUNSETOFFLOAD, t) < 0) {
		serve_event(s, "error", NULL,
			    "TAP device '%s': TUNSETOFFLOAD 0x%x (%s): %s; the kernel keeps "
			    "handing over what it did before",
			    s->o.tap_name, t, names, strerror(errno));
		return;
	}
	s->tap_offloads = t;
	serve_event(s, "tap", NULL, "TAP device '%s' hands the guest offloads: %s (TUNSETOFFLOAD "
		    "0x%x)", s->o.tap_name, names, t);
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

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
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

bool serve_tap_write_raw(int fd, const uint8_t *frame, uint32_t len)
{
	uint8_t hdr[TAP_HDR_LEN] = {0};
	struct iovec iov[2] = {{.iov_base = hdr, .iov_len = sizeof(hdr)},
			       {.iov_base = (void *)frame, .iov_len = len}};

	return writev(fd, iov, 2) == (ssize_t)(sizeof(hdr) + len);
}

struct vl_pkt *serve_tap_read(struct serve *s, int fd, struct vl_pool *pool, bool *err)
{
	ssize_t r = read(fd, s->tap_buf, TAP_FRAME_MAX);

	*err = false;
	if (r < 0) {
		*err = errno != EAGAIN && errno != EINTR;
		return NULL;
	}
	/* A frame longer than the buffer is cut, and the kernel then reports its whole
	 * length: at least the buffer's. */
	if (r <= TAP_HDR_LEN || r >= TAP_FRAME_MAX) {
		*err = true; /* no frame, or one longer than a packet can be */
		return NULL;
	}
	uint32_t len = (uint32_t)r - TAP_HDR_LEN;
	struct vl_pkt *pkt = vl_pkt_alloc_len(pool, len);

	if (!pkt) {
		*err = true;
		return NULL;
	}
	vl_pkt_write(pkt, 0, s->tap_buf + TAP_HDR_LEN, len);
	/* What the kernel left to the guest, within what TUNSETOFFLOAD allowed (the fields are
	 * the kernel's, so trusted; the forwarding path still checks them against the guest's
	 * features before they reach it). DATA_VALID (the kernel checked the checksum) comes
	 * whatever TUNSETOFFLOAD says: for a guest without GUEST_CSUM it is only a hint, and
	 * dropping it saves the software fallback a copy of the frame. */
	const uint8_t *h = s->tap_buf;

	pkt->ol = (struct vl_offload){.flags = h[0], .gso_type = h[1],
				      .hdr_len = get_le16(h + 2), .gso_size = get_le16(h + 4),
				      .csum_start = get_le16(h + 6), .csum_offset = get_le16(h + 8)};
	if (!(s->tap_offloads & TUN_F_CSUM))
		pkt->ol.flags &= (uint8_t)~VL_NET_HDR_F_DATA_VALID;
	return pkt;
}

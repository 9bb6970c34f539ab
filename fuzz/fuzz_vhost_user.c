/* SPDX-License-Identifier: MIT */
/* fuzz_vhost_user: a hostile vhost-user front end and its hostile guest, in-process.
 *
 * The input (fuzz_vhost_user.h) is a sequence of messages -- request, flags, size, payload,
 * and how many fds of which kind (guest memfd, eventfd, log memfd, a memfd too small) -- sent
 * over a socketpair to a fresh vl_vu_dev (2 queue pairs, every feature offered), interleaved
 * with guest memory writes, buffers posted on the rings, datapath bursts on every ready queue
 * (dequeue on odd rings, enqueue on even ones, kicks consumed, calls signalled) and messages
 * cut short by the front end going away (then a new connection).
 *
 * Checked on every input: every vl_vu_dev_handle result is a vl_err code, fatal ones only for
 * connections that really are broken (and the device is then empty: no table, no ready
 * queue); replies are well-formed answers to the request just sent; a ready queue has a size
 * its layout allows and its fds are open; dequeued packets are 1..65535 bytes. At the end the
 * device is destroyed and the process holds exactly the fds and guest mappings it held
 * before the input, and every packet buffer is back in its pool. ASan/UBSan and LeakSanitizer
 * watch the rest. */
/* _GNU_SOURCE (memfd_create, eventfd) comes from the build, as for every fuzz target. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_send.h"
#include "fuzz_vhost_user.h"
#include "ring_write.h"

struct fz_vu_env {
	bool ready;
	int mem_fd, log_fd, small_fd;
	unsigned long long kib0;  /* KiB of the memfds mapped between inputs: the guest view */
	uint8_t *mem;             /* the guest's (and front end's) view */
	struct vl_pool *pool;
};

static struct fz_vu_env env;

/* Per-input state of the fake front end and its guest driver. */
struct fz_vu_run {
	struct vl_vu_dev *dev;
	int fe, be;
	uint16_t avail_idx[FZ_VU_RINGS]; /* split */
	uint16_t avail_pos[FZ_VU_RINGS]; /* packed */
	bool avail_wrap[FZ_VU_RINGS];
	uint16_t next_id[FZ_VU_RINGS];
	uint32_t msgs, fatal, bursts, pkts;
	bool sent_memfd;                 /* a guest, log or small memfd went to the device, or
					  * it was asked to make an inflight area */
};

static unsigned long long mapped_kib(void);

static void env_init(void)
{
	if (env.ready)
		return;
	env.mem_fd = memfd_create("fz-vu-guest", MFD_CLOEXEC);
	env.log_fd = memfd_create("fz-vu-log", MFD_CLOEXEC);
	env.small_fd = memfd_create("fz-vu-small", MFD_CLOEXEC);
	if (env.mem_fd < 0 || env.log_fd < 0 || env.small_fd < 0 ||
	    ftruncate(env.mem_fd, FZ_VU_MEM_SIZE) != 0 ||
	    ftruncate(env.log_fd, FZ_VU_LOG_SIZE) != 0 ||
	    ftruncate(env.small_fd, FZ_VU_SMALL_SIZE) != 0)
		fz_fail("cannot create the guest memfds: %s", strerror(errno));
	env.mem = mmap(NULL, FZ_VU_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, env.mem_fd, 0);
	if (env.mem == MAP_FAILED)
		fz_fail("cannot map guest memory: %s", strerror(errno));
	env.pool = vl_pool_create(2048, 2048);
	if (!env.pool)
		fz_fail("cannot create the pool");
	env.kib0 = mapped_kib();
	env.ready = true;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		fz_fail("opendir /proc/self/fd: %s", strerror(errno));
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* KiB of this target's memfds mapped in the process (the harness maps only the guest), and
 * of the inflight areas the device makes itself (GET_INFLIGHT_FD). */
static unsigned long long mapped_kib(void)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long long lo, hi, kib = 0;

	if (!m)
		fz_fail("fopen /proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), m))
		if ((strstr(line, "memfd:fz-vu-") || strstr(line, "memfd:vhostlab-inflight")) &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			kib += (hi - lo) / 1024;
	fclose(m);
	return kib;
}

static void connect_pair(struct fz_vu_run *r)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		fz_fail("socketpair: %s", strerror(errno));
	r->fe = sv[0];
	r->be = sv[1];
	/* The front end never blocks on the device's replies (read with MSG_DONTWAIT). */
}

static void disconnect_pair(struct fz_vu_run *r)
{
	close(r->fe);
	close(r->be);
}

static int make_fd(struct fz_vu_run *r, uint8_t kind)
{
	int fd = -1;

	r->sent_memfd |= kind % FZ_VU_FD__COUNT != FZ_VU_FD_EVENT;
	switch (kind % FZ_VU_FD__COUNT) {
	case FZ_VU_FD_GUEST:
		fd = dup(env.mem_fd);
		break;
	case FZ_VU_FD_EVENT:
		fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		break;
	case FZ_VU_FD_LOG:
		fd = dup(env.log_fd);
		break;
	default:
		fd = dup(env.small_fd);
		break;
	}
	if (fd < 0)
		fz_fail("cannot make an fd: %s", strerror(errno));
	return fd;
}

/* Send bytes [0, len) of buf with fds attached to the first byte (nothing when len is 0: a
 * cut message may end before its first byte). The front end's copies of the fds are closed
 * right after: the device must close its own. */
static void send_with_fds(struct fz_vu_run *r, const uint8_t *buf, size_t len, int *fds,
			  uint32_t nfds)
{
	if (len) {
		ssize_t n = lab_fd_send(r->fe, buf, len, fds, nfds);

		if (n != (ssize_t)len)
			fz_fail("send of %zu bytes with %u fds: %s", len, nfds,
				n < 0 ? strerror((int)-n) : "cut short");
	}
	for (uint32_t i = 0; i < nfds; i++)
		close(fds[i]);
}

/* After a fatal result the device must hold nothing of the connection. */
static void check_empty(const struct fz_vu_run *r, const char *why)
{
	if (vl_vu_dev_mem(r->dev))
		fz_fail("%s: the memory table survived the connection", why);
	for (uint32_t q = 0; q < FZ_VU_RINGS; q++)
		if (vl_vu_dev_queue(r->dev, q) || vl_vu_dev_kick_fd(r->dev, q) >= 0 ||
		    vl_vu_dev_call_fd(r->dev, q) >= 0)
			fz_fail("%s: ring %u survived the connection", why, q);
	if (vl_vu_dev_features(r->dev) || vl_vu_dev_protocol_features(r->dev))
		fz_fail("%s: features survived the connection", why);
}

static void check_rings(const struct fz_vu_run *r)
{
	for (uint32_t q = 0; q < FZ_VU_RINGS; q++) {
		struct vl_vq *vq = vl_vu_dev_queue(r->dev, q);
		int k = vl_vu_dev_kick_fd(r->dev, q), c = vl_vu_dev_call_fd(r->dev, q);

		if ((k >= 0 && fcntl(k, F_GETFD) < 0) || (c >= 0 && fcntl(c, F_GETFD) < 0))
			fz_fail("ring %u: the device holds a closed fd", q);
		if (!vq)
			continue;
		uint32_t size = vl_vq_size(vq);
		bool packed = (vl_vq_features(vq) & VL_FEATURE(VL_F_RING_PACKED)) != 0;

		if (size == 0 || size > VL_QUEUE_SIZE_MAX || (!packed && (size & (size - 1))))
			fz_fail("ring %u runs with size %u", q, size);
		if (vl_vq_features(vq) & ~(vl_vu_dev_features(r->dev)))
			fz_fail("ring %u runs with features not negotiated", q);
	}
}

/* Read every reply waiting: each must answer `request`, be a reply, carry 0 or 8 bytes. */
static void drain_replies(struct fz_vu_run *r, uint32_t request)
{
	uint32_t hdr[3];
	uint8_t payload[24];
	int n = 0;

	/* 0 or 8 bytes, or GET_INFLIGHT_FD's 24 (its descriptor is not taken: the kernel
	 * closes a descriptor nobody receives). */
	while (recv(r->fe, hdr, 12, MSG_DONTWAIT) == 12) {
		const bool inflight = request == FZ_VU_GET_INFLIGHT_FD && hdr[2] == 24;

		if (hdr[0] != request || hdr[1] != (FZ_VU_VERSION | 4u) ||
		    (hdr[2] != 0 && hdr[2] != 8 && !inflight))
			fz_fail("bad reply to request %u: request %u flags %#x size %u", request,
				hdr[0], hdr[1], hdr[2]);
		if (hdr[2] && recv(r->fe, payload, hdr[2], MSG_DONTWAIT) != (ssize_t)hdr[2])
			fz_fail("reply to request %u cut short", request);
		if (++n > 1)
			fz_fail("request %u answered twice", request);
	}
}

/* Handle what was sent; a fatal result means the connection is gone: start a new one. */
static void handle(struct fz_vu_run *r, uint32_t request, bool must_be_fatal)
{
	int rc = vl_vu_dev_handle(r->dev, r->be);

	r->msgs++;
	if (fz_verbose())
		fprintf(stderr, "  %s (%u): %s\n", vl_vu_request_name(request), request,
			vl_strerror(rc));
	if (rc < 0 || rc >= VL_ERR__COUNT || rc == VL_ERR_VU_AGAIN)
		fz_fail("request %u: vl_vu_dev_handle returned %d", request, rc);
	if (must_be_fatal && !vl_vu_err_fatal(rc))
		fz_fail("request %u cut short: vl_vu_dev_handle returned %d (%s)", request, rc,
			vl_strerror(rc));
	if (vl_vu_err_fatal(rc)) {
		r->fatal++;
		check_empty(r, vl_strerror(rc));
		disconnect_pair(r);
		connect_pair(r);
		return;
	}
	drain_replies(r, request);
	check_rings(r);
}

static void op_msg(struct fz_vu_run *r, struct fz_in *in)
{
	static uint8_t buf[12 + FZ_VU_PAYLOAD_LIMIT];
	uint8_t rq = fz_u8(in);
	uint32_t request = rq == 0xff ? fz_u32(in) : rq;
	uint32_t flags = fz_u8(in);
	uint32_t nfds = fz_u8(in) % 11u;
	int fds[16];

	for (uint32_t i = 0; i < nfds; i++)
		fds[i] = make_fd(r, fz_u8(in));
	uint32_t size = fz_u16(in);
	uint32_t hdr[3] = {request, flags, size};
	size_t len = 12;

	memcpy(buf, hdr, 12);
	if (size <= FZ_VU_PAYLOAD_LIMIT) {
		uint32_t take = size < FZ_VU_MAX_SENT ? size : FZ_VU_MAX_SENT;

		fz_bytes(in, buf + 12, take);
		memset(buf + 12 + take, 0, size - take);
		len += size;
	}
	/* The device maps an inflight area of its own for GET_INFLIGHT_FD: check the maps. */
	r->sent_memfd |= request == FZ_VU_GET_INFLIGHT_FD;
	send_with_fds(r, buf, len, fds, nfds);
	handle(r, request, size > FZ_VU_PAYLOAD_LIMIT);
}

static void op_cut(struct fz_vu_run *r, struct fz_in *in)
{
	static uint8_t buf[12 + FZ_VU_MAX_SENT];
	uint32_t nbytes = fz_u16(in), nfds = fz_u8(in) % 3u;
	uint32_t request = fz_u8(in), flags = fz_u8(in), size = fz_u16(in) % (FZ_VU_MAX_SENT + 1);
	uint32_t hdr[3] = {request, flags, size};
	int fds[2];

	memcpy(buf, hdr, 12);
	fz_bytes(in, buf + 12, size);
	nbytes %= 12 + size; /* always short of the whole message */
	for (uint32_t i = 0; i < nfds; i++)
		fds[i] = make_fd(r, FZ_VU_FD_EVENT);
	if (nbytes == 0) {
		for (uint32_t i = 0; i < nfds; i++)
			close(fds[i]);
		nfds = 0;
	}
	send_with_fds(r, buf, nbytes, fds, nfds);
	shutdown(r->fe, SHUT_WR);
	handle(r, request, true);
}

static void op_guest(struct fz_in *in)
{
	uint32_t off = fz_u32(in) % FZ_VU_MEM_SIZE, len = fz_u8(in);
	uint8_t bytes[256];

	fz_bytes(in, bytes, len);
	if (len > FZ_VU_MEM_SIZE - off)
		len = FZ_VU_MEM_SIZE - off;
	memcpy(env.mem + off, bytes, len);
}

/* The guest driver: one-descriptor buffers at the seeds' fixed ring layout, in the layout and
 * size of the device's queue (nothing if the ring is not ready: the driver would not post). */
static void op_post(struct fz_vu_run *r, struct fz_in *in)
{
	uint32_t q = fz_u8(in) % FZ_VU_RINGS, count = fz_u8(in) % 16u + 1, len = fz_u16(in) % 1024u + 1;
	struct vl_vq *vq = vl_vu_dev_queue(r->dev, q);

	if (!vq)
		return;
	uint32_t size = vl_vq_size(vq);
	bool packed = (vl_vq_features(vq) & VL_FEATURE(VL_F_RING_PACKED)) != 0;
	uint8_t *ring = env.mem + FZ_VU_RING(q);
	uint16_t wflag = (q % 2 == 0) ? VL_DESC_F_WRITE : 0;

	if (size > FZ_VU_MAX_QSIZE)
		return; /* the fixed layout holds up to 256 entries */
	for (uint32_t i = 0; i < count; i++) {
		uint16_t id = (uint16_t)(r->next_id[q]++ % size);
		uint64_t buf = FZ_VU_BUF(q, id);

		if (!wflag)
			memset(env.mem + buf, 0, 12); /* a zero virtio-net header, then payload */
		/* One-descriptor chains, written by the lab's ring writer (sim/ring_write.h). */
		if (!packed) {
			struct vl_split_avail *av = (struct vl_split_avail *)(ring + FZ_VU_AVAIL_OFF);

			lab_rw_split_desc(ring, id, FZ_VU_GPA + buf, len, wflag, 0);
			lab_rw_split_avail(av, size, r->avail_idx[q]++, id);
			lab_rw_split_publish(av, r->avail_idx[q]);
		} else {
			struct lab_pdesc e = {FZ_VU_GPA + buf, len, wflag};
			bool wrap = !r->avail_wrap[q]; /* stored inverted: false = wrap counter 1 */
			uint16_t pos = r->avail_pos[q];

			lab_rw_packed_chain((struct vl_packed_desc *)(void *)ring, size, &pos, &wrap,
					    id, &e, 1);
			r->avail_pos[q] = pos;
			r->avail_wrap[q] = !wrap;
		}
	}
}

static void op_burst(struct fz_vu_run *r, struct fz_in *in)
{
	uint32_t npkts = fz_u8(in) % 9u, len = fz_u16(in) % 2048u + 1;
	struct vl_pkt *pkts[32];
	uint8_t st[32];

	r->bursts++;
	for (uint32_t q = 0; q < FZ_VU_RINGS; q++) {
		struct vl_vq *vq = vl_vu_dev_queue(r->dev, q);

		if (!vq)
			continue;
		(void)vl_vu_dev_consume_kick(r->dev, q);
		if (q % 2) {
			uint16_t n = vl_net_dequeue(vq, env.pool, pkts, 32);

			for (uint16_t i = 0; i < n; i++) {
				if (pkts[i]->pkt_len == 0 || pkts[i]->pkt_len > VL_PKT_MAX_LEN)
					fz_fail("ring %u dequeued a packet of %u bytes", q,
						pkts[i]->pkt_len);
				vl_pkt_free(pkts[i]);
			}
			r->pkts += n;
		} else {
			uint32_t k = 0;

			for (; k < npkts; k++) {
				pkts[k] = vl_pkt_alloc_len(env.pool, len);
				if (!pkts[k])
					break;
				memset(pkts[k]->data, (int)k, pkts[k]->data_len);
			}
			uint16_t done = vl_net_enqueue(vq, pkts, (uint16_t)k, st);

			if (done > k)
				fz_fail("ring %u: enqueue handled %u of %u packets", q, done, k);
			vl_pkt_free_bulk(pkts, k);
			r->pkts += done;
		}
		(void)vl_vu_dev_notify(r->dev, q);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vl_vu_config cfg;
	struct fz_vu_run r = {0};
	struct fz_in in = fz_in_make(data, size);
	int err;

	fz_set_target("fuzz_vhost_user");
	env_init();
	const int fds0 = count_fds();

	/* Rings, buffers and whatever an earlier input wrote: a fresh guest. */
	memset(env.mem, 0, FZ_VU_MEM_SIZE);
	vl_vu_config_init(&cfg);
	cfg.features = VL_VU_FEATURES_SUPPORTED;
	cfg.max_queue_pairs = FZ_VU_RINGS / 2;
	r.dev = vl_vu_dev_create(&cfg, &err);
	if (!r.dev)
		fz_fail("vl_vu_dev_create: %s", vl_strerror(err));
	connect_pair(&r);

	for (uint32_t ops = 0; ops < FZ_VU_MAX_OPS && fz_more(&in); ops++) {
		switch (fz_u8(&in) % FZ_VU_OP__COUNT) {
		case FZ_VU_MSG:
			op_msg(&r, &in);
			break;
		case FZ_VU_GUEST:
			op_guest(&in);
			break;
		case FZ_VU_POST:
			op_post(&r, &in);
			break;
		case FZ_VU_BURST:
			op_burst(&r, &in);
			break;
		default:
			op_cut(&r, &in);
			break;
		}
	}

	vl_vu_dev_destroy(r.dev);
	disconnect_pair(&r);
	if (count_fds() != fds0)
		fz_fail("fd leak: %d fds before the input, %d after", fds0, count_fds());
	/* Reading /proc/self/maps is most of an input's time in an ASan process (its maps run
	 * to hundreds of lines), so it is read only after inputs that sent the device one of
	 * the memfds, the only way it can map them. Every input starts from env.kib0: the
	 * previous one either sent none, so could map none, or was checked against it here. */
	if (r.sent_memfd && mapped_kib() != env.kib0)
		fz_fail("mapping leak: %llu KiB of guest memfds mapped before, %llu after",
			env.kib0, mapped_kib());
	/* The log memfd may have served as an inflight area, which a device reads: every input
	 * starts from a zeroed one, as it starts from zeroed guest memory. */
	if (r.sent_memfd && (ftruncate(env.log_fd, 0) != 0 ||
			     ftruncate(env.log_fd, FZ_VU_LOG_SIZE) != 0))
		fz_fail("cannot clear the log memfd: %s", strerror(errno));
	if (vl_pool_free_count(env.pool) != vl_pool_capacity(env.pool))
		fz_fail("packet leak: %u of %u pool buffers free", vl_pool_free_count(env.pool),
			vl_pool_capacity(env.pool));
	if (fz_verbose())
		fprintf(stderr, "fuzz_vhost_user: %u messages (%u fatal), %u bursts, %u packets\n",
			r.msgs, r.fatal, r.bursts, r.pkts);
	return 0;
}

#ifdef VL_FUZZ_MUTATOR
/* Mutations cut and splice at the operations (fuzz/struct_mutator.h): where each starts,
 * reading their arguments as the op_* functions above do. */
#include "struct_mutator.h"

static void skip(struct fz_in *in, size_t len)
{
	in->off = len < in->n - in->off ? in->off + len : in->n;
}

static size_t vu_starts(const uint8_t *data, size_t size, size_t *st, size_t max)
{
	struct fz_in in = fz_in_make(data, size);
	size_t n = 0;

	for (uint32_t ops = 0; ops < FZ_VU_MAX_OPS && fz_more(&in) && n < max; ops++) {
		st[n++] = in.off;
		switch (fz_u8(&in) % FZ_VU_OP__COUNT) {
		case FZ_VU_MSG: {
			if (fz_u8(&in) == 0xff)
				(void)fz_u32(&in);
			(void)fz_u8(&in);
			skip(&in, fz_u8(&in) % 11u);
			uint32_t sz = fz_u16(&in);

			if (sz <= FZ_VU_PAYLOAD_LIMIT)
				skip(&in, sz < FZ_VU_MAX_SENT ? sz : FZ_VU_MAX_SENT);
			break;
		}
		case FZ_VU_GUEST:
			(void)fz_u32(&in);
			skip(&in, fz_u8(&in));
			break;
		case FZ_VU_POST:
			skip(&in, 4);
			break;
		case FZ_VU_BURST:
			skip(&in, 3);
			break;
		default:
			skip(&in, 5);
			skip(&in, fz_u16(&in) % (FZ_VU_MAX_SENT + 1));
			break;
		}
	}
	return n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static const struct fz_seq_shape shape = {0, vu_starts, FZ_VU_OP__COUNT};

	return fz_seq_mutate(&shape, data, size, max_size, seed);
}
#endif

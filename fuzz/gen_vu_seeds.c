/* SPDX-License-Identifier: MIT */
/* fuzz_vhost_user seeds: message sequences as QEMU and DPDK send them, and hostile ones. */
#include <stdio.h>
#include <string.h>

#include "fuzz_vhost_user.h"
#include "gen_corpus.h"

/* ---- fuzz_vhost_user seeds ------------------------------------------------------------- */

#define VU_F(bit) VL_FEATURE(bit)
#define VU_NET_FEATURES                                                                      \
	(VU_F(VL_F_VERSION_1) | VU_F(VL_F_NET_MRG_RXBUF) | VU_F(VL_F_IN_ORDER) |               \
	 VU_F(VL_F_RING_EVENT_IDX) | VU_F(VL_F_RING_INDIRECT_DESC) |                           \
	 VU_F(VL_VU_F_PROTOCOL_FEATURES))

#define VU_DPDK_PROTO                                                                        \
	(VL_FEATURE(VL_VU_PROTOCOL_F_MQ) | VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |             \
	 VL_FEATURE(VL_VU_PROTOCOL_F_STATUS) | VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD) |          \
	 VL_FEATURE(VL_VU_PROTOCOL_F_MTU) | VL_FEATURE(VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS))

/* DPDK virtio-user's start-up sequence (real-front-ends.md) for `nrings` rings of `qsize`,
 * negotiating the protocol features `proto`. */
static void vu_start(struct fz_out *o, bool packed, uint64_t features, uint32_t nrings,
		     uint32_t qsize, uint64_t proto)
{
	uint64_t st = 0xb;

	if (packed)
		features |= VU_F(VL_F_RING_PACKED);
	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_none(o, FZ_VU_GET_PROTOCOL_FEATURES);
	fzvu_u64(o, FZ_VU_SET_PROTOCOL_FEATURES, proto);
	for (uint32_t q = 0; q < nrings; q++)
		fzvu_ring_fd(o, FZ_VU_SET_VRING_CALL, q, 1);
	fzvu_u64(o, FZ_VU_SET_FEATURES, features);
	fzvu_msg(o, FZ_VU_SET_STATUS, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, &st, 8);
	fzvu_none(o, FZ_VU_GET_STATUS);
	fzvu_none(o, FZ_VU_GET_STATUS);
	fzvu_mem_table(o, 1);
	for (uint32_t q = 0; q < nrings; q++)
		fzvu_ring(o, q, qsize, packed, packed ? 0x8000u : 0u);
	for (uint32_t q = 0; q < nrings; q++)
		fzvu_state(o, FZ_VU_SET_VRING_ENABLE, q, 1);
	st = 0xf;
	fzvu_msg(o, FZ_VU_SET_STATUS, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, &st, 8);
}

static void vu_dpdk(struct fz_out *o, bool packed, uint64_t features, uint32_t nrings,
		    uint32_t qsize)
{
	vu_start(o, packed, features, nrings, qsize, VU_DPDK_PROTO);
}

/* Guest buffers both ways, then bursts. */
static void vu_traffic(struct fz_out *o, uint32_t nrings)
{
	for (int round = 0; round < 3; round++) {
		for (uint8_t q = 0; q < nrings; q++)
			fzvu_post(o, q, 8, q % 2 ? (uint16_t)(60 + 200 * round) : 1024);
		fzvu_burst(o, 4, (uint16_t)(64 + 300 * round));
	}
}

static void vu_seed(const char *name, bool packed, void (*body)(struct fz_out *o, bool packed))
{
	struct fz_out o;
	char full[64];

	fz_out_init(&o);
	body(&o, packed);
	snprintf(full, sizeof(full), "%s-%s", name, packed ? "packed" : "split");
	save("fuzz_vhost_user", full, &o);
}

static void vu_body_dpdk(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	vu_traffic(o, 2);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0, 0);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 1, 0);
}

static void vu_body_mq(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES | VU_F(VL_F_NET_MQ) | VU_F(VL_F_NET_CTRL_VQ), 4, 32);
	fzvu_none(o, FZ_VU_GET_QUEUE_NUM);
	vu_traffic(o, 4);
}

/* The memory table re-sent while buffers are posted, bracketed by ENABLE 0/1 (DPDK) or not
 * (QEMU), as the guest's memory is announced in more regions. */
static void vu_body_mem_swap(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_post(o, 1, 8, 300);
	fzvu_post(o, 0, 8, 1024);
	fzvu_mem_table(o, 2);
	fzvu_burst(o, 4, 500);
	fzvu_post(o, 1, 8, 400);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 0, 0);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 1, 0);
	fzvu_mem_table(o, 4);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 0, 1);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 1, 1);
	fzvu_burst(o, 4, 700);
}

/* QEMU with CONFIGURE_MEM_SLOTS: memory added and removed region by region; packed base with
 * the used half. */
static void vu_body_mem_slots(struct fz_out *o, bool packed)
{
	const uint64_t proto = VL_FEATURE(VL_VU_PROTOCOL_F_MQ) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS);

	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_none(o, FZ_VU_GET_PROTOCOL_FEATURES);
	fzvu_u64(o, FZ_VU_SET_PROTOCOL_FEATURES, proto);
	fzvu_none(o, FZ_VU_GET_QUEUE_NUM);
	fzvu_none(o, FZ_VU_GET_MAX_MEM_SLOTS);
	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_u64(o, FZ_VU_SET_FEATURES, VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0));
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0, 0x20000);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0x20000, FZ_VU_MEM_SIZE - 0x20000);
	for (uint32_t q = 0; q < 2; q++) {
		fzvu_ring(o, q, 128, packed, packed ? 0x80008000u : 0u);
		fzvu_ring_fd(o, FZ_VU_SET_VRING_CALL, q, 1);
		fzvu_state(o, FZ_VU_SET_VRING_ENABLE, q, 1);
	}
	vu_traffic(o, 2);
	fzvu_mem_reg(o, FZ_VU_REM_MEM_REG, 0x20000, FZ_VU_MEM_SIZE - 0x20000);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0x20000, 0x40000);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 0x60000, FZ_VU_MEM_SIZE - 0x60000);
	vu_traffic(o, 2);
	fzvu_state(o, FZ_VU_SET_VRING_ENABLE, 0, 0);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0, 0);
}

/* Migration: a log base, LOG_ALL on mid-traffic (ring addresses re-sent with the LOG flag),
 * then off. */
static void vu_body_log(struct fz_out *o, bool packed)
{
	/* The whole log memfd: its bits reach past the guest's memory at 1 GiB + 1 MiB. */
	uint64_t log[2] = {FZ_VU_LOG_SIZE, 0};
	uint8_t kind = FZ_VU_FD_LOG;
	uint64_t f = VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0);

	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION, &kind, 1, log, 16);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f | VU_F(VL_VU_F_LOG_ALL));
	vu_traffic(o, 2);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f);
	vu_traffic(o, 2);
}

/* A front end without protocol features: rings enabled at their kick. */
static void vu_body_legacy(struct fz_out *o, bool packed)
{
	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_u64(o, FZ_VU_SET_FEATURES, (VU_NET_FEATURES & ~VU_F(VL_VU_F_PROTOCOL_FEATURES)) |
						(packed ? VU_F(VL_F_RING_PACKED) : 0));
	fzvu_mem_table(o, 1);
	for (uint32_t q = 0; q < 2; q++)
		fzvu_ring(o, q, 256, packed, packed ? 0x8000u : 0u);
	vu_traffic(o, 2);
	fzvu_none(o, FZ_VU_RESET_OWNER);
}

/* One seed per control-path class of hostile-inputs.md, after a working start. */
static void vu_body_hostile(struct fz_out *o, bool packed)
{
	uint8_t kinds[10] = {FZ_VU_FD_EVENT, FZ_VU_FD_EVENT, FZ_VU_FD_GUEST, FZ_VU_FD_SMALL,
			     FZ_VU_FD_LOG, FZ_VU_FD_EVENT, FZ_VU_FD_EVENT, FZ_VU_FD_EVENT,
			     FZ_VU_FD_EVENT, FZ_VU_FD_EVENT};
	uint8_t p[8 + 2 * 32] = {0};
	uint32_t two = 2;
	uint64_t r[8], log[2] = {UINT64_MAX - 10, 4096};

	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_post(o, 1, 4, 100);
	/* ring index beyond the rings, in several messages */
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 9, 64);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0x80000000u, 0);
	fzvu_ring_fd(o, FZ_VU_SET_VRING_KICK, 200, 1);
	fzvu_u64(o, FZ_VU_SET_VRING_CALL, 0x100000001ull);
	/* ring size: 0, not a power of two, too big, changed while running */
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 0);
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 48);
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 40000);
	fzvu_state(o, FZ_VU_SET_VRING_NUM, 1, 128);
	/* ring base beyond the ring / inconsistent wrap; on a stopped ring */
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 1, 0);
	fzvu_state(o, FZ_VU_SET_VRING_BASE, 1, 0x8000u | 500u);
	fzvu_state(o, FZ_VU_SET_VRING_BASE, 1, 0x8005u | 0x8006u << 16);
	/* ring addresses unmapped, misaligned */
	{
		uint64_t base = FZ_VU_UADDR + FZ_VU_RING(1);
		struct {
			uint32_t index, flags;
			uint64_t desc, used, avail, log;
		} a = {1, 0, base + 8, base + FZ_VU_USED_OFF, base + FZ_VU_AVAIL_OFF, 0};

		fzvu_msg(o, FZ_VU_SET_VRING_ADDR, FZ_VU_VERSION, NULL, 0, &a, sizeof(a));
		a.desc = FZ_VU_UADDR + FZ_VU_MEM_SIZE - 64;
		fzvu_msg(o, FZ_VU_SET_VRING_ADDR, FZ_VU_VERSION, NULL, 0, &a, sizeof(a));
	}
	fzvu_ring_fd(o, FZ_VU_SET_VRING_KICK, 1, 1);
	/* fds on messages that take none; too many; unsupported requests carrying fds */
	fzvu_msg(o, FZ_VU_SET_OWNER, FZ_VU_VERSION, kinds, 3, NULL, 0);
	fzvu_msg(o, FZ_VU_SET_OWNER, FZ_VU_VERSION, kinds, 10, NULL, 0);
	fzvu_msg(o, FZ_VU_SET_INFLIGHT_FD, FZ_VU_VERSION, kinds, 1, p, 24);
	/* payload sizes */
	fzvu_msg(o, FZ_VU_SET_FEATURES, FZ_VU_VERSION, NULL, 0, p, 4);
	fzvu_msg(o, FZ_VU_SET_VRING_ADDR, FZ_VU_VERSION, NULL, 0, p, 48);
	/* memory tables: too many regions, fds != regions, overflow, overlap, zero size, a file
	 * too small */
	memcpy(p, &two, 4);
	r[0] = FZ_VU_GPA, r[1] = 0x80000, r[2] = FZ_VU_UADDR, r[3] = 0;
	r[4] = FZ_VU_GPA + 0x40000, r[5] = 0x80000, r[6] = FZ_VU_UADDR + 0x80000, r[7] = 0x80000;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 2, p, sizeof(p)); /* overlap */
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 1, p, sizeof(p)); /* 1 fd */
	r[4] = FZ_VU_GPA + 0x80000, r[7] = UINT64_MAX - 0x1000;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 2, p, sizeof(p)); /* overflow */
	r[7] = 0x80000, r[5] = 0;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 2, 2, p, sizeof(p)); /* zero */
	r[5] = 0x80000;
	memcpy(p + 8, r, 64);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds + 3, 2, p, sizeof(p)); /* small */
	two = 9;
	memcpy(p, &two, 4);
	fzvu_msg(o, FZ_VU_SET_MEM_TABLE, FZ_VU_VERSION, kinds, 9, p, sizeof(p));
	/* the log: overflow, no fd */
	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION, kinds + 4, 1, log, 16);
	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION, NULL, 0, log, 16);
	/* unknown requests, big and small */
	fzvu_none(o, 0);
	fzvu_none(o, 0xdeadbeef);
	fzvu_burst(o, 2, 100);
	/* a payload larger than any request: the connection ends */
	fzvu_msg(o, FZ_VU_SET_OWNER, FZ_VU_VERSION, NULL, 0, NULL, 5000);
}

/* The bad-input audit of the lifecycle messages (issue 58), each after a working start: a
 * log past the end of its file, a log too small for guest memory, the table growing past a
 * log in use (ADD_MEM_REG) and logging switched on over a log the table outgrew, ADD_MEM_REG
 * overlapping in guest or user addresses, REM_MEM_REG of a region not present and of the
 * region the running rings lie in, then the slots filled to 509 and one more. */
static void vu_body_lifecycle_bad(struct fz_out *o, bool packed)
{
	const uint64_t f = VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0);
	const uint64_t far = FZ_VU_GPA + (4ull << 30); /* past a 64 KiB log's 2 GiB */

	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_post(o, 1, 4, 100);
	fzvu_log_base(o, FZ_VU_FD_SMALL, FZ_VU_LOG_SIZE, 0);             /* past the file */
	fzvu_log_base(o, FZ_VU_FD_LOG, FZ_VU_LOG_SIZE, FZ_VU_SMALL_SIZE);
	fzvu_log_base(o, FZ_VU_FD_LOG, 4096, 0);                        /* 128 MiB: too small */
	fzvu_log_base(o, FZ_VU_FD_LOG, FZ_VU_LOG_SIZE, 0);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f | VU_F(VL_VU_F_LOG_ALL));
	fzvu_mem_reg_at(o, FZ_VU_ADD_MEM_REG, far, 0x10000, FZ_VU_UADDR + (4ull << 30), 0);
	vu_traffic(o, 2);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f);
	fzvu_mem_reg_at(o, FZ_VU_ADD_MEM_REG, far, 0x10000, FZ_VU_UADDR + (4ull << 30), 0);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f | VU_F(VL_VU_F_LOG_ALL));     /* the log is outgrown */
	/* overlaps: guest-physical only, user address only */
	fzvu_mem_reg_at(o, FZ_VU_ADD_MEM_REG, FZ_VU_GPA + FZ_VU_MEM_SIZE - 0x1000, 0x10000,
			FZ_VU_UADDR + (8ull << 30), 0);
	fzvu_mem_reg_at(o, FZ_VU_ADD_MEM_REG, FZ_VU_GPA + (8ull << 30), 0x10000,
			FZ_VU_UADDR + 0x1000, 0);
	/* removals: a region never added, one off by a page, the rings' region */
	fzvu_mem_reg_at(o, FZ_VU_REM_MEM_REG, FZ_VU_GPA + (16ull << 30), 0x10000,
			FZ_VU_UADDR + (16ull << 30), 0);
	fzvu_mem_reg_at(o, FZ_VU_REM_MEM_REG, far + 0x1000, 0x10000, FZ_VU_UADDR + (4ull << 30), 0);
	fzvu_mem_reg_at(o, FZ_VU_REM_MEM_REG, FZ_VU_GPA, FZ_VU_MEM_SIZE, FZ_VU_UADDR, 0);
	vu_traffic(o, 2);
	/* two regions in the table: 507 more fill the slots, the next is one too many */
	for (uint64_t i = 0; i < 508; i++)
		fzvu_mem_reg_at(o, FZ_VU_ADD_MEM_REG, FZ_VU_GPA + (32ull << 30) + i * 0x100000,
				0x1000, FZ_VU_UADDR + (32ull << 30) + i * 0x100000, 0);
	vu_traffic(o, 2);
}

/* SET_LOG_BASE before the protocol feature and before SET_FEATURES, then in order. */
static void vu_body_log_early(struct fz_out *o, bool packed)
{
	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_log_base(o, FZ_VU_FD_LOG, FZ_VU_LOG_SIZE, 0);
	fzvu_none(o, FZ_VU_GET_PROTOCOL_FEATURES);
	fzvu_u64(o, FZ_VU_SET_PROTOCOL_FEATURES, VL_FEATURE(VL_VU_PROTOCOL_F_LOG_SHMFD) |
						   VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK));
	fzvu_log_base(o, FZ_VU_FD_LOG, FZ_VU_LOG_SIZE, 0);
	fzvu_u64(o, FZ_VU_SET_FEATURES, VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0));
	fzvu_log_base(o, FZ_VU_FD_LOG, FZ_VU_LOG_SIZE, 0);
	fzvu_mem_table(o, 1);
	for (uint32_t q = 0; q < 2; q++) {
		fzvu_ring(o, q, 64, packed, packed ? 0x8000u : 0u);
		fzvu_state(o, FZ_VU_SET_VRING_ENABLE, q, 1);
	}
	fzvu_u64(o, FZ_VU_SET_FEATURES, VU_NET_FEATURES | VU_F(VL_VU_F_LOG_ALL) |
						(packed ? VU_F(VL_F_RING_PACKED) : 0));
	vu_traffic(o, 2);
}

/* Inflight tracking as QEMU uses it (GET_INFLIGHT_FD once, SET_INFLIGHT_FD at every start,
 * with the log memfd standing for the area QEMU keeps), a restart on the same area -- a
 * ring stopped and started again, then the connection cut and a new one -- and the bad
 * inputs: queue count and size, an area too small or past its file, both messages while
 * rings run. */
static void vu_inflight_start(struct fz_out *o, bool packed)
{
	const uint64_t proto = VL_FEATURE(VL_VU_PROTOCOL_F_MQ) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_REPLY_ACK) |
			       VL_FEATURE(VL_VU_PROTOCOL_F_INFLIGHT_SHMFD);
	/* 4 queues of 64: the split area is 4 x 1088 bytes (packed 4 x 2112). */
	const uint64_t area = packed ? 4 * 2112 : 4 * 1088;

	fzvu_none(o, FZ_VU_SET_OWNER);
	fzvu_none(o, FZ_VU_GET_FEATURES);
	fzvu_none(o, FZ_VU_GET_PROTOCOL_FEATURES);
	fzvu_u64(o, FZ_VU_SET_PROTOCOL_FEATURES, proto);
	fzvu_inflight(o, FZ_VU_GET_INFLIGHT_FD, 0, 0, 0, 4, 64); /* before the features */
	fzvu_u64(o, FZ_VU_SET_FEATURES, VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0));
	fzvu_mem_table(o, 1);
	fzvu_inflight(o, FZ_VU_GET_INFLIGHT_FD, 0, 0, 0, 4, 64);
	fzvu_inflight(o, FZ_VU_SET_INFLIGHT_FD, FZ_VU_FD_LOG, area, 0, 4, 64);
	for (uint32_t q = 0; q < 2; q++) {
		fzvu_ring(o, q, 64, packed, packed ? 0x8000u : 0u);
		fzvu_ring_fd(o, FZ_VU_SET_VRING_CALL, q, 1);
		fzvu_state(o, FZ_VU_SET_VRING_ENABLE, q, 1);
	}
}

static void vu_body_inflight(struct fz_out *o, bool packed)
{
	vu_inflight_start(o, packed);
	vu_traffic(o, 2);
	fzvu_inflight(o, FZ_VU_SET_INFLIGHT_FD, FZ_VU_FD_LOG, 4096, 0, 4, 64); /* running */
	fzvu_inflight(o, FZ_VU_GET_INFLIGHT_FD, 0, 0, 0, 4, 64);
	fzvu_post(o, 1, 8, 300);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 1, 0);
	fzvu_ring_fd(o, FZ_VU_SET_VRING_KICK, 1, 1);                         /* the area in use */
	fzvu_burst(o, 2, 200);
	fzvu_post(o, 1, 8, 300);
	fzvu_cut(o, 5, 0, FZ_VU_SET_FEATURES, 8);                            /* the crash */
	vu_inflight_start(o, packed);
	vu_traffic(o, 2);
	/* bad inputs, rings stopped first */
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0, 0);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 1, 0);
	fzvu_inflight(o, FZ_VU_GET_INFLIGHT_FD, 0, 0, 0, 0, 64);
	fzvu_inflight(o, FZ_VU_GET_INFLIGHT_FD, 0, 0, 0, 5, 64);
	fzvu_inflight(o, FZ_VU_GET_INFLIGHT_FD, 0, 0, 0, 4, 40000);
	fzvu_inflight(o, FZ_VU_SET_INFLIGHT_FD, FZ_VU_FD_LOG, 64, 0, 4, 64);  /* too small */
	fzvu_inflight(o, FZ_VU_SET_INFLIGHT_FD, FZ_VU_FD_SMALL, 8192, 0, 4, 64); /* past file */
	fzvu_inflight(o, FZ_VU_SET_INFLIGHT_FD, FZ_VU_FD_LOG, 8192, 0, 4, 32);
	fzvu_ring_fd(o, FZ_VU_SET_VRING_KICK, 1, 1);                         /* 64 != 32 */
}

/* Messages cut short: the front end leaves in the header, in the payload, with fds. */
static void vu_body_cut(struct fz_out *o, bool packed)
{
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_post(o, 1, 4, 100);
	fzvu_cut(o, 5, 1, FZ_VU_SET_FEATURES, 8);
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	fzvu_cut(o, 15, 2, FZ_VU_SET_VRING_ADDR, 40);
	vu_dpdk(o, packed, VU_NET_FEATURES, 2, 64);
	vu_traffic(o, 2);
}

/* ---- lifecycle (lifecycle-recipes.md): reset, restart, announce, memory changes live -- */

#define VU_LIFE_PROTO                                                                        \
	(VU_DPDK_PROTO | VL_FEATURE(VL_VU_PROTOCOL_F_RARP) |                                    \
	 VL_FEATURE(VL_VU_PROTOCOL_F_RESET_DEVICE))

/* SET_STATUS 0 mid-traffic (the driver resets the device), then a full restart. */
static void vu_body_status_reset(struct fz_out *o, bool packed)
{
	uint64_t st = 0;

	vu_start(o, packed, VU_NET_FEATURES, 2, 64, VU_LIFE_PROTO);
	vu_traffic(o, 2);
	fzvu_msg(o, FZ_VU_SET_STATUS, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, &st, 8);
	fzvu_none(o, FZ_VU_GET_STATUS);
	fzvu_burst(o, 4, 100); /* nothing may move on a reset device */
	vu_start(o, packed, VU_NET_FEATURES, 2, 128, VU_LIFE_PROTO);
	vu_traffic(o, 2);
}

/* RESET_DEVICE while buffers are posted, then a restart in the other ring size; and once
 * more without the protocol feature that allows it. */
static void vu_body_reset_device(struct fz_out *o, bool packed)
{
	vu_start(o, packed, VU_NET_FEATURES, 2, 64, VU_LIFE_PROTO);
	fzvu_post(o, 1, 8, 300);
	fzvu_post(o, 0, 8, 1024);
	fzvu_msg(o, FZ_VU_RESET_DEVICE, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, NULL, 0);
	fzvu_burst(o, 4, 100);
	vu_start(o, packed, VU_NET_FEATURES, 2, 256, VU_LIFE_PROTO);
	vu_traffic(o, 2);
	vu_start(o, packed, VU_NET_FEATURES, 2, 64, VU_DPDK_PROTO);
	fzvu_none(o, FZ_VU_RESET_DEVICE);
	vu_traffic(o, 2);
}

/* SEND_RARP after a migration: the MAC in the payload's first 6 bytes, a short payload, and
 * without the RARP protocol feature. */
static void vu_body_rarp(struct fz_out *o, bool packed)
{
	const uint8_t mac[8] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0, 0};

	vu_start(o, packed, VU_NET_FEATURES, 2, 64, VU_LIFE_PROTO);
	vu_traffic(o, 2);
	fzvu_msg(o, FZ_VU_SEND_RARP, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, mac, 8);
	fzvu_msg(o, FZ_VU_SEND_RARP, FZ_VU_VERSION, NULL, 0, mac, 6);
	vu_traffic(o, 2);
	vu_start(o, packed, VU_NET_FEATURES, 2, 64, VU_DPDK_PROTO);
	fzvu_msg(o, FZ_VU_SEND_RARP, FZ_VU_VERSION | FZ_VU_NEED_REPLY, NULL, 0, mac, 8);
}

/* Memory regions removed and added while the rings run (two regions: the rings and the
 * first buffers in the lower one), a log base and LOG_ALL in between, the region holding
 * the rings removed (refused while they run), then the rings stopped by GET_VRING_BASE. */
static void vu_body_mem_live(struct fz_out *o, bool packed)
{
	uint64_t log[2] = {4096, 0};
	uint8_t kind = FZ_VU_FD_LOG;
	const uint64_t f = VU_NET_FEATURES | (packed ? VU_F(VL_F_RING_PACKED) : 0);

	vu_start(o, packed, VU_NET_FEATURES, 2, 64, VU_LIFE_PROTO);
	fzvu_mem_table(o, 2);
	fzvu_post(o, 1, 8, 300);
	fzvu_mem_reg(o, FZ_VU_REM_MEM_REG, FZ_VU_MEM_SIZE / 2, FZ_VU_MEM_SIZE / 2);
	fzvu_burst(o, 4, 200);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, FZ_VU_MEM_SIZE / 2, FZ_VU_MEM_SIZE / 4);
	fzvu_mem_reg(o, FZ_VU_ADD_MEM_REG, 3 * FZ_VU_MEM_SIZE / 4, FZ_VU_MEM_SIZE / 4);
	fzvu_msg(o, FZ_VU_SET_LOG_BASE, FZ_VU_VERSION | FZ_VU_NEED_REPLY, &kind, 1, log, 16);
	fzvu_u64(o, FZ_VU_SET_FEATURES, f | VU_F(VL_VU_F_LOG_ALL));
	vu_traffic(o, 2);
	fzvu_mem_reg(o, FZ_VU_REM_MEM_REG, 0, FZ_VU_MEM_SIZE / 2);
	fzvu_mem_reg(o, FZ_VU_REM_MEM_REG, 3 * FZ_VU_MEM_SIZE / 4, FZ_VU_MEM_SIZE / 4);
	fzvu_burst(o, 4, 300);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 1, 0);
	fzvu_state(o, FZ_VU_GET_VRING_BASE, 0, 0);
}

void gen_vhost_user(void)
{
	for (int packed = 0; packed < 2; packed++) {
		vu_seed("dpdk", packed, vu_body_dpdk);
		vu_seed("multi-queue", packed, vu_body_mq);
		vu_seed("mem-swap", packed, vu_body_mem_swap);
		vu_seed("mem-slots", packed, vu_body_mem_slots);
		vu_seed("log", packed, vu_body_log);
		vu_seed("legacy", packed, vu_body_legacy);
		vu_seed("hostile", packed, vu_body_hostile);
		vu_seed("cut", packed, vu_body_cut);
		vu_seed("lifecycle-bad", packed, vu_body_lifecycle_bad);
		vu_seed("log-early", packed, vu_body_log_early);
		vu_seed("inflight", packed, vu_body_inflight);
		vu_seed("lifecycle-status-reset", packed, vu_body_status_reset);
		vu_seed("lifecycle-reset-device", packed, vu_body_reset_device);
		vu_seed("lifecycle-rarp", packed, vu_body_rarp);
		vu_seed("lifecycle-mem-live", packed, vu_body_mem_live);
	}
}


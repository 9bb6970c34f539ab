/* SPDX-License-Identifier: MIT */
/* State of one vhost-user device, shared by the handlers (features.c, mem_table.c, vring.c,
 * log.c) and the dispatcher (dev.c). Not a public header. */
#ifndef VL_VU_INTERNAL_H
#define VL_VU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost_user/msg.h"
#include "vhostlab/vl_vhost_user.h"

/* A mapping of (part of) a front end's file: what mmap returned and its length. */
struct vu_map {
	void *addr;
	size_t len;
};

/* A memory table: the regions as vl_mem sees them (gpa, size, uaddr, mmap_offset, host),
 * their mappings, and the core's translation table over them. */
struct vu_table {
	struct vl_mem_region *r;
	struct vu_map *maps;
	uint32_t n;
	struct vl_mem *mem;     /* NULL: no table yet */
};

/* One ring as the front end configured it, and the queue over it once it can run. */
struct vu_ring {
	uint32_t num;           /* SET_VRING_NUM; 0 = not yet */
	bool addr_ok;           /* SET_VRING_ADDR accepted, areas translated below */
	uint32_t addr_flags;
	uint64_t desc_ua, driver_ua, device_ua; /* front-end virtual addresses */
	uint64_t desc_gpa, driver_gpa, device_gpa;
	bool base_set;          /* SET_VRING_BASE (or a stop) gave a resume position */
	uint16_t base_avail;    /* split: avail index; packed: position | wrap << 15 */
	uint16_t base_used;     /* packed: used position | wrap << 15 */
	int kick_fd, call_fd, err_fd;
	bool started;           /* SET_VRING_KICK since the last stop */
	bool enabled;
	bool ready_told;        /* last readiness reported through queue_ready */
	bool err_told;          /* a broken queue was reported on err_fd */
	uint64_t resyncs;       /* split starts that took the guest's used->idx over the base */
	uint32_t resubmitted;   /* chains the last start takes again from the inflight area */
	struct vl_vq *vq;       /* the datapath queue (started + num + addr + table) */
};

struct vl_vu_dev {
	struct vl_vu_config cfg;
	uint32_t nrings;
	struct vu_ring *rings;
	uint64_t features;           /* negotiated (SET_FEATURES) */
	bool features_set;           /* SET_FEATURES came since the device was last reset */
	uint64_t protocol_features;  /* negotiated (SET_PROTOCOL_FEATURES) */
	uint8_t status;
	bool status_set;             /* SET_STATUS came since the device was last reset: the
				      * front end writes the status, so rings wait for DRIVER_OK */
	uint32_t mtu;
	struct vu_table table;
	struct vu_map log_map;       /* the dirty log's mapping (SET_LOG_BASE) */
	uint8_t *log;                /* the bitmap inside it, or NULL */
	uint64_t log_bytes;
	/* The inflight area (GET/SET_INFLIGHT_FD): one region per queue, each infl_per bytes,
	 * for infl_nqueues rings of infl_qsize descriptors. NULL: none. */
	struct vu_map infl_map;
	uint8_t *infl;
	uint64_t infl_per;
	uint32_t infl_nqueues, infl_qsize;
	uint32_t last_request;
	struct vu_msg msg;           /* the message being handled (4 KiB: kept off the stack) */
};

static inline bool vu_has(uint64_t features, unsigned bit)
{
	return (features & VL_FEATURE(bit)) != 0;
}

static inline bool vu_proto(const struct vl_vu_dev *dev, unsigned bit)
{
	return vu_has(dev->protocol_features, bit);
}

/* The layout rings get from the negotiated features. */
static inline enum vl_layout vu_layout(const struct vl_vu_dev *dev)
{
	return vu_has(dev->features, VL_F_RING_PACKED) ? VL_LAYOUT_PACKED : VL_LAYOUT_SPLIT;
}

/* What a handler answers besides its return code: a reply payload of its own (8 bytes, or
 * none for SET_LOG_BASE, or GET_INFLIGHT_FD's 24 bytes and descriptor), sent only when the
 * handler succeeded. A descriptor in a reply (fd_set) is closed by the dispatcher after it
 * was sent, whatever the handler's result. */
struct vu_reply {
	bool send;
	bool empty;      /* header only */
	uint64_t payload;
	uint32_t nbytes; /* != 0: bytes[] is the payload instead */
	uint8_t bytes[VU_SIZE_INFLIGHT];
	bool fd_set;
	int fd;
};

typedef int (*vu_handler_fn)(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring *ring,
			     struct vu_reply *reply);

/* features.c */
int vu_get_features(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_features(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_get_protocol_features(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *,
			     struct vu_reply *);
int vu_set_protocol_features(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *,
			     struct vu_reply *);
int vu_set_owner(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_reset_owner(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_get_queue_num(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_status(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_get_status(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_reset_device(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_net_set_mtu(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);

/* inflight.c */
int vu_get_inflight_fd(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *,
		       struct vu_reply *);
int vu_set_inflight_fd(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *,
		       struct vu_reply *);
/* Attach ring's part of the inflight area to its new queue (nothing without an area):
 * VL_OK, VL_ERR_INFLIGHT (the area was made for another ring size), VL_ERR_INFLIGHT_PACKED
 * (a packed ring: not tracked) or what vl_vq_set_inflight returns. */
int vu_inflight_attach(struct vl_vu_dev *dev, struct vu_ring *ring, struct vl_vq *vq);
void vu_inflight_unmap(struct vl_vu_dev *dev);

/* announce.c */
int vu_send_rarp(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);

/* mem_table.c */
int vu_set_mem_table(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_add_mem_reg(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_rem_mem_reg(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_get_max_mem_slots(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *,
			 struct vu_reply *);
/* Front-end virtual address range -> guest-physical address: the whole range must lie in one
 * region of t. Returns false when it does not. (The host address then comes from the core's
 * memory door, vl_mem_translate on t->mem, as every other guest address's does.) */
bool vu_table_ua_to_gpa(const struct vu_table *t, uint64_t ua, uint64_t len, uint64_t *gpa);
/* Unmap every region and free the table (the device then has none). */
void vu_table_clear(struct vu_table *t);

/* vring.c */
int vu_set_vring_num(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_vring_addr(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_vring_base(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_get_vring_base(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_vring_kick(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_vring_call(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_vring_err(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
int vu_set_vring_enable(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *,
			struct vu_reply *);
/* Ring areas of `num` entries in layout L at the ring's front-end addresses, translated
 * through t into the ring's gpa fields. VL_ERR_RING_UNMAPPED / VL_ERR_RING_MISALIGNED. */
int vu_ring_translate(const struct vu_table *t, enum vl_layout L, uint32_t num,
		      const uint64_t ua[3], uint64_t gpa[3]);
/* Create the ring's queue if it is started and has everything it needs (0 if it does not
 * yet), and, when the front end writes the device status, DRIVER_OK is in it; report
 * readiness changes. */
int vu_ring_try_start(struct vl_vu_dev *dev, struct vu_ring *ring);
/* Stop the ring: queue_ready false, keep where it stopped as its base, destroy the queue,
 * close kick and call fds. */
void vu_ring_stop(struct vl_vu_dev *dev, struct vu_ring *ring);
/* Stop the ring and forget how it was set up (its error fd too): as a new device's. (dev.c) */
void vu_ring_forget(struct vl_vu_dev *dev, struct vu_ring *ring);
/* Report ring readiness (queue created and enabled) if it changed since last told. */
void vu_ring_tell(struct vl_vu_dev *dev, struct vu_ring *ring);
void vu_close_fd(int *fd);

/* log.c */
int vu_set_log_base(struct vl_vu_dev *, struct vu_msg *, struct vu_ring *, struct vu_reply *);
/* Hand the log to a queue (every queue) when VHOST_F_LOG_ALL is negotiated and a log is
 * mapped, take it away otherwise. */
void vu_log_apply_vq(const struct vl_vu_dev *dev, struct vl_vq *vq);
void vu_log_apply(struct vl_vu_dev *dev);
void vu_log_unmap(struct vl_vu_dev *dev);
/* Is logging on: a log mapped and VHOST_F_LOG_ALL negotiated? */
bool vu_log_on(const struct vl_vu_dev *dev);
/* Does a log of `bytes` bytes (one bit per 4 KiB page from guest address 0) have a bit for
 * the last page of every region of t? While logging is on it must: a page the log has no bit
 * for is a write the front end never learns of, and a migrated guest with stale memory. */
bool vu_log_covers(const struct vu_table *t, uint64_t bytes);

/* Map `size` bytes at `offset` of fd (a regular file at least offset + size long; size > 0,
 * no wrap), read-write and shared. Returns the first byte in *host and what to unmap in *map;
 * 0 or VL_ERR_REGION_ZERO_SIZE / VL_ERR_REGION_OVERFLOW / VL_ERR_VU_FILE_SHORT (the file
 * ends before offset + size) / VL_ERR_VU_MAP (not a regular file, mmap failed). (map.c) */
int vu_map_fd(int fd, uint64_t offset, uint64_t size, void **host, struct vu_map *map);
void vu_unmap(struct vu_map *map);

#endif

/* SPDX-License-Identifier: MIT */
/* The vhost-user device: lifecycle and the dispatcher. Every message is checked here against
 * one table row per request -- offered?, flags, exact payload size, descriptor count, ring
 * index -- before its handler runs, so handlers see only well-framed messages and a valid
 * ring; every descriptor a handler did not keep is closed here, on every path. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "vhost_user/vu_internal.h"

/* How many descriptors a request carries. */
enum vu_fds {
	FDS_NONE,        /* none: any that came are closed and the message rejected */
	FDS_ONE,         /* exactly one */
	FDS_UNLESS_NOFD, /* one, or none when the u64 payload has the NOFD flag */
	FDS_REGIONS,     /* one per region of the memory table */
	FDS_IGNORED,     /* REM_MEM_REG: none expected, one tolerated and closed unused (spec) */
};

/* Where a request names its ring. */
enum vu_idx {
	IDX_NONE,
	IDX_STATE,       /* u32 at the start of the payload (vring state or address) */
	IDX_U64,         /* bits 0-7 of the u64, NOFD in bit 8, nothing above */
};

#define NO_PROTO (-1)

struct vu_rule {
	vu_handler_fn fn;
	uint32_t size;   /* exact payload bytes (SET_MEM_TABLE: computed from nregions) */
	uint8_t fds;     /* enum vu_fds */
	uint8_t idx;     /* enum vu_idx */
	int8_t proto;    /* protocol feature the request belongs to (offered), or NO_PROTO */
	bool negotiated; /* ... which must also be negotiated (requests that change state) */
};

static const struct vu_rule rules[VU_REQUEST__COUNT] = {
	[VU_GET_FEATURES] = {vu_get_features, 0, FDS_NONE, IDX_NONE, NO_PROTO, false},
	[VU_SET_FEATURES] = {vu_set_features, VU_SIZE_U64, FDS_NONE, IDX_NONE, NO_PROTO, false},
	[VU_SET_OWNER] = {vu_set_owner, 0, FDS_NONE, IDX_NONE, NO_PROTO, false},
	[VU_RESET_OWNER] = {vu_reset_owner, 0, FDS_NONE, IDX_NONE, NO_PROTO, false},
	[VU_SET_MEM_TABLE] = {vu_set_mem_table, 0, FDS_REGIONS, IDX_NONE, NO_PROTO, false},
	[VU_SET_LOG_BASE] = {vu_set_log_base, VU_SIZE_LOG, FDS_ONE, IDX_NONE,
			     VL_VU_PROTOCOL_F_LOG_SHMFD, true},
	[VU_SET_VRING_NUM] = {vu_set_vring_num, VU_SIZE_STATE, FDS_NONE, IDX_STATE, NO_PROTO,
			      false},
	[VU_SET_VRING_ADDR] = {vu_set_vring_addr, VU_SIZE_ADDR, FDS_NONE, IDX_STATE, NO_PROTO,
			       false},
	[VU_SET_VRING_BASE] = {vu_set_vring_base, VU_SIZE_STATE, FDS_NONE, IDX_STATE, NO_PROTO,
			       false},
	[VU_GET_VRING_BASE] = {vu_get_vring_base, VU_SIZE_STATE, FDS_NONE, IDX_STATE, NO_PROTO,
			       false},
	[VU_SET_VRING_KICK] = {vu_set_vring_kick, VU_SIZE_U64, FDS_UNLESS_NOFD, IDX_U64, NO_PROTO,
			       false},
	[VU_SET_VRING_CALL] = {vu_set_vring_call, VU_SIZE_U64, FDS_UNLESS_NOFD, IDX_U64, NO_PROTO,
			       false},
	[VU_SET_VRING_ERR] = {vu_set_vring_err, VU_SIZE_U64, FDS_UNLESS_NOFD, IDX_U64, NO_PROTO,
			      false},
	/* GET/SET_PROTOCOL_FEATURES need VHOST_USER_F_PROTOCOL_FEATURES offered (offered()). */
	[VU_GET_PROTOCOL_FEATURES] = {vu_get_protocol_features, 0, FDS_NONE, IDX_NONE, NO_PROTO,
				      false},
	[VU_SET_PROTOCOL_FEATURES] = {vu_set_protocol_features, VU_SIZE_U64, FDS_NONE, IDX_NONE,
				      NO_PROTO, false},
	[VU_GET_QUEUE_NUM] = {vu_get_queue_num, 0, FDS_NONE, IDX_NONE, VL_VU_PROTOCOL_F_MQ,
			      false},
	[VU_SET_VRING_ENABLE] = {vu_set_vring_enable, VU_SIZE_STATE, FDS_NONE, IDX_STATE,
				 NO_PROTO, false},
	[VU_SEND_RARP] = {vu_send_rarp, VU_SIZE_U64, FDS_NONE, IDX_NONE, VL_VU_PROTOCOL_F_RARP,
			  true},
	[VU_NET_SET_MTU] = {vu_net_set_mtu, VU_SIZE_U64, FDS_NONE, IDX_NONE, VL_VU_PROTOCOL_F_MTU,
			    true},
	[VU_GET_MAX_MEM_SLOTS] = {vu_get_max_mem_slots, 0, FDS_NONE, IDX_NONE,
				  VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS, false},
	[VU_ADD_MEM_REG] = {vu_add_mem_reg, VU_SIZE_MEM_REG, FDS_ONE, IDX_NONE,
			    VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS, true},
	[VU_REM_MEM_REG] = {vu_rem_mem_reg, VU_SIZE_MEM_REG, FDS_IGNORED, IDX_NONE,
			    VL_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS, true},
	[VU_SET_STATUS] = {vu_set_status, VU_SIZE_U64, FDS_NONE, IDX_NONE, VL_VU_PROTOCOL_F_STATUS,
			   true},
	[VU_GET_STATUS] = {vu_get_status, 0, FDS_NONE, IDX_NONE, VL_VU_PROTOCOL_F_STATUS, false},
	[VU_GET_INFLIGHT_FD] = {vu_get_inflight_fd, VU_SIZE_INFLIGHT, FDS_NONE, IDX_NONE,
				VL_VU_PROTOCOL_F_INFLIGHT_SHMFD, true},
	[VU_SET_INFLIGHT_FD] = {vu_set_inflight_fd, VU_SIZE_INFLIGHT, FDS_ONE, IDX_NONE,
				VL_VU_PROTOCOL_F_INFLIGHT_SHMFD, true},
	[VU_RESET_DEVICE] = {vu_reset_device, 0, FDS_NONE, IDX_NONE,
			     VL_VU_PROTOCOL_F_RESET_DEVICE, true},
};

static const char *const request_names[VU_REQUEST__COUNT] = {
	[VU_NONE] = "NONE",
	[VU_GET_FEATURES] = "GET_FEATURES",
	[VU_SET_FEATURES] = "SET_FEATURES",
	[VU_SET_OWNER] = "SET_OWNER",
	[VU_RESET_OWNER] = "RESET_OWNER",
	[VU_SET_MEM_TABLE] = "SET_MEM_TABLE",
	[VU_SET_LOG_BASE] = "SET_LOG_BASE",
	[VU_SET_LOG_FD] = "SET_LOG_FD",
	[VU_SET_VRING_NUM] = "SET_VRING_NUM",
	[VU_SET_VRING_ADDR] = "SET_VRING_ADDR",
	[VU_SET_VRING_BASE] = "SET_VRING_BASE",
	[VU_GET_VRING_BASE] = "GET_VRING_BASE",
	[VU_SET_VRING_KICK] = "SET_VRING_KICK",
	[VU_SET_VRING_CALL] = "SET_VRING_CALL",
	[VU_SET_VRING_ERR] = "SET_VRING_ERR",
	[VU_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
	[VU_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
	[VU_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
	[VU_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	[VU_SEND_RARP] = "SEND_RARP",
	[VU_NET_SET_MTU] = "NET_SET_MTU",
	[VU_SET_SLAVE_REQ_FD] = "SET_SLAVE_REQ_FD",
	[VU_IOTLB_MSG] = "IOTLB_MSG",
	[VU_SET_VRING_ENDIAN] = "SET_VRING_ENDIAN",
	[VU_GET_CONFIG] = "GET_CONFIG",
	[VU_SET_CONFIG] = "SET_CONFIG",
	[VU_CREATE_CRYPTO_SESSION] = "CREATE_CRYPTO_SESSION",
	[VU_CLOSE_CRYPTO_SESSION] = "CLOSE_CRYPTO_SESSION",
	[VU_POSTCOPY_ADVISE] = "POSTCOPY_ADVISE",
	[VU_POSTCOPY_LISTEN] = "POSTCOPY_LISTEN",
	[VU_POSTCOPY_END] = "POSTCOPY_END",
	[VU_GET_INFLIGHT_FD] = "GET_INFLIGHT_FD",
	[VU_SET_INFLIGHT_FD] = "SET_INFLIGHT_FD",
	[VU_GPU_SET_SOCKET] = "GPU_SET_SOCKET",
	[VU_RESET_DEVICE] = "RESET_DEVICE",
	[VU_VRING_KICK] = "VRING_KICK",
	[VU_GET_MAX_MEM_SLOTS] = "GET_MAX_MEM_SLOTS",
	[VU_ADD_MEM_REG] = "ADD_MEM_REG",
	[VU_REM_MEM_REG] = "REM_MEM_REG",
	[VU_SET_STATUS] = "SET_STATUS",
	[VU_GET_STATUS] = "GET_STATUS",
};

const char *vl_vu_request_name(uint32_t request)
{
	if (request >= VU_REQUEST__COUNT)
		return "unknown";
	return request_names[request];
}

uint32_t vl_vu_dev_last_request(const struct vl_vu_dev *dev)
{
	return dev->last_request;
}

void vl_vu_config_init(struct vl_vu_config *cfg)
{
	*cfg = (struct vl_vu_config){0};
	cfg->features = VL_VU_FEATURES_SUPPORTED &
			~(VL_FEATURE(VL_F_NET_MQ) | VL_FEATURE(VL_F_NET_CTRL_VQ));
	cfg->protocol_features = VL_VU_PROTOCOL_FEATURES_SUPPORTED;
	cfg->max_queue_pairs = 1;
	cfg->batch_threshold = VL_BATCH_THRESHOLD_DEFAULT;
}

static void ring_init(struct vu_ring *r)
{
	*r = (struct vu_ring){0};
	r->kick_fd = -1;
	r->call_fd = -1;
	r->err_fd = -1;
}

void vu_ring_forget(struct vl_vu_dev *dev, struct vu_ring *ring)
{
	vu_ring_stop(dev, ring);
	vu_close_fd(&ring->err_fd);
	ring_init(ring);
}

struct vl_vu_dev *vl_vu_dev_create(const struct vl_vu_config *cfg, int *err)
{
	int dummy;

	if (!err)
		err = &dummy;
	if (!cfg || (cfg->features & ~VL_VU_FEATURES_SUPPORTED) ||
	    (cfg->protocol_features & ~VL_VU_PROTOCOL_FEATURES_SUPPORTED) ||
	    cfg->max_queue_pairs == 0 || cfg->max_queue_pairs > VL_VU_MAX_QUEUE_PAIRS) {
		*err = VL_ERR_INVALID_ARG;
		return NULL;
	}
	struct vl_vu_dev *dev = vl_calloc(1, sizeof(*dev));
	uint32_t nrings = 2 * cfg->max_queue_pairs;
	struct vu_ring *rings = vl_calloc(nrings, sizeof(*rings));

	if (!dev || !rings) {
		free(dev);
		free(rings);
		*err = VL_ERR_NOMEM;
		return NULL;
	}
	dev->cfg = *cfg;
	dev->nrings = nrings;
	dev->rings = rings;
	for (uint32_t i = 0; i < nrings; i++)
		ring_init(&rings[i]);
	for (uint32_t i = 0; i < VU_MAX_FDS; i++)
		dev->msg.fds[i] = -1;
	*err = VL_OK;
	return dev;
}

void vl_vu_dev_reset(struct vl_vu_dev *dev)
{
	/* Rings first: their queues point into the table, and report to the embedder. */
	for (uint32_t i = 0; i < dev->nrings; i++)
		vu_ring_forget(dev, &dev->rings[i]);
	vu_log_unmap(dev);
	vu_inflight_unmap(dev);
	vu_table_clear(&dev->table);
	dev->features = 0;
	dev->features_set = false;
	dev->protocol_features = 0;
	dev->status = 0;
	dev->status_set = false;
	dev->mtu = 0;
}

void vl_vu_dev_destroy(struct vl_vu_dev *dev)
{
	if (!dev)
		return;
	vl_vu_dev_reset(dev);
	free(dev->rings);
	free(dev);
}

/* Is the request part of what this device offers? */
static bool offered(const struct vl_vu_dev *dev, uint32_t req, const struct vu_rule *r)
{
	bool pf = vu_has(dev->cfg.features, VL_VU_F_PROTOCOL_FEATURES);

	if (req == VU_GET_PROTOCOL_FEATURES || req == VU_SET_PROTOCOL_FEATURES)
		return pf;
	return r->proto == NO_PROTO ||
	       (pf && vu_has(dev->cfg.protocol_features, (unsigned)r->proto));
}

/* The central checks. On success *ring is the ring the message names (NULL for none). */
static int check(struct vl_vu_dev *dev, struct vu_msg *m, struct vu_ring **ring)
{
	const uint32_t req = m->hdr.request, flags = m->hdr.flags, size = m->hdr.size;
	const struct vu_rule *r = req < VU_REQUEST__COUNT ? &rules[req] : NULL;

	if ((flags & VU_VERSION_MASK) != VU_VERSION || (flags & VU_FLAG_REPLY))
		return VL_ERR_VU_MSG;
	if (!r || !r->fn || !offered(dev, req, r))
		return VL_ERR_VU_REQUEST;

	uint32_t want_size = r->size;
	uint64_t nregions = 0;

	if (r->fds == FDS_REGIONS) {
		if (size < VU_SIZE_MEM_HDR)
			return VL_ERR_VU_MSG;
		nregions = m->p.mem.nregions;
		if (nregions > VU_MEM_MSG_REGIONS)
			return VL_ERR_TOO_MANY_REGIONS;
		want_size = VU_SIZE_MEM_HDR + (uint32_t)nregions * VU_SIZE_REGION;
	}
	if (size != want_size)
		return VL_ERR_VU_MSG;

	/* The u64 of KICK/CALL/ERR: an index in 8 bits and NOFD; anything else is not a
	 * value the protocol defines. */
	uint64_t u64 = m->p.u64;

	if (r->idx == IDX_U64 && (u64 & ~(VU_VRING_INDEX_MASK | VU_VRING_NOFD)))
		return VL_ERR_VU_VALUE;

	uint64_t want_fds = 0;

	switch (r->fds) {
	case FDS_ONE:
		want_fds = 1;
		break;
	case FDS_UNLESS_NOFD:
		want_fds = (u64 & VU_VRING_NOFD) ? 0 : 1;
		break;
	case FDS_REGIONS:
		want_fds = nregions;
		break;
	case FDS_IGNORED:
		want_fds = m->nfds > 1 ? 0 : m->nfds;
		break;
	}
	if (m->fds_dropped || m->nfds != want_fds)
		return VL_ERR_VU_FDS;

	/* The ring index, widened before the comparison: nothing is truncated on the way. */
	if (r->idx != IDX_NONE) {
		uint64_t idx = r->idx == IDX_U64 ? (u64 & VU_VRING_INDEX_MASK)
						 : (uint64_t)m->p.state.index;

		if (idx >= dev->nrings)
			return VL_ERR_VU_QUEUE_INDEX;
		*ring = &dev->rings[idx];
	}
	if (r->negotiated && !vu_proto(dev, (unsigned)r->proto))
		return VL_ERR_VU_STATE;
	return VL_OK;
}

int vl_vu_dev_handle(struct vl_vu_dev *dev, int fd)
{
	struct vu_msg *m = &dev->msg;
	int rc = vu_msg_recv(fd, m);

	if (rc != VL_OK) {
		if (vl_vu_err_fatal(rc))
			vl_vu_dev_reset(dev);
		return rc;
	}
	const uint32_t req = m->hdr.request;
	struct vu_ring *ring = NULL;
	struct vu_reply reply = {0};

	dev->last_request = req;
	rc = check(dev, m, &ring);
	if (rc == VL_OK)
		rc = rules[req].fn(dev, m, ring, &reply);
	vu_msg_close_fds(m);

	int sent = VL_OK;

	if (rc == VL_OK && reply.send && reply.nbytes) {
		sent = vu_msg_reply_fd(fd, req, reply.bytes, reply.nbytes,
				       reply.fd_set ? reply.fd : -1);
	} else if (rc == VL_OK && reply.send) {
		sent = vu_msg_reply(fd, req, reply.empty ? NULL : &reply.payload);
	} else if (m->hdr.flags & VU_FLAG_NEED_REPLY) {
		/* REPLY_ACK: 0 for success, 1 for failure. Answered whenever asked: a front end
		 * sets the flag only after negotiating, and would wait forever otherwise. */
		uint64_t ack = rc != VL_OK;

		sent = vu_msg_reply(fd, req, &ack);
	}
	if (reply.fd_set)
		vu_close_fd(&reply.fd);
	if (sent != VL_OK) {
		vl_vu_dev_reset(dev);
		return sent;
	}
	return rc;
}

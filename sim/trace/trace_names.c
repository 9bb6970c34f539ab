/* SPDX-License-Identifier: MIT */
#include "trace_names.h"

#include "trace.h"
#include "vhostlab/vl_virtio.h"

#define FEATURE(name, bit) {name, 1ull << (bit)}
const struct lab_tn_bit lab_tn_features[LAB_TN_NFEATURES] = {
	FEATURE("csum", VL_F_NET_CSUM),
	FEATURE("guest_csum", VL_F_NET_GUEST_CSUM),
	FEATURE("mrg_rxbuf", VL_F_NET_MRG_RXBUF),
	FEATURE("indirect_desc", VL_F_RING_INDIRECT_DESC),
	FEATURE("event_idx", VL_F_RING_EVENT_IDX),
	FEATURE("version_1", VL_F_VERSION_1),
	FEATURE("ring_packed", VL_F_RING_PACKED),
	FEATURE("in_order", VL_F_IN_ORDER),
	FEATURE("host_tso4", VL_F_NET_HOST_TSO4),
	FEATURE("host_tso6", VL_F_NET_HOST_TSO6),
	FEATURE("host_ecn", VL_F_NET_HOST_ECN),
	FEATURE("host_ufo", VL_F_NET_HOST_UFO),
	FEATURE("host_uso", VL_F_NET_HOST_USO),
	FEATURE("guest_tso4", VL_F_NET_GUEST_TSO4),
	FEATURE("guest_tso6", VL_F_NET_GUEST_TSO6),
	FEATURE("guest_ecn", VL_F_NET_GUEST_ECN),
	FEATURE("guest_ufo", VL_F_NET_GUEST_UFO),
	FEATURE("guest_uso4", VL_F_NET_GUEST_USO4),
	FEATURE("guest_uso6", VL_F_NET_GUEST_USO6),
};

const struct lab_tn_bit lab_tn_desc_flags[LAB_TN_NDESC_FLAGS] = {
	{"next", LAB_TRACE_DESC_NEXT},
	{"write", LAB_TRACE_DESC_WRITE},
	{"indirect", LAB_TRACE_DESC_INDIRECT},
	{"avail", LAB_TRACE_DESC_AVAIL},
	{"used", LAB_TRACE_DESC_USED},
};

const char *const lab_tn_dirs[2] = {[LAB_TRACE_TX] = "tx", [LAB_TRACE_RX] = "rx"};
const char *const lab_tn_allocs[2] = {
	[LAB_TRACE_ALLOC_AVAILABLE] = "available", [LAB_TRACE_ALLOC_BURST] = "burst",
};
const char *const lab_tn_df_modes[3] = {
	[LAB_TRACE_DF_OFF] = "off", [LAB_TRACE_DF_DETECT] = "detect",
	[LAB_TRACE_DF_ADVERSARIAL] = "adversarial",
};
const char *const lab_tn_faults[2] = {
	[LAB_TRACE_FAULT_POOL] = "pool", [LAB_TRACE_FAULT_ALLOC] = "alloc",
};
const char *const lab_tn_statuses[4] = {
	[LAB_TRACE_DELIVERED] = "delivered", [LAB_TRACE_TOO_BIG] = "too_big",
	[LAB_TRACE_TOO_MANY_PIECES] = "too_many_pieces",
	[LAB_TRACE_OFFLOAD] = "offload",
};
const char *const lab_tn_switch[2] = {"off", "on"};
const char *const lab_tn_ol[LAB_TN_NOL] = {
	"flags", "gso_type", "hdr_len", "gso_size", "csum_start", "csum_offset",
};

static const char *const kind_names[LAB_T__KIND_COUNT] = {
	[LAB_T_WRITE] = "write",
	[LAB_T_FILL] = "fill",
	[LAB_T_DESC] = "desc",
	[LAB_T_PDESC] = "pdesc",
	[LAB_T_IDESC] = "idesc",
	[LAB_T_AVAIL] = "avail",
	[LAB_T_KICK] = "kick",
	[LAB_T_POST] = "post",
	[LAB_T_MUTATE] = "mutate",
	[LAB_T_DOUBLE_FETCH] = "double-fetch",
	[LAB_T_FAULT] = "fault",
	[LAB_T_DEQUEUE] = "dequeue",
	[LAB_T_DISCARD] = "discard",
	[LAB_T_FREE] = "free",
	[LAB_T_COMPLETE] = "complete",
	[LAB_T_ENQUEUE] = "enqueue",
	[LAB_T_KICKS] = "kicks",
	[LAB_T_SET] = "set",
	[LAB_T_REMAP] = "remap",
	[LAB_T_EXPECT_DEQUEUED] = "expect dequeued",
	[LAB_T_EXPECT_PACKET] = "expect packet",
	[LAB_T_EXPECT_ENQUEUED] = "expect enqueued",
	[LAB_T_EXPECT_STATUS] = "expect status",
	[LAB_T_EXPECT_USED] = "expect used",
	[LAB_T_EXPECT_MEM] = "expect mem",
	[LAB_T_EXPECT_STAT] = "expect stat",
	[LAB_T_EXPECT_BROKEN] = "expect broken",
	[LAB_T_EXPECT_CALL] = "expect call",
	[LAB_T_EXPECT_HELD] = "expect held",
	[LAB_T_EXPECT_DIRTY] = "expect dirty",
	[LAB_T_REPEAT] = "repeat",
	[LAB_T_END] = "}",
	[LAB_T_EITHER] = "either",
	[LAB_T_OR] = "or",
	[LAB_T_EXPECT_USED_SET] = "expect used-set",
	[LAB_T_MESSAGE] = "message",
	[LAB_T_EXPECT_LOGGED] = "expect logged",
};

const char *const lab_tn_messages[LAB_TRACE_NMSGS] = {"get-vring-base", "vring-enable",
						      "vring-setup", "get-features", "log-start"};

const char *lab_trace_kind_name(enum lab_trace_kind k)
{
	return (unsigned)k < LAB_T__KIND_COUNT ? kind_names[k] : "unknown";
}

const char *lab_trace_status_name(enum lab_trace_status s)
{
	return (unsigned)s < 4u ? lab_tn_statuses[s] : "unknown";
}

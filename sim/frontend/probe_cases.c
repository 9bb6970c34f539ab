/* SPDX-License-Identifier: MIT */
/* The case table of `vhostlab probe` and the verdict helpers (probe_case.h). Rules are
 * cited as in ../shared/design/conformance.md: virtio 1.2/1.3 section numbers, vhost-user
 * sections of QEMU docs/interop/vhost-user.rst. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "probe_bodies.h"

#define F(bit) VL_FEATURE(bit)

const struct probe_case probe_cases[] = {
	{"version-1", "conformance", "N-22 virtio 6.2",
	 "the device offers VERSION_1; GET_FEATURES answered with a valid reply (U-01)",
	 PROBE_ANY, 0, 0, false, false, 0, probe_version_1},
	{"feature-deps", "conformance", "N-20 virtio 5.1.3.1",
	 "no feature offered without the features it depends on",
	 PROBE_ANY, 0, 0, false, false, 0, probe_feature_deps},
	{"protocol-features-first", "conformance", "U-03 VU GET_PROTOCOL_FEATURES",
	 "GET_PROTOCOL_FEATURES answered as the first message",
	 PROBE_ANY, F(LAB_FE_F_PROTOCOL_FEATURES), 0, false, false, 0, probe_protocol_first},
	{"reply-ack", "conformance", "U-05 VU REPLY_ACK",
	 "NEED_REPLY: SET requests acked with 0, a GET keeps its single reply",
	 PROBE_ANY, F(LAB_FE_F_PROTOCOL_FEATURES), 0, false, false, 0, probe_reply_ack},
	{"unoffered-feature", "conformance", "N-21 virtio 2.2.2",
	 "SET_FEATURES with a bit never offered is refused",
	 PROBE_ANY, F(LAB_FE_F_PROTOCOL_FEATURES), 0, false, false, 0, probe_unoffered_feature},
	{"minimal-features", "conformance", "N-21 virtio 2.2.2, U-04 VU Communication",
	 "VERSION_1 alone works; without bit 30 rings run with no SET_VRING_ENABLE",
	 PROBE_BOTH, 0, 0, false, false, 0, probe_minimal_features},
	{"get-vring-base", "conformance", "U-09 VU GET_VRING_BASE, P-10",
	 "GET_VRING_BASE returns the next avail index (packed: avail and used with wraps) and "
	 "stops the ring", PROBE_BOTH, 0, 0, false, true, 0, probe_get_vring_base},
	{"vring-enable", "conformance", "U-08 VU SET_VRING_ENABLE",
	 "a disabled RX ring receives nothing; re-enabled it receives again",
	 PROBE_BOTH, F(LAB_FE_F_PROTOCOL_FEATURES), 0, true, true, 0, probe_vring_enable},
	{"tx-used-len", "conformance", "S-02 virtio 2.7.8",
	 "a TX chain (readable only) comes back with used length 0",
	 PROBE_SPLIT, 0, 0, false, true, 0, probe_tx_used_len},
	{"rx-used-len", "conformance", "S-01 virtio 2.7.8.2, P-08 2.8.4",
	 "RX used length = 12 + frame, the bytes in place when the used index moves",
	 PROBE_BOTH, 0, 0, true, true, 0, probe_rx_used_len},
	{"hdr-no-mrg", "conformance", "N-01 virtio 5.1.6, 5.1.6.4.1",
	 "without MRG_RXBUF the header is 12 bytes with num_buffers 1",
	 PROBE_BOTH, 0, F(VL_F_NET_MRG_RXBUF), true, true, 0, probe_rx_used_len},
	{"mergeable", "conformance", "N-03 virtio 5.1.6.4.1",
	 "MRG_RXBUF: num_buffers = buffers used, all but the last filled",
	 PROBE_BOTH, F(VL_F_NET_MRG_RXBUF), 0, true, true, 0, probe_mergeable},
	{"in-order", "conformance", "S-14 virtio 2.7.9, 2.8.20",
	 "IN_ORDER: buffers used in the order they were made available",
	 PROBE_BOTH, F(VL_F_IN_ORDER), 0, false, true, 0, probe_in_order},
	{"event-idx-calls", "conformance", "S-11 virtio 2.7.7.2, P-09 2.8.10",
	 "EVENT_IDX: a call whenever the used index passes used_event (16-bit wrap crossed)",
	 PROBE_BOTH, F(VL_F_RING_EVENT_IDX), 0, false, true, 0, probe_calls},
	{"calls", "conformance", "S-09 virtio 2.7.7.2, P-09 2.8.10",
	 "without EVENT_IDX: a call after every used buffer when calls are enabled",
	 PROBE_BOTH, 0, F(VL_F_RING_EVENT_IDX), false, true, 0, probe_calls},
	{"packed-wrap", "conformance", "P-01 virtio 2.8.1",
	 "used descriptors marked AVAIL=USED=wrap counter over 40 laps of a 4-entry ring",
	 PROBE_PACKED, 0, 0, false, true, 4, probe_packed_wrap},
	{"packed-id-slot", "conformance", "P-04 virtio 2.8.6, 2.8.12",
	 "buffer id from the last descriptor, used at the chain's first slot",
	 PROBE_PACKED, 0, 0, false, true, 0, probe_packed_id_slot},
	{"spurious-kicks", "conformance", "S-13 virtio 2.7.10.2",
	 "1000 kicks with nothing posted use nothing and break nothing",
	 PROBE_BOTH, 0, 0, false, true, 0, probe_spurious_kicks},
	{"indirect", "traffic", "S-05 virtio 2.7.5.3.2, P-06 2.8.7",
	 "a frame through an indirect table (split: behind a direct header) echoed whole",
	 PROBE_BOTH, F(VL_F_RING_INDIRECT_DESC), 0, true, true, 0, probe_echo_indirect},
	{"echo", "traffic", "virtio 5.1.6 (--expect echo)",
	 "32 frames of 60-1514 bytes in 3 chain shapes each echoed byte for byte",
	 PROBE_BOTH, 0, 0, true, true, 0, probe_echo_frames},
};
const unsigned probe_ncases = sizeof(probe_cases) / sizeof(probe_cases[0]);

enum probe_verdict probe_from_rc(struct probe_ctx *x, enum lab_fe_rc rc)
{
	snprintf(x->detail, sizeof(x->detail), "%s", x->s.c.what);
	switch (rc) {
	case LAB_FE_OK: return PROBE_PASS;
	case LAB_FE_TIMEOUT: return PROBE_WEDGE;
	case LAB_FE_CLOSED: return PROBE_CRASH;
	default: return PROBE_FAIL;
	}
}

enum probe_verdict probe_fail(struct probe_ctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->detail, sizeof(x->detail), fmt, ap);
	va_end(ap);
	return PROBE_FAIL;
}

enum probe_verdict probe_pass(struct probe_ctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->detail, sizeof(x->detail), fmt, ap);
	va_end(ap);
	return PROBE_PASS;
}

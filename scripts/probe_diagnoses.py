"""What other projects' back ends fail in `vhostlab probe`, and why, as seen here.

One table per back end of scripts/probe_backends.py that is not the lab's own:
(case id, ring) -> (verdict, a piece of the probe's detail, why the back end does this).
harness/test_probe_dpdk.py and harness/test_probe_ovs.py fail when a run's non-passing
cases differ from their table (a probe change, or the back end behaving differently), and
scripts/conformance_report.py prints the reason beside each failure in
reports/conformance.md. Ring "-" is a case that does not depend on the layout (run once).

Sources for the reasons: the back end's own log, and DPDK lib/vhost (22.11) and OVS
lib/netdev-dpdk.c (v3.1.0) read for the facts; "seen" marks what was observed and not
traced to code.
"""

from __future__ import annotations

_NUM_BUFFERS = ("lib/vhost writes num_buffers into the RX header only when MRG_RXBUF is "
                "negotiated; without it the field keeps what the guest left there (0xEEEE "
                "is the probe's poison), where N-01 wants 1")

# GET_VRING_BASE on one ring: lib/vhost (vhost_user_get_vring_base) stops the whole device
# (the application's destroy_device), and when the ring is set up again the device comes
# back (new_device), but lib/vhost reports a vring state change only for a ring whose
# readiness changed: the guest's RX ring, never stopped, is not announced again.
_RESUME = ("GET_VRING_BASE on the TX ring alone makes lib/vhost destroy the whole device; "
           "when TX is set up again the device is re-created, but lib/vhost announces only "
           "the ring that was set up again as enabled, not the RX ring that never stopped")
_RESUME_TESTPMD = (f"{_RESUME}. net_vhost's destroy_device had marked every ring disabled "
                   "(state->cur), so its transmit queue on the guest's RX ring stays closed "
                   "(allow_queuing 0) and the next frame is dropped "
                   "(seen in testpmd's log: 'Vhost device destroyed', then 'created' and "
                   "'vring1 is enabled' only)")

# Packed rings under dirty logging: lib/vhost marks a used descriptor it wrote at
# log_guest_addr + the descriptor's offset in the descriptor ring (vhost_log_cache_used_vring
# in virtio_net.c, the same call as for split used entries), but log_guest_addr is where the
# front end put it in SET_VRING_ADDR: the probe gives the used area's address there, which
# for packed is the device area (QEMU passes its "used" address too; not checked for packed), so the marks land beside the device area and the descriptor
# ring's pages stay clean (seen: gpa 0x10000, the RX descriptor ring, unmarked; RX data and
# split used rings fully marked).
_PACKED_LOG = ("used packed descriptors logged at offsets of the descriptor ring added to "
               "log_guest_addr (vhost_log_cache_used_vring), which is the device area's "
               "address: the descriptor ring's pages are not marked")

# DPDK 22.11.11 dpdk-testpmd, one net_vhost port in io mode (default devargs).
DPDK_TESTPMD = {
    ("feature-deps", "-"): (
        "fail", "HOST_ECN without HOST_TSO4 or HOST_TSO6",
        "net_vhost with tso=0 (the default) clears HOST_TSO4/6 but leaves HOST_ECN offered"),
    ("minimal-features", "split"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("minimal-features", "packed"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("hdr-no-mrg", "split"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("hdr-no-mrg", "packed"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("echo-no-mrg", "split"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("echo-no-mrg", "packed"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("no-spread", "split"): ("fail", "num_buffers 61166",
                             "the small frame's header, as in hdr-no-mrg"),
    ("no-spread", "packed"): ("fail", "num_buffers 61166",
                              "the small frame's header, as in hdr-no-mrg"),
    ("indirect", "split"): (
        "fail", "RX frame byte 0",
        "lib/vhost follows INDIRECT only on a chain's head (fill_vec_buf_split), so a table "
        "behind a direct header is sent as frame bytes (S-05)"),
    ("get-vring-base", "packed"): (
        "fail", "expected 0x40004",
        "lib/vhost returns only the avail half (bits 0-15) of the packed base (P-10)"),
    ("vring-base-resume", "split"): ("wedge", "no used buffer", _RESUME_TESTPMD),
    ("vring-base-resume", "packed"): ("wedge", "no used buffer", _RESUME_TESTPMD),
    ("dirty-log", "packed"): ("fail", "a used packed descriptor", _PACKED_LOG),
}

# Open vSwitch 3.1.0 with DPDK 22.11.11 (openvswitch-switch-dpdk), a dpdkvhostuserclient
# port echoed by the flow in_port=vhu0,actions=in_port; default other_config
# (userspace-tso-enable off), port MTU 1500. The same lib/vhost as testpmd, so the same
# header and ring findings, plus OVS's own.
_OVS_SAME = ("as with testpmd: the same DPDK 22.11 lib/vhost")
_RESUME_OVS = (f"{_RESUME}. OVS's destroy_device had reset its TX queue map to 'unknown' "
               "(netdev_dpdk_txq_map_clear), and new_device, needing no reconfiguration, "
               "leaves it so: every frame for the guest's RX ring is dropped (OVS's log: after "
               "the device is added again only queue 1, the guest's TX, is announced "
               "enabled)")
OVS_DPDK = {
    ("feature-deps", "-"): (
        "fail", "HOST_ECN without HOST_TSO4 or HOST_TSO6",
        "without userspace-tso-enable OVS disables only CSUM (netdev-dpdk.c: 'and all the "
        "features that depends on it (TSO, UFO, ECN)'), and lib/vhost's linear-buffer mode "
        "(no external buffers) clears HOST_TSO4/6 and HOST_UFO, but HOST_ECN stays offered "
        "(offered 0xd7c66a7ca: no CSUM and no HOST_TSO4/6, yet HOST_ECN). With "
        "other_config:userspace-tso-enable=true OVS offers 0xd7c669fcb instead (CSUM and "
        "HOST_TSO4/6 on, HOST_ECN and HOST_UFO off) and this case passes; vring-enable, "
        "mergeable and the lib/vhost findings stay (seen with those cases only)"),
    ("minimal-features", "split"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("minimal-features", "packed"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("hdr-no-mrg", "split"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("hdr-no-mrg", "packed"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("echo-no-mrg", "split"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("echo-no-mrg", "packed"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("no-spread", "split"): ("fail", "num_buffers 61166",
                             "the small frame's header, as in hdr-no-mrg"),
    ("no-spread", "packed"): ("fail", "num_buffers 61166",
                              "the small frame's header, as in hdr-no-mrg"),
    ("indirect", "split"): ("fail", "RX frame byte 0",
                            f"{_OVS_SAME}: INDIRECT followed only on a chain's head (S-05)"),
    ("get-vring-base", "packed"): ("fail", "expected 0x40004",
                                   f"{_OVS_SAME}: only the avail half of the packed base "
                                   "(P-10)"),
    ("vring-base-resume", "split"): ("wedge", "no used buffer", _RESUME_OVS),
    ("vring-base-resume", "packed"): ("wedge", "no used buffer", _RESUME_OVS),
    # A race (OVS_RACES): wedged in some runs on either ring, passed in others.
    ("vring-enable", "split"): (
        "wedge", "no used buffer",
        "as on packed: OVS applies SET_VRING_ENABLE on its vhost-events thread, after the ack"),
    ("vring-enable", "packed"): (
        "wedge", "no used buffer",
        "OVS applies SET_VRING_ENABLE late: lib/vhost acks it at once (REPLY_ACK), but OVS "
        "queues the state change to its vhost-events thread, which polls with a back-off of "
        "up to 64 ms before it maps the TX queue to the guest's RX ring again; the frame "
        "the probe sends right after the ack is counted in tx_dropped (seen in OVS's log "
        "and statistics), and nothing is held. On split the same race was lost before and "
        "won in the runs of 2026-12-07"),
    ("mergeable", "split"): (
        "wedge", "no used buffer",
        "the 4000-byte TX frame is dropped at dequeue: OVS asks lib/vhost for linear mbufs "
        "and, without userspace-tso-enable, for no external buffers, so a frame longer than "
        "the port's MTU-1500 mbuf cannot be taken ('failed mbuf alloc of size 4000' in "
        "OVS's log)"),
    ("mergeable", "packed"): (
        "wedge", "no used buffer",
        "as on split: 'failed mbuf alloc of size 4000'"),
    ("dirty-log", "split"): (
        "wedge", "no used buffer",
        "the case's frames run to 9000 bytes: the first (1000) comes back, the second (2777) "
        "is over the port's MTU and never does, as in mergeable (seen: one RX buffer used, "
        "then nothing; the log itself is not reached)"),
    ("dirty-log", "packed"): (
        "wedge", "no used buffer", "as on split: the frames over the MTU are not echoed"),
}

# The same testpmd in macswap mode, the traffic suite: what io mode fails there, with the
# swapped MAC addresses expected (the first difference is still frame byte 0).
DPDK_TESTPMD_MACSWAP = {k: v for k, v in DPDK_TESTPMD.items()
                        if k[0] in ("indirect", "echo-no-mrg")}

# In txonly mode, the traffic suite: the frames testpmd sends of its own without MRG_RXBUF.
DPDK_TESTPMD_TXONLY = {
    ("source-no-mrg", "split"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
    ("source-no-mrg", "packed"): ("fail", "num_buffers 61166", _NUM_BUFFERS),
}

# Cases whose outcome against OVS is a race with its own threads: the verdict above, or a
# pass (harness/test_probe_ovs.py takes either; the report says which this run saw).
OVS_RACES = {("vring-enable", "split"), ("vring-enable", "packed")}

BY_BACKEND = {"dpdk-testpmd": DPDK_TESTPMD, "dpdk-testpmd-macswap": DPDK_TESTPMD_MACSWAP,
              "dpdk-testpmd-txonly": DPDK_TESTPMD_TXONLY, "ovs-dpdk": OVS_DPDK}

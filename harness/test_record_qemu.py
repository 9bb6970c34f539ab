"""`vhostlab serve --record` with the most real front end: QEMU 7.2 and a Linux guest
(test_interop_qemu.py's split, mergeable cell: pings, then TCP through serve's TAP device in
a namespace). The first packets of the session -- ARP, pings, the TCP handshake and the
start of the transfer -- are recorded and must replay green: the guest's own virtio-net
driver, indirect descriptors and event index included.

Cells: `plain` (serve --offloads off: MTU-sized frames, 3000 packets), and with checksum
offload and TSO negotiated `tso-guest-sends` (the guest's 64 KiB TSO frames, dequeued with
their GSO header) and `tso-guest-receives` (the host's TSO frames, which serve writes into
the guest's header): the trace's features carry the offloads and its packets their offload
fields, and the replay checks them. Fewer packets there: a 64 KiB frame takes about 130 KB
of trace.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from test_interop_qemu import (  # noqa: F401  (fixtures are found by name)
    Cell,
    guest,
    guest_result,
    netns_ok,
    qemu,
)

CELLS = {
    # name: (serve options, packets recorded, guest sends, guest receives)
    "plain": (["--offloads", "off"], 3000, True, True),
    "tso-guest-sends": ([], 400, True, False),
    "tso-guest-receives": ([], 400, False, True),
}
OFFLOAD_FEATURES = {"csum", "guest_csum", "host_tso4", "host_tso6", "host_ecn", "guest_tso4",
                    "guest_tso6", "guest_ecn"}


@pytest.mark.parametrize("cell", list(CELLS))
def test_qemu_session_recorded_and_replayed(vhostlab, qemu, guest, netns_ok, cell, capsys):
    extra, max_packets, send, receive = CELLS[cell]
    with tempfile.TemporaryDirectory(prefix="vhl-qemu-rec-") as d:
        c = Cell(vhostlab, Path(d), {"ring": "split", "mrg": 1})
        c.send, c.receive = send, receive
        path = Path(d) / "qemu.trace"
        c.serve_extra = ["--record", str(path), "--record-max-packets", str(max_packets),
                         *extra]
        try:
            c.make_namespace()
            c.start_serve()
            c.start_peer()
            c.run_qemu(qemu, guest)
            c.peer_results()
            serve = c.stop_serve()
            g = guest_result(c.logs["guest console"])
            qemu_rc = c.qemu.returncode
        finally:
            c.close()
        assert qemu_rc == 0 and g and g.get("status") == "ok", (qemu_rc, g)
        rec = serve["record"]
        assert serve["exit"] == 0 and rec["written"] is True, rec
        assert rec["packets"] >= max_packets and "bound" in rec["stopped"], f"{rec}"
        text = path.read_text()
        dequeued = sum(int(m) for m in re.findall(r"^expect dequeued \S+ (\d+)$", text, re.M))
        enqueued = sum(int(m) for m in re.findall(r"^expect enqueued \S+ (\d+)$", text, re.M))
        assert dequeued + enqueued == rec["packets"], (dequeued, enqueued, rec)
        assert dequeued > 0 and enqueued > 0, (dequeued, enqueued)
        features = set(re.search(r"^features (.*)$", text, re.M).group(1).split())
        # Offload fields: the guest's TSO frames as dequeued (TCPV4 = 1), the host's as
        # enqueued into the guest's header.
        tso_out = len(re.findall(r"^expect packet \S+ \d+ .*\bgso_type=1\b", text, re.M))
        tso_in = len(re.findall(r",gso_type=1\b", text))
        res = vhostlab("replay", str(path), timeout=120)
        with capsys.disabled():
            print(f"\n  qemu record {cell}: {rec['packets']} packets ({dequeued} from the "
                  f"guest, {tso_out} of them TSO; {enqueued} to it, {tso_in} TSO) in "
                  f"{rec['bursts']} bursts, {rec['statements']} statements, {rec['regions']} "
                  f"regions, {path.stat().st_size} bytes; replay: "
                  f"{res.stdout.splitlines()[0] if res.stdout else res.stderr}", end="")
        assert res.returncode == 0, res.describe()
        if cell == "plain":
            assert not features & OFFLOAD_FEATURES and tso_out == tso_in == 0, features
        else:
            assert features >= OFFLOAD_FEATURES, features
            assert (tso_out > 0) == send and (tso_in > 0) == receive, (tso_out, tso_in)
        if cell == "tso-guest-sends":
            # The replay checks those fields: one segment size off by one fails it.
            m = re.search(r"^(expect packet \S+ \d+ .*\bgso_size=)(\d+)", text, re.M)
            path.write_text(text[:m.start(2)] + str(int(m.group(2)) + 1) + text[m.end(2):])
            bad = vhostlab("replay", str(path), timeout=120)
            assert bad.returncode == 1 and "expect packet" in bad.stdout + bad.stderr, (
                bad.describe())

"""`vhostlab serve --record` with the most real front end: QEMU 7.2 and a Linux guest
(test_interop_qemu.py's split, mergeable cell: pings, then TCP both ways through serve's TAP
device in a namespace). The first packets of the session -- ARP, pings, the TCP handshake
and the start of the transfer -- are recorded and must replay green: the guest's own
virtio-net driver, indirect descriptors and event index included.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from test_interop_qemu import (  # noqa: F401  (fixtures are found by name)
    Cell,
    guest,
    guest_result,
    netns_ok,
    qemu,
)

MAX_PACKETS = 3000


def test_qemu_session_recorded_and_replayed(vhostlab, qemu, guest, netns_ok):
    with tempfile.TemporaryDirectory(prefix="vhl-qemu-rec-") as d:
        c = Cell(vhostlab, Path(d), {"ring": "split", "mrg": 1})
        path = Path(d) / "qemu.trace"
        c.serve_extra = ["--record", str(path), "--record-max-packets", str(MAX_PACKETS)]
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
        assert rec["packets"] >= MAX_PACKETS and "bound" in rec["stopped"], f"{rec}"
        text = path.read_text()
        dequeued = sum(int(m) for m in re.findall(r"^expect dequeued \S+ (\d+)$", text, re.M))
        enqueued = sum(int(m) for m in re.findall(r"^expect enqueued \S+ (\d+)$", text, re.M))
        assert dequeued + enqueued == rec["packets"], (dequeued, enqueued, rec)
        assert dequeued > 0 and enqueued > 0, (dequeued, enqueued)
        res = vhostlab("replay", str(path), timeout=120)
        print(f"\n  qemu record: {rec['packets']} packets ({dequeued} from the guest, "
              f"{enqueued} to it) in {rec['bursts']} bursts, {rec['statements']} statements, "
              f"{rec['regions']} regions, {path.stat().st_size} bytes; replay: "
              f"{res.stdout.splitlines()[0] if res.stdout else res.stderr}")
        assert res.returncode == 0, res.describe()

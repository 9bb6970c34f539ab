"""The device lifecycle with QEMU 7.2 and a Linux guest (docs/lifecycle.md): memory
hot-plugged and unplugged while TCP streams run through `vhostlab-fast serve`.

The cell is the checked QEMU interop cell of test_interop_qemu.py (namespace, serve in TAP
mode, host peer, guest moving BYTES each way with md5 digests, every check of that cell),
with QEMU started with room for DIMMs (`-m 128,slots=4,maxmem=1G`) and a QMP socket, and
the guest's kernel onlining hot-plugged memory as movable (so that it can be unplugged).
While the streams run, over QMP: a 128 MiB shareable DIMM is plugged (object-add
memory-backend-memfd share=on, device_add pc-dimm), then unplugged again (device_del; the
guest's ACPI handler offlines it and QEMU reports DEVICE_DELETED; object-del).

With CONFIGURE_MEM_SLOTS (which serve offers), QEMU tells serve about each change with one
ADD_MEM_REG and one REM_MEM_REG; serve announces every table change as a `memory` event.
Checked: the table grew by exactly one region of 128 MiB and shrank back to what it was,
the streams arrived whole (digests), every ping was answered, and serve rejected no message,
dropped nothing and leaked nothing.
"""

from __future__ import annotations

import re
import time

import pytest

from qmp import QMP
from test_interop_qemu import (  # noqa: F401  (fixtures are found by name)
    START_TIMEOUT, guest, netns_ok, qemu, run_checked_cell, tail)

DIMM_MIB = 128
HOTPLUG_BYTES = 192 << 20  # each way: long enough that the streams run across both changes


def memory_tables(events: list[dict]) -> list[tuple[int, int]]:
    """(regions, MiB) of each `memory` event of serve, in order."""
    out = []
    for e in events:
        if e.get("event") != "memory":
            continue
        m = re.match(r"memory table: (\d+) regions?, (\d+) MiB", e.get("message", ""))
        assert m, f"malformed memory event: {e}"
        out.append((int(m.group(1)), int(m.group(2))))
    return out


def test_qemu_memory_hotplug_under_traffic(vhostlab_fast, qemu, guest, netns_ok, capsys):
    cell = {"ring": "split", "mrg": True}
    seen: dict = {}

    def plug_and_unplug(c) -> None:
        qmp = QMP(str(c.dir / "qmp.sock"), timeout=START_TIMEOUT)
        try:
            # The streams start right after the pings: plug once the guest has pinged.
            deadline = time.monotonic() + START_TIMEOUT * 3
            while "VHL: ping:" not in tail(c.logs["guest console"]):
                assert time.monotonic() < deadline, "the guest never pinged"
                assert c.qemu.poll() is None, "QEMU exited before the hot-plug"
                time.sleep(0.1)
            qmp.execute("object-add", **{"qom-type": "memory-backend-memfd", "id": "hp1",
                                         "size": DIMM_MIB << 20, "share": True})
            qmp.execute("device_add", driver="pc-dimm", id="dimm1", memdev="hp1")
            seen["plugged_at"] = tail(c.logs["guest console"]).count("\n")
            time.sleep(1.0)
            qmp.execute("device_del", id="dimm1")
            qmp.wait_event("DEVICE_DELETED", timeout=START_TIMEOUT * 2)
            qmp.execute("object-del", id="hp1")
            seen["unplugged"] = True
            seen["guest_done_before_unplug"] = "VHL-RESULT" in tail(c.logs["guest console"])
        finally:
            qmp.close()

    def setup(c) -> None:
        c.mem_opts = "128,slots=4,maxmem=1G"
        c.qemu_extra = ["-qmp", f"unix:{c.dir / 'qmp.sock'},server=on,wait=off"]
        c.append_extra = " memhp_default_state=online_movable"
        c.during = plug_and_unplug

    out: dict = {}
    run_checked_cell(vhostlab_fast, qemu, guest, cell, capsys, nbytes=HOTPLUG_BYTES,
                     cell_id="hotplug-split-mrg-on", out=out, setup=setup)
    assert seen.get("unplugged"), f"the DIMM was not unplugged: {seen}"
    tables = memory_tables(out["events"])
    with capsys.disabled():
        print(f"\n  qemu hotplug memory tables (regions, MiB): {tables}; streams still "
              f"running at unplug: {not seen['guest_done_before_unplug']}", end="")
    assert len(tables) >= 3, f"expected the boot table, a plug and an unplug: {tables}"
    most = max(tables, key=lambda t: t[0])
    base = tables[tables.index(most) - 1]
    assert most == (base[0] + 1, base[1] + DIMM_MIB), (
        f"the hot-plug should add one region of {DIMM_MIB} MiB: {tables}")
    assert tables[-1] == base, f"the unplug should restore the table before it: {tables}"

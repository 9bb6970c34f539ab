"""Live migration of a Linux guest between two QEMU processes, each with its own serve (issue
58 point 1), and the guest announce seen on the far side (point 2).

One network namespace holds a bridge (10.99.0.1/24) and two `vhostlab-fast serve --mode
tap:...` back ends whose TAP devices are ports of that bridge, and the host peer. QEMU A
boots the guest (RAM: memory-backend-file on /dev/shm, share=on -- memfd-backed RAM broke
guest kernels after migrations under load here, ../shared/design/lifecycle-recipes.md); the
guest pulls a stream from the host peer, sent at a bounded rate so that it runs all through
the migrations. Once the stream started, A migrates to QEMU B (`migrate` tcp:127.0.0.1:PORT,
`query-migrate` polled until completed), A quits, a new QEMU A' waits on A's serve and B
migrates back to it: there and back. Checks: the digest the guest computed of the stream
(on A', after it arrived) matches the peer's; the guest's pings after the stream are
answered; each destination QEMU sent SEND_RARP (serve's `announce` event, the RARP frame seen
on the bridge by a raw socket) and printed no "fails to broadcast fake RARP"; neither serve
rejected a message, and both stop with no packet leaked.

The cell runs twice: split rings, and packed rings (`packed=on` on QEMU's virtio-net-pci;
every QEMU of the cell, source and destinations, asks for the same layout, as a migration
requires). serve's `running` events show that every front end negotiated the layout asked
for.

Why this cannot prove the dirty log complete, and what does: docs/lifecycle.md, "Live
migration" (harness/test_migration_mutant.py).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qmp import QMP
from test_interop_qemu import (  # noqa: F401  (fixtures are found by name)
    HOST_PEER, child_pid, guest, guest_result, json_lines, kill_group, netns_ok, qemu, sh,
    stop_serve, tail)

HOST_IP, GUEST_IP = "10.99.0.1", "10.99.0.2"
MAC = "52:54:00:12:34:56"
STREAM_MIB = int(os.environ.get("VHOSTLAB_MIGRATE_MIB", "48"))
RATE_MIB = 3.0  # the stream lasts STREAM_MIB / RATE_MIB s: longer than two migrations
SCALE = float(os.environ.get("VHOSTLAB_TIMEOUT_SCALE", "1"))
QEMU_TIMEOUT = int(240 * SCALE)
PINGS_AFTER = 3
NO_RARP = "fails to broadcast fake RARP"

CAPTURE = r"""
import socket, sys, select, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x8035))
s.bind((sys.argv[1], 0))
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    if select.select([s], [], [], 0.2)[0]:
        print(s.recv(65536).hex(), flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The ring layouts the cell migrates with: QEMU's virtio-net-pci `packed=on` asks the guest
# for the packed ring (serve offers both; its `running` event names the one negotiated).
LAYOUTS = {"split": "", "packed": ",packed=on"}


class Migration:
    def __init__(self, tmp: Path, prog, qemu_bin: str, guest: dict, dev_opts: str = ""):
        self.tmp, self.prog, self.qemu_bin, self.guest = tmp, prog, qemu_bin, guest
        self.dev_opts = dev_opts
        self.ns = f"vhl-migrat-{os.getpid()}"
        self.procs: list[subprocess.Popen] = []
        self.files = []
        self.shm: list[Path] = []
        self.serves: dict[str, subprocess.Popen] = {}
        self.ns_made = False

    def log(self, name: str):
        f = open(self.tmp / name, "w")
        self.files.append(f)
        return f

    def make_net(self) -> None:
        assert sh("ip", "netns", "add", self.ns).returncode == 0
        self.ns_made = True
        for cmd in (("link", "set", "lo", "up"), ("link", "add", "br0", "type", "bridge"),
                    ("addr", "add", f"{HOST_IP}/24", "dev", "br0"), ("link", "set", "br0", "up")):
            res = sh("ip", "-n", self.ns, *cmd)
            assert res.returncode == 0, (cmd, res.stderr)

    def start_serve(self, side: str) -> None:
        tap = f"vhlm{side}"
        err = self.tmp / f"serve-{side}.err"
        p = subprocess.Popen(
            ["timeout", "-s", "KILL", str(QEMU_TIMEOUT + 60), "ip", "netns", "exec", self.ns,
             str(self.prog.path), "serve", "--socket", str(self.tmp / f"{side}.sock"),
             "--mode", f"tap:{tap}", "--json"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log(err.name),
            text=True)
        self.serves[side] = p
        end = time.monotonic() + 20
        while not any(e.get("event") == "listening" for e in json_lines(err)):
            assert p.poll() is None and time.monotonic() < end, err.read_text()
            time.sleep(0.05)
        for cmd in (("link", "set", tap, "master", "br0"), ("link", "set", tap, "up")):
            res = sh("ip", "-n", self.ns, *cmd)
            assert res.returncode == 0, (cmd, res.stderr)

    def start_qemu(self, name: str, side: str, incoming: int | None) -> tuple:
        shm = Path(f"/dev/shm/vhl-migrat-{os.getpid()}-{name}")
        self.shm.append(shm)
        g = Path(self.guest["dir"])
        qmp_path = self.tmp / f"qmp-{name}.sock"
        append = (f"console=ttyS0 quiet panic=-1 vhl_ip={GUEST_IP} vhl_peer={HOST_IP} "
                  f"vhl_tx=0 vhl_rx=1 vhl_pings=3 vhl_pings_after={PINGS_AFTER} "
                  f"vhl_timeout={QEMU_TIMEOUT - 30}")
        argv = [self.qemu_bin, "-accel", "tcg", "-m", "128",
                "-object", f"memory-backend-file,id=mem,size=128M,share=on,mem-path={shm}",
                "-numa", "node,memdev=mem",
                "-chardev", f"socket,id=c0,path={self.tmp / (side + '.sock')}",
                "-netdev", "type=vhost-user,id=n0,chardev=c0",
                "-device", f"virtio-net-pci,netdev=n0,mac={MAC},vectors=0,id=nic0{self.dev_opts}",
                "-kernel", str(g / "vmlinux"), "-initrd", str(g / "initramfs.cpio"),
                "-append", append, "-display", "none", "-no-reboot", "-nodefaults",
                "-serial", "stdio", "-qmp", f"unix:{qmp_path},server=on,wait=off"]
        if incoming is not None:
            argv += ["-incoming", f"tcp:127.0.0.1:{incoming}"]
        p = subprocess.Popen(["timeout", "-s", "KILL", str(QEMU_TIMEOUT), *argv],
                             stdin=subprocess.DEVNULL, stdout=self.log(f"console-{name}.log"),
                             stderr=self.log(f"qemu-{name}.err"))
        self.procs.append(p)
        end = time.monotonic() + 20
        while not qmp_path.exists():
            assert p.poll() is None and time.monotonic() < end, self.dump()
            time.sleep(0.05)
        q = QMP(str(qmp_path))
        return p, q

    def migrate(self, src: QMP, port: int) -> dict:
        src.execute("migrate", uri=f"tcp:127.0.0.1:{port}")
        end = time.monotonic() + 120 * SCALE
        while True:
            st = src.execute("query-migrate")
            if st.get("status") in ("completed", "failed", "cancelled"):
                return st
            assert time.monotonic() < end, f"migration not done: {st}" + self.dump()
            time.sleep(0.2)

    def dump(self) -> str:
        out = []
        for f in sorted(self.tmp.iterdir()):
            if f.suffix in (".log", ".err", ".out"):
                out.append(f"\n--- {f.name} ---\n{tail(f, 3000)}")
        return "".join(out)

    def close(self) -> None:
        for p in self.procs:
            kill_group(p)
        for p in self.serves.values():
            if p.poll() is None:
                kill_group(p)
        if self.ns_made:
            sh("ip", "netns", "del", self.ns)
        for s in self.shm:
            s.unlink(missing_ok=True)
        for f in self.files:
            f.close()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_qemu_migrate_there_and_back_under_a_stream(vhostlab_fast, qemu, guest, netns_ok,
                                                   tmp_path, capsys, layout):
    m = Migration(tmp_path, vhostlab_fast, qemu, guest, LAYOUTS[layout])
    try:
        m.make_net()
        m.start_serve("A")
        m.start_serve("B")
        # Under timeout, which leads its own process group: kill_group ends it.
        cap = subprocess.Popen(["timeout", "-s", "KILL", str(QEMU_TIMEOUT), "ip", "netns",
                                "exec", m.ns, sys.executable, "-c", CAPTURE, "br0",
                                str(QEMU_TIMEOUT)],
                               stdout=m.log("rarp.out"), stderr=subprocess.STDOUT, text=True)
        m.procs.append(cap)
        peer_out = tmp_path / "peer.out"
        peer = subprocess.Popen(
            ["timeout", "-s", "KILL", str(QEMU_TIMEOUT), "ip", "netns", "exec", m.ns,
             sys.executable, str(HOST_PEER), "--addr", HOST_IP, "--no-sink", "--bytes",
             str(STREAM_MIB << 20), "--rate", str(RATE_MIB), "--timeout", str(QEMU_TIMEOUT)],
            stdin=subprocess.DEVNULL, stdout=m.log("peer.out"), stderr=m.log("peer.err"))
        m.procs.append(peer)
        t0 = time.monotonic()
        qa, qmp_a = m.start_qemu("A", "A", None)
        # The stream has started: the guest writes serve A's RX buffers from now on.
        end = time.monotonic() + 120 * SCALE
        while not any(e.get("event") == "source_start" for e in json_lines(peer_out)):
            assert qa.poll() is None and time.monotonic() < end, m.dump()
            time.sleep(0.1)
        t_stream = time.monotonic()
        port_b = free_port()
        qb, qmp_b = m.start_qemu("B", "B", port_b)
        there = m.migrate(qmp_a, port_b)
        assert there["status"] == "completed", f"{there}" + m.dump()
        qmp_b.wait_event("RESUME", 30 * SCALE)
        qmp_a.execute("quit")
        qa.wait(timeout=30)
        # Back: a new QEMU on serve A (which takes the next front end after A left).
        port_a = free_port()
        qa2, qmp_a2 = m.start_qemu("A2", "A", port_a)
        back = m.migrate(qmp_b, port_a)
        assert back["status"] == "completed", f"{back}" + m.dump()
        t_back = time.monotonic()
        qmp_b.execute("quit")
        qb.wait(timeout=30)
        rc = qa2.wait(timeout=QEMU_TIMEOUT)
        peer.wait(timeout=30)
        total = time.monotonic() - t0
        serves = {s: stop_serve(p, {}) for s, p in m.serves.items()}
        time.sleep(0.5)
        kill_group(cap)
    finally:
        m.close()

    g = guest_result(tmp_path / "console-A2.log")
    ctx = m.dump()
    assert rc == 0 and g is not None and g.get("status") == "ok", f"guest: {g}{ctx}"
    src = {e["event"]: e for e in json_lines(peer_out)}["source"]
    # The stream ran through both migrations and arrived whole, checked in the guest.
    assert src["bytes"] == STREAM_MIB << 20 and src.get("error") is None, f"{src}{ctx}"
    assert g["rx_rc"] == "0" and int(g["rx_bytes"]) == src["bytes"], f"{g}{ctx}"
    assert g["rx_md5"] == src["md5"], f"host->guest data differ (md5){ctx}"
    assert t_back - t_stream < src["secs"], (
        f"the stream ended before the guest came back ({src['secs']} s){ctx}")
    assert int(g["after_ping"]) == PINGS_AFTER, f"pings after the migrations: {g}{ctx}"
    # The announce: both destinations sent SEND_RARP, neither QEMU warned.
    for name in ("B", "A2"):
        assert NO_RARP not in (tmp_path / f"qemu-{name}.err").read_text(), ctx
    rarps = [bytes.fromhex(x) for x in (tmp_path / "rarp.out").read_text().split()[1:]]
    mac = bytes.fromhex(MAC.replace(":", ""))
    assert len([f for f in rarps if f[6:12] == mac and f[12:14] == b"\x80\x35"]) >= 2, ctx
    for side in ("A", "B"):
        ev = json_lines(tmp_path / f"serve-{side}.err")
        assert any(e.get("event") == "announce" and "RARP broadcast" in e.get("message", "")
                   for e in ev), f"serve {side} announced nothing{ctx}"
        assert not [e for e in ev if e.get("event") in ("rejected", "error", "broken")], (
            f"serve {side}: {[e for e in ev if e.get('event') in ('rejected', 'error')]}")
        # Every front end of the cell ran the layout asked for.
        running = [e["message"] for e in ev if e.get("event") == "running"]
        assert running and all(f": {layout} ring," in r for r in running), (
            f"serve {side}: {running}{ctx}")
        s = serves[side]
        assert s["exit"] == 0 and s["leaked_packets"] == 0, f"serve {side}: {s}"
        assert all(p["rejected"] == 0 for p in s["ports"]), f"serve {side}: {s}"
    with capsys.disabled():
        print(f"\n[migrat {layout}] there: {there.get('total-time')} ms total, downtime "
              f"{there.get('downtime')} ms; back: {back.get('total-time')} ms, downtime "
              f"{back.get('downtime')} ms; stream {src['bytes'] >> 20} MiB in {src['secs']} s, "
              f"md5 ok; pings after {g['after_ping']}/{PINGS_AFTER}; RARP frames {len(rarps)}; "
              f"cell {total:.1f} s")

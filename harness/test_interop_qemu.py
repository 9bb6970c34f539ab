"""Interoperability of `vhostlab-fast serve` (the production program; vhostlab serve
--record in test_record_qemu.py) with QEMU 7.2 and a Linux guest (docs/interop.md,
../shared/design/real-front-ends.md).

For each cell of {split, packed} ring x {mergeable RX buffers on, off}:

    network namespace vhl-qemu-PID-N (made here, deleted at the end)
      vhostlab-fast serve --socket SOCK --mode tap:vhlN the TAP lives in the namespace
      vhlN 10.99.0.1/24                                 (never on the host's namespace)
      harness/guest/host_peer.py                        TCP sink :5001, source :5002
    qemu-system-x86_64 -accel tcg ... -netdev vhost-user (SOCK) -device virtio-net-pci
      guest (harness/guest/build_initramfs.py): eth0 10.99.0.2/24, pings 10.99.0.1,
      sends BYTES to the sink, receives BYTES from the source, prints VHL-RESULT, powers off

and checks: every ping answered; what the guest sent arrived with the same byte count and
md5, and what the host sent arrived in the guest with the same count and md5; serve ran
with the cell's features, rejected no message, dropped no malformed or oversized packet
and returned every packet buffer. Each cell prints one line (ping, bytes, checksums,
seconds) to the terminal, even under `pytest -q`.

Default BYTES: 64 MiB each way (VHOSTLAB_QEMU_MIB overrides). About 8 s per cell here.

Needs root (network namespaces, TAP), qemu-system-x86, linux-image-amd64 and
busybox-static (./lab's package list); anything missing is a failure, not a skip. serve
has no in-process responder, so when no TAP device can be made there is no other path and
the test fails saying why.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from script_import import import_script

HERE = Path(__file__).resolve().parent
BUILD_GUEST = HERE / "guest" / "build_initramfs.py"
HOST_PEER = HERE / "guest" / "host_peer.py"

HOST_IP = "10.99.0.1"  # inside the test's namespace only
GUEST_IP = "10.99.0.2"
MIB = 1 << 20
BYTES = max(1, int(os.environ.get("VHOSTLAB_QEMU_MIB", "64"))) * MIB
PINGS = 3
SCALE = float(os.environ.get("VHOSTLAB_TIMEOUT_SCALE", "1"))
START_TIMEOUT = 20 * SCALE
GUEST_TRANSFER_TIMEOUT = int(60 * SCALE)  # per direction, inside the guest
QEMU_TIMEOUT = 150 * SCALE  # boot + both transfers + power-off

F_MRG_RXBUF = 1 << 15
F_PACKED = 1 << 34

CELLS = [{"ring": r, "mrg": m} for r, m in itertools.product(("split", "packed"), (True, False))]
CELL_IDS = [f"{c['ring']}-mrg-{'on' if c['mrg'] else 'off'}" for c in CELLS]

_counter = itertools.count()


def tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no file)"


def sh(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["timeout", "-s", "KILL", str(int(timeout)), *argv],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)


# Every long-lived process runs under timeout(1), which puts itself in a process group of
# its own with the process as its only child: that group is exactly what this file started.
def child_pid(proc: subprocess.Popen) -> int | None:
    return import_script("vs_dpdk").timeout_child(proc.pid,
                                                  alive=lambda: proc.poll() is None)


def kill_group(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def wait_for(cond, timeout: float, what: str, logs: dict[str, Path]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}{dump(logs)}", pytrace=False)


def dump(logs: dict[str, Path]) -> str:
    return "".join(f"\n--- {name} ({p}) ---\n{tail(p)}" for name, p in logs.items()
                   if p.exists())


def stop_serve(serve: subprocess.Popen, logs: dict[str, Path]) -> dict:
    """SIGINT to serve (the child of `ip netns exec`), then its final statistics (JSON on
    stdout) with its exit status under "exit"; a serve that does not stop, or prints no
    JSON, fails the test."""
    pid = child_pid(serve)
    if pid is not None and serve.poll() is None:
        os.kill(pid, signal.SIGINT)
    try:
        out, _ = serve.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        kill_group(serve)
        pytest.fail("serve did not stop on SIGINT" + dump(logs), pytrace=False)
    try:
        return {"exit": serve.returncode, **json.loads(out)}
    except json.JSONDecodeError:
        pytest.fail(f"serve's final statistics are not JSON (exit {serve.returncode}):\n"
                    f"{out[-3000:]}" + dump(logs), pytrace=False)


def json_lines(path: Path) -> list[dict]:
    out = []
    for line in tail(path, 10**9).splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


@pytest.fixture(scope="module")
def qemu() -> str:
    path = shutil.which("qemu-system-x86_64")
    if path is None:
        pytest.fail("qemu-system-x86_64 not found: the QEMU interop test needs Debian's "
                    "qemu-system-x86 (./lab installs it; or apt-get install "
                    "--no-install-recommends qemu-system-x86)", pytrace=False)
    return path


@pytest.fixture(scope="module")
def guest() -> dict:
    """The guest kernel and initramfs, built once and cached under the build directory."""
    res = sh(sys.executable, str(BUILD_GUEST), "--json", timeout=300)
    if res.returncode != 0:
        pytest.fail(f"cannot build the guest ({BUILD_GUEST.name}):\n{res.stderr}{res.stdout}",
                    pytrace=False)
    info = json.loads(res.stdout)
    return info


@pytest.fixture(scope="module")
def netns_ok() -> None:
    if os.geteuid() != 0:
        pytest.fail("the QEMU interop test needs root: it makes a network namespace and a TAP "
                    "device inside it (CI runs as root)", pytrace=False)
    if shutil.which("ip") is None:
        pytest.fail("'ip' (iproute2) not found", pytrace=False)


class Cell:
    """One cell's namespace, serve, host peer and QEMU, torn down in close()."""

    def __init__(self, prog, workdir: Path, cell: dict) -> None:
        """prog: the program that serves (vhostlab-fast; vhostlab for --record)."""
        n = next(_counter)
        self.cell = cell
        self.dir = workdir
        self.ns = f"vhl-qemu-{os.getpid()}-{n}"
        self.tap = f"vhl{n}"
        self.sock = workdir / "vu.sock"
        self.logs = {
            "serve stderr": workdir / "serve.err",
            "host peer": workdir / "peer.out",
            "host peer stderr": workdir / "peer.err",
            "guest console": workdir / "console.log",
            "qemu stderr": workdir / "qemu.err",
        }
        self.prog = prog
        self.serve_extra: list[str] = []  # more serve options (test_record_qemu.py)
        self.nbytes = BYTES  # each way
        self.send = self.receive = True  # the guest sends nbytes, receives nbytes
        # Lifecycle cells (test_lifecycle_qemu.py): more QEMU options and kernel command
        # line, and what to do while QEMU runs (called with this Cell once it started).
        self.qemu_extra: list[str] = []
        self.mem_opts = "128"  # QEMU's -m (hot-plug: "128,slots=4,maxmem=1G")
        self.chardev_extra = ""  # ",server=on,wait=off" / ",reconnect=1" (reconnect cells)
        self.append_extra = ""
        self.during = None
        self.ns_made = False
        self.serve = self.peer = self.qemu = None
        self._files = []

    def _open(self, name: str):
        f = open(self.logs[name], "w")
        self._files.append(f)
        return f

    def make_namespace(self) -> None:
        res = sh("ip", "netns", "add", self.ns)
        if res.returncode != 0:
            pytest.fail(f"cannot create network namespace {self.ns}: {res.stderr.strip()}",
                        pytrace=False)
        self.ns_made = True
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")

    def start_serve(self) -> None:
        self.serve_argv = [str(self.prog.path), "serve", "--socket", str(self.sock),
                           "--mode", f"tap:{self.tap}", "--json", "--stats-interval", "1",
                           *self.serve_extra]
        self.serve = subprocess.Popen(
            ["timeout", "-s", "KILL", str(int(QEMU_TIMEOUT + 60)), "ip", "netns", "exec",
             self.ns, *self.serve_argv],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=self._open("serve stderr"), text=True)

        def up() -> bool:
            if self.serve.poll() is not None:
                return True
            return any(e.get("event") in ("listening", "error")
                       for e in json_lines(self.logs["serve stderr"]))

        wait_for(up, START_TIMEOUT, "serve to listen", self.logs)
        errors = [e["message"] for e in json_lines(self.logs["serve stderr"])
                  if e.get("event") == "error"]
        if self.serve.poll() is not None and not errors:
            pytest.fail(f"vhostlab serve exited {self.serve.returncode} before listening "
                        f"(is `serve` in {self.prog.path}?)" + dump(self.logs),
                        pytrace=False)
        if errors:
            tun = Path("/dev/net/tun")
            pytest.fail(
                f"vhostlab serve --mode tap:{self.tap} did not start in namespace {self.ns} "
                f"(exit {self.serve.poll()}): {'; '.join(errors)}\n"
                f"/dev/net/tun {'exists' if tun.exists() else 'is missing'}. The TAP path is "
                "the only one: serve has no in-process responder mode to fall back to."
                + dump(self.logs), pytrace=False)
        res = sh("ip", "-n", self.ns, "addr", "add", f"{HOST_IP}/24", "dev", self.tap)
        if res.returncode != 0:
            pytest.fail(f"cannot address {self.tap} in {self.ns}: {res.stderr.strip()}",
                        pytrace=False)

    def start_peer(self) -> None:
        self.peer = subprocess.Popen(
            ["timeout", "-s", "KILL", str(int(QEMU_TIMEOUT + 30)), "ip", "netns", "exec",
             self.ns, sys.executable, str(HOST_PEER), "--addr", HOST_IP, "--bytes",
             str(self.nbytes if self.receive else 0), "--timeout", str(int(QEMU_TIMEOUT)),
             *(() if self.send else ("--no-sink",))],
            stdin=subprocess.DEVNULL, stdout=self._open("host peer"),
            stderr=self._open("host peer stderr"), text=True)
        wait_for(lambda: self.peer.poll() is not None or any(
            e.get("event") == "ready" for e in json_lines(self.logs["host peer"])),
            START_TIMEOUT, "the host peer to listen", self.logs)
        if self.peer.poll() is not None:
            pytest.fail(f"host peer exited {self.peer.returncode}" + dump(self.logs),
                        pytrace=False)

    def run_qemu(self, qemu: str, guest: dict) -> float:
        g = Path(guest["dir"])
        dev = "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,vectors=0"
        if self.cell["ring"] == "packed":
            dev += ",packed=on"
        if not self.cell["mrg"]:
            dev += ",mrg_rxbuf=off"
        dev += self.cell.get("dev_extra", "")
        append = (f"console=ttyS0 quiet panic=-1 vhl_ip={GUEST_IP} vhl_peer={HOST_IP} "
                  f"vhl_tx={self.nbytes if self.send else 0} "
                  f"vhl_rx={1 if self.nbytes and self.receive else 0} vhl_pings={PINGS} "
                  f"vhl_timeout={GUEST_TRANSFER_TIMEOUT}{self.append_extra}")
        self.qemu_argv = [
            qemu, "-accel", "tcg", "-m", self.mem_opts,
            "-object", "memory-backend-memfd,id=mem,size=128M,share=on",
            "-numa", "node,memdev=mem",
            "-chardev", f"socket,id=c0,path={self.sock}{self.chardev_extra}",
            "-netdev", "type=vhost-user,id=n0,chardev=c0",
            "-device", dev,
            "-kernel", str(g / "vmlinux"), "-initrd", str(g / "initramfs.cpio"),
            "-append", append,
            "-display", "none", "-no-reboot", "-nodefaults", "-serial", "stdio",
            *self.qemu_extra,
        ]
        t0 = time.monotonic()
        self.qemu = subprocess.Popen(
            ["timeout", "-s", "KILL", str(int(QEMU_TIMEOUT)), *self.qemu_argv],
            stdin=subprocess.DEVNULL, stdout=self._open("guest console"),
            stderr=self._open("qemu stderr"))
        if self.during is not None:
            self.during(self)
        self.qemu.wait()
        return time.monotonic() - t0

    def stop_serve(self) -> dict:
        return stop_serve(self.serve, self.logs)

    def peer_results(self) -> dict:
        try:
            self.peer.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(self.peer)
        return {e["event"]: e for e in json_lines(self.logs["host peer"])}

    def close(self) -> None:
        kill_group(self.qemu)
        if self.serve is not None and self.serve.poll() is None:
            pid = child_pid(self.serve)
            if pid is not None:
                os.kill(pid, signal.SIGINT)
            try:
                self.serve.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        kill_group(self.serve)
        kill_group(self.peer)
        if self.ns_made:
            # Every process of the namespace is gone: deleting it removes the TAP device.
            sh("ip", "netns", "del", self.ns)
        for f in self._files:
            f.close()


def guest_result(console: Path) -> dict | None:
    m = re.findall(r"^VHL-RESULT (.*)$", tail(console, 10**7), re.M)
    if not m:
        return None
    return dict(kv.split("=", 1) for kv in m[-1].split() if "=" in kv)


def summary(cell_id: str, g: dict | None, sink: dict, source: dict, qemu_secs: float,
            q: dict) -> str:
    """The cell's line: path, pings, bytes and checksums each way, seconds, serve's view."""
    out = f"{cell_id:14} path=tap "
    if g is None:
        out += "no guest result; "
    else:
        def same(a, b):
            return "ok" if a and a == b else "MISMATCH"

        out += (
            f"ping {g.get('ping_received')}/{g.get('ping_sent')}; "
            f"guest->host {sink.get('bytes', 0)} B md5 {same(sink.get('md5'), g.get('tx_md5'))} "
            f"{g.get('tx_secs')} s; "
            f"host->guest {g.get('rx_bytes')} B md5 {same(source.get('md5'), g.get('rx_md5'))} "
            f"{g.get('rx_secs')} s; "
        )
    out += f"qemu {qemu_secs:.1f} s; serve rx {q.get('rx_packets')} tx {q.get('tx_packets')} pkts"
    drops = {k: v for k, v in q.get("drops_by_reason", {}).items() if v}
    return out + (f", drops {drops}" if drops else ", no drops")


@pytest.mark.parametrize("cell", CELLS, ids=CELL_IDS)
def test_qemu_linux_guest_tcp_through_serve_tap(vhostlab_fast, qemu, guest, netns_ok, cell,
                                                  capsys):
    run_checked_cell(vhostlab_fast, qemu, guest, cell, capsys)


ZC_CELLS = [c for c in CELLS if c["mrg"]]


@pytest.mark.parametrize("cell", ZC_CELLS, ids=[c["ring"] for c in ZC_CELLS])
def test_qemu_linux_guest_zero_copy(vhostlab_fast, qemu, guest, netns_ok, cell, capsys):
    """serve --zero-copy under a Linux guest's TCP stream (mergeable buffers, TSO
    negotiated): the same checks as every cell, and the guest's TSO frames -- up to 64 KiB,
    the linear part with the headers and several page fragments with the data, each a
    piece of its own -- are dequeued without copying. Before multi-segment zero-copy this
    traffic reported zero_copied 0 (docs/interop.md)."""
    q = run_checked_cell(vhostlab_fast, qemu, guest, cell, capsys, ("--zero-copy",))
    fb = q["zc_fallbacks"]
    big = q["rx_size_bins"]["gt1518"]
    with capsys.disabled():
        print(f"\n    zero-copy: {q['zero_copied']} of {q['rx_packets']} received without "
              f"copying ({big} over {MAX_PLAIN} B), fallbacks {fb}", end="")
    assert q["zero_copied"] + sum(fb.values()) == q["rx_packets"], q
    # The stream came mostly in TSO frames, and every one of them was zero-copied.
    assert big_frame_bytes(q, "rx") >= BYTES // 2, q
    assert q["zero_copied"] >= big, q
    assert fb["scattered"] == 0, q


# TSO cells (issue 56): checksum offload and TCP segmentation both ways. At least 16 MiB
# each way (VHOSTLAB_QEMU_TSO_MIB raises it).
TSO_BYTES = max(16, int(os.environ.get("VHOSTLAB_QEMU_TSO_MIB", "16"))) * MIB
# What a Linux 6.1 guest behind QEMU 7.2 negotiates when serve offers them ...
TSO_BITS = {"csum": 0, "guest_csum": 1, "guest_tso4": 7, "guest_tso6": 8, "guest_ecn": 9,
            "host_tso4": 11, "host_tso6": 12, "host_ecn": 13}
# ... and what it does not, although serve offers them: QEMU 7.2 has no USO properties
# (`-device virtio-net-pci,help`) and Linux 6.1's virtio_net lists none of these bits.
USO_BITS = {"guest_uso4": 54, "guest_uso6": 55, "host_uso": 56}
# The largest frame that needs no segmentation offload: MTU 1500 plus the Ethernet header
# and a VLAN tag (serve's size bins end a class there).
MAX_PLAIN = 1518

TSO_CELLS = [
    {"ring": "split", "mrg": True, "offloads": True},
    {"ring": "packed", "mrg": True, "offloads": True},
    {"ring": "packed", "mrg": False, "offloads": True},
    {"ring": "split", "mrg": True, "offloads": False},
]
TSO_IDS = [f"tso-{'on' if c['offloads'] else 'off'}-{c['ring']}-mrg-{'on' if c['mrg'] else 'off'}"
           for c in TSO_CELLS]


def guest_bits(g: dict) -> set[str]:
    """The offload features the guest's driver negotiated, by name (its sysfs feature
    string: character i is bit i)."""
    f = g.get("features", "")
    return {n for n, b in {**TSO_BITS, **USO_BITS}.items() if b < len(f) and f[b] == "1"}


def big_frame_bytes(q: dict, way: str) -> int:
    """A lower bound on the bytes serve moved in frames longer than MAX_PLAIN one way ("rx":
    from the guest, "tx": to it): all the bytes, less the most that its shorter frames can
    have carried."""
    bins = q[f"{way}_size_bins"]
    small = sum(v for k, v in bins.items() if k != "gt1518")
    return q[f"{way}_bytes"] - MAX_PLAIN * small


@pytest.mark.parametrize("cell", TSO_CELLS, ids=TSO_IDS)
def test_qemu_linux_guest_tso(vhostlab_fast, qemu, guest, netns_ok, cell, capsys):
    """A TCP stream each way with checksum offload and TSO negotiated (or, in the off cell,
    not offered: the guest segments and checksums itself). On: the guest and serve agree
    that CSUM, GUEST_CSUM, HOST/GUEST_TSO4/6 and ECN were negotiated, the TAP device was
    told to hand the guest partial checksums and TSO frames, and at least half the stream
    went each way in frames longer than the MTU allows -- which only segmentation offload
    makes. Off: none of it negotiated, no frame longer than 1518 bytes either way. The
    digests are checked as in every cell."""
    cell_id = TSO_IDS[TSO_CELLS.index(cell)]
    extra = () if cell["offloads"] else ("--offloads", "off")
    out: dict = {}
    q = run_checked_cell(vhostlab_fast, qemu, guest, cell, capsys, extra, TSO_BYTES, cell_id,
                         out)
    g, serve, events = out["guest"], out["serve"], out["events"]
    bins_rx, bins_tx = q["rx_size_bins"], q["tx_size_bins"]
    got = guest_bits(g)
    feats = int(serve["ports"][0]["features"], 16)
    served = {n for n, b in {**TSO_BITS, **USO_BITS}.items() if feats >> b & 1}
    tap = [e["message"] for e in events if e.get("event") == "tap"]
    big_rx, big_tx = big_frame_bytes(q, "rx"), big_frame_bytes(q, "tx")
    with capsys.disabled():
        print(f"\n    {cell_id}: guest offloads {' '.join(sorted(got)) or 'none'}; frames "
              f"over {MAX_PLAIN} B: from the guest {bins_rx['gt1518']} of {q['rx_packets']} "
              f"(>= {max(big_rx, 0)} B of {q['rx_bytes']}), to it {bins_tx['gt1518']} of "
              f"{q['tx_packets']} (>= {max(big_tx, 0)} B of {q['tx_bytes']}); guest eth0 "
              f"{g['eth_tx_packets']} pkts {g['eth_tx_bytes']} B out, {g['eth_rx_packets']} "
              f"pkts {g['eth_rx_bytes']} B in", end="")
    ctx = f"\nguest {g}\nserve queue {q}\ntap events {tap}"
    assert served == got, f"serve negotiated {served}, the guest {got}{ctx}"
    assert not got & set(USO_BITS), f"USO negotiated under QEMU 7.2 / Linux 6.1?{ctx}"
    if cell["offloads"]:
        assert got == set(TSO_BITS), f"the guest did not take every TSO feature{ctx}"
        assert any(m.endswith("offloads: csum tso4 tso6 tso_ecn (TUNSETOFFLOAD 0xf)")
                   for m in tap), f"the TAP device was not told the guest's offloads{ctx}"
        assert big_rx >= TSO_BYTES // 2, (
            f"less than half the guest's stream came in frames over {MAX_PLAIN} B{ctx}")
        assert big_tx >= TSO_BYTES // 2, (
            f"less than half the host's stream went in frames over {MAX_PLAIN} B{ctx}")
    else:
        assert not got, f"offloads negotiated although serve offered none{ctx}"
        assert serve["offloads"] == "off", serve
        assert bins_rx["gt1518"] == 0 and bins_tx["gt1518"] == 0, (
            f"frames over {MAX_PLAIN} B without segmentation offload{ctx}")
        assert not [m for m in tap if "offloads: none" not in m], ctx


def test_qemu_tso_tap_offloads_follow_the_guest(vhostlab_fast, qemu, guest, netns_ok, capsys):
    """TUNSETOFFLOAD follows whoever is connected: a guest taking TSO, then (after it left,
    which sets none) a guest on the same serve and TAP device that takes checksum offload but
    no TSO. The second receives 16 MiB: had the TAP kept the first guest's setting, the
    kernel would hand over TSO frames and serve would have to cut them (offload_fallbacks);
    it hands over MTU-sized frames with partial checksums instead, which the guest takes."""
    with tempfile.TemporaryDirectory(prefix="vhl-qemu-") as d:
        c = Cell(vhostlab_fast, Path(d), {"ring": "split", "mrg": True})
        c.nbytes = TSO_BYTES
        try:
            c.make_namespace()
            c.start_serve()
            c.send = c.receive = False  # the first guest only pings
            c.run_qemu(qemu, guest)
            first = guest_result(c.logs["guest console"])
            c.cell = {"ring": "split", "mrg": True,
                      "dev_extra": ",guest_tso4=off,guest_tso6=off,guest_ecn=off"}
            c.receive = True
            c.start_peer()
            c.run_qemu(qemu, guest)
            peer = c.peer_results()
            serve = c.stop_serve()
            second = guest_result(c.logs["guest console"])
            events = json_lines(c.logs["serve stderr"])
            logs = dump(c.logs)
        finally:
            c.close()
    tap = [e["message"].split("offloads: ")[1] for e in events
           if e.get("event") == "tap" and "offloads: " in e["message"]]
    q = serve["ports"][0]["queues"][0]
    source = peer.get("source", {})
    with capsys.disabled():
        print(f"\n  qemu tap offloads across guests: TUNSETOFFLOAD {tap}; second guest "
              f"offloads {' '.join(sorted(guest_bits(second or {}))) or 'none'}, received "
              f"{(second or {}).get('rx_bytes')} B in {q['tx_packets']} frames "
              f"({q['tx_size_bins']['gt1518']} over {MAX_PLAIN} B), fallbacks "
              f"{q['offload_fallbacks']}", end="")
    ctx = f"\nfirst {first}\nsecond {second}\nserve {q}{logs}"
    assert first and first["status"] == "ok" and first["ping_received"] == "3", ctx
    assert guest_bits(first) == set(TSO_BITS), ctx
    assert second and second["status"] == "ok" and second["rx_rc"] == "0", ctx
    assert guest_bits(second) == set(TSO_BITS) - {"guest_tso4", "guest_tso6", "guest_ecn"}, ctx
    assert int(second["rx_bytes"]) == TSO_BYTES and second["rx_md5"] == source.get("md5"), ctx
    # Set for the first guest, cleared when it left, set anew for the second, cleared.
    assert tap == ["csum tso4 tso6 tso_ecn (TUNSETOFFLOAD 0xf)", "none (TUNSETOFFLOAD 0x0)",
                   "csum (TUNSETOFFLOAD 0x1)", "none (TUNSETOFFLOAD 0x0)"], tap
    assert q["tx_size_bins"]["gt1518"] == 0, ctx
    assert q["offload_fallbacks"]["segmented"] == 0, ctx
    assert serve["exit"] == 0 and serve["leaked_packets"] == 0, ctx


def run_checked_cell(prog, qemu, guest, cell: dict, capsys, serve_extra=(), nbytes=BYTES,
                     cell_id: str | None = None, out: dict | None = None,
                     setup=None) -> dict:
    """Run one cell (namespace, serve in TAP mode, host peer, QEMU with the Linux guest),
    moving nbytes each way, check everything it printed, and return serve's queue 0. With
    out, it also gets the guest's result ("guest"), serve's document ("serve") and its
    event lines ("events"). setup(cell) may set the Cell's lifecycle fields (qemu_extra,
    append_extra, during) before anything starts."""
    with tempfile.TemporaryDirectory(prefix="vhl-qemu-") as d:
        c = Cell(prog, Path(d), cell)
        c.serve_extra = list(serve_extra)
        c.nbytes = nbytes
        if setup is not None:
            setup(c)
        try:
            c.make_namespace()
            c.start_serve()
            c.start_peer()
            qemu_secs = c.run_qemu(qemu, guest)
            peer = c.peer_results()
            serve = c.stop_serve()
            g = guest_result(c.logs["guest console"])
            logs = dump(c.logs)
            events = json_lines(c.logs["serve stderr"])
            qemu_rc = c.qemu.returncode
        finally:
            c.close()
        if out is not None:
            out.update(guest=g, serve=serve, events=events)

        q = serve["ports"][0]["queues"][0] if serve.get("ports") else {}
        drops = q.get("drops_by_reason", {})
        sink, source = peer.get("sink", {}), peer.get("source", {})
        line = summary(cell_id or CELL_IDS[CELLS.index(cell)], g, sink, source, qemu_secs, q)
        with capsys.disabled():
            print(f"\n  qemu interop {line}", end="")

        ctx = f"\n{line}\nqemu: {' '.join(c.qemu_argv)}\nserve: {' '.join(c.serve_argv)}{logs}"
        assert qemu_rc == 0, f"QEMU exited {qemu_rc} (124/137: timed out){ctx}"
        assert g is not None, f"the guest printed no VHL-RESULT line{ctx}"
        assert g.get("status") == "ok", f"guest: {g}{ctx}"
        assert int(g["ping_sent"]) == PINGS and int(g["ping_received"]) == PINGS, (
            f"pings: {g['ping_received']}/{g['ping_sent']} answered{ctx}")
        assert g["tx_rc"] == "0" and g["rx_rc"] == "0", (
            f"a transfer failed in the guest (exit status: out {g['tx_rc']}, in "
            f"{g['rx_rc']}; 124 = timed out){ctx}")
        # guest -> host
        assert sink.get("bytes") == nbytes == int(g["tx_bytes"]), (
            f"guest sent {g['tx_bytes']}, host received {sink.get('bytes')}{ctx}")
        assert sink["md5"] == g["tx_md5"], "guest->host data differ (md5)" + ctx
        # host -> guest
        assert source.get("bytes") == nbytes and source.get("error") is None, (
            f"host source: {source}{ctx}")
        assert g["rx_partial"] == "0" and int(g["rx_bytes"]) == nbytes, (
            f"guest received {g['rx_bytes']} bytes (+{g['rx_partial']} partial record), "
            f"host sent {nbytes}{ctx}")
        assert source["md5"] == g["rx_md5"], "host->guest data differ (md5)" + ctx
        vhost_errors = [ln for ln in tail(c.logs["qemu stderr"], 10**6).splitlines()
                        if "vhost" in ln.lower()]
        assert not vhost_errors, f"QEMU complained about vhost-user: {vhost_errors}{ctx}"
        # serve
        feats = int(serve["ports"][0]["features"], 16)
        assert bool(feats & F_PACKED) == (cell["ring"] == "packed"), f"{hex(feats)}{ctx}"
        assert bool(feats & F_MRG_RXBUF) == cell["mrg"], f"{hex(feats)}{ctx}"
        assert serve["ports"][0]["rejected"] == 0, f"serve rejected messages{ctx}"
        for reason in ("malformed", "too_big", "no_memory"):
            assert drops.get(reason) == 0, f"serve dropped {reason} packets: {drops}{ctx}"
        assert serve["leaked_packets"] == 0 and serve["exit"] == 0, (
            f"serve: exit {serve['exit']}, leaked {serve['leaked_packets']}{ctx}")
        return q

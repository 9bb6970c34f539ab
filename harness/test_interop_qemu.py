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
             str(BYTES), "--timeout", str(int(QEMU_TIMEOUT))],
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
        append = (f"console=ttyS0 quiet panic=-1 vhl_ip={GUEST_IP} vhl_peer={HOST_IP} "
                  f"vhl_tx={BYTES} vhl_rx={1 if BYTES else 0} vhl_pings={PINGS} "
                  f"vhl_timeout={GUEST_TRANSFER_TIMEOUT}")
        self.qemu_argv = [
            qemu, "-accel", "tcg", "-m", "128",
            "-object", "memory-backend-memfd,id=mem,size=128M,share=on",
            "-numa", "node,memdev=mem",
            "-chardev", f"socket,id=c0,path={self.sock}",
            "-netdev", "type=vhost-user,id=n0,chardev=c0",
            "-device", dev,
            "-kernel", str(g / "vmlinux"), "-initrd", str(g / "initramfs.cpio"),
            "-append", append,
            "-display", "none", "-no-reboot", "-nodefaults", "-serial", "stdio",
        ]
        t0 = time.monotonic()
        self.qemu = subprocess.Popen(
            ["timeout", "-s", "KILL", str(int(QEMU_TIMEOUT)), *self.qemu_argv],
            stdin=subprocess.DEVNULL, stdout=self._open("guest console"),
            stderr=self._open("qemu stderr"))
        self.qemu.wait()
        return time.monotonic() - t0

    def stop_serve(self) -> dict:
        pid = child_pid(self.serve)
        if pid is not None and self.serve.poll() is None:
            os.kill(pid, signal.SIGINT)
        try:
            out, _ = self.serve.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            kill_group(self.serve)
            pytest.fail("serve did not stop on SIGINT" + dump(self.logs), pytrace=False)
        try:
            return {"exit": self.serve.returncode, **json.loads(out)}
        except json.JSONDecodeError:
            pytest.fail(f"serve's final statistics are not JSON (exit "
                        f"{self.serve.returncode}):\n{out[-3000:]}" + dump(self.logs),
                        pytrace=False)

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
    """serve --zero-copy under a Linux guest's TCP stream (mergeable buffers): the same
    checks as every cell, and the guest's MTU-sized frames -- the linear part with the
    headers and a page fragment with the data, two pieces -- are dequeued without copying.
    Before multi-segment zero-copy this traffic reported zero_copied 0 (docs/interop.md)."""
    q = run_checked_cell(vhostlab_fast, qemu, guest, cell, capsys, ("--zero-copy",))
    fb = q["zc_fallbacks"]
    print(f"\n  zero-copy: {q['zero_copied']} of {q['rx_packets']} received without copying, "
          f"fallbacks {fb}", end="")
    assert q["zero_copied"] + sum(fb.values()) == q["rx_packets"], q
    # At MTU 1500 a frame carries at most 1460 bytes of TCP payload: BYTES take at least
    # that many full-sized frames, and each of them is zero-copied.
    assert q["zero_copied"] >= BYTES // 1460, q
    assert fb["scattered"] == 0, q


def run_checked_cell(prog, qemu, guest, cell: dict, capsys, serve_extra=()) -> dict:
    """Run one cell (namespace, serve in TAP mode, host peer, QEMU with the Linux guest),
    check everything it printed, and return serve's queue 0."""
    with tempfile.TemporaryDirectory(prefix="vhl-qemu-") as d:
        c = Cell(prog, Path(d), cell)
        c.serve_extra = list(serve_extra)
        try:
            c.make_namespace()
            c.start_serve()
            c.start_peer()
            qemu_secs = c.run_qemu(qemu, guest)
            peer = c.peer_results()
            serve = c.stop_serve()
            g = guest_result(c.logs["guest console"])
            logs = dump(c.logs)
            qemu_rc = c.qemu.returncode
        finally:
            c.close()

        q = serve["ports"][0]["queues"][0] if serve.get("ports") else {}
        drops = q.get("drops_by_reason", {})
        sink, source = peer.get("sink", {}), peer.get("source", {})
        line = summary(CELL_IDS[CELLS.index(cell)], g, sink, source, qemu_secs, q)
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
        assert sink.get("bytes") == BYTES == int(g["tx_bytes"]), (
            f"guest sent {g['tx_bytes']}, host received {sink.get('bytes')}{ctx}")
        assert sink["md5"] == g["tx_md5"], "guest->host data differ (md5)" + ctx
        # host -> guest
        assert source.get("bytes") == BYTES and source.get("error") is None, (
            f"host source: {source}{ctx}")
        assert g["rx_partial"] == "0" and int(g["rx_bytes"]) == BYTES, (
            f"guest received {g['rx_bytes']} bytes (+{g['rx_partial']} partial record), "
            f"host sent {BYTES}{ctx}")
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

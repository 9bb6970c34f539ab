"""`vhostlab serve` without a front end (docs/serve.md): help, usage errors that name the bad
value, the socket file's life, signals and --duration, client mode with nobody listening,
and a connection that sends garbage. What serves runs `vhostlab-fast serve` (the production
program, fixture vhostlab_fast); `vhostlab serve`, on the lab build of the core, is checked
for saying so in test_cli.py. The DPDK interop tests are in test_interop_dpdk.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

SERVE_OPTIONS = [
    "--threads",
    "--socket", "--client", "--mode", "--queues", "--size", "--burst", "--zero-copy",
    "--batch-threshold", "--poll", "--stats-interval", "--duration", "--json", "--quiet",
    "--features", "--no-mrg-rxbuf", "--no-packed", "--no-in-order", "--no-indirect",
    "--no-event-idx", "--no-csum", "loopback", "rxonly", "txonly", "tap:IFNAME",
    "pair:SOCKET2", "EXIT STATUS", "--idle-pause", "--evict", "--prefetch", "--offloads",
    "HOST_TSO4", "HOST_TSO6", "HOST_ECN", "GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN", "HOST_USO",
    "GUEST_USO4", "GUEST_USO6", "GUEST_CSUM",
]


@pytest.fixture()
def tmp():
    # Unix socket paths must stay short: not under pytest's deep tmp_path.
    with tempfile.TemporaryDirectory(prefix="vhl-serve-") as d:
        yield Path(d)


def test_serve_help_mentions_every_option(vhostlab, vhostlab_fast):
    for prog in (vhostlab, vhostlab_fast):
        res = prog("serve", "--help")
        assert res.returncode == 0, res.describe()
        missing = [opt for opt in SERVE_OPTIONS if opt not in res.stdout]
        assert not missing, f"serve --help does not mention {missing}\n{res.describe()}"
        assert prog("help", "serve").stdout == res.stdout
        assert "serve" in prog("--help").stdout


@pytest.mark.parametrize(
    "args, bad",
    [
        ([], "--socket"),
        (["--socket", "S", "--mode", "bounce"], "bounce"),
        (["--socket", "S", "--queues", "0"], "0"),
        (["--socket", "S", "--queues", "129"], "129"),
        (["--socket", "S", "--size", "59"], "59"),
        (["--socket", "S", "--size", "65536"], "65536"),
        (["--socket", "S", "--burst", "0"], "0"),
        (["--socket", "S", "--burst", "257"], "257"),
        (["--socket", "S", "--duration", "soon"], "soon"),
        (["--socket", "S", "--stats-interval", "-1"], "-1"),
        (["--socket", "S", "--batch-threshold", "x"], "x"),
        (["--socket", "S", "--idle-pause", "1000001"], "1000001"),
        (["--socket", "S", "--idle-pause", "-5"], "-5"),
        (["--socket", "S", "--evict", "sometimes"], "sometimes"),
        (["--socket", "S", "--prefetch", "always"], "--prefetch 'always'"),
        (["--socket", "S", "--features", "zz"], "zz"),
        (["--socket", "S", "--features", "4"], "0x4"),  # bit 2: not implemented
        (["--socket", "S", "--offloads", "maybe"], "--offloads 'maybe'"),
        # an offload without what it requires names both (virtio 1.2, 5.1.3.1)
        (["--socket", "S", "--features", "800"], "host_tso4 (bit 11) needs csum"),
        (["--socket", "S", "--features", "2001"], "host_ecn (bit 13) needs host_tso4 or"),
        (["--socket", "S", "--features", "81"], "guest_tso4 (bit 7) needs guest_csum"),
        (["--socket", "S", "--features", "4000"], "0x4000"),  # HOST_UFO: not offered
        (["--socket", "S", "--mode", "pair:S"], "pair:S"),
        (["--socket", "S", "--mode", "pair:"], "pair:"),
        (["--socket", "S", "--mode", "tap:" + "x" * 16], "x" * 16),
        (["--socket", "S", "--mode", "tap:"], "tap:"),
        (["--socket", "S", "--queues", "2", "--features", "8000"], "--queues 2"),
        (["--socket", "S", "--threads", "0"], "0"),
        (["--socket", "S", "--threads", "2"], "--threads 2 is more than --queues 1"),
        (["--socket", "S", "--queues", "2", "--threads", "2", "--mode", "tap:vhl0"],
         "--threads 2 with --mode tap"),
        (["--socket", "S", "--threads", "1", "--record", "r.trace"],
         "--threads 1 with --record"),
        (["--socket", "S", "--frobnicate"], "--frobnicate"),
        (["--socket", "S", "extra"], "extra"),
        (["--socket"], "--socket"),
    ],
)
def test_serve_usage_errors_name_the_value(vhostlab, args, bad):
    res = vhostlab("serve", *args)
    assert res.returncode == 2, res.describe()
    assert bad in res.stderr, f"stderr does not name {bad!r}\n{res.describe()}"
    assert res.stdout == "", res.describe()


def events(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_duration_without_front_end(vhostlab_fast, tmp):
    sock = tmp / "s.sock"
    res = vhostlab_fast("serve", "--socket", str(sock), "--json", "--duration", "0.3",
                        "--stats-interval", "0.1")
    assert res.returncode == 0, res.describe()
    doc = res.json()
    assert doc["stopped_by"] == "duration" and doc["ok"] is True, doc
    assert doc["leaked_packets"] == 0
    assert 0.3 <= doc["seconds"] < 2, doc
    port = doc["ports"][0]
    assert port["socket"] == str(sock) and port["connections"] == 0
    assert port["queues"][0]["rx_packets"] == 0 and doc["totals"]["drops"] == 0
    kinds = [e["event"] for e in events(res.stderr)]
    assert kinds[0] == "listening" and kinds.count("stats") >= 2, res.stderr
    assert not sock.exists(), "serve must remove the socket file it created"
    # Nothing to move the whole time: every round idle, bar setup and the last round.
    assert 0.8 * doc["seconds"] <= doc["idle_seconds"] <= doc["seconds"], doc
    for e in events(res.stderr):
        if e["event"] == "stats":
            assert e["idle_share"] >= 0.8, e


def start(prog, *args):
    return subprocess.Popen(
        ["timeout", "-s", "KILL", "60", str(prog.path), "serve", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_path(path: Path, proc):
    deadline = time.monotonic() + 10
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no socket at {path}"
        time.sleep(0.02)


def serve_pid(proc) -> int:
    kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return int(kids[0])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly(vhostlab_fast, tmp, sig):
    sock = tmp / "s.sock"
    proc = start(vhostlab_fast, "--socket", str(sock), "--mode", "txonly")
    wait_path(sock, proc)
    os.kill(serve_pid(proc), sig)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, (out, err)
    assert "stopped by signal" in out, out
    assert not sock.exists()


def test_a_file_that_is_not_a_socket_is_left_alone(vhostlab_fast, tmp):
    path = tmp / "precious"
    path.write_text("keep me")
    res = vhostlab_fast("serve", "--socket", str(path), "--duration", "0.1")
    assert res.returncode == 1, res.describe()
    assert str(path) in res.stderr, res.describe()
    assert path.read_text() == "keep me"


def test_stale_socket_is_replaced(vhostlab_fast, tmp):
    sock = tmp / "s.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()  # the file stays, nobody listens
    res = vhostlab_fast("serve", "--socket", str(sock), "--duration", "0.1")
    assert res.returncode == 0, res.describe()


def test_client_mode_waits_for_a_server(vhostlab_fast, tmp):
    res = vhostlab_fast("serve", "--socket", str(tmp / "nobody.sock"), "--client", "--json",
                        "--duration", "0.5")
    assert res.returncode == 0, res.describe()
    doc = res.json()
    assert doc["client"] is True and doc["ports"][0]["connections"] == 0, doc
    waiting = [e for e in events(res.stderr) if e["event"] == "waiting"]
    assert len(waiting) == 1, f"one 'waiting' line, not one per retry\n{res.stderr}"


def test_garbage_front_end_is_survived(vhostlab_fast, tmp):
    """A peer that sends a malformed message, one that vanishes mid-message, and a second
    peer while one is connected: serve stays up and serves the next."""
    sock = tmp / "s.sock"
    proc = start(vhostlab_fast, "--socket", str(sock), "--json")
    try:
        wait_path(sock, proc)
        # Request 9999 (unknown), flags version 1, no payload: rejected, connection kept.
        a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        a.connect(str(sock))
        a.sendall(struct.pack("<III", 9999, 1, 0))
        b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        b.connect(str(sock))  # a second front end: closed by serve
        b.settimeout(5)
        assert b.recv(16) == b"", "serve must close a second connection at once"
        b.close()
        # Half a header, then gone.
        a.sendall(b"\x01\x00")
        a.close()
        time.sleep(0.3)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(str(sock))
        c.close()
        time.sleep(0.3)
        os.kill(serve_pid(proc), signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (out, err)
    kinds = [e["event"] for e in events(err)]
    assert "rejected" in kinds and "refused" in kinds, err
    assert kinds.count("disconnected") == 2, err
    assert json.loads(out)["ports"][0]["connections"] == 2, out


# The offload feature bits (vl_virtio.h): CSUM, GUEST_CSUM, GUEST_TSO4/6, GUEST_ECN, GUEST_UFO,
# HOST_TSO4/6, HOST_ECN, HOST_UFO, GUEST_USO4/6, HOST_USO.
F_CSUM, F_GUEST_CSUM = 1 << 0, 1 << 1
F_GUEST_TSO4, F_GUEST_TSO6, F_GUEST_ECN, F_GUEST_UFO = 1 << 7, 1 << 8, 1 << 9, 1 << 10
F_HOST_TSO4, F_HOST_TSO6, F_HOST_ECN, F_HOST_UFO = 1 << 11, 1 << 12, 1 << 13, 1 << 14
F_GUEST_USO4, F_GUEST_USO6, F_HOST_USO = 1 << 54, 1 << 55, 1 << 56
OFFLOADS = (F_CSUM | F_GUEST_CSUM | F_GUEST_TSO4 | F_GUEST_TSO6 | F_GUEST_ECN | F_HOST_TSO4
            | F_HOST_TSO6 | F_HOST_ECN | F_GUEST_USO4 | F_GUEST_USO6 | F_HOST_USO)


def offered_features(prog, tmp: Path, *args) -> int:
    """What serve answers to GET_FEATURES (vhost-user request 1, version flag 1)."""
    sock = tmp / "f.sock"
    proc = start(prog, "--socket", str(sock), "--quiet", *args)
    try:
        wait_path(sock, proc)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(5)
        c.connect(str(sock))
        c.sendall(struct.pack("<III", 1, 1, 0))
        reply = b""
        while len(reply) < 20:
            chunk = c.recv(20 - len(reply))
            assert chunk, f"serve closed the connection after {reply!r}"
            reply += chunk
        c.close()
        request, flags, size = struct.unpack("<III", reply[:12])
        assert (request, size) == (1, 8) and flags & 4, reply  # a reply, 8 bytes
        return struct.unpack("<Q", reply[12:])[0]
    finally:
        os.kill(serve_pid(proc), signal.SIGINT)
        proc.communicate(timeout=10)


@pytest.mark.parametrize("args, offered", [
    ([], OFFLOADS),
    (["--offloads", "on"], OFFLOADS),
    (["--offloads", "off"], 0),
    # TSO and USO need the checksum offload of their direction: gone with it
    (["--no-csum"], 0),
    (["--features", hex(F_CSUM | F_HOST_TSO4 | F_HOST_ECN | F_GUEST_CSUM | F_GUEST_TSO6)[2:]],
     F_CSUM | F_HOST_TSO4 | F_HOST_ECN | F_GUEST_CSUM | F_GUEST_TSO6),
    (["--features", hex(F_CSUM | F_HOST_TSO4 | F_HOST_ECN)[2:], "--no-csum"], 0),
    (["--features", hex(F_CSUM | F_HOST_TSO4 | F_GUEST_CSUM)[2:], "--offloads", "off"], 0),
], ids=["default", "on", "off", "no-csum", "features", "features-no-csum", "features-off"])
def test_offload_features_offered(vhostlab_fast, tmp, args, offered):
    """--offloads on offers checksum offload, TSO (with ECN) and USO both ways and never UFO;
    off, or no checksum offload, offers none of them."""
    f = offered_features(vhostlab_fast, tmp, *args)
    assert f & (OFFLOADS | F_GUEST_UFO | F_HOST_UFO) == offered, (hex(f), hex(offered))


def test_successor_of_a_front_end_that_hung_up_is_served(vhostlab_fast, tmp):
    """A front end hangs up and another connects before serve looks (the probe's fresh
    connection after a case; a front end that reconnects at once). Both events reach serve
    in the same poll round: serve finishes the old connection first and serves the new
    one, instead of refusing it as a second front end. serve is stopped (SIGSTOP) while the
    two happen, so they are always in one round."""
    sock = tmp / "s.sock"
    # Not under timeout(1), which would continue its stopped child: --duration bounds it.
    proc = subprocess.Popen(
        [str(vhostlab_fast.path), "serve", "--socket", str(sock), "--json", "--duration", "30"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_path(sock, proc)
        a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        a.connect(str(sock))
        a.sendall(struct.pack("<III", 1, 1, 0))  # GET_FEATURES
        a.settimeout(5)
        assert len(a.recv(20)) == 20, "no GET_FEATURES reply on the first connection"
        pid = proc.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            a.sendall(struct.pack("<III", 1, 1, 0))  # read by serve after it hung up
            a.close()
            b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            b.connect(str(sock))  # into the backlog
            b.sendall(struct.pack("<III", 1, 1, 0))
        finally:
            os.kill(pid, signal.SIGCONT)
        b.settimeout(5)
        reply = b.recv(20)
        assert len(reply) == 20, f"the successor was not served: {reply!r}"
        request, flags, size = struct.unpack("<III", reply[:12])
        assert (request, size) == (1, 8) and flags & 4, reply  # a GET_FEATURES reply
        b.close()
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (out, err)
    kinds = [e["event"] for e in events(err)]
    assert "refused" not in kinds, err
    assert json.loads(out)["ports"][0]["connections"] == 2, out

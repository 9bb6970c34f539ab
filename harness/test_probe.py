"""`vhostlab probe`: the lab's guest as a vhost-user front end against a back end's socket.

Against `vhostlab serve --mode loopback` (which echoes every frame) every case must pass on
split and packed rings, as a client and with --server; against small misbehaving back ends
written here (a reply of the wrong size, a back end that never touches its rings, one that
hangs up) the probe must give verdicts with evidence, promptly, instead of hanging or
crashing.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

VERDICTS = {"pass", "fail", "wedge", "crash", "n/a"}
VERSION_1 = 1 << 32


@pytest.fixture()
def tmp():
    # Unix socket paths must stay short: not under pytest's deep tmp_path.
    with tempfile.TemporaryDirectory(prefix="vhl-probe-") as d:
        yield Path(d)


def start_serve(vhostlab, *args):
    return subprocess.Popen(
        ["timeout", "-s", "KILL", "60", str(vhostlab.path), "serve", "--mode", "loopback",
         "--quiet", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def stop(proc):
    proc.terminate()
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def wait_path(path: Path, proc):
    deadline = time.monotonic() + 10
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no socket at {path}"
        time.sleep(0.02)


def probe_doc(vhostlab, *args, timeout=60.0):
    res = vhostlab("probe", "--json", *args, timeout=timeout)
    assert res.returncode in (0, 1), res.describe()
    doc = res.json()
    assert isinstance(doc.get("ok"), bool), res.describe()
    assert res.returncode == (0 if doc["ok"] else 1), res.describe()
    assert isinstance(doc["backend"], dict) and doc["features"].startswith("0x"), res.describe()
    for c in doc["cases"]:
        assert set(c) >= {"id", "suite", "ring", "rule", "verdict", "detail"}, c
        assert c["verdict"] in VERDICTS, c
        assert c["suite"] in ("conformance", "traffic", "hostile") and c["rule"], c
    keys = [(c["id"], c["ring"]) for c in doc["cases"]]
    assert len(keys) == len(set(keys)), keys
    return res, doc


@pytest.mark.parametrize("ring", ["split", "packed"])
def test_every_case_passes_against_serve_loopback(vhostlab, tmp, ring):
    sock = tmp / "s.sock"
    proc = start_serve(vhostlab, "--socket", str(sock))
    try:
        wait_path(sock, proc)
        res, doc = probe_doc(vhostlab, "--socket", str(sock), "--ring", ring)
    finally:
        stop(proc)
    # serve offers every feature the probe drives: nothing is n/a but the two cases for a
    # back end that sends frames of its own (loopback echoes), and every suite ran: 20
    # cases once, 67 (split) or 66 (packed) on the ring.
    na = [c["id"] for c in doc["cases"] if c["verdict"] == "n/a"]
    assert sorted(na) == ["source-frames", "source-no-mrg"], res.describe()
    bad = [c for c in doc["cases"] if c["verdict"] not in ("pass", "n/a")]
    assert not bad, res.describe()
    assert doc["ok"] and res.returncode == 0
    assert len(doc["cases"]) >= 86, res.describe()
    # The offload cases ran: 64 KiB GSO frames back whole or as the model's segments.
    offload = {c["id"]: c["detail"] for c in doc["cases"] if c["id"].startswith("offload-")}
    assert len(offload) == 8, res.describe()
    assert "back as 45 frame(s)" in offload["offload-tso4"], res.describe()
    assert "65054-byte TCPv4 GSO frame back whole" in offload["offload-tso4-guest"]
    assert {c["suite"] for c in doc["cases"]} == {"conformance", "traffic", "hostile"}
    hostile = [c for c in doc["cases"] if c["suite"] == "hostile"]
    assert len(hostile) >= 40, res.describe()
    # The hostile verdicts rest on the back end's survival: each says a fresh connection
    # was served; the datapath ones that nothing was written outside the given buffers.
    assert all("a fresh connection served" in c["detail"] for c in hostile), res.describe()
    assert all("nothing written outside the buffers" in c["detail"] for c in hostile
               if c["id"].startswith("ring-")), res.describe()
    assert {c["ring"] for c in doc["cases"]} == {"-", ring}
    offered = int(doc["backend"]["features_offered"], 16)
    assert offered & VERSION_1


def test_features_narrow_what_is_negotiated(vhostlab, tmp):
    sock = tmp / "s.sock"
    proc = start_serve(vhostlab, "--socket", str(sock))
    try:
        wait_path(sock, proc)
        # VERSION_1 and PROTOCOL_FEATURES only: mergeable, in-order, event idx, indirect
        # and packed cases become n/a, naming the feature; the rest still pass.
        res, doc = probe_doc(vhostlab, "--socket", str(sock), "--features", "140000000")
    finally:
        stop(proc)
    assert res.returncode == 0, res.describe()
    na = {(c["id"], c["ring"]): c["detail"] for c in doc["cases"] if c["verdict"] == "n/a"}
    assert "MRG_RXBUF (bit 15) left out by --features" == na[("mergeable", "split")]
    assert "RING_PACKED" in na[("echo", "packed")]
    assert ("echo", "split") not in na


def test_server_mode_with_serve_as_client(vhostlab, tmp):
    sock = tmp / "p.sock"
    probe = subprocess.Popen(
        [str(vhostlab.path), "probe", "--json", "--server", "--socket", str(sock), "--suite",
         "traffic", "--ring", "split"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    serve = start_serve(vhostlab, "--client", "--socket", str(sock))
    try:
        out, err = probe.communicate(timeout=60)
    finally:
        stop(serve)
    assert probe.returncode == 0, out + err
    doc = json.loads(out)
    assert doc["backend"]["mode"] == "client"
    got = [(c["id"], c["verdict"]) for c in doc["cases"]]
    assert got[:3] == [("indirect", "pass"), ("echo", "pass"), ("echo-no-mrg", "pass")], got
    assert all(v == "pass" for i, v in got if not i.startswith("source-")), got


# ---- misbehaving back ends ------------------------------------------------------------------

class FakeBackend:
    """A vhost-user back end in a thread: answers GET_FEATURES by `behaviour`, swallows every
    other message (and any fds), and never touches a ring."""

    def __init__(self, path: Path, behaviour: str):
        self.path, self.behaviour = path, behaviour
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(8)
        self.srv.settimeout(0.2)
        self.done = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.done:
            try:
                conn, _ = self.srv.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                self.talk(conn)

    def talk(self, conn):
        conn.settimeout(0.2)
        while not self.done:
            try:
                data, fds, _, _ = socket.recv_fds(conn, 12, 8)
            except socket.timeout:
                continue
            except OSError:
                return
            for fd in fds:
                socket.close(fd)
            if len(data) < 12:
                return
            req, _flags, size = struct.unpack("<III", data)
            while size:
                try:
                    chunk = conn.recv(size)
                except socket.timeout:
                    continue
                if not chunk:
                    return
                size -= len(chunk)
            if self.behaviour == "hangup":
                return
            if req == 1:  # GET_FEATURES
                if self.behaviour == "short":
                    conn.sendall(struct.pack("<IIII", 1, 5, 4, 0))
                else:
                    conn.sendall(struct.pack("<IIIQ", 1, 5, 8, VERSION_1))

    def close(self):
        self.done = True
        self.thread.join(timeout=5)
        self.srv.close()


def run_against(vhostlab, tmp, behaviour):
    sock = tmp / "fake.sock"
    fake = FakeBackend(sock, behaviour)
    try:
        t0 = time.monotonic()
        # The hostile suite against these: test_probe_mutants.py; here the evidence of
        # the verdicts, promptly.
        res, doc = probe_doc(vhostlab, "--socket", str(sock), "--ring", "split",
                             "--suite", "conformance,traffic", "--timeout-ms", "200",
                             timeout=30)
        took = time.monotonic() - t0
    finally:
        fake.close()
    assert not doc["ok"] and res.returncode == 1, res.describe()
    assert took < 20, f"the probe took {took:.1f} s against a {behaviour} back end"
    return res, {c["id"]: c for c in doc["cases"]}


def test_wrong_reply_size_is_a_fail_with_evidence(vhostlab, tmp):
    res, cases = run_against(vhostlab, tmp, "short")
    assert "size 4" in res.json()["backend"]["error"], res.describe()
    v1 = cases["version-1"]
    assert v1["verdict"] == "fail", v1
    assert "reply to GET_FEATURES" in v1["detail"] and "size 4" in v1["detail"], v1
    assert "expected request 1, version 1 with REPLY (0x5), size 8" in v1["detail"], v1


def test_back_end_that_never_uses_a_ring_is_a_wedge(vhostlab, tmp):
    res, cases = run_against(vhostlab, tmp, "silent")
    assert cases["version-1"]["verdict"] == "pass", res.describe()
    wedge = cases["tx-used-len"]
    assert wedge["verdict"] == "wedge", wedge
    # The evidence: the timeout, the last message, the ring's indices, what is in flight.
    for part in ("no used buffer within 200 ms", "last message SET_VRING_CALL",
                 "split ring 1 (size 64)", "1 chains in flight"):
        assert part in wedge["detail"], wedge
    # Without PROTOCOL_FEATURES, REPLY_ACK cases cannot run: n/a naming the bit.
    assert cases["reply-ack"]["verdict"] == "n/a", cases["reply-ack"]
    assert "PROTOCOL_FEATURES (bit 30) not offered" in cases["reply-ack"]["detail"]


def test_back_end_that_hangs_up_is_a_crash(vhostlab, tmp):
    res, cases = run_against(vhostlab, tmp, "hangup")
    v1 = cases["version-1"]
    assert v1["verdict"] == "crash", res.describe()
    assert "closed the connection after GET_FEATURES" in v1["detail"], v1


@pytest.mark.parametrize(
    "args, bad",
    [
        ([], "--socket"),
        (["--socket", "S", "--ring", "ring"], "'ring'"),
        (["--socket", "S", "--suite", "fuzz"], "'fuzz'"),
        (["--socket", "S", "--case", "echo,nope"], "'nope'"),
        (["--socket", "S", "--expect", "mirror"], "'mirror'"),
        (["--socket", "S", "--features", "xyz"], "'xyz'"),
        (["--socket", "S", "--timeout-ms", "5"], "5"),
        (["--socket", "S", "extra"], "'extra'"),
    ],
)
def test_usage_errors_name_the_value(vhostlab, args, bad):
    res = vhostlab("probe", *args)
    assert res.returncode == 2, res.describe()
    assert bad in res.stderr, res.describe()


def test_help_lists_every_option(vhostlab):
    res = vhostlab("probe", "--help")
    assert res.returncode == 0
    for opt in ("--socket", "--server", "--features", "--ring", "--suite", "--case", "--expect",
                "--timeout-ms", "--json"):
        assert opt in res.stdout, opt

"""The guest announce after a live migration (issue 58 point 2), without QEMU.

QEMU 7.2, once a guest has migrated, sends SEND_RARP with the guest's MAC to a back end that
offers the RARP protocol feature (when the guest did not negotiate GUEST_ANNOUNCE). A small
front end here does what QEMU does at that point -- GET_FEATURES, the protocol features with
RARP, SET_OWNER, SEND_RARP -- and a raw AF_PACKET socket on serve's TAP device, in the
namespace made for the test, checks the far side sees the RARP frame: broadcast, ethertype
0x8035, sender the guest's MAC. In loopback mode serve has no far side to tell and says so;
a multicast MAC is refused with a non-zero REPLY_ACK status and serve keeps serving.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

GET_FEATURES, SET_OWNER, GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES = 1, 3, 15, 16
SEND_RARP = 19
VERSION, REPLY, NEED_REPLY = 0x1, 0x4, 0x8
PROTOCOL_F_RARP, PROTOCOL_F_REPLY_ACK = 1 << 2, 1 << 3
GUEST_MAC = bytes.fromhex("525400123456")

# Runs inside the namespace: the first RARP frame seen on the TAP, as hex, within 20 s.
CAPTURE = r"""
import socket, sys, select, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind((sys.argv[1], 0))
print("ready", flush=True)
end = time.monotonic() + 20
while time.monotonic() < end:
    if not select.select([s], [], [], 0.2)[0]:
        continue
    f = s.recv(65536)
    if len(f) >= 14 and f[12:14] == b"\x80\x35":
        print(f.hex(), flush=True)
        break
"""


class FrontEnd:
    """Just enough vhost-user to reach SEND_RARP."""

    def __init__(self, path: Path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(5)
        self.s.connect(str(path))

    def send(self, request: int, payload: bytes = b"", flags: int = VERSION):
        self.s.sendall(struct.pack("<III", request, flags, len(payload)) + payload)

    def reply_u64(self, request: int) -> int:
        hdr = self.recv_exact(12)
        req, flags, size = struct.unpack("<III", hdr)
        assert req == request and flags & REPLY and size == 8, (req, flags, size)
        return struct.unpack("<Q", self.recv_exact(8))[0]

    def recv_exact(self, n: int) -> bytes:
        b = b""
        while len(b) < n:
            chunk = self.s.recv(n - len(b))
            assert chunk, "serve closed the connection"
            b += chunk
        return b

    def get(self, request: int) -> int:
        self.send(request)
        return self.reply_u64(request)

    def set_acked(self, request: int, payload: bytes) -> int:
        self.send(request, payload, VERSION | NEED_REPLY)
        return self.reply_u64(request)

    def negotiate_rarp(self) -> None:
        self.get(GET_FEATURES)
        offered = self.get(GET_PROTOCOL_FEATURES)
        assert offered & PROTOCOL_F_RARP, f"RARP (bit 2) not offered: {offered:#x}"
        self.send(SET_PROTOCOL_FEATURES, struct.pack("<Q", PROTOCOL_F_RARP | PROTOCOL_F_REPLY_ACK))
        assert self.set_acked(SET_OWNER, b"") == 0

    def rarp(self, mac: bytes) -> int:
        """SEND_RARP as QEMU builds it: the MAC in the u64's first 6 bytes, then zeros."""
        return self.set_acked(SEND_RARP, mac + b"\0\0")

    def close(self):
        self.s.close()


def events(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def wait_for(cond, what: str, timeout: float = 10):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def netns():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.fail("the announce test needs root and iproute2 (a namespace with a TAP)",
                    pytrace=False)
    name = f"vhl-migrat-{os.getpid()}"
    res = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def start_serve(vhostlab_fast, tmp_path: Path, mode: str, ns: str | None):
    sock, err = tmp_path / "vu.sock", tmp_path / "serve.err"
    argv = [str(vhostlab_fast.path), "serve", "--socket", str(sock), "--mode", mode, "--json"]
    if ns:
        argv = ["ip", "netns", "exec", ns, *argv]
    proc = subprocess.Popen(["timeout", "-s", "KILL", "60", *argv], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
    wait_for(lambda: proc.poll() is not None or any(
        e.get("event") in ("listening", "error") for e in events(err)), "serve to listen")
    assert proc.poll() is None, err.read_text()
    return proc, sock, err


def stop(proc) -> str:
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    return out


def test_migration_announce_rarp_reaches_the_tap(vhostlab_fast, tmp_path, netns):
    tap = "vhlrarp0"
    serve, sock, err = start_serve(vhostlab_fast, tmp_path, f"tap:{tap}", netns)
    cap = None
    try:
        cap = subprocess.Popen(["timeout", "-s", "KILL", "30", "ip", "netns", "exec", netns,
                                sys.executable, "-c", CAPTURE, tap],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert cap.stdout.readline().strip() == "ready", cap.stderr.read()
        fe = FrontEnd(sock)
        fe.negotiate_rarp()
        assert fe.rarp(GUEST_MAC) == 0
        frame_hex, cap_err = cap.communicate(timeout=25)
        fe.close()
    finally:
        if cap and cap.poll() is None:
            cap.kill()
        out = stop(serve)
    lines = frame_hex.split()
    assert lines, f"no RARP frame on {tap}: {cap_err}\n{err.read_text()}"
    f = bytes.fromhex(lines[0])
    assert len(f) == 60, f.hex()
    assert f[0:6] == b"\xff" * 6 and f[6:12] == GUEST_MAC and f[12:14] == b"\x80\x35", f.hex()
    htype, ptype, hlen, plen, op = struct.unpack(">HHBBH", f[14:22])
    assert (htype, ptype, hlen, plen, op) == (1, 0x0800, 6, 4, 3), f.hex()
    assert f[22:28] == GUEST_MAC and f[32:38] == GUEST_MAC, f.hex()
    ann = [e for e in events(err) if e.get("event") == "announce"]
    assert len(ann) == 1 and "52:54:00:12:34:56" in ann[0]["message"], ann
    assert f"RARP broadcast on tap {tap}" in ann[0]["message"], ann
    assert not [e for e in events(err) if e.get("event") == "error"], err.read_text()
    assert out.strip(), "serve printed no final statistics"


def test_migration_announce_loopback_and_bad_mac(vhostlab_fast, tmp_path):
    serve, sock, err = start_serve(vhostlab_fast, tmp_path, "loopback", None)
    try:
        fe = FrontEnd(sock)
        fe.negotiate_rarp()
        # Multicast names no guest: refused, nothing announced, the connection lives on.
        assert fe.rarp(bytes.fromhex("01005e000001")) != 0
        assert fe.rarp(GUEST_MAC) == 0
        assert fe.get(GET_FEATURES) != 0
        fe.close()
    finally:
        stop(serve)
    ann = [e for e in events(err) if e.get("event") == "announce"]
    assert len(ann) == 1, ann
    assert "not sent, mode loopback" in ann[0]["message"], ann

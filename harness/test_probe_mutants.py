"""`vhostlab probe` against mutant back ends: each new class of check must be able to fail.

EchoBackend is a small vhost-user back end written here: split or packed rings (RING_PACKED
offered), VERSION_1 + PROTOCOL_FEATURES with REPLY_ACK, guest memory mapped from the memfds
of SET_MEM_TABLE, and a poll loop that takes each TX chain, returns it with used length 0
and writes its frame into the next RX buffer (num_buffers 1; dropped when there is none or
it is too small), calling the driver unless avail.flags (split) or the driver event area
(packed) asks not to. As
written it passes the cases below (the first test checks that); each mutant breaks one rule
and the test checks the case that owns the rule fails, with its evidence.
"""

from __future__ import annotations

import mmap
import os
import select
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest

VERSION_1 = 1 << 32
RING_PACKED = 1 << 34
HOST_ECN = 1 << 13
CSUM = 1 << 0
PROTOCOL_FEATURES = 1 << 30
REPLY_ACK = 1 << 3
NEED_REPLY = 0x8
F_NEXT, F_WRITE, F_INDIRECT = 1, 2, 4
F_AVAIL, F_USED = 1 << 7, 1 << 15  # packed descriptor flags


class Ring:
    def __init__(self):
        self.num = 0
        self.desc = self.avail = self.used = 0
        self.last_avail = 0  # split: next avail index (= used index); packed: position
        self.avail_wrap = True  # packed: the wrap counter at last_avail
        self.used_pos, self.used_wrap = 0, True  # packed: where the next used entry goes
        self.call = -1
        self.ready = False
        self.stopped = False  # GET_VRING_BASE was asked


class EchoBackend:
    """One connection at a time; `mutant` names the rule it breaks (None: none)."""

    def __init__(self, path: Path, mutant: str | None = None):
        self.path, self.mutant = path, mutant
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(8)
        self.srv.settimeout(0.1)
        self.done = False
        self.dead = False  # the "crash" mutant: stops accepting for good
        self.hung = False  # the "wedge" mutant: accepts, never answers again
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    # ---- plumbing -----------------------------------------------------------------------
    def serve(self):
        while not self.done and not self.dead:
            try:
                conn, _ = self.srv.accept()
            except (socket.timeout, OSError):
                continue
            if self.hung:
                time.sleep(5)
                conn.close()
                continue
            with conn:
                self.regions, self.rings, self.packed = [], [Ring(), Ring()], False
                self.talk(conn)
            for _, _, mm in self.regions:
                mm.close()
            for r in self.rings:
                if r.call >= 0:
                    os.close(r.call)
        if self.dead:
            self.srv.close()

    def close(self):
        self.done = True
        self.thread.join(timeout=10)
        if not self.dead:
            self.srv.close()

    def mem(self, gpa: int, n: int) -> tuple[mmap.mmap, int]:
        for base, size, mm in self.regions:
            if base <= gpa and gpa + n <= base + size:
                return mm, gpa - base
        raise ValueError(f"gpa {gpa:#x}+{n} unmapped")

    def read(self, gpa, n):
        mm, off = self.mem(gpa, n)
        return bytes(mm[off:off + n])

    def write(self, gpa, data):
        mm, off = self.mem(gpa, len(data))
        mm[off:off + len(data)] = data

    def u16(self, gpa):
        return struct.unpack("<H", self.read(gpa, 2))[0]

    # ---- messages -----------------------------------------------------------------------
    def talk(self, conn):
        conn.setblocking(False)
        while not self.done:
            r, _, _ = select.select([conn], [], [], 0.001)
            if r:
                if not self.message(conn):
                    return
            try:
                self.poll()
            except ValueError:
                return  # a chain outside guest memory: this toy back end hangs up

    def recv_exact(self, conn, n):
        buf = b""
        while len(buf) < n:
            select.select([conn], [], [], 1)
            try:
                chunk = conn.recv(n - len(buf))
            except BlockingIOError:
                continue
            if not chunk:
                return None
            buf += chunk
        return buf

    def message(self, conn) -> bool:
        try:
            data, fds, _, _ = socket.recv_fds(conn, 12, 16)
        except (BlockingIOError, OSError):
            return True
        if len(data) < 12:
            return False
        req, flags, size = struct.unpack("<III", data)
        if size > 4096:
            return False
        payload = self.recv_exact(conn, size) if size else b""
        if payload is None:
            return False
        reply = self.handle(req, payload, fds)
        if reply == "close":
            return False
        if reply is None and flags & NEED_REPLY:
            status = 1 if req not in KNOWN else 0
            if req not in KNOWN and self.mutant == "ack-unknown":
                status = 0
            reply = struct.pack("<Q", status)
        if reply is not None:
            conn.sendall(struct.pack("<III", req, 0x5, len(reply)) + reply)
        return True

    def handle(self, req, p, fds):
        if req == 1:
            f = VERSION_1 | PROTOCOL_FEATURES | RING_PACKED
            if self.mutant == "ecn-without-tso":
                f |= HOST_ECN  # offered without HOST_TSO4/6, as DPDK 22.11's net_vhost does
            if self.mutant == "csum-passthrough":
                f |= CSUM  # takes NEEDS_CSUM frames, then forwards them unfinished
            return struct.pack("<Q", f)
        if req == 2:
            self.packed = bool(struct.unpack_from("<Q", p)[0] & RING_PACKED)
            return None
        if req == 15:
            return struct.pack("<Q", REPLY_ACK)
        if req == 5:
            n = struct.unpack_from("<I", p)[0]
            for i in range(n):
                gpa, size, _uaddr, off = struct.unpack_from("<QQQQ", p, 8 + 32 * i)
                self.regions.append((gpa, size, mmap.mmap(fds[i], size, offset=off)))
            for fd in fds:
                os.close(fd)
            return None
        for fd in fds[1:] if req in (12, 13) else fds:
            os.close(fd)
        if req in (8, 10, 11, 18):
            idx, num = struct.unpack_from("<II", p)
            if idx > 1:
                return None
            ring = self.rings[idx]
            if req == 8:
                if num == 0 and self.mutant == "crash-on-num0":
                    self.dead = True
                    return "close"
                if num == 0 and self.mutant == "wedge-on-num0":
                    self.hung = True
                    return "close"
                ring.num = num
            elif req == 10 and self.packed:
                # Avail position and wrap in bits 0-15, used in 16-31.
                ring.last_avail, ring.avail_wrap = num & 0x7FFF, bool(num & 0x8000)
                ring.used_pos, ring.used_wrap = (num >> 16) & 0x7FFF, bool(num >> 31)
            elif req == 11 and self.packed:
                ring.ready, ring.stopped = False, True
                avail = ring.last_avail | (0x8000 if ring.avail_wrap else 0)
                used = ring.used_pos | (0x8000 if ring.used_wrap else 0)
                if self.mutant == "base-avail-only":
                    used = 0  # the used half left out (DPDK 22.11's answer)
                return struct.pack("<II", idx, avail | used << 16)
            elif req == 10:
                ring.last_avail = num
                if self.mutant == "resume-rewind" and ring.stopped:
                    # Resumes one entry early: the last chain before the stop goes again.
                    ring.last_avail = (num - 1) & 0xFFFF
            elif req == 11:
                ring.ready, ring.stopped = False, True
                return struct.pack("<II", idx, ring.last_avail)
            return None
        if req == 9:
            idx, _fl, desc, used, avail = struct.unpack_from("<IIQQQ", p)
            ring = self.rings[idx & 1]
            ring.desc, ring.used, ring.avail = desc, used, avail
            return None
        if req == 13 and fds:
            ring = self.rings[struct.unpack_from("<Q", p)[0] & 1]
            ring.call = fds[0]
            ring.ready = True
            return None
        if req == 12 and fds:
            os.close(fds[0])
        return None

    # ---- rings --------------------------------------------------------------------------
    def chain(self, ring, head):
        out, i, hops = [], head, 0
        while hops < ring.num:
            addr, ln, fl, nxt = struct.unpack("<QIHH", self.read(ring.desc + 16 * i, 16))
            out.append((addr, ln, fl))
            if not fl & F_NEXT:
                break
            i, hops = nxt, hops + 1
        return out

    def put_used(self, ring, head, ln):
        slot = ring.used + 4 + 8 * (ring.last_avail % ring.num)
        self.write(slot, struct.pack("<II", head, ln))
        ring.last_avail = (ring.last_avail + 1) & 0xFFFF
        self.write(ring.used + 2, struct.pack("<H", ring.last_avail))
        no_interrupt = self.u16(ring.avail) & 1
        if ring.call >= 0 and (not no_interrupt or self.mutant == "calls-always"):
            os.write(ring.call, struct.pack("<Q", 1))

    def rx_bytes(self, data, rlen):
        """What goes into an RX buffer of rlen bytes for TX chain bytes `data` (header and
        frame), or None when the frame is dropped."""
        frame = data[12:]
        if self.mutant == "truncate" and frame:
            frame = frame[:rlen - 12]  # cut to the buffer instead of dropping
        if not frame or 12 + len(frame) > rlen:
            return None  # dropped: nothing to send, or no room in one buffer
        hdr = bytearray(12)
        hdr[10] = 1
        if self.mutant == "hdr-passthrough":
            hdr = bytearray(data[:12])  # the TX header, num_buffers and all
        if self.mutant == "csum-passthrough":
            # NEEDS_CSUM and its fields to a driver that did not take GUEST_CSUM (N-12).
            hdr = bytearray(data[:10]) + b"\x01\x00"
        if self.mutant == "macswap" and len(frame) >= 12:
            frame = frame[6:12] + frame[:6] + frame[12:]  # a correct macswap forwarder
        return bytes(hdr) + frame

    def source_frames(self, rx):
        """--expect source: a frame of its own into every RX buffer posted (split ring),
        60 bytes behind a header with num_buffers 1; the source mutants break one rule."""
        while self.u16(rx.avail + 2) != rx.last_avail:
            rhead = self.u16(rx.avail + 4 + 2 * (rx.last_avail % rx.num))
            raddr, _rlen, _ = self.chain(rx, rhead)[0]
            hdr = bytearray(12)
            hdr[10] = 0 if self.mutant == "source-nb0" else 1
            frame = bytes([0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xB5]) + bytes(46)
            if self.mutant == "source-unwritten":
                self.write(raddr, bytes(hdr))  # the length below covers bytes never written
            else:
                self.write(raddr, bytes(hdr) + frame)
            self.put_used(rx, rhead, 12 + len(frame))

    # ---- packed rings (virtio 2.8) --------------------------------------------------------
    def pchain(self, ring):
        """The chain available at ring.last_avail: its (addr, len, flags) and the id of its
        last descriptor, or None."""
        out, pos, wrap = [], ring.last_avail, ring.avail_wrap
        for _ in range(ring.num):
            addr, ln, did, fl = struct.unpack("<QIHH", self.read(ring.desc + 16 * pos, 16))
            if bool(fl & F_AVAIL) != wrap or bool(fl & F_USED) == wrap:
                return None
            out.append((addr, ln, fl))
            pos += 1
            if pos == ring.num:
                pos, wrap = 0, not wrap
            if not fl & F_NEXT:
                return out, did
        return None

    def ptake(self, ring, n):
        for _ in range(n):
            ring.last_avail += 1
            if ring.last_avail == ring.num:
                ring.last_avail, ring.avail_wrap = 0, not ring.avail_wrap

    def pput_used(self, ring, did, n, ln):
        """One used descriptor for a chain of n descriptors: length and id, then the flags
        that make it used in this lap (WRITE when the length counts bytes written: 2.8.4)."""
        at = ring.desc + 16 * ring.used_pos
        self.write(at + 8, struct.pack("<IH", ln, did))
        flags = (F_AVAIL | F_USED if ring.used_wrap else 0) | (F_WRITE if ln else 0)
        self.write(at + 14, struct.pack("<H", flags))
        for _ in range(n):
            ring.used_pos += 1
            if ring.used_pos == ring.num:
                ring.used_pos, ring.used_wrap = 0, not ring.used_wrap
        disabled = self.u16(ring.avail + 2) == 1  # driver event flags: DISABLE
        if ring.call >= 0 and (not disabled or self.mutant == "calls-always"):
            os.write(ring.call, struct.pack("<Q", 1))

    def poll_packed(self, rx, tx):
        while True:
            got = self.pchain(tx)
            if got is None:
                return
            descs, did = got
            self.ptake(tx, len(descs))
            if any(fl & F_INDIRECT for _, _, fl in descs):
                data = b""
            else:
                data = b"".join(self.read(a, ln) for a, ln, _ in descs)
            self.pput_used(tx, did, len(descs), 0)
            rgot = self.pchain(rx)
            if rgot is None:
                continue  # no RX buffer: the frame is dropped
            rdescs, rid = rgot
            out = self.rx_bytes(data, rdescs[0][1])
            if out is None:
                continue
            self.write(rdescs[0][0], out)
            self.ptake(rx, len(rdescs))
            self.pput_used(rx, rid, len(rdescs), len(out))

    # ---- split rings and the loop ---------------------------------------------------------
    def poll(self):
        rx, tx = self.rings
        if not (rx.ready and tx.ready and self.regions):
            return
        if self.packed:
            self.poll_packed(rx, tx)
            return
        if self.mutant and self.mutant.startswith("source"):
            self.source_frames(rx)
        while self.u16(tx.avail + 2) != tx.last_avail:
            head = self.u16(tx.avail + 4 + 2 * (tx.last_avail % tx.num))
            descs = self.chain(tx, head)
            if any(fl & F_INDIRECT for _, _, fl in descs):
                data = b""
            else:
                data = b"".join(self.read(a, ln) for a, ln, _ in descs)
            if self.mutant == "hdr-one-desc" and len(descs) > 1:
                # Takes the first descriptor for the whole header, however long it is.
                data = bytes(12) + b"".join(self.read(a, ln) for a, ln, _ in descs[1:])
            if self.mutant == "scribble" and descs and descs[0][1]:
                self.write(descs[0][0], b"\xAA")
            self.put_used(tx, head, 0)
            if self.u16(rx.avail + 2) == rx.last_avail:
                continue  # no RX buffer: the frame is dropped (the probe posts room first)
            rhead = self.u16(rx.avail + 4 + 2 * (rx.last_avail % rx.num))
            raddr, rlen, _ = self.chain(rx, rhead)[0]
            out = self.rx_bytes(data, rlen)
            if out is None:
                continue
            self.write(raddr, out)
            self.put_used(rx, rhead, len(out))


# Requests this back end implements (an unknown one with NEED_REPLY gets status 1).
KNOWN = {1, 2, 3, 5, 8, 9, 10, 11, 12, 13, 15, 16, 18}


@pytest.fixture()
def tmp():
    with tempfile.TemporaryDirectory(prefix="vhl-mut-") as d:
        yield Path(d)


def probe_cases(vhostlab, tmp, mutant, cases, ring="split", expect="echo"):
    sock = tmp / "m.sock"
    be = EchoBackend(sock, mutant)
    try:
        res = vhostlab("probe", "--json", "--socket", str(sock), "--ring", ring,
                       "--timeout-ms", "500", "--case", ",".join(cases), "--expect", expect,
                       timeout=60)
    finally:
        be.close()
        sock.unlink(missing_ok=True)  # a second run in the same directory binds it again
    assert res.returncode in (0, 1), res.describe()
    doc = res.json()
    got = {c["id"]: c for c in doc["cases"]}
    assert set(got) == set(cases), res.describe()
    return res, got


CASES = ["no-device-writes", "chain-shapes", "no-calls-disabled", "unknown-request",
         "msg-vring-num-zero", "ring-zero-len", "tx-num-buffers", "no-spread",
         "vring-base-resume"]


# The packed ring's: the split cases the packed back end runs the same way, and
# get-vring-base, whose packed answer carries the used half too.
PACKED_CASES = ["no-device-writes", "chain-shapes", "no-calls-disabled", "tx-num-buffers",
                "no-spread", "get-vring-base", "vring-base-resume"]


def test_the_unmutated_back_end_passes_every_case_the_mutants_break(vhostlab, tmp):
    res, got = probe_cases(vhostlab, tmp, None, CASES)
    assert all(c["verdict"] == "pass" for c in got.values()), res.describe()
    res, got = probe_cases(vhostlab, tmp, None, PACKED_CASES, ring="packed")
    assert all(c["verdict"] == "pass" for c in got.values()), res.describe()
    assert all(c["ring"] == "packed" for c in got.values()), res.describe()


@pytest.mark.parametrize(
    "mutant, case, evidence",
    [
        # U-09 on a packed ring: GET_VRING_BASE answers the avail half only.
        ("base-avail-only", "get-vring-base", "returned 0x4, expected 0x40004"),
        # N-02 and N-05 as on split, through the packed ring's descriptors.
        ("truncate", "no-spread", "an RX buffer was used"),
        ("hdr-passthrough", "tx-num-buffers", "num_buffers 65535"),
    ],
)
def test_a_packed_mutant_fails_the_case_that_owns_its_rule(vhostlab, tmp, mutant, case,
                                                           evidence):
    res, got = probe_cases(vhostlab, tmp, mutant, [case], ring="packed")
    c = got[case]
    assert c["verdict"] == "fail" and c["ring"] == "packed", res.describe()
    assert evidence in c["detail"], res.describe()


@pytest.mark.parametrize(
    "mutant, case, verdict, evidence",
    [
        # S-03 and the hostile suite's stray-write check: a write into a readable buffer.
        ("scribble", "no-device-writes", "fail", "wrote into a readable buffer"),
        ("scribble", "ring-zero-len", "fail", "outside every buffer it was given to write"),
        # S-04: the header taken from the first descriptor alone.
        ("hdr-one-desc", "chain-shapes", "fail", "header 4+4+4, then frame"),
        # S-10: calls with avail.flags NO_INTERRUPT.
        ("calls-always", "no-calls-disabled", "fail", "avail.flags NO_INTERRUPT"),
        # N-05: the TX header's num_buffers carried over to RX.
        ("hdr-passthrough", "tx-num-buffers", "fail", "num_buffers 65535"),
        # N-02: a frame too big for one buffer cut to fit instead of dropped.
        ("truncate", "no-spread", "fail", "an RX buffer was used"),
        # S-15: resumed one entry before the base it was given: a frame sent again.
        ("resume-rewind", "vring-base-resume", "fail", "after resuming at base 0xfffe"),
        # U-06: an unknown request acked as a success.
        ("ack-unknown", "unknown-request", "fail", "acked with 0"),
        # Hostile messages: the process gone, or no longer answering.
        ("crash-on-num0", "msg-vring-num-zero", "crash", "then a fresh connection"),
        ("wedge-on-num0", "msg-vring-num-zero", "wedge", "GET_FEATURES"),
    ],
)
def test_a_mutant_fails_the_case_that_owns_its_rule(vhostlab, tmp, mutant, case, verdict,
                                                    evidence):
    t0 = time.monotonic()
    res, got = probe_cases(vhostlab, tmp, mutant, [case])
    assert time.monotonic() - t0 < 30
    c = got[case]
    assert c["verdict"] == verdict, res.describe()
    assert evidence in c["detail"], res.describe()


@pytest.mark.parametrize("back_end, expect, verdict", [
    ("macswap", "macswap", "pass"),  # the oracle follows the swap
    (None, "macswap", "fail"),       # an echo is not a macswap
    ("macswap", "echo", "fail"),     # nor a macswap an echo
])
def test_macswap_expectation_follows_what_the_back_end_does(vhostlab, tmp, back_end, expect,
                                                            verdict):
    res, got = probe_cases(vhostlab, tmp, back_end, ["echo", "echo-no-mrg"], expect=expect)
    assert res.json()["backend"]["expect"] == expect, res.describe()
    for c in got.values():
        assert c["verdict"] == verdict, res.describe()
        if verdict == "fail":
            # The first difference is in the destination MAC: byte 0 of the frame.
            assert "RX frame byte 0 is" in c["detail"], res.describe()


def test_csum_passthrough_fails_offload_csum(vhostlab, tmp):
    # N-12: a NEEDS_CSUM frame handed on unfinished to a driver without GUEST_CSUM.
    res, got = probe_cases(vhostlab, tmp, "csum-passthrough", ["offload-csum", "offload-tso4"])
    c = got["offload-csum"]
    assert c["verdict"] == "fail", res.describe()
    assert "header flags 0x1 gso_type 0x0" in c["detail"], res.describe()
    assert "expected flags 0x0" in c["detail"], res.describe()
    # HOST_TSO4 is not offered: n/a, naming the feature.
    assert got["offload-tso4"]["verdict"] == "n/a", res.describe()
    assert "HOST_TSO4" in got["offload-tso4"]["detail"], res.describe()


@pytest.mark.parametrize("mutant, verdict, evidence", [
    ("source", "pass", "32 frames of 60..60 bytes arrived"),
    ("source-nb0", "fail", "num_buffers 0"),
    ("source-unwritten", "fail", "still the poison"),
])
def test_source_cases_check_what_a_source_sends(vhostlab, tmp, mutant, verdict, evidence):
    res, got = probe_cases(vhostlab, tmp, mutant, ["source-frames", "source-no-mrg"],
                           expect="source")
    for c in got.values():
        assert c["verdict"] == verdict, res.describe()
        assert evidence in c["detail"], res.describe()


def test_source_cases_are_na_unless_the_back_end_is_a_source(vhostlab, tmp):
    res, got = probe_cases(vhostlab, tmp, None, ["source-frames"])
    assert got["source-frames"]["verdict"] == "n/a", res.describe()
    assert "--expect source" in got["source-frames"]["detail"], res.describe()


def test_a_source_failure_is_a_trace_that_replays_failing_and_passing(vhostlab, tmp):
    # --record writes the failing source case; replayed over the socket it fails against
    # the back end that failed (num_buffers 0) and passes against a correct source.
    rec = tmp / "rec"
    rec.mkdir()
    sock = tmp / "m.sock"
    be = EchoBackend(sock, "source-nb0")
    try:
        res = vhostlab("probe", "--json", "--socket", str(sock), "--ring", "split",
                       "--timeout-ms", "500", "--case", "source-frames", "--expect", "source",
                       "--record", str(rec), timeout=60)
        case = res.json()["cases"][0]
        assert case["verdict"] == "fail" and case["trace"], res.describe()
        bad = vhostlab("replay", "--socket", str(sock), case["trace"], timeout=60)
    finally:
        be.close()
        sock.unlink(missing_ok=True)
    assert bad.returncode == 1 and "FAIL" in bad.stdout, bad.describe()
    be = EchoBackend(sock, "source")
    try:
        good = vhostlab("replay", "--socket", str(sock), case["trace"], timeout=60)
    finally:
        be.close()
    assert good.returncode == 0 and "PASS" in good.stdout, good.describe()

"""`vhostlab serve --record FILE` (docs/serve.md, "Recording"): a real front end's session
written as a trace, replayed green by `vhostlab replay FILE`.

DPDK 22.11 testpmd (virtio-user) is the front end here, started as test_interop_dpdk.py
starts it: for split and packed rings, testpmd txonly -> serve rxonly (serve dequeues),
serve txonly -> testpmd rxonly (serve enqueues) and testpmd macswap <-> serve loopback
(both). Each trace must replay with every expectation holding, hold as many packets as serve
reported recording, and carry the statements of that traffic. An edited trace fails replay
at the edited line. Options serve cannot record are usage errors naming why. Recording needs
the lab build of the core, so these sessions run `vhostlab serve` (the lab program), where
test_interop_dpdk.py runs vhostlab-fast. (QEMU: test_record_qemu.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_interop_dpdk import (  # noqa: F401  (fixtures are found by name)
    Serve,
    check_features,
    dpdk_runtime_dirs,
    queue0,
    session,
    testpmd,
    workdir,
)

MAX_PACKETS = 2000

CELLS = [
    # (serve mode, testpmd forwarding, ring, mergeable, in-order, testpmd start command)
    ("rxonly", "txonly", "split", 1, 1, "start"),
    ("rxonly", "txonly", "packed", 0, 0, "start"),
    ("txonly", "rxonly", "split", 0, 0, "start"),
    ("txonly", "rxonly", "packed", 1, 1, "start"),
    ("loopback", "macswap", "split", 1, 0, "start tx_first 4"),
    ("loopback", "macswap", "packed", 1, 1, "start tx_first 4"),
    ("null", "txonly", "split", 1, 1, "start"),
    ("touch", "txonly", "packed", 0, 0, "start"),
]
CELL_IDS = [f"{m}-{r}-mrg{g}-ord{o}" for m, _, r, g, o, _ in CELLS]


def trace_counts(text: str) -> dict:
    """Statements by keyword, and the packets the expectations account for."""
    kinds: dict[str, int] = {}
    packets = 0
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        key = " ".join(words[:2]) if words[0] == "expect" else words[0]
        kinds[key] = kinds.get(key, 0) + 1
        if words[:2] in (["expect", "dequeued"], ["expect", "enqueued"]):
            packets += int(words[3])
    return {"kinds": kinds, "packets": packets}


def replay(vhostlab, path: Path):
    res = vhostlab("replay", str(path), timeout=120)
    return res


@pytest.mark.parametrize("mode,fwd,ring,mrg,ord_,start", CELLS, ids=CELL_IDS)
def test_recorded_session_replays(vhostlab, testpmd, workdir, mode, fwd, ring, mrg, ord_,
                                  start):
    cell = {"ring": ring, "mrg": mrg, "ord": ord_}
    path = workdir / "session.trace"
    counts, result, serve, _ = session(
        vhostlab, testpmd, workdir, mode, fwd, cell, start=start,
        serve_args=("--record", str(path), "--record-max-packets", str(MAX_PACKETS)),
    )
    rec = result["record"]
    q = queue0(result)
    assert rec["written"] is True and rec["error"] == "", rec
    assert rec["packets"] >= MAX_PACKETS, rec  # the bound stops it after a whole burst
    assert "bound" in rec["stopped"], rec
    assert rec["queues"] == 2 and rec["regions"] >= 1, rec
    assert path.is_file() and not list(workdir.glob("session.trace.tmp.*"))
    recorded = serve.events("recorded")
    assert len(recorded) == 1 and str(path) in recorded[0]["message"], recorded

    text = path.read_text()
    tc = trace_counts(text)
    kinds = tc["kinds"]
    # Every recorded packet is in the trace, and no more (null and touch make none: the
    # chains they returned are counted by the replay below).
    discards = mode in ("null", "touch")
    assert tc["packets"] == (0 if discards else rec["packets"]), (tc, rec)
    setup = ("vhostlab-trace", "features", "region", "queue", "pool", "dirty-log", "seed")
    assert sum(n for k, n in kinds.items() if k not in setup) == rec["statements"], kinds
    assert re.search(r"^queue rx0 rx size=\d+ desc=0x", text, re.M)
    assert re.search(r"^queue tx0 tx size=\d+ desc=0x", text, re.M)
    assert ("ring_packed" in text.splitlines()[1]) == (ring == "packed")
    ring_stmt = "pdesc" if ring == "packed" else "desc"
    assert kinds.get(ring_stmt, 0) > 0, kinds
    if mode in ("rxonly", "loopback"):
        assert kinds.get("dequeue", 0) > 0 and kinds.get("expect packet", 0) > 0, kinds
        assert kinds.get("write", 0) > 0, kinds  # headers and payload
    if mode in ("txonly", "loopback"):
        assert kinds.get("enqueue", 0) > 0, kinds
    if discards:
        assert kinds.get("discard", 0) > 0 and "dequeue" not in kinds, kinds
        assert "expect packet" not in kinds and "expect dequeued" not in kinds, kinds
        # touch reads one byte of each packet, recorded like every byte the core read.
        assert (kinds.get("write", 0) > 0) == (mode == "touch"), kinds
    assert kinds.get("expect used", 0) > 0 and kinds.get("expect stat", 0) > 0, kinds

    res = replay(vhostlab, path)
    assert res.returncode == 0, res.describe()
    m = re.search(r"PASS .*: (\d+) statements, (\d+) expectations, (\d+) packets dequeued, "
                  r"(\d+) delivered, (\d+) discarded", res.stdout)
    assert m, res.stdout
    print(f"{cell} {mode}: serve moved rx {q['rx_packets']} tx {q['tx_packets']}; recorded "
          f"{rec['packets']} packets in {rec['bursts']} bursts, {rec['statements']} "
          f"statements, {path.stat().st_size} bytes; replay: {m.group(0)}")
    # Dequeued + delivered in the replay: every packet but those dropped on enqueue.
    assert int(m.group(3)) + int(m.group(4)) <= rec["packets"]
    assert int(m.group(3)) == kinds.get("expect packet", 0)
    # Each good chain a recorded discard returned, the replay's discard returns again.
    assert int(m.group(5)) == (rec["packets"] if discards else 0), (m.group(0), rec)


def test_edited_trace_fails_at_the_edited_line(vhostlab, testpmd, workdir):
    """A recorded trace whose one expectation (or one recorded byte) is changed fails replay
    there: the trace checks what it claims."""
    path = workdir / "session.trace"
    session(vhostlab, testpmd, workdir, "rxonly", "txonly", {"ring": "split", "mrg": 1,
                                                             "ord": 1},
            serve_args=("--record", str(path), "--record-max-packets", "500"))
    lines = path.read_text().splitlines(keepends=True)
    packets = [i for i, l in enumerate(lines) if l.startswith("expect packet ")]
    assert len(packets) > 10
    at = packets[7]
    edited = workdir / "edited.trace"
    lines_e = list(lines)
    lines_e[at] = re.sub(r"fnv1a=([0-9a-f])", lambda mm: "fnv1a=" + ("1" if mm.group(1) != "1"
                                                                       else "2"), lines[at])
    assert lines_e[at] != lines[at]
    edited.write_text("".join(lines_e))
    res = replay(vhostlab, edited)
    assert res.returncode == 1, res.describe()
    assert f"FAIL {edited}:{at + 1}: expect packet" in res.stdout, res.stdout
    assert "signature: expect packet:data" in res.stdout, res.stdout

    # One byte of a recorded payload: the packet that carries it no longer matches.
    writes = [i for i, l in enumerate(lines) if l.startswith("write ")]
    w = writes[len(writes) // 2]
    words = lines[w].split()
    data = words[2]
    flipped = data[:-2] + ("00" if data[-2:] != "00" else "ff")
    lines_w = list(lines)
    lines_w[w] = f"write {words[1]} {flipped}\n"
    edited.write_text("".join(lines_w))
    res = replay(vhostlab, edited)
    assert res.returncode == 1, res.describe()
    fail_line = int(re.search(rf"FAIL {re.escape(str(edited))}:(\d+): expect packet",
                              res.stdout).group(1))
    # The first expectation after the edited write that reads it.
    assert fail_line > w + 1, (w + 1, res.stdout)
    assert lines[fail_line - 1].startswith("expect packet"), lines[fail_line - 1]


@pytest.mark.parametrize("args,message", [
    (("--zero-copy",), "cannot record --zero-copy"),
    (("--mode", "pair:/tmp/vhl-rec-other.sock"), "cannot record pair mode"),
    (("--queues", "9"), "at most 8 queue pairs"),
    (("--record-max-packets", "0"), "--record-max-packets"),
])
def test_record_refuses_what_a_trace_cannot_hold(vhostlab, workdir, args, message):
    res = vhostlab("serve", "--socket", str(workdir / "s.sock"), "--record",
                   str(workdir / "t.trace"), *args)
    assert res.returncode == 2, res.describe()
    assert message in res.stderr, res.stderr
    assert res.stdout == ""
    assert not (workdir / "t.trace").exists()


def test_record_needs_the_lab_program(vhostlab, vhostlab_fast, workdir):
    """Recording observes every ring load the core makes: only the lab build of the core
    reports them, so `vhostlab serve --record` records (on that build, and says so) and
    vhostlab-fast, the production program, refuses --record naming the program that can."""
    res = vhostlab_fast("serve", "--socket", str(workdir / "s.sock"), "--record",
                        str(workdir / "t.trace"))
    assert res.returncode == 2, res.describe()
    assert "run `vhostlab serve`, not vhostlab-fast" in res.stderr, res.describe()
    assert not (workdir / "t.trace").exists()
    res = vhostlab("serve", "--socket", str(workdir / "s.sock"), "--record",
                   str(workdir / "t.trace"), "--duration", "0.1", "--json")
    assert res.returncode == 0, res.describe()
    assert res.json()["core"] == "lab-hooks", res.describe()
    assert '"event": "core"' in res.stderr, res.describe()


def test_record_max_packets_needs_record(vhostlab, workdir):
    res = vhostlab("serve", "--socket", str(workdir / "s.sock"), "--record-max-packets", "5")
    assert res.returncode == 2 and "needs --record" in res.stderr, res.describe()


def test_record_without_a_front_end_writes_nothing(vhostlab, workdir):
    """Stopped before any ring ran: no file (a trace without memory or queues would not
    replay), and the report says why."""
    path = workdir / "t.trace"
    res = vhostlab("serve", "--socket", str(workdir / "s.sock"), "--record", str(path),
                   "--duration", "0.2", "--json", "--quiet")
    assert res.returncode == 0, res.describe()
    rec = res.json()["record"]
    assert rec["written"] is False and rec["packets"] == 0 and rec["error"] == "", rec
    assert "before a front end" in rec["stopped"], rec
    assert not path.exists()

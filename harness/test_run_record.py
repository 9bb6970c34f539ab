"""`vhostlab run --record DIR` / `--record-failures DIR` (docs/cli.md).

A recorded trace carries everything the guest wrote before every host action plus the
oracles' expectations, each derived from the guest's own record (what it posted, what the host
sent), never from what the core returned. So:

- a recording of a passing configuration must replay and pass, with thousands of expectations
  (a faithful recording: the replayed core saw the same memory before every burst and did the
  same thing);
- changing one of those expectations must make the replay fail exactly there (the
  expectations are real checks);
- every fault and zero-copy mode of the matrix must record faithfully (pool refusals are
  replayed call by call with `fault pool fail-at=`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# One configuration per row: the dimensions recording must get right.
CONFIGS = {
    "split-plain": ["--ring", "split", "--mergeable", "off", "--indirect", "off",
                    "--in-order", "off", "--event-idx", "off", "--batch", "0",
                    "--granularity", "coarse", "--zero-copy", "off", "--dirty-log", "off",
                    "--faults", "none"],
    "split-mrg-zc-prob": ["--ring", "split", "--mergeable", "on", "--indirect", "on",
                          "--in-order", "off", "--event-idx", "on", "--batch", "256",
                          "--granularity", "4096", "--zero-copy", "on", "--dirty-log", "on",
                          "--faults", "prob"],
    "packed-inorder-zc-nth": ["--ring", "packed", "--mergeable", "on", "--indirect", "on",
                              "--in-order", "on", "--event-idx", "on", "--batch", "256",
                              "--granularity", "4096", "--zero-copy", "on",
                              "--dirty-log", "off", "--faults", "nth"],
    "packed-scarce": ["--ring", "packed", "--mergeable", "off", "--indirect", "off",
                      "--in-order", "off", "--event-idx", "off", "--batch", "0",
                      "--granularity", "coarse", "--zero-copy", "off", "--dirty-log", "on",
                      "--faults", "scarce"],
    # Offloaded traffic: GSO frames both ways, Linux's big receive buffers, frames the host
    # made fit (the trace carries what was enqueued and where the model's frames landed).
    "split-tso-big": ["--ring", "split", "--mergeable", "off", "--indirect", "on",
                      "--in-order", "off", "--event-idx", "on", "--batch", "256",
                      "--granularity", "4096", "--zero-copy", "off", "--dirty-log", "on",
                      "--faults", "none", "--offload", "tso"],
    "packed-all-zc-prob": ["--ring", "packed", "--mergeable", "on", "--indirect", "on",
                           "--in-order", "on", "--event-idx", "off", "--batch", "0",
                           "--granularity", "coarse", "--zero-copy", "on",
                           "--dirty-log", "off", "--faults", "prob", "--offload", "all"],
    "split-none-fit": ["--ring", "split", "--mergeable", "on", "--indirect", "off",
                       "--in-order", "off", "--event-idx", "off", "--batch", "256",
                       "--granularity", "coarse", "--zero-copy", "off", "--dirty-log", "off",
                       "--faults", "none", "--offload", "none"],
}


def record(vhostlab, tmp_path: Path, args: list[str], packets: int = 400) -> tuple[dict, Path]:
    out = tmp_path / "traces"
    res, doc = vhostlab.run_json("--packets", str(packets), "--record", str(out), *args,
                                 timeout=120)
    assert doc["ok"], res.describe()
    assert len(doc["configs"]) == 1, res.describe()
    trace = doc["configs"][0]["trace"]
    assert trace["error"] == "", trace
    path = Path(trace["path"])
    assert path.is_file() and path.parent == out, trace
    return trace, path


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_recording_replays_and_passes(vhostlab, tmp_path, name):
    trace, path = record(vhostlab, tmp_path, CONFIGS[name])
    # The run reports its own replay of the trace ...
    assert trace["replay"] == "pass" and trace["signature"] == "", trace
    # ... and `vhostlab replay` agrees, with real work and real checks in the trace.
    res = vhostlab("replay", "--json", str(path), timeout=120)
    assert res.returncode == 0, res.describe()
    t = res.json()["traces"][0]
    assert t["status"] == "pass"
    assert t["statements"] == trace["statements"]
    assert t["packets_dequeued"] == 400 and t["packets_delivered"] == 400, t
    # Every dequeued packet and every delivered one is checked.
    assert t["expectations"] >= 800, t


def test_changed_expectation_fails_there(vhostlab, tmp_path):
    _, path = record(vhostlab, tmp_path, CONFIGS["split-mrg-zc-prob"])
    lines = path.read_text().splitlines()
    # The 10th packet expectation: flip one hex digit of its payload digest.
    idx = [i for i, l in enumerate(lines) if l.startswith("expect packet tx ")][9]
    m = re.search(r"fnv1a=([0-9a-f]{16})", lines[idx])
    assert m, lines[idx]
    digest = m.group(1)
    flipped = digest[:-1] + ("0" if digest[-1] != "0" else "1")
    lines[idx] = lines[idx].replace(digest, flipped)
    bad = tmp_path / "bad.trace"
    bad.write_text("\n".join(lines) + "\n")
    res = vhostlab("replay", "--json", str(bad), timeout=120)
    assert res.returncode == 1, res.describe()
    t = res.json()["traces"][0]
    assert t["status"] == "diverged"
    assert t["line"] == idx + 1
    assert t["signature"] == "expect packet:data"
    # And an RX landing expectation (guest memory after an enqueue).
    lines = path.read_text().splitlines()
    idx = [i for i, l in enumerate(lines) if l.startswith("expect mem ")][5]
    lines[idx] = re.sub(r"fnv1a=[0-9a-f]{16}", "fnv1a=0123456789abcdef", lines[idx])
    bad.write_text("\n".join(lines) + "\n")
    res = vhostlab("replay", "--json", str(bad), timeout=120)
    assert res.returncode == 1, res.describe()
    t = res.json()["traces"][0]
    assert (t["line"], t["signature"]) == (idx + 1, "expect mem:data"), t


def test_record_failures_records_nothing_when_all_pass(vhostlab, tmp_path):
    out = tmp_path / "fail-traces"
    res, doc = vhostlab.run_json("--packets", "200", "--record-failures", str(out),
                                 *CONFIGS["split-plain"], timeout=120)
    assert doc["ok"], res.describe()
    assert "trace" not in doc["configs"][0]
    assert out.is_dir() and not list(out.iterdir())


def test_record_dir_errors(vhostlab, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    res = vhostlab("run", "--record", str(f), "--packets", "10")
    assert res.returncode == 2, res.describe()
    assert str(f) in res.stderr and "not a writable directory" in res.stderr
    res = vhostlab("run", "--record-failures", str(tmp_path / "no" / "such"), "--packets", "10")
    assert res.returncode == 2, res.describe()
    assert "cannot create the trace directory" in res.stderr

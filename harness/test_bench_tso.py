"""scripts/bench_tso.py, the guest's TCP throughput with and without TSO (reports/
tso-throughput.md): usage errors name the value; one tiny real run (one on/off pair, 2 MiB
each way) writes a well-formed report whose runs passed their checks -- never which
setting was faster, which a run this short cannot say.

Needs what test_interop_qemu.py needs (root, QEMU, the guest's packages) and vhostlab-fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from test_interop_qemu import guest, netns_ok, qemu  # noqa: F401  (fixtures, by name)

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "bench_tso.py"


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("args,word", [
    (["--pairs", "0"], "--pairs 0"),
    (["--mib", "0"], "--mib 0"),
    (["--mib", "2048"], "--mib 2048"),
    (["--ring", "round"], "round"),
    (["--vhostlab-fast", "/no/such/vhostlab-fast"], "/no/such/vhostlab-fast"),
])
def test_usage_errors_name_the_value(vhostlab_fast, args, word):
    res = bench("--vhostlab-fast", str(vhostlab_fast.path), *args, timeout=60)
    assert res.returncode == 2, res.stderr
    assert word in res.stderr, res.stderr


def test_tso_bench_tiny_run_writes_its_report(vhostlab_fast, qemu, guest, netns_ok):
    with tempfile.TemporaryDirectory(prefix="vhl-tso-bench-test-") as d:
        js, md = Path(d) / "r.json", Path(d) / "r.md"
        res = bench("--vhostlab-fast", str(vhostlab_fast.path), "--pairs", "1", "--mib", "2",
                    "--json-out", str(js), "--md-out", str(md))
        assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
        doc = json.loads(js.read_text())
        text = md.read_text()
    assert doc["config"] == {"mib_each_way": 2, "pairs": 1, "ring": "split", "mergeable": True,
                             "order": "on, off per pair", "aim_ratio": 2.0}, doc["config"]
    assert doc["failures"] == [], doc["failures"]
    runs = doc["runs"]
    assert [(r["pair"], r["offloads"]) for r in runs] == [(1, "on"), (1, "off")], runs
    for r in runs:
        assert r["guest_to_host_mbs"] > 0 and r["host_to_guest_mbs"] > 0, r
        # The proof of TSO the script checked, there in its runs.
        big = r["frames_over_1518_from_guest"] + r["frames_over_1518_to_guest"]
        assert (big > 0) == (r["offloads"] == "on"), r
    for way in ("guest_to_host", "host_to_guest"):
        s = doc["summary"][way]
        on, off = (r[f"{way}_mbs"] for r in runs)
        assert s["on_mbs"] == [on] and s["off_mbs"] == [off], s
        assert s["median_on_mbs"] == on and s["median_off_mbs"] == off, s
        assert s["ratio_of_medians"] == round(on / off, 3), s
        assert s["paired_ratios"] == [round(on / off, 3)], s
        assert s["aim_met"] == (on / off >= 2.0), s
    for env in ("date", "git_commit", "serve_sha256", "qemu", "guest_kernel",
                "loadavg_before", "loadavg_after"):
        assert env in doc["environment"], doc["environment"]
    assert "| guest -> host |" in text and "| host -> guest |" in text, text
    assert res.stdout.strip() in text, (res.stdout, text)

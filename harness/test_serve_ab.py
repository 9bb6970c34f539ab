"""scripts/serve_ab.py, the interleaved A/B of back ends (reports/README.md): usage errors
name what is wrong; the summary's arithmetic on made-up runs; one short real run checked for
structure and self-consistency -- never for which variant is faster.

Needs dpdk-testpmd (a missing one fails, as in test_interop_dpdk.py), vhostlab-fast (the
production program serve runs as; fixture vhostlab_fast) and vl_cpu_pingpong beside it.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from script_import import import_script

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "serve_ab.py"


def ab(prog, *args, timeout=300):
    """scripts/serve_ab.py --vhostlab PROG ARGS (PROG: vhostlab, or vhostlab-fast)."""
    argv = [sys.executable, str(SCRIPT), "--vhostlab", str(prog.path), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("args,word", [
    (["--cells", "split-mrg1-ord1-64-g2h", "dpdk"], "at least two variants"),
    (["--cells", "no-such-cell", "dpdk", "serve"], "no-such-cell"),
    (["--cells", "split-mrg1-ord1-64-h2g", "dpdk", "null"], "split-mrg1-ord1-64-h2g"),
    (["--cells", "split-mrg1-ord1-64-g2h", "dpdk", "x=/no/such/vhostlab"], "/no/such/vhostlab"),
    (["--cells", "split-mrg1-ord1-64-g2h", "dpdk", "dpdk --burst 4"], "takes no options"),
    (["--cells", "split-mrg1-ord1-64-g2h", "a=serve", "a=dpdk"], "must differ"),
    (["--cells", "split-mrg1-ord1-64-g2h", "--reps", "0", "dpdk", "serve"], "--reps 0"),
    (["--cells", "split-mrg1-ord1-64-g2h", "--seconds", "0.1", "dpdk", "serve"], "--seconds"),
    (["--cells", "split-mrg1-ord1-64-g2h", "--sizes", "9000", "dpdk", "serve"], "'9000'"),
    (["--cells", "split-mrg1-ord1-64-g2h", "--sizes", "63", "dpdk", "serve"], "64..1518"),
    (["--cells", "split-mrg1-ord1-64-g2h", "--sizes", "big", "dpdk", "serve"], "'big'"),
    (["--cells", "split-mrg1-ord1-64-g2h", "--sizes", "256", "dpdk", "serve"], "names no cell"),
])
def test_usage_errors_name_the_value(vhostlab, args, word):
    res = ab(vhostlab, *args, timeout=60)
    assert res.returncode == 2, res.stderr
    assert word in res.stderr, res.stderr


def test_help():
    res = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0, res.stderr
    for word in ("--cells", "--sizes", "--reps", "--wait", "--json", "dpdk", "touch",
                 "PROGRAM"):
        assert word in res.stdout, word


def test_variant_specs(vhostlab, vhostlab_fast):
    m = import_script("serve_ab")
    # serve runs as vhostlab-fast, named or found beside the vhostlab named.
    for default in (vhostlab.path, vhostlab_fast.path):
        v = m.parse_variant("b16=serve --burst 16", default)
        assert (v.name, v.kind, v.program, v.args) == (
            "b16", "vhostlab", vhostlab_fast.path, ["--poll", "--burst", "16"])
    v = m.parse_variant(f"{vhostlab.path} --poll --idle-pause 0", vhostlab.path)
    assert v.name == f"{vhostlab.path} --poll --idle-pause 0"
    assert v.args == ["--poll", "--idle-pause", "0"]  # --poll not added twice
    assert m.parse_variant("touch", vhostlab.path).kind == "touch"
    assert m.parse_variant("ref=dpdk", vhostlab.path).kind == "dpdk"


def test_sizes_name_the_cells(vhostlab):
    # --sizes widens the patterns' range beyond vs_dpdk's 64 and 1518 bytes.
    m = import_script("serve_ab")
    a = m.parse_args(["--vhostlab", str(vhostlab.path), "--sizes", "256,128",
                      "--cells", "packed-mrg0-*-g2h,split-mrg1-ord1-128-h2g", "dpdk", "serve"])
    assert sorted(c.id for c in a.cell_list) == sorted([
        "packed-mrg0-ord1-128-g2h", "packed-mrg0-ord1-256-g2h", "packed-mrg0-ord0-128-g2h",
        "packed-mrg0-ord0-256-g2h", "split-mrg1-ord1-128-h2g"])
    assert {c.size for c in a.cell_list} == {128, 256}
    a = m.parse_args(["--vhostlab", str(vhostlab.path), "--cells", "split-*", "dpdk", "serve"])
    assert {c.size for c in a.cell_list} == {64, 1518}  # the default: vs_dpdk's


def test_summary_arithmetic():
    m = import_script("serve_ab")
    runs = [  # rep, variant, placement, Mpps
        (0, "a", "close", 10.0), (0, "b", "close", 12.0),
        (1, "b", "close", 13.0), (1, "a", "close", 11.0),
        (2, "a", "far", 4.0), (2, "b", "mixed", 9.0),
        (3, "a", "close", 20.0), (3, "b", "far", 5.0),
    ]
    runs = [{"cell": "c", "rep": r, "variant": v, "placement": p, "mpps": x}
            for r, v, p, x in runs]
    runs.append({"cell": "c", "rep": 4, "variant": "b", "placement": "close", "error": "x"})
    rows = {r["placement"]: r for r in m.summarize(["a", "b"], ["c"], runs)}
    close = rows["close"]["variants"]
    assert close["a"]["n"] == 3 and close["a"]["median"] == 11.0
    assert close["b"]["n"] == 2 and close["b"]["median"] == 12.5
    assert close["b"]["ratio"] == pytest.approx(12.5 / 11.0)
    # Pairs: reps 0 and 1 only (rep 3's b is far): 12/10 and 13/11.
    assert close["b"]["pairs"] == 2
    assert close["b"]["paired"] == pytest.approx(statistics.median([1.2, 13 / 11]))
    far = rows["far"]["variants"]
    assert far["a"]["median"] == 4.0 and far["b"]["median"] == 5.0
    assert far["b"]["pairs"] == 0 and far["b"]["paired"] is None
    assert "mixed" not in rows
    # The front end's drops for want of ring room: a median share where runs recorded
    # them (guest->host), none where no run did.
    assert close["a"]["fe_dropped"] is None
    runs[0].update(fe_sent=95, fe_dropped=5)
    runs[3].update(fe_sent=90, fe_dropped=10)
    runs[6].update(fe_sent=0, fe_dropped=0)
    row = {r["placement"]: r for r in m.summarize(["a", "b"], ["c"], runs)}["close"]
    assert row["variants"]["a"]["fe_dropped"] == pytest.approx(0.075)
    assert row["variants"]["b"]["fe_dropped"] is None
    text = m.table(["a", "b"], [row], runs)
    assert " 7.5%" in text and "full" in text


class FakeBench:
    """Bench's configuration calls, recorded; every run at 1 Mpps with the procs it got."""

    def __init__(self, _args):
        self.events: list[tuple] = []
        self.started = 0
        FakeBench.last = self

    def start_config(self, cfg):
        self.started += 1
        self.events.append(("start", cfg, self.started))
        return {"n": self.started}

    def stop_config(self, procs):
        self.events.append(("stop", procs.get("n")))

    def run_dpdk(self, procs, _cell):
        return {"mpps": 1.0, "procs": procs["n"]}

    def cleanup(self):
        self.events.append(("cleanup",))


@pytest.mark.parametrize("max_age,starts", [(1e9, 1), (-1.0, 4)])
def test_old_processes_start_again(monkeypatch, max_age, starts):
    # Waits for a placement can outlast timeout(1)'s limit on the DPDK pair: a configuration
    # older than CONFIG_MAX_AGE at a repetition's start is started again (with a negative
    # age: before every repetition, the first included).
    m = import_script("serve_ab")
    monkeypatch.setattr(m.V, "Bench", FakeBench)
    monkeypatch.setattr(m.V, "CONFIG_MAX_AGE", max_age)
    monkeypatch.setattr(m.V, "classify_run", lambda rec: rec.setdefault("placement", "close"))
    cell = m.V.Cell("packed", 1, 1, 64, "g2h")
    a = m.argparse.Namespace(vhostlab=Path("/nonexistent"), warmup=0.1, seconds=0.1, reps=3,
                             wait=None, cell_list=[cell],
                             variant_list=[m.Variant("a", "dpdk"), m.Variant("b", "dpdk")])
    runs = m.run(a)
    ev = FakeBench.last.events
    assert [e for e in ev if e[0] == "start"] == [
        ("start", ("packed", 1, 1), k) for k in range(1, starts + 1)]
    # Each started configuration is stopped once, the last by the cell's end.
    assert sorted(e[1] for e in ev if e[0] == "stop") == list(range(1, starts + 1))
    assert ev[-1] == ("cleanup",)
    # Every repetition ran on processes started for it (or the cell's only ones).
    assert [r["procs"] for r in runs] == (
        [1] * 6 if starts == 1 else [2, 2, 3, 3, 4, 4])
    assert all("error" not in r for r in runs)


def test_short_run(vhostlab_fast):
    if shutil.which("dpdk-testpmd") is None:
        pytest.fail("dpdk-testpmd not found: apt-get install --no-install-recommends dpdk-dev "
                    "librte-net-virtio23 (./lab installs them)", pytrace=False)
    res = ab(vhostlab_fast, "--cells", "split-mrg1-ord1-64-g2h", "--reps", "2",
             "--seconds", "0.3", "--warmup", "0.2", "--json", "ref=serve",
             "b16=serve --burst 16", "touch")
    assert res.returncode == 0, res.stderr[-4000:]
    doc = json.loads(res.stdout)
    assert [v["name"] for v in doc["variants"]] == ["ref", "b16", "touch"]
    assert doc["variants"][1]["args"] == ["--poll", "--burst", "16"]
    assert doc["variants"][0]["program"] == str(vhostlab_fast.path), doc["variants"]
    runs = doc["runs"]
    assert len(runs) == 6, runs
    # Interleaved: rep 0 in the given order, rep 1 reversed.
    assert [r["variant"] for r in runs] == ["ref", "b16", "touch", "touch", "b16", "ref"]
    for r in runs:
        assert r["mpps"] > 0 and r["placement"] in ("close", "far", "mixed", "unsteady"), r
        assert r["serve"]["rx_packets"] > 0, r
        if r["variant"] == "touch":
            assert r["serve"]["tx_packets"] == 0, r
    for row in doc["cells"]:
        ref = row["variants"]["ref"]
        for name, d in row["variants"].items():
            mine = [r["mpps"] for r in runs
                    if r["variant"] == name and r["placement"] == row["placement"]]
            assert d["n"] == len(mine)
            if mine:
                assert d["median"] == pytest.approx(statistics.median(mine))
                if ref["n"]:
                    assert d["ratio"] == pytest.approx(d["median"] / ref["median"])
    # Progress: one line per run on stderr.
    assert sum(1 for line in res.stderr.splitlines() if " Mpps (" in line) == 6, res.stderr

"""scripts/vs_dpdk_instructions.py, instructions per packet against DPDK's vhost library
(reports/README.md): the real script on the two cells of one ring configuration (one DPDK
back end under callgrind, two serves), its report checked for shape and for figures that
follow from the counts it kept; then the pure parts (callgrind parsing, the full-burst
figures, --merge) on inputs made here.

Needs dpdk-testpmd (a missing one fails, as in test_interop_dpdk.py), valgrind and
vhostlab-fast (fixture vhostlab_fast).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from script_import import import_script

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "vs_dpdk_instructions.py"
# One ring configuration (one testpmd under valgrind), both directions: the packed ring,
# where vhostlab and DPDK were furthest apart.
CELLS = ["packed-mrg0-ord1-64-g2h", "packed-mrg0-ord1-64-h2g"]
BURST = 32


@pytest.fixture(scope="module")
def report(vhostlab_fast, tmp_path_factory):
    for tool in ("dpdk-testpmd", "valgrind"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} not found: apt-get install --no-install-recommends dpdk-dev "
                        "librte-net-virtio23 valgrind (./lab installs them)", pytrace=False)
    out = tmp_path_factory.mktemp("vs-dpdk-instr")
    argv = [sys.executable, str(SCRIPT), "--cells", ",".join(CELLS), "--seconds", "1",
            "--idle-seconds", "0.5", "--out", str(out), "--json",
            "--vhostlab", str(vhostlab_fast.path)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (f"{' '.join(argv)} exited {proc.returncode}\n"
                                  f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    doc = json.loads((out / "vs-dpdk-instructions.json").read_text())
    return out, doc, proc


def test_report_shape(report):
    out, doc, proc = report
    for key in ("commit", "dpdk_version", "method", "cells", "negotiated"):
        assert key in doc, key
    assert doc["dpdk_version"].startswith("22.11"), doc["dpdk_version"]
    assert len(doc["commit"]) >= 40
    assert [c["cell"] for c in doc["cells"]] == CELLS
    assert doc["failed"] == []
    for c in doc["cells"]:
        for key in ("vhostlab", "dpdk", "ratio", "raw_ratio", "empty_calls",
                    "packets_per_call"):
            assert key in c, (key, c["cell"])
    # --json: the cells without their counts, as in the file.
    printed = json.loads(proc.stdout)
    assert [p["cell"] for p in printed] == CELLS and "detail" not in printed[0]
    assert printed[0]["ratio"] == doc["cells"][0]["ratio"]
    md = (out / "vs-dpdk-instructions.md").read_text()
    for cell in CELLS:
        assert f"| `{cell}` |" in md and f"- `{cell}`: `vl_net_" in md, md
    assert "## Method" in md and doc["method"] in md
    # Progress on stderr: each back end's phases of each cell, and the cell's result.
    for cell in CELLS:
        for b in ("dpdk    ", "vhostlab"):
            assert f"  {b} {cell}" in proc.stderr, proc.stderr
        assert any(line.strip().startswith(cell) and " ratio " in line
                   for line in proc.stderr.splitlines()), proc.stderr


def test_figures_follow_from_the_counts(report):
    """Every figure recomputed from the counts the report kept: raw = T / P, the idle run's
    cost per call, the full-burst figure, the ratios; and raw >= full burst, the empty calls
    taken out being >= 0."""
    check_figures(report[1])


def test_committed_report_follows_from_its_counts():
    """reports/vs-dpdk-instructions.json: all 32 cells, in the matrix's order, none failed,
    every figure derived from the counts it keeps (as for a fresh run above)."""
    doc = json.loads((REPO / "reports" / "vs-dpdk-instructions.json").read_text())
    mod = import_script("vs_dpdk_instructions")
    assert [c["cell"] for c in doc["cells"]] == [c.id for c in mod.vs.ALL_CELLS]
    assert doc["failed"] == [] and doc["dpdk_version"].startswith("22.11")
    check_figures(doc)


def check_figures(doc: dict):
    figures = import_script("vsdpdk.figures")
    for c in doc["cells"]:
        full = {}
        for b in ("vhostlab", "dpdk"):
            det = c["detail"][b]
            idle, loaded = det["idle"], det["loaded"]
            assert loaded["packets"] > 0 and loaded["instructions"] > 0, (b, c["cell"])
            assert idle["calls"] > 0 and idle["instructions"] > 0, (b, c["cell"])
            assert 0 <= loaded["empty_calls"] <= loaded["calls"]
            n1 = loaded["calls"] - loaded["empty_calls"]
            # Never more packets than full bursts hold.
            assert 0 < loaded["packets"] <= BURST * n1, (b, loaded)
            e = idle["instructions"] / idle["calls"]
            assert c["empty_cost"][b] == pytest.approx(e, abs=0.051)
            f = figures.figures(loaded, e)
            full[b] = f["full_burst"]
            assert c[b] == pytest.approx(f["full_burst"], abs=0.051), (b, c["cell"])
            assert c["raw"][b] == pytest.approx(loaded["instructions"] / loaded["packets"],
                                                abs=0.051)
            assert c["raw"][b] >= c[b] > 0, (b, c)
            assert c["empty_calls"][b] == loaded["empty_calls"]
            assert c["packets_per_call"][b] == pytest.approx(loaded["packets"] / n1, abs=0.006)
        assert c["ratio"] == pytest.approx(full["vhostlab"] / full["dpdk"], abs=0.0006)
        assert c["raw_ratio"] == pytest.approx(
            (c["detail"]["vhostlab"]["loaded"]["instructions"]
             / c["detail"]["vhostlab"]["loaded"]["packets"])
            / (c["detail"]["dpdk"]["loaded"]["instructions"]
               / c["detail"]["dpdk"]["loaded"]["packets"]), abs=0.0006)


def test_idle_runs_moved_nothing_guest_to_host(report):
    """Guest->host the front end never sent during an idle phase: DPDK's shim counted no
    packet and every call empty; serve's idle part is all empty by construction (its
    calls are checked against serve's own count in the script)."""
    _, doc, _ = report
    for c in doc["cells"]:
        if c["dir"] == "g2h":
            idle = c["detail"]["dpdk"]["idle"]
            assert idle["packets"] == 0 and idle["empty_calls"] == idle["calls"], idle


def test_top_functions_are_inside_the_entry_point(report):
    """The functions listed for vhostlab ran inside its entry point: the entry point
    first (the whole region), the rest no larger. The empty calls' share is taken out
    function by function, so the entry point's inclusive figure is the loaded run's
    instructions less the empty calls at the idle cost, per packet."""
    _, doc, _ = report
    figures = import_script("vsdpdk.figures")
    for c in doc["cells"]:
        top = c["top"]
        entry = "vl_net_dequeue" if c["dir"] == "g2h" else "vl_net_enqueue"
        assert top and top[0]["function"] == entry, top
        det = c["detail"]["vhostlab"]
        e = det["idle"]["instructions"] / det["idle"]["calls"]
        want = figures.figures(det["loaded"], e)["empty_minus"]
        assert top[0]["inclusive"] == pytest.approx(want, rel=0.01, abs=0.2), (want, top)
        assert top[0]["inclusive"] >= c["vhostlab"] - 0.2
        for t in top:
            assert 0 <= t["self"] <= t["inclusive"] + 0.05 <= top[0]["inclusive"] + 0.1, t


# --- pure functions ---------------------------------------------------------------------

def test_full_burst_figure_takes_out_empty_and_partial_calls():
    """Calls costing E + b * n for n packets (E for an empty one): the full-burst figure is
    b + E / 32 whatever mix of empty, partial and full calls the run had; raw is T / P."""
    figures = import_script("vsdpdk.figures")
    e, b = 120.0, 9.0
    calls = [0] * 500 + [32] * 40 + [5, 17, 31, 1]
    t = sum(e + b * n for n in calls)
    p = sum(calls)
    run = {"instructions": t, "calls": len(calls), "empty_calls": 500, "packets": p}
    f = figures.figures(run, e)
    assert f["full_burst"] == pytest.approx(b + e / BURST)
    assert f["raw"] == pytest.approx(t / p)
    assert f["packets_per_call"] == pytest.approx(p / 44)
    assert f["empty_minus"] == pytest.approx((t - 500 * e) / p)
    # All full, no empty: nothing taken out.
    full = {"instructions": 10 * (e + b * 32), "calls": 10, "empty_calls": 0,
            "packets": 320}
    assert figures.figures(full, e)["full_burst"] == pytest.approx(full["instructions"] / 320)
    assert figures.empty_cost({"instructions": 5000, "calls": 40}) == 125.0


@pytest.mark.parametrize("run, word", [
    ({"instructions": 100, "calls": 4, "empty_calls": 4, "packets": 0}, "0 packets"),
    ({"instructions": 100, "calls": 4, "empty_calls": 5, "packets": 3}, "empty calls 5"),
    ({"instructions": 100, "calls": 4, "empty_calls": 2, "packets": 65}, "65 packets in 2"),
    ({"instructions": 100, "calls": 4, "empty_calls": 2, "packets": 64}, "<= 0"),
])
def test_figures_refuse_impossible_counts(run, word):
    figures = import_script("vsdpdk.figures")
    with pytest.raises(figures.FigureError, match=word):
        figures.figures(run, 200.0)
    with pytest.raises(figures.FigureError, match="0 calls"):
        figures.empty_cost({"instructions": 0, "calls": 0})


def test_parse_callgrind_edges_and_compression():
    """Calls into a function are recorded under whichever caller made them, that caller
    collected or not; compressed names are resolved; the summary is the total."""
    cgfile = import_script("vsdpdk.cgfile")
    text = "\n".join([
        "# callgrind format", "version: 1", "positions: line", "events: Ir",
        "summary: 1500", "",
        "ob=(1) /x/serve", "fl=(1) serve.c",
        "fn=(1) receive",
        "cfi=(2) dequeue.c", "cfn=(2) vl_net_dequeue", "calls=7 10", "12 1000",
        "fn=(3) other_caller",
        "cfn=(2)", "calls=3 10", "+2 500",
        "fl=(2)", "fn=(2)", "40 300",
        "cfn=(4) vl_pool_alloc_bulk", "calls=5 0", "* 200",
        "totals: 1500",
    ]) + "\n"
    d = cgfile.parse_callgrind(text)
    assert d.total == 1500
    assert d.calls_into("vl_net_dequeue") == (10, 1500)
    assert d.calls_from("vl_net_dequeue") == (5, 200)
    assert d.calls_from("receive") == (7, 1000)
    assert d.calls_into("nothing") == (0, 0)


def test_parse_annotate_rows():
    cgfile = import_script("vsdpdk.cgfile")
    text = "\n".join([
        "Ir                    file:function",
        "-" * 40,
        "471,657,638 (100.0%)  PROGRAM TOTALS",
        "918,602 (194.8%)  ???:rte_vhost_dequeue_burst [/tmp/shim.so]",
        " 12,604 ( 2.67%)  /src/core/net/dequeue.c:vl_net_dequeue [/x/vhostlab-fast]",
        "      7 ( 0.00%)  ???:0x000000000008ca20 [/usr/lib/librte_vhost.so.23.0]",
    ])
    assert cgfile.parse_annotate(text) == [
        (918602, "rte_vhost_dequeue_burst"), (12604, "vl_net_dequeue"),
        (7, "0x000000000008ca20")]


def test_merge_replaces_only_the_cells_run():
    """--merge keeps the earlier report's other cells, puts the new ones in their place in
    the matrix's order, and keeps the earlier run in the history."""
    mod = import_script("vs_dpdk_instructions")
    ids = [c.id for c in mod.vs.ALL_CELLS]
    old = {"command": "scripts/vs_dpdk_instructions.py", "date": "d0", "commit": "c0",
           "negotiated": {"split-mrg1-ord1": {"dpdk": "0x1", "vhostlab": "0x2"}},
           "cells": [{"cell": ids[0], "ratio": 0.5}, {"cell": ids[3], "ratio": 0.7}]}
    new = [{"cell": ids[3], "ratio": 0.6}, {"cell": ids[1], "ratio": 0.9}]
    cells, negotiated, history = mod.merge(old, new, {"split-mrg1-ord1": {"dpdk": "0x3"}})
    assert [(c["cell"], c["ratio"]) for c in cells] == [
        (ids[0], 0.5), (ids[1], 0.9), (ids[3], 0.6)]
    assert negotiated == {"split-mrg1-ord1": {"dpdk": "0x3"}}
    assert history == [{"command": old["command"], "date": "d0", "commit": "c0",
                        "cells": [ids[0], ids[3]]}]


def test_usage_errors_name_the_bad_value(tmp_path):
    for args, word in ((["--cells", "nosuch-*"], "'nosuch-*' names no cell"),
                       (["--seconds", "0.1"], "--seconds 0.1"),
                       (["--merge", "--out", str(tmp_path)], "--merge: no ")):
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and word in proc.stderr, (args, proc.stderr)

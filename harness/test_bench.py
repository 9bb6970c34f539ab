"""`vhostlab bench` (docs/cli.md): help, usage errors naming the bad value, a --quick --json
run whose numbers are sane and whose allocation counts follow --fill, the instruction
counts' determinism, and the CI gate (scripts/perf_gate.py) failing on a doctored baseline.
What measures runs `vhostlab-fast bench` (the production program, fixture vhostlab_fast):
`vhostlab bench` runs on the lab build of the core and is checked for naming it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from script_import import import_script

GATE = REPO_ROOT / "scripts" / "perf_gate.py"

BENCH_OPTIONS = [
    "--direction", "--layout", "--sizes", "--mergeable", "--in-order", "--batch",
    "--zero-copy", "--alloc", "--fill", "--csum", "--pieces", "--indirect", "--regions", "--burst",
    "--queue-size", "--reps", "--seconds",
    "--packets", "--quick", "--instructions", "--profile", "--json", "--quiet", "--threads",
]


def sanitizer_build(binary: Path) -> bool:
    """valgrind cannot run a sanitizer build: the instruction tests skip there."""
    cache = binary.resolve().parent.parent / "CMakeCache.txt"
    try:
        text = cache.read_text(errors="replace")
    except OSError:
        return False
    return "CMAKE_BUILD_TYPE:STRING=Asan" in text


def test_bench_help_mentions_every_option(vhostlab):
    res = vhostlab("bench", "--help")
    assert res.returncode == 0, res.describe()
    missing = [o for o in BENCH_OPTIONS if o not in res.stdout]
    assert not missing, f"bench --help does not mention {missing}\n{res.describe()}"


@pytest.mark.parametrize(
    "args, named",
    [
        (["--sizes", "0"], "--sizes: 0 "),
        (["--sizes", "64,abc"], "'abc'"),
        (["--sizes", "9217"], "9217"),
        (["--layout", "foo"], "'foo'"),
        (["--direction", "sideways"], "'sideways'"),
        (["--batch", "-1"], "'-1'"),
        (["--fill", "half"], "'half'"),
        (["--csum", "maybe"], "'maybe'"),
        (["--pieces", "0"], "--pieces: 0 "),
        (["--pieces", "9"], "9"),
        (["--pieces", "4", "--sizes", "3"], "smallest of --sizes, 3"),
        (["--pieces", "8", "--burst", "64"], "--queue-size 256"),
        (["--pieces", "8", "--burst", "64", "--indirect", "on,off"], "--queue-size 256"),
        (["--indirect", "maybe"], "'maybe'"),
        (["--regions", "0"], "--regions: 0 "),
        (["--regions", "509"], "509"),
        (["--regions", "1,2", "--indirect", "on"], "--regions 2 with --indirect on"),
        (["--alloc", "lazy"], "'lazy'"),
        (["--threads", "0"], "--threads"),
        (["--threads", "17"], "17"),
        (["--reps", "0"], "--reps"),
        (["--seconds", "0"], "'0'"),
        (["--zero-copy", "on", "--direction", "enqueue"], "enqueue"),
        (["--zero-copy", "on"], "enqueue"),
        (["--zero-copy", "on", "--direction", "both"], "both"),
        (["--burst", "64", "--queue-size", "32"], "--queue-size 32"),
        (["--queue-size", "100"], "100"),
        (["--sizes", "64,64"], "twice"),
        (["--frobnicate"], "--frobnicate"),
        (["--profile", ""], "--profile needs a directory"),
        (["--profile", "/proc/version"], "'/proc/version': not a directory"),
        (["--profile", "/nonexistent-vhostlab/prof"],
         "'/nonexistent-vhostlab/prof': cannot create"),
    ],
)
def test_bench_usage_errors_name_the_value(vhostlab, args, named):
    res = vhostlab("bench", *args)
    assert res.returncode == 2, res.describe()
    assert named in res.stderr, res.describe()
    assert res.stdout == "", res.describe()


def test_bench_quick_json_is_sane(vhostlab_fast):
    res = vhostlab_fast("bench", "--quick", "--json", "--quiet", "--reps", "3",
                        "--direction", "dequeue,enqueue,both", "--sizes", "64,1518",
                        "--mergeable", "on,off", timeout=60)
    assert res.returncode == 0, res.describe()
    doc = res.json()
    # The production program measures the production core (vhostlab's bench, the lab one:
    # test_cli.py test_lab_serve_and_bench_name_their_core).
    assert doc["core"] == "production"
    # The build variant, as --version names it (the Release build the suite runs: default).
    assert f"build: {doc['build']})" in vhostlab_fast("--version").stdout
    assert doc["reps"] == 3 and doc["packets_per_rep"] == 20000
    assert isinstance(doc["cpu"], str) and doc["cpu"]
    assert len(doc["cells"]) == 3 * 2 * 2 * 2
    names = {c["name"] for c in doc["cells"]}
    assert len(names) == len(doc["cells"])
    for c in doc["cells"]:
        where = json.dumps(c)[:300]
        for key in ("mpps", "ns_per_pkt", "ns_per_call"):
            m = c[key]
            assert m["min"] <= m["median"] <= m["max"], f"{key}: {where}"
        assert c["mpps"]["min"] > 0, where
        assert c["ns_per_pkt"]["min"] > 0, where
        assert c["driver_ns_per_pkt"] > 0, where
        assert c["packets_per_rep"] >= 20000, where
        assert c["calls_per_rep"] > 0, where
        assert len(c["reps"]) == 3, where
        assert c["checked_bytes"] > 0, where
        if c["direction"] == "enqueue":
            assert c["alloc_calls_per_call"] == 0, where
        else:
            # A full burst available: one bulk allocation per call, a burst's worth.
            assert c["alloc_calls_per_call"] == pytest.approx(1.0, abs=0.01), where
            assert 31 <= c["alloc_bufs_per_call"] <= 32, where


def test_bench_fill_drives_allocations(vhostlab_fast):
    """Technique 4: with nothing available, AVAILABLE allocates nothing, BURST a burst."""
    res = vhostlab_fast("bench", "--json", "--quiet", "--reps", "1", "--packets", "3200",
                        "--direction", "dequeue", "--layout", "split,packed", "--sizes", "64",
                        "--alloc", "available,burst", "--fill", "full,one,empty")
    assert res.returncode == 0, res.describe()
    cells = res.json()["cells"]
    assert len(cells) == 2 * 2 * 3
    for c in cells:
        where = c["name"]
        per_call, bufs = c["alloc_calls_per_call"], c["alloc_bufs_per_call"]
        if c["fill"] == "empty":
            assert c["mpps"]["median"] == 0 and c["ns_per_pkt"] is None, where
            assert c["ns_per_call"]["median"] > 0, where
            assert c["calls_per_rep"] == 100, where
            if c["alloc"] == "available":
                assert per_call == 0 and bufs == 0, where
            else:
                assert per_call == pytest.approx(1.0) and bufs == pytest.approx(32), where
        elif c["fill"] == "one":
            assert c["packets_per_rep"] == c["calls_per_rep"], where
            expect = 1 if c["alloc"] == "available" else 32
            assert bufs == pytest.approx(expect), where
        else:
            assert bufs == pytest.approx(32, abs=1), where


def test_bench_zero_copy_dequeues_without_copying(vhostlab_fast):
    res = vhostlab_fast("bench", "--json", "--quiet", "--reps", "1", "--packets", "5000",
                        "--direction", "dequeue", "--sizes", "1518", "--zero-copy", "on,off",
                        "--in-order", "on,off")
    assert res.returncode == 0, res.describe()
    for c in res.json()["cells"]:
        if c["zero_copy"]:
            assert c["zc_packets"] >= 5000, c["name"]
        else:
            assert c["zc_packets"] == 0, c["name"]


def test_bench_pieces_are_zero_copied_as_segments(vhostlab_fast):
    """--pieces 2: every TX chain is two descriptors (header and half the payload, then the
    rest). With zero-copy every packet is still dequeued without copying (two segments, one
    segment allocation per packet besides the burst's heads); without it nothing is, and the
    cells are named apart from the one-piece ones."""
    res = vhostlab_fast("bench", "--json", "--quiet", "--reps", "1", "--packets", "5000",
                        "--direction", "dequeue", "--sizes", "1518", "--zero-copy", "on,off",
                        "--pieces", "1,2")
    assert res.returncode == 0, res.describe()
    cells = {(c["layout"], c["zero_copy"], c["pieces"]): c for c in res.json()["cells"]}
    assert len(cells) == 8
    for (layout, zc, pieces), c in cells.items():
        assert c["name"].endswith("/pieces=2") == (pieces == 2), c["name"]
        assert c["zc_packets"] == (c["packets_per_rep"] if zc else 0), c
        # One bulk allocation of heads per call, plus one of segments per two-piece
        # zero-copy packet.
        per_call = c["alloc_calls_per_call"]
        if zc and pieces == 2:
            assert per_call == pytest.approx(33.0, abs=0.5), c
        else:
            assert per_call == pytest.approx(1.0, abs=0.05), c


def test_bench_indirect_tables(vhostlab_fast):
    """--indirect on: each TX chain is one INDIRECT ring descriptor pointing at a table of its
    pieces. Every packet still arrives whole (bench checks count, lengths, sequence numbers
    and sampled bytes, and fails otherwise), the cells are named apart, zero-copy still takes
    every packet, and a ring of 256 takes bursts of 64 eight-piece chains (a descriptor each)."""
    res = vhostlab_fast("bench", "--json", "--quiet", "--reps", "1", "--packets", "5000",
                        "--direction", "dequeue", "--sizes", "1518", "--zero-copy", "on,off",
                        "--pieces", "1,3", "--indirect", "on,off")
    assert res.returncode == 0, res.describe()
    cells = {(c["layout"], c["zero_copy"], c["pieces"], c["indirect"]): c
             for c in res.json()["cells"]}
    assert len(cells) == 16, sorted(cells)
    for (layout, zc, pieces, indirect), c in cells.items():
        assert c["name"].endswith("/indirect=on") == indirect, c["name"]
        assert c["packets_per_rep"] >= 5000, c
        assert c["zc_packets"] == (c["packets_per_rep"] if zc else 0), c
    res = vhostlab_fast("bench", "--json", "--quiet", "--reps", "1", "--packets", "2000",
                        "--direction", "dequeue", "--sizes", "64", "--pieces", "8", "--burst", "64",
                        "--indirect", "on")
    assert res.returncode == 0, res.describe()
    assert all(c["packets_per_rep"] >= 2000 for c in res.json()["cells"]), res.stdout


def test_bench_regions_spread_the_buffers(vhostlab_fast):
    """--regions N: the guest's buffers spread over N RAM regions, consecutive buffers in
    different ones, each buffer whole inside one. Every packet still arrives whole in both
    directions (bench checks them), zero-copy still takes every packet (no buffer straddles
    a region), and the cells are named apart."""
    res = vhostlab_fast("bench", "--json", "--quiet", "--reps", "1", "--packets", "5000",
                        "--sizes", "64,1518", "--regions", "1,508")
    assert res.returncode == 0, res.describe()
    cells = res.json()["cells"]
    assert len(cells) == 16
    for c in cells:
        assert c["name"].endswith("/regions=508") == (c["regions"] == 508), c["name"]
        assert c["packets_per_rep"] >= 5000, c
    res = vhostlab_fast("bench", "--json", "--quiet", "--reps", "1", "--packets", "5000",
                        "--direction", "dequeue", "--sizes", "1518", "--zero-copy", "on",
                        "--regions", "508")
    assert res.returncode == 0, res.describe()
    assert all(c["zc_packets"] == c["packets_per_rep"] for c in res.json()["cells"]), res.stdout


def test_bench_regions_cost_a_table_search(vhostlab_fast):
    """With two regions every buffer misses the translation cursor's last range (they
    alternate), so a packet costs more instructions than with one; with 508 the search is
    deeper still, but only logarithmically (a binary search: 9 steps instead of 1), so
    the step from 2 to 508 regions costs less than the step from 1 to 2 twice over."""
    if sanitizer_build(vhostlab_fast.path):
        pytest.skip("valgrind cannot run a sanitizer build")
    res = vhostlab_fast("bench", "--json", "--quiet", "--instructions", "--reps", "1",
                        "--packets", "4000", "--direction", "dequeue", "--layout", "split",
                        "--sizes", "64", "--regions", "1,2,508")
    assert res.returncode == 0, res.describe()
    ipp = {c["regions"]: c["instr_per_pkt"] for c in res.json()["cells"]}
    assert ipp[1] < ipp[2] < ipp[508], ipp
    assert ipp[508] - ipp[2] < 2 * (ipp[2] - ipp[1]) + 100, ipp


def test_bench_csum_reads_the_tx_header(vhostlab_fast):
    """With VIRTIO_NET_F_CSUM negotiated dequeue reads and checks each TX header, which costs
    instructions; enqueue reads no header, so --csum makes no second enqueue cell."""
    res = vhostlab_fast("bench", "--json", "--quiet", "--instructions", "--reps", "1",
                        "--packets", "5000", "--direction", "dequeue,enqueue", "--layout", "packed",
                        "--sizes", "64", "--csum", "off,on")
    assert res.returncode == 0, res.describe()
    cells = {c["name"]: c for c in res.json()["cells"]}
    base = "packed/64/mrg=off/io=off/batch=256/zc=off/alloc=available/fill=full"
    assert sorted(cells) == sorted([f"dequeue/{base}", f"dequeue/{base}/csum=on",
                                    f"enqueue/{base}"]), sorted(cells)
    off, on = cells[f"dequeue/{base}"], cells[f"dequeue/{base}/csum=on"]
    assert off["csum"] is False and on["csum"] is True
    assert on["instr_per_pkt"] > off["instr_per_pkt"], (on["instr_per_pkt"], off["instr_per_pkt"])


def test_bench_table_names_the_core(vhostlab, vhostlab_fast):
    for prog, core in ((vhostlab, "lab-hooks"), (vhostlab_fast, "production")):
        res = prog("bench", "--quiet", "--reps", "1", "--packets", "2000", "--sizes", "64")
        assert res.returncode == 0, res.describe()
        assert f"core: {core} " in res.stdout, res.describe()
        assert "Mpps" in res.stdout and "ns/pkt" in res.stdout
        assert "dequeue/split/64/" in res.stdout and "enqueue/packed/64/" in res.stdout


def instr_cell(prog, *extra):
    res = prog("bench", "--instructions", "--json", "--quiet", "--reps", "1",
               "--packets", "4000", "--direction", "dequeue", "--layout", "packed",
               "--sizes", "256", *extra, timeout=120)
    assert res.returncode == 0, res.describe()
    return res.json()["cells"]


def test_bench_instructions_are_deterministic(vhostlab_fast):
    if sanitizer_build(vhostlab_fast.path):
        pytest.skip("valgrind cannot run a sanitizer build")
    first = instr_cell(vhostlab_fast)
    second = instr_cell(vhostlab_fast)
    assert len(first) == len(second) == 1
    a, b = first[0], second[0]
    assert a["instr_packets"] == b["instr_packets"] >= 4000
    assert a["instr_per_pkt"] > 50, a
    # Callgrind counts the same instructions on the same input: identical, not just close.
    assert abs(a["instr_total"] - b["instr_total"]) <= a["instr_total"] * 0.001, (a, b)


def test_bench_profile_keeps_what_callgrind_counted(vhostlab_fast, tmp_path):
    """--profile DIR: one callgrind file per cell, named after it, whose total is the JSON's
    instr_total, and that callgrind_annotate splits into the core's functions."""
    if sanitizer_build(vhostlab_fast.path):
        pytest.skip("valgrind cannot run a sanitizer build")
    out = tmp_path / "prof"  # missing: bench makes it
    res = vhostlab_fast("bench", "--json", "--reps", "1", "--packets", "3000", "--layout", "split",
                        "--sizes", "64", "--direction", "dequeue,enqueue", "--profile", str(out),
                        timeout=120)
    assert res.returncode == 0, res.describe()
    doc = res.json()
    assert doc["instructions"] is True
    cells = doc["cells"]
    assert len(cells) == 2
    want = sorted(c["name"].replace("/", "_") + ".callgrind" for c in cells)
    assert sorted(p.name for p in out.iterdir()) == want
    for c in cells:
        path = Path(c["profile"])
        assert path.parent == out and path.name == c["name"].replace("/", "_") + ".callgrind"
        assert f"vhostlab bench: kept {path}" in res.stderr, res.describe()
        m = re.search(r"^(?:summary|totals): (\d+)$", path.read_text(), re.M)
        assert m and int(m.group(1)) == c["instr_total"], (c, m)
        # Inclusive costs: the entry point holds nearly all of the burst's instructions even
        # where it is a thin dispatcher to bodies of its own (vl_net_enqueue's
        # enqueue_split, whose self cost alone tops the exclusive listing).
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(path)],
                             capture_output=True, text=True, check=False, timeout=60)
        assert ann.returncode == 0, ann.stderr
        entry = "vl_net_dequeue" if c["direction"] == "dequeue" else "vl_net_enqueue"
        line = next((ln for ln in ann.stdout.splitlines() if f":{entry} " in ln), None)
        assert line, ann.stdout[:2000]
        pct = float(re.search(r"\(\s*([\d.]+)%\)", line).group(1))
        assert pct > 50, line


def gate(*args):
    return subprocess.run([sys.executable, str(GATE), *args], capture_output=True, text=True,
                          check=False, timeout=300)


def test_perf_gate_fails_on_a_doctored_baseline(vhostlab_fast, tmp_path):
    """The gate itself can fail: a baseline 10 % below what is measured names the cell."""
    if sanitizer_build(vhostlab_fast.path):
        pytest.skip("valgrind cannot run a sanitizer build")
    cells = instr_cell(vhostlab_fast, "--zero-copy", "on,off")
    measured = tmp_path / "measured.json"
    measured.write_text(json.dumps({"core": "production", "cells": cells}))
    exact = {c["name"]: c["instr_per_pkt"] for c in cells}

    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"tolerance_pct": 3.0, "cells": exact}))
    ok = gate("--measured", str(measured), "--baseline", str(baseline))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASS" in ok.stdout

    victim = cells[0]["name"]
    doctored = dict(exact, **{victim: exact[victim] * 0.9})
    baseline.write_text(json.dumps({"tolerance_pct": 3.0, "cells": doctored}))
    bad = gate("--measured", str(measured), "--baseline", str(baseline))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert f"REGRESSION {victim}" in bad.stdout, bad.stdout
    assert "FAIL" in bad.stdout
    other = cells[1]["name"]
    assert f"REGRESSION {other}" not in bad.stdout

    # An improvement beyond the tolerance is reported, not failed.
    better = dict(exact, **{victim: exact[victim] * 1.1})
    baseline.write_text(json.dumps({"tolerance_pct": 3.0, "cells": better}))
    imp = gate("--measured", str(measured), "--baseline", str(baseline))
    assert imp.returncode == 0, imp.stdout + imp.stderr
    assert "improved" in imp.stdout and "--update" in imp.stdout

    # A cell without a baseline fails too (the set of cells changed: update on purpose).
    baseline.write_text(json.dumps({"tolerance_pct": 3.0, "cells": {other: exact[other]}}))
    missing = gate("--measured", str(measured), "--baseline", str(baseline))
    assert missing.returncode == 1 and "no baseline" in missing.stdout


def test_perf_gate_runs_the_production_program(vhostlab):
    """The gate's counts are the production core's: given the lab program (as ./lab once
    passed it), it measures the vhostlab-fast beside it; vhostlab-fast it takes as is."""
    perf_gate = import_script("perf_gate")
    fast = os.path.join(os.path.dirname(str(vhostlab.path)), "vhostlab-fast")
    assert perf_gate.fast_program(str(vhostlab.path)) == fast
    assert perf_gate.fast_program(fast) == fast


def test_perf_gate_names_a_bad_input_file(tmp_path):
    """A measurement or baseline that is missing, not JSON or of the wrong shape: exit 2 (1
    for a missing baseline, as for a regression) with the file named, no traceback."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"core": "production", "cells": []}))
    junk = tmp_path / "junk.json"
    junk.write_text("not json\n")
    shapeless = tmp_path / "shapeless.json"
    shapeless.write_text(json.dumps({"cells": 3}))
    missing = tmp_path / "missing.json"
    cases = [
        (["--measured", str(junk), "--baseline", str(good)], 2, f"{junk} is not JSON"),
        (["--measured", str(missing)], 2, f"cannot read the measurement {missing}"),
        (["--measured", str(shapeless)], 2, f"{shapeless} has no \"cells\" list"),
        (["--measured", str(good), "--baseline", str(junk)], 2, f"{junk} is not JSON"),
        (["--measured", str(good), "--baseline", str(good)], 1,
         f"{good} has no \"cells\" object"),
        (["--measured", str(good), "--baseline", str(missing)], 1,
         f"cannot read the baseline {missing}"),
    ]
    for args, status, message in cases:
        r = gate(*args)
        assert r.returncode == status, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr, r.stderr


def test_bench_threads_each_move_their_own_guest(vhostlab_fast):
    """--threads 2: two guests at once, each moving --packets, every one checked; the counts
    are summed and each thread's rate is reported."""
    res = vhostlab_fast("bench", "--threads", "2", "--json", "--quiet", "--reps", "2",
                        "--packets", "20000", "--direction", "dequeue,enqueue,both",
                        "--layout", "split,packed", "--sizes", "64", timeout=120)
    assert res.returncode == 0, res.describe()
    doc = res.json()
    assert doc["threads"] == 2
    for c in doc["cells"]:
        where = json.dumps(c)[:300]
        assert c["packets_per_rep"] >= 2 * 20000, where
        assert len(c["thread_wall_mpps"]) == 2 and min(c["thread_wall_mpps"]) > 0, where
        w = c["wall_mpps"]
        assert 0 < w["min"] <= w["median"] <= w["max"], where
        assert c["checked_bytes"] > 0, where
        for r in c["reps"]:
            assert r["wall_ns"] > 0 and r["core_ns"] > 0, where


def test_bench_threads_cost_the_same_instructions_per_packet(vhostlab_fast):
    """Threads share nothing of the datapath: callgrind counts every thread, and two cost
    the core what one does per packet, for twice the packets."""
    if sanitizer_build(vhostlab_fast.path):
        pytest.skip("valgrind cannot run a sanitizer build")
    one = instr_cell(vhostlab_fast)
    two = instr_cell(vhostlab_fast, "--threads", "2")
    assert two[0]["instr_packets"] == 2 * one[0]["instr_packets"], (one, two)
    assert two[0]["instr_per_pkt"] == pytest.approx(one[0]["instr_per_pkt"], rel=0.02)


def test_perf_gate_holds_a_thread_cell_to_its_one_thread_twin(tmp_path):
    """A "/threads=N" cell more than 2 % from the same cell on one thread fails the gate,
    even within its own baseline's tolerance."""
    name = "both/split/64/mrg=on/io=off/batch=256/zc=off/alloc=available/fill=full"
    cells = [{"name": name, "instr_per_pkt": 400.0},
             {"name": name + "/threads=2", "instr_per_pkt": 410.0}]
    measured = tmp_path / "measured.json"
    measured.write_text(json.dumps({"core": "production", "cells": cells}))
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"tolerance_pct": 3.0, "cells": {
        name: 400.0, name + "/threads=2": 400.0}}))
    bad = gate("--measured", str(measured), "--baseline", str(baseline))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "more than 2 % apart" in bad.stdout, bad.stdout
    cells[1]["instr_per_pkt"] = 404.0
    measured.write_text(json.dumps({"core": "production", "cells": cells}))
    ok = gate("--measured", str(measured), "--baseline", str(baseline))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 threads: 404.00 instructions/packet against 400.00 on one" in ok.stdout


def test_thread_scaling_measures_both_thread_counts(vhostlab_fast, tmp_path):
    """scripts/thread_scaling.py: packets per second of 1 and 2 threads, interleaved, and
    instructions per packet of both, which must agree (the wall-clock ratio is only
    reported: this machine may be busy)."""
    if sanitizer_build(vhostlab_fast.path):
        pytest.skip("valgrind cannot run a sanitizer build")
    out = tmp_path / "scaling.json"
    res = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "thread_scaling.py"),
                          "--bin", str(vhostlab_fast.path), "--rounds", "2", "--seconds",
                          "0.05", "--json", str(out), "--", "--direction", "dequeue",
                          "--layout", "split", "--sizes", "64"],
                         capture_output=True, text=True, check=False, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    (cell,) = doc["cells"]
    assert cell["cell"].startswith("dequeue/split/64/")
    assert cell["mpps_1"]["min"] > 0 and cell["mpps_2"]["min"] > 0, cell
    assert cell["ratio_of_medians"] > 0 and cell["round_ratios"]["min"] > 0, cell
    assert cell["instr_per_pkt_2"] == pytest.approx(cell["instr_per_pkt_1"], rel=0.02), cell
    assert cell["instr_goal_met"] is True, cell
    assert "instructions/packet within 2 %: met" in res.stdout, res.stdout


def test_committed_baseline_covers_the_gate_cells():
    base = json.loads((REPO_ROOT / "reports" / "baseline" / "instructions.json").read_text())
    assert base["build_type"] == "Release" and base["compiler"]
    assert len(base["cells"]) >= 8
    assert all(v > 0 for v in base["cells"].values())
    assert os.access(GATE, os.X_OK)

"""scripts/seed_claims.py (reports/seed-claims.md): the verdict rules on constructed ratios
(reproduced and not reproduced, each way), the pairing of A and B cells on a fake bench
output and on fake builds, the line count, and a --quick run end to end against the binary
under test (the no-inline, LTO and two-path builds are not built here: their rows must say
so)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "seed_claims.py"
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from seedclaims import claims as C  # noqa: E402
from seedclaims import evaluate, report  # noqa: E402
import seed_claims  # noqa: E402  (the script itself, for commit())
from seedclaims.verdict import (GAIN, LOSS, NONE, NOT_REPRODUCED,  # noqa: E402
                                NOT_SLOWER, NOT_TESTED, REPORT, REPORT_ONLY, REPRODUCED,
                                Ratio, Stat,
                                geomean_ratio, least_on_side, pairs_beyond_noise,
                                sign_test_p,
                                speed_ratio_from_times, verdict)

CLAIM_IDS = ["1a", "1b", "1c", "1d", "2a", "2b", "2c", "3a", "3b", "3c", "3d", "4a", "4b",
             "4c", "5a", "5b"]


def test_speed_ratio_from_times():
    # B takes 80 ns where A takes 100: 1.25 times as fast; the range pairs the extremes.
    r = speed_ratio_from_times(Stat(100, 90, 110), Stat(80, 75, 85), 500, 400)
    assert r.median == pytest.approx(1.25)
    assert r.lo == pytest.approx(90 / 85)
    assert r.hi == pytest.approx(110 / 75)
    assert r.instr == pytest.approx(1.25)
    with pytest.raises(ValueError):
        speed_ratio_from_times(Stat(0, 0, 0), Stat(1, 1, 1))


def test_paired_ratios():
    # Repetition i of A against repetition i of B (the same round).
    r = speed_ratio_from_times(Stat(100, 90, 200), Stat(80, 70, 150),
                               reps_a=[100, 200, 90, 95, 105], reps_b=[80, 150, 70, 75, 85])
    assert r.paired == pytest.approx([1.25, 200 / 150, 90 / 70, 95 / 75, 105 / 85])
    assert r.paired_above() == 5
    # One preempted repetition (200 ns) makes the ranges overlap; the pairs still agree.
    assert r.lo < 1.0
    v, reason = verdict(GAIN, r)
    assert v == REPRODUCED and "5/5 pairs faster" in reason
    # Too few pairs for the sign test: the ranges decide.
    r3 = speed_ratio_from_times(Stat(100, 90, 200), Stat(80, 70, 150),
                                reps_a=[100, 200, 90], reps_b=[80, 150, 70])
    assert verdict(GAIN, r3)[0] == NOT_REPRODUCED
    # One pair the other way: not every pair agrees, and the ranges overlap.
    r4 = speed_ratio_from_times(Stat(100, 90, 200), Stat(80, 70, 150),
                                reps_a=[100, 200, 90, 95, 60], reps_b=[80, 150, 70, 75, 85])
    v, reason = verdict(GAIN, r4)
    assert v == NOT_REPRODUCED and "only 4 of 5 pairs" in reason
    assert "chance 0.19" in reason  # (5 + 1) / 32


def _nine_pairs(faster):
    """A 10 % gain in every round but the first 9 - faster, where B ran 10 % slower; one
    slow repetition of A (200 ns) makes the min/max ranges overlap."""
    reps_a = [100.0] * 9
    reps_a[-1] = 200.0
    reps_b = [110.0 if i < 9 - faster else 100 / 1.1 for i in range(9)]
    reps_b[-1] = 100 / 1.1
    a = Stat(sorted(reps_a)[4], min(reps_a), max(reps_a))
    b = Stat(sorted(reps_b)[4], min(reps_b), max(reps_b))
    return speed_ratio_from_times(a, b, reps_a=reps_a, reps_b=reps_b)


def test_sign_test():
    assert sign_test_p(5, 5) == pytest.approx(1 / 32)
    assert sign_test_p(8, 9) == pytest.approx(10 / 512)
    assert sign_test_p(7, 9) == pytest.approx(46 / 512)
    assert sign_test_p(0, 4) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        sign_test_p(6, 5)
    # The smallest count on one side that passes at SIGN_ALPHA, for 5..9 pairs.
    least = {n: min(k for k in range(n + 1) if pairs_beyond_noise(k, n)) for n in range(5, 10)}
    assert least == {5: 5, 6: 6, 7: 7, 8: 7, 9: 8}
    assert all(least_on_side(n) == k for n, k in least.items()) and least_on_side(4) is None
    # The report prints the same counts.
    assert report.least_counts() == "5 of 5, 6 of 6, 7 of 7, 7 of 8, 8 of 9"
    assert not any(pairs_beyond_noise(k, 4) for k in range(5))  # under MIN_PAIRS
    # Nine rounds with the ranges overlapping: 8 faster passes, 7 does not.
    r8, r7 = _nine_pairs(8), _nine_pairs(7)
    assert r8.lo < 1.0 and r7.lo < 1.0 and r8.median > 1.02 and r7.median > 1.02
    assert verdict(GAIN, r8)[0] == REPRODUCED
    v, reason = verdict(GAIN, r7)
    assert v == NOT_REPRODUCED and "only 7 of 9 pairs" in reason and "chance 0.09" in reason
    # The mirror image for an expected loss: B the baseline, A the technique.
    loss8 = Ratio(1 / r8.median, 1 / r8.hi, 1 / r8.lo, paired=[1 / p for p in r8.paired])
    assert verdict(LOSS, loss8)[0] == REPRODUCED


def test_geomean():
    g = geomean_ratio([Ratio(2.0, 1.0, 4.0, 2.0, [2.0, 4.0]),
                       Ratio(0.5, 0.25, 1.0, 0.5, [2.0, 1.0])])
    assert (g.median, g.lo, g.hi, g.instr) == pytest.approx((1.0, 0.5, 2.0, 1.0))
    assert g.paired == pytest.approx([2.0, 2.0])


@pytest.mark.parametrize("expect,ratio,want,why", [
    (GAIN, Ratio(1.20, 1.10, 1.30), REPRODUCED, ""),
    (GAIN, Ratio(1.20, 0.95, 1.30), NOT_REPRODUCED, "ranges overlap"),   # noise
    (GAIN, Ratio(0.90, 0.85, 0.95), NOT_REPRODUCED, "the opposite"),      # other way
    (GAIN, Ratio(0.98, 0.90, 1.05), NOT_REPRODUCED, "within the noise"),
    (GAIN, Ratio(1.01, 1.005, 1.02), NOT_REPRODUCED, "too small"),        # below 2 %
    (LOSS, Ratio(0.80, 0.75, 0.90), REPRODUCED, ""),
    (LOSS, Ratio(1.10, 1.05, 1.20), NOT_REPRODUCED, "the opposite"),
    (NONE, Ratio(1.03, 0.90, 1.10), REPRODUCED, "within"),
    (NONE, Ratio(0.90, 0.85, 0.95), NOT_REPRODUCED, "a loss beyond"),
    (REPORT, Ratio(1.50, 1.40, 1.60), REPORT_ONLY, "no published figure"),
    (NOT_SLOWER, Ratio(1.05, 1.01, 1.10), REPRODUCED, "not slower"),
    (NOT_SLOWER, Ratio(0.985, 0.95, 1.02), REPRODUCED, "not slower"),     # under 2 % off
    (NOT_SLOWER, Ratio(0.96, 0.90, 1.03), REPRODUCED, "within the noise"),
    (NOT_SLOWER, Ratio(0.96, 0.93, 0.99), NOT_REPRODUCED, "slower"),       # every rep
    (NOT_SLOWER, Ratio(0.90, 0.80, 1.05), NOT_REPRODUCED, "slower"),       # over 5 % off
])
def test_verdict_rules(expect, ratio, want, why):
    v, reason = verdict(expect, ratio)
    assert v == want, reason
    assert why in reason
    assert f"{(ratio.median - 1) * 100:+.1f} %" in reason


# A published figure: beyond the noise is not enough, half of its effect must be measured.
@pytest.mark.parametrize("expect,ratio,published,want,why", [
    (GAIN, Ratio(1.04, 1.02, 1.06), 1.21, NOT_REPRODUCED, "the direction, not the size"),
    (GAIN, Ratio(1.10, 1.05, 1.15), 1.21, NOT_REPRODUCED, "published +21 % (under 50 %"),
    (GAIN, Ratio(1.11, 1.05, 1.15), 1.21, REPRODUCED, ""),       # just over half of +21 %
    (GAIN, Ratio(2.60, 2.40, 2.70), 1.50, REPRODUCED, ""),       # more than published
    (LOSS, Ratio(0.95, 0.90, 0.98), 0.85, NOT_REPRODUCED, "published -15 %"),
    (LOSS, Ratio(0.92, 0.90, 0.95), 0.85, REPRODUCED, ""),       # -8 % of -15 %
    (LOSS, Ratio(0.80, 0.70, 0.90), 0.70, REPRODUCED, ""),
    (GAIN, Ratio(1.04, 0.95, 1.10), 1.21, NOT_REPRODUCED, "ranges overlap"),  # noise first
    (NONE, Ratio(1.03, 0.90, 1.10), 1.00, REPRODUCED, "within"),
])
def test_verdict_published_size(expect, ratio, published, want, why):
    v, reason = verdict(expect, ratio, published)
    assert v == want, reason
    assert why in reason
    assert f"{(ratio.median - 1) * 100:+.1f} %" in reason


def _cell(**kw):
    c = {"direction": "both", "layout": "split", "size": 64, "mergeable": False,
         "in_order": False, "batch": 0, "zero_copy": False, "alloc": "available",
         "fill": "full"}
    ns = kw.pop("ns")
    c.update(kw)
    c["name"] = f"{c['layout']}/{c['size']}/batch={c['batch']}"
    c["ns_per_pkt"] = {"median": ns, "min": ns * 0.99, "max": ns * 1.01}
    c["instr_per_pkt"] = 500.0
    return c


def test_claim_rows_pair_cells_and_explain():
    claim = next(c for c in C.CLAIMS if c.id == "1a")
    cells = [_cell(batch=0, ns=40.0), _cell(batch=256, ns=30.0),          # a clear gain
             _cell(layout="packed", batch=0, ns=40.0),
             _cell(layout="packed", batch=256, ns=44.0),                   # a clear loss
             _cell(size=1518, batch=0, ns=90.0), _cell(size=1518, batch=256, ns=90.0)]
    rows = {r["label"]: r for r in evaluate.claim_rows(claim, cells)}
    assert set(rows) == {"split", "packed"}  # the 1518-byte cells are not this claim's
    assert rows["split"]["verdict"] == REPRODUCED
    assert rows["split"]["ratio"]["median"] == pytest.approx(40 / 30)
    assert rows["packed"]["verdict"] == NOT_REPRODUCED
    assert "the opposite" in rows["packed"]["reason"]
    assert "Likely why" in rows["packed"]["reason"]  # the claim's hint is quoted


def test_claim_rows_judge_against_the_published_figure():
    # 1a publishes +21 %: a clear +3.9 % (the ranges apart) shows the direction only.
    claim = next(c for c in C.CLAIMS if c.id == "1a")
    cells = [_cell(batch=0, ns=40.0), _cell(batch=256, ns=38.5)]
    (row,) = evaluate.claim_rows(claim, cells)
    assert row["ratio"]["lo"] > 1.0
    assert row["verdict"] == NOT_REPRODUCED
    assert "the direction, not the size" in row["reason"] and "+21 %" in row["reason"]
    assert "Likely why" in row["reason"]


def test_claim_rows_missing_cells():
    claim = next(c for c in C.CLAIMS if c.id == "3a")
    rows = evaluate.claim_rows(claim, [_cell(batch=0, ns=1.0)])
    assert [r["verdict"] for r in rows] == [NOT_TESTED]


def test_not_slower_pairs():
    # Every one of 5 pairs slower: beyond the noise, even with the ranges overlapping.
    r = Ratio(0.96, 0.90, 1.02, paired=[0.95, 0.97, 0.96, 0.94, 0.98])
    assert verdict(NOT_SLOWER, r)[0] == NOT_REPRODUCED
    r.paired[0] = 1.01
    assert verdict(NOT_SLOWER, r)[0] == REPRODUCED


def test_build_rows_where_and_control():
    # Claim 2a: the default build (B) against the two-path one (A), enqueue cells only; the
    # dequeue cells (the same code in both) are the control.
    claim = next(c for c in C.BUILD_CLAIMS if c.id == "2a")
    per_build = {
        "twopath": [_cell(direction="enqueue", ns=40.0), _cell(direction="enqueue",
                                                               size=1518, ns=100.0),
                    _cell(direction="enqueue", mergeable=True, ns=50.0),
                    _cell(direction="dequeue", ns=30.0)],
        "default": [_cell(direction="enqueue", ns=38.0), _cell(direction="enqueue",
                                                               size=1518, ns=100.0),
                    _cell(direction="enqueue", mergeable=True, ns=10.0),
                    _cell(direction="dequeue", ns=33.0)],
    }
    row, details = evaluate.build_rows(claim, per_build)
    assert [d["label"] for d in details] == ["64 B", "1518 B"]  # not mergeable, not dequeue
    assert details[0]["ratio"]["median"] == pytest.approx(40 / 38)
    assert row["ratio"]["median"] == pytest.approx((40 / 38 * 1.0) ** 0.5)
    assert row["label"].startswith("geometric mean of 2 enqueue, mergeable=off cells")
    assert row["verdict"] == REPRODUCED
    assert "Control, the dequeue cells" in row["reason"]
    assert f"x{30 / 33:.3f} over 1 cells" in row["reason"]
    # A build not measured: the row says which.
    row, details = evaluate.build_rows(claim, {"default": per_build["default"]})
    assert row["verdict"] == NOT_TESTED and "'twopath' not measured" in row["reason"]
    assert details == []


def test_line_count(tmp_path):
    f = tmp_path / "x.c"
    f.write_text("/* a\n * comment */\nint a;\n\n// b\nint b; /* c */\n")
    assert evaluate.code_lines(f) == 2
    row = evaluate.line_count_row(C.LINE_COUNT_CLAIM, REPO_ROOT)
    lines = row["lines"]
    assert lines["core/net/enqueue.c"] > 100 and lines["core/net/rx_fill.h"] > 50
    second = lines["core/net/enqueue_nonmergeable.c"]
    assert second > 30
    unified = lines["core/net/enqueue.c"] + lines["core/net/rx_fill.h"]
    assert f"unified (enqueue.c, rx_fill.h): {unified} code lines" in row["figure"]
    assert f"{unified + second}, {second} more" in row["figure"]
    assert row["verdict"] == REPORT_ONLY and f"saves {second} code lines" in row["reason"]


def test_check_variant(vhostlab_fast):
    # The build under test is the default variant; named anything else, it is refused.
    from seedclaims import measure
    fast = Path(vhostlab_fast.path)
    measure.check_variant(fast, "default")
    with pytest.raises(RuntimeError, match="not the 'twopath' build"):
        measure.check_variant(fast, "twopath")


def test_help():
    p = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert p.returncode == 0
    for opt in ("--quick", "--reps", "--out", "--bin", "--build-root", "--instructions"):
        assert opt in p.stdout


def test_bench_runs_the_production_program(vhostlab, vhostlab_fast):
    """Seed claims are production numbers: vhostlab-fast bench, found beside a vhostlab given;
    a bench that ran on the lab build of the core is refused."""
    from seedclaims import measure
    assert measure.fast_program(Path(vhostlab.path)) == Path(vhostlab_fast.path)
    assert measure.fast_program(Path(vhostlab_fast.path)) == Path(vhostlab_fast.path)
    args = ["--reps", "1", "--packets", "1000", "--sizes", "64", "--layout", "split",
            "--direction", "dequeue"]
    assert measure.bench(Path(vhostlab_fast.path), args, [])["core"] == "production"
    with pytest.raises(RuntimeError, match="ran on the lab-hooks core"):
        measure.bench(Path(vhostlab.path), args, [])


def test_quick_end_to_end(vhostlab_fast, tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--bin", str(vhostlab_fast.path),
                        "--out", str(out), "--build-root", str(tmp_path / "builds")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    md = (out / "seed-claims.md").read_text()
    data = json.loads((out / "seed-claims.json").read_text())
    for name in ("ratios", "batching", "zero-copy", "alloc"):
        png = out / f"seed-claims-{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    table = [ln for ln in md.splitlines() if ln.startswith("| ") and "**" in ln]
    for cid in CLAIM_IDS:
        assert any(ln.startswith(f"| {cid} ") for ln in table), f"no row for claim {cid}"
        assert any(r["id"] == cid for r in data["rows"])
    allowed = {REPRODUCED, NOT_REPRODUCED, REPORT_ONLY, NOT_TESTED}
    assert {r["verdict"] for r in data["rows"]} <= allowed
    # The variants were not built: techniques 5 and 2a say so instead of inventing a figure.
    builds = [r for r in data["rows"] if r["technique"] == 5 or r["id"] == "2a"]
    assert len(builds) == 3 and all(r["verdict"] == NOT_TESTED and "not measured" in r["reason"]
                                    for r in builds)
    # Rows by technique and claim, build claims among the others.
    ids = [r["id"] for r in data["rows"]]
    assert ids == sorted(ids, key=lambda i: (int(i[0]), i))
    assert data["mode"] == "quick" and "noise" in md
    assert data["machine"]["cores"] >= 1 and data["commit"]
    assert any("bench" in c for c in data["commands"])


def test_commit_leaves_out_its_own_outputs(tmp_path):
    # An earlier run's report in OUT does not make the tree "plus uncommitted changes";
    # any other change does.
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    git("init", "-q")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "seed-claims.md").write_text("old\n")
    (tmp_path / "core.c").write_text("int a;\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    out = tmp_path / "reports"
    assert not seed_claims.commit(out, tmp_path).endswith("(plus uncommitted changes)")
    (out / "seed-claims.md").write_text("new\n")
    assert not seed_claims.commit(out, tmp_path).endswith("(plus uncommitted changes)")
    # Elsewhere, the report counts: OUT is not the reports directory.
    assert seed_claims.commit(tmp_path / "elsewhere", tmp_path).endswith(
        "(plus uncommitted changes)")
    (tmp_path / "core.c").write_text("int b;\n")
    assert seed_claims.commit(out, tmp_path).endswith("(plus uncommitted changes)")

"""scripts/vs_dpdk.py, the side-by-side with DPDK's vhost back end (reports/README.md):
a --quick run on two cells into a temporary directory, then the report checked for structure
and self-consistency -- never for who is faster, which a busy machine can turn around.

Needs what the script needs: dpdk-testpmd (a missing one fails, as in
test_interop_dpdk.py), vhostlab-fast (the production program serve runs as; fixture
vhostlab_fast) with vl_memcpy_ceiling and vl_cpu_pingpong beside it,
python3-matplotlib for the plot.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from script_import import import_script

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "vs_dpdk.py"
# One cell each way, different rings and options, so both back-end modes, the null and touch
# ceilings and the zero-copy runs (guest->host, 512 bytes or more) run.
CELLS = ["split-mrg1-ord1-1518-g2h", "packed-mrg0-ord0-1518-h2g"]
# --fill: one steady run per compared back end in each placement, within 20 s (plus the
# round under way when the budget runs out).
FILL_K = 1
FILL_MINUTES = 0.33
RING_SLACK = 256  # packets a ring holds: the most sender and receiver counts may differ by

F_MRG_RXBUF = 1 << 15
F_PACKED = 1 << 34
F_IN_ORDER = 1 << 35


@pytest.fixture(scope="module")
def report(vhostlab_fast, tmp_path_factory):
    if shutil.which("dpdk-testpmd") is None:
        pytest.fail("dpdk-testpmd not found: apt-get install --no-install-recommends dpdk-dev "
                    "librte-net-virtio23 (./lab installs them)", pytrace=False)
    out = tmp_path_factory.mktemp("vs-dpdk")
    argv = [sys.executable, str(SCRIPT), "--quick", "--cells", ",".join(CELLS),
            "--seconds", "0.5", "--warmup", "0.3", "--out", str(out),
            "--fill", str(FILL_K), "--fill-minutes", str(FILL_MINUTES),
            "--vhostlab", str(vhostlab_fast.path)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, (f"{' '.join(argv)} exited {proc.returncode}\n"
                                  f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return out, json.loads((out / "vs-dpdk.json").read_text()), proc.stderr


def test_files_written(report):
    out, doc, stderr = report
    assert (out / "vs-dpdk.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "vs-dpdk.md").read_text()
    for cell in CELLS:
        assert f"`{cell}`" in md, md
    assert "A partial run" in md, "a 2-cell run must say it is partial"
    assert "null ceiling" in md and "touch ceiling" in md and "memcpy" in md, md
    # The zero-copy section lists per-placement medians: it is there when a zc run was
    # classed close or far (one quick repetition, and --fill never runs zc, so the host's
    # moves can leave it without one).
    classed = any(r["backend"] == "zc" and r["placement"] in ("close", "far")
                  for r in doc["runs"])
    assert ("## Zero-copy dequeue" in md) == classed, md
    if classed:
        assert f"| `{CELLS[0]}` |" in md.split("## Zero-copy dequeue")[1], md
    # Progress went to stderr, one line per run: 7 repetition runs, then the fill's.
    lines = stderr.splitlines()
    assert sum(1 for line in lines if line.startswith("[rep ") and " Mpps " in line) == 7, stderr
    fill = sum(1 for r in doc["runs"] if r.get("fill"))
    assert sum(1 for line in lines if line.startswith("[fill ") and " Mpps " in line) == fill
    assert "Then filled (`--fill 1`)" in md, md


def test_every_run_measured_traffic(report):
    _, doc, _ = report
    runs = doc["runs"]
    assert {(r["cell"], r["backend"]) for r in runs} == {
        (CELLS[0], "dpdk"), (CELLS[0], "vhostlab"), (CELLS[0], "null"), (CELLS[0], "touch"),
        (CELLS[0], "zc"), (CELLS[1], "dpdk"), (CELLS[1], "vhostlab")}
    for r in runs:
        assert "error" not in r, r
        assert r["mpps"] > 0 and r["packets"] > 0, r
        # testpmd's rate (its clock) and the count over our wall clock describe the same
        # window: they agree up to the few milliseconds a command takes to be read.
        assert 0.7 < r["wall_mpps"] / r["mpps"] < 1.3, r
        # The window read in intervals (0.5 s window: one), its class from them and the
        # probes.
        rates = r["interval_mpps"]
        assert len(rates) == 1 and min(rates) * 0.999 <= r["mpps"] <= max(rates) * 1.001, r
        assert r["spread"] == pytest.approx(max(rates) / min(rates), rel=1e-2), r
        assert r["placement"] in ("close", "far", "mixed", "unsteady"), r
        # The front end's forward statistics over the forwarding run (the window and its
        # warm-up): guest->host only, at least the window's packets sent, and no more
        # dropped for want of ring room than it made.
        if r["cell"].endswith("g2h"):
            assert r["fe_sent"] >= r["packets"] and r["fe_dropped"] >= 0, r
            assert 0 <= import_script("vs_dpdk").fe_dropped_share(r) < 1, r
        else:
            assert "fe_sent" not in r and "fe_dropped" not in r, r


def test_serve_totals_cover_the_window(report):
    """What the front end counted in the window, serve counted too (over the whole
    connection): received for guest->host, sent for host->guest."""
    _, doc, _ = report
    for r in doc["runs"]:
        if r["backend"] == "dpdk":
            continue
        s = r["serve"]
        assert s["drops"] == 0, r
        if r["cell"].endswith("g2h"):
            assert s["rx_packets"] + RING_SLACK >= r["packets"] and s["tx_packets"] == 0, r
        else:
            assert s["tx_packets"] >= r["packets"] and s["rx_packets"] == 0, r


def test_serve_idle_share_of_the_window(report):
    """Every serve run has the idle share of its window from serve's live statistics: a
    share, and no more than serve's whole-run idle time allows (the window is inside the
    run). null and touch never wait on a ring with room for the front end's packets, so
    they and the guest->host vhostlab run are idle some of the time; nothing is asserted
    of how much, which depends on who is faster."""
    _, doc, _ = report
    for r in doc["runs"]:
        if r["backend"] == "dpdk":
            assert "serve_idle" not in r, r
            continue
        s = r["serve"]
        assert 0 <= r["serve_idle"] <= 1, r
        assert 0 <= s["idle_seconds"] <= s["seconds"], r
        assert r["serve_idle"] * r["wall_seconds"] <= s["idle_seconds"] + 0.3, r


def test_window_idle_takes_the_intervals_inside_the_window():
    vs_dpdk = import_script("vs_dpdk")
    lines = [{"time": t, "idle_share": x} for t, x in
             ((0.25, 1.0), (0.5, 1.0), (0.75, 0.2), (1.0, 0.4), (1.25, 0.9))]
    # The window 0.5..1.1 holds the intervals ending at 0.75 and 1.0 (0.5..0.75, 0.75..1.0).
    assert vs_dpdk.window_idle(lines, 0.5, 1.1, 0.25) == pytest.approx(0.3)
    assert vs_dpdk.window_idle(lines, 0.0, 1.25, 0.25) == pytest.approx(0.7)
    assert vs_dpdk.window_idle(lines, 0.6, 0.8, 0.25) is None
    assert vs_dpdk.window_idle([{"time": 1.0}], 0.0, 2.0, 0.25) is None


def test_touch_bounds_every_guest_to_host_cell():
    """touch runs in every guest->host cell, 1518-byte ones included: a back end that copies
    a packet reads the line touch reads, so touch bounds it at any size. Host->guest has
    neither ceiling. Zero-copy runs only where serve's --zero-copy takes the packets (512
    bytes or more): below, a zc run would be a copying run again."""
    vs_dpdk = import_script("vs_dpdk")
    for c in vs_dpdk.ALL_CELLS:
        want = (("dpdk", "vhostlab", "null", "touch") if c.dir == "g2h"
                else ("dpdk", "vhostlab"))
        if c.dir == "g2h" and c.size >= 512:
            want += ("zc",)
        assert c.backends() == want, c.id


def test_zero_copy_runs_copied_nothing(report):
    """A zc run received every packet without copying it (all 1518 bytes, over serve's
    512-byte line, and rxonly frees each burst, so no lease limit); every other serve run
    copied all of them. So the zc column measures the feature, not a copying serve."""
    _, doc, _ = report
    zc = [r for r in doc["runs"] if r["backend"] == "zc"]
    assert zc
    for r in doc["runs"]:
        if r["backend"] == "dpdk":
            continue
        s = r["serve"]
        if r["backend"] == "zc":
            assert s["zero_copied"] == s["rx_packets"] > 0, r
        else:
            assert s["zero_copied"] == 0, r


def test_ratios_and_medians_follow_from_the_runs(report):
    """The columns over all placements take the repetitions' runs, not the fill's."""
    _, doc, _ = report
    assert [c["cell"] for c in doc["cells"]] == CELLS
    for c in doc["cells"]:
        for b in ("dpdk", "vhostlab", "null", "touch", "zc"):
            vals = [r["mpps"] for r in doc["runs"]
                    if r["cell"] == c["cell"] and r["backend"] == b and not r.get("fill")]
            if b in ("null", "touch", "zc") and c["dir"] == "h2g":
                assert not vals and b not in c, c
                continue
            assert c[b] == {"median": statistics.median(vals), "min": min(vals),
                            "max": max(vals), "n": len(vals)}, (b, c)
        assert c["ratio"] == pytest.approx(c["vhostlab"]["median"] / c["dpdk"]["median"],
                                           rel=1e-12), c
        assert c["null"]["median"] > 0 if c["dir"] == "g2h" else True
        # One repetition: the paired ratio is that repetition's ratio, the ratio itself.
        assert c["paired_ratio"] == pytest.approx(c["ratio"], rel=1e-12), c


def test_fill_needs_counts_pairs_and_touch_runs_per_placement():
    """A cell is short in a placement while it has fewer than k pairs there -- a DPDK and a
    vhostlab run of one repetition or fill round, both steady in that placement -- (then
    both back ends are missing) or fewer than k such pairs of DPDK and touch runs (then
    touch and DPDK are, DPDK by the larger shortfall); failed, mixed, unsteady, other
    placements' and unpaired runs do not count, null never does."""
    vs_dpdk = import_script("vs_dpdk")
    g2h, h2g = vs_dpdk.ALL_CELLS[0], vs_dpdk.ALL_CELLS[1]
    assert g2h.dir == "g2h" and h2g.dir == "h2g"

    def run(cell, rep, b, where, **kw):
        return {"rep": rep, "cell": cell.id, "backend": b, "mpps": 10.0, "placement": where,
                **kw}

    runs = [run(g2h, 0, "dpdk", "close"), run(g2h, 0, "vhostlab", "close"),
            run(g2h, 1, "dpdk", "close"), run(g2h, 2, "vhostlab", "close"),  # no pair
            run(g2h, 3, "dpdk", "close"), run(g2h, 3, "vhostlab", "mixed"),
            run(g2h, 4, "dpdk", "close"), run(g2h, 4, "vhostlab", "unsteady"),
            run(g2h, 5, "dpdk", "close", error="x"), run(g2h, 5, "vhostlab", "close"),
            run(g2h, 6, "dpdk", "close"), run(g2h, 6, "vhostlab", "far"),
            run(g2h, 0, "touch", "close", error="x"), run(g2h, 1, "touch", "far"),
            run(g2h, 2, "touch", "close"),  # no DPDK run in round 2
            run(g2h, 3, "touch", "close"), run(g2h, 4, "touch", "close"),  # two pairs
            run(g2h, 1, "null", "close"),
            run(h2g, 0, "dpdk", "close"), run(h2g, 0, "vhostlab", "close"),
            run(h2g, 1, "vhostlab", "close"), run(h2g, 1, "dpdk", "close")]
    assert vs_dpdk.placement_pairs(g2h.id, runs, "close") == [1.0]
    assert vs_dpdk.placement_pairs(g2h.id, runs, "close", backend="touch") == [1.0, 1.0]
    assert vs_dpdk.placement_pairs(h2g.id, runs, "close") == [1.0, 1.0]
    need = vs_dpdk.fill_needs([g2h, h2g], runs, "close", 2)
    assert need == {g2h.id: {"dpdk": 1, "vhostlab": 1}}
    assert vs_dpdk.fill_needs([g2h, h2g], runs, "close", 3) == {
        g2h.id: {"dpdk": 2, "vhostlab": 2, "touch": 1}, h2g.id: {"dpdk": 1, "vhostlab": 1}}
    assert vs_dpdk.fill_needs([g2h, h2g], runs, "close", 1) == {}
    assert vs_dpdk.fill_needs([g2h, h2g], runs, "far", 1) == {
        g2h.id: {"dpdk": 1, "vhostlab": 1, "touch": 1}, h2g.id: {"dpdk": 1, "vhostlab": 1}}
    assert vs_dpdk.fill_short_words([g2h, h2g], runs, 2) == (
        "1 cell close (2 runs), 2 cells far (10 runs)")
    # Short of touch pairs alone: DPDK runs too, as many (each pairs with a touch run).
    only = [run(g2h, r, b, "close") for r in (0, 1) for b in ("dpdk", "vhostlab")]
    only.append(run(g2h, 0, "touch", "far"))
    assert vs_dpdk.fill_needs([g2h], only, "close", 2) == {g2h.id: {"touch": 2, "dpdk": 2}}


def test_fill_pick_runs_the_cell_furthest_from_its_pairs_first():
    """A fill round runs the cell furthest from its pairs, whatever its ring configuration;
    among cells as far, one of the configuration whose processes are up, then the one
    missing the most runs (touch too), then the matrix's order. So a budget spent before
    every cell is full leaves no configuration untouched while another's cells fill."""
    vs_dpdk = import_script("vs_dpdk")
    by_id = {c.id: c for c in vs_dpdk.ALL_CELLS}
    up = vs_dpdk.ALL_CELLS[0].config
    here = [c.id for c in vs_dpdk.ALL_CELLS if c.config == up]
    other = [c.id for c in vs_dpdk.ALL_CELLS if c.config != up]
    g2h_here = [i for i in here if by_id[i].dir == "g2h"]
    h2g_other = [i for i in other if by_id[i].dir == "h2g"]
    # Further from its pairs beats the configuration that is up.
    need = {here[0]: {"dpdk": 1, "vhostlab": 1}, other[-1]: {"dpdk": 2, "vhostlab": 2}}
    assert vs_dpdk.fill_pick(need, by_id, up) == other[-1]
    # As far: the configuration that is up, even against more runs missing elsewhere.
    need = {other[0]: {"dpdk": 2, "vhostlab": 2, "touch": 2},
            here[-1]: {"dpdk": 2, "vhostlab": 2}}
    assert vs_dpdk.fill_pick(need, by_id, up) == here[-1]
    # As far, same configuration: the one missing more runs (its touch pairs too).
    need = {g2h_here[0]: {"dpdk": 1, "vhostlab": 1},
            g2h_here[1]: {"dpdk": 1, "vhostlab": 1, "touch": 1}}
    assert vs_dpdk.fill_pick(need, by_id, up) == g2h_here[1]
    # Nothing up (the first round) and all alike: the matrix's order.
    need = {i: {"dpdk": 1, "vhostlab": 1} for i in reversed(h2g_other)}
    assert vs_dpdk.fill_pick(need, by_id, None) == h2g_other[0]


def test_pairs_leave_out_a_suspect_run():
    """A pair whose vhostlab run ran at the far rate though its probes said close (a suspect
    run, see suspect_runs) is left out of the close pairs; without that check it would be
    one pair in three, and the median of three pairs still 1.2 -- with two pairs, the
    suspect one would pull the median to 0.85."""
    vs_dpdk = import_script("vs_dpdk")

    def run(rep, b, where, mpps):
        return {"rep": rep, "cell": "c", "backend": b, "mpps": mpps, "placement": where}

    runs = [run(0, "dpdk", "close", 10.0), run(0, "vhostlab", "close", 12.0),
            run(1, "dpdk", "close", 10.0), run(1, "vhostlab", "close", 12.0),
            run(2, "dpdk", "close", 10.0), run(2, "vhostlab", "close", 5.0),
            run(3, "dpdk", "far", 5.0), run(3, "vhostlab", "far", 5.0),
            run(4, "vhostlab", "far", 5.2)]
    sus, _ = vs_dpdk.suspect_runs(runs)
    assert sus == [runs[5]]
    assert vs_dpdk.placement_pairs("c", runs, "close") == [1.2, 1.2]
    assert vs_dpdk.placement_pairs("c", runs, "close", set()) == [1.2, 1.2, 0.5]
    assert vs_dpdk.placement_pairs("c", runs, "far") == [1.0]
    assert vs_dpdk.by_placement("c", runs[2:])["close"]["paired"] == pytest.approx(1.2)
    h2g = vs_dpdk.ALL_CELLS[1]  # no touch runs to need
    assert vs_dpdk.fill_needs([h2g], [dict(r, cell=h2g.id) for r in runs], "close", 3) == {
        h2g.id: {"dpdk": 1, "vhostlab": 1}}


def test_fill_runs_join_only_the_placement_figures():
    """A fill run (aimed at one placement) moves that placement's median, not the median
    over the repetitions nor the paired ratio."""
    vs_dpdk = import_script("vs_dpdk")
    cell = vs_dpdk.ALL_CELLS[1]
    runs = [{"rep": 0, "cell": cell.id, "backend": "dpdk", "mpps": 10.0, "placement": "far"},
            {"rep": 0, "cell": cell.id, "backend": "vhostlab", "mpps": 12.0, "placement": "far"},
            {"rep": 1, "cell": cell.id, "backend": "dpdk", "mpps": 30.0, "placement": "far",
             "fill": "far"},
            {"rep": 1, "cell": cell.id, "backend": "vhostlab", "mpps": 60.0, "placement": "far",
             "fill": "far"}]
    row = vs_dpdk.summarize([cell], runs)[0]
    assert row["dpdk"]["median"] == 10.0 and row["vhostlab"]["median"] == 12.0
    assert row["ratio"] == pytest.approx(1.2) and row["paired_ratio"] == pytest.approx(1.2)
    assert row["placement"]["far"]["dpdk"] == 20.0
    assert row["placement"]["far"]["vhostlab"] == 36.0
    assert row["placement"]["far"]["n_vhostlab"] == 2


def test_fill_runs_went_where_a_placement_was_short(report):
    """Each fill run measured a back end that was short, at that moment, in the placement it
    was aimed at; the summary counts them and what stayed short follows from all runs."""
    _, doc, _ = report
    vs_dpdk = import_script("vs_dpdk")
    cells = [c for c in vs_dpdk.ALL_CELLS if c.id in CELLS]
    fill = doc["meta"]["fill"]
    assert fill["steady_runs_wanted"] == FILL_K
    assert fill["budget_seconds"] == pytest.approx(FILL_MINUTES * 60)
    runs = doc["runs"]
    filled = [i for i, r in enumerate(runs) if r.get("fill")]
    assert fill["runs"] == len(filled) and all(i >= 6 for i in filled)
    for i in filled:
        r = runs[i]
        assert r["rep"] >= doc["meta"]["reps"] and r["backend"] != "null", r
        need = vs_dpdk.fill_needs(cells, runs[:i], r["fill"], FILL_K)
        assert r["backend"] in need.get(r["cell"], {}), (r, need)
    assert fill["short_after"] == {w: vs_dpdk.fill_needs(cells, runs, w, FILL_K)
                                   for w in ("close", "far")}
    # A round's runs went back to back, one of each back end; once one did not land steady
    # where the round aimed, the round ran nothing more (none could pair with it).
    rounds: dict[int, list[int]] = {}
    for i in filled:
        rounds.setdefault(runs[i]["rep"], []).append(i)
    for idx in rounds.values():
        assert idx == list(range(idx[0], idx[0] + len(idx))), idx
        assert len({runs[i]["backend"] for i in idx}) == len(idx), [runs[i] for i in idx]
        for i in idx[:-1]:
            assert "error" not in runs[i] and runs[i]["placement"] == runs[i]["fill"], runs[i]
    # It ran or waited: the repetitions alone leave the far or the close figures short.
    assert filled or fill["waited_seconds"] > 0 or not any(fill["short_after"].values())


def test_fill_round_skips_a_pair_whose_first_run_missed(monkeypatch, tmp_path):
    """Bench.fill without processes (the probe, the starts and the runs scripted): a round
    whose first run (DPDK's) is not steady where the round aimed skips the rest (neither
    vhostlab nor touch could pair with it); the next round runs all three back to back, in
    the other order, and the fill ends when the cell has its vhostlab and touch pairs
    there."""
    vs_dpdk = import_script("vs_dpdk")
    cell = next(c for c in vs_dpdk.ALL_CELLS if c.id == CELLS[0])
    assert cell.dir == "g2h"  # so touch runs too
    outcomes = iter(["mixed", "close", "close", "close"])
    ran = []

    def measure(procs, c, b, rep):
        rec = {"rep": rep, "cell": c.id, "backend": b, "mpps": 10.0, "placement": next(outcomes)}
        ran.append((rep, b, rec["placement"]))
        bench.runs.append(rec)
        return rec

    bench = vs_dpdk.Bench(argparse.Namespace(vhostlab=tmp_path / "vhostlab", keep=False,
                                             reps=1))
    monkeypatch.setattr(bench, "probe", lambda serve=None: 100.0)  # close, every time
    monkeypatch.setattr(bench, "start_config", lambda cfg: {})
    monkeypatch.setattr(bench, "stop_config", lambda procs: None)
    monkeypatch.setattr(bench, "measure", measure)
    # Far stays short (the probe never says far): the budget ends the fill.
    monkeypatch.setattr(vs_dpdk.time, "sleep", lambda s: None)
    try:
        meta = bench.fill([cell], 1, 0.2)
    finally:
        bench.cleanup()
    assert ran == [(1, "dpdk", "mixed"), (2, "touch", "close"),
                   (2, "vhostlab", "close"), (2, "dpdk", "close")], ran
    assert meta["rounds"] == 2 and meta["runs"] == 4 and meta["pairs"] is True
    assert meta["short_after"]["close"] == {}
    assert meta["short_after"]["far"] == {cell.id: {"dpdk": 1, "vhostlab": 1, "touch": 1}}


@pytest.mark.parametrize("why", ["failed", "old", "neither"])
def test_fill_starts_dpdk_again_after_a_failure_or_when_old(monkeypatch, tmp_path, why):
    """The fill keeps a configuration's processes up from round to round, but a DPDK run that
    failed (its testpmd died: every later run would fail too) or processes older than
    CONFIG_MAX_AGE (timeout(1) would kill them at PROC_LIMIT) are started again before the
    next round. Two rounds each: the first round's DPDK run fails or lands mixed."""
    vs_dpdk = import_script("vs_dpdk")
    cell = next(c for c in vs_dpdk.ALL_CELLS if c.id == CELLS[0])
    first = {"failed": None, "old": "mixed", "neither": "mixed"}[why]
    outcomes = iter([first, "close", "close", "close"])
    events = []

    def measure(procs, c, b, rep):
        assert b != "dpdk" or procs == {"up": True}, (b, procs)
        where = next(outcomes)
        rec = {"rep": rep, "cell": c.id, "backend": b, "mpps": 10.0, "placement": where}
        if where is None:
            rec = {"rep": rep, "cell": c.id, "backend": b, "error": "fe exited (-9)",
                   "placement": None}
        events.append((b, where))
        bench.runs.append(rec)
        return rec

    bench = vs_dpdk.Bench(argparse.Namespace(vhostlab=tmp_path / "vhostlab", keep=False,
                                             reps=1))
    monkeypatch.setattr(bench, "probe", lambda serve=None: 100.0)
    monkeypatch.setattr(bench, "start_config",
                        lambda cfg: events.append("start") or {"up": True})
    monkeypatch.setattr(bench, "stop_config", lambda procs: events.append("stop"))
    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(vs_dpdk.time, "sleep", lambda s: None)
    if why == "old":
        monkeypatch.setattr(vs_dpdk, "CONFIG_MAX_AGE", -1.0)
    try:
        bench.fill([cell], 1, 0.2)
    finally:
        bench.cleanup()
    again = ["stop", "start"] if why != "neither" else []
    assert events == (["start", ("dpdk", first)]
                      + (["stop"] if why == "failed" else [])
                      + (["start"] if why == "failed" else again)
                      + [("touch", "close"), ("vhostlab", "close"), ("dpdk", "close"),
                         "stop"]), events


def test_probe_pauses_a_polling_serve(monkeypatch, tmp_path):
    """A serve run is probed with serve stopped (it polls on the back end's CPU) and
    continued after; a DPDK run's probe stops nothing."""
    vs_dpdk = import_script("vs_dpdk")
    proc = vs_dpdk.Proc(["sleep", "30"], tmp_path / "sleep.log")
    pid = proc.child_pid()
    seen = []

    def probe(exe):
        seen.append(vs_dpdk.proc_state(pid))
        return 42.0

    class Paused:  # what Bench.probe needs of a Serve
        child_pid = staticmethod(lambda: pid)

    monkeypatch.setattr(vs_dpdk, "placement_probe", probe)
    bench = vs_dpdk.Bench(argparse.Namespace(vhostlab=tmp_path / "vhostlab", keep=False))
    try:
        assert bench.probe(Paused()) == 42.0
        assert bench.probe() == 42.0
        # Stopped (T) for the first; running or sleeping for the second and after.
        assert seen[0] == "T" and seen[1] in ("R", "S"), seen
        assert vs_dpdk.proc_state(pid) in ("R", "S")
        # A serve that is gone by the probe fails the run, naming it.
        proc.kill()
        with pytest.raises(vs_dpdk.RunError, match=f"pid {pid}"):
            bench.probe(Paused())
    finally:
        proc.kill()
        bench.cleanup()


def test_suspect_runs_sit_nearer_the_other_placement():
    """A run whose rate is nearer the other placement's median of its cell and back end is
    suspect; back ends without runs in both placements, or whose medians are too close to
    tell apart, are not looked at; failed, mixed and unsteady runs never are."""
    vs_dpdk = import_script("vs_dpdk")

    def run(cell, b, where, mpps, **kw):
        return {"cell": cell, "backend": b, "placement": where, "mpps": mpps, **kw}

    runs = [run("a", "dpdk", "close", 16.0), run("a", "dpdk", "close", 15.0),
            run("a", "dpdk", "close", 5.2),                       # far-like, classed close
            run("a", "dpdk", "far", 5.0), run("a", "dpdk", "far", 5.3),
            run("a", "dpdk", "far", 8.0),                         # nearer 5.3 on a log scale
            run("a", "vhostlab", "close", 16.0), run("a", "vhostlab", "far", 5.0),
            run("a", "vhostlab", "mixed", 30.0), run("a", "vhostlab", "unsteady", 5.0),
            run("a", "vhostlab", "far", 1.0, error="x"),
            run("a", "touch", "close", 16.0),                     # no far run
            run("b", "dpdk", "close", 10.0), run("b", "dpdk", "far", 8.0),  # 1.25x apart
            run("b", "dpdk", "far", 9.9)]
    sus, looked = vs_dpdk.suspect_runs(runs)
    assert looked == 8, looked
    assert [(r["cell"], r["backend"], r["mpps"]) for r in sus] == [("a", "dpdk", 5.2)]
    words = vs_dpdk.suspect_words(runs)
    assert "of the 8 close and far runs" in words and "1 ran at a rate" in words, words
    assert "`a` dpdk 5.20 Mpps classed close" in words, words
    assert vs_dpdk.suspect_words(runs[12:]) == ""


def test_paired_ratio_pairs_runs_of_one_repetition():
    """Repetitions whose runs moved together (a slow spell in the first, vhostlab alone slow
    in the third, DPDK failed in the fourth): the ratio of medians would be 16/20 = 0.8; the
    paired ratio is the median of each complete repetition's own ratio (1.0, 1.1, 0.5), 1.0.
    Other cells and the null runs do not count."""
    vs_dpdk = import_script("vs_dpdk")
    runs = [
        {"rep": 0, "cell": "c", "backend": "dpdk", "mpps": 10.0},
        {"rep": 0, "cell": "c", "backend": "vhostlab", "mpps": 10.0},
        {"rep": 1, "cell": "c", "backend": "dpdk", "mpps": 20.0},
        {"rep": 1, "cell": "c", "backend": "vhostlab", "mpps": 22.0},
        {"rep": 2, "cell": "c", "backend": "vhostlab", "mpps": 10.0},
        {"rep": 2, "cell": "c", "backend": "dpdk", "mpps": 20.0},
        {"rep": 3, "cell": "c", "backend": "dpdk", "error": "no statistics"},
        {"rep": 3, "cell": "c", "backend": "vhostlab", "mpps": 40.0},
        {"rep": 0, "cell": "other", "backend": "dpdk", "mpps": 1.0},
        {"rep": 0, "cell": "c", "backend": "null", "mpps": 99.0},
    ]
    assert vs_dpdk.paired_ratio("c", runs) == pytest.approx(1.0)
    assert vs_dpdk.paired_ratio("missing", runs) is None


def test_window_rate_and_steadiness():
    """The window's rate weights each interval's rate by its length; a run the probes call
    close or far is unsteady when its interval rates spread more than STEADY_MAX, or when
    an interval moved nothing; a mixed run stays mixed."""
    vs_dpdk = import_script("vs_dpdk")
    mpps, spread = vs_dpdk.window_rate([(20e6, 0.5), (10e6, 1.5)])
    assert mpps == pytest.approx((20 * 0.5 + 10 * 1.5) / 2.0)
    assert spread == pytest.approx(2.0)
    assert vs_dpdk.window_rate([(30e6, 0.5)]) == (pytest.approx(30.0), pytest.approx(1.0))
    assert vs_dpdk.window_rate([(30e6, 0.5), (0.0, 0.5)])[1] is None
    top = vs_dpdk.STEADY_MAX
    assert vs_dpdk.classify(60.0, 70.0, 1.05) == "close"
    assert vs_dpdk.classify(60.0, 70.0, top) == "close"
    assert vs_dpdk.classify(60.0, 70.0, top * 1.01) == "unsteady"
    assert vs_dpdk.classify(300.0, 310.0, 2.5) == "unsteady"
    assert vs_dpdk.classify(300.0, 310.0, None) == "unsteady"
    assert vs_dpdk.classify(60.0, 310.0, 1.0) == "mixed"
    assert vs_dpdk.classify(None, None, 1.0) is None


def test_placement_classes_and_medians():
    """A run is close when both probes are under the line, far when both are over, mixed
    otherwise; each placement's medians take only its own runs (mixed, failed, null and other
    cells' runs left out), and a placement with one back end missing has no ratio."""
    vs_dpdk = import_script("vs_dpdk")
    line = vs_dpdk.PLACEMENT_FAR_NS

    def apart(runs):
        """by_placement with every run in a repetition of its own: no pairs."""
        return vs_dpdk.by_placement("c", [dict(r, rep=i) for i, r in enumerate(runs)])

    def in_twos(*rows):
        """Runs of cell c from (back end, Mpps, placement), two to a repetition."""
        return [{"cell": "c", "backend": bk, "mpps": m, "placement": w, "rep": i // 2}
                for i, (bk, m, w) in enumerate(rows)]

    assert vs_dpdk.placement(100.0, 120.0) == "close"
    assert vs_dpdk.placement(line, 400.0) == "far"
    assert vs_dpdk.placement(100.0, line) == "mixed"
    assert vs_dpdk.placement(410.0, 90.0) == "mixed"
    assert vs_dpdk.placement(None, 90.0) is None
    runs = [
        {"cell": "c", "backend": "dpdk", "mpps": 40.0, "placement": "close"},
        {"cell": "c", "backend": "dpdk", "mpps": 42.0, "placement": "close"},
        {"cell": "c", "backend": "vhostlab", "mpps": 46.0, "placement": "close"},
        {"cell": "c", "backend": "vhostlab", "mpps": 17.0, "placement": "far"},
        {"cell": "c", "backend": "dpdk", "mpps": 30.0, "placement": "mixed"},
        {"cell": "c", "backend": "dpdk", "error": "x", "placement": "far"},
        {"cell": "c", "backend": "null", "mpps": 50.0, "placement": "far"},
        {"cell": "other", "backend": "dpdk", "mpps": 16.0, "placement": "far"},
    ]
    p = apart(runs)
    assert p["close"] == {"dpdk": 41.0, "vhostlab": 46.0, "ratio": pytest.approx(46 / 41),
                          "n_dpdk": 2, "n_vhostlab": 1, "paired": None, "n_pairs": 0,
                          "judged": pytest.approx(46 / 41)}
    assert p["far"] == {"dpdk": None, "vhostlab": 17.0, "ratio": None, "n_dpdk": 0,
                        "n_vhostlab": 1, "paired": None, "n_pairs": 0, "judged": None}
    # Runs of one repetition (rep) in one placement pair up, and the placement is then
    # judged on the median of its pairs: here 45/40 and 40/44, median 1.017, where the
    # ratio of the medians is 42.5/40 = 1.0625 (DPDK's slow third run, whose partner was
    # mixed, joins DPDK's median but no pair).
    paired = in_twos(("dpdk", 40.0, "close"), ("vhostlab", 45.0, "close"),
                     ("vhostlab", 40.0, "close"), ("dpdk", 44.0, "close"),
                     ("dpdk", 10.0, "close"), ("vhostlab", 99.0, "mixed"))
    q = vs_dpdk.by_placement("c", paired)["close"]
    assert q["n_pairs"] == 2 and q["paired"] == pytest.approx((45 / 40 + 40 / 44) / 2)
    assert q["judged"] == q["paired"] and q["ratio"] == pytest.approx(42.5 / 40)
    # touch runs add touch's median and touch / DPDK; without DPDK runs there, no ratio.
    runs += [
        {"cell": "c", "backend": "touch", "mpps": 44.0, "placement": "close"},
        {"cell": "c", "backend": "touch", "mpps": 48.0, "placement": "close"},
        {"cell": "c", "backend": "touch", "mpps": 99.0, "placement": "mixed"},
        {"cell": "c", "backend": "touch", "mpps": 18.0, "placement": "far"},
    ]
    p = apart(runs)
    assert p["close"]["touch"] == 46.0 and p["close"]["n_touch"] == 2
    assert p["close"]["touch_ratio"] == pytest.approx(46 / 41)
    assert p["far"]["touch"] == 18.0 and p["far"]["touch_ratio"] is None
    # ... and, apart, no touch pairs: the ceiling judged is the ratio of the medians.
    assert p["close"]["n_touch_pairs"] == 0 and p["close"]["touch_paired"] is None
    assert vs_dpdk.touch_judged(p["close"]) == pytest.approx(46 / 41)
    assert "serve_idle" not in p["close"] and "serve_idle" not in p["far"]
    # touch pairs with DPDK as vhostlab does: 36/40 and 52/44 (median 1.04), where the
    # ratio of the medians is 44/42 = 1.048; the mixed pair and the lone DPDK run do not
    # pair. The pairs are the ceiling judged.
    tpairs = in_twos(("dpdk", 40.0, "close"), ("touch", 36.0, "close"),
                     ("touch", 52.0, "close"), ("dpdk", 44.0, "close"),
                     ("dpdk", 30.0, "close"), ("touch", 60.0, "mixed"),
                     ("dpdk", 50.0, "close"))
    t = vs_dpdk.by_placement("c", tpairs)["close"]
    assert t["n_touch_pairs"] == 2
    assert t["touch_paired"] == pytest.approx((36 / 40 + 52 / 44) / 2)
    assert t["touch_ratio"] == pytest.approx(44 / 42)
    assert vs_dpdk.touch_judged(t) == t["touch_paired"]
    # vhostlab against the touch run of its own round: 45/50 and 33/30 (median 1.0), where
    # the ratio of the medians is 39/40; the round whose touch run was mixed does not pair.
    # These runs have no DPDK run at all: the figure needs none.
    vt = vs_dpdk.by_placement("c", in_twos(
        ("touch", 50.0, "close"), ("vhostlab", 45.0, "close"),
        ("vhostlab", 33.0, "close"), ("touch", 30.0, "close"),
        ("touch", 90.0, "mixed"), ("vhostlab", 20.0, "close")))["close"]
    assert vt["n_vs_touch_pairs"] == 2
    assert vt["vs_touch_paired"] == pytest.approx((45 / 50 + 33 / 30) / 2)
    assert vt["n_touch_pairs"] == 0 and vt["n_pairs"] == 0
    assert "vs_touch_paired" not in vs_dpdk.by_placement("c", paired)["close"]  # no touch
    assert vs_dpdk.short_words(vt) == " (vhostlab / touch 1.00 on 2 pairs)"
    # serve's idle share: the median over vhostlab's runs of that placement only.
    runs += [
        {"cell": "c", "backend": "vhostlab", "mpps": 45.0, "placement": "close",
         "serve_idle": 0.10},
        {"cell": "c", "backend": "vhostlab", "mpps": 47.0, "placement": "close",
         "serve_idle": 0.30},
        {"cell": "c", "backend": "touch", "mpps": 47.0, "placement": "close",
         "serve_idle": 0.90},
        {"cell": "c", "backend": "vhostlab", "mpps": 17.5, "placement": "mixed",
         "serve_idle": 0.90},
    ]
    p = apart(runs)
    assert p["close"]["serve_idle"] == pytest.approx(0.20)
    assert "serve_idle" not in p["far"]
    # Lines evicted per packet: the median over vhostlab's runs of that placement whose
    # serve counted them (older runs did not), nothing where none did.
    assert "evicted" not in p["close"]
    runs += [
        {"cell": "c", "backend": "vhostlab", "mpps": 18.0, "placement": "far",
         "serve": {"rx_packets": 1000, "lines_evicted": 900}},
        {"cell": "c", "backend": "vhostlab", "mpps": 19.0, "placement": "far",
         "serve": {"rx_packets": 1000, "lines_evicted": 700}},
        {"cell": "c", "backend": "vhostlab", "mpps": 18.5, "placement": "far",
         "serve": {"rx_packets": 0, "lines_evicted": 0}},
        {"cell": "c", "backend": "touch", "mpps": 20.0, "placement": "far",
         "serve": {"rx_packets": 1000, "lines_evicted": 1000}},
    ]
    p = apart(runs)
    assert p["far"]["evicted"] == pytest.approx(0.8)
    assert "evicted" not in p["close"]
    # The front end's drops for want of ring room: the median share per back end over
    # the runs of that placement that recorded them (not older runs, nor one that made
    # nothing).
    assert vs_dpdk.fe_dropped_share({"fe_sent": 0, "fe_dropped": 0}) is None
    assert vs_dpdk.fe_dropped_share({"mpps": 1.0}) is None
    runs += [
        {"cell": "c", "backend": "vhostlab", "mpps": 18.2, "placement": "far",
         "fe_sent": 990, "fe_dropped": 10},
        {"cell": "c", "backend": "vhostlab", "mpps": 18.3, "placement": "far",
         "fe_sent": 970, "fe_dropped": 30},
        {"cell": "c", "backend": "vhostlab", "mpps": 18.4, "placement": "far",
         "fe_sent": 0, "fe_dropped": 0},
        {"cell": "c", "backend": "dpdk", "mpps": 9.0, "placement": "far",
         "fe_sent": 600, "fe_dropped": 400},
        {"cell": "c", "backend": "touch", "mpps": 20.0, "placement": "far",
         "fe_sent": 1000, "fe_dropped": 500},
    ]
    p = apart(runs)
    assert p["far"]["vhostlab_fe_dropped"] == pytest.approx(0.02)
    assert p["far"]["dpdk_fe_dropped"] == pytest.approx(0.4)
    assert "vhostlab_fe_dropped" not in p["close"] and "dpdk_fe_dropped" not in p["close"]
    runs = runs[:-5]
    p = apart(runs)
    # zero-copy runs: their own median and zc / DPDK, as touch's; never in vhostlab's
    # median or idle share.
    assert "zc" not in p["close"]
    runs += [
        {"cell": "c", "backend": "zc", "mpps": 80.0, "placement": "close", "serve_idle": 0.5},
        {"cell": "c", "backend": "zc", "mpps": 90.0, "placement": "close", "serve_idle": 0.5},
        {"cell": "c", "backend": "zc", "mpps": 20.0, "placement": "far"},
        {"cell": "c", "backend": "zc", "mpps": 1.0, "placement": "mixed"},
    ]
    before = p
    p = apart(runs)
    assert p["close"]["zc"] == 85.0 and p["close"]["n_zc"] == 2
    assert p["close"]["zc_ratio"] == pytest.approx(85 / 41)
    assert p["far"]["zc"] == 20.0 and p["far"]["zc_ratio"] is None
    for w in ("close", "far"):
        assert {k: v for k, v in p[w].items() if "zc" not in k} == before[w]
    counts = vs_dpdk.zero_copy_counts([{"placement": p}, {"placement": before}])
    assert counts == {"placements": 1, "cells": 1, "met": 1,
                      "range": f"{85 / 41:.2f}× – {85 / 41:.2f}×"}


def test_capped_cells_named():
    """Of a placement's cells below the goal, those whose touch ceiling is under the goal too
    are named as out of reach; a cell below the goal with room under touch, one at the goal,
    and one without touch runs are not."""
    vs_dpdk = import_script("vs_dpdk")

    def row(name, ratio, touch_ratio):
        far = {"ratio": ratio}
        if touch_ratio is not None:
            far["touch_ratio"] = touch_ratio
        return {"cell": name, "placement": {"far": far, "close": {"ratio": None}}}

    rows = [row("capped", 0.97, 1.01), row("room", 0.95, 1.30), row("met", 1.20, 1.05),
            row("no-touch", 0.90, None)]
    words = vs_dpdk.capped_words(rows, "far")
    assert "Of the 3 below the goal, 1 is out of reach" in words, words
    assert "`capped` touch 1.01×, vhostlab 0.97×" in words, words
    for other in ("room", "met", "no-touch"):
        assert f"`{other}`" not in words, words
    assert vs_dpdk.capped_words(rows, "close") == ""


def test_runs_carry_their_placement(report):
    """Every run was probed before and after (vl_cpu_pingpong is built beside vhostlab), and
    its class follows from the two probes; the cells' placement figures from the runs."""
    out, doc, _ = report
    vs_dpdk = import_script("vs_dpdk")
    for r in doc["runs"]:
        before, after = r["probe_ns"]
        assert 0 < before < 100000 and 0 < after < 100000, r
        assert r["placement"] == vs_dpdk.placement(before, after), r
    for c in doc["cells"]:
        assert c["placement"] == vs_dpdk.by_placement(c["cell"], doc["runs"]), c
    assert "## By placement" in (out / "vs-dpdk.md").read_text()


def test_meta_names_what_ran(report, vhostlab_fast):
    _, doc, _ = report
    meta = doc["meta"]
    # serve ran as the production program.
    assert meta["serve_exe"].endswith("/vhostlab-fast"), meta["serve_exe"]
    # The build, by content, so that --extend can tell runs of another build.
    fast = Path(vhostlab_fast.path)
    assert meta["serve_sha256"] == hashlib.sha256(fast.read_bytes()).hexdigest()
    assert meta["reps"] == 1 and meta["duration_seconds"] > 0
    assert meta["fe_cpu"] != meta["be_cpu"]
    # Both back ends negotiated the cell's ring options with the same front end.
    for cell in CELLS:
        ring, mrg, ord_ = cell.split("-")[:3]
        feats = meta["negotiated"][f"{ring}-{mrg[3:]}-{ord_[3:]}"]
        for b in ("dpdk", "vhostlab"):
            f = int(feats[b], 16)
            assert bool(f & F_PACKED) == (ring == "packed"), (cell, b, hex(f))
            assert bool(f & F_MRG_RXBUF) == (mrg == "mrg1"), (cell, b, hex(f))
            assert bool(f & F_IN_ORDER) == (ord_ == "ord1"), (cell, b, hex(f))


def test_memcpy_ceiling(report):
    _, doc, _ = report
    cases = doc["memcpy"]["cases"]
    assert {(c["size"], c["buffers"]) for c in cases} == {
        (64, "warm"), (64, "cold"), (1518, "warm"), (1518, "cold")}
    for c in cases:
        assert c["ns_per_copy"] > 0 and c["mcopies_per_s"] > 0, c
        # The three figures are one measurement in three units.
        assert c["mcopies_per_s"] == pytest.approx(1e3 / c["ns_per_copy"], rel=0.01), c
        assert c["gbytes_per_s"] == pytest.approx(c["mcopies_per_s"] * c["size"] / 1e3,
                                                  rel=0.01), c


def test_usage_errors_name_the_value(vhostlab):
    for args, word in ((["--cells", "nosuch-cell"], "nosuch-cell"),
                       (["--reps", "0"], "--reps 0"),
                       (["--seconds", "0.01"], "--seconds 0.01"),
                       (["--fill", "-1"], "--fill -1"),
                       (["--fill", "2", "--fill-minutes", "0"], "--fill-minutes 0.0"),
                       (["--vhostlab", "/nonexistent/vhostlab"], "/nonexistent/vhostlab")):
        argv = [sys.executable, str(SCRIPT), *args]
        if "--vhostlab" not in args:
            argv += ["--vhostlab", str(vhostlab.path)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode == 2 and word in proc.stderr, (args, proc.stderr)


@pytest.mark.parametrize("args, bad", [(["--cpus", "1,1"], "1,1"), (["--rounds", "2"], "2"),
                                       (["extra"], "extra")])
def test_cpu_pingpong_usage_errors_name_the_value(vhostlab, args, bad):
    """The placement probe refuses what it cannot measure, naming the value (exit 2)."""
    exe = Path(vhostlab.path).parent / "vl_cpu_pingpong"
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc
    assert f"'{bad}'" in proc.stderr, proc.stderr
    assert proc.stdout == "", proc.stdout


@pytest.mark.parametrize("args, bad", [(["--dst-offsets", "0,64"], "64"),
                                       (["--reps", "0"], "0"), (["--sizes", "0"], "0"),
                                       (["--sizes", "64,x"], "x")])
def test_memcpy_ceiling_usage_errors_name_the_value(vhostlab, args, bad):
    exe = Path(vhostlab.path).parent / "vl_memcpy_ceiling"
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc
    assert f"'{bad}'" in proc.stderr and args[0] in proc.stderr, proc.stderr
    assert proc.stdout == "", proc.stdout


def test_memcpy_ceiling_offsets_and_reps(vhostlab):
    """--dst-offsets and --reps: a case per size, offset and buffers, each the median of
    its repetitions, in the three units of one measurement."""
    exe = Path(vhostlab.path).parent / "vl_memcpy_ceiling"
    proc = subprocess.run([str(exe), "--sizes", "64", "--dst-offsets", "0,16", "--reps", "3",
                           "--seconds", "0.02", "--json"], capture_output=True, text=True,
                          timeout=120, check=True)
    doc = json.loads(proc.stdout)
    assert doc["reps"] == 3
    cases = doc["cases"]
    assert sorted((c["size"], c["dst_offset"], c["buffers"]) for c in cases) == [
        (64, 0, "cold"), (64, 0, "warm"), (64, 16, "cold"), (64, 16, "warm")]
    for c in cases:
        assert c["ns_per_copy"] > 0, c
        assert c["mcopies_per_s"] == pytest.approx(1e3 / c["ns_per_copy"], rel=0.01), c
        assert c["gbytes_per_s"] == pytest.approx(c["mcopies_per_s"] * 64 / 1e3, rel=0.01), c


def test_placement_verdict():
    """met: >= 1.10x in every placement with both back ends; capped: short only where touch
    itself is under 1.10x DPDK (paired where it has touch pairs); short: short somewhere
    with room under touch (or without a touch run); None: no placement has both back ends."""
    vs_dpdk = import_script("vs_dpdk")

    def p(close, far, touch_close=None, touch_far=None):
        out = {"close": {"ratio": close}, "far": {"ratio": far}}
        if touch_close is not None:
            out["close"]["touch_ratio"] = touch_close
        if touch_far is not None:
            out["far"]["touch_ratio"] = touch_far
        return out

    v = vs_dpdk.placement_verdict
    assert v(p(1.20, 1.10)) == "met"
    # With pairs, the placement's paired ratio is judged, not the ratio of its medians.
    q = p(1.20, 1.20)
    q["far"].update(paired=1.05, n_pairs=2)
    assert v(q) == "short"
    q["far"].update(touch_ratio=1.04)
    assert v(q) == "capped"
    # With touch pairs, touch's paired ratio is the ceiling, not the ratio of its medians.
    q["far"].update(touch_paired=1.12, n_touch_pairs=1)
    assert v(q) == "short"
    q["far"].update(touch_ratio=1.20, touch_paired=1.06)
    assert v(q) == "capped"
    q["close"].update(ratio=1.05, paired=1.15, n_pairs=1)
    q["far"].update(paired=1.12)
    assert v(q) == "met"
    assert v(p(1.20, None)) == "met"
    assert v(p(1.20, 1.02, touch_far=1.05)) == "capped"
    assert v(p(1.20, 1.02, touch_far=1.15)) == "short"
    assert v(p(1.20, 1.02)) == "short"
    assert v(p(1.05, 1.02, touch_close=1.30, touch_far=1.05)) == "short"
    assert v(p(None, None)) is None


def test_render_reproduces_the_report(report, tmp_path):
    """--render rebuilds the report from the run's JSON without running anything: the same
    markdown, the same cells."""
    out, doc, _ = report
    proc = subprocess.run([sys.executable, str(SCRIPT), "--render", str(out / "vs-dpdk.json"),
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "vs-dpdk.md").read_text() == (out / "vs-dpdk.md").read_text()
    assert json.loads((tmp_path / "vs-dpdk.json").read_text())["cells"] == doc["cells"]
    assert (tmp_path / "vs-dpdk.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert " Mpps " not in proc.stderr, "a render must not run anything"


def test_extend_runs_more_of_a_real_report(report, vhostlab, tmp_path):
    """--extend on the report just made, one pair more wanted of its first cell: the front
    end and both back ends start again from the JSON alone, the new runs measure traffic
    under fresh `rep` numbers, and every earlier run stays as it was."""
    out, doc, _ = report
    argv = [sys.executable, str(SCRIPT), "--extend", str(out / "vs-dpdk.json"),
            "--cells", CELLS[0], "--fill", str(FILL_K + 1), "--fill-minutes", "0.15",
            "--out", str(tmp_path), "--vhostlab", str(vhostlab.path)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    new = json.loads((tmp_path / "vs-dpdk.json").read_text())
    assert new["runs"][:len(doc["runs"])] == doc["runs"]
    added = new["runs"][len(doc["runs"]):]
    assert added and all(r["cell"] == CELLS[0] for r in added), added
    assert min(r["rep"] for r in added) > max(r["rep"] for r in doc["runs"])
    for r in added:
        assert "error" not in r and r["mpps"] > 0 and r["fill"] in ("close", "far"), r
    assert new["meta"]["extended"][0]["fill"]["runs"] == len(added)
    assert "names no serve build" not in proc.stderr, "the fresh report names its build"


def test_render_refuses_what_is_not_a_report(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cells": 3}')
    for path, word in ((tmp_path / "missing.json", "no such file"), (bad, "not a vs-dpdk.json")):
        proc = subprocess.run([sys.executable, str(SCRIPT), "--render", str(path), "--out",
                               str(tmp_path / "o")], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and word in proc.stderr and str(path) in proc.stderr, (
            path, proc.stderr)


def test_render_names_a_broken_fill_record(tmp_path):
    """The committed report with one fill or extension record broken by hand: --render
    says which record lacks what instead of failing with a traceback."""
    doc = committed_report()
    # A fill record and two extensions of the shape the script writes, whatever the
    # committed report's own history (a fresh run has no extension).
    fill = {"steady_runs_wanted": 3, "short_after": {"close": {}, "far": {}}, "runs": 0,
            "rounds": 0, "seconds": 0.0, "budget_seconds": 60.0, "waited_seconds": 0.0}
    doc["meta"]["fill"] = fill
    doc["meta"]["extended"] = [{"command": "scripts/vs_dpdk.py --extend x", "date": "d",
                                "cells": [], "fill": dict(fill)} for _ in range(2)]

    def broken(edit):
        d = json.loads(json.dumps(doc))
        edit(d["meta"])
        return d

    cases = [
        (lambda m: m["extended"][0].pop("fill"), "meta.extended[0] has no fill"),
        (lambda m: m["extended"][1]["fill"].pop("runs"), "meta.extended[1].fill has no runs"),
        (lambda m: m["fill"].pop("short_after"), "meta.fill has no short_after"),
        (lambda m: m.__setitem__("extended", {"fill": 3}), "meta.extended is not a list"),
        (lambda m: m["extended"][0].__setitem__("fill", [5]),
         "meta.extended[0].fill is not an object"),
    ]
    intact = tmp_path / "intact.json"
    intact.write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, str(SCRIPT), "--render", str(intact), "--out",
                           str(tmp_path / "intact")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for i, (edit, word) in enumerate(cases):
        path = tmp_path / f"broken{i}.json"
        path.write_text(json.dumps(broken(edit)))
        proc = subprocess.run([sys.executable, str(SCRIPT), "--render", str(path), "--out",
                               str(tmp_path / f"o{i}")], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2, (word, proc.stderr[-2000:])
        assert "not a vs-dpdk.json" in proc.stderr and word in proc.stderr, (word, proc.stderr)
        assert "Traceback" not in proc.stderr


def fake_program(name: str) -> str:
    return f"#!/bin/sh\n# {name}\nexit 1\n"


def extend_scripted(monkeypatch, tmp_path, doc: dict, args: list[str]):
    """vs_dpdk.main(--extend) on `doc` without processes: fake vhostlab-fast and probe
    files (parse_args wants them executable; --vhostlab names vhostlab-fast itself), every
    probe close, every run close at its cell's and back end's close median in `doc` where it
    has one (not suspect: suspect_runs). Returns
    (exit status, the runs measured, the log, the report written, the fake binaries)."""
    vs_dpdk = import_script("vs_dpdk")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("vhostlab-fast", "vl_cpu_pingpong"):
        (bin_dir / name).write_text(fake_program(name))
        (bin_dir / name).chmod(0o755)
    src = tmp_path / "earlier.json"
    src.write_text(json.dumps(doc))
    ran, said = [], []

    def measure(self, procs, c, b, rep):
        ran.append({"rep": rep, "cell": c.id, "backend": b, "seconds": self.a.seconds,
                    "warmup": self.a.warmup, "serve_arg": self.a.serve_arg})
        pl = next(x for x in doc["cells"] if x["cell"] == c.id)["placement"]
        # A report whose host never gave this cell the close placement has no close median:
        # twice the far one stands in (close runs go about twice as fast here).
        mpps = pl["close"][b] if pl["close"][b] is not None else 2 * (pl["far"][b] or 5.0)
        rec = {"rep": rep, "cell": c.id, "backend": b, "mpps": mpps, "placement": "close"}
        self.runs.append(rec)
        return rec

    monkeypatch.setattr(vs_dpdk.Bench, "probe", lambda self, serve=None: 100.0)
    monkeypatch.setattr(vs_dpdk.Bench, "start_config", lambda self, cfg: {})
    monkeypatch.setattr(vs_dpdk.Bench, "stop_config", lambda self, procs: None)
    monkeypatch.setattr(vs_dpdk.Bench, "measure", measure)
    monkeypatch.setattr(vs_dpdk, "check_machine", lambda p: None)
    monkeypatch.setattr(vs_dpdk, "log", said.append)
    monkeypatch.setattr(vs_dpdk.time, "sleep", lambda s: None)
    out = tmp_path / "out"
    rc = vs_dpdk.main(["--extend", str(src), "--vhostlab", str(bin_dir / "vhostlab-fast"),
                       "--out", str(out), *args])
    written = json.loads((out / "vs-dpdk.json").read_text()) if rc == 0 else None
    return rc, ran, said, written, bin_dir


def committed_report() -> dict:
    return json.loads((REPO / "reports" / "vs-dpdk.json").read_text())


@pytest.mark.parametrize("recorded", ["none", "same"])
def test_extend_carries_on_an_earlier_report(monkeypatch, tmp_path, recorded):
    """--extend loads an earlier report (the committed one) and fills only the cells --cells
    names, with the earlier window and serve arguments, under `rep` numbers none of its runs
    has (so a new run pairs only with new runs), keeps every earlier run as it was, records
    the extension and the serve build, and writes the report of all the runs. The earlier
    report names the same serve build, or (made before reports recorded it) none, which is
    said."""
    doc = committed_report()
    sha = hashlib.sha256(fake_program("vhostlab-fast").encode()).hexdigest()
    doc["meta"]["serve_sha256"] = sha if recorded == "same" else None
    cell = "split-mrg1-ord1-64-h2g"
    before = next(c for c in doc["cells"] if c["cell"] == cell)["placement"]["close"]
    # Short close, where every probe says it is, and above the K the report's last fill
    # aimed at, so the report names this extension's K apart from the earlier ones.
    k = max(before["n_pairs"], import_script("vs_dpdk").fill_ks(doc["meta"])[-1]) + 1
    rc, ran, said, out, bin_dir = extend_scripted(
        monkeypatch, tmp_path, doc, ["--cells", cell, "--fill", str(k), "--fill-minutes", "0.01"])
    assert rc == 0, said
    assert ran and {r["cell"] for r in ran} == {cell}, ran
    last = max(r["rep"] for r in doc["runs"])
    assert min(r["rep"] for r in ran) == last + 1, (last, ran[:3])
    meta = doc["meta"]
    assert {(r["seconds"], r["warmup"], tuple(r["serve_arg"])) for r in ran} == {
        (meta["seconds"], meta["warmup"], tuple(meta["serve_args"]))}
    assert out["runs"][:len(doc["runs"])] == doc["runs"]
    assert len(out["runs"]) == len(doc["runs"]) + len(ran)
    ext = out["meta"]["extended"]
    assert ext[:-1] == doc["meta"].get("extended", []), "earlier extensions are kept"
    assert ext[-1]["cells"] == [cell] and ext[-1]["fill"]["runs"] == len(ran)
    assert ext[-1]["fill"]["steady_runs_wanted"] == k
    assert hashlib.sha256((bin_dir / "vhostlab-fast").read_bytes()).hexdigest() == sha
    assert out["meta"]["serve_sha256"] == sha
    assert any("names no serve build" in s for s in said) == (recorded == "none"), said
    # The cell's close figures now include the new pair.
    after = next(c for c in out["cells"] if c["cell"] == cell)["placement"]["close"]
    assert after["n_pairs"] == k, (before, after)
    md = (tmp_path / "out" / "vs-dpdk.md").read_text()
    assert f"Extended by `scripts/vs_dpdk.py --extend {tmp_path / 'earlier.json'}" in md
    # What the fill runs aimed at names this extension's K too (the earlier ones' are lower,
    # whatever the committed report's fill aimed at).
    assert f", then {k} (`--extend`) pairs of DPDK and vhostlab or touch runs" in md


def test_extend_fills_to_the_last_extensions_k(monkeypatch, tmp_path):
    """Without --fill, --extend aims at the K the report's last fill aimed at -- its last
    extension's, not its first run's nor the highest; the report names the Ks in order."""
    doc = committed_report()
    cell = "split-mrg1-ord1-64-h2g"
    n = next(c for c in doc["cells"] if c["cell"] == cell)["placement"]["close"]["n_pairs"]

    def extension(k: int) -> dict:
        return {"command": "x", "date": "y", "cells": [cell], "load_start": None,
                "fill": {"steady_runs_wanted": k, "pairs": True, "touch_pairs": True,
                         "budget_seconds": 1, "rounds": 0, "runs": 0, "waited_seconds": 0,
                         "seconds": 0, "short_after": {"close": {}, "far": {}}}}

    # The run filled to 1, then extensions to high, 1 and last: the last is `last` (above
    # the cell's pairs, so the extension runs, and above 1, so the report names it apart).
    last = n + 2
    high = last + 1
    doc["meta"]["fill"]["steady_runs_wanted"] = 1
    doc["meta"]["extended"] = [extension(high), extension(1), extension(last)]
    doc["meta"]["serve_sha256"] = None
    rc, ran, said, out, _ = extend_scripted(monkeypatch, tmp_path, doc,
                                            ["--cells", cell, "--fill-minutes", "0.01"])
    assert rc == 0, said
    assert out["meta"]["extended"][-1]["fill"]["steady_runs_wanted"] == last
    assert ran and {r["cell"] for r in ran} == {cell}, ran
    after = next(c for c in out["cells"] if c["cell"] == cell)["placement"]["close"]
    assert after["n_pairs"] == last
    md = (tmp_path / "out" / "vs-dpdk.md").read_text()
    assert f"short of 1, then {high}, then 1, then {last} (`--extend`) pairs" in md


def test_extend_refuses_another_build_or_window(monkeypatch, tmp_path, capsys):
    """Runs of two serve builds, or of two windows, do not compare: --extend refuses both,
    naming what differs, and writes nothing."""
    doc = committed_report()
    doc["meta"]["serve_sha256"] = "0" * 64
    rc, ran, said, out, _ = extend_scripted(monkeypatch, tmp_path, doc,
                                            ["--fill-minutes", "0.01"])
    assert rc == 2 and not ran and out is None
    assert any("another serve build" in s and "000000000000" in s for s in said), said
    for args, word in ((["--seconds", "1"], "--seconds"), (["--reps", "2"], "--reps"),
                       (["--serve-arg", "--evict=on"], "--serve-arg"),
                       (["--render", "x.json"], "--render and --extend")):
        with pytest.raises(SystemExit) as e:
            extend_scripted(monkeypatch, tmp_path / args[0].strip("-"), doc, args)
        assert e.value.code == 2
        assert word in capsys.readouterr().err, args

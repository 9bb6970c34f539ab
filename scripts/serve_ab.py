#!/usr/bin/python3
"""A/B comparison of back ends under the same real front end: the tool behind every
"A against B" rate claim about `vhostlab serve` (a change to the core or to serve, an
option, DPDK's own back end).

Each variant is a back end: `dpdk` (testpmd's net_vhost), `null` or `touch` (serve's
ceilings), or a `vhostlab-fast serve` (the production program) -- this tree's or another
build's, with extra options.
For each repetition and each cell, every variant runs once, one after the other (the order
reversed on odd repetitions), with the front end (testpmd, virtio-user) and the window
exactly as scripts/vs_dpdk.py runs them; the placement probe (vl_cpu_pingpong) classifies
each run close, far or mixed. Per cell and placement: each variant's median Mpps (min-max,
how many runs), its ratio to the first variant's median, and the paired ratio -- the median,
over the repetitions where both ran in that placement, of variant / first variant, which a
machine's slow and fast spells (this VM's rates move 2x for minutes) disturb less. Mixed
runs (the probes before and after disagree) and unsteady ones (the window's interval rates
spread more than vs_dpdk.STEADY_MAX) are counted but left out of the medians.

Progress on stderr; the table on stdout (or --json). Exit 0 when every run measured
traffic, 1 when one failed, 2 on a usage error. See reports/README.md.
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import json
import os
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_dpdk as V  # noqa: E402  (the front end, the runs and the probe: one implementation)

# --sizes: frames the front end's 2048-byte mbufs hold in one segment each way (testpmd
# txonly's headers need 42 bytes; serve's txonly takes 60 and up).
MIN_SIZE, MAX_SIZE = 64, 1518

BACKENDS = ("dpdk", "null", "touch")


@dataclass
class Variant:
    name: str
    kind: str                   # dpdk, null, touch or vhostlab
    program: Path | None = None  # vhostlab: the program serve runs from (vhostlab-fast)
    args: list[str] = field(default_factory=list)  # vhostlab: serve options after --poll


def parse_variant(text: str, default_program: Path) -> Variant:
    """[NAME=]SPEC. SPEC: dpdk | null | touch | serve [ARG...] | PROGRAM [ARG...], split as
    a shell would (quote the variant as one word)."""
    name, sep, spec = text.partition("=")
    if not sep or " " in name or not name:
        name, spec = text, text
    try:
        words = shlex.split(spec)
    except ValueError as e:
        raise ValueError(f"variant {text!r}: {e}") from None
    if not words:
        raise ValueError(f"variant {text!r}: empty")
    if words[0] in BACKENDS:
        if len(words) > 1:
            raise ValueError(f"variant {text!r}: {words[0]} takes no options")
        return Variant(name, words[0])
    program = default_program if words[0] == "serve" else Path(words[0])
    if not os.access(program, os.X_OK):
        raise ValueError(f"variant {text!r}: {program} is not an executable vhostlab")
    # serve runs as vhostlab-fast, the production program: the one named, or the one
    # beside the vhostlab named (vhostlab itself serves on the lab build of the core).
    fast = V.serve_program(program)
    if not os.access(fast, os.X_OK):
        raise ValueError(f"variant {text!r}: no vhostlab-fast beside {program} (serve runs "
                         "as vhostlab-fast, the production program)")
    program = fast
    args = words[1:]
    return Variant(name, "vhostlab", program, args if "--poll" in args else ["--poll", *args])


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Interleaved A/B of back ends (DPDK's, serve's ceilings, vhostlab serve "
        "builds and options) under testpmd on virtio-user, per cell and CPU placement.",
        epilog="Variants: [NAME=]SPEC with SPEC dpdk, null, touch, 'serve [ARG...]' (this "
        "tree's vhostlab-fast, see --vhostlab) or 'PROGRAM [ARG...]' (another build's "
        "vhostlab-fast, or its vhostlab with vhostlab-fast beside it: serve runs as "
        "vhostlab-fast, the production program); serve runs with --poll unless told. The "
        "first variant is "
        "the reference of the ratios. Example: scripts/serve_ab.py --cells "
        "packed-mrg1-ord1-64-h2g --reps 8 old=/tmp/old/vhostlab new=serve dpdk. "
        "Cells as in scripts/vs_dpdk.py (RING-mrgM-ordO-SIZE-DIR, patterns allowed).")
    p.add_argument("variants", nargs="*", metavar="VARIANT")
    p.add_argument("--cells", required=True, help="comma-separated cell names or patterns")
    p.add_argument("--sizes", default=",".join(str(x) for x in V.SIZES),
                   help="frame sizes the cell patterns range over, bytes, comma-separated "
                        f"({MIN_SIZE}..{MAX_SIZE}; default "
                        f"{','.join(str(x) for x in V.SIZES)}, vs_dpdk's): e.g. --sizes 256 "
                        "--cells 'packed-*-256-g2h'")
    p.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    p.add_argument("--seconds", type=float, default=2.0,
                   help="measuring window per run (default 2)")
    p.add_argument("--warmup", type=float, default=0.5,
                   help="seconds of traffic before the window (default 0.5)")
    p.add_argument("--wait", choices=("close", "far"),
                   help="before each repetition of a cell, wait (at most --wait-max "
                   "seconds) until the probe finds the CPUs in this placement")
    p.add_argument("--wait-max", type=float, default=300.0,
                   help="longest wait for --wait, seconds (default 300)")
    p.add_argument("--vhostlab", type=Path,
                   default=Path(os.environ.get("VHOSTLAB_BIN",
                                               V.ROOT / "build/release/cli/vhostlab")),
                   help="the build of `serve` variants (its vhostlab, or its vhostlab-fast: "
                   "serve runs as vhostlab-fast), and the probe's directory "
                   "(default: $VHOSTLAB_BIN or build/release/cli/vhostlab)")
    p.add_argument("--json", action="store_true",
                   help="the result as JSON on stdout (variants, runs, per cell and placement)")
    a = p.parse_args(argv)
    if len(a.variants) < 2:
        p.error("give at least two variants (the first is the reference)")
    V.check_window_args(p, a)
    if not 0 < a.wait_max <= 3600:
        p.error(f"--wait-max {a.wait_max}: must be in (0, 3600]")
    try:
        a.variant_list = [parse_variant(v, a.vhostlab) for v in a.variants]
    except ValueError as e:
        p.error(str(e))
    names = [v.name for v in a.variant_list]
    if len(set(names)) != len(names):
        p.error(f"variant names must differ: {names}")
    pats = [s.strip() for s in a.cells.split(",") if s.strip()]
    try:
        sizes = sorted({int(x) for x in a.sizes.split(",") if x.strip()})
    except ValueError:
        p.error(f"--sizes {a.sizes!r}: give whole numbers of bytes, e.g. 64,256")
    bad = [x for x in sizes if not MIN_SIZE <= x <= MAX_SIZE]
    if not sizes or bad:
        p.error(f"--sizes {a.sizes!r}: each must be {MIN_SIZE}..{MAX_SIZE} bytes")
    cells = [V.Cell(r, m, o, z, d) for r, m, o, z, d in
             itertools.product(V.RINGS, V.ONOFF, V.ONOFF, sizes, V.DIRS)]
    a.cell_list = [c for c in cells if any(fnmatch.fnmatchcase(c.id, q) for q in pats)]
    if not a.cell_list:
        p.error(f"--cells {a.cells!r} names no cell (e.g. split-mrg1-ord1-64-g2h)")
    for v in a.variant_list:
        if v.kind in ("null", "touch"):
            bad = [c.id for c in a.cell_list if c.dir != "g2h"]
            if bad:
                p.error(f"variant {v.name}: {v.kind} only serves guest->host cells, not "
                        f"{', '.join(bad)}")
    V.check_machine(p)
    if not os.access(a.vhostlab.parent / "vl_cpu_pingpong", os.X_OK):
        p.error(f"no vl_cpu_pingpong beside {a.vhostlab}: the runs could not be placed")
    return a


def wait_for(a, where: str) -> float | None:
    """Probe until the placement is `where` or --wait-max passes; the last probe."""
    deadline = time.monotonic() + a.wait_max
    while True:
        ns = V.placement_probe(a.vhostlab)
        if ns is not None and V.placement(ns, ns) == where:
            return ns
        if time.monotonic() > deadline:
            V.log(f"  still not {where} after {a.wait_max:.0f} s (last probe {ns} ns): "
                  "running anyway")
            return ns
        time.sleep(1.0)


def one_run(bench: V.Bench, procs: dict, cell: V.Cell, v: Variant) -> dict:
    if v.kind == "dpdk":
        return bench.run_dpdk(procs, cell)
    if v.kind == "vhostlab":
        bench.a.vhostlab, bench.a.serve_arg = v.program, v.args
        return bench.run_serve(procs, cell, "vhostlab")
    bench.a.vhostlab, bench.a.serve_arg = bench.a.probe_vhostlab, ["--poll"]
    return bench.run_serve(procs, cell, v.kind)


def run(a) -> list[dict]:
    runs: list[dict] = []
    bargs = argparse.Namespace(vhostlab=a.vhostlab, probe_vhostlab=a.vhostlab,
                               serve_arg=["--poll"], warmup=a.warmup, seconds=a.seconds,
                               keep=False)
    bench = V.Bench(bargs)
    total = a.reps * len(a.cell_list) * len(a.variant_list)
    started = time.monotonic()
    try:
        for cell in a.cell_list:
            procs = bench.start_config(cell.config)
            since = time.monotonic()
            try:
                for rep in range(a.reps):
                    if a.wait:
                        wait_for(a, a.wait)
                    # Waits for a placement can outlast the processes' limit (timeout(1)
                    # kills them at PROC_LIMIT): start them again while they still live.
                    if time.monotonic() - since > V.CONFIG_MAX_AGE:
                        V.log(f"  starting the front ends and DPDK's back end for {cell.id} "
                              "again (they are old)")
                        bench.stop_config(procs)
                        procs = {}  # nothing to stop if the start fails
                        procs = bench.start_config(cell.config)
                        since = time.monotonic()
                    order = a.variant_list if rep % 2 == 0 else a.variant_list[::-1]
                    for v in order:
                        rec = {"cell": cell.id, "rep": rep, "variant": v.name}
                        try:
                            rec.update(one_run(bench, procs, cell, v))
                        except V.RunError as e:
                            rec["error"] = str(e)
                        V.classify_run(rec)  # by the probes the run took around its window
                        runs.append(rec)
                        el = time.monotonic() - started
                        what = (f"{rec['mpps']:.2f} Mpps" if "error" not in rec
                                else "FAILED: " + rec["error"].splitlines()[0])
                        V.log(f"[{len(runs)}/{total}] {cell.id} rep {rep + 1} {v.name}: {what} "
                              f"({rec['placement']}; {el:.0f} s, about "
                              f"{el / len(runs) * (total - len(runs)):.0f} s left)")
            finally:
                bench.stop_config(procs)
    finally:
        bench.cleanup()
    return runs


def summarize(variants: list[str], cells: list[str], runs: list[dict]) -> list[dict]:
    """Per cell and placement (close, far): each variant's runs, median, min, max, idle,
    the front end's share dropped for want of ring room (guest->host); ratio and paired
    ratio against variants[0]."""
    out = []
    ref = variants[0]
    for cell in cells:
        for where in ("close", "far"):
            ok = [r for r in runs if r["cell"] == cell and "error" not in r
                  and r["placement"] == where]
            if not ok:
                continue
            row = {"cell": cell, "placement": where, "variants": {}}
            for name in variants:
                vals = [r["mpps"] for r in ok if r["variant"] == name]
                idle = [r["serve_idle"] for r in ok
                        if r["variant"] == name and r.get("serve_idle") is not None]
                full = [x for r in ok if r["variant"] == name
                        and (x := V.fe_dropped_share(r)) is not None]
                row["variants"][name] = (
                    {"n": len(vals), "median": statistics.median(vals), "min": min(vals),
                     "max": max(vals),
                     "serve_idle": statistics.median(idle) if idle else None,
                     "fe_dropped": statistics.median(full) if full else None}
                    if vals else {"n": 0})
            base = row["variants"][ref]
            for name in variants:
                d = row["variants"][name]
                d["ratio"] = (d["median"] / base["median"]
                              if d["n"] and base["n"] and base["median"] > 0 else None)
                by_rep: dict[int, dict[str, float]] = {}
                for r in ok:
                    by_rep.setdefault(r["rep"], {})[r["variant"]] = r["mpps"]
                pairs = [x[name] / x[ref] for x in by_rep.values()
                         if name in x and ref in x and x[ref] > 0]
                d["paired"] = statistics.median(pairs) if pairs else None
                d["pairs"] = len(pairs)
            out.append(row)
    return out


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "—" if x is None else format(x, spec)


def table(variants: list[str], rows: list[dict], runs: list[dict]) -> str:
    lines = []
    for row in rows:
        lines.append(f"{row['cell']} ({row['placement']}):")
        lines.append(f"  {'variant':24} {'runs':>4} {'median Mpps':>11} {'min-max':>15} "
                     f"{'ratio':>6} {'paired':>6} {'pairs':>5} {'idle':>5} {'full':>6}")
        for name in variants:
            d = row["variants"][name]
            if not d["n"]:
                lines.append(f"  {name:24} {0:>4}")
                continue
            idle = "—" if d["serve_idle"] is None else f"{100 * d['serve_idle']:.0f}%"
            full = "—" if d["fe_dropped"] is None else f"{100 * d['fe_dropped']:.1f}%"
            lines.append(f"  {name:24} {d['n']:>4} {d['median']:>11.2f} "
                         f"{d['min']:>7.2f}-{d['max']:<7.2f} {fmt(d['ratio']):>6} "
                         f"{fmt(d['paired']):>6} {d['pairs']:>5} {idle:>5} {full:>6}")
    mixed = sum(1 for r in runs if r.get("placement") == "mixed" and "error" not in r)
    unsteady = sum(1 for r in runs if r.get("placement") == "unsteady" and "error" not in r)
    failed = sum(1 for r in runs if "error" in r)
    lines.append(f"{len(runs)} runs: {mixed} mixed (placement changed), {unsteady} unsteady "
                 f"(interval rates over {V.STEADY_MAX}x apart), both left out; {failed} failed. "
                 f"Ratio: median / {variants[0]}'s median; paired: median "
                 f"of run / {variants[0]}'s run in the same repetition and placement; full: "
                 f"the front end's packets dropped for want of ring room, median share.")
    return "\n".join(lines)


def main(argv=None) -> int:
    a = parse_args(argv)
    names = [v.name for v in a.variant_list]
    V.log(f"serve_ab: {len(a.cell_list)} cells x {a.reps} reps x {len(names)} variants "
          f"({', '.join(names)}), {a.seconds} s windows")
    try:
        runs = run(a)
    except KeyboardInterrupt:
        V.log("interrupted")
        return 1
    except V.RunError as e:
        V.log(f"FAILED: {e}")
        return 1
    rows = summarize(names, [c.id for c in a.cell_list], runs)
    if a.json:
        print(json.dumps({
            "variants": [{"name": v.name, "kind": v.kind,
                          "program": str(v.program) if v.program else None,
                          "args": v.args} for v in a.variant_list],
            "reps": a.reps, "seconds": a.seconds, "warmup": a.warmup,
            "cells": rows, "runs": runs}, indent=1))
    else:
        print(table(names, rows, runs))
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())

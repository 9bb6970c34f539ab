#!/usr/bin/python3
"""Reproduce the seeds' claims (techniques.md, items 1-5) as ratios measured by `vhostlab
bench`, and write reports/seed-claims.md, reports/seed-claims.json and
reports/seed-claims-*.png.

Each comparison's two cells (baseline A, technique B) are measured in the same bench
invocation, which interleaves their repetitions; technique 5 compares three builds of the
tree (default, -DVL_FORCE_INLINE=OFF, -DVL_LTO=ON), and technique 2 the default build with
one against two receive paths (-DVL_RX_TWO_PATHS=ON); all are configured and built under
--build-root and run round by round (round 1 of every build, then round 2, ...). The
verdict rules are in scripts/seedclaims/verdict.py and printed in the report.

  scripts/seed_claims.py                 the full report (several minutes; needs a quiet
                                         machine for figures worth committing)
  scripts/seed_claims.py --quick         smoke run: split ring only, few packets, no
                                         callgrind; variants only if already built
  scripts/seed_claims.py --bin PATH      measure this vhostlab-fast (or the one beside
                                         this vhostlab) instead of building the default
                                         variant

Every measurement runs `vhostlab-fast bench`: the production program, on the production
core (`vhostlab bench` runs on the lab build of the core).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from seedclaims import claims as C  # noqa: E402
from seedclaims import evaluate, measure, report  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="seed_claims.py",
        description="Reproduce the seeds' claims (techniques.md 1-5) with vhostlab bench and "
                    "write OUT/seed-claims.md, OUT/seed-claims.json, OUT/seed-claims-*.png.",
        epilog="Full run: about 6-7 minutes on a 2-core machine (four builds, then about 5 "
               "minutes of measurement). --quick: a few seconds with --bin.")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: split ring only, 20000 packets per repetition, 3 "
                        "repetitions unless --reps, no callgrind unless --instructions; the "
                        "no-inline, LTO and two-path builds are measured only if already built")
    p.add_argument("--reps", type=int, default=None,
                   help="interleaved repetitions per cell, and rounds per build "
                        "(default 9; 3 with --quick)")
    p.add_argument("--seconds", type=float, default=0.2,
                   help="length of one repetition of one cell (default 0.2; --quick "
                        "uses 20000 packets instead)")
    p.add_argument("--out", type=Path, default=ROOT / "reports",
                   help="output directory (default reports/)")
    p.add_argument("--build-root", type=Path,
                   default=Path(os.environ.get("VHOSTLAB_BUILD_ROOT", ROOT / "build"))
                   / "seed-claims",
                   help="where the default, noinline, lto and twopath builds go "
                        "(default $VHOSTLAB_BUILD_ROOT/seed-claims, i.e. build/seed-claims)")
    p.add_argument("--bin", type=Path, default=None,
                   help="an existing vhostlab-fast to measure as the default build, or a "
                        "vhostlab with vhostlab-fast beside it (nothing is built for it)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--instructions", dest="instructions", action="store_true", default=None,
                   help="also count instructions per packet with callgrind (default: on, "
                        "off with --quick)")
    g.add_argument("--no-instructions", dest="instructions", action="store_false")
    p.add_argument("--jobs", type=int, default=int(os.environ.get("VHOSTLAB_JOBS", "2")),
                   help="parallel build jobs (default $VHOSTLAB_JOBS or 2)")
    a = p.parse_args(argv)
    if a.reps is None:
        a.reps = 3 if a.quick else 9
    if a.instructions is None:
        a.instructions = not a.quick
    if not 1 <= a.reps <= 64:
        p.error("--reps must be 1..64")
    return a


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count()}


def commit(out: Path, root: Path = ROOT) -> str:
    """HEAD, and whether the tree differs from it -- not counting the files this script
    writes into OUT (an earlier run's report, tracked in reports/, changes nothing
    measured)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    head = git("rev-parse", "HEAD").stdout.strip() or "unknown"
    spec = ["--", "."]
    try:
        rel = out.resolve().relative_to(root.resolve())
        spec.append(f":(exclude){(rel / 'seed-claims*').as_posix()}")
    except ValueError:
        pass  # OUT outside the tree: nothing of it to leave out
    dirty = git("diff", "--quiet", "HEAD", *spec).returncode != 0
    return head + (" (plus uncommitted changes)" if dirty else "")


def executables(a, commands) -> dict:
    """The vhostlab-fast of each build variant to measure: built, or found prebuilt
    (--quick)."""
    exes = {}
    if a.bin:
        exes["default"] = measure.fast_program(a.bin.resolve())
        if not os.access(exes["default"], os.X_OK):
            measure.log(f"--bin {a.bin}: no vhostlab-fast at {exes['default']} (the "
                        "production program measures; build the vhostlab-fast target)")
            sys.exit(2)
    for name in C.BUILD_VARIANTS:
        if name in exes:
            continue
        prebuilt = a.build_root / name / "cli" / "vhostlab-fast"
        if a.quick and not (name == "default" and not a.bin):
            if prebuilt.exists():
                measure.check_variant(prebuilt, name)
                exes[name] = prebuilt
            else:
                measure.log(f"--quick: build '{name}' not built under {a.build_root}: skipped")
            continue
        exes[name] = measure.build_variant(ROOT, a.build_root, name, a.jobs, commands)
    return exes


def main(argv=None) -> int:
    a = parse_args(argv)
    # The tree as measured: taken before this run writes its own outputs, which are tracked
    # files in reports/ and would otherwise always make the tree look modified.
    measured = commit(a.out)
    commands = ["scripts/seed_claims.py " + " ".join(argv if argv is not None else sys.argv[1:])]
    layouts = "split" if a.quick else "split,packed"
    reps = ["--reps", str(a.reps)]
    length = ["--packets", "20000"] if a.quick else ["--seconds", str(a.seconds)]
    instr = ["--instructions"] if a.instructions else []

    exes = executables(a, commands)
    default = exes["default"]
    runs = {}
    for name, args in C.RUNS.items():
        if name == "builds":
            continue
        runs[name] = measure.bench(default, [*args, "--layout", layouts, *reps, *length,
                                             *instr], commands)
    # Technique 5: one repetition per invocation, builds interleaved round by round; the
    # first round also counts instructions.
    outputs = {b: [] for b in exes}
    for rnd in range(a.reps):
        for b, exe in exes.items():
            extra = instr if rnd == 0 else []
            outputs[b].append(measure.bench(exe, [*C.RUNS["builds"], "--layout", layouts,
                                                  "--reps", "1", *length, *extra], commands))
    per_build = measure.merge_build_reps(outputs)
    for b in per_build:
        if outputs[b]:
            measure.add_instructions(per_build[b], outputs[b][0])

    rows = []
    for claim in C.CLAIMS:
        rows += evaluate.claim_rows(claim, runs[claim.run]["cells"])
    rows.append(evaluate.line_count_row(C.LINE_COUNT_CLAIM, ROOT))
    build_details = []
    for claim in C.BUILD_CLAIMS:
        summary, details = evaluate.build_rows(claim, per_build)
        rows.append(summary)
        build_details += details
    # By technique and claim (build claims are evaluated last); a claim's rows keep their
    # order.
    rows.sort(key=lambda r: (r["technique"], r["id"]))

    a.out.mkdir(parents=True, exist_ok=True)
    from seedclaims import plots  # matplotlib is only needed once there is data
    png = [
        plots.ratios(rows, a.out / "seed-claims-ratios.png"),
        plots.by_size([c for c in runs["batching"]["cells"] + runs["batch_all"]["cells"]
                       if not c.get("mergeable")], "batch",
                      "Technique 1: batching (both directions, non-mergeable)",
                      a.out / "seed-claims-batching.png"),
        plots.by_size(runs["zero_copy"]["cells"], "zero_copy",
                      "Technique 3: zero-copy vs copy dequeue",
                      a.out / "seed-claims-zero-copy.png"),
        plots.alloc(runs["alloc"]["cells"], a.out / "seed-claims-alloc.png"),
    ]
    if len(per_build) > 1:
        png.append(plots.builds(per_build, a.out / "seed-claims-builds.png"))

    first = next(iter(runs.values()))
    m = machine() | {"compiler": first.get("compiler"), "bench_cpu": first.get("cpu")}
    data = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": measured, "machine": m, "mode": "quick" if a.quick else "full",
        "bench_args": " ".join(["--layout", layouts, *reps, *length, *instr]),
        "rows": rows, "build_details": build_details,
        "cells": {name: out["cells"] for name, out in runs.items()}
        | {f"builds: {b}": cells for b, cells in per_build.items()},
        "plots": [p.name for p in png], "commands": commands,
    }
    (a.out / "seed-claims.md").write_text(report.markdown(data))
    (a.out / "seed-claims.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    for r in rows:
        print(f"{r['id']:3} {r['label'][:28]:28} {r['verdict']:15} {report._fmt_ratio(r)[:70]}")
    print(f"seed_claims: wrote {a.out / 'seed-claims.md'}, seed-claims.json and "
          f"{len(png)} plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Fuzzing campaigns with a ledger: `./lab fuzz` (docs/fuzzing.md, "Campaigns").

    scripts/fuzz_campaign.py [--minutes N] [--jobs J] [--targets a,b] [--build DIR]
                             [--ledger FILE] [--corpus-root DIR] [--dry-ledger]

For every target (in turn, or J at a time): fuzz for N minutes starting from the committed
corpus (fuzz/corpus/<target>), the generated seeds and the named regressions; merge what it
found into the committed corpus, minimised (libFuzzer -merge=1: only inputs that add
coverage are kept); and append one row per target to the ledger (reports/fuzz.json), with
the numbers taken from libFuzzer's own final statistics:

    {"campaigns": [{"commit", "date", "minutes", "jobs", "targets": [{"name",
      "executions", "seconds", "corpus_before", "corpus_after", "features", "crashes",
      "unresolved_crashes", "crash_files", "traces"}]}]}

A crash input is kept in build/fuzz-crashes/<target>/, converted to a trace with
`vhostlab trace from-fuzz` where the target has a converter (tests/traces/fuzz-*.trace,
named in the row's "traces"), and counted unresolved until it replays clean: the row says
so, and the campaign exits 1. reports/fuzz.md is regenerated from the whole ledger.

The fuzz build (clang, VL_FUZZ=ON, Asan), the seeds and the replay of everything a target
already has come from fuzz/run.sh --seconds 0, so a campaign starts only from a clean
replay. Campaigns stay out of `./lab test` (its fuzz part replays and fuzzes 60 s/target).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALL_TARGETS = ["fuzz_split_dequeue", "fuzz_split_enqueue", "fuzz_packed_dequeue",
               "fuzz_packed_enqueue", "fuzz_scenario", "fuzz_differential",
               "fuzz_trace_parse", "fuzz_vhost_user", "fuzz_offload",
               "fuzz_fe_replies"]
# Targets `vhostlab trace from-fuzz` converts (docs/cli.md).
TRACEABLE = {"fuzz_split_dequeue", "fuzz_split_enqueue", "fuzz_packed_dequeue",
             "fuzz_packed_enqueue", "fuzz_scenario"}
CRASH_PREFIXES = ("crash-", "leak-", "timeout-", "oom-", "slow-unit-")


def die(msg: str, code: int = 2) -> None:
    print(f"fuzz_campaign: {msg}", file=sys.stderr)
    sys.exit(code)


def log(msg: str) -> None:
    print(f"==> {msg}", file=sys.stderr, flush=True)


def count_files(d: Path) -> int:
    return sum(1 for p in d.iterdir() if p.is_file()) if d.is_dir() else 0


def final_stats(text: str) -> dict:
    """libFuzzer's -print_final_stats=1 lines (stat::name: value), and the last status
    line's cov/ft when the run ended without them."""
    stats = {k: int(v) for k, v in re.findall(r"^stat::(\w+):\s*(\d+)", text, re.M)}
    ft = re.findall(r"\bft: (\d+)", text)
    if ft:
        stats["features"] = int(ft[-1])
    if "number_of_executed_units" not in stats:
        runs = re.findall(r"^#(\d+)", text, re.M)
        stats["number_of_executed_units"] = int(runs[-1]) if runs else 0
    return stats


def commit_of() -> str:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                       text=True)
    head = r.stdout.strip() if r.returncode == 0 else "unknown"
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "core",
                            "sim", "fuzz"], capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def fuzz_one(t: str, a: argparse.Namespace, build: Path, seeds: Path, corpus_root: Path,
             crash_root: Path, vhostlab: Path) -> dict:
    exe = build / "fuzz" / t
    corpus = corpus_root / t
    corpus.mkdir(parents=True, exist_ok=True)
    crashdir = crash_root / t
    crashdir.mkdir(parents=True, exist_ok=True)
    regs = ROOT / "fuzz" / "regressions" / t
    before_crashes = {p.name for p in crashdir.iterdir()}
    corpus_before = count_files(corpus)
    seconds = int(a.minutes * 60)
    flags = ["-timeout=10", "-rss_limit_mb=2048", f"-artifact_prefix={crashdir}/",
             "-print_final_stats=1", f"-max_total_time={seconds}"]
    dict_file = ROOT / "fuzz" / f"{t}.dict"
    if dict_file.is_file():
        flags.append(f"-dict={dict_file}")
    with tempfile.TemporaryDirectory(prefix=f"campaign-{t}-") as tmp:
        fresh = Path(tmp) / "new"
        fresh.mkdir()
        inputs = [str(fresh), str(corpus), str(seeds / t)]
        if regs.is_dir():
            inputs.append(str(regs))
        log(f"{t}: fuzzing {a.minutes:g} min from {corpus_before} corpus inputs")
        start = time.monotonic()
        run = subprocess.run([str(exe), *flags, *inputs], capture_output=True, text=True,
                             errors="replace")
        took = time.monotonic() - start
        (Path(a.logs) / f"{t}.log").write_text(run.stdout + run.stderr)
        stats = final_stats(run.stderr + run.stdout)
        # Minimise the committed corpus and what this run found into one set.
        merged = Path(tmp) / "merged"
        merged.mkdir()
        m = subprocess.run([str(exe), "-merge=1", f"-artifact_prefix={crashdir}/",
                            "-timeout=10", "-rss_limit_mb=2048", str(merged), str(corpus),
                            str(fresh)], capture_output=True, text=True, errors="replace")
        (Path(a.logs) / f"{t}.merge.log").write_text(m.stdout + m.stderr)
        if m.returncode == 0 and count_files(merged) > 0:
            shutil.rmtree(corpus)
            shutil.copytree(merged, corpus)
    crash_files = sorted(p for p in crashdir.iterdir()
                         if p.name not in before_crashes and p.name.startswith(CRASH_PREFIXES))
    traces, unresolved = [], 0
    for f in crash_files:
        # Still crashing? (A crash found mid-run may be fixed by the time it is looked at.)
        again = subprocess.run([str(exe), "-timeout=10", "-rss_limit_mb=2048", str(f)],
                               capture_output=True, text=True, errors="replace")
        if again.returncode != 0:
            unresolved += 1
        if t in TRACEABLE:
            out = ROOT / "tests" / "traces" / f"fuzz-{t[5:].replace('_', '-')}-{f.name[-8:]}.trace"
            tr = subprocess.run([str(vhostlab), "trace", "from-fuzz", t, str(f), "-o",
                                 str(out), "--lossy"], capture_output=True, text=True)
            if tr.returncode == 0 or out.exists():
                traces.append(str(out.relative_to(ROOT)))
    if run.returncode != 0 and not crash_files:
        unresolved += 1  # a failure that left no artifact still counts
    return {
        "name": t,
        "executions": stats.get("number_of_executed_units", 0),
        "seconds": round(took, 1),
        "exec_per_sec": stats.get("average_exec_per_sec", 0),
        "corpus_before": corpus_before,
        "corpus_after": count_files(corpus),
        "features": stats.get("features", 0),
        "new_units": stats.get("new_units_added", 0),
        "crashes": len(crash_files) + (1 if run.returncode != 0 and not crash_files else 0),
        "unresolved_crashes": unresolved,
        "crash_files": [str(p) for p in crash_files],
        "traces": traces,
    }


def render_md(ledger: dict) -> str:
    rows = ledger.get("campaigns", [])
    total = sum(t["executions"] for c in rows for t in c["targets"])
    unresolved = sum(t["unresolved_crashes"] for c in rows for t in c["targets"])
    per: dict[str, dict] = {}
    for c in rows:
        for t in c["targets"]:
            p = per.setdefault(t["name"], {"executions": 0, "seconds": 0.0, "crashes": 0,
                                           "unresolved": 0, "corpus": 0, "features": 0})
            p["executions"] += t["executions"]
            p["seconds"] += t["seconds"]
            p["crashes"] += t["crashes"]
            p["unresolved"] += t["unresolved_crashes"]
            p["corpus"] = t["corpus_after"]
            p["features"] = max(p["features"], t["features"])
    out = ["# Fuzzing ledger", "",
           "Generated by `scripts/fuzz_campaign.py` (`./lab fuzz`) from `reports/fuzz.json`; "
           "do not edit.", "",
           f"**{total:,} executions** in {len(rows)} campaign(s); "
           f"{unresolved} unresolved crash(es).", "",
           "## Per target", "",
           "| target | executions | hours | exec/s | corpus now | features (max) | crashes | unresolved |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in sorted(per):
        p = per[name]
        rate = p["executions"] / p["seconds"] if p["seconds"] else 0
        out.append(f"| {name} | {p['executions']:,} | {p['seconds'] / 3600:.2f} | "
                   f"{rate:,.0f} | {p['corpus']} | {p['features']} | {p['crashes']} | "
                   f"{p['unresolved']} |")
    out += ["", "## Campaigns", "",
            "| date | commit | minutes/target | jobs | executions | crashes | unresolved |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in rows:
        ex = sum(t["executions"] for t in c["targets"])
        cr = sum(t["crashes"] for t in c["targets"])
        un = sum(t["unresolved_crashes"] for t in c["targets"])
        out.append(f"| {c['date']} | `{c['commit'][:12]}` | {c['minutes']:g} | {c['jobs']} | "
                   f"{ex:,} | {cr} | {un} |")
    crashes = [(c, t) for c in rows for t in c["targets"] if t["crashes"]]
    if crashes:
        out += ["", "## Crashes", ""]
        for c, t in crashes:
            out.append(f"- {c['date']} {t['name']}: {t['crashes']} crash(es), "
                       f"{t['unresolved_crashes']} unresolved; traces: "
                       f"{', '.join(t['traces']) or 'none'}")
    return "\n".join(out) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(prog="./lab fuzz", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0,
                   help="fuzzing time per target (default 10)")
    p.add_argument("--jobs", type=int, default=1,
                   help="targets fuzzed at the same time (default 1; at most the CPUs)")
    p.add_argument("--targets", default=",".join(ALL_TARGETS),
                   help="comma-separated targets (default: all eight)")
    p.add_argument("--build", default=str(ROOT / "build" / "fuzz"),
                   help="the VL_FUZZ build tree (default build/fuzz)")
    p.add_argument("--ledger", default=str(ROOT / "reports" / "fuzz.json"),
                   help="the ledger to append to (default reports/fuzz.json); "
                        "reports/fuzz.md is written beside it")
    p.add_argument("--corpus-root", default=str(ROOT / "fuzz" / "corpus"),
                   help="the committed corpora (default fuzz/corpus)")
    p.add_argument("--vhostlab", default=str(ROOT / "build" / "release" / "cli" / "vhostlab"),
                   help="the vhostlab program for `trace from-fuzz`")
    p.add_argument("--render-only", action="store_true",
                   help="only regenerate the Markdown report from the ledger")
    a = p.parse_args()
    targets = [t for t in a.targets.split(",") if t]
    for t in targets:
        if t not in ALL_TARGETS:
            die(f"--targets: unknown target '{t}' (targets: {', '.join(ALL_TARGETS)})")
    if a.minutes <= 0:
        die(f"--minutes: {a.minutes:g} is not a positive number of minutes")
    if a.jobs < 1 or a.jobs > (os.cpu_count() or 1):
        die(f"--jobs: {a.jobs} is not between 1 and the {os.cpu_count()} CPUs")
    ledger_path = Path(a.ledger)
    ledger = {"campaigns": []}
    if ledger_path.exists():
        try:
            ledger = json.loads(ledger_path.read_text())
        except json.JSONDecodeError as e:
            die(f"--ledger: {ledger_path} is not JSON ({e})")
        if not isinstance(ledger.get("campaigns"), list):
            die(f"--ledger: {ledger_path} has no \"campaigns\" list")
    md_path = ledger_path.with_suffix(".md")
    if a.render_only:
        md_path.write_text(render_md(ledger))
        print(f"wrote {md_path}")
        return 0

    build = Path(a.build)
    work = ROOT / "build" / "fuzz-campaign"
    work.mkdir(parents=True, exist_ok=True)
    a.logs = str(work / "logs")
    Path(a.logs).mkdir(exist_ok=True)
    # Build, seeds, and a clean replay of everything each target already has.
    log("fuzz/run.sh --seconds 0: build, seeds, replay")
    rep = subprocess.run([str(ROOT / "fuzz" / "run.sh"), "--seconds", "0", "--build",
                          str(build), "--corpus", str(work), *targets])
    if rep.returncode != 0:
        die("the replay before the campaign failed: fix or keep that input as a regression "
            "first (fuzz/run.sh printed which)", 1)
    vhostlab = Path(a.vhostlab)
    if not vhostlab.exists():
        die(f"--vhostlab: {vhostlab} is not built (./lab run builds it)")
    campaign = {"commit": commit_of(),
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                "minutes": a.minutes, "jobs": a.jobs, "targets": []}
    corpus_root = Path(a.corpus_root)
    crash_root = ROOT / "build" / "fuzz-crashes"
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futs = [pool.submit(fuzz_one, t, a, build, work / "seeds", corpus_root, crash_root,
                            vhostlab) for t in targets]
        for f in futs:
            row = f.result()
            campaign["targets"].append(row)
            print(f"{row['name']:22} {row['executions']:>12,} execs {row['seconds']:>8.0f} s "
                  f"corpus {row['corpus_before']:>5} -> {row['corpus_after']:<5} "
                  f"ft {row['features']:>6} crashes {row['crashes']} "
                  f"(unresolved {row['unresolved_crashes']})", flush=True)
    ledger["campaigns"].append(campaign)
    ledger_path.write_text(json.dumps(ledger, indent=1) + "\n")
    md_path.write_text(render_md(ledger))
    total = sum(t["executions"] for c in ledger["campaigns"] for t in c["targets"])
    this = sum(t["executions"] for t in campaign["targets"])
    bad = sum(t["unresolved_crashes"] for t in campaign["targets"])
    print(f"campaign: {this:,} executions; ledger: {total:,} in "
          f"{len(ledger['campaigns'])} campaigns; {bad} unresolved crashes "
          f"({ledger_path.relative_to(ROOT) if ledger_path.is_relative_to(ROOT) else ledger_path})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

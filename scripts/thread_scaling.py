#!/usr/bin/env python3
"""Queues over threads, measured: `vhostlab-fast bench --threads 2` against `--threads 1`.

  scripts/thread_scaling.py [--bin PATH] [--rounds N] [--seconds S] [--json FILE]
                            [-- BENCH CELL OPTIONS...]

Each thread of `bench --threads N` runs its own simulated guest, memory table, queues and
pool (the threads share nothing of the datapath), so on N idle cores N threads should move
N times the packets. This script measures that two ways:

  packets per second   bench's wall_mpps: every thread's packets over its own wall time
                       (guest work included), summed. 1 and 2 threads alternate, one
                       repetition each per round, for --rounds rounds; reported are the
                       median of each, the ratio of the medians and the per-round ratios
                       (median [min-max]). Wall-clock: meaningful only on a quiet machine
                       with at least two idle cores.
  instructions/packet  callgrind (bench --instructions --packets 20000) with 1 and 2
                       threads: stable under load. Two threads must cost what one does.

The goals (issue 59): at least 1.8x the packets per second with 2 threads, and instructions
per packet within 2 %. The verdict line names each; the exit status is 0 whatever they say
(1 when a run failed, 2 on a usage error), so the measurement can be taken on a busy machine
without pretending to decide there. --json FILE writes everything measured.

Default cells: split and packed, 64 bytes, dequeue and enqueue (--direction dequeue,enqueue
--layout split,packed --sizes 64); anything after `--` replaces them (bench's cell options).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CELLS = ["--direction", "dequeue,enqueue", "--layout", "split,packed", "--sizes", "64"]
GOAL_RATIO = 1.8
GOAL_INSTR_PCT = 2.0


def die(msg, status=2):
    print(f"thread_scaling: {msg}", file=sys.stderr)
    sys.exit(status)


def bench(binary, threads, cells, extra):
    cmd = [binary, "bench", "--threads", str(threads), "--json", "--quiet", *extra, *cells]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        die(f"`{' '.join(cmd)}` failed (exit {proc.returncode})", 1)
    return json.loads(proc.stdout)


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    argv = sys.argv[1:]
    cells = DEFAULT_CELLS
    if "--" in argv:
        i = argv.index("--")
        argv, cells = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "cli",
                                                  "vhostlab-fast"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--json")
    ap.add_argument("-h", "--help", action="store_true")
    args, rest = ap.parse_known_args(argv)
    if args.help:
        print(__doc__.strip())
        return 0
    if rest:
        die(f"unknown argument '{rest[0]}' (try --help)")
    if args.rounds < 1:
        die(f"--rounds {args.rounds}: at least 1")
    if not os.access(args.bin, os.X_OK):
        die(f"no vhostlab-fast at {args.bin} (build it, or give --bin)")

    # Packets per second: 1 and 2 threads alternate, so a slow spell hits both.
    walls = {1: {}, 2: {}}
    for r in range(args.rounds):
        print(f"thread_scaling: round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        for n in (1, 2):
            out = bench(args.bin, n, cells, ["--reps", "1", "--seconds", str(args.seconds)])
            for c in out["cells"]:
                walls[n].setdefault(c["name"], []).append(c["wall_mpps"]["median"])
    # Instructions per packet, both thread counts.
    instr = {}
    for n in (1, 2):
        print(f"thread_scaling: callgrind, {n} thread(s)", file=sys.stderr, flush=True)
        out = bench(args.bin, n, cells, ["--reps", "1", "--packets", "20000",
                                         "--instructions"])
        instr[n] = {c["name"]: c["instr_per_pkt"] for c in out["cells"]}

    rows = []
    print(f"{'cell':<76} {'1 thr Mpps':>10} {'2 thr Mpps':>10} {'ratio':>6} "
          f"{'round ratios':>20} {'instr 1':>8} {'instr 2':>8} {'delta':>7}")
    for name in walls[1]:
        one, two = walls[1][name], walls[2][name]
        paired = [b / a for a, b in zip(one, two) if a > 0]
        ratio = statistics.median(two) / statistics.median(one)
        i1, i2 = instr[1].get(name), instr[2].get(name)
        delta = (i2 - i1) / i1 * 100.0 if i1 and i2 else None
        pr = spread(paired)
        rows.append({"cell": name, "mpps_1": spread(one), "mpps_2": spread(two),
                     "ratio_of_medians": ratio, "round_ratios": pr,
                     "instr_per_pkt_1": i1, "instr_per_pkt_2": i2, "instr_delta_pct": delta,
                     "ratio_goal_met": ratio >= GOAL_RATIO,
                     "instr_goal_met": delta is not None and abs(delta) <= GOAL_INSTR_PCT})
        print(f"{name:<76} {statistics.median(one):10.2f} {statistics.median(two):10.2f} "
              f"{ratio:6.2f} {pr['median']:6.2f} [{pr['min']:.2f}-{pr['max']:.2f}] "
              f"{i1 or 0:8.1f} {i2 or 0:8.1f} "
              f"{'' if delta is None else f'{delta:+6.2f}%'}")
    ok_ratio = all(r["ratio_goal_met"] for r in rows)
    ok_instr = all(r["instr_goal_met"] for r in rows)
    print(f"thread_scaling: packets/s with 2 threads >= {GOAL_RATIO}x 1 thread: "
          f"{'met' if ok_ratio else 'NOT met'} (met in {sum(r['ratio_goal_met'] for r in rows)} "
          f"of {len(rows)} cells; wall clock: trust it only on a quiet machine, "
          f"{os.cpu_count()} CPUs here); instructions/packet within {GOAL_INSTR_PCT:g} %: "
          f"{'met' if ok_instr else 'NOT met'}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"bin": args.bin, "rounds": args.rounds, "seconds": args.seconds,
                       "cells_args": cells, "cpus": os.cpu_count(),
                       "goal_ratio": GOAL_RATIO, "goal_instr_pct": GOAL_INSTR_PCT,
                       "cells": rows}, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

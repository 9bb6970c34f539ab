#!/usr/bin/env python3
"""CI gate on the core's instructions per packet (vhostlab-fast bench --instructions).

  scripts/perf_gate.py                 measure the gate cells and compare them with
                                       reports/baseline/instructions.json: exit 1 when a
                                       cell costs more than 3 % above its baseline
  scripts/perf_gate.py --update        measure and rewrite the baseline (on purpose: commit
                                       it with the change that moved the numbers)

Instruction counts come from callgrind, collecting only inside the core's calls, so they are
repeatable on a noisy machine (two runs agree exactly); wall-clock times would not be. They
do depend on the compiler, its flags and the CPU features glibc's memcpy picks: the
baseline records the compiler, build type and CPU, and a comparison across a different one
is flagged.

The gate measures the production core: `vhostlab-fast bench`, the production program.
`vhostlab bench` runs on the lab build of the core (guest-load hooks), whose counts are not
the production ones, so a --bin naming vhostlab measures the vhostlab-fast beside it, and a
measurement from any other core is refused (exit 2).

Options:
  --bin PATH        vhostlab-fast, or a vhostlab with vhostlab-fast beside it (default: the
                    one beside $VHOSTLAB_BIN, else build/release/cli/vhostlab-fast)
  --baseline FILE   baseline to compare with / write (default reports/baseline/instructions.json)
  --measured FILE   compare this `vhostlab-fast bench --instructions --json` output (or a file
                    written by --save) instead of measuring
  --save FILE       also write the measurement (bench JSON cells) to FILE
  --tolerance PCT   allowed rise in percent (default 3)
Exit status: 0 within tolerance (improvements are only reported), 1 a regression or a
missing cell, 2 usage or setup error.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BASELINE = os.path.join(ROOT, "reports", "baseline", "instructions.json")
PACKETS = 20000

# The gate cells: both layouts and directions, 64 and 1518 bytes, mergeable on and off,
# batching at the default threshold, zero-copy dequeue and packed in-order, and forwarding.
# Each is one `vhostlab-fast bench` cell (the options not given keep bench's defaults).
GATE_CELLS = [
    ["--direction", "dequeue", "--layout", "split", "--sizes", "64"],
    ["--direction", "dequeue", "--layout", "split", "--sizes", "1518"],
    ["--direction", "dequeue", "--layout", "packed", "--sizes", "64"],
    ["--direction", "dequeue", "--layout", "packed", "--sizes", "1518"],
    ["--direction", "enqueue", "--layout", "split", "--sizes", "64", "--mergeable", "on"],
    ["--direction", "enqueue", "--layout", "split", "--sizes", "1518"],
    ["--direction", "enqueue", "--layout", "packed", "--sizes", "64"],
    ["--direction", "enqueue", "--layout", "packed", "--sizes", "1518", "--mergeable", "on"],
    ["--direction", "dequeue", "--layout", "split", "--sizes", "1518", "--zero-copy", "on"],
    ["--direction", "dequeue", "--layout", "packed", "--sizes", "64", "--in-order", "on"],
    ["--direction", "enqueue", "--layout", "packed", "--sizes", "1518", "--mergeable", "on",
     "--in-order", "on"],
    ["--direction", "both", "--layout", "split", "--sizes", "64", "--mergeable", "on"],
    # With VIRTIO_NET_F_CSUM, dequeue reads and checks every TX header (without it, as in
    # the cells above, the header is not read).
    ["--direction", "dequeue", "--layout", "packed", "--sizes", "64", "--csum", "on"],
    # Chains of two descriptors, the header in the first (as a Linux guest sends headers and
    # data apart): the general chain walk, the copy of several pieces into one segment, the
    # zero-copy packet of two segments, and the two as an indirect table (how Linux and
    # DPDK's virtio-user send them when VIRTIO_RING_F_INDIRECT_DESC is negotiated).
    ["--direction", "dequeue", "--layout", "split", "--sizes", "1518", "--pieces", "2"],
    ["--direction", "dequeue", "--layout", "split", "--sizes", "1518", "--pieces", "2",
     "--indirect", "on"],
    ["--direction", "dequeue", "--layout", "packed", "--sizes", "1518", "--pieces", "2",
     "--zero-copy", "on"],
    # A jumbo frame over six mergeable receive buffers: reserving several chains per packet,
    # and the packed window asked for them ahead.
    ["--direction", "enqueue", "--layout", "packed", "--sizes", "9000", "--mergeable", "on"],
    # Queues over threads: forwarding on two threads at once, each its own guest (bench
    # --threads). Its name gets "/threads=2"; it must also stay within THREAD_TWIN_PCT of
    # the same cell on one thread, measured in the same run (the "both" cell above).
    ["--direction", "both", "--layout", "split", "--sizes", "64", "--mergeable", "on",
     "--threads", "2"],
]
# A cell run on N threads costs the core the instructions per packet of one thread: the
# threads share nothing. Allowed difference from its one-thread twin, in percent.
THREAD_TWIN_PCT = 2.0


def threads_of(args):
    """The --threads value of a gate cell's arguments (1 when not given)."""
    return int(args[args.index("--threads") + 1]) if "--threads" in args else 1


def die(msg, status=2):
    print(f"perf_gate: {msg}", file=sys.stderr)
    sys.exit(status)


def fast_program(path):
    """The production program the gate runs: path itself when it names vhostlab-fast, else
    the vhostlab-fast beside it (path: the lab program, vhostlab)."""
    if os.path.basename(path) == "vhostlab-fast":
        return path
    return os.path.join(os.path.dirname(path), "vhostlab-fast")


def build_type_of(binary):
    """CMAKE_BUILD_TYPE of the build tree the binary sits in (cli/ under it), if found."""
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))),
                         "CMakeCache.txt")
    try:
        with open(cache, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"CMAKE_BUILD_TYPE:\w+=(.*)", line)
                if m:
                    return m.group(1).strip() or "Release"
    except OSError:
        pass
    return "unknown"


def valgrind_version():
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:
        return "none"


def measure(binary):
    """Run every gate cell; return the bench JSON header of the first run and the cells."""
    head, cells = None, []
    for i, args in enumerate(GATE_CELLS):
        cmd = [binary, "bench", "--instructions", "--reps", "1", "--packets", str(PACKETS),
               "--json", "--quiet"] + args
        print(f"perf_gate: [{i + 1}/{len(GATE_CELLS)}] {' '.join(args)}", file=sys.stderr,
              flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            die(f"`{' '.join(cmd)}` failed (exit {proc.returncode})", 1)
        out = json.loads(proc.stdout)
        head = head or out
        n = threads_of(args)
        for c in out["cells"]:
            if n > 1:  # bench names cells without their thread count
                c["name"] += f"/threads={n}"
            cells.append(c)
    return head, cells


def check_thread_twins(cells):
    """Every "/threads=N" cell against the same cell on one thread, measured beside it:
    the count of failures (more than THREAD_TWIN_PCT apart)."""
    by_name = {c["name"]: c for c in cells}
    failures = 0
    for c in cells:
        m = re.match(r"(.*)/threads=(\d+)$", c["name"])
        if not m or m.group(1) not in by_name:
            continue
        one, many = by_name[m.group(1)].get("instr_per_pkt"), c.get("instr_per_pkt")
        if not one or not many:
            continue
        delta = (many - one) / one * 100.0
        ok = abs(delta) <= THREAD_TWIN_PCT
        print(f"perf_gate: {m.group(2)} threads: {many:.2f} instructions/packet against "
              f"{one:.2f} on one ({delta:+.2f} %){'' if ok else f'  FAIL: more than {THREAD_TWIN_PCT:g} % apart'}")
        failures += 0 if ok else 1
    return failures


def load_json(path, what):
    """The JSON object in path, or exit 2 naming the file and what is wrong with it."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        die(f"cannot read the {what} {path}: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        die(f"the {what} {path} is not JSON: {e}")
    if not isinstance(data, dict):
        die(f"the {what} {path} is not a JSON object")
    return data


def load_measured(path):
    data = load_json(path, "measurement")
    if not isinstance(data.get("cells"), list):
        die(f"the measurement {path} has no \"cells\" list (give the output of "
            "`vhostlab-fast bench --instructions --json` or of --save)")
    return data, data["cells"]


def write_baseline(path, head, cells, binary):
    base = {
        "what": "instructions per packet of the core alone (callgrind, vhostlab bench "
                "--instructions), per gate cell; scripts/perf_gate.py compares against it",
        "update": "scripts/perf_gate.py --update",
        "tolerance_pct": 3.0,
        "core": head.get("core"),
        "compiler": head.get("compiler"),
        "build_type": build_type_of(binary) if binary else head.get("build_type", "unknown"),
        "cpu": head.get("cpu"),
        "valgrind": valgrind_version(),
        "packets": PACKETS,
        "burst": head.get("burst"),
        "queue_size": head.get("queue_size"),
        "cells": {c["name"]: round(c["instr_per_pkt"], 2) for c in cells},
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(base, f, indent=2)
        f.write("\n")
    print(f"perf_gate: wrote {len(cells)} cells to {os.path.relpath(path, ROOT)}")


def compare(base, head, cells, tol):
    """Print every cell with its delta; return the number of failures."""
    failures = 0
    improved = []
    for key in ("compiler", "core"):
        if base.get(key) and head.get(key) and base[key] != head[key]:
            print(f"perf_gate: note: baseline {key} '{base[key]}', measured '{head[key]}' "
                  "(counts may differ for that reason alone)")
    print(f"{'cell':<80} {'baseline':>9} {'measured':>9} {'delta':>8}")
    seen = set()
    for c in cells:
        name, got = c["name"], c.get("instr_per_pkt")
        seen.add(name)
        want = base["cells"].get(name)
        if got is None:
            print(f"{name:<80} {'':>9} {'-':>9}  FAIL: no instruction count")
            failures += 1
            continue
        if want is None:
            print(f"{name:<80} {'-':>9} {got:9.1f}  FAIL: no baseline for this cell "
                  "(scripts/perf_gate.py --update)")
            failures += 1
            continue
        delta = (got - want) / want * 100.0
        verdict = ""
        if delta > tol:
            verdict = f"  FAIL: more than {tol:g} % above the baseline"
            failures += 1
        elif delta < -tol:
            verdict = "  improved"
            improved.append(name)
        print(f"{name:<80} {want:9.1f} {got:9.1f} {delta:+7.2f}%{verdict}")
    for name in sorted(set(base["cells"]) - seen):
        print(f"perf_gate: note: baseline cell {name} is no longer measured")
    if failures:
        for c in cells:
            want = base["cells"].get(c["name"])
            got = c.get("instr_per_pkt")
            if want and got and (got - want) / want * 100.0 > tol:
                print(f"perf_gate: REGRESSION {c['name']}: {got:.1f} instructions/packet, "
                      f"baseline {want:.1f} ({(got - want) / want * 100.0:+.2f} %, "
                      f"tolerance {tol:g} %)")
    if improved:
        print(f"perf_gate: {len(improved)} cell(s) improved by more than {tol:g} %: "
              "if that is intended, record it with scripts/perf_gate.py --update")
    return failures


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--bin")
    ap.add_argument("--baseline", default=DEFAULT_BASELINE)
    ap.add_argument("--measured")
    ap.add_argument("--save")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--tolerance", type=float)
    ap.add_argument("-h", "--help", action="store_true")
    args, rest = ap.parse_known_args()
    if args.help:
        print(__doc__.strip())
        return 0
    if rest:
        die(f"unknown argument '{rest[0]}' (try --help)")

    binary = None
    if args.measured:
        head, cells = load_measured(args.measured)
    else:
        binary = fast_program(args.bin or os.environ.get("VHOSTLAB_BIN") or os.path.join(
            ROOT, "build", "release", "cli", "vhostlab-fast"))
        if not os.access(binary, os.X_OK):
            die(f"no vhostlab-fast at {binary} (build it, or give --bin)")
        head, cells = measure(binary)
        if head.get("core") != "production":
            die(f"{binary} measured the {head.get('core')} core, not the production one")
        head = dict(head, build_type=build_type_of(binary))
    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            json.dump(dict(head, cells=cells), f, indent=2)
    if args.update:
        write_baseline(args.baseline, head, cells, binary)
        return 0
    if not os.path.exists(args.baseline):
        die(f"cannot read the baseline {args.baseline}: no such file "
            "(create it with scripts/perf_gate.py --update)", 1)
    base = load_json(args.baseline, "baseline")
    if not isinstance(base.get("cells"), dict):
        die(f"the baseline {args.baseline} has no \"cells\" object", 1)
    tol = args.tolerance if args.tolerance is not None else base.get("tolerance_pct", 3.0)
    failures = compare(base, head, cells, tol)
    failures += check_thread_twins(cells)
    if failures:
        print(f"perf_gate: FAIL ({failures} of {len(cells)} cells)")
        return 1
    print(f"perf_gate: PASS ({len(cells)} cells within {tol:g} % of the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What each forced inline of the core buys (VL_ALWAYS_INLINE, core/compiler.h), measured.

  scripts/inline_cost.py [FUNCTION ...]          one trial per site (all sites, or those named)
  scripts/inline_cost.py --together FUNCTION ... one trial with the named sites together

A trial turns the site's `static VL_ALWAYS_INLINE` into a plain `static inline`, rebuilds the
production core's objects (target vhostlab_core_obj of a Release build tree) and compares
their code (objdump -d) with the forced build's. Identical code: the attribute buys nothing
today. Else it relinks vhostlab-fast and measures the perf gate cells (scripts/perf_gate.py,
callgrind instructions per packet), and prints the cell that moved most. The source is
restored after each trial, and the tree rebuilt at the end.

Options:
  --build DIR   Release build tree to use (default build/release, configured and built)
  --out FILE    also append one JSON line per trial to FILE
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import perf_gate  # noqa: E402

SITE_RE = re.compile(r"^static VL_ALWAYS_INLINE\b.*?\b(\w+)\(")


def sites():
    """(path, line index, function) of every forced inline under core/."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "core", "**", "*.[ch]"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                m = SITE_RE.match(line)
                if m:
                    found.append((path, i, m.group(1)))
    return found


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        sys.exit(f"inline_cost: `{' '.join(cmd)}` failed")
    return proc.stdout


def code(build):
    """Disassembly of every production core object, per object (file names left out)."""
    run(["make", "-C", build, "vhostlab_core_obj"])
    out = {}
    objdir = os.path.join(build, "core", "CMakeFiles", "vhostlab_core_obj.dir")
    for obj in sorted(glob.glob(os.path.join(objdir, "**", "*.o"), recursive=True)):
        text = run(["objdump", "-d", "--no-show-raw-insn", obj])
        out[os.path.relpath(obj, objdir)] = text.split("\n", 2)[2]
    return out


def measure(build):
    run(["make", "-C", build, "vhostlab-fast"])
    _, cells = perf_gate.measure(os.path.join(build, "cli", "vhostlab-fast"))
    return {c["name"]: c["instr_per_pkt"] for c in cells}


def trial(build, chosen, ref_code, ref_cells):
    saved = {}
    try:
        for path, i, _ in chosen:
            if path not in saved:
                with open(path, encoding="utf-8") as f:
                    saved[path] = f.read()
        lines = {p: s.split("\n") for p, s in saved.items()}
        for path, i, _ in chosen:
            lines[path][i] = lines[path][i].replace("VL_ALWAYS_INLINE", "inline", 1)
        for path, ls in lines.items():
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(ls))
        got = code(build)
        changed = sorted(o for o in got if got[o] != ref_code.get(o))
        res = {"sites": [fn for _, _, fn in chosen], "objects_changed": changed}
        if changed:
            cells = measure(build)
            deltas = {n: round(cells[n] - ref_cells[n], 2) for n in cells}
            worst = max(deltas, key=lambda n: abs(deltas[n]))
            res.update(deltas=deltas, worst_cell=worst, worst_ref=ref_cells[worst],
                       worst_got=cells[worst])
        return res
    finally:
        for path, text in saved.items():
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("functions", nargs="*")
    ap.add_argument("--together", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--out")
    args = ap.parse_args()
    all_sites = sites()
    chosen = [s for s in all_sites if not args.functions or s[2] in args.functions]
    missing = set(args.functions) - {s[2] for s in chosen}
    if missing:
        sys.exit(f"inline_cost: no forced inline named {', '.join(sorted(missing))}")
    ref_code = code(args.build)
    ref_cells = measure(args.build)
    groups = [chosen] if args.together else [[s] for s in chosen]
    for g in groups:
        res = trial(args.build, g, ref_code, ref_cells)
        where = ", ".join(f"{os.path.relpath(p, ROOT)}:{fn}" for p, _, fn in g)
        if not res["objects_changed"]:
            print(f"{where}: no code change", flush=True)
        else:
            print(f"{where}: {len(res['objects_changed'])} object(s) changed; "
                  f"{res['worst_cell']} {res['worst_ref']:.2f} -> {res['worst_got']:.2f} "
                  "instr/pkt without it", flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(res) + "\n")
    code(args.build)  # the objects of the restored source
    run(["make", "-C", args.build, "vhostlab-fast"])


if __name__ == "__main__":
    main()

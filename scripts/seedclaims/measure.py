"""Building the variants and running `vhostlab bench` for the seed-claims report."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Optional

from seedclaims.claims import BUILD_VARIANTS

# Cell parameters as the bench's JSON names them: what identifies a cell.
CELL_KEYS = ("direction", "layout", "size", "mergeable", "in_order", "batch", "zero_copy",
             "alloc", "fill")


def log(msg: str) -> None:
    print(f"seed_claims: {msg}", file=sys.stderr, flush=True)


def fast_program(exe: Path) -> Path:
    """The program bench runs as: vhostlab-fast (the production program), the one named or
    the one beside the vhostlab named. vhostlab's own bench runs on the lab build of the core:
    never measured here."""
    return exe if exe.name == "vhostlab-fast" else exe.parent / "vhostlab-fast"


def build_variant(root: Path, build_root: Path, name: str, jobs: int,
                  commands: list[str]) -> Path:
    """Configure (cheap when nothing changed) and build one variant's vhostlab-fast (the
    production program); return its path."""
    d = build_root / name
    cfg = ["cmake", "-S", str(root), "-B", str(d), "-DCMAKE_BUILD_TYPE=Release",
           "-DCMAKE_C_COMPILER=gcc", *BUILD_VARIANTS[name]]
    bld = ["cmake", "--build", str(d), "-j", str(jobs), "--target", "vhostlab-fast"]
    for cmd in (cfg, bld):
        commands.append(" ".join(cmd))
        log(" ".join(cmd))
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    check_variant(d / "cli" / "vhostlab-fast", name)
    return d / "cli" / "vhostlab-fast"


def check_variant(exe: Path, name: str) -> None:
    """The program must say it is the variant its directory is named for (`--version`,
    "build: NAME"): a build directory configured by hand with other options would otherwise
    be measured under the wrong name."""
    out = subprocess.run([str(exe), "--version"], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    if f"build: {name})" not in out:
        raise RuntimeError(f"{exe} is not the '{name}' build: its --version says "
                           f"{out.strip()!r}")


def bench(exe: Path, args: list[str], commands: list[str]) -> dict:
    """One `vhostlab-fast bench --json` invocation; its parsed JSON (the production core's,
    or a RuntimeError)."""
    cmd = [str(exe), "bench", *args, "--json", "--quiet"]
    commands.append(" ".join(cmd))
    log(" ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    out = json.loads(p.stdout)
    if out.get("core") != "production":
        raise RuntimeError(f"{' '.join(cmd)} ran on the {out.get('core')} core, not the "
                           "production one: measure with vhostlab-fast")
    return out


def cell_key(cell: dict) -> tuple:
    return tuple(cell.get(k) for k in CELL_KEYS)


def stat_of(values: list[float]) -> Optional[dict]:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def merge_build_reps(per_build: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Turn each build's single-repetition bench outputs (one per interleaved round) into
    one list of cells per build, with median/min/max over the rounds, as if one bench run
    had made them."""
    merged: dict[str, list[dict]] = {}
    for build, outputs in per_build.items():
        cells: dict[tuple, dict] = {}
        samples: dict[tuple, dict[str, list[float]]] = {}
        for out in outputs:
            for c in out["cells"]:
                k = cell_key(c)
                cells.setdefault(k, {key: c[key] for key in CELL_KEYS if key in c} |
                                 {"name": c.get("name", ""), "reps": []})
                # One repetition per round: round i of every build ran back to back.
                cells[k]["reps"] += c.get("reps", [])[:1]
                s = samples.setdefault(k, {"mpps": [], "ns_per_pkt": [], "ns_per_call": []})
                for m in s:
                    if c.get(m) and c[m].get("median") is not None:
                        s[m].append(float(c[m]["median"]))
        for k, c in cells.items():
            for m, vals in samples[k].items():
                c[m] = stat_of(vals)
            c["rounds"] = len(outputs)
        merged[build] = list(cells.values())
    return merged


def add_instructions(cells: list[dict], instr: dict) -> None:
    """Copy instr_per_pkt / instr_per_call from an --instructions run onto matching cells."""
    by_key = {cell_key(c): c for c in instr.get("cells", [])}
    for c in cells:
        src = by_key.get(cell_key(c))
        if src:
            for m in ("instr_per_pkt", "instr_per_call"):
                if src.get(m) is not None:
                    c[m] = src[m]

"""From measured cells to table rows: pair each claim's A and B cells, compute the speed
ratio, apply the verdict rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from seedclaims.claims import Claim
from seedclaims.measure import CELL_KEYS, cell_key
from seedclaims.verdict import (NOT_REPRODUCED, NOT_TESTED, Ratio, Stat, geomean_ratio,
                                speed_ratio_from_times, verdict)


def _matches(cell: dict, want: dict) -> bool:
    return all(cell.get(k) == v for k, v in want.items())


def _instr_key(metric: str) -> str:
    return "instr_per_call" if metric == "ns_per_call" else "instr_per_pkt"


def _label(cell: dict, keys: list[str]) -> str:
    parts = []
    for k in keys:
        v = cell.get(k)
        if k == "size":
            parts.append(f"{v} B")
        elif isinstance(v, bool):
            parts.append(f"{k.replace('_', '-')}={'on' if v else 'off'}")
        elif k == "fill":
            parts.append(f"fill={v}")
        else:
            parts.append(str(v))
    return ", ".join(parts) or "-"


def rep_times(cell: dict, metric: str) -> list[float]:
    """The cell's time per packet (or per call) in each repetition, in the order run."""
    per = "packets" if metric == "ns_per_pkt" else "calls"
    return [r["core_ns"] / r[per] for r in cell.get("reps", []) if r.get(per)]


def pair_ratio(a: dict, b: dict, metric: str) -> Ratio:
    ik = _instr_key(metric)
    return speed_ratio_from_times(Stat.of(a[metric]), Stat.of(b[metric]), a.get(ik), b.get(ik),
                                  rep_times(a, metric), rep_times(b, metric))


def _row(claim: Claim, label: str, a: Optional[dict], b: Optional[dict],
         r: Optional[Ratio]) -> dict:
    if r is None:
        return {"id": claim.id, "technique": claim.technique, "title": claim.title,
                "published": claim.published, "label": label, "metric": claim.metric,
                "ratio": None, "verdict": NOT_TESTED, "reason": "cells not measured"}
    v, why = verdict(claim.expect, r, claim.published_ratio)
    if v == NOT_REPRODUCED and claim.hint:
        why += f". Likely why: {claim.hint}"
    note = ""
    if claim.metric == "ns_per_call" and a and b:
        # Technique 4 is about allocations per call as much as time per call.
        note = (f"buffers allocated per call {a.get('alloc_bufs_per_call', 0):.0f} -> "
                f"{b.get('alloc_bufs_per_call', 0):.0f}")
    return {"note": note, "id": claim.id, "technique": claim.technique, "title": claim.title,
            "published": claim.published, "published_ratio": claim.published_ratio,
            "label": label, "metric": claim.metric,
            "a": a.get("name") if a else None, "b": b.get("name") if b else None,
            "ratio": {"median": r.median, "lo": r.lo, "hi": r.hi, "instr": r.instr,
                      "paired": r.paired},
            "verdict": v, "reason": why}


def claim_rows(claim: Claim, cells: list[dict]) -> list[dict]:
    """One row per A/B pair of the claim among cells (one bench run's)."""
    bases = [c for c in cells if _matches(c, claim.where) and _matches(c, claim.base)]
    fixed = set(claim.where) | set(claim.base) | set(claim.treat)
    # The layout always names the row; other parameters only when they vary.
    varying = [k for k in CELL_KEYS if k not in fixed and
               (k == "layout" or len({c.get(k) for c in bases}) > 1)]
    rows = []
    for a in bases:
        want = {k: a.get(k) for k in CELL_KEYS if k not in claim.treat} | claim.treat
        b = next((c for c in cells if _matches(c, want)), None)
        if b is None or not a.get(claim.metric) or not b.get(claim.metric):
            rows.append(_row(claim, _label(a, varying), a, b, None))
            continue
        rows.append(_row(claim, _label(a, varying), a, b, pair_ratio(a, b, claim.metric)))
    if not rows:
        rows.append(_row(claim, "-", None, None, None))
    return rows


def build_rows(claim: Claim, per_build: dict[str, list[dict]]) -> tuple[dict, list[dict]]:
    """Technique 5: the geometric mean over every cell (the summary row) and one row per
    cell, comparing build claim.treat["build"] with claim.base["build"]."""
    base, treat = claim.base["build"], claim.treat["build"]
    if base not in per_build or treat not in per_build:
        row = _row(claim, "all cells", None, None, None)
        row["reason"] = f"build '{treat if base in per_build else base}' not measured"
        return row, []
    tcells = {cell_key(c): c for c in per_build[treat]}
    varying = [k for k in CELL_KEYS
               if len({c.get(k) for c in per_build[base]}) > 1]
    details, ratios = [], []
    for a in per_build[base]:
        b = tcells.get(cell_key(a))
        if b is None or not a.get(claim.metric) or not b.get(claim.metric):
            continue
        r = pair_ratio(a, b, claim.metric)
        ratios.append(r)
        details.append(_row(claim, _label(a, varying), a, b, r))
    if not ratios:
        return _row(claim, "all cells", None, None, None), []
    return _row(claim, f"geometric mean of {len(ratios)} cells", None, None,
                geomean_ratio(ratios)), details


def code_lines(path: Path) -> int:
    """Lines of C code in a file: not blank, not only comment."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  path.read_text(), flags=re.S)
    return sum(1 for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("//"))


# What the enqueue path is made of: its own file, and what it calls that exists for it or
# for both directions (the copy engine, the ring interface, the header builder).
ENQUEUE_FILES = ["core/net/enqueue.c"]
ENQUEUE_USES = ["core/net/copy.h", "core/ring/ring.h", "core/net/net_hdr.c"]


def line_count_row(claim: Claim, root: Path) -> dict:
    own = {f: code_lines(root / f) for f in ENQUEUE_FILES}
    uses = {f: code_lines(root / f) for f in ENQUEUE_USES}
    figure = (f"enqueue.c: {sum(own.values())} code lines ("
              f"{sum(len((root / f).read_text().splitlines()) for f in ENQUEUE_FILES)} in all); "
              f"with what it uses ({', '.join(Path(f).name for f in ENQUEUE_USES)}): "
              f"{sum(own.values()) + sum(uses.values())}")
    return {"id": claim.id, "technique": claim.technique, "title": claim.title,
            "published": claim.published, "label": "-", "metric": "lines", "ratio": None,
            "lines": own | uses, "figure": figure, "verdict": NOT_TESTED,
            "reason": "line count reported; no specialised (mergeable-only or "
                      "non-mergeable-only) enqueue exists in the tree to race the unified "
                      "path against, and no two-path version to count lines of. Row 2b gives "
                      "the unified path's mergeable vs non-mergeable figures"}

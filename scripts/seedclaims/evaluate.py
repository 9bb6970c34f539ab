"""From measured cells to table rows: pair each claim's A and B cells, compute the speed
ratio, apply the verdict rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from seedclaims.claims import Claim
from seedclaims.measure import CELL_KEYS, cell_key
from seedclaims.verdict import (NOT_REPRODUCED, NOT_TESTED, REPORT_ONLY, Ratio, Stat,
                                geomean_ratio,
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


def _build_pairs(claim: Claim, per_build: dict[str, list[dict]],
                 where: dict) -> list[tuple[dict, dict, Ratio]]:
    """(A cell, B cell, ratio) for every cell with `where` that both builds measured."""
    tcells = {cell_key(c): c for c in per_build[claim.treat["build"]]}
    pairs = []
    for a in per_build[claim.base["build"]]:
        b = tcells.get(cell_key(a))
        if (b is None or not _matches(a, where) or not a.get(claim.metric)
                or not b.get(claim.metric)):
            continue
        pairs.append((a, b, pair_ratio(a, b, claim.metric)))
    return pairs


def build_rows(claim: Claim, per_build: dict[str, list[dict]]) -> tuple[dict, list[dict]]:
    """A comparison of two builds (techniques 2 and 5): the geometric mean over the cells
    with claim.where (the summary row) and one row per cell, build claim.treat["build"]
    against claim.base["build"]. A claim's control cells (the same code in both builds) are
    quoted in the summary's reason: the difference two builds make by themselves."""
    base, treat = claim.base["build"], claim.treat["build"]
    if base not in per_build or treat not in per_build:
        row = _row(claim, "all cells", None, None, None)
        row["reason"] = f"build '{treat if base in per_build else base}' not measured"
        return row, []
    pairs = _build_pairs(claim, per_build, claim.where)
    cells = [a for a, _, _ in pairs]
    varying = [k for k in CELL_KEYS if len({c.get(k) for c in cells}) > 1]
    details = [_row(claim, _label(a, varying), a, b, r) for a, b, r in pairs]
    if not pairs:
        return _row(claim, "all cells", None, None, None), []
    what = "cells" if not claim.where else _label(claim.where, list(claim.where)) + " cells"
    row = _row(claim, f"geometric mean of {len(pairs)} {what}", None, None,
               geomean_ratio([r for _, _, r in pairs]))
    control = _build_pairs(claim, per_build, claim.control) if claim.control else []
    if control:
        c = geomean_ratio([r for _, _, r in control])
        row["reason"] += (f". Control, the {_label(claim.control, list(claim.control))} cells "
                          f"(the same code in both builds): x{c.median:.3f} over "
                          f"{len(control)} cells"
                          + (f", instructions x{c.instr:.3f}" if c.instr is not None else ""))
    return row, details


def code_lines(path: Path) -> int:
    """Lines of C code in a file: not blank, not only comment."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  path.read_text(), flags=re.S)
    return sum(1 for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("//"))


# What the enqueue path is made of: its own files (the reservation and the writing of
# packets), the specialised path a two-path enqueue would add (built only with
# -DVL_RX_TWO_PATHS=ON, the alternative of claim 2a), and what both call that exists for
# both directions too (the copy engine, the ring interface, the header builder).
ENQUEUE_FILES = ["core/net/enqueue.c", "core/net/rx_fill.h"]
SECOND_PATH = "core/net/enqueue_nonmergeable.c"
ENQUEUE_USES = ["core/net/copy.h", "core/ring/ring.h", "core/net/net_hdr.c"]


def line_count_row(claim: Claim, root: Path) -> dict:
    own = {f: code_lines(root / f) for f in ENQUEUE_FILES}
    second = code_lines(root / SECOND_PATH)
    uses = {f: code_lines(root / f) for f in ENQUEUE_USES}
    unified = sum(own.values())
    figure = (f"unified ({', '.join(Path(f).name for f in ENQUEUE_FILES)}): {unified} code "
              f"lines; two-path (plus {Path(SECOND_PATH).name}): {unified + second}, "
              f"{second} more; what both use "
              f"({', '.join(Path(f).name for f in ENQUEUE_USES)}): {sum(uses.values())}")
    return {"id": claim.id, "technique": claim.technique, "title": claim.title,
            "published": claim.published, "label": "-", "metric": "lines", "ratio": None,
            "lines": own | {SECOND_PATH: second} | uses, "figure": figure,
            "verdict": REPORT_ONLY,
            "reason": f"one path saves {second} code lines here, not ~300: the specialised "
                      f"path shares the writing of packets (rx_fill.h) with the unified one "
                      f"and differs only in reserving its one chain, where the reference's "
                      f"second path had copy loops of its own"}

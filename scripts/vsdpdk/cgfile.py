"""Reading callgrind's output for scripts/vs_dpdk_instructions.py: the total of a dump, the
calls into a function and their inclusive cost, and callgrind_annotate's function lists.

Only what this script asks callgrind for is handled: one event (Ir), positions by line
(no --dump-instr), name compression on or off.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class CgDump:
    total: int = 0  # the dump's summary: every instruction collected
    # (caller, callee) -> [calls, inclusive instructions of those calls]
    edges: dict = field(default_factory=dict)

    def calls_into(self, callee: str) -> tuple[int, int]:
        """(calls, inclusive instructions) of every call into `callee`, from any caller
        (callgrind records the call even when its caller was outside the collected
        region)."""
        calls = cost = 0
        for (_, c), (n, ir) in self.edges.items():
            if c == callee:
                calls += n
                cost += ir
        return calls, cost

    def calls_from(self, caller: str) -> tuple[int, int]:
        """(calls, inclusive instructions) of every call `caller` made."""
        calls = cost = 0
        for (c, _), (n, ir) in self.edges.items():
            if c == caller:
                calls += n
                cost += ir
        return calls, cost


_NAMED = re.compile(r"\((\d+)\)(?: (.*))?$")


def _name(value: str, table: dict) -> str:
    """A function name, with callgrind's compression: "(id) name" defines id, "(id)" uses
    it; an uncompressed name stands for itself."""
    m = _NAMED.match(value.strip())
    if not m:
        return value.strip()
    if m.group(2) is not None:
        table[m.group(1)] = m.group(2)
        return m.group(2)
    return table.get(m.group(1), f"({m.group(1)})")


def parse_callgrind(text: str) -> CgDump:
    """The total and the call edges of one callgrind output file's text."""
    out = CgDump()
    names: dict = {}
    fn = None
    callee = None
    pending_calls = None  # a calls= line waits for its cost line
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith(("summary:", "totals:")):
            if line.startswith("summary:") or not out.total:
                out.total = int(line.split(":", 1)[1].split()[0])
            continue
        if line.startswith("fn="):
            fn = _name(line[3:], names)
            continue
        if line.startswith("cfn="):
            callee = _name(line[4:], names)
            continue
        if line.startswith("calls="):
            pending_calls = int(line[6:].split()[0])
            continue
        if line[0].isdigit() or line[0] in "+-*":
            if pending_calls is not None:
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                e = out.edges.setdefault((fn, callee), [0, 0])
                e[0] += pending_calls
                e[1] += ir
                pending_calls = None
            continue
        # Any other line (ob=, fl=, fi=, fe=, cob=, cfi=, headers): a context change that
        # does not bear on the totals or the edges. A cfn= stays in force only for the next
        # calls= line, which callgrind always writes right after it.
    return out


def read_callgrind(path: Path) -> CgDump:
    return parse_callgrind(path.read_text(errors="replace"))


_ANNOTATE_ROW = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*?)(?:\s+\[(.*)\])?\s*$")


def parse_annotate(text: str) -> list[tuple[int, str]]:
    """(instructions, function) rows of callgrind_annotate's function list, in its order;
    "file:function" is cut to the function, the program totals row left out."""
    rows = []
    for line in text.splitlines():
        m = _ANNOTATE_ROW.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        where = m.group(2)
        func = where.rsplit(":", 1)[-1] if ":" in where else where
        rows.append((int(m.group(1).replace(",", "")), func))
    return rows


def annotate(path: Path, inclusive: bool) -> dict[str, int]:
    """callgrind_annotate's per-function instructions of one file (summed over files of
    the same function name)."""
    proc = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
         "--threshold=100", str(path)], capture_output=True, text=True, timeout=120)
    out: dict[str, int] = {}
    if proc.returncode == 0:
        for ir, func in parse_annotate(proc.stdout):
            out[func] = out.get(func, 0) + ir
    return out


def top_functions(path: Path, packets: int, n: int = 8, idle: Path | None = None,
                  idle_scale: float = 0.0) -> list[dict]:
    """The functions callgrind_annotate ranks highest by inclusive cost in `path`, each with
    its inclusive and self instructions per packet (within the collected region). With
    `idle`, an idle run's file, each function's cost there times `idle_scale` (the loaded
    run's empty calls over the idle run's calls) is taken out first: the empty calls'
    share, function by function, as the full-burst figure takes it out in total."""
    incl, self_cost = annotate(path, True), annotate(path, False)
    # Callers outside the collected region (main, serve's loop, testpmd) show the whole
    # region as their inclusive cost but executed nothing in it themselves: no self cost.
    ran = {func for func, ir in self_cost.items() if ir > 0}
    if idle is not None:
        for table, inclusive in ((incl, True), (self_cost, False)):
            for func, ir in annotate(idle, inclusive).items():
                if func in table:
                    table[func] = max(0, round(table[func] - ir * idle_scale))
    out = []
    for func, ir in sorted(incl.items(), key=lambda kv: -kv[1]):
        if func not in ran:
            continue
        out.append({"function": func, "inclusive": round(ir / packets, 1),
                    "self": round(self_cost.get(func, 0) / packets, 1)})
        if len(out) == n:
            break
    return out

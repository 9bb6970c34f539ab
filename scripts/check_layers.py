#!/usr/bin/env python3
"""Check that core/'s includes follow its layers (docs/architecture.md, "Layers").

  scripts/check_layers.py [--root DIR] [--json]

The core's layers, each allowed to include only itself and the layers below it:

  vhost_user   core/vhost_user/, vhostlab/vl_vhost_user.h
  net          core/net/,        vhostlab/vl_net.h, vhostlab/vl_sw_offload.h
  ring         core/ring/,       vhostlab/vl_vq.h (the queue handle, its config and stats)
  mem, pkt     core/mem/, core/pkt/, vhostlab/vl_mem.h, vhostlab/vl_pkt.h (neither
               includes the other)
  lab control  core/lab/vl_lab_control.h, lab_control.c: the lab build's one entry point,
               reaching the allocator and pool internals; nothing else includes it
  base         core/*.{c,h} (compiler.h, alloc, error), vhostlab/vl_error.h, vl_virtio.h,
               core/lab/vl_lab_hooks.h and lab_hooks.c (the guest-load hooks the ring's
               loads call in the lab build)

vhostlab/vhostlab.h (the umbrella header) includes every public header and is included by
nothing in core/. Every quoted include of a file in core/ must resolve to a file in core/
(next to it, from core/ or from core/include/): the core never includes the lab (sim/,
fuzz/, tests/, cli/). System headers (<...>) are not checked.

Prints one line per offence (file:line: what it includes and why that runs up a layer) and
exits 1 if there is any, 0 if none, 2 on a usage error. --json prints
{"files", "includes", "violations": [{"file", "line", "include", "reason"}]} instead.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# Rank of each layer: a file may include its own layer or one of a lower rank. mem and pkt
# share a rank but are different layers, so neither may include the other.
# The lab control shares the ring's rank, so neither includes the other.
RANKS = {"base": 0, "mem": 1, "pkt": 1, "ring": 2, "lab_control": 2, "net": 3,
         "vhost_user": 4, "umbrella": 5}
PUBLIC = {
    "vl_error.h": "base", "vl_virtio.h": "base", "vl_mem.h": "mem", "vl_pkt.h": "pkt",
    "vl_vq.h": "ring", "vl_net.h": "net", "vl_sw_offload.h": "net",
    "vl_vhost_user.h": "vhost_user",
    "vhostlab.h": "umbrella",
}
LAB = {"vl_lab_hooks.h": "base", "lab_hooks.c": "base", "vl_lab_control.h": "lab_control",
       "lab_control.c": "lab_control"}
LAYER_DIRS = ("mem", "pkt", "ring", "net", "vhost_user")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path: Path, core: Path) -> str | None:
    """The layer a file of core/ belongs to, or None for a file outside every layer (an
    unknown public header or directory: reported, so a new one gets a place)."""
    rel = path.relative_to(core)
    parts = rel.parts
    if parts[0] == "include":
        return PUBLIC.get(rel.name)
    if parts[0] == "lab":
        return LAB.get(rel.name)
    if len(parts) == 1:
        return "base"
    if parts[0] in LAYER_DIRS:
        return parts[0]
    return None


def may_include(src: str, dst: str) -> bool:
    """src's files may include dst's: the same layer, or one of a lower rank."""
    return src == dst or RANKS[dst] < RANKS[src]


def resolve(name: str, including: Path, core: Path) -> Path | None:
    """Where a quoted include of core/ is found: beside the includer, from core/, or from
    core/include/ (the build's include path for the core), else None."""
    for base in (including.parent, core, core / "include"):
        cand = (base / name).resolve()
        if cand.is_file() and core in cand.parents:
            return cand
    return None


def check(root: Path) -> dict:
    core = (root / "core").resolve()
    if not core.is_dir():
        raise FileNotFoundError(f"{core}: no core/ directory here (--root names the "
                                "repository's top)")
    files = sorted(p for p in core.rglob("*") if p.suffix in (".c", ".h") and p.is_file())
    out = {"files": len(files), "includes": 0, "violations": []}

    def offence(f: Path, line: int, inc: str, reason: str) -> None:
        out["violations"].append({"file": str(f.relative_to(root.resolve())), "line": line,
                                  "include": inc, "reason": reason})

    for f in files:
        src = layer_of(f, core)
        for no, text in enumerate(f.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(text)
            if not m:
                continue
            inc = m.group(1)
            out["includes"] += 1
            if src is None:
                offence(f, no, inc, "the including file is in no layer of core/ "
                        "(add its directory or public header to scripts/check_layers.py)")
                continue
            target = resolve(inc, f, core)
            if target is None:
                offence(f, no, inc, "not a file of core/: the core includes nothing of the "
                        "lab (sim/, fuzz/, tests/, cli/) or of anything else")
                continue
            dst = layer_of(target, core)
            if dst is None:
                offence(f, no, inc, "the included file is in no layer of core/")
            elif dst == "umbrella" or not may_include(src, dst):
                offence(f, no, inc, f"runs up the layers: {src} may not include {dst}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="the repository's top (default: this script's repository)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    a = ap.parse_args(argv)
    try:
        res = check(a.root)
    except FileNotFoundError as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        for v in res["violations"]:
            print(f"{v['file']}:{v['line']}: includes \"{v['include']}\": {v['reason']}")
        n = len(res["violations"])
        print(f"check_layers: {res['files']} files, {res['includes']} includes, "
              f"{n} offence{'s' if n != 1 else ''}: {'FAIL' if n else 'PASS'}")
    return 1 if res["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())

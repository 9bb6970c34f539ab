#!/usr/bin/env python3
"""reports/conformance.md: `vhostlab probe` against every back end we can run here.

  scripts/conformance_report.py               run the probe, store the JSON, render (./lab conformance)
  scripts/conformance_report.py --render-only render reports/conformance.md from the stored JSON

Running: for each back end of scripts/probe_backends.py (vhostlab serve in the modes the
probe can judge, DPDK testpmd's net_vhost in io, macswap and txonly modes, Open vSwitch with
DPDK) and each ring layout, `vhostlab probe --json --ring RING` runs the back end's suites
(every suite; testpmd's macswap and txonly, the traffic suite), and its document is stored, with the
back end's name and version, the probe's commit and the exact command, in
reports/conformance/<backend>-<ring>.json. A failure's rule is looked up in the design's
conformance catalogue (--catalogue) and stored with it, so rendering needs nothing but the
JSON files.

Rendering: per back end and version, the features offered and those the probe negotiated
(decoded), totals per verdict, every case, and for each case that did not pass, the rule it
breaks with its source, why the back end does it (scripts/probe_diagnoses.py), and the trace
that reproduces it (the probe's `trace`, when the probe records one; "not recorded"
otherwise).

A memory-safety fault in another project's back end (a crash verdict, or a stray write into
guest memory) is stored and rendered by case, rule and class only, "held for private
disclosure": the detail that would reproduce it is not kept and its trace is deleted (the
design's conformance catalogue, "Finding a security bug in someone else's back end").
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
from pathlib import Path

import probe_backends
import probe_diagnoses

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
RINGS = ("split", "packed")
VERDICTS = ("pass", "fail", "wedge", "crash", "n/a")
CATALOGUE = Path("/work/shared/design/conformance.md")
HELD = "held for private disclosure"

# Virtio feature bits (virtio 1.2/1.3 §6 and §5.1.3) and the vhost-user ones (vhost-user.rst).
FEATURE_NAMES = {
    0: "CSUM", 1: "GUEST_CSUM", 2: "CTRL_GUEST_OFFLOADS", 3: "MTU", 5: "MAC", 6: "GSO",
    7: "GUEST_TSO4", 8: "GUEST_TSO6", 9: "GUEST_ECN", 10: "GUEST_UFO", 11: "HOST_TSO4",
    12: "HOST_TSO6", 13: "HOST_ECN", 14: "HOST_UFO", 15: "MRG_RXBUF", 16: "STATUS",
    17: "CTRL_VQ", 18: "CTRL_RX", 19: "CTRL_VLAN", 20: "CTRL_RX_EXTRA", 21: "GUEST_ANNOUNCE",
    22: "MQ", 23: "CTRL_MAC_ADDR", 24: "NOTIFY_ON_EMPTY", 26: "LOG_ALL", 27: "ANY_LAYOUT",
    28: "INDIRECT_DESC", 29: "EVENT_IDX", 30: "PROTOCOL_FEATURES", 32: "VERSION_1",
    33: "ACCESS_PLATFORM", 34: "RING_PACKED", 35: "IN_ORDER", 36: "ORDER_PLATFORM",
    37: "SR_IOV", 38: "NOTIFICATION_DATA", 39: "NOTIF_CONFIG_DATA", 40: "RING_RESET",
    41: "ADMIN_VQ", 52: "VQ_NOTF_COAL", 53: "NOTF_COAL", 54: "GUEST_USO4", 55: "GUEST_USO6",
    56: "HOST_USO", 57: "HASH_REPORT", 59: "GUEST_HDRLEN", 60: "RSS", 61: "RSC_EXT",
    62: "STANDBY", 63: "SPEED_DUPLEX",
}
PROTOCOL_FEATURE_NAMES = {
    0: "MQ", 1: "LOG_SHMFD", 2: "RARP", 3: "REPLY_ACK", 4: "NET_MTU", 5: "BACKEND_REQ",
    6: "CROSS_ENDIAN", 7: "CRYPTO_SESSION", 8: "PAGEFAULT", 9: "CONFIG",
    10: "BACKEND_SEND_FD", 11: "HOST_NOTIFIER", 12: "INFLIGHT_SHMFD", 13: "RESET_DEVICE",
    14: "INBAND_NOTIFICATIONS", 15: "CONFIGURE_MEM_SLOTS", 16: "STATUS", 17: "XEN_MMAP",
    18: "SHARED_OBJECT", 19: "DEVICE_STATE",
}
RING_PACKED_BIT = 34
# The only protocol feature the probe takes (sim/frontend/fe_session.h).
PROBE_PROTOCOL = 1 << 3
STRAY_WRITE = "outside every buffer it was given to write"


def decode(value: int, names: dict[int, str]) -> str:
    bits = [names.get(b, f"bit {b}") for b in range(64) if value >> b & 1]
    return ", ".join(bits) if bits else "none"


# ---- facts gathered when running -------------------------------------------------------

def driver_features() -> int:
    """The virtio bits the probe's driver implements: LAB_FE_DRIVER_FEATURES in
    sim/frontend/fe_session.h, its names resolved in the headers that define them."""
    defines: dict[str, int] = {}
    for header in (ROOT / "core/include/vhostlab/vl_virtio.h",
                   ROOT / "sim/frontend/fe_session.h"):
        for name, num in re.findall(r"#define\s+(\w+)\s+(\d+)\b", header.read_text()):
            defines[name] = int(num)
    text = (ROOT / "sim/frontend/fe_session.h").read_text()
    m = re.search(r"#define LAB_FE_DRIVER_FEATURES(.*?)\)\)\s*\n\s*\n", text, re.S)
    if not m:
        raise SystemExit("conformance_report: LAB_FE_DRIVER_FEATURES not found in "
                         "sim/frontend/fe_session.h")
    bits = 0
    for name in re.findall(r"VL_FEATURE\((\w+)", m.group(1)):
        if name not in defines:
            raise SystemExit(f"conformance_report: {name} (LAB_FE_DRIVER_FEATURES) has no "
                             "#define in vl_virtio.h or fe_session.h")
        bits |= 1 << defines[name]
    return bits


def catalogue_rows(path: Path) -> dict[str, dict[str, str]]:
    """Rule id -> {source, conforming, class} from the catalogue's tables."""
    rows: dict[str, dict[str, str]] = {}
    if not path.is_file():
        return rows
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"[SPNU]-\d\d", cells[0]):
            rows[cells[0]] = {"source": cells[1], "conforming": cells[3], "class": cells[4]}
    return rows


def rule_ids(rule: str) -> list[str]:
    return re.findall(r"\b[SPNU]-\d\d\b", rule)


def is_ours(backend: str) -> bool:
    return backend.startswith("vhostlab-")


def memory_safety_class(case: dict) -> str | None:
    """The class of a memory-safety fault the case shows, or None."""
    if case.get("verdict") == "crash":
        return "crash: the back end stopped serving"
    if case.get("verdict") == "fail" and STRAY_WRITE in case.get("detail", ""):
        return "write into guest memory outside the buffers given"
    return None


def hold_back(doc: dict, backend: str) -> None:
    """Keep a memory-safety finding in another project's back end to case, rule and class:
    drop the detail and delete the trace (held for private disclosure)."""
    if is_ours(backend):
        return
    for case in doc.get("cases", []):
        cls = memory_safety_class(case)
        if cls is None:
            continue
        trace = case.get("trace")
        if isinstance(trace, str) and trace:
            Path(trace).unlink(missing_ok=True)
        case["detail"] = HELD
        case["held"] = cls
        case["trace"] = None
        case["trace_note"] = HELD


def probe_records(vhostlab: Path) -> bool:
    """Whether this probe has --record DIR (traces of failing cases)."""
    out = subprocess.run([str(vhostlab), "probe", "--help"], capture_output=True, text=True,
                         check=False)
    return "--record" in out.stdout


def probe_version(vhostlab: Path) -> str:
    out = subprocess.run([str(vhostlab), "--version"], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else str(vhostlab)


def run_one(vhostlab: Path, be: probe_backends.Backend, ring: str, out_dir: Path,
            rules: dict[str, dict[str, str]], record: bool) -> dict:
    args = ["--ring", ring]
    rec = []
    if record:
        tdir = (out_dir / "traces" / f"{be.name}-{ring}").resolve()
        tdir.mkdir(parents=True, exist_ok=True)
        rec = ["--record", str(tdir)]
    res, took = probe_backends.run_probe(vhostlab, be, *args, *rec)
    try:
        doc = json.loads(res.stdout)
    except json.JSONDecodeError as e:
        raise SystemExit(f"conformance_report: the probe against {be.name} ({ring}) exited "
                         f"{res.returncode} without one JSON document ({e}):\n"
                         f"{res.stdout[-2000:]}\n{res.stderr[-2000:]}\n{be.log_tail()}")
    hold_back(doc, be.name)
    for case in doc.get("cases", []):
        # Traces as paths in the repository, not on this machine.
        trace = case.get("trace")
        if isinstance(trace, str) and Path(trace).is_absolute():
            try:
                case["trace"] = str(Path(trace).relative_to(ROOT))
            except ValueError:
                pass
    used = {r for c in doc.get("cases", []) if c.get("verdict") != "pass"
            for r in rule_ids(c.get("rule", ""))}
    return {
        "backend": be.name,
        "version": be.version(),
        "ring": ring,
        "setup": be.setup(),
        "probe": {"vhostlab": probe_version(vhostlab),
                  "commit": probe_backends.git_commit(),
                  "command": " ".join(["vhostlab", "probe", "--json", "--socket", "SOCKET",
                                       *be.probe_args(), *args]),
                  "driver_features": hex(driver_features())},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "exit_status": res.returncode,
        "seconds": round(took, 1),
        "rules": {r: rules[r] for r in sorted(used) if r in rules},
        "result": doc,
    }


def run(args) -> None:
    vhostlab, fast = Path(args.bin).resolve(), Path(args.fast_bin).resolve()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rules = catalogue_rows(Path(args.catalogue))
    if not rules:
        print(f"conformance_report: no rule rows in {args.catalogue}: failures are shown "
              "with the case's own rule only", file=sys.stderr)
    record = probe_records(vhostlab)
    chosen = probe_backends.all_backends(fast)
    if args.backends:
        names = {b.name for b in chosen}
        want = args.backends.split(",")
        bad = [w for w in want if w not in names]
        if bad:
            raise SystemExit(f"conformance_report: unknown back end(s) in --backends: "
                             f"{', '.join(bad)} (known: {', '.join(sorted(names))})")
        chosen = [b for b in chosen if b.name in want]
    for be in chosen:
        print(f"==> {be.name}", file=sys.stderr, flush=True)
        with be:
            be.warm_up(vhostlab)
            for ring in RINGS:
                doc = run_one(vhostlab, be, ring, out_dir, rules, record)
                path = out_dir / f"{be.name}-{ring}.json"
                path.write_text(json.dumps(doc, indent=1) + "\n")
                counts = tally(doc["result"]["cases"])
                print(f"    {ring}: " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS) +
                      f" in {doc['seconds']} s -> {path}",
                      file=sys.stderr, flush=True)


# ---- rendering ----------------------------------------------------------------------------

def tally(cases: list[dict]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for c in cases:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    return counts


def load(out_dir: Path) -> list[dict]:
    docs = [json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))]
    order = {b.name: i for i, b in enumerate(probe_backends.all_backends(Path("x")))}
    docs.sort(key=lambda d: (order.get(d["backend"], len(order)), d["backend"],
                             RINGS.index(d["ring"]) if d["ring"] in RINGS else 9))
    return docs


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def trace_cell(case: dict) -> str:
    if "trace" not in case:
        return "not recorded"
    if case["trace"]:
        return f"`{case['trace']}`"
    return cell(case.get("trace_note") or "not recorded")


def rule_source(case: dict, rules: dict) -> str:
    parts = [f"{r}: {rules[r]['source']} ({rules[r]['class']})"
             for r in rule_ids(case["rule"]) if r in rules]
    return "; ".join(parts) if parts else "(not in the catalogue)"


def render(docs: list[dict]) -> str:
    out = ["# Conformance: `vhostlab probe` against vhost-user back ends", "",
           "Generated by `scripts/conformance_report.py` (`./lab conformance`) from "
           "`reports/conformance/<backend>-<ring>.json`; do not edit by hand "
           "(`--render-only` regenerates it from those files).", "",
           "`vhostlab probe` plays QEMU's part (the front end) against a back end's socket "
           "and runs the conformance, traffic and hostile suites (docs/cli.md). Verdicts: "
           "`pass`; `fail`, with what was seen; `wedge`, a wait that timed out; `crash`, the "
           "back end closed the connection or could not be reached; `n/a`, a feature the "
           "back end does not offer, or a case that needs an echo against a back end that "
           "drops. Other projects' back ends are not required to pass: each case they do "
           "not pass is listed with the rule it breaks and why they do it, as far as it was "
           "diagnosed.", ""]
    if not docs:
        return "\n".join(out + ["No runs stored.", ""])
    out += ["## Summary", "",
            "| back end | version | ring | " + " | ".join(VERDICTS) + " | cases | seconds |",
            "|---|---|---|" + "---:|" * (len(VERDICTS) + 2)]
    for d in docs:
        counts = tally(d["result"]["cases"])
        out.append(f"| {d['backend']} | {cell(d['version'])} | {d['ring']} | " +
                   " | ".join(str(counts[v]) for v in VERDICTS) +
                   f" | {len(d['result']['cases'])} | {d['seconds']} |")
    out.append("")
    by_backend: dict[str, list[dict]] = {}
    for d in docs:
        by_backend.setdefault(d["backend"], []).append(d)
    for name, runs in by_backend.items():
        out += render_backend(name, runs)
    return "\n".join(out).rstrip("\n") + "\n"


def render_backend(name: str, runs: list[dict]) -> list[str]:
    first = runs[0]
    res = first["result"]
    be = res["backend"]
    offered = int(res["features"], 16)
    driver = int(first["probe"]["driver_features"], 16)
    proto = int(be["protocol_features_offered"] or "0", 16) if be.get(
        "protocol_features_offered") else 0
    out = [f"## {name}: {first['version']}", "",
           f"{first['setup']} Probe: {first['probe']['vhostlab']}, commit "
           f"`{first['probe']['commit']}`, {first['date']}; "
           f"`{first['probe']['command'].replace(' --ring ' + first['ring'], ' --ring RING')}`.",
           ""]
    if be.get("error"):
        out += [f"The first session could not learn the features: {cell(be['error'])}", ""]
    out += [f"- Features offered: `{res['features']}`: {decode(offered, FEATURE_NAMES)}.",
            f"- Protocol features offered: `{be.get('protocol_features_offered') or '-'}`: "
            f"{decode(proto, PROTOCOL_FEATURE_NAMES)}."]
    for d in runs:
        neg = offered & driver
        neg = neg | (1 << RING_PACKED_BIT) if d["ring"] == "packed" else neg & ~(
            1 << RING_PACKED_BIT)
        neg &= offered
        out.append(f"- Negotiated by the probe on the {d['ring']} ring: `{hex(neg)}`: "
                   f"{decode(neg, FEATURE_NAMES)}; protocol features "
                   f"`{hex(proto & PROBE_PROTOCOL)}`: "
                   f"{decode(proto & PROBE_PROTOCOL, PROTOCOL_FEATURE_NAMES)}.")
    out += ["", "(Negotiated: what is offered of the bits the probe's driver implements, "
            "sim/frontend/fe_session.h; the cases that test a smaller set, such as "
            "`minimal-features`, take fewer.)", ""]
    diag = probe_diagnoses.BY_BACKEND.get(name, {})
    for d in runs:
        cases = d["result"]["cases"]
        counts = tally(cases)
        out += [f"### {name}, {d['ring']} ring: " +
                ", ".join(f"{counts[v]} {v}" for v in VERDICTS) +
                f" of {len(cases)} (exit status {d['exit_status']}, {d['seconds']} s)", ""]
        bad = [c for c in cases if c["verdict"] not in ("pass", "n/a")]
        if bad:
            out += ["Cases failed, wedged or crashed:", "",
                    "| case | ring | verdict | rule it breaks | rule's source | why | trace |",
                    "|---|---|---|---|---|---|---|"]
            for c in bad:
                if c.get("held"):
                    out.append(f"| {c['id']} | {c['ring']} | {c['verdict']} | {cell(c['rule'])} "
                               f"| class: {cell(c['held'])} | {HELD} | {HELD} |")
                    continue
                why = diag.get((c["id"], c["ring"]), ("", "", ""))[2]
                out.append(f"| {c['id']} | {c['ring']} | {c['verdict']} | {cell(c['rule'])} | "
                           f"{cell(rule_source(c, d.get('rules', {})))} | "
                           f"{cell(why or 'not diagnosed')} | {trace_cell(c)} |")
            out.append("")
        out += ["<details><summary>Every case</summary>", "",
                "| case | suite | ring | rule | verdict | detail |", "|---|---|---|---|---|---|"]
        for c in cases:
            out.append(f"| {c['id']} | {c['suite']} | {c['ring']} | {cell(c['rule'])} | "
                       f"{c['verdict']} | {cell(c['detail'])} |")
        out += ["", "</details>", ""]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Run `vhostlab probe` against every back end (vhostlab serve's modes, "
                    "DPDK testpmd net_vhost, Open vSwitch with DPDK) on split and packed "
                    "rings, store reports/conformance/<backend>-<ring>.json and render "
                    "reports/conformance.md.")
    ap.add_argument("--render-only", action="store_true",
                    help="only render reports/conformance.md from the stored JSON files")
    ap.add_argument("--run", action="store_true",
                    help="run the probe, then render (the default without --render-only)")
    ap.add_argument("--backends", default="",
                    help="comma-separated back-end names to run (default: all); the stored "
                         "JSON of the others is kept")
    ap.add_argument("--bin", default=str(ROOT / "build/release/cli/vhostlab"),
                    help="the vhostlab program that probes (default: %(default)s)")
    ap.add_argument("--fast-bin", default=str(ROOT / "build/release/cli/vhostlab-fast"),
                    help="the vhostlab-fast whose serve is probed (default: %(default)s)")
    ap.add_argument("--catalogue", default=str(CATALOGUE),
                    help="the conformance catalogue the rule sources come from "
                         "(default: %(default)s)")
    ap.add_argument("--out", default=str(REPORTS / "conformance"),
                    help="directory of the JSON files (default: %(default)s)")
    ap.add_argument("--report", default=str(REPORTS / "conformance.md"),
                    help="the Markdown report (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.render_only and args.run:
        ap.error("--run and --render-only exclude each other")
    if not args.render_only:
        for p in (args.bin, args.fast_bin):
            if not Path(p).is_file():
                ap.error(f"{p} is not built (cmake --build build/release, or --bin/--fast-bin)")
        run(args)
    docs = load(Path(args.out))
    Path(args.report).write_text(render(docs))
    print(f"wrote {args.report} from {len(docs)} runs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

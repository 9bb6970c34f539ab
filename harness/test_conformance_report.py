"""reports/conformance.md and the probe runs it is made from (scripts/conformance_report.py,
`./lab conformance`).

The committed report must be exactly what the script renders from the committed JSON, the
JSON must cover every back end on both rings and be what the probe prints, the lab's own
back ends must pass every applicable case, and the other projects' failures must be the
ones scripts/probe_diagnoses.py explains (the same tables test_probe_dpdk.py and
test_probe_ovs.py check against live runs). The runs themselves take minutes and need DPDK
and OVS: they are made by `./lab conformance`, not here. The rendering rules (a held
memory-safety finding, the trace column) are checked on documents made up here.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from conftest import REPO_ROOT
from script_import import import_script

cr = import_script("conformance_report")
backends = import_script("probe_backends")
diagnoses = import_script("probe_diagnoses")

OUT = REPO_ROOT / "reports" / "conformance"
REPORT = REPO_ROOT / "reports" / "conformance.md"
SCRIPT = REPO_ROOT / "scripts" / "conformance_report.py"
NAMES = [b.name for b in backends.all_backends(REPO_ROOT)]


def committed() -> list[dict]:
    return cr.load(OUT)


def test_committed_report_is_the_render_of_the_committed_runs():
    assert REPORT.read_text() == cr.render(committed()), (
        "reports/conformance.md differs from the render of reports/conformance/*.json: "
        "run scripts/conformance_report.py --render-only (or ./lab conformance)")


def test_committed_runs_cover_every_back_end_on_both_rings():
    docs = committed()
    got = sorted((d["backend"], d["ring"]) for d in docs)
    assert got == sorted((n, r) for n in NAMES for r in cr.RINGS)
    for path in OUT.glob("*.json"):
        d = json.loads(path.read_text())
        assert path.name == f"{d['backend']}-{d['ring']}.json"


def test_committed_runs_are_the_probes_documents():
    for d in committed():
        where = f"{d['backend']}-{d['ring']}"
        assert d["version"] and d["probe"]["commit"] and d["date"], where
        assert d["probe"]["command"].startswith("vhostlab probe --json --socket SOCKET"), where
        assert f"--ring {d['ring']}" in d["probe"]["command"], where
        res = d["result"]
        assert isinstance(res["ok"], bool), where
        # The exit status agrees with "ok", as the probe promises (docs/cli.md).
        assert d["exit_status"] == (0 if res["ok"] else 1), where
        assert res["features"].startswith("0x") and int(res["features"], 16) >> 32 & 1, where
        keys = [(c["id"], c["ring"]) for c in res["cases"]]
        assert len(keys) == len(set(keys)), where
        # Every suite has layout-independent cases ("-"); the traffic suite alone (testpmd's
        # macswap and txonly runs) has none.
        every = "--suite" not in d["probe"]["command"]
        rings = {"-", d["ring"]} if every else {d["ring"]}
        assert {c["ring"] for c in res["cases"]} == rings, where
        suites = {"conformance", "traffic", "hostile"} if every else {"traffic"}
        assert {c["suite"] for c in res["cases"]} == suites, where
        for c in res["cases"]:
            assert c["verdict"] in cr.VERDICTS and c["rule"] and c["detail"], (where, c)
        assert len(res["cases"]) >= (75 if every else 13), where
        # The probe's driver bits were read from the header this checkout has.
        assert int(d["probe"]["driver_features"], 16) == cr.driver_features(), where


def test_lab_back_ends_pass_every_applicable_case():
    for d in committed():
        if not cr.is_ours(d["backend"]):
            continue
        bad = [(c["id"], c["ring"], c["verdict"]) for c in d["result"]["cases"]
               if c["verdict"] not in ("pass", "n/a")]
        assert not bad, (d["backend"], d["ring"], bad)
        # n/a only where the back end does not do what a case needs by design: send frames
        # back (sink, source modes) or send its own (every mode but txonly).
        na = [c for c in d["result"]["cases"] if c["verdict"] == "n/a"]
        assert all("needs a back end that echoes" in c["detail"] or
                   "needs a back end that sends frames of its own" in c["detail"]
                   for c in na), (d["backend"], na)
        if "--expect echo" in d["probe"]["command"]:
            # An echoing back end: only the cases for a source are n/a, the two of them.
            assert sorted(c["id"] for c in na) == ["source-frames", "source-no-mrg"], \
                (d["backend"], d["ring"], na)


def test_other_projects_failures_are_the_diagnosed_ones():
    for d in committed():
        table = diagnoses.BY_BACKEND.get(d["backend"])
        if table is None:
            assert cr.is_ours(d["backend"]), d["backend"]
            continue
        want = {k: v for k, v in table.items() if k[1] in ("-", d["ring"])}
        seen = {(c["id"], c["ring"]): c for c in d["result"]["cases"]
                if c["verdict"] not in ("pass", "n/a")}
        # A race with the back end's threads (probe_diagnoses.OVS_RACES) may have been won.
        races = diagnoses.OVS_RACES if d["backend"] == "ovs-dpdk" else set()
        want = {k: v for k, v in want.items() if k in seen or k not in races}
        assert set(seen) == set(want), (d["backend"], d["ring"], sorted(set(seen) ^ set(want)))
        for key, (verdict, evidence, _why) in want.items():
            assert seen[key]["verdict"] == verdict and evidence in seen[key]["detail"], key


def test_every_failure_has_its_trace_or_says_why():
    """probe --record: each case another project's back end does not pass has a trace file
    in the repository, a version 2 trace, or a note saying why it has none; and every trace
    file stored is one a case names (none left over from an older run)."""
    named = set()
    for d in committed():
        for c in d["result"]["cases"]:
            if c["verdict"] == "pass" or c["verdict"] == "n/a":
                continue
            where = (d["backend"], d["ring"], c["id"])
            if c.get("trace"):
                path = REPO_ROOT / c["trace"]
                assert path.is_file(), where
                assert path.read_text().startswith("vhostlab-trace 2\n"), where
                named.add(path.resolve())
            else:
                assert "trace" in c and c.get("trace_note"), where
    stored = {p.resolve() for p in (OUT / "traces").glob("*/*.trace")}
    assert stored == named, sorted(str(p) for p in stored ^ named)


# ---- rendering rules, on made-up documents ------------------------------------------------

def made_up(backend: str, cases: list[dict]) -> dict:
    return {"backend": backend, "version": "X 1.0", "ring": "split", "setup": "Made up.",
            "probe": {"vhostlab": "vhostlab 0.1.0", "commit": "abc", "driver_features":
                      "0xd70008000", "command": "vhostlab probe --json --socket SOCKET "
                      "--ring split"},
            "date": "2026-12-07T00:00Z", "exit_status": 1, "seconds": 1.0,
            "rules": {"S-05": {"source": "§2.7.5.3.2: the rule", "conforming": "x",
                               "class": "MUST"}},
            "result": {"ok": False, "features": "0x100008001",
                       "backend": {"protocol_features_offered": "0x8", "error": ""},
                       "cases": cases}}


def case(cid, verdict, detail, rule="S-05 virtio 2.7.5.3.2", suite="conformance", **kw):
    return {"id": cid, "suite": suite, "ring": "split", "rule": rule, "verdict": verdict,
            "detail": detail, **kw}


def test_memory_safety_finding_in_another_back_end_is_held(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("recipe")
    stray = "ring-loop: the device wrote guest byte 0x12345, " + cr.STRAY_WRITE
    doc = made_up("ovs-dpdk", [
        case("ring-loop", "fail", stray, rule="hostile-inputs.md loops", suite="hostile",
             trace=str(trace)),
        case("msg-size-huge", "crash", "closed after SET_FEATURES size 4294967295",
             rule="hostile-inputs.md size", suite="hostile"),
        case("indirect", "fail", "RX frame byte 0 is 0x40, sent 0xff")])
    ours = copy.deepcopy(doc)
    cr.hold_back(doc["result"], "ovs-dpdk")
    cases = {c["id"]: c for c in doc["result"]["cases"]}
    assert not trace.exists()
    for cid in ("ring-loop", "msg-size-huge"):
        assert cases[cid]["detail"] == cr.HELD and cases[cid]["trace"] is None
    assert cases["indirect"]["detail"] == "RX frame byte 0 is 0x40, sent 0xff"
    text = cr.render([doc])
    assert "0x12345" not in text and "4294967295" not in text
    assert "class: write into guest memory outside the buffers given" in text
    assert "class: crash: the back end stopped serving" in text
    assert text.count(cr.HELD) >= 4
    # The lab's own back end: everything shown (our bug, our repository).
    ours["backend"] = "vhostlab-serve-loopback"
    cr.hold_back(ours["result"], "vhostlab-serve-loopback")
    assert "0x12345" in cr.render([ours])


def test_failure_rows_carry_rule_source_reason_and_trace():
    doc = made_up("dpdk-testpmd", [
        case("indirect", "fail", "RX frame byte 0 is 0x40, sent 0xff", trace="t/indirect.trace"),
        case("hdr-no-mrg", "fail", "num_buffers 61166", rule="N-01 virtio 5.1.6",
             trace=None, trace_note="not reproducible by replay"),
        case("mergeable", "wedge", "no used buffer", rule="N-03 virtio 5.1.6.4.1"),
        case("echo", "pass", "32 frames")])
    text = cr.render([doc])
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()
            if line.startswith("| ") and line.count("|") == 8}
    assert "S-05: §2.7.5.3.2: the rule (MUST)" in rows["indirect"]
    assert diagnoses.DPDK_TESTPMD[("indirect", "split")][2] in rows["indirect"]
    assert "`t/indirect.trace`" in rows["indirect"]
    assert "not reproducible by replay" in rows["hdr-no-mrg"]
    assert "(not in the catalogue)" in rows["mergeable"]
    assert "not diagnosed" in rows["mergeable"] and "not recorded" in rows["mergeable"]
    assert "echo" not in rows
    # Features decoded: CSUM (bit 0), MRG_RXBUF (15), VERSION_1 (32).
    assert "`0x100008001`: CSUM, MRG_RXBUF, VERSION_1" in text
    assert "`0x100008000`: MRG_RXBUF, VERSION_1" in text  # negotiated: no CSUM in the driver


def test_catalogue_rows_are_read_by_rule_id(tmp_path):
    cat = tmp_path / "c.md"
    cat.write_text("| id | source | probe does | conforming | class |\n|---|---|---|---|---|\n"
                   "| S-05 | §2.7.5.3.2: direct then INDIRECT | TX | table data | MUST |\n"
                   "| not-a-rule | x | y | z | w |\n")
    assert cr.catalogue_rows(cat) == {"S-05": {"source": "§2.7.5.3.2: direct then INDIRECT",
                                               "conforming": "table data", "class": "MUST"}}
    assert cr.rule_ids("S-06 virtio 2.7.5.3.2, P-06 2.8.7") == ["S-06", "P-06"]


def test_usage_errors_name_the_value():
    res = subprocess.run([sys.executable, str(SCRIPT), "--run", "--render-only"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "--render-only" in res.stderr, res.stderr
    res = subprocess.run([sys.executable, str(SCRIPT), "--bin", "/nonexistent/vhostlab"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "/nonexistent/vhostlab" in res.stderr, res.stderr


def test_a_back_end_that_cannot_start_names_why_and_leaves_nothing():
    be = backends.ServeBackend(REPO_ROOT / "nonexistent" / "vhostlab-fast")
    try:
        with be:
            raise AssertionError("started without a binary")
    except backends.BackendError as e:
        assert "nonexistent/vhostlab-fast is not built" in str(e)
    assert not be.scratch.exists()

"""scripts/fuzz_campaign.py (`./lab fuzz`): the ledger's numbers come from libFuzzer's own
output, the Markdown report adds them up per target and per campaign, and bad arguments
name the bad value. Campaigns themselves need the clang fuzz build and minutes of CPU, so
they run from `./lab fuzz`, not here; this checks everything around them."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO_ROOT
from script_import import import_script

fc = import_script("fuzz_campaign")
SCRIPT = REPO_ROOT / "scripts" / "fuzz_campaign.py"

# The tail of a libFuzzer run as -print_final_stats=1 leaves it (numbers made up here, the
# format libFuzzer 14 prints).
LOG = """\
#4096	pulse  cov: 880 ft: 3012 corp: 300/20Kb exec/s: 2048 rss: 60Mb
#65536	pulse  cov: 901 ft: 3120 corp: 322/22Kb exec/s: 5041 rss: 61Mb
#70001	DONE   cov: 902 ft: 3125 corp: 323/22Kb lim: 4096 exec/s: 5000 rss: 61Mb
Done 70001 runs in 14 second(s)
stat::number_of_executed_units: 70001
stat::average_exec_per_sec:     5000
stat::new_units_added:          23
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              61
"""


def test_final_stats_are_libfuzzers_own():
    s = fc.final_stats(LOG)
    assert s["number_of_executed_units"] == 70001
    assert s["average_exec_per_sec"] == 5000
    assert s["new_units_added"] == 23
    assert s["features"] == 3125  # the last status line's ft:


def test_final_stats_of_a_killed_run_fall_back_to_the_last_status_line():
    killed = LOG.split("Done")[0]
    s = fc.final_stats(killed)
    assert s["number_of_executed_units"] == 70001
    assert "average_exec_per_sec" not in s


def row(name, execs, secs, crashes=0, unresolved=0, corpus=10):
    return {"name": name, "executions": execs, "seconds": secs, "exec_per_sec": 0,
            "corpus_before": 1, "corpus_after": corpus, "features": 100, "new_units": 0,
            "crashes": crashes, "unresolved_crashes": unresolved, "crash_files": [],
            "traces": ["tests/traces/fuzz-x.trace"] if crashes else []}


def test_report_adds_up_the_ledger():
    ledger = {"campaigns": [
        {"commit": "a" * 40, "date": "2026-12-07T10:00Z", "minutes": 10, "jobs": 2,
         "targets": [row("fuzz_scenario", 1000, 600), row("fuzz_trace_parse", 5000, 600)]},
        {"commit": "b" * 40, "date": "2026-12-07T11:00Z", "minutes": 10, "jobs": 2,
         "targets": [row("fuzz_scenario", 3000, 600, crashes=1, unresolved=1, corpus=12)]},
    ]}
    md = fc.render_md(ledger)
    assert "**9,000 executions** in 2 campaign(s); 1 unresolved crash(es)." in md
    # Per target: the sum over campaigns, the rate over the summed time, the last corpus.
    assert "| fuzz_scenario | 4,000 | 0.33 | 3 | 12 | 100 | 1 | 1 |" in md
    assert "| fuzz_trace_parse | 5,000 | 0.17 | 8 | 10 | 100 | 0 | 0 |" in md
    assert "fuzz_scenario: 1 crash(es), 1 unresolved; traces: tests/traces/fuzz-x.trace" in md


def test_render_only_rewrites_the_markdown(tmp_path):
    ledger = tmp_path / "fuzz.json"
    ledger.write_text(json.dumps({"campaigns": [
        {"commit": "c" * 40, "date": "2026-12-07T12:00Z", "minutes": 1, "jobs": 1,
         "targets": [row("fuzz_vhost_user", 777, 60)]}]}))
    r = subprocess.run([sys.executable, str(SCRIPT), "--ledger", str(ledger),
                        "--render-only"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "**777 executions**" in (tmp_path / "fuzz.md").read_text()


def test_the_committed_ledger_is_well_formed_and_its_report_current():
    ledger = REPO_ROOT / "reports" / "fuzz.json"
    data = json.loads(ledger.read_text())
    for c in data["campaigns"]:
        assert set(c) >= {"commit", "date", "minutes", "jobs", "targets"}
        for t in c["targets"]:
            assert set(t) >= {"name", "executions", "seconds", "corpus_before",
                              "corpus_after", "features", "crashes", "unresolved_crashes"}
            assert t["name"] in fc.ALL_TARGETS
            assert t["executions"] >= 0 and t["unresolved_crashes"] <= t["crashes"]
    assert (REPO_ROOT / "reports" / "fuzz.md").read_text() == fc.render_md(data)


def test_bad_arguments_name_the_value(tmp_path):
    for args, needle in ((["--targets", "fuzz_nothing"], "'fuzz_nothing'"),
                         (["--minutes", "0"], "--minutes: 0"),
                         (["--jobs", "999"], "--jobs: 999")):
        r = subprocess.run([sys.executable, str(SCRIPT), "--ledger",
                            str(tmp_path / "l.json"), *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stderr)
        assert needle in r.stderr, (args, r.stderr)

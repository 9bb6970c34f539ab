"""The dirty log's completeness checks must be able to fail (issue 58, "Live migration").

A migration cell cannot show the log complete: the guest copies received data out of its RX
buffers at once and QEMU tracks those writes itself, so a back end that logs no payload
still migrates a guest intact most of the time. Completeness is checked directly, twice:

* in the lab, `vhostlab run`'s oracle compares every page the core changed in each scanned
  burst with the dirty log (the log is on in every configuration by default);
* over the socket, the probe's `dirty-log` case compares serve's shared bitmap with every
  guest page serve wrote.

Here both run against the normal build (they pass) and against a build with one logging call
removed, VL_MUTANT_NO_RX_PAYLOAD_LOG (the mark after a direct copy into the guest, which logs
every RX payload longer than the batch threshold): both must fail, naming the page. The
mutant is built once, only the vhostlab target, in build/mutant-rx-log (cmake reuses it when
it is up to date).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, Vhostlab

MUTANT_DIR = REPO_ROOT / "build" / "mutant-rx-log"
MUTANT_VARIANT = "mutant-no-rx-payload-log"
LOG_ALL = 1 << 26


@pytest.fixture(scope="module")
def mutant() -> Vhostlab:
    """vhostlab built with VL_MUTANT_NO_RX_PAYLOAD_LOG=ON (configured and built here)."""
    configure = ["cmake", "-S", str(REPO_ROOT), "-B", str(MUTANT_DIR),
                 "-DCMAKE_BUILD_TYPE=Release", "-DVL_MUTANT_NO_RX_PAYLOAD_LOG=ON",
                 "-DVL_BUILD_TESTS=OFF"]
    build = ["cmake", "--build", str(MUTANT_DIR), "--target", "vhostlab", "-j2"]
    for argv in (configure, build):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
        assert p.returncode == 0, f"{' '.join(argv)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    m = Vhostlab(MUTANT_DIR / "cli" / "vhostlab")
    res = m("--version")
    assert res.returncode == 0 and MUTANT_VARIANT in res.stdout, res.describe()
    return m


@pytest.fixture
def tmp():
    with tempfile.TemporaryDirectory(prefix="vhl-migrat-") as d:
        yield Path(d)


def test_migration_normal_build_is_not_the_mutant(vhostlab):
    res = vhostlab("--version")
    assert res.returncode == 0 and MUTANT_VARIANT not in res.stdout, res.describe()


# ---- the lab's oracle ----------------------------------------------------------------------

def test_migration_log_oracle_checks_every_configuration(vhostlab):
    res, doc = vhostlab.run_json("--packets", "2000")
    assert doc["ok"], res.describe()
    configs = doc["configs"]
    assert len(configs) == 128, res.describe()
    # The log is on everywhere by default and every configuration checked pages against it.
    assert all(c["dirty_log"] for c in configs), res.describe()
    assert all(c["log_pages_checked"] > 0 for c in configs), res.describe()


def test_migration_log_oracle_fails_on_the_mutant(mutant):
    res, doc = mutant.run_json("--packets", "2000")
    assert not doc["ok"] and res.returncode == 1, res.describe()
    failed = [c for c in doc["configs"] if not c["ok"]]
    assert failed, res.describe()
    # Every failure is the log's, and names the page that was changed but not marked.
    for c in failed:
        assert "dirty log:" in c["error"] and "did not mark it" in c["error"], c["error"]
        assert "guest page" in c["error"], c["error"]


# ---- the probe over the socket ---------------------------------------------------------------

def probe_dirty_log(lab: Vhostlab, serve_bin: Vhostlab, tmp: Path, ring: str, *extra: str,
                    serve_extra: tuple[str, ...] = ("--quiet",)):
    sock = tmp / "s.sock"
    serve = subprocess.Popen(
        ["timeout", "-s", "KILL", "60", str(serve_bin.path), "serve", "--mode", "loopback",
         "--socket", str(sock), *serve_extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            assert serve.poll() is None, serve.communicate()
            assert time.monotonic() < deadline, f"no socket at {sock}"
            time.sleep(0.02)
        res = lab("probe", "--json", "--socket", str(sock), "--ring", ring, "--case",
                  "dirty-log", *extra, timeout=60)
    finally:
        serve.send_signal(2)  # SIGINT: serve stops cleanly (its --json document)
        out, err = serve.communicate(timeout=10)
    assert res.returncode in (0, 1), res.describe()
    doc = res.json()
    [case] = [c for c in doc["cases"] if c["id"] == "dirty-log"]
    assert case["suite"] == "conformance" and "LOG_ALL" in case["rule"], case
    return res, case, err, out


@pytest.mark.parametrize("ring", ["split", "packed"])
def test_migration_probe_dirty_log_passes_against_serve(vhostlab, tmp, ring):
    res, case, err, _ = probe_dirty_log(vhostlab, vhostlab, tmp, ring)
    assert case["verdict"] == "pass" and res.returncode == 0, res.describe()
    assert "64 frames each way" in case["detail"], case["detail"]
    # The pages checked are counted from what the probe saw come back: many, not a few.
    pages = int(case["detail"].split("all ")[1].split(" guest pages")[0])
    assert pages >= 64, case["detail"]
    assert "refused" not in err and "error" not in err.lower(), err


@pytest.mark.parametrize("ring", ["split", "packed"])
def test_migration_probe_dirty_log_fails_on_the_mutant(vhostlab, mutant, tmp, ring):
    # The probe is the normal build; only serve is the mutant.
    res, case, _, _ = probe_dirty_log(vhostlab, mutant, tmp, ring)
    assert case["verdict"] == "fail" and res.returncode == 1, res.describe()
    assert "an RX buffer it filled" in case["detail"], case["detail"]
    assert "bit in the shared log is clear" in case["detail"], case["detail"]


def test_migration_probe_dirty_log_na_without_log_all(vhostlab, tmp):
    res, case, _, _ = probe_dirty_log(vhostlab, vhostlab, tmp, "split", "--features",
                                   hex(((1 << 64) - 1) & ~LOG_ALL))
    assert case["verdict"] == "n/a", res.describe()
    assert "bit 26" in case["detail"], case["detail"]


MRG_RXBUF = 1 << 15


@pytest.mark.parametrize("ring", ["split", "packed"])
@pytest.mark.parametrize("variant", ["no-mergeable", "zero-copy"])
def test_migration_probe_dirty_log_other_configurations(vhostlab, tmp, ring, variant):
    """The same check without mergeable RX buffers (every frame in one buffer, so other
    pages are written) and with serve's zero-copy dequeue (the TX chains go back to the
    guest when their packets are freed, after the burst that took them: those used entries
    must be logged too). Zero-copy must really have taken the frames (serve's
    `zero_copied`), else the case would show nothing about it."""
    extra = ("--features", hex(((1 << 64) - 1) & ~MRG_RXBUF)) if variant == "no-mergeable" \
        else ()
    serve_extra = ("--json",) + (("--zero-copy",) if variant == "zero-copy" else ())
    res, case, err, out = probe_dirty_log(vhostlab, vhostlab, tmp, ring, *extra,
                                          serve_extra=serve_extra)
    assert case["verdict"] == "pass" and res.returncode == 0, res.describe()
    pages = int(case["detail"].split("all ")[1].split(" guest pages")[0])
    assert pages >= 64, case["detail"]
    doc = json.loads(out)
    [q] = doc["ports"][0]["queues"]
    assert doc["leaked_packets"] == 0 and q["drops"] == 0 and q["rx_packets"] == 64, doc
    assert q["zero_copied"] == (64 if variant == "zero-copy" else 0), q
    print(f"{ring} {variant}: {case['detail']}")


# ---- the same checks as traces (issue 57: message log-start, expect logged) ----------------

RX_LOG_TRACE = """vhostlab-trace 2
features version_1
region 0x0 0x10000
queue rx rx size=8 at=0x0
message log-start pages=16
post rx 0x2f00+2048:w
kick rx
enqueue rx len=1500,data=seq:7
expect enqueued rx 1
expect used rx id=0 len=1512
expect logged 0x2f00 1512
"""


def test_migration_expect_logged_in_process(vhostlab, mutant, tmp):
    """In process, `message log-start` shares a log with the core's own vhost-user device:
    a 1500-byte frame copied straight into an RX buffer that starts 256 bytes before a page
    boundary marks both pages; the mutant's core (no mark after that copy) leaves the page
    that holds payload only clear (the header's own write marks the first), which `expect
    logged` names."""
    trace = tmp / "rx-log.trace"
    trace.write_text(RX_LOG_TRACE)
    good = vhostlab("replay", "--json", str(trace))
    assert good.returncode == 0 and good.json()["traces"][0]["status"] == "pass", \
        good.describe()
    bad = mutant("replay", "--json", str(trace))
    t = bad.json()["traces"][0]
    assert bad.returncode == 1 and t["status"] == "diverged", bad.describe()
    assert t["line"] == len(RX_LOG_TRACE.splitlines()) and t["signature"] == "expect logged", t
    assert "guest page 3 (gpa 0x3000) is not marked" in t["observed"], t


def test_migration_recorded_dirty_log_trace(vhostlab, mutant, tmp):
    """probe --record writes the failing dirty-log case as a trace (message log-start, the
    traffic, expect logged per run of written pages): replayed over the socket it fails at
    its last line against the mutant serve, and passes against the normal one with nothing
    skipped."""
    rec = tmp / "rec"
    rec.mkdir()
    _, case, _, _ = probe_dirty_log(vhostlab, mutant, tmp, "split", "--record", str(rec))
    assert case["verdict"] == "fail" and case["trace_note"] == "", case
    trace = Path(case["trace"])
    lines = trace.read_text().splitlines()
    assert any(line.startswith("message log-start pages=") for line in lines), lines[:12]
    assert lines[-1].startswith("expect logged "), lines[-1]
    got = {}
    for name, serve_bin in (("mutant", mutant), ("normal", vhostlab)):
        sock = tmp / f"{name}.sock"
        serve = subprocess.Popen(
            ["timeout", "-s", "KILL", "120", str(serve_bin.path), "serve", "--mode",
             "loopback", "--quiet", "--socket", str(sock)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            deadline = time.monotonic() + 10
            while not sock.exists():
                assert serve.poll() is None, serve.communicate()
                assert time.monotonic() < deadline, f"no socket at {sock}"
                time.sleep(0.02)
            res = vhostlab("replay", "--json", "--socket", str(sock), str(trace), timeout=120)
        finally:
            serve.terminate()
            serve.communicate(timeout=10)
        got[name] = res.json()["traces"][0]
    m = got["mutant"]
    assert m["status"] == "diverged" and m["line"] == len(lines), m
    assert m["signature"] == "expect logged" and "is not marked" in m["observed"], m
    assert got["normal"]["status"] == "pass" and got["normal"]["skipped"] == 0, got["normal"]

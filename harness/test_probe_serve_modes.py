"""`vhostlab probe` against `vhostlab-fast serve` in every mode it can judge, both rings.

harness/test_probe.py runs the lab program's serve in loopback mode as a server; here the
production program in the other modes of reports/conformance.md, started by
scripts/probe_backends.py as `./lab conformance` starts them: loopback as a client (the
probe listens, --server), rxonly, null and touch, which drop every frame (--expect sink),
txonly, which drops them and sends 64-byte frames of its own (--expect source), and pair
and tap with nothing on the far side (a second socket no guest uses, a TAP device nothing
reads: --expect sink). Each
must pass every applicable case, with no wedge and no crash; a mode leaves exactly the cases
that need what it does not do n/a: the echo cases (sink, source), the source cases (echo,
sink).
"""

from __future__ import annotations

import json

import pytest

from script_import import import_script

backends = import_script("probe_backends")


@pytest.mark.parametrize("mode, client, extra", [
    ("loopback", True, ()), ("rxonly", False, ()), ("null", False, ()), ("touch", False, ()),
    ("txonly", False, ()), ("pair", False, ()), ("tap", False, ()),
    # The queue pair on a worker thread: every message of the probe -- memory tables, ring
    # stops, status 0, resets, the dirty log, the hostile ones -- reaches it through a pause.
    ("loopback", False, ("--threads", "1")),
], ids=["loopback-client", "rxonly", "null", "touch", "txonly", "pair", "tap",
        "loopback-threads1"])
def test_serve_mode_passes_every_applicable_case(vhostlab, vhostlab_fast, mode, client, extra):
    with backends.ServeBackend(vhostlab_fast.path, mode, client=client, extra=extra) as be:
        res, took = backends.run_probe(vhostlab.path, be, timeout=180)
        log = be.log_tail()
    describe = f"exit {res.returncode}\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}\n{log}"
    assert res.returncode == 0, describe
    doc = json.loads(res.stdout)
    assert doc["ok"] is True, describe
    cases = doc["cases"]
    assert {c["ring"] for c in cases} == {"-", "split", "packed"}
    assert {c["suite"] for c in cases} == {"conformance", "traffic", "hostile"}
    assert len(cases) >= 130, len(cases)
    bad = [c for c in cases if c["verdict"] not in ("pass", "n/a")]
    assert not bad, describe
    na = [c for c in cases if c["verdict"] == "n/a"]
    echo_na = [c for c in na if "needs a back end that echoes" in c["detail"]]
    source_na = [c for c in na if "needs a back end that sends frames of its own" in c["detail"]]
    assert len(echo_na) + len(source_na) == len(na), na  # nothing n/a for another reason
    # The cases whose id says what they need: the source cases, and every other traffic case
    # and the conformance cases that need the frame back (26 per ring, dirty-log too).
    sources = {(c["id"], c["ring"]) for c in cases if c["id"].startswith("source-")}
    assert len(sources) == 4, sources
    if mode == "loopback":
        assert {(c["id"], c["ring"]) for c in source_na} == sources and not echo_na, describe
    else:
        assert len(echo_na) == 52, [(c["id"], c["ring"]) for c in echo_na]
        if mode == "txonly":
            assert not source_na, describe
            passed = {(c["id"], c["ring"]) for c in cases if c["verdict"] == "pass"}
            assert sources <= passed, describe
        else:
            assert {(c["id"], c["ring"]) for c in source_na} == sources, describe
    assert took < 120, f"the probe took {took:.0f} s against serve --mode {mode}"

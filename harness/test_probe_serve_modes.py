"""`vhostlab probe` against `vhostlab-fast serve` in every mode it can judge, both rings.

harness/test_probe.py runs the lab program's serve in loopback mode as a server; here the
production program in the other modes of reports/conformance.md, started by
scripts/probe_backends.py as `./lab conformance` starts them: loopback as a client (the
probe listens, --server), and rxonly, null and touch, which drop every frame (--expect
sink). Each must pass every applicable case, with no wedge and no crash; a sink mode leaves
exactly the cases that need an echo n/a.
"""

from __future__ import annotations

import json

import pytest

from script_import import import_script

backends = import_script("probe_backends")


@pytest.mark.parametrize("mode, client, extra", [
    ("loopback", True, ()), ("rxonly", False, ()), ("null", False, ()), ("touch", False, ()),
    # The queue pair on a worker thread: every message of the probe -- memory tables, ring
    # stops, status 0, resets, the dirty log, the hostile ones -- reaches it through a pause.
    ("loopback", False, ("--threads", "1")),
], ids=["loopback-client", "rxonly", "null", "touch", "loopback-threads1"])
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
    if mode == "loopback":
        assert not na, describe
    else:
        # Only what needs the frame back, and every such case: 17 per ring (dirty-log too).
        assert na and all("needs a back end that echoes" in c["detail"] for c in na), na
        assert len(na) == 34, [(c["id"], c["ring"]) for c in na]
    assert took < 120, f"the probe took {took:.0f} s against serve --mode {mode}"

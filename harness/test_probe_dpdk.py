"""`vhostlab probe` against DPDK 22.11 testpmd's net_vhost, every suite, split and packed.

testpmd with one port in `io` mode pairs the port with itself: every frame the probe sends
comes back, so the probe runs with --expect echo. DPDK is not required to pass. What this cell
pins down: the probe finishes (no crash of the probe), prints one well-formed JSON document,
and the cases DPDK fails are exactly those listed in scripts/probe_diagnoses.py with the
reason seen, so a change on either side (a probe bug, or DPDK behaving differently) is
noticed. `vhostlab serve` passes
every one of them (harness/test_probe.py).

testpmd missing is a failure, not a skip: ./lab installs dpdk-dev. testpmd is started by
scripts/probe_backends.py, as for reports/conformance.md (`./lab conformance`).
"""

from __future__ import annotations

import json

import pytest

from script_import import import_script

backends = import_script("probe_backends")

# (case id, ring) -> (verdict, a piece of its detail, why DPDK 22.11 does this): one table
# for this test and for reports/conformance.md.
DIAGNOSES = import_script("probe_diagnoses")
DPDK_FAILS = DIAGNOSES.DPDK_TESTPMD


def test_probe_every_suite_against_dpdk_testpmd(vhostlab):
    # The back end as scripts/probe_backends.py starts it for reports/conformance.md.
    with backends.TestpmdBackend() as tp:
        res, took = backends.run_probe(vhostlab.path, tp, timeout=120)
        log = tp.log_tail()
    describe = f"exit {res.returncode}\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}\n{log}"
    # The probe itself finished: exit 1 (not everything passed), never a signal.
    assert res.returncode == 1, describe
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["backend"]["error"] == "", describe
    assert doc["features"].startswith("0x") and int(doc["features"], 16) & (1 << 32)
    cases = doc["cases"]
    for c in cases:
        assert set(c) >= {"id", "suite", "ring", "rule", "verdict", "detail"}, c
        assert c["suite"] in ("conformance", "traffic", "hostile"), c
    keys = [(c["id"], c["ring"]) for c in cases]
    assert len(keys) == len(set(keys))
    assert {c["suite"] for c in cases} == {"conformance", "traffic", "hostile"}
    assert {c["ring"] for c in cases} == {"-", "split", "packed"}
    # Nothing is n/a but the cases for a back end that sends frames of its own, and the
    # GSO cases: with its default tso=0 net_vhost offers no HOST_TSO4/6 and no HOST_USO.
    na = {(c["id"], c["ring"]): c["detail"] for c in cases if c["verdict"] == "n/a"}
    assert {i for i, _ in na} == {
        "offload-tso4", "offload-tso4-guest", "offload-tso6", "offload-tso6-guest",
        "offload-uso", "offload-uso-guest", "source-frames", "source-no-mrg"}, describe
    assert all("not offered" in d for (i, _), d in na.items() if i.startswith("offload-"))
    # The checksum cases ran and pass: lib/vhost completes the checksum in software.
    assert all(c["verdict"] == "pass" for c in cases if c["id"].startswith("offload-csum"))
    # No crash of the back end either, and the failures are the listed ones.
    seen = {(c["id"], c["ring"]): c for c in cases
            if c["verdict"] not in ("pass", "n/a")}
    assert set(seen) == set(DPDK_FAILS), (
        f"unlisted: {sorted(set(seen) - set(DPDK_FAILS))}; "
        f"no longer failing: {sorted(set(DPDK_FAILS) - set(seen))}\n{describe}")
    for key, (verdict, evidence, _why) in DPDK_FAILS.items():
        assert seen[key]["verdict"] == verdict, seen[key]
        assert evidence in seen[key]["detail"], seen[key]
    # 76 split + 75 packed, the 20 layout-independent ones once.
    assert len(cases) >= 130, len(cases)
    # About 50 s here with testpmd busy-polling a shared CPU; a hang would be far longer.
    assert took < 90, f"the probe took {took:.0f} s against testpmd"


@pytest.mark.parametrize("forward", ["macswap", "txonly"])
def test_probe_traffic_against_testpmd_macswap_and_txonly(vhostlab, forward):
    # macswap: every frame back with its MAC addresses swapped (--expect macswap, the byte
    # oracles expect the swap); txonly: frames of testpmd's own (--expect source). The
    # traffic suite, as for reports/conformance.md; failures exactly the listed ones.
    with backends.TestpmdBackend(forward) as tp:
        res, took = backends.run_probe(vhostlab.path, tp, timeout=120)
        log = tp.log_tail()
    describe = f"exit {res.returncode}\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}\n{log}"
    assert res.returncode == 1, describe
    doc = json.loads(res.stdout)
    assert doc["backend"]["expect"] == backends.TestpmdBackend.FORWARD[forward], describe
    cases = doc["cases"]
    assert {c["suite"] for c in cases} == {"traffic"}, describe
    table = DIAGNOSES.BY_BACKEND[f"dpdk-testpmd-{forward}"]
    seen = {(c["id"], c["ring"]): c for c in cases if c["verdict"] not in ("pass", "n/a")}
    assert set(seen) == set(table), (
        f"unlisted: {sorted(set(seen) - set(table))}; "
        f"no longer failing: {sorted(set(table) - set(seen))}\n{describe}")
    for key, (verdict, evidence, _why) in table.items():
        assert seen[key]["verdict"] == verdict and evidence in seen[key]["detail"], seen[key]
    passed = {c["id"] for c in cases if c["verdict"] == "pass"}
    if forward == "macswap":
        # The echo went through with the swap expected (a plain echo would fail at byte 0).
        assert {"echo", "offload-csum", "offload-csum-guest"} <= passed, describe
    else:
        assert "source-frames" in passed, describe
        src = [c for c in cases if c["id"] == "source-frames"]
        assert all("32 frames of 64..64 bytes arrived" in c["detail"] for c in src), src
    assert took < 60, f"the probe took {took:.0f} s against testpmd {forward}"

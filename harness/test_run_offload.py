"""`vhostlab run --offload none|csum|tso|all` (docs/cli.md, docs/architecture.md "The lab's
offloaded traffic").

Each mode negotiates its offload features; the guest sends checksum-offload and GSO frames as
they allow, the host segments and completes them with the core's fallbacks and compares every
frame with the reference model's, and it sends the guest what a side offloading one step more
sends, made to fit (vl_sw_fit) where the driver cannot take it. A configuration only reports
"ok" when every frame matched, so these tests check that each mode ran, negotiated what it
says, and that the counters of what was exercised moved where the mode makes them move (and
stayed at 0 where it cannot).
"""

from __future__ import annotations

import itertools

import pytest

PACKETS = 3000

# What each mode negotiates (docs/cli.md), cumulative.
FEATURES = {
    "none": [],
    "csum": ["csum", "guest_csum"],
    "tso": ["guest_tso4", "guest_tso6", "guest_ecn", "host_tso4", "host_tso6", "host_ecn"],
    "all": ["guest_uso4", "guest_uso6", "host_uso"],
}
MODES = list(FEATURES)

COUNTERS = [
    "gso_tx_packets", "gso_tx_max", "csum_tx_packets", "linux_chains", "gso_rx_packets",
    "gso_rx_max", "csum_rx_packets", "rx_fitted", "big_rx_buffers", "segments_checked",
    "csum_completed", "csum_verified",
]

# Both rings, mergeable and indirect on and off, zero-copy on and off.
MATRIX = ("--ring", "both", "--mergeable", "both", "--indirect", "both", "--zero-copy", "both",
          "--in-order", "off", "--event-idx", "on", "--batch", "256", "--granularity", "4096",
          "--dirty-log", "off", "--faults", "none")


def features_of(mode: str) -> set[str]:
    return set(itertools.chain.from_iterable(FEATURES[m] for m in MODES[:MODES.index(mode) + 1]))


@pytest.fixture(scope="module", params=MODES)
def mode_run(request, vhostlab):
    mode = request.param
    res, doc = vhostlab.run_json("--offload", mode, "--packets", str(PACKETS), *MATRIX,
                                 timeout=300)
    return mode, res, doc


def test_mode_runs_and_negotiates(mode_run):
    mode, res, doc = mode_run
    assert doc["ok"] is True, res.describe()
    assert len(doc["configs"]) == 16, res.describe()
    combos = {(c["ring"], c["mergeable"], c["indirect"], c["zero_copy"]) for c in doc["configs"]}
    assert combos == set(itertools.product(["split", "packed"], [False, True], [False, True],
                                           [False, True])), combos
    for cfg in doc["configs"]:
        assert cfg["offload"] == mode, cfg
        assert set(cfg["offload_features"]) == features_of(mode), cfg
        assert len(cfg["offload_features"]) == len(set(cfg["offload_features"])), cfg
        for key in COUNTERS:
            assert isinstance(cfg[key], int) and not isinstance(cfg[key], bool), (key, cfg)
        # The frame budget is the packet count: fitted frames count towards it.
        assert cfg["tx_packets"] == PACKETS and cfg["rx_packets"] == PACKETS, cfg


def test_mode_exercises_what_it_negotiates(mode_run):
    mode, res, doc = mode_run
    assert doc["ok"] is True, res.describe()
    for cfg in doc["configs"]:
        # Every mode sends frames in Linux's shape and verifies checksums of whole frames.
        assert cfg["linux_chains"] > 0, cfg
        assert cfg["csum_verified"] > 0, cfg
        # Only a driver that took guest GSO without mergeable buffers posts big buffers.
        if mode in ("tso", "all") and not cfg["mergeable"]:
            assert cfg["big_rx_buffers"] > 0, cfg
        else:
            assert cfg["big_rx_buffers"] == 0, cfg
        if cfg["zero_copy"]:
            assert cfg["zc_packets"] > 0, cfg
        if mode == "none":
            # Nothing offloaded either way; the host's checksum offloads are completed.
            for key in ("csum_tx_packets", "gso_tx_packets", "gso_rx_packets",
                        "csum_rx_packets", "segments_checked"):
                assert cfg[key] == 0, (key, cfg)
            assert cfg["rx_fitted"] > 0 and cfg["csum_completed"] > 0, cfg
        elif mode == "csum":
            # Checksums offloaded both ways; the host's TCP GSO frames are cut for the guest.
            assert cfg["gso_tx_packets"] == 0 and cfg["gso_rx_packets"] == 0, cfg
            assert cfg["csum_tx_packets"] > 0 and cfg["csum_rx_packets"] > 0, cfg
            assert cfg["csum_completed"] >= cfg["csum_tx_packets"], cfg
            assert cfg["rx_fitted"] > 0, cfg
            assert cfg["segments_checked"] >= cfg["rx_fitted"], cfg
        else:
            # GSO both ways, up to 64 KiB; tso still gets UDP GSO frames cut for it.
            assert cfg["gso_tx_packets"] > 0 and cfg["gso_rx_packets"] > 0, cfg
            assert 60000 < cfg["gso_tx_max"] <= 65535, cfg
            assert 60000 < cfg["gso_rx_max"] <= 65535, cfg
            assert cfg["segments_checked"] > cfg["gso_tx_packets"], cfg
            assert cfg["csum_tx_packets"] >= cfg["gso_tx_packets"], cfg
            if mode == "tso":
                assert cfg["rx_fitted"] > 0, cfg
            else:
                assert cfg["rx_fitted"] == 0, cfg


def test_modes_multiply(vhostlab):
    res, doc = vhostlab.run_json("--offload", "none,all", "--packets", "500", "--ring", "split",
                                 "--mergeable", "on", "--indirect", "on", "--in-order", "on",
                                 "--event-idx", "on", "--batch", "0", "--granularity", "coarse")
    assert doc["ok"] is True, res.describe()
    assert sorted(c["offload"] for c in doc["configs"]) == ["all", "none"], res.describe()


def test_table_names_the_mode(vhostlab):
    res = vhostlab("run", "--quiet", "--offload", "tso", "--packets", "300", "--ring", "packed",
                   "--mergeable", "off", "--indirect", "off", "--in-order", "off",
                   "--event-idx", "off", "--batch", "0", "--granularity", "coarse")
    assert res.returncode == 0, res.describe()
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith("packed ")]
    assert len(rows) == 1 and "ol=tso" in rows[0] and rows[0].rstrip().endswith("ok"), \
        res.describe()


@pytest.mark.parametrize("bad", ["bogus", "tso,csv", ""])
def test_bad_offload_is_a_usage_error(vhostlab, bad):
    res = vhostlab("run", "--offload", bad, "--packets", "10")
    assert res.returncode == 2, res.describe()
    assert "--offload" in res.stderr, res.describe()
    assert res.stdout == "", res.describe()

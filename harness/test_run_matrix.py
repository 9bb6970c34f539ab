"""`vhostlab run --json`: the scenario matrix and its JSON result (docs/cli.md).

Each run drives the real core through the simulated guest; a configuration only reports
"ok": true when every oracle passed, so these tests fail whenever the datapath does.
"""

from __future__ import annotations

import itertools
import json

import pytest

PACKETS = 3000

# Every key of a configuration object and the type(s) its value must have.
CONFIG_KEYS = {
    "ring": str,
    "mergeable": bool,
    "indirect": bool,
    "in_order": bool,
    "event_idx": bool,
    "calls_due": int,
    "calls_spurious": int,
    "kicks_sent": int,
    "kicks_skipped": int,
    "zero_copy": bool,
    "dirty_log": bool,
    "evict": bool,
    "lines_evicted": int,
    "faults": str,
    "offload": str,
    "offload_features": list,
    "gso_tx_packets": int,
    "gso_rx_packets": int,
    "rx_fitted": int,
    "segments_checked": int,
    "csum_completed": int,
    "csum_verified": int,
    "zc_packets": int,
    "alloc_failures": int,
    "log_pages_checked": int,
    "batch_threshold": int,
    "granularity": int,
    "queue_size": int,
    "tx_packets": int,
    "rx_packets": int,
    "tx_bytes": int,
    "rx_bytes": int,
    "checks": int,
    "seconds": (int, float),
    "pps": (int, float),
    "ok": bool,
    "error": (str, type(None)),
}

DEFAULT_MATRIX = set(
    itertools.product(
        ["split", "packed"], [True, False], [True, False], [True, False], [True, False],
        [0, 256], [0, 4096],
    )
)  # (ring, mergeable, indirect, in_order, event_idx, batch_threshold, granularity)

# Evict-after-read needs CLFLUSHOPT; without it `--evict mixed` runs every configuration off.
CAN_EVICT = "clflushopt" in open("/proc/cpuinfo").read().split()

# Options that pin the dimensions a test is not about, so it runs one configuration.
ONE_LAYOUT = ("--ring", "split", "--in-order", "off", "--event-idx", "off")


def combo(cfg: dict) -> tuple:
    return (
        cfg["ring"], cfg["mergeable"], cfg["indirect"], cfg["in_order"], cfg["event_idx"],
        cfg["batch_threshold"], cfg["granularity"],
    )


def combo4(cfg: dict) -> tuple:
    return (cfg["mergeable"], cfg["indirect"], cfg["batch_threshold"], cfg["granularity"])


def has_type(value, types) -> bool:
    # bool is a subclass of int in Python; an int field must not be a JSON true/false.
    if isinstance(value, bool):
        return types is bool or (isinstance(types, tuple) and bool in types)
    return isinstance(value, types)


def check_config(cfg: dict, *, min_packets: int) -> None:
    """Schema and sanity of one configuration object that is expected to have passed."""
    assert isinstance(cfg, dict), cfg
    missing = sorted(set(CONFIG_KEYS) - set(cfg))
    assert not missing, f"configuration lacks keys {missing}: {cfg}"
    for key, types in CONFIG_KEYS.items():
        assert has_type(cfg[key], types), f"{key}={cfg[key]!r} has the wrong type in {cfg}"
    assert cfg["ring"] in ("split", "packed"), cfg
    assert cfg["ok"] is True, f"configuration failed: {cfg.get('error')}: {cfg}"
    assert cfg["error"] is None, cfg
    assert cfg["tx_packets"] >= min_packets, cfg
    assert cfg["rx_packets"] >= min_packets, cfg
    assert cfg["tx_bytes"] > 0 and cfg["rx_bytes"] > 0, cfg
    # Every packet is at least 1 byte; a byte count below the packet count is impossible.
    assert cfg["tx_bytes"] >= cfg["tx_packets"], cfg
    assert cfg["rx_bytes"] >= cfg["rx_packets"], cfg
    assert cfg["checks"] > 0, f"a passing configuration must have checked something: {cfg}"
    assert cfg["seconds"] >= 0 and cfg["pps"] >= 0, cfg
    assert cfg["batch_threshold"] >= 0, cfg
    assert cfg["granularity"] == 0 or cfg["granularity"] % 4096 == 0, cfg
    # The core computes notifications exactly: never a call the guest did not ask for, and
    # the guest asked for some (the lab arms calls in most rounds).
    assert cfg["calls_spurious"] == 0, cfg
    assert cfg["calls_due"] > 0, cfg
    assert cfg["faults"] in ("none", "nth", "prob", "scarce"), cfg
    assert cfg["offload"] in ("none", "csum", "tso", "all"), cfg
    # GSO needs its features (harness/test_run_offload.py checks each mode in detail).
    if cfg["offload"] in ("none", "csum"):
        assert cfg["gso_tx_packets"] == 0 and cfg["gso_rx_packets"] == 0, cfg
    if cfg["offload"] == "all":
        assert cfg["rx_fitted"] == 0, cfg
    if not cfg["zero_copy"]:
        assert cfg["zc_packets"] == 0, cfg
    if cfg["faults"] == "none":
        assert cfg["alloc_failures"] == 0, cfg
    if not cfg["dirty_log"]:
        assert cfg["log_pages_checked"] == 0, cfg
    # The run itself checks one line per TX copy; here: on means some, off means none.
    if cfg["evict"]:
        assert cfg["lines_evicted"] > 0, cfg
    else:
        assert cfg["lines_evicted"] == 0, cfg
    if cfg["ring"] == "split" and not cfg["mergeable"] and not cfg["indirect"]:
        assert cfg["hdr_len"] == 10, cfg
    else:
        assert cfg["hdr_len"] == 12, cfg


def untimed(cfg: dict) -> dict:
    """A configuration without its timing fields (which legitimately vary run to run)."""
    return {k: v for k, v in cfg.items() if k not in ("seconds", "pps")}


# --- the default matrix -----------------------------------------------------------------


@pytest.fixture(scope="module")
def default_run(vhostlab):
    return vhostlab.run_json("--packets", str(PACKETS))


def test_default_matrix_passes(default_run):
    res, doc = default_run
    failed = [c for c in doc.get("configs", []) if c.get("ok") is not True]
    assert doc["ok"] is True, f"failed configurations: {failed}\n{res.describe()}"
    assert res.returncode == 0, res.describe()


def test_default_matrix_top_level(default_run):
    res, doc = default_run
    assert isinstance(doc.get("configs"), list), res.describe()
    assert has_type(doc.get("seed"), int) and doc["seed"] == 1, \
        f"default seed is 1: {doc.get('seed')}"
    assert has_type(doc.get("wall_seconds"), (int, float)), doc.get("wall_seconds")
    assert doc["wall_seconds"] >= 0
    assert doc["ok"] == all(c.get("ok") is True for c in doc["configs"]), (
        'top-level "ok" must be true exactly when every configuration is ok'
    )


def test_default_matrix_is_full_product(default_run):
    _, doc = default_run
    combos = [combo(c) for c in doc["configs"]]
    assert len(combos) == 128, f"want 128 configurations, got {len(combos)}"
    duplicates = {c for c in combos if combos.count(c) > 1}
    assert not duplicates, f"configurations run more than once: {duplicates}"
    assert set(combos) == DEFAULT_MATRIX, (
        f"missing {DEFAULT_MATRIX - set(combos)}, unexpected {set(combos) - DEFAULT_MATRIX}"
    )


def test_default_matrix_configs(default_run):
    _, doc = default_run
    for cfg in doc["configs"]:
        check_config(cfg, min_packets=PACKETS)
        assert cfg["queue_size"] == 256, f"default queue size is 256: {cfg}"
        # Default sizes are 64..9000 bytes; GSO frames (tso, all) run to 64 KiB, and the
        # frames the host cuts them into (csum, tso) can be shorter than 64.
        if cfg["offload"] == "none":
            assert 64 * cfg["tx_packets"] <= cfg["tx_bytes"] <= 9000 * cfg["tx_packets"], cfg
            assert 64 * cfg["rx_packets"] <= cfg["rx_bytes"] <= 9000 * cfg["rx_packets"], cfg
        else:
            assert cfg["tx_bytes"] <= 65535 * cfg["tx_packets"], cfg
            assert cfg["rx_bytes"] <= 65535 * cfg["rx_packets"], cfg


# --- single configurations chosen by options --------------------------------------------

SINGLE_CONFIGS = [
    # mergeable, indirect, batch, granularity option, granularity in JSON
    ("on", "on", "0", "coarse", 0),
    ("off", "on", "256", "4096", 4096),
    ("on", "off", "256", "8192", 8192),
    ("off", "off", "0", "coarse", 0),
    ("on", "on", "1024", "4096", 4096),
]


@pytest.mark.parametrize("seed", [1, 2, 42, 20240601])
@pytest.mark.parametrize(
    "mergeable, indirect, batch, gran_opt, gran_json",
    SINGLE_CONFIGS,
    ids=[f"mrg={m}-ind={i}-batch={b}-gran={g}" for m, i, b, g, _ in SINGLE_CONFIGS],
)
def test_single_configuration(vhostlab, mergeable, indirect, batch, gran_opt, gran_json, seed):
    packets = 2000
    res, doc = vhostlab.run_json(
        "--mergeable", mergeable,
        "--indirect", indirect,
        "--batch", batch,
        "--granularity", gran_opt,
        "--packets", str(packets),
        "--seed", str(seed),
        *ONE_LAYOUT,
    )  # fmt: skip
    assert doc["ok"] is True, res.describe()
    assert doc.get("seed") == seed, f"JSON seed {doc.get('seed')} != --seed {seed}"
    assert len(doc["configs"]) == 1, res.describe()
    cfg = doc["configs"][0]
    check_config(cfg, min_packets=packets)
    assert combo4(cfg) == (mergeable == "on", indirect == "on", int(batch), gran_json), cfg


def test_list_options_make_product(vhostlab):
    """2 (mergeable both) x 1 x 3 batch thresholds x 1 granularity = 6 configurations."""
    res, doc = vhostlab.run_json(
        "--mergeable", "both", "--indirect", "on", "--batch", "0,64,256",
        "--granularity", "coarse", "--packets", "500", *ONE_LAYOUT,
    )  # fmt: skip
    assert doc["ok"] is True, res.describe()
    got = sorted(combo4(c) for c in doc["configs"])
    want = sorted(itertools.product([True, False], [True], [0, 64, 256], [0]))
    assert got == want, res.describe()
    for cfg in doc["configs"]:
        check_config(cfg, min_packets=500)


def test_queue_size_and_burst(vhostlab):
    res, doc = vhostlab.run_json(
        "--mergeable", "on", "--indirect", "off", "--batch", "0", "--granularity", "4096",
        "--queue-size", "64", "--burst", "1", "--packets", "500", *ONE_LAYOUT,
    )  # fmt: skip
    assert doc["ok"] is True, res.describe()
    assert len(doc["configs"]) == 1, res.describe()
    cfg = doc["configs"][0]
    check_config(cfg, min_packets=500)
    assert cfg["queue_size"] == 64, cfg


def test_same_seed_same_result(vhostlab):
    """Runs are deterministic: everything but timing repeats exactly for a seed."""
    args = ("--packets", "1000", "--seed", "5")
    res1, doc1 = vhostlab.run_json(*args)
    res2, doc2 = vhostlab.run_json(*args)
    assert doc1["ok"] is True and doc2["ok"] is True, res1.describe() + "\n" + res2.describe()
    assert [untimed(c) for c in doc1["configs"]] == [untimed(c) for c in doc2["configs"]]


# --- packet sizes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "size, packets",
    [(64, 1000), (1, 1000), (65535, 100)],
)
def test_fixed_size_byte_counts(vhostlab, size, packets):
    """With a single packet size every packet has exactly that many bytes, each way (without
    offloads: GSO frames and the frames cut from them have lengths of their own)."""
    res, doc = vhostlab.run_json(
        "--sizes", str(size), "--packets", str(packets), "--in-order", "on", "--event-idx", "on",
        "--offload", "none", timeout=300,
    )  # fmt: skip
    assert doc["ok"] is True, res.describe()
    assert len(doc["configs"]) == 32, res.describe()
    for cfg in doc["configs"]:
        check_config(cfg, min_packets=packets)
        assert cfg["tx_bytes"] == size * cfg["tx_packets"], cfg
        assert cfg["rx_bytes"] == size * cfg["rx_packets"], cfg


def test_size_list_bounds_bytes(vhostlab):
    res, doc = vhostlab.run_json("--sizes", "100,200", "--packets", "1000", "--offload", "none")
    assert doc["ok"] is True, res.describe()
    for cfg in doc["configs"]:
        check_config(cfg, min_packets=1000)
        assert 100 * cfg["tx_packets"] <= cfg["tx_bytes"] <= 200 * cfg["tx_packets"], cfg
        assert 100 * cfg["rx_packets"] <= cfg["rx_bytes"] <= 200 * cfg["rx_packets"], cfg


# --- output modes -----------------------------------------------------------------------


def test_quiet_keeps_stderr_empty(vhostlab):
    res = vhostlab("run", "--quiet", "--packets", "200")
    assert res.returncode == 0, res.describe()
    assert res.stderr == "", f"--quiet must print nothing on stderr\n{res.describe()}"


def test_text_output_has_a_row_per_configuration(vhostlab):
    res = vhostlab("run", "--quiet", "--packets", "200")
    assert res.returncode == 0, res.describe()
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert len(lines) >= 128, f"want at least one line per configuration\n{res.describe()}"
    try:
        json.loads(res.stdout)
    except json.JSONDecodeError:
        pass
    else:
        pytest.fail(f"without --json the output must be a table, not JSON\n{res.describe()}")


# --- layouts and queue sizes ---------------------------------------------------------------


@pytest.mark.parametrize("qsize", ["3", "300", "1000", "1024"])
def test_packed_any_queue_size(vhostlab, qsize):
    """Packed rings take sizes that are not powers of two (spec 2.8)."""
    res, doc = vhostlab.run_json(
        "--ring", "packed", "--queue-size", qsize, "--packets", "1500",
        "--batch", "256", "--granularity", "4096", "--indirect", "on",
    )  # fmt: skip
    assert doc["ok"] is True, res.describe()
    assert len(doc["configs"]) == 8, res.describe()
    for cfg in doc["configs"]:
        check_config(cfg, min_packets=1500)
        assert cfg["ring"] == "packed" and cfg["queue_size"] == int(qsize), cfg


def test_split_queue_size_1024(vhostlab):
    res, doc = vhostlab.run_json(
        "--ring", "split", "--queue-size", "1024", "--packets", "3000", "--batch", "256",
        "--granularity", "coarse",
    )  # fmt: skip
    assert doc["ok"] is True, res.describe()
    assert {c["queue_size"] for c in doc["configs"]} == {1024}, res.describe()


def test_split_rejects_non_power_of_two(vhostlab):
    res = vhostlab("run", "--ring", "both", "--queue-size", "300", "--packets", "10")
    assert res.returncode == 2, res.describe()
    assert "300" in res.stderr and "power of two" in res.stderr, res.describe()
    assert res.stdout == "", res.describe()


def test_ring_option_selects_layout(vhostlab):
    for ring in ("split", "packed"):
        res, doc = vhostlab.run_json("--ring", ring, "--packets", "300", "--in-order", "off",
                                     "--event-idx", "on", "--batch", "256",
                                     "--granularity", "coarse")
        assert doc["ok"] is True, res.describe()
        assert {c["ring"] for c in doc["configs"]} == {ring}, res.describe()
        assert len(doc["configs"]) == 4, res.describe()


# --- zero-copy, dirty log, faults, statistics -----------------------------------------------


def test_dirty_log_mixed_is_on_in_half(vhostlab):
    """`--dirty-log mixed` still spreads the log over the matrix as the other extras do."""
    res, doc = vhostlab.run_json("--dirty-log", "mixed", "--packets", "200")
    assert doc["ok"], res.describe()
    on = [c for c in doc["configs"] if c["dirty_log"]]
    assert len(on) * 2 == len(doc["configs"]) == 128, res.describe()
    assert all(c["log_pages_checked"] > 0 for c in on), res.describe()
    assert all(c["log_pages_checked"] == 0 for c in doc["configs"] if not c["dirty_log"])


def test_default_matrix_mixes_the_extras(default_run):
    """The extras do not multiply the default matrix; each value shows up in it, evenly. The
    dirty log is the exception: on in every configuration, so its oracle checks them all."""
    _, doc = default_run
    cfgs = doc["configs"]
    assert all(c["dirty_log"] and c["log_pages_checked"] > 0 for c in cfgs)
    for key, values in (("zero_copy", (False, True)),
                        ("evict", (False, True) if CAN_EVICT else (False,)),
                        ("faults", ("none", "nth", "prob", "scarce")),
                        ("offload", ("none", "csum", "tso", "all"))):
        counts = {v: sum(1 for c in cfgs if c[key] == v) for v in values}
        assert all(n == len(cfgs) // len(values) for n in counts.values()), (key, counts)
        for ring, in_order in itertools.product(("split", "packed"), (False, True)):
            got = {c[key] for c in cfgs if c["ring"] == ring and c["in_order"] == in_order}
            assert got == set(values), (key, ring, in_order)
    # Offloaded traffic (64 KiB frames, big receive buffers) on both rings, with mergeable
    # buffers, indirect descriptors and zero-copy on and off, and under every fault mode:
    # each mode equally often in each pair.
    offloads = ("none", "csum", "tso", "all")
    for other, values in (("mergeable", (False, True)), ("indirect", (False, True)),
                          ("zero_copy", (False, True))):
        for ring, v in itertools.product(("split", "packed"), values):
            got = [c["offload"] for c in cfgs if c["ring"] == ring and c[other] == v]
            assert sorted(set(got)) == sorted(offloads), (other, ring, v, got)
            assert all(got.count(o) == len(got) // 4 for o in offloads), (other, ring, v, got)
    for fault in ("none", "nth", "prob", "scarce"):
        got = {c["offload"] for c in cfgs if c["faults"] == fault}
        assert got == set(offloads), (fault, got)


def test_extras_multiply_when_asked(vhostlab):
    res, doc = vhostlab.run_json(
        "--ring", "packed", "--mergeable", "on", "--indirect", "on", "--in-order", "on",
        "--event-idx", "on", "--batch", "256", "--granularity", "coarse",
        "--zero-copy", "both", "--dirty-log", "both", "--faults", "all", "--packets", "1500",
        "--evict", "both" if CAN_EVICT else "off",
    )  # fmt: skip
    assert doc["ok"] is True, res.describe()
    got = sorted((c["zero_copy"], c["dirty_log"], c["evict"], c["faults"])
                 for c in doc["configs"])
    want = sorted(itertools.product([False, True], [False, True],
                                    [False, True] if CAN_EVICT else [False],
                                    ["none", "nth", "prob", "scarce"]))
    assert got == want, res.describe()
    for cfg in doc["configs"]:
        check_config(cfg, min_packets=1500)
        if cfg["zero_copy"]:
            assert cfg["zc_packets"] > 0 and cfg["held_max"] > 0, cfg
        if cfg["faults"] != "none":
            assert cfg["alloc_failures"] > 0, cfg
        if cfg["dirty_log"]:
            assert cfg["log_pages_checked"] > 0, cfg


def test_stats_json(vhostlab):
    res, doc = vhostlab.run_json("--stats", "--packets", "2000", "--zero-copy", "on",
                                 "--faults", "prob", *ONE_LAYOUT, "--mergeable", "on",
                                 "--indirect", "off", "--batch", "256", "--granularity", "coarse",
                                 "--evict", "on" if CAN_EVICT else "off")
    assert doc["ok"] is True, res.describe()
    (cfg,) = doc["configs"]
    tx, rx = cfg["stats"]["tx"], cfg["stats"]["rx"]
    # Evict-after-read: a line per dequeue copy (batched and direct), none on receive.
    copies = tx["copies_batched"] + tx["copies_direct"]
    assert copies > 0 and rx["lines_evicted"] == 0, (tx, rx)
    assert tx["lines_evicted"] == cfg["lines_evicted"] == (copies if CAN_EVICT else 0), tx
    assert tx["packets"] == cfg["tx_packets"] and rx["packets"] == cfg["rx_packets"], cfg
    assert tx["bytes"] == cfg["tx_bytes"] and rx["bytes"] == cfg["rx_bytes"], cfg
    # Every packet falls in exactly one size class.
    assert sum(tx["size_bins"].values()) == tx["packets"], tx
    assert sum(rx["size_bins"].values()) == rx["packets"], rx
    assert tx["zc_packets"] == cfg["zc_packets"] > 0, tx
    assert sum(tx["zc_fallbacks"].values()) > 0, tx
    assert tx["alloc_failures"] == cfg["alloc_failures"] > 0, tx
    # Technique 4: never more heads than chains were available, none wasted on an empty ring.
    assert tx["alloc_bufs"] >= tx["packets"], tx
    assert all(v == 0 for v in tx["drops"].values()), tx
    assert rx["alloc_calls"] == 0, "enqueue copies into guest buffers and allocates nothing"


def test_stats_text(vhostlab):
    res = vhostlab("run", "--quiet", "--stats", "--packets", "300", *ONE_LAYOUT, "--mergeable",
                   "on", "--indirect", "on", "--batch", "0", "--granularity", "coarse")
    assert res.returncode == 0, res.describe()
    for word in ("TX packets 300", "RX packets 300", "sizes", "drops none", "zero-copy",
                 "alloc calls"):
        assert word in res.stdout, f"--stats output lacks {word!r}\n{res.describe()}"

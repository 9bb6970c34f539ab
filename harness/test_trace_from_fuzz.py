"""`vhostlab trace from-fuzz`: fuzz inputs become traces that replay what they did.

Every seed of the datapath targets and of fuzz_scenario (written by the build's gen_corpus)
and every named regression input is converted and replayed. Datapath inputs are converted
with --observed, so the trace also expects, at the end, everything the run observed: every
statistic of the queue, its broken state, held chains and call decision, every dirty-log
page and an FNV-1a digest of all guest memory. A replay that passes therefore shows the
replayed core did exactly what the harness's core did. The same numbers are checked against
an independent witness: the target's own replay program (fuzz/replay_main.c, built without
the recorder) prints the run's statistics with FZ_VERBOSE=1.

Run-time switches of queue options (`set`: batching, allocation policy, zero-copy, line
wait), a new memory table (`remap`) and a dequeue of 0 packets are statements of the format
and convert exactly. What still cannot be expressed
(the persistent double-fetch adversary, VL_LAB_DOUBLE_FETCH=adversarial-persist) must be
refused without --lossy, naming it, and with --lossy still give a trace that replays.

The build tree is the one the binary under test belongs to (<build>/cli/vhostlab): its
fuzz/ directory holds gen_corpus and the targets' replay programs. Missing ones fail.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

DATAPATH = ["fuzz_split_dequeue", "fuzz_split_enqueue", "fuzz_packed_dequeue",
            "fuzz_packed_enqueue"]
REGRESSIONS = REPO_ROOT / "fuzz" / "regressions"
LOSSY = "cannot be expressed in a trace"
TIMEOUT = 600.0 * float(os.environ.get("VHOSTLAB_TIMEOUT_SCALE", "1"))


def _fuzz_dir(vhostlab) -> Path:
    return vhostlab.path.resolve().parent.parent / "fuzz"


def _target_program(vhostlab, target: str) -> Path:
    """The target's plain replay program, or its libFuzzer binary in a VL_FUZZ build."""
    d = _fuzz_dir(vhostlab)
    for p in (d / f"{target}_replay", d / target):
        if p.is_file() and os.access(p, os.X_OK):
            return p
    pytest.fail(f"no replay program for {target} in {d}: build the whole tree", pytrace=False)


@pytest.fixture(scope="session")
def seeds(vhostlab, tmp_path_factory) -> Path:
    """Fresh seed corpora from the build's generator: <dir>/<target>/<seed>."""
    gen = _fuzz_dir(vhostlab) / "gen_corpus"
    if not gen.is_file():
        pytest.fail(f"gen_corpus not found at {gen}: build the whole tree", pytrace=False)
    out = tmp_path_factory.mktemp("seeds")
    proc = subprocess.run([str(gen), str(out)], capture_output=True, text=True, timeout=TIMEOUT,
                          check=False)
    assert proc.returncode == 0, f"gen_corpus failed:\n{proc.stderr[-3000:]}"
    return out


def _inputs(seeds: Path, target: str) -> list[Path]:
    files = sorted(p for p in (seeds / target).iterdir() if p.is_file())
    assert files, f"gen_corpus wrote no seeds for {target}"
    reg = REGRESSIONS / target
    if reg.is_dir():
        files += sorted(p for p in reg.iterdir() if p.is_file())
    return files


def _convert(vhostlab, target: str, inp: Path, out: Path, *opts: str):
    return vhostlab("trace", "from-fuzz", target, str(inp), "-o", str(out), *opts,
                    timeout=TIMEOUT)


def _replay(vhostlab, trace: Path):
    return vhostlab("replay", str(trace), timeout=TIMEOUT)


def _convert_and_replay(vhostlab, target: str, inp: Path, tmp: Path, observed: bool) -> str | None:
    """Convert (exact if possible, else --lossy) and replay; None when all is well, else
    what went wrong."""
    trace = tmp / f"{target}-{inp.name}.trace"
    opts = ("--observed",) if observed else ()
    res = _convert(vhostlab, target, inp, trace, *opts)
    if res.returncode == 1 and LOSSY in res.stderr:
        if "--lossy" not in res.stderr or trace.exists():
            return f"{inp}: refused without --lossy but no hint, or a trace was written\n" \
                   f"{res.describe()}"
        res = _convert(vhostlab, target, inp, trace, "--lossy")
        if res.returncode != 0 or "not in the trace" not in res.stderr:
            return f"{inp}: --lossy conversion\n{res.describe()}"
        text = trace.read_text()
        if "# not in this trace (--lossy):" not in text:
            return f"{inp}: a --lossy trace must list what it lacks in its comments"
    elif res.returncode != 0:
        return f"{inp}: conversion failed\n{res.describe()}"
    if "the trace stops where the run did" in res.stderr:
        # Seeds and fixed regressions pass the harness (the fuzz_corpus ctest test).
        return f"{inp}: the harness failed while converting\n{res.describe()}"
    rep = _replay(vhostlab, trace)
    if rep.returncode != 0 or not rep.stdout.startswith("PASS"):
        return f"{inp}: the trace does not replay\n{rep.describe()}"
    return None


@pytest.mark.parametrize("target", DATAPATH)
def test_datapath_inputs_convert_and_replay_exactly(vhostlab, seeds, tmp_path, target):
    """Every seed and regression input: an exact trace whose observed end state replays."""
    failures = [f for f in (_convert_and_replay(vhostlab, target, inp, tmp_path, True)
                            for inp in _inputs(seeds, target)) if f]
    assert not failures, "\n\n".join(failures)


# Inputs whose conversion is known to fail, and how. Each entry is a limitation to lift;
# the test fails when one stops happening, so the entry goes.
# Inputs whose conversion is known to fail, by file name -> what stderr says. Empty since
# recorded enqueues name the lab's payloads as `stream:` patterns instead of hex (the RX-stall
# regression used to outgrow the parser's size limit).
SCENARIO_KNOWN: dict[str, str] = {}


def test_scenario_inputs_convert_and_replay(vhostlab, seeds, tmp_path):
    """fuzz_scenario records itself with the lab's oracles as expectations: every seed and
    regression (all fixed: fuzz_scenario's known-issue list is empty) replays to PASS."""
    failures = []
    for inp in _inputs(seeds, "fuzz_scenario"):
        known = SCENARIO_KNOWN.get(inp.name)
        if known:
            res = _convert(vhostlab, "fuzz_scenario", inp, tmp_path / "known.trace")
            if res.returncode != 1 or known not in res.stderr:
                failures.append(f"{inp}: the known failure ({known!r}) no longer happens "
                                f"as documented: update SCENARIO_KNOWN\n{res.describe()}")
            continue
        f = _convert_and_replay(vhostlab, "fuzz_scenario", inp, tmp_path, False)
        if f:
            failures.append(f)
    assert not failures, "\n\n".join(failures)


# "fuzz_split_dequeue: size 16: 3 bursts, 12 packets, 12 chains, 12 used, zc 0, broken no,
#  drops: head_out_of_range=1" (sim/hostile_guest/hg_setup.c, hg_teardown with FZ_VERBOSE=1)
VERBOSE = re.compile(r"size \d+: (\d+) bursts, (\d+) packets, (\d+) discarded, (\d+) chains, "
                     r"(\d+) used, zc (\d+), broken (\S+), drops:(.*)$", re.M)


def _witness(vhostlab, target: str, inp: Path) -> tuple[dict[str, str], str]:
    """The end state the target's replay program reports (FZ_VERBOSE=1): the statistics a
    trace's `expect stat` lines state, and apart from them the good chains its discard
    bursts returned."""
    prog = _target_program(vhostlab, target)
    proc = subprocess.run([str(prog), str(inp)], capture_output=True, text=True,
                          env={**os.environ, "FZ_VERBOSE": "1"}, timeout=TIMEOUT, check=False)
    assert proc.returncode == 0, f"{prog} {inp} failed:\n{proc.stderr[-3000:]}"
    m = VERBOSE.search(proc.stderr)
    assert m, f"no FZ_VERBOSE summary from {prog} {inp}:\n{proc.stderr[-3000:]}"
    w = {"bursts": m[1], "packets": m[2], "chains": m[4], "used_entries": m[5],
         "zc_packets": m[6], "broken": m[7]}
    for d in m[8].split():
        name, n = d.split("=")
        w[f"drops.{name}"] = n
    return w, m[3]


def _observed(text: str) -> dict[str, str]:
    """The trace's observed end state: `expect stat Q NAME N` and `expect broken Q R`."""
    obs = {m[1]: m[2] for m in re.finditer(r"^expect stat \S+ (\S+) (\d+)$", text, re.M)}
    m = re.search(r"^expect broken \S+ (\S+)$", text, re.M)
    if m:
        obs["broken"] = m[1]
    return obs


@pytest.mark.parametrize("target", DATAPATH)
def test_trace_agrees_with_the_fuzz_replay_program(vhostlab, seeds, tmp_path, target):
    """For every exact seed: the statistics the trace expects (and its replay reproduced)
    are those the target's own replay program reports for the same input, and the packets
    `vhostlab replay` counts are the packets the harness's core moved."""
    checked = 0
    for inp in _inputs(seeds, target):
        trace = tmp_path / f"{inp.name}.trace"
        res = _convert(vhostlab, target, inp, trace, "--observed")
        if res.returncode == 1 and LOSSY in res.stderr:
            continue
        assert res.returncode == 0, res.describe()
        rep = _replay(vhostlab, trace)
        assert rep.returncode == 0, rep.describe()
        witness, discarded = _witness(vhostlab, target, inp)
        obs = _observed(trace.read_text())
        for key, want in witness.items():
            if key.startswith("drops.") and key not in obs:
                pytest.fail(f"{inp}: the trace has no expectation for {key}")
            assert obs.get(key) == want, (
                f"{inp}: {key}: the trace expects {obs.get(key)}, the fuzz replay program "
                f"reports {want}")
        counted = re.search(r"(\d+) packets dequeued, (\d+) delivered, (\d+) discarded",
                            rep.stdout)
        assert counted, rep.describe()
        moved = counted[1] if target.endswith("dequeue") else counted[2]
        assert moved == witness["packets"], (
            f"{inp}: vhostlab replay moved {moved} packets, the harness {witness['packets']}")
        assert counted[3] == discarded, (
            f"{inp}: vhostlab replay discarded {counted[3]} chains, the harness {discarded}")
        checked += 1
    # Every seed converts exactly, the run-time switches seed included.
    assert checked >= 30, f"only {checked} seeds of {target} converted exactly"


def test_runtime_switches_become_statements(vhostlab, seeds, tmp_path):
    """The seed that switches queue options while running converts exactly: `set` for the
    batching threshold, allocation policy and zero-copy, `remap` for the new memory table;
    with the observed end state expected, the replay passes."""
    inp = seeds / "fuzz_split_dequeue" / "faults-and-switches"
    out = tmp_path / "t.trace"
    res = _convert(vhostlab, "fuzz_split_dequeue", inp, out, "--observed")
    assert res.returncode == 0, res.describe()
    text = out.read_text()
    for pattern in (r"^set tx batch=\d+$", r"^set tx alloc=(burst|available) line-wait=off$",
                    r"^set tx zero-copy=(\d+|off) zc-max=\d+$", r"^remap$"):
        assert re.search(pattern, text, re.M), f"{pattern} missing\n{text[:3000]}"
    rep = _replay(vhostlab, out)
    assert rep.returncode == 0, rep.describe()


def _observed_trace(vhostlab, seeds, tmp_path, target: str, seed: str) -> tuple[Path, str]:
    """The seed converted with its observed end state: the trace's path and text."""
    out = tmp_path / f"{target}-{seed}.trace"
    res = _convert(vhostlab, target, seeds / target / seed, out, "--observed")
    assert res.returncode == 0, res.describe()
    return out, out.read_text()


def test_line_wait_becomes_the_queue_option_and_set(vhostlab, seeds, tmp_path):
    """POLICY bit 2 is line wait: before the first statement the queue line's
    `line-wait=on`, later `set tx alloc=... line-wait=on|off`. gen_corpus's line-wait seed
    leaves chains twice on the packed ring (its comment says which): the trace expects
    tx_line_waits 2 and 13 chains and replays, and without the queue line's option the
    replay takes them in fewer bursts and fails. A split tx queue carries the option and
    the core ignores it (0 waits); an rx queue has none (the format refuses it there)."""
    out, text = _observed_trace(vhostlab, seeds, tmp_path, "fuzz_packed_dequeue", "line-wait")
    for pattern in (r"^queue tx tx .* line-wait=on$", r"^set tx alloc=burst line-wait=on$",
                    r"^set tx alloc=available line-wait=off$",
                    r"^expect stat tx tx_line_waits 2$", r"^expect stat tx chains 13$"):
        assert re.search(pattern, text, re.M), f"{pattern} missing\n{text[:3000]}"
    rep = _replay(vhostlab, out)
    assert rep.returncode == 0 and rep.stdout.startswith("PASS"), rep.describe()
    out.write_text(re.sub(r"^(queue tx tx .*) line-wait=on$", r"\1", text, count=1, flags=re.M))
    rep = _replay(vhostlab, out)
    assert rep.returncode == 1 and "expect stat tx" in rep.stdout, rep.describe()
    # (target, what the trace must say, a pattern it must not hold)
    for target, want, never in (
            ("fuzz_split_dequeue", [r"^queue tx tx .* line-wait=on$",
                                    r"^expect stat tx tx_line_waits 0$"], None),
            ("fuzz_packed_enqueue", [r"^expect stat rx tx_line_waits 0$"], r"line-wait=")):
        out, text = _observed_trace(vhostlab, seeds, tmp_path, target, "line-wait")
        for pattern in want:
            assert re.search(pattern, text, re.M), f"{target}: {pattern}\n{text[:3000]}"
        assert never is None or not re.search(never, text), f"{target}\n{text[:3000]}"
        rep = _replay(vhostlab, out)
        assert rep.returncode == 0, rep.describe()


def test_lossy_input_is_refused_and_named(vhostlab, seeds, tmp_path):
    """The persistent double-fetch adversary has no statement: no trace without --lossy,
    the reason named; with --lossy a trace that lists it in its comments."""
    inp = seeds / "fuzz_split_dequeue" / "faults-and-switches"
    out = tmp_path / "t.trace"
    env = dict(os.environ, VL_LAB_DOUBLE_FETCH="adversarial-persist")
    argv = [str(vhostlab.path), "trace", "from-fuzz", "fuzz_split_dequeue", str(inp), "-o",
            str(out)]
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                         check=False)
    assert res.returncode == 1, res.stderr
    assert not out.exists()
    assert "adversarial-persist" in res.stderr and "--lossy" in res.stderr, res.stderr
    res = subprocess.run(argv + ["--lossy"], env=env, capture_output=True, text=True,
                         timeout=TIMEOUT, check=False)
    assert res.returncode == 0, res.stderr
    assert "# not in this trace (--lossy):" in out.read_text()


def test_fault_injection_and_kicks_become_statements(vhostlab, seeds, tmp_path):
    """POOLFAIL operations are `fault pool fail-after=N` / `fault off`, KICKS `kicks`."""
    out = tmp_path / "t.trace"
    res = _convert(vhostlab, "split_dequeue", seeds / "fuzz_split_dequeue" / "faults-and-switches",
                   out, "--lossy")
    assert res.returncode == 0, res.describe()
    text = out.read_text()
    assert re.search(r"^fault pool fail-after=0$", text, re.M), text[:2000]
    assert re.search(r"^fault pool fail-after=1$", text, re.M), text[:2000]
    assert re.search(r"^fault off$", text, re.M), text[:2000]
    assert re.search(r"^kicks tx off$", text, re.M), text[:2000]
    assert re.search(r"^kicks tx on$", text, re.M), text[:2000]


def test_held_packets_are_held_and_freed_in_order(vhostlab, seeds, tmp_path):
    """A zero-copy seed that holds packets: `dequeue ... hold` and `free` of the packets the
    harness let go, by their numbers; the replay (with the observed end state) passes."""
    out = tmp_path / "t.trace"
    inp = seeds / "fuzz_split_dequeue" / "good-zero-copy-hold"
    res = _convert(vhostlab, "fuzz_split_dequeue", inp, out, "--observed")
    assert res.returncode == 0, res.describe()
    text = out.read_text()
    assert re.search(r"^dequeue tx \d+ hold$", text, re.M), text[:3000]
    frees = [list(map(int, m[1].split())) for m in re.finditer(r"^free tx ([\d ]+)$", text, re.M)]
    assert frees, text[:3000]
    freed = [n for f in frees for n in f]
    assert len(freed) == len(set(freed)), f"a packet freed twice: {frees}"
    assert re.search(r"^queue tx tx .* zero-copy=\d+ zc-max=\d+", text, re.M), text[:3000]
    rep = _replay(vhostlab, out)
    assert rep.returncode == 0, rep.describe()


def test_enqueue_packets_carry_their_bytes(vhostlab, seeds, tmp_path):
    out = tmp_path / "t.trace"
    res = _convert(vhostlab, "packed_enqueue", seeds / "fuzz_packed_enqueue" / "good-basic", out)
    assert res.returncode == 0, res.describe()
    assert re.search(r"^enqueue rx len=\d+,data=hex:[0-9a-f]+", res.stdout + out.read_text(),
                     re.M), out.read_text()[:2000]


def test_stdout_and_comment_header(vhostlab, seeds):
    inp = seeds / "fuzz_split_dequeue" / "good-basic"
    res = vhostlab("trace", "from-fuzz", "fuzz_split_dequeue", str(inp))
    assert res.returncode == 0, res.describe()
    lines = res.stdout.splitlines()
    assert lines[0].startswith("# vhostlab trace from-fuzz fuzz_split_dequeue"), res.stdout[:500]
    assert "vhostlab-trace 2" in lines, res.stdout[:500]   # tools write version 2
    assert any(line.startswith("dequeue tx ") for line in lines), res.stdout[:2000]


@pytest.mark.parametrize("target", ["fuzz_differential", "differential"])
def test_differential_is_refused_with_the_reason(vhostlab, seeds, target):
    inp = seeds / "fuzz_differential" / sorted(os.listdir(seeds / "fuzz_differential"))[0]
    res = vhostlab("trace", "from-fuzz", target, str(inp))
    assert res.returncode == 2, res.describe()
    assert "fuzz_differential" in res.stderr and "six core variants" in res.stderr, res.describe()
    assert "fuzz_differential_replay" in res.stderr, res.describe()
    assert res.stdout == "", res.describe()


def test_usage_errors_name_the_bad_value(vhostlab, seeds, tmp_path):
    res = vhostlab("trace", "from-fuzz", "fuzz_nonesuch", "x")
    assert res.returncode == 2 and "fuzz_nonesuch" in res.stderr, res.describe()
    missing = tmp_path / "no-such-input"
    res = vhostlab("trace", "from-fuzz", "split_dequeue", str(missing))
    assert res.returncode == 2 and str(missing) in res.stderr, res.describe()
    res = vhostlab("trace", "from-fuzz", "split_dequeue")
    assert res.returncode == 2 and "no input" in res.stderr, res.describe()
    res = vhostlab("trace", "from-fuzz", "split_dequeue", str(missing), "--bogus")
    assert res.returncode == 2 and "--bogus" in res.stderr, res.describe()
    scenario_seed = next((seeds / "fuzz_scenario").iterdir())
    res = vhostlab("trace", "from-fuzz", "scenario", str(scenario_seed), "--observed")
    assert res.returncode == 2 and "--observed" in res.stderr, res.describe()


def test_input_shorter_than_the_header(vhostlab, tmp_path):
    short = tmp_path / "short"
    short.write_bytes(b"\x01\x02\x03")
    res = vhostlab("trace", "from-fuzz", "split_dequeue", str(short))
    assert res.returncode == 1 and "ran nothing" in res.stderr, res.describe()


def test_help_lists_from_fuzz(vhostlab):
    res = vhostlab("trace", "--help")
    assert res.returncode == 0 and "from-fuzz" in res.stdout and "--lossy" in res.stdout, \
        res.describe()

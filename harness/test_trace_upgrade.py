"""`vhostlab trace upgrade` (docs/cli.md, docs/trace-format.md "Version 1 and trace upgrade"):
version 1 traces become version 2, repeated statement groups fold into `repeat` blocks that
replay the same, text without folds keeps its comments, and `--check` finds what is not
version 2. Also: the whole corpus is version 2."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO_ROOT

TRACE_DIR = REPO_ROOT / "tests" / "traces"

SETUP = """vhostlab-trace 1
# a burst recorded ten times
features version_1
region 0x0 0x10000
queue tx tx size=8 at=0x0
fill 0x1000 12 zero
fill 0x1100 100 seq:1
"""
BURST = """post tx 0x1000+12 0x1100+100
kick tx
dequeue tx 4
expect dequeued tx 1
expect used tx id=0 len=0
"""


def replay_json(vhostlab, path: Path) -> dict:
    res = vhostlab("replay", "--json", str(path))
    assert res.returncode in (0, 1), res.describe()
    return json.loads(res.stdout)["traces"][0]


def test_corpus_is_version_2(vhostlab):
    files = [str(p) for p in sorted(TRACE_DIR.glob("*.trace"))]
    res = vhostlab("trace", "upgrade", "--check", *files)
    assert res.returncode == 0 and res.stdout == "", res.describe()


def test_check_names_version_1(vhostlab, tmp_path):
    v1 = tmp_path / "old.trace"
    v1.write_text(SETUP + BURST)
    v2 = TRACE_DIR / "split-v2-flood.trace"
    res = vhostlab("trace", "upgrade", "--check", str(v2), str(v1))
    assert res.returncode == 1, res.describe()
    assert res.stdout == f"{v1}: version 1 (not 2)\n", res.describe()


def test_folds_repeated_bursts_and_replays_the_same(vhostlab, tmp_path):
    v1 = tmp_path / "bursts.trace"
    v1.write_text(SETUP + BURST * 10 + "expect stat tx packets 10\n")
    out = tmp_path / "bursts.v2.trace"
    res = vhostlab("trace", "upgrade", str(v1), "-o", str(out))
    assert res.returncode == 0, res.describe()
    assert "version 1 -> 2, 53 -> 10 statements (1 repeat blocks, canonical text)" in res.stderr
    text = out.read_text()
    # The ten bursts are one block: header, setup, the two fills, the block of 5 + 2 lines,
    # the stat.
    assert text.startswith("vhostlab-trace 2\n"), text
    assert "repeat 10 {\n  post tx 0x1000+12 0x1100+100\n  kick tx\n" in text, text
    assert text.count("post tx") == 1, text
    before, after = replay_json(vhostlab, v1), replay_json(vhostlab, out)
    assert before["status"] == after["status"] == "pass"
    for key in ("expectations", "packets_dequeued"):
        assert before[key] == after[key], (before, after)
    assert after["packets_dequeued"] == 10


def test_folded_failure_fails_the_same(vhostlab, tmp_path):
    # The sixth burst expects a wrong length: the group differs there, so five fold, and
    # the failure is the same statement with the same observation.
    bad = BURST.replace("len=0", "len=7")
    v1 = tmp_path / "fail.trace"
    v1.write_text(SETUP + BURST * 5 + bad + BURST * 4)
    out = tmp_path / "fail.v2.trace"
    res = vhostlab("trace", "upgrade", str(v1), "-o", str(out))
    assert res.returncode == 0, res.describe()
    assert "replays: diverged" in res.stderr, res.describe()
    before, after = replay_json(vhostlab, v1), replay_json(vhostlab, out)
    assert before["status"] == after["status"] == "diverged"
    for key in ("statement", "expected", "observed", "signature"):
        assert before[key] == after[key], (before, after)
    assert "repeat 5 {" in out.read_text() and "repeat 4 {" in out.read_text()


def test_no_fold_keeps_the_text(vhostlab, tmp_path):
    v1 = tmp_path / "keep.trace"
    v1.write_text(SETUP + BURST * 3)
    res = vhostlab("trace", "upgrade", "--no-fold", str(v1))
    assert res.returncode == 0, res.describe()
    assert res.stdout == (SETUP + BURST * 3).replace("vhostlab-trace 1", "vhostlab-trace 2", 1)
    # Folded, the text is canonical: no comments.
    res = vhostlab("trace", "upgrade", str(v1))
    assert "repeat 3 {" in res.stdout and "#" not in res.stdout, res.describe()
    # Without a fold to make (one burst: nothing repeats) the text is kept, comments too.
    v1.write_text(SETUP + BURST)
    res = vhostlab("trace", "upgrade", str(v1))
    assert res.returncode == 0, res.describe()
    assert res.stdout == (SETUP + BURST).replace("vhostlab-trace 1", "vhostlab-trace 2", 1)


def test_in_place_and_usage(vhostlab, tmp_path):
    a, b = tmp_path / "a.trace", tmp_path / "b.trace"
    a.write_text(SETUP + BURST)
    b.write_text(SETUP + BURST)
    res = vhostlab("trace", "upgrade", str(a), str(b))
    assert res.returncode == 2 and "several files need --in-place" in res.stderr, res.describe()
    res = vhostlab("trace", "upgrade", "--in-place", str(a), str(b))
    assert res.returncode == 0, res.describe()
    assert a.read_text().startswith("vhostlab-trace 2\n") and b.read_text() == a.read_text()
    res = vhostlab("trace", "upgrade", "--check", str(a), str(b))
    assert res.returncode == 0, res.describe()
    res = vhostlab("trace", "upgrade", "--check", "-o", "x", str(a))
    assert res.returncode == 2, res.describe()

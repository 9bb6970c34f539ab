"""The trace regression corpus, tests/traces/*.trace, replayed by `vhostlab replay`.

docs/trace-format.md defines the format, docs/cli.md the `replay`, `minimize` and
`trace fmt` commands. This file checks:

(a) every corpus trace replays and passes, with the JSON shape docs/cli.md documents, and the
    corpus covers every datapath class of hostile-inputs.md for both ring layouts;
(b) every corpus trace round-trips through `vhostlab trace fmt`: the canonical text replays
    the same way and formatting it again changes nothing;
(c) the replay can fail: a corpus trace with one expectation changed diverges at that line
    with the right signature, a trace that cannot run is an error, a syntax error is a parse
    error naming file:line:col, and --verbose narrates statements;
(d) `vhostlab minimize` shrinks a deliberately failing trace and keeps its failure.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT

TRACE_DIR = REPO_ROOT / "tests" / "traces"
CORPUS = sorted(TRACE_DIR.glob("*.trace"))

# hostile-inputs.md datapath classes -> the file stem after "split-" / "packed-" (each class
# needs both layouts; tests/traces/README.md has the same table).
CLASSES = {
    "range not mapped / translation returns nothing": "unmapped",
    "region straddle": "straddle",
    "loop": "loop",
    "out-of-range index": "out-of-range",
    "nested indirect": "nested-indirect",
    "bad indirect length": "indirect-len",
    "header spread": "tx-header-spread",
    "short chain": "short-chain",
    "zero-length / huge lengths": "lengths",
    "direction mismatch": "direction",
    "double fetch / TOCTOU": "double-fetch",
    "bogus offload header": "bad-offload",
    "GSO frame that contradicts its header": "gso-frame",
    "RX offloads the driver did not negotiate": "rx-offload",
    "packed ring lies": "ring-lies",
    "mergeable RX exhaustion": "rx-exhaustion",
}
FLOWS = [
    "rx-mergeable",
    "rx-non-mergeable",
    "indirect",
    "pieces",
    "wrap",
    "in-order",
    "event-idx",
    "zero-copy",
    "dirty-log",
    "pool-fault",
    "discard",
    "line-wait",
]

SETUP_WORDS = {"vhostlab-trace", "features", "region", "queue", "pool", "dirty-log", "seed"}
TRACE_KEYS = {
    "file": str,
    "status": str,
    "statements": int,
    "expectations": int,
    "packets_dequeued": int,
    "packets_delivered": int,
    "packets_discarded": int,
}
FAIL_KEYS = {"line": int, "statement": str, "expected": str, "observed": str, "signature": str}


def rel(p: Path) -> str:
    """How a corpus file is named on the command line (absolute: any working directory)."""
    return str(p)


def replay_json(vhostlab, *files: str | Path, want_rc: int | None = None):
    """`vhostlab replay --json FILES`, run from the repository root; checks the shape."""
    res = vhostlab("replay", "--json", *[str(f) for f in files])
    if want_rc is not None:
        assert res.returncode == want_rc, res.describe()
    doc = res.json()
    assert isinstance(doc, dict) and set(doc) >= {"traces", "passed", "failed"}, res.describe()
    assert isinstance(doc["traces"], list) and len(doc["traces"]) == len(files), res.describe()
    assert doc["passed"] + doc["failed"] == len(files), res.describe()
    assert doc["passed"] == sum(t.get("status") == "pass" for t in doc["traces"]), res.describe()
    for t in doc["traces"]:
        if t.get("status") == "parse-error":
            assert isinstance(t.get("error"), str) and t["error"], res.describe()
            continue
        for k, typ in TRACE_KEYS.items():
            assert isinstance(t.get(k), typ), f"trace key {k!r}\n{res.describe()}"
        assert t["status"] in ("pass", "diverged", "error"), res.describe()
        if t["status"] != "pass":
            for k, typ in FAIL_KEYS.items():
                assert isinstance(t.get(k), typ), f"failure key {k!r}\n{res.describe()}"
    return res, doc


def op_lines(text: str) -> list[tuple[int, str]]:
    """(line number, statement) of every statement after the setup block."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        if s and s.split()[0] not in SETUP_WORDS:
            out.append((n, s))
    return out


def line_of(text: str, statement: str) -> int:
    """The line number of the first statement exactly equal to `statement`."""
    for n, s in op_lines(text):
        if s == statement:
            return n
    raise AssertionError(f"statement {statement!r} not in the trace")


def replace_statement(text: str, old: str, new: str) -> tuple[str, int]:
    """Replace the statement on the first line whose statement is `old` (keeping the rest
    of the line); returns the new text and that line's number."""
    n = line_of(text, old)
    lines = text.splitlines(keepends=True)
    lines[n - 1] = lines[n - 1].replace(old, new, 1)
    return "".join(lines), n


# ---- (a) the corpus passes --------------------------------------------------------------


def test_corpus_exists_and_covers_every_class():
    names = {p.name for p in CORPUS}
    missing = [
        f"{layout}-{stem}.trace"
        for stem in list(CLASSES.values()) + FLOWS
        for layout in ("split", "packed")
        if f"{layout}-{stem}.trace" not in names
    ]
    assert not missing, f"corpus lacks {missing}"
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_trace_is_commented(path):
    """Each trace starts with comments saying what it tests and where its expectations come
    from (hostile-inputs.md, docs/architecture.md or the virtio spec)."""
    lines = path.read_text().splitlines()
    assert lines[0] == "vhostlab-trace 2"   # the corpus is version 2 (`trace upgrade --check`)
    comments = []
    for line in lines[1:]:
        if not line.startswith("#"):
            break
        comments.append(line)
    assert len(comments) >= 3, f"{path.name}: want a comment block after the header"
    text = " ".join(comments)
    assert re.search(r"hostile-inputs\.md|architecture\.md|virtio", text), (
        f"{path.name}: cite where the expectations come from")


def test_corpus_replays_json(vhostlab):
    files = [rel(p) for p in CORPUS]
    res, doc = replay_json(vhostlab, *files)
    bad = [t for t in doc["traces"] if t["status"] != "pass"]
    assert not bad, "traces that do not pass:\n" + "\n".join(
        f"{t['file']}:{t.get('line')}: {t.get('statement')}\n  expected: {t.get('expected')}"
        f"\n  observed: {t.get('observed')}\n  signature: {t.get('signature')}"
        if t["status"] != "parse-error" else f"{t['file']}: {t.get('error')}"
        for t in bad
    )
    assert res.returncode == 0, res.describe()
    assert doc["passed"] == len(files) and doc["failed"] == 0
    assert [t["file"] for t in doc["traces"]] == files, "one entry per file, in order"
    for t in doc["traces"]:
        assert t["expectations"] > 0, f"{t['file']} checks nothing"
        assert t["statements"] >= t["expectations"]
        assert "line" not in t and "signature" not in t, "failure keys only on failures"
        moved = t["packets_dequeued"] + t["packets_delivered"] + t["packets_discarded"]
        assert moved > 0, f"{t['file']} moved nothing"
        if t["file"].endswith("-discard.trace"):
            # Two good chains in each of the two discard bursts (the trace's comments).
            assert t["packets_discarded"] == 4 and moved == 4, t


def test_corpus_replays_text(vhostlab):
    files = [rel(p) for p in CORPUS]
    res = vhostlab("replay", *files)
    assert res.returncode == 0, res.describe()
    lines = res.stdout.splitlines()
    for f in files:
        assert any(re.match(rf"PASS {re.escape(f)}: \d+ statements, \d+ expectations, ", x)
                   for x in lines), f"no PASS line for {f}\n{res.describe()}"
    assert lines[-1] == f"{len(files)} of {len(files)} traces passed", res.describe()
    quiet = vhostlab("replay", "--quiet", *files)
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.describe()


# ---- (b) round trip through `trace fmt` -------------------------------------------------


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_round_trip(vhostlab, tmp_path, path):
    first = vhostlab("trace", "fmt", str(path))
    assert first.returncode == 0, first.describe()
    assert "#" not in first.stdout, "canonical form drops comments"
    canon = tmp_path / path.name
    canon.write_text(first.stdout)
    again = vhostlab("trace", "fmt", str(canon))
    assert again.returncode == 0, f"canonical text does not parse back\n{again.describe()}"
    assert again.stdout == first.stdout, "formatting the canonical text changed it"
    out = tmp_path / "via-o.trace"
    res = vhostlab("trace", "fmt", str(path), "-o", str(out))
    assert res.returncode == 0 and res.stdout == "", res.describe()
    assert out.read_text() == first.stdout, "-o writes what stdout shows"
    _, orig = replay_json(vhostlab, path)
    _, fmt = replay_json(vhostlab, canon)
    strip = ("file",)
    a = {k: v for k, v in orig["traces"][0].items() if k not in strip}
    b = {k: v for k, v in fmt["traces"][0].items() if k not in strip}
    assert a == b, f"replay of the canonical form differs:\n{a}\n{b}"


# ---- (c) the replay can fail ------------------------------------------------------------

# (trace, statement as written, changed statement, signature of the divergence)
MUTATIONS = [
    ("split-unmapped.trace", "expect dequeued tx 2", "expect dequeued tx 3", "expect dequeued"),
    ("packed-unmapped.trace", "expect packet tx 1 len=100 data=seq:2",
     "expect packet tx 1 len=100 data=seq:3", "expect packet:data"),
    ("split-loop.trace", "expect used tx id=4 len=0", "expect used tx id=5 len=0",
     "expect used:id"),
    ("packed-rx-mergeable.trace", "expect used rx id=6 len=56", "expect used rx id=6 len=57",
     "expect used:len"),
    ("split-rx-mergeable.trace", "expect mem 0x20000 12 hex:000000000000000000000400",
     "expect mem 0x20000 12 hex:000000000000000000000500", "expect mem:data"),
    ("split-out-of-range.trace", "expect broken head head_out_of_range",
     "expect broken head avail_idx_jump", "expect broken"),
    ("packed-event-idx.trace", "expect call tx no", "expect call tx yes", "expect call"),
    ("split-zero-copy.trace", "expect held tx 4", "expect held tx 3", "expect held"),
    ("split-dirty-log.trace", "expect dirty 0x10000 no", "expect dirty 0x10000 yes",
     "expect dirty"),
    ("packed-lengths.trace", "expect stat tx drops.len_overflow 1",
     "expect stat tx drops.len_overflow 2", "expect stat"),
    ("split-rx-exhaustion.trace", "expect status b 0 too_big", "expect status b 0 delivered",
     "expect status"),
    ("packed-loop.trace", "expect used ring none", "expect used ring id=0 len=0",
     "expect used:missing"),
    ("split-bad-offload.trace",
     "expect packet tx 0 len=100 data=seq:1 flags=1 gso_type=0 hdr_len=0 gso_size=0 "
     "csum_start=34 csum_offset=16",
     "expect packet tx 0 len=100 data=seq:1 flags=1 gso_type=0 hdr_len=0 gso_size=0 "
     "csum_start=35 csum_offset=16", "expect packet:csum_start"),
]


@pytest.mark.parametrize("name,old,new,signature", MUTATIONS, ids=[m[0] + ":" + m[3]
                                                                    for m in MUTATIONS])
def test_changed_expectation_diverges(vhostlab, tmp_path, name, old, new, signature):
    text, line = replace_statement((TRACE_DIR / name).read_text(), old, new)
    bad = tmp_path / name
    bad.write_text(text)
    res, doc = replay_json(vhostlab, bad, want_rc=1)
    t = doc["traces"][0]
    assert t["status"] == "diverged", res.describe()
    assert t["line"] == line, res.describe()
    assert t["signature"] == signature, res.describe()
    assert t["statement"] == new, "the statement is reported in canonical form"
    assert t["expected"] and t["observed"], res.describe()
    assert doc["passed"] == 0 and doc["failed"] == 1
    # The text form says the same.
    txt = vhostlab("replay", str(bad))
    assert txt.returncode == 1, txt.describe()
    assert f"FAIL {bad}:{line}: {new}" in txt.stdout, txt.describe()
    assert f"  signature: {signature}" in txt.stdout, txt.describe()
    assert "0 of 1 traces passed" in txt.stdout, txt.describe()
    # --quiet still prints the failure.
    quiet = vhostlab("replay", "--quiet", str(bad))
    assert quiet.returncode == 1 and f"FAIL {bad}:{line}:" in quiet.stdout, quiet.describe()


def test_line_wait_is_what_cuts_the_packed_bursts(vhostlab, tmp_path):
    """packed-line-wait.trace passes because the option reaches the core: with the queue
    line's `line-wait=on` dropped, its first burst takes all six chains where the trace
    expects four; with only the `set ... line-wait=on` before the discards made a no-op
    (`off`), the discard takes the chain the trace expects to wait, and tx_line_waits stays
    2 where the trace expects 3."""
    src = (TRACE_DIR / "packed-line-wait.trace").read_text()
    queue = "queue tx tx size=16 at=0x0 line-wait=on"
    assert src.count(queue + "\n") == 1
    text = src.replace(queue + "\n", "queue tx tx size=16 at=0x0\n")
    bad = tmp_path / "no-line-wait.trace"
    bad.write_text(text)
    res, doc = replay_json(vhostlab, bad, want_rc=1)
    t = doc["traces"][0]
    assert t["status"] == "diverged" and t["signature"] == "expect dequeued", res.describe()
    assert t["line"] == line_of(text, "expect dequeued tx 4"), res.describe()
    assert t["observed"] == "6", res.describe()
    text, at = replace_statement(src, "set tx line-wait=on", "set tx line-wait=off")
    bad.write_text(text)
    res, doc = replay_json(vhostlab, bad, want_rc=1)
    t = doc["traces"][0]
    # The third chain (id 2) comes back with the other two.
    none = next(n for n, x in op_lines(text) if n > at and x == "expect used tx none")
    assert t["status"] == "diverged" and t["line"] == none, res.describe()
    assert t["signature"].startswith("expect used"), res.describe()


def test_line_wait_on_an_rx_queue_is_a_parse_error(vhostlab, tmp_path):
    """line-wait= is a dequeue option: on an rx queue (queue line or set) the trace does not
    parse, and the message names the option."""
    base = "vhostlab-trace 1\nfeatures version_1 ring_packed\nregion 0x0 0x10000\n"
    for body, line, col in (("queue r rx size=8 at=0x0 line-wait=on\n", 4, 26),
                            ("queue r rx size=8 at=0x0\nset r line-wait=off\n", 5, 7)):
        bad = tmp_path / "rx.trace"
        bad.write_text(base + body)
        res = vhostlab("replay", str(bad))
        assert res.returncode == 2, res.describe()
        assert f"{bad}:{line}:{col}: " in res.stderr, res.describe()
        assert "line-wait" in res.stderr and "tx queues only" in res.stderr, res.describe()


def test_one_failure_among_passes(vhostlab, tmp_path):
    """Exit 1 when any trace fails; the others still pass and are reported."""
    text, line = replace_statement((TRACE_DIR / "split-loop.trace").read_text(),
                                   "expect dequeued tx 2", "expect dequeued tx 1")
    bad = tmp_path / "bad.trace"
    bad.write_text(text)
    good = rel(TRACE_DIR / "packed-loop.trace")
    res, doc = replay_json(vhostlab, good, bad, want_rc=1)
    assert [t["status"] for t in doc["traces"]] == ["pass", "diverged"]
    assert doc["traces"][1]["line"] == line
    assert doc["passed"] == 1 and doc["failed"] == 1


def test_statement_that_cannot_run_is_an_error(vhostlab, tmp_path):
    text = (TRACE_DIR / "split-zero-copy.trace").read_text()
    text, line = replace_statement(text, "free tx 2", "free tx 9")
    bad = tmp_path / "free.trace"
    bad.write_text(text)
    res, doc = replay_json(vhostlab, bad, want_rc=1)
    t = doc["traces"][0]
    assert t["status"] == "error" and t["signature"] == "error:free", res.describe()
    assert t["line"] == line, res.describe()


def test_trace_without_expectations_passes(vhostlab, tmp_path):
    """No expectation: only the end-of-run checks (pool hygiene, no double fetch)."""
    text = "\n".join(
        line for line in (TRACE_DIR / "split-pieces.trace").read_text().splitlines()
        if not line.startswith("expect")
    ) + "\n"
    t = tmp_path / "noexpect.trace"
    t.write_text(text)
    res, doc = replay_json(vhostlab, t, want_rc=0)
    assert doc["traces"][0]["expectations"] == 0


def test_mutate_that_never_fires_diverges(vhostlab, tmp_path):
    """Every mutate must fire: one on bytes the core never reads fails at the end."""
    text = (TRACE_DIR / "split-pieces.trace").read_text().replace(
        "kick tx\n", "mutate 0xf000 00\nkick tx\n", 1)
    t = tmp_path / "mutate.trace"
    t.write_text(text)
    res, doc = replay_json(vhostlab, t, want_rc=1)
    assert doc["traces"][0]["signature"] == "end:mutate", res.describe()


@pytest.mark.parametrize("token,good", [("len=0x1g", "len=0x10"), ("sise=8", "size=8"),
                                        ("frobnicate", "kick tx")])
def test_syntax_error_is_a_parse_error(vhostlab, tmp_path, token, good):
    src = (TRACE_DIR / "split-short-chain.trace").read_text()
    if token == "len=0x1g":
        text, line = replace_statement(src, "post tx 0x10000+11", "desc tx 9 addr=0x0 len=0x1g")
        col = text.splitlines()[line - 1].index(token) + 1
    elif token == "sise=8":
        old = "queue tx tx size=16 at=0x0"
        lines = src.splitlines(keepends=True)
        line = next(i for i, x in enumerate(lines, 1) if x.startswith(old))
        lines[line - 1] = lines[line - 1].replace("size=16", "sise=8")
        text = "".join(lines)
        col = text.splitlines()[line - 1].index(token) + 1
    else:
        text, line = replace_statement(src, "kick tx", "frobnicate tx")
        col = 1
    bad = tmp_path / "syntax.trace"
    bad.write_text(text)
    res = vhostlab("replay", str(bad))
    assert res.returncode == 2, res.describe()
    m = re.search(rf"{re.escape(str(bad))}:(\d+):(\d+): ", res.stderr)
    assert m, f"want FILE:LINE:COL: in the message\n{res.describe()}"
    assert int(m.group(1)) == line, res.describe()
    assert int(m.group(2)) == col, res.describe()
    res_json, doc = replay_json(vhostlab, bad, want_rc=2)
    assert doc["traces"][0]["status"] == "parse-error", res_json.describe()
    assert f"{bad}:{line}:{col}:" in doc["traces"][0]["error"], res_json.describe()
    fmt = vhostlab("trace", "fmt", str(bad))
    assert fmt.returncode == 2 and f"{bad}:{line}:{col}:" in fmt.stderr, fmt.describe()


def test_parse_error_among_good_traces_exits_2(vhostlab, tmp_path):
    bad = tmp_path / "v3.trace"
    bad.write_text("vhostlab-trace 3\n")
    res = vhostlab("replay", rel(TRACE_DIR / "split-loop.trace"), str(bad))
    assert res.returncode == 2, res.describe()
    assert f"{bad}:1:" in res.stderr, res.describe()


def test_verbose_narrates_statements(vhostlab):
    path = TRACE_DIR / "split-tx-header-spread.trace"
    text = path.read_text()
    res = vhostlab("replay", "--verbose", rel(path))
    assert res.returncode == 0, res.describe()
    err = res.stderr
    for n, stmt in op_lines(text):
        assert re.search(rf"^\s*{n}: ", err, re.M), f"line {n} ({stmt}) not narrated\n{err}"
    assert re.search(r"^\s*\d+: dequeue tx 32$", err, re.M), err
    assert re.search(r"-> 1 packets", err), err
    assert re.search(r"posted head 0 \(4 descriptors\)", err), err
    assert res.stdout.startswith("PASS "), "narration goes to stderr, results to stdout"
    plain = vhostlab("replay", rel(path))
    assert plain.stderr == "", plain.describe()


def test_verbose_narrates_mutations(vhostlab):
    res = vhostlab("replay", "--verbose", rel(TRACE_DIR / "packed-double-fetch.trace"))
    assert res.returncode == 0, res.describe()
    assert len(re.findall(r"mutate of line \d+ fired", res.stderr)) == 7, res.describe()


# ---- (d) minimize -----------------------------------------------------------------------


def failing_trace(tmp_path: Path) -> tuple[Path, int, str]:
    """split-unmapped.trace plus irrelevant statements, with a wrong expectation in the
    middle (packet 1 carries seq:2, not seq:5). Returns the path, the failing line, and
    the statement."""
    text = (TRACE_DIR / "split-unmapped.trace").read_text()
    # Irrelevant statements: two fills no chain uses, before the kick.
    text = text.replace("kick tx\n", "fill 0x1f000 64 byte:0x42\nfill 0x1f100 32 seq:9\nkick tx\n",
                        1)
    wrong = "expect packet tx 1 len=100 data=seq:5"
    text, line = replace_statement(text, "expect packet tx 1 len=100 data=seq:2", wrong)
    path = tmp_path / "failing.trace"
    path.write_text(text)
    return path, line, wrong


def test_minimize_keeps_the_failure(vhostlab, tmp_path):
    src, line, wrong = failing_trace(tmp_path)
    _, before = replay_json(vhostlab, src, want_rc=1)
    tb = before["traces"][0]
    assert (tb["status"], tb["line"], tb["signature"]) == ("diverged", line, "expect packet:data")

    out = tmp_path / "small.trace"
    res = vhostlab("minimize", str(src), "-o", str(out), "--json", timeout=600)
    assert res.returncode == 0, res.describe()
    rep = res.json()
    for k, typ in {"input": str, "output": str, "signature": str, "statements_before": int,
                   "statements_after": int, "bytes_before": int, "bytes_after": int,
                   "replays": int}.items():
        assert isinstance(rep.get(k), typ), f"report key {k!r}\n{res.describe()}"
    assert rep["input"] == str(src) and rep["output"] == str(out)
    assert rep["signature"] == tb["signature"]

    small = out.read_text()
    canon_in = vhostlab("trace", "fmt", str(src)).stdout
    assert rep["statements_before"] == len(op_lines(src.read_text()))
    assert rep["statements_after"] == len(op_lines(small))
    assert rep["statements_after"] < rep["statements_before"]
    assert rep["bytes_before"] in (len(src.read_bytes()), len(canon_in.encode()))
    assert rep["bytes_after"] == len(small.encode())
    assert rep["bytes_after"] < rep["bytes_before"]
    assert rep["replays"] >= 2
    # The result fails the same way, ends at the failing expectation and is canonical.
    _, after = replay_json(vhostlab, out, want_rc=1)
    ta = after["traces"][0]
    assert ta["status"] == "diverged" and ta["signature"] == tb["signature"], after
    assert op_lines(small)[-1][1] == ta["statement"], "everything after the failure is cut"
    assert "fill 0x1f000" not in small and "fill 0x1f100" not in small
    fmt = vhostlab("trace", "fmt", str(out))
    assert fmt.returncode == 0 and fmt.stdout == small, "minimize writes canonical form"

    # The text report says the same numbers.
    out2 = tmp_path / "small2.trace"
    txt = vhostlab("minimize", str(src), "-o", str(out2), timeout=600)
    assert txt.returncode == 0, txt.describe()
    assert (f'failure "{rep["signature"]}" kept; {rep["statements_before"]} -> '
            f'{rep["statements_after"]} statements, {rep["bytes_before"]} -> '
            f'{rep["bytes_after"]} bytes') in txt.stdout, txt.describe()
    assert out2.read_text() == small, "minimize is deterministic"


def test_minimize_refuses_a_passing_trace(vhostlab, tmp_path):
    out = tmp_path / "out.trace"
    res = vhostlab("minimize", rel(TRACE_DIR / "split-loop.trace"), "-o", str(out))
    assert res.returncode == 1, res.describe()


def test_minimize_usage_errors(vhostlab, tmp_path):
    res = vhostlab("minimize", rel(TRACE_DIR / "split-loop.trace"))
    assert res.returncode == 2, res.describe()
    bad = tmp_path / "bad.trace"
    bad.write_text("vhostlab-trace 1\nfeatures version_1\nfrobnicate\n")
    res = vhostlab("minimize", str(bad), "-o", str(tmp_path / "o.trace"))
    assert res.returncode == 2 and f"{bad}:3:1:" in res.stderr, res.describe()

"""`vhostlab minimize` keeps the failure itself, not only its kind (docs/cli.md).

A candidate counts only if it fails with the same signature, at the same statement, with the
same observation. Otherwise the cheapest "reproduction" of a wrong-bytes failure is the lone
expectation on memory nothing wrote.
"""

from __future__ import annotations

TRACE = """vhostlab-trace 1
features version_1
region 0x0 0x10000
region 0x10000 0x10000
queue tx tx size=8 at=0x0
fill 0x10000 64 seq:1          # unrelated
fill 0x11000 16 byte:0x11      # the bytes the expectation sees
fill 0x12000 64 seq:2          # unrelated
expect mem 0x11000 16 byte:0x22
"""


def test_minimize_keeps_what_the_failure_observes(vhostlab, tmp_path):
    src = tmp_path / "t.trace"
    src.write_text(TRACE)
    out = tmp_path / "min.trace"
    res = vhostlab("minimize", "--json", str(src), "-o", str(out))
    assert res.returncode == 0, res.describe()
    rep = res.json()
    assert rep["signature"] == "expect mem:data"
    assert (rep["statements_before"], rep["statements_after"]) == (4, 2), rep
    text = out.read_text()
    # The fill may shrink (the first differing byte is all the failure observes), not go.
    assert "fill 0x11000 " in text and "byte:0x11" in text
    assert "seq:1" not in text and "seq:2" not in text
    # The minimised trace fails exactly as the original did.
    a = vhostlab("replay", "--json", str(src)).json()["traces"][0]
    b = vhostlab("replay", "--json", str(out)).json()["traces"][0]
    for key in ("status", "signature", "statement", "observed"):
        assert a[key] == b[key], key

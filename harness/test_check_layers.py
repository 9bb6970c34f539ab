"""scripts/check_layers.py: the core's include layering, on the real tree and on small
made-up trees that break each rule once."""

from __future__ import annotations

import json
from pathlib import Path

from script_import import import_script

check_layers = import_script("check_layers")
ROOT = Path(__file__).resolve().parent.parent


def make_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A repository top with core/ holding `files` (path -> text)."""
    for rel, text in files.items():
        p = tmp_path / "core" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


# A clean little core: every layer including only downwards.
CLEAN = {
    "compiler.h": "#define X 1\n",
    "include/vhostlab/vl_mem.h": '#include "vl_error.h"\n',
    "include/vhostlab/vl_error.h": "",
    "include/vhostlab/vl_vq.h": '#include "vl_mem.h"\n',
    "include/vhostlab/vl_net.h": '#include "vl_vq.h"\n#include "vl_pkt.h"\n',
    "include/vhostlab/vl_pkt.h": "",
    "mem/mem.c": '#include "compiler.h"\n#include "vhostlab/vl_mem.h"\n',
    "pkt/pkt.c": '#include "vhostlab/vl_pkt.h"\n',
    "ring/ring.h": '#include "mem/mem_internal.h"\n#include <stdint.h>\n',
    "mem/mem_internal.h": "",
    "net/dequeue.c": '#include "ring/ring.h"\n#include "pkt_local.h"\n',
    "net/pkt_local.h": '#include "vhostlab/vl_net.h"\n',
    "vhost_user/dev.c": '#include "vhostlab/vl_net.h"\n#include "net/queue.h"\n',
    "net/queue.h": "",
}


def test_real_tree_passes():
    res = check_layers.check(ROOT)
    assert res["violations"] == [], res["violations"]
    assert res["files"] > 40 and res["includes"] > 100


def test_clean_tree_passes(tmp_path, capsys):
    root = make_tree(tmp_path, CLEAN)
    assert check_layers.main(["--root", str(root)]) == 0
    assert "0 offences: PASS" in capsys.readouterr().out


def one_offence(tmp_path: Path, extra: dict[str, str]) -> dict:
    res = check_layers.check(make_tree(tmp_path, {**CLEAN, **extra}))
    assert len(res["violations"]) == 1, res["violations"]
    return res["violations"][0]


def test_ring_including_net_fails(tmp_path):
    v = one_offence(tmp_path, {"ring/vq.c": '#include "ring/ring.h"\n#include "net/queue.h"\n'})
    assert (v["file"], v["line"], v["include"]) == ("core/ring/vq.c", 2, "net/queue.h")
    assert "ring may not include net" in v["reason"]


def test_public_header_up_a_layer_fails(tmp_path):
    v = one_offence(tmp_path, {"ring/x.c": '#include "vhostlab/vl_net.h"\n'})
    assert "ring may not include net" in v["reason"]


def test_mem_and_pkt_are_apart(tmp_path):
    v = one_offence(tmp_path, {"mem/y.c": '#include "vhostlab/vl_pkt.h"\n'})
    assert "mem may not include pkt" in v["reason"]


def test_umbrella_header_refused(tmp_path):
    v = one_offence(tmp_path, {"include/vhostlab/vhostlab.h": '#include "vl_net.h"\n',
                               "net/z.c": '#include "vhostlab/vhostlab.h"\n'})
    assert v["file"] == "core/net/z.c"


def test_lab_include_fails(tmp_path):
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "scenario.h").write_text("")
    v = one_offence(tmp_path, {"net/w.c": '#include "../../sim/scenario.h"\n'})
    assert "includes nothing of the lab" in v["reason"]
    v2 = check_layers.check(make_tree(tmp_path, {"net/w.c": '#include "scenario.h"\n'}))
    assert any(x["include"] == "scenario.h" for x in v2["violations"])


def test_lab_control_is_not_for_the_datapath(tmp_path):
    lab = {"lab/vl_lab_control.h": '#include "vhostlab/vl_pkt.h"\n',
           "lab/lab_control.c": '#include "vl_lab_control.h"\n#include "mem/mem_internal.h"\n',
           "lab/vl_lab_hooks.h": "", "ring/guest_load.h": '#include "lab/vl_lab_hooks.h"\n'}
    assert check_layers.check(make_tree(tmp_path, {**CLEAN, **lab}))["violations"] == []
    v = one_offence(tmp_path, {**lab, "ring/bad.c": '#include "lab/vl_lab_control.h"\n'})
    assert "ring may not include lab_control" in v["reason"]


def test_unknown_directory_reported(tmp_path):
    v = one_offence(tmp_path, {"extra/q.c": '#include "compiler.h"\n'})
    assert "in no layer" in v["reason"]


def test_json_and_exit_status(tmp_path, capsys):
    root = make_tree(tmp_path, {**CLEAN, "mem/bad.c": '#include "ring/ring.h"\n'})
    assert check_layers.main(["--root", str(root), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["violations"][0]["include"] == "ring/ring.h"


def test_missing_core_is_usage_error(tmp_path, capsys):
    assert check_layers.main(["--root", str(tmp_path)]) == 2
    assert "no core/ directory" in capsys.readouterr().err

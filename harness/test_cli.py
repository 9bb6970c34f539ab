"""Command-line contract of vhostlab (docs/cli.md): help, version, usage errors.

Usage errors exit 2 and the message on stderr names the offending word, so that a user can
see at once what to fix.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from conftest import run_binary

RUN_OPTIONS = [
    "--offload",
    "--zero-copy",
    "--dirty-log",
    "--evict",
    "--faults",
    "--stats",
    "--ring",
    "--in-order",
    "--event-idx",
    "--mergeable",
    "--indirect",
    "--batch",
    "--granularity",
    "--packets",
    "--sizes",
    "--seed",
    "--queue-size",
    "--burst",
    "--json",
    "--quiet",
]


def assert_usage_error(res, bad_word: str) -> None:
    assert res.returncode == 2, f"want exit status 2 (usage error)\n{res.describe()}"
    assert bad_word in res.stderr, f"stderr does not name {bad_word!r}\n{res.describe()}"


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_top_level_help(vhostlab, flag):
    res = vhostlab(flag)
    assert res.returncode == 0, res.describe()
    assert re.search(r"\brun\b", res.stdout), f"help must list the run command\n{res.describe()}"
    assert "--version" in res.stdout, res.describe()


def test_top_level_help_states_run_defaults(vhostlab):
    """The summary of `run` names its default matrix and packet count: both as the program
    has them (the matrix from what `run` does with one packet, the count from run's help)."""
    res = vhostlab("--help")
    m = re.search(r"default: (\d+) configurations x (\d+) packets", res.stdout)
    assert m, f"the run summary states no defaults\n{res.describe()}"
    ran = vhostlab("run", "--packets", "1", "--json", "--quiet")
    assert ran.returncode == 0, ran.describe()
    configs = len(json.loads(ran.stdout)["configs"])
    assert int(m.group(1)) == configs, f"help says {m.group(1)}, run ran {configs}"
    run_help = vhostlab("run", "--help").stdout
    p = re.search(r"--packets N\s+packets per direction per configuration \(default (\d+)\)",
                  run_help)
    assert p and p.group(1) == m.group(2), f"run --help: {p and p.group(0)}"


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_run_help_mentions_every_option(vhostlab, flag):
    res = vhostlab("run", flag)
    assert res.returncode == 0, res.describe()
    missing = [opt for opt in RUN_OPTIONS if opt not in res.stdout]
    assert not missing, f"run help does not mention {missing}\n{res.describe()}"


def test_run_help_does_not_run(vhostlab):
    """--help wins over other options and never starts the lab."""
    res = vhostlab("run", "--json", "--help")
    assert res.returncode == 0, res.describe()
    assert '"configs"' not in res.stdout, res.describe()


def test_version(vhostlab, project_version):
    res = vhostlab("--version")
    assert res.returncode == 0, res.describe()
    m = re.search(r"\b(\d+\.\d+\.\d+)\b", res.stdout)
    assert m, f"--version must print a version number on stdout\n{res.describe()}"
    if project_version is not None:
        assert m.group(1) == project_version, (
            f"--version says {m.group(1)}, CMakeLists.txt says {project_version}\n"
            f"{res.describe()}"
        )


def test_no_command_is_usage_error(vhostlab):
    res = vhostlab()
    assert res.returncode == 2, res.describe()
    assert res.stderr.strip(), f"a usage message is expected on stderr\n{res.describe()}"


def test_unknown_command(vhostlab):
    assert_usage_error(vhostlab("frobnicate"), "frobnicate")


def test_unknown_top_level_option(vhostlab):
    assert_usage_error(vhostlab("--frobnicate"), "--frobnicate")


def test_unknown_run_option(vhostlab):
    assert_usage_error(vhostlab("run", "--frobnicate"), "--frobnicate")


def test_packets_not_a_number(vhostlab):
    assert_usage_error(vhostlab("run", "--packets", "abc"), "abc")


def test_granularity_not_page_multiple(vhostlab):
    res = vhostlab("run", "--granularity", "1000")
    assert_usage_error(res, "1000")


def test_granularity_bad_item_in_list(vhostlab):
    res = vhostlab("run", "--granularity", "coarse,4096,6000")
    assert_usage_error(res, "6000")


@pytest.mark.parametrize(
    "args, bad_word",
    [
        (["--mergeable", "maybe"], "maybe"),
        (["--indirect", "sometimes"], "sometimes"),
        (["--batch", "12x"], "12x"),
        (["--granularity", "fine"], "fine"),
        (["--sizes", "65536"], "65536"),
        (["--sizes", "64,zz"], "zz"),
        (["--seed", "seedy"], "seedy"),
        (["--queue-size", "1000"], "1000"),  # not a power of two, and split is in the matrix
        (["--ring", "split", "--queue-size", "1000"], "1000"),
        (["--ring", "ring"], "ring"),
        (["--zero-copy", "maybe"], "maybe"),
        (["--dirty-log", "2"], "2"),
        (["--evict", "yes"], "yes"),
        (["--faults", "none,boom"], "boom"),
        (["--in-order", "yes"], "yes"),
        (["--event-idx", "1"], "1"),
        (["--queue-size", "65536"], "65536"),  # power of two above 32768
        (["--burst", "257"], "257"),
        (["--packets", "12q"], "12q"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_bad_values(vhostlab, args, bad_word):
    assert_usage_error(vhostlab("run", *args), bad_word)


def test_missing_option_value(vhostlab):
    assert_usage_error(vhostlab("run", "--packets"), "--packets")


def test_usage_error_prints_no_json(vhostlab):
    """A consumer of --json must never see a half result on stdout after a usage error."""
    res = vhostlab("run", "--json", "--packets", "abc")
    assert_usage_error(res, "abc")
    assert res.stdout.strip() == "", f"nothing may be printed on stdout\n{res.describe()}"


LAB_NOTE = ("runs on the lab build of the core (guest-load hooks; slower); vhostlab-fast is "
            "the production program for serving and benchmarking")


def running_exe(argv: list[str], sock) -> tuple[str, str]:
    """Start `argv` (a serve on `sock`), wait for its socket; return the file its process
    runs (/proc/PID/exe) and its stderr once stopped."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sock.exists(), f"{argv[0]} serve did not create its socket"
        exe = os.readlink(f"/proc/{proc.pid}/exe")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    return exe, err


def test_two_programs_two_builds_of_the_core(vhostlab, vhostlab_fast, tmp_path):
    """vhostlab, the lab program, runs the lab build of the core (traces with `mutate`
    replay) and runs every command itself, serve and bench included, saying so on stderr;
    vhostlab-fast, built beside it, is the production program (serve, bench). Neither
    execs the other (cli/core_build.c)."""
    res = vhostlab("--version")
    # The build variant: "default", or what differs from it (docs/cli.md), the same in both.
    m = re.search(r"^vhostlab \S+ \(core: lab-hooks, build: "
                  r"((?:noinline|lto|twopath)(?:\+(?:lto|twopath))*|default)\)", res.stdout)
    assert m, res.describe()
    res = vhostlab_fast("--version")
    assert res.returncode == 0, res.describe()
    assert res.stdout.startswith("vhostlab-fast "), res.describe()
    assert f"(core: production, build: {m.group(1)})" in res.stdout, res.describe()
    # Each --help says which program it is and names the other.
    lab_help, fast_help = vhostlab("--help").stdout, vhostlab_fast("--help").stdout
    assert "lab build of the core" in lab_help and "vhostlab-fast" in lab_help, lab_help
    assert "production program" in fast_help and "run, replay" in fast_help, fast_help
    for cmd in ("serve", "bench"):
        assert "vhostlab-fast" in vhostlab(cmd, "--help").stdout
        assert "production" in vhostlab_fast(cmd, "--help").stdout
    # The lab's commands need the hooked core: vhostlab-fast refuses them by name.
    res = vhostlab_fast("replay", "x.trace")
    assert_usage_error(res, "'replay'")
    # A running `vhostlab serve` is vhostlab itself, and says on stderr which core it runs
    # (even with --quiet); `vhostlab-fast serve` is vhostlab-fast and says nothing of it.
    for prog, want_note in ((vhostlab, True), (vhostlab_fast, False)):
        sock = tmp_path / f"{prog.path.name}.sock"
        exe, err = running_exe([str(prog.path), "serve", "--socket", str(sock),
                                "--duration", "10", "--quiet"], sock)
        assert os.path.basename(exe) == prog.path.name, f"{prog.path} serve runs {exe}"
        assert (f"vhostlab serve: {LAB_NOTE}" in err) == want_note, err


def test_lab_serve_and_bench_name_their_core(vhostlab, vhostlab_fast, tmp_path):
    """Machine-readable output names the core that ran, so lab numbers cannot pass for
    production ones; the lab program's note stays on stderr, stdout is the JSON alone."""
    for prog, core in ((vhostlab, "lab-hooks"), (vhostlab_fast, "production")):
        res = prog("serve", "--socket", str(tmp_path / "j.sock"), "--json", "--duration", "0.2")
        assert res.returncode == 0, res.describe()
        assert res.json()["core"] == core, res.describe()
        events = [json.loads(line) for line in res.stderr.splitlines()]
        notes = [e for e in events if e["event"] == "core"]
        assert [e["message"] for e in notes] == ([LAB_NOTE] if core == "lab-hooks" else []), \
            res.describe()
        res = prog("bench", "--json", "--quiet", "--reps", "1", "--packets", "1000",
                   "--sizes", "64", "--layout", "split", "--direction", "dequeue")
        assert res.returncode == 0, res.describe()
        assert res.json()["core"] == core, res.describe()
        want = f"vhostlab bench: {LAB_NOTE}\n" if core == "lab-hooks" else ""
        assert res.stderr == want, res.describe()

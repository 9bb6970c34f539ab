"""Shared fixtures for the vhostlab pytest harness.

The binary under test comes from the environment variable VHOSTLAB_BIN (absolute, or
relative to the current directory or the repository root); the default is
<repo>/build/release/cli/vhostlab, which `./lab run` and `./lab test` build. That is the lab
program (the lab build of the core). The production program, vhostlab-fast (serve and bench
on the production core), is the `vhostlab_fast` fixture: VHOSTLAB_FAST_BIN, else the
vhostlab-fast beside that vhostlab. vhostlab never runs vhostlab-fast itself: a test that
wants the production core (serving a real front end, production numbers) asks for it.

A missing binary is a failure, never a skip: a harness that silently skips everything
would let CI pass without testing anything.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BIN = REPO_ROOT / "build" / "release" / "cli" / "vhostlab"

# Default per-invocation timeout in seconds; VHOSTLAB_TIMEOUT_SCALE multiplies it (for
# slow machines or sanitizer builds).
DEFAULT_TIMEOUT = 120.0
TIMEOUT_SCALE = float(os.environ.get("VHOSTLAB_TIMEOUT_SCALE", "1"))


@dataclass(frozen=True)
class Result:
    """Outcome of one vhostlab invocation."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        """Everything needed to understand a failed assertion."""
        return (
            f"command: {' '.join(self.argv)}\n"
            f"exit status: {self.returncode}\n"
            f"--- stdout ---\n{self.stdout[-4000:]}\n"
            f"--- stderr ---\n{self.stderr[-4000:]}"
        )

    def json(self) -> Any:
        """Parse stdout as exactly one JSON document (fails the test otherwise)."""
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as e:
            pytest.fail(f"stdout is not one JSON document ({e})\n{self.describe()}")


def run_binary(binary: Path, *args: str, timeout: float = DEFAULT_TIMEOUT) -> Result:
    """Run `binary args...` with a timeout; a timeout fails the calling test."""
    argv = [str(binary), *args]
    limit = timeout * TIMEOUT_SCALE
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        def _text(b: bytes | str | None) -> str:
            if isinstance(b, bytes):
                return b.decode(errors="replace")
            return b or ""

        pytest.fail(
            f"timed out after {limit:.0f}s: {' '.join(argv)}\n"
            f"--- stdout ---\n{_text(e.stdout)[-4000:]}\n"
            f"--- stderr ---\n{_text(e.stderr)[-4000:]}"
        )
    return Result(argv, proc.returncode, proc.stdout, proc.stderr)


class Vhostlab:
    """The vhostlab executable under test."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, *args: str, timeout: float = DEFAULT_TIMEOUT) -> Result:
        return run_binary(self.path, *args, timeout=timeout)

    def run_json(self, *args: str, timeout: float = DEFAULT_TIMEOUT) -> tuple[Result, Any]:
        """`vhostlab run --json --quiet args...`; the exit status must agree with "ok"."""
        res = self("run", "--json", "--quiet", *args, timeout=timeout)
        if res.returncode not in (0, 1):
            pytest.fail(f"vhostlab run exited {res.returncode} (want 0 or 1)\n{res.describe()}")
        doc = res.json()
        if not isinstance(doc, dict) or not isinstance(doc.get("ok"), bool):
            pytest.fail(f'JSON top level must be an object with a boolean "ok"\n{res.describe()}')
        expected = 0 if doc["ok"] else 1
        if res.returncode != expected:
            pytest.fail(
                f'exit status {res.returncode} disagrees with "ok": {doc["ok"]}\n{res.describe()}'
            )
        return res, doc

    def __repr__(self) -> str:
        return f"Vhostlab({self.path})"


def _resolve_binary() -> tuple[Path, str]:
    env = os.environ.get("VHOSTLAB_BIN")
    if not env:
        return DEFAULT_BIN, "default path"
    p = Path(env)
    if not p.is_absolute():
        candidates = [Path.cwd() / p, REPO_ROOT / p]
        p = next((c for c in candidates if c.exists()), candidates[0])
    return p, f"VHOSTLAB_BIN={env}"


@pytest.fixture(scope="session")
def vhostlab() -> Vhostlab:
    """The vhostlab binary; fails (does not skip) when it is missing."""
    path, origin = _resolve_binary()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"vhostlab binary not found or not executable: {path} ({origin}).\n"
            "Build it first (./lab run --help, or cmake -S . -B build/release && "
            "cmake --build build/release), or point VHOSTLAB_BIN at it.",
            pytrace=False,
        )
    return Vhostlab(path)


def fast_path_for(lab: Path) -> Path:
    """The production program (vhostlab-fast) that goes with the lab program `lab`:
    $VHOSTLAB_FAST_BIN, else the one built beside it."""
    env = os.environ.get("VHOSTLAB_FAST_BIN")
    if not env:
        return lab.parent / "vhostlab-fast"
    p = Path(env)
    if not p.is_absolute():
        candidates = [Path.cwd() / p, REPO_ROOT / p]
        p = next((c for c in candidates if c.exists()), candidates[0])
    return p


@pytest.fixture(scope="session")
def vhostlab_fast(vhostlab) -> Vhostlab:
    """vhostlab-fast, the production program (serve and bench on the production core);
    fails (does not skip) when it is missing."""
    path = fast_path_for(vhostlab.path)
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"vhostlab-fast not found or not executable: {path} (VHOSTLAB_FAST_BIN, else "
            f"beside {vhostlab.path}).\nBuild it (cmake --build build/release, target "
            "vhostlab-fast), or point VHOSTLAB_FAST_BIN at it.",
            pytrace=False,
        )
    return Vhostlab(path)


@pytest.fixture(scope="session")
def project_version() -> str | None:
    """The version declared in the top-level CMakeLists.txt, if it can be read."""
    try:
        text = (REPO_ROOT / "CMakeLists.txt").read_text()
    except OSError:
        return None
    m = re.search(r"project\s*\(\s*vhostlab\b[^)]*\bVERSION\s+([0-9][0-9.]*)", text)
    return m.group(1) if m else None

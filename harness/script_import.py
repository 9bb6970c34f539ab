"""Import a program of scripts/ as a module, for tests that call its functions directly.

scripts/ is not a package: its programs import each other by name (serve_ab imports
vs_dpdk), so the directory goes on sys.path for the import and comes off again after it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def import_script(name: str) -> ModuleType:
    """The module of scripts/NAME.py, imported once per test session."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(SCRIPTS))

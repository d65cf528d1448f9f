"""The venv Confluent's shift_left CLI runs in, unmodified, against the local service.

shift_left 0.1.52 requires Python 3.12 (`Requires-Python: >=3.12,<3.13`) while
the project is on 3.11, so it lives in a venv of its own made with a 3.12
interpreter (`SL_PYTHON312`, else `python3.12` on the PATH, else pyenv's
3.12), created once and cached (`SL_SHIFT_LEFT_VENV`, default
~/.cache/shift-left-dagster/shift-left-venv). About 4 minutes the first time.

    python -m tests.shift_left.venv --install   # idempotent: a no-op when the venv is ready
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.pinned_venv import PinnedVenv

SHIFT_LEFT = "shift-left==0.1.52"
REQUIRE_ENV = "SL_REQUIRE_SHIFT_LEFT"


def python312() -> str:
    """A Python 3.12 interpreter that runs (a pyenv shim may not), or a RuntimeError saying how to give one."""
    candidates = [os.environ.get("SL_PYTHON312"), shutil.which("python3.12")]
    if shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        candidates += [str(p) for p in sorted(Path(root).glob("versions/3.12*/bin/python"), reverse=True)]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"],
                          capture_output=True).returncode == 0:
            return candidate
    raise RuntimeError("shift_left 0.1.52 needs Python 3.12: set SL_PYTHON312 or install python3.12 (e.g. pyenv)")


VENV = PinnedVenv(SHIFT_LEFT, "SL_SHIFT_LEFT_VENV", "shift-left-venv",
                  check="import shift_left.cli, sys; assert sys.version_info[:2] == (3, 12)", base_python=python312)


def shift_left_command() -> Path:
    """The venv's `shift_left` console script."""
    return VENV.bin_path("shift_left")


if __name__ == "__main__":
    sys.exit(VENV.main(None, __doc__.splitlines()[0]))

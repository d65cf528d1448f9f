"""A virtual environment holding one pinned tool, created once and cached (PyFlink, shift_left).

Such tools pin their own dependencies (or another Python): they must never
enter the project's environment, so each lives in a venv of its own under
~/.cache/shift-left-dagster/, made ready by `install` and recognised by a
marker file written last.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_MARKER = "shift-left-oracle.ok"  # written last: a half-made venv is never taken for a ready one
CACHE = Path.home() / ".cache" / "shift-left-dagster"


@dataclass(frozen=True)
class PinnedVenv:
    """One tool's venv: its requirement, where it lives, the Python it is made with, an import that proves it."""

    requirement: str  # e.g. "apache-flink==2.3.0"
    venv_env: str  # environment variable naming another folder
    default_name: str  # folder under CACHE
    check: str  # python code run in the venv after the install
    base_python: Callable[[], str] = field(default=lambda: sys.executable)

    def venv_dir(self) -> Path:
        return Path(os.environ.get(self.venv_env) or CACHE / self.default_name).expanduser()

    def python_path(self, where: Path | None = None) -> Path:
        return (where or self.venv_dir()) / "bin" / "python"

    def bin_path(self, name: str, where: Path | None = None) -> Path:
        return (where or self.venv_dir()) / "bin" / name

    def ready(self, where: Path | None = None) -> bool:
        """Whether the venv holds the pinned requirement (checked by the marker the installer writes last)."""
        where = where or self.venv_dir()
        marker = where / _MARKER
        return self.python_path(where).is_file() and marker.is_file() and marker.read_text().strip() == self.requirement

    def install(self, where: Path | None = None, *, quiet: bool = True) -> Path:
        """Create the venv and install the requirement unless it is ready already; its python."""
        where = where or self.venv_dir()
        if self.ready(where):
            return self.python_path(where)
        if where.exists():
            shutil.rmtree(where)  # a broken or outdated venv: start again
        where.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([self.base_python(), "-m", "venv", str(where)], check=True)
        pip = [str(self.python_path(where)), "-m", "pip", "install", "--disable-pip-version-check"]
        subprocess.run([*pip, *(["--quiet"] if quiet else []), self.requirement], check=True)
        subprocess.run([str(self.python_path(where)), "-c", self.check], check=True, capture_output=True)
        (where / _MARKER).write_text(self.requirement + "\n")
        return self.python_path(where)

    def main(self, argv: list[str] | None, description: str) -> int:
        """`--install`: make it ready (a no-op when it is); without: say whether it is (exit 1 if not)."""
        import argparse

        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--install", action="store_true", help="create the venv unless it is ready")
        args = parser.parse_args(argv)
        if args.install:
            print(self.install(quiet=True))
            return 0
        print(f"{self.venv_dir()}: {'ready' if self.ready() else 'absent'} ({self.requirement})")
        return 0 if self.ready() else 1

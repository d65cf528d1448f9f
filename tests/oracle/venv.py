"""The PyFlink virtual environment the oracle runs Apache Flink in.

apache-flink pins its own pandas/pyarrow/apache-beam: they must never enter
the project's environment, so PyFlink lives in a venv of its own, created once
and cached (`SL_PYFLINK_VENV`, default ~/.cache/shift-left-dagster/pyflink-venv).

    python -m tests.oracle.venv --install   # idempotent: a no-op when the venv is ready
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

PYFLINK = "apache-flink==2.3.0"
VENV_ENV = "SL_PYFLINK_VENV"
REQUIRE_ENV = "SL_REQUIRE_ORACLE"
_MARKER = "shift-left-oracle.ok"  # written last: a half-made venv is never taken for a ready one


def venv_dir() -> Path:
    default = Path.home() / ".cache" / "shift-left-dagster" / "pyflink-venv"
    return Path(os.environ.get(VENV_ENV) or default).expanduser()


def python_path(where: Path | None = None) -> Path:
    return (where or venv_dir()) / "bin" / "python"


def ready(where: Path | None = None) -> bool:
    """Whether the venv holds the pinned PyFlink (checked by the marker the installer writes last)."""
    where = where or venv_dir()
    marker = where / _MARKER
    return python_path(where).is_file() and marker.is_file() and marker.read_text().strip() == PYFLINK


def install(where: Path | None = None, *, quiet: bool = True) -> Path:
    """Create the venv and install PyFlink into it unless it is ready already; its python."""
    where = where or venv_dir()
    if ready(where):
        return python_path(where)
    if where.exists():
        shutil.rmtree(where)  # a broken or outdated venv: start again
    where.parent.mkdir(parents=True, exist_ok=True)
    venv.EnvBuilder(with_pip=True).create(where)
    pip = [str(python_path(where)), "-m", "pip", "install", "--disable-pip-version-check"]
    subprocess.run([*pip, *(["--quiet"] if quiet else []), PYFLINK], check=True)
    check = "import pyflink.table, sys; print(sys.version)"
    subprocess.run([str(python_path(where)), "-c", check], check=True, capture_output=True)
    (where / _MARKER).write_text(PYFLINK + "\n")
    return python_path(where)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="create the venv unless it is ready")
    args = parser.parse_args(argv)
    if args.install:
        print(install(quiet=True))
        return 0
    print(f"{venv_dir()}: {'ready' if ready() else 'absent'} ({PYFLINK})")
    return 0 if ready() else 1


if __name__ == "__main__":
    sys.exit(main())

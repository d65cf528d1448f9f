"""The PyFlink virtual environment the oracle runs Apache Flink in.

apache-flink pins its own pandas/pyarrow/apache-beam: they must never enter
the project's environment, so PyFlink lives in a venv of its own, created once
and cached (`SL_PYFLINK_VENV`, default ~/.cache/shift-left-dagster/pyflink-venv).

    python -m tests.oracle.venv --install   # idempotent: a no-op when the venv is ready
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.pinned_venv import PinnedVenv

PYFLINK = "apache-flink==2.3.0"
VENV_ENV = "SL_PYFLINK_VENV"
REQUIRE_ENV = "SL_REQUIRE_ORACLE"
VENV = PinnedVenv(PYFLINK, VENV_ENV, "pyflink-venv", check="import pyflink.table, sys; print(sys.version)")


def venv_dir() -> Path:
    return VENV.venv_dir()


def python_path(where: Path | None = None) -> Path:
    return VENV.python_path(where)


def ready(where: Path | None = None) -> bool:
    return VENV.ready(where)


def install(where: Path | None = None, *, quiet: bool = True) -> Path:
    return VENV.install(where, quiet=quiet)


if __name__ == "__main__":
    sys.exit(VENV.main(None, __doc__.splitlines()[0]))

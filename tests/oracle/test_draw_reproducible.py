"""The generated cases of a seed are the same in every process: Hypothesis's draws do not depend on
which local modules the process imported (generated.py's `_without_local_constants`)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from tests.oracle.generated import draw_cases

COUNT = 30


def _fingerprint(seed: int) -> list[tuple[str, str, str]]:
    return [(g.case.name, g.case.dml, repr((g.case.rows, g.case.more_rows))) for g in draw_cases(COUNT, seed)]


def test_a_seed_draws_the_same_cases_whatever_the_process_imported(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    before = _fingerprint(26)
    # A local module full of literals a draw could pick (Hypothesis reads those of every local module).
    literals = ", ".join(str(n) for n in range(-7, 1200, 3))
    (tmp_path / "sl_literals_module.py").write_text(
        f"NUMBERS = [{literals}]\nWORDS = ['k9', 'zz', 'INSERT', 'late']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("sl_literals_module")
    try:
        assert _fingerprint(26) == before
    finally:
        sys.modules.pop("sl_literals_module", None)


def test_another_seed_draws_other_cases() -> None:
    assert _fingerprint(27) != _fingerprint(26)

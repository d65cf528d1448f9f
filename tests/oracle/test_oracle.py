"""The local engine against Apache Flink: every corpus case, run by both, must leave the same sink.

Flink (PyFlink 2.3, its own venv: `python -m tests.oracle.venv --install`) runs
the whole corpus in one process and one job while the local service runs the
same cases over HTTP; each case is then its own test. Without the venv the
module is skipped, unless SL_REQUIRE_ORACLE is set (CI), when it fails.
Cases that differ for a known reason are in KNOWN_DIFFERENCES (harness.py):
strict xfails, so a case that starts agreeing fails until it is taken out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.corpus import load_corpus
from tests.oracle.harness import KNOWN_DIFFERENCES, OracleRun, require_pyflink, run_oracle

pytestmark = [pytest.mark.oracle, pytest.mark.service]
CASES = load_corpus()


@pytest.fixture(scope="session")
def oracle(request: pytest.FixtureRequest) -> OracleRun:
    require_pyflink()
    service = request.getfixturevalue("local_service")
    return run_oracle(CASES, service.url, Path(service.data_dir), request.getfixturevalue("spark"))


def _param(name: str) -> object:
    reason = KNOWN_DIFFERENCES.get(name)
    return pytest.param(name, marks=pytest.mark.xfail(reason=reason, strict=True)) if reason else name


@pytest.mark.parametrize("case", [_param(c.name) for c in CASES])
def test_local_engine_agrees_with_flink(oracle: OracleRun, case: str) -> None:
    verdict = oracle.verdicts[case]
    assert verdict.agree, verdict.explain()


def test_known_differences_name_corpus_cases() -> None:
    assert set(KNOWN_DIFFERENCES) <= {c.name for c in CASES}

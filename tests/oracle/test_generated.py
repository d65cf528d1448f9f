"""Differential test with generated queries: cases drawn by hypothesis (generated.py) with a fixed
seed, run on Apache Flink and on the local service in one batch each, must agree.

CI-sized: SL_GENERATED_CASES cases (default 24) of seed SL_GENERATED_SEED (default 26). The long
run is bench/bench_oracle_generated.py. A disagreement prints the case as corpus YAML: keep it as
a fixed corpus case, then fix the engine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.oracle.generated import draw_cases, show_case, summarize
from tests.oracle.harness import require_pyflink, run_oracle

pytestmark = [pytest.mark.oracle, pytest.mark.service]
COUNT = int(os.environ.get("SL_GENERATED_CASES", "24"))
SEED = int(os.environ.get("SL_GENERATED_SEED", "26"))


def test_generated_queries_agree_with_flink(request: pytest.FixtureRequest) -> None:
    require_pyflink()
    generated = draw_cases(COUNT, SEED)
    assert {g.kind for g in generated} == {"stateless", "aggregate", "join"}  # the grammar is exercised
    service = request.getfixturevalue("local_service")
    run = run_oracle([g.case for g in generated], service.url, Path(service.data_dir),
                     request.getfixturevalue("spark"))
    summary = summarize(generated, run.verdicts)
    assert summary.unrun == 0, "both engines must run every drawn query (refusing both would agree)"
    assert not summary.disagreeing, "\n\n".join(f"{why}\n{show_case(g.case)}" for g, why in summary.disagreeing)

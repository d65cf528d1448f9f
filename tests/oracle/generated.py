"""Generated oracle cases: hypothesis strategies for typed tables, rows and Flink SQL queries.

Each drawn case is an ordinary corpus Case (corpus.py), so both engines run it exactly as the
corpus: tables, rows in two engine runs (`rows`, then `more_rows`), one INSERT into a sink whose
columns the query's types fit. The grammar is what the local engine claims to run:

- tables and rows (drawn.py): scalar types incl. DECIMAL and TIMESTAMP_LTZ precisions, ARRAY, MAP,
  ROW (fields named like keywords too), JSON documents in STRING columns; append or upsert on the
  key (a key updated several times); NULLs; event times out of order and tied, on a `$rowtime`,
  declared or computed time attribute;
- stateless queries, UNNEST, GROUP BY with (DISTINCT) aggregates and HAVING, regular joins
  (grammar_values.py);
- window TVFs (TUMBLE, HOP, CUMULATE, a cascade over window_time), OVER aggregates, dedup and Top-N,
  interval joins and temporal joins against a versioned table (grammar_time.py).

Each case records its class (`kind`) and the features it uses, which the bench counts
disagreements by. `split_variants` gives, for each single-source case, the same rows cut into
engine runs elsewhere: the second property, a local result that does not depend on the split.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from unittest import mock

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers

from tests.oracle.compare import Verdict
from tests.oracle.corpus import Case
from tests.oracle.drawn import Generated, idle_between, resplit
from tests.oracle.grammar_time import (
    cascade_cases,
    dedup_cases,
    interval_join_cases,
    over_cases,
    temporal_join_cases,
    top_n_cases,
    window_cases,
)
from tests.oracle.grammar_values import aggregate_cases, join_cases, stateless_cases, unnest_cases

_CLASSES = {
    "stateless": stateless_cases, "aggregate": aggregate_cases, "join": join_cases, "unnest": unnest_cases,
    "window": window_cases, "cascade": cascade_cases, "over": over_cases, "dedup": dedup_cases,
    "top_n": top_n_cases, "interval_join": interval_join_cases, "temporal_join": temporal_join_cases,
}
KINDS = tuple(_CLASSES)
# Disagreements with Flink known by the feature that causes them ("kind/feature" or a feature any kind
# uses, "*/feature"), with why and Flink's reference: the bench names them, the test lets only these through.
# Empty: the two-input event-time joins that disagreed (36 of 400, seed 26) had rows late for their source's
# watermark, where Flink's own result depends on how its reads interleave (three Flink runs of 40 such cases
# differed on 9); they are now drawn without late rows (grammar_time.py) and agree.
KNOWN_GENERATED: dict[str, str] = {}


def known_reason(drawn: Generated) -> str | None:
    """Why a drawn case is known to disagree with Flink (KNOWN_GENERATED), None when it is not known to."""
    for feature in drawn.features:
        reason = KNOWN_GENERATED.get(f"{drawn.kind}/{feature}") or KNOWN_GENERATED.get(f"*/{feature}")
        if reason:
            return reason
    return KNOWN_GENERATED.get(drawn.kind)


def cases(name: str, kinds: tuple[str, ...] = KINDS) -> st.SearchStrategy[Generated]:
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown query classes {unknown}: the grammar has {', '.join(KINDS)}")
    return st.one_of(*(_CLASSES[kind](name) for kind in kinds))


def split_variants(generated: list[Generated]) -> tuple[list[Case], dict[str, str]]:
    """For each single-source case, its rows in one run (cut after the first row when the case has them in
    one run); for each outer interval join and LEFT temporal join, its first source's rows in one run and the
    other's in the next (judged on the changelog kinds only: drawn.idle_between): (the variant cases, variant
    name -> the case whose Flink result it must match; over several partitions, harness.run_oracle runs
    the variant on Flink too)."""
    variants: list[Case] = []
    original: dict[str, str] = {}
    for drawn in generated:
        if not _IDLE_BETWEEN.isdisjoint(drawn.features):
            # a padded row emitted is final (an outer interval join's, a temporal join's probe row), whichever
            # source was idle meanwhile: the sink never gets a D
            variants.append(idle_between(drawn.case, "idle_between"))
            original[variants[-1].name] = drawn.case.name
        if not drawn.single_source:
            continue
        total = max(len(drawn.case.all_rows(t.name)) for t in drawn.case.tables)
        split = len(next(iter(drawn.case.rows.values()), []))
        cut, suffix = (total, "one_run") if split != total else (1, "first_alone")
        variants.append(resplit(drawn.case, cut, suffix))
        original[variants[-1].name] = drawn.case.name
    return variants, original


# The features whose cases get an idle_between variant: a row emitted padded before the other input's rows came.
_IDLE_BETWEEN = {"interval:left", "interval:right", "interval:full", "temporal:left"}


@contextmanager
def _without_local_constants() -> Iterator[None]:
    """Hypothesis mixes into its draws the literals of every local module imported so far (its "local
    constants", read from sys.modules): the same seed then draws other cases when the importing process
    differs (the bench imports the local service, pytest what it collected) or any project file
    changes. Without them a seed's cases depend only on the strategies and the Hypothesis version."""
    empty = providers.Constants()
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        with mock.patch.object(providers, "_get_local_constants", lambda: empty):
            yield
    finally:
        providers.CONSTANTS_CACHE.cache.clear()


def draw_cases(count: int, seed: int, kinds: tuple[str, ...] = KINDS) -> list[Generated]:
    """`count` cases drawn with a fixed seed (the same cases on every run, in any process), no shrinking
    (both engines run all the cases in one batch each, as the corpus)."""
    found: list[Generated] = []

    # Hypothesis draws the simplest examples first: draw half as many again, keep a seeded sample.
    @settings(max_examples=count + count // 2 + 4, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        found.append(data.draw(cases(f"g{seed}_{len(found)}", kinds)))

    with _without_local_constants():
        collect()
    return random.Random(seed).sample(found, min(count, len(found)))


@dataclass
class Summary:
    tried: int = 0
    agree: int = 0
    unrun: int = 0  # cases either engine refused or failed (a grammar that draws bad SQL shows here)
    by_class: dict[str, int] = field(default_factory=dict)  # disagreements per kind and feature
    disagreeing: list[tuple[Generated, str]] = field(default_factory=list)
    unrun_cases: list[tuple[Generated, str]] = field(default_factory=list)
    splits_tried: int = 0  # the second property: the same rows cut into other engine runs
    splits_agree: int = 0
    splits_disagreeing: list[tuple[Case, str]] = field(default_factory=list)

    def add(self, other: Summary) -> None:
        for name in ("tried", "agree", "unrun", "splits_tried", "splits_agree"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.disagreeing += other.disagreeing
        self.unrun_cases += other.unrun_cases
        self.splits_disagreeing += other.splits_disagreeing
        for label, n in other.by_class.items():
            self.by_class[label] = self.by_class.get(label, 0) + n


def summarize(generated: list[Generated], verdicts: dict[str, Verdict], variants: list[Case] | None = None,
              original: dict[str, str] | None = None) -> Summary:
    summary = Summary(tried=len(generated))
    for drawn in generated:
        verdict = verdicts[drawn.case.name]
        if verdict.flink_rows is None or verdict.local_rows is None:
            summary.unrun += 1
            summary.unrun_cases.append((drawn, verdict.explain()))
        if verdict.agree:
            summary.agree += 1
            continue
        summary.disagreeing.append((drawn, verdict.explain()))
        for label in [drawn.kind, *(f"{drawn.kind}/{f}" for f in sorted(set(drawn.features)))]:
            summary.by_class[label] = summary.by_class.get(label, 0) + 1
    agreeing = {d.case.name for d in generated if verdicts[d.case.name].agree}
    for variant in variants or []:
        if (original or {}).get(variant.name) not in agreeing:
            continue  # the property is judged where the case itself agrees with Flink
        summary.splits_tried += 1
        if verdicts[variant.name].agree:
            summary.splits_agree += 1
        else:
            summary.splits_disagreeing.append((variant, verdicts[variant.name].explain()))
    return summary


def show_case(case: Case) -> str:
    """A drawn case as corpus YAML (a counterexample to keep as a fixed case)."""
    body = {"about": "generated counterexample", "tables": ";\n".join(t.ddl for t in case.tables) + ";\n",
            "dml": case.dml + ";\n", "rows": case.rows, "more_rows": case.more_rows}
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True)

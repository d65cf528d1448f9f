"""Whether the local engine agrees with Flink on a case: the same final sink table, a compatible changelog.

- Flink's sink table is what its changelog leaves: rows added (+I/+U) minus rows
  retracted (-U/-D), and for an upsert sink the last surviving row per key
  (what upsert materialisation keeps);
- tables are compared as multisets, position by position, each value in the
  project's comparable form (shift_left_dagster/values.py: decimals of any
  scale, timestamps at their declared precision, MAP order, MULTISET), both
  sides cast to the common type of their forms;
- the kinds of record the local sink received must be kinds Flink's planner
  sends that sink (an upsert sink writes UPDATE_BEFORE as a delete, and an
  INSERT and an UPDATE_AFTER alike as the key's new value): an append-only
  result in Flink is append-only locally;
- a statement both engines refuse agrees (with both reasons kept).

Each row becomes the JSON of its comparable form, and the multisets are
compared in Python. The forms are collected in Spark jobs of CHUNK cases each
(Flink's rows, the local rows, the local changelog kinds), three at once: one
union of every case (141 branches a side) took 2.4-2.7 times as long as chunks
of 20 (two alternating pairs on one 80-case batch, load 6-7).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from shift_left_dagster.local.catalog import OP
from shift_left_dagster.local.types import spark_type_of
from shift_left_dagster.values import common_type, comparable, comparable_type
from tests.oracle.flink import FlinkOutcome
from tests.oracle.literals import from_flink
from tests.oracle.local import KINDS, LocalOutcome

_SHOWN = 4
CHUNK = 16  # cases per Spark job of the comparison


@dataclass
class Verdict:
    case: str
    agree: bool
    reasons: list[str] = field(default_factory=list)
    flink_rows: int | None = None
    local_rows: int | None = None
    flink_kinds: list[str] = field(default_factory=list)  # what Flink's planner sends the sink
    local_kinds: list[str] = field(default_factory=list)
    flink_seconds: float = 0.0
    local_seconds: float = 0.0

    def explain(self) -> str:
        return f"{self.case}: " + ("agree" if self.agree else "DISAGREE") + "".join(f"\n  - {r}" for r in self.reasons)


def final_rows(outcome: FlinkOutcome) -> list[list[str | None]]:
    """The rows Flink's sink holds once the changelog is applied."""
    live: list[list[str | None]] = []
    for kind, row in outcome.changes:
        if kind in ("+I", "+U"):
            live.append(row)
        elif row in live:
            del live[len(live) - 1 - live[::-1].index(row)]
    if outcome.sink_mode != "upsert" or not outcome.primary_key:
        return live
    positions = [[c[0].lower() for c in outcome.columns].index(k.lower()) for k in outcome.primary_key]
    latest: dict[tuple[str | None, ...], list[str | None]] = {}
    for row in live:
        key = tuple(row[p] for p in positions)
        latest.pop(key, None)
        latest[key] = row
    return list(latest.values())


def flink_frame(spark: SparkSession, outcome: FlinkOutcome) -> DataFrame:
    schema = T.StructType([T.StructField(f"c{i}", spark_type_of(kind)) for i, (_, kind) in enumerate(outcome.columns)])
    rows = [tuple(from_flink(v, kind) for v, (_, kind) in zip(row, outcome.columns, strict=True))
            for row in final_rows(outcome)]
    return spark.createDataFrame(rows, schema)


def compare_all(flink: dict[str, FlinkOutcome], local: dict[str, LocalOutcome], spark: SparkSession,
                kinds_only: set[str] | None = None) -> dict[str, Verdict]:
    """Each case's verdict; those in `kinds_only` are judged on the changelog kinds alone (Case.judge_rows)."""
    verdicts: dict[str, Verdict] = {}
    forms: list[tuple[str, tuple[DataFrame, DataFrame, DataFrame]]] = []
    for case, theirs in flink.items():
        ours = local[case]
        verdict = Verdict(case=case, agree=True, flink_kinds=list(theirs.changelog_mode),
                          flink_seconds=theirs.seconds, local_seconds=ours.seconds)
        verdicts[case] = verdict
        if theirs.error or ours.error:
            verdict.agree = bool(theirs.error and ours.error)
            verdict.reasons += [f"Flink ({theirs.phase or 'ran'}): {theirs.error or 'ran'}",
                                f"local ({ours.phase or 'ran'}): {ours.error or 'ran'}"]
            continue
        if len(theirs.columns) != len(ours.columns):
            verdict.agree = False
            verdict.reasons.append(f"sink columns: Flink {theirs.columns}, local {ours.columns}")
            continue
        assert ours.rows is not None and ours.records is not None
        theirs_form, ours_form = _forms(case, flink_frame(spark, theirs), ours.rows, theirs.columns)
        kinds = ours.records.select(F.lit(case).alias("case"), F.lit("kind").alias("side"),
                                    F.col(f"`{OP}`").cast("string").alias("row"))
        forms.append((case, (theirs_form, ours_form, kinds)))
    collected: dict[tuple[str, str], Counter[str]] = {}
    parts = [[(case, f[side]) for case, f in forms[at:at + CHUNK]] for side in range(3)
             for at in range(0, len(forms), CHUNK)]
    with ThreadPoolExecutor(max_workers=3) as pool:  # three Spark jobs at once: planning overlaps
        for rows, failed in pool.map(_collect, parts):
            for row in rows:
                collected.setdefault((row["case"], row["side"]), Counter())[row["row"]] += 1
            for case, error in failed.items():
                verdicts[case].agree = False
                verdicts[case].reasons.append(f"the comparison failed in Spark: {error}")
    for case, verdict in verdicts.items():
        if verdict.reasons:
            continue
        _judge(verdict, collected.get((case, "flink"), Counter()), collected.get((case, "local"), Counter()),
               {KINDS[int(k)] for k in collected.get((case, "kind"), Counter())}, flink[case].sink_mode,
               rows=case not in (kinds_only or set()))
    return verdicts


def _collect(frames: list[tuple[str, DataFrame]]) -> tuple[list[T.Row], dict[str, str]]:
    """The rows of a chunk's frames in one Spark job; if that job fails, each case's alone, so a case whose
    comparison fails (named with Spark's first line) never stops the others'."""
    try:
        return _union([frame for _, frame in frames]).collect(), {}
    except Exception:  # noqa: BLE001 (any Spark failure: each case is collected on its own below)
        rows: list[T.Row] = []
        failed: dict[str, str] = {}
        for case, frame in frames:
            try:
                rows += frame.collect()
            except Exception as error:  # noqa: BLE001
                failed[case] = _first_cause(error)
        return rows, failed


def _first_cause(error: Exception) -> str:
    """Spark's reason in one line (a Py4J error's first line only names the JVM call)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    causes = [line for line in lines if "Exception:" in line and not line.startswith("at ")]
    return (causes[-1] if causes else lines[0] if lines else type(error).__name__)[:300]


def _union(frames: list[DataFrame]) -> DataFrame:
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


def _forms(case: str, theirs: DataFrame, ours: DataFrame,
           columns: list[tuple[str, str]]) -> tuple[DataFrame, DataFrame]:
    """Each side's rows as the JSON of their comparable forms, cast to the forms' common types."""
    names = [f"c{i}" for i in range(len(columns))]
    ours = ours.toDF(*names)
    their_types = {f.name: f.dataType for f in theirs.schema.fields}
    our_types = {f.name: f.dataType for f in ours.schema.fields}
    common = {n: common_type(comparable_type(their_types[n]), comparable_type(our_types[n])) for n in names}
    flink_types = {n: kind for n, (_, kind) in zip(names, columns, strict=True)}

    def form(frame: DataFrame, types: dict[str, T.DataType], side: str) -> DataFrame:
        values = [comparable(F.col(n), types[n], flink_types[n], common[n]).alias(n) for n in names]
        return frame.select(F.lit(case).alias("case"), F.lit(side).alias("side"),
                            F.to_json(F.struct(*values)).alias("row"))

    return form(theirs, their_types, "flink"), form(ours, our_types, "local")


def _judge(verdict: Verdict, theirs: Counter[str], ours: Counter[str], kinds: set[str], sink_mode: str, *,
           rows: bool = True) -> None:
    verdict.flink_rows, verdict.local_rows = sum(theirs.values()), sum(ours.values())
    verdict.local_kinds = sorted(kinds)
    missing, extra = theirs - ours, ours - theirs
    if rows and (missing or extra):
        verdict.agree = False
        verdict.reasons.append(f"rows: Flink {verdict.flink_rows}, local {verdict.local_rows}; "
                               f"only in Flink {_show(missing)}; only local {_show(extra)}")
    allowed = set(verdict.flink_kinds)
    if sink_mode == "upsert" and "UB" in allowed:
        allowed.add("D")  # an upsert sink writes UPDATE_BEFORE as a tombstone (Kafka upsert mode)
    if sink_mode == "upsert" and allowed & {"I", "UA"}:
        # An upsert topic's record is the key's new value either way: Flink's Rank over append-only input
        # ORDER BY ... ASC sends a changed Top-1 as +I (changelogMode=[I]), the local engine as +U.
        allowed |= {"I", "UA"}
    unexpected = kinds - allowed
    if unexpected:
        verdict.agree = False
        verdict.reasons.append(f"changelog: Flink sends the sink {verdict.flink_kinds}, the local sink got "
                               f"{verdict.local_kinds}")


def _show(rows: Counter[str]) -> str:
    listed = sorted(rows.elements())
    return (", ".join(listed[:_SHOWN]) + (" ..." if len(listed) > _SHOWN else "")) if listed else "none"

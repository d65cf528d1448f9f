"""Whether blue/green candidate versions may be promoted: their checks pass and their keys are right.

Run before promotion; nothing is promoted unless every problem list is empty.

A candidate reprocessed from T holds, by consent, none of the serving version's history before T. What it
must hold instead, key by key (a table's primary key), is judged on the rows and record times the sink
reader sees (`key_rules`):
- every key its SQL produces from the source records it read from T on, and no other key;
- where it runs the serving version's code over the same sources and is stateless (each row from one
  record, keeping its time): every key the serving version wrote from records at or after T, and no key the
  serving version never had once that version read every record from where the candidate's records start
  (a key only the candidate holds then came from nothing the serving version did not read).
Keys only the serving version holds are its history before T: reported, refused only with
`require_same_keys` (no consent to lose them).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel, Field
from pyspark.sql import DataFrame

from shift_left_dagster.checks.catch_up import total
from shift_left_dagster.checks.data_tests import discover
from shift_left_dagster.checks.models import CheckName, CheckOutcome, ChecksSettings, Severity
from shift_left_dagster.checks.readers import SinkReader
from shift_left_dagster.checks.runner import find_dml_statements, run_checks
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.models import Statement
from shift_left_dagster.deploy.live import CODE_VERSION_LABEL, live_state
from shift_left_dagster.deploy.naming import versioned_name
from shift_left_dagster.deploy.rewrite import reads_from, source_options
from shift_left_dagster.project.analysis import StateForm
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import FlinkTable

SAMPLE_KEYS = 3  # key values a refusal names


class CandidateReport(BaseModel):
    candidates: dict[str, int] = Field(default_factory=dict)  # table -> candidate version
    outcomes: list[CheckOutcome] = Field(default_factory=list)
    key_differences: dict[str, dict[str, int]] = Field(default_factory=dict)  # table -> what each rule counted
    problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # rules the sink reader could not evaluate, and why

    @property
    def promotable(self) -> bool:
        return bool(self.candidates) and not self.problems


def verify_candidates(
    client: ConfluentClient,
    graph: ProjectGraph,
    environment: str,
    reader: SinkReader,
    settings: ChecksSettings | None = None,
    require_same_keys: bool = False,
) -> CandidateReport:
    """Checks and data tests of every candidate version (as deployed), and its keys by `key_rules` against the
    serving version's. A failed check or data test of severity warn (e.g. nothing compared: a filter that
    dropped every record read) is a note, never a problem."""
    live = live_state(client, with_tables=False)
    candidates = {t: v for t, v in live.candidate_versions().items() if t in graph.tables}
    serving = live.serving_versions()
    report = CandidateReport(candidates=candidates)
    physical = {table: versioned_name(table, version) for table, version in candidates.items()}
    old = {table: versioned_name(table, serving[table]) for table in candidates}
    tables = [graph.tables[name] for name in graph.sorted_subset(candidates)]
    statements = find_dml_statements(client, tables, environment, physical)
    serving_statements = find_dml_statements(client, tables, environment, old)
    report.outcomes = run_checks(tables, reader, statements, settings or ChecksSettings(), physical=physical,
                                 data_tests=discover(graph.inventory.root, graph.tables))
    failed = [o for o in report.outcomes if not o.passed]
    report.problems += [f"{o.table} v{candidates[o.table]}: {o.check} failed: {o.message}" for o in failed
                        if o.blocking or (o.check in set(CheckName) and o.severity == Severity.ERROR)]
    report.notes += [f"{o.table} v{candidates[o.table]}: {o.check} warns: {o.message}" for o in failed
                     if o.severity == Severity.WARN]
    for table in tables:
        new, was = statements.get(table.name), serving_statements.get(table.name)
        if not table.primary_key or new is None:
            continue
        with reader.snapshot():
            counts, problems, notes = key_rules(table, reader, old[table.name], physical[table.name], new, was)
        report.key_differences[table.name] = counts
        report.notes += [f"{table.name} v{candidates[table.name]}: {n}" for n in notes]
        if require_same_keys and counts["only_old"]:
            problems.append(f"{counts['only_old']} key(s) only the serving version holds (its history before the "
                            "new version's start): promote without require_same_keys to accept losing them")
        report.problems += [f"{table.name} v{candidates[table.name]}: {p}" for p in problems]
    return report


def key_rules(table: FlinkTable, reader: SinkReader, old: str, new: str, statement: Statement,
              serving: Statement | None) -> tuple[dict[str, int], list[str], list[str]]:
    """What each rule of the module docstring counts for one candidate (`new`, written by `statement`) beside
    its serving version (`old`, written by `serving`), the problems (each rule broken, with sample keys), and
    notes (rules this reader can not evaluate)."""
    key = list(table.primary_key)
    start = reads_from(statement.spec.statement or "")
    since = f"from {start:%Y-%m-%d %H:%M:%S} on" if start else "from earliest"
    has, had = _keys(reader.rows(new), key), _keys(reader.rows(old), key)
    counts = {"only_old": had.subtract(has).count(), "only_new": has.subtract(had).count()}
    problems: list[str] = []
    timed = reader.has_record_times  # the records from `start` on can be told
    if start is not None and not timed:
        return counts, problems, [f"reads from {start:%Y-%m-%d %H:%M:%S}: its keys are not judged (this sink "
                                  "reader has no record times to tell the source records from then on)"]
    produced = _keys(reader.expected(table, new, statement), key)
    missing, invented = produced.subtract(has), has.subtract(produced)
    counts.update(missing=missing.count(), invented=invented.count())
    if counts["missing"]:
        problems.append(f"{counts['missing']} key(s) its SQL produces from the source records {since} are "
                        f"missing ({_sample(missing)})")
    if counts["invented"]:
        problems.append(f"{counts['invented']} key(s) no source record {since} produces ({_sample(invented)})")
    if not comparable(table, statement, serving) or not timed:
        return counts, problems, []
    assert serving is not None
    lost = _written(reader, old, key, start).subtract(has)
    counts["lost_since_start"] = lost.count()
    if counts["lost_since_start"]:
        problems.append(f"{counts['lost_since_start']} key(s) the serving version wrote from records {since} "
                        f"are missing ({_sample(lost)})")
    served_from = reads_from(serving.spec.statement or "")
    if total(reader.lag(serving)) == 0:
        # only keys from records the serving version read: none before its own start (a reprocess itself)
        later = has if served_from is None or (start is not None and start >= served_from) else \
            _written(reader, new, key, served_from).intersect(has)
        unknown = later.subtract(_written(reader, old, key, None))
        counts["never_served"] = unknown.count()
        if counts["never_served"]:
            problems.append(f"{counts['never_served']} key(s) the serving version never had, though it runs the "
                            f"same code over the same sources and read every record ({_sample(unknown)})")
    return counts, problems, []


def _written(reader: SinkReader, table: str, key: list[str], since: datetime | None) -> DataFrame:
    written = reader.written_keys(table, key, since)
    assert written is not None  # (asked only of a reader with record times)
    return written


def comparable(table: FlinkTable, statement: Statement, serving: Statement | None) -> bool:
    """Whether the serving version's keys speak for the candidate's: a stateless table (a row per record, at
    its time) whose two versions run the same code over the same source tables."""
    if serving is None or table.state_form != StateForm.STATELESS:
        return False
    return _code(statement) == _code(serving) and set(source_options(statement.spec.statement or "")) == set(
        source_options(serving.spec.statement or ""))


def _code(statement: Statement) -> str | None:
    labels: Mapping[str, str] = (statement.metadata.labels if statement.metadata else None) or {}
    return labels.get(CODE_VERSION_LABEL)


def _keys(frame: DataFrame, key: list[str]) -> DataFrame:
    return frame.select(*[f"`{k}`" for k in key]).distinct()


def _sample(keys: DataFrame) -> str:
    return "e.g. " + ", ".join(str(tuple(row)) if len(row) > 1 else repr(row[0]) for row in keys.limit(SAMPLE_KEYS)
                               .collect())

"""Whether blue/green candidate versions may be promoted: their checks pass and they hold the same keys.

Run before promotion; nothing is promoted unless every problem list is empty.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shift_left_dagster.checks.data_tests import discover
from shift_left_dagster.checks.models import CheckName, CheckOutcome, ChecksSettings
from shift_left_dagster.checks.readers import SinkReader
from shift_left_dagster.checks.runner import find_dml_statements, run_checks
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.deploy.live import live_state
from shift_left_dagster.deploy.naming import versioned_name
from shift_left_dagster.project.graph import ProjectGraph


class CandidateReport(BaseModel):
    candidates: dict[str, int] = Field(default_factory=dict)  # table -> candidate version
    outcomes: list[CheckOutcome] = Field(default_factory=list)
    key_differences: dict[str, dict[str, int]] = Field(default_factory=dict)  # table -> only_old/only_new
    problems: list[str] = Field(default_factory=list)

    @property
    def promotable(self) -> bool:
        return bool(self.candidates) and not self.problems


def verify_candidates(
    client: ConfluentClient,
    graph: ProjectGraph,
    environment: str,
    reader: SinkReader,
    settings: ChecksSettings | None = None,
    require_same_keys: bool = True,
) -> CandidateReport:
    """Checks and data tests of every candidate version (as deployed), and its keys against the serving
    version's. A failed data test declared `warn` is reported, never a problem."""
    live = live_state(client, with_tables=False)
    candidates = {t: v for t, v in live.candidate_versions().items() if t in graph.tables}
    serving = live.serving_versions()
    report = CandidateReport(candidates=candidates)
    physical = {table: versioned_name(table, version) for table, version in candidates.items()}
    tables = [graph.tables[name] for name in graph.sorted_subset(candidates)]
    statements = find_dml_statements(client, tables, environment, physical)
    report.outcomes = run_checks(tables, reader, statements, settings or ChecksSettings(), physical=physical,
                                 data_tests=discover(graph.inventory.root, graph.tables))
    report.problems += [f"{o.table} v{candidates[o.table]}: {o.check} failed: {o.message}"
                        for o in report.outcomes if not o.passed and (o.blocking or o.check in set(CheckName))]
    for table in tables:
        if not table.primary_key:
            continue
        key = [f"`{k}`" for k in table.primary_key]
        old = reader.rows(versioned_name(table.name, serving[table.name])).select(*key).distinct()
        new = reader.rows(physical[table.name]).select(*key).distinct()
        difference = {"only_old": old.subtract(new).count(), "only_new": new.subtract(old).count()}
        report.key_differences[table.name] = difference
        if require_same_keys and any(difference.values()):
            report.problems.append(f"{table.name} v{candidates[table.name]}: keys differ from the serving "
                                   f"version ({difference['only_old']} lost, {difference['only_new']} new)")
    return report

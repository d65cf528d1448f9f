"""Stop and resume plans on the sample graph, without any service: what each step does and refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from shift_left_dagster.deploy.live import LiveState, LiveStatement, StatementKind
from shift_left_dagster.deploy.naming import statement_name, versioned_name
from shift_left_dagster.deploy.operate import resume_plan, stop_plan
from shift_left_dagster.deploy.plan import Action, PlanError, PlanOptions, render_plan
from shift_left_dagster.deploy.steps import StopStep
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.unit.test_plan import running

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"


@pytest.fixture(scope="module")
def graph() -> ProjectGraph:
    return ProjectGraph(build_inventory(SAMPLE))


def test_stop_stops_what_runs_readers_first_and_skips_the_rest_saying_why(graph: ProjectGraph) -> None:
    live = running(graph, ["src_table_1", "int_table_1"], phases={"int_table_1": "FAILING"})
    plan = stop_plan(graph, ["src_table_1", "int_table_1", "src_table_2"], live, PlanOptions())
    assert [(s.table, s.action) for s in plan.steps] == [
        ("int_table_1", Action.STOP), ("src_table_2", Action.SKIP), ("src_table_1", Action.STOP)]
    first = plan.steps[0]
    assert isinstance(first, StopStep) and first.dml_statement == "dev-p1-dml-int-table-1"
    assert first.reason == "FAILING: stopped, its offsets kept"
    assert plan.steps[1].reason == "no DML statement deployed"
    assert "stop plan for int_table_1, src_table_1, src_table_2: 2 change(s)" in render_plan(plan)


def test_resume_resumes_stopped_unchanged_tables_parents_first(graph: ProjectGraph) -> None:
    live = running(graph, ["src_table_1", "int_table_1", "src_table_2"], phase="STOPPED",
                   phases={"src_table_2": "RUNNING"})
    plan = resume_plan(graph, ["int_table_1", "src_table_1", "src_table_2"], live, PlanOptions())
    assert {s.table: s.action for s in plan.steps if s.table} == {
        "src_table_1": Action.RESUME, "int_table_1": Action.RESUME, "src_table_2": Action.SKIP}
    resumed = plan.step_for("int_table_1")
    assert resumed is not None and plan.step_for("src_table_1").index in resumed.depends_on  # type: ignore[union-attr]


def test_resume_refuses_a_stopped_table_whose_code_changed_in_one_line(graph: ProjectGraph) -> None:
    live = running(graph, ["src_table_1"], phase="STOPPED", changed=("src_table_1",))
    with pytest.raises(PlanError) as refused:
        resume_plan(graph, ["src_table_1"], live, PlanOptions())
    assert str(refused.value) == ("src_table_1: its code changed since it was stopped, so it is not resumed: "
                                  "deploy it (shift-left-dagster deploy src_table_1), the plan decides how")


def with_candidate(live: LiveState, graph: ProjectGraph, table: str, phase: str, code_version: str | None = None
                   ) -> LiveState:
    """`live` and a version 2 of `table` beside its serving one (a reprocess catching up)."""
    info = graph.tables[table]
    name = statement_name("dev", info.product, "dml", versioned_name(table, 2))
    candidate = LiveStatement(name=name, phase=phase, compute_pool_id="lfcp-run", version=2, table=table,
                              code_version=code_version or info.code_version, kind=StatementKind.DML)
    return live.model_copy(update={"statements": {**live.statements, name: candidate}})


def test_stop_and_resume_act_on_the_new_version_beside_the_serving_one(graph: ProjectGraph) -> None:
    live = with_candidate(running(graph, ["src_table_1", "src_table_2"]), graph, "src_table_1", "RUNNING")
    plan = stop_plan(graph, ["src_table_1", "src_table_2"], live, PlanOptions(), candidate=True)
    assert [(s.table, s.action, s.dml_statement, s.version) for s in plan.steps] == [  # type: ignore[union-attr]
        ("src_table_2", Action.SKIP, "dev-p1-dml-src-table-2", 1),
        ("src_table_1", Action.STOP, "dev-p1-dml-src-table-1-v2", 2)]
    assert plan.steps[0].reason == "no new version beside the serving one"  # its serving version runs on

    stopped = with_candidate(running(graph, ["src_table_1", "src_table_2"], phase="STOPPED"), graph, "src_table_1",
                             "STOPPED")
    plan = resume_plan(graph, ["src_table_1", "src_table_2"], stopped, PlanOptions(), candidate=True)
    assert {(s.table, s.action, s.dml_statement) for s in plan.steps if s.table} == {  # type: ignore[union-attr]
        ("src_table_1", Action.RESUME, "dev-p1-dml-src-table-1-v2"),
        ("src_table_2", Action.SKIP, "dev-p1-dml-src-table-2")}

    changed = with_candidate(running(graph, ["src_table_1"]), graph, "src_table_1", "STOPPED", "old-version")
    with pytest.raises(PlanError) as refused:
        resume_plan(graph, ["src_table_1"], changed, PlanOptions(), candidate=True)
    assert str(refused.value) == ("src_table_1: its code changed since version 2 was stopped, so it is not resumed: "
                                  "roll it back (shift-left-dagster rollback src_table_1) and build it again")

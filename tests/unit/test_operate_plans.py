"""Stop and resume plans on the sample graph, without any service: what each step does and refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

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

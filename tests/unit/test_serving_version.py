"""The serving version a plan deploys when a deployment stopped half way through recreating a version > 1
(found by the model test's walk: a deployment killed after removing src_orders_v2's DML was redeployed as
src_orders, version 1, beside children reading src_orders_v2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shift_left_dagster.deploy.live import LiveState, LiveStatement, StatementKind
from shift_left_dagster.deploy.naming import statement_name
from shift_left_dagster.deploy.plan import Action, PlanOptions, build_plan
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"
P1 = ["src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"]


@pytest.fixture(scope="module")
def graph() -> ProjectGraph:
    return ProjectGraph(build_inventory(SAMPLE))


def statement(graph: ProjectGraph, table: str, kind: StatementKind, version: int, phase: str) -> LiveStatement:
    physical = f"{table}_v{version}" if version > 1 else table
    name = statement_name("dev", graph.tables[table].product, kind.value, physical)
    return LiveStatement(name=name, phase=phase, table=table, version=version, kind=kind,
                         code_version=graph.tables[table].code_version)


def promoted(graph: ProjectGraph, leave_out: str) -> LiveState:
    """Every P1 table serving version 2 (a reprocess promoted), but `leave_out`'s DML removed by a deployment
    killed while it recreated the table (its DDL statement is still there)."""
    found = [statement(graph, t, StatementKind.DDL, 2, "COMPLETED") for t in P1]
    found += [statement(graph, t, StatementKind.DML, 2, "RUNNING") for t in P1 if t != leave_out]
    return LiveState(statements={s.name: s for s in found}, tables={f"{t}_v2" for t in P1 if t != leave_out})


def test_a_table_whose_dml_a_stopped_deployment_removed_keeps_its_version(graph):
    live = promoted(graph, "int_table_2")
    assert live.serving_versions()["int_table_2"] == 2
    plan = build_plan(graph, ["int_table_2"], live, PlanOptions(versions=live.serving_versions()))
    step = plan.step_for("int_table_2")
    assert (step.action, step.version, step.physical_table) == (Action.DEPLOY, 2, "int_table_2_v2")
    assert "INSERT INTO int_table_2_v2" in (step.dml_sql or "")


def test_a_failed_dml_keeps_its_version_and_a_deployed_one_wins(graph):
    live = promoted(graph, "fct_order")
    failed = statement(graph, "fct_order", StatementKind.DML, 2, "FAILED")
    live.statements[failed.name] = failed
    assert live.serving_versions()["fct_order"] == 2
    serving = statement(graph, "fct_order", StatementKind.DML, 1, "RUNNING")  # an older version deployed
    live.statements[serving.name] = serving
    assert live.serving_versions()["fct_order"] == 1

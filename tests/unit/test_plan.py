"""Execution plan rules on the seeds' graphs, without any service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shift_left_dagster.deploy.naming import statement_name
from shift_left_dagster.deploy.plan import Action, LiveStatement, PlanOptions, build_plan
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"
P1 = ["src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"]


@pytest.fixture(scope="module")
def graph() -> ProjectGraph:
    return ProjectGraph(build_inventory(SAMPLE))


def running(graph: ProjectGraph, tables: list[str], pool: str = "lfcp-run", changed: tuple[str, ...] = ()):
    live = {}
    for table in tables:
        info = graph.tables[table]
        name = statement_name("dev", info.product, "dml", table)
        version = "old-version" if table in changed else info.code_version
        live[name] = LiveStatement(name=name, phase="RUNNING", compute_pool_id=pool, code_version=version)
    return live


def actions(plan) -> dict[str, Action]:
    return {s.table: s.action for s in plan.steps if s.table}


def test_nothing_running_deploys_sources_then_intermediates_then_the_fact(graph):
    plan = build_plan(graph, ["fct_order"], {})
    tables = [s.table for s in plan.steps if s.table]
    assert set(tables) == set(P1)
    assert all(actions(plan)[t] == Action.DEPLOY for t in P1)
    position = {t: i for i, t in enumerate(tables)}
    assert max(position[s] for s in P1[:3]) < min(position["int_table_1"], position["int_table_2"])
    assert max(position["int_table_1"], position["int_table_2"]) < position["fct_order"]
    fct = plan.step_for("fct_order")
    assert {plan.steps[i].table for i in fct.depends_on} >= {"int_table_1", "int_table_2"}


def test_running_ancestor_is_left_alone(graph):
    live = running(graph, ["src_table_1", "src_table_2", "int_table_1"])
    plan = build_plan(graph, ["fct_order"], live)
    assert actions(plan)["int_table_1"] == Action.SKIP
    assert actions(plan)["src_table_1"] == Action.SKIP
    assert actions(plan)["src_table_3"] == Action.DEPLOY
    assert actions(plan)["fct_order"] == Action.DEPLOY


def test_everything_running_unchanged_is_a_no_op(graph):
    plan = build_plan(graph, ["fct_order"], running(graph, P1))
    assert plan.changes == []


def test_redeploying_an_intermediate_restarts_stateful_children_and_carries_stateless_ones(graph):
    # z feeds p (stateful aggregate) and d (stateless projection); d feeds v_p (stateful join).
    tables = ["src_b", "src_x", "src_y", "x", "y", "z", "p", "d", "v_p"]
    plan = build_plan(graph, ["z"], running(graph, tables, changed=("z",)))
    got = actions(plan)
    assert got["z"] == Action.RESTART
    assert got["p"] == Action.RESTART  # stateful child: table recreated, from earliest
    assert got["d"] == Action.CARRY_OVER  # stateless child: resumed from its offsets
    assert got["v_p"] == Action.RESTART  # reads p, which is recreated (d alone would not restart it)
    assert "recreated p" in plan.step_for("v_p").reason
    assert got["x"] == got["y"] == Action.SKIP
    restarted_p = plan.step_for("p")
    assert plan.steps[restarted_p.depends_on[0]].table == "z"


def test_force_sources_redeploys_running_sources_and_what_they_feed(graph):
    live = running(graph, P1)
    assert build_plan(graph, ["int_table_1"], live).changes == []
    plan = build_plan(graph, ["int_table_1"], live, PlanOptions(force_sources=True))
    got = actions(plan)
    assert got["src_table_1"] == got["src_table_2"] == Action.RESTART
    assert got["int_table_1"] == Action.RESTART
    assert got["fct_order"] == Action.RESTART  # stateful child of a recreated table


def test_dml_only_keeps_tables_and_children(graph):
    plan = build_plan(graph, ["int_table_1"], running(graph, P1, changed=("int_table_1",)), PlanOptions(dml_only=True))
    got = actions(plan)
    assert got["int_table_1"] == Action.REPLACE_DML
    assert "fct_order" not in got


def test_may_start_children_restarts_stateless_children_too(graph):
    tables = ["src_b", "src_x", "src_y", "x", "y", "z", "p", "d", "v_p"]
    live = running(graph, tables, changed=("z",))
    plan = build_plan(graph, ["z"], live, PlanOptions(may_start_children=True))
    got = actions(plan)
    assert got["d"] == Action.RESTART
    assert got["v_p"] == Action.RESTART  # d is now recreated, so its stateful child restarts


def test_compute_pool_choice(graph):
    configured = build_plan(graph, ["src_table_1"], {}, PlanOptions(compute_pool_id="lfcp-conf"))
    assert [s.compute_pool for s in configured.steps] == ["lfcp-conf"]
    in_use = build_plan(graph, ["fct_order"], running(graph, ["int_table_1"], pool="lfcp-used", changed=("int_table_1",)))
    assert in_use.step_for("fct_order").compute_pool.startswith("new:")
    assert build_plan(graph, ["int_table_1"], running(graph, ["int_table_1"], pool="lfcp-used", changed=("int_table_1",))
                      ).step_for("int_table_1").compute_pool == "lfcp-used"
    fresh = build_plan(graph, ["fct_order", "fct_c360_purchase"], {})
    pools = [s for s in fresh.steps if s.action == Action.CREATE_POOL]
    assert sorted(s.compute_pool for s in pools) == ["new:dev-c360", "new:dev-p1"]  # one per product


def test_plan_is_identical_under_any_hash_seed():
    code = (
        "import json; from shift_left_dagster.project.inventory import build_inventory;"
        "from shift_left_dagster.project.graph import ProjectGraph;"
        "from shift_left_dagster.deploy.plan import build_plan;"
        f"g = ProjectGraph(build_inventory({str(SAMPLE)!r}));"
        "print(build_plan(g, ['v_p', 'fct_order', 'dim_c360_users'], {}).model_dump_json())"
    )
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("0", "5", "123")
    }
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["steps"]


def test_backfill_is_refused_where_a_window_cannot_be_rebuilt(graph):
    from shift_left_dagster.deploy.backfill import backfill_refusal

    assert "append table" in backfill_refusal(graph.tables["src_table_3"])  # stateless, no key: would duplicate
    assert "stateful" in backfill_refusal(graph.tables["int_table_1"])  # a join: a window can't rebuild its state
    assert backfill_refusal(graph.tables["fct_c360_hourly_activity"]) is None  # TUMBLE windows align
    assert backfill_refusal(graph.tables["d"]) is None  # stateless and keyed: upserts rewrite the same keys

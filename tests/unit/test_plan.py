"""Execution plan rules on the sample graphs, without any service (each issue case first as a test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shift_left_dagster.deploy.live import LiveState, LiveStatement, StatementKind
from shift_left_dagster.deploy.naming import statement_name
from shift_left_dagster.deploy.plan import Action, PlanError, PlanOptions, build_plan, render_plan
from shift_left_dagster.deploy.steps import DeployStep
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory

SAMPLE = Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"
P1 = ["src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"]
RAW = {"raw_orders", "raw_customers", "raw_payments", "raw_groups", "raw_users", "raw_purchases", "raw_app_events",
       "raw_accounts", "raw_transactions", "raw_logins"}


@pytest.fixture(scope="module")
def graph() -> ProjectGraph:
    return ProjectGraph(build_inventory(SAMPLE))


def running(graph: ProjectGraph, tables: list[str], pool: str = "lfcp-run", changed: tuple[str, ...] = (),
            phase: str = "RUNNING", phases: dict[str, str] | None = None, tables_exist: bool = True) -> LiveState:
    live = {}
    for table in tables:
        info = graph.tables[table]
        name = statement_name("dev", info.product, "dml", table)
        version = "old-version" if table in changed else info.code_version
        live[name] = LiveStatement(name=name, phase=(phases or {}).get(table, phase), compute_pool_id=pool,
                                   code_version=version, table=table, kind=StatementKind.DML)
    return LiveState(statements=live, tables=(set(tables) | RAW) if tables_exist else set(RAW))


def nothing() -> LiveState:
    return LiveState(statements={}, tables=set(RAW))


def actions(plan) -> dict[str, Action]:
    return {s.table: s.action for s in plan.steps if s.table}


def test_nothing_running_deploys_sources_then_intermediates_then_the_fact(graph):
    plan = build_plan(graph, ["fct_order"], nothing())
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


def test_redeploying_an_intermediate_recreates_every_deployed_descendant(graph):
    # z feeds p (stateful aggregate) and d (stateless projection); d feeds v_p (stateful join).
    tables = ["src_b", "src_x", "src_y", "x", "y", "z", "p", "d", "v_p"]
    plan = build_plan(graph, ["z"], running(graph, tables, changed=("z",)))
    got = actions(plan)
    assert got["z"] == Action.RECREATE
    assert got["p"] == got["d"] == got["v_p"] == Action.RECREATE  # a child of a new topic is recreated
    assert "z" in plan.step_for("d").reason
    assert got["x"] == got["y"] == Action.SKIP
    assert not any(getattr(s, "carry_offsets", False) for s in plan.steps)
    restarted_p = plan.step_for("p")
    assert plan.steps[restarted_p.depends_on[0]].table == "z"


def test_issue_changed_stateless_source_recreates_its_append_child_and_grandchild(graph):
    """src_c360_purchases changed: int_c360_purchase_items (stateless append) must not resume from
    earliest on the recreated topic (29 -> 58 rows); fct_c360_item_sales must be rebuilt."""
    tables = ["src_c360_purchases", "int_c360_purchase_items", "fct_c360_item_sales"]
    got = actions(build_plan(graph, ["src_c360_purchases"], running(graph, tables, changed=("src_c360_purchases",))))
    assert got == {t: Action.RECREATE for t in tables}


def test_issue_completed_bounded_sources_are_deployed(graph):
    """Sources filled by INSERT ... VALUES are COMPLETED: re-planning right after must change nothing."""
    live = running(graph, P1, phases={t: "COMPLETED" for t in P1[:3]})
    assert build_plan(graph, ["fct_order"], live).changes == []
    gone = running(graph, P1, phases={t: "COMPLETED" for t in P1[:3]}, tables_exist=False)
    assert actions(build_plan(graph, ["src_table_1"], gone))["src_table_1"] == Action.DEPLOY  # topic deleted


def test_issue_stopped_statement_is_resumed_not_recreated(graph):
    live = running(graph, P1, phases={"int_table_1": "STOPPED"})
    plan = build_plan(graph, ["fct_order"], live)
    assert actions(plan)["int_table_1"] == Action.RESUME
    assert [s for s in plan.changes if s.table] == [plan.step_for("int_table_1")]
    assert actions(build_plan(graph, ["int_table_1"], live))["int_table_1"] == Action.RESUME
    changed = running(graph, P1, phases={"int_table_1": "STOPPED"}, changed=("int_table_1",))
    assert actions(build_plan(graph, ["int_table_1"], changed))["int_table_1"] == Action.RECREATE


def test_issue_dml_only_on_a_missing_table_is_a_plan_error(graph):
    live = running(graph, ["src_table_1", "src_table_2"])
    with pytest.raises(PlanError, match="int_table_1 does not exist"):
        build_plan(graph, ["int_table_1"], live, PlanOptions(dml_only=True))


def test_issue_projection_of_an_upsert_table_is_stateful(graph):
    # d is a projection of z (an upsert table): Flink adds ChangelogNormalize, state per key.
    assert graph.tables["d"].state_form == "stateful"
    assert any("ChangelogNormalize" in r for r in graph.tables["d"].dml.state_reasons)


def test_issue_unknown_parent_name_is_refused_at_plan_time_naming_file_and_line(tmp_path):
    scripts = tmp_path / "pipelines" / "intermediates" / "p" / "int_a" / "sql-scripts"
    scripts.mkdir(parents=True)
    (scripts / "ddl.int_a.sql").write_text("CREATE TABLE int_a (k STRING)")
    (scripts / "dml.int_a.sql").write_text("INSERT INTO int_a\nSELECT k\nFROM src_table_nobody")
    graph = ProjectGraph(build_inventory(tmp_path / "pipelines"))
    with pytest.raises(PlanError, match=r"dml.int_a.sql:3: int_a reads src_table_nobody: not a table") as error:
        build_plan(graph, ["int_a"], LiveState(tables={"raw_x"}))
    assert "src_table_nobody" in str(error.value)
    with pytest.raises(PlanError, match="reject_topics_prefixes"):
        build_plan(graph, ["int_a"], LiveState(tables={"src_table_nobody"}),
                   PlanOptions(reject_topics_prefixes=["src_"]))
    assert build_plan(graph, ["int_a"], LiveState(tables={"src_table_nobody"})).steps  # it exists: fine


def test_force_sources_redeploys_running_sources_and_what_they_feed(graph):
    live = running(graph, P1)
    assert build_plan(graph, ["int_table_1"], live).changes == []
    plan = build_plan(graph, ["int_table_1"], live, PlanOptions(force_sources=True))
    got = actions(plan)
    assert got["src_table_1"] == got["src_table_2"] == Action.RECREATE
    assert got["int_table_1"] == Action.RECREATE
    assert got["fct_order"] == Action.RECREATE  # child of a recreated table


def test_dml_only_keeps_tables_and_children(graph):
    plan = build_plan(graph, ["int_table_1"], running(graph, P1, changed=("int_table_1",)), PlanOptions(dml_only=True))
    got = actions(plan)
    assert got["int_table_1"] == Action.REPLACE_DML
    assert "fct_order" not in got


def test_may_start_children_deploys_children_not_deployed_yet(graph):
    tables = ["src_b", "src_x", "src_y", "x", "y", "z"]
    live = running(graph, tables, changed=("z",))
    assert not {"d", "p", "v_p"} & set(actions(build_plan(graph, ["z"], live)))
    got = actions(build_plan(graph, ["z"], live, PlanOptions(may_start_children=True)))
    assert got["d"] == got["p"] == got["v_p"] == Action.DEPLOY


def test_compute_pool_choice(graph):
    configured = build_plan(graph, ["src_table_1"], nothing(), PlanOptions(compute_pool_id="lfcp-conf"))
    assert [s.pool.id for s in configured.steps] == ["lfcp-conf"]
    in_use = build_plan(graph, ["fct_order"],
                        running(graph, ["int_table_1"], pool="lfcp-used", changed=("int_table_1",)))
    assert in_use.step_for("fct_order").pool.create == "dev-p1"
    assert build_plan(graph, ["int_table_1"],
                      running(graph, ["int_table_1"], pool="lfcp-used", changed=("int_table_1",))
                      ).step_for("int_table_1").pool.id == "lfcp-used"
    fresh = build_plan(graph, ["fct_order", "fct_c360_purchase"], nothing())
    pools = [s for s in fresh.steps if s.action == Action.CREATE_POOL]
    assert sorted(s.pool.create for s in pools) == ["dev-c360", "dev-p1"]  # one per product


def test_plan_is_identical_under_any_hash_seed():
    code = (
        "import json; from shift_left_dagster.project.inventory import build_inventory;"
        "from shift_left_dagster.project.graph import ProjectGraph;"
        "from shift_left_dagster.deploy.plan import build_plan;"
        f"g = ProjectGraph(build_inventory({str(SAMPLE)!r}));"
        "from shift_left_dagster.deploy.live import LiveState;"
        "print(build_plan(g, ['v_p', 'fct_order', 'dim_c360_users'], LiveState()).model_dump_json())"
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
    assert "stateful" in backfill_refusal(graph.tables["d"])  # reads an upsert table: ChangelogNormalize state


def test_recreating_a_topic_a_candidate_version_reads_is_refused(graph):
    live = running(graph, P1, changed=("int_table_2",))
    name = statement_name("dev", "p1", "dml", "fct_order_v2")
    live.statements[name] = LiveStatement(name=name, phase="RUNNING", table="fct_order", version=2,
                                          kind=StatementKind.DML, code_version="x",
                                          sql="INSERT INTO fct_order_v2 SELECT * FROM int_table_1 JOIN int_table_2")
    with pytest.raises(PlanError, match="candidate version 2 of fct_order"):
        build_plan(graph, ["int_table_2"], live)
    assert build_plan(graph, ["int_table_1"], live).changes == []


def test_a_recreated_child_keeps_its_serving_version(graph):
    """Found by the model-based test: after fct_order v2 was promoted, recreating a parent recreated
    fct_order_v2 but labelled it version 1, so the next plan thought fct_order was missing."""
    live = running(graph, [t for t in P1 if t != "fct_order"], changed=("int_table_2",))
    name = statement_name("dev", "p1", "dml", "fct_order_v2")
    live.statements[name] = LiveStatement(name=name, phase="RUNNING", table="fct_order", version=2,
                                          kind=StatementKind.DML, code_version=graph.tables["fct_order"].code_version)
    plan = build_plan(graph, ["int_table_2"], live, PlanOptions(versions=live.serving_versions()))
    step = plan.step_for("fct_order")
    assert (step.action, step.version, step.physical_table) == (Action.RECREATE, 2, "fct_order_v2")
    assert step.dml_statement == name and "INSERT INTO fct_order_v2" in step.dml_sql


def test_schema_context_is_put_in_every_registry_format_of_the_deployed_ddl(graph):
    plan = build_plan(graph, ["fct_order"], nothing(), PlanOptions(schema_context=".flink-stage"))
    ddl = next(s.ddl_sql for s in plan.steps if isinstance(s, DeployStep) and s.table == "fct_order" and s.ddl_sql)
    assert "'key.avro-registry.schema-context' = '.flink-stage'" in ddl
    assert "'value.avro-registry.schema-context' = '.flink-stage'" in ddl
    plain = build_plan(graph, ["fct_order"], nothing(), PlanOptions())
    assert "schema-context" not in next(s.ddl_sql for s in plain.steps
                                       if isinstance(s, DeployStep) and s.table == "fct_order" and s.ddl_sql)


def test_schema_context_replaces_one_written_in_git_and_skips_formats_without_registry():
    from shift_left_dagster.deploy.rewrite import with_schema_context

    ddl = ("CREATE TABLE t (a STRING) WITH ('key.format' = 'raw', 'value.format' = 'json-registry', "
           "'value.json-registry.schema-context' = '.flink-dev')")
    rewritten = with_schema_context(ddl, ".flink-prod")
    assert "'value.json-registry.schema-context' = '.flink-prod'" in rewritten and ".flink-dev" not in rewritten
    assert "key.raw.schema-context" not in rewritten


def test_a_plan_as_json_reads_back_into_the_same_step_types_and_describes_itself(graph):
    """`plan --json` is the plan itself: each step's `action` picks its model, as `plan --json-schema` says."""
    from shift_left_dagster.deploy.plan import DeploymentPlan

    plan = build_plan(graph, ["fct_order", "fct_c360_purchase"], running(graph, ["src_table_1"], phase="STOPPED"))
    again = DeploymentPlan.model_validate_json(plan.model_dump_json())
    assert again == plan
    assert {type(s).__name__ for s in again.steps} == {"CreatePoolStep", "ResumeStep", "DeployStep"}
    out = subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "plan", "--json-schema"],
                         capture_output=True, text=True, check=True).stdout
    mapping = json.loads(out)["properties"]["steps"]["items"]["discriminator"]["mapping"]
    assert set(mapping) == {a.value for a in Action}


def with_ddl(graph: ProjectGraph, live: LiveState, table: str, created_at: datetime) -> LiveState:
    """`live` with `table`'s DDL statement, created at `created_at` (its table created then)."""
    info = graph.tables[table]
    name = statement_name("dev", info.product, "ddl", table)
    ddl = LiveStatement(name=name, phase="COMPLETED", code_version=info.code_version, table=table,
                        kind=StatementKind.DDL, created_at=created_at)
    return live.model_copy(update={"statements": {**live.statements, name: ddl}})


def created(live: LiveState, graph: ProjectGraph, table: str, at: datetime) -> LiveState:
    """`live` with `table`'s DML statement created at `at`."""
    name = statement_name("dev", graph.tables[table].product, "dml", table)
    statements = {**live.statements, name: live.statements[name].model_copy(update={"created_at": at})}
    return live.model_copy(update={"statements": statements})


C360 = ["src_c360_purchases", "int_c360_purchase_items", "fct_c360_item_sales"]
EARLY, LATE = datetime(2026, 11, 26, 10, tzinfo=UTC), datetime(2026, 11, 26, 11, tzinfo=UTC)


def test_issue_31_a_redeploy_repairs_a_child_left_failed_by_a_killed_deployment(graph):
    """A deployment recreating the source, killed before it recreated its child: the child's statement is
    FAILED. Deploying the source again (now unchanged) redeploys the child from earliest, and its deployed
    child in turn (it read the failed one's topic), saying why in the plan."""
    live = running(graph, C360, phases={"int_c360_purchase_items": "FAILED"})
    plan = build_plan(graph, ["src_c360_purchases"], live)
    assert actions(plan) == {"src_c360_purchases": Action.SKIP, "int_c360_purchase_items": Action.DEPLOY,
                             "fct_c360_item_sales": Action.RECREATE}
    assert "FAILED" in plan.step_for("int_c360_purchase_items").reason
    assert "int_c360_purchase_items" in plan.step_for("fct_c360_item_sales").reason
    assert "FAILED" in render_plan(plan)
    repaired = running(graph, C360)
    assert build_plan(graph, ["src_c360_purchases"], repaired).changes == []  # then nothing to do


def test_issue_31_a_child_whose_parent_was_recreated_under_it_is_recreated(graph):
    """The same kill, the child still RUNNING: its statement was created before its parent's current table,
    so it reads a topic its offsets (and its sink's rows) do not come from. Deploying the parent, or the
    child, recreates the child from earliest; a child created after its parent's table is left alone."""
    live = created(with_ddl(graph, running(graph, C360), "src_c360_purchases", LATE), graph,
                   "int_c360_purchase_items", EARLY)
    for target in ("src_c360_purchases", "int_c360_purchase_items"):
        plan = build_plan(graph, [target], live)
        assert actions(plan)["int_c360_purchase_items"] == Action.RECREATE, render_plan(plan)
        assert actions(plan)["fct_c360_item_sales"] == Action.RECREATE
        assert "recreated under" in plan.step_for("int_c360_purchase_items").reason
    sound = created(with_ddl(graph, running(graph, C360), "src_c360_purchases", EARLY), graph,
                    "int_c360_purchase_items", LATE)
    assert build_plan(graph, ["src_c360_purchases"], sound).changes == []
    assert build_plan(graph, ["int_c360_purchase_items"], sound).changes == []


def test_issue_31_a_promoted_version_left_failed_is_repaired_as_that_version(graph):
    """After a promotion only version 2 of int_c360_purchase_items exists, and its statement FAILED (a killed
    redeploy of its parent): it still serves, so deploying the parent redeploys version 2, not a version 1."""
    live = running(graph, C360)
    name = statement_name("dev", "c360", "dml", "int_c360_purchase_items")
    failed = live.statements.pop(name).model_copy(update={
        "name": name + "-v2", "version": 2, "phase": "FAILED"})
    live.statements[failed.name] = failed
    assert live.serving_versions()["int_c360_purchase_items"] == 2
    plan = build_plan(graph, ["src_c360_purchases"], live, PlanOptions(versions=live.serving_versions()))
    step = plan.step_for("int_c360_purchase_items")
    assert step.action == Action.DEPLOY and step.physical_table == "int_c360_purchase_items_v2", render_plan(plan)


def test_a_stopped_excluded_ancestor_is_left_stopped(graph):
    """bench_model --seed 3300, round 1: a deploy excluding the sources (an asset's `exclude`) resumed a stopped
    source it excludes. An excluded table is never acted on: left stopped, the plan says so."""
    tables = ["src_c360_purchases", "int_c360_purchase_items"]
    live = running(graph, tables, phases={"src_c360_purchases": "STOPPED"})
    plan = build_plan(graph, ["fct_c360_item_sales"], live, PlanOptions(exclude=["src_c360_purchases"]))
    assert actions(plan)["src_c360_purchases"] == Action.SKIP, render_plan(plan)
    assert "excluded" in plan.step_for("src_c360_purchases").reason
    assert actions(build_plan(graph, ["fct_c360_item_sales"], live))["src_c360_purchases"] == Action.RESUME

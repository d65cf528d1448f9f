"""Reprocess history into a shadow version, then promote or roll back (issue 31, build 1).

On the sample: `reprocess int_c360_purchase_items --from 2026-01-02` builds int_c360_purchase_items_v2
(its source read from that time: the purchases' own event times, kept by the stateless source) and a
new version of its deployed descendant fct_c360_item_sales; nothing serving changes; the new versions'
checks pass and their rows equal a plain-Python evaluation of the seeds from that time; promote makes
them serve, and the same on fct_order (a join of stateful intermediates, whose records carry the time
they were written, so all of it is read again) rolled back leaves version 1 serving, from the API and
as the `reprocess_flink_tables` Dagster job. No row lost or duplicated on either path.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shift_left_dagster.checks import ChecksSettings, LocalSinkReader, find_dml_statements, run_checks
from shift_left_dagster.checks.candidates import verify_candidates
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.maintenance import REPROCESS_JOB, maintenance_jobs
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.promotion import promotion_jobs
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.plan import PlanError
from shift_left_dagster.deploy.reprocess import history_not_reprocessed
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.reader import LocalData
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.e2e.test_operate_cli import Cli
from tests.integration import expected_p1
from tests.integration.support import PROJECT, client_for, quiesce, seed_rows, select, wired

pytestmark = pytest.mark.service

FROM = datetime(2026, 1, 2, tzinfo=UTC)
ITEMS, SALES = "int_c360_purchase_items", "fct_c360_item_sales"


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("reprocess-service"), spark_factory=lambda: spark) as running:
        yield running


def items_from(start: datetime) -> list[tuple]:
    """int_c360_purchase_items over raw purchases at or after `start`, in plain Python."""
    rows = []
    for p in seed_rows("raw_purchases"):
        when = p["event_ts"].replace(tzinfo=UTC) if p["event_ts"].tzinfo is None else p["event_ts"]
        if when < start or p["purchase_id"] is None or p["amount"] is None or p["amount"] <= 0 or not p["items"]:
            continue
        rows += [(p["purchase_id"], item.strip().upper(), (p["channel"] or "web").upper()) for item in p["items"]]
    return sorted(rows, key=repr)


def serving_dml(client) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {s.name: s.metadata.uid for s in client.list_statements() if s.phase == "RUNNING" and "-dml-" in s.name}


def checks_of(service, spark, graph: ProjectGraph, physical: dict[str, str]) -> dict[tuple[str, str], bool]:  # type: ignore[no-untyped-def]
    """The checks of tables (table -> the version looked at) on a service (url, data_dir), by outcome."""
    client = client_for(service.url)
    tables = [graph.tables[t] for t in physical]
    statements = find_dml_statements(client, tables, "local", physical)
    outcomes = run_checks(tables, LocalSinkReader(LocalData(service.data_dir, spark)), statements,
                          ChecksSettings(catch_up_seconds=30), physical=physical)
    return {(o.table, o.check): o.passed for o in outcomes}


def test_reprocess_into_new_versions_then_promote_or_roll_back(service, spark):  # type: ignore[no-untyped-def]
    client = client_for(service.url)
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
    deployer = Deployer(client=client, graph=graph, config=local_defaults(service.url), seeds_dir=PROJECT / "seeds")
    deployer.deploy([SALES, "fct_order"]).wait()
    quiesce(service.url)
    before = serving_dml(client)
    assert select(client, f"SELECT purchase_id, sku, channel FROM {ITEMS}") == items_from(datetime.min.replace(
        tzinfo=UTC))

    # A table never deployed has no history to reprocess: refused before anything runs.
    with pytest.raises(PlanError, match="fct_c360_purchase is not deployed"):
        deployer.reprocess(["fct_c360_purchase"], FROM)

    reprocess = deployer.reprocess([ITEMS], FROM)
    assert [(s.table, s.physical_table, s.action.value) for s in reprocess.plan.changes] == [
        (ITEMS, f"{ITEMS}_v2", "deploy"), (SALES, f"{SALES}_v2", "deploy")]
    reprocess.wait()
    quiesce(service.url)
    assert {n: u for n, u in serving_dml(client).items() if n in before} == before  # serving untouched
    expected = items_from(FROM)
    assert expected and len(expected) < len(items_from(datetime.min.replace(tzinfo=UTC)))
    assert select(client, f"SELECT purchase_id, sku, channel FROM {ITEMS}_v2") == expected
    verdicts = checks_of(service, spark, graph, {ITEMS: f"{ITEMS}_v2", SALES: f"{SALES}_v2"})
    assert verdicts and all(verdicts.values()), verdicts
    sales = {sku: sum(1 for r in expected if r[1] == sku) for sku in {r[1] for r in expected}}
    got = select(client, f"SELECT sku, units_sold FROM {SALES}_v2")
    assert {sku: int(units) for sku, units in got} == sales and len(got) == len(sales)  # no key twice

    # promote's verification: the new versions hold what the records from 2026-01-02 on produce, keys included
    # (a correct reprocess from T is not refused for the history it left out)
    report = verify_candidates(client, graph, "local", LocalSinkReader(LocalData(service.data_dir, spark)),
                               ChecksSettings(catch_up_seconds=30))
    assert report.promotable, (report.problems, report.key_differences)
    assert set(report.key_differences[SALES]) >= {"only_old", "missing", "invented"}, report.key_differences
    Deployer(client=client, graph=graph, config=local_defaults(service.url)).promote().wait()
    quiesce(service.url)
    assert select(client, f"SELECT purchase_id, sku, channel FROM {ITEMS}_v2") == expected
    running = serving_dml(client)
    assert f"local-c360-dml-{ITEMS.replace('_', '-')}-v2" in running
    assert f"local-c360-dml-{ITEMS.replace('_', '-')}" not in running

    # fct_order: what v2 will not hold is said before anything runs; v2 is built, then rolled back.
    again = Deployer(client=client, graph=graph, config=local_defaults(service.url)).reprocess(["fct_order"], FROM)
    assert history_not_reprocessed(again.plan) == [
        "fct_order_v2 will not hold fct_order's history before 2026-01-02 00:00 (the serving version keeps it "
        "until promotion)"]
    again.wait()
    quiesce(service.url)
    fct = wired(expected_p1.p1(*(seed_rows(t) for t in ("raw_orders", "raw_customers", "raw_payments")))["fct_order"])
    assert select(client, "SELECT * FROM fct_order_v2") == fct
    Deployer(client=client, graph=graph, config=local_defaults(service.url)).rollback().wait()
    assert "fct_order_v2" not in {t.topic_name for t in client.list_topics()}
    assert select(client, "SELECT * FROM fct_order") == fct
    assert "local-p1-dml-fct-order" in serving_dml(client)

    # The same as a Dagster job: refused in one line without consent, then run; rolled back again.
    job = next(j for j in maintenance_jobs(FlinkProject(PROJECT / "pipelines")) if j.name == REPROCESS_JOB)
    resources = {"confluent": ConfluentFlinkResource(mode="local", local_url=service.url)}
    config = {"tables": ["fct_order"], "start": "2026-01-02"}
    refused = job.execute_in_process(run_config={"ops": {"reprocess_tables": {"config": config}}},
                                     resources=resources, raise_on_error=False)
    assert not refused.success
    failure = next(e for e in refused.all_events if e.event_type_value == "STEP_FAILURE")
    assert "nothing ran: set allow_partial_history" in str(failure.event_specific_data)
    assert "fct_order_v2" not in {t.topic_name for t in client.list_topics()}
    ran = job.execute_in_process(run_config={"ops": {"reprocess_tables": {"config": {
        **config, "allow_partial_history": True}}}}, resources=resources)
    assert ran.success and "fct_order_v2" in {t.topic_name for t in client.list_topics()}
    Deployer(client=client, graph=graph, config=local_defaults(service.url)).rollback().wait()
    assert "local-p1-dml-fct-order" in serving_dml(client)


def test_promote_on_confluent_cloud_verifies_from_landed_files_or_says_why_not(tmp_path: Path) -> None:
    """A Flink API key configured and the target not a local service (Confluent Cloud): `promote` can read the
    sinks only from the files teams land topics in, and says so in one line naming --sink-path (issue 31)."""
    shutil.copytree(PROJECT, tmp_path / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    cli = Cli(tmp_path / "project", "http://127.0.0.1:9")  # nothing answers there
    refused = cli("promote", "fct_order")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.strip().splitlines() == [
        "error: promote's verification (--no-verify skips it) reads the tables' sinks: the configured target "
        "http://127.0.0.1:9 is not a local service (a Flink API key is set: Confluent Cloud), whose sinks are read "
        "from the files teams land topics in: pass --sink-path (a path template with {table})"]


@pytest.fixture
def served(spark, tmp_path: Path) -> Iterator[tuple[Cli, InProcessService]]:  # type: ignore[no-untyped-def]
    """The CLI on a copy of the sample, and its own service."""
    shutil.copytree(PROJECT, tmp_path / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    with InProcessService(tmp_path / "service", spark_factory=lambda: spark) as running:
        yield Cli(tmp_path / "project", running.url), running


def fct_order_dml(client) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {n: p for n, p in ((s.name, s.phase) for s in client.list_statements()) if n.startswith(
        "local-p1-dml-fct-order")}


def test_reprocess_fct_order_through_the_cli_and_dagster_then_promote_or_roll_back(served, spark):  # type: ignore[no-untyped-def]
    """The issue's must-show on the sample, end to end: `reprocess fct_order --from 2026-01-02` refused without
    consent (saying what v2 will not hold), then run: fct_order_v2 equals the plain-Python expectation from the
    seeds, its checks pass, `promote` makes it serve; a reprocess into v3 rolled back leaves v2
    serving. The same through the Dagster jobs (reprocess, promote with verification, rollback). No row lost or
    duplicated on any path."""
    cli, service = served
    cli.deploy("fct_order")
    client, graph = cli.client, ProjectGraph(build_inventory(cli.root / "pipelines", use_cache=False))
    expected = wired(expected_p1.p1(*(seed_rows(t) for t in ("raw_orders", "raw_customers", "raw_payments")))[
        "fct_order"])
    assert select(client, "SELECT * FROM fct_order") == expected

    refused = cli("reprocess", "fct_order", "--from", "2026-01-02")
    assert refused.exit_code == 2, refused.output
    assert "fct_order_v2 will not hold fct_order's history before 2026-01-02 00:00" in refused.output
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: nothing ran: pass --allow-partial-history to accept the history above")
    assert fct_order_dml(client) == {"local-p1-dml-fct-order": "RUNNING"}

    def reprocessed(version: int) -> None:
        done = cli("reprocess", "fct_order", "--from", "2026-01-02", "--allow-partial-history")
        assert done.exit_code == 0, done.output
        quiesce(cli.url)
        physical = f"fct_order_v{version}"
        assert select(client, f"SELECT * FROM {physical}") == expected  # no row lost, none twice
        verdicts = checks_of(service, spark, graph, {"fct_order": physical})
        assert verdicts and all(verdicts.values()), verdicts

    reprocessed(2)
    assert fct_order_dml(client) == {"local-p1-dml-fct-order": "RUNNING", "local-p1-dml-fct-order-v2": "RUNNING"}
    promoted = cli("promote", "fct_order")  # verified: its configured target (a Flink API key set) is a local service
    assert promoted.exit_code == 0, promoted.output
    assert fct_order_dml(client) == {"local-p1-dml-fct-order-v2": "RUNNING"}  # consumers read v2 now

    reprocessed(3)
    rolled_back = cli("rollback", "fct_order")
    assert rolled_back.exit_code == 0, rolled_back.output
    assert fct_order_dml(client) == {"local-p1-dml-fct-order-v2": "RUNNING"}
    assert "fct_order_v3" not in {t.topic_name for t in client.list_topics()}
    quiesce(cli.url)
    assert select(client, "SELECT * FROM fct_order_v2") == expected

    # The same as Dagster jobs: reprocess into v3, promote (verified); reprocess into v4, roll back.
    project = FlinkProject(cli.root / "pipelines")
    jobs = {j.name: j for j in [*maintenance_jobs(project), *promotion_jobs(project)]}
    resources = flink_resources(ConfluentFlinkResource(mode="local", local_url=cli.url))
    config = {"ops": {"reprocess_tables": {"config": {"tables": ["fct_order"], "start": "2026-01-02",
                                                      "allow_partial_history": True}}}}
    assert jobs[REPROCESS_JOB].execute_in_process(run_config=config, resources=resources).success
    quiesce(cli.url)
    assert select(client, "SELECT * FROM fct_order_v3") == expected
    assert jobs["promote_flink_versions"].execute_in_process(resources=resources).success
    assert fct_order_dml(client) == {"local-p1-dml-fct-order-v3": "RUNNING"}
    assert jobs[REPROCESS_JOB].execute_in_process(run_config=config, resources=resources).success
    assert "local-p1-dml-fct-order-v4" in fct_order_dml(client)
    assert jobs["rollback_flink_versions"].execute_in_process(resources=resources).success
    assert fct_order_dml(client) == {"local-p1-dml-fct-order-v3": "RUNNING"}
    quiesce(cli.url)
    assert select(client, "SELECT * FROM fct_order_v3") == expected

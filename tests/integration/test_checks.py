"""Checks on the p1 pipeline deployed to a local service of this module's own, with real Spark.

A clean pipeline passes every check; each test then corrupts a sink on
purpose by writing records into its log through the storage layer (as a
misbehaving producer would), sees exactly the right check fail with the
right counts, and writes the compensating records back so the next test
starts from a clean pipeline again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from shift_left_dagster.checks import (
    CheckName,
    CheckOutcome,
    ChecksSettings,
    FilesSinkReader,
    LocalSinkReader,
    SinkConfig,
    find_dml_statements,
    run_checks,
)
from shift_left_dagster.checks.models import Severity
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.deploy.backfill import window_options
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.rewrite import with_source_options
from shift_left_dagster.deploy.seed_topics import seed_raw_topics
from shift_left_dagster.local.catalog import DELETE, INSERT, OP, ROWTIME, TableDef
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.reader import LocalData
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for, quiesce

pytestmark = [pytest.mark.spark, pytest.mark.service]

P1 = ["src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"]
ENV = "local"


@dataclass
class Deployed:
    service: InProcessService
    client: ConfluentClient
    graph: ProjectGraph
    spark: SparkSession

    def outcomes(self, *tables: str, reader: Any = None,
                 only: CheckName | None = None) -> dict[tuple[str, str], CheckOutcome]:
        chosen = [self.graph.tables[t] for t in tables]
        statements = find_dml_statements(self.client, chosen, ENV)
        own = reader is None
        reader = reader or LocalSinkReader(LocalData(self.service.data_dir, self.spark))
        settings = ChecksSettings(sample_rows=3, enabled=[only] if only else list(CheckName))
        try:
            found = run_checks(chosen, reader, statements, settings)
        finally:
            if own:
                reader.close()
        return {(o.table, o.check): o for o in found}

    def write(self, table: str, rows: DataFrame, op: int = INSERT, partitions: int | None = None) -> None:
        """Append records to a table's log as one batch, as a producer outside any statement would."""
        engine = self.service.engine
        definition: TableDef = engine.store.table_by_uid(self._uid(table))  # type: ignore[assignment]
        placed = definition.model_copy(update={"partitions": partitions}) if partitions else definition
        records = rows.withColumn(ROWTIME, F.current_timestamp()).withColumn(OP, F.lit(op).cast("tinyint"))
        batch = engine.logs.write(placed, records, producer=None)
        assert batch is not None
        engine.store.append_batches([batch])

    def current(self, table: str) -> DataFrame:
        data = LocalData(self.service.data_dir, self.spark)
        return data.current_rows(data.table(table))

    def _uid(self, table: str) -> str:
        return next(t.uid for t in self.service.engine.store.tables() if t.name == table)


@pytest.fixture(scope="module")
def p1(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """p1 deployed as the Dagster op deploys it (seeds, plan, executor), caught up."""
    with InProcessService(tmp_path_factory.mktemp("checks-service"), spark_factory=lambda: spark) as service:
        client = client_for(service.url)
        client.settings.poll.initial = client.settings.poll.step = 0.05  # wait for the service, not the polling
        graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
        seed_raw_topics(client, PROJECT / "seeds", only={"raw_orders", "raw_customers", "raw_payments"})
        Deployer(client, graph, local_defaults(service.url)).deploy(["fct_order"]).wait()
        assert quiesce(service.url)["quiet"]
        yield Deployed(service, client, graph, spark)


def failed(outcomes: dict[tuple[str, str], CheckOutcome]) -> list[tuple[str, str]]:
    return sorted(key for key, outcome in outcomes.items() if not outcome.passed)


def counts(outcome: CheckOutcome) -> dict[str, int]:
    return {k: outcome.metadata[k] for k in ("missing", "unexpected", "different")}


def test_clean_pipeline_passes_every_check(p1: Deployed) -> None:
    outcomes = p1.outcomes(*P1)
    assert failed(outcomes) == [], {k: o.message for k, o in outcomes.items() if not o.passed}
    assert sorted(c for t, c in outcomes if t == "fct_order") == sorted(c.value for c in CheckName)
    assert ("src_table_3", "unique_primary_key") not in outcomes  # no key, no uniqueness check
    fct = outcomes[("fct_order", "reconciled")]
    assert counts(fct) == {"missing": 0, "unexpected": 0, "different": 0}
    assert fct.metadata["expected_rows"] == fct.metadata["actual_rows"] == fct.metadata["compared_rows"] > 0
    assert f"{fct.metadata['compared_rows']} rows compared" in fct.message
    assert outcomes[("src_table_3", "reconciled")].metadata["actual_rows"] > 0  # compared as multisets
    healthy = outcomes[("fct_order", "statement_healthy")].metadata
    assert healthy["phase"] == "RUNNING" and healthy["lag_records"] == 0
    assert outcomes[("fct_order", "unique_primary_key")].blocking
    assert not outcomes[("fct_order", "schema_matches_ddl")].blocking


def frozen(frame: DataFrame) -> DataFrame:
    """A DataFrame of the rows as they are now (a view of a log would follow later writes)."""
    return frame.sparkSession.createDataFrame(frame.collect(), frame.schema)


def order(p1: Deployed, order_id: str) -> DataFrame:
    return frozen(p1.current("fct_order").where(F.col("order_id") == order_id))


def test_wrong_value_fails_reconciled_only(p1: Deployed) -> None:
    original = order(p1, "ord-001")
    p1.write("fct_order", original.withColumn("order_status", F.lit("TAMPERED")))
    outcomes = p1.outcomes("fct_order")
    assert failed(outcomes) == [("fct_order", "reconciled")]
    reconciled = outcomes[("fct_order", "reconciled")]
    assert counts(reconciled) == {"missing": 0, "unexpected": 0, "different": 1}
    assert reconciled.metadata["different_columns"] == {"order_status": 1}
    sample = reconciled.metadata["sample_different"][0]
    assert sample["actual"]["order_status"] == "TAMPERED"
    assert sample["expected"]["order_id"] == "ord-001" and sample["expected"]["order_status"] != "TAMPERED"
    p1.write("fct_order", original)
    assert failed(p1.outcomes("fct_order", only=CheckName.RECONCILED)) == []


def test_missing_row_fails_reconciled_only(p1: Deployed) -> None:
    original = order(p1, "ord-002")
    p1.write("fct_order", original, op=DELETE)
    outcomes = p1.outcomes("fct_order")
    assert failed(outcomes) == [("fct_order", "reconciled")]
    reconciled = outcomes[("fct_order", "reconciled")]
    assert counts(reconciled) == {"missing": 1, "unexpected": 0, "different": 0}
    assert [s["order_id"] for s in reconciled.metadata["sample_missing"]] == ["ord-002"]
    p1.write("fct_order", original)
    assert failed(p1.outcomes("fct_order", only=CheckName.RECONCILED)) == []


def test_extra_row_fails_reconciled_only(p1: Deployed) -> None:
    extra = order(p1, "ord-001").withColumn("order_id", F.lit("ord-999"))
    p1.write("fct_order", extra)
    outcomes = p1.outcomes("fct_order")
    assert failed(outcomes) == [("fct_order", "reconciled")]
    reconciled = outcomes[("fct_order", "reconciled")]
    assert counts(reconciled) == {"missing": 0, "unexpected": 1, "different": 0}
    assert [s["order_id"] for s in reconciled.metadata["sample_unexpected"]] == ["ord-999"]
    p1.write("fct_order", extra, op=DELETE)
    assert failed(p1.outcomes("fct_order", only=CheckName.RECONCILED)) == []


def test_key_live_in_two_partitions_fails_unique_primary_key_only(p1: Deployed) -> None:
    # A producer hashing keys into 2 partitions of this 1-bucket upsert table: the same row
    # lands in partition 1 while partition 0 still holds it live.
    row = frozen(p1.current("fct_order").where(F.pmod(F.hash("order_id"), F.lit(2)) == 1).limit(1))
    key = row.first()["order_id"]
    p1.write("fct_order", row, partitions=2)
    outcomes = p1.outcomes("fct_order")
    assert failed(outcomes) == [("fct_order", "unique_primary_key")]
    unique = outcomes[("fct_order", "unique_primary_key")]
    assert unique.metadata["duplicate_keys"] == 1 and unique.metadata["duplicate_rows"] == 2
    assert unique.metadata["sample_keys"] == [{"order_id": key}]
    p1.write("fct_order", row, op=DELETE, partitions=2)  # partition 1 forgets the key...
    p1.write("fct_order", row)  # ...and partition 0's record is the newest again
    assert failed(p1.outcomes("fct_order", only=CheckName.UNIQUE_PRIMARY_KEY)) == []


def test_stopped_statement_fails_statement_healthy_and_reconciles_as_of_its_offsets(p1: Deployed) -> None:
    name = "local-p1-dml-fct-order"
    p1.client.stop_statement(name)
    payments = frozen(p1.current("int_table_2").where(F.col("order_id") == "ord-001"))
    p1.write("int_table_2", payments.withColumn("payment_count", F.col("payment_count") + 100))
    outcomes = p1.outcomes("fct_order")
    assert failed(outcomes) == [("fct_order", "statement_healthy")]
    healthy = outcomes[("fct_order", "statement_healthy")].metadata
    assert healthy["phase"] == "STOPPED" and healthy["lag_records"] == 1
    assert healthy["lag_by_source"] == {"int_table_1": 0, "int_table_2": 1}
    # the new int_table_2 record is not read yet: fct_order is still right as of what it read
    assert counts(outcomes[("fct_order", "reconciled")]) == {"missing": 0, "unexpected": 0, "different": 0}
    p1.write("int_table_2", payments)
    p1.client.resume_statement(name)
    p1.client.wait_for_phase(name, {"RUNNING"}, timeout=60)
    assert quiesce(p1.service.url)["quiet"]
    assert failed(p1.outcomes("fct_order", "int_table_2")) == []


def land(p1: Deployed, root: Path, *tables: str, change: Any = None) -> SinkConfig:
    """Write tables' current rows where a connector would land them (parquet, one folder per table)."""
    for table in tables:
        rows = p1.current(table)
        (change(rows) if change and table == tables[-1] else rows).write.mode("overwrite").parquet(str(root / table))
    return SinkConfig(kind="files", path_template=str(root) + "/{table}", format="parquet")


def test_files_reader_reconciles_landed_tables(p1: Deployed, tmp_path: Path) -> None:
    config = land(p1, tmp_path, "src_table_3", "int_table_2")
    outcomes = p1.outcomes("int_table_2", reader=FilesSinkReader(p1.spark, config))
    assert failed(outcomes) == []
    assert counts(outcomes[("int_table_2", "reconciled")]) == {"missing": 0, "unexpected": 0, "different": 0}
    assert outcomes[("int_table_2", "statement_healthy")].metadata["lag_by_source"] == "unknown"


def test_files_reader_does_not_judge_a_version_reading_from_a_start_time(p1: Deployed, tmp_path: Path) -> None:
    """A reprocessed version reads its sources from T; landed files keep no record times, so the reader can not
    compute what the SQL makes of the records from T on: `reconciled` says so as a warning, never a false red
    against the whole history (issue 31) and never a pass."""
    config = land(p1, tmp_path, "src_table_3", "int_table_2")
    chosen = [p1.graph.tables["int_table_2"]]
    statement = find_dml_statements(p1.client, chosen, ENV)["int_table_2"]
    start = datetime(2026, 1, 2, tzinfo=UTC)
    sql = with_source_options(statement.spec.statement or "", {"src_table_3": window_options(start, None)})
    reprocessed = statement.model_copy(update={"spec": statement.spec.model_copy(update={"statement": sql})})
    found = run_checks(chosen, FilesSinkReader(p1.spark, config), {"int_table_2": reprocessed},
                       ChecksSettings(sample_rows=3, enabled=[CheckName.RECONCILED]))
    assert [(o.check, o.passed, o.severity) for o in found] == [("reconciled", False, Severity.WARN)]
    assert "not evaluated" in found[0].message and "2026-01-02 00:00:00" in found[0].message
    # the same statement reading from earliest is judged, and passes
    judged = run_checks(chosen, FilesSinkReader(p1.spark, config), {"int_table_2": statement},
                        ChecksSettings(sample_rows=3, enabled=[CheckName.RECONCILED]))
    assert [(o.check, o.passed) for o in judged] == [("reconciled", True)]


def test_dropped_and_retyped_columns_fail_schema_matches_ddl_only(p1: Deployed, tmp_path: Path) -> None:
    def corrupt(rows: DataFrame) -> DataFrame:
        return rows.drop("payment_state").withColumn("order_amount", F.col("order_amount").cast("double"))

    config = land(p1, tmp_path, "int_table_1", "int_table_2", "fct_order", change=corrupt)
    outcomes = p1.outcomes("fct_order", reader=FilesSinkReader(p1.spark, config))
    assert failed(outcomes) == [("fct_order", "schema_matches_ddl")]
    schema = outcomes[("fct_order", "schema_matches_ddl")]
    assert schema.metadata["missing_columns"] == ["payment_state"]
    assert list(schema.metadata["retyped_columns"]) == ["order_amount"]
    assert "payment_state" in schema.message and "order_amount" in schema.message
    assert outcomes[("fct_order", "reconciled")].metadata["uncompared_columns"] == ["payment_state"]


def test_cli_check_prints_a_report_and_exits_1_when_a_check_fails(p1: Deployed, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from shift_left_dagster.cli import app

    common = ["--pipelines", str(PROJECT / "pipelines"), "--url", p1.service.url]  # it tells its data dir
    clean = CliRunner().invoke(app, ["check", "fct_order", *common])
    assert clean.exit_code == 0, clean.output
    lines = clean.output.splitlines()
    assert lines[0].split() == ["TABLE", "CHECK", "RESULT", "DETAIL"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["fct_order", check, "pass"] for check in
        ("unique_primary_key", "reconciled", "schema_matches_ddl", "statement_healthy",
         "outstanding_is_order_minus_paid", "paid_orders_owe_nothing")]  # the last two: its checks/ folder

    land(p1, tmp_path, "fct_order", change=lambda rows: rows.drop("payment_state"))
    broken = CliRunner().invoke(app, ["check", "fct_order", *common, "--sink-path", str(tmp_path) + "/{table}"])
    assert broken.exit_code == 1, broken.output
    schema = next(line for line in broken.output.splitlines() if "schema_matches_ddl" in line)
    assert "FAIL" in schema and "payment_state" in schema


def test_bench_code_path_on_a_tiny_sink(tmp_path: Path) -> None:
    """bench/bench_checks.py end to end at a tiny size (the 10 M-row run is by hand)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_checks", PROJECT.parent / "bench" / "bench_checks.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = bench.bench(tmp_path, rows=2_000, repeat=1, report=lambda _line: None)
    assert figures.sink_rows == 1_900 and figures.ours_seconds > 0 and figures.bare_seconds > 0


def test_files_reader_expects_only_the_windows_flink_has_fired(p1: Deployed, tmp_path: Path) -> None:
    """A window aggregate's newest window is still open on a running statement (the watermark has not
    passed its end): landed files carry no watermark, so the reader must not expect it."""
    seed_raw_topics(p1.client, PROJECT / "seeds", only={"raw_app_events"})
    Deployer(p1.client, p1.graph, local_defaults(p1.service.url)).deploy(["fct_c360_hourly_activity"]).wait()
    assert quiesce(p1.service.url)["quiet"]
    events = p1.current("src_c360_app_events").withColumn(ROWTIME, F.col("event_ts"))  # landed with its time
    hours = events.select(F.date_trunc("hour", ROWTIME)).distinct().count()
    fired = p1.current("fct_c360_hourly_activity")
    assert 0 < fired.select("window_start").distinct().count() < hours  # the newest hour is still open
    events.write.parquet(str(tmp_path / "src_c360_app_events"))
    config = land(p1, tmp_path, "fct_c360_hourly_activity")
    reader = FilesSinkReader(p1.spark, config)
    outcomes = p1.outcomes("fct_c360_hourly_activity", reader=reader, only=CheckName.RECONCILED)
    assert failed(outcomes) == []
    assert outcomes[("fct_c360_hourly_activity", "reconciled")].metadata["compared_rows"] == fired.count()

    newest = fired.agg(F.max("window_start")).collect()[0][0]
    land(p1, tmp_path, "fct_c360_hourly_activity", change=lambda rows: rows.withColumn(  # the newest fired hour wrong
        "event_count", F.when(F.col("window_start") == F.lit(newest), F.col("event_count") + 1)
        .otherwise(F.col("event_count"))))
    outcomes = p1.outcomes("fct_c360_hourly_activity", reader=reader, only=CheckName.RECONCILED)
    assert failed(outcomes) == [("fct_c360_hourly_activity", "reconciled")]

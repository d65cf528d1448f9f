"""Dagster's instance on PostgreSQL: the README's production dagster.yaml (dagster-postgres storage,
pools, run monitoring) against a throw-away server, then the deployment of *fct_order recorded there.

Skipped only when the PostgreSQL server binaries are absent and SL_REQUIRE_POSTGRES is unset
(CI installs them and sets it: then a missing server fails).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, AssetSelection, DagsterInstance, DagsterRunStatus, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.local.process import InProcessService
from tests.e2e.postgres import PostgresServer, find_bin_dir, throwaway_postgres
from tests.integration.support import PROJECT

pytestmark = pytest.mark.service

README = PROJECT.parent / "README.md"
P1 = ["fct_order", "int_table_1", "int_table_2", "src_table_1", "src_table_2", "src_table_3"]
RAW = ("raw_orders", "raw_customers", "raw_payments")


def production_dagster_yaml() -> str:
    """The dagster.yaml of the README's Production section (the block with `postgres_db:`)."""
    text = README.read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "postgres_db:" in b]
    assert len(blocks) == 1, "README.md must show exactly one dagster.yaml with postgres_db (section Production)"
    return blocks[0]


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this module's own, with an empty `dagster` database."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        if os.environ.get("SL_REQUIRE_POSTGRES"):
            pytest.fail("SL_REQUIRE_POSTGRES is set but initdb/pg_ctl are not installed (apt-get install postgresql)")
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed")
    with throwaway_postgres("dagster", bin_dir) as server:
        yield server


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    """A service of this module's own (its tables must not meet other tests'), on the shared Spark."""
    with InProcessService(tmp_path_factory.mktemp("pg-service"), spark_factory=lambda: spark) as running:
        yield running


@pytest.fixture
def dagster_home(postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DAGSTER_HOME holding the README's dagster.yaml, its DAGSTER_PG_* variables naming the server."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(production_dagster_yaml())
    for name, value in {"DAGSTER_HOME": str(home), "DAGSTER_PG_USERNAME": postgres.user,
                        "DAGSTER_PG_PASSWORD": "unused-trust-auth", "DAGSTER_PG_HOST": postgres.host,
                        "DAGSTER_PG_DB": postgres.database, "DAGSTER_PG_PORT": str(postgres.port)}.items():
        monkeypatch.setenv(name, value)
    return home


def test_fct_order_deployment_is_recorded_in_postgres(service: InProcessService, postgres: PostgresServer,
                                                      dagster_home: Path) -> None:
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage

    with DagsterInstance.get() as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert instance.run_monitoring_enabled and instance.run_monitoring_max_runtime_seconds == 3600
        result = materialize(
            build_flink_assets(FlinkProject(PROJECT / "pipelines")),
            selection=AssetSelection.assets("fct_order").upstream() - AssetSelection.assets(
                *[AssetKey(t) for t in RAW]),
            resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url,
                                                             local_data_dir=str(service.data_dir))),
            instance=instance)
        assert result.success
        run_id = result.run_id

    # A new instance from the same DAGSTER_HOME (as `dg dev` would open it) reads it all back from Postgres.
    with DagsterInstance.get() as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == DagsterRunStatus.SUCCESS
        for table in P1:
            event = instance.get_latest_materialization_event(AssetKey(table))
            assert event is not None and event.run_id == run_id, table
        checks = instance.event_log_storage.get_asset_check_execution_history(
            AssetCheckKey(AssetKey("int_table_2"), "reconciled"), limit=1)
        assert checks and checks[0].run_id == run_id and checks[0].status.value == "SUCCEEDED"

    # And the rows are there in the database itself.
    assert postgres.psql(f"SELECT status FROM runs WHERE run_id = '{run_id}'") == "SUCCESS"
    materialized = postgres.psql("SELECT DISTINCT asset_key FROM event_logs WHERE run_id = "
                                 f"'{run_id}' AND dagster_event_type = 'ASSET_MATERIALIZATION' ORDER BY 1")
    assert [line.strip('[]"') for line in materialized.splitlines()] == sorted(P1)
    assert int(postgres.psql(f"SELECT count(*) FROM asset_check_executions WHERE run_id = '{run_id}'")) > 0
    import psycopg2

    with psycopg2.connect(postgres.url) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM event_logs WHERE run_id = %s", (run_id,))
        assert cursor.fetchone()[0] > len(P1)
        cursor.execute("SELECT count(*) FROM asset_keys WHERE asset_key = ANY(%s)",
                       ([f'["{t}"]' for t in P1],))
        assert cursor.fetchone()[0] == len(P1)
    connection.close()

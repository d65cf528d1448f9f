"""The health sensor, tick by tick: a statement that FAILS after its deployment turns red within one interval
with its exception; one that falls behind turns statement_lag/statement_stalled red, then green once caught up."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from dagster import AssetCheckSeverity, AssetKey, DagsterInstance, build_sensor_context

from shift_left_dagster import ConfluentFlinkResource, FlinkProject, FlinkTranslator
from shift_left_dagster.defs.health import health_sensor
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("health-service"), spark_factory=lambda: spark) as running:
        yield running


def evaluate(sensor, url: str):  # type: ignore[no-untyped-def]
    with build_sensor_context(resources={"confluent": ConfluentFlinkResource(mode="local", local_url=url)}) as context:
        result = sensor.evaluate_tick(context)
    return {(e.asset_key, getattr(e, "check_name", None) or type(e).__name__): e for e in result.asset_events}


class Ticks:
    """Successive ticks of one sensor on a real instance, each given the cursor the previous one left."""

    def __init__(self, sensor, resource: ConfluentFlinkResource) -> None:  # type: ignore[no-untyped-def]
        self.sensor, self.resource, self.cursor = sensor, resource, None
        self.instance = DagsterInstance.ephemeral()

    def __call__(self, key: AssetKey) -> dict[str, object]:
        with build_sensor_context(instance=self.instance, cursor=self.cursor,
                                  resources={"confluent": self.resource}) as context:
            result = self.sensor.evaluate_tick(context)
        self.cursor = result.cursor
        return {getattr(e, "check_name", "observation"): e for e in result.asset_events if e.asset_key == key}


def test_a_statement_that_falls_behind_turns_lag_and_stalled_red_then_green(service, tmp_path: Path):  # type: ignore[no-untyped-def]
    config = yaml.safe_load((PROJECT / "config.yaml").read_text())
    config["health"] = {"max_pending_records": 2, "growing_observations": 3, "stalled_minutes": 0.05}  # 3 s
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    project = FlinkProject(PROJECT / "pipelines")
    client = client_for(service.url)
    Deployer(client=client, graph=project.graph, config=local_defaults(service.url),
             seeds_dir=PROJECT / "seeds").deploy(["src_table_3"]).wait()
    name, key = "local-p1-dml-src-table-3", AssetKey("src_table_3")
    tick = Ticks(health_sensor(project, FlinkTranslator()), ConfluentFlinkResource(
        mode="local", local_url=service.url, config_file=str(tmp_path / "config.yaml")))
    deadline = time.monotonic() + 60
    while not ((seen := tick(key)).get("statement_lag") and seen["statement_lag"].passed  # type: ignore[attr-defined]
               and seen["observation"].metadata["records_out"].value > 0):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, seen
        time.sleep(0.5)
    assert seen["statement_stalled"].passed  # type: ignore[attr-defined]
    caught_up = seen["observation"].metadata["records_out"].value  # type: ignore[attr-defined]

    client.stop_statement(name)  # stopped while input arrives: 4 payments it keeps (captured, with order)
    client.create_statement("more-payments", "INSERT INTO raw_payments VALUES "
                            + ", ".join(f"('pay-x{i}', 'ord-001', 'card', 'captured', 1.00, NULL, "
                                        f"TIMESTAMP '2026-01-06 10:0{i}:00')" for i in range(4)))
    client.wait_for_phase("more-payments", {"COMPLETED"}, 60)
    time.sleep(3.5)  # longer than stalled_minutes
    behind = tick(key)
    lag, stalled = behind["statement_lag"], behind["statement_stalled"]
    assert not lag.passed and lag.metadata["pending_records"].value == 4, lag  # type: ignore[attr-defined]
    assert lag.severity == AssetCheckSeverity.ERROR  # type: ignore[attr-defined]  # red in the UI
    assert "4 records pending" in lag.description  # type: ignore[attr-defined]
    assert not stalled.passed and "no record out" in stalled.description, stalled  # type: ignore[attr-defined]
    assert stalled.metadata["records_arrived"].value == 4  # type: ignore[attr-defined]

    client.resume_statement(name)
    deadline = time.monotonic() + 60
    while not ((seen := tick(key))["statement_lag"].passed  # type: ignore[attr-defined]
               and seen["statement_stalled"].passed):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, seen
        time.sleep(1)
    assert seen["observation"].metadata["records_out"].value == caught_up + 4  # type: ignore[attr-defined]
    assert seen["statement_lag"].metadata["pending_records"].value == 0  # type: ignore[attr-defined]


def test_a_statement_that_fails_later_turns_its_check_red(service):  # type: ignore[no-untyped-def]
    project = FlinkProject(PROJECT / "pipelines")
    client = client_for(service.url)
    Deployer(client=client, graph=project.graph, config=local_defaults(service.url),
             seeds_dir=PROJECT / "seeds").deploy(["src_table_3"]).wait()
    sensor = health_sensor(project, FlinkTranslator())
    key = AssetKey("src_table_3")
    deadline = time.monotonic() + 60  # the seeded raw_payments rows are read, then counted by the Metrics API
    while "records_out" not in (observed := evaluate(sensor, service.url))[(key, "AssetObservation")].metadata \
            or observed[(key, "AssetObservation")].metadata["records_out"].value == 0:
        assert time.monotonic() < deadline, observed[(key, "AssetObservation")].metadata
        time.sleep(0.5)
    healthy = observed[(key, "statement_healthy")]
    assert healthy.passed and healthy.check_name == "statement_healthy"
    counts = observed[(key, "AssetObservation")].metadata
    assert counts["records_in"].value > 0 and counts["pending_records"].value >= 0

    client.create_statement("drop-raw-payments", "DROP TABLE `raw_payments`")  # its source goes away
    client.wait_for_phase("drop-raw-payments", {"COMPLETED"}, 60)
    deadline = time.monotonic() + 60
    while client.get_statement("local-p1-dml-src-table-3").phase != "FAILED" and time.monotonic() < deadline:
        time.sleep(0.5)
    events = evaluate(sensor, service.url)
    failed = events[(key, "statement_healthy")]
    assert not failed.passed and "FAILED" in (failed.description or "")
    newest = client.statement_exceptions("local-p1-dml-src-table-3")[0].message  # the service's own text
    assert "raw_payments" in newest and newest in (failed.description or "")
    assert events[(key, "AssetObservation")].metadata["phase"].value == "FAILED"

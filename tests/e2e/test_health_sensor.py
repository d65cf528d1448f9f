"""A running statement that FAILS after its deployment is seen by the health sensor within one interval."""

import time
from collections.abc import Iterator

import pytest
from dagster import AssetKey, build_sensor_context

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
    return {(e.asset_key, type(e).__name__): e for e in result.asset_events}


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
    healthy = observed[(key, "AssetCheckEvaluation")]
    assert healthy.passed and healthy.check_name == "statement_healthy"
    counts = observed[(key, "AssetObservation")].metadata
    assert counts["records_in"].value > 0 and counts["pending_records"].value >= 0

    client.create_statement("drop-raw-payments", "DROP TABLE `raw_payments`")  # its source goes away
    client.wait_for_phase("drop-raw-payments", {"COMPLETED"}, 60)
    deadline = time.monotonic() + 60
    while client.get_statement("local-p1-dml-src-table-3").phase != "FAILED" and time.monotonic() < deadline:
        time.sleep(0.5)
    events = evaluate(sensor, service.url)
    failed = events[(key, "AssetCheckEvaluation")]
    assert not failed.passed and "FAILED" in (failed.description or "")
    assert events[(key, "AssetObservation")].metadata["phase"].value == "FAILED"

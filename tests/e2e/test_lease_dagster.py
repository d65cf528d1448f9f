"""The deployment lease in real Dagster runs (issue 25, case 3): a run that cannot get the lease fails
in one line naming the holder; a lease held by a run the instance says ended is taken over at once."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.maintenance import HOUSEKEEP_JOB, maintenance_jobs
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.deploy.identity import project_identity
from shift_left_dagster.deploy.lease import DeploymentLease
from shift_left_dagster.deploy.naming import lease_name
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("lease-runs"), spark_factory=lambda: spark) as running:
        yield running


def test_a_run_gives_up_in_one_line_and_a_finished_runs_lease_is_taken_over(service, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root, ignore=shutil.ignore_patterns(".shift_left_dagster"))
    assets = build_flink_assets(FlinkProject(root / "pipelines"))
    resources = flink_resources(ConfluentFlinkResource(mode="local", local_url=service.url, lease_wait_seconds=1))
    instance = DagsterInstance.ephemeral()
    client = client_for(service.url)
    name = lease_name("local", project_identity(local_defaults(service.url), root))
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # the holders' process
    process = f"{socket.gethostname()}:{alive.pid}"
    try:
        DeploymentLease(client, name, "dagster-run:of-another-instance", process=process).acquire()
        busy = materialize(assets, selection=[AssetKey("src_x")], resources=resources, instance=instance,
                           raise_on_error=False)
        assert not busy.success
        (failure,) = [e for e in busy.all_events if e.is_step_failure]
        description = failure.step_failure_data.user_failure_data.description
        assert description.startswith(f"another deployment is running: dagster-run:of-another-instance holds {name}")
        assert "\n" not in description
        DeploymentLease(client, name, "dagster-run:of-another-instance", process=process).break_()
        # the failed run still "holds" the lease, its process alive: only the instance can tell it ended
        DeploymentLease(client, name, f"dagster-run:{busy.run_id}", process=process).acquire()
        done = materialize(assets, selection=[AssetKey("src_x")], resources=resources, instance=instance)
        assert done.success
        assert not [s for s in client.list_statements() if s.name == name]
        # the maintenance jobs are runs too: the same one-line failure
        DeploymentLease(client, name, "dagster-run:of-another-instance", process=process).acquire()
        housekeep = next(j for j in maintenance_jobs(FlinkProject(root / "pipelines")) if j.name == HOUSEKEEP_JOB)
        refused = housekeep.execute_in_process(resources=resources, instance=instance, raise_on_error=False)
        (failure,) = [e for e in refused.all_events if e.is_step_failure]
        assert failure.step_failure_data.user_failure_data.description.startswith(
            "another deployment is running: dagster-run:of-another-instance holds")
    finally:
        alive.kill()
        alive.wait()

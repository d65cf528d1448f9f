"""Two deployments of overlapping selections at once (two threads: as two Dagster runs, or a run and
the CLI): the project's lease makes the second plan after the first ran, so each table is deployed
once and both end with a clear outcome."""

import gc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.plan import Action
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("concurrent-service"), spark_factory=lambda: spark) as running:
        yield running


def test_overlapping_deployments_deploy_each_table_once(service):  # type: ignore[no-untyped-def]
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))

    def deploy(target: str) -> dict[str, Action]:
        deployer = Deployer(client=client_for(service.url), graph=graph, config=local_defaults(service.url),
                            seeds_dir=PROJECT / "seeds", holder=f"test {target}")
        deployment = deployer.deploy([target])
        deployment.wait()
        return {s.table: s.action for s in deployment.plan.changes if s.table}

    with ThreadPoolExecutor(2) as pool:  # p2: y and z share the ancestors src_x, src_y, x, y
        first, second = pool.map(deploy, ["y", "z"])
    deployed = [t for plan in (first, second) for t, action in plan.items() if action == Action.DEPLOY]
    assert sorted(deployed) == sorted(set(deployed))  # no table deployed twice
    assert set(deployed) >= {"src_x", "src_y", "x", "y", "z"}
    assert not [a for plan in (first, second) for a in plan.values() if a == Action.RECREATE]
    client = client_for(service.url)
    phases = {s.name: s.phase for s in client.list_statements() if "-dml-" in s.name}
    assert all(phase == "RUNNING" for phase in phases.values()), phases
    assert not [s for s in client.list_statements() if "-lease-" in s.name]  # released by both


def test_a_plan_a_script_never_runs_frees_the_lease(service):  # type: ignore[no-untyped-def]
    """A script that plans to print it (or leaves a `with` block) does not keep the project locked
    for the hour a lease takes to go stale."""
    graph = ProjectGraph(build_inventory(PROJECT / "pipelines"))
    client = client_for(service.url)

    def deployer(holder: str) -> Deployer:
        return Deployer(client=client, graph=graph, config=local_defaults(service.url), seeds_dir=PROJECT / "seeds",
                        holder=holder, lease_wait_seconds=2)

    def leases() -> list[str]:
        return [s.name for s in client.list_statements() if "-lease-" in s.name]

    with deployer("script a").deploy(["src_x"]) as planned:
        assert planned.plan.targets == ["src_x"] and leases()
    assert not leases()
    printed = str(deployer("script b").deploy(["src_x"]))  # planned, printed, dropped
    assert "src_x" in printed, printed
    gc.collect()
    assert not leases()
    deployer("script c").deploy(["src_x"]).wait()  # another holder plans at once

"""The stuck-statement runbook as commands, against a local service over HTTP: `stop` keeps the offsets and
`resume` continues from them (every record once), `resume` refuses changed code, `statements --failing`
shows the root error."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from shift_left_dagster.cli import app
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import LOCAL_ORGANIZATION_ID, local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import PROJECT, client_for, quiesce, select

pytestmark = pytest.mark.service

STATEMENT = "local-p1-dml-src-table-3"
DML = "pipelines/sources/p1/src_table_3/sql-scripts/dml.src_table_3.sql"


class Cli:
    """The CLI in this process, on a copy of the sample project, pointed at the service by a config file
    (a Flink API key in the environment makes it a configured target, as for Confluent Cloud)."""

    def __init__(self, root: Path, url: str) -> None:
        self.root, self.url, self.client = root, url, client_for(url)
        config = {"kafka": {"cluster_id": "lkc-local", "cluster_type": "local", "rest_endpoint": url},
                  "registry": {"url": url},
                  "confluent_cloud": {"environment_id": "env-local", "organization_id": LOCAL_ORGANIZATION_ID,
                                      "region": "local", "provider": "local", "base_api": url, "telemetry_api": url},
                  "flink": {"flink_url": url, "compute_pool_id": "lfcp-local", "catalog_name": "env-local",
                            "database_name": "lkc-local"}}
        (root / "config.yaml").write_text(yaml.safe_dump(config))
        self.env = {"PIPELINES": str(root / "pipelines"), "CONFIG_FILE": str(root / "config.yaml"),
                    **{f"SL_{api}_API_{part}": "local" for api in ("FLINK", "CONFLUENT_CLOUD", "KAFKA", "REGISTRY")
                       for part in ("KEY", "SECRET")}}

    def __call__(self, *args: str) -> Result:
        return CliRunner().invoke(app, list(args), env=self.env)

    def deploy(self, table: str) -> None:
        graph = ProjectGraph(build_inventory(self.root / "pipelines", use_cache=False))
        Deployer(client=self.client, graph=graph, config=local_defaults(self.url),
                 seeds_dir=self.root / "seeds").deploy([table]).wait()
        quiesce(self.url)

    def payments(self) -> list[tuple]:
        return select(self.client, "SELECT payment_id FROM src_table_3")


@pytest.fixture(scope="module")
def cli(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("operate")
    shutil.copytree(PROJECT, base / "project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    with InProcessService(base / "service", spark_factory=lambda: spark) as service:
        yield Cli(base / "project", service.url)


def test_stop_keeps_the_offsets_and_resume_reads_each_record_once(cli: Cli) -> None:
    cli.deploy("src_table_3")
    before = cli.payments()
    assert before

    stopped = cli("stop", "src_table_3")
    assert stopped.exit_code == 0, stopped.output
    assert "stop plan for src_table_3" in stopped.output and "stop " in stopped.output
    assert cli.client.get_statement(STATEMENT).phase == "STOPPED"
    cli.client.create_statement("more-payments", "INSERT INTO raw_payments VALUES " + ", ".join(
        f"('pay-x{i}', 'ord-001', 'card', 'captured', 1.00, NULL, TIMESTAMP '2026-01-06 10:0{i}:00')"
        for i in range(4)))
    cli.client.wait_for_phase("more-payments", {"COMPLETED"}, 60)
    quiesce(cli.url)
    assert cli.payments() == before  # stopped: nothing read meanwhile

    resumed = cli("resume", "--product", "p1", "src_table_3")
    assert resumed.exit_code == 0, resumed.output
    assert "resume plan" in resumed.output
    assert cli.client.get_statement(STATEMENT).phase == "RUNNING"
    quiesce(cli.url)
    assert cli.payments() == sorted(before + [(f"pay-x{i}",) for i in range(4)], key=repr)


def test_resume_refuses_a_table_whose_code_changed_and_says_to_deploy_it(cli: Cli) -> None:
    cli.deploy("src_table_3")
    assert cli("stop", "src_table_3").exit_code == 0
    dml = cli.root / DML
    original = dml.read_text()
    dml.write_text(original.replace("AND amount IS NOT NULL", "AND amount IS NOT NULL AND amount > 0"))
    try:
        refused = cli("resume", "src_table_3")
    finally:
        dml.write_text(original)
    assert refused.exit_code == 2
    assert refused.stderr.strip().splitlines() == [
        "error: src_table_3: its code changed since it was stopped, so it is not resumed: deploy it "
        "(shift-left-dagster deploy src_table_3), the plan decides how"]
    assert cli.client.get_statement(STATEMENT).phase == "STOPPED"
    assert cli("resume", "src_table_3").exit_code == 0  # the code as deployed again: resumed


def test_statements_failing_shows_each_failing_statement_with_its_root_error(cli: Cli) -> None:
    cli.deploy("src_table_3")
    assert "no FAILED or FAILING statement" in cli("statements", "--failing").output
    cli.client.create_statement("drop-raw-payments", "DROP TABLE `raw_payments`")  # its source goes away
    cli.client.wait_for_phase("drop-raw-payments", {"COMPLETED"}, 60)
    cli.client.wait_for_phase(STATEMENT, {"FAILED"}, 60)
    listed = cli("statements", "--failing")
    assert listed.exit_code == 0, listed.output
    root = cli.client.statement_exceptions(STATEMENT)[0].message  # the service's own text
    assert "raw_payments" in root
    assert STATEMENT in listed.output and f"root error: {root}" in listed.output
    assert "src-table-3" not in listed.output.replace(STATEMENT, "")  # only the failing statement

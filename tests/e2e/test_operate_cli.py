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


def refused_with_changed_code(cli: Cli, *args: str) -> list[str]:
    """The stderr lines of a command refused (exit 2) while src_table_3's DML differs from what was deployed."""
    dml = cli.root / DML
    original = dml.read_text()
    dml.write_text(original.replace("AND amount IS NOT NULL", "AND amount IS NOT NULL AND amount > 0"))
    try:
        refused = cli(*args)
    finally:
        dml.write_text(original)
    assert refused.exit_code == 2, refused.output
    return refused.stderr.strip().splitlines()


def test_resume_refuses_a_table_whose_code_changed_and_says_to_deploy_it(cli: Cli) -> None:
    cli.deploy("src_table_3")
    assert cli("stop", "src_table_3").exit_code == 0
    assert refused_with_changed_code(cli, "resume", "src_table_3") == [
        "error: src_table_3: its code changed since it was stopped, so it is not resumed: deploy it "
        "(shift-left-dagster deploy src_table_3), the plan decides how"]
    assert cli.client.get_statement(STATEMENT).phase == "STOPPED"
    assert cli("resume", "src_table_3").exit_code == 0  # the code as deployed again: resumed


def more_payments(cli: Cli, first: int, count: int) -> list[tuple]:
    """Payments inserted into the raw topic now (record time: now); their ids as src_table_3 holds them."""
    ids = [f"pay-y{first + i}" for i in range(count)]
    name = f"payments-{first}"
    cli.client.create_statement(name, "INSERT INTO raw_payments VALUES " + ", ".join(
        f"('{i}', 'ord-001', 'card', 'captured', 1.00, NULL, TIMESTAMP '2026-01-06 10:00:00')" for i in ids))
    cli.client.wait_for_phase(name, {"COMPLETED"}, 60)
    return [(i,) for i in ids]


def dml_phases(cli: Cli) -> dict[str, str]:
    return {s.name: s.phase for s in cli.client.list_statements() if s.name.startswith("local-p1-dml-")}


def test_stop_and_resume_a_product_keep_every_statement_offsets(cli: Cli) -> None:
    cli.deploy("fct_order")  # every p1 table
    running = dml_phases(cli)
    assert len(running) == 6 and set(running.values()) == {"RUNNING"}, running
    before = cli.payments()

    stopped = cli("stop", "--product", "p1")
    assert stopped.exit_code == 0, stopped.output
    assert dml_phases(cli) == {name: "STOPPED" for name in running}
    added = more_payments(cli, 0, 3)
    quiesce(cli.url)
    assert cli.payments() == before

    resumed = cli("resume", "--product", "p1")
    assert resumed.exit_code == 0, resumed.output
    assert dml_phases(cli) == running
    quiesce(cli.url)
    assert cli.payments() == sorted(before + added, key=repr)  # each record once


def test_stop_and_resume_a_reprocess_beside_the_serving_version(cli: Cli) -> None:
    """`--candidate`: a new version being reprocessed is stopped and resumed from its offsets while the serving
    one runs on; resuming it after its code changed is refused in one line; then it is rolled back."""
    cli.deploy("src_table_3")
    reprocess = cli("reprocess", "src_table_3", "--from", "2026-01-02", "--allow-partial-history")
    assert reprocess.exit_code == 0, reprocess.output
    quiesce(cli.url)
    shadow = select(cli.client, "SELECT payment_id FROM src_table_3_v2")
    assert shadow and len(shadow) < len(cli.payments())  # history before the start is not reprocessed

    stopped = cli("stop", "--candidate", "--product", "p1")
    assert stopped.exit_code == 0, stopped.output
    phases = dml_phases(cli)
    assert phases["local-p1-dml-src-table-3-v2"] == "STOPPED" and phases["local-p1-dml-src-table-3"] == "RUNNING"
    assert {n: p for n, p in phases.items() if not n.endswith("-v2")} == {
        n: "RUNNING" for n in phases if not n.endswith("-v2")}  # no serving statement stopped
    before = cli.payments()
    added = more_payments(cli, 10, 2)
    quiesce(cli.url)
    assert cli.payments() == sorted(before + added, key=repr)  # the serving version reads on
    assert select(cli.client, "SELECT payment_id FROM src_table_3_v2") == shadow

    assert refused_with_changed_code(cli, "resume", "--candidate", "src_table_3") == [
        "error: src_table_3: its code changed since version 2 was stopped, so it is not resumed: roll it back "
        "(shift-left-dagster rollback src_table_3) and build it again"]

    resumed = cli("resume", "--candidate", "src_table_3")
    assert resumed.exit_code == 0, resumed.output
    assert dml_phases(cli)["local-p1-dml-src-table-3-v2"] == "RUNNING"
    quiesce(cli.url)
    assert select(cli.client, "SELECT payment_id FROM src_table_3_v2") == sorted(shadow + added, key=repr)
    assert cli("rollback").exit_code == 0
    assert not [n for n in dml_phases(cli) if n.endswith("-v2")]


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

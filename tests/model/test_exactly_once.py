"""Model-based test of the deployment core (hypothesis.stateful) over a real local service.

A small synthetic project: a raw append topic, a stateless source whose SQL
changes (`amount * m`, committed to git), a stateless filter and a stateful
aggregate (upsert) over it. Random sequences insert raw records, commit SQL
changes, deploy a table (a changed source is recreated and so are its
children), run what the git sensor runs (the commits since its cursor: the
stateless change replaced in place from the old statement's offsets), and stop
statements. At the end of each sequence every table is
deployed once more (stopped statements must be resumed, nothing recreated), the
service catches up, and every sink must equal the oracle: a from-scratch
evaluation in plain Python of the SQL each table was deployed with, over all
raw records, never computed by the engine under test. No key is duplicated, no
row lost, and every run's verdict told the truth.

The suite runs a fixed seed set, bounded; `SL_MODEL_EXAMPLES=200 pytest -m model`
explores more (see bench/bench_model.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.live import LiveState
from shift_left_dagster.deploy.plan import Action
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import client_for, quiesce, select

pytestmark = [pytest.mark.service, pytest.mark.model]

TABLES = ["src_orders", "big_orders", "customer_totals"]
CUSTOMERS = ["ann", "bob", "cy"]
EXAMPLES = int(os.environ.get("SL_MODEL_EXAMPLES", "6"))
STEPS = int(os.environ.get("SL_MODEL_STEPS", "12"))

DDL = {
    "src_orders": "CREATE TABLE src_orders (id INT, customer STRING, amount INT)",
    "big_orders": "CREATE TABLE big_orders (id INT, customer STRING, amount INT)",
    "customer_totals": ("CREATE TABLE customer_totals (customer STRING, total BIGINT, orders BIGINT, "
                        "PRIMARY KEY (customer) NOT ENFORCED)"),
}
DML = {
    "src_orders": "INSERT INTO src_orders SELECT id, customer, amount * {m} AS amount FROM raw_orders",
    "big_orders": "INSERT INTO big_orders SELECT id, customer, amount FROM src_orders WHERE amount > 5",
    "customer_totals": ("INSERT INTO customer_totals SELECT customer, CAST(SUM(amount) AS BIGINT) AS total, "
                        "COUNT(*) AS orders FROM src_orders GROUP BY customer"),
}
FOLDERS = {"src_orders": "sources/m/src_orders", "big_orders": "intermediates/m/big_orders",
           "customer_totals": "facts/m/customer_totals"}
PARENT = {"big_orders": "src_orders", "customer_totals": "src_orders"}


def write_project(root: Path, multiplier: int) -> None:
    for table, folder in FOLDERS.items():
        scripts = root / "pipelines" / folder / "sql-scripts"
        scripts.mkdir(parents=True, exist_ok=True)
        (scripts / f"ddl.{table}.sql").write_text(DDL[table])
        (scripts / f"dml.{table}.sql").write_text(DML[table].format(m=multiplier))


def oracle(raw: list[tuple[int, str, int]], segments: list[tuple[int, int]], deployed: set[str]
           ) -> dict[str, list[tuple]]:
    """Each deployed table's rows from its SQL alone, over all raw records, in plain Python.

    `segments`: (first raw record, multiplier) -- the source SQL that processed each stretch of
    the raw topic (one segment after a (re)deployment; a new one after each in-place change).
    """
    def multiplier(index: int) -> int:
        return next(m for start, m in reversed(segments) if start <= index)

    src = [(i, c, a * multiplier(n)) for n, (i, c, a) in enumerate(raw)]
    totals: dict[str, list[int]] = {}
    for _, customer, amount in src:
        totals.setdefault(customer, [0, 0])
        totals[customer][0] += amount
        totals[customer][1] += 1
    expected = {
        "src_orders": src,
        "big_orders": [r for r in src if r[2] > 5],
        "customer_totals": [(c, t, n) for c, (t, n) in totals.items()],
    }
    return {t: sorted((tuple(str(v) for v in row) for row in rows), key=repr) for t, rows in expected.items()
            if t in deployed}


class DeploymentModel(RuleBasedStateMachine):
    """The model: raw records, the SQL in the files, the SQL the source runs with, what is deployed/stopped.

    Its predictions never read the plan: deploying `src_orders` makes it run the SQL in the files
    (changed code recreates it, unchanged code leaves or resumes it); deploying a child deploys a
    missing source from the files and leaves a deployed one as it runs.
    """

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[tuple[int, str, int]] = []
        self.multiplier = 1  # in the files (committed) now
        self.segments: list[tuple[int, int]] = []  # what src_orders ran with over the raw topic (empty: not deployed)
        self.cursor_multiplier = 1  # the files at the commit deploy_commit last deployed (the sensor's cursor)
        self.deployed: set[str] = set()
        self.stopped: set[str] = set()
        self.operations = 0

    @initialize()
    def start_service(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sl-model-"))
        write_project(self.root, self.multiplier)
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-qm", "initial")
        self.cursor = self.git("rev-parse", "HEAD")
        self.service = InProcessService(self.root / "data", spark_factory=_SPARK[0]).start()
        self.client = client_for(self.service.url)
        self.client.settings.poll.initial = self.client.settings.poll.step = 0.05
        self.client.create_statement("raw-ddl", "CREATE TABLE raw_orders (id INT, customer STRING, amount INT)")
        self.client.wait_for_phase("raw-ddl", {"COMPLETED"}, 60)

    def count(self) -> None:
        self.operations += 1
        _KINDS[sys._getframe(1).f_code.co_name] += 1

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.root), "-c", "user.email=m@m", "-c", "user.name=m", *args],
                              check=True, capture_output=True, text=True).stdout.strip()

    def deployer(self) -> Deployer:
        graph = ProjectGraph(build_inventory(self.root / "pipelines", use_cache=False))
        return Deployer(client=self.client, graph=graph, config=local_defaults(self.service.url),
                        settle_seconds=0.2, timeout=120)

    # -- operations -------------------------------------------------------------------------

    @rule(records=st.lists(st.tuples(st.sampled_from(CUSTOMERS), st.integers(min_value=0, max_value=9)),
                           min_size=1, max_size=3))
    def insert_raw_records(self, records: list[tuple[str, int]]) -> None:
        rows = [(len(self.raw) + i, customer, amount) for i, (customer, amount) in enumerate(records)]
        values = ", ".join(f"({i}, '{c}', {a})" for i, c, a in rows)
        name = f"raw-insert-{len(self.raw)}"
        self.client.create_statement(name, f"INSERT INTO raw_orders VALUES {values}")
        self.client.wait_for_phase(name, {"COMPLETED"}, 60)
        self.raw += rows
        self.count()

    @precondition(lambda self: self.multiplier == self.cursor_multiplier)  # one pending commit at a time
    @rule()
    def commit_source_change(self) -> None:
        self.multiplier = 3 - self.multiplier  # 1 <-> 2: a one-token stateless change, committed
        write_project(self.root, self.multiplier)
        self.git("commit", "-qam", f"multiplier {self.multiplier}")
        self.count()

    @rule(table=st.sampled_from(TABLES))
    def deploy(self, table: str) -> None:
        self.deployer().deploy([table]).wait()  # raises when a step fails or a statement is unhealthy
        if not self.segments or (table == "src_orders" and self.segments[-1][1] != self.multiplier):
            self.segments = [(0, self.multiplier)]  # (re)created: reprocesses the raw topic from earliest
            self.stopped.clear()  # ...and so are its deployed children, running again
        self.deployed |= {table, "src_orders"}
        self.stopped -= {table, "src_orders"}
        self.count()

    @precondition(lambda self: "src_orders" in self.deployed and not self.stopped)
    @rule()
    def sensor_run_deploys_the_commits(self) -> None:
        """What the git sensor's run does: the commits since its cursor, blue/green (here: in place)."""
        assert quiesce(self.service.url)["quiet"]  # the change lands once the pipeline caught up
        head = self.git("rev-parse", "HEAD")
        deployment = self.deployer().deploy_commit(self.cursor, head)
        deployment.wait()
        if self.cursor_multiplier != self.multiplier:  # the diff changed src_orders: replaced from its offsets
            assert [s.action for s in deployment.plan.changes] == [Action.REPLACE_IN_PLACE]
            self.segments.append((len(self.raw), self.multiplier))
        else:
            assert deployment.plan.changes == []
        self.cursor, self.cursor_multiplier = head, self.multiplier
        self.count()

    @precondition(lambda self: bool(self.deployed - self.stopped))
    @rule(data=st.data())
    def stop_statement(self, data: st.DataObject) -> None:
        table = data.draw(st.sampled_from(sorted(self.deployed - self.stopped)))
        self.client.stop_statement(statement(table), timeout=60)
        self.stopped.add(table)
        self.count()

    @invariant()
    def deployed_tables_have_their_statement(self) -> None:
        if self.deployed:
            names = {s.name: s.phase for s in self.client.list_statements()}
            for table in self.deployed:
                assert names.get(statement(table)) in ("RUNNING", "STOPPED"), (table, names)

    def teardown(self) -> None:
        try:
            if self.deployed:
                self.settle_and_compare()
        finally:
            if hasattr(self, "service"):
                self.service.stop()
                shutil.rmtree(self.root, ignore_errors=True)
            _RUNS.append(self.operations)

    def settle_and_compare(self) -> None:
        """Deploy every deployed table once more, check a re-plan changes nothing, catch up, compare."""
        for table in sorted(self.deployed):
            self.deploy(table)
        replan = self.deployer().deploy(sorted(self.deployed)).plan
        assert not replan.changes, [(s.table, s.action.value, s.reason) for s in replan.changes]
        assert quiesce(self.service.url)["quiet"]
        expected = oracle(self.raw, self.segments, self.deployed)
        for table, rows in expected.items():
            actual = select(self.client, f"SELECT * FROM `{table}`")
            assert actual == rows, (table, self.segments, self.raw)
            if table == "customer_totals":
                duplicated = [k for k, n in Counter(r[0] for r in actual).items() if n > 1]
                assert not duplicated, duplicated


def statement(table: str) -> str:
    return f"local-m-dml-{table.replace('_', '-')}"


_SPARK: list = []
_RUNS: list[int] = []
_KINDS: Counter[str] = Counter()


def test_every_sink_equals_the_oracle_after_random_deployments(spark) -> None:  # type: ignore[no-untyped-def]
    _SPARK[:] = [lambda: spark]
    run_state_machine_as_test(DeploymentModel, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=True,
        suppress_health_check=list(HealthCheck), database=None))
    print(f"model: {len(_RUNS)} sequences, {sum(_RUNS)} operations ({dict(_KINDS)}), no counterexample")
    assert _KINDS["sensor_run_deploys_the_commits"] and _KINDS["stop_statement"]  # the fixed seeds reach them


def test_live_state_type_is_what_plans_read() -> None:
    assert LiveState().tables is None  # unknown tables: plans trust statements alone

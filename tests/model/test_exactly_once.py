"""Model-based test of the deployment core (hypothesis.stateful) over a real local service.

A small synthetic project in git: a raw append topic, a stateless source whose SQL changes
(`amount * m`), a stateless filter, and a stateful aggregate (upsert) whose SQL changes too
(`COUNT(*) * w`). Random sequences insert raw records, commit SQL changes, deploy a table (a changed
source is recreated and so is every deployed child), run what the git sensor runs (the commits since
its cursor: the stateless change replaced in place from the old statement's offsets, the stateful
one deployed as a new version beside the serving one), promote or roll back that candidate, and
stop statements. At the end of each sequence every table is deployed once more (stopped statements
are resumed, nothing recreated), a re-plan is empty, the service catches up, and every serving
table and candidate must equal the oracle: a plain-Python evaluation of the SQL each stretch of the
raw topic was processed with, never computed by the engine under test. No key is duplicated, no
row lost, and every run's verdict told the truth (a run that raised would fail the test).

The suite runs a fixed seed set, bounded; `SL_MODEL_EXAMPLES=200 pytest -m model` or
`python bench/bench_model.py` explores more.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
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
from shift_left_dagster.deploy.naming import versioned_name
from shift_left_dagster.deploy.plan import Action, PlanError
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from tests.integration.support import client_for, quiesce, select

pytestmark = [pytest.mark.service, pytest.mark.model]

TABLES = ["src_orders", "big_orders", "customer_totals"]
CUSTOMERS = ["ann", "bob", "cy"]
EXAMPLES = int(os.environ.get("SL_MODEL_EXAMPLES", "15"))
STEPS = int(os.environ.get("SL_MODEL_STEPS", "20"))

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
                        "COUNT(*) * {w} AS orders FROM src_orders GROUP BY customer"),
}
FOLDERS = {"src_orders": "sources/m/src_orders", "big_orders": "intermediates/m/big_orders",
           "customer_totals": "facts/m/customer_totals"}
TOTALS = "customer_totals"


def write_project(root: Path, multiplier: int, weight: int) -> None:
    for table, folder in FOLDERS.items():
        scripts = root / "pipelines" / folder / "sql-scripts"
        scripts.mkdir(parents=True, exist_ok=True)
        (scripts / f"ddl.{table}.sql").write_text(DDL[table])
        (scripts / f"dml.{table}.sql").write_text(DML[table].format(m=multiplier, w=weight))


def source_rows(raw: list[tuple[int, str, int]], segments: list[tuple[int, int]]) -> list[tuple[int, str, int]]:
    """src_orders from its SQL alone: `segments` = (first raw record, multiplier), the source SQL that
    processed each stretch of the raw topic (one after a (re)deployment, one more per in-place change)."""
    def multiplier(index: int) -> int:
        return next(m for start, m in reversed(segments) if start <= index)

    return [(i, c, a * multiplier(n)) for n, (i, c, a) in enumerate(raw)]


def totals_rows(src: list[tuple[int, str, int]], weight: int) -> list[tuple]:
    totals: dict[str, list[int]] = {}
    for _, customer, amount in src:
        totals.setdefault(customer, [0, 0])
        totals[customer][0] += amount
        totals[customer][1] += 1
    return [(c, t, n * weight) for c, (t, n) in totals.items()]


def rows(found: list[tuple]) -> list[tuple]:
    return sorted((tuple(str(v) for v in row) for row in found), key=repr)


def statement(physical: str) -> str:
    return f"local-m-dml-{physical.replace('_', '-')}"


class DeploymentModel(RuleBasedStateMachine):
    """The model: raw records, the SQL in git, what each deployed version runs with, what is stopped.

    Its predictions never read the plan: deploying `src_orders` makes it run the SQL in the files
    (changed code recreates it and every deployed child, from their files), deploying a child deploys
    a missing source and leaves a deployed one as it runs; a sensor run replaces a changed source in
    place from its offsets and deploys a changed aggregate as a new version beside the serving one;
    promotion makes the candidate serve, rollback removes it; recreating a topic a candidate reads
    is refused.
    """

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[tuple[int, str, int]] = []
        self.multiplier, self.weight = 1, 1  # in git now
        self.cursor_multiplier, self.cursor_weight = 1, 1  # at the sensor's cursor
        self.segments: list[tuple[int, int]] = []  # src_orders (empty: not deployed)
        self.serving: dict[str, int] = {}  # table -> serving version (deployed tables)
        self.totals_weight = 1  # the weight the serving customer_totals runs with
        self.candidate: tuple[int, int] | None = None  # (version, weight) of a customer_totals candidate
        self.stopped: set[str] = set()
        self.operations = 0

    @initialize()
    def start_service(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sl-model-"))
        write_project(self.root, self.multiplier, self.weight)
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

    def deployer(self, holder: str = "model") -> Deployer:
        """`holder`: who deploys (a process, a Dagster run): two holders exclude each other by the lease."""
        graph = ProjectGraph(build_inventory(self.root / "pipelines", use_cache=False))
        return Deployer(client=self.client, graph=graph, config=local_defaults(self.service.url),
                        settle_seconds=0.2, timeout=120, holder=holder)

    def physical(self, table: str) -> str:
        return versioned_name(table, self.serving.get(table, 1))

    # -- operations -------------------------------------------------------------------------

    @rule(records=st.lists(st.tuples(st.sampled_from(CUSTOMERS), st.integers(min_value=0, max_value=9)),
                           min_size=1, max_size=3))
    def insert_raw_records(self, records: list[tuple[str, int]]) -> None:
        rows_ = [(len(self.raw) + i, customer, amount) for i, (customer, amount) in enumerate(records)]
        values = ", ".join(f"({i}, '{c}', {a})" for i, c, a in rows_)
        name = f"raw-insert-{len(self.raw)}"
        self.client.create_statement(name, f"INSERT INTO raw_orders VALUES {values}")
        self.client.wait_for_phase(name, {"COMPLETED"}, 60)
        self.raw += rows_
        self.count()

    @precondition(lambda self: self.multiplier == self.cursor_multiplier)  # one pending change at a time
    @rule()
    def commit_source_change(self) -> None:
        self.multiplier = 3 - self.multiplier  # 1 <-> 2: a one-token stateless change
        write_project(self.root, self.multiplier, self.weight)
        self.git("commit", "-qam", f"multiplier {self.multiplier}")
        self.count()

    @precondition(lambda self: self.weight == self.cursor_weight)
    @rule()
    def commit_aggregate_change(self) -> None:
        self.weight = 11 - self.weight  # 1 <-> 10: a stateful change, breaking
        write_project(self.root, self.multiplier, self.weight)
        self.git("commit", "-qam", f"weight {self.weight}")
        self.count()

    @rule(table=st.sampled_from(TABLES))
    def deploy(self, table: str) -> None:
        source_recreated = bool(self.segments) and table == "src_orders" and self.segments[-1][1] != self.multiplier
        if source_recreated and self.candidate is not None:
            with pytest.raises(PlanError, match="promote or roll back the candidate first"):
                self.deployer().deploy([table])
            self.count()
            return
        self.deployer().deploy([table]).wait()  # raises when a step fails or a statement is unhealthy
        self.predict_deploy(table)
        self.count()

    def predict_deploy(self, table: str) -> None:
        """What deploying `table` does to the model."""
        source_recreated = bool(self.segments) and table == "src_orders" and self.segments[-1][1] != self.multiplier
        if not self.segments or source_recreated:
            self.segments = [(0, self.multiplier)]  # (re)created: reprocesses the raw topic from earliest
            self.serving.setdefault("src_orders", 1)
        if source_recreated:  # every deployed child is recreated too, from its files, running again
            if TOTALS in self.serving:
                self.totals_weight = self.weight
            self.stopped.clear()
        if table == TOTALS and (TOTALS not in self.serving or self.totals_weight != self.weight):
            self.totals_weight = self.weight  # deployed, or its code changed: recreated
        self.serving.setdefault(table, 1)
        self.stopped -= {table, "src_orders"}

    @precondition(lambda self: self.candidate is None)
    @rule(first=st.sampled_from(TABLES), second=st.sampled_from(TABLES))
    def concurrent_deploys(self, first: str, second: str) -> None:
        """Two deployments at once, as two Dagster runs (or a run and the CLI) would start them: the
        project's lease orders them, and either order ends in the same state, so the model applies both."""
        failures: list[BaseException] = []

        def deploy(table: str, holder: str) -> None:
            try:
                self.deployer(holder).deploy([table]).wait()
            except BaseException as error:  # noqa: BLE001 - reported below, in the test's thread
                failures.append(error)

        threads = [threading.Thread(target=deploy, args=(t, f"run-{i}")) for i, t in enumerate((first, second))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not failures, failures
        self.predict_deploy(first)
        self.predict_deploy(second)
        self.count()

    @precondition(lambda self: bool(set(self.serving) - self.stopped))
    @rule(data=st.data())
    def stop_statement(self, data: st.DataObject) -> None:
        table = data.draw(st.sampled_from(sorted(set(self.serving) - self.stopped)))
        self.client.stop_statement(statement(self.physical(table)), timeout=60)
        self.stopped.add(table)
        self.count()

    @precondition(lambda self: "src_orders" in self.serving and not self.stopped)
    @rule()
    def sensor_run_deploys_the_commits(self) -> None:
        """What the git sensor's run does with the commits since its cursor."""
        assert quiesce(self.service.url)["quiet"]  # the change lands once the pipeline caught up
        head = self.git("rev-parse", "HEAD")
        deployment = self.deployer().deploy_commit(self.cursor, head)
        deployment.wait()
        actions = {(s.table, s.action) for s in deployment.plan.changes}
        expected = set()
        if self.cursor_multiplier != self.multiplier:  # stateless: replaced in place from its offsets
            expected.add(("src_orders", Action.REPLACE_IN_PLACE))
            self.segments.append((len(self.raw), self.multiplier))
        if self.cursor_weight != self.weight:  # stateful: a new version beside the serving one
            expected.add((TOTALS, Action.DEPLOY))
            if TOTALS in self.serving:
                self.candidate = (self.serving[TOTALS] + 1, self.weight)
            else:
                self.serving[TOTALS], self.totals_weight = 1, self.weight
        assert actions == expected, (actions, expected)
        self.cursor, self.cursor_multiplier, self.cursor_weight = head, self.multiplier, self.weight
        self.count()

    @precondition(lambda self: self.candidate is not None)
    @rule(promote=st.booleans())
    def promote_or_rollback(self, promote: bool) -> None:
        assert self.candidate is not None
        if promote:
            self.deployer().promote().wait()
            self.serving[TOTALS], self.totals_weight = self.candidate
            self.stopped.discard(TOTALS)
        else:
            self.deployer().rollback().wait()
        self.candidate = None
        self.count()

    @invariant()
    def deployed_tables_have_their_statement(self) -> None:
        if self.serving:
            names = {s.name: s.phase for s in self.client.list_statements()}
            for table in self.serving:
                assert names.get(statement(self.physical(table))) in ("RUNNING", "STOPPED"), (table, names)

    def teardown(self) -> None:
        try:
            if self.serving:
                self.settle_and_compare()
        finally:
            if hasattr(self, "service"):
                self.service.stop()
                shutil.rmtree(self.root, ignore_errors=True)
            _RUNS.append(self.operations)

    def settle_and_compare(self) -> None:
        """Deploy every deployed table once more, check a re-plan changes nothing, catch up, compare."""
        for table in sorted(self.serving):
            self.deploy(table)
        if self.candidate is None:
            replan = self.deployer().deploy(sorted(self.serving)).plan
            assert not replan.changes, [(s.table, s.action.value, s.reason) for s in replan.changes]
        assert quiesce(self.service.url)["quiet"]
        src = source_rows(self.raw, self.segments)
        expected = {"src_orders": src, "big_orders": [r for r in src if r[2] > 5],
                    TOTALS: totals_rows(src, self.totals_weight)}
        for table in self.serving:
            actual = select(self.client, f"SELECT * FROM `{self.physical(table)}`")
            assert actual == rows(expected[table]), (table, self.segments, self.raw)
            if table == TOTALS:
                duplicated = [k for k, n in Counter(r[0] for r in actual).items() if n > 1]
                assert not duplicated, duplicated
        if self.candidate is not None:
            version, weight = self.candidate
            actual = select(self.client, f"SELECT * FROM `{versioned_name(TOTALS, version)}`")
            assert actual == rows(totals_rows(src, weight)), ("candidate", self.candidate, self.raw)


_SPARK: list = []
_RUNS: list[int] = []
_KINDS: Counter[str] = Counter()


def test_every_sink_equals_the_oracle_after_random_deployments(spark) -> None:  # type: ignore[no-untyped-def]
    _SPARK[:] = [lambda: spark]
    run_state_machine_as_test(DeploymentModel, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, derandomize=True,
        suppress_health_check=list(HealthCheck), database=None))
    print(f"model: {len(_RUNS)} sequences, {sum(_RUNS)} operations ({dict(_KINDS)}), no counterexample")
    for kind in ("sensor_run_deploys_the_commits", "stop_statement", "promote_or_rollback", "concurrent_deploys"):
        assert _KINDS[kind], kind  # the fixed seeds reach every kind of operation


def test_live_state_type_is_what_plans_read() -> None:
    assert LiveState().tables is None  # unknown tables: plans trust statements alone

"""Model-based test of the deployment core (hypothesis.stateful) over a real local service.

A small synthetic project in git: a raw append topic and a raw upsert topic; a stateless source whose
SQL changes (`amount * m`, and once an added nullable column `doubled`), a stateless filter, a keyed
stateless projection (order_amounts: the table closed-window backfills may rewrite), a stateful
aggregate (upsert) whose SQL changes too (`COUNT(*) * w`), and a source over the upsert topic.
Random sequences insert raw records and upserts, commit SQL changes, deploy a table (a changed source
is recreated and so is every deployed child), run what the git sensor runs (the commits since its
cursor: stateless compatible changes replaced in place from the old statement's offsets, the stateful
one deployed as a new version beside the serving one), promote or roll back that candidate, stop
statements, and walk the paths issue 25 found broken: an emptied or deleted DDL/DML file and its
restoration, a misspelt parent committed, a closed-window backfill, a deployment killed while it holds
the lease, the service restarted mid-deployment, a deploy excluding the sources. And issue 31's reprocess:
a table reprocessed from a moment between two inserts into new versions beside the serving ones (its
deployed descendants too), stopped and resumed there, checked, then promoted or rolled back; a reprocess
killed after planning, then rolled back.

The oracle is a plain-Python evaluation of the SQL each stretch of the raw topics was processed with, never
computed by the engine under test; a reprocessed version holds the records from its start on (the history
before it absent by consent), and so does the serving table once it is promoted. After operations the pipeline
catches up and: no table holds fewer rows than before unless the model recreated it, every table the model
judges equals the oracle, and every check `shift-left-dagster check` runs gives the oracle's verdict (no false
red, no false green). Every run's outcome (success, refusal at plan time) is the model's prediction; a run
that raised where none was predicted fails the test. At the end of each sequence every table is deployed once
more (stopped statements are resumed, nothing recreated), a re-plan is empty, and every serving table and
candidate equals the oracle with no duplicated key.

CI runs a fixed seed set, bounded, plus a walk through every operation; `python bench/bench_model.py`
explores more (several seeds, checks after every operation).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from shift_left_dagster.checks import ChecksSettings, LocalSinkReader, find_dml_statements, run_checks
from shift_left_dagster.checks.candidates import CandidateReport, verify_candidates
from shift_left_dagster.checks.models import CheckName
from shift_left_dagster.deploy.backfill import BackfillRefused
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.deploy.live import LiveState
from shift_left_dagster.deploy.naming import versioned_name
from shift_left_dagster.deploy.plan import Action, PlanError
from shift_left_dagster.deploy.reprocess import history_not_reprocessed
from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.reader import LocalData
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import ProjectError, build_inventory
from tests.integration.support import client_for, quiesce, select

pytestmark = [pytest.mark.service, pytest.mark.model]

TABLES = ["src_orders", "big_orders", "customer_totals", "order_amounts", "src_tiers"]
CUSTOMERS = ["ann", "bob", "cy"]
EXAMPLES = int(os.environ.get("SL_MODEL_EXAMPLES", "4"))  # CI: bounded (see the walk for coverage)
STEPS = int(os.environ.get("SL_MODEL_STEPS", "12"))
# The checks run after every operation in a long run (bench/bench_model.py); CI runs them after every
# CHECK_EVERY-th operation and after every operation issue 25 added (a check costs seconds on 2 cores).
CHECK_EVERY = int(os.environ.get("SL_MODEL_CHECK_EVERY", "3"))
ALWAYS_CHECKED = {"sensor_run_deploys_the_commits", "break_and_restore_a_file", "commit_a_typo_in_a_parent_name",
                  "backfill_a_deployed_table", "backfill_a_table_not_deployed", "kill_a_deployment_holding_the_lease",
                  "restart_the_service_mid_deployment", "commit_a_broken_file_then_its_restoration",
                  "deploy_excluding_the_sources", "check_then_promote_or_roll_back_the_reprocess",
                  "kill_a_reprocess_holding_the_lease", "promote_a_reprocess_behind_its_serving_version"}
DEAD_HOLDER_WAIT = 30.0  # the most any command may wait on the lease of a killed deployment

DDL = {
    "src_orders": "CREATE TABLE src_orders (id INT, customer STRING, amount INT{extra})",
    "big_orders": "CREATE TABLE big_orders (id INT, customer STRING, amount INT)",
    "customer_totals": ("CREATE TABLE customer_totals (customer STRING, total BIGINT, orders BIGINT, "
                        "PRIMARY KEY (customer) NOT ENFORCED)"),
    "order_amounts": "CREATE TABLE order_amounts (id INT, amount INT, PRIMARY KEY (id) NOT ENFORCED)",
    "src_tiers": "CREATE TABLE src_tiers (customer STRING, tier INT, PRIMARY KEY (customer) NOT ENFORCED)",
}
DML = {
    "src_orders": "INSERT INTO src_orders SELECT id, customer, amount * {m} AS amount{extra} FROM raw_orders",
    "big_orders": "INSERT INTO big_orders SELECT id, customer, amount FROM src_orders WHERE amount > 5",
    "customer_totals": ("INSERT INTO customer_totals SELECT customer, CAST(SUM(amount) AS BIGINT) AS total, "
                        "COUNT(*) * {w} AS orders FROM src_orders GROUP BY customer"),
    "order_amounts": "INSERT INTO order_amounts SELECT id, amount + 1 AS amount FROM src_orders",
    "src_tiers": "INSERT INTO src_tiers SELECT customer, tier FROM raw_tiers",
}
EXTRA_DDL, EXTRA_DML = ", doubled INT", ", amount * 2 AS doubled"  # the added nullable column
TYPO_DML = "INSERT INTO big_orders SELECT id, customer, amount\nFROM src_ordres WHERE amount > 5"  # line 2
FOLDERS = {"src_orders": "sources/m/src_orders", "big_orders": "intermediates/m/big_orders",
           "customer_totals": "facts/m/customer_totals", "order_amounts": "intermediates/m/order_amounts",
           "src_tiers": "sources/m/src_tiers"}
TOTALS, AMOUNTS, TIERS = "customer_totals", "order_amounts", "src_tiers"
ORDERS = {"src_orders", "big_orders", TOTALS, AMOUNTS}  # everything the raw_orders topic feeds
PARENT = {"big_orders": "src_orders", TOTALS: "src_orders", AMOUNTS: "src_orders"}
RAW_DDL = {
    "raw_orders": "CREATE TABLE raw_orders (id INT, customer STRING, amount INT)",
    "raw_tiers": ("CREATE TABLE raw_tiers (customer STRING, tier INT, PRIMARY KEY (customer) NOT ENFORCED) "
                  "WITH ('changelog.mode' = 'upsert')"),
}


def script(root: Path, table: str, kind: str) -> Path:
    return root / "pipelines" / FOLDERS[table] / "sql-scripts" / f"{kind}.{table}.sql"


def write_project(root: Path, multiplier: int, weight: int, extra: bool = False) -> None:
    for table in FOLDERS:
        script(root, table, "ddl").parent.mkdir(parents=True, exist_ok=True)
        script(root, table, "ddl").write_text(DDL[table].format(extra=EXTRA_DDL if extra else ""))
        script(root, table, "dml").write_text(DML[table].format(m=multiplier, w=weight,
                                                               extra=EXTRA_DML if extra else ""))


def source_rows(raw: list[tuple[int, str, int]], segments: list[tuple[int, int, bool]]) -> list[tuple]:
    """src_orders from its SQL alone: `segments` = (first raw record, multiplier, added column), the source
    SQL that processed each stretch of the raw topic (one after a (re)deployment, one more per in-place
    change). Once the table has the added column, rows written before it was added hold NULL there."""
    def code(index: int) -> tuple[int, bool]:
        return next((m, extra) for start, m, extra in reversed(segments) if start <= index)

    widened = segments[-1][2]
    result: list[tuple] = []
    for n, (i, c, a) in enumerate(raw):
        m, extra = code(n)
        result.append((i, c, a * m, a * 2 if extra else None) if widened else (i, c, a * m))
    return result


def totals_rows(src: list[tuple], weight: int) -> list[tuple]:
    totals: dict[str, list[int]] = {}
    for _, customer, amount, *_extra in src:
        totals.setdefault(customer, [0, 0])
        totals[customer][0] += amount
        totals[customer][1] += 1
    return [(c, t, n * weight) for c, (t, n) in totals.items()]


def tier_rows(upserts: list[tuple[str, int]]) -> list[tuple]:
    """An upsert topic read as a table: the latest value of each key."""
    return list(dict(upserts).items())


def oracle(raw: list[tuple[int, str, int]], tiers: list[tuple[str, int]], segments: list[tuple[int, int, bool]],
           since: dict[str, int], weight: int) -> dict[str, list[tuple]]:
    """Every table's rows: src_orders run with `segments` over the raw records, each table holding the history
    from its `since` on (raw index; tier upsert index for src_tiers; absent: all of it): a table reprocessed from
    a time reads its input's records from then on (a stateless row keeps its input record's time)."""
    src = [(n, r) for n, r in enumerate(source_rows(raw, segments) if segments else [])
           if n >= since.get("src_orders", 0)]

    def held(table: str) -> list[tuple]:
        return [r for n, r in src if n >= since.get(table, 0)]

    return {"src_orders": held("src_orders"), "big_orders": [r[:3] for r in held("big_orders") if r[2] > 5],
            TOTALS: totals_rows(held(TOTALS), weight), AMOUNTS: [(r[0], r[2] + 1) for r in held(AMOUNTS)],
            TIERS: tier_rows(tiers[since.get(TIERS, 0):])}


@dataclass
class Shadow:
    """A reprocess not promoted yet: the new version of each table, where its sources start, its code."""

    versions: dict[str, int]
    raw_from: int  # the first raw record at or after the reprocess's start
    tiers_from: int  # the first tier upsert at or after it
    segments: list[tuple[int, int, bool]]  # src_orders' code in its new version (git's when reprocessed)
    weight: int  # customer_totals' weight in its new version

    def physical(self) -> dict[str, str]:
        return {t: versioned_name(t, v) for t, v in self.versions.items()}


def rows(found: list[tuple]) -> list[tuple]:
    """Rows as the results endpoint encodes them (values as strings, NULL as None), sorted."""
    return sorted((tuple(None if v is None else str(v) for v in row) for row in found), key=repr)


def statement(physical: str) -> str:
    return f"local-m-dml-{physical.replace('_', '-')}"


def operation(function: Callable[..., None]) -> Callable[..., None]:
    """An operation of the model: recorded in the sequence's trail as it starts (an operation another calls is
    part of it), and a failure in it printed with the whole trail (`report`)."""
    @functools.wraps(function)
    def recorded(self: DeploymentModel, *args: object, **kwargs: object) -> None:
        if not self.depth:
            shown = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
            self.trail.append(f"{function.__name__}({', '.join(shown)})")
        self.depth += 1
        try:
            function(self, *args, **kwargs)
        except BaseException as error:
            if self.depth == 1:
                self.report(error)
            raise
        finally:
            self.depth -= 1
    return recorded


def reported(function: Callable[..., None]) -> Callable[..., None]:
    """An invariant (or the end of a sequence): a failure in it printed with the trail of operations before."""
    @functools.wraps(function)
    def checked(self: DeploymentModel) -> None:
        try:
            function(self)
        except BaseException as error:
            self.report(error)
            raise
    return checked


# A deployment in a process of its own (holder host:pid, as the CLI), killed by the test once planned, or
# killing itself (SIGKILL) as soon as the step of the table named by its crash argument finished: the moment
# a deployment recreating src_orders has not yet recreated its children.
KILLED_DEPLOYMENT = """
import os
import signal
import sys
from pathlib import Path
from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.checks import ChecksSettings, LocalSinkReader, find_dml_statements, run_checks
from shift_left_dagster.checks.models import CheckName
from shift_left_dagster.deploy.backfill import BackfillRefused
from shift_left_dagster.deploy.deployment import Deployer
from shift_left_dagster.project.config import local_defaults
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import ProjectError, build_inventory
from datetime import datetime
root, url, table, start, crash_after = sys.argv[1:6]
config = local_defaults(url)
graph = ProjectGraph(build_inventory(Path(root) / "pipelines", use_cache=False, strict=False))
deployer = Deployer(client=ConfluentClient.from_config(config), graph=graph, config=config,
                    settle_seconds=0.2, timeout=120)
deployment = (deployer.reprocess([table], datetime.fromisoformat(start)) if start
              else deployer.deploy([table]))
print("planned", flush=True)
for result in deployment.run():
    if result.step.table == crash_after:
        os.kill(os.getpid(), signal.SIGKILL)  # before the steps that depend on it start
print("done", flush=True)
"""


class DeploymentModel(RuleBasedStateMachine):
    """The model: raw records, the SQL in git, what each deployed version runs with, what is stopped.

    Its predictions never read the plan: deploying `src_orders` makes it run the SQL in the files
    (changed code recreates it and every deployed child, from their files), deploying a child deploys
    a missing source and leaves a deployed one as it runs; a sensor run replaces a changed source in
    place from its offsets (a multiplier, or an added nullable column) and deploys a changed aggregate
    as a new version beside the serving one; promotion makes the candidate serve, rollback removes it;
    recreating a topic a candidate reads is refused. A broken file or a misspelt parent is refused at
    plan time naming the file; a killed deployment or service leaves nothing a second deploy can not
    converge from.
    """

    def __init__(self) -> None:
        super().__init__()
        self.raw: list[tuple[int, str, int]] = []
        self.tiers: list[tuple[str, int]] = []  # upserts of the raw_tiers topic, in order
        self.multiplier, self.weight, self.extra = 1, 1, False  # in git now
        self.cursor_multiplier, self.cursor_weight, self.cursor_extra = 1, 1, False  # at the sensor's cursor
        self.segments: list[tuple[int, int, bool]] = []  # src_orders (empty: not deployed)
        self.serving: dict[str, int] = {}  # table -> serving version (deployed tables)
        self.totals_weight = 1  # the weight the serving customer_totals runs with
        self.candidate: tuple[int, int] | None = None  # (version, weight) of a customer_totals candidate
        # Reprocessing: moments between inserts a reprocess may start from, (time, raw records before it,
        # tier upserts before it); the history each serving table holds (raw index, tier index for src_tiers,
        # from which on: a promoted reprocess holds none before its start); a reprocess not promoted yet.
        self.marks: list[tuple[datetime, int, int]] = []
        self.since: dict[str, int] = {}
        self.shadow: Shadow | None = None
        self.stopped: set[str] = set()
        self.floor: dict[str, int] = {}  # rows each table held at the last look (a floor unless recreated)
        self.operations = 0
        self.last_rule = ""
        self.check_every = CHECK_EVERY
        self.trail: list[str] = []  # the operations of this sequence, as called (`operation`)
        self.depth = 0  # operations running (one calling another is recorded once)
        self.reported = False

    @initialize(pipeline_first=st.booleans())
    @operation
    def start_service(self, pipeline_first: bool = False) -> None:
        """A fresh service and project; `pipeline_first`: src_orders and big_orders deployed before any
        operation (so the sensor, stop and promotion paths are reached in short CI sequences too)."""
        self.root = Path(tempfile.mkdtemp(prefix="sl-model-"))
        write_project(self.root, self.multiplier, self.weight)
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-qm", "initial")
        self.cursor = self.git("rev-parse", "HEAD")
        self.service = InProcessService(self.root / "data", spark_factory=_SPARK[0]).start()
        self.client = client_for(self.service.url)
        self.client.settings.poll.initial = self.client.settings.poll.step = 0.05
        for topic, ddl in RAW_DDL.items():
            self.client.create_statement(f"{topic.replace('_', '-')}-ddl", ddl)
            self.client.wait_for_phase(f"{topic.replace('_', '-')}-ddl", {"COMPLETED"}, 60)
        self.mark()
        if pipeline_first:
            self.deploy_and_predict("big_orders")

    def mark(self) -> None:
        """A moment strictly between the records written so far and the next ones (record times are ms)."""
        time.sleep(0.02)
        self.marks.append((datetime.now(UTC), len(self.raw), len(self.tiers)))
        time.sleep(0.02)

    def report(self, error: BaseException) -> None:
        """What bench/bench_model.py prints of a counterexample, whether hypothesis prints its steps or not
        (a flaky one is printed without them): the failing assertion, then every operation of the sequence."""
        if self.reported:
            return
        self.reported = True
        print(f"model counterexample: {type(error).__name__}: {str(error)[:4000]}".replace("\n", "\n    "))
        for number, step in enumerate(self.trail):
            print(f"model step {number}: {step}")
        sys.stdout.flush()

    def count(self) -> None:
        self.operations += 1
        self.last_rule = sys._getframe(1).f_code.co_name
        _KINDS[self.last_rule] += 1

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.root), "-c", "user.email=m@m", "-c", "user.name=m", *args],
                              check=True, capture_output=True, text=True).stdout.strip()

    def deployer(self, holder: str = "model", lease_wait_seconds: float = 600.0) -> Deployer:
        """`holder`: who deploys (a process, a Dagster run): two holders exclude each other by the lease.
        The project is loaded as users' paths load it (CLI, Dagster): a broken file leaves its table out."""
        graph = ProjectGraph(build_inventory(self.root / "pipelines", use_cache=False, strict=False))
        return Deployer(client=self.client, graph=graph, config=local_defaults(self.service.url),
                        settle_seconds=0.2, timeout=120, holder=holder, lease_wait_seconds=lease_wait_seconds)

    def physical(self, table: str) -> str:
        return versioned_name(table, self.serving.get(table, 1))

    def source_changed(self) -> bool:
        """src_orders is deployed with other code than git's (a deploy recreates it)."""
        return bool(self.segments) and self.segments[-1][1:] != (self.multiplier, self.extra)

    def statement_names(self) -> set[str]:
        return {s.name for s in self.client.list_statements()}

    # -- operations -------------------------------------------------------------------------

    @rule(records=st.lists(st.tuples(st.sampled_from(CUSTOMERS), st.integers(min_value=0, max_value=9)),
                           min_size=1, max_size=3))
    @operation
    def insert_raw_records(self, records: list[tuple[str, int]]) -> None:
        rows_ = [(len(self.raw) + i, customer, amount) for i, (customer, amount) in enumerate(records)]
        values = ", ".join(f"({i}, '{c}', {a})" for i, c, a in rows_)
        name = f"raw-insert-{len(self.raw)}"
        self.client.create_statement(name, f"INSERT INTO raw_orders VALUES {values}")
        self.client.wait_for_phase(name, {"COMPLETED"}, 60)
        self.raw += rows_
        self.mark()
        self.count()

    @rule(upserts=st.lists(st.tuples(st.sampled_from(CUSTOMERS), st.integers(min_value=0, max_value=3)),
                           min_size=1, max_size=2))
    @operation
    def upsert_raw_tiers(self, upserts: list[tuple[str, int]]) -> None:
        """The upsert raw topic beside the append one: a key written again replaces its value."""
        name = f"tiers-upsert-{len(self.tiers)}"
        values = ", ".join(f"('{c}', {t})" for c, t in upserts)
        self.client.create_statement(name, f"INSERT INTO raw_tiers VALUES {values}")
        self.client.wait_for_phase(name, {"COMPLETED"}, 60)
        self.tiers += upserts
        self.mark()
        self.count()

    def no_source_change_pending(self) -> bool:
        return (self.multiplier, self.extra) == (self.cursor_multiplier, self.cursor_extra)

    @precondition(lambda self: self.no_source_change_pending())  # one pending change at a time
    @rule()
    @operation
    def commit_source_change(self) -> None:
        self.multiplier = 3 - self.multiplier  # 1 <-> 2: a one-token stateless change
        write_project(self.root, self.multiplier, self.weight, self.extra)
        self.git("commit", "-qam", f"multiplier {self.multiplier}")
        self.count()

    @precondition(lambda self: self.no_source_change_pending() and not self.extra)
    @rule()
    @operation
    def commit_added_column(self) -> None:
        """A nullable column added to src_orders' DDL and DML: compatible, replaced in place by a sensor run."""
        self.extra = True
        write_project(self.root, self.multiplier, self.weight, self.extra)
        self.git("commit", "-qam", "add column doubled")
        self.count()

    @precondition(lambda self: self.weight == self.cursor_weight)
    @rule()
    @operation
    def commit_aggregate_change(self) -> None:
        self.weight = 11 - self.weight  # 1 <-> 10: a stateful change, breaking
        write_project(self.root, self.multiplier, self.weight, self.extra)
        self.git("commit", "-qam", f"weight {self.weight}")
        self.count()

    @rule(table=st.sampled_from(TABLES))
    @operation
    def deploy(self, table: str) -> None:
        self.deploy_and_predict(table)
        self.count()

    def reads_serving_source(self) -> bool:
        """A new version not promoted yet reads the serving src_orders (the sensor's candidate of the
        aggregate, or a reprocess of a child of src_orders alone)."""
        return self.candidate is not None or (self.shadow is not None and "src_orders" not in self.shadow.versions
                                              and bool(set(self.shadow.versions) & ORDERS))

    def source_recreation_refused(self) -> bool:
        """Deploying src_orders would recreate it, but a new version not promoted yet reads it: refused."""
        return self.source_changed() and self.reads_serving_source()

    def deploy_and_predict(self, table: str, deployer: Deployer | None = None) -> None:
        if table == "src_orders" and self.source_recreation_refused():
            with pytest.raises(PlanError, match="promote or roll back the candidate first"):
                (deployer or self.deployer()).deploy([table])
            return
        (deployer or self.deployer()).deploy([table]).wait()  # raises when a step fails or is unhealthy
        self.predict_deploy(table)

    def predict_deploy(self, table: str) -> None:
        """What deploying `table` does to the model."""
        if table == TIERS:
            if TIERS not in self.serving:
                self.recreated(TIERS)
            self.serving.setdefault(TIERS, 1)
            self.stopped.discard(TIERS)
            return
        source_recreated = table == "src_orders" and self.source_changed()
        if not self.segments or source_recreated:
            self.segments = [(0, self.multiplier, self.extra)]  # (re)created: reprocesses raw from earliest
            self.serving.setdefault("src_orders", 1)
            self.recreated("src_orders")
        if source_recreated:  # every deployed child is recreated too, from its files, running again
            if TOTALS in self.serving:
                self.totals_weight = self.weight
            for child in ORDERS & set(self.serving):
                self.recreated(child)
            self.stopped -= ORDERS
        if table == TOTALS and (TOTALS not in self.serving or self.totals_weight != self.weight):
            self.totals_weight = self.weight  # deployed, or its code changed: recreated
            self.recreated(TOTALS)
        if table not in self.serving:
            self.recreated(table)
        self.serving.setdefault(table, 1)
        self.stopped -= {table, "src_orders"}

    def recreated(self, table: str) -> None:
        """The model predicts `table` starts over (rows may drop until it caught up), from earliest."""
        self.floor.pop(table, None)
        self.since.pop(table, None)

    @precondition(lambda self: self.candidate is None and not self.source_recreation_refused())
    @rule(first=st.sampled_from(TABLES), second=st.sampled_from(TABLES))
    @operation
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
    @operation
    def stop_statement(self, data: st.DataObject) -> None:
        self.stop(data.draw(st.sampled_from(sorted(set(self.serving) - self.stopped))))
        self.count()

    def stop(self, table: str) -> None:
        self.client.stop_statement(statement(self.physical(table)), timeout=60)
        self.stopped.add(table)

    def sensor_may_run(self) -> bool:
        return "src_orders" in self.serving and not self.stopped

    def column_already_deployed(self) -> bool:
        """The added column is committed past the sensor's cursor, but a deploy already recreated src_orders
        with it (a user deployed the commit before the sensor ran)."""
        return self.cursor_extra != self.extra and bool(self.segments) and self.segments[-1][2]

    @precondition(lambda self: self.sensor_may_run())
    @rule()
    @operation
    def sensor_run_deploys_the_commits(self) -> None:
        """What the git sensor's run does with the commits since its cursor. A change a deploy already made
        (the table runs git's code) is left alone (the sensor planned from the diff alone, swapped the same
        SQL in again, and an added column already there failed its ALTER TABLE ADD: "Column 'doubled'
        already exists", found by bench_model's round 0)."""
        assert quiesce(self.service.url)["quiet"]  # the change lands once the pipeline caught up
        head = self.git("rev-parse", "HEAD")
        totals_change = self.cursor_weight != self.weight and (TOTALS not in self.serving
                                                                or self.totals_weight != self.weight)
        touched = {"src_orders"} if self.source_changed() else set()
        touched |= {TOTALS} if totals_change and TOTALS in self.serving else set()
        if self.shadow is not None and touched & set(self.shadow.versions):
            # A table being reprocessed beside its serving version: the commit would replace the new version
            # (or change only the serving one); refused until it is promoted or rolled back, the cursor kept.
            with pytest.raises(PlanError, match="promote or roll it back first"):
                self.deployer().deploy_commit(self.cursor, head)
            self.count()
            return
        deployment = self.deployer().deploy_commit(self.cursor, head)
        deployment.wait()
        actions = {(s.table, s.action) for s in deployment.plan.changes}
        expected = set()
        if self.source_changed():  # stateless, compatible: replaced in place from its offsets
            expected.add(("src_orders", Action.REPLACE_IN_PLACE))
            self.segments.append((len(self.raw), self.multiplier, self.extra))
        if totals_change:
            # stateful: a new version beside the serving one (none when a deploy already runs git's code)
            expected.add((TOTALS, Action.DEPLOY))
            if TOTALS in self.serving:
                self.candidate = (self.serving[TOTALS] + 1, self.weight)
            else:
                self.serving[TOTALS], self.totals_weight = 1, self.weight
        assert actions == expected, (actions, expected)
        self.cursor, self.cursor_multiplier, self.cursor_weight, self.cursor_extra = (
            head, self.multiplier, self.weight, self.extra)
        self.count()

    @precondition(lambda self: self.candidate is not None)
    @rule(promote=st.booleans())
    @operation
    def promote_or_rollback(self, promote: bool) -> None:
        assert self.candidate is not None
        if promote:
            self.deployer().promote([TOTALS]).wait()
            self.serving[TOTALS], self.totals_weight = self.candidate
            self.stopped.discard(TOTALS)
            self.recreated(TOTALS)  # another physical table serves now
        else:
            self.deployer().rollback([TOTALS]).wait()
        self.candidate = None
        self.count()

    # -- reprocessing into a shadow version (issue 31) -----------------------------------------

    def reprocessed_with(self, table: str) -> set[str]:
        """What a reprocess of `table` builds new versions of: the table and its deployed descendants."""
        return {table} | ({t for t in self.serving if PARENT.get(t) == table})

    @precondition(lambda self: self.candidate is None and self.shadow is None)
    @rule(table=st.sampled_from(TABLES), mark=st.integers(min_value=0, max_value=99))
    @operation
    def reprocess_from_a_mark(self, table: str, mark: int) -> None:
        """`reprocess TABLE --from T`, T a moment between two inserts: new versions of the table and of its
        deployed descendants beside the serving ones, their sources read from T, git's code; what they will not
        hold is said first; nothing serving changes. A table never deployed is refused, nothing created."""
        when, raw_from, tiers_from = self.marks[mark % len(self.marks)]
        before = self.statement_names()
        if table not in self.serving:
            with pytest.raises(PlanError, match=f"{table} is not deployed"):
                self.deployer().reprocess([table], when)
            assert self.statement_names() == before
            self.count()
            return
        versions = {t: self.serving[t] + 1 for t in self.reprocessed_with(table)}
        deployment = self.deployer().reprocess([table], when)
        planned = {(s.table, s.action, s.physical_table) for s in deployment.plan.changes if s.table}
        assert planned == {(t, Action.DEPLOY, versioned_name(t, v)) for t, v in versions.items()}, planned
        assert len(history_not_reprocessed(deployment.plan)) == len(versions)
        deployment.wait()
        self.shadow = Shadow(versions=versions, raw_from=raw_from, tiers_from=tiers_from,
                             segments=[(0, self.multiplier, self.extra)], weight=self.weight)
        after, kept = self.statement_names(), {n for n in before if "-drop-" not in n}  # (a rollback's drop goes)
        assert kept <= after and after - before <= {f"local-m-{kind}-{p.replace('_', '-')}" for kind in (
            "ddl", "dml", "drop") for p in self.shadow.physical().values()}, after - before
        self.count()

    def expected_shadow(self) -> dict[str, list[tuple]]:
        """The new versions' rows: each reads its input from the reprocess's start, the serving src_orders
        (whose history starts at its own `since`) unless src_orders was reprocessed too."""
        assert self.shadow is not None
        own_source = "src_orders" in self.shadow.versions
        since = {t: self.shadow.raw_from for t in ORDERS} | {TIERS: self.shadow.tiers_from}
        if not own_source:
            since["src_orders"] = self.since.get("src_orders", 0)
        return oracle(self.raw, self.tiers, self.shadow.segments if own_source else self.segments, since,
                      self.shadow.weight)

    @precondition(lambda self: self.shadow is not None)
    @rule(promote=st.booleans())
    @operation
    def check_then_promote_or_roll_back_the_reprocess(self, promote: bool) -> None:
        """The runbook's end of a reprocess: once caught up, the new versions equal the oracle (no row lost,
        no key twice) and their checks say so (no false red, no false green); then `promote` makes them
        serve (the old versions' statements removed, their tables kept) or `rollback` removes them and the
        old versions serve on. Promotion is refused, naming the table, while a deployed table reading a
        version it retires has no new version (it would stop receiving rows)."""
        assert self.shadow is not None
        shadow, physical = self.shadow, self.shadow.physical()
        assert quiesce(self.service.url)["quiet"]
        expected = self.expected_shadow()
        behind = {t for t in shadow.versions if t in ORDERS and "src_orders" not in shadow.versions
                  and "src_orders" in self.stopped}  # reads a stopped serving src_orders
        self.judge(physical, expected, judged=set(shadow.versions) - behind, stopped=set(), floors=False)
        for table in set(shadow.versions) - behind:
            keys = Counter(r[0] for r in select(self.client, f"SELECT * FROM `{physical[table]}`"))
            assert table not in (TOTALS, AMOUNTS, TIERS) or max(keys.values(), default=1) == 1, (table, keys)
        report = self.verify()  # what `promote` verifies first: a correct reprocess from T is never refused
        assert report.promotable, (report.problems, report.key_differences)
        orphans = sorted(t for t in self.serving if PARENT.get(t) in shadow.versions and t not in shadow.versions)
        if promote and orphans:
            with pytest.raises(PlanError, match=orphans[0]):
                self.deployer().promote(sorted(shadow.versions))
            promote = False
        if promote:
            self.deployer().promote(sorted(shadow.versions)).wait()
            for table, version in shadow.versions.items():
                self.recreated(table)  # another physical table serves now
                self.serving[table] = version
                self.since[table] = shadow.tiers_from if table == TIERS else shadow.raw_from
            if "src_orders" in shadow.versions:
                self.segments = shadow.segments
            if TOTALS in shadow.versions:
                self.totals_weight = shadow.weight
            self.stopped -= set(shadow.versions)
        else:
            self.deployer().rollback(sorted(shadow.versions)).wait()
            topics = {t.topic_name for t in self.client.list_topics()}
            assert not topics & set(physical.values()), topics & set(physical.values())
        self.shadow = None
        self.count()

    @precondition(lambda self: self.shadow is not None)
    @rule(records=st.lists(st.tuples(st.sampled_from(CUSTOMERS), st.integers(min_value=0, max_value=9)),
                           min_size=1, max_size=2))
    @operation
    def stop_and_resume_the_reprocess(self, records: list[tuple[str, int]]) -> None:
        """`stop --candidate` then `resume --candidate` of every table being reprocessed, records arriving
        meanwhile: only the new versions stop (the serving statements run on), and once resumed from their
        offsets they read each record once (judged when the reprocess is checked). A table whose code was
        committed since it was reprocessed is not resumed: refused naming it, then rolled back as it says
        (found by CI's seeds once the model drew more operations)."""
        assert self.shadow is not None
        tables = sorted(self.shadow.versions)
        serving = {n: p for n, p in self.phases().items() if n not in self.shadow_statements()}
        stop = self.deployer().stop(tables, candidate=True)
        assert {s.table for s in stop.plan.changes} == set(tables), stop.plan
        stop.wait()
        assert {self.phases()[n] for n in self.shadow_statements()} == {"STOPPED"}
        self.insert_raw_records(records)
        assert {n: p for n, p in self.phases().items() if n in serving} == serving
        changed = self.shadow_code_changed()
        if changed:  # committed since the reprocess: not resumed (it would run other code than it was stopped with)
            with pytest.raises(PlanError, match=f"{changed[0]}: its code changed since version"):
                self.deployer().resume(tables, candidate=True)
            self.deployer().rollback(tables).wait()  # as the refusal says; the serving versions ran on
            topics = {t.topic_name for t in self.client.list_topics()}
            assert not topics & set(self.shadow.physical().values()), topics
            self.shadow = None
            self.count()
            return
        self.deployer().resume(tables, candidate=True).wait()
        assert {self.phases()[n] for n in self.shadow_statements()} == {"RUNNING"}
        self.count()

    def shadow_code_changed(self) -> list[str]:
        """Tables of the reprocess whose code in git is no longer the code their new version runs."""
        assert self.shadow is not None
        source = "src_orders" in self.shadow.versions and self.shadow.segments[-1][1:] != (self.multiplier, self.extra)
        totals = TOTALS in self.shadow.versions and self.shadow.weight != self.weight
        return [t for t, changed in (("src_orders", source), (TOTALS, totals)) if changed]

    def verify(self) -> CandidateReport:
        """`promote`'s verification of every new version not promoted yet, as the CLI and the Dagster job run it."""
        graph = ProjectGraph(build_inventory(self.root / "pipelines", use_cache=False, strict=False))
        reader = LocalSinkReader(LocalData(self.service.data_dir, _SPARK[0]()))
        try:
            return verify_candidates(self.client, graph, "local", reader, ChecksSettings(catch_up_seconds=5.0))
        finally:
            reader.close()

    @precondition(lambda self: self.shadow is not None and AMOUNTS in self.shadow.versions
                  and "src_orders" not in self.shadow.versions and not self.stopped & {AMOUNTS, "src_orders"})
    @rule(records=st.lists(st.tuples(st.sampled_from(CUSTOMERS), st.integers(min_value=0, max_value=9)),
                           min_size=1, max_size=2))
    @operation
    def promote_a_reprocess_behind_its_serving_version(self, records: list[tuple[str, int]]) -> None:
        """The new order_amounts (reading the serving src_orders, as its serving version does, with the same code)
        stopped while records arrive: it lacks keys the serving version wrote from records after its start, and
        `promote`'s verification refuses it for those keys, naming them (no false green); resumed, it catches
        up and verifies again (no false red)."""
        assert self.shadow is not None
        name = statement(self.shadow.physical()[AMOUNTS])
        self.client.stop_statement(name, timeout=60)
        self.insert_raw_records(records)
        assert quiesce(self.service.url)["quiet"]
        report = self.verify()
        lost = [p for p in report.problems if p.startswith(f"{AMOUNTS} v") and "the serving version wrote" in p]
        assert lost, report.problems
        self.client.resume_statement(name, timeout=60)
        assert quiesce(self.service.url)["quiet"]
        report = self.verify()
        assert report.promotable, (report.problems, report.key_differences)

    def phases(self) -> dict[str, str]:
        return {s.name: s.phase for s in self.client.list_statements() if "-dml-" in s.name}

    def shadow_statements(self) -> set[str]:
        assert self.shadow is not None
        return {statement(p) for p in self.shadow.physical().values()}

    @precondition(lambda self: self.candidate is None and self.shadow is None and bool(self.serving))
    @rule(table=st.sampled_from(TABLES), mark=st.integers(min_value=0, max_value=99),
          delay=st.sampled_from([0.0, 0.3, 1.0]))
    @operation
    def kill_a_reprocess_holding_the_lease(self, table: str, mark: int, delay: float) -> None:
        """kill -9 of a reprocess after it planned, then a rollback: whatever it made of the new versions is
        removed (statements and tables), nothing serving changed, and a reprocess after it plans the same."""
        if table not in self.serving:
            table = sorted(self.serving)[mark % len(self.serving)]
        when = self.marks[mark % len(self.marks)][0]
        self.kill_once_planned(delay, table, when.isoformat())
        self.deployer("after-kill", lease_wait_seconds=DEAD_HOLDER_WAIT).rollback().wait()
        left = {versioned_name(t, self.serving[t] + 1) for t in self.reprocessed_with(table)}
        assert not left & {t.topic_name for t in self.client.list_topics()}, "a rolled back version's table is left"
        made = {f"local-m-{kind}-{p.replace('_', '-')}" for p in left for kind in ("ddl", "dml")}
        assert not made & self.statement_names(), made & self.statement_names()  # (a completed drop is the rollback's)
        self.count()

    # -- what broke on users' paths (issue 25) ------------------------------------------------

    @rule(table=st.sampled_from(TABLES), kind=st.sampled_from(["ddl", "dml"]),
          how=st.sampled_from(["empty", "delete"]), reader=st.booleans())
    @operation
    def break_and_restore_a_file(self, table: str, kind: str, how: str, reader: bool) -> None:
        """A table's DDL or DML file emptied or deleted (its folder kept): the table is broken, so a deploy of
        it, or of a table reading it, is refused at plan time naming the file, and nothing is touched;
        restoring the file makes it deployable again. (Deleting is pending: today a missing DML is read
        as a table without DML and planned for recreate, issue 25 case 1.)"""
        path = script(self.root, table, kind)
        readers = sorted(t for t, parent in PARENT.items() if parent == table)
        target = readers[0] if reader and readers else table
        text = path.read_text()
        if how == "delete":
            path.unlink()
        else:
            path.write_text("")
        before = self.statement_names()
        try:
            with pytest.raises((PlanError, ProjectError)) as refused:
                self.deployer().deploy([target])
        finally:
            path.write_text(text)
        assert str(path.relative_to(self.root)) in str(refused.value), (target, str(refused.value))
        assert self.statement_names() == before  # nothing created, nothing removed
        self.deploy_and_predict(target)  # the restored file: deployable again
        self.count()

    @precondition(lambda self: self.sensor_may_run() and self.no_source_change_pending()
                  and self.weight == self.cursor_weight)
    @rule(table=st.sampled_from(TABLES), kind=st.sampled_from(["ddl", "dml"]),
          how=st.sampled_from(["empty", "delete"]))
    @operation
    def commit_a_broken_file_then_its_restoration(self, table: str, kind: str, how: str) -> None:
        """Through git, a broken file is no removal: the sensor's run over that commit is refused naming
        the file (or changes nothing), undeploys nothing; the commit restoring it leaves nothing to do.
        (Deleting is pending: today the sensor plans an undeploy of the table, case 1.)"""
        path = script(self.root, table, kind)
        text = path.read_text()
        if how == "delete":
            path.unlink()
        else:
            path.write_text("")
        self.git("add", "-A", "pipelines")
        self.git("commit", "-qm", f"{how} {path.name}")
        before = self.statement_names()
        try:
            deployment = self.deployer().deploy_commit(self.cursor, self.git("rev-parse", "HEAD"))
        except (PlanError, ProjectError) as refused:
            assert str(path.relative_to(self.root)) in str(refused), str(refused)
        else:
            assert not deployment.plan.changes, [(s.table, s.action.value) for s in deployment.plan.changes]
            deployment.wait()
        assert self.statement_names() == before
        path.write_text(text)
        self.git("add", "-A", "pipelines")
        self.git("commit", "-qm", f"restore {path.name}")  # the cursor stays: the net change is none
        self.count()

    @rule(via_git=st.booleans())
    @operation
    def commit_a_typo_in_a_parent_name(self, via_git: bool) -> None:
        """`FROM src_ordres` committed in big_orders' DML: refused at plan time naming dml file:line, on the
        deploy path and on the git sensor's path alike, and nothing is created; then the fix is committed.
        (The sensor's path is pending: today it plans big_orders_v2 and fails at run time, case 4.)"""
        path = script(self.root, "big_orders", "dml")
        path.write_text(TYPO_DML)
        self.git("commit", "-qam", "typo in a parent's name")
        before = self.statement_names()
        where = f"{path.relative_to(self.root)}:2"
        try:
            with pytest.raises(PlanError) as refused:
                if via_git:
                    self.deployer().deploy_commit(self.cursor, self.git("rev-parse", "HEAD"))
                else:
                    self.deployer().deploy(["big_orders"])
            assert where in str(refused.value), (where, str(refused.value))
            assert self.statement_names() == before
        finally:
            write_project(self.root, self.multiplier, self.weight, self.extra)
            self.git("commit", "-qam", "fix the typo")
        self.count()

    def backfill_window(self) -> tuple[datetime, datetime]:
        """A closed window holding every record so far: rewriting it with the same SQL changes nothing."""
        end = datetime.now(UTC)
        return end - timedelta(hours=2), end

    @precondition(lambda self: AMOUNTS in self.serving and not self.stopped & {"src_orders", AMOUNTS})
    @rule()
    @operation
    def backfill_a_deployed_table(self) -> None:
        """A closed-window backfill of the keyed stateless table: its upserts rewrite the same keys with
        the same values (running twice = once), so the oracle is unchanged and the run succeeds."""
        deployment = self.deployer().backfill([AMOUNTS], *self.backfill_window())
        assert {(s.table, s.action) for s in deployment.plan.changes} == {(AMOUNTS, Action.BACKFILL)}
        deployment.wait()
        self.count()

    @precondition(lambda self: AMOUNTS not in self.serving and self.candidate is None
                  and not self.stopped & {"src_orders"} and not self.source_changed())
    @rule()
    @operation
    def backfill_a_table_not_deployed(self) -> None:
        """A backfill of a table never deployed: either refused at plan time (nothing created), or the plan
        deploys it first, visibly, and the run succeeds; never a run-time failure (pending: today the
        window is planned alone and fails with "Table ... does not exist", case 4)."""
        before = self.statement_names()
        try:
            deployment = self.deployer().backfill([AMOUNTS], *self.backfill_window())
        except (PlanError, BackfillRefused):
            assert self.statement_names() == before
        else:
            steps = [(s.table, s.action) for s in deployment.plan.changes]
            assert (AMOUNTS, Action.DEPLOY) in steps and steps.index((AMOUNTS, Action.DEPLOY)) < steps.index(
                (AMOUNTS, Action.BACKFILL)), steps
            deployment.wait()
            self.predict_deploy(AMOUNTS)
        self.count()

    def kill_once_planned(self, delay: float, table: str, start: str = "", crash_after: str = "") -> None:
        """KILLED_DEPLOYMENT of `table` (a reprocess when `start` is given), SIGKILLed `delay` after it planned,
        or by itself once the step of `crash_after` finished."""
        process = subprocess.Popen([sys.executable, "-c", KILLED_DEPLOYMENT, str(self.root), self.service.url, table,
                                    start, crash_after], stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            first = process.stdout.readline().strip()
            assert first == "planned", first
            if crash_after:
                process.wait(180)  # it ends by itself at that step (or, when the step never comes, at its end)
            else:
                time.sleep(delay)
        finally:
            process.kill()  # SIGKILL
            process.wait(30)

    @precondition(lambda self: self.candidate is None and not self.source_recreation_refused())
    @rule(table=st.sampled_from(TABLES), delay=st.sampled_from([0.0, 0.3, 1.0]), at_its_first_step=st.booleans())
    @operation
    def kill_a_deployment_holding_the_lease(self, table: str, delay: float, at_its_first_step: bool = False) -> None:
        """kill -9 of a deployment process after it planned (it holds the lease), then deploy again: the dead
        holder's lease is taken over within 30 s, and the deployment converges to what one deploy predicts.
        `at_its_first_step`: the process dies as soon as the step of `table` itself finished, so a deployment
        recreating src_orders leaves its deployed children unrecreated (their statements FAILED, or reading
        the new topic from old offsets); deploying src_orders again repairs them (issue 31)."""
        self.kill_once_planned(delay, table, crash_after=table if at_its_first_step else "")
        started = time.monotonic()
        deployment = self.deployer("after-kill", lease_wait_seconds=DEAD_HOLDER_WAIT).deploy([table])
        assert time.monotonic() - started < DEAD_HOLDER_WAIT, "waited on a dead holder's lease"
        deployment.wait()
        self.predict_deploy(table)
        self.count()

    @precondition(lambda self: self.candidate is None)
    @rule(table=st.sampled_from(TABLES), delay=st.sampled_from([0.0, 0.3, 1.0]))
    @operation
    def restart_the_service_mid_deployment(self, table: str, delay: float) -> None:
        """The service stops under a running deployment and starts again on the same data and port: the
        deployment ends (either way) within its timeout, and deploying again converges with nothing lost
        or duplicated. (An in-process service: its HTTP server and engine stop abruptly mid-tick; a SIGKILL
        of a service process is tests/integration/test_service_process.py's.)"""
        outcome: list[BaseException | None] = []

        def deploy() -> None:
            try:
                self.deployer().deploy([table]).wait()
                outcome.append(None)
            except BaseException as error:  # noqa: BLE001 - either outcome is allowed; a hang is not
                outcome.append(error)

        thread = threading.Thread(target=deploy)
        thread.start()
        time.sleep(delay)
        self.service.stop()
        self.service = InProcessService(self.root / "data", port=self.service.port, spark_factory=_SPARK[0]).start()
        thread.join(timeout=300)
        assert not thread.is_alive(), "a deployment hung across a service restart"
        self.deploy_and_predict(table)
        self.count()

    @precondition(lambda self: self.candidate is None)
    @rule(table=st.sampled_from(sorted(ORDERS - {"src_orders"})))
    @operation
    def deploy_excluding_the_sources(self, table: str) -> None:
        """What an asset defined with `exclude=["src_*"]` runs (issue 25, Build 5): an excluded table is never
        deployed by it, nor resumed when stopped (bench_model --seed 3300 round 1); a selected table whose
        excluded ancestor is not deployed is refused at plan time naming that ancestor."""
        if "src_orders" not in self.serving:
            before = self.statement_names()
            with pytest.raises(PlanError, match="src_orders"):
                self.deployer().deploy([table], exclude=["src_*"])
            assert self.statement_names() == before
        else:
            deployment = self.deployer().deploy([table], exclude=["src_*"])
            assert not [s for s in deployment.plan.changes if (s.table or "").startswith("src_")], deployment
            deployment.wait()
            left_stopped = self.stopped & {"src_orders"}  # an excluded source is never resumed either
            self.predict_deploy(table)
            self.stopped |= left_stopped
        self.count()

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    @reported
    def deployed_tables_have_their_statement(self) -> None:
        if self.serving:
            names = {s.name: s.phase for s in self.client.list_statements()}
            for table in self.serving:
                assert names.get(statement(self.physical(table))) in ("RUNNING", "STOPPED"), (table, names)

    def expected(self) -> dict[str, list[tuple]]:
        """Every serving table's rows from the oracle (the SQL of each stretch over the raw topics)."""
        return oracle(self.raw, self.tiers, self.segments, self.since, self.totals_weight)

    @invariant()
    @reported
    def checks_agree_with_the_oracle(self) -> None:
        """After every operation (but a raw insert, so deploys still meet records in flight): the pipeline
        catches up, no table holds fewer rows than before unless the model recreated it, and every check
        `shift-left-dagster check` runs gives the oracle's verdict: reconciled and unique_primary_key pass
        exactly when the sink equals the oracle, schema_matches_ddl passes, statement_healthy passes exactly
        when the statement is not stopped. A table whose own statement or parent is stopped is judged
        only by statement_healthy (its sink is behind by design). Pending: see `other_code`."""
        if not self.serving or self.last_rule in ("insert_raw_records", "upsert_raw_tiers"):
            return
        if self.operations % self.check_every and self.last_rule not in ALWAYS_CHECKED:
            return
        assert quiesce(self.service.url)["quiet"]
        judged = {t for t in self.serving if not self.stopped & {t, PARENT.get(t)}}
        self.judge({t: self.physical(t) for t in self.serving}, self.expected(), judged, self.stopped)

    def judge(self, physical: dict[str, str], expected: dict[str, list[tuple]], judged: set[str], stopped: set[str],
              floors: bool = True) -> None:
        """The sinks of `physical` (table -> the version looked at) against the oracle, and their checks'
        verdicts against the sinks' truth; `judged`: tables that must have caught up; `floors`: no table
        holds fewer rows than at the last look."""
        equal: dict[str, bool] = {}
        found: dict[str, list[tuple]] = {}
        for table in physical:
            actual = found[table] = select(self.client, f"SELECT * FROM `{physical[table]}`")
            if floors:
                assert len(actual) >= self.floor.get(table, 0), (table, "lost rows", self.floor[table], len(actual))
                self.floor[table] = len(actual)
            equal[table] = actual == rows(expected[table])
        for outcome in self.checks(physical):
            table, check = outcome.table, CheckName(outcome.check)
            if table in stopped:
                if check == CheckName.STATEMENT_HEALTHY:
                    assert not outcome.passed, (table, "STOPPED yet healthy", outcome.message)
                continue
            if table not in judged:
                continue
            if check == CheckName.SCHEMA_MATCHES_DDL and table in self.drifting() and physical[table] == self.physical(
                    table):
                continue
            data_check = check in (CheckName.RECONCILED, CheckName.UNIQUE_PRIMARY_KEY)
            if data_check and equal[table] and not found[table]:
                # Right, and empty: a check that compared nothing passes only when its sources hold nothing
                # either (the project's rule), else it is a WARN that never blocks (found by bench_model: a
                # filter that drops every record read).
                assert outcome.passed or not outcome.blocking, (table, check.value, outcome.message)
                continue
            truth = equal[table] if data_check else True
            assert outcome.passed == truth, (table, check.value, outcome.message, "sink equals oracle:", truth)
        for table in judged:
            assert equal[table], (table, physical[table], "sink", found[table], "oracle", rows(expected[table]),
                                  self.segments, self.since)

    def drifting(self) -> set[str]:
        """Tables whose committed DDL is not deployed yet: schema_matches_ddl reads git's DDL, so a committed
        added column the sink lacks is red until the sensor's run deploys it (drift, said on purpose)."""
        return {"src_orders"} if self.segments and self.extra and not self.segments[-1][2] else set()

    def checks(self, physical: dict[str, str]) -> list:
        """The checks of tables (table -> the version looked at), evaluated as `shift-left-dagster check` does."""
        graph = ProjectGraph(build_inventory(self.root / "pipelines", use_cache=False, strict=False))
        tables = [graph.tables[t] for t in sorted(physical)]
        reader = LocalSinkReader(LocalData(self.service.data_dir, _SPARK[0]()))
        try:
            return run_checks(tables, reader, find_dml_statements(self.client, tables, "local", physical),
                              ChecksSettings(catch_up_seconds=5.0), physical=physical)
        finally:
            reader.close()

    def teardown(self) -> None:
        try:
            if self.serving:
                self.settle_and_compare()
        finally:
            if hasattr(self, "service"):
                self.service.stop()
                shutil.rmtree(self.root, ignore_errors=True)
            _RUNS.append(self.operations)

    @reported
    def settle_and_compare(self) -> None:
        """Deploy every deployed table once more, check a re-plan changes nothing, catch up, compare."""
        for table in sorted(self.serving):
            self.deploy_and_predict(table)
        if self.candidate is None and self.shadow is None:
            replan = self.deployer().deploy(sorted(self.serving)).plan
            assert not replan.changes, [(s.table, s.action.value, s.reason) for s in replan.changes]
        assert quiesce(self.service.url)["quiet"]
        expected = self.expected()
        for table in self.serving:
            actual = select(self.client, f"SELECT * FROM `{self.physical(table)}`")
            assert actual == rows(expected[table]), (table, self.segments, self.raw, self.tiers)
            if table in (TOTALS, AMOUNTS, TIERS):
                duplicated = [k for k, n in Counter(r[0] for r in actual).items() if n > 1]
                assert not duplicated, duplicated
        if self.candidate is not None:
            version, weight = self.candidate
            actual = select(self.client, f"SELECT * FROM `{versioned_name(TOTALS, version)}`")
            assert actual == rows(totals_rows(expected["src_orders"], weight)), ("candidate", self.candidate)
        if self.shadow is not None:
            shadowed = self.expected_shadow()
            for table, name in self.shadow.physical().items():
                if "src_orders" in self.stopped and table in ORDERS and "src_orders" not in self.shadow.versions:
                    continue  # reads a stopped src_orders: behind by design
                actual = select(self.client, f"SELECT * FROM `{name}`")
                assert actual == rows(shadowed[table]), ("reprocessed", name, self.shadow, self.raw)


_SPARK: list = []
_RUNS: list[int] = []
_KINDS: Counter[str] = Counter()


def test_every_sink_equals_the_oracle_after_random_deployments(spark) -> None:  # type: ignore[no-untyped-def]
    """CI: a fixed seed set (derandomized), bounded; SL_MODEL_RANDOM=1 takes pytest's --hypothesis-seed
    instead (bench/bench_model.py's rounds). The summary is printed whether or not a counterexample is found."""
    _SPARK[:] = [lambda: spark]
    found = "no counterexample"
    try:
        run_state_machine_as_test(DeploymentModel, settings=settings(
            max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
            derandomize=os.environ.get("SL_MODEL_RANDOM") != "1",
            phases=[phase for phase in Phase if phase != Phase.shrink or os.environ.get("SL_MODEL_SHRINK") != "0"],
            suppress_health_check=list(HealthCheck), database=None))
    except BaseException:
        found = "a counterexample"
        raise
    finally:
        print(f"model: {len(_RUNS)} sequences, {sum(_RUNS)} operations ({dict(_KINDS)}), {found}")
    assert sum(_RUNS) >= EXAMPLES  # (every kind is reached by the walk below)


# Every operation once, in an order that reaches each of them.
WALK: list[tuple[str, tuple]] = [
    ("insert_raw_records", ([("ann", 7), ("bob", 3)],)),
    ("upsert_raw_tiers", ([("ann", 1), ("ann", 2), ("bob", 0)],)),
    ("backfill_a_table_not_deployed", ()),
    ("deploy", (TIERS,)),
    ("deploy", (AMOUNTS,)),
    ("backfill_a_deployed_table", ()),
    ("commit_added_column", ()),
    ("insert_raw_records", ([("cy", 9)],)),
    ("sensor_run_deploys_the_commits", ()),  # the added column, in place
    ("commit_source_change", ()),
    ("insert_raw_records", ([("cy", 4)],)),
    ("sensor_run_deploys_the_commits", ()),  # amount * 2, in place
    ("break_and_restore_a_file", ("src_orders", "ddl", "empty", True)),
    ("break_and_restore_a_file", ("big_orders", "dml", "empty", False)),
    ("break_and_restore_a_file", ("big_orders", "dml", "delete", False)),
    ("break_and_restore_a_file", ("src_orders", "ddl", "delete", True)),
    ("commit_a_broken_file_then_its_restoration", (AMOUNTS, "dml", "empty")),
    ("commit_a_broken_file_then_its_restoration", (AMOUNTS, "dml", "delete")),
    ("commit_a_typo_in_a_parent_name", (False,)),
    ("commit_a_typo_in_a_parent_name", (True,)),
    ("deploy", (TOTALS,)),
    ("reprocess_from_a_mark", ("src_orders", 3)),  # from the 4th raw record, with its three deployed children
    ("insert_raw_records", ([("bob", 8)],)),
    ("stop", ("src_orders",)),  # the serving version; the new ones run on
    ("check_then_promote_or_roll_back_the_reprocess", (True,)),
    ("kill_a_reprocess_holding_the_lease", (TIERS, 2, 0.3)),
    ("reprocess_from_a_mark", (TIERS, 2)),  # after the first upserts: holds only the later ones
    ("stop_and_resume_the_reprocess", ([("ann", 5)],)),
    ("upsert_raw_tiers", ([("cy", 2), ("ann", 3)],)),
    ("check_then_promote_or_roll_back_the_reprocess", (True,)),
    ("reprocess_from_a_mark", (TOTALS, 1)),
    ("check_then_promote_or_roll_back_the_reprocess", (False,)),
    ("reprocess_from_a_mark", (AMOUNTS, 2)),  # ids before the mark only in the serving version: verified all the same
    ("promote_a_reprocess_behind_its_serving_version", ([("bob", 6)],)),
    ("check_then_promote_or_roll_back_the_reprocess", (True,)),
    ("commit_aggregate_change", ()),
    ("sensor_run_deploys_the_commits", ()),  # COUNT(*) * 10: a candidate beside the serving one
    ("promote_or_rollback", (True,)),
    ("stop", ("big_orders",)),
    ("restart_the_service_mid_deployment", ("big_orders", 0.3)),
    ("commit_source_change", ()),
    ("kill_a_deployment_holding_the_lease", ("src_orders", 0.0, True)),  # dies once src_orders is recreated
    ("deploy_excluding_the_sources", ("big_orders",)),
    ("concurrent_deploys", ("src_orders", TOTALS)),
]


def walk(spark, steps: list[tuple[str, tuple]], pipeline_first: bool = True) -> None:  # type: ignore[no-untyped-def]
    """The model driven through `steps`, invariants after each."""
    _SPARK[:] = [lambda: spark]
    machine = DeploymentModel()
    machine.start_service(pipeline_first=pipeline_first)
    machine.check_every = 1
    try:
        for name, args in steps:
            getattr(machine, name)(*args)
            machine.last_rule = name
            machine.deployed_tables_have_their_statement()
            machine.checks_agree_with_the_oracle()
    finally:
        machine.teardown()


def test_a_walk_through_every_operation(spark) -> None:  # type: ignore[no-untyped-def]
    """The same model driven through every operation once, invariants after each, so CI reaches each kind
    whatever the random sequences above happen to draw."""
    walk(spark, WALK)


# Counterexamples the model found, kept as they were found (shrunk).
REGRESSIONS: dict[str, list[tuple[str, tuple]]] = {
    # The same kill after src_orders and big_orders were promoted to version 2 (found by the walk): the FAILED
    # big_orders_v2 was no serving version any more, so the redeploy skipped it and a later one deployed a
    # version 1 beside it (now the newest failed version serves, and is repaired).
    "a promoted version left failed by a killed deployment is repaired as that version": [
        ("insert_raw_records", ([("ann", 7), ("bob", 3)],)),
        ("reprocess_from_a_mark", ("src_orders", 1)),
        ("insert_raw_records", ([("cy", 8)],)),
        ("check_then_promote_or_roll_back_the_reprocess", (True,)),
        ("commit_source_change", ()),
        ("kill_a_deployment_holding_the_lease", ("src_orders", 0.0, True)),
    ],
    # bench_model --seed 3300, round 1 (printed without its assertion then): a deploy excluding the sources
    # resumed the stopped src_orders it excludes (now left stopped, the plan saying so).
    "a deploy excluding the sources leaves a stopped source stopped": [
        ("insert_raw_records", ([("ann", 7)],)),
        ("stop", ("src_orders",)),
        ("deploy_excluding_the_sources", (TOTALS,)),
        ("insert_raw_records", ([("bob", 9)],)),
    ],
    # A commit to src_orders while it was being reprocessed, then stop and resume of the reprocess: the resume
    # is refused (its code changed since it was stopped), which the model did not predict (CI's seeds).
    "a reprocess stopped after a commit to its table is not resumed, and is rolled back": [
        ("reprocess_from_a_mark", ("src_orders", 0)),
        ("commit_added_column", ()),
        ("stop_and_resume_the_reprocess", ([("ann", 4)],)),
        ("insert_raw_records", ([("bob", 9)],)),
    ],
    # promote's verification refused every reprocess whose serving version held keys from before T (issue 31
    # defect 2): order_amounts reprocessed from between two inserts lacks the first insert's ids, by consent.
    "a correct reprocess from T verifies though the serving version holds older keys": [
        ("insert_raw_records", ([("ann", 7), ("bob", 2)],)),
        ("deploy", (AMOUNTS,)),
        ("insert_raw_records", ([("cy", 4)],)),
        ("reprocess_from_a_mark", (AMOUNTS, 1)),
        ("check_then_promote_or_roll_back_the_reprocess", (True,)),
    ],
    # A deployment recreating src_orders died between recreating it and recreating its child: big_orders was
    # left FAILED, and deploying src_orders again (now unchanged) skipped it (bench_model's rounds; now the
    # plan redeploys a target's FAILED child and recreates a child whose parent was recreated under it).
    "a deployment killed before recreating a child is repaired by deploying again": [
        ("insert_raw_records", ([("ann", 7), ("bob", 9)],)),
        ("commit_source_change", ()),
        ("kill_a_deployment_holding_the_lease", ("src_orders", 0.0, True)),
        ("insert_raw_records", ([("cy", 8)],)),
    ],
    # A table deployed after a reprocess built new versions reads the serving src_orders; promoting src_orders
    # retired it, and order_amounts stopped receiving rows (now refused naming order_amounts, then rolled back).
    "a reader deployed beside a reprocess is not stranded by its promotion": [
        ("insert_raw_records", ([("ann", 7)],)),
        ("reprocess_from_a_mark", ("src_orders", 0)),
        ("deploy", (AMOUNTS,)),
        ("check_then_promote_or_roll_back_the_reprocess", (True,)),
        ("insert_raw_records", ([("bob", 9)],)),
    ],
    # A commit changing the aggregate while it was being reprocessed: the sensor's run deployed version 2
    # again, from earliest with the commit's code, over the reprocess catching up (now refused).
    "a commit does not replace a reprocess catching up": [
        ("deploy", (TOTALS,)),
        ("insert_raw_records", ([("ann", 7)],)),
        ("commit_aggregate_change", ()),
        ("reprocess_from_a_mark", (TOTALS, 1)),
        ("insert_raw_records", ([("bob", 9)],)),
        ("sensor_run_deploys_the_commits", ()),
        ("check_then_promote_or_roll_back_the_reprocess", (True,)),
        ("sensor_run_deploys_the_commits", ()),
    ],
    # An in-place commit to src_orders while it was being reprocessed: only the serving version took the
    # change, so promotion served the old code with the sensor's cursor past the commit (now refused).
    "an in-place commit waits for a reprocess of its table": [
        ("reprocess_from_a_mark", ("src_orders", 0)),
        ("commit_source_change", ()),
        ("insert_raw_records", ([("cy", 4)],)),
        ("sensor_run_deploys_the_commits", ()),
        ("check_then_promote_or_roll_back_the_reprocess", (False,)),
        ("sensor_run_deploys_the_commits", ()),
    ],
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_a_counterexample_found_before(spark, name: str) -> None:  # type: ignore[no-untyped-def]
    walk(spark, REGRESSIONS[name])


def test_live_state_type_is_what_plans_read() -> None:
    assert LiveState().tables is None  # unknown tables: plans trust statements alone

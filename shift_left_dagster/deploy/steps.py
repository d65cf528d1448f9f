"""The step types of a deployment plan: one pydantic model per action (SQLMesh's typed stages).

Each model holds exactly what its action needs, so the executor and the printer
dispatch over the same types (`match step:`) and a plan's JSON says what every
step is by its `action` (the discriminator). Table steps share the names a
table's statements and topic have in an environment (`TableStep`).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from shift_left_dagster.project.analysis import StateForm


class Action(StrEnum):
    CREATE_POOL = "create_compute_pool"
    SEED = "seed_raw_topic"  # local service: create a raw topic from the project's seeds/
    DEPLOY = "deploy"  # (re)create the table, start the DML from earliest (or the range start)
    RECREATE = "recreate"  # stop the DML, drop and recreate the table, reprocess from earliest
    RESUME = "resume"  # a STOPPED statement with the same code: resumed from its latest offsets
    STOP = "stop"  # a running statement stopped, its offsets kept (a resume continues from them)
    REPLACE_DML = "replace_dml"  # dml-only: table kept, statement replaced (from offsets when stateless)
    REPLACE_IN_PLACE = "replace_in_place"  # compatible stateless change: ALTER, swap from offsets, verify
    BACKFILL = "backfill_window"  # a bounded statement over a window of event time
    PROMOTE = "promote"  # a candidate version serves: the old version's statements are removed
    ROLLBACK = "rollback"  # a candidate version is removed: statements, then its table
    UNDEPLOY = "undeploy"  # a table's statements are removed, then its table (when nothing else reads it)
    SKIP = "skip"


class PlanKind(StrEnum):
    """Which entry point made a plan (the printer's first word; the run's tag)."""

    DEPLOY = "deploy"
    COMMIT = "commit"
    BACKFILL = "backfill"
    PROMOTE = "promote"
    ROLLBACK = "rollback"
    UNDEPLOY = "undeploy"
    HOUSEKEEPING = "housekeeping"
    REPROCESS = "reprocess"
    SEED = "seed"
    STOP = "stop"
    RESUME = "resume"


# Actions after which a table's topic is new: its children must be recreated.
RECREATING = frozenset({Action.DEPLOY, Action.RECREATE})


class PoolRef(BaseModel):
    """The compute pool a step runs in: an existing pool id, or one a CREATE_POOL step makes."""

    id: str | None = None
    create: str | None = None  # display name

    def __str__(self) -> str:
        return self.id or f"new pool {self.create}"


class Step(BaseModel):
    """What every step has: its place in the plan, why it is there, what must finish first."""

    action: Action
    index: int = 0
    reason: str
    depends_on: list[int] = Field(default_factory=list)
    table: str | None = None  # the logical table the step acts on (None: pool and seed steps)

    @property
    def target(self) -> str:
        """What the step acts on, as printed."""
        return self.table or ""


class CreatePoolStep(Step):
    action: Literal[Action.CREATE_POOL] = Action.CREATE_POOL
    pool: PoolRef

    @property
    def target(self) -> str:
        return str(self.pool)


class SeedStep(Step):
    action: Literal[Action.SEED] = Action.SEED
    topic: str
    seed_file: str  # relative to the project's seeds folder

    @property
    def target(self) -> str:
        return self.topic


class TableStep(Step):
    """A step on one table's deployed version: its names in the environment and its code."""

    table: str
    product: str | None = None  # part of statement names
    version: int = 1  # blue/green version the step acts on
    physical_table: str  # the name deployed (a blue/green version)
    ddl_statement: str
    dml_statement: str | None = None  # None: a table with no DML
    drop_statement: str
    state_form: StateForm | None = None
    code_version: str | None = None

    @property
    def target(self) -> str:
        return self.physical_table


class SkipStep(TableStep):
    """Nothing to do: reported (its statements observed) so the run can say what it left alone."""

    action: Literal[Action.SKIP] = Action.SKIP


class ResumeStep(TableStep):
    action: Literal[Action.RESUME] = Action.RESUME
    pool: PoolRef


class StopStep(TableStep):
    """A running (or FAILING) DML statement stopped: nothing more is read or written, its offsets kept."""

    action: Literal[Action.STOP] = Action.STOP


class DeployStep(TableStep):
    """DEPLOY / RECREATE: the table is (re)created and its DML starts from earliest or `start_at`."""

    action: Literal[Action.DEPLOY, Action.RECREATE]
    pool: PoolRef
    ddl_sql: str | None = None  # rendered once, physical names applied
    dml_sql: str | None = None
    start_at: datetime | None = None
    validate_first: bool = True  # compile the new DML on the target before destroying anything


class ReplaceStep(TableStep):
    """REPLACE_DML / REPLACE_IN_PLACE: the table is kept, its statement swapped (from offsets when
    `carry_offsets`); an in-place change applies `alter_sql` first and must stay healthy."""

    action: Literal[Action.REPLACE_DML, Action.REPLACE_IN_PLACE]
    pool: PoolRef
    dml_sql: str
    dml_statement: str
    carry_offsets: bool = False
    alter_sql: list[str] = Field(default_factory=list)  # nullable columns added
    kept_columns: list[str] = Field(default_factory=list)  # the columns the table had before them


class BackfillStep(TableStep):
    """A bounded statement over [start_at, end_at) of event time: created, waited on, deleted."""

    action: Literal[Action.BACKFILL] = Action.BACKFILL
    pool: PoolRef
    dml_sql: str
    start_at: datetime
    end_at: datetime


class RetireStep(Step):
    """PROMOTE / ROLLBACK / UNDEPLOY: statements removed, then (drop_table) the table they wrote."""

    action: Literal[Action.PROMOTE, Action.ROLLBACK, Action.UNDEPLOY]
    table: str
    product: str | None = None
    version: int = 1
    physical_table: str | None = None  # None: only statements go (housekeeping)
    retire: list[str] = Field(default_factory=list)
    drop_table: bool = False
    drop_statement: str | None = None

    @property
    def target(self) -> str:
        return self.physical_table or self.table


PlanStep = Annotated[
    CreatePoolStep | SeedStep | SkipStep | ResumeStep | StopStep | DeployStep | ReplaceStep | BackfillStep
    | RetireStep,
    Field(discriminator="action"),
]
RunsInPool = ResumeStep | DeployStep | ReplaceStep | BackfillStep

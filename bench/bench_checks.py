"""Benchmark of the `reconciled` check on a large sink, next to bare Spark over the same files.

An append parent (N rows) and an upsert sink with a primary key, the output of
a stateless DML over the parent, are generated with Spark straight into the
local service's storage format; the DML statement's saved progress says it
has read the whole parent. Then, in the same run and SparkSession:

- ours: the `reconciled` check as the Dagster op runs it (the DML translated by
  the local translator over the parent's log as of the statement's offsets,
  the sink's upsert state, a full outer join on the key, counts and samples);
- bare: the same query written by hand over the parent's parquet files, and
  EXCEPT ALL both ways against the sink's parquet files (one action).

Run by hand: python bench/bench_checks.py [--rows 10000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import BaseModel  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from shift_left_dagster.checks import (  # noqa: E402
    CheckName,
    ChecksSettings,
    LocalSinkReader,
    find_dml_statements,
    run_checks,
)
from shift_left_dagster.deploy.naming import statement_name  # noqa: E402
from shift_left_dagster.local.catalog import INSERT, OP, ROWTIME, TableDef  # noqa: E402
from shift_left_dagster.local.process import InProcessService  # noqa: E402
from shift_left_dagster.local.reader import LocalData  # noqa: E402
from shift_left_dagster.project.graph import ProjectGraph  # noqa: E402
from shift_left_dagster.project.inventory import build_inventory  # noqa: E402
from tests.integration.support import client_for, run  # noqa: E402

PARENT_DDL = """CREATE TABLE bench_events (
  event_id BIGINT, user_id STRING, amount DECIMAL(12, 2), status STRING
) DISTRIBUTED INTO 4 BUCKETS"""
SINK_DDL = """CREATE TABLE bench_events_clean (
  event_id BIGINT, user_id STRING, amount DECIMAL(12, 2), status STRING,
  PRIMARY KEY (event_id) NOT ENFORCED
) DISTRIBUTED BY HASH(event_id) INTO 4 BUCKETS WITH ('changelog.mode' = 'upsert')"""
SINK_DML = """INSERT INTO bench_events_clean
SELECT event_id, UPPER(TRIM(user_id)) AS user_id, amount, LOWER(status) AS status
FROM bench_events
WHERE amount >= 0"""
DML_STATEMENT = statement_name("bench", "bench", "dml", "bench_events_clean")  # as the plan names it


class Figures(BaseModel):
    rows: int
    sink_rows: int
    ours_seconds: float
    bare_seconds: float

    @property
    def ratio(self) -> float:
        return self.ours_seconds / self.bare_seconds


def parent_rows(spark: SparkSession, rows: int) -> DataFrame:
    return spark.range(rows).select(
        F.col("id").alias("event_id"),
        F.concat(F.lit(" u-"), (F.col("id") % 100_000).cast("string"), F.lit(" ")).alias("user_id"),
        (((F.col("id") * 7919) % 20_000 - 1_000) / 100).cast("decimal(12,2)").alias("amount"),
        F.element_at(F.array(F.lit("NEW"), F.lit("Paid"), F.lit("SHIPPED")), (F.col("id") % 3 + 1).cast("int"))
        .alias("status"))


def dml_by_hand(parent: DataFrame) -> DataFrame:
    """SINK_DML written with the DataFrame API (what the DML computes, without our translator)."""
    return parent.where(F.col("amount") >= 0).select(
        "event_id", F.upper(F.trim("user_id")).alias("user_id"), "amount", F.lower("status").alias("status"))


def write_project(root: Path) -> ProjectGraph:
    """A two-table pipelines folder, so the check runs on the project's own models."""
    for kind, table, files in (("sources", "bench_events", {"ddl": PARENT_DDL}),
                               ("intermediates", "bench_events_clean", {"ddl": SINK_DDL, "dml": SINK_DML})):
        scripts = root / "pipelines" / kind / "bench" / table / "sql-scripts"
        scripts.mkdir(parents=True)
        for name, sql in files.items():
            (scripts / f"{name}.{table}.sql").write_text(sql + ";\n")
    return ProjectGraph(build_inventory(root / "pipelines", use_cache=False))


def append(service: InProcessService, table: str, rows: DataFrame, producer: str | None) -> list[str]:
    """Write rows into a table's log as one batch; return the table's parquet files."""
    engine = service.engine
    definition: TableDef = next(t for t in engine.store.tables() if t.name == table)
    records = rows.withColumn(ROWTIME, F.current_timestamp()).withColumn(OP, F.lit(INSERT).cast("tinyint"))
    batch = engine.logs.write(definition, records, producer)
    assert batch is not None
    engine.store.append_batches([batch])
    return [str(service.data_dir / f) for b in engine.store.batches(definition.uid) for f in b.files]


def timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def bench(data: Path, rows: int, repeat: int, report: Callable[[str], None] = print) -> Figures:
    """Generate the tables, then time both reconciliations (best of `repeat`); both must find no difference."""
    graph = write_project(data / "project")
    # The engine only acts when woken by the REST API: it never processes the bulk-written parent.
    with InProcessService(data / "service", tick_seconds=3600) as service:
        client = client_for(service.url)
        run(client, "bench-ddl-bench-events", PARENT_DDL)
        run(client, "bench-ddl-bench-events-clean", SINK_DDL)
        run(client, DML_STATEMENT, SINK_DML, "RUNNING")  # one run over the empty parent: progress saved
        spark = service.engine.logs.spark
        parent = parent_rows(spark, rows)
        seconds, parent_files = timed(lambda: append(service, "bench_events", parent, producer=None))
        sink_files = append(service, "bench_events_clean", dml_by_hand(parent), producer=DML_STATEMENT)
        store = service.engine.store
        state = store.run_state(DML_STATEMENT)
        assert state is not None
        source = state.sources["bench_events"]
        source.next = store.end_offsets(source.table_uid)  # the statement has read the whole parent
        store.commit_run(DML_STATEMENT, state, [])
        sink_rows = sum(b.rows for b in store.batches(next(t.uid for t in store.tables()
                                                            if t.name == "bench_events_clean")))
        report(f"generated {rows:,} parent rows and {sink_rows:,} sink rows ({seconds:.1f} s for the parent)")

        table = graph.tables["bench_events_clean"]
        statements = find_dml_statements(client, [table], "bench")
        settings = ChecksSettings(enabled=[CheckName.RECONCILED])

        def ours() -> None:
            reader = LocalSinkReader(LocalData(service.data_dir, spark))
            try:
                outcome = run_checks([table], reader, statements, settings)[0]
            finally:
                reader.close()
            assert outcome.passed, outcome.message

        def bare() -> None:
            expected = dml_by_hand(spark.read.parquet(*parent_files))
            actual = spark.read.parquet(*sink_files).select(*expected.columns)
            assert expected.exceptAll(actual).unionAll(actual.exceptAll(expected)).count() == 0

        ours_s = min(timed(ours)[0] for _ in range(repeat))
        bare_s = min(timed(bare)[0] for _ in range(repeat))
        return Figures(rows=rows, sink_rows=sink_rows, ours_seconds=ours_s, bare_seconds=bare_s)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-checks-"))
    try:
        figures = bench(data, args.rows, args.repeat)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(f"reconciled, {figures.sink_rows:,}-row upsert sink over a {figures.rows:,}-row parent: "
          f"check {figures.ours_seconds:.2f} s, bare Spark EXCEPT ALL both ways {figures.bare_seconds:.2f} s, "
          f"ratio {figures.ratio:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()

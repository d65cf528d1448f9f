"""Runs the oracle corpus on Apache Flink (PyFlink, streaming mode); executed by the PyFlink venv's python.

    python runner.py SPEC.json RESULT.json

Only the standard library and pyflink here: this file never imports the
project (the venv does not have it). One process, one MiniCluster for the
whole corpus: each case's tables live in a database of their own, each case's
INSERT is planned on its own (EXPLAIN: Flink's verdict on the statement and
the changelog its sink receives), then every valid case runs in one job, a
UNION ALL of the cases' serialised rows, collected with their RowKind (a job
failing at run time is split in halves, down to the failing case).

The sources are unbounded, as a Confluent statement's are: nothing emits the
end-of-input watermark that would close every window. Each source file ends
with a marker row (its watermark is set by the harness, flink.py); once every
marker is collected, every record has been read, and the job is stopped with a
savepoint, without draining: the savepoint barrier follows the markers, so
everything they trigger is collected before the job ends. No timer decides
anything: the result is deterministic. A job whose markers do not all come
back within its budget (JOB_SECONDS + CASE_SECONDS per case) is cancelled and
split like a failing one, so one stuck case never stalls the others.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from typing import Any

from pyflink.java_gateway import get_gateway
from pyflink.table import EnvironmentSettings, Table, TableEnvironment
from pyflink.table.explain_detail import ExplainDetail

_NESTED = ("ARRAY", "MAP", "ROW", "MULTISET")
_MODE = re.compile(r"changelogMode=\[([A-Z,]*)\]")
END = "__oracle_end"
# A job's time budget (seconds): past it the job is cancelled and its cases split (run_group).
JOB_SECONDS, CASE_SECONDS = 60.0, 3.0


def environment(work: str) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", "1")  # file order is record order, as in one Kafka partition
    config.set("table.exec.resource.default-parallelism", "1")
    config.set("table.local-time-zone", "UTC")  # the zone of the local service and Confluent's default
    # Watermarks follow every record (no 200 ms timer): late records are late deterministically.
    config.set("pipeline.auto-watermark-interval", "0 ms")
    # Flink 2.3 refuses an upsert key that differs from the sink's key without ON CONFLICT, a clause
    # Confluent Cloud's SQL does not have: its statements run with the earlier behaviour.
    config.set("table.exec.sink.require-on-conflict", "false")
    config.set("state.savepoints.dir", f"file://{work}/savepoints")
    return env


def error_text(error: BaseException) -> str:
    """The first line of a Java exception's message (the planner's own words)."""
    java = getattr(error, "java_exception", None)
    text = str(java.toString()) if java is not None else str(error)
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("at ") and "An error occurred while calling" not in line:
            return line
    return text.strip()


def sink_mode(plan: str) -> list[str]:
    """The changelog mode of the rows the sink receives: the Sink node's input in the optimized plan."""
    optimized = plan.split("== Optimized Physical Plan ==", 1)[1].split("== Optimized Execution Plan ==", 1)[0]
    modes = [m.group(1) for m in _MODE.finditer(optimized)]
    return [k for k in modes[1].split(",") if k] if len(modes) > 1 else []


def sink_schema(env: TableEnvironment, sink: str) -> tuple[list[list[str]], list[str]]:
    """The sink's physical columns (name, type) and primary key, as Flink resolved its DDL."""
    schema = getattr(env._j_tenv, "from")(f"`{sink}`").getResolvedSchema()  # noqa: SLF001 (no Python API)
    columns = [[c.getName(), _plain_type(str(c.getDataType().toString()))]
               for c in schema.getColumns() if c.isPhysical()]
    key = schema.getPrimaryKey()
    return columns, (list(key.get().getColumns()) if key.isPresent() else [])


def _plain_type(text: str) -> str:
    return text.replace(" *ROWTIME*", "").replace(" *PROCTIME*", "").removesuffix(" NOT NULL")


def serialised(env: TableEnvironment, case: dict[str, Any], columns: list[list[str]]) -> Table:
    """The case's query as one STRING per row: a JSON array of each sink column's text (scalars as
    CAST(... AS STRING), nested values as JSON_STRING), after the cast the INSERT would apply."""
    # The INSERT was planned (plan_case): the query has a column for each target (the sink's, unlisted).
    width = len(case.get("target_columns") or columns)
    names = [f"q{i}" for i in range(width)]
    targets = case.get("target_columns") or [c[0] for c in columns][:width]
    source = {t.lower(): n for t, n in zip(targets, names, strict=True)}
    items = []
    for name, kind in columns:
        value = f"CAST({source[name.lower()]} AS {kind})" if name.lower() in source else f"CAST(NULL AS {kind})"
        items.append(f"JSON_STRING({value})" if kind.startswith(_NESTED) else f"CAST({value} AS STRING)")
    sql = (f"SELECT '{case['name']}' AS c, JSON_STRING(ARRAY[{', '.join(items)}]) AS r "
           f"FROM ({case['query']}) AS __q({', '.join(names)})")
    return env.sql_query(sql)


def markers(env: TableEnvironment, case: dict[str, Any]) -> list[Table]:
    return [env.sql_query(f"SELECT '{END}' AS c, '{case['name']}/{log}' AS r FROM `{log}` WHERE `{END}` IS TRUE")
            for log in case["logs"]]


def parse_ddls(env: TableEnvironment, index: int, ddls: list[str]) -> str | None:
    """Flink's parser on the case's DDLs as written (the tables it runs are OSS twins, oss.py): a
    reserved word used as a name is refused here, as Confluent refuses it. The DDLs are created in a
    scratch database; only a parse error counts (a LIKE source missing there is not the case's)."""
    env.execute_sql(f"CREATE DATABASE IF NOT EXISTS `ddl_{index}`")
    env.execute_sql(f"USE `ddl_{index}`")
    for ddl in ddls:
        try:
            env.execute_sql(ddl)
        except Exception as error:  # noqa: BLE001
            text = error_text(error)
            if "SqlParserException" in text:
                return text
    return None


def plan_case(env: TableEnvironment, index: int, case: dict[str, Any]) -> tuple[dict[str, Any], list[Table]]:
    """Set a case up and plan it: its result so far, and its serialised query then its end markers
    (nothing when it failed)."""
    started = time.monotonic()
    refused = parse_ddls(env, index, case.get("ddls", []))
    if refused:
        return {"phase": "setup", "error": refused, "plan_seconds": time.monotonic() - started}, []
    env.execute_sql(f"CREATE DATABASE IF NOT EXISTS `case_{index}`")
    env.execute_sql(f"USE `case_{index}`")
    try:
        for statement in case["setup"]:
            env.execute_sql(statement)
    except Exception as error:  # noqa: BLE001 (any Flink failure is the case's result)
        return {"phase": "setup", "error": error_text(error), "plan_seconds": time.monotonic() - started}, []
    try:
        plan = env.explain_sql(case["insert"], ExplainDetail.CHANGELOG_MODE)
        columns, key = sink_schema(env, case["sink"])
        result: dict[str, Any] = {"changelog_mode": sink_mode(plan), "columns": columns, "primary_key": key}
        tables = [serialised(env, case, columns), *markers(env, case)]
    except Exception as error:  # noqa: BLE001
        return {"phase": "plan", "error": error_text(error), "plan_seconds": time.monotonic() - started}, []
    result["plan_seconds"] = time.monotonic() - started
    return result, tables


def collect(tables: list[Table], expected_markers: int, work: str, budget: float) -> dict[str, list[list[Any]]]:
    """Every changelog row of one job over `tables`, by case: [kind, [column texts]]. A job whose
    markers are not all back within `budget` seconds is cancelled (TimeoutError): never a stall."""
    union = tables[0]
    for table in tables[1:]:
        union = union.union_all(table)
    result = union.execute()
    changes: dict[str, list[list[Any]]] = {}
    seen = 0
    expired = threading.Event()

    def cancel() -> None:
        expired.set()
        client = result.get_job_client()
        if client is not None:
            client.cancel()

    watchdog = threading.Timer(budget, cancel)
    watchdog.start()
    try:
        with result.collect() as rows:
            if expected_markers == 0:
                _stop(result, work)
            for row in rows:
                if row[0] == END:
                    seen += 1
                    if seen == expected_markers:
                        _stop(result, work)
                    continue
                changes.setdefault(row[0], []).append([str(row.get_row_kind()), json.loads(row[1])])
    except Exception:
        if expired.is_set():
            raise TimeoutError(f"the job read {seen} of its {expected_markers} end markers in {budget:.0f} s") from None
        raise
    finally:
        watchdog.cancel()
    if expired.is_set():
        raise TimeoutError(f"the job read {seen} of its {expected_markers} end markers in {budget:.0f} s")
    return changes


def _stop(result: Any, work: str) -> None:
    """Stop with a savepoint, not draining: no end-of-input watermark, every row read so far processed."""
    client = result.get_job_client()
    if client is None:
        return
    formats = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType
    client._j_job_client.stopWithSavepoint(False, f"file://{work}/savepoints", formats.CANONICAL)  # noqa: SLF001


def run_group(names: list[str], planned: dict[str, list[Table]], logs: dict[str, int], work: str,
              results: dict[str, Any]) -> None:
    """The cases `names` in one job; when it fails at run time, each half in a job of its own, down to
    the failing case (a failure is that case's result, the others still run)."""
    began = time.monotonic()
    try:
        changes = collect([t for name in names for t in planned[name]], sum(logs[n] for n in names), work,
                          JOB_SECONDS + CASE_SECONDS * len(names))
    except Exception as error:  # noqa: BLE001
        if len(names) == 1:
            results[names[0]].update(phase="run", error=error_text(error), run_seconds=time.monotonic() - began)
            return
        middle = len(names) // 2
        run_group(names[:middle], planned, logs, work, results)
        run_group(names[middle:], planned, logs, work, results)
        return
    elapsed = time.monotonic() - began
    for name in names:
        results[name].update(changes=changes.get(name, []), run_seconds=elapsed / len(names))


def run(spec: dict[str, Any], work: str) -> dict[str, Any]:
    started = time.monotonic()
    env = environment(work)
    results: dict[str, Any] = {"startup_seconds": time.monotonic() - started, "cases": {}}
    planned: dict[str, list[Table]] = {}
    logs = {case["name"]: len(case["logs"]) for case in spec["cases"]}
    for index, case in enumerate(spec["cases"]):
        result, tables = plan_case(env, index, case)
        results["cases"][case["name"]] = result
        if tables:
            planned[case["name"]] = tables
    groups = [[name] for name in planned] if spec.get("each") else [list(planned)] if planned else []
    for group in groups:
        run_group(group, planned, logs, work, results["cases"])
    results["total_seconds"] = time.monotonic() - started
    return results


def main(argv: list[str]) -> int:
    spec_path, result_path, work = argv[1], argv[2], argv[3]
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    results = run(spec, work)
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(results, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""`shift-left-dagster`: the project from a terminal, for shift_left users.

Imports stay light (no Dagster, no Spark) so project commands start fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer

from shift_left_dagster.cli_unit_tests import test_app
from shift_left_dagster.confluent.errors import ConfluentError
from shift_left_dagster.deploy.errors import LeaseBusy
from shift_left_dagster.local.cli import local_app
from shift_left_dagster.project.errors import ConfigFileError, ProjectError

if TYPE_CHECKING:
    from shift_left_dagster.project.report_cache import InventoryReport

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
app.add_typer(local_app, name="local")
app.add_typer(test_app, name="test")

PipelinesOption = Annotated[
    Optional[Path],
    typer.Option("--pipelines", "-p", help="pipelines folder (default: $PIPELINES, else ./flink_project/pipelines)"),
]


def _graph(pipelines: Path | None, strict: bool = False, warn: bool = True, sql: bool = True):
    """The project graph. A broken file leaves out its table and what reads it (said on stderr), so it never
    stops commands about other tables; `strict` makes any broken file an error instead. `sql=False`: without
    the normalised SQL and code versions where they cost the parser (build_inventory)."""
    from shift_left_dagster.project.graph import ProjectGraph
    from shift_left_dagster.project.inventory import build_inventory, paused_gc

    with paused_gc():  # the graph lives as long as the command: no young collection rescans it
        graph = ProjectGraph(build_inventory(pipelines, strict=strict, sql=sql))
    for problem in graph.inventory.problems if warn else []:
        left_out = [b.table for b in graph.inventory.broken if (b.file, b.line, b.message) == (
            problem.file, problem.line, problem.message)]
        typer.echo(f"warning: {problem} (left out: {', '.join(left_out)})", err=True)
    return graph


@app.command()
def inventory(
    pipelines_dir: Annotated[Optional[Path], typer.Argument(help="pipelines folder")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the JSON object keyed by table (and `broken`: the tables left out, if any)")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="fail (exit 2) on any broken file, for CI")] = False,
) -> None:
    """Every table of the project: type, product, files, parents, children, state form; then the broken
    tables and those left out because they read one (`file:line: message`)."""
    from shift_left_dagster.project.report import broken_report, inventory_report
    from shift_left_dagster.project.report_cache import InventoryReport, keep_inventory_report

    graph = _graph(pipelines_dir, strict=strict, warn=False, sql=False)  # the report prints no SQL
    report = InventoryReport(inventory_report(graph), broken_report(graph))
    keep_inventory_report(graph.inventory.root, graph.inventory.source, report)
    typer.echo(_inventory_text(report, as_json))  # one write: 3000 echo calls cost a tenth of a second


def _inventory_text(report: InventoryReport, as_json: bool) -> str:
    if as_json:
        return json.dumps({**report.tables, "broken": report.broken} if report.broken else report.tables, indent=1)
    lines = [f"{name:40} {entry['type']:12} {entry['product'] or '-':12} {entry['state_form'] or '-':9} <- "
             f"{', '.join(entry['parents'] + entry['external_sources']) or '-'}"
             for name, entry in report.tables.items()]
    lines.append(f"{len(report.tables)} tables")
    if report.broken:
        lines.append(f"broken: {len(report.broken)} tables left out")
        lines.extend(f"{item['table']:40} {item['reason']}" for item in report.broken)
    return "\n".join(lines)


def _inventory_from_cache(arguments: list[str]) -> bool:
    """`inventory [PATH] [--json] [--strict]` of a project none of whose files changed since its report was
    kept: printed before the CLI framework (whose command runner loads pydantic) or the inventory's models
    load. Any other command line, or no report for the files as they are: False, and typer runs it."""
    if not arguments or arguments[0] != "inventory":
        return False
    flags = [a for a in arguments[1:] if a.startswith("-")]
    paths = [a for a in arguments[1:] if not a.startswith("-")]
    if not set(flags) <= {"--json", "--strict"} or len(paths) > 1 or "" in paths:
        return False
    from shift_left_dagster.project.report_cache import kept_inventory_report

    try:
        kept = kept_inventory_report(paths[0] if paths else None)
    except (ProjectError, OSError):  # said by the command itself, as usual
        return False
    if kept is None or ("--strict" in flags and kept.broken):
        return False
    sys.stdout.write(_inventory_text(kept, "--json" in flags) + "\n")
    return True


@app.command()
def report(
    table: Annotated[str, typer.Argument(help="table name")],
    pipelines: PipelinesOption = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="json, yaml or tree")] = "tree",
    children: Annotated[bool, typer.Option("--children", help="expand children recursively")] = False,
    write: Annotated[bool, typer.Option("--write", help="also write the table's pipeline_definition.json")] = False,
) -> None:
    """The hierarchy of one table: its parents recursively, its children."""
    from shift_left_dagster.project.render import render
    from shift_left_dagster.project.report import hierarchy, write_pipeline_definition

    graph = _graph(pipelines)
    typer.echo(render(hierarchy(graph, table, with_children=children), fmt))
    if write:
        typer.echo(f"wrote {write_pipeline_definition(graph, table)}", err=True)


ConfigOption = Annotated[Optional[Path], typer.Option("--config", help="config.yaml (default: $CONFIG_FILE)")]
PlanFlags = tuple[bool, bool, bool]


def _deployer(pipelines: Path | None, config_file: Path | None, exclusive: bool = True):
    """The one deployment object of the CLI (the Dagster resource builds the same); a read-only command
    (`exclusive=False`) neither takes nor waits for the project's deployment lease."""
    from shift_left_dagster.deploy.deployment import Deployer
    from shift_left_dagster.deploy.target import connect, resolve_mode, target_config

    graph = _graph(pipelines)
    config = target_config(config_file)
    seeds = graph.inventory.root / "seeds" if resolve_mode("auto", os.environ) == "local" else None
    return Deployer(client=connect(config), graph=graph, config=config, seeds_dir=seeds, exclusive=exclusive)


def _run(deployment) -> None:  # noqa: ANN001 - a Deployment
    """Print the plan, run it, print each step as it finishes; exit 1 naming the failing step."""
    from shift_left_dagster.deploy.deployment import DeploymentFailed, Unhealthy

    typer.echo(str(deployment))
    stale = deployment.changed_on_disk()
    if stale:  # cannot happen unless a file changes between loading and planning; say so all the same
        typer.echo(f"warning: changed while planning, the loaded SQL is deployed: {', '.join(stale)}", err=True)
    try:
        for result in deployment.run():
            phases = ", ".join(f"{n}={p}" for n, p in result.statements.items())
            what = result.step.target or result.compute_pool
            typer.echo(f"done {result.step.index}: {result.step.action.value} {what} {phases}")
    except (DeploymentFailed, Unhealthy) as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(1) from None


def _fail(error: Exception, code: int = 2) -> NoReturn:
    typer.echo(f"error: {error}", err=True)
    raise SystemExit(code) from None


TablesArgument = Annotated[Optional[list[str]], typer.Argument(help="tables (or use --product / --table-list-file)")]
ProductOption = Annotated[Optional[str], typer.Option("--product", help="every table of this product")]
ListFileOption = Annotated[Optional[Path], typer.Option("--table-list-file", help="a file with one table a line")]
ExcludeOption = Annotated[Optional[list[str]], typer.Option("--exclude", help="tables (or globs) to leave out")]
DirOption = Annotated[Optional[Path], typer.Option(
    "--dir", help="every table whose folder is under this one (e.g. pipelines/facts/p1)")]


def _targets(graph, tables: list[str] | None, product: str | None, list_file: Path | None,  # noqa: ANN001
             exclude: list[str] | None, folder: Path | None = None) -> list[str]:
    """The tables a command acts on: named, a product's, a file's, a folder's, less the excluded (globs)."""
    chosen = list(tables or [])
    if product:
        chosen += [name for name, info in graph.tables.items() if info.product == product]
    if list_file:
        chosen += [line.strip() for line in list_file.read_text().splitlines() if line.strip()]
    if folder:
        root, wanted = graph.inventory.root.resolve(), folder.resolve()
        under = [name for name, info in graph.tables.items() if (root / info.folder).resolve().is_relative_to(wanted)]
        if not under:
            _fail(ValueError(f"--dir {folder}: no table of the project is under this folder"))
        chosen += under
    chosen = [t for t in dict.fromkeys(chosen) if not any(fnmatch(t, p) for p in exclude or [])]
    if not chosen:
        _fail(ValueError("no table chosen: name tables, --product, --dir or --table-list-file"))
    return chosen


def _plan_schema(wanted: bool) -> None:
    """What `plan --json` prints, described: each step's model is chosen by its `action`."""
    if wanted:
        from shift_left_dagster.deploy.plan import DeploymentPlan

        typer.echo(json.dumps(DeploymentPlan.model_json_schema(), indent=1))
        raise typer.Exit()


def _planned_deployment(pipelines: Path | None, config: Path | None, chosen: tuple, exclusive: bool = True,
                        **flags: bool):  # noqa: ANN202
    """The deployment of the chosen tables (`_targets` arguments), or exit 2 naming why it can't be planned."""
    from shift_left_dagster.deploy.plan import PlanError

    deployer = _deployer(pipelines, config, exclusive)
    try:
        return deployer.deploy(_targets(deployer.graph, *chosen), **flags)
    except PlanError as error:
        _fail(error)
        raise


@app.command()
def plan(
    tables: TablesArgument = None,
    product: ProductOption = None,
    table_list_file: ListFileOption = None,
    exclude: ExcludeOption = None,
    folder: DirOption = None,
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    dml_only: Annotated[bool, typer.Option("--dml-only", help="keep tables, replace statements only")] = False,
    may_start_children: Annotated[bool, typer.Option(
        "--may-start-children", help="also deploy descendants that are not deployed")] = False,
    force_sources: Annotated[bool, typer.Option("--force-sources", help="redeploy running sources")] = False,
    force: Annotated[bool, typer.Option("--force", help="redeploy the tables even when unchanged")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
    json_schema: Annotated[bool, typer.Option(
        "--json-schema", help="print the JSON Schema of --json's output (one step type per action) and exit",
        callback=lambda wanted: _plan_schema(wanted), is_eager=True)] = False,
) -> None:
    """The ordered steps deploying TABLES would take against the configured service, with reasons."""
    deployment = _planned_deployment(pipelines, config, (tables, product, table_list_file, exclude, folder),
                                     exclusive=False, dml_only=dml_only, may_start_children=may_start_children,
                                     force_sources=force_sources, force=force)  # read-only: no lease
    typer.echo(deployment.plan.model_dump_json(indent=1) if as_json else str(deployment))


@app.command()
def deploy(
    tables: TablesArgument = None,
    product: ProductOption = None,
    table_list_file: ListFileOption = None,
    exclude: ExcludeOption = None,
    folder: DirOption = None,
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    dml_only: Annotated[bool, typer.Option("--dml-only")] = False,
    may_start_children: Annotated[bool, typer.Option("--may-start-children")] = False,
    force_sources: Annotated[bool, typer.Option("--force-sources")] = False,
    force: Annotated[bool, typer.Option("--force", help="redeploy the tables even when unchanged")] = False,
) -> None:
    """Plan, print, then run the deployment of TABLES; stops at the first failing step. On the local
    service, raw topics the project reads are seeded from seeds/ first."""
    _run(_planned_deployment(pipelines, config, (tables, product, table_list_file, exclude, folder),
                             dml_only=dml_only, may_start_children=may_start_children,
                             force_sources=force_sources, force=force))


@app.command()
def statements(
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    product: Annotated[Optional[str], typer.Option("--product", help="only this product's tables")] = None,
    failing: Annotated[bool, typer.Option(
        "--failing", help="only FAILED and FAILING statements, each with its root error (latest exception)")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What runs: every statement of the project's tables with its phase, version, pool, code state and
    records in/out/pending (the Metrics API); a failing one's latest exception."""
    from shift_left_dagster.deploy.running import render_failing, render_running, running_statements

    deployer = _deployer(pipelines, config, exclusive=False)
    report = running_statements(deployer.client, deployer.graph, product=product)
    if failing:
        report = report.model_copy(update={"statements": [s for s in report.statements if s.failing]})
    typer.echo(report.model_dump_json(indent=1) if as_json else (render_failing if failing else render_running)(report))


CandidateOption = Annotated[bool, typer.Option(
    "--candidate", help="act on the new versions not promoted yet (a reprocess, a breaking commit's), not the "
                        "serving ones")]


@app.command()
def stop(
    tables: TablesArgument = None,
    product: ProductOption = None,
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    candidate: CandidateOption = False,
) -> None:
    """Stop TABLES' (or a product's) running or failing statements, keeping their offsets: the runbook's "limit
    the damage". `resume` continues from those offsets."""
    deployer = _deployer(pipelines, config)
    _run(deployer.stop(_targets(deployer.graph, tables, product, None, None), candidate=candidate))


@app.command()
def resume(
    tables: TablesArgument = None,
    product: ProductOption = None,
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    candidate: CandidateOption = False,
) -> None:
    """Resume stopped TABLES (or a product's) from the offsets they kept; refused for a table whose code changed
    since (deploy it: the plan's rules decide how)."""
    from shift_left_dagster.deploy.plan import PlanError

    deployer = _deployer(pipelines, config)
    try:
        deployment = deployer.resume(_targets(deployer.graph, tables, product, None, None), candidate=candidate)
    except PlanError as error:
        _fail(error)
        raise
    _run(deployment)


@app.command()
def backfill(
    tables: Annotated[list[str], typer.Argument(help="tables to rebuild, in any order")],
    start: Annotated[datetime, typer.Option("--start", help="window start (UTC), e.g. 2026-01-02")],
    end: Annotated[datetime, typer.Option("--end", help="window end, exclusive (UTC)")],
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
) -> None:
    """Rebuild [start, end) of TABLES with bounded statements, parents first; the same code as partitions."""
    from shift_left_dagster.deploy.backfill import BackfillRefused

    try:
        deployment = _deployer(pipelines, config).backfill(tables, start, end)
    except BackfillRefused as error:
        _fail(error)
    _run(deployment)


@app.command()
def reprocess(
    tables: Annotated[list[str], typer.Argument(help="tables to reprocess (their deployed descendants follow)")],
    start: Annotated[datetime, typer.Option("--from", help="read every source from this time (UTC), e.g. 2026-01-02")],
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    to_new_version: Annotated[bool, typer.Option(
        "--to-new-version/--in-place", help="build new versions beside the serving ones (in place: not offered, "
                                            "it would rewrite a sink consumers read)")] = True,
    allow_partial_history: Annotated[bool, typer.Option(
        "--allow-partial-history", help="consent: the new versions will not hold history before --from")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan and what it leaves out only")] = False,
) -> None:
    """Reprocess TABLES' history from --from into new blue/green versions beside the serving ones (the
    runbook's shadow backfill, for tables a window can't rebuild); then `promote` or `rollback`."""
    from shift_left_dagster.deploy.plan import PlanError
    from shift_left_dagster.deploy.reprocess import history_not_reprocessed

    if not to_new_version:
        _fail(ValueError("--in-place: rewinding a serving statement onto its own sink duplicates an append "
                         "table's rows and mixes a stateful one's; reprocess into a new version instead"))
    try:
        deployment = _deployer(pipelines, config, exclusive=not dry_run).reprocess(tables, start)
    except PlanError as error:
        _fail(error)
    typer.echo("\n".join(history_not_reprocessed(deployment.plan)))
    if dry_run or not allow_partial_history:
        deployment.release()
        typer.echo(str(deployment))
        if not dry_run:
            _fail(ValueError("nothing ran: pass --allow-partial-history to accept the history above"))
        return
    _run(deployment)
    typer.echo("once they caught up: shift-left-dagster promote (checks the new versions first) | rollback; "
               "shift-left-dagster stop --candidate pauses them")


@app.command()
def undeploy(
    tables: Annotated[Optional[list[str]], typer.Argument(help="tables to remove")] = None,
    product: Annotated[Optional[str], typer.Option("--product", help="every table of this product")] = None,
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan only")] = False,
) -> None:
    """Remove tables' statements, then their tables, children first. A table that another statement
    still reads is kept and named (the plan is refused); a table removed from git works too."""
    from shift_left_dagster.deploy.plan import PlanError

    if not tables and not product:
        _fail(ValueError("name tables or --product"))
    try:
        deployment = _deployer(pipelines, config, exclusive=not dry_run).undeploy(tables or [], product=product)
    except PlanError as error:
        _fail(error)
    if dry_run:
        deployment.release()
        typer.echo(str(deployment))
        return
    _run(deployment)


@app.command("validate-config")
def validate_config(
    config: Annotated[Optional[Path], typer.Argument(help="config.yaml (default: $CONFIG_FILE, else ./config.yaml)")]
    = None,
) -> None:
    """Validate a config file in every mode (also when deployments go to the local service): each bad or
    missing field is named; secrets come from SL_* variables and are never printed."""
    from shift_left_dagster.project.config import load_config

    try:
        loaded = load_config(config)
    except (ConfigFileError, OSError) as error:
        _fail(error)
        raise
    typer.echo(f"valid: environment {loaded.env_name}, organization {loaded.confluent_cloud.organization_id}, "
               f"environment id {loaded.confluent_cloud.environment_id}, compute pool "
               f"{loaded.flink.compute_pool_id or '(one per product)'}, Flink API {loaded.flink_base_url}")


@app.command()
def housekeep(
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan only")] = False,
) -> None:
    """Remove what no deployment needs: completed DDL, backfill and seed statements, failed statements of
    retired versions, and old blue/green versions' tables that nothing reads (plan printed first)."""
    deployment = _deployer(pipelines, config, exclusive=not dry_run).housekeep()
    if dry_run:
        deployment.release()
        typer.echo(str(deployment))
        return
    _run(deployment)


@app.command()
def lease(
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    break_lease: Annotated[bool, typer.Option("--break", help="clear it, whoever holds it")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Who holds the project's deployment lease, since when, and whether they are alive; --break clears it
    (a deployment killed on another host, whose liveness cannot be told from here)."""
    held = _deployer(pipelines, config, exclusive=False).lease()
    holder = held.break_() if break_lease else held.current()
    if as_json:
        typer.echo(json.dumps({"lease": held.name, "holder": holder.model_dump(mode="json") if holder else None,
                               "broken": break_lease and holder is not None}, indent=1))
    elif holder is None:
        typer.echo(f"{held.name} is free")
    else:
        typer.echo(("cleared: " if break_lease else "") + holder.describe())


@app.command()
def changes(
    since: Annotated[str, typer.Option("--since", help="git revision to compare with (e.g. origin/main)")],
    until: Annotated[str, typer.Option("--until", help="git revision")] = "HEAD",
    pipelines: PipelinesOption = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Impacted tables between two commits, their category and the blue/green plan (for a pull request)."""
    from shift_left_dagster.deploy.bluegreen import plan_blue_green
    from shift_left_dagster.deploy.changes import detect_changes, repository_of
    from shift_left_dagster.project.inventory import resolve_pipelines_dir

    repo, relative = repository_of(resolve_pipelines_dir(pipelines))
    found = detect_changes(repo, since, until, relative)
    plan = plan_blue_green(_graph(pipelines), found)
    if as_json:
        typer.echo(plan.model_dump_json(indent=1))
        return
    for change in found:
        typer.echo(f"{change.table:40} {change.category.value:13} {'; '.join(change.reasons)}")
    for version in plan.versions:
        typer.echo(f"  new version  {version.physical:40} {version.reason}")
    for in_place in plan.in_place:
        typer.echo(f"  in place     {in_place.physical:40} {in_place.reason}")
    if not found:
        typer.echo("no Flink SQL change")


SinkPathOption = Annotated[Optional[str], typer.Option(
    "--sink-path", help="read sinks from landed files instead: a path template with {table}")]
SinkFormatOption = Annotated[str, typer.Option("--sink-format", help="format of --sink-path")]


@contextmanager
def _sink_reader(url: str | None, target_url: str, data_dir: Path | None, sink_path: str | None, sink_format: str,
                 what: str) -> Iterator[Any]:
    """The sink reader checks read with (`check`, `promote`'s verification), on the checks' Spark (the
    local service's, through the Spark Connect server it offers: no JVM here): landed files (`sink_path`);
    else the local service's storage, in local mode or when the configured target (`target_url`, a Flink API
    key set) is a local service; else exit 2 in one line: Confluent Cloud's sinks are read from files."""
    from shift_left_dagster.checks import SinkConfig, open_reader
    from shift_left_dagster.checks.session import checks_session, end_session
    from shift_left_dagster.deploy.target import local_data_dir, resolve_mode
    from shift_left_dagster.local.health import probe

    service_dir = None
    if sink_path is None and resolve_mode("auto", os.environ) == "local":
        service_dir = local_data_dir(url, str(data_dir) if data_dir else None)
    elif sink_path is None:
        answering = probe(target_url, timeout=10.0)
        if answering is None:
            _fail(ValueError(f"{what} reads the tables' sinks: the configured target {target_url} is not a local "
                             "service (a Flink API key is set: Confluent Cloud), whose sinks are read from the files "
                             "teams land topics in: pass --sink-path (a path template with {table})"))
        service_dir = str(data_dir) if data_dir else answering.data_dir
    sink = SinkConfig(kind="files", path_template=sink_path, format=sink_format) if sink_path else SinkConfig(
        data_dir=service_dir)
    spark = checks_session(service_dir)  # the local service's Spark when it offers it
    try:
        try:
            reader = open_reader(sink, spark)
        except ValueError as error:  # no local data there, or a path template without {table}
            _fail(error)
        try:
            yield reader
        finally:
            reader.close()
    finally:
        end_session(spark)


@app.command()
def promote(
    tables: Annotated[Optional[list[str]], typer.Argument(help="tables (default: every candidate)")] = None,
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="check the candidates first")] = True,
    sink_path: SinkPathOption = None,
    sink_format: SinkFormatOption = "parquet",
    require_same_keys: Annotated[bool, typer.Option(
        "--require-same-keys", help="also refuse keys only the serving version holds (history before the "
                                    "reprocess's start, which its consent gave up)")] = False,
) -> None:
    """Blue/green: verify the candidates (checks pass, their keys right for where they start reading), then
    they serve; the old versions' statements stop and go (their tables are kept)."""
    from shift_left_dagster.checks.candidates import verify_candidates

    deployer = _deployer(pipelines, config)
    target, client = deployer.config, deployer.client
    if verify:
        with _sink_reader(target.flink_base_url, target.flink_base_url, None, sink_path, sink_format,
                          "promote's verification (--no-verify skips it)") as reader:
            report = verify_candidates(client, deployer.graph, target.env_name, reader,
                                       require_same_keys=require_same_keys)
        for note in report.notes:
            typer.echo(f"note: {note}")
        if report.problems:
            typer.echo("not promoted:\n  " + "\n  ".join(report.problems), err=True)
            raise SystemExit(1)
    _run(deployer.promote(tables or None))


@app.command()
def rollback(
    tables: Annotated[Optional[list[str]], typer.Argument(help="tables (default: every candidate)")] = None,
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
) -> None:
    """Blue/green: candidates are removed; the serving versions were never stopped."""
    _run(_deployer(pipelines, config).rollback(tables or None))


@app.command()
def check(
    tables: Annotated[list[str], typer.Argument(help="tables to check")],
    pipelines: PipelinesOption = None,
    config: ConfigOption = None,
    url: Annotated[Optional[str], typer.Option("--url", help="a local service already running")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(
        "--data-dir", help="the local service's data dir (default: the running service's)")] = None,
    sink_path: SinkPathOption = None,
    sink_format: SinkFormatOption = "parquet",
    as_json: Annotated[bool, typer.Option("--json", help="print the outcomes as JSON")] = False,
) -> None:
    """The asset checks of TABLE... (unique key, reconciliation, schema, statement, and the data tests in
    each table's checks/ folder) computed with Spark on the sink data; exit 1 when a check fails."""
    from shift_left_dagster.checks import ChecksSettings, find_dml_statements, run_checks
    from shift_left_dagster.checks.data_tests import discover
    from shift_left_dagster.deploy.live import live_state, physical_names
    from shift_left_dagster.deploy.target import connect, target_config

    graph = _graph(pipelines)
    for table in tables:
        graph.require(table)
    target = target_config(config, local_url=url, local_data_dir=str(data_dir) if data_dir else None)
    client = connect(target)
    chosen = [graph.tables[t] for t in tables]
    with _sink_reader(url, target.flink_base_url, data_dir, sink_path, sink_format, "check") as reader:
        physical = physical_names(live_state(client, with_tables=False).serving_versions())
        outcomes = run_checks(chosen, reader, find_dml_statements(client, chosen, target.env_name, physical),
                              ChecksSettings(), physical=physical, data_tests=discover(graph.inventory.root,
                                                                                     graph.tables))
    if as_json:
        typer.echo(json.dumps([o.model_dump(mode="json") for o in outcomes], indent=1))
    else:
        width = max((len(o.table) for o in outcomes), default=5)
        typer.echo(f"{'TABLE':{width}}  {'CHECK':18}  {'RESULT':12}  DETAIL")
        for o in outcomes:
            result = "pass" if o.passed else "FAIL" + (" (block)" if o.blocking else "")
            typer.echo(f"{o.table:{width}}  {o.check:18}  {result:12}  {o.message}")
    if not all(o.passed for o in outcomes):
        raise SystemExit(1)


@app.command()
def demo(
    select: Annotated[str, typer.Option("--select", help="Dagster asset selection")] = "*fct_order",
) -> None:
    """The main job on the embedded default: start the local service, materialise SELECT with `dg launch`
    into a persistent Dagster instance, print what was deployed and how to look at it."""
    from shift_left_dagster.deploy.target import connect, target_config
    from shift_left_dagster.local.settings import resolve_data_dir
    from shift_left_dagster.progress import RunProgress

    config = target_config(mode="local")
    home = Path(os.environ.get("DAGSTER_HOME") or resolve_data_dir(None).parent / "dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config_file = home / "dagster.yaml"
    if not config_file.exists():  # runs kept; one deployment of a project at a time (its op's pool)
        config_file.write_text(  # one deployment per project; a killed run is failed and frees its slot
            "concurrency:\n  pools:\n    default_limit: 1\n"
            "run_monitoring:\n  enabled: true\n  poll_interval_seconds: 30\n  start_timeout_seconds: 180\n"
            "  cancel_timeout_seconds: 180\n  max_runtime_seconds: 3600\n  free_slots_after_run_end_seconds: 60\n")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    typer.echo(f"local Confluent-compatible service: {config.flink_base_url} (keeps running)")
    typer.echo(f"Dagster instance: DAGSTER_HOME={home}")
    before = {s.name for s in connect(config).list_statements()}
    dg = shutil.which("dg") or str(Path(sys.executable).parent / "dg")
    command = [dg, "launch", "--assets", select]
    typer.echo("$ dg launch --assets " + select)
    progress, tail = RunProgress(), deque[str](maxlen=400)  # the run's lines as they come; all of it on failure
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as launch:
        for line in launch.stdout or []:
            tail.append(line)
            shown = progress.feed(line)
            if shown is not None:
                typer.echo("  " + shown)
    if launch.returncode != 0:
        typer.echo("".join(tail)[-8000:], err=True)
        raise SystemExit(1)
    deployed = [s for s in connect(config).list_statements() if s.name not in before or s.phase == "RUNNING"]
    typer.echo("\nstatements of the deployment:")
    for statement in sorted(deployed, key=lambda s: s.name):
        if (statement.metadata.labels or {}).get("sl_table"):
            typer.echo(f"  {statement.name:48} {statement.phase}")
    typer.echo(f"\nUI:   DAGSTER_HOME={home} dg dev   (then http://127.0.0.1:3000)")
    typer.echo("stop: shift-left-dagster local stop")


@app.command()
def lineage(
    table: Annotated[str, typer.Argument(help="table name")],
    column: Annotated[Optional[str], typer.Argument(help="one column, traced up to the raw topics")] = None,
    pipelines: PipelinesOption = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="json or tree")] = "tree",
) -> None:
    """Column-level lineage: each column's parent columns, from the DML and the parents' DDLs."""
    from shift_left_dagster.project.lineage import lineage_report, project_lineage, render_lineage

    try:
        traced = project_lineage(_graph(pipelines))
        report = lineage_report(traced, table, column)
        traced.save()
        typer.echo(render_lineage(report, fmt))
    except (ProjectError, ValueError) as error:
        _fail(error)


@app.command()
def explain(
    table: Annotated[str, typer.Argument(help="table name")],
    pipelines: PipelinesOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON object")] = False,
) -> None:
    """What deploying TABLE sends (its normalised DDL and DML) and what the analysis says about it."""
    try:
        graph = _graph(pipelines)
        graph.require(table)
    except ProjectError as error:
        _fail(error)
    info = graph.tables[table]
    report = {
        "table": table, "type": info.type, "product": info.product, "code_version": info.code_version,
        "ddl_path": info.ddl_path, "dml_path": info.dml_path, "ddl_sql": info.ddl_sql, "dml_sql": info.dml_sql,
        "state_form": info.state_form.value if info.state_form else None,
        "state_reasons": info.dml.state_reasons if info.dml else [],
        "changelog_mode": info.ddl.changelog_mode if info.ddl else None, "primary_key": info.primary_key,
        "parents": graph.parents[table], "children": graph.children[table],
        "external_sources": graph.external_sources[table],
    }
    if as_json:
        typer.echo(json.dumps(report, indent=1))
        return
    why = ", ".join(info.dml.state_reasons if info.dml else []) or "every output row comes from one input row"
    typer.echo(f"{table} ({info.type}, {info.product or '-'})  code version {info.code_version}")
    typer.echo(f"state form: {report['state_form']} ({why})" if info.dml else "state form: - (no DML)")
    typer.echo(f"changelog mode: {report['changelog_mode'] or '-'}")
    for label, names in (("primary key", info.primary_key), ("parents", graph.parents[table]),
                         ("external sources", graph.external_sources[table]), ("children", graph.children[table])):
        typer.echo(f"{label}: {', '.join(names) or '-'}")
    for path, sql in ((info.ddl_path, info.ddl_sql), (info.dml_path, info.dml_sql)):
        if sql:
            typer.echo(f"\n-- {path}\n{sql};")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # 0.1 s of imports, which --help does not need

        typer.echo(f"shift-left-dagster {version('shift-left-dagster')}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="print the version and exit")] = False) -> None:
    """`shift-left-dagster`: Confluent Cloud Flink SQL pipelines, planned and deployed exactly once."""


def main() -> None:
    if _inventory_from_cache(sys.argv[1:]):
        return
    try:
        app()
    except (ProjectError, ConfigFileError, ConfluentError, LeaseBusy) as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()

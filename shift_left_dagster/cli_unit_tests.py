"""`shift-left-dagster test`: unit tests of one statement with synthetic data (shift_left's tests/ layout).

    test init TABLE               write TABLE's tests/ folder (inserts per parent, validations)
    test run TABLE [--case NAME]  run the cases on `_ut` twins; exit 1 when one fails

Registered in cli.py with `app.add_typer(test_app, name="test")`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from shift_left_dagster.confluent.errors import ConfluentError
from shift_left_dagster.project.errors import ProjectError

test_app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

PipelinesOption = Annotated[
    Optional[Path],
    typer.Option("--pipelines", "-p", help="pipelines folder (default: $PIPELINES, else ./flink_project/pipelines)"),
]
PostfixOption = Annotated[
    str, typer.Option("--postfix", help="suffix of the test twins (config app.post_fix_unit_test)")
]


@test_app.command("init")
def init(
    table: Annotated[str, typer.Argument(help="the table whose DML is tested")],
    pipelines: PipelinesOption = None,
    cases: Annotated[int, typer.Option("--cases", min=1, help="test cases to scaffold")] = 2,
    postfix: PostfixOption = "_ut",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace files that exist")] = False,
) -> None:
    """Write TABLE's tests/ folder: ddl_<parent>.sql, insert_<parent>_<case>.sql, validate_<table>_<case>.sql."""
    from shift_left_dagster.unit_tests import init_tests

    try:
        written = init_tests(table, pipelines, cases=cases, postfix=postfix, overwrite=overwrite)
    except (ProjectError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None
    for path in written:
        typer.echo(f"wrote {path}")
    if not written:
        typer.echo("every file exists already (--overwrite replaces them)")


@test_app.command("run")
def run(
    table: Annotated[str, typer.Argument(help="the table whose DML is tested")],
    case: Annotated[Optional[str], typer.Option("--case", help="one case: its name or number")] = None,
    pipelines: PipelinesOption = None,
    config: Annotated[Optional[Path], typer.Option("--config", help="config.yaml (default: $CONFIG_FILE)")] = None,
    url: Annotated[Optional[str], typer.Option("--url", help="a local service already running")] = None,
    postfix: PostfixOption = "_ut",
    timeout: Annotated[float, typer.Option("--timeout", help="seconds a statement may take")] = 300.0,
    keep: Annotated[bool, typer.Option("--keep", help="leave the twins and statements (to inspect them)")] = False,
) -> None:
    """Run TABLE's cases on isolated `_ut` twins (local service, or Confluent Cloud when configured);
    print pass/fail per case; exit 1 when a case fails."""
    from shift_left_dagster.deploy.target import connect, target_config
    from shift_left_dagster.unit_tests import run_tests

    try:
        client = connect(target_config(config, local_url=url))
        report = run_tests(table, case, client=client, pipelines=pipelines, postfix=postfix, timeout=timeout,
                           keep=keep)
    except (ProjectError, ValueError, ConfluentError) as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None
    width = max((len(c.name) for c in report.cases), default=4)
    typer.echo(f"{'CASE':{width}}  RESULT  DETAIL")
    for result in report.cases:
        typer.echo(f"{result.name:{width}}  {'pass' if result.passed else 'FAIL':6}  {result.detail}")
    if not report.passed:
        raise SystemExit(1)

"""`shift-left-dagster local start|status|stop`: the embedded service as a background process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:
    from shift_left_dagster.local.process import LocalServiceInfo

local_app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

DataDirOption = Annotated[
    Optional[Path],
    typer.Option("--data-dir",
                 help="service data folder (default: $SHIFT_LEFT_LOCAL_DATA, else ./.shift_left_dagster/local)"),
]


def _print(info: LocalServiceInfo, as_json: bool) -> None:
    """Human lines, or JSON with everything a client needs: URL, ids, the key and secret the service accepts,
    and the Spark Connect URL (with its token) of the service's Spark."""
    from shift_left_dagster.local.connect_offer import read_offer

    offer = read_offer(info.data_dir) if info.running else None
    if as_json:
        from shift_left_dagster.local.settings import credentials

        key, secret = credentials()
        endpoints = {"flink_endpoint": info.url, "kafka_rest_endpoint": info.url,  # one service answers all three
                     "schema_registry_endpoint": info.url}
        typer.echo(json.dumps({**info.model_dump(mode="json"), **endpoints, "api_key": key, "api_secret": secret,
                               "spark_connect_url": offer.url() if offer else None}, indent=1))
        return
    state = "running" if info.running else "not running"
    typer.echo(f"local service {state}: {info.url} (pid {info.pid or '-'}, data {info.data_dir})")
    typer.echo(f"  organization {info.organization_id}, environment {info.environment_id}, "
               f"cluster {info.cluster_id}, compute pool {info.compute_pool_id}")
    if offer is not None:  # its token only in --json, as the API secret
        typer.echo(f"  Spark Connect on 127.0.0.1:{offer.port} (URL with its token: local status --json)")


@local_app.command()
def start(
    data_dir: DataDirOption = None,
    port: Annotated[Optional[int], typer.Option(
        "--port",
        help="port on 127.0.0.1 (0: any free port; default: the recorded one, else 8084, else a free one)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the status as JSON")] = False,
) -> None:
    """Start this data folder's service in the background (already running: print its status).

    A port where another data folder's service answers is refused, naming both folders."""
    from shift_left_dagster.local.process import ServiceError
    from shift_left_dagster.local.process import start as start_service

    try:
        _print(start_service(data_dir, port), as_json)
    except ServiceError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None


@local_app.command()
def status(
    data_dir: DataDirOption = None,
    as_json: Annotated[bool, typer.Option("--json",
                                          help="print url, ids, api key and secret, running as JSON")] = False,
) -> None:
    """Where the service is and whether it runs."""
    from shift_left_dagster.local.process import status as service_status

    _print(service_status(data_dir), as_json)


@local_app.command()
def stop(data_dir: DataDirOption = None) -> None:
    """Stop the service started from this data folder (only that process)."""
    from shift_left_dagster.local.process import stop as stop_service

    typer.echo("stopped" if stop_service(data_dir) else "not running")

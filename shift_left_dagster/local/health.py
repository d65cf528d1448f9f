"""Who answers at a local service URL, and whether it is the service of this data folder.

A service belongs to one data folder. Before adopting a URL (start, status,
the deploy target), callers compare the ``data_dir`` and ``pid`` the health
endpoint reports with their own, so one project never reads or changes
another project's statements. No Spark here: the deploy target imports it.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import requests
from pydantic import BaseModel, ConfigDict, ValidationError

HEALTH_PATH = "/local/v1/health"


class ServiceError(RuntimeError):
    """The service could not be started, stopped or adopted; the message says why and where to look."""


class OtherFolderService(ServiceError):
    """The URL answers for another data folder's service: naming both folders."""

    def __init__(self, url: str, ours: Path | str, theirs: str, pid: int) -> None:
        self.url = url
        self.ours = str(ours)
        self.theirs = theirs
        self.pid = pid
        super().__init__(
            f"{url} is the local service of data folder {theirs} (pid {pid}), not of {ours}; stop that one, or "
            f"start this folder's service on another port (--port 0 picks a free one)")


class ServiceHealth(BaseModel):
    """What ``/local/v1/health`` says about the service answering."""

    model_config = ConfigDict(extra="allow")

    status: str
    pid: int
    data_dir: str
    ready: bool = False

    def serves(self, data_dir: Path | str) -> bool:
        return same_folder(self.data_dir, data_dir)


def probe(url: str, timeout: float = 1.0) -> ServiceHealth | None:
    """The health of the local service at ``url``; None when nothing (or something else) answers there."""
    try:
        response = requests.get(f"{url.rstrip('/')}{HEALTH_PATH}", timeout=timeout)
        if response.status_code != 200:
            return None
        return ServiceHealth.model_validate(response.json())
    except (requests.RequestException, ValueError, ValidationError):
        return None


def require_folder(url: str, data_dir: Path | str, timeout: float = 10.0) -> ServiceHealth:
    """The health of ``url`` if it is ``data_dir``'s service; else ServiceError / OtherFolderService."""
    health = probe(url, timeout)
    if health is None:
        raise ServiceError(f"no local service answers at {url} (expected the one of data folder {data_dir})")
    if not health.serves(data_dir):
        raise OtherFolderService(url, data_dir, health.data_dir, health.pid)
    return health


def same_folder(a: Path | str, b: Path | str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now (the service binds without SO_REUSEPORT)."""
    with socket.socket() as probe_socket:
        probe_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe_socket.bind((host, port))
        except OSError:
            return False
    return True

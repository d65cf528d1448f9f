"""One deployment of a project at a time, whoever starts it (CLI, Dagster run, sensor, another machine).

The lease is a statement with a fixed name: creating a statement name that exists answers 409 on
Confluent Cloud and on the local service alike, so whoever creates it holds the lease until it
deletes it. Plans are made while holding it, so no run plans against another's half-done work.

Its labels say who holds it (`holder`: `dagster-run:<run_id>` or `<host>:<pid>`) and which process
(`<host>:<pid>`). A dead holder's lease is taken over at once, with one warning line: its process
was on this host and is gone, or `liveness` (the Dagster resource asks its instance) says the run is
no longer in progress. A holder whose liveness is unknown (another host, another Dagster instance)
keeps the lease until it is `stale_seconds` old. The same holder may take it again.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import Conflict, NotFound
from shift_left_dagster.deploy.errors import LeaseBusy

log = logging.getLogger(__name__)

LEASE_LABEL = "sl_lease"  # the holder
PROCESS_LABEL = "sl_lease_process"  # <host>:<pid> of the process that holds it
DAGSTER_RUN_PREFIX = "dagster-run:"

Liveness = Callable[[str], bool | None]  # holder -> alive? (None: cannot tell)


def this_process() -> str:
    """`<host>:<pid>`: a CLI process's holder name, and every lease's process label."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_alive(process: str) -> bool | None:
    """Whether `<host>:<pid>` still runs; None when it is on another host (or not such a name)."""
    host, _, pid = process.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return not _zombie(int(pid))


def _zombie(pid: int) -> bool:
    """A killed process nobody reaped yet (its parent died too, and a container's init may never reap it):
    it still answers signal 0, but runs nothing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (macOS): signal 0 is all we know
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class LeaseHolder(BaseModel):
    """Who holds a lease, since when, and whether they are alive (None: cannot tell)."""

    lease: str
    holder: str
    process: str | None = None
    since: datetime | None = None
    age_seconds: float
    alive: bool | None = None

    def describe(self) -> str:
        since = self.since.strftime("%Y-%m-%d %H:%M:%S UTC") if self.since else "an unknown time"
        state = {True: "alive", False: "dead", None: "liveness unknown"}[self.alive]
        return f"{self.holder} holds {self.lease} since {since} ({self.age_seconds:.0f} s, {state})"


@dataclass
class DeploymentLease:
    client: ConfluentClient
    name: str  # e.g. dev-lease-<project identity>
    holder: str  # who asks: dagster-run:<run_id>, or <host>:<pid>
    wait_seconds: float = 600.0
    stale_seconds: float = 3600.0
    poll_seconds: float = 0.5
    report_seconds: float = 30.0  # while waiting, who holds it is said once, then this often
    liveness: Liveness | None = None
    held: bool = False
    process: str = field(default_factory=this_process)

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_seconds
        next_report = time.monotonic()
        while True:
            try:
                self.client.create_statement(self.name, "SELECT 1",
                                             labels={LEASE_LABEL: self.holder, PROCESS_LABEL: self.process})
                self.held = True
                return
            except Conflict:
                current = self.current()
                if current is None:
                    continue  # released meanwhile
                if current.holder == self.holder:  # ours already (a plan this process made and did not run)
                    self.held = True
                    return
                if current.alive is False or (current.alive is None and current.age_seconds > self.stale_seconds):
                    self._take_over(current, "dead" if current.alive is False else "stale")
                    continue
                if time.monotonic() > deadline:
                    raise LeaseBusy(f"another deployment is running: {current.describe()}; waited "
                                    f"{self.wait_seconds:.0f} s (`shift-left-dagster lease --break` clears it "
                                    "if it is not)") from None
                if time.monotonic() >= next_report:
                    log.warning("waiting for the deployment lease: %s", current.describe())
                    next_report = time.monotonic() + self.report_seconds
                time.sleep(self.poll_seconds)

    def _take_over(self, current: LeaseHolder, why: str) -> None:
        """Delete the lease `current` describes, unless another waiter took it over meanwhile (read again
        just before: two waiters of one dead holder must not delete each other's new lease)."""
        again = self.current()
        if again is None or (again.holder, again.since) != (current.holder, current.since):
            return
        self.client.delete_statement(self.name)
        log.warning("taking over the deployment lease %s from %s (%s)", self.name, current.holder, why)

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        current = self.current()
        if current is not None and current.holder == self.holder:
            self.client.delete_statement(self.name)

    def current(self) -> LeaseHolder | None:
        """Who holds the lease now (None: free)."""
        try:
            statement = self.client.get_statement(self.name)
        except NotFound:
            return None
        labels = (statement.metadata.labels if statement.metadata else None) or {}
        created = statement.metadata.created_at if statement.metadata else None
        age = (datetime.now(UTC) - created).total_seconds() if created else 0.0
        holder, process = labels.get(LEASE_LABEL, "unknown"), labels.get(PROCESS_LABEL)
        return LeaseHolder(lease=self.name, holder=holder, process=process, since=created, age_seconds=age,
                           alive=self.holder_alive(holder, process))

    def holder_alive(self, holder: str, process: str | None) -> bool | None:
        """Dead when its process on this host is gone, or when `liveness` says so; else alive or unknown."""
        by_process = process_alive(process or holder)
        if by_process is False:
            return False
        by_liveness = self.liveness(holder) if self.liveness is not None else None
        return by_liveness if by_liveness is not None else by_process

    def break_(self) -> LeaseHolder | None:
        """Clear the lease whoever holds it (`shift-left-dagster lease --break`); who held it."""
        current = self.current()
        if current is not None:
            self.client.delete_statement(self.name)
        return current

"""One deployment of a project at a time, whoever starts it (CLI, Dagster run, sensor, another machine).

The lease is a statement with a fixed name: creating a statement name that exists answers 409 on
Confluent Cloud and on the local service alike, so whoever creates it holds the lease until it
deletes it. Plans are made while holding it, so no run plans against another's half-done work. A
lease older than `stale_seconds` (a crashed holder) is taken over, and the take-over is said; the
same holder (a run, or a CLI process) may take it again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.confluent.errors import Conflict, NotFound

log = logging.getLogger(__name__)

LEASE_LABEL = "sl_lease"


class LeaseBusy(RuntimeError):
    """Another deployment of the project held the lease for longer than we may wait."""


@dataclass
class DeploymentLease:
    client: ConfluentClient
    name: str  # e.g. dev-lease-<project>
    holder: str  # who asks: a run id, or cli@host:pid
    wait_seconds: float = 600.0
    stale_seconds: float = 3600.0
    poll_seconds: float = 0.5
    held: bool = False

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_seconds
        while True:
            try:
                self.client.create_statement(self.name, "SELECT 1", labels={LEASE_LABEL: self.holder})
                self.held = True
                return
            except Conflict:
                current = self._current()
                if current is None:
                    continue  # released meanwhile
                holder, age = current
                if holder == self.holder:  # ours already (a plan this process made and did not run)
                    self.held = True
                    return
                if age > self.stale_seconds:
                    log.warning("taking over the deployment lease %s from %s (held %.0f s: stale)",
                                self.name, holder, age)
                    self.client.delete_statement(self.name)
                    continue
                if time.monotonic() > deadline:
                    raise LeaseBusy(f"another deployment ({holder}) holds {self.name} since {age:.0f} s ago; "
                                    f"waited {self.wait_seconds:.0f} s") from None
                time.sleep(self.poll_seconds)

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        current = self._current()
        if current is not None and current[0] == self.holder:
            self.client.delete_statement(self.name)

    def _current(self) -> tuple[str, float] | None:
        try:
            statement = self.client.get_statement(self.name)
        except NotFound:
            return None
        labels = (statement.metadata.labels if statement.metadata else None) or {}
        created = statement.metadata.created_at if statement.metadata else None
        age = (datetime.now(UTC) - created).total_seconds() if created else 0.0
        return labels.get(LEASE_LABEL, "unknown"), age

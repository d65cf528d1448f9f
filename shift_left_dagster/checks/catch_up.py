"""Let a statement catch up with its sources before its data is checked: a bounded wait on its lag.

A check right after a deployment would otherwise compare a sink with what
the statement has read so far, often nothing, and pass over nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from shift_left_dagster.checks.readers import SinkReader
from shift_left_dagster.confluent.models import Phase, Statement


class CatchUp(BaseModel):
    """How far behind the statement was before the data checks, and how long they waited for it."""

    lag_before: int | None = None  # records behind when the checks began (None: unknown)
    lag_after: int | None = None  # records behind when the wait ended
    waited_seconds: float = 0.0
    timed_out: bool = False
    wait_limit: float = 0.0

    def metadata(self) -> dict[str, Any]:
        return {"lag_records_before_wait": self.lag_before, "waited_seconds": round(self.waited_seconds, 2),
                "catch_up_limit_seconds": self.wait_limit}

    def describe(self) -> str:
        """Words for a message: how the wait went."""
        if not self.wait_limit:
            return "the catch-up wait is disabled"
        if self.timed_out:
            return f"after waiting {self.wait_limit:g} s"
        return f"waited {self.waited_seconds:.1f} s"


def total(lag: dict[str, int] | None) -> int | None:
    return sum(lag.values()) if lag is not None else None


def catch_up(reader: SinkReader, statement: Statement | None, limit: float, poll: float,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> CatchUp:
    """Wait (at most `limit` seconds) until a RUNNING statement has read every record its sources hold.

    Only a RUNNING statement is waited for: a stopped or failed one will not move, a completed one
    is done. An unknown lag (files sinks) can not be waited on.
    """
    if statement is None:
        return CatchUp(wait_limit=limit)
    lag = total(reader.lag(statement))
    before, start = lag, clock()
    while lag and statement.phase == Phase.RUNNING and clock() - start < limit:
        sleep(min(poll, max(limit - (clock() - start), 0.0)))
        lag = total(reader.lag(statement))
    return CatchUp(lag_before=before, lag_after=lag, waited_seconds=clock() - start if before else 0.0,
                   timed_out=bool(lag) and statement.phase == Phase.RUNNING and limit > 0, wait_limit=limit)

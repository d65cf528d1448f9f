"""Time-window partitions: the selected range is the history to (re)process.

The last partition is the open one (it includes now, `end_offset=1`): a range
reaching it (re)deploys the continuous statement from the range start; a closed
range runs bounded backfill statements over exactly that window.
"""

from __future__ import annotations

from typing import Literal

from dagster import (
    DailyPartitionsDefinition,
    HourlyPartitionsDefinition,
    TimeWindow,
    TimeWindowPartitionsDefinition,
)
from pydantic import BaseModel

Granularity = Literal["daily", "hourly", "none"]


class PartitionsConfig(BaseModel):
    """How table assets are partitioned: daily by default once a start date is given; none without one."""

    granularity: Granularity = "daily"
    start: str | None = None  # e.g. "2026-01-01"; no start, no partitions
    end: str | None = None  # exclusive, for data that stops (a sample); default: up to the open partition, now

    def definition(self) -> TimeWindowPartitionsDefinition | None:
        if self.granularity == "none" or not self.start:
            return None
        bounds = {"end_date": self.end} if self.end else {"end_offset": 1}
        if self.granularity == "hourly":
            return HourlyPartitionsDefinition(start_date=self.start, timezone="UTC", **bounds)
        return DailyPartitionsDefinition(start_date=self.start, timezone="UTC", **bounds)


def reaches_open_partition(partitions: TimeWindowPartitionsDefinition, window: TimeWindow) -> bool:
    last = partitions.get_last_partition_window()
    return last is not None and window.end >= last.end

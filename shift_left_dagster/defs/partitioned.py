"""Ready partitioned definitions: the sample project with daily partitions from 2026-01-01.

    dg dev -m shift_left_dagster.defs.partitioned        # or dagster dev -m ...

A closed range of days is rebuilt by event time with bounded statements; a range reaching today
redeploys the continuous statements from the range start (see README, "Partitions").
"""

from shift_left_dagster.defs.builder import build_flink_definitions
from shift_left_dagster.defs.partitions import PartitionsConfig

defs = build_flink_definitions(partitions=PartitionsConfig(granularity="daily", start="2026-01-01"))

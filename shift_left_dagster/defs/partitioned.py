"""Ready partitioned definitions: the sample project, one daily partition per day of its seed data.

    dg dev -m shift_left_dagster.defs.partitioned        # or dagster dev -m ...

The seeds hold 2026-01-01 to 2026-01-05, so those five days are the partitions (the backfill dialog
offers data, not the last 90 empty days) and the last one is the open one: a range reaching 2026-01-05
redeploys the continuous statements from the range start; a closed range (e.g. 01-02 to 01-03) is rebuilt
by event time with bounded statements where that is safe, else refused before anything runs
(see README, "Partitions"). Start with "Materialize all" over the five days: a table's range then
shows no "Upstream data missing" (Dagster warns while a parent table has not recorded those partitions
in the instance; a run records them for every table it deploys).
"""

from shift_left_dagster.defs.builder import build_flink_definitions
from shift_left_dagster.defs.partitions import PartitionsConfig

SAMPLE_PARTITIONS = PartitionsConfig(granularity="daily", start="2026-01-01", end="2026-01-06")

defs = build_flink_definitions(partitions=SAMPLE_PARTITIONS)

"""The sample's partitioned code location spans the days its seed data covers (issue 29, build 1): the
backfill dialog then offers real data, not the last 90 days of an empty range."""

from __future__ import annotations

import re
from pathlib import Path

from shift_left_dagster.defs.partitioned import defs

SEEDS = Path(__file__).resolve().parents[2] / "flink_project" / "seeds"


def test_the_partitions_cover_exactly_the_days_of_the_seed_data() -> None:
    days = sorted({day for seed in SEEDS.glob("*.sql")
                   for day in re.findall(r"TIMESTAMP '(\d{4}-\d{2}-\d{2})", seed.read_text())})
    partitions = {spec.partitions_def for spec in defs.resolve_all_asset_specs() if spec.partitions_def}
    assert len(partitions) == 1
    (definition,) = partitions
    assert definition.get_partition_keys() == days  # every day with data, and only those

"""Which code wrote which stretch of a table: the switch points of in-place replacements.

A stateless statement replaced in place (a compatible change, a dml-only swap)
starts from the offsets the old one stopped at, so its sink holds the old
code's output up to there and the new code's after. The new statement carries
that history itself, as one leading comment of its SQL: every earlier code
version's DML and the source offsets where it stopped. Whoever reads the
statement (a check, another machine, Confluent Cloud's copy) can recompute
each stretch with the SQL that wrote it; nothing else needs to be stored.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

HEADER = "-- shift-left-dagster stretches: "


class Stretch(BaseModel):
    """Rows written by one earlier code version: its DML over its sources up to `until`."""

    code_version: str | None = None
    sql: str  # the DML that wrote the stretch, inserting the columns it wrote
    until: dict[str, dict[int, int]]  # source topic -> partition -> first offset it did not process


def split(sql: str) -> tuple[list[Stretch], str]:
    """The earlier stretches a statement's SQL records (oldest first), and the SQL without them."""
    if not sql.startswith(HEADER):
        return [], sql
    first, _, body = sql.partition("\n")
    records = json.loads(first[len(HEADER):])
    return [Stretch.model_validate(r) for r in records], body


def with_stretches(sql: str, stretches: list[Stretch]) -> str:
    """`sql` (without a header) carrying `stretches` (oldest first); none: `sql` as it is."""
    if not stretches:
        return sql
    records = json.dumps([s.model_dump() for s in stretches], separators=(",", ":"))
    return f"{HEADER}{records}\n{sql}"

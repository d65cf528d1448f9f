"""The results of a continuous SELECT: the changelog of its result, run after run.

Confluent Cloud's results endpoint returns a SELECT's changelog rows with their op (0 +I,
1 -U, 2 +U, 3 -D; reference §2.8). Each run the engine recomputes the query and appends the
difference against the result so far (the fold of the rows already appended). Rows whose
upsert key (the GROUP BY columns, when the query projects them all) is both removed and added
become -U then +U, as Flink's group aggregation emits an update; other removals are -D and
other additions +I. Rows compare as they are sent: wire-encoded JSON.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from sqlglot import exp

from shift_left_dagster.local.catalog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE

Row = list[Any]
Change = tuple[int, Row]


def upsert_key(query: exp.Expression) -> list[int] | None:
    """Positions of the GROUP BY columns in a grouped SELECT's result (None: no such key)."""
    if not isinstance(query, exp.Select) or query.args.get("group") is None:
        return None
    projections = query.expressions
    positions: list[int] = []
    for grouped in query.args["group"].expressions:
        index = next((i for i, p in enumerate(projections) if p.unalias() == grouped
                      or (isinstance(grouped, exp.Column) and p.alias_or_name.lower() == grouped.name.lower())), None)
        if index is None:
            return None
        positions.append(index)
    return positions


def current(changes: list[Change]) -> Counter[str]:
    """The result the changes so far add up to, as a multiset of encoded rows."""
    rows: Counter[str] = Counter()
    for op, row in changes:
        rows[_encode(row)] += 1 if op in (INSERT, UPDATE_AFTER) else -1
    return +rows


def changelog(before: Counter[str], after: list[Row], key: list[int] | None) -> list[Change]:
    """What to append so the result goes from `before` to `after`."""
    wanted = Counter(_encode(row) for row in after)
    removed = [json.loads(r) for r in (before - wanted).elements()]
    added = [json.loads(r) for r in (wanted - before).elements()]
    if key is None:
        return [(DELETE, row) for row in removed] + [(INSERT, row) for row in added]
    added_by_key = {_encode([row[i] for i in key]): row for row in added}
    changes: list[Change] = []
    updated: set[str] = set()
    for row in removed:
        row_key = _encode([row[i] for i in key])
        if row_key in added_by_key and row_key not in updated:
            changes += [(UPDATE_BEFORE, row), (UPDATE_AFTER, added_by_key[row_key])]
            updated.add(row_key)
        else:
            changes.append((DELETE, row))
    changes += [(INSERT, row) for row in added if _encode([row[i] for i in key]) not in updated]
    return changes


def _encode(row: Row) -> str:
    return json.dumps(row, separators=(",", ":"))

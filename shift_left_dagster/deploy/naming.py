"""Deterministic names per environment: statements, backfill statements, compute pools, tables.

Pure functions. The same inputs give the same name on every machine and run
(hashes are blake2b of the name, never Python's salted ``hash()``), so a
redeploy finds the statements an earlier deploy created.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Literal

from shift_left_dagster.confluent.models import MAX_POOL_NAME_LENGTH, MAX_STATEMENT_NAME_LENGTH

_NOT_ALLOWED = re.compile(r"[^a-z0-9]+")
_HASH_HEX = 8

StatementKind = Literal["ddl", "dml", "drop"]


def statement_name(env: str, product: str | None, kind: StatementKind, table: str) -> str:
    """``<env>-<product>-<ddl|dml|drop>-<table>``, valid for the API and at most 72 characters."""
    return _fit([env, product or "", kind, table], tail="", limit=MAX_STATEMENT_NAME_LENGTH)


def backfill_statement_name(env: str, product: str | None, table: str, start: datetime, end: datetime) -> str:
    """Name of the bounded DML that reprocesses ``[start, end)``: ``...-dml-<table>-bf-<start>-<end>``.

    Hours in UTC (naive datetimes are taken as UTC). The window suffix survives
    truncation, so windows of one long table stay readable and distinct.
    """
    tail = f"bf-{_hour(start)}-{_hour(end)}"
    return _fit([env, product or "", "dml", table], tail=tail, limit=MAX_STATEMENT_NAME_LENGTH)


def lease_name(env: str, project: str) -> str:
    """The statement whose existence is the deployment lease of a project in an environment."""
    return _fit([env, "lease", project], tail="", limit=MAX_STATEMENT_NAME_LENGTH)


def compute_pool_name(env: str, product: str | None) -> str:
    """Compute pool display name ``<env>-<product>`` (valid for fcpm/v2, at most 64 characters)."""
    return _fit([env, product or ""], tail="", limit=MAX_POOL_NAME_LENGTH)


def versioned_name(table: str, version: int) -> str:
    """Blue/green: version 1 is the table's own name; later versions are `<table>_v<N>`."""
    return table if version <= 1 else f"{table}_v{version}"


def _slug(text: str) -> str:
    """Lowercase; every run of characters outside [a-z0-9] becomes one ``-``; no edge dashes."""
    return _NOT_ALLOWED.sub("-", text.lower()).strip("-")


def _fit(parts: list[str], tail: str, limit: int) -> str:
    """Join the slugged parts (+ tail); when too long, cut the head and add ``-<hash of full name>``."""
    head = "-".join(slug for slug in map(_slug, parts) if slug)
    if not head:
        raise ValueError("a name needs at least one non-empty part")
    suffix = f"-{tail}" if tail else ""
    full = head + suffix
    if len(full) <= limit:
        return full
    digest = hashlib.blake2b(full.encode("utf-8"), digest_size=_HASH_HEX // 2).hexdigest()
    keep = limit - len(suffix) - len(digest) - 1
    return f"{head[:keep].rstrip('-')}-{digest}{suffix}"


def _hour(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y%m%d%H")

"""CREATE TABLE t (...) WITH (...) LIKE source (<like options>): the table Flink derives.

Flink's rules: the source's physical columns always come first, then the
declared ones; each feature is merged by its strategy, and with no options
the default is INCLUDING ALL OVERWRITING OPTIONS:
- CONSTRAINTS (primary key), PARTITIONS (Confluent: the distribution and
  bucket count): INCLUDING or EXCLUDING;
- GENERATED (computed columns), METADATA (metadata columns), OPTIONS,
  WATERMARKS: INCLUDING, EXCLUDING or OVERWRITING.
INCLUDING fails where both tables define the same thing; OVERWRITING lets the
declared definition win.
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp

from shift_left_dagster.local.catalog import (
    DEFAULT_PARTITIONS,
    ColumnDef,
    TableDef,
    TableError,
    TableId,
    columns_from_schema,
)
from shift_left_dagster.project.analysis import analyze_ddl
from shift_left_dagster.project.dialect import Distribution
from shift_left_dagster.project.parsing import Statement

FEATURES = ("CONSTRAINTS", "PARTITIONS", "DISTRIBUTION", "GENERATED", "METADATA", "OPTIONS", "WATERMARKS")
_TWO_WAY = ("CONSTRAINTS", "PARTITIONS", "DISTRIBUTION")


def like_clause(create: exp.Create) -> exp.LikeProperty | None:
    properties = create.args.get("properties")
    return next((p for p in (properties.expressions if properties else []) if isinstance(p, exp.LikeProperty)), None)


def like_strategies(like: exp.LikeProperty) -> dict[str, str]:
    """Feature -> INCLUDING | EXCLUDING | OVERWRITING, defaults first, then the options in order."""
    strategies = {feature: "INCLUDING" for feature in FEATURES}
    strategies["OPTIONS"] = "OVERWRITING"
    for option in like.expressions:
        strategy, feature = option.name.upper(), option.text("value").upper()
        if feature == "ALL":
            if strategy == "OVERWRITING":
                raise TableError("OVERWRITING ALL is not a valid LIKE option (use INCLUDING ALL or EXCLUDING ALL).")
            strategies = {f: strategy for f in FEATURES}
            continue
        if feature not in FEATURES:
            raise TableError(f"Unknown LIKE option {strategy} {feature}.")
        if strategy == "OVERWRITING" and feature in _TWO_WAY:
            raise TableError(f"Illegal merging strategy 'OVERWRITING' for '{feature}' option.")
        strategies[feature] = strategy
    return strategies


def table_like(statement: Statement, uid: str, table_id: TableId, source: TableDef) -> TableDef:
    create = cast(exp.Create, statement.tree)  # callers pass a CREATE statement
    like = like_clause(create)
    assert like is not None
    strategy = like_strategies(like)
    schema = create.this if isinstance(create.this, exp.Schema) else None
    declared, declared_key, declared_watermark = columns_from_schema(schema)
    info = analyze_ddl(statement)

    columns = _columns(source, declared, strategy)
    primary_key = _one_of("CONSTRAINTS", strategy["CONSTRAINTS"], source.primary_key, declared_key,
                          "The base table already has a primary key. You might want to specify EXCLUDING CONSTRAINTS.")
    watermark = _one_of("WATERMARKS", strategy["WATERMARKS"], source.watermark_column, declared_watermark,
                        f"There already exists a watermark spec for column '{declared_watermark}' in the base "
                        f"table. You might want to specify EXCLUDING WATERMARKS or OVERWRITING WATERMARKS.")
    options = _options(source.options, info.options, strategy["OPTIONS"])
    properties = create.args.get("properties") or exp.Properties()
    distributed = any(isinstance(p, Distribution) for p in properties.expressions)
    keep_source = strategy["PARTITIONS"] == "INCLUDING" and strategy["DISTRIBUTION"] == "INCLUDING" and not distributed
    changelog_mode = options.get("changelog.mode", "upsert" if primary_key else "append")
    for column in columns:
        if column.name in primary_key:
            column.nullable = False
    update = {
        "uid": uid, "id": table_id, "columns": columns, "primary_key": primary_key or [],
        "distribution": source.distribution if keep_source else info.distribution,
        "partitions": source.partitions if keep_source else (info.buckets or DEFAULT_PARTITIONS),
        "changelog_mode": changelog_mode, "options": options, "watermark_column": watermark,
    }
    if watermark != source.watermark_column:  # the declared watermark: nothing else of the source's applies
        update.update({k: None for k in TableDef.model_fields
                       if k.startswith("watermark_") and k != "watermark_column"})
    return source.model_copy(deep=True, update=update)


def _columns(source: TableDef, declared: list[ColumnDef], strategy: dict[str, str]) -> list[ColumnDef]:
    kept: list[ColumnDef] = []
    names = {c.name.lower(): c for c in declared}
    for column in source.columns:
        feature = "GENERATED" if column.expression is not None else "METADATA" if column.metadata_key else None
        if feature is not None and strategy[feature] == "EXCLUDING":
            continue
        if column.name.lower() in names:
            if feature is None or strategy[feature] == "INCLUDING":
                raise TableError(f"A column named '{column.name}' already exists in the base table.")
            continue  # OVERWRITING: the declared column replaces it
        kept.append(column.model_copy())
    return kept + declared


def _one_of(feature: str, strategy: str, base, declared, clash: str):  # type: ignore[no-untyped-def]
    """Primary key or watermark: the declared one, the base's, or a clash under INCLUDING."""
    if strategy == "EXCLUDING":
        return declared
    if declared and base and strategy == "INCLUDING":
        raise TableError(clash)
    return declared or base


def _options(base: dict[str, str], declared: dict[str, str], strategy: str) -> dict[str, str]:
    if strategy == "EXCLUDING":
        return dict(declared)
    if strategy == "INCLUDING":
        for key in declared:
            if key in base:
                raise TableError(f"There already exists an option ['{key}' -> '{base[key]}'] in the base table. "
                                 f"You might want to specify EXCLUDING OPTIONS or OVERWRITING OPTIONS.")
    return {**base, **declared}

"""`SELECT *` and `t.*` -> the visible columns of the sources: one rule for column lineage and the translator.

sqlglot's scopes say which sources a SELECT reads (FROM, then the joins, in order) and its resolver what a
derived table, CTE, UNNEST or VALUES yields (a set operation: its first branch's names); the base tables'
visible columns come from the caller (Flink's SELECT * never includes a system column such as $rowtime).
Scopes are visited innermost first, so a star over a derived table sees that table's stars expanded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp
from sqlglot.optimizer.resolver import Resolver
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

# A base table's visible columns; None: unknown (a star over it is left as written).
VisibleColumns = Callable[[exp.Table], Sequence[str] | None]
# meta key of a projection that is a system column (a window TVF's $rowtime): selectable, never part of `*`.
SYSTEM = "system"
_NO_SCHEMA = MappingSchema()  # base tables are asked of the caller: the resolver only reads derived sources


def expand_stars(query: exp.Expr, visible: VisibleColumns) -> None:
    """Replace, in place, every star of every SELECT of `query` by `source.column` items (quoted)."""
    for scope in traverse_scope(query):
        if isinstance(scope.expression, exp.Select) and any(_is_star(e) for e in scope.expression.expressions):
            _expand_select(scope, visible)


def _is_star(item: exp.Expr) -> bool:
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))


def _expand_select(scope: Scope, visible: VisibleColumns) -> None:
    select = scope.expression
    resolver = Resolver(scope, _NO_SCHEMA)
    expanded: list[exp.Expr] = []
    for item in select.expressions:
        names = list(scope.selected_sources) if isinstance(item, exp.Star) else [item.table] if _is_star(item) else []
        columns = [_source_columns(scope, resolver, name, visible) for name in names]
        if not names or any(c is None for c in columns):  # not a star, or a source of unknown columns
            expanded.append(item)
            continue
        expanded += [exp.column(column, table=name or None, quoted=True)  # '': a source without a name
                     for name, found in zip(names, columns, strict=True) for column in found or []]
    select.set("expressions", expanded)


def _source_columns(scope: Scope, resolver: Resolver, name: str, visible: VisibleColumns) -> list[str] | None:
    source = scope.sources.get(name)
    if source is None:
        return None  # `x.*` naming no source of this SELECT: left for the engine to report
    if isinstance(source, exp.Table):
        found = visible(source)
        return None if found is None else list(found)
    hidden = {s.alias_or_name for s in source.expression.selects if s.meta.get(SYSTEM)} if isinstance(
        source.expression, exp.Select) else set()
    return [c for c in resolver.get_source_columns(name, only_visible=True) if c not in hidden]

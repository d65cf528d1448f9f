"""Column-level lineage: every expected mapping below is written by hand from the SQL it names."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import pytest
from dagster import AssetKey, TableColumnDep, TableColumnLineage, TableSchema
from typer.testing import CliRunner

from shift_left_dagster.cli import app
from shift_left_dagster.defs.assets import FlinkProject, FlinkTranslator, build_flink_asset_specs
from shift_left_dagster.project import lineage as lineage_module
from shift_left_dagster.project.graph import ProjectGraph
from shift_left_dagster.project.inventory import build_inventory
from shift_left_dagster.project.lineage import (
    ParentColumn,
    ProjectLineage,
    TableLineage,
    compute_lineage,
    project_lineage,
    table_lineage,
)

PIPELINES = "flink_project/pipelines"


def P(table: str, column: str) -> ParentColumn:  # noqa: N802 - reads as a pair in the expectations
    return ParentColumn(table, column)


@pytest.fixture(scope="module")
def graph() -> ProjectGraph:
    return ProjectGraph(build_inventory(PIPELINES))


# -- the sample project -------------------------------------------------------------------------

FCT_ORDER = {  # dml.fct_order.sql: a CTE over int_table_1 LEFT JOIN int_table_2, then the projection
    "order_id": [P("int_table_1", "order_id")],
    "order_date": [P("int_table_1", "order_ts")],  # CAST(order_ts AS DATE)
    "customer_id": [P("int_table_1", "customer_id")],
    "customer_name": [P("int_table_1", "customer_name")],
    "customer_segment": [P("int_table_1", "customer_segment")],
    "country_code": [P("int_table_1", "country_code")],
    "order_status": [P("int_table_1", "order_status")],
    "order_amount": [P("int_table_1", "order_amount")],
    "paid_amount": [P("int_table_2", "paid_amount")],  # COALESCE(p.paid_amount, 0)
    "outstanding_amount": [P("int_table_1", "order_amount"), P("int_table_2", "paid_amount")],
    "payment_count": [P("int_table_2", "payment_count")],
    "payment_state": [P("int_table_1", "order_amount"), P("int_table_2", "paid_amount"),
                      P("int_table_2", "payment_count")],  # the CASE reads all three
    "order_ts": [P("int_table_1", "order_ts")],
}


def test_fct_order_lineage_from_its_dml_and_parents_ddls(graph: ProjectGraph) -> None:
    result = table_lineage(graph, "fct_order")
    assert result.table == "fct_order"
    assert result.unknown == {}
    assert result.columns == FCT_ORDER
    assert list(result.columns) == list(FCT_ORDER)  # the DDL's column order


def test_window_tvf_over_rowtime_in_the_sample(graph: ProjectGraph) -> None:
    """TABLE(TUMBLE(TABLE src_c360_app_events, DESCRIPTOR($rowtime), INTERVAL '1' HOUR))."""
    result = table_lineage(graph, "fct_c360_hourly_activity")
    assert result.unknown == {}
    assert result.columns == {
        "window_start": [P("src_c360_app_events", "$rowtime")],
        "window_end": [P("src_c360_app_events", "$rowtime")],
        "event_type": [P("src_c360_app_events", "event_type")],
        "event_count": [],  # COUNT(*): no column
        "unique_users": [P("src_c360_app_events", "user_id")],
        "total_duration_ms": [P("src_c360_app_events", "duration_ms")],
        "max_duration_ms": [P("src_c360_app_events", "duration_ms")],
    }


def test_unnest_and_temporal_join_in_the_sample(graph: ProjectGraph) -> None:
    items = table_lineage(graph, "int_c360_purchase_items")
    assert items.columns["sku"] == [P("src_c360_purchases", "items")]  # UPPER(TRIM(t.item)) of UNNEST(p.items)
    assert items.columns["purchase_id"] == [P("src_c360_purchases", "purchase_id")]
    purchase = table_lineage(graph, "fct_c360_purchase")  # JOIN src_c360_users FOR SYSTEM_TIME AS OF p.$rowtime
    assert purchase.unknown == {}
    assert purchase.columns["tier_at_purchase"] == [P("src_c360_users", "tier")]
    assert purchase.columns["purchase_day"] == [P("src_c360_purchases", "purchase_ts")]
    assert purchase.columns["user_id"] == [P("src_c360_purchases", "user_id")]


def test_sources_point_at_their_raw_topics(graph: ProjectGraph) -> None:
    result = table_lineage(graph, "src_table_1")  # a ROW_NUMBER dedup CTE over raw_orders (no DDL)
    assert result.columns["order_amount"] == [P("raw_orders", "quantity"), P("raw_orders", "unit_price")]
    assert result.columns["order_ts"] == [P("raw_orders", "event_ts")]
    users = table_lineage(graph, "src_c360_users")
    assert users.columns["updated_at"] == [P("raw_users", "$rowtime")]


def test_every_sample_table_has_lineage_for_every_column(graph: ProjectGraph) -> None:
    for name, table in graph.tables.items():
        result = table_lineage(graph, name)
        assert result.unknown == {}, name
        assert table.ddl is not None
        assert list(result.columns) == [c.name for c in table.ddl.columns if not c.computed], name


# -- constructs, on small statements ----------------------------------------------------------


def test_cte_and_join() -> None:
    result = compute_lineage(
        "t",
        "INSERT INTO t WITH c AS (SELECT a.k, a.v + b.w AS s FROM a JOIN b ON a.k = b.k) SELECT k, s * 2 FROM c",
        ["key", "total"],
        {"a": ["k", "v"], "b": ["k", "w"]},
    )
    assert result.columns == {"key": [P("a", "k")], "total": [P("a", "v"), P("b", "w")]}
    assert result.unknown == {}


def test_explicit_insert_column_list_maps_by_name() -> None:
    result = compute_lineage(
        "t", "INSERT INTO t (c, a) SELECT x.p, y.q FROM x JOIN y ON x.id = y.id",
        ["a", "b", "c"], {"x": ["id", "p"], "y": ["id", "q"]},
    )
    assert result.columns == {"a": [P("y", "q")], "b": [], "c": [P("x", "p")]}  # b is not written: NULL


def test_star_over_a_derived_table() -> None:
    result = compute_lineage(
        "t", "INSERT INTO t SELECT * FROM (SELECT a, b + c AS bc FROM s) AS d",
        ["first", "second"], {"s": ["a", "b", "c"]},
    )
    assert result.columns == {"first": [P("s", "a")], "second": [P("s", "b"), P("s", "c")]}


def test_star_over_a_table_is_positional_and_skips_rowtime() -> None:
    result = compute_lineage("t", "INSERT INTO t SELECT * FROM s", ["x", "y"], {"s": ["p", "q"]})
    assert result.columns == {"x": [P("s", "p")], "y": [P("s", "q")]}


def test_window_tvf_with_a_descriptor_column_and_an_alias() -> None:
    result = compute_lineage(
        "t",
        "INSERT INTO t SELECT w.window_start, w.window_end, kind, COUNT(*) AS n, SUM(d) AS total "
        "FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' MINUTE, INTERVAL '1' HOUR)) AS w "
        "GROUP BY w.window_start, w.window_end, kind",
        ["ws", "we", "kind", "n", "total"], {"ev": ["kind", "d", "ts"]},
    )
    assert result.unknown == {}
    assert result.columns == {"ws": [P("ev", "ts")], "we": [P("ev", "ts")], "kind": [P("ev", "kind")],
                              "n": [], "total": [P("ev", "d")]}


def test_statement_set_merges_every_insert_into_the_table() -> None:
    result = compute_lineage(
        "t", "EXECUTE STATEMENT SET BEGIN INSERT INTO t SELECT a FROM s1; INSERT INTO t SELECT b FROM s2; "
        "INSERT INTO other SELECT c FROM s3; END",
        ["v"], {"s1": ["a"], "s2": ["b"], "s3": ["c"]},
    )
    assert result.columns == {"v": [P("s1", "a"), P("s2", "b")]}


def test_what_cannot_be_computed_is_unknown_with_a_reason_never_a_crash() -> None:
    # an unqualified column over two tables without schemas: which one is it?
    ambiguous = compute_lineage("t", "INSERT INTO t SELECT a, y.b FROM x JOIN y ON x.id = y.id", ["a", "b"], {})
    assert ambiguous.columns == {"b": [P("y", "b")]}
    assert set(ambiguous.unknown) == {"a"} and ambiguous.unknown["a"]
    # a star over a topic without a DDL: nothing to expand it with
    star = compute_lineage("t", "INSERT INTO t SELECT * FROM raw", ["a", "b"], {})
    assert star.columns == {} and set(star.unknown) == {"a", "b"} and "raw" in star.unknown["a"]
    # more output columns than the table has
    wide = compute_lineage("t", "INSERT INTO t SELECT a, b FROM s", ["a"], {"s": ["a", "b"]})
    assert wide.columns == {} and "2" in wide.unknown["a"]
    # a user table function: its columns come from code, not from SQL
    udtf = compute_lineage("t", "INSERT INTO t SELECT s.a, f.x FROM s, LATERAL TABLE(explode(s.a)) AS f(x)",
                           ["a", "x"], {"s": ["a"]})
    assert udtf.columns["a"] == [P("s", "a")]
    assert "x" in udtf.unknown or udtf.columns["x"] == [P("s", "a")]
    # MATCH_RECOGNIZE: its outputs are partition columns and measures, which sqlglot does not model
    match = compute_lineage(
        "t", "INSERT INTO t SELECT a, mb FROM s MATCH_RECOGNIZE (PARTITION BY a ORDER BY ts MEASURES A.b AS mb "
        "PATTERN (A) DEFINE A AS A.b > 0)", ["a", "mb"], {"s": ["a", "b", "ts"]})
    assert match.columns == {} and "MATCH_RECOGNIZE" in match.unknown["mb"]
    # not even SQL
    broken = compute_lineage("t", "INSERT INTO t SELEC nothing", ["a"], {})
    assert broken.columns == {} and broken.unknown["a"]


def _project(root: Path, parent_columns: str) -> ProjectGraph:
    for name, ddl, dml in (("s", f"CREATE TABLE s ({parent_columns})", "INSERT INTO s SELECT * FROM raw_s"),
                           ("t", "CREATE TABLE t (k STRING, v INT)", "INSERT INTO t SELECT * FROM s")):
        scripts = root / "pipelines" / "facts" / "p" / name / "sql-scripts"
        scripts.mkdir(parents=True, exist_ok=True)
        (scripts / f"ddl.{name}.sql").write_text(ddl)
        (scripts / f"dml.{name}.sql").write_text(dml)
    return ProjectGraph(build_inventory(root / "pipelines"))


def test_lineage_is_cached_on_disk_and_retraced_when_a_parent_ddl_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SHIFT_LEFT_DAGSTER_CACHE", raising=False)
    first = ProjectLineage(_project(tmp_path, "k STRING, v INT")).all()
    assert first["t"].columns == {"k": [P("s", "k")], "v": [P("s", "v")]}
    assert (tmp_path / ".shift_left_dagster" / "cache" / "lineage.json").is_file()

    def fail(*args: object) -> TableLineage:
        raise AssertionError("traced again")

    monkeypatch.setattr(lineage_module, "compute_lineage", fail)
    assert ProjectLineage(_project(tmp_path, "k STRING, v INT")).all() == first  # read from disk
    monkeypatch.undo()
    renamed = ProjectLineage(_project(tmp_path, "key STRING, v INT")).all()  # s's columns changed: t re-traced
    assert renamed["t"].columns == {"k": [P("s", "key")], "v": [P("s", "v")]}


def test_an_unchanged_inventory_finds_its_tables_lineage_without_computing_their_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lineage.json names the inventory it was saved for (Inventory.source): the same inventory reads each
    table's entry by name; a changed file changes the source, so the tables' keys decide again."""
    monkeypatch.delenv("SHIFT_LEFT_DAGSTER_CACHE", raising=False)
    first = ProjectLineage(_project(tmp_path, "k STRING, v INT")).all()

    def fail(*args: object) -> str:
        raise AssertionError("keyed or traced again")

    monkeypatch.setattr(lineage_module, "_key", fail)
    monkeypatch.setattr(lineage_module, "compute_lineage", fail)
    again = ProjectLineage(_project(tmp_path, "k STRING, v INT"))
    assert again.all() == first
    assert again.of("t") == first["t"]
    monkeypatch.undo()
    renamed = ProjectLineage(_project(tmp_path, "kk STRING, v INT")).all()  # s's DDL edited: a new inventory
    assert renamed["t"].columns == {"k": [P("s", "kk")], "v": [P("s", "v")]}


def test_a_graphs_lineage_lives_as_long_as_the_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ProjectLineage per graph, shared while the graph lives, freed with it: a code location that
    reloads (or a process that builds definitions again) must not keep every earlier project in memory."""
    monkeypatch.delenv("SHIFT_LEFT_DAGSTER_CACHE", raising=False)
    graph = _project(tmp_path, "k STRING, v INT")
    traced = project_lineage(graph)
    assert project_lineage(graph) is traced and traced.all()["t"].columns == {"k": [P("s", "k")], "v": [P("s", "v")]}
    assert project_lineage(ProjectGraph(graph.inventory)) is not traced  # another graph: its own lineage
    gone_graph, gone_lineage = weakref.ref(graph), weakref.ref(traced)
    del graph, traced
    gc.collect()
    assert gone_graph() is None and gone_lineage() is None


def test_unknown_columns_are_in_the_asset_metadata_with_their_reason(tmp_path: Path) -> None:
    _project(tmp_path, "k STRING, v INT")
    built = build_flink_asset_specs(FlinkProject(str(tmp_path / "pipelines")), FlinkTranslator())
    source = next(s for s in built.specs if s.key == AssetKey("s"))  # SELECT * FROM raw_s: no DDL for raw_s
    assert "dagster/column_lineage" not in source.metadata
    assert set(source.metadata["column_lineage_unknown"]) == {"k", "v"}
    assert "raw_s" in source.metadata["column_lineage_unknown"]["k"]
    target = next(s for s in built.specs if s.key == AssetKey("t"))
    assert "column_lineage_unknown" not in target.metadata


# -- Dagster metadata ------------------------------------------------------------------------


def _spec(translator: FlinkTranslator, key: AssetKey):  # noqa: ANN202
    built = build_flink_asset_specs(FlinkProject(PIPELINES), translator)
    return next(s for s in built.specs if s.key == key)


def test_fct_order_asset_carries_column_lineage_and_schema() -> None:
    spec = _spec(FlinkTranslator(), AssetKey("fct_order"))
    lineage = spec.metadata["dagster/column_lineage"]
    assert isinstance(lineage, TableColumnLineage)
    expected = {column: {TableColumnDep(asset_key=AssetKey(p.table), column_name=p.column) for p in parents}
                for column, parents in FCT_ORDER.items()}
    assert {c: set(deps) for c, deps in lineage.deps_by_column.items()} == expected
    schema = spec.metadata["dagster/column_schema"]
    assert isinstance(schema, TableSchema)
    assert [c.name for c in schema.columns] == list(FCT_ORDER)


def test_lineage_deps_use_the_translator_keys() -> None:
    class Prefixed(FlinkTranslator):
        def get_asset_key(self, table):  # noqa: ANN001, ANN202
            return AssetKey(["flink", table.name])

        def get_external_asset_key(self, topic):  # noqa: ANN001, ANN202
            return AssetKey(["kafka", topic])

    fct = _spec(Prefixed(), AssetKey(["flink", "fct_order"])).metadata["dagster/column_lineage"]
    assert fct.deps_by_column["paid_amount"] == [TableColumnDep(asset_key=AssetKey(["flink", "int_table_2"]),
                                                                column_name="paid_amount")]
    src = _spec(Prefixed(), AssetKey(["flink", "src_table_1"])).metadata["dagster/column_lineage"]
    assert src.deps_by_column["order_ts"] == [TableColumnDep(asset_key=AssetKey(["kafka", "raw_orders"]),
                                                             column_name="event_ts")]


# -- CLI --------------------------------------------------------------------------------------


def test_cli_lineage_json_of_a_table() -> None:
    result = CliRunner().invoke(app, ["lineage", "fct_order", "--pipelines", PIPELINES, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["table"] == "fct_order"
    assert data["columns"]["outstanding_amount"] == {
        "parents": [{"table": "int_table_1", "column": "order_amount"},
                    {"table": "int_table_2", "column": "paid_amount"}],
        "unknown": None,
    }
    assert list(data["columns"]) == list(FCT_ORDER)


def test_cli_lineage_of_one_column_traces_it_to_the_raw_topics() -> None:
    args = ["lineage", "fct_order", "outstanding_amount", "--pipelines", PIPELINES]
    tree = CliRunner().invoke(app, [*args, "--format", "tree"])
    assert tree.exit_code == 0, tree.output
    lines = tree.output.splitlines()
    assert lines[0] == "fct_order.outstanding_amount"
    # int_table_1.order_amount <- src_table_1.order_amount <- CAST(quantity * unit_price ...) of raw_orders
    for expected in ("int_table_1.order_amount", "src_table_1.order_amount", "raw_orders.quantity",
                     "raw_orders.unit_price", "int_table_2.paid_amount", "src_table_3.signed_amount",
                     "raw_payments.amount", "raw_payments.payment_status"):
        assert any(line.endswith(expected) for line in lines), expected
    data = json.loads(CliRunner().invoke(app, [*args, "--format", "json"]).output)
    assert (data["table"], data["column"]) == ("fct_order", "outstanding_amount")
    first = data["parents"][0]
    assert (first["table"], first["column"]) == ("int_table_1", "order_amount")
    assert [(p["table"], p["column"]) for p in first["parents"]] == [("src_table_1", "order_amount")]


def test_cli_lineage_unknown_table_or_column_fails_with_a_message() -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["lineage", "nope", "--pipelines", PIPELINES])
    assert missing.exit_code == 2 and "nope" in missing.output
    column = runner.invoke(app, ["lineage", "fct_order", "nope", "--pipelines", PIPELINES])
    assert column.exit_code == 2 and "nope" in column.output

"""Dagster wiring: one subsettable multi_asset, specs from the translator, externals as specs."""

from dagster import AssetKey, AssetSpec

from shift_left_dagster.defs.assets import FlinkProject, FlinkTranslator, build_flink_assets
from shift_left_dagster.defs.builder import build_flink_definitions
from shift_left_dagster.defs.definitions import defs


def test_definitions_load_with_one_subsettable_multi_asset():
    repo = defs.get_repository_def()
    table_assets = {a for a in repo.assets_defs_by_key.values() if a.is_executable}
    assert len(table_assets) == 1
    (multi,) = table_assets
    assert multi.can_subset
    assert AssetKey("fct_order") in multi.keys
    assert AssetKey("raw_orders") not in multi.keys  # external source: a plain spec
    spec = next(s for s in multi.specs if s.key == AssetKey("fct_order"))
    assert {d.asset_key for d in spec.deps} == {AssetKey("int_table_1"), AssetKey("int_table_2")}
    assert spec.group_name == "p1" and spec.kinds == {"flink", "confluent"}
    assert spec.tags["flink/state_form"] == "stateful" and spec.tags["flink/type"] == "fact"
    assert spec.code_version and spec.metadata["dml_path"].endswith("dml.fct_order.sql")
    source = next(s for s in multi.specs if s.key == AssetKey("src_table_1"))
    assert AssetKey("raw_orders") in {d.asset_key for d in source.deps}


def test_translator_subclass_changes_keys_and_groups():
    class Prefixed(FlinkTranslator):
        def get_asset_key(self, table):
            return AssetKey(["flink", table.name])

        def get_external_asset_key(self, topic):
            return AssetKey(["flink", topic])

        def get_group_name(self, table):
            return f"team_{table.product}"

    assets = build_flink_assets(FlinkProject(), Prefixed())
    multi = assets[0]
    assert AssetKey(["flink", "fct_order"]) in multi.keys
    externals = [a for a in assets if isinstance(a, AssetSpec)]
    assert AssetKey(["flink", "raw_orders"]) in {e.key for e in externals}
    assert next(s for s in multi.specs if s.key == AssetKey(["flink", "z"])).group_name == "team_p2"


def test_builder_takes_another_project(tmp_path):
    scripts = tmp_path / "pipelines" / "facts" / "sales" / "t" / "sql-scripts"
    scripts.mkdir(parents=True)
    (scripts / "ddl.t.sql").write_text("CREATE TABLE t (k STRING)")
    (scripts / "dml.t.sql").write_text("INSERT INTO t SELECT k FROM raw_sales")
    keys = build_flink_definitions(str(tmp_path / "pipelines")).get_repository_def().assets_defs_by_key
    assert set(keys) == {AssetKey("t"), AssetKey("raw_sales")}


def test_yaml_component_builds_the_same_assets(tmp_path):
    from pathlib import Path

    from dagster import ComponentTree

    from shift_left_dagster.defs.component import FlinkProjectComponent

    sample = Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"
    component = FlinkProjectComponent.resolve_from_yaml(f"pipelines: {sample}\nmode: local\n")
    built = component.build_defs(ComponentTree.for_test().load_context)
    assert set(built.get_repository_def().assets_defs_by_key) == set(defs.get_repository_def().assets_defs_by_key)


def test_yaml_component_translation_select_checks_and_op(tmp_path):
    from pathlib import Path

    from dagster import AssetCheckKey, ComponentTree

    from shift_left_dagster.defs.component import FlinkProjectComponent

    sample = Path(__file__).resolve().parents[2] / "flink_project" / "pipelines"
    component = FlinkProjectComponent.resolve_from_yaml(
        f"pipelines: {sample}\n"
        "select: ['*table*', 'fct_order']\n"
        "exclude: ['src_table_3']\n"
        "checks: {enabled: [unique_primary_key], blocking: []}\n"
        "op: {name: flink_sales}\n"
        "translation:\n  group_name: 'team_{{ table.product }}'\n  owners: ['team:data']\n")
    repo = component.build_defs(ComponentTree.for_test().load_context).get_repository_def()
    (multi,) = {a for a in repo.assets_defs_by_key.values() if a.is_executable}
    assert multi.op.name == "flink_sales"
    tables = {k.path[-1] for k in multi.keys}
    assert tables == {"src_table_1", "src_table_2", "int_table_1", "int_table_2", "fct_order"}
    spec = next(s for s in multi.specs if s.key.path[-1] == "fct_order")
    assert spec.group_name == "team_p1" and spec.owners == ["team:data"]
    # `enabled` chooses among the built-in checks; the data tests in checks/ folders are declared one by one
    declared = {"outstanding_is_order_minus_paid", "paid_orders_owe_nothing"}  # fct_order's checks/ folder
    assert {k.name for k in multi.check_keys} == {"unique_primary_key"} | declared
    assert AssetCheckKey(spec.key, "unique_primary_key") in multi.check_keys
    assert not any(s.blocking for s in multi.check_specs if s.name not in declared)


def test_two_tables_with_one_key_is_a_clear_error():
    import pytest

    class Collapsing(FlinkTranslator):
        def get_asset_key(self, table):
            return AssetKey([table.product])

    with pytest.raises(ValueError, match="map to the same asset key"):
        build_flink_assets(FlinkProject(), Collapsing())


def test_specs_link_to_their_sql_file_through_dagster_public_code_references():
    from dagster import CodeReferencesMetadataValue, LocalFileCodeReference

    multi = build_flink_assets(FlinkProject(), FlinkTranslator())[0]
    spec = next(s for s in multi.specs if s.key == AssetKey("fct_order"))
    value = spec.metadata["dagster/code_references"]
    assert isinstance(value, CodeReferencesMetadataValue)
    ddl, dml = value.code_references  # both files (issue 29)
    assert isinstance(ddl, LocalFileCodeReference) and isinstance(dml, LocalFileCodeReference)
    assert ddl.file_path.endswith("/facts/p1/fct_order/sql-scripts/ddl.fct_order.sql")
    assert dml.file_path.endswith("/facts/p1/fct_order/sql-scripts/dml.fct_order.sql")
    assert ddl.line_number == dml.line_number == 1


def test_the_health_sensors_checks_are_declared_on_tables_with_a_dml_and_never_block():
    multi = next(a for a in defs.get_repository_def().assets_defs_by_key.values() if a.is_executable)
    watched = {(s.asset_key, s.name): s for s in multi.check_specs if s.name in ("statement_lag", "statement_stalled")}
    assert {name for key, name in watched if key == AssetKey("fct_order")} == {"statement_lag", "statement_stalled"}
    assert not any(s.blocking for s in watched.values())
    assert "health.stalled_minutes" in watched[(AssetKey("fct_order"), "statement_stalled")].description

"""What the open-source UI can show of a table (issue 29, build 3): column descriptions from the DDL's
COMMENTs, links to both SQL files, and the column lineage and graph neighbourhood as Markdown (Dagster
OSS does not draw `dagster/column_lineage`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, CodeReferencesMetadataValue, MarkdownMetadataValue, TableSchema

from shift_left_dagster.defs.assets import build_flink_asset_specs
from shift_left_dagster.defs.project import FlinkProject


def write_table(pipelines: Path, folder: str, name: str, ddl: str, dml: str) -> None:
    scripts = pipelines / folder / name / "sql-scripts"
    scripts.mkdir(parents=True)
    (scripts / f"ddl.{name}.sql").write_text(ddl)
    (scripts / f"dml.{name}.sql").write_text(dml)


@pytest.fixture
def specs(tmp_path: Path) -> dict[AssetKey, object]:
    pipelines = tmp_path / "pipelines"
    write_table(pipelines, "sources/p", "src_a", "CREATE TABLE src_a (id INT COMMENT 'the order id', v STRING);",
                "INSERT INTO src_a SELECT id, v FROM raw_a;")
    write_table(pipelines, "facts/p", "fct_b", "CREATE TABLE fct_b (\n  id INT COMMENT 'order id',\n  w STRING\n);",
                "INSERT INTO fct_b\nSELECT id, UPPER(v) AS w FROM src_a;")
    built = build_flink_asset_specs(FlinkProject(pipelines))
    return {spec.key: spec for spec in built.specs}


def test_column_descriptions_come_from_the_ddl_comments(specs: dict[AssetKey, object]) -> None:
    schema = specs[AssetKey("fct_b")].metadata["dagster/column_schema"]  # type: ignore[attr-defined]
    assert isinstance(schema, TableSchema)
    assert [(c.name, c.description) for c in schema.columns] == [("id", "order id"), ("w", None)]


def test_code_references_link_the_ddl_and_the_dml(specs: dict[AssetKey, object], tmp_path: Path) -> None:
    references = specs[AssetKey("fct_b")].metadata["dagster/code_references"]  # type: ignore[attr-defined]
    assert isinstance(references, CodeReferencesMetadataValue)
    folder = tmp_path / "pipelines" / "facts" / "p" / "fct_b" / "sql-scripts"
    assert sorted(r.file_path for r in references.code_references) == [  # type: ignore[union-attr]
        str(folder / "ddl.fct_b.sql"), str(folder / "dml.fct_b.sql")]


def test_the_column_lineage_and_neighbourhood_are_markdown(specs: dict[AssetKey, object]) -> None:
    metadata = specs[AssetKey("fct_b")].metadata  # type: ignore[attr-defined]
    lineage = metadata["column_lineage_table"]
    assert isinstance(lineage, MarkdownMetadataValue)
    rows = [line for line in lineage.md_str.splitlines() if line.startswith("| `")]
    assert rows == ["| `id` | `src_a.id` |", "| `w` | `src_a.v` |"]
    around = metadata["neighbourhood"]
    assert isinstance(around, MarkdownMetadataValue)
    assert "src_a" in around.md_str and "fct_b" in around.md_str
    source_around = specs[AssetKey("src_a")].metadata["neighbourhood"].md_str  # type: ignore[attr-defined]
    assert "raw_a" in source_around and "fct_b" in source_around

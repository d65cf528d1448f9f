"""`shift-left-dagster explain TABLE`: what would be sent, and why the table is what it is."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from shift_left_dagster.cli import app

PIPELINES = "flink_project/pipelines"


def _explain(*args: str):  # noqa: ANN202
    return CliRunner().invoke(app, ["explain", *args, "--pipelines", PIPELINES])


def test_explain_json_of_fct_order() -> None:
    result = _explain("fct_order", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["table"] == "fct_order"
    assert data["ddl_sql"].startswith("CREATE TABLE IF NOT EXISTS fct_order (order_id STRING, ")
    assert "-- " not in data["ddl_sql"] and "-- " not in data["dml_sql"]  # normalised: no comments
    assert data["dml_sql"].startswith("INSERT INTO fct_order WITH order_payments AS (SELECT ")
    assert data["state_form"] == "stateful"
    assert data["state_reasons"] == ["LEFT join"]
    assert data["changelog_mode"] == "upsert"
    assert data["primary_key"] == ["order_id"]
    assert data["parents"] == ["int_table_1", "int_table_2"]
    assert data["children"] == []
    assert data["external_sources"] == []
    assert data["ddl_path"].endswith("ddl.fct_order.sql") and data["dml_path"].endswith("dml.fct_order.sql")


def test_explain_stateful_by_reading_an_upsert_changelog() -> None:
    """d is a projection of z, stateful only because z is an upsert table (ChangelogNormalize)."""
    data = json.loads(_explain("d", "--json").output)
    assert data["state_form"] == "stateful"
    assert data["state_reasons"] == ["reads the upsert changelog of z (ChangelogNormalize)"]
    assert data["parents"] == ["z"] and data["children"] == ["v_p"]


def test_explain_text_names_every_part() -> None:
    result = _explain("src_table_1")
    assert result.exit_code == 0, result.output
    text = result.output
    for expected in ("src_table_1 (source, p1)", "state form: stateful (ROW_NUMBER deduplication / top-n)",
                     "changelog mode: upsert", "primary key: order_id", "parents: -",
                     "external sources: raw_orders", "children: int_table_1",
                     "CREATE TABLE IF NOT EXISTS src_table_1", "INSERT INTO src_table_1 WITH ranked_orders AS"):
        assert expected in text, expected


def test_explain_unknown_table_fails_with_a_message() -> None:
    result = _explain("nope")
    assert result.exit_code == 2 and "nope" in result.output

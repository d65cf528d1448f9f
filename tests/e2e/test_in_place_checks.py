"""Checks after in-place changes through the git sensor path (issue 25, case 2).

A compatible change of a stateless table (a projection changed; then a nullable column added to its
DDL and DML) is replaced in place from the old statement's offsets: the rows written before keep the
old code's values. `reconciled` must compare each stretch with the SQL that wrote it: green on this
correct data, in the sensor's run and in every check afterwards. (It was red for good: it recomputed
the new DML over all history, `missing=29, unexpected=29`.)

Expected rows come from the seed file in plain Python, with the switch point the test itself chose.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetSelection, DagsterInstance, materialize

from shift_left_dagster.defs.assets import FlinkProject, build_flink_assets
from shift_left_dagster.defs.builder import flink_resources
from shift_left_dagster.defs.resources import ConfluentFlinkResource
from shift_left_dagster.defs.sensors import COMMIT_TAG, SINCE_TAG
from shift_left_dagster.local.process import InProcessService
from tests.integration.support import client_for, git, project_repo, quiesce, run, seed_rows, select, unique

pytestmark = pytest.mark.service

TABLE = "int_c360_purchase_items"
SCRIPTS = f"pipelines/intermediates/c360/{TABLE}/sql-scripts"


@pytest.fixture(scope="module")
def service(spark, tmp_path_factory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    with InProcessService(tmp_path_factory.mktemp("in-place-service"), spark_factory=lambda: spark) as running:
        yield running


def items(purchases: list[dict], channel) -> list[tuple]:  # type: ignore[no-untyped-def]
    """int_c360_purchase_items of `purchases` in plain Python (src filter, then UNNEST), `channel`
    mapping the source's channel as the code of that stretch does."""
    rows = []
    for p in purchases:
        if p["purchase_id"] is None or p["amount"] is None or p["amount"] <= 0 or p["items"] is None:
            continue
        source_channel = (p["channel"] or "web").upper()
        rows += [(p["purchase_id"], item.strip().upper(), channel(source_channel)) for item in p["items"]]
    return sorted(rows, key=repr)


def add_purchases(client, rows: list[tuple[str, str, str, str]]) -> list[dict]:  # type: ignore[no-untyped-def]
    """New raw purchases (id, user, channel, item) written to the raw topic; their plain-Python form."""
    values = ", ".join(f"('{p}', '{u}', '{c}', ARRAY['{i}'], 10.00, TIMESTAMP '2026-01-06 10:00:00')"
                       for p, u, c, i in rows)
    run(client, unique("raw"), f"INSERT INTO raw_purchases VALUES {values}")
    return [{"purchase_id": p, "user_id": u, "channel": c, "items": [i], "amount": 10} for p, u, c, i in rows]


def deploy(repo: Path, url: str, instance: DagsterInstance, selection: AssetSelection,
           tags: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    result = materialize(build_flink_assets(FlinkProject(repo / "pipelines")), selection=selection,
                         resources=flink_resources(ConfluentFlinkResource(mode="local", local_url=url)),
                         instance=instance, tags=tags, raise_on_error=False)
    return result


def checks_of(result) -> dict[str, tuple[bool, str]]:  # type: ignore[no-untyped-def]
    return {e.check_name: (e.passed, e.description or "") for e in result.get_asset_check_evaluations()
            if e.asset_key.path[-1] == TABLE}


def commit(repo: Path, message: str, **files: str) -> tuple[str, str]:
    before = git(repo, "rev-parse", "HEAD")
    for name, text in files.items():
        (repo / SCRIPTS / name).write_text(text)
    git(repo, "commit", "-qam", message)
    return before, git(repo, "rev-parse", "HEAD")


def test_compatible_changes_in_place_keep_every_check_green(service, tmp_path):  # type: ignore[no-untyped-def]
    repo = project_repo(tmp_path)
    client = client_for(service.url)
    instance = DagsterInstance.ephemeral()
    table = AssetSelection.assets(TABLE)
    first = deploy(repo, service.url, instance, table.upstream() - AssetSelection.assets("raw_purchases"))
    assert first.success
    quiesce(service.url)
    seeded = seed_rows("raw_purchases")
    assert select(client, f"SELECT purchase_id, sku, channel FROM {TABLE}") == items(seeded, str)

    # 1. A projection changes: old rows keep upper-case channels, rows read after the switch are lower-case.
    dml = (repo / SCRIPTS / f"dml.{TABLE}.sql").read_text()
    lowered = dml.replace("  p.channel,", "  LOWER(p.channel) AS channel,")
    since, until = commit(repo, "lower-case channels", **{f"dml.{TABLE}.sql": lowered})
    changed = deploy(repo, service.url, instance, table, tags={SINCE_TAG: since, COMMIT_TAG: until})
    assert changed.success, checks_of(changed)
    assert [e.materialization.metadata["action"].value for e in changed.get_asset_materialization_events()
            if e.asset_key.path[-1] == TABLE] == ["replace_in_place"]
    later = add_purchases(client, [("pur-901", "u-001", "App", "sku-100"), ("pur-902", "u-002", "web", "sku-900")])
    quiesce(service.url)
    expected = sorted(items(seeded, str) + items(later, str.lower), key=repr)
    assert select(client, f"SELECT purchase_id, sku, channel FROM {TABLE}") == expected

    # Every check of the table, computed again afterwards (a check-only run, as `shift-left-dagster check`).
    again = deploy(repo, service.url, instance, AssetSelection.checks_for_assets(TABLE))
    verdicts = checks_of(again)
    assert again.success and verdicts["reconciled"][0], verdicts
    assert "2 code versions" in verdicts["reconciled"][1]

    # 2. A nullable column added to the DDL and the DML: old rows hold NULL there, new rows the value.
    ddl = (repo / SCRIPTS / f"ddl.{TABLE}.sql").read_text()
    wider = ddl.replace("  purchase_ts TIMESTAMP_LTZ(3)\n", "  purchase_ts TIMESTAMP_LTZ(3),\n  user_upper STRING\n")
    assert wider != ddl
    with_column = lowered.replace("  p.purchase_ts\n", "  p.purchase_ts,\n  UPPER(p.user_id) AS user_upper\n")
    assert with_column != lowered
    since, until = commit(repo, "user_upper", **{f"ddl.{TABLE}.sql": wider, f"dml.{TABLE}.sql": with_column})
    added = deploy(repo, service.url, instance, table, tags={SINCE_TAG: since, COMMIT_TAG: until})
    assert added.success, checks_of(added)
    newest = add_purchases(client, [("pur-903", "u-003", "WEB", "sku-300")])
    quiesce(service.url)
    rows = select(client, f"SELECT purchase_id, sku, channel, user_upper FROM {TABLE}")
    assert rows == sorted([(*r, None) for r in expected] + [(*r, "U-003") for r in items(newest, str.lower)],
                          key=repr)
    final = deploy(repo, service.url, instance, AssetSelection.checks_for_assets(TABLE))
    verdicts = checks_of(final)
    assert final.success and all(passed for passed, _ in verdicts.values()), verdicts
    assert "3 code versions" in verdicts["reconciled"][1]

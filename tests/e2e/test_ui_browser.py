"""The first hour in the Dagster UI, in a real browser (issue 29, must show): after `shift-left-dagster demo`,
the UI shows every deployed table materialised with its checks green, and `fct_order`'s page shows its
column lineage (rendered, since Dagster OSS does not draw `dagster/column_lineage`) and both SQL files.

Debian's chromium driven by Playwright (`apt-get install chromium`, `pip install playwright`; .ci/run does
both); skipped only where either is missing. A partition range launched from the UI on the sample's
partitioned code location is refused in one line before anything runs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from shift_left_dagster.local.process import free_port
from tests.integration.support import PROJECT

pytestmark = pytest.mark.service

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = PROJECT.parent
CLI = [sys.executable, "-m", "shift_left_dagster.cli"]
P1 = ["src_table_1", "src_table_2", "src_table_3", "int_table_1", "int_table_2", "fct_order"]
# Headless on this kind of machine: no GPU, no sandbox as root, no background calls to a closed network.
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@dataclass(frozen=True)
class Demo:
    folder: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """`shift-left-dagster demo` run in a fresh copy of the sample; its local service stopped at the end."""
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    folder = tmp_path_factory.mktemp("ui")
    shutil.copytree(PROJECT, folder / "flink_project", ignore=shutil.ignore_patterns(".shift_left_dagster"))
    for name in ("pyproject.toml", "workspace.yaml"):
        shutil.copy(ROOT / name, folder / name)
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "PIPELINES", "CONFIG_FILE")}
    try:
        done = subprocess.run([*CLI, "demo"], cwd=folder, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        yield Demo(folder, env)
    finally:
        subprocess.run([*CLI, "local", "stop"], cwd=folder, env=env, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def ui(demo: Demo) -> Iterator[str]:
    """`dagster dev` on the demo's instance (the default code location): the UI's URL."""
    with served(demo, ["-w", "workspace.yaml"], demo.folder / ".shift_left_dagster" / "dagster_home") as url:
        yield url


@contextmanager
def served(demo: Demo, location: list[str], home: Path) -> Iterator[str]:
    port = free_port()
    dagster = shutil.which("dagster") or str(Path(sys.executable).parent / "dagster")
    home.mkdir(parents=True, exist_ok=True)
    with subprocess.Popen([dagster, "dev", *location, "-p", str(port), "-h", "127.0.0.1"], cwd=demo.folder,
                          env={**demo.env, "DAGSTER_HOME": str(home)}, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, start_new_session=True) as server:
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 300
            while not _answers(url):
                assert server.poll() is None and time.monotonic() < deadline, "dagster dev did not start"
                time.sleep(2)
            yield url
        finally:
            os.killpg(server.pid, signal.SIGTERM)  # dagster dev, its webserver, daemon and code server
            server.wait(timeout=120)


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/server_info", timeout=5).ok
    except requests.RequestException:
        return False


def page_text(url: str, path: str, ready: str) -> str:
    """The page's text once `ready` shows (the UI loads its data after the page)."""
    from playwright.sync_api import sync_playwright  # an optional test dependency (skipped without it)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 2400})
            page.goto(url + path, timeout=180_000)
            page.get_by_text(ready).first.wait_for(timeout=180_000)
            page.wait_for_timeout(2000)  # the rest of the page's queries
            return page.inner_text("body")
        finally:
            browser.close()


@pytest.mark.parametrize("table", P1)
def test_every_deployed_table_shows_materialised_with_green_checks(ui: str, table: str) -> None:
    overview = page_text(ui, f"/assets/{table}", "Latest materialization")
    assert re.search(r"Latest materialization\s+\S.* ago", overview), overview[:1500]
    checks = page_text(ui, f"/assets/{table}?view=checks", "Checks (")
    count = int(re.search(r"Checks \((\d+)\)", checks).group(1))  # type: ignore[union-attr]
    listed = checks.split("Execute all", 1)[1].split("Execute\n", 1)[0]  # the list of checks and their status
    # statement_lag and statement_stalled are the health sensor's (no sensor runs here): a run leaves them
    # Skipped, never red; every check a run evaluates is green.
    sensors = len(re.findall(r"statement_(?:lag|stalled)\n\S+\n(Skipped|Succeeded)", listed))
    assert sensors == 2 and "Failed" not in listed, listed
    assert count > 0 and listed.count("Succeeded") + listed.count("Skipped") == count, listed
    assert listed.count("Skipped") <= sensors, listed


def test_fct_order_shows_its_column_lineage_and_both_sql_files(ui: str) -> None:
    text = page_text(ui, "/assets/fct_order", "column_lineage_table")
    lineage = text.split("column_lineage_table", 1)[1]
    assert re.search(r"order_id\s+int_table_1\.order_id", lineage), lineage[:1500]
    assert re.search(r"paid_amount\s+int_table_2\.paid_amount", lineage)
    source = text.split("Source code", 1)[1][:300]
    assert "ddl.fct_order.sql" in source and "dml.fct_order.sql" in source, source
    assert "reads: int_table_1, int_table_2" in text


def test_a_partition_range_launched_from_the_ui_is_refused_in_one_line(demo: Demo) -> None:
    """fct_order (a LEFT join) over 2026-01-02..03, from its page's Materialize dialog."""
    from dagster import DagsterInstance
    from playwright.sync_api import sync_playwright

    home = demo.folder / "partitioned_home"
    with served(demo, ["-m", "shift_left_dagster.defs.partitioned"], home) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.goto(f"{url}/assets/fct_order", timeout=180_000)
            page.get_by_text("Latest materialization").first.wait_for(timeout=180_000)
            page.wait_for_timeout(2000)
            for optional in ("Skip",):  # Dagster's community pop-up on a fresh instance
                if page.get_by_role("button", name=optional).count():
                    page.get_by_role("button", name=optional).first.click()
            page.get_by_role("button", name="Materialize").first.click()
            page.wait_for_timeout(3000)
            if page.get_by_role("button", name="Confirm").count():  # "upstream assets not materialized yet"
                page.get_by_role("button", name="Confirm").first.click()
            ranges = page.get_by_placeholder(re.compile("ex: "))
            ranges.wait_for(timeout=180_000)  # after "Loading pipeline and partition sets..."
            assert "2026-01-01" in page.inner_text("body")  # the partitions start where the seed data does
            ranges.fill("[2026-01-02...2026-01-03]")
            ranges.press("Enter")
            page.get_by_role("button", name="Launch backfill").click()

            with DagsterInstance.from_config(str(home)) as instance:
                deadline = time.monotonic() + 600
                while not [r for r in instance.get_runs() if r.is_finished]:
                    assert time.monotonic() < deadline, "the backfill's run did not finish"
                    time.sleep(3)
                (run,) = instance.get_runs()
            assert run.status.value == "FAILURE"
            page.goto(f"{url}/runs/{run.run_id}", timeout=180_000)
            page.get_by_text("partition range refused").first.wait_for(timeout=180_000)
            text = page.inner_text("body")
        finally:
            browser.close()
    line = next(line for line in text.splitlines() if "partition range refused" in line)
    assert "fct_order is stateful (LEFT join)" in line and "range start" in line, line

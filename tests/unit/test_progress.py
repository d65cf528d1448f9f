"""`demo` shows the run's own lines from a `dg launch` output (lines as Dagster 1.13 prints them)."""

from __future__ import annotations

from shift_left_dagster.progress import RunProgress

RUN = "__ASSET_JOB - 5928c3b7-3735-4c6c-baa5-77b76d14d03c"
AT = "2026-11-26 06:42:37 +0000 - dagster"
LAUNCH = f"""\
  Welcome to Dagster!
{AT} - DEBUG - {RUN} - 24578 - flink_p - STEP_START - Started execution of step "flink_p".
{AT} - INFO - {RUN} - flink_p - deploy plan for src_table_1: 2 change(s)
  0. seed_raw_topic         raw_orders                       raw topic missing: seeded
  1. deploy                 src_table_1                      missing after 0
{AT} - INFO - {RUN} - flink_p - step 0: seed_raw_topic raw_orders (raw topic missing: seeded)
{AT} - INFO - {RUN} - flink_p - step 0 done: seed_raw_topic raw_orders
WARNING: Using incubator modules: jdk.incubator.vector
26/11/26 06:42:56 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform
{AT} - DEBUG - {RUN} - 24578 - flink_p - ASSET_MATERIALIZATION - Materialized value src_table_1.
{AT} - DEBUG - {RUN} - 24578 - flink_p - ASSET_CHECK_EVALUATION - Asset check 'reconciled' on 'src_table_1' passed.
{AT} - WARNING - {RUN} - flink_p - changed on disk since the definitions loaded: x
{AT} - DEBUG - {RUN} - 24268 - RUN_SUCCESS - Finished execution of run for "__ASSET_JOB".
"""


def test_the_run_lines_are_shown_and_the_rest_is_not() -> None:
    progress = RunProgress()
    shown = [s for s in (progress.feed(line) for line in LAUNCH.splitlines(keepends=True)) if s is not None]
    assert shown == [
        "deploy plan for src_table_1: 2 change(s)",
        "  0. seed_raw_topic         raw_orders                       raw topic missing: seeded",
        "  1. deploy                 src_table_1                      missing after 0",
        "step 0: seed_raw_topic raw_orders (raw topic missing: seeded)",
        "step 0 done: seed_raw_topic raw_orders",
        "asset_check_evaluation: Asset check 'reconciled' on 'src_table_1' passed.",
        "warning: changed on disk since the definitions loaded: x",
        'run_success: Finished execution of run for "__ASSET_JOB".',
    ]

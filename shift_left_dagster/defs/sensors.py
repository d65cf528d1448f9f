"""A git sensor: each new commit that changes Flink SQL asks for one blue/green run of what it impacts.

A commit that only removes tables has no asset to materialise: it asks for one run of the
`undeploy_flink_tables` job instead (tables still read by something are kept and named).
"""

from __future__ import annotations

import json
import warnings

from dagster import (
    AssetKey,
    AssetSelection,
    BetaWarning,
    JobDefinition,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    sensor,
)

from shift_left_dagster.defs.maintenance import UNDEPLOY_JOB, maintenance_jobs
from shift_left_dagster.defs.project import FlinkProject
from shift_left_dagster.defs.tags import CHANGES_TAG, COMMIT_TAG, SINCE_TAG
from shift_left_dagster.defs.translator import FlinkTranslator
from shift_left_dagster.deploy.bluegreen import plan_blue_green
from shift_left_dagster.deploy.changes import Category, GitError, detect_changes, head_commit, repository_of

# Dagster 1.13 copies every sensor when it resolves Definitions (SensorDefinition.with_attributes) and passes
# the copy `owners=[]`, which its own @beta_param flags: one BetaWarning per sensor on every load though
# no sensor of ours sets owners. Only that message is silenced; any other beta use still warns.
warnings.filterwarnings("ignore", message=r"Parameter `owners` of initializer `SensorDefinition\.__init__`",
                        category=BetaWarning)


def git_sensor(project: FlinkProject, translator: FlinkTranslator, name: str = "flink_git_changes",
               minimum_interval_seconds: int = 30, undeploy_job: JobDefinition | None = None) -> SensorDefinition:
    """`undeploy_job` the project's `undeploy_flink_tables` job when the definitions already hold it (one
    object per name)."""
    graph = project.graph
    tables = [translator.get_asset_key(table) for table in graph.tables.values()]

    deploy_job = define_asset_job(f"{name}_deploy", selection=AssetSelection.assets(*tables))
    undeploy_job = undeploy_job or next(j for j in maintenance_jobs(project) if j.name == UNDEPLOY_JOB)

    @sensor(name=name, jobs=[deploy_job, undeploy_job], minimum_interval_seconds=minimum_interval_seconds,
            description="Deploys what each new commit changed in the pipelines folder, blue/green; "
                        "undeploys tables a commit removed.")
    def flink_git_sensor(context: SensorEvaluationContext):
        try:
            repo, pipelines = repository_of(project.pipelines_dir)
        except GitError:
            return SkipReason(f"{project.pipelines_dir} is not in a git repository: nothing to watch")
        head = head_commit(repo)
        if context.cursor is None:
            return SensorResult(cursor=head, skip_reason=SkipReason(f"baseline: watching from {head[:12]}"))
        if context.cursor == head:
            return SkipReason(f"no new commit since {head[:12]}")
        changes = detect_changes(repo, context.cursor, head, pipelines)
        if not changes:
            return SensorResult(cursor=head, skip_reason=SkipReason(f"{head[:12]}: no Flink SQL change"))
        plan = plan_blue_green(project.graph, changes)
        selection: list[AssetKey] = [translator.get_asset_key(graph.tables[t]) for t in plan.selection
                                     if t in graph.tables]
        tags = {COMMIT_TAG: head, SINCE_TAG: context.cursor,
                CHANGES_TAG: json.dumps({c.table: c.category.value for c in changes}, sort_keys=True)}
        broken = [f"{c.table}: {'; '.join(c.reasons)}" for c in changes if c.category == Category.BROKEN]
        if broken:  # never deploy, nor undeploy, around a file that stopped parsing: wait for the fix
            return SensorResult(cursor=context.cursor, skip_reason=SkipReason(
                f"{head[:12]} leaves tables broken, nothing deployed until a commit fixes them: " + " | ".join(broken)))
        if selection:
            request = RunRequest(run_key=head, job_name=deploy_job.name, asset_selection=selection, tags=tags)
        elif plan.removed:  # nothing to materialise: never an empty selection (Dagster reads it as "all")
            config = {"tables": sorted(plan.removed), "keep_read": True}
            request = RunRequest(run_key=head, job_name=UNDEPLOY_JOB, tags=tags,
                                 run_config={"ops": {"undeploy_tables": {"config": config}}})
        else:
            return SensorResult(cursor=head, skip_reason=SkipReason(f"{head[:12]}: nothing to deploy"))
        return SensorResult(cursor=head, run_requests=[request])

    return flink_git_sensor

"""Seed the raw topics a project's seed files create and that do not exist yet, now: a plan of SEED steps
run by the one executor (integration tests and local set-ups; deployments add SEED steps to their own plan).
"""

from __future__ import annotations

from pathlib import Path

from shift_left_dagster.confluent.client import ConfluentClient
from shift_left_dagster.deploy.executor import PlanExecutor
from shift_left_dagster.deploy.plan import DeploymentPlan, PlanOptions
from shift_left_dagster.deploy.seeds import seed_files
from shift_left_dagster.deploy.steps import PlanKind, PlanStep, SeedStep


def seed_raw_topics(client: ConfluentClient, seeds_dir: Path, only: set[str] | None = None,
                    timeout: float = 300.0) -> list[str]:
    """Seed every raw topic (of `only`, when given) that does not exist yet: SEED steps of a plan, run by
    the one executor. Idempotent."""
    existing = {topic.topic_name for topic in client.list_topics()}
    wanted = {t: f for t, f in seed_files(seeds_dir).items() if t not in existing and (only is None or t in only)}
    steps: list[PlanStep] = [SeedStep(index=i, reason="raw topic missing: seeded", topic=t, seed_file=f)
                             for i, (t, f) in enumerate(sorted(wanted.items()))]
    plan = DeploymentPlan(kind=PlanKind.SEED, targets=sorted(wanted), options=PlanOptions(), steps=steps)
    for _ in PlanExecutor(client, timeout=timeout, seeds_root=seeds_dir).run(plan):
        pass
    return sorted(wanted)

"""Plan steps in the run's log as they start and end: the executor (deploy/, no Dagster) says when a step
starts with Python logging, from its worker threads; while a run's plan executes, a handler forwards those
lines to `context.log`, so the UI shows progress during the minutes a deployment can take."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from dagster import DagsterLogManager

from shift_left_dagster.deploy.executor import StepResult

DEPLOY_LOGGER = "shift_left_dagster.deploy"


class _ToRunLog(logging.Handler):
    """One handler per run; logging.Handler serialises emit() across the executor's threads."""

    def __init__(self, log: DagsterLogManager) -> None:
        super().__init__(logging.INFO)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        level = logging.getLevelName(record.levelno).lower()
        getattr(self.log, level if level in ("warning", "error", "critical") else "info")(record.getMessage())


@contextmanager
def steps_in_run_log(log: DagsterLogManager) -> Iterator[None]:
    """While the block runs, deploy/'s INFO lines and above also go to the run's log."""
    logger = logging.getLogger(DEPLOY_LOGGER)
    handler, level = _ToRunLog(log), logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def step_done(result: StepResult) -> str:
    """One line: the step, what it acted on, and the phase each statement it left is in."""
    step = result.step
    phases = ", ".join(f"{name} {phase}" for name, phase in {**result.statements, **result.finished}.items())
    return f"step {step.index} done: {step.action.value} {step.target}" + (f" ({phases})" if phases else "")

"""The Flink side of the oracle: the corpus as OSS Flink SQL (oss.py), run by runner.py in the PyFlink venv.

One runner process for the whole corpus (one MiniCluster); a process that
fails or overruns its time is split in halves, down to one case per process
(whose failure is then its result). The results are
cached by the exact inputs (runner, specs, files, PyFlink version) under
~/.cache/shift-left-dagster/oracle-results unless SL_ORACLE_CACHE=0.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.oracle.corpus import Case
from tests.oracle.oss import DATA, runner_case
from tests.oracle.venv import PYFLINK, python_path

RUNNER = Path(__file__).with_name("runner.py")
CACHE_ENV = "SL_ORACLE_CACHE"
# A runner process's time (seconds): past it the process is killed and its cases split in halves.
PROCESS_SECONDS, CASE_SECONDS = 240.0, 8.0


@dataclass
class FlinkOutcome:
    """What Flink made of a case: an error (phase setup/plan/run), or the sink and the query's changelog."""

    error: str | None = None
    phase: str | None = None
    columns: list[tuple[str, str]] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    changelog_mode: list[str] = field(default_factory=list)  # what the sink receives: I, UB, UA, D
    changes: list[tuple[str, list[str | None]]] = field(default_factory=list)
    sink_mode: str = "append"  # the sink's changelog.mode: append, upsert or retract
    seconds: float = 0.0


def run_flink(cases: list[Case], *, each: bool = False, timeout: float | None = None) -> dict[str, FlinkOutcome]:
    """Every case on Flink in one runner process (cached by the exact inputs unless SL_ORACLE_CACHE=0)."""
    specs, files, broken = [], {}, {}
    for case in cases:
        try:
            spec, case_files = runner_case(case)
        except ValueError as error:  # CorpusError, or a value the harness can not feed: that case's result
            broken[case.name] = FlinkOutcome(error=f"{type(error).__name__}: {error}", phase="corpus")
            continue
        specs.append(spec)
        files.update(case_files)
    body = {"cases": specs, "each": each}
    key = _cache_key(body, files)
    cached = _cache_dir() / f"{key}.json"
    if os.environ.get(CACHE_ENV, "1") != "0" and cached.is_file():
        raw = json.loads(cached.read_text())
    else:
        raw = _run_split(specs, files, each, timeout)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(raw))
    modes = {spec["name"]: spec["sink_mode"] for spec in specs}
    outcomes = {name: _outcome(result, modes[name]) for name, result in raw["cases"].items()}
    return {**outcomes, **broken}


def _run_split(specs: list[dict[str, Any]], files: dict[str, str], each: bool, timeout: float | None) -> dict[str, Any]:
    """The specs in one runner process; when it fails or overruns its time, each half in a process of its
    own, down to one case per process, whose failure is then that case's result (never a stall)."""
    limit = timeout if timeout is not None else PROCESS_SECONDS + CASE_SECONDS * len(specs)
    try:
        return _run_runner({"cases": specs, "each": each}, files, limit)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        if len(specs) <= 1:
            reason = f"the Flink runner process failed: {str(error).strip().splitlines()[-1] if str(error) else error}"
            return {"cases": {s["name"]: {"phase": "run", "error": reason} for s in specs}}
        middle = len(specs) // 2
        halves = [_run_split(part, files, each, None) for part in (specs[:middle], specs[middle:])]
        return {"cases": {name: result for half in halves for name, result in half["cases"].items()}}


def _run_runner(body: dict[str, Any], files: dict[str, str], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sl-oracle-flink-") as work:
        root = Path(work)
        spec = json.loads(json.dumps(body).replace(DATA, str(root / "data")))
        for relative, content in files.items():
            target = root / "data" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        (root / "spec.json").write_text(json.dumps(spec))
        command = [str(python_path()), str(RUNNER), str(root / "spec.json"), str(root / "out.json"), str(root)]
        process = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=work)
        if process.returncode != 0 or not (root / "out.json").is_file():
            raise RuntimeError(f"the Flink runner failed ({process.returncode}):\n{process.stderr[-4000:]}")
        return json.loads((root / "out.json").read_text())


def _outcome(result: dict[str, Any], mode: str) -> FlinkOutcome:
    return FlinkOutcome(
        error=result.get("error"), phase=result.get("phase"),
        columns=[(c[0], c[1]) for c in result.get("columns", [])], primary_key=result.get("primary_key", []),
        changelog_mode=result.get("changelog_mode", []),
        changes=[(kind, values) for kind, values in result.get("changes", [])],
        sink_mode=mode, seconds=result.get("plan_seconds", 0.0) + result.get("run_seconds", 0.0))


def _cache_key(body: dict[str, Any], files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for part in (PYFLINK, RUNNER.read_text(), json.dumps(body, sort_keys=True), json.dumps(files, sort_keys=True)):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:24]


def _cache_dir() -> Path:
    return Path.home() / ".cache" / "shift-left-dagster" / "oracle-results"

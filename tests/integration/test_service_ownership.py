"""A service belongs to one data folder: another folder's start, target or client never adopts it.

Folder A is the in-process test service; folder B is a fresh folder whose
commands point at A's port. Nothing here starts a Spark JVM for B.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shift_left_dagster.confluent.client import ConfluentClient, bind_to_data_dir
from shift_left_dagster.confluent.errors import WrongService
from shift_left_dagster.deploy.target import target_config
from shift_left_dagster.local import process
from shift_left_dagster.local.health import OtherFolderService, require_folder
from shift_left_dagster.project.config import local_defaults
from tests.integration.support import client_for, unique

pytestmark = pytest.mark.service


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shift_left_dagster.cli", "local", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_b_start_on_a_port_fails_naming_both_folders(local_service, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder_a, folder_b = Path(local_service.data_dir).resolve(), (tmp_path / "project-b").resolve()
    started = cli("start", "--data-dir", str(folder_b), "--port", str(local_service.port))
    assert started.returncode == 1
    assert str(folder_a) in started.stderr and str(folder_b) in started.stderr, started.stderr
    assert "--port 0" in started.stderr  # says how to get out
    assert not (folder_b / process.PID_FILE).exists()  # no service process was started for B
    with pytest.raises(OtherFolderService) as error:
        process.start(folder_b, port=local_service.port)
    assert error.value.ours == str(folder_b) and Path(error.value.theirs).resolve() == folder_a


def test_b_never_reads_a_statements(local_service, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder_b = tmp_path / "project-b"
    a_name = unique("owned-by-a")
    client_for(local_service.url).create_statement(a_name, "CREATE TABLE owned_by_a (id INT)", stopped=True)

    with pytest.raises(OtherFolderService, match=str(folder_b.resolve())):
        target_config(mode="local", local_url=local_service.url, local_data_dir=str(folder_b))
    bound_to_b = ConfluentClient.from_config(bind_to_data_dir(local_defaults(local_service.url), folder_b))
    with pytest.raises(WrongService, match=str(folder_b.resolve())):
        bound_to_b.list_statements()
    with pytest.raises(WrongService):
        bound_to_b.get_statement(a_name)

    # A's own bound client and target are accepted.
    a_config = target_config(mode="local", local_url=local_service.url, local_data_dir=str(local_service.data_dir))
    assert a_name in {s.name for s in ConfluentClient.from_config(a_config).list_statements()}
    assert require_folder(local_service.url, local_service.data_dir).pid > 0


def test_b_status_is_not_running_when_a_answers_at_b_recorded_url(local_service, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder_b = (tmp_path / "project-b").resolve()
    folder_b.mkdir()
    recorded = process.LocalServiceInfo(url=local_service.url, port=local_service.port, pid=999_999,
                                        data_dir=str(folder_b))
    (folder_b / process.STATE_FILE).write_text(recorded.model_dump_json())
    (folder_b / process.PID_FILE).write_text("999999\n")
    assert process.status(folder_b).running is False
    status = json.loads(cli("status", "--data-dir", str(folder_b), "--json").stdout)
    assert status["running"] is False and status["data_dir"] == str(folder_b)
    assert status["api_key"] and status["api_secret"]  # what a client needs, for the caller who asked
    assert status["flink_endpoint"] == status["kafka_rest_endpoint"] == status["schema_registry_endpoint"] \
        == status["url"]

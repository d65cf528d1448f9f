"""A data directory whose table logs an older service wrote is refused at start, naming the folder
and what to do; nothing in it is touched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from shift_left_dagster.local.store import FORMAT, Batch, Store


def test_a_data_directory_of_an_older_format_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "service.db")
    store.append_batches([Batch(table_uid="t", path="tables/t/b-1", rows=1, retractions=0, ranges={0: (0, 1)})])
    store.close()
    with sqlite3.connect(tmp_path / "service.db") as db:  # as version 1 left it
        db.execute("PRAGMA user_version = 1")
    with pytest.raises(RuntimeError, match=f"data directory {tmp_path} holds table data in an older format "
                                           f"\\(version 1, this service reads version {FORMAT}\\)"):
        Store(tmp_path / "service.db")
    with sqlite3.connect(tmp_path / "service.db") as db:
        assert db.execute("SELECT COUNT(*) FROM batches").fetchone()[0] == 1


def test_an_empty_or_current_data_directory_opens(tmp_path: Path) -> None:
    Store(tmp_path / "service.db").close()
    reopened = Store(tmp_path / "service.db")
    reopened.append_batches([Batch(table_uid="t", path="tables/t/b-1", rows=1, retractions=0, ranges={0: (0, 1)})])
    reopened.close()
    assert len(Store(tmp_path / "service.db").batches("t")) == 1

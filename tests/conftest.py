"""Shared fixtures: one SparkSession for the whole test session, and the local service on it.

Most service tests talk over real HTTP to an in-process service (a thread of
this process sharing the one SparkSession); only the crash test starts a
service process of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shift_left_dagster.local.process import InProcessService
from shift_left_dagster.local.spark import get_spark


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """The test session's one SparkSession (also the in-process service's)."""
    return get_spark()


@pytest.fixture(scope="session")
def local_service(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessService]:  # type: ignore[no-untyped-def]
    """The local service over HTTP on 127.0.0.1, in a thread, on the shared SparkSession."""
    service = InProcessService(tmp_path_factory.mktemp("local-service"), spark_factory=lambda: spark)
    with service:
        yield service

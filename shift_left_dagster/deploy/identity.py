"""The project's identity on a Flink environment: what its lease, its statement labels, housekeeping
and undeploy are keyed by.

`app.project_name` from the config when it is set, else a short stable hash of the resolved pipelines
path: never a folder name, since two projects in folders of the same name (`flink_project`) would
share a lease and take each other's statements for their own.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from shift_left_dagster.project.config import FlinkProjectConfig


def project_identity(config: FlinkProjectConfig, project_root: Path) -> str:
    """`app.project_name`, else `p-<8 hex>` of the resolved `<root>/pipelines` path."""
    if config.app.project_name:
        return config.app.project_name
    pipelines = str((project_root / "pipelines").resolve())
    return "p-" + hashlib.blake2b(pipelines.encode("utf-8"), digest_size=4).hexdigest()

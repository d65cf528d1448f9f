"""`defs` for workspace.yaml, `dagster ... -m shift_left_dagster.defs.definitions` and `dg`.

The project folder is the one default (`$PIPELINES`, else ./flink_project/pipelines,
else the sample shipped beside the package). Only Dagster imports this module: it builds on import.
"""

from shift_left_dagster.defs.builder import build_flink_definitions

defs = build_flink_definitions()

"""The `inventory` command's report, kept with the digest of the scan it was made from: when no file changed
since, the command prints it without building the inventory, so without the models (pydantic) and the
graph. A warm 3000-table `inventory` is then the folder walk, the stats and one `marshal` read.

Plain data only (the report is JSON-shaped): nothing here may load a model library.
"""

from __future__ import annotations

import hashlib
import marshal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shift_left_dagster.project.scan import (
    analyser_version,
    cache_folder,
    discover,
    keep_scan,
    read_last_scan,
    resolve_pipelines_dir,
    scan,
    write_atomically,
)

REPORT_FORMAT = 1  # the layout of inventory_report.marshal: a file of another layout is ignored
REPORT_CODE = ("report.py", "graph.py")  # beside this module: what makes the report from an inventory
FILE_NAME = "inventory_report.marshal"


@dataclass
class InventoryReport:
    """`inventory --json`'s object: one entry per table (`tables`), and the tables left out (`broken`)."""

    tables: dict[str, dict[str, Any]]
    broken: list[dict[str, Any]]


def _name(source: str) -> str:
    """What a kept report stands for: the inventory's sources (`Scan.source`) and the code that reports it."""
    digest = hashlib.blake2b(source.encode(), digest_size=16)
    for module in REPORT_CODE:
        digest.update(Path(__file__).with_name(module).read_bytes())
    return digest.hexdigest()


def keep_inventory_report(root: Path, source: str, report: InventoryReport) -> None:
    """Keep the report of the inventory built from `source` (when the cache folder is writable; "" as
    source, an inventory of unknown origin, is not kept)."""
    if not source:
        return
    data = (REPORT_FORMAT, _name(source), report.tables, report.broken)
    try:
        write_atomically(cache_folder(root) / FILE_NAME, marshal.dumps(data))
    except (OSError, ValueError):  # ValueError: a value marshal cannot write; the report is then not kept
        pass


def kept_inventory_report(pipelines_dir: str | Path | None) -> InventoryReport | None:
    """The report kept for the project's files as they are now (racy-clean rule and all: project/scan.py);
    None when a file changed, or none was kept, or it is unreadable: the caller builds the inventory."""
    pipelines = resolve_pipelines_dir(pipelines_dir)
    folder = cache_folder(pipelines.parent)
    version = analyser_version()
    last = read_last_scan(folder, version)
    if last is None:
        return None
    try:
        layout, name, tables, broken = marshal.loads((folder / FILE_NAME).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):  # marshal's errors for a corrupt file
        return None
    if layout != REPORT_FORMAT or name != _name(last.source) or not isinstance(tables, dict) or \
            not isinstance(broken, list):
        return None
    now = scan(pipelines, discover(pipelines), version, last)
    if now.source != last.source:
        return None
    if last.worth_restamping(now):
        keep_scan(folder, now)  # next time, fewer files read
    return InventoryReport(tables, broken)

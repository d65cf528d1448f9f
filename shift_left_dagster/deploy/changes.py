"""What a git commit range changed in a pipelines folder, table by table, and how it must be deployed.

Files are compared as normalised SQL (the dialect's own output), so a change of
comments or layout is no change. Each changed table gets a category, as SQLMesh
categorises model changes: a breaking change needs a new version of the table
and of everything downstream (blue/green); a compatible stateless change is
replaced in place from carried offsets.
"""

from __future__ import annotations

import subprocess
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from shift_left_dagster.project.analysis import Column, DdlInfo, StateForm
from shift_left_dagster.project.inventory import FileAnalysis, analyse_file
from shift_left_dagster.project.parsing import FlinkSqlError


class Category(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    BREAKING = "breaking"  # new version beside the running one, reprocessed from earliest
    NON_BREAKING = "non_breaking"  # replaced in place, resumed from carried offsets
    BROKEN = "broken"  # a file that stopped parsing: nothing is deployed or undeployed until it is fixed


class TableChange(BaseModel):
    table: str
    folder: str
    category: Category
    reasons: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    added_columns: list[Column] = Field(default_factory=list)  # nullable columns the new DDL adds


class GitError(RuntimeError):
    pass


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def changed_sql_files(repo: Path, since: str, until: str, pipelines: str) -> list[str]:
    """Paths (relative to the repo) of ddl/dml files that differ between two revisions."""
    out = git(repo, "diff", "--name-only", "--no-renames", since, until, "--", pipelines)
    return sorted(
        line for line in out.splitlines()
        if PurePosixPath(line).name.startswith(("ddl.", "dml.")) and line.endswith(".sql")
    )


def file_at(repo: Path, revision: str, path: str) -> str | None:
    try:
        return git(repo, "show", f"{revision}:{path}")
    except GitError:
        return None  # not in that revision: added or deleted


class _Unparsable(FileAnalysis):
    """A file that exists but does not parse: never mistaken for a removed one."""

    error: str


def _analyse(path: str, text: str | None) -> FileAnalysis | None:
    """What a file says at one commit (None: absent then)."""
    if text is None:
        return None
    try:
        return analyse_file(path, text)
    except FlinkSqlError as error:
        return _Unparsable(error=str(error), normalized_sql=text)  # its raw text: a later edit still differs


def detect_changes(repo: Path, since: str, until: str = "HEAD", pipelines: str = "pipelines") -> list[TableChange]:
    """One TableChange per table whose normalised DDL or DML differs between `since` and `until`."""
    by_folder: dict[str, dict[str, tuple[FileAnalysis | None, FileAnalysis | None]]] = {}
    paths: dict[str, list[str]] = {}
    deleted: dict[str, list[str]] = {}
    for path in changed_sql_files(repo, since, until, pipelines):
        old = _analyse(path, file_at(repo, since, path))
        new = _analyse(path, file_at(repo, until, path))
        if old is not None and new is not None and old.normalized_sql == new.normalized_sql:
            continue  # comments or whitespace only
        kind = PurePosixPath(path).name.split(".", 1)[0]
        folder = str(PurePosixPath(path).parent.parent)
        by_folder.setdefault(folder, {})[kind] = (old, new)
        paths.setdefault(folder, []).append(path)
        if old is not None and new is None:
            deleted.setdefault(folder, []).append(path)
    changes = [_categorise(folder, files, paths[folder]) for folder, files in sorted(by_folder.items())]
    return [_deleted_file(repo, until, c, deleted[c.folder]) if c.folder in deleted else c for c in changes]


def _deleted_file(repo: Path, until: str, change: TableChange, deleted: list[str]) -> TableChange:
    """A table is removed only when its whole folder is gone: a file deleted from a folder that remains
    breaks the table (see project.table_files), so nothing is undeployed nor replaced on that."""
    if not git(repo, "ls-tree", "-r", "--name-only", until, "--", change.folder).strip():
        return change
    reasons = [f"{path}:1: deleted while its table folder {change.folder} remains: restore it, or delete "
               "the whole folder to remove the table" for path in deleted]
    return change.model_copy(update={"category": Category.BROKEN, "reasons": reasons})


def _categorise(
    folder: str, files: dict[str, tuple[FileAnalysis | None, FileAnalysis | None]], listed: list[str]
) -> TableChange:
    old_ddl, new_ddl = files.get("ddl", (None, None))
    old_dml, new_dml = files.get("dml", (None, None))
    name = _table_name(new_ddl, new_dml) or _table_name(old_ddl, old_dml) or PurePosixPath(folder).name
    broken = [new.error for _, new in files.values() if isinstance(new, _Unparsable)]
    if broken:
        return TableChange(table=name, folder=folder, category=Category.BROKEN, reasons=broken, files=listed)
    if all(new is None for _, new in files.values()) and all(old is not None for old, _ in files.values()):
        return TableChange(table=name, folder=folder, category=Category.REMOVED, files=listed)
    if all(old is None for old, _ in files.values()):
        return TableChange(table=name, folder=folder, category=Category.ADDED, files=listed)
    reasons: list[str] = []
    added: list[Column] = []
    if "ddl" in files:
        old_info, new_info = (old_ddl.ddl if old_ddl else None), (new_ddl.ddl if new_ddl else None)
        reasons += schema_breaks(old_info, new_info)
        if old_info and new_info:
            known = {c.name for c in old_info.columns}
            added = [c for c in new_info.columns if c.name not in known]
            if not reasons and not added:
                reasons.append("DDL change that ALTER TABLE ADD cannot express (options, watermark, ...)")
    if "dml" in files:
        forms = {a.dml.state_form for a in (old_dml, new_dml) if a and a.dml}
        if StateForm.STATEFUL in forms:
            reasons.append("stateful DML changed: its state must be rebuilt from earliest")
    category = Category.BREAKING if reasons else Category.NON_BREAKING
    if not reasons:
        reasons.append("stateless DML change with a compatible schema")
    return TableChange(table=name, folder=folder, category=category, reasons=reasons, files=listed,
                       added_columns=added)


def _table_name(ddl: FileAnalysis | None, dml: FileAnalysis | None) -> str | None:
    if ddl and ddl.ddl:
        return ddl.ddl.table
    if dml and dml.dml:
        return dml.dml.tables_written[0]
    return None


def schema_breaks(old: DdlInfo | None, new: DdlInfo | None) -> list[str]:
    """Why a new DDL is not backward compatible with the old one (empty: compatible)."""
    if old is None or new is None:
        return ["DDL does not parse"] if (old is None) != (new is None) else []
    reasons = []
    old_columns = {c.name: c for c in old.columns}
    new_columns = {c.name: c for c in new.columns}
    for name, column in old_columns.items():
        if name not in new_columns:
            reasons.append(f"column {name} removed")
        elif new_columns[name].type != column.type:
            reasons.append(f"column {name} type {column.type} -> {new_columns[name].type}")
    for name, column in new_columns.items():
        if name not in old_columns and not column.nullable:
            reasons.append(f"column {name} added NOT NULL")
    if old.primary_key != new.primary_key:
        reasons.append(f"primary key {old.primary_key} -> {new.primary_key}")
    if old.changelog_mode != new.changelog_mode:
        reasons.append(f"changelog mode {old.changelog_mode} -> {new.changelog_mode}")
    return reasons


def repository_of(path: Path) -> tuple[Path, str]:
    """The git repository holding `path`, and `path` relative to it (posix)."""
    top = Path(git(path, "rev-parse", "--show-toplevel").strip())
    return top, path.resolve().relative_to(top.resolve()).as_posix()


def head_commit(repo: Path, ref: str = "HEAD") -> str:
    return git(repo, "rev-parse", ref).strip()

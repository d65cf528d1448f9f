"""Scan a shift_left `pipelines/` folder into Table models, fast and cached.

Parsing is the cost (about 1-3 ms a file with pure-Python sqlglot), so every
file's analysis is cached by the hash of its content and of the analyser's own
source: a cache entry can never be stale, and one changed file re-parses that
file only. A cold scan parses on every core. The inventory last built is kept
too, named by the digest of everything it was built from (project/scan.py): when
no file changed, a load reads that one file.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cached_property
from multiprocessing import get_context
from pathlib import Path
from typing import TypeVar, cast

from pydantic import BaseModel, Field

from shift_left_dagster.project.errors import ProjectError
from shift_left_dagster.project.facts import DdlInfo, DmlInfo, StateForm
from shift_left_dagster.project.problems import BrokenTable, ProjectProblem, TableSource, exclude_broken
from shift_left_dagster.project.scan import (
    LastScan,
    Scan,
    TableFiles,
    analyser_version,
    cache_folder,
    discover,
    keep_scan,
    read_last_scan,
    scan,
    write_atomically,
)
from shift_left_dagster.project.scan import TableType as TableType  # re-exported: the plan reads it from here
from shift_left_dagster.project.scan import resolve_pipelines_dir as resolve_pipelines_dir  # re-exported
from shift_left_dagster.project.table_files import missing_file


class FileAnalysis(BaseModel):
    """What one ddl or dml file says; the unit the cache stores."""

    ddl: DdlInfo | None = None
    dml: DmlInfo | None = None
    # comments and layout removed: the base of code versions and diffs; None in an analysis made for the
    # inventory report only (`analyse_file(sql=False)`), which is never kept
    normalized_sql: str | None = None


class FlinkTable(BaseModel):
    """One Flink table of the project, as its files define it."""

    name: str
    type: str
    product: str
    folder: str  # relative to the project root, e.g. pipelines/facts/p1/fct_order
    ddl_path: str | None = None
    dml_path: str | None = None
    ddl: DdlInfo | None = None
    dml: DmlInfo | None = None
    ddl_sql: str | None = None  # normalised text: what is deployed, and what code_version hashes
    dml_sql: str | None = None
    code_version: str | None  # None in an inventory built for its report only (`build_inventory(sql=False)`)

    @property
    def state_form(self) -> StateForm | None:
        return self.dml.state_form if self.dml else None

    @property
    def primary_key(self) -> list[str]:
        return self.ddl.primary_key if self.ddl else []

    @property
    def tables_read(self) -> list[str]:
        reads = set(self.dml.tables_read if self.dml else [])
        reads.update(self.ddl.tables_read if self.ddl else [])
        reads.discard(self.name)
        return sorted(reads)


class Inventory(BaseModel):
    """Every healthy table of a project, keyed by name, sorted; and the tables left out, with why."""

    root: Path
    pipelines: Path  # the folder read (usually root/pipelines; any name when given explicitly)
    tables: dict[str, FlinkTable]
    broken: list[BrokenTable] = Field(default_factory=list)  # sorted by table
    # what it was built from, files and analyser (`_source_digest`): equal sources, equal inventories, so a
    # cache of what derives from an inventory alone can key on it ("": unknown, e.g. an inventory made by hand)
    source: str = ""

    @property
    def problems(self) -> list[ProjectProblem]:
        """What to fix: one entry per fault (the tables excluded because of it add none)."""
        faults = {(b.file, b.line, b.message) for b in self.broken if not b.excluded_because}
        return [ProjectProblem(file=file, line=line, message=message) for file, line, message in sorted(faults)]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Building ~10^5 small models makes CPython's cycle collector rescan them over and over (a third
    of a warm load at 3000 tables). Paused while they are built; then, as what was built is long-lived
    (a graph, Definitions), it goes straight to the oldest generation (`gc.freeze` then `gc.unfreeze`),
    so no young collection rescans it either: re-enabling alone made the next collection walk every
    object just built (at 3000 tables a third of the Definitions' build). A cycle among them is still
    found by the next full collection. Objects someone else froze (say before a fork) stay frozen."""
    enabled = gc.isenabled()
    foreign = gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        if foreign == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def build_inventory(pipelines_dir: str | Path | None = None, use_cache: bool = True, strict: bool = True,
                    sql: bool = True) -> Inventory:
    """The project's tables. `strict` (CI): any broken file raises ProjectError naming every fault;
    else broken tables and their dependants are left out, listed in `Inventory.broken`. `sql=False`: what the
    inventory report prints, without the normalised SQL where it would cost the parser (a DML of the usual
    shape is read by project/plain_dml.py): tables without a code version, and nothing of the build kept but
    its scan (the report keeps itself by it)."""
    with paused_gc():
        inventory = _build_inventory(pipelines_dir, use_cache, sql)
    if strict and inventory.broken:
        raise ProjectError([str(problem) for problem in inventory.problems])
    return inventory


def _build_inventory(pipelines_dir: str | Path | None, use_cache: bool, sql: bool) -> Inventory:
    pipelines = resolve_pipelines_dir(pipelines_dir)
    cache = AnalysisCache(pipelines.parent) if use_cache else None
    version = cache.version if cache else analyser_version()
    last = read_last_scan(cache.path, version) if cache else None
    files = discover(pipelines)
    with _cold_scan_workers(files, cache, last) as workers:  # they load the parser while the files are read
        now = scan(pipelines, files, version, last)
        if cache is not None and last is not None and last.source == now.source:  # every file as last time
            built = cache.last_inventory(now.source)
            if built is not None:  # nothing assembled
                if last.worth_restamping(now):
                    keep_scan(cache.path, now)  # next time, fewer files read
                return built
        failures = {path: ProjectProblem(file=path, message=message) for path, message in now.failures.items()}
        analyses = _analyse_all(now.root, now.keys, failures, cache, workers, sql)
    tables, broken = _assemble(now.files, analyses, failures, now.deleted)
    broken = exclude_broken({n: _source_of(t) for n, t in tables.items()}, broken)
    healthy = {n: t for n, t in sorted(tables.items()) if n not in {b.table for b in broken}}
    inventory = Inventory(root=now.root, pipelines=pipelines, tables=_with_changelog_state(healthy), broken=broken,
                          source=now.source)
    if cache is not None and sql:
        cache.save_inventory(inventory, now)
    elif cache is not None:
        keep_scan(cache.path, now)  # what the report kept by `report_cache` is named after
    return inventory


# -- analysis with cache and processes --------------------------------------------------------


class CacheFile(BaseModel):
    version: str
    entries: dict[str, FileAnalysis]


class InventoryFile(BaseModel):
    """The last inventory built, with the digest of what it was built from (`Scan.source`); the stats of its
    files are kept apart (scan.LastScan), so a load whose files changed never reads this file."""

    version: str
    source: str
    inventory: Inventory


class AnalysisCache:
    """Two JSON files in the project's cache folder: content hash -> FileAnalysis (`analysis.json`: a changed
    file re-parses that file only), and the last inventory built (`inventory.json`: a load whose files
    are all unchanged reads that one file, and assembles nothing), beside the scan it was built from
    (`last_scan.marshal`, project/scan.py), which says whether the files are unchanged without a model."""

    def __init__(self, root: Path):
        self.path = cache_folder(root)
        self.file = self.path / "analysis.json"
        self.inventory_file = self.path / "inventory.json"
        self.version = analyser_version()

    @cached_property
    def entries(self) -> dict[str, FileAnalysis]:
        """The analyses of the files seen last (read only when some file changed)."""
        try:
            data = CacheFile.model_validate_json(self.file.read_bytes())
        except (OSError, ValueError):
            return {}
        return data.entries if data.version == self.version else {}

    def last_inventory(self, source: str) -> Inventory | None:
        """The inventory last built by this analyser version, if it was built from `source`."""
        try:
            data = InventoryFile.model_validate_json(self.inventory_file.read_bytes())
        except (OSError, ValueError):
            return None
        return data.inventory if (data.version, data.source) == (self.version, source) else None

    def save(self, entries: dict[str, str]) -> None:
        """`entries`: each analysis as JSON already (`_as_json`), as the workers send them: the file is joined
        from them, never serialised again (a CacheFile, read back by `entries`)."""
        body = ",".join(f"{json.dumps(key)}:{text}" for key, text in entries.items())
        self._write(self.file, f'{{"version":{json.dumps(self.version)},"entries":{{{body}}}}}')

    def save_inventory(self, inventory: Inventory, built_from: Scan) -> None:
        """Kept when the folder is writable: a project whose analyses are all cached loads read-only, as before.
        Then the scan it was built from, which names it (an inventory without its scan is never read)."""
        try:
            self._write(self.inventory_file, InventoryFile(version=self.version, source=built_from.source,
                                                           inventory=inventory).model_dump_json(exclude_defaults=True))
        except OSError:
            return
        keep_scan(self.path, built_from)

    def _write(self, file: Path, text: str) -> None:
        write_atomically(file, text.encode())


def analyse_file(relative_path: str, text: str, sql: bool = True) -> FileAnalysis:
    """Parse one ddl/dml file; FlinkSqlError names the file and line. The parser (sqlglot) is imported
    here, on the first file the cache lacks: a warm load never pays for it. `sql=False`: no normalised SQL
    where it costs the parser (for the inventory report), so a DML of the usual shape is not parsed."""
    from shift_left_dagster.project.analysis import analyze_ddl, analyze_dml
    from shift_left_dagster.project.parsing import FlinkSqlError, parse_one_statement, to_flink_sql
    from shift_left_dagster.project.plain_ddl import read_plain_ddl
    from shift_left_dagster.project.plain_dml import read_plain_dml

    kind = os.path.basename(relative_path).split(".", 1)[0]
    plain = read_plain_ddl(text) if kind == "ddl" else None  # the usual shape, without the parser
    if plain is not None:
        return FileAnalysis(ddl=plain[0], normalized_sql=plain[1])
    light = read_plain_dml(text) if kind != "ddl" and not sql else None
    if light is not None:
        return FileAnalysis(dml=light)
    statement = parse_one_statement(text, relative_path)
    try:
        ddl = analyze_ddl(statement) if kind == "ddl" else None
        dml = analyze_dml(statement) if kind != "ddl" else None
    except ValueError as error:
        raise FlinkSqlError(relative_path, statement.line, str(error)) from None
    # last, without a copy (the tree is read no more; the copy cost as much as the writing)
    return FileAnalysis(ddl=ddl, dml=dml,
                        normalized_sql=to_flink_sql(statement.tree, comments=False, copy=False) if sql else None)


def _as_json(analysis: FileAnalysis) -> str:
    # defaults left out: a fifth of the bytes a partly warm load reads and parses
    return analysis.model_dump_json(exclude_defaults=True)


Analysed = tuple[str, str | None, ProjectProblem | None]


def _analyse_batch(root: str, batch: list[str], sql: bool = True) -> list[Analysed]:
    """Worker: (path, analysis as JSON, problem) for each file of the batch. JSON: written by pydantic's core
    in the worker, it costs the parent a tenth of what unpickling models did, and is what the cache stores.
    No file can stop the others."""
    from shift_left_dagster.project.parsing import FlinkSqlError

    results: list[Analysed] = []
    for relative in batch:
        try:
            text = (Path(root) / relative).read_text()
            results.append((relative, _as_json(analyse_file(relative, text, sql)), None))
        except FlinkSqlError as error:
            results.append((relative, None, ProjectProblem(file=relative, line=error.line, message=error.detail)))
        except (OSError, UnicodeDecodeError) as error:
            results.append((relative, None, ProjectProblem(file=relative, message=f"cannot read the file: {error}")))
        except Exception as error:  # an analyser bug must cost this file only, not the project
            message = f"cannot analyse the file ({type(error).__name__}: {error}); please report it"
            results.append((relative, None, ProjectProblem(file=relative, message=message)))
    return results


PARALLEL_THRESHOLD = 64  # below this, starting processes costs more than it saves


def _analyse_all(root: Path, keys: dict[str, str], failures: dict[str, ProjectProblem],
                 cache: AnalysisCache | None, workers: ProcessPoolExecutor | None,
                 sql: bool = True) -> dict[str, FileAnalysis]:
    """Each readable file's analysis: from the cache, else parsed; a file that does not parse goes into
    `failures`. Analyses without their normalised SQL (`sql=False`) are not kept."""
    paths = list(keys)
    known = cache.entries if cache else {}
    results: dict[str, FileAnalysis] = {p: known[keys[p]] for p in paths if keys[p] in known}
    missing = [p for p in paths if p not in results]
    texts: dict[str, str] = {}  # by path: the analyses made now, as JSON
    made = _run_batches(root, missing, workers, sql) if missing else []  # none missing: no parser
    for relative, text, problem in made:
        if problem is not None:
            failures[relative] = problem
        elif text is not None:  # no problem: analysed
            texts[relative] = text
            results[relative] = FileAnalysis.model_validate_json(text)
    if cache is not None and missing and sql:
        cache.save({keys[p]: texts[p] if p in texts else _as_json(results[p]) for p in paths if p in results})
    return results


def _run_batches(root: Path, paths: list[str], workers: ProcessPoolExecutor | None, sql: bool) -> list[Analysed]:
    """Every file's analysis: by `workers` when given (a cold scan's), else here for a few files, else by
    workers started now."""
    if workers is None and (len(paths) < PARALLEL_THRESHOLD or WORKERS == 1):
        return _analyse_batch(str(root), paths, sql)
    with nullcontext(workers) if workers is not None else _workers() as pool:
        parts = batches(paths, WORKERS)
        return [r for part in pool.map(_analyse_batch, [str(root)] * len(parts), parts, [sql] * len(parts))
                for r in part]


WORKERS = os.cpu_count() or 1


def _workers() -> ProcessPoolExecutor:
    """A process a core, forked (this process's modules come along), each loading the parser first."""
    return ProcessPoolExecutor(max_workers=WORKERS, mp_context=get_context("fork"), initializer=_load_parser)


def _load_parser() -> None:
    import shift_left_dagster.project.analysis  # noqa: F401 - sqlglot and the dialect: ~0.1 s a worker
    import shift_left_dagster.project.plain_ddl  # noqa: F401
    import shift_left_dagster.project.plain_dml  # noqa: F401


@contextmanager
def _cold_scan_workers(files: list[TableFiles], cache: AnalysisCache | None,
                       last: LastScan | None) -> Iterator[ProcessPoolExecutor | None]:
    """Workers for a scan that will parse every file (no last scan, no cached analysis, enough files),
    started before this process reads the files: they load the parser meanwhile, on the other core. None
    otherwise: a warm load starts no process."""
    cold = last is None and not (cache.entries if cache is not None else {})
    if not cold or 2 * len(files) < PARALLEL_THRESHOLD or WORKERS == 1:
        yield None
        return
    with _workers() as workers:
        workers.submit(int)  # the first task forks every worker (the fork context starts them all at once)
        yield workers


Item = TypeVar("Item")


def batches(items: list[Item], workers: int) -> list[list[Item]]:
    """Work for a process pool: 16 batches a core, so no core waits long for the last one to end (4 a core
    left one core idle for up to a second of a cold 3000-table scan), each still worth a task."""
    size = max(16, len(items) // (workers * 16))
    return [items[i : i + size] for i in range(0, len(items), size)]


# -- assembly ---------------------------------------------------------------------------------


@dataclass
class _Found:
    """One table folder once its files are analysed: a table, or a fault that breaks it."""

    files: TableFiles
    name: str
    ddl: FileAnalysis | None
    dml: FileAnalysis | None
    problem: ProjectProblem | None

    @property
    def path(self) -> str:
        return self.files.ddl or self.files.dml or f"{self.files.folder}/sql-scripts"

    def source(self) -> TableSource:
        reads = set(self.dml.dml.tables_read if self.dml and self.dml.dml else [])
        reads.update(self.ddl.ddl.tables_read if self.ddl and self.ddl.ddl else [])
        reads.discard(self.name)
        return TableSource(name=self.name, type=self.files.type, product=self.files.product,
                           folder=self.files.folder, ddl_path=self.files.ddl, dml_path=self.files.dml,
                           reads=sorted(reads))


def _assemble(
    files: list[TableFiles], analyses: dict[str, FileAnalysis], failures: dict[str, ProjectProblem],
    deleted: set[str],
) -> tuple[dict[str, FlinkTable], list[BrokenTable]]:
    """Tables whose files are sound, and the tables their own files break (dependants come later):
    a file that does not parse, a name defined twice, a file the folder must hold and lacks."""
    found = [_find(entry, analyses, failures) for entry in files]
    by_name: dict[str, list[_Found]] = {}
    for item in found:
        by_name.setdefault(item.name, []).append(item)
    for name, same in by_name.items():  # a name defined twice: neither definition can be trusted
        duplicates = [ProjectProblem(file=item.path, message=f"duplicate table {name}, also defined in {same[0].path}")
                      for item in same[1:]]
        for index, item in enumerate(same if duplicates else []):
            item.problem = item.problem or duplicates[max(index - 1, 0)]
    tables: dict[str, FlinkTable] = {}
    broken: list[BrokenTable] = []
    for item in found:
        entry = item.files
        item.problem = item.problem or missing_file(entry.folder, entry.type, entry.ddl, entry.dml, deleted)
        if item.problem is not None:
            broken.append(BrokenTable(table=item.name, **item.problem.model_dump(), source=item.source()))
        else:
            tables[item.name] = _table(item)
    return tables, broken


def _find(entry: TableFiles, analyses: dict[str, FileAnalysis], failures: dict[str, ProjectProblem]) -> _Found:
    ddl = analyses.get(entry.ddl) if entry.ddl else None
    dml = analyses.get(entry.dml) if entry.dml else None
    problem = next((failures[p] for p in (entry.ddl, entry.dml) if p and p in failures), None)
    written = dml.dml.tables_written if dml and dml.dml else []
    name = ddl.ddl.table if ddl and ddl.ddl else written[0] if written else _name_from_file(entry)
    if problem is None and dml and written and name not in written:
        problem = ProjectProblem(file=cast(str, entry.dml), message=f"writes {', '.join(written)}, "
                                 f"but its ddl creates {name}")
    return _Found(files=entry, name=name, ddl=ddl, dml=dml, problem=problem)


def _name_from_file(entry: TableFiles) -> str:
    """A table none of whose files parse: shift_left names its files ddl.<table>.sql / dml.<table>.sql,
    and its folder <table> (a folder without files)."""
    if not (entry.ddl or entry.dml):
        return os.path.basename(entry.folder)
    file_name = os.path.basename(cast(str, entry.ddl or entry.dml))
    return file_name.split(".", 1)[1].removesuffix(".sql")


def _table(item: _Found) -> FlinkTable:
    texts = [part.normalized_sql if part else "" for part in (item.ddl, item.dml)]
    code = hashlib.blake2b(b"".join(text.encode() + b"\0" for text in texts if text is not None), digest_size=8)
    return FlinkTable(
        name=item.name,
        type=item.files.type,
        product=item.files.product,
        folder=item.files.folder,
        ddl_path=item.files.ddl,
        dml_path=item.files.dml,
        ddl=item.ddl.ddl if item.ddl else None,
        dml=item.dml.dml if item.dml else None,
        ddl_sql=item.ddl.normalized_sql if item.ddl else None,
        dml_sql=item.dml.normalized_sql if item.dml else None,
        code_version=code.hexdigest() if None not in texts else None,  # None: not read (`sql=False`)
    )


def _source_of(table: FlinkTable) -> TableSource:
    return TableSource(name=table.name, type=table.type, product=table.product, folder=table.folder,
                       ddl_path=table.ddl_path, dml_path=table.dml_path, reads=table.tables_read)


CHANGELOG_MODES_WITH_STATE = ("upsert", "retract")


def _with_changelog_state(tables: dict[str, FlinkTable]) -> dict[str, FlinkTable]:
    """State form as Flink's planner has it: a DML whose shape is stateless but that reads an upsert or
    retract table of the project keeps state all the same (Flink adds ChangelogNormalize, state per key),
    e.g. `INSERT INTO t SELECT id, UPPER(name) FROM upsert_table` is stateful."""
    for table in tables.values():
        if table.dml is None or table.dml.state_form == StateForm.STATEFUL:
            continue
        normalised = [p for p in table.dml.tables_read
                      if p in tables and _changelog_mode(tables[p]) in CHANGELOG_MODES_WITH_STATE]
        if normalised:
            reasons = [f"reads the {_changelog_mode(tables[p])} changelog of {p} (ChangelogNormalize)"
                       for p in normalised]
            table.dml = table.dml.model_copy(update={"state_form": StateForm.STATEFUL, "state_reasons": reasons})
    return tables


def _changelog_mode(table: FlinkTable) -> str | None:
    return table.ddl.changelog_mode if table.ddl else None

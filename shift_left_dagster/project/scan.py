"""Which table files a pipelines folder holds, and what their content was built into last time.

Plain strings, tuples and `marshal`, no model library: a warm `inventory` answers from here before pydantic
(or sqlglot, or the CLI framework, which loads pydantic) would load. The digest of a scan (`Scan.source`)
names everything an inventory is built from: equal digests, equal inventories.

Content keys are reused from the last scan by each file's stat, with git's racy-clean rule: a stat not
`RACY_MARGIN_NS` older than the scan that stored it proves nothing, and its file is hashed anyway.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import subprocess
import time
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from pathlib import Path, PurePosixPath

from shift_left_dagster.project.errors import ProjectError


class TableType(StrEnum):
    SOURCE = "source"
    INTERMEDIATE = "intermediate"
    FACT = "fact"
    DIMENSION = "dimension"
    VIEW = "view"
    SEED = "seed"


FOLDER_TYPES = {
    "sources": TableType.SOURCE,
    "intermediates": TableType.INTERMEDIATE,
    "facts": TableType.FACT,
    "dimensions": TableType.DIMENSION,
    "views": TableType.VIEW,
    "seeds": TableType.SEED,  # shift_left's word for a seeds/ folder's tables
}


def resolve_pipelines_dir(path: str | Path | None = None) -> Path:
    """An explicit path, else $PIPELINES (as in shift_left), else ./flink_project/pipelines."""
    chosen = path or os.environ.get("PIPELINES") or "flink_project/pipelines"
    pipelines = Path(chosen).resolve()
    if pipelines.name != "pipelines" and (pipelines / "pipelines").is_dir():
        pipelines = pipelines / "pipelines"
    if not pipelines.is_dir():
        raise ProjectError([f"{pipelines}: pipelines folder not found (set PIPELINES or pass it)"])
    return pipelines


def cache_folder(root: Path) -> Path:
    """Where a project's caches live: $SHIFT_LEFT_DAGSTER_CACHE, else beside its pipelines folder."""
    base = os.environ.get("SHIFT_LEFT_DAGSTER_CACHE")
    return Path(base) if base else root / ".shift_left_dagster" / "cache"


# -- discovery -------------------------------------------------------------------------------


@dataclass
class TableFiles:
    """One table folder found on disk (plain strings: this runs for every folder, every load)."""

    type: str
    product: str
    folder: str
    ddl: str | None = None
    dml: str | None = None


def discover(pipelines: Path) -> list[TableFiles]:
    """Every `<type>/<product>/<table>/sql-scripts` folder with its ddl/dml files (an empty one too: its
    table is broken, see table_files). Stops descending at a table folder (its tests/ and other folders
    are never listed). None: ProjectError saying what was expected there.
    """
    found: list[TableFiles] = []

    def visit(folder: str, relative: str) -> None:  # relative: to the project root, with "/"
        entries = sorted((e for e in os.scandir(folder) if e.is_dir()), key=lambda e: e.name)
        scripts = next((e for e in entries if e.name == "sql-scripts"), None)
        if scripts is None:
            for entry in entries:
                visit(entry.path, f"{relative}/{entry.name}")
            return
        parts = relative.split("/")[1:]  # below pipelines/
        files = TableFiles(type=FOLDER_TYPES.get(parts[0], parts[0]),
                           product=parts[1] if len(parts) >= 3 else "", folder=relative)
        for name in sorted(os.listdir(scripts.path)):
            if name.startswith("ddl.") and name.endswith(".sql") and files.ddl is None:
                files.ddl = f"{relative}/sql-scripts/{name}"
            elif name.startswith("dml.") and name.endswith(".sql") and files.dml is None:
                files.dml = f"{relative}/sql-scripts/{name}"
        found.append(files)

    visit(str(pipelines), pipelines.name)
    if not found:
        raise ProjectError([_no_tables(pipelines)])
    return found


def _no_tables(pipelines: Path) -> str:
    """Why a folder holds no table: a wrong path is the usual cause, so say what was expected there."""
    kinds = [name for name in FOLDER_TYPES if (pipelines / name).is_dir()]
    found = f"{', '.join(f'{k}/' for k in kinds)} hold(s) none" if kinds else "none of " + ", ".join(
        f"{k}/" for k in list(FOLDER_TYPES)[:5]) + " is there"
    return f"{pipelines}: no table folder (<type>/<product>/<table>/sql-scripts): {found}; is it the pipelines folder?"


def deleted_in_git(pipelines: Path) -> set[str]:
    """ddl/dml files (relative to the pipelines folder's parent) that git tracks and the working tree
    lacks; none outside git."""
    try:
        listed = subprocess.run(["git", "-C", str(pipelines.parent), "ls-files", "--deleted", "-z", "--",
                                 pipelines.name],
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if listed.returncode != 0:
        return set()  # not a git repository: the folder layout alone decides
    return {p for p in listed.stdout.split("\0")
            if p.endswith(".sql") and PurePosixPath(p).name.startswith(("ddl.", "dml."))}


# -- content keys and the digest of a scan ---------------------------------------------------


# beside this module: the code that produces an analysis, and an inventory from analyses
ANALYSER = ("dialect.py", "parsing.py", "analysis.py", "plain_ddl.py", "plain_dml.py", "facts.py", "inventory.py",
            "problems.py", "table_files.py", "scan.py")


def analyser_version() -> str:
    """Changes whenever the code that produces what the caches hold changes: a cache of another version is
    never read. From the sources and sqlglot's installed version (its `_version.py`, found without
    importing sqlglot nor importlib.metadata, which costs more than the rest of a warm scan's checks)."""
    digest = hashlib.blake2b(digest_size=12)
    spec = importlib.util.find_spec("sqlglot")
    folder = Path(spec.origin).parent if spec and spec.origin else None
    if folder is not None:
        stamp = folder / "_version.py"
        digest.update((stamp if stamp.is_file() else folder / "__init__.py").read_bytes())
    for module in ANALYSER:
        digest.update(Path(__file__).with_name(module).read_bytes())
    return digest.hexdigest()


Stamp = tuple[int, int, int, int, str]  # a file's size, mtime_ns, ctime_ns and inode, and its content key

# git's racy-clean rule, with a margin for coarse file timestamps (FAT's are 2 s): a stat is trusted only if
# the file's mtime and ctime are older than the scan that stored it by this much. An edit after that scan
# sets the ctime to its own time (a user can put the mtime back, never the ctime), so the stat differs.
RACY_MARGIN_NS = 2_000_000_000


def settled(stamp: Stamp, scanned_ns: int) -> bool:
    """A stat old enough, at the scan that took it, to stand for its file's content."""
    before = scanned_ns - RACY_MARGIN_NS
    return stamp[1] < before and stamp[2] < before


def content_key(relative_path: str, content: bytes) -> str:
    kind = os.path.basename(relative_path).split(".", 1)[0]
    return kind + ":" + hashlib.blake2b(content, digest_size=16).hexdigest()


def read_keys(root: Path, files: list[TableFiles], trusted: dict[str, Stamp],
              ) -> tuple[dict[str, str], dict[str, str], dict[str, Stamp]]:
    """Each ddl/dml file's content key, why each file that cannot be read cannot, and each file's stamp.
    A file whose stat is as in `trusted` keeps its key unread (a stat costs a third of a read)."""
    failures: dict[str, str] = {}
    keys: dict[str, str] = {}
    stamps: dict[str, Stamp] = {}
    base = str(root)
    for path in (p for entry in files for p in (entry.ddl, entry.dml) if p):
        full = os.path.join(base, path)  # plain strings: this runs for every file, every load
        try:
            known = trusted.get(path)
            if known is not None:
                stat = os.stat(full)
                if (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino) == known[:4]:
                    keys[path], stamps[path] = known[4], known
                    continue
            with open(full, "rb", buffering=0) as file:  # unbuffered: the whole file at once
                stat = os.fstat(file.fileno())  # before the read: a later edit changes the ctime
                keys[path] = content_key(path, file.read())
            stamps[path] = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, keys[path])
        except OSError as error:  # e.g. a dangling symlink: this table only
            failures[path] = f"cannot read the file: {error}"
    return keys, failures, stamps


@dataclass
class Scan:
    """A pipelines folder as found now: its table folders, each file's content key (or why it cannot be
    read), the files git says were deleted, and the digest of it all with the analyser's version."""

    version: str
    pipelines: Path
    files: list[TableFiles]
    keys: dict[str, str]
    failures: dict[str, str]
    deleted: set[str]
    stamps: dict[str, Stamp]
    scanned_ns: int  # when it began: the racy-clean rule's reference for the stamps it stores

    @property
    def root(self) -> Path:
        return self.pipelines.parent

    @cached_property
    def source(self) -> str:
        """Everything an inventory is built from: the code that builds it, the folder, its table folders and
        files by content, the files that cannot be read, those git says were deleted."""
        digest = hashlib.blake2b(f"{self.version}\0{self.pipelines}".encode(), digest_size=16)
        for entry in self.files:
            digest.update(f"\0{entry.type}\0{entry.product}\0{entry.folder}\0{entry.ddl}\0{entry.dml}".encode())
        digest.update(repr(sorted(self.keys.items())).encode())
        digest.update(repr(sorted(self.failures.items())).encode())
        digest.update(repr(sorted(self.deleted)).encode())
        return digest.hexdigest()


def scan(pipelines: Path, files: list[TableFiles], version: str, last: LastScan | None) -> Scan:
    """The folder now (its table folders `files`: `discover`), reusing the content keys `last` can vouch for
    (same folder, racy-clean)."""
    scanned_ns = time.time_ns()  # before any file is looked at
    trusted = last.trusted_stamps() if last is not None and last.pipelines == str(pipelines) else {}
    keys, failures, stamps = read_keys(pipelines.parent, files, trusted)
    deleted = deleted_in_git(pipelines) if any(f.ddl is None or f.dml is None for f in files) else set()
    return Scan(version, pipelines, files, keys, failures, deleted, stamps, scanned_ns)


# -- the last scan, kept --------------------------------------------------------------------

LAST_SCAN_FORMAT = 1  # the layout of last_scan.marshal: a file of another layout is ignored


@dataclass
class LastScan:
    """What the last inventory was built from (`source`) and its files' stats then, so a warm load hashes
    only the files whose stat changed. Kept apart from the inventory itself: reading it costs no model."""

    pipelines: str
    source: str
    scanned_ns: int
    stamps: dict[str, Stamp]

    def trusted_stamps(self) -> dict[str, Stamp]:
        """The stored stats old enough to stand for their file's content (the racy-clean rule)."""
        return {path: stamp for path, stamp in self.stamps.items() if settled(stamp, self.scanned_ns)}

    def worth_restamping(self, now: Scan) -> bool:
        """A stat changed, or a file hashed now as too fresh then would be trusted from this scan on."""
        return now.stamps != self.stamps or any(
            settled(stamp, now.scanned_ns) and not settled(stamp, self.scanned_ns) for stamp in now.stamps.values())


def read_last_scan(folder: Path, version: str) -> LastScan | None:
    """The last scan kept by this analyser version; None if there is none, or it is unreadable, of another
    format or version (the caller then hashes every file)."""
    try:
        data = marshal.loads((folder / "last_scan.marshal").read_bytes())
        layout, kept_version, pipelines, source, scanned_ns, stamps = data
        if layout != LAST_SCAN_FORMAT or kept_version != version:
            return None
        if not (isinstance(pipelines, str) and isinstance(source, str) and isinstance(scanned_ns, int)
                and isinstance(stamps, dict)):
            return None
        return LastScan(pipelines, source, scanned_ns, stamps)
    except (OSError, EOFError, ValueError, TypeError):  # marshal says ValueError/EOFError/TypeError when corrupt
        return None


def keep_scan(folder: Path, now: Scan) -> None:
    """Keep `now` as the last scan (when the folder is writable: a cache is never required)."""
    data = (LAST_SCAN_FORMAT, now.version, str(now.pipelines), now.source, now.scanned_ns, now.stamps)
    try:
        write_atomically(folder / "last_scan.marshal", marshal.dumps(data))
    except OSError:
        pass


def write_atomically(file: Path, content: bytes) -> None:
    """A concurrent reader sees the old file or the new one, never half of one."""
    file.parent.mkdir(parents=True, exist_ok=True)
    temporary = file.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(content)
    os.replace(temporary, file)

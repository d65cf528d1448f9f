"""The project errors a user fixes (a file, a folder, a config): the CLI prints them as one line each.

Kept apart from the parsing and config modules so the CLI can catch them without importing those.
"""

from __future__ import annotations

from pathlib import Path


class ProjectError(ValueError):
    """A problem with the project as a whole; each line names a file (and line)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class ConfigFileError(ValueError):
    """The config file is missing, unreadable or invalid; lists every problem at once."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__(f"{self.path}: {'; '.join(problems)}")

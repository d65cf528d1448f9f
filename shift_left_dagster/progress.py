"""What `demo` shows of a `dg launch` while it runs: the run's own lines (the plan, each step as it starts
and ends, warnings) and the check, failure and run-end events, not Dagster's DEBUG chatter or Spark's.

Dagster's console lines are `<time> - dagster - <LEVEL> - <job> - <run id> - [<pid> - ]<step> - <message>`;
a message of several lines (the plan) continues on indented lines.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} - dagster - (?P<level>[A-Z]+) - (?P<rest>.*)$")
_EVENT = re.compile(r" - (?P<event>ASSET_CHECK_EVALUATION|STEP_FAILURE|RUN_FAILURE|RUN_SUCCESS) - (?P<message>.*)$")
_USER = re.compile(r"^[^ ]+ - [0-9a-f-]{36} - [^ ]+ - (?P<message>.*)$")  # job - run id - step - message


class RunProgress:
    """Feed it a launch's output line by line; it returns the line to show, or None."""

    def __init__(self) -> None:
        self.continuing = False

    def feed(self, line: str) -> str | None:
        line = line.rstrip("\n")
        matched = _LINE.match(line)
        if matched is None:  # an indented line continues a message shown; anything else is not the run's
            return line if self.continuing and line.startswith(" ") else None
        self.continuing = False
        if matched["level"] == "DEBUG":
            event = _EVENT.search(matched["rest"])
            return f"{event['event'].lower()}: {event['message']}" if event else None
        user = _USER.match(matched["rest"])
        if user is None:
            return None
        self.continuing = True
        level = matched["level"]
        return user["message"] if level == "INFO" else f"{level.lower()}: {user['message']}"

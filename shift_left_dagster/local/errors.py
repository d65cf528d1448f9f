"""Spark's complaints about a translated statement, said in Flink's terms.

A statement's `status.detail` is read by people who wrote Flink SQL: it names
their tables, columns and lines, never a Spark error class, an SQLSTATE, the
`sl_<n>` views the engine binds nor the hidden `__sl_*` columns it carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pyspark.errors import PySparkException

_CONDITION = re.compile(r"^\[[A-Z0-9_.]+\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE:\s*\w+\.?")
_SUGGESTION = re.compile(r"\s*Did you mean one of the following\?.*$")
_HIDDEN = re.compile(r",?\s*`?(?:[\w$]+`?\.`?)?__sl_[\w$]+`?")
_VIEW = re.compile(r"`?\bsl_\d+\b`?")
_QUOTED = re.compile(r"`([^`]+)`")


def flink_detail(error: PySparkException, flink_sql: str, views: Mapping[str, str] | None = None) -> str:
    """One line: `line N: ` when the Flink line is known, then the problem in Flink's words."""
    condition = (error.getCondition() if hasattr(error, "getCondition") else None) or ""
    parameters = _parameters(error)
    message = _clean(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__, views)
    name = ""
    if condition.startswith("UNRESOLVED_COLUMN") and parameters.get("objectName"):
        name = _unquote(parameters["objectName"]).split(".")[-1]
        message = f"Column '{name}' not found in any table"
    elif condition.startswith("UNRESOLVED_ROUTINE") and parameters.get("routineName"):
        name = _unquote(parameters["routineName"]).split(".")[-1].upper()
        message = f"No match found for function signature {name}(...)"
    else:
        name = next((n.split(".")[-1] for n in _QUOTED.findall(message)), "")
    line = line_of_name(flink_sql, name) if name else None
    return f"line {line}: {message}" if line else message


def _parameters(error: PySparkException) -> dict[str, str]:
    try:
        return dict(error.getMessageParameters() or {})
    except Exception:  # not every PySpark error carries parameters
        return {}


def _unquote(name: str) -> str:
    return name.replace("`", "")


def _clean(message: str, views: Mapping[str, str] | None) -> str:
    message = _CONDITION.sub("", message)
    message = _SQLSTATE.sub("", message)
    message = _SUGGESTION.sub("", message)
    message = _HIDDEN.sub("", message)
    names = dict(views or {})
    message = _VIEW.sub(lambda m: f"`{names.get(m.group(0).strip('`'), 'table')}`", message)
    return message.strip().rstrip(";").strip()


def line_of_name(sql: str, name: str) -> int | None:
    """The first line of the Flink SQL that names `name` (as a whole word)."""
    match = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", sql, re.IGNORECASE)
    return sql.count("\n", 0, match.start()) + 1 if match else None

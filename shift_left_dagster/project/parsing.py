"""Flink SQL text -> statements (ASTs), with errors that name the file and line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token

from shift_left_dagster.project.dialect import Flink, FlinkParser, StatementSet, split_tokens

FLINK = Flink()

# The words a Flink statement can start with; anything else is an unknown statement.
STATEMENT_STARTS = {
    "CREATE", "INSERT", "SELECT", "WITH", "EXECUTE", "SET", "RESET", "ALTER", "DROP",
    "USE", "DESCRIBE", "SHOW", "VALUES", "(",
}

# What a Flink SQL script may contain; anything else (a bare expression, GRANT, ...) is an error.
STATEMENT_KINDS = (
    exp.Create,
    exp.Insert,
    exp.Query,
    StatementSet,
    exp.Set,
    exp.Alter,
    exp.Drop,
    exp.Use,
    exp.Describe,
)


class FlinkSqlError(ValueError):
    """Malformed or unsupported Flink SQL; the message starts with `file:line:`."""

    def __init__(self, source: str, line: int, message: str):
        self.source, self.line, self.detail = source, line, message
        super().__init__(f"{source}:{line}: {message}")


@dataclass(frozen=True)
class Statement:
    """One parsed statement with where it came from."""

    sql: str
    line: int
    tree: exp.Expression


def split_statements(text: str, source: str = "<sql>") -> list[tuple[str, int]]:
    """The statements of a script as (text, first line), split outside strings and comments."""
    tokens = _tokenize(text, source)
    return [
        (text[chunk[0].start : chunk[-1].end + 1], chunk[0].line) for chunk in split_tokens(tokens)
    ]


def parse_statements(text: str, source: str = "<sql>") -> list[Statement]:
    """Parse every statement of a script; a parse error or an `exp.Command` raises FlinkSqlError."""
    tokens = _tokenize(text, source)
    statements = []
    for chunk in split_tokens(tokens):
        line = chunk[0].line
        if chunk[0].text.upper() not in STATEMENT_STARTS:
            raise FlinkSqlError(source, line, f"unknown statement starting with {chunk[0].text!r}")
        parser = cast(FlinkParser, FLINK.parser())
        parser.one_statement = True
        try:
            trees = parser.parse(chunk, text)
        except ParseError as error:
            first = error.errors[0] if error.errors else {}
            raise FlinkSqlError(source, int(first.get("line") or line), _in_flink_terms(first, error)) from None
        tree = trees[0] if trees else None
        if tree is None:
            continue
        if isinstance(tree, exp.Command) and parser.unparsed is not None:
            stop = parser.unparsed
            raise FlinkSqlError(source, stop.line, _not_understood(chunk, stop))
        if isinstance(tree, exp.Command) or not isinstance(tree, STATEMENT_KINDS):
            raise FlinkSqlError(source, line, f"unknown statement starting with {chunk[0].text!r}")
        # every concrete kind is an exp.Expression (exp.Query is a mixin whose classes all are)
        statements.append(Statement(text[chunk[0].start : chunk[-1].end + 1], line, cast(exp.Expression, tree)))
    return statements


def parse_one_statement(text: str, source: str = "<sql>") -> Statement:
    """Exactly one statement (a ddl or dml file)."""
    statements = parse_statements(text, source)
    if not statements:
        raise FlinkSqlError(source, 1, "empty: the file holds no Flink SQL statement")
    if len(statements) != 1:
        raise FlinkSqlError(source, 1, f"expected one statement, found {len(statements)}")
    return statements[0]


def to_flink_sql(tree: exp.Expression, pretty: bool = False, comments: bool = True, copy: bool = True) -> str:
    """Write an AST back as Flink SQL (without comments: the normalised form changes are compared on).
    `copy=False` for a tree no one reads afterwards or a leaf such as a type: the copy is most of the cost."""
    return tree.sql(dialect=FLINK, pretty=pretty, comments=comments, copy=copy)


# sqlglot reports an incomplete construct as "Required keyword: 'x' missing for <class '...Name'>";
# what a Flink user wrote instead, by sqlglot class name.
INCOMPLETE = {
    "Order": "ORDER BY without a column",
    "And": "AND without a condition after it",
    "Or": "OR without a condition after it",
    "Not": "NOT without a condition after it",
    "Between": "BETWEEN without both bounds (BETWEEN low AND high)",
    "In": "IN without a list of values",
    "Like": "LIKE without a pattern",
    "Is": "IS without NULL, TRUE or FALSE",
    "Cast": "CAST without a target type",
    "TryCast": "TRY_CAST without a target type",
    "Alias": "AS without a name",
    "Case": "CASE without a WHEN branch",
    "If": "WHEN without a THEN",
    "Interval": "INTERVAL without a value",
    "Window": "OVER without a window",
    "Paren": "empty parentheses",
}
OPERATORS = {"EQ": "=", "NEQ": "<>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "Add": "+", "Sub": "-",
             "Mul": "*", "Div": "/", "Mod": "%", "DPipe": "||"}
CREATABLES = {"TABLE", "VIEW", "FUNCTION", "CATALOG", "DATABASE", "MODEL"}


def _in_flink_terms(first: dict, error: ParseError) -> str:
    """A sqlglot parse error, said in terms of the SQL that was written (never sqlglot's class names)."""
    description = str(first.get("description") or error).splitlines()[0]
    if "SENTINEL" in description:
        return "unexpected end of statement"
    if description.startswith("Invalid expression / Unexpected token") and first.get("highlight"):
        return f"unexpected {first['highlight']!r}"
    if description.startswith("Required keyword") and "<class '" in description:
        name = description.rsplit(".", 1)[-1].rstrip("'>")
        if name in OPERATORS:
            return f"'{OPERATORS[name]}' without an operand after it"
        return INCOMPLETE.get(name, f"incomplete {name.upper()} expression")
    return description


def _not_understood(chunk: list, stop: Token) -> str:
    """A statement sqlglot could not read to its end: name the first word it could not read."""
    words = [t.text.upper() for t in chunk]
    if words[0] == "CREATE":
        kind = next((w for w in words[1:] if w not in ("OR", "REPLACE", "TEMPORARY", "TEMP", "SYSTEM")), "")
        if kind not in CREATABLES:
            known = ", ".join(sorted(CREATABLES))
            return f"CREATE {kind or 'without an object'}: not something Flink creates ({known})"
        return f"CREATE {kind} not understood at {stop.text!r}"
    return f"{words[0]} statement not understood at {stop.text!r}"


def _tokenize(text: str, source: str) -> list:
    try:
        return FLINK.tokenize(text)
    except TokenError as error:
        message = str(error)
        line = _line_of(message, text)
        raise FlinkSqlError(source, line, message.splitlines()[0]) from None


def _line_of(message: str, text: str) -> int:
    """sqlglot's TokenError says 'Line N' when it can; else point at the last line."""
    marker = "Line "
    if marker in message:
        digits = message.split(marker, 1)[1].split(",", 1)[0].split(":", 1)[0].strip()
        if digits.isdigit():
            return int(digits)
    return text.count("\n") + 1

"""The usual INSERT INTO ... SELECT read without the SQL parser: what the inventory report needs of a DML file.

Most DML files have one shape: `INSERT INTO t [WITH c AS (...), ...] SELECT ... FROM a [JOIN b ON ...] ... [WHERE]
[GROUP BY] [HAVING] [UNION [ALL] SELECT ...]`, over columns, literals, operators, CASE, CAST, EXTRACT, TRIM,
a few known functions (and functions the parser does not know, which it reads as anonymous ones) and
ROW_NUMBER or aggregate OVER windows. A file of exactly that shape is recognised here from its words, and
gives the analysis the parser's path gives (analysis.analyze_dml: the tables written and read, CTE names
excluded, the state reasons and join counts; only the reasons' order may differ) but no normalised SQL: the
inventory report prints neither (tests/unit/test_plain_dml.py compares both paths on every DML of the sample,
of a synthetic project, on tricky cases and on statements damaged a word at a time). Anything else (a comment
block or hint, a subquery in an expression, UNNEST, a table function, a keyword used as a name, a function the
parser knows but this reader does not, ...) returns None: the parser reads the file, and says what is wrong
with a broken one.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from shift_left_dagster.project.dialect import Flink, FlinkParser
from shift_left_dagster.project.facts import DmlInfo, JoinCounts, StateForm
from shift_left_dagster.project.plain_ddl import Unusual, Words

_WORDS = re.compile(r"""
    (?:\s++|--[^\n]*+)*+
    (?:
        (?P<word>[A-Za-z_][A-Za-z0-9_]*+)
      | `(?P<quoted>[^`\n\\]+)`
      | '(?P<string>[^'\n\\]*)'(?!')
      | (?P<number>[0-9]++(?:\.[0-9]++)?)(?![A-Za-z0-9_.])
      | (?P<mark><>|!=|<=|>=|\|\||[(),=;<>.*+/%-])
    )""", re.VERBOSE)
# A bare word the parser may read as something other than a name: a keyword, or a function without parentheses.
_RESERVED = frozenset({*Flink.Tokenizer.KEYWORDS, *FlinkParser.NO_PAREN_FUNCTION_PARSERS})
# Functions the parser knows (their own class, maybe their own grammar): only those below are read here.
_KNOWN = frozenset({*FlinkParser.FUNCTIONS, *FlinkParser.FUNCTION_PARSERS})
# name: (fewest arguments, most (None: any), an aggregate (sqlglot's AggFunc, as the parser decides state))
_FUNCTIONS: dict[str, tuple[int, int | None, bool]] = {
    "COUNT": (1, 1, True), "SUM": (1, 1, True), "MIN": (1, 1, True), "MAX": (1, 1, True), "AVG": (1, 1, True),
    "UPPER": (1, 1, False), "LOWER": (1, 1, False), "ABS": (1, 1, False), "COALESCE": (1, None, False),
    "CONCAT": (1, None, False), "ROW_NUMBER": (0, 0, False),
}
_TYPES = frozenset({"STRING", "BIGINT", "INT", "INTEGER", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "BOOLEAN",
                    "DATE", "TIMESTAMP", "TIMESTAMP_LTZ", "DECIMAL", "VARCHAR", "CHAR", "BYTES"})
_UNITS = frozenset({"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"})
_COMPARISONS = frozenset({"=", "<>", "!=", "<", ">", "<=", ">="})
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "||"})
_QUERY_END = frozenset({"", ")", ";", "UNION"})


class _Dml(Words):
    """The recogniser: each method reads one construct or raises Unusual; what it found is kept as it reads."""

    def __init__(self, text: str):
        super().__init__(text, _WORDS)
        self.tables: list[tuple[str, bool]] = []  # (name, qualified by a database): every table read
        self.ctes: set[str] = set()
        self.reasons: list[str] = []
        self.joins = JoinCounts()

    def reason(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def identifier(self) -> str:
        """A name: bare (never a reserved word) or quoted."""
        kind = self.items[self.index][0] if self.index < len(self.items) else ""
        if kind == "quoted" or kind == "word" and self.keys[self.index] not in _RESERVED:
            self.index += 1
            return self.items[self.index - 1][1]
        raise Unusual

    def table(self) -> tuple[str, bool]:
        """`[catalog.][database.]table`: (table, qualified)."""
        parts = [self.identifier()]
        while len(parts) < 3 and self.take_if("."):
            parts.append(self.identifier())
        return parts[-1], len(parts) > 1

    def statement(self) -> str:
        """INSERT INTO t [(columns)] query [;]: the table written."""
        self.take("INSERT", "INTO")
        written, _ = self.table()
        if self.peek() == "(":
            self.names()
        self.query()
        self.take_if(";")
        if not self.done:
            raise Unusual
        return written

    def query(self) -> None:
        if self.take_if("WITH"):
            while True:
                self.ctes.add(self.identifier())
                self.take("AS", "(")
                self.query()
                self.take(")")
                if not self.take_if(","):
                    break
        self.select()
        while self.take_if("UNION"):
            if not self.take_if("ALL"):
                self.take_if("DISTINCT")
                self.reason("UNION (distinct)")
            self.select()

    def select(self) -> None:
        self.take("SELECT")
        if self.take_if("DISTINCT"):
            self.reason("SELECT DISTINCT")
        self.items_list()
        self.take("FROM")
        self.source()
        while self.join():
            pass
        if self.take_if("WHERE"):
            self.disjunction()
        if self.take_if("GROUP", "BY"):
            self.reason("GROUP BY aggregation")
            self.expressions()
        if self.take_if("HAVING"):
            self.disjunction()
        if self.peek() not in _QUERY_END:
            raise Unusual

    def items_list(self) -> None:
        while True:
            if not self.take_if("*"):
                self.disjunction()
                if self.take_if("AS"):
                    self.identifier()
            if not self.take_if(","):
                return

    def source(self) -> bool:
        """A table or `(query)`, maybe aliased; True for a table read `FOR SYSTEM_TIME AS OF` (temporal)."""
        temporal = False
        if self.take_if("("):
            self.query()
            self.take(")")
        else:
            self.tables.append(self.table())
            if self.take_if("FOR"):
                self.take("SYSTEM_TIME", "AS", "OF")
                self.additive()
                temporal = True
        if self.take_if("AS"):
            self.identifier()
        return temporal

    def join(self) -> bool:
        side = next((s for s in ("LEFT", "RIGHT", "FULL") if self.take_if(s)), "")
        kind = "OUTER" if side and self.take_if("OUTER") else ""
        if not side:
            kind = next((k for k in ("INNER", "CROSS") if self.take_if(k)), "")
        if not self.take_if("JOIN"):
            if side or kind:
                raise Unusual
            return False
        temporal = self.source()
        if kind != "CROSS":
            self.take("ON")
            self.disjunction()
        self.reason("temporal join" if temporal else f"{' '.join(p for p in (side, kind) if p) or 'inner'} join")
        self.joins.count(side, kind)
        return True

    def separated(self, read: Callable[[], None], separator: str = ",") -> int:
        """`x, x, ...` (or with another separator): how many."""
        read()
        count = 1
        while self.take_if(separator):
            read()
            count += 1
        return count

    def expressions(self) -> int:
        return self.separated(self.disjunction)

    def disjunction(self) -> None:
        self.separated(self.conjunction, "OR")

    def conjunction(self) -> None:
        self.separated(self.negation, "AND")

    def negation(self) -> None:
        while self.take_if("NOT"):
            pass
        self.predicate()

    def predicate(self) -> None:
        self.additive()
        word = self.peek()
        if word in _COMPARISONS:
            self.index += 1
            self.additive()
        elif self.take_if("IS"):
            self.take_if("NOT")
            if self.take_if("DISTINCT", "FROM"):
                self.additive()
            elif not (self.take_if("NULL") or self.take_if("TRUE") or self.take_if("FALSE")):
                raise Unusual
        else:
            negated = self.take_if("NOT")
            if self.take_if("IN", "("):
                self.list_of_values()
            elif self.take_if("BETWEEN"):
                self.additive()
                self.take("AND")
                self.additive()
            elif self.take_if("LIKE"):
                self.additive()
            elif negated:
                raise Unusual

    def list_of_values(self) -> None:
        if self.peek() in ("SELECT", "WITH"):
            raise Unusual  # IN (subquery): a join in Flink's plan, left to the parser
        self.separated(self.additive)
        self.take(")")

    def additive(self) -> None:
        self.unary()
        while self.peek() in _ARITHMETIC:
            self.index += 1
            self.unary()

    def unary(self) -> None:
        while self.take_if("-"):
            pass
        self.primary()

    def primary(self) -> None:
        kind = self.items[self.index][0] if self.index < len(self.items) else ""
        word = self.peek()
        if kind in ("number", "string") or word in ("TRUE", "FALSE", "NULL"):
            self.index += 1
        elif word == "(":
            self.index += 1
            if self.peek() in ("SELECT", "WITH"):
                raise Unusual  # a scalar subquery: a join in Flink's plan, left to the parser
            self.disjunction()
            self.take(")")
        elif word == "CASE":
            self.case()
        elif kind == "word" and self.index + 1 < len(self.keys) and self.keys[self.index + 1] == "(":
            self.call()
        else:
            self.identifier()
            while self.take_if("."):
                self.identifier()

    def case(self) -> None:
        self.take("CASE")
        if self.peek() != "WHEN":
            self.disjunction()
        self.take("WHEN")
        while True:
            self.disjunction()
            self.take("THEN")
            self.disjunction()
            if not self.take_if("WHEN"):
                break
        if self.take_if("ELSE"):
            self.disjunction()
        self.take("END")

    def call(self) -> None:
        """`name(...)` and its OVER window, if any."""
        function = self.keys[self.index]
        self.index += 2
        if function == "CAST":
            self.disjunction()
            self.take("AS")
            self.type_name()
        elif function == "EXTRACT":
            if self.peek() not in _UNITS:
                raise Unusual
            self.index += 1
            self.take("FROM")
            self.disjunction()
        elif function == "TRIM":
            if self.take_if("BOTH") or self.take_if("LEADING") or self.take_if("TRAILING"):
                self.next("string")
                self.take("FROM")
            self.disjunction()
        elif function in _FUNCTIONS:
            self.arguments(function)
        elif function in _KNOWN or function in _RESERVED:
            raise Unusual
        else:  # a function the parser does not know: an anonymous one, never an aggregate
            if self.peek() != ")":
                self.expressions()
        self.take(")")
        if self.take_if("OVER"):
            self.window(function)
        elif _FUNCTIONS.get(function, (0, 0, False))[2]:
            self.reason("aggregate function")
        elif function == "ROW_NUMBER":
            raise Unusual

    def arguments(self, function: str) -> None:
        fewest, most, aggregate = _FUNCTIONS[function]
        if function == "COUNT" and self.take_if("*"):
            return
        distinct = aggregate and self.take_if("DISTINCT")
        count = self.expressions() if self.peek() != ")" else 0
        if count < fewest or most is not None and count > most or distinct and count != 1:
            raise Unusual

    def window(self, function: str) -> None:
        """OVER ([PARTITION BY ...] [ORDER BY x [ASC|DESC], ...]): no frame (left to the parser)."""
        if function != "ROW_NUMBER" and not _FUNCTIONS.get(function, (0, 0, False))[2]:
            raise Unusual
        self.take("(")
        if self.take_if("PARTITION", "BY"):
            self.expressions()
        if self.take_if("ORDER", "BY"):
            while True:
                self.disjunction()
                if not self.take_if("ASC"):
                    self.take_if("DESC")
                if not self.take_if(","):
                    break
        self.take(")")
        self.reason("ROW_NUMBER deduplication / top-n" if function == "ROW_NUMBER" else f"OVER window ({function})")

    def type_name(self) -> None:
        if self.peek() not in _TYPES:
            raise Unusual
        self.index += 1
        if self.take_if("("):
            self.next("number")
            if self.take_if(","):
                self.next("number")
            self.take(")")


def read_plain_dml(text: str) -> DmlInfo | None:
    """The analysis of a DML file of the usual shape (state reasons maybe in another order than the parser's);
    None for anything else."""
    if "/*" in text:  # a comment block or a hint: the parser's
        return None
    try:
        dml = _Dml(text)
        written = dml.statement()
    except (Unusual, IndexError):
        return None
    read = {name for name, qualified in dml.tables if qualified or name not in dml.ctes}
    return DmlInfo(tables_written=[written], tables_read=sorted(read),
                   state_form=StateForm.STATEFUL if dml.reasons else StateForm.STATELESS,
                   state_reasons=dml.reasons, joins=dml.joins)

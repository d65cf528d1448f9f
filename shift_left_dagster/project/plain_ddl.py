"""The usual CREATE TABLE read without the SQL parser: a cold scan's DDL files at a tenth of the cost.

shift_left writes every table's DDL in one shape: columns (a name, a type, maybe NOT NULL, COMMENT, METADATA),
a PRIMARY KEY ... NOT ENFORCED, DISTRIBUTED BY ... INTO n BUCKETS and WITH ('key' = 'value', ...). A file
of exactly that shape is read here from its words (one regular expression) into the same analysis, and the
same normalised SQL, that the parser gives (tests/unit/test_plain_ddl.py compares both on every DDL the
project has and on variants). Anything else, or anything unusual inside it (a computed column, a
WATERMARK, a hint, an escaped quote), returns None: the parser reads it, and says what is wrong with a
broken file. Each distinct column type is written by the parser itself, once per process.
"""

from __future__ import annotations

import re
from functools import lru_cache

from shift_left_dagster.project.dialect import Flink, FlinkParser
from shift_left_dagster.project.facts import Column, DdlInfo
from shift_left_dagster.project.parsing import FlinkSqlError, parse_one_statement, to_flink_sql

# One alternative per kind of word; whitespace and `--` comments are skipped; any other character (a `/*`
# comment or hint, a dot, a double quote, a backslash or quote inside a string, ...) stops the scan.
_WORDS = re.compile(r"""
    (?:\s++|--[^\n]*+)*+                   # what the normalised SQL drops (possessive: never half a comment)
    (?:
        (?P<word>[A-Za-z_][A-Za-z0-9_]*+)
      | `(?P<quoted>[^`\n\\]+)`
      | '(?P<string>[^'\n\\]*)'(?!')
      | (?P<number>0|[1-9][0-9]*)(?![A-Za-z0-9_])
      | (?P<mark>[(),=;<>])
    )""", re.VERBOSE)
_TRAILER = re.compile(r"(?:\s++|--[^\n]*+)*+")
# a bare name that is a keyword, or starts a constraint where a column may start, may parse as something else
_KEYWORDS = frozenset({*Flink.Tokenizer.KEYWORDS, *FlinkParser.SCHEMA_UNNAMED_CONSTRAINTS,
                       *FlinkParser.CONSTRAINT_PARSERS})
_CONSTRAINTS = frozenset({"NOT", "COMMENT", "METADATA"})
_COLUMN_END = frozenset({",", ")", *_CONSTRAINTS})


class Unusual(Exception):
    """Not the usual shape: the parser reads the file instead."""


class Words:
    """The file's words as (kind, text, start, end), read one by one; `pattern` says what a word is (each
    alternative a named group: `word`, `quoted`, `string`, `number`, `mark`)."""

    def __init__(self, text: str, pattern: re.Pattern[str] = _WORDS):
        self.text = text
        self.items: list[tuple[str, str, int, int]] = []
        position = 0
        for match in pattern.finditer(text):  # each word where the last one ended; a gap stops the scan
            if match.start() != position:
                break
            kind = match.lastgroup or ""
            position = match.end()
            self.items.append((kind, match[kind], match.start(kind), position))
        if _TRAILER.match(text, position).end() != len(text):  # type: ignore[union-attr]
            raise Unusual
        # each word as `peek` and `take_if` compare it, once (they run ~40 times a file), then "" past the end
        self.keys = [text.upper() if kind in ("word", "mark") else "" for kind, text, _, _ in self.items]
        self.keys.append("")
        self.index = 0

    def peek(self) -> str:
        """The next word, upper-cased when it is a bare word or a mark ('' at the end or for another kind)."""
        return self.keys[self.index]  # never past the "" at the end: only a word taken moves the index

    def take(self, *expected: str) -> None:
        for word in expected:
            if self.peek() != word:
                raise Unusual
            self.index += 1

    def take_if(self, *expected: str) -> bool:
        index = self.index
        if self.keys[index] != expected[0] or len(expected) > 1 and tuple(
                self.keys[index : index + len(expected)]) != expected:  # most calls stop at the first word
            return False
        self.index += len(expected)
        return True

    def next(self, kind: str) -> str:
        if self.index >= len(self.items) or self.items[self.index][0] != kind:
            raise Unusual
        self.index += 1
        return self.items[self.index - 1][1]

    def name(self) -> tuple[str, str]:
        """A table or column name: (name, as written in the normalised SQL)."""
        if self.index < len(self.items) and self.items[self.index][0] == "quoted":
            quoted = self.next("quoted")
            return quoted, f"`{quoted}`"
        bare = self.next("word")
        if bare.upper() in _KEYWORDS:
            raise Unusual
        return bare, bare

    def names(self) -> tuple[list[str], list[str]]:
        """`(a, b, ...)`: the names, and as written."""
        self.take("(")
        found = [self.name()]
        while self.take_if(","):
            found.append(self.name())
        self.take(")")
        return [n for n, _ in found], [w for _, w in found]

    def type_text(self) -> str:
        """A column type as written: a word, then anything in (...) or <...>, up to the column's end."""
        start = self.items[self.index][2] if self.index < len(self.items) else len(self.text)
        self.next("word")
        depth = 0
        while self.index < len(self.items):
            word = self.peek()
            if depth == 0 and word in _COLUMN_END:
                break
            if self.items[self.index][0] == "string" or word == ";":
                raise Unusual
            depth += 1 if word in ("(", "<") else -1 if word in (")", ">") else 0
            if depth < 0:
                raise Unusual
            self.index += 1
        if depth != 0:
            raise Unusual
        return self.text[start : self.items[self.index - 1][3]]

    @property
    def done(self) -> bool:
        return self.index == len(self.items)


def read_plain_ddl(text: str) -> tuple[DdlInfo, str] | None:
    """(the analysis, the normalised SQL) of a DDL file of the usual shape; None for anything else."""
    try:
        return _read(Words(text))
    except Unusual:
        return None


def _read(words: Words) -> tuple[DdlInfo, str]:
    words.take("CREATE", "TABLE")
    exists = words.take_if("IF", "NOT", "EXISTS")
    table, table_sql = words.name()
    words.take("(")
    columns: list[Column] = []
    parts: list[str] = []
    primary_key: list[str] = []
    while True:
        if words.take_if("PRIMARY", "KEY"):
            if primary_key:
                raise Unusual
            primary_key, written = words.names()
            words.take("NOT", "ENFORCED")
            parts.append(f"PRIMARY KEY ({', '.join(written)}) NOT ENFORCED")
        else:
            column, part = _column(words)
            columns.append(column)
            parts.append(part)
        if not words.take_if(","):
            break
    words.take(")")
    distribution: list[str] = []
    buckets: int | None = None
    tail = ""
    if words.take_if("DISTRIBUTED"):
        tail += " DISTRIBUTED"
        if words.take_if("BY"):
            hashed = words.take_if("HASH")
            distribution, written = words.names()
            tail += f" BY {'HASH ' if hashed else ''}({', '.join(written)})"
        if words.take_if("INTO"):
            buckets = int(words.next("number"))
            words.take("BUCKETS")
            tail += f" INTO {buckets} BUCKETS"
        elif not distribution:
            raise Unusual
    options: dict[str, str] = {}
    if words.take_if("WITH"):
        words.take("(")
        pairs = []
        while True:
            key = words.next("string")
            words.take("=")
            value = words.next("string")
            options[key] = value
            pairs.append(f"'{key}' = '{value}'")
            if not words.take_if(","):
                break
        words.take(")")
        tail += f" WITH ({', '.join(pairs)})"
    words.take_if(";")
    if not words.done:
        raise Unusual
    info = DdlInfo(table=table, columns=columns, primary_key=primary_key,
                   changelog_mode=options.get("changelog.mode", "upsert" if primary_key else "append"),
                   distribution=distribution, buckets=buckets, options=options)
    head = f"CREATE TABLE {'IF NOT EXISTS ' if exists else ''}{table_sql} ({', '.join(parts)})"
    return info, head + tail


def _column(words: Words) -> tuple[Column, str]:
    """`name type [NOT NULL] [COMMENT 'text'] [METADATA [FROM 'key'] [VIRTUAL]]` (any order, each at most
    once): what the analysis reads of a column (analysis._column)."""
    name, written = words.name()
    kind = _type_sql(words.type_text())
    nullable, comment, metadata_key, computed = True, None, None, False
    constraints = ""
    while words.peek() in _CONSTRAINTS:
        if nullable and words.take_if("NOT", "NULL"):
            nullable = False
            constraints += " NOT NULL"
        elif comment is None and words.take_if("COMMENT"):
            comment = words.next("string")
            constraints += f" COMMENT '{comment}'"
        elif metadata_key is None and words.take_if("METADATA"):
            key = words.next("string") if words.take_if("FROM") else None
            computed = words.take_if("VIRTUAL")
            metadata_key = key or name
            source = f" FROM '{key}'" if key else ""
            constraints += f" METADATA{source}{' VIRTUAL' if computed else ''}"
        else:
            raise Unusual
    column = Column(name=name, type=kind, nullable=nullable, computed=computed, metadata_key=metadata_key,
                    comment=comment)
    return column, f"{written} {kind}{constraints}"


@lru_cache(maxsize=1024)
def _type_sql(written: str) -> str:
    """A column type as the parser writes it (DECIMAL(10,4) -> DECIMAL(10, 4)): parsed once per process."""
    try:
        create = parse_one_statement(f"CREATE TABLE t (c {written})").tree
    except FlinkSqlError:
        raise Unusual from None
    columns = create.this.expressions if create.this is not None else []
    kind = columns[0].args.get("kind") if len(columns) == 1 and not columns[0].constraints else None
    if kind is None:
        raise Unusual
    return to_flink_sql(kind, copy=False)

"""Reserved words: what Flink accepted in the corpus and the sample project is accepted; what it refused is not.

No Flink here: the corpus itself is the evidence (every case but the reserved-word ones runs on
Apache Flink 2.3), so a name this check refuses in it is a false refusal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shift_left_dagster.project.parsing import FlinkSqlError, parse_statements
from shift_left_dagster.translation.reserved import refuse_reserved_names
from tests.oracle.corpus import PROJECT, load_corpus

REFUSED_BY_FLINK = {"reserved_word_alias": "count", "reserved_word_column": "value"}
CASES = {c.name: c for c in load_corpus()}


def _statements(case_name: str) -> list[tuple[str, str]]:
    case = CASES[case_name]
    return [(t.name, t.ddl) for t in case.tables] + [("dml", case.dml)]


@pytest.mark.parametrize("case", [n for n in CASES if n not in REFUSED_BY_FLINK])
def test_what_flink_parses_is_accepted(case: str) -> None:
    for source, sql in _statements(case):
        for statement in parse_statements(sql, source):
            refuse_reserved_names(statement, source)


def test_the_sample_project_uses_no_reserved_word_unquoted() -> None:
    files = sorted((PROJECT / "pipelines").glob("**/sql-scripts/*.sql")) + sorted((PROJECT / "seeds").glob("*.sql"))
    assert files
    for path in files:
        for statement in parse_statements(Path(path).read_text(), path.name):
            refuse_reserved_names(statement, path.name)


@pytest.mark.parametrize("case", sorted(REFUSED_BY_FLINK))
def test_what_flink_refuses_is_refused_in_its_words(case: str) -> None:
    word = REFUSED_BY_FLINK[case]
    with pytest.raises(FlinkSqlError, match=f'Encountered "{word}" at line \\d+, column \\d+'):
        for source, sql in _statements(case):
            for statement in parse_statements(sql, source):
                refuse_reserved_names(statement, source)


def test_the_column_is_where_the_word_starts() -> None:
    statement = parse_statements("CREATE TABLE kv (\n  id INT,\n  value STRING\n)", "x")[0]
    with pytest.raises(FlinkSqlError, match="at line 3, column 3"):
        refuse_reserved_names(statement, "x")

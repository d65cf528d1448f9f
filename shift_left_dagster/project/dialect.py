"""A sqlglot dialect for Confluent Cloud for Apache Flink SQL.

sqlglot has no Flink dialect and its Spark reader turns most Flink DDL into
`exp.Command`. This dialect parses what Confluent teams write (DDL with
WATERMARK / METADATA / DISTRIBUTED BY, window TVFs, temporal joins, table
hints, statement sets, ...) into real ASTs, and writes them back as Flink SQL.

It needs the pure-Python sqlglot: sqlglot[c] (sqlglotc) compiles the parser
and forbids the Python subclasses a dialect is made of.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import Token, TokenType


class StatementSet(exp.Expression):
    """EXECUTE STATEMENT SET BEGIN <insert>; ... END: several INSERTs, one job."""

    arg_types = {"expressions": True}


class TableArgument(exp.Expression):
    """`TABLE t [PARTITION BY c, ...]` as a table-valued function argument (window TVFs; SESSION
    windows are per partition key)."""

    arg_types = {"this": True, "partition_by": False}


class OptionsHint(exp.Expression):
    """`/*+ OPTIONS('k'='v', ...) */` after a table name: dynamic table options."""

    arg_types = {"expressions": True}

    @property
    def options(self) -> dict[str, str]:
        return {p.name: p.text("value") for p in self.expressions}


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """`METADATA [FROM 'key'] [VIRTUAL]`: a column read from Kafka record metadata."""

    arg_types = {"this": False, "virtual": False}


class Distribution(exp.Property):
    """`DISTRIBUTED [BY [HASH](cols)] INTO n BUCKETS`: the Kafka key and partitions."""

    arg_types = {"expressions": False, "kind": False, "buckets": False}


def split_tokens(raw_tokens: list[Token]) -> list[list[Token]]:
    """Split a token stream into statements on ';', keeping a STATEMENT SET's BEGIN ... END whole.

    Working on tokens (not text) means strings and comments can never split a statement.
    """
    chunks: list[list[Token]] = [[]]
    in_set = False
    for token in raw_tokens:
        chunk = chunks[-1]
        if not in_set and token.token_type == TokenType.BEGIN:
            in_set = _is_statement_set_start(chunk + [token])
        elif in_set and token.token_type == TokenType.END:
            in_set = False
        if token.token_type == TokenType.SEMICOLON and not in_set:
            chunks.append([])
        else:
            chunk.append(token)
    return [chunk for chunk in chunks if chunk]


def _is_statement_set_start(chunk: list[Token]) -> bool:
    return (
        len(chunk) >= 4
        and chunk[0].token_type == TokenType.EXECUTE
        and chunk[1].text.upper() == "STATEMENT"
        and chunk[2].token_type == TokenType.SET
        and chunk[3].token_type == TokenType.BEGIN
    )


class FlinkParser(parser.Parser):
    ALIAS_POST_VERSION = True
    unparsed: Token | None = None  # the first token of a statement sqlglot gave up on (see _parse_as_command)
    one_statement = False  # the tokens handed to `parse` are one statement, split already (parse_statements)

    STATEMENT_PARSERS = {
        **parser.Parser.STATEMENT_PARSERS,
        TokenType.EXECUTE: lambda self: self._parse_execute(),
    }

    CONSTRAINT_PARSERS = {
        **parser.Parser.CONSTRAINT_PARSERS,
        "METADATA": lambda self: self._parse_metadata_constraint(),
        "WATERMARK": lambda self: self.expression(
            exp.WatermarkColumnConstraint(
                this=self._match(TokenType.FOR) and self._parse_column(),
                expression=self._match(TokenType.ALIAS) and self._parse_disjunction(),
            )
        ),
    }

    SCHEMA_UNNAMED_CONSTRAINTS = {*parser.Parser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}

    TABLE_ALIAS_TOKENS = parser.Parser.TABLE_ALIAS_TOKENS - {TokenType.MATCH_RECOGNIZE}

    PROPERTY_PARSERS = {
        **parser.Parser.PROPERTY_PARSERS,
        "DISTRIBUTED": lambda self: self._parse_distribution(),
    }

    def _parse(self, parse_method, raw_tokens, sql=None):  # type: ignore[override]
        """Chunk statements with `split_tokens` so a STATEMENT SET stays one statement (unless they are one
        already: splitting again cost a twentieth of a file's parse)."""
        self.reset()
        self.unparsed = None
        self.sql = sql or ""
        self._chunks = [raw_tokens] if self.one_statement and raw_tokens else split_tokens(raw_tokens) or [[]]
        return self._parse_batch_statements(parse_method=parse_method, sep_first_statement=False)

    # -- what sqlglot would accept or give up on silently: errors that name the Flink construct --

    def _parse_as_command(self, start: Token) -> exp.Command:
        """sqlglot gives up on a statement it cannot read by keeping it as opaque text (a Command, which
        `parse_statements` refuses); remember the first token it could not read, to name it."""
        self.unparsed = self.unparsed or self._curr
        return super()._parse_as_command(start)

    def _warn_unsupported(self) -> None:
        """Quiet: a Command is always reported as an error with its file and line instead."""

    def _parse_projections(self) -> tuple[list[exp.Expr], list[exp.Expr] | None]:
        keyword = self._prev
        projections, exclude = super()._parse_projections()
        # at the token where a column was due (as Flink reports it), else at the end of the statement
        if not projections:
            self.raise_error("SELECT with an empty select list: name the columns to select", self._curr or keyword)
        elif self._prev.token_type == TokenType.COMMA:
            self.raise_error("the select list ends with a comma", self._curr or self._prev)
        return projections, exclude

    def _parse_where(self, skip_where_token: bool = False) -> exp.Where | None:
        if not skip_where_token and not self._match(TokenType.WHERE):
            return None
        keyword, comments = self._prev, self._prev_comments
        condition = self._parse_disjunction()
        if condition is None:
            self.raise_error("WHERE without a condition", keyword)
        return self.expression(exp.Where(this=condition), comments=comments)

    def _parse_having(self, skip_having_token: bool = False) -> exp.Having | None:
        if not skip_having_token and not self._match(TokenType.HAVING):
            return None
        keyword, comments = self._prev, self._prev_comments
        condition = self._parse_disjunction()
        if condition is None:
            self.raise_error("HAVING without a condition", keyword)
        return self.expression(exp.Having(this=condition), comments=comments)

    def _parse_group(self, skip_group_by_token: bool = False) -> exp.Group | None:
        keyword = self._curr
        group = super()._parse_group(skip_group_by_token)
        if group is not None and not any(group.args.values()):
            self.raise_error("GROUP BY without a column", keyword)
        return group

    def _parse_join(self, skip_join_token: bool = False, parse_bracket: bool = False,
                    alias_tokens: Collection[TokenType] | None = None) -> exp.Join | None:
        join = super()._parse_join(skip_join_token, parse_bracket, alias_tokens)
        if join is not None and self._prev.token_type == TokenType.ON and join.args.get("on") is None:
            self.raise_error("JOIN ... ON without a condition", self._prev)
        return join

    def _parse_execute(self) -> exp.Expression:
        if not self._match_text_seq("STATEMENT", "SET"):
            self.raise_error("Expected EXECUTE STATEMENT SET")
        self._match(TokenType.BEGIN)
        inserts: list[exp.Expression] = []
        while self._curr and not self._match(TokenType.END):
            if self._match(TokenType.SEMICOLON):
                continue
            if not self._match(TokenType.INSERT):
                self.raise_error("Expected INSERT INTO inside STATEMENT SET")
            inserts.append(self._parse_insert())
        return self.expression(StatementSet(expressions=inserts))

    def _parse_create(self) -> exp.Create | exp.Command:
        """CREATE CATALOG [IF NOT EXISTS] name [COMMENT '...'] WITH (...), else sqlglot's CREATE."""
        if self._curr and self._curr.text.upper() == "CATALOG":
            self._advance()
            exists = self._parse_exists(not_=True)
            name = self._parse_table_parts()
            if self._match(TokenType.COMMENT):
                self._parse_string()
            properties = self._parse_properties()
            return self.expression(exp.Create(this=name, kind="CATALOG", exists=exists, properties=properties))
        return super()._parse_create()

    def _parse_create_like(self) -> exp.LikeProperty | None:
        """LIKE source [( {INCLUDING | EXCLUDING | OVERWRITING} {ALL | CONSTRAINTS | ...} ... )]."""
        table = self._parse_table_parts(schema=True)  # (not a call: `t (` opens the options)
        options: list[exp.Expression] = []
        if self._match(TokenType.L_PAREN):
            while self._match_texts(("INCLUDING", "EXCLUDING", "OVERWRITING")):
                strategy = self._prev.text.upper()
                feature = self._parse_var(any_token=True)
                if feature is None:
                    self.raise_error(f"Expected a LIKE option after {strategy}")  # raises (ErrorLevel.IMMEDIATE)
                    continue
                options.append(exp.Property(this=strategy, value=exp.var(feature.name.upper())))
            self._match_r_paren()
        return self.expression(exp.LikeProperty(this=table, expressions=options))

    def _parse_metadata_constraint(self) -> MetadataColumnConstraint:
        key = self._parse_string() if self._match(TokenType.FROM) else None
        virtual = self._match_text_seq("VIRTUAL")
        return self.expression(MetadataColumnConstraint(this=key, virtual=virtual or None))

    def _parse_distribution(self) -> Distribution:
        kind = None
        columns = None
        if self._match_text_seq("BY"):
            kind = "HASH" if self._match_text_seq("HASH") else None
            columns = self._parse_wrapped_csv(self._parse_id_var)
        buckets = None
        if self._match(TokenType.INTO):
            buckets = self._parse_number()
            if not self._match_text_seq("BUCKETS"):
                self.raise_error("Expected BUCKETS after DISTRIBUTED ... INTO n")
        return self.expression(Distribution(expressions=columns, kind=kind, buckets=buckets))

    def _parse_lambda(self, alias: bool = False) -> exp.Expr | None:
        # `TABLE t` inside a table-valued function call (TUMBLE/HOP/CUMULATE/SESSION).
        if self._curr and self._curr.token_type == TokenType.TABLE and self._next:
            if self._next.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or (
                self._next.token_type in self.ID_VAR_TOKENS
            ):
                self._advance()
                table = self._parse_table_parts()
                keys = None
                if self._match(TokenType.PARTITION_BY):  # one key, or several in parentheses
                    keys = self._parse_wrapped_csv(self._parse_column) if self._curr and \
                        self._curr.token_type == TokenType.L_PAREN else [self._parse_column()]
                return self.expression(TableArgument(this=table, partition_by=keys))
        return super()._parse_lambda(alias=alias)

    def _parse_table_parts(self, *args, **kwargs):  # type: ignore[override]
        table = super()._parse_table_parts(*args, **kwargs)
        self._table_hints = None
        if table is not None and self._match(TokenType.HINT):
            self._table_hints = [self._parse_options_hint(self._prev_comments)]
            self._prev_comments = []  # the hint is consumed: it must not reappear as a comment
            table.set("hints", self._table_hints)
        return table

    def _parse_table_hints(self) -> list[exp.Expr] | None:
        # sqlglot re-sets "hints" after the alias; hand back the hint read after the name.
        hints, self._table_hints = getattr(self, "_table_hints", None), None
        return hints

    def _parse_options_hint(self, comments: list[str] | None) -> OptionsHint:
        text = (comments or [""])[0].strip().lstrip("+").strip()
        if not text.upper().startswith("OPTIONS"):
            self.raise_error(f"Unsupported table hint /*+ {text} */: only OPTIONS(...) is supported")
        inner: exp.Expr = exp.maybe_parse(f"SELECT {text[len('OPTIONS'):]}", dialect=self.dialect)
        pairs: list[exp.Expression] = []
        values = inner.expressions if isinstance(inner, exp.Select) else []
        if len(values) == 1 and isinstance(values[0], exp.Tuple):
            values = values[0].expressions
        elif len(values) == 1 and isinstance(values[0], exp.Paren):
            values = [values[0].this]
        for item in values:
            if not isinstance(item, exp.EQ):
                self.raise_error(f"Bad OPTIONS hint entry {item.sql()}: expected 'key' = 'value'")
            pairs.append(exp.Property(this=exp.Literal.string(item.left.name), value=item.right))
        return OptionsHint(expressions=pairs)


class FlinkGenerator(generator.Generator):
    ALTER_TABLE_INCLUDE_COLUMN_KEYWORD = False  # ALTER TABLE t ADD (c STRING)

    TYPE_MAPPING = {
        **generator.Generator.TYPE_MAPPING,
        exp.DataType.Type.TEXT: "STRING",
        exp.DataType.Type.VARBINARY: "BYTES",
        exp.DataType.Type.TIMESTAMPLTZ: "TIMESTAMP_LTZ",
        exp.DataType.Type.STRUCT: "ROW",
        exp.DataType.Type.LIST: "MULTISET",
    }

    TRANSFORMS = {
        **generator.Generator.TRANSFORMS,
        StatementSet: lambda self, e: self.statementset_sql(e),
        TableArgument: lambda self, e: self.tableargument_sql(e),
        OptionsHint: lambda self, e: self.optionshint_sql(e),
        MetadataColumnConstraint: lambda self, e: self.metadatacolumnconstraint_sql(e),
        Distribution: lambda self, e: self.distribution_sql(e),
    }

    PROPERTIES_LOCATION = {
        **generator.Generator.PROPERTIES_LOCATION,
        Distribution: exp.Properties.Location.POST_SCHEMA,
        exp.LikeProperty: exp.Properties.Location.POST_EXPRESSION,  # after WITH (...), as Flink writes it
    }

    def statementset_sql(self, expression: StatementSet) -> str:
        inserts = "".join(f"{self.sql(e)};{self.sep()}" for e in expression.expressions)
        return f"EXECUTE STATEMENT SET{self.sep()}BEGIN{self.sep()}{inserts}END"

    def tableargument_sql(self, expression: TableArgument) -> str:
        keys = self.expressions(expression, key="partition_by", flat=True)
        return f"TABLE {self.sql(expression, 'this')}" + (f" PARTITION BY ({keys})" if keys else "")

    def optionshint_sql(self, expression: OptionsHint) -> str:
        pairs = ", ".join(
            f"{self.sql(p, 'this')}={self.sql(p, 'value')}" for p in expression.expressions
        )
        return f"/*+ OPTIONS({pairs}) */"

    def metadatacolumnconstraint_sql(self, expression: MetadataColumnConstraint) -> str:
        key = self.sql(expression, "this")
        return "METADATA" + (f" FROM {key}" if key else "") + (
            " VIRTUAL" if expression.args.get("virtual") else ""
        )

    def distribution_sql(self, expression: Distribution) -> str:
        columns = self.expressions(expression, flat=True)
        by = ""
        if columns:
            kind = expression.args.get("kind")
            by = f" BY {kind + ' ' if kind else ''}({columns})"
        buckets = self.sql(expression, "buckets")
        return f"DISTRIBUTED{by}" + (f" INTO {buckets} BUCKETS" if buckets else "")

    def likeproperty_sql(self, expression: exp.LikeProperty) -> str:
        options = " ".join(f"{e.name} {self.sql(e, 'value')}" for e in expression.expressions)
        return f"LIKE {self.sql(expression, 'this')}" + (f" ({options})" if options else "")

    def property_sql(self, expression: exp.Property) -> str:
        if type(expression) is exp.Property:  # WITH ('key' = 'value'): keys stay string literals
            return f"{self.sql(exp.Literal.string(expression.name))} = {self.sql(expression, 'value')}"
        return super().property_sql(expression)

    def alterset_sql(self, expression: exp.AlterSet) -> str:
        if expression.expressions and all(isinstance(e, exp.EQ) for e in expression.expressions):
            return f"SET ({self.expressions(expression, flat=True)})"
        return super().alterset_sql(expression)

    def version_sql(self, expression: exp.Version) -> str:
        return f"FOR SYSTEM_TIME AS OF {self.sql(expression, 'expression')}"

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        # Flink puts the OPTIONS hint right after the table name, before version and alias.
        hints = expression.args.get("hints")
        if not hints:
            return super().table_sql(expression, sep)
        bare = expression.copy()
        bare.set("hints", None)
        alias = bare.args.get("alias")
        version = bare.args.get("version")
        bare.set("alias", None)
        bare.set("version", None)
        text = f"{super().table_sql(bare, sep)} {' '.join(self.sql(h) for h in hints)}"
        if version:
            text += f" {self.sql(version)}"
        if alias:
            text += f"{sep}{self.sql(alias)}"
        return text


class Flink(Dialect):
    """Confluent Cloud for Apache Flink SQL."""

    NORMALIZE_FUNCTIONS = False
    ALIAS_POST_VERSION = True
    ALTER_TABLE_ADD_REQUIRED_FOR_EACH_COLUMN = False  # ALTER TABLE t ADD (c STRING, ...)

    class Tokenizer(tokens.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`"]
        STRING_ESCAPES = ["'"]  # Flink doubles a quote; a backslash is a plain character
        VAR_SINGLE_TOKENS = {"$"}  # $rowtime
        TOKENS_PRECEDING_HINT = {
            *tokens.Tokenizer.TOKENS_PRECEDING_HINT,
            TokenType.VAR,
            TokenType.IDENTIFIER,
        }
        COMMANDS = tokens.Tokenizer.COMMANDS - {TokenType.EXECUTE}  # EXECUTE STATEMENT SET
        KEYWORDS = {
            **tokens.Tokenizer.KEYWORDS,
            "MATCH_RECOGNIZE": TokenType.MATCH_RECOGNIZE,
            "ROW": TokenType.STRUCT,
            "BYTES": TokenType.VARBINARY,
            "MULTISET": TokenType.LIST,
            "STRING": TokenType.TEXT,
            "TIMESTAMP_LTZ": TokenType.TIMESTAMPLTZ,
        }
        KEYWORDS.pop("SESSION")  # the SESSION window table function, a plain name in Flink SQL

    Parser = FlinkParser
    Generator = FlinkGenerator


try:
    FlinkParser()
except TypeError as _error:  # sqlglotc compiles the parser and refuses Python subclasses
    raise ImportError(
        "shift-left-dagster needs the pure-Python sqlglot: its Flink dialect subclasses sqlglot's "
        "parser, which the compiled build (sqlglotc, from sqlglot[c]) forbids. "
        "Run: pip uninstall sqlglotc"
    ) from _error

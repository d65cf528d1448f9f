"""Every Flink SQL built-in function, with how the local service runs it on Spark.

The names are those of Flink's "System (Built-in) Functions" page (and the
Confluent Cloud additions). Each entry says one of:

- NATIVE: sqlglot parses the call into a typed expression whose Spark SQL has
  Flink's meaning (or `TYPED` below rewrites it where it has not);
- SAME: Spark has a function of that name, arguments and meaning;
- a Spark function name to call with the same arguments;
- a builder writing the Spark expression;
- UNSUPPORTED with the reason, so the statement fails naming the function.

A function that is in no entry is not a Flink built-in (a user-defined
function, or a typo): the statement fails naming it too. Nothing is left for
Spark to refuse later.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

Builder = Callable[[list[exp.Expr]], exp.Expr]


@dataclass(frozen=True)
class Fn:
    """How one Flink function runs on Spark: exactly one of the fields says it."""

    native: bool = False
    spark: str | None = None
    build: Builder | None = None
    unsupported: str | None = None


NATIVE = Fn(native=True)
SAME = Fn()


def _unsupported(reason: str) -> Fn:
    return Fn(unsupported=reason)


def _call(name: str, *args: exp.Expr) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _string(value: str) -> exp.Literal:
    return exp.Literal.string(value)


def _number(value: int) -> exp.Literal | exp.Neg:
    return exp.Literal.number(value)


def spark_template(sql: str, **args: exp.Expr) -> exp.Expr:
    """A Spark expression template whose `{name}` placeholders are replaced by argument trees."""
    tree = sqlglot.parse_one(sql.format(**{k: f"__sl_arg_{k}" for k in args}), read="spark")
    for key, value in args.items():
        for column in list(tree.find_all(exp.Column)):
            if column.name == f"__sl_arg_{key}":
                column.replace(value.copy())
    return tree


def _hash_code(args: list[exp.Expr]) -> exp.Expr:
    """Java's String.hashCode (s[0]*31^(n-1) + ... as a 32-bit int) of the value as a string."""
    return spark_template(
        "CAST(CASE WHEN {v} IS NULL THEN NULL ELSE "
        "aggregate(split(CAST({v} AS STRING), ''), CAST(0 AS BIGINT), "
        "(h, c) -> pmod(h * 31 + IF(c = '', 0, ascii(c)), 4294967296), "
        "h -> IF(h >= 2147483648, h - 4294967296, h)) END AS INT)",
        v=args[0])


def _split_index(args: list[exp.Expr]) -> exp.Expr:
    text, delimiter, index = args
    return spark_template("IF({i} < 0, NULL, try_element_at(split({s}, concat('\\\\Q', {d}, '\\\\E')), {i} + 1))",
                  s=text, d=delimiter, i=index)


def _rand_integer(args: list[exp.Expr]) -> exp.Expr:
    if len(args) == 2:
        return spark_template("CAST(floor(rand({seed}) * {n}) AS INT)", seed=args[0], n=args[1])
    return spark_template("CAST(floor(rand() * {n}) AS INT)", n=args[0])


def _element(args: list[exp.Expr]) -> exp.Expr:
    return spark_template("IF(size({a}) > 1, raise_error('ELEMENT: the array has more than one element'), "
                  "try_element_at({a}, 1))", a=args[0])


def _json_string(args: list[exp.Expr]) -> exp.Expr:
    """JSON_STRING(v): v as JSON text; NULL stays NULL (a JSON `null` is never written)."""
    return spark_template("CASE WHEN {v} IS NULL THEN NULL "
                  "ELSE regexp_extract(to_json(named_struct('v', {v})), '^\\\\{{\"v\":(.*)\\\\}}$', 1) END", v=args[0])


def _json_array(args: list[exp.Expr]) -> exp.Expr:
    """JSON_ARRAY(v, ...): Flink's default is ABSENT ON NULL (NULL elements left out); no argument is []."""
    if not args:
        return _string("[]")
    texts = {f"a{i}": _json_string([arg]) for i, arg in enumerate(args)}  # each element's JSON: types may mix
    elements = ", ".join(f"{{{name}}}" for name in texts)
    return spark_template(f"concat('[', array_join(filter(array({elements}), x -> x IS NOT NULL), ','), ']')", **texts)


def _collect(args: list[exp.Expr]) -> exp.Expr:
    """COLLECT(v): the MULTISET of the non-NULL values, held as MAP<value, count> (values.py)."""
    return spark_template("map_from_entries(transform(array_distinct(collect_list({v})), "
                  "e -> struct(e, size(filter(collect_list({v}), x -> x = e)))))", v=args[0])


def _two_arguments(name: str, args: list[exp.Expr]) -> None:
    if len(args) != 2:
        raise UnknownFunction(name, f"{name} with other than (value, path) arguments")


def _json_path(path: exp.Expr) -> exp.Expr:
    """A SQL/JSON path without its mode: 'lax $.a' and 'strict $.a' read as '$.a' (every error, the only
    thing strict changes, is NULL by Flink's default ON ERROR; Spark's get_json_object knows no modes)."""
    if isinstance(path, exp.Literal) and path.is_string:
        return _string(re.sub(r"^\s*(?i:lax|strict)\s+", "", path.name))
    return spark_template("regexp_replace({p}, '^\\\\s*(?i)(lax|strict)\\\\s+', '')", p=path)


def _json_scalar(args: list[exp.Expr]) -> exp.Expr:
    """JSON_VALUE(s, path): the scalar at path, NULL where it is an object or an array (Spark's
    get_json_object returns those as JSON text). The value is computed once (a one-element lambda)."""
    _two_arguments("JSON_VALUE", args)
    return spark_template("try_element_at(transform(array(get_json_object({s}, {p})), __sl_j -> "
                  "IF(json_array_length(__sl_j) IS NULL AND json_object_keys(__sl_j) IS NULL, __sl_j, NULL)), 1)",
                  s=args[0], p=_json_path(args[1]))


def _json_exists(args: list[exp.Expr]) -> exp.Expr:
    """JSON_EXISTS(s, path): NULL for a NULL document (Flink), FALSE where the path is absent or s no JSON."""
    _two_arguments("JSON_EXISTS", args)
    return spark_template("IF({s} IS NULL, NULL, get_json_object({s}, {p}) IS NOT NULL)", s=args[0],
                          p=_json_path(args[1]))


def _json_query(args: list[exp.Expr]) -> exp.Expr:
    """JSON_QUERY(s, path): the object or array at path (compact JSON), NULL where it is a scalar."""
    _two_arguments("JSON_QUERY", args)
    return spark_template("try_element_at(transform(array(get_json_object({s}, {p})), __sl_j -> "
                  "IF(json_array_length(__sl_j) IS NULL AND json_object_keys(__sl_j) IS NULL, NULL, __sl_j)), 1)",
                  s=args[0], p=_json_path(args[1]))


def _convert_tz(args: list[exp.Expr]) -> exp.Expr:
    text, source, target = args
    return spark_template("date_format(convert_timezone({f}, {t}, to_timestamp_ntz({s})), 'yyyy-MM-dd HH:mm:ss')",
                  s=text, f=source, t=target)


def _map_union(args: list[exp.Expr]) -> exp.Expr:
    """MAP_UNION(m1, m2, ...): later maps win on equal keys (Spark's map_concat refuses duplicates)."""
    merged = args[0]
    for other in args[1:]:
        merged = spark_template("map_concat(map_filter({a}, (k, v) -> NOT array_contains(map_keys({b}), k)), {b})",
                        a=merged, b=other)
    return merged


def _regexp_like(args: list[exp.Expr]) -> exp.Expr:
    return exp.RegexpLike(this=args[0], expression=args[1])


def _matches(pattern: str) -> Builder:
    escaped = pattern.replace("{", "{{").replace("}", "}}")  # (a str.format template)
    return lambda args: spark_template(f"coalesce({{s}} RLIKE '{escaped}', false)", s=args[0])


def _sha(bits: int) -> Builder:
    return lambda args: _call("sha2", args[0], _number(bits))


def _ignore_nulls(name: str) -> Builder:
    """Flink's FIRST_VALUE/LAST_VALUE skip NULL values."""
    return lambda args: _call(name, args[0], exp.true())


def _from_base64(args: list[exp.Expr]) -> exp.Expr:
    return exp.cast(_call("unbase64", args[0]), exp.DataType.build("STRING"))


FUNCTIONS: dict[str, Fn] = {
    # comparison and logical functions are operators (=, <>, BETWEEN, LIKE, IN, IS ...): native
    # arithmetic
    "POWER": NATIVE, "ABS": NATIVE, "SQRT": NATIVE, "LN": NATIVE, "LOG10": NATIVE, "LOG2": NATIVE,
    "LOG": NATIVE, "EXP": NATIVE, "CEIL": NATIVE, "CEILING": NATIVE, "FLOOR": NATIVE, "SIN": NATIVE,
    "SINH": NATIVE, "COS": NATIVE, "TAN": NATIVE, "TANH": NATIVE, "COT": SAME, "ASIN": NATIVE,
    "ACOS": NATIVE, "ATAN": NATIVE, "ATAN2": NATIVE, "COSH": NATIVE, "DEGREES": NATIVE, "RADIANS": NATIVE,
    "SIGN": NATIVE, "ROUND": NATIVE, "PI": NATIVE, "E": Fn(build=lambda a: _call("exp", _number(1))),
    "RAND": NATIVE, "RAND_INTEGER": Fn(build=_rand_integer), "UUID": NATIVE, "BIN": SAME, "HEX": NATIVE,
    "UNHEX": NATIVE, "TRUNCATE": NATIVE, "MOD": NATIVE,
    # string
    "CHAR_LENGTH": NATIVE, "CHARACTER_LENGTH": NATIVE, "UPPER": NATIVE, "LOWER": NATIVE,
    "POSITION": NATIVE, "TRIM": NATIVE, "LTRIM": NATIVE, "RTRIM": NATIVE, "BTRIM": SAME, "REPEAT": NATIVE,
    "REGEXP_REPLACE": NATIVE, "OVERLAY": NATIVE, "SUBSTRING": NATIVE, "REPLACE": NATIVE,
    "REGEXP_EXTRACT": NATIVE, "REGEXP_EXTRACT_ALL": NATIVE, "REGEXP_COUNT": NATIVE, "REGEXP_INSTR": NATIVE,
    "REGEXP_SUBSTR": NATIVE, "INITCAP": NATIVE, "CONCAT": NATIVE, "CONCAT_WS": NATIVE, "LPAD": NATIVE,
    "RPAD": NATIVE, "FROM_BASE64": NATIVE, "TO_BASE64": NATIVE, "ASCII": NATIVE, "CHR": NATIVE,
    "DECODE": NATIVE, "ENCODE": NATIVE, "INSTR": NATIVE, "LEFT": NATIVE, "RIGHT": NATIVE, "LOCATE": NATIVE,
    "PARSE_URL": NATIVE, "REGEXP": Fn(build=_regexp_like), "REVERSE": NATIVE,
    "SPLIT_INDEX": Fn(build=_split_index), "STR_TO_MAP": NATIVE, "SUBSTR": NATIVE, "SPLIT": NATIVE,
    "ELT": NATIVE, "PRINTF": SAME, "TRANSLATE": NATIVE, "URL_DECODE": SAME, "URL_ENCODE": SAME,
    "STARTSWITH": NATIVE, "ENDSWITH": NATIVE,
    # temporal
    "LOCALTIME": _unsupported("the TIME type"), "CURRENT_TIME": _unsupported("the TIME type"),
    "LOCALTIMESTAMP": NATIVE, "CURRENT_DATE": NATIVE, "CURRENT_TIMESTAMP": NATIVE,
    "NOW": Fn(build=lambda a: exp.CurrentTimestamp()),
    "CURRENT_ROW_TIMESTAMP": Fn(build=lambda a: exp.CurrentTimestamp()),
    "EXTRACT": NATIVE, "YEAR": NATIVE, "QUARTER": NATIVE, "MONTH": NATIVE, "WEEK": NATIVE,
    "DAYOFYEAR": NATIVE, "DAYOFMONTH": NATIVE, "DAYOFWEEK": NATIVE, "HOUR": NATIVE, "MINUTE": NATIVE,
    "SECOND": NATIVE, "DATE_FORMAT": SAME, "TIMESTAMPADD": NATIVE, "TIMESTAMPDIFF": NATIVE,
    "CONVERT_TZ": Fn(build=_convert_tz), "FROM_UNIXTIME": SAME, "UNIX_TIMESTAMP": SAME, "TO_DATE": SAME,
    "TO_TIMESTAMP_LTZ": NATIVE, "TO_TIMESTAMP": NATIVE, "CURRENT_WATERMARK": NATIVE, "PROCTIME": NATIVE,
    "SOURCE_WATERMARK": _unsupported("SOURCE_WATERMARK() (declare the watermark with an expression)"),
    "OVERLAPS": _unsupported("OVERLAPS"),
    # conditional
    "NULLIF": NATIVE, "COALESCE": NATIVE, "IF": NATIVE, "IFNULL": NATIVE,
    "IS_ALPHA": Fn(build=_matches("^\\\\p{L}+$")), "IS_DIGIT": Fn(build=_matches("^\\\\p{Nd}+$")),
    "IS_DECIMAL": Fn(build=lambda a: spark_template("coalesce(try_cast({s} AS DOUBLE) IS NOT NULL, false)", s=a[0])),
    "GREATEST": NATIVE, "LEAST": NATIVE,
    # conversion
    "CAST": NATIVE, "TRY_CAST": NATIVE, "TYPEOF": _unsupported("TYPEOF (Spark's type names are not Flink's)"),
    # collection
    "CARDINALITY": Fn(spark="size"), "ELEMENT": Fn(build=_element), "ARRAY_CONTAINS": NATIVE,
    "ARRAY_DISTINCT": NATIVE, "ARRAY_POSITION": NATIVE, "ARRAY_REMOVE": NATIVE, "ARRAY_REVERSE": NATIVE,
    "ARRAY_SLICE": NATIVE, "ARRAY_UNION": SAME, "ARRAY_CONCAT": NATIVE, "ARRAY_MAX": NATIVE,
    "ARRAY_MIN": NATIVE, "ARRAY_JOIN": NATIVE, "ARRAY_SORT": NATIVE, "ARRAY_EXCEPT": NATIVE,
    "ARRAY_INTERSECT": NATIVE, "ARRAY_APPEND": NATIVE, "ARRAY_PREPEND": NATIVE, "MAP_KEYS": NATIVE,
    "MAP_VALUES": SAME, "MAP_ENTRIES": SAME, "MAP_FROM_ARRAYS": SAME, "MAP_UNION": Fn(build=_map_union),
    # JSON
    "JSON_EXISTS": Fn(build=_json_exists),
    "JSON_STRING": Fn(build=_json_string), "JSON_VALUE": Fn(build=_json_scalar),
    "JSON_QUERY": Fn(build=_json_query), "JSON_OBJECT": NATIVE, "JSON_OBJECTAGG": NATIVE,
    "JSON_ARRAY": Fn(build=_json_array),
    "JSON_ARRAYAGG": Fn(build=lambda a: _call("to_json", _call("collect_list", a[0]))),
    "JSON_QUOTE": Fn(build=_json_string),
    "JSON_UNQUOTE": Fn(build=lambda a: spark_template("get_json_object(concat('{{\"v\":', {s}, '}}'), '$.v')", s=a[0])),
    # value construction and access
    "ROW": Fn(spark="struct"), "ARRAY": NATIVE, "MAP": NATIVE,
    # grouping
    "GROUP_ID": _unsupported("GROUP_ID()"), "GROUPING": NATIVE, "GROUPING_ID": NATIVE,
    # hash
    "MD5": NATIVE, "SHA1": NATIVE, "SHA2": NATIVE, "SHA224": Fn(build=_sha(224)), "SHA256": Fn(build=_sha(256)),
    "SHA384": Fn(build=_sha(384)), "SHA512": Fn(build=_sha(512)), "HASH_CODE": Fn(build=_hash_code),
    # aggregate and window
    "COUNT": NATIVE, "AVG": NATIVE, "SUM": NATIVE, "MAX": NATIVE, "MIN": NATIVE, "STDDEV_POP": NATIVE,
    "STDDEV_SAMP": NATIVE, "VAR_POP": NATIVE, "VAR_SAMP": NATIVE, "VARIANCE": NATIVE,
    "COLLECT": Fn(build=_collect), "RANK": NATIVE, "DENSE_RANK": NATIVE,
    "ROW_NUMBER": NATIVE, "LEAD": NATIVE, "LAG": NATIVE, "FIRST_VALUE": NATIVE, "LAST_VALUE": NATIVE,
    "LISTAGG": NATIVE, "CUME_DIST": NATIVE, "PERCENT_RANK": NATIVE, "NTILE": NATIVE, "ARRAY_AGG": NATIVE,
    "PERCENTILE": SAME,
    # catalog
    "CURRENT_DATABASE": _unsupported("CURRENT_DATABASE()"),
    # table functions and Confluent Cloud additions
    "UNNEST": NATIVE, "TUMBLE": NATIVE, "HOP": NATIVE, "CUMULATE": NATIVE, "SESSION": NATIVE,
    "MATCH_RECOGNIZE": _unsupported("MATCH_RECOGNIZE"),
    "ML_PREDICT": _unsupported("ML_PREDICT"), "ML_EVALUATE": _unsupported("ML_EVALUATE"),
    "VECTOR_SEARCH": _unsupported("VECTOR_SEARCH"), "AI_COMPLETE": _unsupported("AI_COMPLETE"),
    "TO_CHANGELOG": _unsupported("TO_CHANGELOG"), "FROM_CHANGELOG": _unsupported("FROM_CHANGELOG"),
}

# Anonymous calls the translator rewrites itself (their Spark form depends on their arguments).
TRANSLATOR_BUILDS = {"ROW", "PROCTIME", "CURRENT_WATERMARK", "LISTAGG",
                     "TO_TIMESTAMP_LTZ", "TO_TIMESTAMP", "TIMESTAMPADD", "DESCRIPTOR", "TABLE"}


class UnknownFunction(ValueError):
    """A call that is no Flink built-in, or one the local service can not run."""

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason = name, reason
        super().__init__(reason)


def translate_call(node: exp.Anonymous) -> exp.Expr:
    """The Spark expression for an Anonymous (untyped) Flink call whose arguments are already Spark."""
    name = node.name.upper()
    entry = FUNCTIONS.get(name)
    if entry is None:
        raise UnknownFunction(name, f"function {name}")
    if entry.unsupported:
        raise UnknownFunction(name, entry.unsupported)
    if entry.build is not None:
        return entry.build(list(node.expressions))
    if entry.spark is not None:
        return _call(entry.spark, *node.expressions)
    return node


# --- typed sqlglot expressions whose generic Spark SQL is not Flink's meaning ---------------------


def _truncate(node: exp.Trunc) -> exp.Expr:
    decimals = node.args.get("decimals") or _number(0)
    value = node.this
    return exp.If(this=exp.LT(this=value.copy(), expression=_number(0)),
                  true=_call("ceil", value.copy(), decimals.copy()), false=_call("floor", value.copy(), decimals))


def _regexp_extract(node: exp.RegexpExtract) -> exp.Expr:
    """REGEXP_EXTRACT(s, p[, group]): NULL when p does not match (Spark gives ''). Flink's third argument
    is the group (sqlglot reads it as `position`); its default is 0, the whole match."""
    group = node.args.get("group") or node.args.get("position") or _number(0)
    return spark_template("CASE WHEN {s} RLIKE {p} THEN regexp_extract({s}, {p}, {g}) END",
                  s=node.this, p=node.expression, g=group)


def _initcap(node: exp.Initcap) -> exp.Expr:
    """INITCAP(s), Flink's (Calcite's) rule: a word is a run of ASCII letters and digits; its first
    letter is upper-cased, the others lower-cased; every other character is left as it is."""
    return spark_template(
        "array_join(transform(split({s}, ''), (c, i) -> CASE "
        "WHEN i > 0 AND element_at(split({s}, ''), i) RLIKE '^[A-Za-z0-9]$' "
        "THEN IF(c RLIKE '^[A-Z]$', lower(c), c) "
        "ELSE IF(c RLIKE '^[a-z]$', upper(c), c) END), '')", s=node.this)


def _extreme(name: str) -> Callable[[exp.Expr], exp.Expr]:
    """GREATEST/LEAST: NULL when any argument is NULL (Spark's skip NULLs)."""
    def build(node: exp.Expr) -> exp.Expr:
        args = [node.this, *node.expressions]
        any_null = exp.or_(*[exp.Is(this=a.copy(), expression=exp.Null()) for a in args])
        return exp.If(this=any_null, true=exp.Null(), false=_call(name, *args))
    return build


def _overlay(node: exp.Overlay) -> exp.Expr:
    """OVERLAY from past the end of the string leaves the string as it is in Flink (Spark appends)."""
    beyond = exp.GT(this=node.args["from_"].copy(), expression=exp.Length(this=node.this.copy()))
    return exp.If(this=beyond, true=node.this.copy(), false=node.copy())


def _array_slice(node: exp.ArraySlice) -> exp.Expr:
    """ARRAY_SLICE(a, start[, end]): inclusive 1-based bounds; Spark's slice takes a length."""
    start = node.args.get("start") or _number(1)
    end = node.args.get("end")
    if end is None:
        return spark_template("slice({a}, {s}, greatest(size({a}) - {s} + 1, 0))", a=node.this, s=start)
    return spark_template("slice({a}, {s}, greatest({e} - {s} + 1, 0))", a=node.this, s=start, e=end)


def _array_sort(node: exp.ArraySort) -> exp.Expr:
    ascending = node.expression if node.expression is not None else exp.true()
    return _call("sort_array", node.this, ascending)


def _concat_ws(node: exp.ConcatWs) -> exp.Expr:
    return _call("concat_ws", *node.expressions)  # Flink skips NULL arguments, as Spark does


def _decode(node: exp.DecodeCase) -> exp.Expr:
    args = node.expressions
    if len(args) == 2:
        return _call("decode", *args)
    raise UnknownFunction("DECODE", "DECODE with other than (binary, charset) arguments")


def _json_object(node: exp.JSONObject) -> exp.Expr:
    """JSON_OBJECT(KEY k VALUE v, ...) -> to_json(named_struct(...)); ABSENT ON NULL drops NULLs.
    Flink writes the keys in sorted order (literal keys are sorted here)."""
    items = list(node.expressions)
    if all(isinstance(i.this, exp.Literal) for i in items):
        items.sort(key=lambda i: i.this.name)
    pairs: list[exp.Expr] = []
    for item in items:
        pairs += [item.this, item.expression]
    if not pairs:
        return _string("{}")
    built = _call("to_json", _call("named_struct", *pairs))
    if node.args.get("null_handling") and "ABSENT" in str(node.args["null_handling"]).upper():
        return built
    return _call("to_json", _call("named_struct", *pairs), _call("map", _string("ignoreNullFields"),
                                                                  _string("false")))


def _json_object_agg(node: exp.JSONObjectAgg) -> exp.Expr:
    item = node.expressions[0]
    return _call("to_json", _call("map_from_entries", _call("collect_list", _call("struct", item.this,
                                                                                  item.expression))))


def _first_last(name: str) -> Callable[[exp.Expr], exp.Expr]:
    return lambda node: _call(name, node.this, exp.true())


def _array_add(name: str) -> Callable[[exp.Expr], exp.Expr]:
    def build(node: exp.Expr) -> exp.Expr:
        array = node.this
        if isinstance(array, exp.Coalesce):  # sqlglot's own NULL guard: Flink returns NULL for a NULL array
            array = array.this
        return _call(name, array, node.expression)
    return build


TYPED: dict[type[exp.Expr], Callable[[Any], exp.Expr]] = {  # each takes its own node type
    exp.Trunc: _truncate,
    exp.RegexpExtract: _regexp_extract,
    exp.ArraySlice: _array_slice,
    exp.ArraySort: _array_sort,
    exp.ConcatWs: _concat_ws,
    exp.DecodeCase: _decode,
    exp.JSONObject: _json_object,
    exp.JSONObjectAgg: _json_object_agg,
    exp.FirstValue: _first_last("first_value"),
    exp.LastValue: _first_last("last_value"),
    exp.ArrayAppend: _array_add("array_append"),
    exp.ArrayPrepend: _array_add("array_prepend"),
    exp.FromBase64: lambda node: _from_base64([node.this]),
    exp.Week: lambda node: _call("weekofyear", node.this),
    exp.Initcap: _initcap,
    exp.Overlay: _overlay,
    exp.Greatest: _extreme("greatest"),
    exp.Least: _extreme("least"),
}

UNSUPPORTED_TYPED: dict[type[exp.Expr], str] = {
    exp.CurrentTime: "CURRENT_TIME (the TIME type)",
    exp.Overlaps: "OVERLAPS",
    exp.Typeof: "TYPEOF (Spark's type names are not Flink's)",
    exp.SimilarTo: "SIMILAR TO",
    exp.CurrentDatabase: "CURRENT_DATABASE()",
}


def translate_typed(node: exp.Expr) -> exp.Expr:
    """A typed node rewritten where Spark's meaning differs from Flink's (else the node itself)."""
    reason = UNSUPPORTED_TYPED.get(type(node))
    if reason:
        raise UnknownFunction(type(node).__name__.upper(), reason)
    rewrite = TYPED.get(type(node))
    return rewrite(node) if rewrite else node

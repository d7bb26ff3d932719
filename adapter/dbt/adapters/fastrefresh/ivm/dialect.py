"""The SQL dialect the planner reads a model's query in and writes every statement in:
sqlglot's Spark dialect, without the rewrites of Spark functions into others that do not
compute the same values.

The planner reads the query into sqlglot's tree and writes the complete build, each
delta and each check from that tree, so a function sqlglot reads as a general expression
and writes back as another Spark function is what the view computes. For most that is the
same function under another name (``nvl`` as ``COALESCE``, ``instr`` as ``LOCATE``).
For these it is not (Spark 3.5, each checked against the query run by Spark):

- ``log10(x)`` and ``log2(x)`` are written ``LOG(10, x)``, ``LOG(2, x)``: ln(x)/ln(10),
  so ``floor(log10(1000))`` was 2;
- ``percentile_cont(p) WITHIN GROUP (ORDER BY x)`` (and ``percentile_disc``) is written
  ``PERCENTILE_APPROX(x, p)``, an approximation, and a ``DESC`` order is dropped;
- ``to_char(x, fmt)`` is written ``CAST(x AS STRING)``: the format is dropped;
- ``to_date(s, fmt)`` and ``to_timestamp(s, fmt)`` with Spark's default format are
  written without it: a cast, which parses other strings than the format does;
- ``array_size(a)`` is written ``SIZE(a)``, -1 for a NULL array where ``array_size``
  gives NULL;
- ``unix_date(d)`` is written as a ``DATEDIFF``, a BIGINT where ``unix_date`` is an INT;
- ``named_struct('Key', v)`` is written ``STRUCT(v AS Key)``, whose field name the
  planner's identifier normalization then lowercases;
- ``trunc(d, fmt)`` and ``date_trunc(fmt, d)`` with a column as the format are written
  with the column's name as a literal format;
- ``ltrim``/``rtrim``/``btrim`` of two arguments, ``timestampadd``/``dateadd``/
  ``date_add``/``timestampdiff``/``datediff`` of a unit, whose argument order sqlglot
  reads as another dialect's.

Each is kept as the call it is (an ``exp.Anonymous``: deterministic, not an aggregate,
written as read). ``tests/unit/ivm/test_dialect.py`` holds each to its text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.generators.spark import SparkGenerator
from sqlglot.parsers.spark import SparkParser

# Functions written back as read (upper case, as Spark's function names are matched).
VERBATIM = (
    "LOG10", "LOG2", "TO_CHAR", "TO_VARCHAR", "TO_DATE", "TO_TIMESTAMP", "ARRAY_SIZE",
    "UNIX_DATE", "NAMED_STRUCT", "TRUNC", "DATE_TRUNC", "LTRIM", "RTRIM", "BTRIM",
    "TIMESTAMPADD", "DATEADD", "DATE_ADD", "TIMESTAMPDIFF", "DATEDIFF", "DATE_DIFF",
)  # fmt: skip


def _verbatim(name: str) -> Callable[[Sequence[exp.Expression]], exp.Expression]:
    return lambda args: exp.Anonymous(this=name, expressions=list(args))


class FastRefreshSpark(Spark):
    """Spark's dialect, with the functions of ``VERBATIM`` and percentiles ``WITHIN
    GROUP`` written as they were read."""

    class Parser(SparkParser):
        FUNCTIONS = {**SparkParser.FUNCTIONS, **{n: _verbatim(n) for n in VERBATIM}}

    class Generator(SparkGenerator):
        # Spark 3.4+ runs percentile_cont/percentile_disc WITHIN GROUP as written.
        TRANSFORMS = {
            k: v for k, v in Spark.Generator.TRANSFORMS.items() if k is not exp.WithinGroup
        }


DIALECT = "fastrefreshspark"

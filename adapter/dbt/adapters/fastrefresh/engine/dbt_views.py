"""dbt's ``view`` models on this adapter (the materialization in the adapter's macros).

Two things differ from dbt-spark's view materialization:

- An existing view is dropped before it is created again. Behind Iceberg's
  ``SparkSessionCatalog`` on a Hive metastore (the embedded default) views are Iceberg
  views, and Iceberg 1.10's ``CREATE OR REPLACE VIEW`` of one takes the new columns and
  properties but leaves the old query in the metastore, which Spark reads
  (apache/iceberg#15490): a view model whose SQL changed went on answering with its old
  SQL (or failed with INCOMPATIBLE_VIEW_SCHEMA_CHANGE when its columns changed too). On a
  shared catalog (Iceberg's ``SparkCatalog``) the replacement is right, and atomic, so
  there the view is replaced in place.
- A model configured ``fast_refresh_reuse_view: true`` (the package's registry models) keeps
  its view when the statement that would create it is the one that created it: the view
  carries a fingerprint of that statement and of this release as a property, and one
  metastore read replaces a ``CREATE VIEW`` (0.2-0.6 s each, five on every ``dbt run``).
"""

from __future__ import annotations

import hashlib

from dbt.adapters.fastrefresh.__version__ import version
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.sqltext import TableName, properties

DEFINITION_PROPERTY = "fast_refresh.view-definition"


def definition_fingerprint(create_sql: str) -> str:
    """The fingerprint of a view model's ``CREATE VIEW`` statement (its name, column list,
    comments and query), in this release of dbt-fastrefresh: a registry model's columns
    follow the registry of the release that created it, so a new release creates it again.
    Leading and trailing whitespace (Jinja's) is not part of it."""
    text = f"dbt-fastrefresh {version}\n{create_sql.strip()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def unchanged(env: Env, view: TableName, create_sql: str) -> bool:
    """Whether the existing view ``view`` was created by ``create_sql`` in this release."""
    return env.tables.view_property(view, DEFINITION_PROPERTY) == definition_fingerprint(create_sql)


def mark(env: Env, view: TableName, create_sql: str) -> None:
    """Record on ``view``, just created by ``create_sql``, what created it. A crash before
    this leaves a view without the property, which the next run creates again."""
    listed = properties({DEFINITION_PROPERTY: definition_fingerprint(create_sql)})
    env.sql.execute(f"ALTER VIEW {view.sql} SET TBLPROPERTIES ({listed})")

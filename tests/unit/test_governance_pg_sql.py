"""How governance SQL, written once for SQLite and PostgreSQL, is rewritten for PostgreSQL.

The PostgreSQL backend names its schema in every statement instead of setting a session
``search_path`` (which PgBouncer in transaction mode would leave on a pooled server session,
tests/integration/test_pgbouncer.py), so a table name the rewrite misses would fail there
with "relation does not exist" and one it rewrites wrongly would break a statement.
"""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL governance backend needs psycopg "
                    "(the postgres extra)")

from memorywire.governance.pg_backend import SCHEMA, TABLES, _pg


def test_every_table_of_the_schema_is_known() -> None:
    want = {"audit_log", "audit_checkpoints", "approvals", "data_keys",
            "governance_settings", "revision_texts"}
    assert want == TABLES


@pytest.mark.parametrize(("sql", "want"), [
    ("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1",
     f"SELECT seq, hash FROM {SCHEMA}.audit_log ORDER BY seq DESC LIMIT 1"),
    # a column qualified by its table: schema.table.column is valid PostgreSQL
    ("SELECT seq FROM audit_log WHERE (audit_log.memory_ids)::jsonb @> jsonb_build_array(?)",
     f"SELECT seq FROM {SCHEMA}.audit_log WHERE ({SCHEMA}.audit_log.memory_ids)::jsonb"
     " @> jsonb_build_array(%s)"),
    ("UPDATE approvals SET status = ? WHERE id = ?",
     f"UPDATE {SCHEMA}.approvals SET status = %s WHERE id = %s"),
    ("INSERT INTO audit_checkpoints(seq) VALUES (?) ON CONFLICT(seq) DO UPDATE"
     " SET hash = excluded.hash",
     f"INSERT INTO {SCHEMA}.audit_checkpoints(seq) VALUES (%s) ON CONFLICT(seq) DO UPDATE"
     " SET hash = excluded.hash"),
    # already qualified, longer names (indexes, columns) and other schemas stay as written
    (f"SELECT 1 FROM {SCHEMA}.data_keys", f"SELECT 1 FROM {SCHEMA}.data_keys"),
    ("SELECT 1 FROM pg_tables WHERE tablename = 'x' AND approvals_status IS NULL",
     "SELECT 1 FROM pg_tables WHERE tablename = 'x' AND approvals_status IS NULL"),
    ("SELECT 1 FROM other.revision_texts", "SELECT 1 FROM other.revision_texts"),
])
def test_bare_table_names_are_qualified(sql: str, want: str) -> None:
    assert _pg(sql) == want

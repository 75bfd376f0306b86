"""No id is handed out twice: SQLite's id columns become AUTOINCREMENT.

A plain ``INTEGER PRIMARY KEY`` takes the largest id in the table plus one, so deleting
the newest row gave its id to the next row, whoever made it: a deleted mailbox's bounces
then counted against another user's new mailbox, and a late bounce to a deleted address
against another user's address. AUTOINCREMENT keeps the largest id ever used in
``sqlite_sequence``. PostgreSQL's ids come from sequences, which never go back: nothing
changes there.

SQLite cannot change a column's key, so each table with a surrogate id is made anew from
its own CREATE statement, rows, indexes and triggers kept. Foreign keys are on and cannot
be turned off inside the migration's transaction, and dropping a table deletes the rows
that refer to it: the rows are copied aside, the tables that refer to these are made
anew too (unchanged), and every table is dropped after the tables that refer to it. A
row copied back whose parent row is gone (left by a connection without foreign keys)
stays out, as the cascade would have taken it. Each sequence starts above every id
still held anywhere (``bounces.mailbox_id``) and, for addresses, at least at the number
of tombstones, which bounds every address id ever handed out (each address wrote one
when it was made).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

import re
from collections.abc import Callable, Sequence

from alembic import op
from sqlalchemy.engine import Connection

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Parents before children: the order the rows go back in.
REBUILT = (
    "users",
    "api_keys",
    "addresses",
    "subdomains",
    "custom_domains",
    "mailboxes",
    "web_sessions",
    "reverse_aliases",
    "bounces",
)
# The largest id each table may have handed out, beyond its own rows.
HELD_ELSEWHERE = {
    "addresses": "SELECT count(*) FROM tombstones",
    "mailboxes": "SELECT max(mailbox_id) FROM bounces",
}
# The id is each table's first column.
PLAIN_ID = re.compile(r"\(\s*id INTEGER NOT NULL,")
AUTOINCREMENT_ID = "id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,"


def _to_autoincrement(name: str, create: str) -> str:
    made, found = PLAIN_ID.subn(f"(\n\t{AUTOINCREMENT_ID}", create, count=1)
    made, keys = re.subn(rf",\s*CONSTRAINT pk_{name} PRIMARY KEY \(id\)", "", made)
    return _checked(name, made, found + keys == 2)


def _to_plain(name: str, create: str) -> str:
    made = create.replace(AUTOINCREMENT_ID, "id INTEGER NOT NULL,", 1)
    body = made.rstrip().removesuffix(")").rstrip()
    return _checked(name, f"{body}, \n\tCONSTRAINT pk_{name} PRIMARY KEY (id)\n)", made != create)


def _checked(name: str, create: str, changed: bool) -> str:
    """Refuse, rather than rebuild a table unchanged, one not made by these migrations."""
    if not changed:
        raise RuntimeError(f"table {name} is not as maskmail's migrations made it")
    return create


def _kept_rows(bind: Connection, name: str) -> str:
    """The copied rows of ``name`` whose parent rows came back: a row left pointing at a
    deleted row (foreign keys were off on some connection) goes, as the cascade would
    have taken it."""
    wheres = [
        f"(kept.{column} IS NULL OR EXISTS "  # noqa: S608
        f"(SELECT 1 FROM {parent} p WHERE p.{key} = kept.{column}))"
        for _, _, parent, column, key, *_ in bind.exec_driver_sql(
            f"PRAGMA foreign_key_list('{name}')"
        )
    ]
    where = " AND ".join(wheres) or "1"
    return f"INSERT INTO {name} SELECT * FROM kept_{name} AS kept WHERE {where}"  # noqa: S608


def _rebuild_sqlite(edit: Callable[[str, str], str]) -> None:
    """Make every table of REBUILT anew from its CREATE statement as ``edit`` changes it,
    and every table that refers to one of them anew as it was, with their rows, indexes
    and triggers. Children are dropped before their parents, so no drop cascades."""
    bind = op.get_bind()

    def column(sql: str, at: int = 0) -> list[str]:
        return [row[at] for row in bind.exec_driver_sql(sql)]

    others = column(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND name != 'alembic_version'"
    )
    referring = [
        name
        for name in others
        if name not in REBUILT
        and any(parent in REBUILT for parent in column(f"PRAGMA foreign_key_list('{name}')", 2))
    ]
    tables = (*REBUILT, *referring)
    names = ", ".join(f"'{name}'" for name in tables)
    creates: dict[str, str] = dict(
        bind.exec_driver_sql(
            f"SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN ({names})"  # noqa: S608
        ).all()
    )
    # Indexes and triggers go with their table; each is made again after the rows are back.
    recreated = column(
        "SELECT sql FROM sqlite_master WHERE type IN ('index', 'trigger') "  # noqa: S608
        f"AND tbl_name IN ({names}) AND sql IS NOT NULL ORDER BY type"
    )
    for name in tables:
        op.execute(f"CREATE TEMP TABLE kept_{name} AS SELECT * FROM {name}")  # noqa: S608
    for name in reversed(tables):
        op.execute(f"DROP TABLE {name}")
    for name in tables:
        op.execute(edit(name, creates[name]) if name in REBUILT else creates[name])
        op.execute(_kept_rows(bind, name))
        op.execute(f"DROP TABLE kept_{name}")
    for statement in recreated:
        op.execute(statement)
    broken = bind.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        raise RuntimeError(f"rows refer to rows that do not exist: {broken[:5]}")


def _seed_sequences() -> None:
    """Each sequence at the largest id its table may have handed out (an empty table has
    no row in sqlite_sequence yet)."""
    for name in REBUILT:
        held = [f"SELECT max(id) FROM {name}", *_held(name)]  # noqa: S608
        largest = ", ".join(f"coalesce(({query}), 0)" for query in held)
        op.execute(f"DELETE FROM sqlite_sequence WHERE name = '{name}'")  # noqa: S608
        op.execute(f"INSERT INTO sqlite_sequence (name, seq) SELECT '{name}', max({largest}, 0)")


def _held(name: str) -> tuple[str, ...]:
    query = HELD_ELSEWHERE.get(name)
    return (query,) if query else ()


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _rebuild_sqlite(_to_autoincrement)
    _seed_sequences()


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _rebuild_sqlite(_to_plain)

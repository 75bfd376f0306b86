"""Each table is written by one store module (its name, mostly), so that a table's rules
on writing live in one place: read from the source, SQLAlchemy Core's insert, update
and delete of a table and the driver's SQL text alike."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import maskmail.store
from maskmail.store.tables import metadata

STORE = Path(maskmail.store.__file__).parent
TABLES = frozenset(metadata.tables)
WRITES = frozenset({"insert", "update", "delete", "upsert"})
_SQL = re.compile(r"\b(?:INSERT\s+INTO|DELETE\s+FROM|UPDATE)\s+(\w+)", re.IGNORECASE)
# The writer of each table. address_counts has none: triggers on addresses keep it.
WRITER = {
    "users": "accounts",
    "api_keys": "accounts",
    "addresses": "addresses",
    "daily_activity": "activity",
    "bounces": "bounces",
    "tombstones": "tombstones",
    "reverse_aliases": "reverse_aliases",
    "subdomains": "subdomains",
    "subdomain_names": "subdomains",
    "first_mail_addresses": "first_mail",
    "custom_domains": "custom_domains",
    "mailboxes": "mailboxes",
    "address_mailboxes": "mailboxes",
    "mailbox_keys": "mailbox_keys",
    "verification_mails": "verification_mails",
    "web_sessions": "sessions",
    "invitations": "invitations",
    "pending_signups": "signups",
    "password_resets": "password_resets",
    "known_devices": "devices",
    "totp_secrets": "two_factor",
    "recovery_codes": "two_factor",
    "security_keys": "two_factor",
    "two_factor_pending": "two_factor",
    "audit_log": "audit_log",
}
# A write of a table named at run time: deleting an account is ON DELETE CASCADE done by
# hand over every table that leads to the user (accounts.delete_user_rows says why).
DECLARED = {("accounts", "delete(table)")}


def _modules() -> dict[str, ast.Module]:
    return {
        path.stem: ast.parse(path.read_text(), str(path))
        for path in sorted(STORE.glob("*.py"))
        if path.stem != "tables"
    }


def _table_names(tree: ast.Module) -> dict[str, str]:
    """The module's names for tables: ``from maskmail.store.tables import x [as y]``."""
    return {
        alias.asname or alias.name: alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "maskmail.store.tables"
        for alias in node.names
        if alias.name in TABLES
    }


def _written(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The tables the module writes, and the writes whose table it names at run time."""
    names = _table_names(tree)
    tables: set[str] = set()
    unnamed: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in WRITES and node.args:
                target = node.args[0]
                if isinstance(target, ast.Name) and target.id in names:
                    tables.add(names[target.id])
                else:
                    unnamed.add(ast.unparse(node.func) + f"({ast.unparse(target)})")
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in WRITES
                and isinstance(func.value, ast.Name)
                and func.value.id in names
            ):
                tables.add(names[func.value.id])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            tables |= {t.lower() for t in _SQL.findall(node.value) if t.lower() in TABLES}
    return tables, unnamed


def _writers() -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    writers: dict[str, set[str]] = defaultdict(set)
    unnamed: set[tuple[str, str]] = set()
    for name, tree in _modules().items():
        tables, runtime = _written(tree)
        for table in tables:
            writers[table].add(name)
        unnamed |= {(name, write) for write in runtime}
    return writers, unnamed


def test_each_table_is_written_by_its_one_module() -> None:
    writers, unnamed = _writers()
    assert {table: sorted(found) for table, found in writers.items()} == {
        table: [module] for table, module in WRITER.items()
    }
    assert unnamed == DECLARED


def test_the_reading_sees_every_kind_of_write() -> None:
    """The check above could pass by seeing nothing: each form it reads is found."""
    source = (
        "from maskmail.store.tables import users as people, bounces\n"
        "a = insert(people)\n"
        "b = 'UPDATE  bounces SET forgiven = TRUE'\n"
        "c = f'WITH t AS (DELETE FROM tombstones WHERE hash = ?) SELECT 1'\n"
        "d = people.delete()\n"
        "e = delete(somewhere)\n"
        "f = 'FOR UPDATE on PostgreSQL'\n"
    )
    tables, unnamed = _written(ast.parse(source))
    assert tables == {"users", "bounces", "tombstones"}
    assert unnamed == {"delete(somewhere)"}

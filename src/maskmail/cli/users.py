"""``maskmail user``: the users whose mail is forwarded to their real mailbox."""

from __future__ import annotations

import getpass
import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from maskmail.cli.common import Fail, done, in_transaction, plural, settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

app = typer.Typer(
    help="Users, whose mail is forwarded to their real mailbox.", no_args_is_help=True
)


@app.command("add")
def user_add(email: str) -> None:
    """Add a user whose mail forwards to EMAIL."""
    from maskmail.core.addresses import normalize_mailbox
    from maskmail.store import accounts

    mailbox = normalize_mailbox(email)
    in_transaction(settings(), lambda conn: accounts.add_user(conn, mailbox))
    done(f"added the user {mailbox}")


def _read_password() -> str:
    """One line from standard input when it is not a terminal; else asked twice."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("New password: ")
    if getpass.getpass("Again: ") != first:
        raise Fail("the two passwords differ")
    return first


@app.command("password")
def user_password(email: str) -> None:
    """Set EMAIL's dashboard password (from stdin when it is not a terminal); this signs
    out every session of the user."""
    from maskmail.core import passwords
    from maskmail.core.addresses import normalize_mailbox
    from maskmail.services.accounts import set_password
    from maskmail.store import accounts

    mailbox = normalize_mailbox(email)
    # Checked before the database is opened, so that a weak password costs no connection.
    password = passwords.check(_read_password())

    async def work(conn: AsyncConnection) -> None:
        user_id = await accounts.user_id_for_email(conn, mailbox)
        await set_password(conn, user_id, password)

    in_transaction(settings(), work)
    done(f"set the password of {mailbox} and signed out their sessions")


@app.command("show-name")
def user_show_name(
    email: str,
    show: Annotated[bool, typer.Argument(help="true to send the display name, false not to.")],
) -> None:
    """Choose whether EMAIL's display name goes out with replies (off by default)."""
    from maskmail.store import accounts

    in_transaction(settings(), lambda conn: accounts.set_show_name(conn, email, show))
    done(f"replies from {email} now go out {'with' if show else 'without'} the display name")


@app.command("list")
def user_list() -> None:
    """Every user and how many addresses they have, one a line."""
    from maskmail.store.users_admin import list_users

    for user in in_transaction(settings(), list_users):
        typer.echo(f"{user.email}\t{user.addresses}")


@app.command("export")
def user_export(email: str) -> None:
    """EMAIL's addresses, counters, contacts and settings, as JSON on stdout."""
    from maskmail.store.users_admin import export_user

    data = in_transaction(settings(), lambda conn: export_user(conn, email))
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@app.command("delete")
def user_delete(email: str) -> None:
    """Remove EMAIL's user, keys and addresses; no address of theirs is ever handed out again."""
    from maskmail.store.users_admin import delete_user

    gone = in_transaction(settings(), lambda conn: delete_user(conn, email))
    done(f"deleted the user and {plural(gone, 'address', 'addresses')} (kept as tombstones)")


@app.command("admin")
def user_admin(
    email: str,
    revoke: Annotated[
        bool, typer.Option("--revoke", help="Take the admin page away from EMAIL instead.")
    ] = False,
) -> None:
    """Make EMAIL an admin of the dashboard's admin page (written to the audit log)."""
    from maskmail.services import admin

    changed = in_transaction(settings(), lambda conn: admin.set_admin(conn, email, not revoke))
    state = "no longer an admin" if revoke else "an admin"
    done(f"{email} is {state}" if changed else f"{email} was {state} already")

"""The ``maskmail`` command: run the service and manage users and keys."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings, load_settings
from maskmail.core import keys
from maskmail.core.addresses import normalize_mailbox
from maskmail.core.errors import MaskmailError
from maskmail.store import accounts
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import upgrade

T = TypeVar("T")

app = typer.Typer(
    name="maskmail",
    help="A self-hostable private email relay.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
user_app = typer.Typer(
    help="Users, whose mail is forwarded to their real mailbox.", no_args_is_help=True
)
key_app = typer.Typer(help="API keys.", no_args_is_help=True)
dkim_app = typer.Typer(help="DKIM signing of forwarded mail.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(user_app, name="user")
app.add_typer(key_app, name="key")
app.add_typer(dkim_app, name="dkim")

Host = Annotated[str, typer.Option(help="Address to listen on.")]


class Fail(Exception):
    """A failure to report as one line on stderr."""


def _in_transaction(settings: Settings, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    async def run() -> T:
        engine = create_engine(settings.resolved_database_url, pool_size=1)
        try:
            async with transaction(engine) as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    return asyncio.run(run())


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply migrations; safe to repeat."""
    upgrade(load_settings().resolved_database_url)


@user_app.command("add")
def user_add(email: str) -> None:
    """Add a user whose mail forwards to EMAIL."""
    mailbox = normalize_mailbox(email)
    _in_transaction(load_settings(), lambda conn: accounts.add_user(conn, mailbox))


@user_app.command("show-name")
def user_show_name(
    email: str,
    show: Annotated[bool, typer.Argument(help="true to send the display name, false not to.")],
) -> None:
    """Choose whether EMAIL's display name goes out with replies (off by default)."""
    _in_transaction(load_settings(), lambda conn: accounts.set_show_name(conn, email, show))


@key_app.command("create")
def key_create(email: str) -> None:
    """Print a new API key for the user with EMAIL; it is shown only this once."""
    mailbox = normalize_mailbox(email)
    key = keys.generate_key()

    async def work(conn: AsyncConnection) -> None:
        user_id = await accounts.user_id_for_email(conn, mailbox)
        await accounts.add_key(conn, user_id, keys.hash_key(key))

    _in_transaction(load_settings(), work)
    typer.echo(key)


@key_app.command("revoke")
def key_revoke(key: str) -> None:
    """Revoke KEY at once."""

    async def work(conn: AsyncConnection) -> bool:
        return await accounts.revoke_key(conn, keys.hash_key(key.strip()))

    if not _in_transaction(load_settings(), work):
        raise Fail("no live key matches that value")


@dkim_app.command("generate")
def dkim_generate(
    force: Annotated[bool, typer.Option(help="Replace an existing key.")] = False,
) -> None:
    """Make a DKIM key (MASKMAIL_DKIM_KEY_FILE, else <data dir>/dkim.key) and print its
    DNS record; forwards are signed with it from the next start."""
    from maskmail.mail.dkim import dns_record, generate_key

    settings = load_settings()
    path = settings.dkim_key_path
    if path.exists() and not force:
        raise Fail(f"{path} already exists; pass --force to replace it")
    private, public = generate_key()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.new")
    tmp.unlink(missing_ok=True)
    tmp.touch(mode=0o600)
    tmp.write_bytes(private)
    tmp.replace(path)
    typer.echo(dns_record(public, selector=settings.dkim_selector, domain=settings.domain))
    typer.echo(f"Private key written to {path}; publish the record above.", err=True)


@app.command()
def serve(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
) -> None:
    """Migrate, then serve the API only."""
    from maskmail.runner import serve_api

    settings = load_settings()
    upgrade(settings.resolved_database_url)
    serve_api(host=host, port=port, workers=workers, access_log=access_log)


@app.command()
def smtp(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="SMTP port.")] = 2525,
) -> None:
    """Migrate, then run the mail plane only."""
    from maskmail.runner import run_smtp

    settings = load_settings()
    upgrade(settings.resolved_database_url)
    asyncio.run(run_smtp(settings, host=host, port=port))


@app.command()
def up(
    host: Host = "127.0.0.1",
    api_port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    smtp_port: Annotated[int, typer.Option(help="SMTP port.")] = 2525,
    demo: Annotated[
        bool, typer.Option(help="On a database with no users, create a demo user and key.")
    ] = False,
) -> None:
    """Migrate, then serve the API and SMTP in one process."""
    from maskmail.runner import run_up

    settings = load_settings()
    upgrade(settings.resolved_database_url)
    if demo:
        _maybe_demo(settings, host, api_port)
    asyncio.run(run_up(settings, host=host, api_port=api_port, smtp_port=smtp_port))


DEMO_MAILBOX = "demo@example.com"


def _maybe_demo(settings: Settings, host: str, port: int) -> None:
    key = keys.generate_key()

    async def work(conn: AsyncConnection) -> bool:
        if await accounts.count_users(conn) > 0:
            return False
        user_id = await accounts.add_user(conn, DEMO_MAILBOX)
        await accounts.add_key(conn, user_id, keys.hash_key(key))
        return True

    if not _in_transaction(settings, work):
        return
    shown = "127.0.0.1" if host in {"0.0.0.0", "::"} else host  # noqa: S104
    if ":" in shown:
        shown = f"[{shown}]"
    base = f"http://{shown}:{port}/v3/relay/addresses"
    auth = f"-H 'Authorization: Bearer {key}'"
    typer.echo(
        f"New database: created the demo user {DEMO_MAILBOX} with this API key (shown once):\n"
        f"  {key}\n"
        "Create an address, then list them:\n"
        f"  curl -sSf -X POST {auth} {base} && echo && curl -sSf {auth} '{base}?paging=1'\n"
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: every failure is one line on stderr and a non-zero exit."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="maskmail", standalone_mode=False)
    except (MaskmailError, Fail) as exc:
        _fail(str(exc), 1)
    except ValidationError as exc:
        problems = "; ".join(
            f"MASKMAIL_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        )
        _fail(f"invalid setting: {problems}", 2)
    except typer.Abort:
        _fail("aborted", 130)
    except Exception as exc:
        # Usage errors (Typer's vendored click) carry their own message and exit code.
        message = getattr(exc, "format_message", None)
        if message is None:
            raise
        _fail(str(message()), int(getattr(exc, "exit_code", 2)))
    sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, code: int) -> None:
    typer.echo(f"maskmail: {message}", err=True)
    sys.exit(code)

"""The ``maskmail`` command: run the service and manage users and keys."""

from __future__ import annotations

import asyncio
import getpass
import json
import secrets
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail import __version__, logs
from maskmail.config import Settings, load_settings
from maskmail.core import keys, passwords
from maskmail.core.addresses import normalize_mailbox
from maskmail.core.errors import MaskmailError
from maskmail.startup import StartupError, check_data_dir, explain, prepare_database
from maskmail.store import accounts, sessions
from maskmail.store.engine import create_engine, transaction
from maskmail.store.sqlite_backup import BackupError

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
domains_app = typer.Typer(help="Users' custom domains.", no_args_is_help=True)
app.add_typer(domains_app, name="domains")

Host = Annotated[str, typer.Option(help="Address to listen on.")]
PolicyPort = Annotated[
    int | None,
    typer.Option(
        min=1, max=65535, help="Serve Postfix's policy service here (MASKMAIL_POLICY_PORT)."
    ),
]


def _with_policy_port(settings: Settings, port: int | None) -> Settings:
    return settings if port is None else settings.model_copy(update={"policy_port": port})


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"maskmail {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """A self-hostable private email relay."""
    # Every command logs in the configured format and level (MASKMAIL_LOG_*).
    settings = load_settings()
    logs.configure(level=settings.log_level, fmt=settings.log_format, relay_domain=settings.domain)


class Fail(Exception):
    """A failure to report as one line on stderr."""


def _in_transaction(settings: Settings, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    async def run() -> T:
        engine = create_engine(
            settings.resolved_database_url, pool_size=1, timeout=settings.db_timeout
        )
        try:
            async with transaction(engine) as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _migrated(*, data_dir: bool) -> Settings:
    """Settings, once the data directory (when it is used) and the database are ready."""
    settings = load_settings()
    if data_dir or not settings.database_url:
        check_data_dir(settings)
    prepare_database(settings)
    return settings


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply migrations; safe to repeat."""
    _migrated(data_dir=False)


@user_app.command("add")
def user_add(email: str) -> None:
    """Add a user whose mail forwards to EMAIL."""
    mailbox = normalize_mailbox(email)
    _in_transaction(load_settings(), lambda conn: accounts.add_user(conn, mailbox))


def _read_password() -> str:
    """One line from standard input when it is not a terminal; else asked twice."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("New password: ")
    if getpass.getpass("Again: ") != first:
        raise Fail("the two passwords differ")
    return first


@user_app.command("password")
def user_password(email: str) -> None:
    """Set EMAIL's dashboard password (from stdin when it is not a terminal); this signs
    out every session of the user."""
    mailbox = normalize_mailbox(email)
    hashed = passwords.hash_password(_read_password())

    async def work(conn: AsyncConnection) -> None:
        user_id = await accounts.user_id_for_email(conn, mailbox)
        await sessions.set_password(conn, user_id, hashed)

    _in_transaction(load_settings(), work)


@user_app.command("show-name")
def user_show_name(
    email: str,
    show: Annotated[bool, typer.Argument(help="true to send the display name, false not to.")],
) -> None:
    """Choose whether EMAIL's display name goes out with replies (off by default)."""
    _in_transaction(load_settings(), lambda conn: accounts.set_show_name(conn, email, show))


@user_app.command("list")
def user_list() -> None:
    """Every user and how many addresses they have, one a line."""
    from maskmail.store.users_admin import list_users

    for user in _in_transaction(load_settings(), list_users):
        typer.echo(f"{user.email}\t{user.addresses}")


@user_app.command("export")
def user_export(email: str) -> None:
    """EMAIL's addresses, counters, contacts and settings, as JSON on stdout."""
    from maskmail.store.users_admin import export_user

    data = _in_transaction(load_settings(), lambda conn: export_user(conn, email))
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@user_app.command("delete")
def user_delete(email: str) -> None:
    """Remove EMAIL's user, keys and addresses; no address of theirs is ever handed out again."""
    from maskmail.store.users_admin import delete_user

    gone = _in_transaction(load_settings(), lambda conn: delete_user(conn, email))
    typer.echo(f"deleted the user and {gone} addresses (kept as tombstones)", err=True)


@app.command()
def backup(path: Path) -> None:
    """Write a consistent copy of the SQLite database to PATH, while it serves."""
    from maskmail.store import sqlite_backup

    database = sqlite_backup.database_file(load_settings().resolved_database_url)
    sqlite_backup.backup(database, path)


@app.command()
def restore(path: Path) -> None:
    """Put the SQLite backup at PATH in place of the database (stop maskmail first)."""
    from maskmail.store import sqlite_backup

    database = sqlite_backup.database_file(load_settings().resolved_database_url)
    sqlite_backup.restore(path, database)


@key_app.command("create")
def key_create(email: str) -> None:
    """Print a new API key for the user with EMAIL; it is shown only this once."""
    mailbox = normalize_mailbox(email)

    async def work(conn: AsyncConnection) -> str:
        user_id = await accounts.user_id_for_email(conn, mailbox)
        return await accounts.create_key(conn, user_id)

    typer.echo(_in_transaction(load_settings(), work))


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


@domains_app.command("check")
def domains_check() -> None:
    """Look up every custom domain's records again (run it from a timer): a record that
    went away is marked, and the domain's owner is told once, at their default mailbox."""
    from maskmail.mail.domain_checks import check_all
    from maskmail.mail.plane import outbound_for

    settings = load_settings()

    async def run() -> list[str]:
        engine = create_engine(
            settings.resolved_database_url, pool_size=1, timeout=settings.db_timeout
        )
        outbound = outbound_for(settings)
        try:
            outcomes = await check_all(settings, engine, outbound)
        finally:
            await outbound.close()
            await engine.dispose()
        return [
            f"{o.domain}: "
            + (f"no longer passes {', '.join(o.gone)}" if o.gone else "nothing went away")
            + ("; owner warned" if o.warned else "")
            for o in outcomes
        ]

    for line in asyncio.run(run()):
        typer.echo(line)


@app.command()
def serve(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
) -> None:
    """Migrate, then serve the API only."""
    from maskmail.runner import serve_api

    _migrated(data_dir=False)
    if workers > 1:
        from maskmail.metrics import prepare_multiprocess

        prepare_multiprocess()
    serve_api(host=host, port=port, workers=workers, access_log=access_log)


@app.command()
def smtp(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="SMTP port.")] = 2525,
    policy_port: PolicyPort = None,
    health_port: Annotated[
        int | None, typer.Option(help="HTTP port for /healthz, /readyz and /metrics.")
    ] = None,
) -> None:
    """Migrate, then run the mail plane only."""
    from maskmail.runner import run_loop, run_smtp

    settings = _with_policy_port(_migrated(data_dir=True), policy_port)
    run_loop(run_smtp(settings, host=host, port=port, health_port=health_port))


@app.command()
def up(
    host: Host = "127.0.0.1",
    api_port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    smtp_port: Annotated[int, typer.Option(help="SMTP port.")] = 2525,
    policy_port: PolicyPort = None,
    demo: Annotated[
        bool, typer.Option(help="On a database with no users, create a demo user and key.")
    ] = False,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
) -> None:
    """Migrate, then serve the API and SMTP in one process."""
    from maskmail.runner import run_loop, run_up

    settings = _with_policy_port(_migrated(data_dir=True), policy_port)
    if demo:
        _maybe_demo(settings, host, api_port)
    run_loop(
        run_up(settings, host=host, api_port=api_port, smtp_port=smtp_port, access_log=access_log)
    )


DEMO_MAILBOX = "demo@example.com"


def _maybe_demo(settings: Settings, host: str, port: int) -> None:
    key = keys.generate_key()
    password = secrets.token_urlsafe(12)
    hashed = passwords.hash_password(password)

    async def work(conn: AsyncConnection) -> bool:
        if await accounts.count_users(conn) > 0:
            return False
        user_id = await accounts.add_user(conn, DEMO_MAILBOX)
        await accounts.add_key(conn, user_id, keys.hash_key(key), key[: accounts.PREFIX_LENGTH])
        await sessions.set_password(conn, user_id, hashed)
        return True

    if not _in_transaction(settings, work):
        return
    shown = "127.0.0.1" if host in {"0.0.0.0", "::"} else host  # noqa: S104
    if ":" in shown:
        shown = f"[{shown}]"
    site = f"http://{shown}:{port}"
    base = f"{site}/v3/relay/addresses"
    auth = f"-H 'Authorization: Bearer {key}'"
    typer.echo(
        f"New database: created the demo user {DEMO_MAILBOX} with this API key (shown once):\n"
        f"  {key}\n"
        "Create an address, then list them:\n"
        f"  curl -sSf -X POST {auth} {base} && echo && curl -sSf {auth} '{base}?paging=1'\n"
        f"Or open the dashboard at {site}/ and sign in as {DEMO_MAILBOX} with the password:\n"
        f"  {password}\n"
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: every failure is one line on stderr and a non-zero exit."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="maskmail", standalone_mode=False)
    except (MaskmailError, Fail, BackupError, StartupError) as exc:
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
            _fail(_explained(exc), 1)
        _fail(str(message()), int(getattr(exc, "exit_code", 2)))
    sys.exit(result if isinstance(result, int) else 0)


def _explained(exc: Exception) -> str:
    """One line for a start-up failure; anything else is a bug, shown in full."""
    try:
        explained = explain(exc, load_settings())
    except ValidationError:
        explained = None
    if explained is None:
        raise exc
    return explained


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"maskmail: {message}", err=True)
    sys.exit(code)

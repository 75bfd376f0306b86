"""The ``maskmail`` command: run the service and manage users and keys.

Each command group is a module of this package, and each command imports what it
needs when it runs, so that ``--version`` and ``--help`` start at once.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from maskmail import __version__
from maskmail.cli import backups, db, doctor, domains, invites, keys, serving, users
from maskmail.cli.common import Fail, schema_behind, settings

if TYPE_CHECKING:
    from maskmail.config import Settings

app = typer.Typer(
    name="maskmail",
    help="A self-hostable private email relay.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(db.app, name="db")
app.add_typer(users.app, name="user")
app.add_typer(keys.app, name="key")
app.add_typer(keys.dkim_app, name="dkim")
app.add_typer(domains.app, name="domains")
app.add_typer(invites.app, name="invite")
app.command()(backups.backup)
app.command()(backups.restore)
app.command()(serving.serve)
app.command()(serving.smtp)
app.command()(serving.up)
app.command()(doctor.doctor)


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
    from maskmail import logs

    # Every command logs in the configured format and level (MASKMAIL_LOG_*).
    config = settings()
    logs.configure(level=config.log_level, fmt=config.log_format, relay_domain=config.domain)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every failure is one line on stderr and a non-zero exit."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="maskmail", standalone_mode=False)
    except typer.Abort:
        _fail("aborted", 130)
    except Exception as exc:
        _fail(*_one_line(exc))
    sys.exit(result if isinstance(result, int) else 0)


def _one_line(exc: Exception) -> tuple[str, int]:
    """The line and exit status for a failure; anything unforeseen is a bug, shown in full."""
    from maskmail.core.errors import MaskmailError

    # The usual refusals first: explaining the rarer failures imports Alembic.
    if isinstance(exc, MaskmailError | Fail):
        return str(exc), 1
    # Usage errors (Typer's vendored click) carry their own message and exit code.
    message = getattr(exc, "format_message", None)
    if message is not None:
        return str(message()), int(getattr(exc, "exit_code", 2))
    from pydantic import ValidationError

    from maskmail.startup import StartupError, explain
    from maskmail.store.sqlite_backup import BackupError

    if isinstance(exc, BackupError | StartupError):
        return str(exc), 1
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"MASKMAIL_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        )
        return f"invalid setting: {problems}", 2
    try:
        config: Settings | None = settings()
    except ValidationError:
        config = None
    explained = None if config is None else (explain(exc, config) or schema_behind(exc, config))
    if explained is None:
        raise exc
    return explained, 1


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"maskmail: {message}", err=True)
    sys.exit(code)

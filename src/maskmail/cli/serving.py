"""``maskmail up``, ``serve`` and ``smtp``: migrate, then run the servers."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Annotated

import typer

from maskmail.cli.common import Host, in_transaction, migrated

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from maskmail.config import Settings

PolicyPort = Annotated[
    int | None,
    typer.Option(
        min=1, max=65535, help="Serve Postfix's policy service here (MASKMAIL_POLICY_PORT)."
    ),
]
AccessLog = Annotated[bool, typer.Option(help="Log every request.")]
DEMO_MAILBOX = "demo@example.com"


def _with_policy_port(settings: Settings, port: int | None) -> Settings:
    return settings if port is None else settings.model_copy(update={"policy_port": port})


def serve(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    access_log: AccessLog = False,
) -> None:
    """Migrate, then serve the API only."""
    from maskmail.runner import serve_api

    migrated(data_dir=False)
    if workers > 1:
        from maskmail.metrics import prepare_multiprocess

        prepare_multiprocess()
    serve_api(host=host, port=port, workers=workers, access_log=access_log)


def smtp(
    host: Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="SMTP port.")] = 2525,
    policy_port: PolicyPort = None,
    health_port: Annotated[
        int | None, typer.Option(help="HTTP port for /healthz, /readyz and /metrics.")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Processes sharing the port; 0: one per core (MASKMAIL_SMTP_WORKERS).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Migrate, then run the mail plane only."""
    settings = _with_policy_port(migrated(data_dir=True), policy_port)
    if workers is None:
        workers = settings.smtp_workers
    if workers != 1:
        from maskmail.supervisor import default_workers, run_smtp_workers

        count = workers or default_workers()
        run_smtp_workers(settings, host=host, port=port, health_port=health_port, count=count)
        return
    from maskmail.runner import run_loop, run_smtp

    run_loop(run_smtp(settings, host=host, port=port, health_port=health_port))


def up(
    host: Host = "127.0.0.1",
    api_port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    smtp_port: Annotated[int, typer.Option(help="SMTP port.")] = 2525,
    policy_port: PolicyPort = None,
    demo: Annotated[
        bool, typer.Option(help="On a database with no users, create a demo user and key.")
    ] = False,
    access_log: AccessLog = False,
) -> None:
    """Migrate, then serve the API and SMTP in one process."""
    from maskmail.runner import run_loop, run_up

    settings = _with_policy_port(migrated(data_dir=True), policy_port)
    if demo:
        _maybe_demo(settings, host, api_port)
    run_loop(
        run_up(settings, host=host, api_port=api_port, smtp_port=smtp_port, access_log=access_log)
    )


def _maybe_demo(settings: Settings, host: str, port: int) -> None:
    from maskmail.core import keys, passwords
    from maskmail.store import accounts, sessions

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

    if not in_transaction(settings, work):
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

"""``maskmail key`` and ``maskmail dkim``: API keys and the DKIM signing key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from maskmail.cli.common import Fail, done, in_transaction, settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

app = typer.Typer(help="API keys.", no_args_is_help=True)
dkim_app = typer.Typer(help="DKIM signing of forwarded mail.", no_args_is_help=True)


@app.command("create")
def key_create(
    email: str,
    name: Annotated[
        str,
        typer.Option(help="A name to tell the key apart by (at most 64 characters, one line)."),
    ] = "",
) -> None:
    """Print a new API key for the user with EMAIL; it is shown only this once."""
    from maskmail.core.addresses import normalize_mailbox
    from maskmail.services import api_keys
    from maskmail.store import accounts

    mailbox = normalize_mailbox(email)
    # Checked before the database is opened: a bad name costs no connection.
    api_keys.key_name(name)

    async def work(conn: AsyncConnection) -> str:
        user_id = await accounts.user_id_for_email(conn, mailbox)
        return await api_keys.create(conn, user_id, name)

    # The key alone on stdout, for KEY=$(maskmail key create ...).
    typer.echo(in_transaction(settings(), work))
    done(f"created an API key for {mailbox}; it is not shown again")


@app.command("revoke")
def key_revoke(key: str) -> None:
    """Revoke KEY at once."""
    from maskmail.core import keys
    from maskmail.store import accounts

    async def work(conn: AsyncConnection) -> bool:
        return await accounts.revoke_key(conn, keys.hash_key(key.strip()))

    if not in_transaction(settings(), work):
        raise Fail("no live key matches that value")
    done("revoked the key; it no longer works")


@dkim_app.command("generate")
def dkim_generate(
    force: Annotated[bool, typer.Option(help="Replace an existing key.")] = False,
) -> None:
    """Make a DKIM key (MASKMAIL_DKIM_KEY_FILE, else <data dir>/dkim.key) and print its
    DNS record; forwards are signed with it from the next start."""
    from maskmail.core.dkim_keys import dns_record, generate_key

    config = settings()
    path = config.dkim_key_path
    if path.exists() and not force:
        raise Fail(f"{path} already exists; pass --force to replace it")
    private, public = generate_key()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.new")
    tmp.unlink(missing_ok=True)
    tmp.touch(mode=0o600)
    tmp.write_bytes(private)
    tmp.replace(path)
    typer.echo(dns_record(public, selector=config.dkim_selector, domain=config.domain))
    done(f"Private key written to {path}; publish the record above.")

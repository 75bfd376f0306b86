"""``maskmail invite``: single-use sign-up links (``MASKMAIL_SIGNUP=invite``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from maskmail.cli.common import Fail, done, in_transaction, plural, settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from maskmail.core.invitations import Invitation
    from maskmail.services.invitations import NewInvitation

app = typer.Typer(help="Invitations: single-use sign-up links.", no_args_is_help=True)


@app.command("create")
def invite_create(
    expires: Annotated[
        str, typer.Option(help="How long the link works: 30m, 12h, 7d or 2w (at most 90d).")
    ] = "7d",
    email: Annotated[
        str | None,
        typer.Option(
            help="Mail the link to this address as well (not one at the relay's domains)."
        ),
    ] = None,
) -> None:
    """Print a new single-use sign-up link, alone on stdout; it is shown only this once,
    and mailed to --email when given (a refused address makes no invitation)."""
    from maskmail.core.invitations import parse_duration
    from maskmail.mail.plane import notices_for
    from maskmail.services import invitation_mail, invitations

    config = settings()
    lifetime = parse_duration(expires)

    async def work(conn: AsyncConnection) -> NewInvitation:
        if email is None:
            return await invitations.create(conn, expires_in=lifetime)
        outbound = notices_for(config)
        try:
            mailing = invitation_mail.Mailing(email, config, outbound, config.dashboard_url)
            return await invitation_mail.create_and_mail(conn, mailing, expires_in=lifetime)
        finally:
            await outbound.close()

    made = in_transaction(config, work)
    typer.echo(made.link(config.dashboard_url))
    mailed = "" if email is None else ", mailed"
    if config.signup != "invite":
        done(
            f"made invitation {made.invitation.id}{mailed}; note that MASKMAIL_SIGNUP is "
            f"{config.signup}, so it works only once that is invite"
        )
    else:
        done(f"made invitation {made.invitation.id}{mailed}, good for {expires.strip()}")


@app.command("list")
def invite_list() -> None:
    """The invitations, newest first: id, state, and when each was made and expires."""
    from maskmail.services import invitations
    from maskmail.store.clock import now

    found: list[Invitation] = in_transaction(settings(), invitations.list_invitations)
    moment = now()
    for item in found:
        typer.echo(
            f"{item.id}\t{item.state(moment)}\tmade {_when(item.created_time)}"
            f"\texpires {_when(item.expires_time)}"
        )
    done(plural(len(found), "invitation"))


@app.command("revoke")
def invite_revoke(invitation_id: int) -> None:
    """Stop the invitation INVITATION_ID from working."""
    from maskmail.core.invitations import State
    from maskmail.services import invitations
    from maskmail.store.clock import now

    async def work(conn: AsyncConnection) -> Invitation:
        return await invitations.revoke(conn, invitation_id)

    item = in_transaction(settings(), work)
    if item.state(now()) is State.USED:
        raise Fail(f"invitation {invitation_id} was used already")
    done(f"revoked invitation {invitation_id}")


def _when(seconds: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))

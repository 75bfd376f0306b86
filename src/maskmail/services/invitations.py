"""Invitations: the operator's command line and the admin page make, list and revoke
them; the sign-up form redeems one (``MASKMAIL_SIGNUP=invite``)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import invitations as rules
from maskmail.core.invitations import Invitation
from maskmail.store import invitations as store


@dataclass(frozen=True, slots=True)
class NewInvitation:
    """A made invitation and its token, which is shown this once and never stored."""

    invitation: Invitation
    token: str

    def link(self, base_url: str) -> str:
        """The sign-up link to hand out; ``base_url`` is where the dashboard is served."""
        return rules.link(base_url, self.token)


async def create(
    conn: AsyncConnection,
    *,
    expires_in: int = rules.DEFAULT_SECONDS,
    created_by: int | None = None,
) -> NewInvitation:
    """A new invitation good for ``expires_in`` seconds (see ``rules.parse_duration``);
    ``created_by`` is the admin who made it, None for the operator."""
    lifetime = rules.check_lifetime(expires_in)
    token = rules.new_token()
    invitation = await store.add(
        conn, rules.digest(token), lifetime=lifetime, created_by=created_by
    )
    return NewInvitation(invitation, token)


async def list_invitations(conn: AsyncConnection) -> list[Invitation]:
    """Every invitation, newest first; ``Invitation.state(now)`` says which still work."""
    return await store.list_invitations(conn)


async def revoke(conn: AsyncConnection, invitation_id: int) -> Invitation:
    """Stop an invitation from working (InvitationNotFound for an unknown id)."""
    return await store.revoke(conn, invitation_id)


async def is_open(conn: AsyncConnection, token: str) -> bool:
    """Whether ``token`` could be redeemed now; looking changes nothing."""
    try:
        token = rules.check_token(token)
    except rules.InvitationInvalid:
        return False
    return await store.is_open(conn, rules.digest(token))


async def redeem(conn: AsyncConnection, token: str) -> Invitation:
    """Spend the invitation ``token`` names, or InvitationInvalid (one answer for
    unknown, used, revoked and expired). Call it in the transaction that makes the
    account: if that rolls back, the invitation is not spent."""
    return await store.redeem(conn, rules.digest(rules.check_token(token)))


async def record_account(conn: AsyncConnection, invitation_id: int, user_id: int) -> None:
    """Note the account a redeemed invitation made."""
    await store.mark_used_by(conn, invitation_id, user_id)

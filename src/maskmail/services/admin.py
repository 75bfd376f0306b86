"""The admin page's workflows, and ``maskmail user admin``: who is an admin, users and
their counts, disabling and enabling a user, one user's limits, deleting a user; each
change written to the audit log in its own transaction.

Every change first locks the user it is about (``store.owner_lock``), so that two admins
acting on one user at once run one after the other: the second sees what the first did
(a deleted user is then not found, and nothing of the second is written). An admin may
not disable or delete their own account: the page would lock out the last admin, and
the operator's command line is the way to undo that.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import invitations as invitation_rules
from maskmail.core.errors import InvalidAddress, UserNotFound
from maskmail.core.invitations import Invitation
from maskmail.services import invitation_mail, invitations
from maskmail.services.invitation_mail import Mailing
from maskmail.services.invitations import NewInvitation
from maskmail.store import accounts, audit_log, sessions, user_overview, users_admin
from maskmail.store import invitations as invitation_store
from maskmail.store.accounts import UserLimits
from maskmail.store.clock import now
from maskmail.store.owner_lock import lock_owner
from maskmail.store.user_overview import UserRow

T = TypeVar("T")

PAGE_SIZE = 50
# The largest limit the page takes: beyond it a number means "no limit" in practice.
MAX_LIMIT = 1_000_000
# The actor of a change made at the command line.
OPERATOR = "operator (command line)"


@dataclass(frozen=True, slots=True)
class Actor:
    """Who acts, from where: an admin of the page (their id and email, the client's
    address), or the operator (no id, ``OPERATOR``, client ``cli``)."""

    user_id: int | None
    email: str
    client: str


CLI = Actor(None, OPERATOR, "cli")


@dataclass(frozen=True, slots=True)
class Paged(Generic[T]):
    items: Sequence[T]
    page: int
    pages: int
    total: int


def _paged(items: Sequence[T], page: int, total: int) -> Paged[T]:
    return Paged(items, page, max(1, -(-total // PAGE_SIZE)), total)


def page_number(text: object) -> int:
    """The page asked for in a query (1 for anything that is not a page number)."""
    value = text if isinstance(text, str) else ""
    return int(value) if value.isascii() and value.isdigit() and 0 < len(value) < 7 else 1


async def is_admin(conn: AsyncConnection, user_id: int) -> bool:
    return await accounts.is_admin(conn, user_id)


async def users(conn: AsyncConnection, page: int) -> Paged[UserRow]:
    """A page of users, in the order they were added, with their counts."""
    total = await accounts.count_users(conn)
    rows = await user_overview.page(conn, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    return _paged(rows, page, total)


async def user(conn: AsyncConnection, user_id: int) -> UserRow:
    """One user with their counts; UserNotFound when there is none."""
    return await user_overview.one(conn, user_id)


async def audit(conn: AsyncConnection, page: int) -> Paged[audit_log.Entry]:
    """A page of the audit log, newest first."""
    total = await audit_log.count(conn)
    rows = await audit_log.newest(conn, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    return _paged(rows, page, total)


async def _locked(conn: AsyncConnection, user_id: int) -> str:
    """The user's email, their row locked until the transaction ends."""
    if not await lock_owner(conn, user_id):
        raise UserNotFound(f"no user with id {user_id}")
    return await accounts.user_email(conn, user_id)


async def _record(
    conn: AsyncConnection,
    actor: Actor,
    action: str,
    target_id: int | None,
    target: str,
    detail: str = "",
) -> None:
    await audit_log.write(
        conn,
        actor_id=actor.user_id,
        actor=actor.email,
        action=action,
        target_id=target_id,
        target=target,
        detail=detail,
        client=actor.client,
    )


def _not_self(actor: Actor, target_id: int, doing: str) -> None:
    if actor.user_id == target_id:
        raise InvalidAddress(f"you cannot {doing} your own account", {"field": "user"})


async def set_admin(conn: AsyncConnection, email: str, admin: bool, actor: Actor = CLI) -> bool:
    """Make the user of ``email`` an admin, or no longer one; False when nothing changed."""
    user_id = await accounts.user_id_for_email(conn, email)
    target = await _locked(conn, user_id)
    if (await user_overview.one(conn, user_id)).is_admin == admin:
        return False
    await accounts.set_admin(conn, user_id, admin)
    await _record(conn, actor, "make admin" if admin else "revoke admin", user_id, target)
    return True


async def set_disabled(
    conn: AsyncConnection, actor: Actor, user_id: int, disabled: bool
) -> UserRow:
    """Disable the user (their keys, sessions and addresses stop at once: the next
    request or message sees it) or enable them again; their sessions end either way."""
    if disabled:
        _not_self(actor, user_id, "disable")
    target = await _locked(conn, user_id)
    await accounts.set_disabled(conn, user_id, disabled)
    await sessions.end_all(conn, user_id)
    await _record(conn, actor, "disable" if disabled else "enable", user_id, target)
    return await user_overview.one(conn, user_id)


def parse_limit(text: object, field: str, minimum: int) -> int | None:
    """A limit typed on the page: blank for the server's setting, else a whole number
    from ``minimum`` to MAX_LIMIT."""
    value = (text if isinstance(text, str) else "").strip()
    if not value:
        return None
    if not (value.isascii() and value.isdigit() and len(value) <= 7) or not (
        minimum <= int(value) <= MAX_LIMIT
    ):
        raise InvalidAddress(
            f"the {field} limit is a whole number from {minimum} to {MAX_LIMIT}, "
            "or blank for the server's setting",
            {"field": field},
        )
    return int(value)


def _describe(limits: UserLimits) -> str:
    parts = (
        ("addresses", limits.addresses),
        ("mailboxes", limits.mailboxes),
        ("domains", limits.domains),
    )
    return ", ".join(f"{name} {'default' if value is None else value}" for name, value in parts)


async def set_limits(
    conn: AsyncConnection, actor: Actor, user_id: int, limits: UserLimits
) -> UserRow:
    """The user's own limits (None: the server's setting). What they have already stays;
    a limit holds for what they make next."""
    target = await _locked(conn, user_id)
    await accounts.set_limits(conn, user_id, limits)
    await _record(conn, actor, "limits", user_id, target, _describe(limits))
    return await user_overview.one(conn, user_id)


async def delete_user(conn: AsyncConnection, actor: Actor, user_id: int) -> int:
    """Delete the user as ``maskmail user delete`` does (every address kept as a
    tombstone); return how many addresses went."""
    _not_self(actor, user_id, "delete")
    target = await _locked(conn, user_id)
    gone = await users_admin.delete_user(conn, target)
    await _record(conn, actor, "delete", user_id, target, f"{gone} addresses kept as tombstones")
    return gone


def _when(seconds: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


async def make_invitation(
    conn: AsyncConnection, actor: Actor, expires: str, mailing: Mailing | None = None
) -> NewInvitation:
    """A single-use sign-up link good for ``expires`` (``7d``, ``12h``, ``30m``), mailed
    when ``mailing`` says where (services/invitation_mail.py: a refused address makes
    nothing); the log keeps its id, expiry and whether it was mailed, never its token
    nor the address (no mailbox but an account's own is logged)."""
    lifetime = invitation_rules.parse_duration(expires)
    checked = None if mailing is None else await invitation_mail.check(conn, mailing)
    made = await invitations.create(conn, expires_in=lifetime, created_by=actor.user_id)
    invitation = made.invitation
    detail = f"expires {_when(invitation.expires_time)}" + (", mailed" if checked else "")
    await _record(conn, actor, "invite", None, f"invitation {invitation.id}", detail)
    if checked is not None:
        await invitation_mail.send(checked, made)
    return made


async def revoke_invitation(conn: AsyncConnection, actor: Actor, invitation_id: int) -> bool:
    """Stop the invitation from working (InvitationNotFound for an unknown id); False,
    and nothing logged, when it was no longer open."""
    before = await invitation_store.get(conn, invitation_id)
    if before.state(now()) is not invitation_rules.State.OPEN:
        return False
    await invitations.revoke(conn, invitation_id)
    await _record(conn, actor, "revoke invitation", None, f"invitation {invitation_id}")
    return True


async def list_invitations(conn: AsyncConnection) -> list[Invitation]:
    return await invitations.list_invitations(conn)

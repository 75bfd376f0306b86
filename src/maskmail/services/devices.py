"""New sign-in from a new device: the notice mailed to the user.

A device is a browser profile: the one that holds a device cookie (a long-lived random
token, only its SHA-256 kept per user, ``store/devices.py``). A sign-in from a browser
without the cookie, or with one this user has not signed in from, is new: the user is
mailed the time, the client's address and a short summary of its user agent. The
first device an account ever signs in from is kept without a notice (nothing to compare
it with: a new account, or the first sign-in since devices are remembered). Clearing
cookies, a private window or another browser on the same machine is a new device.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.mailboxes import notice
from maskmail.services import account_mail
from maskmail.store import devices

# Browsers keep a cookie at most 400 days (Chrome caps it there).
COOKIE_LIFETIME = 400 * 86_400
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}$")

# Checked in this order: Edge and Opera also say Chrome, Chrome also says Safari.
_BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("Firefox/", "Firefox"),
    ("Chromium/", "Chromium"),
    ("Chrome/", "Chrome"),
    ("Safari/", "Safari"),
    ("curl/", "curl"),
)
_SYSTEMS = (
    ("Android", "Android"),
    ("iPhone", "iOS"),
    ("iPad", "iPadOS"),
    ("Windows", "Windows"),
    ("Mac OS X", "macOS"),
    ("CrOS", "ChromeOS"),
    ("Linux", "Linux"),
)


def agent_summary(user_agent: str) -> str:
    """ "Firefox on Linux", "Chrome on Android", or "an unknown browser"."""
    browser = next((name for mark, name in _BROWSERS if mark in user_agent), "")
    system = next((name for mark, name in _SYSTEMS if mark in user_agent), "")
    if browser and system:
        return f"{browser} on {system}"
    return browser or (f"a browser on {system}" if system else "an unknown browser")


def digest(token: str) -> str:
    return hashlib.sha256(b"device:" + token.encode("ascii", "replace")).hexdigest()


def notice_message(*, to: str, sender: str, client: str, agent: str, when: float) -> bytes:
    """The message that tells the user of a sign-in from a new device (plain text)."""
    at = time.strftime("%Y-%m-%d %H:%M", time.gmtime(when))
    return notice(
        to=to,
        sender=sender,
        subject="New sign-in to maskmail from a new device",
        when=when,
        text="Your maskmail account was signed in to from a device it had not been "
        f"signed in from before.\n\nWhen: {at} UTC\nFrom: {client}\nBrowser: {agent}\n\n"
        "If this was you, there is nothing to do. If it was not, change your password "
        'now (the dashboard\'s "Password" page, or "Forgot password?" on the sign-in '
        "page): that signs out every session.\n",
    )


@dataclass(frozen=True, slots=True)
class SignInSeen:
    """What a sign-in tells about its device: the cookie to keep, and a notice to mail
    (its message and mailbox) when the device is new to the user."""

    token: str
    notice: tuple[bytes, str] | None


async def sign_in_from(
    conn: AsyncConnection,
    settings: Settings,
    user_id: int,
    *,
    cookie: str | None,
    client: str,
    user_agent: str,
) -> SignInSeen:
    """Note a successful sign-in from the browser holding ``cookie`` (None: none yet)."""
    token = cookie if cookie and _TOKEN.match(cookie) else secrets.token_urlsafe(32)
    seen = await devices.seen(conn, user_id, digest(token), most=settings.known_devices_per_user)
    if seen != "new" or not settings.signin_notice:
        return SignInSeen(token, None)
    mailbox = await account_mail.default_mailbox(conn, user_id)
    if mailbox is None:
        return SignInSeen(token, None)
    message = notice_message(
        to=mailbox,
        sender=f"accounts@{settings.domain}",
        client=client,
        agent=agent_summary(user_agent),
        when=time.time(),
    )
    return SignInSeen(token, (message, mailbox))

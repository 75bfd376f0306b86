"""The mail plane's custom domains, by the custom domain rules (``core/custom_domains.py``):
whether one is received for (verified), and mail from its addresses sent and signed at
it, so that SPF, DKIM and DMARC align with the domain the recipient sees."""

from __future__ import annotations

from maskmail.core.envelope import normal_domain
from maskmail.core.records import RelayAddress
from maskmail.mail.context import MailContext
from maskmail.mail.dkim import Signer
from maskmail.store import custom_domains as store


async def holder(ctx: MailContext, domain: str) -> store.Holder | None:
    """The verified custom domain's owner and key; None for any other domain."""
    async with ctx.drivers() as driver:
        return await store.holder(driver, domain)


def mail_domain(ctx: MailContext, address: RelayAddress) -> str:
    """Where mail from the address is sent: its own domain when that is a custom one
    (reverse aliases, bounce address, DKIM), else the relay's domain."""
    domain = normal_domain(address.domain)
    return ctx.domain if domain in ctx.domains else domain


async def signer_for(ctx: MailContext, domain: str) -> Signer | None:
    """The key mail sent at ``domain`` is signed with: a custom domain's own, else the
    relay's (None when the relay signs nothing)."""
    held = None if domain in ctx.domains else await holder(ctx, domain)
    if held is not None:
        return Signer(held.private_key, selector=held.selector, domain=domain)
    return ctx.signer


async def sign(ctx: MailContext, message: bytes, domain: str) -> bytes:
    """Signed with the key of ``domain`` (a custom domain's own), else the relay's."""
    signer = await signer_for(ctx, domain)
    return message if signer is None else await signer.sign(message)

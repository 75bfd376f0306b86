"""The relay address record that crosses layers: what an address is, independent of
storage, and the keys of its JSON."""

from __future__ import annotations

from dataclasses import dataclass

from maskmail.core.addresses import full_address

# The keys of an address on the wire (the SPEC's Private Email object), in their order:
# declared once, for the API's JSON, its schema's test, and the JSON the database writes.
# The largest id any table keeps: both databases store ids as signed 64-bit integers, so
# a larger one in a path or a body names nothing.
MAX_ID = 2**63 - 1

PRIVATE_EMAIL_FIELDS = (
    "id",
    "address",
    "enabled",
    "block_spam",
    "description",
    "created_time",
    "updated_time",
    "num_forwarded",
    "num_blocked",
    "num_replied",
    "num_spam",
    "domain",
    "subdomain",
    "full_address",
)


@dataclass(frozen=True, slots=True)
class RelayAddress:
    id: int
    user_id: int
    address: str
    domain: str
    subdomain: str | None
    enabled: bool
    block_spam: bool
    description: str
    created_time: int
    updated_time: int | None
    num_forwarded: int
    num_blocked: int
    num_replied: int
    num_spam: int

    @property
    def full_address(self) -> str:
        return full_address(self.address, self.domain, self.subdomain)

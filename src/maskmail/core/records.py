"""The values that cross layers: what a relay address is, independent of storage."""

from __future__ import annotations

from dataclasses import dataclass

from maskmail.core.addresses import full_address


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

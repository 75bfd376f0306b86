"""What an owner may change on an address, and the strings any door accepts: the API's
body and the dashboard's form are judged by the same model."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from maskmail.core.descriptions import DESCRIPTION_MAX
from maskmail.core.text import NO_CONTROL_CHARACTERS as NO_CONTROL_CHARACTERS
from maskmail.core.text import unstorable


def _storable(text: str) -> str:
    problem = unstorable(text)
    if problem is not None:
        raise ValueError(problem)
    return text


# Every string a request carries: one the database cannot keep is a 422 (core/text.py).
StorableStr = Annotated[str, AfterValidator(_storable)]


def _no_default(schema: dict[str, Any]) -> None:
    # The defaults below only make fields optional; an omitted field is left unchanged.
    schema.pop("default", None)


class AddressUpdate(BaseModel):
    """Fields a caller may change; anything else, or null, is refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    description: StorableStr = Field(
        default="",
        max_length=DESCRIPTION_MAX,
        pattern=NO_CONTROL_CHARACTERS,
        description="At most 64 characters, no control characters.",
        json_schema_extra=_no_default,
    )
    enabled: bool = Field(default=True, json_schema_extra=_no_default)
    block_spam: bool = Field(default=False, json_schema_extra=_no_default)

    def changes(self) -> dict[str, object]:
        """Only the fields the caller sent."""
        return {name: getattr(self, name) for name in sorted(self.model_fields_set)}

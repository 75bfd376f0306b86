"""Text a database can keep: the one rule every door applies to strings it will store.

PostgreSQL refuses NUL in text and any string that is not valid UTF-8, and SQLite's
driver cannot encode a lone surrogate (``"\\ud800"``, which JSON's ``\\u`` escapes can
carry). Such a string is refused where it arrives, as bad input, never at the database.
"""

from __future__ import annotations

# The JSON Schema patterns that tell clients of these rules: a string without the NUL,
# and a one-line string without any control character.
NO_NUL = r"^[^\x00]*$"
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None when it can."""
    if "\x00" in text:
        return "may not contain the NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (a lone surrogate such as \\ud800 is not)"
    return None

"""Text a database can keep: the one rule every door applies to strings it will store.

PostgreSQL refuses NUL in text and any string that is not valid UTF-8, and SQLite's
driver cannot encode a lone surrogate (``"\\ud800"``, which JSON's ``\\u`` escapes can
carry). Such a string is refused where it arrives, as bad input, never at the database.
"""

from __future__ import annotations


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None when it can."""
    if "\x00" in text:
        return "may not contain the NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (a lone surrogate such as \\ud800 is not)"
    return None

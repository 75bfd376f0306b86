"""Hypothesis example counts: each property test's full count in `make test`, and the
`check` profile's smaller count in `make check`'s edit-test loop."""

from __future__ import annotations

from hypothesis import settings

CHECK = "check"
settings.register_profile(CHECK, max_examples=25)


def examples(full: int) -> int:
    """``full``, unless `make check` loaded the check profile (``--hypothesis-profile``)."""
    if settings.get_current_profile_name() == CHECK:
        return min(full, settings().max_examples)
    return full

"""RFC 5322's atext and dot-atom, as pattern text for the mail plane's fast readers.

An address whose parts are dot-atoms of ASCII atext holds no special, no white space and
no line break, so the email package's parser reads it back as it is: the readers that
skip that parser for such addresses (``mail/server.py``, ``mail/rewrite.py``) share these
so that they agree on what "plain" is.
"""

from __future__ import annotations

ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
DOT_ATOM = rf"{ATEXT}+(?:\.{ATEXT}+)*"

"""The reply property over whole messages: nested parts whose header fields repeat, fold
and split the owner's address across encoded words, and bodies that disguise it (with
any tag and case, in folded calendar and card lines, in their encoded values, in an
OpenPGP key's user id). It holds: the address never comes out, or the reply is
refused; over real SMTP too, where the outside sender's server gets a clean reply or
nothing (the owner a 550 5.6.0)."""

from __future__ import annotations

import base64
import quopri
import smtplib
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_rewrite import rewrite_reply
from tests.mail.conftest import Mask, Masks, Sink, send_async
from tests.mail.leaks import visible
from tests.mail.test_reply_leaks import OUTSIDE, _contact
from tests.mail.test_reply_rewrite import OWNER, REPLY
from tests.pgp_keys import NEEDS_GPG, binary_key_of, key_of
from tests.profiles import examples


def forms(owner: str) -> list[str]:
    """The owner's address as a client or a hand may write it, and another one."""
    local, _, domain = owner.partition("@")
    return [
        owner,
        owner.upper(),
        f"1700000000.{owner}",
        f'"{local}"@{domain}',
        f"{local[:3]}\u200b{local[3:]}@{domain}",
        f"{local}\ufeff@{domain}",
        f"{local}@{domain[:4]}\u00ad{domain[4:]}",
        f"{local}&shy;@{domain}",
        f"{local}&#64;{domain}",
        f"%{ord(local[0]):02x}{local[1:]}%40{domain}",
        f"{local}\uff20{domain}",
        f"{local}<!-- -->@{domain}",
        f"{local} @ {domain}",
        # Sub-address tags, in any case and escape.
        f"{local}+news@{domain}",
        f"{local.upper()}+X@{domain.capitalize()}",
        f"{local}&#43;x&#64;{domain}",
        f"{local}%2Bx%40{domain}",
        f'"{local}+x"@{domain}',
        "someone@example.org",
    ]


_NAMES = [
    "Subject",
    "Message-ID",
    "In-Reply-To",
    "References",
    "Content-ID",
    "Content-Description",
    "Comments",
    "Keywords",
    "Thread-Topic",
    "Content-Disposition",
]
_IDS = {"Message-ID", "In-Reply-To", "References", "Content-ID"}


def _encoded_words(text: str, cut: int, fold: str) -> str:
    """``text`` as two encoded words split at ``cut``: base64 or Q, folded or not."""
    first, second = text[:cut], text[cut:]
    if cut % 2:
        words = [base64.b64encode(p.encode()).decode() for p in (first, second)]
        return f"=?utf-8?b?{words[0]}?={fold}=?utf-8?b?{words[1]}?="
    words = [quopri.encodestring(p.encode(), header=True).decode() for p in (first, second)]
    return f"=?utf-8?q?{words[0]}?={fold}=?utf-8?q?{words[1]}?="


@st.composite
def _field(draw: st.DrawFn, written: list[str]) -> str:
    name = draw(st.sampled_from(_NAMES))
    address = draw(st.sampled_from(written))
    how = draw(st.sampled_from(["plain", "folded", "split", "split-folded"]))
    if how == "plain":
        value = f"by {address}"
    elif how == "folded":
        at = address.find("@")
        value = f"by\r\n {address}" if at < 0 else f"by {address[: at + 1]}\r\n {address[at + 1 :]}"
    else:
        cut = draw(st.integers(1, len(address) - 1))
        value = _encoded_words(address, cut, "\r\n " if how == "split-folded" else " ")
    if name in _IDS:
        value = f"<{address}>" if how == "plain" else f"<x@example.org> {value}"
    if name == "Content-Disposition":
        value = draw(st.sampled_from(_params(address, value)))
    return f"{name}: {value}\r\n"


def _params(address: str, value: str) -> list[str]:
    """A file name holding the address: quoted, in RFC 2231's encoded and continued forms
    (split inside the address), or as the encoded words of ``value``."""
    encoded = quote(f"{address}.vcf".encode(), safe="")
    cut = max(1, len(address) // 2)
    return [
        f'attachment; filename="{address}.vcf"',
        f"attachment; filename*=utf-8''{encoded}",
        f'attachment; filename*0="{address[:cut]}"; filename*1="{address[cut:]}.vcf"',
        f'attachment; filename="{value}"',
    ]


@dataclass
class _Part:
    fields: list[str]
    content_type: str
    encoding: str
    body: str | bytes
    children: list[_Part]


def _leaf(written: list[str]) -> st.SearchStrategy[_Part]:
    return st.builds(
        _Part,
        fields=st.lists(_field(written), max_size=4),
        content_type=st.sampled_from(["text/plain; charset=utf-8", "text/html; charset=utf-8"]),
        encoding=st.sampled_from(["8bit", "quoted-printable", "base64"]),
        body=st.lists(st.sampled_from(written) | st.text(max_size=8), max_size=4).map(" ".join),
        children=st.just([]),
    )


def _folded(draw: st.DrawFn, line: str) -> str:
    """``line`` folded at a drawn place (RFC 5545 3.1), with a space or a tab."""
    cut = draw(st.integers(1, len(line) - 1))
    return line[:cut] + "\n" + draw(st.sampled_from([" ", "\t"])) + line[cut:]


@st.composite
def _card_or_calendar(draw: st.DrawFn, written: list[str]) -> _Part:
    """A calendar or a card holding the address in a line (folded or not), in an escaped
    text, or in a quoted-printable or base64 value; of a text type or an opaque one."""
    form = draw(st.sampled_from(written))
    line = draw(
        st.sampled_from(
            [
                f"ORGANIZER;CN=Alice:mailto:{form}",
                f"DESCRIPTION:Write to\\n{form}\\, thanks",
                f"EMAIL;TYPE=work:{form}",
                f"EMAIL;ENCODING=QUOTED-PRINTABLE:{quopri.encodestring(form.encode()).decode()}",
                f"X-FILE;ENCODING=b:{base64.b64encode(form.encode()).decode()}",
                f"PHOTO:data:text/plain;base64,{base64.b64encode(form.encode()).decode()}",
            ]
        )
    )
    if draw(st.booleans()):
        line = _folded(draw, line)
    kind = draw(st.sampled_from(["VCALENDAR", "VCARD"]))
    return _Part(
        fields=[],
        content_type=draw(
            st.sampled_from(["text/calendar", "text/vcard", "application/ics", "text/plain"])
        ),
        encoding=draw(st.sampled_from(["8bit", "quoted-printable", "base64"])),
        body=f"BEGIN:{kind}\nVERSION:2.0\n{line}\nEND:{kind}\n",
        children=[],
    )


@st.composite
def _key(draw: st.DrawFn, owner: str) -> _Part:
    """An OpenPGP key: armored (in its own part, a text, quoted) or binary; its user id
    holds the owner's address in one of a few forms, or does not."""
    local, _, domain = owner.upper().partition("@")
    uid = draw(
        st.sampled_from([f"Owner <{owner}>", f"{local}+PGP@{domain}", "Bob <bob@example.org>"])
    )
    if draw(st.booleans()):
        return _Part([], "application/pgp-keys", "base64", binary_key_of(uid), [])
    armored = key_of(uid)
    if draw(st.booleans()):
        armored = "> " + armored.replace("\n", "\n> ")
    return _Part(
        fields=[],
        content_type=draw(
            st.sampled_from(["application/pgp-keys", "text/plain", "application/octet-stream"])
        ),
        encoding=draw(st.sampled_from(["7bit", "quoted-printable", "base64"])),
        body=armored,
        children=[],
    )


def _multipart(
    written: list[str], children: st.SearchStrategy[list[_Part]]
) -> st.SearchStrategy[_Part]:
    return st.builds(
        _Part,
        fields=st.lists(_field(written), max_size=3),
        content_type=st.sampled_from(["multipart/mixed", "multipart/related"]),
        encoding=st.just("7bit"),
        body=st.just(""),
        children=children,
    )


def tree(owner: str) -> st.SearchStrategy[_Part]:
    """A message's MIME tree that hides ``owner``'s address in many places and forms."""
    written = forms(owner)
    return st.recursive(
        _leaf(written) | _card_or_calendar(written) | _key(owner),
        lambda kids: _multipart(written, st.lists(kids, min_size=1, max_size=3)),
        max_leaves=8,
    )


def _render(part: _Part, depth: int = 0) -> bytes:
    head = "".join(part.fields)
    if part.children:
        boundary = f"b{depth}-{id(part)}"
        inner = b"".join(
            f"--{boundary}\r\n".encode() + _render(child, depth + 1) + b"\r\n"
            for child in part.children
        )
        head += f'Content-Type: {part.content_type}; boundary="{boundary}"\r\n'
        return f"{head}\r\n".encode() + inner + f"--{boundary}--\r\n".encode()
    body = part.body
    data = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    if part.encoding == "base64":
        data = base64.encodebytes(data)
    elif part.encoding == "quoted-printable":
        data = quopri.encodestring(data)
    head += f"Content-Type: {part.content_type}\r\nContent-Transfer-Encoding: {part.encoding}\r\n"
    return f"{head}\r\n".encode() + data.replace(b"\n", b"\r\n") + b"\r\n"


def render(owner: str, part: _Part) -> bytes:
    """The reply, from ``owner``, with ``part`` as its body."""
    return f"From: {owner}\r\nMIME-Version: 1.0\r\n".encode() + _render(part)


@NEEDS_GPG
@settings(max_examples=examples(200), deadline=None)
@given(tree(OWNER))
def test_no_message_shape_lets_the_address_out(message: _Part) -> None:
    raw = render(OWNER, message)
    try:
        out = rewrite_reply(raw, REPLY)
    except Unrewritable:
        return
    assert not visible(out, OWNER), out.decode("utf-8", "replace")


# The owner of the SMTP property: fixed, as the messages are drawn before the test runs.
_SMTP_OWNER = "property.owner@example.com"


@pytest.fixture
async def written_to(masks: Masks) -> tuple[Mask, str]:
    """The owner and the reverse alias they write first through."""
    mask = await masks.make(owner=_SMTP_OWNER)
    return mask, await _contact(mask)


@pytest.mark.anyio
@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(message=tree(_SMTP_OWNER))
async def test_no_generated_reply_reaches_the_sink_with_the_address(
    relay: int, sink: Sink, written_to: tuple[Mask, str], message: _Part
) -> None:
    """The same messages over real SMTP: each reaches the outside sender without the
    owner's address, or is refused with 550 5.6.0 and nothing reaches the sink."""
    mask, alias = written_to
    before = len(sink.messages)
    try:
        assert await send_async(relay, mask.owner, [alias], render(mask.owner, message)) == {}
    except smtplib.SMTPDataError as refused:
        assert (refused.smtp_code, refused.smtp_error[:5]) == (550, b"5.6.0")
        assert len(sink.messages) == before
        return
    assert len(sink.messages) == before + 1
    got = sink.messages[-1]
    assert got.rcpt_tos == [OUTSIDE]
    assert not visible(got.data, mask.owner), got.data.decode("utf-8", "replace")

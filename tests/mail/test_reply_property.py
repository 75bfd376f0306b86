"""The reply property over whole messages: nested parts whose header fields repeat, fold
and split the owner's address across encoded words, and bodies that disguise it. It
holds: the address never comes out, or the reply is refused."""

from __future__ import annotations

import base64
import quopri
from dataclasses import dataclass
from urllib.parse import quote

from hypothesis import given, settings
from hypothesis import strategies as st

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_rewrite import rewrite_reply
from tests.mail.leaks import visible
from tests.mail.test_reply_rewrite import OWNER, REPLY
from tests.profiles import examples

# The owner's address as a client or a hand may write it.
_FORMS = [
    OWNER,
    OWNER.upper(),
    "1700000000.alice@example.com",
    '"alice"@example.com',
    "ali\u200bce@example.com",
    "alice\ufeff@example.com",
    "alice@exam\u00adple.com",
    "alice&shy;@example.com",
    "alice&#64;example.com",
    "%61lice%40example.com",
    "alice\uff20example.com",
    "alice<!-- -->@example.com",
    "alice @ example.com",
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
def _field(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(_NAMES))
    address = draw(st.sampled_from(_FORMS))
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
    body: str
    children: list[_Part]


_leaf = st.builds(
    _Part,
    fields=st.lists(_field(), max_size=4),
    content_type=st.sampled_from(["text/plain; charset=utf-8", "text/html; charset=utf-8"]),
    encoding=st.sampled_from(["8bit", "quoted-printable", "base64"]),
    body=st.lists(st.sampled_from(_FORMS) | st.text(max_size=8), max_size=4).map(" ".join),
    children=st.just([]),
)


def _multipart(children: st.SearchStrategy[list[_Part]]) -> st.SearchStrategy[_Part]:
    return st.builds(
        _Part,
        fields=st.lists(_field(), max_size=3),
        content_type=st.sampled_from(["multipart/mixed", "multipart/related"]),
        encoding=st.just("7bit"),
        body=st.just(""),
        children=children,
    )


_tree = st.recursive(
    _leaf, lambda kids: _multipart(st.lists(kids, min_size=1, max_size=3)), max_leaves=8
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
    data = part.body.encode("utf-8", "surrogatepass")
    if part.encoding == "base64":
        data = base64.encodebytes(data)
    elif part.encoding == "quoted-printable":
        data = quopri.encodestring(data)
    head += f"Content-Type: {part.content_type}\r\nContent-Transfer-Encoding: {part.encoding}\r\n"
    return f"{head}\r\n".encode() + data.replace(b"\n", b"\r\n") + b"\r\n"


@settings(max_examples=examples(200), deadline=None)
@given(_tree)
def test_no_message_shape_lets_the_address_out(tree: _Part) -> None:
    raw = f"From: {OWNER}\r\nMIME-Version: 1.0\r\n".encode() + _render(tree)
    try:
        out = rewrite_reply(raw, REPLY)
    except Unrewritable:
        return
    assert not visible(out, OWNER), out.decode("utf-8", "replace")

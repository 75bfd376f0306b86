"""Where an owner's address hides that a plain search does not look: sub-address tags,
folded calendar and card lines, encoded card values, and OpenPGP packets under their
armor. Rewritten where the relay can write the part again, refused where it cannot
(``rewrite_reply`` on its own; over SMTP in ``test_reply_leaks.py``)."""

from __future__ import annotations

import base64
import dataclasses
import quopri
from collections.abc import Callable
from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_rewrite import rewrite_reply
from tests.mail.leaks import visible
from tests.mail.test_reply_rewrite import OWNER, RELAY, REPLY
from tests.pgp_keys import NEEDS_GPG, binary_key_of, key_of, keys, signed_by

_HEAD = f"From: {OWNER}\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
_OTHER = "Bob <bob@example.org>"


def _parsed(data: bytes) -> EmailMessage:
    parsed = message_from_bytes(data, policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


def _body(out: bytes) -> str:
    content = _parsed(out).get_content()
    assert isinstance(content, str)
    return content.replace("\r\n", "\n")


def _text(body: str, content_type: str = "text/plain") -> bytes:
    return f"{_HEAD}Content-Type: {content_type}\r\n\r\n{body}\r\n".encode()


def _attached(content_type: str, body: str | bytes, encoding: str = "7bit") -> bytes:
    data = body.encode() if isinstance(body, str) else body
    if encoding == "base64":
        data = base64.encodebytes(data)
    elif encoding == "quoted-printable":
        data = quopri.encodestring(data)
    return (
        (
            f"{_HEAD}Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
            "Content-Type: text/plain\r\n\r\nsee attached\r\n--b\r\n"
            f"Content-Type: {content_type}\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n"
        ).encode()
        + data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        + b"\r\n--b--\r\n"
    )


def _refused(raw: bytes) -> None:
    with pytest.raises(Unrewritable):
        rewrite_reply(raw, REPLY)


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("alice+news@example.com", RELAY),
        ("ALICE+x@EXAMPLE.COM", RELAY),
        ("Alice+a.b-c_d=e@Example.com", RELAY),
        ("<mailto:alice+list@example.com?subject=hi>", f"<mailto:{RELAY}?subject=hi>"),
        ("alice+@example.com", RELAY),
        # The tag in the escapes of HTML and URLs.
        ("alice&#43;x&#64;example.com", "k3x9q2mz&#64;relay.test"),
        ("alice&plus;x@example.com", RELAY),
        ("u=alice%2Bnews%40example.com&x", "u=k3x9q2mz%40relay.test&x"),
        # An escaped line break of a calendar, a card or JSON ends the word before it.
        ("DESCRIPTION:Write\\nalice@example.com", f"DESCRIPTION:Write\\n{RELAY}"),
        ('{"note": "hi\\nALICE+x@example.com"}', f'{{"note": "hi\\n{RELAY}"}}'),
        # Other mailboxes that merely contain the owner's stay.
        ("malice+x@example.com", "malice+x@example.com"),
        ("bob+alice@example.com", "bob+alice@example.com"),
        ("alice+x@example.community", "alice+x@example.community"),
    ],
)
def test_every_tag_and_case_is_rewritten(written: str, shown: str) -> None:
    out = rewrite_reply(_text(f"write to {written} today"), REPLY)
    assert _body(out) == f"write to {shown} today\n"
    assert not visible(out, OWNER), out.decode()


def test_a_tagged_mailbox_takes_its_untagged_and_other_tags_with_it() -> None:
    reply = dataclasses.replace(REPLY, owner_mailbox="alice+relay@example.com")
    body = "alice+relay@example.com, alice@example.com, alice+work@example.com"
    assert _body(rewrite_reply(_text(body), reply)) == f"{RELAY}, {RELAY}, {RELAY}\n"


@pytest.mark.parametrize(
    "disposition",
    [
        'attachment; filename="alice+cv@example.com.txt"',
        "attachment; filename*=utf-8''ALICE%2Bcv%40example.com.txt",
        'attachment; filename*0="alice+c"; filename*1="v@example.com.txt"',
    ],
)
def test_a_tagged_file_name_is_renamed(disposition: str) -> None:
    raw = f"{_HEAD}Content-Type: text/plain\r\nContent-Disposition: {disposition}\r\n\r\nhi\r\n"
    out = rewrite_reply(raw.encode(), REPLY)
    assert _parsed(out).get_filename() == f"{RELAY}.txt"
    assert not visible(out, OWNER)


_INVITE = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\n"
    "UID:4f1c2a9e@example.org\r\nSUMMARY:Lunch\r\n{line}\r\n"
    "ATTENDEE;CN=Shop:mailto:shop@example.org\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
_CARD = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Alice\r\n{line}\r\nEND:VCARD\r\n"


@pytest.mark.parametrize(
    ("content_type", "template", "line", "unfolded"),
    [
        (
            "text/calendar; method=REQUEST",
            _INVITE,
            "ORGANIZER;CN=Alice:mailto:alice@example.\r\n com",
            f"ORGANIZER;CN=Alice:mailto:{RELAY}",
        ),
        (
            "text/calendar",
            _INVITE,
            "ORGANIZER;CN=Alice:mailto:al\r\n\tice+cal@exam\r\n ple.com",
            f"ORGANIZER;CN=Alice:mailto:{RELAY}",
        ),
        (
            "text/calendar",
            _INVITE,
            "DESCRIPTION:Questions? Write to\\nALICE@\r\n EXAMPLE.COM\\, or call.",
            f"DESCRIPTION:Questions? Write to\\n{RELAY}\\, or call.",
        ),
        ("text/vcard", _CARD, "EMAIL;TYPE=work:ali\r\n ce@example.com", f"EMAIL;TYPE=work:{RELAY}"),
        ("text/x-vcard", _CARD, "EMAIL:alice\r\n +home@example.com", f"EMAIL:{RELAY}"),
    ],
)
@pytest.mark.parametrize("encoding", ["7bit", "quoted-printable", "base64"])
def test_folded_calendar_and_card_lines_are_rewritten(
    content_type: str, template: str, line: str, unfolded: str, encoding: str
) -> None:
    """A calendar or a card is text the relay can write again: each content line is read
    unfolded (RFC 5545, 6350), and the address replaced wherever a fold split it."""
    original = template.format(line=line)
    out = rewrite_reply(_attached(content_type, original, encoding), REPLY)
    assert not visible(out, OWNER), out.decode()
    part = [p for p in _parsed(out).walk() if not p.is_multipart()][1]
    written = part.get_payload(decode=True)
    assert isinstance(written, bytes)
    # Only that line changed, and a calendar reads it as the relay address.
    assert written.decode() == template.format(line=unfolded)


def test_a_calendar_without_the_address_keeps_its_bytes() -> None:
    original = _INVITE.format(line="ORGANIZER;CN=Shop:mailto:shop@ex\r\n ample.org")
    raw = _attached("text/calendar", original, "quoted-printable")
    out = rewrite_reply(raw, REPLY)
    assert raw.partition(b"\r\n\r\n--b")[2] in out


@pytest.mark.parametrize(
    ("content_type", "body", "encoding"),
    [
        # An opaque calendar: not text by its type, so not written again.
        ("application/ics", _INVITE.format(line="ORGANIZER:mailto:alice@exam\r\n ple.com"),
         "base64"),
        ("application/octet-stream", _CARD.format(line="EMAIL:ali\r\n ce+x@example.com"),
         "base64"),
        # vCard 2.1 values in quoted-printable, split by a soft line break.
        ("text/x-vcard",
         _CARD.format(line="EMAIL;ENCODING=QUOTED-PRINTABLE:alice=40exa=\r\nmple.com"), "7bit"),
        ("text/vcard", _CARD.format(line="NOTE;QUOTED-PRINTABLE:=41LICE+x=40EXAMPLE.COM"),
         "7bit"),
        # A quoted local part after an escaped line break (not a quoted pair's ``\n``).
        ("text/calendar", _INVITE.format(line='DESCRIPTION:Write to\\n"alice+x"@example.com'),
         "7bit"),
        # A base64 value: a photo's comment, an attached file in a calendar.
        (
            "text/vcard",
            _CARD.format(line="X-DATA;ENCODING=b:" + base64.b64encode(OWNER.encode()).decode()),
            "7bit",
        ),
        (
            "text/calendar",
            _INVITE.format(
                line="ATTACH;ENCODING=BASE64;VALUE=BINARY:"
                + base64.b64encode(f"from {OWNER}".encode()).decode()
            ),
            "7bit",
        ),
    ],
)  # fmt: skip
def test_what_the_relay_cannot_write_again_is_refused(
    content_type: str, body: str, encoding: str
) -> None:
    _refused(_attached(content_type, body, encoding))


_UID = f"Alice <{OWNER}>"


def _card_with_key(key: bytes, line: str) -> str:
    return _CARD.format(line=line.format(key=base64.b64encode(key).decode()))


def _with_gpg(make: Callable[[], bytes]) -> object:
    """A case whose key or signature gpg makes."""
    return pytest.param(make, marks=NEEDS_GPG)


@pytest.mark.parametrize(
    "make",
    [
        # As Thunderbird attaches the owner's key: armored, in its own part.
        _with_gpg(lambda: _attached('application/pgp-keys; name="OpenPGP_0xA1.asc"', key_of(_UID))),
        _with_gpg(lambda: _attached("application/pgp-keys", key_of(_UID), "quoted-printable")),
        _with_gpg(lambda: _attached("application/pgp-keys", binary_key_of(_UID), "base64")),
        # Armored anywhere: a text body, a quoted one, a file of any type.
        _with_gpg(lambda: _text(f"my key:\r\n\r\n{key_of(_UID)}")),
        _with_gpg(lambda: _text("> " + key_of(_UID).replace("\n", "\n> "))),
        _with_gpg(lambda: _attached("application/octet-stream", key_of(_UID), "base64")),
        # A card with the key in it (vCard 3 and 4).
        _with_gpg(lambda: _attached(
            "text/vcard", _card_with_key(binary_key_of(_UID), "KEY;TYPE=PGP;ENCODING=b:{key}")
        )),
        _with_gpg(lambda: _attached(
            "text/vcard",
            _card_with_key(binary_key_of(_UID), "KEY:data:application/pgp-keys;base64,{key}"),
        )),
        # A signature names its signer's user id; a signed message is compressed.
        _with_gpg(lambda: _text(signed_by(_UID, b"See you at noon.\n", clearsign=True))),
        _with_gpg(
            lambda: _text(signed_by(_OTHER, f"Write to {OWNER}\n".encode(), clearsign=False))
        ),
        # Armor that does not read as packets cannot be shown to be free of the address.
        lambda: _attached("application/pgp-keys", "-----BEGIN PGP PUBLIC KEY BLOCK-----\r\n\r\n"
                          "not base64!\r\n-----END PGP PUBLIC KEY BLOCK-----"),
        lambda: _attached("application/pgp-keys", b"\x99\x05abc", "base64"),
    ],
)  # fmt: skip
def test_a_key_block_naming_the_owner_is_refused(make: object) -> None:
    assert callable(make)
    _refused(make())


@NEEDS_GPG
def test_a_key_block_without_the_address_is_sent_as_it_came() -> None:
    """Someone else's key, attached: read, found free of the owner, and untouched."""
    armored = key_of(_OTHER).replace("\n", "\r\n")
    raw = _attached("application/pgp-keys", armored)
    out = rewrite_reply(raw, REPLY)
    assert armored.encode() in out
    key = [p for p in _parsed(out).walk() if p.get_content_type() == "application/pgp-keys"]
    assert [p.get_payload(decode=True) for p in key] == [armored.encode()]


@NEEDS_GPG
def test_a_message_encrypted_to_the_recipient_still_passes() -> None:
    """Encrypted data is not read: only the recipient's key shows what it holds."""
    secret = f"from {OWNER}\n".encode()
    armored = str(keys().gpg.encrypt(secret, keys().good_fingerprint, always_trust=True))
    out = rewrite_reply(_text(armored.replace("\n", "\r\n")), REPLY)
    assert armored.replace("\n", "\r\n").encode() in out

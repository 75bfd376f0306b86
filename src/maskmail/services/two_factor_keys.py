"""Security keys and passkeys (WebAuthn, with the ``webauthn`` library): registering a
named key, and a key as the sign-in's second step.

The relying party is the dashboard's host name and the origin the browser's own; the
door passes both (web/pages/two_factor_keys.py says where they come from). Each ceremony's
challenge is random, kept on the server with the waiting state it belongs to, and good
for one answer.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from maskmail.services import two_factor
from maskmail.services.two_factor import SIGN_IN, Step
from maskmail.store import two_factor as store
from maskmail.store.two_factor import SecurityKey

REGISTER = "register"
# Seconds the browser (and the person touching the key) has for a ceremony.
CEREMONY = 300
MAX_KEYS = 10
NAME_LENGTH = 64


@dataclass(frozen=True, slots=True)
class RelyingParty:
    """Who asks: the host name keys are bound to, and the page's origin."""

    rp_id: str
    origin: str
    name: str = "maskmail"


def _registration_state(session_hash: str) -> str:
    # One registration per session at a time, found from the session alone.
    return hashlib.sha256(f"{REGISTER}:{session_hash}".encode()).hexdigest()


def _user_handle(user_id: int) -> bytes:
    # Stable for the account, and not its id or mailbox.
    return hashlib.sha256(f"maskmail-user:{user_id}".encode()).digest()[:16]


def _challenge() -> bytes:
    return secrets.token_bytes(32)


async def registration_options(
    conn: AsyncConnection, user_id: int, email: str, session_hash: str, rp: RelyingParty
) -> str | None:
    """The options for ``navigator.credentials.create`` as JSON; None at MAX_KEYS."""
    keys = await store.keys(conn, user_id)
    if len(keys) >= MAX_KEYS:
        return None
    challenge = _challenge()
    options = generate_registration_options(
        rp_id=rp.rp_id,
        rp_name=rp.name,
        user_name=email,
        user_id=_user_handle(user_id),
        challenge=challenge,
        timeout=CEREMONY * 1000,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=[
            PublicKeyCredentialDescriptor(id=base64url_to_bytes(k.credential_id)) for k in keys
        ],
    )
    await store.start_pending(
        conn,
        _registration_state(session_hash),
        user_id,
        REGISTER,
        lifetime=CEREMONY,
        challenge=bytes_to_base64url(challenge),
    )
    return options_to_json(options)


def clean_name(name: str) -> str:
    return " ".join(name.split())[:NAME_LENGTH]


async def register(
    conn: AsyncConnection,
    user_id: int,
    session_hash: str,
    credential: str,
    name: str,
    rp: RelyingParty,
) -> list[str] | None:
    """Keep the key the browser made for the waiting registration, under ``name``: the
    new recovery codes (an empty list when the user has some); None for an answer that
    does not verify, an expired or used challenge, or a key already registered."""
    state = _registration_state(session_hash)
    found = await store.pending(conn, state, REGISTER)
    if found is None or found.user_id != user_id or not found.challenge:
        return None
    if not await store.finish_pending(conn, state, REGISTER):
        return None
    if await store.count_keys(conn, user_id) >= MAX_KEYS:
        return None
    try:
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(found.challenge),
            expected_rp_id=rp.rp_id,
            expected_origin=rp.origin,
        )
    except Exception:  # whatever the browser sent that does not verify: a refusal
        return None
    key_id = await store.add_key(
        conn,
        user_id,
        credential_id=bytes_to_base64url(verified.credential_id),
        public_key=bytes_to_base64url(verified.credential_public_key),
        sign_count=verified.sign_count,
        name=clean_name(name) or "Security key",
    )
    if key_id is None:
        return None
    return await two_factor.first_recovery_codes(conn, user_id)


async def sign_in_options(
    conn: AsyncConnection, token_hash: str, rp: RelyingParty, *, renew: bool
) -> str | None:
    """The options for ``navigator.credentials.get`` for the waiting sign-in; None when it
    has ended or the user has no key. ``renew`` makes and keeps a new challenge (a page
    answering a POST); else the kept one is shown (a GET, which writes nothing)."""
    found = await store.pending(conn, token_hash, SIGN_IN)
    if found is None:
        return None
    keys = await store.keys(conn, found.user_id)
    if not keys:
        return None
    if renew:
        challenge = _challenge()
        await store.set_challenge(conn, token_hash, bytes_to_base64url(challenge))
    elif found.challenge:
        challenge = base64url_to_bytes(found.challenge)
    else:
        return None
    options = generate_authentication_options(
        rp_id=rp.rp_id,
        challenge=challenge,
        timeout=CEREMONY * 1000,
        allow_credentials=[
            PublicKeyCredentialDescriptor(id=base64url_to_bytes(k.credential_id)) for k in keys
        ],
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    return options_to_json(options)


def _credential_id(credential: str) -> str | None:
    try:
        body = json.loads(credential)
    except ValueError:
        return None
    found = body.get("id") if isinstance(body, dict) else None
    return found if isinstance(found, str) and len(found) <= 1400 else None


async def sign_in_with_key(
    conn: AsyncConnection, token_hash: str, credential: str, rp: RelyingParty
) -> tuple[Step, int | None]:
    """The waiting sign-in's second step with a key's answer to its challenge."""
    found = await store.pending(conn, token_hash, SIGN_IN)
    if found is None:
        return Step.ENDED, None
    passed = False
    credential_id = _credential_id(credential)
    key = (
        await store.key_by_credential(conn, found.user_id, credential_id) if credential_id else None
    )
    if key is not None and found.challenge:
        # The challenge answers once, right or wrong.
        await store.set_challenge(conn, token_hash, "")
        verified = _verified_assertion(credential, found.challenge, key, rp)
        if verified is not None:
            await store.mark_key_used(conn, key.id, verified)
            passed = True
    return await two_factor.settle(conn, token_hash, found.user_id, passed)


def _verified_assertion(
    credential: str, challenge: str, key: SecurityKey, rp: RelyingParty
) -> int | None:
    """The key's new signature counter if ``credential`` answers ``challenge``; else None."""
    try:
        return verify_authentication_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(challenge),
            expected_rp_id=rp.rp_id,
            expected_origin=rp.origin,
            credential_public_key=base64url_to_bytes(key.public_key),
            credential_current_sign_count=key.sign_count,
        ).new_sign_count
    except Exception:  # whatever the browser sent that does not verify: a refusal
        return None


async def remove(conn: AsyncConnection, user_id: int, key_id: int) -> bool:
    """Remove one key; refused (False) when it is the last second factor: turning
    two-factor off takes a code as well."""
    status = await two_factor.status(conn, user_id)
    if not status.totp and len(status.keys) <= 1:
        return False
    return await store.remove_key(conn, user_id, key_id)

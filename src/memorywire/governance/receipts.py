"""Deletion receipts: a signed, offline-checkable statement of what a hard forget erased.

A ``200`` from a delete proves nothing to a data subject or an auditor. A receipt names the
erased ids per store, when, by whom, under which policy, and a SHA-256 digest of the erased
content (so a holder of the original text can show it was that text, while the receipt itself
carries none of it). It is signed with the deployment's Ed25519 key, the same key that signs
audit checkpoints, and its digest is appended to the audit chain, which ties the receipt to
the log's order of events.

Verification needs only the receipt file: the public key travels inside it, and callers who
must pin the signer pass ``trusted_keys``. Signing covers the canonical JSON of every field
but the signature, so one changed value anywhere in those fields fails. The file is read as
JSON and canonicalised before the check: a receipt that a tool pretty-printed, re-indented or
re-ordered still verifies while its values are unchanged. What canonicalising could hide is
refused outright: a key given twice (a reader would see one value, the check another), and
bytes that are not UTF-8.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from memorywire.core.ids import new_id
from memorywire.governance.chain import canonical_json, public_key_b64, sha256_hex
from memorywire.wire.models import MemoryRecord

__all__ = [
    "RECEIPT_KIND",
    "content_digest",
    "dump_receipt",
    "sign_receipt",
    "unsigned_receipt",
    "verify_receipt",
]

RECEIPT_KIND = "memorywire.deletion_receipt/v0"


def content_digest(records: Sequence[MemoryRecord]) -> str:
    """SHA-256 over the erased memories' ids and contents, in id order.

    Order-independent for the caller, so the same set erased twice digests the same.
    """
    parts = sorted((r.id, canonical_json(r.content)) for r in records)
    return sha256_hex(canonical_json(parts))


def unsigned_receipt(
    *,
    erased: Mapping[str, Sequence[str]],
    actor: str,
    policy: str,
    digest: str,
    ts: int,
    reason_redacted: bool,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The receipt body: ``erased`` maps a store name to the ids erased there."""
    return {
        "kind": RECEIPT_KIND,
        "receipt_id": new_id(ts),
        "ts": ts,
        "actor": actor,
        "policy": policy,
        "erased": {store: sorted(ids) for store, ids in sorted(erased.items())},
        "content_sha256": digest,
        "reason_redacted": reason_redacted,
        "details": dict(details or {}),
    }


def _message(body: Mapping[str, Any]) -> bytes:
    """What the signature covers: the canonical JSON of every field but the signature (the
    public key included, so a receipt cannot be re-attributed to another key)."""
    return canonical_json({k: v for k, v in body.items() if k != "signature"}).encode("utf-8")


def sign_receipt(private_key: Ed25519PrivateKey, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` plus ``public_key`` and an Ed25519 ``signature`` over both (base64)."""
    out = dict(body)
    out["public_key"] = public_key_b64(private_key)
    out["signature"] = base64.b64encode(private_key.sign(_message(out))).decode("ascii")
    return out


def dump_receipt(receipt: Mapping[str, Any]) -> bytes:
    """The file form of a receipt: canonical JSON and a newline, the form it was signed in."""
    return canonical_json(dict(receipt)).encode("utf-8") + b"\n"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse(data: bytes | str) -> Any:
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)


def verify_receipt(
    data: bytes | str | Mapping[str, Any], trusted_keys: Sequence[str] | None = None
) -> tuple[bool, str]:
    """``(ok, why)`` for a receipt given as file bytes, text or a parsed object; never raises.

    Text is parsed strictly (a UTF-8 JSON object, no key twice, no NaN) and checked in its
    canonical form, so layout and key order are free; any change to a signed value, the key
    or the signature fails, and so does a key outside ``trusted_keys`` when that is given.
    """
    try:
        doc = _parse(data) if isinstance(data, bytes | str) else dict(data)
    except (UnicodeDecodeError, ValueError, TypeError, RecursionError) as exc:
        return False, f"not a JSON receipt: {exc}"
    if not isinstance(doc, dict) or doc.get("kind") != RECEIPT_KIND:
        return False, f"not a deletion receipt (kind must be {RECEIPT_KIND!r})"
    sig, key = doc.get("signature"), doc.get("public_key")
    if not isinstance(sig, str) or not isinstance(key, str):
        return False, "receipt has no signature or public_key"
    if trusted_keys is not None and key not in trusted_keys:
        return False, "receipt signed by a key that is not trusted"
    try:
        pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(key, validate=True))
        pub.verify(base64.b64decode(sig, validate=True), _message(doc))
    except (InvalidSignature, ValueError, TypeError):
        return False, "signature does not match the receipt"
    return True, "signature valid"

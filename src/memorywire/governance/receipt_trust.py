"""Whom a deletion receipt's signature binds: the key it names, and whether anyone vouched for it.

A receipt carries its own public key, so a valid signature alone proves only that *someone*
holding *some* key signed these bytes: a forger who erases nothing can sign a receipt with a
fresh key and it verifies. What makes a receipt evidence is the signer: a key the holder
pinned (``--trusted-key``, obtained from the deployment: ``memorywire receipt key`` or
``GET /v0/receipts/key``) or the key of the deployment the verifier runs in. So a check says
which of the three it is, and only the first two are ``ok``:

* ``pinned`` — the key is one the caller passed: ok (exit 0);
* ``deployment`` — the key is this deployment's signing key: ok (exit 0);
* ``unpinned`` — the signature is valid but nobody vouched for the key: **not ok** (exit 3,
  apart from 1, "the signature is wrong or a pinned key did not sign it", and 2, unreadable).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memorywire.governance.chain import public_key_b64
from memorywire.governance.receipts import RECEIPT_KIND, verify_receipt
from memorywire.governance.signing import SigningKeySource, load_signing_key_file

__all__ = ["EXIT_UNPINNED", "check_receipt", "deployment_public_key", "public_key_document"]

#: ``receipt verify``'s exit status for a valid signature by a key nobody pinned.
EXIT_UNPINNED = 3


def deployment_public_key(path: str | Path | None) -> str | None:
    """The public half of the signing key at ``path`` (``None`` when there is none yet);
    never creates a key, so verifying a receipt changes nothing."""
    if path is None or not Path(path).is_file():
        return None
    return public_key_b64(load_signing_key_file(path))


def public_key_document(source: SigningKeySource | None) -> dict[str, Any] | None:
    """What ``receipt key`` and ``GET /v0/receipts/key`` publish (``None``: no key, so this
    deployment signs no receipts). The key is created on first use, as for a receipt, so it
    can be pinned before the first erase."""
    key = None if source is None else source.get()
    if key is None:
        return None
    return {"kind": RECEIPT_KIND, "algorithm": "Ed25519", "public_key": public_key_b64(key)}


def check_receipt(raw: bytes, trusted_keys: Sequence[str] = (),
                  deployment_key: str | None = None) -> tuple[dict[str, Any], int]:
    """The verdict on a receipt file as ``receipt verify`` prints it, and its exit status."""
    valid, why = verify_receipt(raw)
    if not valid:
        return {"ok": False, "signature": "invalid", "signer": None, "reason": why}, 1
    key = str(json.loads(raw)["public_key"])
    out: dict[str, Any] = {"signature": "valid", "public_key": key}
    if key in trusted_keys:
        return {"ok": True, **out, "signer": "pinned",
                "reason": "signature valid, signed by a pinned key (--trusted-key)"}, 0
    if deployment_key is not None and key == deployment_key:
        return {"ok": True, **out, "signer": "deployment",
                "reason": "signature valid, signed by this deployment's key"}, 0
    if trusted_keys:
        return {"ok": False, **out, "signer": "unpinned",
                "reason": "signature valid, but not by a key given with --trusted-key"}, 1
    return {"ok": False, **out, "signer": "unpinned",
            "reason": "signature valid, signer not pinned: anyone can sign a receipt with "
                      "a key of their own; check the key against the deployment's "
                      "(memorywire receipt key, GET /v0/receipts/key) and pass it with "
                      "--trusted-key"}, EXIT_UNPINNED

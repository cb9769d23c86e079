"""Deletion receipts: a hard forget on real SQLite returns a receipt that verifies offline,
one changed byte does not, and neither the audit log nor any store file keeps the content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.governance.audit import AuditLog
from memorywire.governance.erasure import erase_with_receipt
from memorywire.governance.receipts import dump_receipt, verify_receipt
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RecallRequest, RememberRequest

pytestmark = pytest.mark.anyio

SECRET = "zebra-papaya-4471 lives at 12 Quince Road"


def _req(text: str) -> RememberRequest:
    return RememberRequest(agent_id="a", type=MemoryType.SEMANTIC, content=text)


async def _erase(tmp_path: Path, *, redact: bool) -> tuple[dict[str, object], AuditLog, Path]:
    db = tmp_path / "m.db"
    store = SqliteStore(db, embedder=HashingEmbedder(64))
    audit = AuditLog.open(tmp_path / "gov.db")
    key = Ed25519PrivateKey.generate()
    try:
        a = await store.remember(_req(SECRET))
        await store.remember(_req("the sky is blue"))
        er = await erase_with_receipt(
            store, ForgetRequest(agent_id="a", ids=[a.id], hard_delete=True,
                                 reason=f"user asked: {SECRET}"),
            key, audit=audit, redact_reason=redact)
        hits = await store.recall(RecallRequest(agent_id="a", query="zebra papaya Quince"))
        assert all("zebra" not in str(h.content) for h in hits.results)
        assert er.response.forgotten_ids == [a.id]
    finally:
        await store.aclose()
    return er.receipt, audit, db


async def test_receipt_verifies_and_one_changed_byte_does_not(tmp_path: Path) -> None:
    receipt, audit, _ = await _erase(tmp_path, redact=True)
    raw = dump_receipt(receipt)
    assert verify_receipt(raw) == (True, "signature valid")
    for i in range(0, len(raw) - 1, max(1, len(raw) // 40)):
        bad = bytearray(raw)
        bad[i] = bad[i] ^ 0x01
        assert verify_receipt(bytes(bad))[0] is False, f"byte {i} changed and still verified"
    assert verify_receipt(raw, trusted_keys=["someone-else"])[0] is False
    audit.close()


async def test_nothing_of_the_erased_content_survives_in_files_or_audit(tmp_path: Path) -> None:
    receipt, audit, _ = await _erase(tmp_path, redact=True)
    entries = [e.to_dict() for e in audit.entries()]
    audit.close()
    assert any(e["action"] == "receipt" for e in entries)
    assert SECRET not in json.dumps(entries) and SECRET not in json.dumps(receipt)
    assert receipt["reason_redacted"] is True
    needle = b"zebra-papaya-4471"
    for f in tmp_path.iterdir():
        assert needle not in f.read_bytes(), f"{f.name} still holds the erased bytes"


async def test_unredacted_reason_is_kept_in_the_receipt(tmp_path: Path) -> None:
    receipt, audit, _ = await _erase(tmp_path, redact=False)
    audit.close()
    assert "reason" in receipt["details"]  # type: ignore[operator]


async def test_soft_forget_gets_no_receipt(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64))
    try:
        with pytest.raises(InvalidRequest, match="hard_delete"):
            await erase_with_receipt(store, ForgetRequest(agent_id="a", ids=["x"]),
                                     Ed25519PrivateKey.generate())
    finally:
        await store.aclose()

"""Verifying a deletion receipt offline: any layout of the unchanged JSON verifies, any edit
fails, and no input makes the verifier raise.

Users keep receipts in whatever tool they have; a pretty-printer that re-indents or re-orders
the keys must not turn a genuine receipt into a "forged" one, and a forger must gain nothing
from the freedom that allows (a duplicate key, a junk character in the signature, a forged
id hidden in a pretty-printed file).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.governance.chain import public_key_b64
from memorywire.governance.receipts import (
    RECEIPT_KIND,
    content_digest,
    dump_receipt,
    sign_receipt,
    unsigned_receipt,
    verify_receipt,
)
from memorywire.wire.models import MemoryRecord, MemoryType

KEY = Ed25519PrivateKey.generate()
VALID = (True, "signature valid")


def _record(id_: str, content: str) -> MemoryRecord:
    return MemoryRecord(id=id_, agent_id="a", type=MemoryType.SEMANTIC, content=content,
                        created_at=1)


def _receipt(**details: Any) -> dict[str, Any]:
    body = unsigned_receipt(
        erased={"sqlite": ["m2", "m1"], "archive": ["m1"]},
        actor="alice",
        policy="request",
        digest=content_digest([_record("m1", "café at 9"), _record("m2", "the dog")]),
        ts=1_700_000_000_000,
        reason_redacted=True,
        details={"agent_id": "a", "counts": {"sqlite": 2}, **details},
    )
    return sign_receipt(KEY, body)


def _layouts(doc: dict[str, Any]) -> list[str]:
    """The same JSON as tools write it: indented, keys reversed, ASCII-escaped, one line."""
    reversed_keys = {k: doc[k] for k in sorted(doc, reverse=True)}
    return [
        json.dumps(doc, indent=2),
        json.dumps(reversed_keys, indent=4),
        json.dumps(doc, ensure_ascii=True, separators=(", ", ": ")),
        json.dumps(doc) + "\n\n",
    ]


def test_a_pretty_printed_unchanged_receipt_verifies() -> None:
    receipt = _receipt(note="naïve ✓")
    assert verify_receipt(dump_receipt(receipt)) == VALID
    for text in _layouts(receipt):
        assert verify_receipt(text) == VALID, text
        assert verify_receipt(text.encode("utf-8")) == VALID, text
    assert verify_receipt(receipt) == VALID
    assert verify_receipt(receipt, trusted_keys=[public_key_b64(KEY)]) == VALID


EDITS: list[tuple[str, Any]] = [
    ("forged erased id", lambda d: d["erased"]["sqlite"].append("m3")),
    ("erased id removed", lambda d: d["erased"]["sqlite"].remove("m2")),
    ("store renamed", lambda d: d["erased"].update(mem0=d["erased"].pop("archive"))),
    ("digest emptied", lambda d: d.update(content_sha256=None)),
    ("digest of other text", lambda d: d.update(
        content_sha256=content_digest([_record("m1", "something else")]))),
    ("time moved", lambda d: d.update(ts=d["ts"] + 1)),
    ("time as float", lambda d: d.update(ts=float(d["ts"]))),
    ("actor", lambda d: d.update(actor="mallory")),
    ("policy", lambda d: d.update(policy="retention")),
    ("redaction flag", lambda d: d.update(reason_redacted=False)),
    ("details", lambda d: d["details"].update(agent_id="b")),
    ("field added", lambda d: d.update(extra=1)),
    ("field removed", lambda d: d.pop("details")),
    ("receipt id", lambda d: d.update(receipt_id=d["receipt_id"] + "0")),
    ("other signer's key", lambda d: d.update(
        public_key=public_key_b64(Ed25519PrivateKey.generate()))),
]


@pytest.mark.parametrize(("name", "edit"), EDITS, ids=[e[0] for e in EDITS])
def test_any_edit_fails_however_the_file_is_laid_out(name: str, edit: Any) -> None:
    forged = json.loads(json.dumps(_receipt()))
    edit(forged)
    assert verify_receipt(forged)[0] is False
    assert verify_receipt(dump_receipt(forged))[0] is False
    for text in _layouts(forged):
        ok, why = verify_receipt(text)
        assert ok is False, (name, text)
        assert why == "signature does not match the receipt"


def test_a_key_given_twice_is_refused_not_resolved() -> None:
    """The parser keeps the last value; a reader (or a grep) sees the first. Neither wins."""
    text = json.dumps(_receipt(), indent=2)
    forged = text.replace('"erased": {', '"erased": {"sqlite": ["m9"]},\n  "erased": {', 1)
    assert json.loads(forged) == json.loads(text)  # what a lenient verifier would check
    ok, why = verify_receipt(forged)
    assert ok is False and "'erased' appears twice" in why
    nested = text.replace('"sqlite": [', '"sqlite": ["m9"], "sqlite": [', 1)
    assert verify_receipt(nested)[0] is False


def test_wrong_kind_and_missing_signature_are_named() -> None:
    receipt = _receipt()
    assert verify_receipt({**receipt, "kind": "memorywire.deletion_receipt/v1"}) == (
        False, f"not a deletion receipt (kind must be {RECEIPT_KIND!r})")
    no_kind = {k: v for k, v in receipt.items() if k != "kind"}
    assert verify_receipt(no_kind)[1].startswith("not a deletion receipt")
    for field in ("signature", "public_key"):
        for bad in (None, 7, ["x"]):
            assert verify_receipt({**receipt, field: bad}) == (
                False, "receipt has no signature or public_key"), (field, bad)
        gone = {k: v for k, v in receipt.items() if k != field}
        assert verify_receipt(gone) == (False, "receipt has no signature or public_key")


def test_non_base64_characters_in_signature_or_key_fail() -> None:
    """A lenient decoder drops characters outside the alphabet, so junk would still verify."""
    receipt = _receipt()
    sig, key = receipt["signature"], receipt["public_key"]
    assert base64.b64decode(sig[:10] + "!" + sig[10:]) == base64.b64decode(sig)
    for field, value in (("signature", sig[:10] + "!" + sig[10:]),
                         ("signature", sig[:10] + " " + sig[10:]),
                         ("signature", sig + "\n"),
                         ("public_key", key[:5] + "*" + key[5:]),
                         ("signature", sig[:-4]),
                         ("public_key", base64.b64encode(b"short").decode())):
        assert verify_receipt({**receipt, field: value}) == (
            False, "signature does not match the receipt"), (field, value)


def test_a_key_spelled_with_junk_is_refused_even_when_the_signature_covers_it() -> None:
    """One spelling per key: ``trusted_keys`` compares strings, so a signer must not be able
    to present its key in a second spelling that decodes to the same bytes."""
    body = unsigned_receipt(erased={"s": ["m"]}, actor="x", policy="p", digest="d", ts=1,
                            reason_redacted=False)
    key = public_key_b64(KEY)
    odd = {**body, "public_key": key[:5] + "*" + key[5:]}
    message = json.dumps(odd, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    odd["signature"] = base64.b64encode(KEY.sign(message.encode("utf-8"))).decode("ascii")
    assert verify_receipt(odd) == (False, "signature does not match the receipt")
    assert verify_receipt(dump_receipt(odd))[0] is False


def test_text_that_is_not_strict_json_is_refused_even_if_signed() -> None:
    """NaN is not JSON and a receipt file is UTF-8: a receipt signed over a NaN, or the same
    receipt re-encoded as UTF-16 or with a byte order mark, does not verify."""
    with_nan = sign_receipt(KEY, unsigned_receipt(
        erased={"s": ["m"]}, actor="x", policy="p", digest="d", ts=1, reason_redacted=False,
        details={"score": float("nan")}))
    assert b"NaN" in dump_receipt(with_nan)
    assert verify_receipt(dump_receipt(with_nan)) == (
        False, "not a JSON receipt: NaN is not JSON")
    text = dump_receipt(_receipt()).decode("utf-8")
    assert verify_receipt(text.encode("utf-8")) == VALID
    assert verify_receipt(text.encode("utf-16"))[0] is False
    assert verify_receipt(text.encode("utf-16-le"))[0] is False
    assert verify_receipt(b"\xef\xbb\xbf" + text.encode("utf-8"))[0] is False


def test_an_untrusted_signer_fails_even_with_a_valid_signature() -> None:
    receipt = _receipt()
    assert verify_receipt(receipt, trusted_keys=[]) == (
        False, "receipt signed by a key that is not trusted")
    other = public_key_b64(Ed25519PrivateKey.generate())
    assert verify_receipt(dump_receipt(receipt), trusted_keys=[other])[0] is False
    assert verify_receipt(receipt, trusted_keys=[other, public_key_b64(KEY)]) == VALID


HOSTILE: list[Any] = [
    b"[]", b"{}", b"null", b"7", b'"text"', b"", b"   ", b"\xff\xfe{}", "[" * 100_000,
    b"[" * 100_000, b'{"kind": NaN}', b'{"kind": Infinity}', b"{'kind': 1}", "{\"a\": 1",
    json.dumps({"kind": RECEIPT_KIND}).encode("utf-16"), b'{"kind": "\xc3"}', [], 7, None,
    {"kind": RECEIPT_KIND, "signature": "AA==", "public_key": "AA==", "x": {1, 2}},
    {"kind": RECEIPT_KIND, "signature": "AA==", "public_key": "AA==", 1: "a", "b": 2},
]


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_gets_an_answer_not_an_exception(data: Any) -> None:
    ok, why = verify_receipt(data)
    assert ok is False and isinstance(why, str) and why


def test_non_json_text_is_named_as_such() -> None:
    ok, why = verify_receipt(b"[")
    assert not ok and why.startswith("not a JSON receipt")
    assert verify_receipt(b"\xff{}")[1].startswith("not a JSON receipt")
    assert verify_receipt(b"[]")[1].startswith("not a deletion receipt")


def test_content_digest_proves_which_text_was_erased() -> None:
    """The holder of a memory's id and text recomputes the receipt's digest exactly."""
    a, b = _record("m1", "café at 9"), _record("m2", "the dog")
    digest = content_digest([a, b])
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert content_digest([b, a]) == digest  # the caller's order does not matter
    assert content_digest([_record("m1", "cafe at 9"), b]) != digest
    assert content_digest([_record("m3", "café at 9"), b]) != digest
    assert content_digest([a]) != digest and content_digest([]) != digest
    assert _receipt()["content_sha256"] == digest


def test_a_third_party_verifies_with_nothing_but_the_documented_rule() -> None:
    """The signature covers the canonical JSON (sorted keys, no spaces, UTF-8) of every field
    but ``signature``: what an auditor's own tool must be able to check."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    receipt = _receipt(note="naïve")
    message = json.dumps({k: v for k, v in receipt.items() if k != "signature"},
                         sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(receipt["public_key"]))
    key.verify(base64.b64decode(receipt["signature"]), message.encode("utf-8"))  # no raise
    assert receipt["public_key"] == public_key_b64(KEY)
    assert set(receipt) == {"kind", "receipt_id", "ts", "actor", "policy", "erased",
                            "content_sha256", "reason_redacted", "details", "public_key",
                            "signature"}
    assert (receipt["ts"], receipt["actor"], receipt["policy"]) == (
        1_700_000_000_000, "alice", "request")
    # the receipt id is a UUIDv7 whose time field is the receipt's ts
    assert int(receipt["receipt_id"].replace("-", "")[:12], 16) == receipt["ts"]


def test_unsigned_receipt_sorts_what_it_names() -> None:
    body = unsigned_receipt(erased={"z": ["b", "a"], "m": ["c"]}, actor="x", policy="p",
                            digest="d", ts=5, reason_redacted=False)
    assert list(body["erased"]) == ["m", "z"] and body["erased"]["z"] == ["a", "b"]
    assert body["details"] == {} and body["ts"] == 5 and body["kind"] == RECEIPT_KIND
    assert body["receipt_id"] != unsigned_receipt(
        erased={}, actor="x", policy="p", digest="d", ts=5, reason_redacted=False)["receipt_id"]
    signed = sign_receipt(KEY, body)
    assert set(signed) == {*body, "public_key", "signature"}
    assert dump_receipt(signed).endswith(b"}\n") and b" " not in dump_receipt(signed)

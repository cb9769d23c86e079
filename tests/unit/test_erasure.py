"""What a hard forget's receipt vouches for, on real SQLite: the erased ids per store, a digest
the holder of the erased text can recompute, who and under which policy, and an audit entry
that ties the exact receipt to the log."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memorywire.core.clock import FakeClock
from memorywire.embed.hashing import HashingEmbedder
from memorywire.errors import InvalidRequest
from memorywire.governance import erasure
from memorywire.governance.actor import acting_as
from memorywire.governance.chain import canonical_json, sha256_hex
from memorywire.governance.erasure import erase_with_receipt, records_selected
from memorywire.governance.receipts import content_digest, verify_receipt
from memorywire.store.sqlite import SqliteStore
from memorywire.wire.models import ForgetRequest, MemoryType, RememberRequest

pytestmark = pytest.mark.anyio
KEY = Ed25519PrivateKey.generate()


class Sink:
    """The audit log's ``record``, kept in a list (the real log is test_receipts.py's)."""

    def __init__(self) -> None:
        self.events: list[Mapping[str, Any]] = []

    async def record(self, event: Mapping[str, Any]) -> None:
        self.events.append(event)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64))
    try:
        yield s
    finally:
        await s.aclose()


async def _put(store: SqliteStore, text: str, **kw: Any) -> str:
    return (await store.remember(RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                                 content=text, **kw))).id


async def test_the_receipt_digests_exactly_what_the_holder_can_recompute(
    store: SqliteStore,
) -> None:
    keep = await _put(store, "stays")
    one, two = await _put(store, "first secret"), await _put(store, "second secret")
    held = [await store.get("a", one), await store.get("a", two)]
    sink = Sink()
    with acting_as("alice"):
        er = await erase_with_receipt(
            store, ForgetRequest(agent_id="a", ids=[two, one], hard_delete=True, reason="asked"),
            KEY, audit=sink, policy="gdpr-17", clock=FakeClock(1234), details={"ticket": 7})
    receipt = er.receipt
    assert receipt is not None and verify_receipt(receipt)[0]
    assert receipt["content_sha256"] == content_digest([r for r in held if r is not None])
    assert receipt["content_sha256"] != content_digest([r for r in held[:1] if r is not None])
    assert sorted(er.response.forgotten_ids) == sorted([one, two])
    assert receipt["erased"] == {store.name: sorted([one, two])}
    assert (receipt["actor"], receipt["policy"], receipt["ts"]) == ("alice", "gdpr-17", 1234)
    assert receipt["reason_redacted"] is False
    assert receipt["details"] == {"agent_id": "a", "user_id": None,
                                  "counts": {store.name: 2}, "undigested_ids": [],
                                  "reason": "asked", "ticket": 7}
    assert await store.get("a", keep) is not None and await store.get("a", one) is None
    [event] = sink.events
    assert event == {
        "action": "receipt", "actor": "alice", "agent_id": "a",
        "memory_ids": er.response.forgotten_ids,
        "details": {"receipt_id": receipt["receipt_id"],
                    "receipt_sha256": sha256_hex(canonical_json(receipt)),
                    "content_sha256": receipt["content_sha256"], "policy": "gdpr-17"}}


async def test_a_redacted_reason_reaches_neither_the_store_nor_the_receipt(
    store: SqliteStore,
) -> None:
    mid = await _put(store, "x")
    er = await erase_with_receipt(
        store, ForgetRequest(agent_id="a", ids=[mid], hard_delete=True, reason="about x"), KEY,
        redact_reason=True)
    assert er.receipt is not None and er.receipt["reason_redacted"] is True
    assert "reason" not in er.receipt["details"]
    no_reason = await erase_with_receipt(
        store, ForgetRequest(agent_id="a", ids=["gone"], hard_delete=True), KEY)
    assert no_reason.receipt is not None and "reason" not in no_reason.receipt["details"]


async def test_an_id_a_soft_forget_hid_is_erased_and_named_undigested(
    store: SqliteStore,
) -> None:
    hidden, shown = await _put(store, "hidden"), await _put(store, "shown")
    await store.forget(ForgetRequest(agent_id="a", ids=[hidden]))
    shown_rec = await store.get("a", shown)
    er = await erase_with_receipt(
        store, ForgetRequest(agent_id="a", ids=[hidden, shown], hard_delete=True), KEY)
    assert er.receipt is not None
    assert sorted(er.response.forgotten_ids) == sorted([hidden, shown])
    assert er.receipt["details"]["undigested_ids"] == [hidden]
    assert shown_rec is not None and er.receipt["content_sha256"] == content_digest([shown_rec])


async def test_nothing_erased_names_no_store(store: SqliteStore) -> None:
    er = await erase_with_receipt(
        store, ForgetRequest(agent_id="a", ids=["nobody"], hard_delete=True), KEY)
    assert er.receipt is not None and er.receipt["erased"] == {}
    assert er.receipt["content_sha256"] == content_digest([])
    assert er.receipt["details"]["counts"] == {store.name: 0}


async def test_a_filter_selects_what_it_digests_and_a_huge_one_is_refused(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    tagged = [await _put(store, f"tagged {i}", metadata={"t": 1}) for i in range(3)]
    await _put(store, "untagged")
    by_filter = ForgetRequest(agent_id="a", filter={"t": 1}, hard_delete=True)
    assert sorted(r.id for r in await records_selected(store, by_filter)) == sorted(tagged)
    assert [r.id for r in await records_selected(
        store, ForgetRequest(agent_id="a", ids=[tagged[0], "nobody"]))] == [tagged[0]]
    monkeypatch.setattr(erasure, "MAX_DIGESTED", 3)
    assert len(await records_selected(store, by_filter)) == 3  # at the limit: fine
    monkeypatch.setattr(erasure, "MAX_DIGESTED", 2)
    with pytest.raises(InvalidRequest) as exc:
        await erase_with_receipt(store, by_filter, KEY)
    assert exc.value.message == (
        "filter selects more than 2 memories; forget them in smaller sets to get receipts")
    assert len(await records_selected(
        store, ForgetRequest(agent_id="a", filter={"t": 1}, hard_delete=True,
                             ids=tagged[:1]))) == 1


async def test_a_cascade_is_expanded_so_the_receipt_digests_the_descendants(
    store: SqliteStore,
) -> None:
    parent = await _put(store, "parent fact")
    child = await _put(store, "summary of the parent",
                       links=[{"id": parent, "type": "derived_from"}])
    held = [await store.get("a", parent), await store.get("a", child)]
    er = await erase_with_receipt(
        store, ForgetRequest(agent_id="a", ids=[parent], hard_delete=True, cascade=True), KEY)
    assert er.receipt is not None
    assert er.receipt["erased"] == {store.name: sorted([parent, child])}
    assert er.receipt["content_sha256"] == content_digest([r for r in held if r is not None])


async def test_one_erased_memory_is_named_under_its_store_with_the_default_policy(
    store: SqliteStore,
) -> None:
    mid = await _put(store, "only one")
    er = await erase_with_receipt(store, ForgetRequest(agent_id="a", ids=[mid], hard_delete=True),
                                  KEY)
    assert er.receipt is not None and er.receipt["erased"] == {store.name: [mid]}
    assert er.receipt["policy"] == "request" and er.receipt["reason_redacted"] is False
    assert er.receipt["actor"] == "anonymous"  # no acting_as: the actor is not made up


async def test_records_selected_stays_in_the_request_s_scope(store: SqliteStore) -> None:
    mine = await _put(store, "mine", user_id="u1", metadata={"t": 1})
    theirs = await _put(store, "theirs", user_id="u2", metadata={"t": 1})
    other_agent = (await store.remember(RememberRequest(
        agent_id="b", type=MemoryType.SEMANTIC, content="b's", metadata={"t": 1}))).id
    by_ids = ForgetRequest(agent_id="a", user_id="u1", ids=[mine, theirs, other_agent])
    assert [r.id for r in await records_selected(store, by_ids)] == [mine]
    by_filter = ForgetRequest(agent_id="a", user_id="u1", filter={"t": 1})
    assert [r.id for r in await records_selected(store, by_filter)] == [mine]
    everyone = ForgetRequest(agent_id="a", filter={"t": 1})
    assert sorted(r.id for r in await records_selected(store, everyone)) == sorted([mine, theirs])
    assert [r.id for r in await records_selected(
        store, ForgetRequest(agent_id="a", filter={"t": 2}))] == []


async def test_governance_never_sees_a_redacted_reason(tmp_path: Path) -> None:
    from memorywire.governance import GovernedStore

    gov = GovernedStore(SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64)),
                        tmp_path / "gov.db")
    try:
        mid = await _put(gov, "diagnosis of X")  # type: ignore[arg-type]
        await erase_with_receipt(gov, ForgetRequest(
            agent_id="a", ids=[mid], hard_delete=True, reason="the note about X's diagnosis"),
            KEY, redact_reason=True)
        logged = [e["details"] for e in gov.audit_entries(limit=1000)]
        assert logged and "X's diagnosis" not in repr(logged)
        kept = await _put(gov, "kept reason")  # type: ignore[arg-type]
        await erase_with_receipt(gov, ForgetRequest(
            agent_id="a", ids=[kept], hard_delete=True, reason="plain reason"), KEY)
        assert "plain reason" in repr([e["details"] for e in gov.audit_entries(limit=1000)])
    finally:
        await gov.aclose()


async def test_a_staged_forget_vouches_for_nothing_yet(tmp_path: Path) -> None:
    from memorywire.governance import GovernedStore

    gov = GovernedStore(SqliteStore(tmp_path / "m.db", embedder=HashingEmbedder(64)),
                        tmp_path / "gov.db", require_approval_for=["forget"])
    sink = Sink()
    try:
        mid = await _put(gov, "awaiting review")  # type: ignore[arg-type]
        er = await erase_with_receipt(
            gov, ForgetRequest(agent_id="a", ids=[mid], hard_delete=True), KEY, audit=sink)
        assert er.receipt is None and sink.events == []
        assert er.response.pending_approval is True and er.response.forgotten_ids == []
    finally:
        await gov.aclose()


async def test_a_soft_forget_is_refused_before_anything_happens(store: SqliteStore) -> None:
    mid = await _put(store, "still here")
    with pytest.raises(InvalidRequest) as exc:
        await erase_with_receipt(store, ForgetRequest(agent_id="a", ids=[mid]), KEY)
    assert exc.value.message == "hard_delete: a receipt is only issued for a hard forget"
    assert await store.get("a", mid) is not None


async def test_an_archived_memory_a_filter_names_is_digested(store: SqliteStore) -> None:
    from memorywire.core.records import ListQuery
    from memorywire.wire.models import ExpireAction, ExpirePolicy, ExpireRequest

    archived = await _put(store, "low confidence note", metadata={"t": 1}, confidence=0.1)
    live = await _put(store, "kept", metadata={"t": 1})
    await store.expire(ExpireRequest(agent_id="a", policy=ExpirePolicy(confidence_below=0.5),
                                     action=ExpireAction.ARCHIVE))
    assert [r.id for r in await store.list(ListQuery(agent_id="a"))] == [live]  # archived
    selected = await records_selected(store, ForgetRequest(agent_id="a", filter={"t": 1}))
    assert sorted(r.id for r in selected) == sorted([archived, live])


async def test_the_digest_limit_holds_past_a_store_s_default_page(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store lists 1000 rows by default: the selection must ask for more than the limit,
    or a larger set would be digested in part and vouched for in full."""
    await store.remember_many([RememberRequest(agent_id="a", type=MemoryType.SEMANTIC,
                                               content=f"n{i}", metadata={"t": 1})
                               for i in range(1001)])
    monkeypatch.setattr(erasure, "MAX_DIGESTED", 1000)
    with pytest.raises(InvalidRequest):
        await records_selected(store, ForgetRequest(agent_id="a", filter={"t": 1}))
    monkeypatch.setattr(erasure, "MAX_DIGESTED", 1001)
    assert len(await records_selected(store, ForgetRequest(agent_id="a", filter={"t": 1}))) == 1001

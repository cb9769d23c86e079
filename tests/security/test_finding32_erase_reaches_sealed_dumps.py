"""Issue 32 (erasure that reaches copies): ``erase`` removed a user's memories from the store,
but a dump written the day before still held every word of them, readable by anyone with
the file, and importing it brought the user back. With ``per_user_keys`` on, a dump seals each
record under its user's data key (kept in the governance database, wrapped by a key file
outside it); an erase that empties the user's scope destroys that key, so the old dump can no
longer reveal the user, an import of it leaves those records out (``sealed_erased``), and
the erase's signed receipt says which copies it reached (``details.copies``).

Before the fix: the dump held the content in plain text, the receipt named no copies, and
the import restored the erased user's memories.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memorywire.governance import GovernedStore
from memorywire.portability.dump import DumpReader, verify_dump
from memorywire.store.memory import InMemoryStore
from tests.security.conftest import Caller, Rig, open_rig, rest

pytestmark = pytest.mark.anyio

ALICE = ("Alice's diagnosis is confidential", "Alice banks at First Street")
BOB = "Bob likes chess"


@pytest.fixture
async def sealed(tmp_path: Path) -> AsyncIterator[Rig]:
    async with open_rig(tmp_path, signing=True, per_user_keys=True) as rig:
        for i, text in enumerate(ALICE):
            out = await rest(rig, "remember", {"agent_id": "A", "user_id": "alice",
                                               "id": f"a{i}", "type": "semantic",
                                               "content": text}, rig.admin)
            assert out.ok, out
        out = await rest(rig, "remember", {"agent_id": "A", "user_id": "bob", "id": "b0",
                                           "type": "semantic", "content": BOB}, rig.admin)
        assert out.ok, out
        yield rig


async def _export(rig: Rig) -> bytes:
    r = await rig.http.get("/v0/admin/export", params={"include_vectors": "true"},
                           headers={"authorization": f"Bearer {rig.admin}"})
    assert r.status_code == 200, r.text
    return r.content


async def test_an_erase_makes_an_earlier_dump_unreadable_for_that_user(
    sealed: Rig, tmp_path: Path
) -> None:
    rig = sealed
    dump = await _export(rig)
    for text in (*ALICE, BOB):
        assert text.encode() not in dump, "a sealed dump shows no content"
    assert json.loads(dump.splitlines()[0])["sealed"] is True
    path = tmp_path / "before-erase.jsonl"
    path.write_bytes(dump)
    assert verify_dump(str(path)) == 3  # digests check without any key

    erased = await rest(rig, "erase", {"agent_id": "A", "user_id": "alice"}, rig.admin)
    assert erased.ok and sorted(erased.body["erased_ids"]) == ["a0", "a1"], erased
    copies = erased.body["receipt"]["details"]["copies"]
    assert copies["dumps"].startswith("covered"), copies
    assert len(copies["data_keys_destroyed"]) == 1, copies
    assert copies["not_covered"], copies

    # the old dump, opened with the deployment's own keys: alice's lines cannot be read
    with open(path, "rb") as stream:
        reader = DumpReader(stream, opener=_opener(rig.gov))
        opened = [e.row.content() for e in reader.entries()]
    assert opened == [BOB] and reader.erased == 2

    # and an import of it does not bring alice back
    r = await rig.http.post("/v0/admin/import", content=dump,
                            headers={"authorization": f"Bearer {rig.admin}",
                                     "content-type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    assert r.json()["sealed_erased"] == 2, r.json()
    assert await rig.gov.get("A", "a0") is None and await rig.gov.get("A", "a1") is None


def _opener(gov: GovernedStore) -> Any:
    from memorywire.portability.sealing import RecordOpener

    return RecordOpener(gov.copies.key, gov.copies.key_state)


async def test_a_dump_before_any_erase_round_trips(sealed: Rig) -> None:
    """Sealing costs nothing in fidelity: the deployment restores its own sealed dump."""
    dump = await _export(sealed)
    changed = await rest(sealed, "update", {"agent_id": "A", "id": "a0", "content": "lost"},
                         sealed.admin)
    assert changed.ok and not changed.body["pending_approval"], changed
    r = await sealed.http.post("/v0/admin/import?on_conflict=replace", content=dump,
                               headers={"authorization": f"Bearer {sealed.admin}",
                                        "content-type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    assert r.json()["replaced"] == 3 and "sealed_erased" not in r.json(), r.json()
    rec = await sealed.gov.get("A", "a0")
    assert rec is not None and rec.content == ALICE[0]


@pytest.mark.parametrize("transport", ["rest", "jsonrpc", "mcp"])
async def test_every_transports_erase_receipt_names_its_copies(sealed: Rig,
                                                               transport: str) -> None:
    rig = sealed
    await _export(rig)  # bob's data key exists once a dump sealed his memories
    out = await Caller(transport, rig)("erase", {"agent_id": "A", "user_id": "bob"},
                                       rig.admin)
    assert out.ok, out
    if out.body["pending_approval"]:  # over MCP: staged, then a person approves it
        done = await rest(rig, "approvals.approve", {"id": out.body["approval_id"]},
                          rig.reviewer)
        assert done.ok, done
        receipt = done.body["result"]["receipt"]
    else:
        receipt = out.body["receipt"]
    assert receipt["details"]["copies"]["dumps"].startswith("covered"), receipt
    keys = rig.gov.copies.keys
    assert rig.gov.worker.call(lambda: keys.destroyed("A", "bob")), "bob's data key is gone"


async def test_the_setting_stays_on_for_every_tool_that_opens_the_database(
    tmp_path: Path
) -> None:
    """A later ``memorywire export --governance-db`` without the setting still seals."""
    first = GovernedStore(InMemoryStore(), tmp_path / "gov.db", per_user_keys=True)
    await first.aclose()
    again = GovernedStore(InMemoryStore(), tmp_path / "gov.db")
    try:
        assert again.copies.sealing
    finally:
        await again.aclose()


async def test_an_erase_takes_the_users_soft_forgotten_memories_too(call: Caller,
                                                                     rig: Rig) -> None:
    """Found while building the above: ``erase`` listed the live and archived memories only,
    so a memory soft-forgotten before the erase kept its content in the store (and in every
    later ``include_forgotten`` dump). Before the fix: ``erased_ids`` lacked it and the row
    was still there."""
    for id_ in ("s0", "s1"):
        out = await rest(rig, "remember", {"agent_id": "A", "user_id": "carol", "id": id_,
                                           "type": "semantic", "content": f"carol {id_}"},
                         rig.admin)
        assert out.ok, out
    hidden = await rest(rig, "forget", {"agent_id": "A", "ids": ["s0"]}, rig.admin)
    assert hidden.ok and hidden.body["forgotten_ids"] == ["s0"], hidden
    erased = await call("erase", {"agent_id": "A", "user_id": "carol"}, rig.admin)
    assert erased.ok, erased
    if erased.body["pending_approval"]:  # over MCP a person approves it
        done = await rest(rig, "approvals.approve", {"id": erased.body["approval_id"]},
                          rig.reviewer)
        assert done.ok, done
    else:
        assert sorted(erased.body["erased_ids"]) == ["s0", "s1"], erased.body
    rows = await rig.gov.inner.export_rows("A", None, 100)  # every state, soft-deleted too
    assert [r.id for r in rows if r.user_id == "carol"] == []

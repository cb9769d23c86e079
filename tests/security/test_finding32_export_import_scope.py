"""Finding 32 (high): an admin token scoped to agent a1 exported another agent's and another
user's memories (``GET /v0/admin/export``, with ``include_forgotten`` and ``agent_id=b1``),
and ``POST /v0/admin/import?on_conflict=replace`` overwrote b1's memory and added one. Imports
were audited as ``anonymous``. Now export and import stay inside the token's scope (REST is
their only surface) and an import is audited as the token that made it."""

from __future__ import annotations

import json

import pytest

from memorywire.wire.models import ForgetRequest, RememberRequest
from tests.security.conftest import Rig
from tests.security.dumps import dump, post_import, row

pytestmark = pytest.mark.anyio


async def _seed(rig: Rig) -> None:
    for agent, user, mid, text in [("a1", "u1", "a1u1", "a1 of u1"),
                                   ("a1", "u2", "a1u2", "a1 of u2"),
                                   ("b1", None, "b1m", "b1's own secret")]:
        await rig.gov.remember(RememberRequest(agent_id=agent, user_id=user, id=mid,
                                               type="semantic", content=text))
    await rig.gov.remember(RememberRequest(agent_id="b1", id="b1gone", type="semantic",
                                           content="b1 forgot this"))
    await rig.gov.forget(ForgetRequest(agent_id="b1", ids=["b1gone"]))


async def _export(rig: Rig, token: str, query: str = "") -> tuple[int, list[dict[str, object]]]:
    r = await rig.http.get(f"/v0/admin/export{query}",
                           headers={"authorization": f"Bearer {token}"})
    if r.status_code != 200:
        return r.status_code, [r.json()]
    lines = [json.loads(x) for x in r.text.splitlines()]
    return 200, [x["record"] for x in lines if x["kind"] == "record"]


async def test_a_scoped_admin_exports_only_its_own_agents_and_users(rig: Rig) -> None:
    await _seed(rig)
    a1_admin, _ = rig.tokens.create(role="admin", agent_ids=["a1"], name="a1-admin")
    u1_admin, _ = rig.tokens.create(role="admin", agent_ids=["a1"], user_ids=["u1"],
                                    name="a1-u1-admin")

    status, records = await _export(rig, a1_admin, "?include_forgotten=true")
    assert status == 200
    assert sorted(str(r["id"]) for r in records) == ["a1u1", "a1u2"]

    for query in ("?agent_id=b1", "?agent_id=b1&include_forgotten=true", "?agent_id=zz"):
        status, body = await _export(rig, a1_admin, query)
        assert status == 403 and body[0]["code"] == "forbidden", (query, body)

    status, records = await _export(rig, u1_admin, "?include_forgotten=true")
    assert status == 200 and [r["id"] for r in records] == ["a1u1"]
    status, body = await _export(rig, u1_admin, "?user_id=u2")
    assert status == 403 and body[0]["code"] == "forbidden"

    # The unscoped admin still exports every tenant.
    status, records = await _export(rig, rig.admin, "?include_forgotten=true")
    assert status == 200 and len(records) == 4


async def test_a_scoped_admin_cannot_import_into_another_agent(rig: Rig) -> None:
    await _seed(rig)
    a1_admin, _ = rig.tokens.create(role="admin", agent_ids=["a1"], name="a1-admin")
    hostile = dump(row("a1new", "a1", "fine"),
                   row("b1m", "b1", "overwritten by a1's admin"),
                   row("b1new", "b1", "planted in b1"))
    before = rig.audit_len()

    r = await post_import(rig.http, hostile, a1_admin, "?on_conflict=replace")
    assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
    assert "line 3" in r.json()["message"]  # the first line naming b1 (the header is line 1)

    held = await rig.gov.get("b1", "b1m")
    assert held is not None and held.content == "b1's own secret"
    assert await rig.gov.get("b1", "b1new") is None
    assert await rig.gov.get("a1", "a1new") is None  # nothing of a refused dump is written
    assert rig.audit_len() == before

    pending = {"id": "p1", "operation": "remember", "agent_id": "b1", "user_id": None,
               "request": {"agent_id": "b1", "type": "semantic", "content": "x"},
               "requested_by": "x", "requester_id": None, "reasoning": None,
               "created_at": 1, "updated_at": 1, "memory_id": "p1"}
    r = await post_import(rig.http, dump(row("a1new", "a1", "fine"), pending=(pending,)),
                          a1_admin)
    assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text


async def test_a_user_scoped_admin_may_not_import(rig: Rig) -> None:
    u1_admin, _ = rig.tokens.create(role="admin", agent_ids=["a1"], user_ids=["u1"],
                                    name="a1-u1-admin")
    r = await post_import(rig.http, dump(row("x", "a1", "mine", user_id="u1")), u1_admin)
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert await rig.gov.get("a1", "x") is None


async def test_an_import_is_audited_as_the_token_that_made_it(rig: Rig) -> None:
    a1_admin, _ = rig.tokens.create(role="admin", agent_ids=["a1"], name="a1-admin")
    r = await post_import(rig.http, dump(row("a1new", "a1", "fine")), a1_admin)
    assert r.status_code == 200, r.text
    assert r.json()["inserted"] == 1
    imports = [e for e in rig.gov.audit_entries(limit=1000) if e["action"] == "import"]
    assert [e["actor"] for e in imports] == ["a1-admin"]

    r = await post_import(rig.http, dump(row("other", "b1", "fine")), rig.admin)
    assert r.status_code == 200, r.text
    imports = [e for e in rig.gov.audit_entries(limit=1000) if e["action"] == "import"]
    assert sorted(e["actor"] for e in imports) == ["a1-admin", "admin"]
    assert rig.chain_ok()

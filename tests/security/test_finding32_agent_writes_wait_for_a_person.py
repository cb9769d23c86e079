"""Issue 32 (governance defaults): an agent could overwrite or destroy memories without a
human. Over MCP ``update`` overwrote a memory directly; with an agent token over REST (and
JSON-RPC) ``erase`` and a hard ``forget`` ran at once because the default policy commits;
``merge`` too. Now, on a governed store with the default policy, an agent-side caller's
content update, hard forget, erase and merge are staged for a person on every transport (an
MCP tool call is the agent side whatever its token), each answer naming its approval item;
the operator (an admin token, the CLI) still commits directly, and the policy's
``agent_review`` says which kinds wait (``[]``: none).

Before the fix: the agent's update answered ``pending_approval: false`` with the new text
stored (REST, JSON-RPC, MCP), its hard forget and erase removed the memories, its merge
merged them, and no staged answer carried an ``approval_id``.
"""

from __future__ import annotations

from typing import Any

import pytest

from memorywire.client import Memory
from memorywire.server.auth import Principal
from tests.security.conftest import Caller, Outcome, Rig, rest

pytestmark = pytest.mark.anyio


async def _seed(rig: Rig, id_: str, content: str, user_id: str | None = None) -> None:
    doc: dict[str, Any] = {"agent_id": "A", "id": id_, "type": "semantic", "content": content}
    if user_id is not None:
        doc["user_id"] = user_id
    out = await rest(rig, "remember", doc, rig.admin)
    assert out.ok and not out.body["pending_approval"], out


async def _content(rig: Rig, id_: str) -> Any:
    rec = await rig.gov.get("A", id_)
    return None if rec is None else rec.content


def _staged(out: Outcome) -> str:
    assert out.ok, out
    assert out.body["pending_approval"] is True, out.body
    approval_id = out.body.get("approval_id")
    assert isinstance(approval_id, str) and approval_id, out.body
    return approval_id


async def test_an_agents_content_update_waits_for_a_person(rig: Rig, call: Caller) -> None:
    await _seed(rig, "m1", "the old text")
    out = await call("update", {"agent_id": "A", "id": "m1", "content": "the agent's text"},
                     rig.agent)
    item = _staged(out)
    assert await _content(rig, "m1") == "the old text"
    # the id names the queue item a reviewer decides, and approving it applies the change
    got = await rest(rig, "approvals.get", {"id": item}, rig.admin)
    assert got.ok and got.body["operation"] == "update", got
    done = await rest(rig, "approvals.approve", {"id": item}, rig.admin)
    assert done.ok, done
    assert await _content(rig, "m1") == "the agent's text"


async def test_an_agents_hard_forget_and_erase_wait(rig: Rig, call: Caller) -> None:
    await _seed(rig, "h1", "keep me")
    await _seed(rig, "u1a", "alice's note", "u1")
    await _seed(rig, "u1b", "alice's other note", "u1")
    _staged(await call("forget", {"agent_id": "A", "ids": ["h1"], "hard_delete": True},
                       rig.agent))
    _staged(await call("erase", {"agent_id": "A", "user_id": "u1"}, rig.agent))
    assert await _content(rig, "h1") == "keep me"
    assert await _content(rig, "u1a") == "alice's note"
    assert await _content(rig, "u1b") == "alice's other note"


async def test_an_agents_merge_waits(rig: Rig, call: Caller) -> None:
    await _seed(rig, "c1", "Alice likes tea")
    await _seed(rig, "d1", "Alice drinks tea")
    _staged(await call("merge", {"agent_id": "A", "canonical": "c1", "duplicates": ["d1"]},
                       rig.agent))
    assert await _content(rig, "d1") == "Alice drinks tea"


@pytest.mark.parametrize("transport", ["rest", "jsonrpc"])
async def test_the_operator_still_commits_directly(rig: Rig, transport: str) -> None:
    call = Caller(transport, rig)
    await _seed(rig, "o1", "before")
    out = await call("update", {"agent_id": "A", "id": "o1", "content": "after"}, rig.admin)
    assert out.ok and out.body["pending_approval"] is False, out
    assert await _content(rig, "o1") == "after"
    gone = await call("forget", {"agent_id": "A", "ids": ["o1"], "hard_delete": True},
                      rig.admin)
    assert gone.ok and gone.body["forgotten_ids"] == ["o1"], gone


async def test_over_mcp_even_an_admin_token_is_a_model_acting(rig: Rig) -> None:
    await _seed(rig, "x1", "before")
    out = await Caller("mcp", rig)("update", {"agent_id": "A", "id": "x1", "content": "after"},
                                   rig.admin)
    _staged(out)
    assert await _content(rig, "x1") == "before"


async def test_the_python_client_of_an_agent_waits_and_the_cli_operator_does_not(
    rig: Rig
) -> None:
    await _seed(rig, "p1", "before")
    agent = Memory(rig.gov)  # the in-process client: the agent side
    resp = await agent.update(agent_id="A", id="p1", content="agent's")
    assert resp.pending_approval and resp.approval_id, resp
    erased = await agent.erase(agent_id="A")
    assert erased.pending_approval and erased.approval_id, erased
    assert await _content(rig, "p1") == "before"
    operator = Memory(rig.gov, principal=Principal.local_operator())  # as the CLI does
    done = await operator.update(agent_id="A", id="p1", content="operator's")
    assert not done.pending_approval and done.memory is not None
    assert await _content(rig, "p1") == "operator's"


async def test_the_policy_says_which_kinds_wait(rig: Rig, call: Caller) -> None:
    rig.gov.set_policies({"agent_review": []})
    await _seed(rig, "k1", "before")
    out = await call("update", {"agent_id": "A", "id": "k1", "content": "after"}, rig.agent)
    assert out.ok and out.body["pending_approval"] is False, out  # over MCP too
    assert await _content(rig, "k1") == "after"
    rig.gov.set_policies({"agent_review": ["update_metadata"]})
    meta = await call("update", {"agent_id": "A", "id": "k1", "metadata": {"tag": "x"}},
                      rig.agent)
    _staged(meta)

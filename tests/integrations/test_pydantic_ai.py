"""Pydantic AI with its TestModel: tools land memories with provenance and scope, forget
waits for a human's approval, a staged write reads as pending to the model."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="needs the memorywire[pydantic-ai] extra")

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolApproved

from memorywire.client import SyncMemory
from memorywire.integrations.pydantic_ai import MemoryDeps, memory_toolset

from .conftest import MakeClient


def _agent(*tools: str) -> Agent[MemoryDeps, str | DeferredToolRequests]:
    return Agent(
        TestModel(call_tools=list(tools)),
        deps_type=MemoryDeps,
        output_type=[str, DeferredToolRequests],  # type: ignore[arg-type]
        toolsets=[memory_toolset()],
    )


def _returns(result: Any, tool: str) -> list[Any]:
    return [
        part.content
        for msg in result.all_messages()
        for part in msg.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == tool
    ]


@pytest.mark.anyio
async def test_remember_and_recall_through_the_model(client: SyncMemory[Any]) -> None:
    deps = MemoryDeps(client, agent_id="pa", user_id="alice")
    done = await _agent("remember").run("remember something", deps=deps)
    rows = client.list(agent_id="pa").memories
    assert len(rows) == 1
    row = rows[0]
    assert (row.source, row.user_id, row.type.value) == ("agent", "alice", "semantic")
    assert _returns(done, "remember") == [f"remembered (id {row.id})"]

    found = await _agent("recall").run("what do you know?", deps=deps)
    [hits] = _returns(found, "recall")
    assert [(h["id"], h["content"], h["source"]) for h in hits] == [
        (row.id, row.content, "agent")
    ]
    # another user's run sees nothing of alice's
    other = await _agent("recall").run("?", deps=MemoryDeps(client, agent_id="pa", user_id="bob"))
    assert _returns(other, "recall") == [[]]


@pytest.mark.anyio
async def test_forget_runs_only_after_a_human_approves(client: SyncMemory[Any]) -> None:
    deps = MemoryDeps(client, agent_id="pa")
    keep = client.remember(agent_id="pa", type="semantic", content="keep this").id
    drop = client.remember(agent_id="pa", type="semantic", content="drop this").id
    agent = _agent("forget")
    first = await agent.run("forget", deps=deps)
    assert isinstance(first.output, DeferredToolRequests)
    [call] = first.output.approvals
    assert call.tool_name == "forget"
    assert {m.id for m in client.list(agent_id="pa").memories} == {keep, drop}  # not yet

    denied = await agent.run(
        deps=deps, message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={call.tool_call_id: ToolDenied("not today")}
        ),
    )
    assert _returns(denied, "forget") == ["not today"]
    assert len(client.list(agent_id="pa").memories) == 2

    approved = await agent.run(
        deps=deps, message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={
                call.tool_call_id: ToolApproved(override_args={"ids": [drop], "reason": "stale"})
            }
        ),
    )
    assert _returns(approved, "forget") == [f"forgot 1 memories: {drop}"]
    assert [m.id for m in client.list(agent_id="pa").memories] == [keep]


@pytest.mark.anyio
async def test_a_staged_write_is_reported_pending_to_the_model(make_client: MakeClient) -> None:
    client = make_client(
        policies={"rules": [{"name": "all", "match": {"agent_id": "pa"}, "decision": "review"}]}
    )
    done = await _agent("remember").run("remember", deps=MemoryDeps(client, agent_id="pa"))
    [said] = _returns(done, "remember")
    assert said.startswith("pending approval") and "http://127.0.0.1" in said
    assert client.list(agent_id="pa").memories == []


@pytest.mark.anyio
async def test_a_bad_call_becomes_model_retry(client: SyncMemory[Any]) -> None:
    agent = Agent(
        TestModel(call_tools=["recall"]), deps_type=MemoryDeps, toolsets=[memory_toolset()],
        retries=1,
    )
    # an agent id the wire refuses: the tool answers ModelRetry, the model retries, then fails
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries"):
        await agent.run("x", deps=MemoryDeps(client, agent_id="x" * 300))

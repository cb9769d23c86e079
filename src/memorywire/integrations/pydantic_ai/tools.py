"""memorywire tools for a Pydantic AI agent.

The client travels in the run's dependencies (:class:`MemoryDeps`), so one agent definition
serves many users: the app picks the agent and user scope per run and the model never
chooses whose memory it touches. What the model remembers is stored with ``agent``
provenance. ``forget`` is destructive, so, like the MCP tool, a model never runs it directly:
it is declared ``requires_approval``, the run ends with ``DeferredToolRequests`` and only a
human's approval (``DeferredToolResults``) executes it. A write that memorywire's own
governance stages comes back to the model as "pending approval", not as success; a request
the model got wrong (``invalid_request``, ``not_found``) becomes ``ModelRetry``, so the model
can correct its call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from memorywire.client import SyncMemory
from memorywire.errors import InvalidRequest, NotFound
from memorywire.integrations._common import SOURCE_AGENT, pending_note

__all__ = ["MemoryDeps", "memory_toolset"]

MemoryKind = Literal["semantic", "episodic", "emotional"]


@dataclass
class MemoryDeps:
    """What the tools need; subclass it to carry an app's own dependencies too."""

    client: SyncMemory[Any]
    agent_id: str
    user_id: str | None = None
    source: str = SOURCE_AGENT

    def scope(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agent_id": self.agent_id}
        if self.user_id is not None:
            out["user_id"] = self.user_id
        return out


@contextmanager
def _retry_on_bad_call() -> Iterator[None]:
    try:
        yield
    except (InvalidRequest, NotFound) as err:
        raise ModelRetry(f"{err.code}: {err.message}") from err


def remember(
    ctx: RunContext[MemoryDeps], content: str, memory_type: MemoryKind = "semantic"
) -> str:
    """Store a memory worth keeping across conversations.

    Args:
        content: The fact, event or feeling, as one self-contained sentence.
        memory_type: semantic (a fact), episodic (something that happened) or emotional.
    """
    deps = ctx.deps
    with _retry_on_bad_call():
        resp = deps.client.remember(
            **deps.scope(), type=memory_type, content=content, source=deps.source
        )
    return pending_note(resp) if resp.pending_approval else f"remembered (id {resp.id})"


def recall(ctx: RunContext[MemoryDeps], query: str, k: int = 5) -> list[dict[str, Any]]:
    """Search memory; the best matches come first, each with its id and provenance.

    Args:
        query: What to look for, in natural language.
        k: At most this many memories.
    """
    deps = ctx.deps
    with _retry_on_bad_call():
        hits = deps.client.recall(**deps.scope(), query=query, k=k).results
    return [
        {"id": h.id, "type": h.type.value, "content": h.content, "score": round(h.score, 4),
         "source": h.source}
        for h in hits
    ]


def forget(ctx: RunContext[MemoryDeps], ids: list[str], reason: str) -> str:
    """Forget memories by id (a human approves this before it runs).

    Args:
        ids: The ids, as recall returned them.
        reason: Why they should be forgotten, for the reviewer and the audit log.
    """
    deps = ctx.deps
    with _retry_on_bad_call():
        resp = deps.client.forget(**deps.scope(), ids=ids, reason=reason)
    if resp.pending_approval:
        return pending_note(resp)
    return f"forgot {len(resp.forgotten_ids)} memories: {', '.join(resp.forgotten_ids)}"


def memory_toolset(*, with_forget: bool = True) -> FunctionToolset[MemoryDeps]:
    """The tools, for ``Agent(..., deps_type=MemoryDeps, toolsets=[memory_toolset()])``."""
    toolset: FunctionToolset[MemoryDeps] = FunctionToolset()
    tools: list[tuple[Callable[..., Any], bool]] = [(remember, False), (recall, False)]
    if with_forget:
        tools.append((forget, True))
    for func, gated in tools:
        toolset.add_function(func, takes_ctx=True, requires_approval=gated)
    return toolset

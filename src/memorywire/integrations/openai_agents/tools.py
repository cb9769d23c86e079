"""remember and recall as Agents SDK function tools, bound to one agent (and user) scope.

The scope is fixed when the tools are built, not chosen by the model. A write staged by
governance returns "pending approval" to the model; any other memorywire error reaches the
model through the SDK's own idiom, the tool's failure message, so it can adjust its call.
"""

from __future__ import annotations

from typing import Any, Literal

from agents import FunctionTool, function_tool

from memorywire.client import SyncMemory
from memorywire.integrations._common import SOURCE_AGENT, pending_note

__all__ = ["memory_tools"]


def memory_tools(
    client: SyncMemory[Any], *, agent_id: str, user_id: str | None = None
) -> list[FunctionTool]:
    """``remember`` and ``recall`` for ``Agent(tools=memory_tools(...))``."""
    scope: dict[str, Any] = {"agent_id": agent_id}
    if user_id is not None:
        scope["user_id"] = user_id

    @function_tool
    def remember(
        content: str, memory_type: Literal["semantic", "episodic", "emotional"] = "semantic"
    ) -> str:
        """Store a memory worth keeping across conversations.

        Args:
            content: The fact, event or feeling, as one self-contained sentence.
            memory_type: semantic (a fact), episodic (something that happened) or emotional.
        """
        resp = client.remember(**scope, type=memory_type, content=content, source=SOURCE_AGENT)
        return pending_note(resp) if resp.pending_approval else f"remembered (id {resp.id})"

    @function_tool
    def recall(query: str, k: int = 5) -> list[dict[str, Any]]:
        """Search memory; the best matches come first, each with its id and provenance.

        Args:
            query: What to look for, in natural language.
            k: At most this many memories.
        """
        hits = client.recall(**scope, query=query, k=k).results
        return [
            {"id": h.id, "type": h.type.value, "content": h.content, "source": h.source}
            for h in hits
        ]

    return [remember, recall]

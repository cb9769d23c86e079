"""A LlamaIndex memory block: messages ejected from short-term memory become episodic
memories with provenance, and each turn pulls what recall finds for the latest user message.

Roles map to ``source`` as in every integration (user → ``user``, assistant → ``agent``,
tool → ``tool_result``); the session id LlamaIndex stamps on messages is kept in metadata.
A write staged by governance raises :class:`memorywire.errors.PendingApproval`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory.memory import BaseMemoryBlock
from pydantic import Field

from memorywire.client import SyncMemory
from memorywire.integrations._common import (
    SOURCE_AGENT,
    SOURCE_TOOL_RESULT,
    SOURCE_USER,
    require_committed,
)

__all__ = ["MemorywireMemoryBlock", "source_of"]

_SOURCES = {
    MessageRole.USER: SOURCE_USER,
    MessageRole.ASSISTANT: SOURCE_AGENT,
    MessageRole.CHATBOT: SOURCE_AGENT,
    MessageRole.MODEL: SOURCE_AGENT,
    MessageRole.TOOL: SOURCE_TOOL_RESULT,
    MessageRole.FUNCTION: SOURCE_TOOL_RESULT,
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
}


def source_of(message: ChatMessage) -> str:
    """Provenance of a message; an unknown role is refused, never guessed as trusted."""
    try:
        return _SOURCES[MessageRole(message.role)]
    except (KeyError, ValueError):
        raise ValueError(f"message role {message.role!r} has no provenance mapping") from None


class MemorywireMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``Memory.from_defaults(memory_blocks=[...])``."""

    name: str = "memorywire"
    client: SyncMemory[Any] = Field(exclude=True)
    agent_id: str
    user_id: str | None = None
    k: int = 5

    def _scope(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agent_id": self.agent_id}
        if self.user_id is not None:
            out["user_id"] = self.user_id
        return out

    def _put(self, messages: list[ChatMessage]) -> None:
        for message in messages:
            text = message.content or ""
            if not text.strip():
                continue  # tool-call-only turns carry nothing recall could use
            session = message.additional_kwargs.get("session_id")
            resp = self.client.remember(
                **self._scope(), type="episodic", content=text, source=source_of(message),
                metadata={"role": str(MessageRole(message.role).value),
                          **({"session_id": session} if session else {})},
            )
            require_committed(resp, f"storing a {message.role} message")

    def _get(self, messages: list[ChatMessage] | None) -> str:
        query = next(
            (m.content for m in reversed(messages or []) if m.role == MessageRole.USER
             and m.content), None,
        )
        if not query:
            return ""
        hits = self.client.recall(**self._scope(), query=query, k=self.k).results
        return "\n".join(f"- {h.content} (source: {h.source})" for h in hits)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self._put, list(messages))

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        return await asyncio.to_thread(self._get, messages)

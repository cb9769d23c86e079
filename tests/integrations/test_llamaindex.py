"""LlamaIndex with its MockLLM and memorywire's embedding: a chat engine's Memory spills into
memorywire through the block, recall comes back into the prompt, the retriever answers a
query engine. Runs in its own venv (``make test-llamaindex``)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core", reason="needs the memorywire[llamaindex] extra (make test-llamaindex)"
)

from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine

from memorywire.client import SyncMemory
from memorywire.embed.base import Embedder
from memorywire.errors import PendingApproval
from memorywire.integrations.llamaindex import (
    MemorywireEmbedding,
    MemorywireMemoryBlock,
    MemorywireRetriever,
)

from .conftest import REVIEW_TOOL_RESULTS, MakeClient

# LlamaIndex's sync Memory API runs its async SQL chat store on throwaway event loops and
# never closes the aiosqlite connections; that leak is LlamaIndex's, reported when collected.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def _memory(block: MemorywireMemoryBlock) -> Memory:
    # a tiny short-term budget so turns spill into the block; a whitespace tokenizer because
    # LlamaIndex's default (tiktoken) downloads its vocabulary
    return Memory.from_defaults(
        session_id="s1", token_limit=40, chat_history_token_ratio=0.5,
        token_flush_size=10, memory_blocks=[block], tokenizer_fn=str.split,
        insert_method="system",
    )


def test_spilled_turns_land_with_provenance_and_come_back(client: SyncMemory[Any]) -> None:
    block = MemorywireMemoryBlock(client=client, agent_id="li", user_id="alice")
    memory = _memory(block)
    turns = [
        ChatMessage(role=MessageRole.USER, content="I am allergic to peanuts " * 3),
        ChatMessage(role=MessageRole.ASSISTANT, content="Noted, no peanuts for you " * 3),
        ChatMessage(role=MessageRole.TOOL, content="Menu: satay with peanut sauce " * 3),
        ChatMessage(role=MessageRole.USER, content="what am I allergic to?"),
    ]
    memory.put_messages(turns)
    rows = client.list(agent_id="li", user_id="alice").memories
    assert {r.source for r in rows} >= {"user", "agent"}
    assert all(r.type.value == "episodic" and r.user_id == "alice" for r in rows)
    assert all((r.metadata or {}).get("session_id") == "s1" for r in rows)
    sent = memory.get()
    system = next(m for m in sent if m.role == MessageRole.SYSTEM)
    assert "allergic to peanuts" in (system.content or "")
    reply = MockLLM(max_tokens=5).chat(sent)
    assert reply.message.content
    del memory
    gc.collect()  # LlamaIndex's leaked connections are reported here, under this module's mark


def test_a_gated_spill_raises(make_client: MakeClient) -> None:
    client = make_client(policies=REVIEW_TOOL_RESULTS)
    block = MemorywireMemoryBlock(client=client, agent_id="li")
    with pytest.raises(PendingApproval):
        asyncio.run(block.aput([ChatMessage(role=MessageRole.TOOL, content="tool output")]))


def test_retriever_in_a_query_engine(client: SyncMemory[Any], embedder: Embedder) -> None:
    Settings.llm = MockLLM(max_tokens=8)
    Settings.embed_model = MemorywireEmbedding(embedder)
    client.remember(agent_id="li", type="semantic", content="The user is allergic to peanuts.",
                    source="user")
    client.remember(agent_id="li", type="episodic", content="Booked a window seat.",
                    source="agent")
    retriever = MemorywireRetriever(client, agent_id="li", k=2, types=["semantic"])
    nodes = retriever.retrieve("food allergies?")
    assert [(n.node.get_content(), n.node.metadata["source"]) for n in nodes] == [
        ("The user is allergic to peanuts.", "user")
    ]
    answer = RetrieverQueryEngine.from_args(retriever).query("food allergies?")
    assert answer.source_nodes[0].node.node_id == nodes[0].node.node_id
    # memorywire's embedding inside LlamaIndex's own index: the same vectors as the store's
    index = VectorStoreIndex.from_documents([Document(text="Peanuts are legumes.")])
    hit = index.as_retriever(similarity_top_k=1).retrieve("legumes")
    assert hit[0].node.get_content() == "Peanuts are legumes."
    assert len(Settings.embed_model.get_query_embedding("x")) == embedder.dim

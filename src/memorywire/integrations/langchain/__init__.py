"""LangChain: a chat-message history tagged with provenance, and a retriever over recall.

Needs the ``memorywire[langchain]`` extra (``langchain-core``).
"""

from memorywire.integrations.langchain.history import MemorywireChatMessageHistory, source_of
from memorywire.integrations.langchain.retriever import MemorywireRetriever

__all__ = ["MemorywireChatMessageHistory", "MemorywireRetriever", "source_of"]

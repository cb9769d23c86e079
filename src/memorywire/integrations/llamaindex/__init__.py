"""LlamaIndex: a memory block for its ``Memory``, a retriever over recall, and memorywire's
embedder as a LlamaIndex embedding.

Needs the ``memorywire[llamaindex]`` extra. llama-index-core needs a newer setuptools than
the project's main environment has, so its tests run in their own venv
(``make test-llamaindex``).
"""

from memorywire.integrations.llamaindex.embedding import MemorywireEmbedding
from memorywire.integrations.llamaindex.memory_block import MemorywireMemoryBlock, source_of
from memorywire.integrations.llamaindex.retriever import MemorywireRetriever

__all__ = ["MemorywireEmbedding", "MemorywireMemoryBlock", "MemorywireRetriever", "source_of"]

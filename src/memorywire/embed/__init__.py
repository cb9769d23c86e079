"""Text embedders: the :class:`Embedder` protocol, the local default model, and alternatives.

Heavy libraries (onnxruntime, tokenizers, httpx, sentence-transformers) are imported only when
an embedder that needs them is constructed, so importing this package stays cheap.
"""

from memorywire.embed.base import Embedder, Vectors
from memorywire.embed.hashing import HashingEmbedder
from memorywire.embed.minilm import MiniLMEmbedder
from memorywire.embed.openai_compat import OpenAICompatibleEmbedder
from memorywire.embed.sbert import SentenceTransformerEmbedder
from memorywire.embed.spec import default_embedder, embedder_from_spec

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder",
    "Vectors",
    "default_embedder",
    "embedder_from_spec",
]

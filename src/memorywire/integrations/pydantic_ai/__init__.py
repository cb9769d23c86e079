"""Pydantic AI: remember, recall and forget as tools, with the client in the run's deps.

Needs the ``memorywire[pydantic-ai]`` extra (``pydantic-ai-slim``).
"""

from memorywire.integrations.pydantic_ai.tools import MemoryDeps, memory_toolset

__all__ = ["MemoryDeps", "memory_toolset"]

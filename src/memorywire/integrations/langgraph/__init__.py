"""LangGraph: memorywire as a graph's long-term ``BaseStore``.

Needs the ``memorywire[langgraph]`` extra.
"""

from memorywire.integrations.langgraph.store import MemorywireStore

__all__ = ["MemorywireStore"]

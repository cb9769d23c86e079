"""OpenAI Agents SDK: a ``Session`` kept as episodic memories, and remember/recall tools.

Needs the ``memorywire[openai-agents]`` extra.
"""

from memorywire.integrations.openai_agents.session import MemorywireSession, source_of_item
from memorywire.integrations.openai_agents.tools import memory_tools

__all__ = ["MemorywireSession", "memory_tools", "source_of_item"]

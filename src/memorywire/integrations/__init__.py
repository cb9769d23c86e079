"""Framework integrations: memorywire as the memory of LangChain, LangGraph and Pydantic AI.

Each subpackage imports its framework, which is an optional extra (``memorywire[langchain]``
...), never a core dependency; this package itself imports nothing heavy. Every integration
takes a :class:`memorywire.client.SyncMemory`, so the same code runs over the local store
(``SyncMemory.local``) and a server (``SyncMemory.remote``); async framework methods run the
blocking call in a worker thread instead of keeping a second client per loop.
"""

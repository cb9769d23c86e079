"""The one Cognee of a process: imported once, configured once, run on its own loop thread.

Cognee's configuration is process-global and its database engines are bound to the event
loop that first used them, while memorywire callers (and the conformance harness) may come
from many short-lived loops. So every Cognee coroutine runs on one long-lived loop in a
daemon thread, and callers wait for it from a worker thread (``CogneeStore._call``).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import sys
import threading
import warnings
from collections.abc import Awaitable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memorywire.errors import BackendUnavailable, CapabilityMissing, InvalidRequest

__all__ = ["Engine", "engine", "engine_at", "import_cognee"]

T = TypeVar("T")
#: MiniLM reads 256 word pieces; Cognee's chunker counts with the model's own tokenizer.
CHUNK_TOKENS = 240


@dataclass
class Engine:
    """Cognee, imported and configured once, driven from its own event-loop thread."""

    root: Path
    embed_key: tuple[str, str, int, bool]
    mods: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    tasks: list[Any] = field(default_factory=list)

    def submit(self, coro: Awaitable[T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]


_ENGINE: list[Engine] = []
_ENGINE_LOCK = threading.Lock()


def import_cognee() -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            # Cognee's import emits pydantic/alembic deprecations that are not ours to fix.
            warnings.simplefilter("ignore")
            names = {
                "cognee": "cognee",
                "pipelines": "cognee.modules.pipelines",
                "documents": "cognee.tasks.documents",
                "storage": "cognee.tasks.storage",
                "data_item": "cognee.tasks.ingestion.data_item",
                "chunker": "cognee.modules.chunking.TextChunker",
                "search_type": "cognee.api.v1.search",
            }
            return {k: importlib.import_module(v) for k, v in names.items()}
    except ImportError as exc:
        raise CapabilityMissing(
            f"the 'cognee' store needs Cognee ({exc.name or exc}); install it with: "
            "pip install 'memorywire[cognee]' (pinned closure: backends/cognee/requirements.lock)"
        ) from exc


def engine(root: Path, endpoint: str, model: str, dim: int, workers: bool) -> Engine:
    key = (endpoint, model, dim, workers)
    with _ENGINE_LOCK:
        if _ENGINE:
            eng = _ENGINE[0]
            if eng.root != root or eng.embed_key != key:
                raise InvalidRequest(
                    f"Cognee keeps one configuration per process: already using {eng.root} "
                    f"with {eng.embed_key}, asked for {root} with {key}")
            return eng
        if "cognee" not in sys.modules and importlib.util.find_spec("cognee") is not None:
            # Read by Cognee at import: keep its files (logs included) under ``root`` rather
            # than ~/.cognee, and never let it pip-install an extractor model.
            for var, value in (("SYSTEM_ROOT_DIRECTORY", root / "system"),
                               ("DATA_ROOT_DIRECTORY", root / "data"),
                               ("COGNEE_LOGS_DIR", root / "logs"),
                               ("GLINER_AUTO_INSTALL", "false")):
                os.environ.setdefault(var, str(value))
        mods = import_cognee()
        cognee = mods["cognee"]
        root.mkdir(parents=True, exist_ok=True)
        try:
            cognee.config.system_root_directory(str(root / "system"))
            cognee.config.data_root_directory(str(root / "data"))
            cognee.config.set_embedding_config({
                "embedding_provider": "openai_compatible", "embedding_model": model,
                "embedding_endpoint": endpoint, "embedding_api_key": "offline-not-used",
                "embedding_dimensions": dim})
            # By default Cognee runs each dataset's graph and vector database in worker
            # processes of their own: two processes and ~2 s per new agent here.
            cognee.config.set_graph_database_subprocess_enabled(workers)
            cognee.config.set_vector_db_subprocess_enabled(workers)
        except Exception as exc:
            raise BackendUnavailable(f"Cognee refused its configuration: {exc}") from exc
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="memorywire-cognee", daemon=True).start()
        Task = mods["pipelines"].Task
        docs = mods["documents"]
        eng = Engine(root, key, mods, loop, [
            Task(docs.classify_documents, needs_llm=False),
            Task(docs.extract_chunks_from_documents, max_chunk_size=CHUNK_TOKENS,
                 chunker=mods["chunker"].TextChunker, needs_llm=False),
            Task(mods["storage"].add_data_points, needs_llm=False),
        ])
        _ENGINE.append(eng)
        return eng


#: An embedding endpoint that is never called: reading data items needs no embeddings.
_READ_ONLY_ENDPOINT = "http://127.0.0.1:9/v1"


def engine_at(root: Path) -> Engine:
    """The process's Cognee if it already uses ``root``, else one configured there to read
    (an import from a Cognee data directory lists items and reads their text, nothing else)."""
    with _ENGINE_LOCK:
        if _ENGINE and _ENGINE[0].root == root:
            return _ENGINE[0]
    return engine(root, _READ_ONLY_ENDPOINT, "unused", 384, False)

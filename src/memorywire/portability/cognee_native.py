"""Reading a dataset Cognee itself wrote (``cognee.add``), not memorywire's Cognee store.

The source is ``cognee:///DATA_DIR?dataset=NAME``: Cognee's data directory (its
``system``/``data`` folders, as ``cognee.config`` was pointed at) and the dataset to read.
Cognee keeps one configuration per process, so the reader uses the process's Cognee when it
already works in that directory, otherwise configures it there (listing needs no LLM and no
embeddings). Each data item (``cognee.datasets.list_data``) is a document: its text lives in
the file ``raw_data_location`` names, beside ``name``, ``mime_type``, ``content_hash``,
``external_metadata``, ``node_set``, ``owner_id`` and its timestamps. Each text item becomes a
``semantic`` row of agent ``--agent`` (default: the dataset name) with the item's UUID as id.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import anyio.to_thread

from memorywire.core.records import Row
from memorywire.errors import BackendUnavailable, InvalidRequest
from memorywire.portability.plan import source_note
from memorywire.portability.sources import ForeignData
from memorywire.wire.models import MemoryType

__all__ = ["CogneeNativeSource"]

KEPT = frozenset({"id", "agent_id", "type", "stored", "metadata", "created_at", "updated_at"})
#: Data-item attributes with no row field, kept under ``metadata.cognee``.
CARRIED = ("name", "mime_type", "content_hash", "node_set", "owner_id", "dataset")
#: The metadata key memorywire's own Cognee store writes; such items are moved by migrate.
_OURS = "memorywire"


def _ms(value: Any) -> int | None:
    if value is None:
        return None
    stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


def _text_of(location: Any) -> str | None:
    """A local document's text; ``None`` for what cannot be read as UTF-8 text here."""
    path = str(location or "")
    if path.startswith("file://"):
        path = unquote(path[len("file://"):])
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class CogneeNativeSource:
    def __init__(self, url: str, *, agent: str | None) -> None:
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if parts.scheme != "cognee" or not (parts.netloc + parts.path) or "dataset" not in query:
            raise InvalidRequest(f"--from-format cognee needs cognee:///DATA_DIR?dataset=NAME, "
                                 f"got {url!r}")
        unknown = set(query) - {"dataset"}
        if unknown:
            raise InvalidRequest(f"unknown Cognee source parameters: {sorted(unknown)}")
        self._root = Path(unquote(parts.netloc + parts.path)).resolve()
        self._dataset = query["dataset"]
        self._agent = agent or self._dataset

    @property
    def name(self) -> str:
        return f"cognee:{self._root}?dataset={self._dataset}"

    @property
    def kept_fields(self) -> frozenset[str]:
        return KEPT

    async def read(self) -> ForeignData:
        from memorywire.store.cognee.engine import engine_at

        eng = await anyio.to_thread.run_sync(engine_at, self._root)
        cognee = eng.mods["cognee"]

        async def items() -> list[Any]:
            found = [d for d in await cognee.datasets.list_datasets()
                     if d.name == self._dataset]
            if not found:
                return []
            return list(await cognee.datasets.list_data(found[0].id))

        try:
            data = await anyio.to_thread.run_sync(lambda: eng.submit(items()).result())
        except Exception as exc:  # Cognee's own errors: its databases failed us
            if type(exc).__name__ == "DatabaseNotCreatedError":
                data = []
            else:
                raise BackendUnavailable(f"Cognee at {self._root}: {exc}") from exc
        if not data:
            raise InvalidRequest(f"Cognee at {self._root} has no dataset {self._dataset!r} "
                                 "(or it is empty)")
        return await anyio.to_thread.run_sync(self._convert, data)

    def _convert(self, items: list[Any]) -> ForeignData:
        out = ForeignData()
        unreadable = 0
        for item in items:
            meta = dict(getattr(item, "external_metadata", None) or {})
            if _OURS in meta:
                raise InvalidRequest(
                    f"Cognee item {item.id} was written by memorywire's Cognee store; move "
                    "that dataset with: memorywire migrate --from cognee://...")
            text = _text_of(getattr(item, "raw_data_location", None))
            if text is None or not text.strip():
                unreadable += 1
                continue
            carried = {k: getattr(item, k, None) for k in CARRIED if k != "dataset"}
            carried["dataset"] = self._dataset
            meta["cognee"] = {k: (str(v) if k == "owner_id" else v)
                              for k, v in carried.items() if v is not None}
            created = _ms(getattr(item, "created_at", None)) or 0
            updated = _ms(getattr(item, "updated_at", None))
            out.rows.append(Row(
                id=str(item.id), agent_id=self._agent, user_id=None, type=MemoryType.SEMANTIC,
                stored=text, metadata=meta, confidence=1.0, source=None, created_at=created,
                updated_at=None if updated is None or updated == created else updated))
        out.notes = [
            source_note("cognee_fields", len(out.rows), "transformed",
                        f"{', '.join(CARRIED)} kept under metadata.cognee"),
            source_note("unreadable", unreadable, "lost",
                        "items whose document is not local UTF-8 text (a PDF, an image, a "
                        "remote file)"),
            source_note("chunks_and_graph", len(out.rows), "derived",
                        "Cognee's chunks, their vectors and any cognify graph are derived "
                        "from the text; the target indexes the text itself"),
        ]
        return out

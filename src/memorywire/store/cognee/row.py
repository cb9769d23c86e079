"""One memorywire record as a Cognee data item: the whole record in ``external_metadata``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from memorywire.errors import StoreCorrupt
from memorywire.store._revision import RevisionRow, revision_fields

__all__ = ["KEY", "Row", "row_from_data"]

KEY = "memorywire"


@dataclass(frozen=True)
class Row(RevisionRow):
    """A revision plus the Cognee data item that holds it."""

    data_id: uuid.UUID = field(default_factory=uuid.uuid4)


def row_from_data(data_id: Any, meta: Any) -> Row:
    try:
        return Row(data_id=uuid.UUID(str(data_id)), **revision_fields(meta[KEY]))
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreCorrupt(f"Cognee data item {data_id!r} does not hold a memorywire record") \
            from exc

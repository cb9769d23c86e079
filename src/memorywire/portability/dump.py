"""The ``memorywire/export`` v0 dump: a header line, one record per line, a footer line.

Each record line carries the whole stored row (every field of
:class:`memorywire.core.records.Row`, found by introspection, so a field added to the record
model travels without a change here) with ``content`` in its wire form, plus ``sha256``: the
digest of the record's canonical JSON. A reader recomputes it and names the first line that
does not match. The footer's ``digest`` is the SHA-256 over every record digest in order, so
a dropped, added or reordered line is caught too. Files ending ``.gz`` (or starting with the
gzip magic) are gzip-compressed.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, fields
from typing import IO, Any

import numpy as np

from memorywire.core.content import content_from_storage, content_to_storage
from memorywire.core.records import Row
from memorywire.errors import InvalidRequest
from memorywire.wire.models import MemoryType

__all__ = ["FORMAT", "DumpReader", "DumpWriter", "doc_of_row", "open_dump", "row_of_doc",
           "verify_dump"]

FORMAT = "memorywire/export"
VERSION = "0"
_ROW_FIELDS = {f.name for f in fields(Row)}


def _canonical(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def doc_of_row(row: Row) -> dict[str, Any]:
    """The dump form of a row: every field, ``stored`` as wire ``content``."""
    doc = asdict(row)
    doc["type"] = row.type.value
    doc["content"] = content_from_storage(row.type, doc.pop("stored"))
    return doc


def row_of_doc(doc: dict[str, Any], line: int) -> Row:
    unknown = set(doc) - _ROW_FIELDS - {"content"}
    if unknown:
        raise InvalidRequest(f"dump line {line}: fields this version cannot store: "
                             f"{sorted(unknown)}")
    try:
        kind = MemoryType(doc["type"])
        body = {k: v for k, v in doc.items() if k != "content"}
        return Row(**{**body, "type": kind, "stored": content_to_storage(kind, doc["content"])})
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequest(f"dump line {line}: not a record: {exc}") from exc


def _line_digest(record: dict[str, Any], vector: dict[str, Any] | None) -> str:
    """SHA-256 of the record's canonical JSON, then, when there is one, a newline and the
    vector object's canonical JSON."""
    data = _canonical(record)
    if vector is not None:
        data += b"\n" + _canonical(vector)
    return hashlib.sha256(data).hexdigest()


class DumpWriter:
    """Writes one dump to a binary file object; :meth:`close` writes the footer."""

    def __init__(self, out: IO[bytes], header: dict[str, Any], *, gzip_it: bool) -> None:
        self._raw = out
        self._out: IO[bytes] = out
        if gzip_it:
            self._out = gzip.GzipFile(fileobj=out, mode="wb", mtime=0)  # type: ignore[assignment]
        self._chain = hashlib.sha256()
        self.count = 0
        self._line({"kind": "header", "format": FORMAT, "version": VERSION, **header})

    def _line(self, doc: dict[str, Any]) -> None:
        self._out.write(_canonical(doc) + b"\n")

    def write(self, row: Row, vector: Any = None, embedder: str | None = None) -> None:
        """``vector`` (float32, from ``embedder``) travels beside the record and is covered
        by the line's digest, so a changed vector is caught like a changed record."""
        record = doc_of_row(row)
        line: dict[str, Any] = {"kind": "record", "record": record}
        if vector is not None:
            data = np.ascontiguousarray(vector, dtype="<f4")
            line["vector"] = {"embedder": embedder, "dim": int(data.shape[0]),
                              "b64": base64.b64encode(data.tobytes()).decode()}
        digest = _line_digest(record, line.get("vector"))
        self._chain.update(digest.encode())
        line["sha256"] = digest
        self._line(line)
        self.count += 1

    def close(self) -> None:
        self._line({"kind": "footer", "count": self.count,
                    "digest": "sha256:" + self._chain.hexdigest()})
        if self._out is not self._raw:
            self._out.close()
        self._raw.flush()


def open_dump(path: str) -> IO[bytes]:
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if gzipped:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")  # handed to the caller, who closes it


class DumpReader:
    """Reads a dump, checking every line's digest as it goes; rows come out in file order.

    The header is read on construction; iterating yields rows, and the footer is checked when
    the iteration ends, so a consumer that reached the end has read a verified dump.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._lines = enumerate(stream, start=1)
        self.header = self._next("header")
        if self.header.get("format") != FORMAT or self.header.get("version") != VERSION:
            raise InvalidRequest(f"dump line 1: not a {FORMAT} v{VERSION} dump")
        self.count = 0

    def _next(self, expect: str) -> dict[str, Any]:
        try:
            n, text = next(self._lines)
        except StopIteration:
            raise InvalidRequest(f"dump ends without a {expect} (truncated)") from None
        self._n = n
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InvalidRequest(f"dump line {n}: not JSON ({exc})") from exc
        if not isinstance(doc, dict) or doc.get("kind") not in {expect, "record", "footer"}:
            raise InvalidRequest(f"dump line {n}: expected a {expect} line")
        return doc

    def __iter__(self) -> Iterator[tuple[Row, Any]]:
        """``(row, vector)`` pairs; ``vector`` is ``None`` when the line carries none."""
        chain = hashlib.sha256()
        while True:
            doc = self._next("record")
            n = self._n
            if doc["kind"] == "footer":
                break
            record = doc.get("record")
            if not isinstance(record, dict):
                raise InvalidRequest(f"dump line {n}: a record line without a record")
            digest = _line_digest(record, doc.get("vector"))
            if digest != doc.get("sha256"):
                raise InvalidRequest(f"dump line {n}: digest mismatch (the line was changed)")
            chain.update(digest.encode())
            self.count += 1
            yield row_of_doc(record, n), _vector_of(doc.get("vector"), n)
        if doc.get("count") != self.count:
            raise InvalidRequest(f"dump line {n}: footer counts {doc.get('count')} records, "
                                 f"the dump holds {self.count} (lines were added or dropped)")
        if doc.get("digest") != "sha256:" + chain.hexdigest():
            raise InvalidRequest(f"dump line {n}: footer digest does not match the records "
                                 "(lines were reordered or replaced)")


def _vector_of(doc: Any, line: int) -> Any:
    if doc is None:
        return None
    try:
        vector = np.frombuffer(base64.b64decode(doc["b64"]), dtype="<f4")
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequest(f"dump line {line}: unreadable vector ({exc})") from exc
    if vector.shape[0] != doc.get("dim"):
        raise InvalidRequest(f"dump line {line}: vector has {vector.shape[0]} floats, "
                             f"dim says {doc.get('dim')}")
    return vector.astype(np.float32)


def verify_dump(path: str) -> int:
    """The number of records of a verified dump; raises ``InvalidRequest`` naming the line."""
    with open_dump(path) as stream:
        reader = DumpReader(stream)
        for _ in reader:
            pass
        return reader.count

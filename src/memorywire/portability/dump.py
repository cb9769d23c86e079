"""The ``memorywire/export`` v0 dump: a header line, one record per line, a footer line.

Each record line carries the whole stored row (every field of
:class:`memorywire.core.records.Row`, found by introspection, so a field added to the record
model travels without a change here) with ``content`` in its wire form, plus ``sha256``: the
digest of the record's canonical JSON. A reader recomputes it and names the first line that
does not match. The footer's ``digest`` is the SHA-256 over every record digest in order, so
a dropped, added or reordered line is caught too. Files ending ``.gz`` (or starting with the
gzip magic) are gzip-compressed.

Two opt-in additions (spec v0.2, issue 16): a record line may carry ``history`` (the memory's
revisions from the source's audit log), covered by its digest; and ``pending`` lines (staged
operations awaiting a reviewer) follow the records, each with its own digest in the chain,
counted by the footer's ``pending``. A dump without them is byte-identical to one written
before they existed.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from functools import partial
from typing import IO, Any

import numpy as np

from memorywire.core.content import content_from_storage, content_to_storage
from memorywire.core.records import Row
from memorywire.errors import InvalidRequest
from memorywire.portability.dump_rules import LineRules, bounded_lines, parse_line
from memorywire.wire.models import MemoryType

__all__ = ["FORMAT", "DumpEntry", "DumpReader", "DumpWriter", "doc_of_row", "open_dump",
           "row_of_doc", "verify_dump"]

FORMAT = "memorywire/export"
VERSION = "0"
_ROW_FIELDS = {f.name for f in fields(Row)}


def _canonical(doc: Any) -> bytes:
    # ``surrogatepass``: a hostile line's lone surrogate still digests (the door refuses it
    # afterwards, naming the field); no stored row holds one, so written dumps are unchanged.
    return json.dumps(doc, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8", "surrogatepass")


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


def _line_digest(record: dict[str, Any], vector: dict[str, Any] | None,
                 history: list[Any] | None = None) -> str:
    """SHA-256 of the record's canonical JSON, then, when there is one, a newline and the
    vector object's canonical JSON, then, when there is one, ``\nhistory:`` and the history's
    canonical JSON (the prefix keeps a history from passing for a vector)."""
    data = _canonical(record)
    if vector is not None:
        data += b"\n" + _canonical(vector)
    if history is not None:
        data += b"\nhistory:" + _canonical(history)
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class DumpEntry:
    """One record line, read and verified: the row, its vector and its revision history
    (``None`` when the line carries none)."""

    row: Row
    vector: Any = None
    history: list[dict[str, Any]] | None = None


class DumpWriter:
    """Writes one dump to a binary file object; :meth:`close` writes the footer."""

    def __init__(self, out: IO[bytes], header: dict[str, Any], *, gzip_it: bool) -> None:
        self._raw = out
        self._out: IO[bytes] = out
        if gzip_it:
            self._out = gzip.GzipFile(fileobj=out, mode="wb", mtime=0)  # type: ignore[assignment]
        self._chain = hashlib.sha256()
        self.count = 0
        self.pending = 0
        self._line({"kind": "header", "format": FORMAT, "version": VERSION, **header})

    def _line(self, doc: dict[str, Any]) -> None:
        self._out.write(_canonical(doc) + b"\n")

    def write(self, row: Row, vector: Any = None, embedder: str | None = None,
              history: list[dict[str, Any]] | None = None) -> None:
        """``vector`` (float32, from ``embedder``) and ``history`` travel beside the record
        and are covered by the line's digest, so a changed one is caught like a changed
        record."""
        if self.pending:
            raise ValueError("record lines come before pending lines")
        record = doc_of_row(row)
        line: dict[str, Any] = {"kind": "record", "record": record}
        if vector is not None:
            data = np.ascontiguousarray(vector, dtype="<f4")
            line["vector"] = {"embedder": embedder, "dim": int(data.shape[0]),
                              "b64": base64.b64encode(data.tobytes()).decode()}
        if history is not None:
            line["history"] = history
        digest = _line_digest(record, line.get("vector"), history)
        self._chain.update(digest.encode())
        line["sha256"] = digest
        self._line(line)
        self.count += 1

    def write_pending(self, item: dict[str, Any]) -> None:
        """One staged operation awaiting review (after every record line)."""
        digest = hashlib.sha256(b"pending:" + _canonical(item)).hexdigest()
        self._chain.update(digest.encode())
        self._line({"kind": "pending", "pending": item, "sha256": digest})
        self.pending += 1

    def close(self) -> None:
        footer: dict[str, Any] = {"kind": "footer", "count": self.count,
                                  "digest": "sha256:" + self._chain.hexdigest()}
        if self.pending:
            footer["pending"] = self.pending
        self._line(footer)
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
    the iteration ends, so a consumer that reached the end has read a verified dump. Every
    line is also held to ``rules`` (:mod:`memorywire.portability.dump_rules`: the stream's
    caps, and ``remember``'s rules for each record), which refuse the dump at the first bad
    line or, with ``skip_invalid``, leave such lines out and list them.
    """

    def __init__(self, stream: IO[bytes], rules: LineRules | None = None) -> None:
        self.rules = rules if rules is not None else LineRules()
        self._lines = bounded_lines(stream, self.rules.limits)
        self.header = self._next("header")
        if self.header.get("format") != FORMAT or self.header.get("version") != VERSION:
            raise InvalidRequest(f"dump line 1: not a {FORMAT} v{VERSION} dump")
        self.rules.header(self.header)
        self.count = 0
        self._pending_seen = 0
        #: The pending lines, once iteration has passed them (a review queue is small).
        self.pending: list[dict[str, Any]] = []
        #: The footer line, once iteration has verified it.
        self.footer: dict[str, Any] = {}

    def _next(self, expect: str) -> dict[str, Any]:
        try:
            n, text = next(self._lines)
        except StopIteration:
            raise InvalidRequest(f"dump ends without a {expect} (truncated)") from None
        self._n = n
        doc = parse_line(n, text, self.rules.limits)
        if not isinstance(doc, dict) or doc.get("kind") not in {expect, "record", "pending",
                                                                  "footer"}:
            raise InvalidRequest(f"dump line {n}: expected a {expect} line")
        return doc

    def __iter__(self) -> Iterator[tuple[Row, Any]]:
        """``(row, vector)`` pairs; ``vector`` is ``None`` when the line carries none. A line
        that carries a history is refused here (use :meth:`entries`), never dropped."""
        for entry in self.entries():
            if entry.history is not None:
                raise InvalidRequest(f"dump line {self._n}: carries a history this reader "
                                     "would drop (read it with DumpReader.entries)")
            yield entry.row, entry.vector

    def entries(self) -> Iterator[DumpEntry]:
        """Every record line in file order; pending lines are collected in :attr:`pending`."""
        chain = hashlib.sha256()
        while True:
            doc = self._next("record")
            n = self._n
            if doc["kind"] == "footer":
                break
            if doc["kind"] == "pending":
                chain.update(self._pending_line(doc, n).encode())
                continue
            if self._pending_seen:
                raise InvalidRequest(f"dump line {n}: a record after the pending lines")
            record = doc.get("record")
            if not isinstance(record, dict):
                raise InvalidRequest(f"dump line {n}: a record line without a record")
            history = doc.get("history")
            if history is not None and not (isinstance(history, list)
                                            and all(isinstance(h, dict) for h in history)):
                raise InvalidRequest(f"dump line {n}: history must be an array of objects")
            digest = _line_digest(record, doc.get("vector"), history)
            if digest != doc.get("sha256"):
                raise InvalidRequest(f"dump line {n}: digest mismatch (the line was changed)")
            chain.update(digest.encode())
            self.count += 1
            entry = self.rules.record(n, doc, partial(_entry, doc, n))
            if entry is not None:
                yield entry
        if doc.get("count") != self.count:
            raise InvalidRequest(f"dump line {n}: footer counts {doc.get('count')} records, "
                                 f"the dump holds {self.count} (lines were added or dropped)")
        if doc.get("pending", 0) != self._pending_seen:
            raise InvalidRequest(f"dump line {n}: footer counts {doc.get('pending', 0)} pending "
                                 f"lines, the dump holds {self._pending_seen}")
        if doc.get("digest") != "sha256:" + chain.hexdigest():
            raise InvalidRequest(f"dump line {n}: footer digest does not match the records "
                                 "(lines were reordered or replaced)")
        self.rules.finish()
        self.footer = doc

    def _pending_line(self, doc: dict[str, Any], n: int) -> str:
        item = doc.get("pending")
        if not isinstance(item, dict):
            raise InvalidRequest(f"dump line {n}: a pending line without a pending item")
        digest = hashlib.sha256(b"pending:" + _canonical(item)).hexdigest()
        if digest != doc.get("sha256"):
            raise InvalidRequest(f"dump line {n}: digest mismatch (the line was changed)")
        if self.rules.pending(n, doc):
            self.pending.append(item)
        self._pending_seen += 1
        return digest


def _entry(doc: dict[str, Any], n: int) -> DumpEntry:
    return DumpEntry(row_of_doc(doc["record"], n), _vector_of(doc.get("vector"), n),
                     doc.get("history"))


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
        for _ in reader.entries():
            pass
        return reader.count

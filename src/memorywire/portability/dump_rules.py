"""What a dump must satisfy before an import writes any of it: the door's rules, line by line.

A dump's digests prove that its lines were not changed after it was written, not that the
writer was honest: anyone can write a line and its digest. So every record line is held to
what ``remember`` holds a request to (the line schema, :mod:`memorywire.wire.door`'s text and
range rules, the content limit, the typed metadata fields and links, a procedure's machine),
plus what only a dump can get wrong: one ``(agent_id, id)`` twice, a vector whose size is not
the embedder's, a lifecycle time past the year 9999. A record that passes here is one every
store can hold and every operation can read back; one that failed used to be stored, after
which list, recall, forget and erase of that agent answered 500.

The stream itself is bounded while it is read, before a line is parsed: its unzipped size,
each line's length and the number of lines, so neither a gzip bomb nor ``/dev/zero`` can grow
the reader's memory (:class:`DumpLimits`).

By default the first problem refuses the whole dump, naming the line and the field; with
``skip_invalid`` a bad line is left out and listed (:attr:`LineRules.skipped`). A line outside
the caller's scope is never skipped: it refuses the dump (``forbidden``).
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Protocol, TypeVar

import numpy as np

from memorywire.core.content import edges_of
from memorywire.core.json_depth import json_depth
from memorywire.core.records import Row
from memorywire.errors import ErrorDetail, Forbidden, InvalidRequest, PayloadTooLarge
from memorywire.wire.codec import OPERATIONS, RECORD_OPERATIONS
from memorywire.wire.door import MAX_MILLIS, problems
from memorywire.wire.fields import check_metadata_fields
from memorywire.wire.validate import issues_at, validate

__all__ = ["DumpLimits", "LineRules", "Scope", "Skipped", "bounded_lines", "parse_line"]


class _Entry(Protocol):
    """What a record line becomes (``dump.DumpEntry``): only its row is looked at here."""

    @property
    def row(self) -> Row: ...


E = TypeVar("E", bound=_Entry)

#: ``(agent_id, user_id) -> allowed``: the caller's scope (``None``: every scope).
Scope = Callable[[str, "str | None"], bool]
#: Lifecycle times the door does not know by name (it checks created/updated/expires_at).
_MORE_TIMES = ("deleted_at", "archived_at", "last_recalled_at")
#: How many skipped lines a report lists (the count covers them all).
_LISTED = 100


@dataclass(frozen=True)
class DumpLimits:
    """Caps on one dump, checked while it streams (before a line is parsed)."""

    #: The dump's size once unzipped.
    max_bytes: int = 4 << 30
    #: One line (a record with 256 KiB of content, its vector and history fits easily).
    max_line_bytes: int = 8 << 20
    #: Record and pending lines together.
    max_records: int = 5_000_000
    #: One memory's content, as ``remember`` limits it.
    max_content_bytes: int = 256 << 10
    #: JSON nesting of one line, as a request body is limited.
    max_json_depth: int = 64


@dataclass(frozen=True)
class Skipped:
    """A line left out of a ``skip_invalid`` import, and why."""

    line: int
    path: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "path": self.path, "message": self.message}


def bounded_lines(stream: IO[bytes], limits: DumpLimits) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of ``stream``, refusing a line, a total or a line count past
    ``limits`` before reading further than one line's cap."""
    total = 0
    n = 0
    while True:
        raw = stream.readline(limits.max_line_bytes + 1)
        if not raw:
            return
        n += 1
        total += len(raw)
        if len(raw) > limits.max_line_bytes and not raw.endswith(b"\n"):
            raise PayloadTooLarge(f"dump line {n} is longer than {limits.max_line_bytes} bytes "
                                  "(max_import_line_bytes)",
                                  [ErrorDetail("", "maxBytes", f"line {n}")])
        if total > limits.max_bytes:
            raise PayloadTooLarge(f"dump exceeds {limits.max_bytes} bytes unzipped at line {n} "
                                  "(max_import_unzipped_bytes)",
                                  [ErrorDetail("", "maxBytes", f"line {n}")])
        if n > limits.max_records + 2:  # the header and the footer
            raise PayloadTooLarge(f"dump holds more than {limits.max_records} records "
                                  "(max_import_records)",
                                  [ErrorDetail("", "maxItems", f"line {n}")])
        yield n, raw


def _depth(raw: bytes, limit: int) -> int:
    """Nesting depth of a JSON line, ignoring brackets inside strings; stops past ``limit``."""
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return 0
    return json_depth(raw)


def parse_line(n: int, raw: bytes, limits: DumpLimits) -> Any:
    """One line as JSON (NaN and Infinity refused, as in a request), depth-checked first."""
    depth = _depth(raw, limits.max_json_depth)
    if depth > limits.max_json_depth:
        raise InvalidRequest(f"dump line {n}: JSON nests {depth} deep; the limit is "
                             f"{limits.max_json_depth}",
                             [ErrorDetail("", "maxDepth", f"line {n}")])
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidRequest(f"dump line {n}: not JSON ({exc})") from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _prefixed(prefix: str, details: Iterable[ErrorDetail]) -> list[ErrorDetail]:
    return [ErrorDetail(prefix + d.path, d.keyword, d.message) for d in details]


def _content_problem(content: Any, limit: int) -> ErrorDetail | None:
    if content in ("", {}):
        return ErrorDetail("/record/content", "minLength", "must not be empty")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    size = len(text.encode("utf-8"))
    if size > limit:
        return ErrorDetail("/record/content", "maxBytes",
                           f"is {size} bytes; the limit is {limit} (max_content_bytes)")
    return None


class _Ids:
    """``(agent_id, id)`` of every record, 16 bytes each, checked for repeats at the end (a
    keyed 64-bit hash: a million records cost 16 MB, not a set of strings)."""

    def __init__(self) -> None:
        self._key = os.urandom(16)
        self._hashes = array("Q")
        self._lines = array("q")

    def add(self, agent_id: str, id_: str, line: int) -> None:
        h = hashlib.blake2b(f"{agent_id}\x00{id_}".encode(), digest_size=8, key=self._key)
        self._hashes.append(int.from_bytes(h.digest(), "little"))
        self._lines.append(line)

    def repeats(self) -> list[tuple[int, int]]:
        """``(line, first line)`` of every record whose agent and id an earlier one had."""
        if len(self._hashes) < 2:
            return []
        hashes = np.frombuffer(self._hashes, dtype=np.uint64)
        lines = np.frombuffer(self._lines, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")  # equal hashes keep file order
        ranked = hashes[order]
        starts = np.concatenate(([True], ranked[1:] != ranked[:-1]))
        first = np.flatnonzero(starts)[np.cumsum(starts) - 1]
        again = np.flatnonzero(~starts)
        return sorted((int(lines[order[i]]), int(lines[order[first[i]]])) for i in again)


@dataclass
class LineRules:
    """The checks of one read of one dump, in file order.

    ``skip_lines`` (the lines a first read skipped) are left out without a look, so the
    write pass of an import skips exactly what its verify pass reported."""

    limits: DumpLimits = field(default_factory=DumpLimits)
    skip_invalid: bool = False
    scope: Scope | None = None
    skip_lines: frozenset[int] = frozenset()
    check_repeats: bool = True
    #: The lines left out, in order (the first :data:`_LISTED`; :attr:`skipped_count` all).
    skipped: list[Skipped] = field(default_factory=list)
    skipped_count: int = 0
    _skipped_lines: set[int] = field(default_factory=set)
    _ids: _Ids = field(default_factory=_Ids)
    _dim: int | None = None

    @property
    def skipped_lines(self) -> frozenset[int]:
        return frozenset(self._skipped_lines) | self.skip_lines

    def header(self, doc: Mapping[str, Any]) -> None:
        embedder = doc.get("embedder")
        dim = embedder.get("dim") if isinstance(embedder, Mapping) else None
        self._dim = dim if isinstance(dim, int) and not isinstance(dim, bool) else None

    def _refuse(self, n: int, found: list[ErrorDetail], what: str) -> None:
        head = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        message = f"dump line {n}: {head.path or '(line)'}: {head.message}{more}"
        if not self.skip_invalid:
            raise InvalidRequest(f"{message}; nothing was imported (import with skip_invalid "
                                 f"to leave out bad {what} lines)", found)
        self._skip(n, head.path, f"{head.message}{more}")

    def _skip(self, n: int, path: str, message: str) -> None:
        self.skipped_count += 1
        self._skipped_lines.add(n)
        if len(self.skipped) < _LISTED:
            self.skipped.append(Skipped(n, path, message))

    def _in_scope(self, n: int, agent_id: Any, user_id: Any) -> None:
        if self.scope is None or not isinstance(agent_id, str):
            return
        if not self.scope(agent_id, user_id if isinstance(user_id, str) else None):
            raise Forbidden(f"dump line {n}: agent_id {agent_id!r}"
                            f"{'' if user_id is None else f', user_id {user_id!r}'} is outside "
                            "this token's scope; nothing was imported")

    def record(self, n: int, line: dict[str, Any], build: Callable[[], E]) -> E | None:
        """The line's entry (``build`` makes it once the line passed), or ``None`` when the
        line is left out (``skip_invalid``)."""
        if n in self.skip_lines:
            return None
        record = line.get("record")
        if isinstance(record, dict):
            self._in_scope(n, record.get("agent_id"), record.get("user_id"))
        found = self._record_problems(line)
        entry = None
        if not found:
            try:
                entry = build()
                check_metadata_fields(entry.row.type.value, entry.row.metadata)
            except InvalidRequest as exc:
                found = _prefixed("/record", exc.details) or [
                    ErrorDetail("", "record", exc.message.removeprefix(f"dump line {n}: "))]
        if found or entry is None:
            self._refuse(n, found, "record")
            return None
        if self.check_repeats:
            self._ids.add(entry.row.agent_id, entry.row.id, n)
        return entry

    def _record_problems(self, line: dict[str, Any]) -> list[ErrorDetail]:
        if not validate("export/line", line):
            found: list[ErrorDetail] = []
        else:
            found = [i.to_detail() for i in issues_at("export/line", "#/oneOf/1", line)]
        if found:
            return found
        record = line["record"]
        found = _prefixed("/record", problems(record))
        found += _prefixed("/history", problems(line.get("history") or []))
        for key in _MORE_TIMES:
            at = record.get(key)
            if isinstance(at, int) and at > MAX_MILLIS:
                found.append(ErrorDetail(f"/record/{key}", "maximum",
                                         f"must be Unix milliseconds in 0..{MAX_MILLIS}"))
        content = _content_problem(record.get("content"), self.limits.max_content_bytes)
        if content is not None:
            found.append(content)
        vector = line.get("vector")
        if isinstance(vector, dict) and self._dim is not None and vector.get("dim") != self._dim:
            found.append(ErrorDetail("/vector/dim", "const",
                                     f"is {vector.get('dim')}; the dump's embedder has "
                                     f"{self._dim}"))
        try:
            edges_of(record.get("metadata"))
        except InvalidRequest as exc:
            found += _prefixed("/record/metadata", exc.details) or [
                ErrorDetail("/record/metadata/links", "links", exc.message)]
        return found

    def pending(self, n: int, line: dict[str, Any]) -> bool:
        """Whether the pending line is kept (``False``: left out, ``skip_invalid``)."""
        if n in self.skip_lines:
            return False
        item = line.get("pending")
        if isinstance(item, dict):
            self._in_scope(n, item.get("agent_id"), item.get("user_id"))
        if not validate("export/line", line):
            found: list[ErrorDetail] = []
        else:
            found = [i.to_detail() for i in issues_at("export/line", "#/oneOf/2", line)]
        if not found:
            found = _prefixed("/pending", problems(item))
        if not found and isinstance(item, dict):
            op, request = item.get("operation"), item.get("request")
            if op in OPERATIONS or op in RECORD_OPERATIONS:
                found = _prefixed("/pending/request",
                                  (i.to_detail() for i in validate(str(op), request)))
        if found:
            self._refuse(n, found, "pending")
            return False
        return True

    def finish(self) -> None:
        """After the last record: refuse (or skip) every record repeating an earlier one's
        ``agent_id`` and ``id`` (a store keeps one, so the other would vanish silently)."""
        if not self.check_repeats:
            return
        for n, first in self._ids.repeats():
            self._refuse(n, [ErrorDetail("/record/id", "uniqueItems",
                                         f"repeats the agent_id and id of line {first}")],
                         "record")
        self.skipped.sort(key=lambda s: s.line)
